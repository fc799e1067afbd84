"""CTC loss: the forward (alpha) and backward (beta) recursions, parallel over the batch.

Over the extended labels ``l' = (blank, l_1, blank, ..., l_S, blank)`` of sequence ``n``
(``ext[n, s]``, ``L = 2 S_n + 1`` states, ``S_n = target_lengths[n]``), in log space,
with ``y_t(s) = log_probs[t, n, ext[n, s]]`` and ``T_n = input_lengths[n]``::

    alpha_0(s) = y_0(s) for s < 2 (and s < L), log 0 elsewhere
    alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2) if skip[s]) + y_t(s)
    ll         = logsumexp(alpha_{T_n-1}(L-1), alpha_{T_n-1}(L-2))       (log p(target))
    beta_{T_n-1}(s) = y_{T_n-1}(s) for s >= L-2, log 0 elsewhere
    beta_t(s)  = logsumexp(beta_{t+1}(s), beta_{t+1}(s+1), beta_{t+1}(s+2) if skip[s+2]) + y_t(s)
    d ll / d log_probs[t, n, k] = sum_{s: ext[s] = k} exp(alpha_t(s) + beta_t(s) - y_t(s) - ll)

``skip[n, s]``: the jump s-2 -> s is allowed (``ext[s]`` is a label that differs from
``ext[s-2]``). Alphas are kept in float64 (T, N, W) for the backward; entries past
``T_n`` or ``L`` are log 0. The backward writes ``grad[t, n, :] = -g[n] * d ll / d lp``
for ``t < T_n`` and 0 elsewhere; 0 for a sequence with ``ll = log 0`` (no alignment) and,
as torch, NaN (for ``t < T_n``) for one with ``ll`` NaN (a NaN or +inf log-probability).

The NumPy twins, and every check before these kernels run, are in ``tinyattn.kernels.ctc``;
the kernels check nothing. Each ``prange`` iteration (one sequence) writes only its own
slices of ``alpha``, ``ll``, ``beta`` (scratch, two time rows), ``acc`` (scratch, one row
of classes) and ``grad``; nothing is allocated inside the loops.
"""

from __future__ import annotations

import math

from numba import prange

from ._jit import njit


@njit(cache=True, inline="always")
def _logsumexp3(a, b, c):
    """log(e^a + e^b + e^c) about the largest, as torch's: log 0 when all three are,
    NaN when one is NaN or +inf (exp(inf - inf))."""
    m = a
    if b > m:
        m = b
    if c > m:
        m = c
    if m == -math.inf:
        m = 0.0
    return math.log(math.exp(a - m) + math.exp(b - m) + math.exp(c - m)) + m


@njit(parallel=True, cache=True, error_model="numpy")
def ctc_alpha(log_probs, ext, skip, input_lengths, target_lengths, alpha, ll):
    """alpha[t, n, s] and ll[n] (see the module docstring) for every sequence n."""
    steps, batch, _ = log_probs.shape
    width = ext.shape[1]
    for n in prange(batch):
        states = 2 * target_lengths[n] + 1
        last = input_lengths[n]
        for t in range(steps):
            for s in range(width):
                alpha[t, n, s] = -math.inf
        alpha[0, n, 0] = log_probs[0, n, ext[n, 0]]
        if states > 1:
            alpha[0, n, 1] = log_probs[0, n, ext[n, 1]]
        for t in range(1, last):
            for s in range(states):
                stay = alpha[t - 1, n, s]
                step = alpha[t - 1, n, s - 1] if s >= 1 else -math.inf
                jump = alpha[t - 1, n, s - 2] if s >= 2 and skip[n, s] else -math.inf
                alpha[t, n, s] = _logsumexp3(stay, step, jump) + log_probs[t, n, ext[n, s]]
        end = alpha[last - 1, n, states - 1]
        before = alpha[last - 1, n, states - 2] if states > 1 else -math.inf
        ll[n] = _logsumexp3(end, before, -math.inf)


@njit(parallel=True, cache=True, error_model="numpy")
def ctc_grad(log_probs, ext, skip, input_lengths, target_lengths, alpha, ll, g, beta, acc, grad):
    """grad[t, n, k] = -g[n] * d ll[n] / d log_probs[t, n, k], by the beta recursion."""
    steps, batch, classes = log_probs.shape
    for n in prange(batch):
        for t in range(steps):
            for k in range(classes):
                grad[t, n, k] = 0.0
        if ll[n] == -math.inf:  # no alignment: the loss is inf (or 0) and flat
            continue
        states = 2 * target_lengths[n] + 1
        last = input_lengths[n]
        if ll[n] != ll[n]:  # a NaN (or +inf) in the sequence's steps: NaN there, as torch
            for t in range(last):
                for k in range(classes):
                    grad[t, n, k] = math.nan
            continue
        here = 0  # beta[n, here] holds beta_t, beta[n, 1 - here] beta_{t+1}
        for t in range(last - 1, -1, -1):
            for s in range(states):
                y = log_probs[t, n, ext[n, s]]
                if t == last - 1:
                    b = y if s >= states - 2 else -math.inf
                else:
                    later = 1 - here
                    stay = beta[n, later, s]
                    step = beta[n, later, s + 1] if s + 1 < states else -math.inf
                    jump = beta[n, later, s + 2] if s + 2 < states and skip[n, s + 2] else -math.inf
                    b = _logsumexp3(stay, step, jump) + y
                beta[n, here, s] = b
            for k in range(classes):
                acc[n, k] = 0.0
            for s in range(states):
                a, b = alpha[t, n, s], beta[n, here, s]
                if a != -math.inf and b != -math.inf:
                    k = ext[n, s]
                    acc[n, k] += math.exp(a + b - log_probs[t, n, k] - ll[n])
            for k in range(classes):
                grad[t, n, k] = -g[n] * acc[n, k]
            here = 1 - here
