"""NumPy reference twins of the attention kernels: the math, written out once.

Shapes: q (B, Hq, L, D), k (B, Hkv, S, D), v (B, Hkv, S, Dv); query head h reads
key/value head h // (Hq // Hkv). With ``mask`` an additive float array (or a bool
array, True = takes part) broadcastable to (B, Hq, L, S)::

    scores    = scale * Q K^T + mask            (+ -inf above the diagonal if causal)
    logsumexp = log(sum_j exp(scores_ij))        per row i
    weights   = exp(scores - logsumexp)          = softmax(scores) along keys
    dropped   = weights * keep / (1 - p)         keep from ``dropout_keep``
    out       = dropped V

Backward, given dout = dL/dout::

    dV      = dropped^T dout                     (summed over the heads of a kv group)
    ddropped = dout V^T
    dweights = ddropped * keep / (1 - p)
    delta   = rowsum(dweights * weights)         (flash: = rowsum(dout * out))
    dscores = weights * (dweights - delta)       (= dmask for a float mask)
    dQ      = scale * dscores K
    dK      = scale * dscores^T Q                (summed over the heads of a kv group)

A fully masked row (every key blocked) has logsumexp = -inf, weights 0, output 0
and gradient 0: the -inf - (-inf) = NaN of the textbook formula is replaced by 0.
NaN is never mistaken for blocking: a NaN (or +inf) score makes its row NaN, and
the causal mask is *added* (-inf), so NaN + -inf stays NaN as in torch's math path.

The backward steps take ``xp``, the namespace of their arrays (``np`` by default,
a backward's ``ctx.xp``): under ``create_graph=True`` the same formulas run on
Tensors (``tinyattn.autograd.xp.tensor_xp``) and are recorded, which is how
``scaled_dot_product_attention`` is differentiated twice.

Two compositions of the same steps (softmax math from ``tinyattn.kernels.softmax_math``):

* ``attention_forward`` / ``attention_backward``: the *stored-weights* path, which
  keeps ``weights`` (L x S) for the backward;
* ``flash_attention_forward`` / ``flash_attention_backward``: the *flash twin*,
  which keeps only ``logsumexp`` and recomputes the weights, like the fused kernels.

The functions here have the same signatures and results as the public ones in
``tinyattn.kernels`` but do no argument checking; all of them materialise the
L x S matrices, which is exactly what the fused kernels avoid.
"""

from __future__ import annotations

import numpy as np

from . import softmax_math
from .matmul import matmul as _blas_matmul  # batched products that reach BLAS

