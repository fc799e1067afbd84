"""Small attention forwards (one query row against a cache) run the serial kernel on the
calling thread; it computes the same items and tiles as the parallel one, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from tinyattn import kernels
from tinyattn.kernels import _numba_flash

from ._problems import make_problem


def _forward(monkeypatch, serial_max_work, q, k, v, **options):
    monkeypatch.setattr(_numba_flash, "SERIAL_MAX_WORK", serial_max_work)
    return kernels.flash_attention_forward(q, k, v, **options)


@pytest.mark.parametrize(
    "sizes, options",
    [
        ((1, 12, 12, 1, 40, 16, 16), {}),  # a decode step: one query row, 12 heads
        ((2, 4, 2, 5, 9, 8, 3), dict(causal=True)),  # GQA, several rows, causal
        ((1, 2, 2, 3, 7, 4, 4), dict(mask="float")),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_serial_kernel_equals_parallel(fused_backend, monkeypatch, sizes, options, dtype):
    rng = np.random.default_rng(0)
    q, k, v, _ = make_problem(rng, *sizes, dtype)
    options = dict(options)
    if options.pop("mask", None):
        mask = np.where(rng.random((q.shape[2], k.shape[2])) > 0.3, 0.0, -np.inf)
        options["mask"] = mask.astype(dtype)[None, None]
    k[0, 0, 1, 0] = np.nan  # a NaN key poisons its rows on both paths alike
    serial = _forward(monkeypatch, 1 << 60, q, k, v, **options)
    parallel = _forward(monkeypatch, 0, q, k, v, **options)
    for ours, theirs in zip(serial, parallel):
        np.testing.assert_array_equal(ours, theirs)


def test_decode_step_runs_serial(fused_backend, monkeypatch):
    """A decode step's call takes the serial kernel, a prompt's the parallel one."""
    called = []
    real_call = _numba_flash._call

    def spy(kernel, args, roles):
        called.append(kernel)
        return real_call(kernel, args, roles)

    monkeypatch.setattr(_numba_flash, "_call", spy)
    rng = np.random.default_rng(1)
    for L, S in ((1, 160), (128, 128)):
        q, k, v, _ = make_problem(rng, 1, 12, 12, L, S, 64, 64, np.float32)
        kernels.flash_attention_forward(q, k, v)
    assert called == [_numba_flash._forward_kernel_serial, _numba_flash._forward_kernel]
