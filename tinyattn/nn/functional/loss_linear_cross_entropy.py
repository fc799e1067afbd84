"""``linear_cross_entropy``: cross entropy of ``input @ linear_weight.T (+ bias)``, optionally
in row chunks that never hold the full (N, C) logits (torch 2.13's LLM-head loss).

With ``options=None`` it is the reference composition ``cross_entropy(linear(x, W, b), t)``.
With a :class:`LinearCrossEntropyOptions` it runs :class:`LinearCrossEntropy`, which
walks the rows ``batch_chunk_size`` at a time in both passes: the forward keeps only
each row's loss, and the backward recomputes each chunk's softmax to form its gradient,
so peak memory is one ``(batch_chunk_size, C)`` block instead of ``(N, C)``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from ...core import _dtype as dt
from ...core.function import Function
from ...tensor_api.tensor import Tensor
from .._checks import require_tensor
from .loss import _check_class_range, _check_reduction, cross_entropy

__all__ = ["LinearCrossEntropyOptions", "linear_cross_entropy"]

_ACC_POLICIES = ("accurate", "balanced", "compact", "auto")


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """How the chunked :func:`linear_cross_entropy` splits the batch (torch's fields).

    ``batch_chunk_size``: rows per chunk (``None``: from ``chunking_method``, or one chunk).
    ``chunking_method``: ``"auto"`` (here ``"aspect_ratio:2"``, torch's CPU fallback),
    ``"aspect_ratio[:N]"`` (chunks whose logits block is about the input's size, divided
    by N) or ``None``. ``acc_dtype``: dtype the chunk arithmetic runs in (default: the
    input's). ``acc_policy`` and ``allow_retain_graph`` are accepted and validated as in
    torch; tinyattn's backward recomputes each chunk, so both have nothing to change
    (a second ``backward`` works whenever the graph is retained).
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self) -> None:
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = str(self.chunking_method).partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (
            size is None or (isinstance(size, int) and not isinstance(size, bool) and size > 0)
        ):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
        if self.acc_dtype is not None and not (
            isinstance(self.acc_dtype, dt.dtype) and self.acc_dtype.is_floating_point
        ):
            raise ValueError(
                "acc_dtype must be one of {None, tinyattn.float16, tinyattn.float32, "
                f"tinyattn.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the "
                "op pick automatically."
            )

    def chunk_rows(self, num_batches: int, in_features: int, num_classes: int) -> int:
        """The rows per chunk for this call (torch's ``_adjust`` rules)."""
        method = self.chunking_method
        if method == "auto":
            method = None if self.batch_chunk_size is not None else "aspect_ratio:2"
        size = (
            num_batches
            if self.batch_chunk_size is None
            else min(self.batch_chunk_size, num_batches)
        )
        if method is None:
            return max(size, 1)
        name, _, factor = method.partition(":")
        ratio = -(-num_classes // in_features) if in_features else 1
        target = -(-num_batches // max(ratio, 1))
        chunk = min((1 << max(target - 1, 0).bit_length()) // int(factor or 1), num_batches)
        if self.batch_chunk_size is not None and self.batch_chunk_size != chunk:
            raise ValueError(
                f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method "
                f"('{method}') give different chunk sizes ({self.batch_chunk_size} vs "
                f"{chunk}); pass only one."
            )
        return max(chunk, 1)


def _chunk_softmax_terms(x, weight, bias, target):
    """For rows ``x`` (B, D): ``(p, logsumexp, z[t])`` with ``z = x W^T + b``, ``p = softmax(z)``."""
    logits = x @ weight.T
    if bias is not None:
        logits += bias
    picked = logits[np.arange(len(target)), target]  # (a copy: logits becomes p below)
    top = logits.max(axis=1, keepdims=True)
    np.subtract(logits, top, out=logits)
    np.exp(logits, out=logits)
    total = logits.sum(axis=1, keepdims=True)
    lse = (np.log(total) + top)[:, 0]
    logits /= total
    return logits, lse, picked


class LinearCrossEntropy(Function):
    """Per-row cross entropy of ``z = x W^T + b`` with class targets, in row chunks.

    x (N, D), W (C, D), b (C,) or None, target (N,) ints -> loss (N,)::

        loss_i = w_i (logsumexp(z_i) - z_i[t_i]),   w_i = weight[t_i] (0 if t_i == ignore_index)

    Gradient, with ``g`` (N,) and ``dz_i = g_i w_i (softmax(z_i) - onehot(t_i))``, chunk by
    chunk (each chunk's softmax recomputed, never all N rows at once)::

        dx_i = dz_i W,     dW = sum_i dz_i^T x_i,     db = sum_i dz_i
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, weight, bias, target, class_weight, ignore_index, chunk, acc):
        valid = target != ignore_index
        safe = np.where(valid, target, 0)
        row_w = (class_weight[safe] if class_weight is not None else np.ones(len(safe))) * valid
        xa, wa = x.astype(acc, copy=False), weight.astype(acc, copy=False)
        ba = bias.astype(acc, copy=False) if bias is not None else None
        losses = np.zeros(x.shape[0], dtype=acc)
        for lo in range(0, x.shape[0], chunk):
            rows = slice(lo, lo + chunk)
            _, lse, picked = _chunk_softmax_terms(xa[rows], wa, ba, safe[rows])
            losses[rows] = np.where(valid[rows], row_w[rows] * (lse - picked), 0)
        ctx.save_for_backward(x, weight, *([] if bias is None else [bias]))
        ctx.rows = (safe, valid, row_w.astype(acc), chunk, acc)
        return losses.astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        x, weight, *bias = ctx.saved_tensors
        bias = bias[0] if bias else None
        safe, valid, row_w, chunk, acc = ctx.rows
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        dtype = _array(x).dtype
        if acc != dtype:  # (the chunk arithmetic runs in acc_dtype; the grads come back cast)
            x, weight, g = (xp.astype(t, acc) for t in (x, weight, g))
            bias = xp.astype(bias, acc) if bias is not None else None
        scale = xp.expand_dims(xp.where(valid, g * row_w, 0), 1)
        dx_rows, dw, db = [], None, None
        for lo in range(0, len(safe), chunk):
            rows = slice(lo, lo + chunk)
            p = _softmax_rows(xp, x[rows], weight, bias)
            dz = (p - _onehot(safe[rows], weight)) * scale[rows]
            if need_x:
                dx_rows.append(dz @ weight)
            if need_w:
                term = xp.swapaxes(dz, 0, 1) @ x[rows]
                dw = term if dw is None else dw + term
            if need_b:
                term = xp.sum(dz, axis=0)
                db = term if db is None else db + term
        dx = xp.concatenate(dx_rows, axis=0) if need_x and dx_rows else None
        if need_x and dx is None:  # no rows
            dx = xp.zeros_like(x)
        if need_w and dw is None:
            dw = xp.zeros_like(weight)
        if acc != dtype:
            dx, dw, db = (xp.astype(t, dtype) if t is not None else None for t in (dx, dw, db))
        return dx, dw, db if need_b else None, None, None, None, None, None


def _array(t) -> np.ndarray:
    """The data of an array or a Tensor (for constants computed from it)."""
    return t._data if isinstance(t, Tensor) else t


def _softmax_rows(xp, x, weight, bias):
    """``softmax(x W^T + b)`` over classes, shifted by a constant row max (exact either way)."""
    logits = x @ xp.swapaxes(weight, 0, 1)
    if bias is not None:
        logits = logits + bias
    top = _array(logits).max(axis=1, keepdims=True) if _array(logits).size else 0.0
    e = xp.exp(logits - top)
    return e / xp.sum(e, axis=1, keepdims=True)


def _onehot(target: np.ndarray, weight) -> np.ndarray:
    out = np.zeros((len(target), _array(weight).shape[0]), dtype=_array(weight).dtype)
    out[np.arange(len(target)), target] = 1
    return out


def _chunked(input, linear_weight, target, bias, weight, reduction, ignore_index, options):
    """The chunked path: per-row losses from :class:`LinearCrossEntropy`, then the reduction."""
    unbatched = input.ndim == 1
    x = input.unsqueeze(0) if unbatched else input
    t = target._data.reshape(-1)
    if t.shape[0] != x.shape[0]:
        raise ValueError(
            f"linear_cross_entropy: expected target of shape {list(input.shape[:-1])} for input "
            f"of shape {list(input.shape)}, got {list(target.shape)}"
        )
    num_classes = linear_weight.shape[0]
    _check_class_range(t, num_classes, ignore_index, "linear_cross_entropy")
    chunk = options.chunk_rows(x.shape[0], x.shape[1], num_classes)
    acc = options.acc_dtype.np_dtype if options.acc_dtype is not None else x._data.dtype
    class_weight = weight._data.astype(acc) if weight is not None else None
    losses = LinearCrossEntropy.apply(
        x, linear_weight, bias, t, class_weight, ignore_index, chunk, acc
    )
    if reduction == "none":
        return losses.squeeze(0) if unbatched else losses
    if reduction == "sum":
        return losses.sum()
    valid = t != ignore_index
    safe = np.where(valid, t, 0)
    denom = (class_weight[safe] if class_weight is not None else np.ones(len(t))) * valid
    with np.errstate(invalid="ignore", divide="ignore"):  # every row ignored: 0/0 = nan, as torch
        return losses.sum() / float(denom.sum())


def _check(input, linear_weight, linear_bias, ignore_index, target, logits_shape) -> bool:
    """torch's argument checks; returns whether ``target`` holds class probabilities."""
    if linear_bias is not None and tuple(linear_bias.shape) != logits_shape[input.ndim - 1 :]:
        raise RuntimeError(
            f"expected linear_bias shape {logits_shape[input.ndim - 1 :]}, got "
            f"{tuple(linear_bias.shape)}"
        )
    if len(linear_weight.shape) > 2 and input.ndim == 1:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {input.shape[-1]}), got unbatched input with shape "
            f"{tuple(input.shape)}"
        )
    probabilities = tuple(target.shape) == logits_shape
    if probabilities and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    return probabilities


def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options: LinearCrossEntropyOptions | None = None,
) -> Tensor:
    """Cross entropy of the logits ``z = input @ linear_weight.T + linear_bias`` against ``target``.

    Same result as ``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``
    (``ignore_index=None`` means -100). Shapes: ``input`` (N, D) or (D,); ``linear_weight``
    (C, D), or (C, d1, ..., dK, D) for a K-dimensional loss with logits (N, C, d1, ..., dK);
    ``target`` class indices (N,) / (N, d1, ...) or probabilities shaped like the logits.

    ``options=None`` composes ``linear`` and ``cross_entropy``. With
    :class:`LinearCrossEntropyOptions` (class-index int64 targets, K = 0, no label
    smoothing) the rows go through :class:`LinearCrossEntropy` in chunks, never holding
    all the logits; otherwise the options are ignored with torch's warning.

    Gradient (class indices, 'sum'): ``dz = g * w[t] * (softmax(z) - onehot(t))``,
    ``d input = dz @ W``, ``d W = dz^T input``, ``d b = sum dz``; 'mean' divides by the
    summed ``w[t]`` of the rows not ignored.
    """
    require_tensor(input, "linear_cross_entropy")
    require_tensor(linear_weight, "linear_cross_entropy", "linear_weight")
    require_tensor(target, "linear_cross_entropy", "target")
    _check_reduction(reduction, "linear_cross_entropy")
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(
            f"expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}"
        )
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), "
            f"got {in_features} and {linear_weight.shape[-1]}, respectively"
        )
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    logits_shape = (*input.shape[:-1], num_classes, *out_features)
    probabilities = _check(input, linear_weight, linear_bias, ignore_index, target, logits_shape)
    ignore_index = -100 if ignore_index is None else int(ignore_index)
    chunkable = (
        not out_features
        and label_smoothing == 0.0
        and target.dtype == dt.int64
        and not probabilities
    )
    if options is not None and not chunkable:
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
            "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, "
            f"out_features == (). Got reduction={reduction!r}, label_smoothing="
            f"{label_smoothing}, target.dtype={target.dtype}, out_features={out_features}, "
            "tracing=False, linear_bias.shape="
            f"{tuple(linear_bias.shape) if linear_bias is not None else None}.",
            stacklevel=2,
        )
    if options is not None and chunkable:
        return _chunked(
            input, linear_weight, target, linear_bias, weight, reduction, ignore_index, options
        )
    from .basic import linear

    rows = math.prod(out_features) * num_classes
    flat_bias = linear_bias.reshape(rows) if linear_bias is not None else None
    logits = linear(input, linear_weight.reshape(rows, in_features), flat_bias)
    return cross_entropy(
        logits.reshape(logits_shape),
        target,
        weight=weight,
        reduction=reduction,
        ignore_index=ignore_index,
        label_smoothing=label_smoothing,
    )
