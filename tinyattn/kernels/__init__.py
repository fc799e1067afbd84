"""Attention kernels on NumPy arrays: arrays in, arrays out (the autograd layer calls these).

Layout: q (B, Hq, L, D), k (B, Hkv, S, D), v (B, Hkv, S, Dv); Hq a multiple of
Hkv (grouped-query attention: query head h reads kv head h // (Hq // Hkv)).
dtype float32 or float64, the same for all inputs (float16: compute in float32).

Fused path (no L x S matrix is ever stored)
-------------------------------------------
``flash_attention_forward(q, k, v, *, scale=None, causal=False, mask=None,
dropout_p=0.0, seed=0, out_like_q=True) -> (out, logsumexp)``
    out = dropout(softmax(scale * Q K^T + mask)) V, out (B, Hq, L, Dv), and the
    per-row logsumexp (B, Hq, L) of the (pre-dropout) scores, saved for the backward.
    ``out``'s memory follows the dim order of q (``_boundary.empty_like_order``,
    as torch's CPU flash kernel): heads split off a (B, L, 3, Hq, D) buffer give
    (B, L, Hq, Dv) memory, so ``out.transpose(0, 2, 1, 3).reshape(B, L, Hq * Dv)``
    is free; a contiguous q gives a contiguous out. ``out_like_q=False``: C-contiguous.
``flash_attention_backward(dout, q, k, v, out, logsumexp, *, <same options>)
-> (dq, dk, dv)``
    Recomputes the weights from logsumexp; see ``reference`` for the formulas.
    Each gradient is laid out in memory like its input (``empty_like_order``).
    The mask gradient is not produced here: when a float mask needs a gradient,
    use the stored-weights path (its ``dscores`` is the mask gradient).

Stored-weights path (the L x S weights are kept for the backward)
-----------------------------------------------------------------
``attention_forward(q, k, v, *, <same options>) -> (out, weights)`` and
``attention_backward(dout, q, k, v, weights, *, scale, dropout_p, seed)
-> (dq, dk, dv, dscores)``: plain NumPy (``reference``); ``dscores`` is the
gradient of a float mask. ``scaled_dot_product_attention`` runs it whenever the
fused kernels cannot (see ``tinyattn.nn.functional.attention.ScaledDotProductAttention``).

Steps, for the returned-weights path
------------------------------------
``attention_scores`` / ``attention_scores_backward``, ``softmax_rows`` /
``softmax_rows_backward``, ``attention_dropout`` / ``attention_dropout_backward``,
``weighted_sum`` / ``weighted_sum_backward``: the steps the two paths above are
made of. ``nn.MultiheadAttention(need_weights=True)`` chains ``attention_scores``
and ``softmax_rows`` as one op (its weights are returned to the caller), then
dropout (the same keep mask as every other path for the same seed) and a matmul.
The row softmax and its backward are numba kernels parallel over rows (NumPy
with ``TINYATTN_KERNELS=numpy``); the rest is batched matmul, handed to BLAS.

Options
-------
scale
    Default 1/sqrt(D).
causal
    Upper-left causal: query i sees key j iff j <= i, also when L != S. It never
    blocks a whole row; it may be combined with ``mask`` (both apply).
mask
    bool (True = takes part, the scaled_dot_product_attention polarity) or
    floating (added to the scores), broadcastable to (B, Hq, L, S). It is
    normalised once (``normalize_mask``) to an additive array of the input dtype
    and shape (Bm, Hm, Lm, S), Bm in {1, B}, Hm in {1, Hq}, Lm in {1, L}, so a
    key-padding mask (B, 1, 1, S) stays B * S numbers.
dropout_p, seed
    Dropout on the attention weights with inverted scaling 1 / (1 - p) (p = 1
    drops everything). The keep decision of weight (b, h, i, j) is element
    n = ((b * Hq + h) * L + i) * S + j of the splitmix64 stream of ``seed``:
    bits = mix(seed + (n + 1) * 0x9E3779B97F4A7C15), dropped iff
    (bits >> 40) * 2**-24 < p (see ``dropout_keep``). Being a pure function of
    (seed, b, h, i, j), the backward regenerates it and every backend agrees bit for bit.

Fully masked rows (every key blocked by the mask): output 0, logsumexp -inf,
weights 0, gradients 0, everything finite (given finite inputs).
NaN: only a -inf score (a False in a bool mask, the causal mask) blocks a key. A
NaN or +inf score makes its whole row of weights NaN (logsumexp NaN), and a NaN
in v reaches every output row through 0 * NaN, exactly as in torch's math path.
The causal kernels skip the tiles above the diagonal only when the skipped part
of q, k, v (and dout, out in the backward) is finite, so they agree too.

Backends
--------
``TINYATTN_KERNELS`` (read at every call, see ``backend()``): ``numba`` (default:
fused numba kernels; tile products through NumPy's bundled BLAS, else scipy's,
else plain loops: ``blas_backend()``, ``TINYATTN_BLAS``), ``numba-loops`` (fused kernels, always plain loops), or
``numpy`` (the reference twins in ``tinyattn.kernels.reference``). Importing
this package imports neither numba nor scipy; kernels compile on first use and
are cached on disk. Calls with a zero-sized dimension use the twins.

All checks (shapes, dtypes, layout, mask form, scalar ranges) happen here,
before any kernel runs; errors name the argument, the expectation and what came.
The fused kernels read q, k, v, out and dout in place when their last dim has
unit stride (views such as heads split off a fused qkv projection); other
layouts (a non-unit last stride, negative or overlapping strides) are copied
first (``_boundary.kernel_layout``).
"""

