"""``embedding_bag``: the sum, mean or max of bags of embedding rows, without the (*, D) rows.

Bags come from a 2-D ``input`` (B, L) (each row one bag of L indices) or a 1-D ``input``
(N,) cut by ``offsets`` (bag ``b`` is ``input[offsets[b]:offsets[b + 1]]``). Entries equal
to ``padding_idx`` are left out of their bag (and of a mean's count); an empty bag gives 0.

Built of differentiable ops, so no new ``Function``::

    sum / mean:  out = zeros(B, D).index_add(0, bag, weight[idx] * scale[:, None])
                 scale = per_sample_weights (sum) or 1 / count(bag) (mean)
    max:         out[b, d] = weight[idx[first argmax over bag b of weight[idx, d]], d]  (gather)
"""

from __future__ import annotations

import numpy as np

from ...foundations.type_names import type_name
from ...ops.creation.factories import zeros
from ...tensor_api.tensor import Tensor
from .._checks import require_tensor

__all__ = ["embedding_bag"]

MODES = ("sum", "mean", "max")
OP = "embedding_bag"


def _int_array(t, name: str) -> np.ndarray:
    arr = t._data if isinstance(t, Tensor) else np.asarray(t)
    if arr.dtype.kind not in "iu":
        raise RuntimeError(
            f"{OP}: expected integer indices (Long or Int) for argument '{name}', got "
            f"dtype {arr.dtype}"
        )
    return arr.astype(np.int64, copy=False)


