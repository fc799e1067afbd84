"""``flex_attention``: attention whose scores and mask are small Python functions.

torch's FlexAttention API, on tinyattn tensors::

    from tinyattn.nn.attention.flex_attention import flex_attention, create_block_mask

    def causal(b, h, q_idx, kv_idx):            # mask_mod: True = the key takes part
        return q_idx >= kv_idx

    def alibi(score, b, h, q_idx, kv_idx):      # score_mod: returns the new score
        return score - slopes[h] * (q_idx - kv_idx)

    block_mask = create_block_mask(causal, B=None, H=None, Q_LEN=L, KV_LEN=S)
    out = flex_attention(q, k, v, score_mod=alibi, block_mask=block_mask)

The computation, for ``q (B, Hq, L, E)``, ``k (B, Hkv, S, E)``, ``v (B, Hkv, S, Ev)``::

    s[b, h, i, j] = score_mod(scale * q[b, h, i] . k[b, h, j], b, h, i, j)
    s[b, h, i, j] = -inf   where mask_mod(b, h, i, j) is False
    out = softmax(s) v,    lse = logsumexp(s)  (a row with no key left: out 0, lse -inf)

How the mods are called. torch traces them element by element (``vmap``). tinyattn
calls each mod once, with the indices as broadcasting int64 tensors: ``b`` of shape
``(B, 1, 1, 1)``, ``h (1, H, 1, 1)``, ``q_idx (1, 1, L, 1)``, ``kv_idx (1, 1, 1, S)``, and
``score (B, H, L, S)``. Mods written with tensor ops (arithmetic, comparisons,
``torch.where``, indexing a table with the index tensors) give the same result both
ways; Python ``if`` on an index does not work in either.

Which path runs:

* no ``score_mod`` and no ``lse`` asked for: ``scaled_dot_product_attention`` with the
  mask as a bool ``attn_mask``, i.e. the fused numba kernel (no L x S matrix stored);
* otherwise the scores are formed as a tensor (``(B, H, L, S)``), so that gradients
  reach everything ``score_mod`` uses (a bias table it indexes gets its gradient).

Differences from torch, all documented here: ``create_block_mask`` evaluates the mask
densely (``(B, H, L, S)`` bools, size-1 where the mask does not depend on ``b``/``h``)
and the blocks (``BLOCK_SIZE``) are used only by ``to_dense``, ``sparsity`` and the
printout; ``kernel_options`` are accepted and ignored; there is no compile step and no
warning asking for ``torch.compile``; torch's CPU build has no backward for
``flex_attention``, tinyattn's has (and double backward on the second path).
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ...core import _dtype as dt
from ...foundations.type_names import type_name
from ...kernels._boundary import default_scale
from ...ops.creation.factories import arange, tensor
from ...tensor_api.tensor import Tensor
from ..functional.attention import scaled_dot_product_attention

__all__ = [
    "AuxOutput",
    "AuxRequest",
    "BlockMask",
    "and_masks",
    "create_block_mask",
    "create_mask",
    "flex_attention",
    "noop_mask",
    "or_masks",
]

_score_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
_mask_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]


class AuxRequest(NamedTuple):
    """Which extra outputs ``flex_attention(..., return_aux=AuxRequest(...))`` returns."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The extra outputs: ``lse`` and ``max_scores``, each ``(B, Hq, L)`` or None."""

    lse: Tensor | None = None
    max_scores: Tensor | None = None


# -- masks ---------------------------------------------------------------------------------


def noop_mask(batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor) -> Tensor:
    """A mask_mod that keeps every key (a 0-d ``True``)."""
    return batch.new_ones((), dtype=dt.bool_)


def and_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """A mask_mod keeping a key where every one of ``mask_mods`` keeps it."""
    _check_callables(mask_mods, "and_masks")

    def and_mask(b, h, q_idx, kv_idx):
        result = b.new_ones((), dtype=dt.bool_)
        for mod in mask_mods:
            result = result & mod(b, h, q_idx, kv_idx)
        return result

    return and_mask


