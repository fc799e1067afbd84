"""The special-function kernel (``tinyattn.kernels._numba_special``: erfinv, ndtri, lgamma,
digamma) against its NumPy twins in ``tinyattn.ops._special_math`` (the results tinyattn
gave before the kernel existed): within 1e-14 relative everywhere (1e-15 absolute where
the value crosses 0), with NaN and inf in the same places."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tinyattn.ops import _special_math as sm

SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, 1.0, 2.0, -1.0, -2.0, -2.5, 1e-300, 5e-324]
SPECIALS += [10.0, 9.999999999, 2.0000001, -1.9999, 1.4616321449683622, 0.49999999, 1e300]


def _grid(low, high, seed):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.uniform(low, high, 5000), SPECIALS, rng.standard_normal(100) * 1e3])


DOMAINS = {
    "erfinv": np.concatenate([_grid(-1, 1, 1), 1 - np.logspace(-16, 0, 100), -1 + np.logspace(-16, 0, 50)]),
    "ndtri": np.concatenate([_grid(0, 1, 2), np.logspace(-300, 0, 100), 1 - np.logspace(-16, 0, 50)]),
    "lgamma": _grid(-50, 200, 3),
    "digamma": _grid(-50, 200, 4),
}  # fmt: skip


def test_kernel_numbering_is_the_wrappers():
    from tinyattn.kernels._numba_special import NAMES

    assert sm.KERNEL_NAMES == NAMES


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_kernel_matches_twin(name, monkeypatch):
    x = DOMAINS[name]
    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    got = getattr(sm, name)(x)
    want = sm.TWINS[name](x)  # (pure NumPy: erfinv's twin calls erfcx, which has no kernel)
    assert got.dtype == np.float64 and got.shape == x.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-14, atol=1e-15)
    assert (got[finite] == want[finite]).mean() > 0.5  # (mostly to the bit)


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_kernel_shapes(name, monkeypatch):
    """0-d, empty and strided inputs keep their shape (the kernel sees a flat copy)."""
    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    f = getattr(sm, name)
    x = np.linspace(0.1, 0.9, 24).reshape(4, 6)[:, ::2]
    assert (
        f(x).shape == (4, 3)
        and f(np.float64(0.3)).shape == ()
        and f(np.ones((0, 3))).shape == (0, 3)
    )
    np.testing.assert_array_equal(f(x), f(x.copy()))
    monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
    np.testing.assert_allclose(f(x), sm.TWINS[name](x), rtol=1e-14)


def test_trigamma_reflection_below_half():
    """polygamma(1) below 1/2 is pi^2 / sin^2(pi x) - psi1(1 - x), computed only there."""
    x = np.array([-3.7, -0.2, 0.1, 0.4999, 0.5, 3.0, np.inf, -np.inf, np.nan])
    got = sm.polygamma(1, x)
    low = x[:4]
    want = (np.pi / np.sin(np.pi * low)) ** 2 - sm.zeta(2.0, 1.0 - low)
    np.testing.assert_array_equal(got[:4], want)
    np.testing.assert_array_equal(got[4:6], sm.zeta(2.0, x[4:6]))
    assert got[6] == 0 and np.isnan(got[7]) and np.isnan(got[8])
    assert sm.polygamma(1, np.float64(0.25)).shape == ()


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_public_ops_on_each_backend(backend, monkeypatch):
    """Through tinyattn.special in float32 and float64: the same values on both backends."""
    monkeypatch.setenv("TINYATTN_KERNELS", backend)
    x = np.array([0.05, 0.3, 0.7, 0.95])
    for dtype in (np.float32, np.float64):
        t = tinyattn.tensor(x.astype(dtype))
        for name in ("erfinv", "ndtri", "gammaln", "digamma"):
            out = getattr(tinyattn.special, name)(t)
            assert out.dtype == t.dtype
            ref = getattr(sm, {"gammaln": "lgamma"}.get(name, name))
            np.testing.assert_allclose(out.numpy(), ref(x.astype(dtype)).astype(dtype), rtol=1e-6)
