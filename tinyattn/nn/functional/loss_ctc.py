"""``F.ctc_loss``: connectionist temporal classification (Graves et al. 2006).

One op, :class:`CtcLoss`: its forward is the alpha (forward) recursion and its backward
the beta (backward) recursion, both numba kernels over the batch with NumPy twins
(``tinyattn.kernels.ctc``). The reductions are ordinary ops on its (N,) losses.

Second derivatives (``create_graph=True``; torch has none for ``ctc_loss``): the
backward then recomputes the losses from ``log_probs`` with differentiable ops, the
alpha recursion one time step at a time in log space (``_nll_by_ops``), and returns
their recorded gradient. There ``log 0`` is the finite ``-1e30`` so that ``logsumexp``
of unreachable states has finite gradients (exactly 0 for them) instead of NaN.
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ...autograd.grad_mode import enable_grad
from ...autograd.xp import tensor_xp
from ...core.function import Function
from ...kernels.ctc import ctc_alpha, ctc_grad
from ...ops.elementwise.arithmetic import where
from ...tensor_api.tensor import Tensor
from .loss import _check_reduction

__all__ = ["ctc_loss"]

_LOG0 = -1e30  # log of probability 0: finite, see the module docstring
_IMPOSSIBLE = -1e29  # a log-likelihood below this is a sum of log-zeros: no valid alignment


def _lengths(values, n: int, name: str) -> np.ndarray:
    arr = values._data if isinstance(values, Tensor) else np.asarray(values)
    arr = arr.reshape(-1)
    if arr.dtype.kind not in "iu" or arr.size != n:
        raise RuntimeError(
            f"ctc_loss: {name} must be {n} integers (one per batch element), got "
            f"{arr.size} of dtype {arr.dtype}"
        )
    return arr.astype(np.int64)


def _padded_targets(targets, target_lengths: np.ndarray) -> np.ndarray:
    """Targets as (N, S_max) rows: already padded (N, S), or the 1-D concatenation split."""
    t = targets._data if isinstance(targets, Tensor) else np.asarray(targets)
    n = target_lengths.size
    if t.ndim == 1:
        if t.size != target_lengths.sum():
            raise RuntimeError(
                f"ctc_loss: 1-D (concatenated) targets of length {t.size} do not match "
                f"sum(target_lengths) = {int(target_lengths.sum())}"
            )
        width = max(int(target_lengths.max()) if n else 0, 1)
        out = np.zeros((n, width), dtype=np.int64)
        starts = np.concatenate(([0], np.cumsum(target_lengths)[:-1]))
        for row, (start, length) in enumerate(zip(starts, target_lengths)):
            out[row, :length] = t[start : start + length]
        return out
    if t.ndim != 2 or t.shape[0] != n or (n and t.shape[1] < target_lengths.max()):
        raise RuntimeError(
            f"ctc_loss: targets must be (N, S) with S >= max(target_lengths) = "
            f"{int(target_lengths.max()) if n else 0} and N = {n}, or 1-D; got shape "
            f"{list(t.shape)}"
        )
    return t.astype(np.int64)


def _alphas(lp_ext: Tensor, skip: np.ndarray) -> Tensor:
    """alpha[t, n, s] = log P(prefix of the extended labels ending at s, after t + 1 steps).

    alpha_0 = lp_0 at s = 0, 1 (log 0 elsewhere);
    alpha_t[s] = logsumexp(alpha_{t-1}[s], alpha_{t-1}[s-1], alpha_{t-1}[s-2] if skip[s])
                 + lp_t[s]
    """
    steps, n, width = lp_ext.shape
    first = np.zeros((n, width), dtype=bool)
    first[:, :2] = True
    alpha = where(Tensor._make(first), lp_ext[0], _LOG0)
    pad1 = ops.creation.factories.full((n, 1), _LOG0, dtype=lp_ext.dtype)
    pad2 = ops.creation.factories.full((n, 2), _LOG0, dtype=lp_ext.dtype)
    skip_t = Tensor._make(skip)
    out = [alpha]
    for t in range(1, steps):
        stay = alpha
        step = ops.shape.rearrange.cat([pad1, alpha[:, :-1]], 1)
        jump = where(skip_t, ops.shape.rearrange.cat([pad2, alpha[:, :-2]], 1), _LOG0)
        paths = ops.shape.rearrange.stack([stay, step, jump], 0)
        alpha = ops.reduce.reduction.logsumexp(paths, 0) + lp_ext[t]
        out.append(alpha)
    return ops.shape.rearrange.stack(out, 0)


def _nll_by_ops(lp: Tensor, ext: np.ndarray, skip: np.ndarray, in_len, tg_len, zero_infinity):
    """The (N,) losses with differentiable ops (the second-order path): ``-ll`` by the
    alpha recursion, ``inf`` (0 with ``zero_infinity``) where no alignment exists."""
    steps, n, _ = lp.shape
    index = Tensor._make(np.broadcast_to(ext, (steps, n, ext.shape[1])).copy())
    alphas = _alphas(lp.gather(2, index), skip)  # (T, N, S')
    rows = np.arange(n)
    last = alphas[in_len - 1, rows]  # (N, S') at each sequence's own last step
    end = last.gather(1, Tensor._make(2 * tg_len[:, None]))[:, 0]
    before = last.gather(1, Tensor._make(np.maximum(2 * tg_len - 1, 0)[:, None]))[:, 0]
    before = where(Tensor._make(tg_len > 0), before, _LOG0)
    ll = ops.reduce.reduction.logsumexp(ops.shape.rearrange.stack([end, before], 0), 0)
    impossible = Tensor._make(ll._data < _IMPOSSIBLE)
    return where(impossible, 0.0 if zero_infinity else float("inf"), -ll)


class CtcLoss(Function):
    """nll[n] = -log p(targets[n] | log_probs[:, n]), summed over every alignment.

    log_probs (T, N, C); ``ext`` (N, 2 S + 1) the extended labels (blank, l_1, blank,
    ..., blank), ``skip`` (N, 2 S + 1) where the jump s-2 -> s is allowed; lengths (N,).
    forward:  the alpha recursion (``kernels/_numba_ctc.py``), ``ll = log p``;
              nll = -ll, or inf (0 with ``zero_infinity``) when ``ll = log 0``.
    backward: the beta recursion; with ``y_t(s) = log_probs[t, n, ext[n, s]]``
              dlog_probs[t, n, k] = -g[n] sum_{s: ext[n, s] = k}
                                     exp(alpha_t(s) + beta_t(s) - y_t(s) - ll[n])
              for t < input_lengths[n] (0 after, and 0 for a sequence with no alignment).
              This is the true derivative; torch's ctc_loss_backward adds exp(log_probs),
              which ``log_softmax``'s backward (where log_probs come from) cancels.
              Under ``create_graph`` the losses are recomputed with ops (``_nll_by_ops``)
              and their gradient recorded (torch has no second derivative here).

    Non-finite log_probs: a NaN or +inf in a sequence's steps gives NaN loss and NaN
    gradient over its steps, as torch. Where torch's gradient is NaN but the derivative
    exists, ours is the derivative: at a log-probability of -inf (0 there; torch: NaN)
    and for a sequence with no alignment without ``zero_infinity`` (0; torch: NaN).
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, log_probs, *, ext, skip, input_lengths, target_lengths, zero_infinity):
        alpha, ll = ctc_alpha(log_probs, ext, skip, input_lengths, target_lengths)
        nll = np.where(ll == -np.inf, 0.0 if zero_infinity else np.inf, -ll)
        ctx.save_for_backward(log_probs, alpha, ll)
        ctx.labels = (ext, skip, input_lengths, target_lengths, zero_infinity)
        return nll.astype(log_probs.dtype)

    @staticmethod
    def backward(ctx, g):
        log_probs, alpha, ll = ctx.saved_tensors
        ext, skip, input_lengths, target_lengths, zero_infinity = ctx.labels
        if ctx.xp is tensor_xp:  # record the gradient of the losses recomputed with ops
            from ...autograd import grad

            with enable_grad():
                nll = _nll_by_ops(
                    log_probs, ext, skip, input_lengths, target_lengths, zero_infinity
                )
                return grad(nll, log_probs, g, create_graph=True)[0]
        return ctc_grad(log_probs, ext, skip, input_lengths, target_lengths, alpha, ll, g)


