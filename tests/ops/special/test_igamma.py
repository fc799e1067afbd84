"""igamma / igammac (regularized incomplete gamma P and Q): values against torch (and
mpmath when installed), torch's special values, the gradient in ``other`` only."""

import numpy as np
import pytest
from harness import check_op, rand, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="compares with torch directly")


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_gradcheck_and_parity_in_other(name):
    a = rand(3, 4, low=0.2, high=8.0, seed=1)
    x = rand(3, 4, low=0.05, high=12.0, seed=2)
    check_op(lambda L, a, x: getattr(L, name)(a, x), a, x, grad=[False, True])
    check_op(
        lambda L, a, x: getattr(a, name)(x),
        rand(4, low=0.5, high=3.0, seed=3),
        x,
        grad=[False, True],
    )


@needs_torch
def test_values_over_a_wide_range_match_torch():
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(0.01, 5, 400), 10 ** rng.uniform(-3, 4, 400)])
    x = np.concatenate([rng.uniform(0, 10, 400), a[400:] * rng.uniform(0.5, 1.5, 400)])
    for name in ("igamma", "igammac"):
        ours = getattr(tinyattn, name)(tinyattn.tensor(a), tinyattn.tensor(x)).numpy()
        theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(x)).numpy()
        # torch's uniform asymptotic expansion (a > 20) is off by up to ~1e-9 here
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(ours[:400], theirs[:400], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(
        tinyattn.igamma(tinyattn.tensor(a), tinyattn.tensor(x)).numpy()
        + tinyattn.igammac(tinyattn.tensor(a), tinyattn.tensor(x)).numpy(),
        1.0,
        atol=1e-14,
    )


def test_values_match_mpmath():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    for a, x in [
        (20.45589782643625, 18.975204402109043),
        (0.5, 1.0),
        (3000.0, 2950.0),
        (0.01, 5.0),
    ]:
        expected = float(mpmath.gammainc(a, 0, x, regularized=True))
        got = tinyattn.igamma(tinyattn.tensor([a], dtype=tinyattn.float64), x).item()
        # (for large a, log(x^a e^-x / Gamma(a)) cancels: ~a * eps relative error)
        tol = 1e-13 if a < 100 else 1e-11
        assert abs(got - expected) <= tol * max(1.0, abs(expected)), (a, x, got, expected)


@needs_torch
def test_special_values_match_torch():
    a = [0.0, 1.0, -1.0, np.inf, 2.0, 0.0, 1.0, 2.0, np.nan, np.inf]
    x = [1.0, 0.0, 1.0, 1.0, np.inf, 0.0, -1.0, np.nan, 1.0, np.inf]
    for name in ("igamma", "igammac"):
        ours = getattr(tinyattn, name)(tinyattn.tensor(a), tinyattn.tensor(x)).numpy()
        theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(x)).numpy()
        np.testing.assert_array_equal(ours, theirs)


def test_known_values_and_dtypes():
    # P(1, x) = 1 - exp(-x); P(1/2, x) = erf(sqrt(x))
    x = np.array([0.1, 1.0, 3.0])
    np.testing.assert_allclose(
        tinyattn.igamma(tinyattn.ones(3, dtype=tinyattn.float64), tinyattn.tensor(x)).numpy(),
        1 - np.exp(-x),
        rtol=1e-14,
    )
    half = tinyattn.full((3,), 0.5, dtype=tinyattn.float64)
    expected = tinyattn.erf(tinyattn.tensor(np.sqrt(x))).numpy()
    np.testing.assert_allclose(
        tinyattn.igamma(half, tinyattn.tensor(x)).numpy(), expected, rtol=1e-14
    )
    assert tinyattn.igamma(tinyattn.ones(2), 1.0).dtype == tinyattn.float32
    mixed = tinyattn.igamma(tinyattn.ones(2), tinyattn.ones(2, dtype=tinyattn.float64))
    assert mixed.dtype == tinyattn.float64
    y = tinyattn.ones(2, dtype=tinyattn.float64)
    assert y.igammac_(1.0) is y
    np.testing.assert_allclose(y.numpy(), np.exp(-1.0), rtol=1e-14)


def test_errors():
    with pytest.raises(NotImplementedError, match="igamma_cpu\" not implemented for 'Long'"):
        tinyattn.igamma(tinyattn.tensor([1, 2]), tinyattn.tensor([1, 2]))
    with pytest.raises(
        RuntimeError, match=r"igamma: the shapes .* \[2\] .* \[3\] are not broadcastable"
    ):
        tinyattn.igamma(tinyattn.ones(2), tinyattn.ones(3))
    a = tinyattn.tensor([1.5], requires_grad=True)
    with pytest.raises(RuntimeError, match="the derivative for 'igamma: input' is not implemented"):
        tinyattn.igamma(a, tinyattn.tensor([2.0])).sum().backward()
