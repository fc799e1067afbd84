"""The special-function kernel (``tinyattn.kernels._numba_special``: erfinv, ndtri, lgamma,
digamma) against its NumPy twins in ``tinyattn.ops._special_math`` (the results tinyattn
gave before the kernel existed): within 1e-14 relative everywhere (1e-15 absolute where
the value crosses 0), with NaN and inf in the same places."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tinyattn.ops.special import _math as sm

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


# Values of the NumPy implementations as they were before the kernel and the branch-subset
# rewrites (computed with that code, stored as data): the twins must give them to the bit,
# the public functions (kernel or NumPy) within 1e-14 relative.
PINNED = {
    "erfc": (
        [-5.5, -2.0, -0.3, 0.0, 1.9, 2.0, 3.7, 9.25, 26.0],
        [
            1.9999999999999927,
            1.9953222650189528,
            1.3286267594591274,
            1.0,
            0.00720957076474249,
            0.004677734981047266,
            1.6715105790914599e-07,
            4.202037214919711e-39,
            5.663192408856144e-296,
        ],
    ),
    "erfcx": (
        [-3.1, -2.0, -0.7, 0.5, 2.0, 2.5, 7.0, 55.0, 100000.0],
        [
            29826.166456136547,
            108.94090438997799,
            2.7387021025613167,
            0.6156903441929259,
            0.2553956763105058,
            0.21080636406114361,
            0.07980005432915294,
            0.010256297732270069,
            5.641895835195469e-06,
        ],
    ),
    "log_ndtr": (
        [-40.0, -9.5, -2.0, -0.1, 0.0, 0.8, 3.0, 8.5, 12.0],
        [
            -804.6084420137538,
            -48.30601929896523,
            -3.7831843336820326,
            -0.7761545927302734,
            -0.6931471805599453,
            -0.23807370162332808,
            -0.001350809964748195,
            -9.479534822203355e-18,
            -1.776482112077702e-33,
        ],
    ),
    "erfinv": (
        [-0.9999999, -0.7, -0.2, 0.001, 0.3, 0.5, 0.51, 0.95, 0.999999999999],
        [
            -3.766562581638471,
            -0.7328690779592167,
            -0.1791434546212917,
            0.0008862271574665522,
            0.2724627147267543,
            0.4769362762044699,
            0.48812205051595897,
            1.3859038243496777,
            5.042031898572696,
        ],
    ),
    "ndtri": (
        [1e-300, 1e-20, 0.001, 0.2, 0.25, 0.5, 0.75, 0.9, 0.999999],
        [
            -37.047096299361286,
            -9.262340089798409,
            -3.0902323061678136,
            -0.8416212335729144,
            -0.6744897501960818,
            0.0,
            0.6744897501960818,
            1.2815515655446008,
            4.753424308817088,
        ],
    ),
    "lgamma": (
        [
            -7.5,
            -2.4842662473158867,
            -0.5,
            0.001,
            0.75,
            1.0,
            1.6,
            2.4,
            9.99,
            10.0,
            31.5,
            10000000000.0,
        ],
        [
            -8.404537371451598,
            -0.03770577049377555,
            1.2655121234846454,
            6.907178885383853,
            0.20328095143129538,
            0.0,
            -0.11259176569675577,
            0.21685932244884157,
            12.779315214350193,
            12.80182748008147,
            76.37119786778275,
            220258509288.81058,
        ],
    ),
    "digamma": (
        [-7.5, -0.3, 1e-08, 0.4, 1.4616321449683622, 2.0, 9.5, 10.0, 123.0],
        [
            2.0800908175794204,
            2.1133097796353986,
            -100000000.57721566,
            -2.561384544585115,
            -4.440892098500626e-16,
            0.42278433509846747,
            2.19773787640295,
            2.2517525890667214,
            4.808113806573255,
        ],
    ),
}
TRIGAMMA = (
    [-3.7, -0.2, 0.1, 0.4999, 0.5, 3.0, 17.5],
    [
        14.842421864124258,
        27.299474137501697,
        101.43329915079278,
        4.9364855673831665,
        4.93480220054468,
        0.39493406684822646,
        0.058806588095783506,
    ],
)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("name", sorted(PINNED))
def test_values_before_the_rewrite(name, backend, monkeypatch):
    monkeypatch.setenv("TINYATTN_KERNELS", backend)
    x, want = (np.array(v) for v in PINNED[name])
    np.testing.assert_allclose(getattr(sm, name)(x), want, rtol=1e-14, atol=0)
    twin = sm.TWINS.get(name, getattr(sm, name))
    if backend == "numpy":
        np.testing.assert_array_equal(twin(x), want)


def test_trigamma_values_before_the_rewrite():
    x, want = (np.array(v) for v in TRIGAMMA)
    np.testing.assert_array_equal(sm.polygamma(1, x), want)