def ctc_loss(
    log_probs: Tensor,
    targets,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """CTC loss ``-log p(target | log_probs)``, summed over all alignments.

    Shapes: ``log_probs`` (T, N, C) (or (T, C) unbatched) log-probabilities over C classes
    (``blank`` one of them); ``targets`` (N, S) padded or 1-D concatenated class indices;
    ``input_lengths``, ``target_lengths`` (N,) integers. 'none' gives (N,), 'mean' divides
    each loss by its target length then averages, 'sum' sums. A target no alignment can
    produce gives ``inf`` (0 with ``zero_infinity``, with gradient 0).

    With alpha/beta the forward/backward variables over the extended labels
    ``l' = (blank, l_1, blank, ..., l_S, blank)`` (each including the step's own
    probability ``y_t(s)``), ``p = sum_s alpha_t(s) beta_t(s) / y_t(s)`` at every t:
    ``dlog_probs[t, n, k] = -g / p * sum_{s: l'_s = k} alpha_t(s) beta_t(s) / y_t(s)``
    (one op, :class:`CtcLoss`, then the reduction). torch returns this plus
    ``exp(log_probs)``, which is the same after ``log_softmax``'s backward, where
    ``log_probs`` usually come from.
    """
    _check_reduction(reduction, "ctc_loss")
    if not isinstance(log_probs, Tensor) or log_probs.ndim not in (2, 3):
        shape = list(log_probs.shape) if isinstance(log_probs, Tensor) else type(log_probs)
        raise RuntimeError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got {shape}")
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    steps, n, classes = lp.shape
    in_len = _lengths(input_lengths, n, "input_lengths")
    tg_len = _lengths(target_lengths, n, "target_lengths")
    if unbatched:  # targets (S,): one padded row
        raw = targets._data if isinstance(targets, Tensor) else np.asarray(targets)
        targets = raw.reshape(1, -1)
    tg = _padded_targets(targets, tg_len)
    if n and (in_len.max() > steps or in_len.min() < 1):
        raise RuntimeError(
            f"ctc_loss: Expected input_lengths to have values in [1, {steps}] (T), got "
            f"{in_len.tolist()}"
        )
    if not 0 <= blank < classes:
        raise ValueError(f"ctc_loss: blank must be in [0, {classes - 1}] (C), got {blank}")
    if tg.size and tg_len.min() < 0:
        raise RuntimeError(f"ctc_loss: target_lengths must be >= 0, got {tg_len.tolist()}")
    width = 2 * tg.shape[1] + 1
    live = np.arange(tg.shape[1]) < tg_len[:, None]  # labels within each target's length
    if live.any() and not (0 <= tg[live].min() and tg[live].max() < classes):
        raise RuntimeError(
            f"ctc_loss: targets must be class indices in [0, {classes - 1}] (C = {classes}), "
            f"got values from {tg[live].min()} to {tg[live].max()}"
        )
    ext = np.full((n, width), blank, dtype=np.int64)
    ext[:, 1::2] = np.where(live, tg, blank)  # (padding past a target's length: unread)
    skip = np.zeros((n, width), dtype=bool)
    # the jump s-2 -> s skips a blank: allowed into a label (odd s >= 3) that differs from
    # the previous label (torch's rule, also for a label equal to ``blank``)
    skip[:, 3::2] = ext[:, 3::2] != ext[:, 1:-2:2]
    nll = CtcLoss.apply(
        lp,
        ext=ext,
        skip=skip,
        input_lengths=in_len,
        target_lengths=tg_len,
        zero_infinity=bool(zero_infinity),
    )
    if unbatched:
        nll = nll[0]
    if reduction == "mean":
        denom = Tensor._make(np.maximum(tg_len, 1).astype(lp._data.dtype))
        return (nll / (denom[0] if unbatched else denom)).mean()
    return nll.sum() if reduction == "sum" else nll
