"""Scaled dot-product attention: one ``Function`` with the whole forward and backward.

The math (per batch and head; ``Q (L, E)``, ``K (S, E)``, ``V (S, Ev)``)::

    S  = Q K^T * scale + mask          scores; a blocked position holds -inf
    P  = softmax(S)                    weights; a row whose keys are all blocked -> 0
    Pd = P * keep / (1 - p)            dropout (keep ~ Bernoulli(1 - p)); Pd = P when p = 0
    O  = Pd V

    dV  = Pd^T dO
    dPd = dO V^T
    dP  = dPd * keep / (1 - p)
    dS  = P * (dP - rowsum(dP * P))    softmax backward
    dQ  = dS K * scale
    dK  = dS^T Q * scale
    dmask = dS                         (a float mask that requires grad)

The array-level math lives in ``_sdpa_forward_arrays`` / ``_sdpa_backward_arrays``
so that the materialised NumPy version can be swapped for fused kernels that
keep ``logsumexp`` instead of ``P``. ``multi_head_attention_forward`` (the
functional form of ``nn.MultiheadAttention``) is in ``_mha.py``.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from .._matmul import matmul as matmul_arrays
from ..autograd.function import Function
from ..random import _numpy_generator
from .._tensor import Tensor

_SDPA = "scaled_dot_product_attention"


# -- array-level math (swappable for fused kernels) ------------------------------------------
def _masked_softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis; a row that is -inf everywhere gives zeros (not NaN)."""
    row_max = scores.max(axis=-1, keepdims=True)
    # A fully blocked row has max -inf; shifting by 0 keeps exp(-inf) = 0 instead of NaN.
    row_max = np.where(np.isneginf(row_max), 0.0, row_max)
    e = np.exp(scores - row_max)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0.0, 1.0, total)


def _causal_keep(L: int, S: int) -> np.ndarray:
    """Upper-left causal pattern ``tril(ones(L, S))``: query i sees keys 0..i (also when L != S)."""
    return np.tril(np.ones((L, S), dtype=bool))


def _sdpa_forward_arrays(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None,
    causal: bool,
    scale: float,
    dropout_p: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, tuple]:
    """Materialised attention on ``(B..., L, E)`` arrays; ``mask`` is additive (-inf = blocked).

    Returns ``(out, saved)`` where ``saved = (weights, keep)`` is what
    ``_sdpa_backward_arrays`` needs (``keep`` is None without dropout).
    """
    scores = matmul_arrays(q, np.swapaxes(k, -1, -2)) * scale
    if mask is not None:
        scores = scores + mask
    if causal:
        scores = np.where(_causal_keep(q.shape[-2], k.shape[-2]), scores, -np.inf)
    weights = _masked_softmax(scores)
    keep = None
    dropped = weights
    if dropout_p > 0.0:
        keep = rng.random(weights.shape) >= dropout_p
        dropped = weights * keep * _inv_keep(dropout_p, weights.dtype)
    return matmul_arrays(dropped, v), (weights, keep)


def _inv_keep(dropout_p: float, dtype) -> np.ndarray:
    # p = 1 drops everything: the scale is irrelevant (keep is all False), avoid 1/0.
    return np.asarray(0.0 if dropout_p >= 1.0 else 1.0 / (1.0 - dropout_p), dtype=dtype)