def or_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """A mask_mod keeping a key where any one of ``mask_mods`` keeps it."""
    _check_callables(mask_mods, "or_masks")

    def or_mask(b, h, q_idx, kv_idx):
        result = b.new_zeros((), dtype=dt.bool_)
        for mod in mask_mods:
            result = result | mod(b, h, q_idx, kv_idx)
        return result

    return or_mask


def _check_callables(mods, op: str) -> None:
    for i, mod in enumerate(mods):
        if not callable(mod):
            raise TypeError(f"{op}(): argument {i} must be a mask_mod function, got {mod!r}")


def _indices(B: int, H: int, L: int, S: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """b, h, q_idx, kv_idx as int64 tensors broadcasting to (B, H, L, S)."""
    return (
        arange(B).view(B, 1, 1, 1),
        arange(H).view(1, H, 1, 1),
        arange(L).view(1, 1, L, 1),
        arange(S).view(1, 1, 1, S),
    )


def _mod_arity(mod: Callable, op: str) -> int:
    """4 for a mask_mod, 5 for a score_mod."""
    if not callable(mod):
        raise TypeError(f"{op}(): expected a mask_mod or score_mod function, got {mod!r}")
    try:
        params = inspect.signature(mod).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: assume a mask_mod
        return 4
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return 5 if len(positional) == 5 else 4


def _dense_mask(mask_mod: Callable, B: int, H: int, L: int, S: int, op: str) -> np.ndarray:
    """mask_mod evaluated on the index grid: bools of shape (B|1, H|1, L, S)."""
    b, h, q_idx, kv_idx = _indices(B, H, L, S)
    if _mod_arity(mask_mod, op) == 5:  # a score_mod: keys whose score it sends to -inf go
        zeros = tensor(np.zeros((B, H, L, S)))
        result = mask_mod(zeros, b, h, q_idx, kv_idx)
        keep = ~np.isneginf(np.asarray(_numpy(result), dtype=np.float64))
    else:
        keep = np.asarray(_numpy(mask_mod(b, h, q_idx, kv_idx)))
        if keep.dtype != np.bool_:
            raise TypeError(f"{op}(): the mask_mod must return bools, got dtype {keep.dtype}")
    try:
        shape = np.broadcast_shapes(keep.shape, (1, 1, L, S))
        np.broadcast_shapes(shape, (B, H, L, S))
        if len(shape) != 4 or shape[2:] != (L, S):
            raise ValueError
    except ValueError:
        raise ValueError(
            f"{op}(): the mod's result has shape {tuple(keep.shape)}, which does not "
            f"broadcast to (B, H, Q_LEN, KV_LEN) = {(B, H, L, S)}"
        ) from None
    return np.ascontiguousarray(np.broadcast_to(keep, shape))


def _numpy(x) -> np.ndarray:
    return x.detach().numpy() if isinstance(x, Tensor) else np.asarray(x)


def _check_length(value, name: str, op: str, allow_none: bool) -> int:
    if value is None and allow_none:
        return 1
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 0:
        expected = "a non-negative int" + (" or None" if allow_none else "")
        raise TypeError(f"{op}(): argument '{name}' must be {expected}, got {value!r}")
    return int(value)


class BlockMask:
    """Which (query, key) pairs take part in ``flex_attention``: ``create_block_mask``'s result.

    Attributes: ``shape (B, H, Q_LEN, KV_LEN)``, ``seq_lengths (Q_LEN, KV_LEN)``,
    ``BLOCK_SIZE (rows, cols)``, ``mask_mod``. tinyattn keeps the mask dense
    (``mask``: bools ``(B|1, H|1, Q_LEN, KV_LEN)``); the blocks are for inspection:
    ``to_dense()`` (which blocks have any pair taking part), ``sparsity()``, ``print``.
    """

    def __init__(self, mask: np.ndarray, shape: tuple, block_size: tuple, mask_mod) -> None:
        self.mask = mask
        self.shape = tuple(shape)
        self.seq_lengths = self.shape[2:]
        self.BLOCK_SIZE = tuple(block_size)
        self.mask_mod = mask_mod

    def _block_counts(self) -> np.ndarray:
        """(B, H, nq, nk): the number of kept pairs in each block."""
        B, H, L, S = self.shape
        rows, cols = self.BLOCK_SIZE
        nq, nk = -(-L // rows), -(-S // cols)
        padded = np.zeros((B, H, nq * rows, nk * cols), np.int64)
        padded[:, :, :L, :S] = self.mask
        return padded.reshape(B, H, nq, rows, nk, cols).sum(axis=(3, 5))

    def to_dense(self) -> Tensor:
        """int32 ``(B, H, n_query_blocks, n_key_blocks)``: 1 where a block has a kept pair."""
        return tensor((self._block_counts() > 0).astype(np.int32))

    def sparsity(self) -> float:
        """Percent of the blocks with no pair taking part (work a block-sparse kernel skips).

        torch counts a block at the sequence's end as full-sized, so its figure can be
        negative for sequences shorter than a block; tinyattn counts blocks.
        """
        counts = self._block_counts()
        return 100.0 * float((counts == 0).mean()) if counts.size else 0.0

    def __repr__(self) -> str:
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%)"

    def __str__(self) -> str:
        """The blocks of each (b, h): full ``██``, partly kept ``░░``, empty blank."""
        counts = self._block_counts()
        rows, cols = self.BLOCK_SIZE
        B, H, L, S = self.shape
        lines = [repr(self)[:-1] + ","]
        for b in range(counts.shape[0]):
            for h in range(counts.shape[1]):
                lines.append(f"({b}, {h})")
                for i in range(counts.shape[2]):
                    height = min(rows, L - i * rows)
                    cells = []
                    for j in range(counts.shape[3]):
                        size = height * min(cols, S - j * cols)
                        n = counts[b, h, i, j]
                        cells.append("██" if n == size else "░░" if n else "  ")
                    lines.append("".join(cells).rstrip())
        return "\n".join(lines) + "\n)"


def create_block_mask(
    mask_mod: _mask_mod_signature,
    B: int | None,
    H: int | None,
    Q_LEN: int,
    KV_LEN: int,
    device=None,
    BLOCK_SIZE: int | tuple[int, int] = 128,
    _compile: bool = False,
    **_options,
) -> BlockMask:
    """Evaluate ``mask_mod(b, h, q_idx, kv_idx) -> bool`` over the grid (True = takes part).

    B, H : batch and head counts, or None when the mask is the same for all (shape 1).
    Q_LEN, KV_LEN : query and key lengths.
    device : accepted for torch's signature (tinyattn is CPU only).
    BLOCK_SIZE : block height and width for ``to_dense``/``sparsity``/printing.
    torch's compile options (``_compile``, ``separate_full_blocks`` ...) are accepted.
    """
    op = "create_block_mask"
    B, H = _check_length(B, "B", op, True), _check_length(H, "H", op, True)
    L, S = _check_length(Q_LEN, "Q_LEN", op, False), _check_length(KV_LEN, "KV_LEN", op, False)
    sizes = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
    if len(sizes) != 2 or any(not isinstance(s, numbers.Integral) or s < 1 for s in sizes):
        raise ValueError(
            f"{op}(): BLOCK_SIZE must be a positive int or a pair of them, got {BLOCK_SIZE!r}"
        )
    mask = _dense_mask(mask_mod, B, H, L, S, op)
    return BlockMask(np.broadcast_to(mask, (B, H, L, S)), (B, H, L, S), sizes, mask_mod)


def create_mask(
    mod_fn: _score_mod_signature | _mask_mod_signature,
    B: int | None,
    H: int | None,
    Q_LEN: int,
    KV_LEN: int,
    device=None,
) -> Tensor:
    """The dense bool mask ``(B, H, Q_LEN, KV_LEN)`` of a mask_mod (or of a score_mod:
    False where it turns a zero score into -inf); B, H None count as 1."""
    op = "create_mask"
    B, H = _check_length(B, "B", op, True), _check_length(H, "H", op, True)
    L, S = _check_length(Q_LEN, "Q_LEN", op, False), _check_length(KV_LEN, "KV_LEN", op, False)
    return tensor(np.broadcast_to(_dense_mask(mod_fn, B, H, L, S, op), (B, H, L, S)).copy())


# -- attention -----------------------------------------------------------------------------


def _check_inputs(query, key, value, block_mask, score_mod, scale, enable_gqa) -> int:
    """Validate flex_attention's arguments; returns the GQA group size."""
    op = "flex_attention"
    for name, x in (("query", query), ("key", key), ("value", value)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be a Tensor, got {type_name(x)}")
    shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
    if not (query.ndim == key.ndim == value.ndim == 4):
        raise ValueError(f"{op}(): expected 4-D query, key and value (B, H, L, E), got {shapes}")
    if not (query.dtype == key.dtype == value.dtype) or not query.is_floating_point():
        raise TypeError(
            f"{op}(): expected query, key and value of one floating dtype, got "
            f"{query.dtype}, {key.dtype}, {value.dtype}"
        )
    if query.shape[-1] != key.shape[-1] or key.shape[:3] != value.shape[:3]:
        raise ValueError(
            f"{op}(): expected query and key to share E, and key and value to share "
            f"(B, H, S), got {shapes}"
        )
    if query.shape[0] != key.shape[0]:
        raise ValueError(f"{op}(): expected one batch size for query and key, got {shapes}")
    Hq, Hkv = query.shape[1], key.shape[1]
    if Hq != Hkv and not (enable_gqa and Hkv > 0 and Hq % Hkv == 0):
        hint = " Try setting enable_gqa=True for GQA." if not enable_gqa else ""
        raise ValueError(
            f"{op}(): expect query and key/value to have the same number of heads "
            f"(or, with enable_gqa, Hq a multiple of Hkv) but got Hq={Hq} and Hkv={Hkv}.{hint}"
        )
    if score_mod is not None and not callable(score_mod):
        raise TypeError(f"{op}(): argument 'score_mod' must be callable, got {score_mod!r}")
    if scale is not None and (not isinstance(scale, numbers.Real) or isinstance(scale, bool)):
        raise TypeError(f"{op}(): argument 'scale' must be a float, got {scale!r}")
    if block_mask is not None:
        if not isinstance(block_mask, BlockMask):
            raise TypeError(
                f"{op}(): argument 'block_mask' must be a BlockMask (create_block_mask), "
                f"got {type_name(block_mask)}"
            )
        B, _, L, _ = query.shape
        wanted = (B, Hq, L, key.shape[2])
        try:
            np.broadcast_shapes(block_mask.mask.shape, wanted)
            fits = block_mask.seq_lengths == wanted[2:]
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(
                f"{op}(): block_mask was made for shape {block_mask.shape}, which does not "
                f"fit (B, Hq, L, S) = {wanted} ({shapes})"
            )
    return Hq // max(Hkv, 1)


def _mask_for(block_mask: BlockMask, B: int, H: int) -> np.ndarray:
    """The mask at the call's (B, H): a block mask made with ``B``/``H`` None (evaluated at
    b = 0 / h = 0) is re-evaluated at every batch/head, as torch's ``flex_attention`` calls
    ``mask_mod`` with the true indices (a head-dependent mask made with H=None masks per head).
    """
    mask = block_mask.mask
    if mask.shape[:2] == (B, H) or block_mask.mask_mod is None:
        return mask
    L, S = block_mask.seq_lengths
    return _dense_mask(block_mask.mask_mod, B, H, L, S, "flex_attention")


def _scored(q, k, score_mod, mask, scale: float, groups: int) -> Tensor:
    """The (B, H, L, S) scores after score_mod and the mask (-inf where not kept)."""
    if groups > 1:
        k = k.repeat_interleave(groups, dim=1)
    scores = (q @ k.transpose(-2, -1)) * scale
    if score_mod is not None:
        B, H, L, S = scores.shape
        modded = score_mod(scores, *_indices(B, H, L, S))
        if not isinstance(modded, Tensor):
            modded = tensor(np.asarray(modded), dtype=scores.dtype)
        try:
            np.broadcast_shapes(tuple(modded.shape), tuple(scores.shape))
        except ValueError:
            raise ValueError(
                f"flex_attention(): score_mod returned shape {tuple(modded.shape)}, which does "
                f"not broadcast to the scores' {tuple(scores.shape)}"
            ) from None
        scores = modded.to(scores.dtype).expand(scores.shape)
    if mask is not None:
        scores = scores.masked_fill(tensor(~mask), -math.inf)
    return scores


def _softmax_parts(scores: Tensor) -> tuple[Tensor, Tensor]:
    """(weights, lse) of the scores; a row with no finite score gets weights 0, lse -inf.

    The shift ``m`` (the row max, 0 for an empty row) is a constant: softmax does not
    depend on it, and ``lse = log(sum(exp(s - m))) + m`` has gradient ``softmax(s)``.
    """
    with np.errstate(invalid="ignore"):
        top = scores.detach().numpy().max(axis=-1, keepdims=True)
    top = tensor(np.where(np.isfinite(top), top, 0).astype(top.dtype))
    e = (scores - top).exp()
    total = e.sum(-1, keepdim=True)
    empty = total.detach() == 0
    total = total.masked_fill(empty, 1.0)
    lse = (total.log() + top).masked_fill(empty, -math.inf)
    return e / total, lse.squeeze(-1)


def flex_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    score_mod: _score_mod_signature | None = None,
    block_mask: BlockMask | None = None,
    scale: float | None = None,
    enable_gqa: bool = False,
    return_lse: bool = False,
    kernel_options: dict | None = None,
    *,
    return_aux: AuxRequest | None = None,
) -> Tensor | tuple[Tensor, Tensor] | tuple[Tensor, AuxOutput]:
    """Attention with a user score function and mask (see the module docstring).

    Shapes: ``query (B, Hq, L, E)``, ``key (B, Hkv, S, E)``, ``value (B, Hkv, S, Ev)``
    -> ``(B, Hq, L, Ev)``; ``Hq == Hkv`` unless ``enable_gqa`` (``Hq % Hkv == 0``).
    With ``P = softmax(s)``, ``s = score_mod(scale * Q K^T) masked``, the gradient is
    SDPA's: ``dV = P^T dO``, ``ds = P * (dO V^T - rowsum(dO V^T * P))``, then back
    through ``score_mod`` to Q, K and whatever the mod read.

    score_mod : ``(score, b, h, q_idx, kv_idx) -> score``, or None.
    block_mask : from ``create_block_mask`` (True = takes part), or None.
    scale : defaults to ``1 / sqrt(E)``.
    return_lse : also return the row logsumexp ``(B, Hq, L)`` (-inf for an empty row).
    kernel_options : accepted for torch's signature, ignored.
    return_aux : ``AuxRequest(lse=..., max_scores=...)``: return ``(out, AuxOutput)``.
    """
    groups = _check_inputs(query, key, value, block_mask, score_mod, scale, enable_gqa)
    if return_aux is not None and return_lse:
        raise ValueError("flex_attention(): pass return_lse or return_aux, not both")
    if return_aux is not None and not isinstance(return_aux, AuxRequest):
        raise TypeError(
            f"flex_attention(): argument 'return_aux' must be an AuxRequest, got {return_aux!r}"
        )
    scale = default_scale(query.shape[-1]) if scale is None else float(scale)
    mask = None if block_mask is None else _mask_for(block_mask, query.shape[0], query.shape[1])
    want_lse = return_lse or (return_aux is not None and return_aux.lse)
    want_max = return_aux is not None and return_aux.max_scores
    if score_mod is None and not (want_lse or want_max):
        attn_mask = None if mask is None else tensor(mask)
        out = scaled_dot_product_attention(
            query, key, value, attn_mask, scale=scale, enable_gqa=groups > 1
        )
        return out if return_aux is None else (out, AuxOutput())
    scores = _scored(query, key, score_mod, mask, scale, groups)
    weights, lse = _softmax_parts(scores)
    v = value.repeat_interleave(groups, dim=1) if groups > 1 else value
    out = weights @ v
    if return_lse:
        return out, lse
    if return_aux is None:
        return out
    max_scores = scores.amax(-1) if want_max else None
    return out, AuxOutput(lse=lse if want_lse else None, max_scores=max_scores)
