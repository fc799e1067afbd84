"""Reductions and statistics (ops/reduce/stats.py): gradchecks and torch parity via the harness, bad input."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, run_parity, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def _arr(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape)


def _with_nans(*shape, seed=0):
    x = _arr(*shape, seed=seed)
    x.reshape(-1)[::3] = np.nan
    return x


def test_nansum_nanmean():
    x = _with_nans(3, 4)
    check_op(lambda T, x: T.nansum(x), x)
    check_op(lambda T, x: x.nansum(1, keepdim=True), x)
    check_op(lambda T, x: T.nanmean(x, 0), x)
    check_op(lambda T, x: x.nanmean(dim=(0, 1)), x)
    check_op(lambda T, x: T.nanmean(x), _arr(2, 3))


@needs_torch
def test_nansum_ints_and_all_nan_mean():
    assert tinyattn.nansum(tinyattn.tensor([1, 2])).dtype == tinyattn.int64
    got = tinyattn.nanmean(tinyattn.tensor([[np.nan, np.nan], [1.0, 2.0]]), 1)
    want = torch.nanmean(torch.tensor([[np.nan, np.nan], [1.0, 2.0]]), 1)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_aminmax():
    check_op(lambda T, x: tuple(T.aminmax(x)), _arr(3, 4))
    check_op(lambda T, x: tuple(x.aminmax(dim=1, keepdim=True)), _arr(3, 4))
    check_op(lambda T, x: tuple(T.aminmax(x, dim=0)), _arr(3, 4))
    check_op(lambda T, x: tuple(T.aminmax(x, keepdim=True)), _arr(3, 4))
    r = tinyattn.aminmax(tinyattn.tensor([3.0, 1.0, 2.0]))
    assert (r.min.item(), r.max.item()) == (1.0, 3.0)


INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize(
    "q,dim,keepdim",
    [
        (0.5, None, False),
        (0.3, 1, False),
        ([0.0, 0.25, 0.9, 1.0], 0, True),
        ([0.1, 0.5], -1, False),
        (0.75, None, True),
        (0.5, 0, True),
    ],
)
def test_quantile(interpolation, q, dim, keepdim):
    def f(T, x):
        qq = T.tensor(q, dtype=x.dtype) if isinstance(q, list) else q
        return T.quantile(x, qq, dim, keepdim, interpolation=interpolation)

    check_op(f, _arr(3, 5))


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_nanquantile(interpolation):
    x = _arr(4, 5)
    x[0, 1] = x[2, :] = x[3, 0] = np.nan
    x[1, 3] = np.nan

    def f(T, x):
        q = T.tensor([0.2, 0.5, 1.0], dtype=x.dtype)
        return T.nanquantile(x, q, 1, interpolation=interpolation), x.nanquantile(0.4, dim=1)

    run_parity(f, x)
    x[2, 1:] = 0.5 + np.arange(4) * 0.1  # a row with a NaN, the rest valid: gradcheck
    from harness import run_gradcheck

    run_gradcheck(lambda T, x: T.nanquantile(x, 0.3, 1, interpolation=interpolation), x)


def test_quantile_with_nan_is_nan():
    x = _arr(2, 4)
    x[0, 2] = np.nan
    run_parity(lambda T, x: T.quantile(x, 0.5, 1), x)


def test_quantile_interpolates_infinities_as_torch_lerp():
    # torch's lerp takes w >= 0.5 from above: lerp(-inf, 1, 0.75) = -inf (ours gave NaN)
    x = tinyattn.tensor([1.0, float("inf"), float("-inf"), 2.0, float("nan")])
    expect = {  # from torch 2.13, nanquantile over the four numbers
        ("linear", 0.25): -np.inf,
        ("midpoint", 0.25): -np.inf,
        ("linear", 0.5): 1.5,
        ("linear", 0.75): np.inf,
        ("midpoint", 0.75): np.nan,
        ("linear", 0.0): np.nan,
    }
    for (interpolation, q), want in expect.items():
        got = tinyattn.nanquantile(x, q, interpolation=interpolation).item()
        assert got == want or (np.isnan(want) and np.isnan(got)), (interpolation, q, got)


def test_quantile_of_a_0d_tensor_with_keepdim_stays_0d():
    # torch: a 0-D input has no dim to keep (ours gave shape (1,) and (2, 1))
    x = tinyattn.tensor(1.5)
    assert tinyattn.quantile(x, 0.5, dim=0, keepdim=True).shape == ()
    assert tinyattn.nanquantile(x, tinyattn.tensor([0.1, 0.9]), dim=-1, keepdim=True).shape == (2,)


def test_histc():
    for args in [
        dict(bins=4, min=0, max=3),
        dict(bins=4),
        dict(bins=2),
        dict(bins=5, min=-1, max=1),
    ]:
        for data in ([1.0, 2, 1, 5], [2.0, 2], _arr(20).tolist()):
            got = tinyattn.histc(tinyattn.tensor(data), **args)
            if torch is not None:
                want = torch.histc(torch.tensor(data), **args)
                np.testing.assert_array_equal(got.numpy(), want.numpy())
                assert got.dtype.name == "float32"


@pytest.mark.parametrize(
    "shape,dim", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 2), -1), ((), 0)]
)
def test_logcumsumexp(shape, dim):
    check_op(lambda T, x: T.logcumsumexp(x, dim), np.asarray(_arr(*shape) * 3))
    check_op(lambda T, x: x.logcumsumexp(dim), _arr(*shape, seed=2))


def test_logcumsumexp_does_not_overflow_or_underflow():
    x = np.array([-1000.0, 0.0, 1.0, 800.0, -900.0])
    run_parity(lambda T, x: T.logcumsumexp(x, 0), x)
    got = tinyattn.logcumsumexp(tinyattn.tensor(x), 0)
    assert np.isfinite(got.numpy()).all() and got[0].item() == -1000.0


def test_trapezoid():
    check_op(lambda T, y: T.trapezoid(y), _arr(5))
    check_op(lambda T, y: T.trapezoid(y, dx=0.5, dim=0), _arr(4, 3))
    check_op(lambda T, y, x: T.trapezoid(y, x), _arr(2, 4), np.array([0.0, 1.0, 3.0, 3.5]))
    check_op(lambda T, y, x: T.trapezoid(y, x, dim=0), _arr(3, 2), np.array([[0.0], [1.0], [3.0]]))
    check_op(lambda T, y: T.cumulative_trapezoid(y), _arr(5))
    check_op(
        lambda T, y, x: T.cumulative_trapezoid(y, x, dim=0),
        _arr(4, 2),
        np.array([0.0, 0.5, 2.0, 2.1]),
    )
    check_op(lambda T, y: T.cumulative_trapezoid(y, dx=2.0), _arr(2, 3))


@needs_torch
def test_trapezoid_ints_and_empty():
    for lib in (tinyattn, torch):
        assert str(lib.trapezoid(lib.tensor([1, 2, 4])).dtype).endswith("float32")
    assert tinyattn.trapezoid(tinyattn.tensor([1, 2, 4])).item() == 4.5
    assert (
        tinyattn.trapezoid(tinyattn.zeros(2, 0)).tolist()
        == torch.trapezoid(torch.zeros(2, 0)).tolist()
    )


@needs_torch
def test_isin_and_unravel_index():
    cases = [
        lambda T: T.isin(T.tensor([1, 2, 3]), T.tensor([2, 5])),
        lambda T: T.isin(T.tensor([1, 2, 3]), 2),
        lambda T: T.isin(2, T.tensor([2, 5])),
        lambda T: T.isin(T.tensor([1.0, 2.0]), T.tensor([2]), invert=True),
        lambda T: T.unravel_index(T.tensor([4, 1, 6, -7]), (2, 3)),
        lambda T: T.unravel_index(T.tensor(5), (2, 3)),
        lambda T: T.unravel_index(T.tensor([[1]]), 6),
    ]
    for case in cases:
        got, want = case(tinyattn), case(torch)
        if isinstance(want, tuple):
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.tolist() == w.tolist() and g.dtype.name == str(w.dtype)[6:]
        else:
            assert got.tolist() == want.tolist() and got.dtype.name == "bool"


BAD = [
    ("aminmax_empty", lambda T: T.aminmax(T.zeros(0)), "empty"),
    ("quantile_q", lambda T: T.quantile(T.zeros(3), 1.5), r"\[0, 1\].*1.5"),
    ("quantile_interp", lambda T: T.quantile(T.zeros(3), 0.5, interpolation="foo"), "foo"),
    ("quantile_int", lambda T: T.quantile(T.tensor([1, 2]), 0.5), "float or double"),
    ("quantile_empty", lambda T: T.quantile(T.zeros(0), 0.5), "non-empty"),
    ("quantile_dim", lambda T: T.quantile(T.zeros(2, 3), 0.5, dim=2), "range"),
    ("histc_int", lambda T: T.histc(T.tensor([1, 2])), "Long|int64"),
    ("histc_bins", lambda T: T.histc(T.zeros(2), bins=0), "bins"),
    ("trapezoid_x", lambda T: T.trapezoid(T.zeros(3), T.zeros(4)), "x.*4.*3"),
    ("unravel_float", lambda T: T.unravel_index(T.tensor([1.0]), (2,)), "integer"),
    ("nanmean_int", lambda T: T.nanmean(T.tensor([1, 2])), "floating"),
]


@pytest.mark.parametrize("call,expected", [(c, e) for _, c, e in BAD], ids=[i for i, _, _ in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)
