"""Fused Adam/AdamW update: p, m, v (and v_max) of one parameter in one pass over memory.

The NumPy twin is ``tinyattn.optim.adam._adam_update_numpy``; both take the same
coefficients (``tinyattn.optim.adam._coefficients``), already cast to the
parameter's dtype, so every product and sum below is done in that dtype, in the
twin's order, and the two agree bit for bit (``tests/kernels/test_optim_kernel.py``).
Per element, with ``g`` the gradient::

    g = -g                                    (maximize)
    p = p * decay                             (decoupled weight decay, decay = 1 - lr * wd;
                                               skipped when decay == 1)
    g = g + weight_decay * p                  (coupled weight decay, Adam's L2 term;
                                               skipped when 0)
    m = m + w1 * (g - m)    if lerp_low       (torch's lerp, w1 = 1 - beta1, from the
    m = g - (g - m) * one_minus_w1  otherwise  nearer end)
    v = v * beta2 + (one_minus_beta2 * g) * g
    v_max = max(v_max, v); v := v_max         (amsgrad)
    p = p + (neg_step_size * m) / (sqrt(v) / bias_correction2_sqrt + eps)

Arrays are 1-D C-contiguous views of the same length and dtype, prepared by the
caller (``tinyattn.optim.adam``), which checks them; the kernels check nothing.
``error_model="numpy"``: a division by zero gives inf/NaN as in the twin (numba's
default raises, and its per-element zero test kept the loop from vectorising:
3.3M float32 updates took 14 ms, and 1.7 ms vectorised).
``adam_step_parallel`` splits the elements into ``CHUNK``-sized blocks over
numba's threads; each ``prange`` iteration writes only its own block and
allocates nothing (the blocks are views). ``adam_step_serial`` is the same loop on one thread, for
parameters too small to be worth a parallel launch (biases, LayerNorm weights).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._jit import njit

CHUNK = 16384  # elements per prange block: 64 KiB of float32 per array
# Below this many elements a parallel launch costs more than it saves. Measured on a
# shared 2-core machine (float32, best of 10): 262,144 elements 0.10 ms serial, 0.06 ms
# parallel; 4,194,304: 2.3 ms vs 1.2 ms; but the median AdamW step over the GPT
# benchmark's 53 parameters (3.3M numbers, the largest 262,144) took 18.7 ms wall,
# 12.4 ms CPU with the parallel launch from 65,536 elements up, against 4.4 ms wall,
# 2.9 ms CPU all serial: on a loaded machine each launch waits for a busy core.
PARALLEL_MIN = 1 << 20


@njit(cache=True, error_model="numpy", inline="always")
def _update(
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    max_exp_avg_sq,
    decay,
    weight_decay,
    w1,
    one_minus_w1,
    lerp_low,
    beta2,
    one_minus_beta2,
    neg_step_size,
    bias_correction2_sqrt,
    eps,
    maximize,
    amsgrad,
):
    for i in range(param.shape[0]):
        g = grad[i]
        if maximize:
            g = -g
        p = param[i]
        if decay != 1:
            p = p * decay
        if weight_decay != 0:
            g = g + weight_decay * p
        m = exp_avg[i]
        if lerp_low:
            m = m + w1 * (g - m)
        else:
            m = g - (g - m) * one_minus_w1
        v = exp_avg_sq[i] * beta2 + (one_minus_beta2 * g) * g
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if amsgrad:  # np.maximum: a NaN on either side wins
            v_max = max_exp_avg_sq[i]
            if v_max < v or v != v:
                v_max = v
            max_exp_avg_sq[i] = v_max
            v = v_max
        param[i] = p + (neg_step_size * m) / (np.sqrt(v) / bias_correction2_sqrt + eps)


@njit(cache=True, error_model="numpy")
def adam_step_serial(
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    max_exp_avg_sq,
    decay,
    weight_decay,
    w1,
    one_minus_w1,
    lerp_low,
    beta2,
    one_minus_beta2,
    neg_step_size,
    bias_correction2_sqrt,
    eps,
    maximize,
    amsgrad,
):
    """One Adam update of one parameter on the calling thread (see the module docstring)."""
    _update(
        param,
        grad,
        exp_avg,
        exp_avg_sq,
        max_exp_avg_sq,
        decay,
        weight_decay,
        w1,
        one_minus_w1,
        lerp_low,
        beta2,
        one_minus_beta2,
        neg_step_size,
        bias_correction2_sqrt,
        eps,
        maximize,
        amsgrad,
    )


@njit(cache=True, error_model="numpy", parallel=True)
def adam_step_parallel(
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    max_exp_avg_sq,
    decay,
    weight_decay,
    w1,
    one_minus_w1,
    lerp_low,
    beta2,
    one_minus_beta2,
    neg_step_size,
    bias_correction2_sqrt,
    eps,
    maximize,
    amsgrad,
):
    """One Adam update of one parameter, ``CHUNK``-element blocks in parallel."""
    n = param.shape[0]
    n_chunks = (n + CHUNK - 1) // CHUNK
    for c in prange(n_chunks):
        lo = c * CHUNK
        hi = min(lo + CHUNK, n)
        _update(  # on views of the block (no copy): a loop from 0 vectorises
            param[lo:hi],
            grad[lo:hi],
            exp_avg[lo:hi],
            exp_avg_sq[lo:hi],
            max_exp_avg_sq[lo:hi],
            decay,
            weight_decay,
            w1,
            one_minus_w1,
            lerp_low,
            beta2,
            one_minus_beta2,
            neg_step_size,
            bias_correction2_sqrt,
            eps,
            maximize,
            amsgrad,
        )
