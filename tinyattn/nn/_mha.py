"""``multi_head_attention_forward``: the functional form of ``nn.MultiheadAttention``.

Layout ``(L, N, E)`` (or unbatched ``(L, E)``). Steps, as torch::

    q, k, v = query W_q^T + b_q,  key W_k^T + b_k,  value W_v^T + b_v
    [append bias_k / bias_v as one more key/value column]
    split heads: (L, N, E) -> (N*H, L, E/H)          row index = batch * H + head
    [append a zero key/value column (add_zero_attn)]
    mask = attn_mask + key_padding_mask               both additive, -inf = blocked
    weights = softmax(q k^T / sqrt(E/H) + mask)       a fully blocked row -> 0
    out = merge_heads(dropout(weights) v) W_o^T + b_o

Masks use MultiheadAttention's polarity: a bool ``True`` BLOCKS the position;
a float mask is added to the scores. With ``need_weights=False`` the attention
runs as the single ``ScaledDotProductAttention`` op (the fused path) and no
``(L, S)`` weights are returned.
"""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from .._tensor import Tensor
from ._attention import _causal_keep, attention_weights, scaled_dot_product_attention

_MHA = "multi_head_attention_forward"
MHA_POLARITY = (
    "In nn.MultiheadAttention (and the Transformer layers) a bool mask is True where the "
    "position is BLOCKED (the opposite of scaled_dot_product_attention); a float mask is "
    "added to the scores."
)


def _linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    from . import functional as F

    return F.linear(x, weight, bias)


def _additive_mask(mask: Tensor, name: str, dtype, op: str) -> Tensor:
    """bool (True = blocked) -> 0 / -inf in ``dtype``; a float mask is used as given."""
    if mask.dtype.name == "bool":
        return Tensor._make(np.where(mask._data, -np.inf, 0.0).astype(dtype.np_dtype))
    if not mask.dtype.is_floating_point:
        raise TypeError(
            f"{op}: {name} must be a bool or floating tensor, got dtype {mask.dtype}. "
            f"{MHA_POLARITY}"
        )
    return mask if mask.dtype == dtype else mask.to(dtype)


def _append_unblocked_column(mask: Tensor | None) -> Tensor | None:
    """One more key column that every query may attend to (bias_k / zero attention)."""
    if mask is None:
        return None
    zeros = Tensor._make(np.zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask._data.dtype))
    return ops.rearrange.cat([mask, zeros], dim=-1)


def _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """Validate the input ranks (torch's ``_mha_shape_check``); return whether batched."""
    if query.ndim == 3:
        batched, want_kpm = True, 2
    elif query.ndim == 2:
        batched, want_kpm = False, 1
    else:
        raise ValueError(
            f"{_MHA}: query should be (L, N, E) batched or (L, E) unbatched, got shape "
            f"{tuple(query.shape)}"
        )
    for name, t in (("key", key), ("value", value)):
        if t.ndim != query.ndim:
            raise ValueError(
                f"{_MHA}: query is {query.ndim}-D, so {name} should be {query.ndim}-D too, got "
                f"shape {tuple(t.shape)}"
            )
    if key_padding_mask is not None and key_padding_mask.ndim != want_kpm:
        raise ValueError(
            f"{_MHA}: key_padding_mask should be {'(N, S)' if batched else '(S,)'} for "
            f"{query.ndim}-D query, got shape {tuple(key_padding_mask.shape)}"
        )
    return batched