def _bags(idx: np.ndarray, offsets, include_last_offset: bool) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices (N,) and the bag boundaries (B + 1,) from a 1-D or 2-D ``input``."""
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(
                f"{OP}: if input is 2D, then offsets has to be None, as input is treated as a "
                f"mini-batch of fixed length sequences; got offsets of type "
                f"{type_name(offsets)}"
            )
        rows, length = idx.shape
        return idx.reshape(-1), np.arange(rows + 1, dtype=np.int64) * length
    if idx.ndim != 1:
        raise ValueError(
            f"{OP}: input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.ndim} "
            f"(shape {list(idx.shape)})"
        )
    if offsets is None:
        raise ValueError(f"{OP}: offsets has to be a 1D Tensor but got None (input is 1D)")
    off = _int_array(offsets, "offsets")
    if off.ndim != 1:
        raise ValueError(f"{OP}: offsets has to be a 1D Tensor, got shape {list(off.shape)}")
    if off.size and off[0] != 0:
        raise RuntimeError(
            f"{OP}: offsets[0] has to be 0, i.e., the first bag starts at position 0; got "
            f"{int(off[0])}"
        )
    if off.size and off[-1] > idx.size:
        raise RuntimeError(
            f"{OP}: offsets[-1] can not be greater than input's length {idx.size} but got "
            f"offsets[-1] of {int(off[-1])}"
        )
    if np.any(np.diff(off) < 0):
        raise RuntimeError(f"{OP}: offsets must be non-decreasing, got {off.tolist()}")
    if include_last_offset:
        if off.size == 0:
            raise ValueError(f"{OP}: include_last_offset=True needs at least one offset")
        return idx, off
    return idx, np.append(off, idx.size)


def _check_args(weight, mode, per_sample_weights, idx, padding_idx):
    require_tensor(weight, OP, "weight")
    if weight.ndim != 2:
        raise RuntimeError(f"{OP}: weight must be 2-D, got shape {list(weight.shape)}")
    if mode not in MODES:
        raise ValueError(f"{OP}: mode has to be one of sum, mean or max, got {mode!r}")
    num = weight.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        bad = idx.min() if idx.min() < 0 else idx.max()
        raise IndexError(
            f"{OP}: index {int(bad)} of input is not in the valid range [0, {num}) "
            f"(num_embeddings={num}; input shape {list(idx.shape)})"
        )
    if padding_idx is not None and not -num <= padding_idx < num:
        raise RuntimeError(
            f"{OP}: padding_idx must be within the number of embeddings, {-num} through "
            f"{num - 1}, but got {padding_idx}"
        )
    if per_sample_weights is None:
        return
    require_tensor(per_sample_weights, OP, "per_sample_weights")
    if mode != "sum":
        raise NotImplementedError(
            f"{OP}: per_sample_weights was not None. per_sample_weights is only supported "
            f"for mode='sum' (got mode={mode!r})"
        )
    if tuple(per_sample_weights.shape) != idx.shape:
        raise ValueError(
            f"{OP}: per_sample_weights (shape {list(per_sample_weights.shape)}) must have "
            f"the same shape as the input (shape {list(idx.shape)})"
        )
    if per_sample_weights.dtype != weight.dtype:
        raise RuntimeError(
            f"{OP}: per_sample_weights dtype {per_sample_weights.dtype} must match the "
            f"weight dtype {weight.dtype}"
        )


def _first_argmax_per_bag(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Row (into ``values``) of each column's first maximum in each segment at ``starts``."""
    best = np.maximum.reduceat(values, starts, axis=0)  # (bags, D)
    seg = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(values))))
    hit = (values == best[seg]) | (np.isnan(values) & np.isnan(best[seg]))
    rows = np.where(hit, np.arange(len(values))[:, None], len(values))
    return np.minimum.reduceat(rows, starts, axis=0)


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Sums, means or maxima of bags of rows of ``weight``, one output row per bag.

    Shapes: ``weight`` (V, D); ``input`` (B, L) integers (B bags of L), or (N,) with
    ``offsets`` (B,) starting positions (``offsets[0] == 0``; with
    ``include_last_offset=True``, (B + 1,) whose last entry ends the last bag) ->
    ``out`` (B, D). ``per_sample_weights``: ``input``'s shape, ``mode='sum'`` only.

    Gradient, with ``g = dL/dout`` and ``bag(i)`` the bag of entry ``i`` (padding entries
    and entries past the last bag take no part)::

        sum:  d weight[v] = sum over i with input[i] == v of  psw[i] * g[bag(i)]
              d psw[i] = g[bag(i)] . weight[input[i]]
        mean: d weight[v] = sum over i with input[i] == v of  g[bag(i)] / count(bag(i))
        max:  d weight[v, d] = sum over bags b whose first maximum in column d is entry i
              with input[i] == v of  g[b, d]

    ``max_norm``: first rescale, in place, the rows ``input`` names whose ``norm_type``-norm
    exceeds it (as ``embedding``).

    Composes: F.embedding, Tensor.index_add, Tensor.gather
    """
    if scale_grad_by_freq or sparse:
        raise NotImplementedError(
            f"{OP}: scale_grad_by_freq and sparse are not supported by tinyattn"
        )
    require_tensor(input, OP)
    idx = _int_array(input, "input")
    _check_args(weight, mode, per_sample_weights, idx, padding_idx)
    if max_norm is not None:  # as torch: the rows input names are renormalised first, in place
        from .basic import embedding_renorm_

        embedding_renorm_(weight, idx, max_norm, norm_type)
    flat, bounds = _bags(idx, offsets, include_last_offset)
    num_bags, dim = len(bounds) - 1, weight.shape[1]
    bag = np.repeat(np.arange(num_bags), np.diff(bounds))  # bag of entries [0, bounds[-1])
    keep = np.arange(bounds[-1])
    if padding_idx is not None:
        keep = keep[flat[keep] != padding_idx % weight.shape[0]]
    rows_idx, bag = flat[keep], bag[keep]
    out = zeros(num_bags, dim, dtype=weight.dtype)
    if mode == "max":
        filled, starts = np.unique(bag, return_index=True)
        first = np.zeros((0, dim), np.int64)  # (every bag empty: zeros, still in the graph)
        if rows_idx.size:
            first = _first_argmax_per_bag(weight._data[rows_idx], starts)
        best = weight.gather(0, Tensor._make(rows_idx[first]))  # (filled bags, D)
        return out.index_add(0, Tensor._make(filled), best)
    rows = weight[Tensor._make(rows_idx)]  # (K, D)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1)[Tensor._make(keep)].unsqueeze(1)
    elif mode == "mean":
        count = np.bincount(bag, minlength=num_bags)
        rows = rows * Tensor._make((1.0 / count[bag]).astype(weight._data.dtype)[:, None])
    return out.index_add(0, Tensor._make(bag), rows)
