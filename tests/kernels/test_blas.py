"""The tile products' BLAS: NumPy's bundled CBLAS, scipy's fallback, plain loops."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from numba import njit

from tinyattn import kernels
from tinyattn.kernels import _blas
from tinyattn.kernels._numba_tiles import gemm

from ._problems import make_problem, run_flash

AVAILABLE = [
    name
    for name, ok in (
        ("numpy", _blas.numpy_blas() is not None),
        ("scipy", _blas.scipy_available()),
        ("loops", True),
    )
    if ok
]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@njit
def _gemm(alpha, a, b, beta, c, code):
    gemm(alpha, a, b, beta, c, code)


@pytest.mark.parametrize("code", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_t", [False, True])
@pytest.mark.parametrize("b_t", [False, True])
def test_gemm_every_backend_every_layout(code, dtype, a_t, b_t):
    """c = alpha a b + beta c for C and F (transposed) operands, against float64 NumPy."""
    name = {0: "loops", 1: "numpy", 2: "scipy"}[code]
    if name not in AVAILABLE:
        pytest.skip(f"{name} BLAS not reachable here")
    rng = np.random.default_rng(code)
    m, k, n = 37, 19, 23
    a = rng.standard_normal((k, m) if a_t else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if b_t else (k, n)).astype(dtype)
    a, b = (a.T if a_t else a), (b.T if b_t else b)
    c = rng.standard_normal((m, n)).astype(dtype)
    expected = 0.7 * (a.astype(np.float64) @ b) + 0.3 * c
    _gemm(0.7, a, b, 0.3, c, code)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(c, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("backend", AVAILABLE)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_same_numbers_as_loop_path(backend, dtype, monkeypatch):
    rng = np.random.default_rng(3)
    problem = make_problem(rng, 2, 4, 2, 70, 90, 16, 24, dtype)
    options = dict(causal=True, dropout_p=0.2, seed=7)
    monkeypatch.setenv("TINYATTN_BLAS", "loops")
    expected = run_flash(*problem, **options)
    monkeypatch.setenv("TINYATTN_BLAS", backend)
    assert kernels.blas_backend() == backend
    got = run_flash(*problem, **options)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for name, x, y in zip(("out", "logsumexp", "dq", "dk", "dv"), got, expected):
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol, err_msg=name)


def test_default_is_numpy_blas_when_reachable(monkeypatch):
    monkeypatch.delenv("TINYATTN_BLAS", raising=False)
    assert kernels.blas_backend() == AVAILABLE[0]
    if _blas.numpy_blas() is not None:
        assert "openblas" in os.path.basename(_blas.numpy_blas()["path"]).lower()


def test_bad_blas_choice_raises(monkeypatch):
    monkeypatch.setenv("TINYATTN_BLAS", "mkl")
    with pytest.raises(ValueError, match="TINYATTN_BLAS.*'mkl'"):
        kernels.blas_backend()


def test_numpy_blas_single_threaded_during_kernel_and_restored(monkeypatch):
    found = _blas.numpy_blas()
    if found is None:
        pytest.skip("NumPy's BLAS not reachable here")
    monkeypatch.setenv("TINYATTN_BLAS", "numpy")
    before = found["get_threads"]()
    with _blas.single_threaded_blas():
        assert found["get_threads"]() == 1
        with _blas.single_threaded_blas():
            assert found["get_threads"]() == 1
        assert found["get_threads"]() == 1
    assert found["get_threads"]() == before
    q = np.ones((1, 2, 8, 4), np.float32)
    kernels.flash_attention_forward(q, q, q)
    assert found["get_threads"]() == before


_FALLBACK_CHILD = """
import sys, numpy as np
from tinyattn import kernels
q = np.random.default_rng(0).standard_normal((1, 2, 40, 8))
out, _ = kernels.flash_attention_forward(q, q, q, causal=True)
ref, _ = kernels.reference.flash_attention_forward(q, q, q, causal=True)
print(kernels.blas_backend(), float(abs(out - ref).max()), "scipy" in sys.modules)
"""


@pytest.mark.parametrize("hide_scipy", [False, True])
def test_fallback_without_numpy_blas(hide_scipy, tmp_path):
    """NumPy's BLAS unreachable: scipy if importable, else loops; same numbers either way."""
    env = dict(os.environ, TINYATTN_NO_NUMPY_BLAS="1", PYTHONPATH=ROOT)
    env.pop("TINYATTN_BLAS", None)
    if hide_scipy:  # a package named scipy that cannot be imported
        (tmp_path / "scipy").mkdir()
        (tmp_path / "scipy" / "__init__.py").write_text("raise ImportError('hidden')\n")
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), ROOT])
    elif not _blas.scipy_available():
        pytest.skip("scipy not installed")
    result = subprocess.run(
        [sys.executable, "-c", _FALLBACK_CHILD], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    name, error, _ = result.stdout.split()
    assert name == ("loops" if hide_scipy else "scipy")
    assert float(error) < 1e-12
