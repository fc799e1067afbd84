"""Pooling (max, avg, adaptive, lp, unpool), functional and modules: gradchecks, torch parity,
indices, reprs, bad input."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, run_parity, torch

import tinyattn
from tests.nn._module_parity import module_parity

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def _arr(shape, seed=0):
    # distinct values (a permutation, spread out): no ties that finite differences would cross
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return (rng.permutation(n) / n * 2 - 1 + rng.uniform(0, 0.2 / n, n)).reshape(shape)


def F(lib):
    return lib.nn.functional


MAX2D = [
    ((1, 2, 5, 4), dict(kernel_size=2)),
    ((2, 1, 5, 5), dict(kernel_size=3, stride=2, padding=1)),
    ((1, 2, 5, 6), dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 1), dilation=2)),
    ((1, 1, 5, 5), dict(kernel_size=2, stride=2, ceil_mode=True)),
    ((1, 1, 6, 5), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ((2, 4, 5), dict(kernel_size=2, stride=1)),  # unbatched
]


@pytest.mark.parametrize("shape,kw", MAX2D)
def test_max_pool2d(shape, kw):
    check_op(lambda T, x: F(T).max_pool2d(x, **kw), _arr(shape, 1))
    check_op(lambda T, x: F(T).max_pool2d(x, **kw, return_indices=True), _arr(shape, 2))
    check_op(lambda T, x: F(T).max_pool2d_with_indices(x, **kw), _arr(shape, 3))


@pytest.mark.parametrize(
    "shape,kw",
    [
        ((1, 2, 7), dict(kernel_size=3)),
        ((2, 1, 7), dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)),
        ((2, 6), dict(kernel_size=2, stride=1)),
    ],
)
def test_max_pool1d(shape, kw):
    check_op(lambda T, x: F(T).max_pool1d(x, **kw, return_indices=True), _arr(shape, 4))
    check_op(lambda T, x: F(T).max_pool1d_with_indices(x, **kw), _arr(shape, 5))


@needs_torch
def test_max_pool_ties_nan_and_inf_as_torch():
    x = np.array([[[1.0, 3.0, 3.0, 0.0, np.nan, 2.0, np.nan, -1.0]]])
    # (finite differences cannot cross the ties: parity of values, indices and gradients only)
    run_parity(lambda T, x: F(T).max_pool1d(x, 3, 1, 1, return_indices=True), x)
    y = np.full((1, 1, 3), -np.inf)
    out, idx = F(tinyattn).max_pool1d(tinyattn.tensor(y), 2, padding=1, return_indices=True)
    assert idx.tolist() == [[[0, 1]]]
    ties = np.ones((1, 1, 4, 4))
    xt = tinyattn.tensor(ties, requires_grad=True)
    F(tinyattn).max_pool2d(xt, 3, 1).sum().backward()
    xr = torch.tensor(ties, requires_grad=True)
    torch.nn.functional.max_pool2d(xr, 3, 1).sum().backward()
    np.testing.assert_array_equal(xt.grad.numpy(), xr.grad.numpy())


AVG2D = [
    ((1, 2, 5, 4), dict(kernel_size=2)),
    ((1, 1, 5, 5), dict(kernel_size=3, stride=2, padding=1)),
    ((1, 1, 5, 5), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ((1, 1, 5, 6), dict(kernel_size=(2, 3), stride=2, padding=1, ceil_mode=True)),
    (
        (1, 1, 5, 6),
        dict(kernel_size=(2, 3), stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    ),
    ((1, 1, 4, 5), dict(kernel_size=2, stride=1, divisor_override=3)),
    ((2, 4, 5), dict(kernel_size=2, stride=1, padding=1)),  # unbatched
]


@pytest.mark.parametrize("shape,kw", AVG2D)
def test_avg_pool2d(shape, kw):
    check_op(lambda T, x: F(T).avg_pool2d(x, **kw), _arr(shape, 6))


@pytest.mark.parametrize("cip", [True, False])
@pytest.mark.parametrize("ceil", [True, False])
def test_avg_pool1d(cip, ceil):
    kw = dict(kernel_size=3, stride=2, padding=1, ceil_mode=ceil, count_include_pad=cip)
    check_op(lambda T, x: F(T).avg_pool1d(x, **kw), _arr((2, 1, 6), 7))
    check_op(lambda T, x: F(T).avg_pool1d(x, **kw), _arr((2, 5), 8))


@pytest.mark.parametrize(
    "shape,size", [((1, 2, 5, 7), 3), ((1, 1, 5, 4), (None, 3)), ((2, 4, 3), (5, 2))]
)
def test_adaptive_pool2d(shape, size):
    check_op(lambda T, x: F(T).adaptive_avg_pool2d(x, size), _arr(shape, 9))
    check_op(lambda T, x: F(T).adaptive_max_pool2d(x, size, return_indices=True), _arr(shape, 10))
    check_op(lambda T, x: F(T).adaptive_max_pool2d(x, size), _arr(shape, 11))


@pytest.mark.parametrize(
    "shape,size",
    [((2, 3, 4, 6), 1), ((2, 3, 4, 6), (2, 3)), ((3, 4, 6), (None, 2)), ((2, 3, 1, 1), 1)],
)
def test_adaptive_avg_pool2d_equal_windows(shape, size):
    """The reshape-and-mean path (every window the same size, e.g. global pooling)."""
    check_op(lambda T, x: F(T).adaptive_avg_pool2d(x, size), _arr(shape, 14))
    check_op(lambda T, x: F(T).adaptive_avg_pool1d(x, 2), _arr(shape[:-1], 15))


@pytest.mark.parametrize("shape,size", [((1, 2, 7), 3), ((2, 5), 4), ((1, 1, 3), 5)])
def test_adaptive_pool1d(shape, size):
    check_op(lambda T, x: F(T).adaptive_avg_pool1d(x, size), _arr(shape, 12))
    check_op(lambda T, x: F(T).adaptive_max_pool1d(x, size, return_indices=True), _arr(shape, 13))


@pytest.mark.parametrize("p", [2, 3.0])
def test_lp_pool(p):
    x = _arr((1, 2, 4, 5), 14) + 1.5  # positive: x^p and its root are smooth
    check_op(lambda T, x: F(T).lp_pool2d(x, p, 2), x)
    check_op(lambda T, x: F(T).lp_pool2d(x, p, (2, 3), stride=1, ceil_mode=True), x)
    check_op(lambda T, x: F(T).lp_pool1d(x[0], p, 2), x)


def test_lp_pool_inf_is_max_of_abs():
    """norm_type=inf: torch pools max |x| (gradient sign(x) at the arg max); ours gave 1.0
    everywhere (x^inf averaged, then the 0-th power)."""
    x = _arr((1, 2, 4, 5), 17)  # both signs
    check_op(lambda T, x: F(T).lp_pool2d(x, float("inf"), 2), x)
    check_op(lambda T, x: F(T).lp_pool1d(x[0], float("inf"), 2, ceil_mode=True), x)


@pytest.mark.parametrize(
    "shape,kw,n",
    [
        ((1, 2, 4, 6), dict(kernel_size=2), 2),
        ((1, 1, 5, 5), dict(kernel_size=2, stride=2, padding=1), 2),
        ((2, 1, 7), dict(kernel_size=2, stride=2), 1),
        ((2, 7), dict(kernel_size=2, stride=2, padding=1), 1),
    ],
)
def test_max_unpool(shape, kw, n):
    # (non-overlapping windows: a repeated index would make the scatter's result ambiguous)
    pool = f"max_pool{n}d"
    unpool = f"max_unpool{n}d"

    def f(T, x):
        y, idx = getattr(F(T), pool)(x, **kw, return_indices=True)
        size = x.shape[-n:] if kw.get("padding") else None  # (padded: the default is too small)
        return getattr(F(T), unpool)(y * 2, idx, **kw, output_size=size)

    check_op(f, _arr(shape, 15))

    def g(T, x):  # output_size with batch and channel
        y, idx = getattr(F(T), pool)(x, **kw, return_indices=True)
        return getattr(F(T), unpool)(y, idx, **kw, output_size=tuple(x.shape))

    if len(shape) == n + 2:
        check_op(g, _arr(shape, 16))


# -- modules ---------------------------------------------------------------------------------

MODULES = [
    ("MaxPool1d", (3,), {}, (2, 3, 8)),
    ("MaxPool1d", (3, 2, 1), dict(dilation=2, ceil_mode=True, return_indices=True), (2, 7)),
    ("MaxPool2d", (3, 2, 1), dict(ceil_mode=True), (2, 2, 6, 7)),
    ("MaxPool2d", ((2, 3),), dict(return_indices=True), (2, 5, 6)),
    ("AvgPool1d", (3,), {}, (2, 3, 8)),
    ("AvgPool1d", (3, 2, 1, True, False), {}, (2, 3, 8)),
    ("AvgPool2d", (3,), {}, (2, 2, 6, 7)),
    ("AvgPool2d", (3, 2, 1, True, False, 2), {}, (2, 2, 6, 7)),
    ("AdaptiveAvgPool1d", (3,), {}, (2, 3, 8)),
    ("AdaptiveAvgPool2d", ((None, 3),), {}, (2, 2, 6, 7)),
    ("AdaptiveMaxPool1d", (3, True), {}, (2, 3, 8)),
    ("AdaptiveMaxPool2d", (2,), {}, (2, 2, 6, 7)),
    ("LPPool1d", (2, 3), {}, (2, 3, 8)),
    ("LPPool2d", (2, 3), dict(stride=2, ceil_mode=True), (2, 2, 6, 7)),
]


@needs_torch
@pytest.mark.parametrize("name,args,kw,shape", MODULES)
def test_pooling_modules_parity_and_repr(name, args, kw, shape):
    ours, theirs = getattr(tinyattn.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    x = _arr(shape, 17) + (1.5 if name.startswith("LP") else 0)
    for dtype in (np.float64, np.float32):
        module_parity(theirs, ours, x, dtype=dtype)


@needs_torch
@pytest.mark.parametrize("n", [1, 2])
def test_max_unpool_modules(n):
    shape = (2, 3, 8) if n == 1 else (2, 2, 4, 6)
    pool_o, pool_t = (
        getattr(L.nn, f"MaxPool{n}d")(2, return_indices=True) for L in (tinyattn, torch)
    )
    unpool_o, unpool_t = (getattr(L.nn, f"MaxUnpool{n}d")(2) for L in (tinyattn, torch))
    assert repr(unpool_o) == repr(unpool_t)
    x = _arr(shape, 18)
    y, idx = pool_o(tinyattn.tensor(x))
    yt, idxt = pool_t(torch.tensor(x))
    np.testing.assert_array_equal(idx.numpy(), idxt.numpy())
    out = unpool_o(y, idx, output_size=list(x.shape))
    np.testing.assert_array_equal(
        out.numpy(), unpool_t(yt, idxt, output_size=list(x.shape)).numpy()
    )


def test_pool_names_exported():
    for name in ("max_pool2d", "avg_pool1d", "adaptive_avg_pool2d", "lp_pool2d", "max_unpool2d"):
        assert name in tinyattn.nn.functional.__all__
        assert callable(getattr(tinyattn.nn.functional, name))


# -- bad input -------------------------------------------------------------------------------


def _t(L, *shape):
    return L.ones(*shape)


BAD = [
    ("max-rank", lambda L: F(L).max_pool2d(_t(L, 4, 4), 2), r"3D.*4D.*\[4, 4\]"),
    ("max-1d-rank", lambda L: F(L).max_pool1d(_t(L, 1, 1, 4, 4), 2), r"2D.*3D.*\[1, 1, 4, 4\]"),
    ("max-pad-too-big", lambda L: F(L).max_pool2d(_t(L, 1, 1, 5, 5), 2, padding=2), r"padding.*half.*kernel_size"),
    ("max-kernel-too-big", lambda L: F(L).max_pool2d(_t(L, 1, 1, 2, 2), 3), r"kernel_size.*\(3, 3\).*too small"),
    ("max-stride-zero", lambda L: F(L).max_pool2d(_t(L, 1, 1, 4, 4), 2, 0), r"stride.*>= 1"),
    ("avg-kernel-too-big", lambda L: F(L).avg_pool1d(_t(L, 1, 1, 2), 3), r"output size.*too small"),
    ("avg-pad-too-big", lambda L: F(L).avg_pool2d(_t(L, 1, 1, 4, 4), 3, padding=2), r"padding.*half"),
    ("avg-divisor-zero", lambda L: F(L).avg_pool2d(_t(L, 1, 1, 4, 4), 2, divisor_override=0), r"divisor_override"),
    ("adaptive-rank", lambda L: F(L).adaptive_avg_pool2d(_t(L, 4), 2), r"3D.*4D.*\[4\]"),
    ("adaptive-size-len", lambda L: F(L).adaptive_avg_pool2d(_t(L, 1, 4, 4), (1, 2, 3)), r"output_size.*2 ints"),
    ("adaptive-max-rank", lambda L: F(L).adaptive_max_pool1d(_t(L, 1, 1, 4, 4), 2), r"2D.*3D"),
    ("unpool-index-range", lambda L: F(L).max_unpool1d(_t(L, 1, 1, 2), L.tensor([[[0, 9]]]), 2), r"invalid max index 9"),
    ("unpool-index-shape", lambda L: F(L).max_unpool1d(_t(L, 1, 1, 2), L.tensor([[[0]]]), 2), r"indices.*\[1, 1, 2\].*\[1, 1, 1\]"),
]  # fmt: skip


@pytest.mark.parametrize("call,expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)


@pytest.mark.skipif(torch is None, reason="torch not installed")
@pytest.mark.parametrize("shape", [(1, 1, 1, 4), (2, 3, 1, 5)])
def test_max_pool_window_wholly_in_padding(shape):
    """Dilation can put every tap of a window in the padding (H=1, kernel 2, dilation 2,
    padding 1): torch gives -inf and its first tap's index (past the end); ours raised an
    IndexError in gather. The window gets no gradient. (torch's own backward writes that
    out-of-range index, so only its forward is compared.)"""
    x = _arr(shape, 16)
    kw = dict(kernel_size=2, stride=1, padding=1, dilation=2, return_indices=True)
    y, i = tinyattn.nn.functional.max_pool2d(tinyattn.tensor(x, requires_grad=True), **kw)
    yt, it = torch.nn.functional.max_pool2d(torch.tensor(x), **kw)
    np.testing.assert_array_equal(y.detach().numpy(), yt.numpy())
    np.testing.assert_array_equal(i.numpy(), it.numpy())
    assert np.isneginf(y.detach().numpy()).any()
    xs = tinyattn.tensor(x, requires_grad=True)
    y = tinyattn.nn.functional.max_pool2d(xs, **{**kw, "return_indices": False})
    y.masked_fill(y.isinf(), 0.0).sum().backward()
    finite = np.isfinite(y.detach().numpy())
    assert xs.grad.numpy().sum() == finite.sum()  # one unit per finite window, none else