from __future__ import annotations

import functools
import importlib
import os

import numpy as np

from . import reference
from ._boundary import (
    check_attention,
    check_dropout,
    check_float_array,
    check_like,
    check_weights_v,
    empty_like_order,
    normalize_mask,
)
from .reference import dropout_keep

__all__ = [
    "backend",
    "blas_backend",
    "flash_attention_forward",
    "flash_attention_backward",
    "attention_forward",
    "attention_backward",
    "attention_scores",
    "attention_scores_backward",
    "softmax_rows",
    "softmax_rows_backward",
    "attention_dropout",
    "attention_dropout_backward",
    "weighted_sum",
    "weighted_sum_backward",
    "normalize_mask",
    "dropout_keep",
]

BACKENDS = ("numba", "numba-loops", "numpy")


_PARSED: dict = {}  # raw value (str or None) -> backend name


def backend() -> str:
    """The kernel backend selected by the ``TINYATTN_KERNELS`` environment variable now
    (read at every call: setting the variable switches the backend)."""
    raw = os.environ.get("TINYATTN_KERNELS")
    name = _PARSED.get(raw)
    if name is None:
        name = _parse_backend(raw)
        if len(_PARSED) < 64:  # (bounded: a process sets few values)
            _PARSED[raw] = name
    return name


def _parse_backend(raw: str | None) -> str:
    name = (raw or "").strip().lower() or "numba"
    if name not in BACKENDS:
        raise ValueError(f"TINYATTN_KERNELS: expected one of {BACKENDS}, got {name!r}")
    return name


# ---- kernel launch hook (owned by the speed work: BLAS choice, threads; see _threads.py)


def blas_backend() -> str:
    """The BLAS the fused kernels call on tiles: "numpy", "scipy" or "loops" (see ``_blas``)."""
    from ._blas import blas_backend

    return blas_backend()


@functools.cache
def submodule(name: str):
    """The kernels' submodule ``name`` (e.g. ``"_numba_flash"``), imported on first use.

    The numba modules are imported lazily (importing the package imports no numba). A
    ``from . import`` inside a function runs the import machinery's Python on every call
    (~30 bytecodes, ~70 times a GPT-2 decode step); this cached lookup runs none."""
    return importlib.import_module(f"{__name__}.{name}")


def _use_blas(name: str) -> int:
    """The kernels' ``use_blas`` code: 0 loops, 1 NumPy's CBLAS, 2 scipy's BLAS."""
    return submodule("_blas").tile_blas_code() if name == "numba" else 0


def _run_fused(launch, use_blas: int, *args):
    from ._threads import kernel_launch

    with kernel_launch(blas=bool(use_blas)):
        return launch(*args, use_blas)


def _launch(kernel, *args) -> None:
    from ._threads import kernel_launch

    with kernel_launch():
        kernel(*args)


# ---- end of the kernel launch hook


