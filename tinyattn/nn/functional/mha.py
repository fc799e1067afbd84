"""``multi_head_attention_forward``: the functional form of ``nn.MultiheadAttention``.

Layout ``(L, N, E)`` (or unbatched ``(L, E)``). Steps, as torch::

    q, k, v = query W_q^T + b_q,  key W_k^T + b_k,  value W_v^T + b_v
    [append bias_k / bias_v as one more key/value column]
    split heads: (L, N, E) -> (N, H, L, E/H)         a view, no copy
    [append a zero key/value column (add_zero_attn)]
    mask = attn_mask + key_padding_mask               both additive, -inf = blocked
    weights = softmax(q k^T / sqrt(E/H) + mask)       a fully blocked row -> 0
    out = merge_heads(dropout(weights) v) W_o^T + b_o

Masks use MultiheadAttention's polarity: a bool ``True`` BLOCKS the position;
a float mask is added to the scores. With ``need_weights=False`` the attention
is one ``ScaledDotProductAttention`` op (fused when it can be); with
``need_weights=True`` it is the returned-weights path (``AttentionWeights``,
dropout, matmul). Both draw the same dropout mask for the same seed.
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ...kernels._boundary import default_scale
from ...tensor_api.tensor import Tensor
from .. import _checks as checks
from .attention import (
    attention_dropout,
    attention_weights,
    causal_keep,
    scaled_dot_product_attention,
)


def _linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    from .. import functional as F

    return F.linear(x, weight, bias)


def _additive_mask(mask: Tensor | None, dtype) -> Tensor | None:
    """bool (True = blocked) -> 0 / -inf in ``dtype``; a float mask is used as given."""
    if mask is None:
        return None
    if mask.dtype.name == "bool":
        return Tensor._make(np.where(mask._data, -np.inf, 0.0).astype(dtype.np_dtype))
    return mask if mask.dtype == dtype else mask.to(dtype)


def _append_unblocked_column(mask: Tensor | None) -> Tensor | None:
    """One more key column that every query may attend to (bias_k / zero attention)."""
    if mask is None:
        return None
    zeros = Tensor._make(np.zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask._data.dtype))
    return ops.shape.rearrange.cat([mask, zeros], dim=-1)


def _prepare_masks(attn_mask, key_padding_mask, is_causal, L, S, N, heads, dtype):
    """Check both masks and make them additive: attn_mask (1 or N*H, L, S), kpm (N, S)."""
    if attn_mask is None and is_causal:
        attn_mask = Tensor._make(~causal_keep(L, S))  # tinyattn builds it; torch raises here
    checks.check_mha_masks(attn_mask, key_padding_mask, L, S, N, heads)
    attn_mask = _additive_mask(attn_mask, dtype)
    if attn_mask is not None and attn_mask.ndim == 2:
        attn_mask = attn_mask.unsqueeze(0)
    return attn_mask, _additive_mask(key_padding_mask, dtype)


def _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate, w_separate):
    """q, k, v = x W^T + b for each input (one packed GEMM for self-attention)."""
    if not separate and query is key and key is value and in_proj_weight is not None:
        # Self-attention: x @ W_in^T with W_in = [W_q; W_k; W_v], then split the output.
        # Same numbers as three projections, a third of the backward's input products.
        return _linear(query, in_proj_weight, in_proj_bias).chunk(3, dim=-1)
    if not separate:
        if in_proj_weight is None:
            raise ValueError(
                f"{checks.MHA}: in_proj_weight is None with use_separate_proj_weight=False"
            )
        w_separate = in_proj_weight.chunk(3)
    elif any(w is None for w in w_separate):
        raise ValueError(f"{checks.MHA}: use_separate_proj_weight=True needs q/k/v_proj_weight")
    biases = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
    return tuple(_linear(x, w, b) for x, w, b in zip((query, key, value), w_separate, biases))


def _extra_key_columns(k, v, masks, bias_kv, static_kv, add_zero_attn, N, heads):
    """Append bias_k/bias_v (before the head split), split k and v into heads
    (N, H, S, E/H) unless static, then append a zero column; masks get a free column."""
    bias_k, bias_v = bias_kv
    if (bias_k is None) != (bias_v is None):
        raise ValueError(f"{checks.MHA}: bias_k and bias_v must be given together")
    if bias_k is not None:
        if static_kv != (None, None):
            raise ValueError(
                f"{checks.MHA}: bias_k/bias_v cannot be combined with static_k/static_v"
            )
        k = ops.shape.rearrange.cat([k, bias_k.repeat(1, N, 1)])
        v = ops.shape.rearrange.cat([v, bias_v.repeat(1, N, 1)])
        masks = [_append_unblocked_column(m) for m in masks]
    head_dim = k.shape[-1] // heads
    k, v = (
        _split_heads(x, N, heads) if s is None else s.reshape(N, heads, s.shape[1], head_dim)
        for x, s in zip((k, v), static_kv)
    )
    if add_zero_attn:
        zeros = Tensor._make(np.zeros((N, heads, 1, head_dim), dtype=k._data.dtype))
        k, v = (
            ops.shape.rearrange.cat([k, zeros], dim=2),
            ops.shape.rearrange.cat([v, zeros], dim=2),
        )
        masks = [_append_unblocked_column(m) for m in masks]
    return k, v, masks


def _split_heads(x: Tensor, N: int, heads: int) -> Tensor:
    """(S, N, E) -> (N, H, S, E/H), a view: the attention kernels read strided heads, so
    the q/k/v thirds of the packed in-projection are never copied."""
    return x.reshape(x.shape[0], N, heads, x.shape[-1] // heads).permute(1, 2, 0, 3)


def _merged_mask(attn_mask, key_padding_mask, N, heads, S):
    """attn_mask + key_padding_mask as one additive (1 or N, 1 or H, L or 1, S) mask."""
    if key_padding_mask is not None:
        kpm = key_padding_mask.reshape(N, 1, 1, S).expand(N, heads, 1, S)
        kpm = kpm.reshape(N * heads, 1, S)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if attn_mask is None:
        return None
    rows = attn_mask.shape[1]
    if attn_mask.shape[0] == 1:
        return attn_mask.reshape(1, 1, rows, S)
    return attn_mask.reshape(N, heads, rows, S)


def _attend(q, k, v, mask, dropout_p, need_weights, average_attn_weights):
    """Attention of (N, H, L, D) heads: (out (N, H, L, D), weights or None)."""
    if not need_weights:  # one ScaledDotProductAttention op: fused when it can be
        return scaled_dot_product_attention(q, k, v, mask, dropout_p), None
    # the returned-weights path: the weights are an output, so they are materialised
    weights = attention_weights(q, k, mask, default_scale(q.shape[-1]))
    if dropout_p > 0.0:
        weights = attention_dropout(weights, dropout_p)
    out = ops.linalg.matmul.matmul(weights, v)
    return out, (weights.mean(dim=1) if average_attn_weights else weights)


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
    """Multi-head attention on ``(L, N, E)`` inputs with torch's signature.

    The math, gradients and shapes are in ``nn.MultiheadAttention.forward``; the steps in
    this module's docstring. Returns ``(attn_output (L, N, E), attn_weights)``, weights
    ``(N, L, S)`` head-averaged, ``(N, H, L, S)`` if not ``average_attn_weights``, or None.

    Composes: F.linear, F.scaled_dot_product_attention, tinyattn.matmul, F.softmax, F.dropout,
    Tensor.reshape, Tensor.transpose, Tensor.permute, tinyattn.cat

    (``need_weights=True`` takes the matmul-softmax-dropout path, which returns the weights.)
    """
    batched = checks.check_mha_ranks(query, key, value, key_padding_mask)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    checks.check_mha_sizes(query, key, value, embed_dim_to_check, num_heads)
    (L, N, E), H = query.shape, num_heads
    S = static_k.shape[1] if static_k is not None else key.shape[0]  # (torch: the keys used)
    masks = _prepare_masks(attn_mask, key_padding_mask, is_causal, L, S, N, H, query.dtype)
    w_separate = (q_proj_weight, k_proj_weight, v_proj_weight)
    q, k, v = _in_projection(
        query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight, w_separate
    )
    q = _split_heads(q, N, H)
    bias_kv, static_kv = (bias_k, bias_v), (static_k, static_v)
    k, v, masks = _extra_key_columns(k, v, masks, bias_kv, static_kv, add_zero_attn, N, H)
    mask = _merged_mask(*masks, N, H, k.shape[2])
    p = dropout_p if training else 0.0
    out, weights = _attend(q, k, v, mask, p, need_weights, average_attn_weights)
    out = out.permute(2, 0, 1, 3).reshape(N * L, E)
    out = _linear(out, out_proj_weight, out_proj_bias).reshape(L, N, E)
    if not batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights
