"""Argument checks shared by ``scaled_dot_product_attention`` and ``multi_head_attention_forward``.

Each check raises a clear ``TypeError``/``ValueError`` naming the function, the
argument, what was expected and what came; nothing is checked again further down
(the kernels' own boundary checks only guard the arrays handed to numba).
"""

from __future__ import annotations

import contextlib
from numbers import Real

import numpy as np

from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor

SDPA = "scaled_dot_product_attention"
MHA = "multi_head_attention_forward"

SDPA_POLARITY = (
    "In scaled_dot_product_attention a bool mask is True where the position TAKES PART "
    "(the opposite of nn.MultiheadAttention); a float mask is added to the scores."
)
MHA_POLARITY = (
    "In nn.MultiheadAttention (and the Transformer layers) a bool mask is True where the "
    "position is BLOCKED (the opposite of scaled_dot_product_attention); a float mask is "
    "added to the scores."
)


def shape(t: Tensor) -> tuple:
    return tuple(t.shape)


# -- shared ---------------------------------------------------------------------------------
def require_tensor(x, op: str, arg: str = "input") -> Tensor:
    """``x`` if it is a Tensor; else a TypeError naming the function and the argument."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' must be a Tensor, not {type_name(x)}")
    return x


def check_tensor(op: str, name: str, t: object) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type_name(t)}")


def check_mask_dtype(op: str, name: str, mask: Tensor, polarity: str) -> None:
    """Only bool and floating masks: anything else names its dtype and the API's polarity."""
    check_tensor(op, name, mask)
    if not (mask.dtype.name == "bool" or mask.dtype.is_floating_point):
        raise TypeError(
            f"{op}: {name} must be a bool or floating tensor, got dtype {mask.dtype}. {polarity}"
        )


def check_real(op: str, name: str, number: object) -> None:
    if number is None or type(number) is float:  # (the common case, before the ABC check)
        return
    if isinstance(number, bool) or not isinstance(number, Real):
        raise TypeError(f"{op}: {name} must be a float, got {type_name(number)}")


def check_probability(op: str, name: str, p: object) -> None:
    check_real(op, name, p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: {name} must be in [0, 1], got {p}")


# -- scaled_dot_product_attention ------------------------------------------------------------
def check_sdpa_args(query, key, value, attn_mask, dropout_p, is_causal, scale) -> None:
    """Types, ranks, the shared dtype, E and S agreement, mask dtype, scalars.

    (Shapes and dtypes are read off the arrays: no Size or dtype object per check.)"""
    named = (("query", query), ("key", key), ("value", value))
    if not (isinstance(query, Tensor) and isinstance(key, Tensor) and isinstance(value, Tensor)):
        for name, t in named:
            check_tensor(SDPA, name, t)
    q, k, v = query._data, key._data, value._data
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        for name, t in named:
            if t._data.ndim < 2:
                raise ValueError(f"{SDPA}: {name} must have at least 2 dims, got shape {shape(t)}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype.kind != "f":
        raise TypeError(
            f"{SDPA}: query, key and value must have the same floating dtype, got "
            f"{query.dtype}, {key.dtype} and {value.dtype}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"{SDPA}: query and key must have the same embedding size (last dim), got "
            f"query {shape(query)} and key {shape(key)}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"{SDPA}: key and value must have the same sequence length (dim -2), got "
            f"key {shape(key)} and value {shape(value)}"
        )
    if attn_mask is not None and is_causal:
        raise ValueError(
            f"{SDPA}: attn_mask and is_causal=True were both given; pass one of them "
            "(build the combined mask yourself if you need both)"
        )
    check_real(SDPA, "scale", scale)
    if type(dropout_p) is not float or dropout_p != 0.0:  # (0.0, the default: nothing to check)
        check_probability(SDPA, "dropout_p", dropout_p)
    if attn_mask is not None:
        check_mask_dtype(SDPA, "attn_mask", attn_mask, SDPA_POLARITY)


def gqa_groups(query: Tensor, key: Tensor, value: Tensor, enable_gqa: bool) -> int:
    """How many query heads share one key/value head (1 without grouped-query attention)."""
    if not enable_gqa or not (query.ndim >= 3 and key.ndim >= 3):
        return 1
    hq, hk = query.shape[-3], key.shape[-3]
    if hq == hk:
        return 1
    if hk != value.shape[-3] or hq % hk:
        raise ValueError(
            f"{SDPA}: with enable_gqa the query heads (dim -3) must be a multiple of the "
            f"key/value heads, got query {shape(query)}, key {shape(key)}, value {shape(value)}"
        )
    return hq // hk


def check_sdpa_mask_shape(query, key, value, attn_mask, groups: int) -> None:
    """The mask broadcasts into the scores (..., L, S) of q, k, v; it may not enlarge them."""
    L, S = query.shape[-2], key.shape[-2]
    try:
        np.broadcast_shapes(shape(attn_mask), (L, S))
    except ValueError:
        raise ValueError(
            f"{SDPA}: attn_mask of shape {shape(attn_mask)} does not broadcast to "
            f"(..., L, S) = (..., {L}, {S})"
        ) from None
    lead = [shape(query)[:-2]]
    for t in (key, value):  # with GQA the key/value head dim counts as the query's
        lead.append(shape(t)[:-2] if groups == 1 else shape(t)[:-3] + (query.shape[-3],))
    try:
        scores = np.broadcast_shapes(*lead) + (L, S)
    except ValueError:
        return  # q, k, v themselves do not broadcast: explain_broadcast_error reports it
    mask_shape = shape(attn_mask)
    if len(mask_shape) > len(scores) or any(
        m not in (1, s) for m, s in zip(mask_shape[::-1], scores[::-1])
    ):
        raise ValueError(
            f"{SDPA}: attn_mask of shape {mask_shape} does not broadcast to the scores "
            f"shape {scores} of query {shape(query)} and key {shape(key)}"
        )


@contextlib.contextmanager
def explain_broadcast_error(query, key, value, attn_mask):
    """Turn NumPy's broadcast error on the leading dims into one naming every shape."""
    try:
        yield
    except ValueError as err:
        if "broadcast" not in str(err):
            raise
        raise ValueError(
            f"{SDPA}: the leading dims of query {shape(query)}, key {shape(key)}, "
            f"value {shape(value)}"
            + ("" if attn_mask is None else f" and attn_mask {shape(attn_mask)}")
            + " do not broadcast (for different head counts pass enable_gqa=True)"
        ) from None


# -- multi_head_attention_forward ------------------------------------------------------------
def check_mha_ranks(query, key, value, key_padding_mask) -> bool:
    """Validate the input ranks (torch's ``_mha_shape_check``); return whether batched."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(MHA, name, t)
    if query.ndim not in (2, 3):
        raise ValueError(
            f"{MHA}: query should be (L, N, E) batched or (L, E) unbatched, got shape "
            f"{shape(query)}"
        )
    batched = query.ndim == 3
    for name, t in (("key", key), ("value", value)):
        if t.ndim != query.ndim:
            raise ValueError(
                f"{MHA}: query is {query.ndim}-D, so {name} should be {query.ndim}-D too, got "
                f"shape {shape(t)}"
            )
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise ValueError(
            f"{MHA}: key_padding_mask should be {'(N, S)' if batched else '(S,)'} for "
            f"{query.ndim}-D query, got shape {shape(key_padding_mask)}"
        )
    return batched


def check_mha_sizes(query, key, value, embed_dim: int, num_heads: int) -> None:
    """On batched (L, N, E) inputs: E, its split into heads, and the key/value (S, N)."""
    L, N, E = query.shape
    if E != embed_dim:
        raise ValueError(f"{MHA}: query embed dim {E} does not match embed_dim {embed_dim}")
    if E % num_heads:
        raise ValueError(f"{MHA}: embed_dim {E} is not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise ValueError(
            f"{MHA}: key and value must have the same (S, N), got key {shape(key)} and "
            f"value {shape(value)}"
        )
    if key.shape[1] != N:
        raise ValueError(
            f"{MHA}: query has batch size {N} but key has {key.shape[1]} "
            f"(query {shape(query)}, key {shape(key)})"
        )


def check_mha_masks(attn_mask, key_padding_mask, L: int, S: int, N: int, heads: int) -> None:
    """attn_mask (L, S) or (N*heads, L, S); key_padding_mask (N, S); bool or float."""
    if attn_mask is not None:
        check_mask_dtype(MHA, "attn_mask", attn_mask, MHA_POLARITY)
        if shape(attn_mask) not in ((L, S), (N * heads, L, S)):
            raise ValueError(
                f"{MHA}: attn_mask has shape {shape(attn_mask)}; expected (L, S) = "
                f"({L}, {S}) or (N*num_heads, L, S) = ({N * heads}, {L}, {S})"
            )
    if key_padding_mask is not None:
        check_mask_dtype(MHA, "key_padding_mask", key_padding_mask, MHA_POLARITY)
        if shape(key_padding_mask) != (N, S):
            raise ValueError(
                f"{MHA}: key_padding_mask should have shape (N, S) = ({N}, {S}), got "
                f"{shape(key_padding_mask)}"
            )