__all__ = [
    "dropout_keep",
    "dropout_scale",
    "attention_forward",
    "attention_backward",
    "flash_attention_forward",
    "flash_attention_backward",
    "attention_scores",
    "attention_scores_backward",
    "softmax_rows",
    "softmax_rows_backward",
    "attention_dropout",
    "attention_dropout_backward",
    "weighted_sum",
    "weighted_sum_backward",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64_mix(z: np.ndarray) -> np.ndarray:
    """The splitmix64 output function (Steele, Lea, Flood 2014) on uint64 arrays."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def dropout_keep(seed: int, shape: tuple[int, int, int, int], dropout_p: float) -> np.ndarray:
    """Dropout keep mask over the weights, a pure function of (seed, b, h, i, j).

    Element n = ((b * H + h) * L + i) * S + j of the splitmix64 stream seeded with
    ``seed``, ``bits = mix(seed + (n + 1) * 0x9E3779B97F4A7C15)`` (mod 2**64), gives
    ``u = (bits >> 40) * 2**-24`` in [0, 1); the weight is dropped iff ``u < p``.
    The kernels compute the same bits for the element they touch, so the backward
    regenerates the forward's mask without storing it.
    """
    n = np.arange(int(np.prod(shape)), dtype=np.uint64).reshape(shape)
    with np.errstate(over="ignore"):
        bits = _splitmix64_mix(np.uint64(seed) + (n + np.uint64(1)) * _GOLDEN)
    u = (bits >> np.uint64(40)).astype(np.float64) * 2.0**-24
    return u >= dropout_p


def dropout_scale(
    seed: int, shape: tuple[int, int, int, int], dropout_p: float, dtype
) -> np.ndarray | float:
    """keep / (1 - p) as an array, or 1.0 when there is no dropout (p = 1 drops all)."""
    if dropout_p == 0.0:
        return 1.0
    if dropout_p >= 1.0:
        return np.zeros(shape, dtype)
    return dropout_keep(seed, shape, dropout_p).astype(dtype) / dtype.type(1.0 - dropout_p)


def matmul(a, b, xp=np):
    """``a @ b`` batched: through BLAS on two arrays, else ``xp.matmul`` (on Tensors, the op)."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return _blas_matmul(a, b)
    return xp.matmul(a, b)


def _dtype_of(x) -> np.dtype:
    """The NumPy dtype of an array or a Tensor."""
    return np.dtype(getattr(x.dtype, "np_dtype", x.dtype))


def repeat_heads(x, groups: int, xp=np):
    """(..., H, S, E) -> (..., H * groups, S, E): each head repeated ``groups`` times in place
    (``np.repeat`` along axis -3), so head h // groups serves head h."""
    if groups == 1:
        return x
    shape = tuple(x.shape)
    x = xp.broadcast_to(xp.expand_dims(x, -3), shape[:-2] + (groups,) + shape[-2:])
    return xp.reshape(x, shape[:-3] + (shape[-3] * groups,) + shape[-2:])


def _repeat_kv(x, heads: int, xp=np):
    """(B, Hkv, S, E) -> (B, heads, S, E): kv head h // group serves query head h."""
    return repeat_heads(x, heads // x.shape[1], xp)


def _sum_kv_groups(x, kv_heads: int, xp=np):
    """(B, Hq, S, E) -> (B, Hkv, S, E): the adjoint of ``_repeat_kv``."""
    B, Hq, S, E = x.shape
    return xp.sum(xp.reshape(x, (B, kv_heads, Hq // kv_heads, S, E)), axis=2)


def _additive(mask: np.ndarray | None, dtype) -> np.ndarray | float:
    if mask is None:
        return 0.0
    if mask.dtype == np.bool_:
        return np.where(mask, dtype.type(0), dtype.type(-np.inf))
    return mask.astype(dtype, copy=False)


def attention_scores(q, k, *, scale=None, causal=False, mask=None) -> np.ndarray:
    """scores = scale * Q K^T + mask, plus -inf where key j > query i if ``causal``.

    q (B, Hq, L, D), k (B, Hkv, S, D) -> scores (B, Hq, L, S). The causal -inf is
    added, not written, so a NaN score stays NaN (torch's math path does the same).
    """
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    k = _repeat_kv(k, q.shape[1])
    scores = matmul(q, k.swapaxes(-1, -2))
    scores *= q.dtype.type(scale)  # (in place: the product is a new array)
    if mask is not None:
        scores = scores + _additive(mask, q.dtype)  # (the mask may broadcast scores up)
    if causal:
        L, S = scores.shape[-2:]
        blocked = np.arange(S)[None, :] > np.arange(L)[:, None]
        scores = scores + np.where(blocked, q.dtype.type(-np.inf), q.dtype.type(0))
    return scores.astype(q.dtype, copy=False)


def attention_scores_backward(dscores, q, k, *, scale=None, xp=np) -> tuple[np.ndarray, np.ndarray]:
    """dQ = scale * dscores K,  dK = scale * dscores^T Q (summed over a kv group).

    The mask gradient, if wanted, is ``dscores`` itself (un-broadcast by the caller).
    """
    scale = float(1.0 / np.sqrt(q.shape[-1]) if scale is None else scale)
    dq = scale * matmul(dscores, _repeat_kv(k, q.shape[1], xp), xp)
    dk = _sum_kv_groups(scale * matmul(xp.swapaxes(dscores, -1, -2), q, xp), k.shape[1], xp)
    return dq, dk


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """weights = exp(scores - max) / sum(exp(scores - max)) along the last axis.

    A row that is entirely -inf (every key blocked) gives weights 0, not NaN;
    a row holding NaN or +inf gives NaN (``softmax_math.attention_softmax``).
    """
    return softmax_math.attention_softmax(scores)


def softmax_rows_backward(dweights, weights, xp=np) -> np.ndarray:
    """dscores = weights * (dweights - rowsum(dweights * weights))."""
    return softmax_math.softmax_backward(dweights, weights, xp=xp)


def attention_dropout(weights, *, dropout_p: float = 0.0, seed: int = 0) -> np.ndarray:
    """dropped = weights * keep / (1 - p), keep = ``dropout_keep(seed, weights.shape, p)``."""
    return weights * dropout_scale(seed, tuple(weights.shape), dropout_p, _dtype_of(weights))


def attention_dropout_backward(ddropped, *, dropout_p: float = 0.0, seed: int = 0) -> np.ndarray:
    """dweights = ddropped * keep / (1 - p): dropout is linear in the weights."""
    return ddropped * dropout_scale(seed, tuple(ddropped.shape), dropout_p, _dtype_of(ddropped))


def weighted_sum(weights: np.ndarray, v: np.ndarray) -> np.ndarray:
    """out = weights V: weights (B, Hq, L, S), v (B, Hkv, S, Dv) -> (B, Hq, L, Dv)."""
    return matmul(weights, _repeat_kv(v, weights.shape[1]))


def weighted_sum_backward(dout, weights, v, xp=np) -> tuple[np.ndarray, np.ndarray]:
    """dweights = dout V^T,  dV = weights^T dout (summed over a kv group)."""
    dweights = matmul(dout, xp.swapaxes(_repeat_kv(v, weights.shape[1], xp), -1, -2), xp)
    dv = _sum_kv_groups(matmul(xp.swapaxes(weights, -1, -2), dout, xp), v.shape[1], xp)
    return dweights, dv


# --------------------------------------------------------------------------- stored weights


def attention_forward(
    q, k, v, *, scale=None, causal=False, mask=None, dropout_p=0.0, seed=0
) -> tuple[np.ndarray, np.ndarray]:
    """out = dropout(softmax(scale * Q K^T + mask)) V; returns (out, weights).

    out (B, Hq, L, Dv); weights (B, Hq, L, S), pre-dropout, kept for the backward.
    """
    scores = attention_scores(q, k, scale=scale, causal=causal, mask=mask)
    weights = softmax_rows(scores)
    out = weighted_sum(attention_dropout(weights, dropout_p=dropout_p, seed=seed), v)
    return out.astype(q.dtype, copy=False), weights


def attention_backward(
    dout, q, k, v, weights, *, scale=None, dropout_p=0.0, seed=0, delta=None, xp=np
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gradients (dq, dk, dv, dscores) from the pre-dropout ``weights`` (module docstring).

    ``dscores`` is the gradient of a float mask. ``delta`` = rowsum(dweights * weights)
    may be given precomputed (the flash twin passes rowsum(dout * out)). ``xp``: the
    namespace of the inputs (Tensors under ``create_graph``, with ``weights`` a function
    of ``q`` and ``k`` in the graph, so that the result can be differentiated again).
    """
    dropped = attention_dropout(weights, dropout_p=dropout_p, seed=seed)
    ddropped, dv = weighted_sum_backward(dout, dropped, v, xp)
    dweights = attention_dropout_backward(ddropped, dropout_p=dropout_p, seed=seed)
    dscores = softmax_math.softmax_backward(dweights, weights, rowsum=delta, xp=xp)
    dq, dk = attention_scores_backward(dscores, q, k, scale=scale, xp=xp)
    return tuple(xp.astype(g, q.dtype, copy=False) for g in (dq, dk, dv, dscores))


# --------------------------------------------------------------------------- flash twin


def _weights_from_logsumexp(scores: np.ndarray, logsumexp: np.ndarray) -> np.ndarray:
    """weights = exp(scores - logsumexp); rows with logsumexp = -inf are 0, NaN stays NaN."""
    lse = logsumexp[..., None]
    blocked = np.isneginf(lse)
    with np.errstate(invalid="ignore"):
        return np.where(blocked, 0, np.exp(scores - np.where(blocked, 0, lse))).astype(scores.dtype)


def flash_attention_forward(
    q, k, v, *, scale=None, causal=False, mask=None, dropout_p=0.0, seed=0
) -> tuple[np.ndarray, np.ndarray]:
    """out = dropout(softmax(scale * Q K^T + mask)) V and the per-row logsumexp.

    Returns out (B, Hq, L, Dv) and logsumexp (B, Hq, L) (-inf on fully masked rows).
    """
    scores = attention_scores(q, k, scale=scale, causal=causal, mask=mask)
    logsumexp = softmax_math.logsumexp_rows(scores)
    weights = _weights_from_logsumexp(scores, logsumexp)
    out = weighted_sum(attention_dropout(weights, dropout_p=dropout_p, seed=seed), v)
    return out.astype(q.dtype, copy=False), logsumexp


def flash_attention_backward(
    dout, q, k, v, out, logsumexp, *, scale=None, causal=False, mask=None, dropout_p=0.0, seed=0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients (dq, dk, dv) of the forward, recomputing the weights from logsumexp.

    The same backward as ``attention_backward``, with delta = rowsum(dout * out).
    """
    scores = attention_scores(q, k, scale=scale, causal=causal, mask=mask)
    weights = _weights_from_logsumexp(scores, logsumexp)
    delta = (dout * out).sum(axis=-1, keepdims=True)
    options = dict(scale=scale, dropout_p=dropout_p, seed=seed, delta=delta)
    dq, dk, dv, _ = attention_backward(dout, q, k, v, weights, **options)
    return dq, dk, dv