def flash_attention_forward(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    scale: float | None = None,
    causal: bool = False,
    mask: np.ndarray | None = None,
    dropout_p: float = 0.0,
    seed: int = 0,
    out_like_q: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Fused attention forward: returns (out (B, Hq, L, Dv), logsumexp (B, Hq, L)).

    ``out`` is laid out in memory like q when ``out_like_q`` (see the module docstring),
    else C-contiguous, on every backend."""
    args = check_attention(
        q, k, v, scale=scale, causal=causal, mask=mask, dropout_p=dropout_p, seed=seed
    )
    B, Hq, L, _ = args.q.shape
    out_shape = (B, Hq, L, args.v.shape[3])
    out = empty_like_order(args.q, out_shape) if out_like_q else np.empty(out_shape, args.q.dtype)
    name = backend()
    if name == "numpy" or args.empty:
        twin_out, logsumexp = reference.flash_attention_forward(
            args.q,
            args.k,
            args.v,
            scale=args.scale,
            causal=args.causal,
            mask=args.mask,
            dropout_p=args.dropout_p,
            seed=args.seed,
        )
        out[...] = twin_out
        return out, logsumexp
    _numba_flash = submodule("_numba_flash")
    if _numba_flash.runs_serial(args):  # no numba threads: no launch lock, no BLAS threads
        return _numba_flash.forward(args, out, _use_blas(name), serial=True)
    return _run_fused(_numba_flash.forward, _use_blas(name), args, out)


def flash_attention_backward(
    dout: np.ndarray,
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    out: np.ndarray,
    logsumexp: np.ndarray,
    *,
    scale: float | None = None,
    causal: bool = False,
    mask: np.ndarray | None = None,
    dropout_p: float = 0.0,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fused attention backward: returns (dq, dk, dv) shaped like (q, k, v).

    ``out`` and ``logsumexp`` are the forward's results for the same inputs and options.
    """
    args = check_attention(
        q, k, v, scale=scale, causal=causal, mask=mask, dropout_p=dropout_p, seed=seed
    )
    B, Hq, L, _ = args.q.shape
    out_shape = (B, Hq, L, args.v.shape[3])
    dout = check_like("dout", dout, out_shape, args.q, "(B, Hq, L, Dv)", strided=True)
    out = check_like("out", out, out_shape, args.q, "(B, Hq, L, Dv)", strided=True)
    logsumexp = check_like("logsumexp", logsumexp, (B, Hq, L), args.q, "(B, Hq, L)")
    name = backend()
    if name == "numpy" or args.empty:
        grads = reference.flash_attention_backward(
            dout,
            args.q,
            args.k,
            args.v,
            out,
            logsumexp,
            scale=args.scale,
            causal=args.causal,
            mask=args.mask,
            dropout_p=args.dropout_p,
            seed=args.seed,
        )
        return tuple(_laid_out_like(g, x) for g, x in zip(grads, (args.q, args.k, args.v)))
    from . import _numba_flash

    return _run_fused(_numba_flash.backward, _use_blas(name), args, dout, out, logsumexp)


def _laid_out_like(grad: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``grad`` in the memory order of ``x``, as the fused backward allocates its gradients."""
    if x.flags.c_contiguous:
        return grad
    result = empty_like_order(x, x.shape)
    result[...] = grad
    return result


# --------------------------------------------------------------------------- stored weights


def attention_forward(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    scale: float | None = None,
    causal: bool = False,
    mask: np.ndarray | None = None,
    dropout_p: float = 0.0,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Stored-weights attention forward: returns (out (B, Hq, L, Dv), weights (B, Hq, L, S))."""
    args = check_attention(
        q, k, v, scale=scale, causal=causal, mask=mask, dropout_p=dropout_p, seed=seed
    )
    return reference.attention_forward(
        args.q,
        args.k,
        args.v,
        scale=args.scale,
        causal=args.causal,
        mask=args.mask,
        dropout_p=args.dropout_p,
        seed=args.seed,
    )


def attention_backward(
    dout: np.ndarray,
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    weights: np.ndarray,
    *,
    scale: float | None = None,
    dropout_p: float = 0.0,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stored-weights attention backward: (dq, dk, dv, dscores); dscores = d(float mask)."""
    args = check_attention(
        q, k, v, scale=scale, causal=False, mask=None, dropout_p=dropout_p, seed=seed
    )
    B, Hq, L, _ = args.q.shape
    dout = check_like("dout", dout, (B, Hq, L, args.v.shape[3]), args.q, "(B, Hq, L, Dv)")
    shape = (B, Hq, L, args.k.shape[2])
    weights = check_like("weights", weights, shape, args.q, "(B, Hq, L, S)")
    return reference.attention_backward(
        dout,
        args.q,
        args.k,
        args.v,
        weights,
        scale=args.scale,
        dropout_p=args.dropout_p,
        seed=args.seed,
    )


# --------------------------------------------------------------------------- steps


def attention_scores(
    q: np.ndarray,
    k: np.ndarray,
    *,
    scale: float | None = None,
    causal: bool = False,
    mask: np.ndarray | None = None,
) -> np.ndarray:
    """scores = scale * Q K^T + mask (-inf above the diagonal if causal): (B, Hq, L, S)."""
    args = check_attention(q, k, k, scale=scale, causal=causal, mask=mask, dropout_p=0.0, seed=0)
    return reference.attention_scores(
        args.q, args.k, scale=args.scale, causal=args.causal, mask=args.mask
    )


def attention_scores_backward(
    dscores: np.ndarray, q: np.ndarray, k: np.ndarray, *, scale: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(dq, dk) = (scale * dscores K, scale * dscores^T Q summed over a kv group)."""
    args = check_attention(q, k, k, scale=scale, causal=False, mask=None, dropout_p=0.0, seed=0)
    shape = args.q.shape[:3] + (args.k.shape[2],)
    dscores = check_like("dscores", dscores, shape, args.q, "(B, Hq, L, S)")
    return reference.attention_scores_backward(dscores, args.q, args.k, scale=args.scale)


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """Row softmax over the keys; rows that are entirely -inf give 0, not NaN."""
    scores = check_float_array("scores", scores, "(B, Hq, L, S)")
    if backend() == "numpy" or scores.size == 0:
        return reference.softmax_rows(scores)
    from ._numba_softmax import softmax_rows_kernel

    out = np.empty_like(scores)
    S = scores.shape[-1]
    _launch(softmax_rows_kernel, scores.reshape(-1, S), out.reshape(-1, S))
    return out


def softmax_rows_backward(dweights: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """dscores = weights * (dweights - rowsum(dweights * weights))."""
    weights = check_float_array("weights", weights, "(B, Hq, L, S)")
    dweights = check_like("dweights", dweights, weights.shape, weights, "weights.shape", "weights")
    if backend() == "numpy" or weights.size == 0:
        return reference.softmax_rows_backward(dweights, weights)
    from ._numba_softmax import softmax_rows_backward_kernel

    out = np.empty_like(weights)
    S = weights.shape[-1]
    _launch(
        softmax_rows_backward_kernel,
        dweights.reshape(-1, S),
        weights.reshape(-1, S),
        out.reshape(-1, S),
    )
    return out


def attention_dropout(weights: np.ndarray, *, dropout_p: float = 0.0, seed: int = 0) -> np.ndarray:
    """weights * keep / (1 - p), with the same keep mask as the fused kernels."""
    dropout_p, seed = check_dropout(dropout_p, seed)
    weights = check_float_array("weights", weights, "(B, Hq, L, S)")
    return reference.attention_dropout(weights, dropout_p=dropout_p, seed=seed)


def attention_dropout_backward(
    ddropped: np.ndarray, *, dropout_p: float = 0.0, seed: int = 0
) -> np.ndarray:
    """ddropped * keep / (1 - p)."""
    dropout_p, seed = check_dropout(dropout_p, seed)
    ddropped = check_float_array("ddropped", ddropped, "(B, Hq, L, S)")
    return reference.attention_dropout_backward(ddropped, dropout_p=dropout_p, seed=seed)


def weighted_sum(weights: np.ndarray, v: np.ndarray) -> np.ndarray:
    """out = weights V: weights (B, Hq, L, S), v (B, Hkv, S, Dv) -> (B, Hq, L, Dv)."""
    weights, v = check_weights_v(weights, v)
    return reference.weighted_sum(weights, v)


def weighted_sum_backward(
    dout: np.ndarray, weights: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(dweights, dv) = (dout V^T, weights^T dout summed over a kv group)."""
    weights, v = check_weights_v(weights, v)
    dout = check_like(
        "dout", dout, weights.shape[:3] + (v.shape[3],), weights, "(B, Hq, L, Dv)", "weights"
    )
    return reference.weighted_sum_backward(dout, weights, v)