def _sdpa_backward_arrays(
    dout: np.ndarray,
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    saved: tuple,
    scale: float,
    dropout_p: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gradients ``(dq, dk, dv, dscores)`` of the materialised attention (formulas above)."""
    weights, keep = saved
    if keep is None:
        dropped = weights
    else:
        dropped = weights * keep * _inv_keep(dropout_p, weights.dtype)
    dv = matmul_arrays(np.swapaxes(dropped, -1, -2), dout)
    dweights = matmul_arrays(dout, np.swapaxes(v, -1, -2))
    if keep is not None:
        dweights = dweights * keep * _inv_keep(dropout_p, weights.dtype)
    dscores = weights * (dweights - (dweights * weights).sum(axis=-1, keepdims=True))
    dq = matmul_arrays(dscores, k) * scale
    dk = matmul_arrays(np.swapaxes(dscores, -1, -2), q) * scale
    return dq, dk, dv, dscores


# -- the Function ----------------------------------------------------------------------------
class ScaledDotProductAttention(Function):
    """``O = softmax(Q K^T * scale + mask) V`` as one op (formulas in the module docstring).

    Inputs ``q (B..., Hq, L, E)``, ``k (B..., Hk, S, E)``, ``v (B..., Hk, S, Ev)``,
    ``mask`` None or additive float ``(..., L, S)`` (broadcastable). Leading dims
    broadcast; with ``groups > 1`` each key/value head serves ``groups``
    consecutive query heads (GQA), so ``dK``/``dV`` sum over each group.
    float16 inputs are computed in float32; the engine casts the gradients back.
    """

    @staticmethod
    def forward(ctx, q, k, v, mask, *, causal, scale, dropout_p, groups):
        out_dtype = q.dtype
        fused = _fused_layout(q, k, v, mask, groups, ctx.needs_input_grad)
        ctx.fused = fused
        if fused is not None:
            # numba flash kernels: no L x S matrix is kept; backward recomputes it
            out, saved = _fused_forward(q, k, v, mask, fused, causal, scale, dropout_p)
            out = out.astype(out_dtype, copy=False)
            ctx.save_for_backward(q, k, v, out)  # version-checked, so in-place edits are caught
            ctx.attention = (saved, scale, dropout_p, groups, causal)
            return out
        ctx.save_for_backward(q, k, v)  # the inputs themselves, so in-place edits are caught
        q, k, v, mask = _broadcast_inputs(q, k, v, mask, groups)
        out, saved = _sdpa_forward_arrays(
            q, k, v, mask, causal, scale, dropout_p, _numpy_generator(None)
        )
        ctx.attention = (saved, scale, dropout_p, groups, causal)
        return out.astype(out_dtype, copy=False)

    @staticmethod
    def backward(ctx, dout):
        saved, scale, dropout_p, groups, causal = ctx.attention
        if ctx.fused is not None:
            q, k, v, out = ctx.saved_tensors
            dq, dk, dv = _fused_backward(
                dout, q, k, v, out, saved, ctx.fused, causal, scale, dropout_p
            )
            return dq, dk, dv, None
        q, k, v, _ = _broadcast_inputs(*ctx.saved_tensors, None, groups)
        dout = dout.astype(q.dtype, copy=False)
        dq, dk, dv, dscores = _sdpa_backward_arrays(dout, q, k, v, saved, scale, dropout_p)
        if groups > 1:  # undo the head repeat: each kv head collects its group's gradients
            dk = dk.reshape(dk.shape[:-3] + (-1, groups) + dk.shape[-2:]).sum(axis=-3)
            dv = dv.reshape(dv.shape[:-3] + (-1, groups) + dv.shape[-2:]).sum(axis=-3)
        return dq, dk, dv, (dscores if ctx.needs_input_grad[3] else None)


# -- attention weights, materialised (nn.MultiheadAttention with need_weights=True) --------
class AttentionWeights(Function):
    """``P = softmax(scale * Q K^T + mask)`` over the keys, kept because the caller wants it.

    ``q (B, H, L, D)``, ``k (B, H, S, D)``, ``mask`` None or additive ``(Bm, Hm, Lm, S)``
    -> ``P (B, H, L, S)``; a row whose keys are all blocked gives weights 0.
    Backward (the kernels' materialised path)::

        dS = P * (dP - rowsum(dP * P))      dQ = scale * dS K      dK = scale * dS^T Q
        dmask = dS  (summed over the dims the mask was broadcast along, by the engine)
    """

    @staticmethod
    def forward(ctx, q, k, mask, *, scale):
        from .. import kernels

        scores = kernels.attention_scores(q, k, scale=scale, mask=mask)
        weights = kernels.softmax_rows(scores)
        ctx.scale = scale
        ctx.save_for_backward(q, k, weights)
        return weights

    @staticmethod
    def backward(ctx, dweights):
        from .. import kernels

        q, k, weights = ctx.saved_tensors
        dscores = kernels.softmax_rows_backward(dweights.astype(weights.dtype, copy=False), weights)
        dq, dk = kernels.attention_scores_backward(dscores, q, k, scale=ctx.scale)
        return dq, dk, (dscores if ctx.needs_input_grad[2] else None)


def attention_weights(q: Tensor, k: Tensor, mask: Tensor | None, scale: float) -> Tensor:
    """Row-softmaxed attention weights ``(B, H, L, S)`` (fully blocked rows give 0)."""
    return AttentionWeights.apply(q, k, mask, scale=float(scale))


# -- the fused (numba flash-attention) path ---------------------------------------------------
def _fused_layout(q, k, v, mask, groups, needs_input_grad):
    """How to view the inputs as the kernels' (B, H, L, D) arrays, or None for the
    materialised path (leading dims that broadcast, > 4 dims, or a float mask that
    needs its gradient: the fused kernels never form dS, the mask's gradient)."""
    if len(needs_input_grad) > 3 and needs_input_grad[3]:
        return None
    if not (q.ndim == k.ndim == v.ndim and q.ndim in (3, 4)):
        return None
    if q.ndim == 3:
        if not (q.shape[0] == k.shape[0] == v.shape[0]):
            return None
        layout = "BLD"
        batch_heads = (q.shape[0], 1)
    else:
        if not (q.shape[0] == k.shape[0] == v.shape[0] and k.shape[1] == v.shape[1]):
            return None
        if q.shape[1] != k.shape[1] * groups:
            return None
        layout = "BHLD"
        batch_heads = q.shape[:2]
    if mask is not None:
        m = mask[:, None] if layout == "BLD" and mask.ndim == 3 else mask
        if m.ndim > 4:
            return None
        try:
            if np.broadcast_shapes(m.shape[:-2], batch_heads) != batch_heads:
                return None
        except ValueError:
            return None
    return layout


def _as_bhld(x, layout):
    return x[:, None] if layout == "BLD" else x


def _fused_forward(q, k, v, mask, layout, causal, scale, dropout_p):
    from .. import kernels

    work = np.float32 if q.dtype == np.float16 else q.dtype
    q4, k4, v4 = (_as_bhld(a, layout).astype(work, copy=False) for a in (q, k, v))
    mask4 = None
    if mask is not None:
        mask4 = (mask[:, None] if layout == "BLD" and mask.ndim == 3 else mask).astype(
            work, copy=False
        )
    seed = int(_numpy_generator(None).integers(0, 2**62)) if dropout_p > 0 else 0
    out4, logsumexp = kernels.flash_attention_forward(
        q4, k4, v4, scale=scale, causal=causal, mask=mask4, dropout_p=dropout_p, seed=seed
    )
    out = out4[:, 0] if layout == "BLD" else out4
    return out, (logsumexp, mask4, seed)


def _fused_backward(dout, q, k, v, out, saved, layout, causal, scale, dropout_p):
    from .. import kernels

    logsumexp, mask4, seed = saved
    work = logsumexp.dtype
    q4, k4, v4, out4, dout4 = (
        _as_bhld(a, layout).astype(work, copy=False) for a in (q, k, v, out, dout)
    )
    dq, dk, dv = kernels.flash_attention_backward(
        dout4,
        q4,
        k4,
        v4,
        out4,
        logsumexp,
        scale=scale,
        causal=causal,
        mask=mask4,
        dropout_p=dropout_p,
        seed=seed,
    )
    if layout == "BLD":
        dq, dk, dv = dq[:, 0], dk[:, 0], dv[:, 0]
    return dq, dk, dv


def _broadcast_inputs(q, k, v, mask, groups):
    """Compute dtype (float16 -> float32), GQA head repeat and leading-dim broadcast."""
    work = np.float32 if q.dtype == np.float16 else q.dtype
    q, k, v = (a.astype(work, copy=False) for a in (q, k, v))
    if mask is not None:
        mask = mask.astype(work, copy=False)
    if groups > 1:
        k, v = np.repeat(k, groups, axis=-3), np.repeat(v, groups, axis=-3)
    batch = np.broadcast_shapes(
        q.shape[:-2], k.shape[:-2], v.shape[:-2], () if mask is None else mask.shape[:-2]
    )
    q = np.broadcast_to(q, batch + q.shape[-2:])
    k = np.broadcast_to(k, batch + k.shape[-2:])
    v = np.broadcast_to(v, batch + v.shape[-2:])
    return q, k, v, mask


def _check_mask_keeps_scores_shape(query, key, value, attn_mask, groups: int) -> None:
    """The mask broadcasts into the scores (..., L, S) of q, k, v; it may not enlarge them."""
    lead = [tuple(query.shape[:-2])]
    for t in (key, value):  # with GQA the key/value head dim counts as the query's
        lead.append(tuple(t.shape[:-2]) if groups == 1 else t.shape[:-3] + (query.shape[-3],))
    try:
        scores = np.broadcast_shapes(*lead) + (query.shape[-2], key.shape[-2])
    except ValueError:
        return  # q, k, v themselves do not broadcast: reported with their shapes later
    mask_shape = tuple(attn_mask.shape)
    if len(mask_shape) > len(scores) or any(
        m not in (1, s) for m, s in zip(mask_shape[::-1], scores[::-1])
    ):
        raise ValueError(
            f"{_SDPA}: attn_mask of shape {mask_shape} does not broadcast to the scores "
            f"shape {scores} of query {tuple(query.shape)} and key {tuple(key.shape)}"
        )


# -- the public function ---------------------------------------------------------------------
def _check_mask_dtype(mask: Tensor, op: str, polarity: str) -> None:
    if not (mask.dtype.name == "bool" or mask.dtype.is_floating_point):
        raise TypeError(
            f"{op}: attn_mask must be a bool or floating tensor, got dtype {mask.dtype}. {polarity}"
        )


SDPA_POLARITY = (
    "In scaled_dot_product_attention a bool mask is True where the position TAKES PART "
    "(the opposite of nn.MultiheadAttention); a float mask is added to the scores."
)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """``softmax(query key^T * scale + mask) value`` with torch's signature and semantics.

    Parameters
    ----------
    query, key, value : Tensor
        ``(..., L, E)``, ``(..., S, E)``, ``(..., S, Ev)``; leading dims broadcast.
    attn_mask : Tensor, optional
        bool (``True`` = the position takes part) or float (added to the scores),
        broadcastable to ``(..., L, S)``.
    dropout_p : float
        Dropout on the weights; always applied (there is no training flag), as in torch.
    is_causal : bool
        Upper-left causal mask ``tril(ones(L, S))``; cannot be combined with ``attn_mask``.
    scale : float, optional
        Defaults to ``1 / sqrt(E)``.
    enable_gqa : bool
        Let the query head count (dim -3) be a multiple of the key/value head count.

    Returns
    -------
    Tensor
        ``(..., L, Ev)``. A query row whose keys are all blocked gives 0 (and zero gradients).
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{_SDPA}: {name} must be a Tensor, got {type(t).__name__}")
        if t.ndim < 2:
            raise ValueError(
                f"{_SDPA}: {name} must have at least 2 dims, got shape {tuple(t.shape)}"
            )
    if not (query.dtype == key.dtype == value.dtype) or not query.dtype.is_floating_point:
        raise TypeError(
            f"{_SDPA}: query, key and value must have the same floating dtype, got "
            f"{query.dtype}, {key.dtype} and {value.dtype}"
        )
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"{_SDPA}: query and key must have the same embedding size (last dim), got "
            f"query {tuple(query.shape)} and key {tuple(key.shape)}"
        )
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"{_SDPA}: key and value must have the same sequence length (dim -2), got "
            f"key {tuple(key.shape)} and value {tuple(value.shape)}"
        )
    if attn_mask is not None and is_causal:
        raise ValueError(
            f"{_SDPA}: attn_mask and is_causal=True were both given; pass one of them "
            "(build the combined mask yourself if you need both)"
        )
    for name, number in (("dropout_p", dropout_p), ("scale", scale)):
        if number is not None and (isinstance(number, bool) or not isinstance(number, Real)):
            raise TypeError(f"{_SDPA}: {name} must be a float, got {type(number).__name__}")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{_SDPA}: dropout_p must be in [0, 1], got {dropout_p}")
    L, S = query.shape[-2], key.shape[-2]
    mask = None
    if attn_mask is not None:
        if not isinstance(attn_mask, Tensor):
            raise TypeError(f"{_SDPA}: attn_mask must be a Tensor, got {type(attn_mask).__name__}")
        _check_mask_dtype(attn_mask, _SDPA, SDPA_POLARITY)
        try:
            np.broadcast_shapes(tuple(attn_mask.shape), (L, S))
        except ValueError:
            raise ValueError(
                f"{_SDPA}: attn_mask of shape {tuple(attn_mask.shape)} does not broadcast to "
                f"(..., L, S) = (..., {L}, {S})"
            ) from None
        if attn_mask.dtype.name == "bool":
            work = np.float32 if query.dtype.name == "float16" else query.dtype.np_dtype
            mask = np.where(attn_mask._data, 0.0, -np.inf).astype(work)
        else:
            mask = attn_mask
    groups = 1
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and query.shape[-3] != key.shape[-3]:
        hq, hk = query.shape[-3], key.shape[-3]
        if hk != value.shape[-3] or hq % hk:
            raise ValueError(
                f"{_SDPA}: with enable_gqa the query heads (dim -3) must be a multiple of the "
                f"key/value heads, got query {tuple(query.shape)}, key {tuple(key.shape)}, "
                f"value {tuple(value.shape)}"
            )
        groups = hq // hk
    if attn_mask is not None:
        _check_mask_keeps_scores_shape(query, key, value, attn_mask, groups)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    try:
        return ScaledDotProductAttention.apply(
            query,
            key,
            value,
            mask,
            causal=bool(is_causal),
            scale=float(scale),
            dropout_p=float(dropout_p),
            groups=groups,
        )
    except ValueError as err:
        if "broadcast" not in str(err):
            raise
        raise ValueError(
            f"{_SDPA}: the leading dims of query {tuple(query.shape)}, key {tuple(key.shape)}, "
            f"value {tuple(value.shape)}"
            + ("" if attn_mask is None else f" and attn_mask {tuple(attn_mask.shape)}")
            + " do not broadcast (for different head counts pass enable_gqa=True)"
        ) from None
