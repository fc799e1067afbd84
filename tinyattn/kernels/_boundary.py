"""Checks and normalisation at the Python boundary of the attention kernels.

Every public kernel function calls these before anything else runs. numba does
no bounds checking, so nothing reaches a compiled kernel unless it went through
here: shapes agree, dtypes are float32/float64 and equal, arrays have a layout
the kernels index (``kernel_layout``), the mask has one of the few forms the
kernels index, and the scalars are in range. Errors name the argument, what was
expected and what came.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ..foundations.type_names import type_name

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

_MASK_POLARITY = (
    "a bool mask (True = the key takes part, the scaled_dot_product_attention "
    "polarity) or a floating mask added to the scores"
)


@dataclass(frozen=True)
class AttentionArgs:
    """Validated inputs of one attention call.

    q, k, v are 4-d arrays in the layout ``kernel_layout`` guarantees (views of the
    caller's arrays when they already had it, e.g. heads split off a fused qkv buffer).

    ``mask`` is None or an additive float array of the input dtype and shape
    ``(Bm, Hm, Lm, S)`` with ``Bm in {1, B}``, ``Hm in {1, Hq}``, ``Lm in {1, L}``.
    """

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    scale: float
    causal: bool
    mask: np.ndarray | None
    dropout_p: float
    seed: int

    @property
    def empty(self) -> bool:
        """True when some dimension is 0, so no kernel needs to run."""
        return 0 in self.q.shape or 0 in self.k.shape or 0 in self.v.shape


def _require_array(name: str, x: object) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name}: expected a numpy.ndarray, got {type_name(x)}")
    return x


def _require_float(name: str, x: np.ndarray) -> None:
    if x.dtype not in FLOAT_DTYPES:
        hint = (
            " (float16 is computed in float32: cast before calling)"
            if x.dtype == np.float16
            else ""
        )
        raise TypeError(f"{name}: expected dtype float32 or float64, got {x.dtype}{hint}")


def _require_same_dtype(name: str, x: np.ndarray, ref_name: str, ref: np.ndarray) -> None:
    if x.dtype != ref.dtype:
        raise TypeError(
            f"{name}: dtype {x.dtype} does not match {ref_name} dtype {ref.dtype}; "
            "all attention inputs must share one dtype"
        )


def has_kernel_layout(x: np.ndarray) -> bool:
    """Whether the fused kernels can read 4-d ``x`` (..., R, C) in place.

    They index any strides, and hand 2-d tiles ``x[b, h, i0:i1]`` (and their ``.T``)
    to BLAS with the row stride as leading dimension. That needs: an aligned pointer,
    strides that are non-negative multiples of the itemsize, a unit stride along the
    last dim, and rows that do not overlap (row stride >= C, unless R <= 1). The
    batch and head strides are free (0 too: an expanded, read-only input).
    """
    itemsize = x.itemsize
    strides = x.strides
    if not x.flags.aligned:
        return False
    for s in strides:  # (a loop, not any(...): three calls per attention call)
        if s < 0 or s % itemsize:
            return False
    rows, cols = x.shape[-2:]
    return strides[-1] == itemsize and (rows <= 1 or strides[-2] >= cols * itemsize)


def contiguous(x: np.ndarray) -> np.ndarray:
    """``x`` as an aligned C-contiguous array (a copy only when it is not one already;
    ``np.ascontiguousarray`` alone would pass an unaligned contiguous array through)."""
    x = np.ascontiguousarray(x)
    return x if x.flags.aligned else x.copy()


def kernel_layout(x: np.ndarray) -> np.ndarray:
    """``x`` itself when the kernels can read it in place (``has_kernel_layout``), else
    an aligned C-contiguous copy (a non-unit last stride, negative, overlapping or odd
    strides, an unaligned pointer)."""
    flags = x.flags
    if flags.c_contiguous and flags.aligned:  # (what contiguous(x) returns too: x itself)
        return x
    return x if has_kernel_layout(x) else contiguous(x)


def dense_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """The dims of an array ordered outermost to innermost by stride, as torch's
    ``empty_like`` lays out the result of a strided input (the order of the memory).

    Insertion sort over the dims from innermost: a dim moves outward past one with a
    smaller stride (past an equal stride when its size is larger); a stride of 0
    (an expanded dim) or a dim of size 1 (whose stride means nothing) is no evidence
    either way and is stepped over. A contiguous
    array gives ``(0, 1, ..., n - 1)``.
    """

    def outer(d0: int, d1: int) -> int:
        """> 0: d0 belongs outside d1; < 0: inside; 0: no evidence."""
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0 or shape[d0] == 1 or shape[d1] == 1:
            return 0
        if s0 != s1:
            return 1 if s0 > s1 else -1
        return 1 if shape[d0] > shape[d1] else 0

    inner_first = list(range(len(shape) - 1, -1, -1))
    for i in range(1, len(inner_first)):
        moving = i
        for j in range(i - 1, -1, -1):
            verdict = outer(inner_first[j], inner_first[moving])
            if verdict > 0:
                inner_first[j], inner_first[moving] = inner_first[moving], inner_first[j]
                moving = j
            elif verdict < 0:
                break
    return tuple(reversed(inner_first))


def empty_like_order(like: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialised array of ``shape`` whose memory follows the dim order of ``like``
    (``dense_order``) when that keeps the last dim innermost, else C-contiguous.

    The fused forward's output with q (B, Hq, L, D) split from a (B, L, 3, Hq, D)
    buffer is then (B, L, Hq, Dv) memory seen as (B, Hq, L, Dv), like torch's."""
    if like.flags.c_contiguous:
        return np.empty(shape, like.dtype)
    order = dense_order(like.shape, like.strides)
    if order[-1] != len(shape) - 1:
        return np.empty(shape, like.dtype)
    memory = np.empty(tuple(shape[d] for d in order), like.dtype)
    return memory.transpose(np.argsort(order))


def check_qkv(q: object, k: object, v: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check the layouts q (B, Hq, L, D), k (B, Hkv, S, D), v (B, Hkv, S, Dv).

    Returns them in a layout the kernels read (``kernel_layout``): only arrays
    that need it are copied."""
    q, k, v = _require_array("q", q), _require_array("k", k), _require_array("v", v)
    for name, x, layout in (
        ("q", q, "(B, Hq, L, D)"),
        ("k", k, "(B, Hkv, S, D)"),
        ("v", v, "(B, Hkv, S, Dv)"),
    ):
        if x.ndim != 4:
            raise ValueError(f"{name}: expected a 4-d array {layout}, got shape {x.shape}")
    _require_float("q", q)
    _require_same_dtype("k", k, "q", q)
    _require_same_dtype("v", v, "q", q)
    B, Hq, _, D = q.shape
    if k.shape[0] != B or k.shape[3] != D:
        raise ValueError(
            f"k: expected shape (B={B}, Hkv, S, D={D}) to match q of shape {q.shape}, got {k.shape}"
        )
    Hkv = k.shape[1]
    if Hkv == 0 and Hq != 0 or Hkv != 0 and Hq % Hkv != 0:
        raise ValueError(
            f"k: number of key/value heads {Hkv} must divide the number of query heads {Hq} "
            f"(q shape {q.shape}, k shape {k.shape})"
        )
    if v.shape[:3] != k.shape[:3]:
        raise ValueError(
            f"v: expected shape (B, Hkv, S, Dv) = {k.shape[:3] + ('Dv',)} to match k of shape "
            f"{k.shape}, got {v.shape}"
        )
    return kernel_layout(q), kernel_layout(k), kernel_layout(v)


def normalize_mask(
    mask: object, shape: tuple[int, int, int, int], dtype: np.dtype
) -> np.ndarray | None:
    """Bring ``mask`` to an additive float array ``(Bm, Hm, Lm, S)`` of ``dtype``.

    ``shape`` is the scores shape (B, Hq, L, S). ``mask`` must broadcast to it.
    Bool masks become ``0`` where True and ``-inf`` where False. The batch, head
    and query dimensions keep size 1 when they are broadcast (so a key-padding
    mask (B, 1, 1, S) stays B*S numbers); the key dimension is always expanded.
    """
    if mask is None:
        return None
    mask = _require_array("mask", mask)
    if mask.dtype != np.bool_ and not np.issubdtype(mask.dtype, np.floating):
        raise TypeError(f"mask: expected {_MASK_POLARITY}, got dtype {mask.dtype}")
    if mask.ndim > 4:
        raise ValueError(
            f"mask: expected at most 4 dims broadcastable to the scores shape (B, Hq, L, S) = "
            f"{shape}, got shape {mask.shape}"
        )
    padded = (1,) * (4 - mask.ndim) + mask.shape
    if any(m not in (1, n) for m, n in zip(padded, shape)):
        raise ValueError(
            f"mask: shape {mask.shape} does not broadcast to the scores shape "
            f"(B, Hq, L, S) = {shape}"
        )
    mask = mask.reshape(padded)
    if mask.dtype == np.bool_:
        additive = np.where(mask, dtype.type(0), dtype.type(-np.inf))
    else:
        additive = mask.astype(dtype, copy=False)
    target = padded[:3] + (shape[3],)
    return contiguous(np.broadcast_to(additive, target))


def default_scale(head_dim: int) -> float:
    """The attention scale ``1 / sqrt(D)``; 1.0 when D = 0, where every score is an empty
    sum, 0, at any scale (torch's inf would make 0 * inf = NaN here), so the weights are
    uniform and the output is the mean of v, as in torch."""
    return 1.0 / math.sqrt(head_dim) if head_dim > 0 else 1.0


def check_scale(scale: object, head_dim: int) -> float:
    if scale is None:
        return default_scale(head_dim)
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale: expected a real number or None, got {type_name(scale)}")
    if not math.isfinite(float(scale)):
        raise ValueError(f"scale: expected a finite number, got {scale}")
    return float(scale)


def check_dropout(dropout_p: object, seed: object) -> tuple[float, int]:
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real):
        raise TypeError(f"dropout_p: expected a real number in [0, 1], got {type_name(dropout_p)}")
    if not 0.0 <= float(dropout_p) <= 1.0:
        raise ValueError(f"dropout_p: expected a probability in [0, 1], got {dropout_p}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed: expected an int in [0, 2**64), got {type_name(seed)}")
    if not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed: expected an int in [0, 2**64), got {seed}")
    return float(dropout_p), int(seed)


def check_attention(q, k, v, *, scale, causal, mask, dropout_p, seed) -> AttentionArgs:
    """Validate the arguments shared by the forward and the backward."""
    q, k, v = check_qkv(q, k, v)
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal: expected a bool, got {type_name(causal)}")
    scores_shape = (q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    dropout_p, seed = check_dropout(dropout_p, seed)
    return AttentionArgs(
        q=q,
        k=k,
        v=v,
        scale=check_scale(scale, q.shape[3]),
        causal=bool(causal),
        mask=normalize_mask(mask, scores_shape, q.dtype),
        dropout_p=dropout_p,
        seed=seed,
    )


def check_like(
    name: str,
    x: object,
    shape: tuple[int, ...],
    ref: np.ndarray,
    what: str,
    ref_name: str = "q",
    *,
    strided: bool = False,
) -> np.ndarray:
    """Check that ``x`` is an array of ``shape`` with the dtype of ``ref``; make it
    contiguous, or with ``strided`` (a 4-d input of the fused kernels) only bring it
    to ``kernel_layout``."""
    x = _require_array(name, x)
    _require_float(name, x)
    _require_same_dtype(name, x, ref_name, ref)
    if x.shape != shape:
        raise ValueError(f"{name}: expected shape {what} = {shape}, got {x.shape}")
    return kernel_layout(x) if strided else contiguous(x)


def check_float_array(name: str, x: object, layout: str) -> np.ndarray:
    """Check that ``x`` is a float32/float64 array with one dim per letter group of ``layout``."""
    x = _require_array(name, x)
    ndim = layout.count(",") + 1
    if x.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-d array {layout}, got shape {x.shape}")
    _require_float(name, x)
    return contiguous(x)


def check_weights_v(weights: object, v: object) -> tuple[np.ndarray, np.ndarray]:
    """Check weights (B, Hq, L, S) against v (B, Hkv, S, Dv)."""
    weights = check_float_array("weights", weights, "(B, Hq, L, S)")
    v = check_float_array("v", v, "(B, Hkv, S, Dv)")
    _require_same_dtype("v", v, "weights", weights)
    B, Hq, _, S = weights.shape
    Hkv = v.shape[1]
    if v.shape[0] != B or v.shape[2] != S or (Hkv == 0) != (Hq == 0) or Hkv and Hq % Hkv:
        raise ValueError(
            f"v: expected shape (B={B}, Hkv dividing Hq={Hq}, S={S}, Dv) to match weights of "
            f"shape {weights.shape}, got {v.shape}"
        )
    return weights, v
