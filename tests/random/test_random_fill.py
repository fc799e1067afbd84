"""Random fills (nn.init, Tensor.normal_/uniform_, randn/rand): drawn in the tensor's dtype,
in place, deterministic per seed, with the right distributions."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

import tinyattn
from tinyattn.nn import init
from tinyattn.random import fill as _random_fill


def _linear_and_embedding(seed: int):
    tinyattn.manual_seed(seed)
    layer, table = tinyattn.nn.Linear(48, 32), tinyattn.nn.Embedding(100, 16)
    init.normal_(layer.weight, std=0.02)
    return [p.detach().numpy().copy() for p in (layer.weight, layer.bias, table.weight)]


def test_same_seed_same_weights_other_seed_other_weights():
    first, again, other = (_linear_and_embedding(s) for s in (7, 7, 8))
    for a, b, c in zip(first, again, other):
        assert a.dtype == np.float32
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


def test_the_stream_depends_on_call_order():
    """Documented: each fill advances the generator, so swapping two fills swaps streams."""
    x, y = tinyattn.empty(64), tinyattn.empty(64)
    tinyattn.manual_seed(0)
    init.normal_(x), init.normal_(y)
    first = x.numpy().copy()
    tinyattn.manual_seed(0)
    init.normal_(y), init.normal_(x)
    np.testing.assert_array_equal(y.numpy(), first)


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(_random_fill, "BLOCK", 1000)
    monkeypatch.setattr(_random_fill, "CHUNK", 256)


@pytest.mark.parametrize("fill", [init.normal_, init.uniform_])
def test_block_streams_do_not_depend_on_the_thread_count(small_blocks, monkeypatch, fill):
    results = []
    for workers in (1, 3):
        monkeypatch.setattr(_random_fill, "_workers", lambda n=workers: n)
        tinyattn.manual_seed(3)
        t = fill(tinyattn.empty(2, 1250))  # three blocks, the last one partial
        results.append(t.numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])
    blocks = results[0].reshape(-1)[:2000].reshape(2, 1000)
    assert not np.array_equal(blocks[0], blocks[1])  # each block its own stream


def test_float32_fill_makes_no_float64_or_full_size_temporary():
    t = tinyattn.empty(512, 1024)  # 2 MiB of float32 (a float64 draw would be 4 MiB)
    init.normal_(t)  # first touch of the pages, lazy imports
    tracemalloc.start()
    try:
        init.normal_(t, std=0.02)
        init.kaiming_uniform_(t, a=math.sqrt(5))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 512 * 1024, peak  # chunk buffers only
    assert t.dtype == tinyattn.float32


@pytest.mark.parametrize("dtype", [tinyattn.float32, tinyattn.float64, tinyattn.float16])
def test_normal_and_uniform_distributions(dtype):
    tinyattn.manual_seed(1)
    z = init.normal_(tinyattn.empty(200_001, dtype=dtype), mean=1.0, std=2.0)
    u = init.uniform_(tinyattn.empty(200_001, dtype=dtype), a=-3.0, b=5.0)
    z64, u64 = z.numpy().astype(np.float64), u.numpy().astype(np.float64)
    assert z.dtype == dtype and u.dtype == dtype
    assert abs(z64.mean() - 1.0) < 0.02 and abs(z64.std() - 2.0) < 0.02
    assert abs(np.mean(np.abs(z64 - 1.0) < 2.0) - 0.6827) < 0.005  # within one std
    assert np.abs(z64 - 1).max() < 2 * 6.0
    assert -3.0 <= u64.min() and u64.max() <= 5.0
    assert abs(u64.mean() - 1.0) < 0.03 and abs(u64.var() - 64 / 12) < 0.05


def test_fills_write_through_non_contiguous_views_and_integer_tensors():
    tinyattn.manual_seed(0)
    base = tinyattn.zeros(6, 4)
    base.t().normal_()  # a transposed view: drawn, then assigned
    assert np.all(base.numpy() != 0)
    column = tinyattn.zeros(5, 3)[:, 1]
    column.uniform_(2.0, 3.0)
    assert np.all((column.numpy() >= 2.0) & (column.numpy() <= 3.0))
    ints = tinyattn.zeros(4, dtype=tinyattn.int64)
    init.uniform_(ints, 5.0, 6.0)  # float64 draws, assigned (truncated)
    np.testing.assert_array_equal(ints.numpy(), [5, 5, 5, 5])


def test_randn_and_rand_draw_in_the_requested_dtype():
    tinyattn.manual_seed(5)
    a = tinyattn.randn(3, 4)
    tinyattn.manual_seed(5)
    b = tinyattn.randn(3, 4)
    assert a.dtype == tinyattn.float32 and tinyattn.randn(2, dtype=tinyattn.float64).dtype == (
        tinyattn.float64
    )
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    r = tinyattn.rand(1000, dtype=tinyattn.float16)
    assert r.dtype == tinyattn.float16 and 0 <= float(r.min()) and float(r.max()) <= 1


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda t: init.normal_(t, std=-1.0), "std must be non-negative"),
        (lambda t: init.normal_(t, mean=float("nan")), "mean must be a finite"),
        (lambda t: init.uniform_(t, a=0.0, b=float("inf")), "b must be a finite"),
        (lambda t: t.normal_(0.0, -0.5), "std >= 0.0"),
    ],
)
def test_bad_arguments_name_the_argument(call, message):
    with pytest.raises((ValueError, RuntimeError), match=message):
        call(tinyattn.empty(3))


def test_one_element_tensors_are_accepted_as_numbers():
    tinyattn.manual_seed(0)
    a = init.normal_(tinyattn.empty(1000), mean=tinyattn.tensor(1.0), std=tinyattn.tensor(0.5))
    assert abs(float(a.mean()) - 1.0) < 0.1
    with pytest.raises(ValueError, match="std must be a finite real number"):
        init.normal_(tinyattn.empty(3), std="0.1")
