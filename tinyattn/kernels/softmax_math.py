"""The softmax math, written once: every NumPy path (``tinyattn.softmax``, the attention
paths, the kernels' reference twins) calls these; the numba kernels are their twins
and ``tests/kernels`` holds them to these functions.

    softmax             y = exp(x - max) / sum(exp(x - max))
    attention_softmax   the same, except a row that is -inf everywhere (every key
                        blocked) gives 0 instead of NaN; a row holding NaN or +inf
                        stays NaN, exactly as torch's math path
    logsumexp_rows      log(sum(exp(x))) per row (-inf for a fully blocked row)
    softmax_backward    dx = y * (dy - rowsum(dy * y))

The backward is the Jacobian ``diag(y) - y y^T`` applied to ``dy``. Flash attention
passes ``rowsum(dy * y)`` in precomputed (as ``rowsum(dout * out)``, equal to it).
"""

from __future__ import annotations

import numpy as np

__all__ = ["softmax", "attention_softmax", "logsumexp_rows", "softmax_backward"]


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``; an all ``-inf`` row gives NaN (torch)."""
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - x.max(axis=axis, keepdims=True, initial=-np.inf))
        e /= e.sum(axis=axis, keepdims=True)
    return e


def _safe_row_max(scores: np.ndarray) -> np.ndarray:
    """Row max, with 0 in place of -inf (fully blocked rows) so that exp(-inf - 0) = 0.
    np.max propagates NaN, so a row holding NaN keeps a NaN shift and comes out NaN."""
    row_max = scores.max(axis=-1, keepdims=True, initial=-np.inf)
    return np.where(np.isneginf(row_max), scores.dtype.type(0), row_max)


def attention_softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis where a fully blocked (all ``-inf``) row gives 0, not NaN.

    Any NaN or ``+inf`` score makes its whole row NaN, as in torch's math path.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(scores - _safe_row_max(scores))
        total = e.sum(axis=-1, keepdims=True)
        return e / np.where(total == 0, scores.dtype.type(1), total)


def logsumexp_rows(scores: np.ndarray) -> np.ndarray:
    """``log(sum_j exp(scores_ij))`` per row: -inf for a fully blocked row, NaN for a NaN row."""
    shift = _safe_row_max(scores)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        total = np.exp(scores - shift).sum(axis=-1, keepdims=True)
        return (shift + np.log(total))[..., 0].astype(scores.dtype, copy=False)


def softmax_backward(
    dy: np.ndarray, y: np.ndarray, axis: int = -1, rowsum: np.ndarray | None = None, xp=np
) -> np.ndarray:
    """``dx = y * (dy - rowsum(dy * y))`` along ``axis``.

    ``rowsum`` may be given precomputed (keepdims shape); flash attention passes
    ``rowsum(dout * out)``, which equals ``rowsum(dy * y)``. ``xp``: the namespace of
    ``dy`` and ``y`` (a backward's ``ctx.xp``: NumPy, or Tensors under ``create_graph``).
    """
    if rowsum is None:
        rowsum = xp.sum(dy * y, axis=axis, keepdims=True)
    return y * (dy - rowsum)
