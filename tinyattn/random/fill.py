"""Random fills at NumPy speed: draw in the array's own dtype, in place, one pass per tensor.

Used by ``nn.init`` (``normal_``, ``uniform_`` and the initialisers built on them),
``Tensor.normal_`` / ``Tensor.uniform_`` and ``randn`` / ``rand``.

- float32 and float64 arrays are drawn in their dtype (NumPy's ``dtype=`` and ``out=``):
  no float64 array made and cast, no second buffer. float16 draws float32 and casts once;
  integer, bool and complex arrays draw float64 and are assigned.
- Normal fills of float32 arrays use the Box-Muller transform on float32 uniforms
  (``z = sqrt(-2 ln(1 - u1)) cos(2 pi u2)``, and ``sin`` for the second half of each
  chunk), in cache-sized chunks: NumPy's float32 ziggurat costs about 18 ns per number on
  the benchmark machine, this about 7 (torch's ``normal_``: 6). As torch's CPU sampler,
  it reaches at most ``sqrt(-2 ln 2^-24) = 5.77`` standard deviations.
- Arrays larger than ``BLOCK`` elements are cut into blocks, each drawn from its own
  stream: the caller's generator draws one 63-bit seed, and block ``k`` uses
  ``PCG64(SeedSequence((seed, k)))``. Blocks then fill on several threads (NumPy releases
  the GIL while it draws and computes), and the numbers do not depend on the thread count.

Streams are deterministic per seed: the same seed, the same sequence of calls and the same
shapes and dtypes give the same numbers. They depend on the call order (each call advances
the generator) and on the dtype (a float32 and a float64 draw of one seed differ).
"""

from __future__ import annotations

import concurrent.futures
import functools
import math
import os

import numpy as np

BLOCK = 1 << 20  # elements per independent stream of a large fill
CHUNK = 1 << 15  # elements per NumPy call inside a block: temporaries stay in L2 cache
_NATIVE = (np.dtype(np.float32), np.dtype(np.float64))
_TWO_PI = np.float32(2 * math.pi)


def draw_dtype(dtype) -> np.dtype:
    """The dtype to draw in for an array of ``dtype``: itself for float32/float64, float32
    for float16, float64 for the rest (integer, bool and complex arrays)."""
    dtype = np.dtype(dtype)
    if dtype in _NATIVE:
        return dtype
    return np.dtype(np.float32 if dtype.kind == "f" else np.float64)


def standard_normal(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """N(0, 1) samples of ``shape`` and ``dtype``, drawn in ``draw_dtype(dtype)`` in one call
    (NumPy's ziggurat: exact tails, for ``randn``)."""
    values = rng.standard_normal(tuple(shape), dtype=draw_dtype(dtype))
    return values.astype(dtype, copy=False)


def uniform01(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """U[0, 1) samples of ``shape`` and ``dtype``, drawn in ``draw_dtype(dtype)`` in one call."""
    return rng.random(tuple(shape), dtype=draw_dtype(dtype)).astype(dtype, copy=False)


def fill_normal_(data: np.ndarray, mean: float, std: float, rng: np.random.Generator) -> None:
    """Overwrite ``data`` with N(mean, std^2) samples drawn in its dtype (module docstring)."""
    _fill(data, _normal_block, std, mean, rng)


def fill_uniform_(data: np.ndarray, a: float, b: float, rng: np.random.Generator) -> None:
    """Overwrite ``data`` with U(a, b) samples drawn in its dtype (module docstring)."""
    _fill(data, _uniform_block, b - a, a, rng)


def _fill(data: np.ndarray, block_fn, scale: float, shift: float, rng) -> None:
    in_place = data.dtype in _NATIVE and data.flags.c_contiguous and data.flags.writeable
    target = data if in_place else np.empty(data.shape, draw_dtype(data.dtype))
    flat = target.reshape(-1)  # a view: target is C-contiguous
    if flat.size <= BLOCK:
        block_fn(flat, rng, scale, shift)
    else:
        seed = int(rng.integers(2**63))

        def fill_block(k: int) -> None:
            stream = np.random.Generator(np.random.PCG64(np.random.SeedSequence((seed, k))))
            block_fn(flat[k * BLOCK : (k + 1) * BLOCK], stream, scale, shift)

        blocks = range(-(-flat.size // BLOCK))
        if _workers() > 1:
            list(_pool().map(fill_block, blocks))
        else:
            for k in blocks:
                fill_block(k)
    if not in_place:
        data[...] = target


def _uniform_block(out: np.ndarray, rng, scale: float, shift: float) -> None:
    for start in range(0, out.size, CHUNK):
        chunk = out[start : start + CHUNK]
        rng.random(dtype=out.dtype, out=chunk)
        _scale_shift_(chunk, scale, shift)


def _normal_block(out: np.ndarray, rng, scale: float, shift: float) -> None:
    if out.dtype != np.float32:  # float64: NumPy's ziggurat (exact tails)
        rng.standard_normal(dtype=out.dtype, out=out)
        _scale_shift_(out, scale, shift)
        return
    half = (min(out.size, CHUNK) + 1) // 2
    uniforms, cosines = np.empty(2 * half, np.float32), np.empty(half, np.float32)
    for start in range(0, out.size, CHUNK):
        chunk = out[start : start + CHUNK]
        n, h = chunk.size, (chunk.size + 1) // 2
        u = uniforms[: 2 * h]
        rng.random(dtype=np.float32, out=u)
        radius, angle = u[:h], u[h:]
        np.subtract(np.float32(1), radius, out=radius)  # (0, 1]: the log stays finite
        np.log(radius, out=radius)
        radius *= np.float32(-2)
        np.sqrt(radius, out=radius)
        radius *= np.float32(scale)
        angle *= _TWO_PI
        np.cos(angle, out=cosines[:h])
        np.sin(angle, out=angle)
        np.multiply(radius, cosines[:h], out=chunk[:h])
        np.multiply(radius[: n - h], angle[: n - h], out=chunk[h:])
        if shift != 0:
            chunk += np.float32(shift)


def _scale_shift_(values: np.ndarray, scale: float, shift: float) -> None:
    if scale != 1:
        values *= scale
    if shift != 0:
        values += shift


def _workers() -> int:
    """Threads for block fills: the processors this process may run on, at most 8."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


@functools.cache
def _pool() -> concurrent.futures.ThreadPoolExecutor:
    return concurrent.futures.ThreadPoolExecutor(_workers(), thread_name_prefix="tinyattn-fill")