def _check_attn_mask(attn_mask: Tensor, L: int, S: int, NH: int) -> None:
    ok = (attn_mask.ndim == 2 and tuple(attn_mask.shape) == (L, S)) or (
        attn_mask.ndim == 3 and tuple(attn_mask.shape) == (NH, L, S)
    )
    if not ok:
        raise ValueError(
            f"{_MHA}: attn_mask has shape {tuple(attn_mask.shape)}; expected (L, S) = "
            f"({L}, {S}) or (N*num_heads, L, S) = ({NH}, {L}, {S})"
        )


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention on ``(L, N, E)`` inputs with torch's signature (see module docstring).

    Returns
    -------
    (attn_output, attn_weights)
        ``(L, N, E)``; weights ``(N, L, S)`` averaged over heads, ``(N, H, L, S)`` with
        ``average_attn_weights=False``, or None when ``need_weights=False``.
        A query whose keys are all blocked gets output ``out_proj_bias``
        (attention 0) and weights 0, with finite gradients; torch gives NaN there.
    """
    batched = _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    S = key.shape[0]
    if E != embed_dim_to_check:
        raise ValueError(
            f"{_MHA}: query embed dim {E} does not match embed_dim {embed_dim_to_check}"
        )
    if E % num_heads:
        raise ValueError(f"{_MHA}: embed_dim {E} is not divisible by num_heads {num_heads}")
    head_dim = E // num_heads
    if key.shape[:2] != value.shape[:2]:
        raise ValueError(
            f"{_MHA}: key and value must have the same (S, N), got key {tuple(key.shape)} and "
            f"value {tuple(value.shape)}"
        )
    if key.shape[1] != N:
        raise ValueError(
            f"{_MHA}: query has batch size {N} but key has {key.shape[1]} "
            f"(query {tuple(query.shape)}, key {tuple(key.shape)})"
        )

    # Masks: validate, then turn both into additive float masks (-inf = blocked).
    dtype = query.dtype
    if attn_mask is None and is_causal:
        attn_mask = Tensor._make(~_causal_keep(L, S))  # tinyattn builds it; torch raises here
    if attn_mask is not None:
        _check_attn_mask(attn_mask, L, S, N * num_heads)
        attn_mask = _additive_mask(attn_mask, "attn_mask", dtype, _MHA)
        if attn_mask.ndim == 2:
            attn_mask = attn_mask.unsqueeze(0)
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (N, S):
            raise ValueError(
                f"{_MHA}: key_padding_mask should have shape (N, S) = ({N}, {S}), got "
                f"{tuple(key_padding_mask.shape)}"
            )
        key_padding_mask = _additive_mask(key_padding_mask, "key_padding_mask", dtype, _MHA)

    # Input projections.
    if (
        not use_separate_proj_weight
        and query is key
        and key is value
        and in_proj_weight is not None
    ):
        # Self-attention: one packed GEMM (x @ W_in^T, W_in = [W_q; W_k; W_v]), then split the
        # output. Same numbers as three projections, a third of the backward's input products.
        q, k, v = _linear(query, in_proj_weight, in_proj_bias).chunk(3, dim=-1)
    elif not use_separate_proj_weight:
        if in_proj_weight is None:
            raise ValueError(f"{_MHA}: in_proj_weight is None with use_separate_proj_weight=False")
        w_q, w_k, w_v = in_proj_weight.chunk(3)
        b_q, b_k, b_v = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _linear(query, w_q, b_q), _linear(key, w_k, b_k), _linear(value, w_v, b_v)
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise ValueError(f"{_MHA}: use_separate_proj_weight=True needs q/k/v_proj_weight")
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
        b_q, b_k, b_v = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _linear(query, w_q, b_q), _linear(key, w_k, b_k), _linear(value, w_v, b_v)

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise ValueError(f"{_MHA}: bias_k/bias_v cannot be combined with static_k/static_v")
        k = ops.rearrange.cat([k, bias_k.repeat(1, N, 1)])
        v = ops.rearrange.cat([v, bias_v.repeat(1, N, 1)])
        attn_mask = _append_unblocked_column(attn_mask)
        key_padding_mask = _append_unblocked_column(key_padding_mask)
    elif (bias_k is None) != (bias_v is None):
        raise ValueError(f"{_MHA}: bias_k and bias_v must be given together")

    # Split heads: (L, N, E) -> (N*H, L, head_dim), row = batch * H + head.
    q = q.reshape(L, N * num_heads, head_dim).transpose(0, 1)
    k = static_k if static_k is not None else k.reshape(-1, N * num_heads, head_dim).transpose(0, 1)
    v = static_v if static_v is not None else v.reshape(-1, N * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        zeros = Tensor._make(np.zeros((N * num_heads, 1, head_dim), dtype=k._data.dtype))
        k, v = ops.rearrange.cat([k, zeros], dim=1), ops.rearrange.cat([v, zeros], dim=1)
        attn_mask = _append_unblocked_column(attn_mask)
        key_padding_mask = _append_unblocked_column(key_padding_mask)
    S = k.shape[1]
    if key_padding_mask is not None:
        kpm = key_padding_mask.reshape(N, 1, 1, S).expand(N, num_heads, 1, S)
        kpm = kpm.reshape(N * num_heads, 1, S)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0

    if attn_mask is not None:
        # (1 or N*H, L or 1, S) -> (1 or N, 1 or H, L or 1, S), broadcast by the attention ops
        rows = attn_mask.shape[1]
        if attn_mask.shape[0] == 1:
            attn_mask = attn_mask.reshape(1, 1, rows, S)
        else:
            attn_mask = attn_mask.reshape(N, num_heads, rows, S)
    q = q.reshape(N, num_heads, L, head_dim)
    k = k.reshape(N, num_heads, S, head_dim)
    v = v.reshape(N, num_heads, S, head_dim)
    weights = None
    if need_weights:  # the weights are wanted: materialise them (scores + row softmax)
        weights = attention_weights(q, k, attn_mask, 1.0 / math.sqrt(head_dim))
        if dropout_p > 0.0:
            from . import functional as F

            weights = F.dropout(weights, p=dropout_p)
        out = ops.linalg.matmul(weights, v)  # (N, H, L, head_dim)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not batched:
            weights = weights.squeeze(0)
    else:  # the fused path: one ScaledDotProductAttention op, no L x S matrix kept
        out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p)
    out = out.permute(2, 0, 1, 3).reshape(N * L, E)
    out = _linear(out, out_proj_weight, out_proj_bias).reshape(L, N, E)
    if not batched:
        out = out.squeeze(1)
    return out, weights
