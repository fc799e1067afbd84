"""F.linear's product: one GEMM on the weight as stored (no transposed copy per call), at
the BLAS thread count timed faster for its shape, giving the same numbers at either."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import tinyattn
import tinyattn.nn.functional as F
from tinyattn.kernels._blas import numpy_blas
from tinyattn.kernels.matmul import BlasThreadChoice
from tinyattn.nn.functional.basic import linear_product


def _peak_bytes(fn) -> int:
    fn()  # warm-up: lazy imports and caches are not the product's allocations
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("rows", [1, 9])
def test_linear_does_not_copy_the_weight(rows):
    w = tinyattn.randn(2048, 64)  # 512 KiB, the output of 1-9 rows is 8-72 KiB
    x = tinyattn.randn(1, rows, 64)
    with tinyattn.no_grad():
        peak = _peak_bytes(lambda: F.linear(x, w))
    assert peak < w.numel() * 4 // 4, f"peak {peak} bytes: the weight was copied"


def test_tied_head_reads_the_embedding_in_place():
    emb = tinyattn.nn.Embedding(4096, 32)
    h = tinyattn.randn(1, 1, 32)
    with tinyattn.no_grad():
        peak = _peak_bytes(lambda: F.linear(h, emb.weight))
        logits = F.linear(h, emb.weight)
    assert peak < emb.weight.numel() * 4 // 4
    ref = h.numpy().astype(np.float64)[0] @ emb.weight.detach().numpy().astype(np.float64).T
    np.testing.assert_allclose(logits.numpy()[0], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_few_rows_match_the_same_rows_inside_a_large_product(dtype):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((300, 96)).astype(dtype)
    x = rng.standard_normal((32, 96)).astype(dtype)
    full = linear_product(x, w)  # many rows: BLAS at its own thread count
    few = np.concatenate([linear_product(x[i : i + 1], w) for i in range(len(x))])
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(few, full, rtol=tol, atol=tol)
    np.testing.assert_allclose(
        few, x.astype(np.float64) @ w.T.astype(np.float64), rtol=tol, atol=tol
    )


def test_few_row_product_restores_the_blas_thread_count():
    found = numpy_blas()
    if found is None:
        pytest.skip("NumPy's OpenBLAS is not reachable: the product runs at BLAS's own count")
    before = found["get_threads"]()
    linear_product(np.ones((1, 8), np.float32), np.ones((4, 8), np.float32))
    assert found["get_threads"]() == before


def test_thread_choice_runs_the_faster_count_and_retimes_the_other():
    choice = BlasThreadChoice()
    n = choice.SAMPLES
    assert not choice._one_thread([], [], 1)  # untimed: alternate, the library's count first
    assert choice._one_thread([], [1.0], 2)
    fast, slow = [1e-4] * n, [1e-3] * n
    assert choice._one_thread(fast, slow, 5) and not choice._one_thread(slow, fast, 5)
    assert not choice._one_thread(fast, slow, choice.RETRY_EVERY)  # the slower, timed again


def test_thread_choice_gives_the_product_at_either_count():
    found = numpy_blas()
    if found is None:
        pytest.skip("NumPy's OpenBLAS is not reachable: there is no count to choose")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 512)).astype(np.float32)
    w = rng.standard_normal((600, 512)).astype(np.float32)
    choice = BlasThreadChoice()
    before = found["get_threads"]()
    results = [choice.product(x, w.T) for _ in range(2 * choice.SAMPLES + 1)]
    assert found["get_threads"]() == before
    if before > 1:  # both counts were timed, and one is preferred now
        assert choice.choice(x.shape, w.T.shape, np.float32) in ("one", "many")
    ref = x.astype(np.float64) @ w.T.astype(np.float64)
    for y in results:
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_thread_choice_table_stays_bounded(monkeypatch):
    found = numpy_blas()
    if found is None or found["get_threads"]() <= 1:
        pytest.skip("one BLAS thread only: no timings are kept")
    choice = BlasThreadChoice()
    monkeypatch.setattr(choice, "MAX_SHAPES", 3)
    for width in range(1, 8):
        choice.product(np.ones((1, 512), np.float32), np.ones((512, 512 + width), np.float32))
        assert 1 <= len(choice._timings) <= 3


def test_deterministic_algorithms_fix_the_thread_count():
    """Under use_deterministic_algorithms(True) no product is timed or moved to one thread,
    so repeated runs of the same product give the same bits."""
    import tinyattn
    from tinyattn.kernels.matmul import linear_threads

    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 512)).astype(np.float32)
    w = rng.standard_normal((512, 1024)).astype(np.float32)
    tinyattn.use_deterministic_algorithms(True)
    try:
        assert linear_threads.fixed
        linear_threads._timings.clear()
        results = [linear_threads.product(x, w) for _ in range(2 * linear_threads.SAMPLES + 1)]
        assert linear_threads._timings == {}  # nothing timed: the library's count throughout
        assert all(np.array_equal(results[0], y) for y in results[1:])
    finally:
        tinyattn.use_deterministic_algorithms(False)
    assert not linear_threads.fixed
