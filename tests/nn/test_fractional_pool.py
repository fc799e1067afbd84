"""Fractional max pooling (2-D, 3-D, functional and modules): gradchecks and torch parity
with the same ``_random_samples``, exact indices (float32 window starts included), NaN and
ties, ``output_ratio``, unbatched input, drawn samples, and bad input."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, torch

import tinyattn
from tests.nn._module_parity import module_parity

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def _arr(shape, seed=0):
    # distinct, spread-out values: no ties that finite differences would cross
    rng = np.random.default_rng(seed)
    n = max(int(np.prod(shape)), 1)
    values = rng.permutation(n) / n * 2 - 1 + rng.uniform(0, 0.2 / n, n)
    return values[: int(np.prod(shape))].reshape(shape)


def _samples(batch, channels, dims, seed=1):
    return np.random.default_rng(seed).uniform(0, 1, (batch, channels, dims))


def F(lib):
    return lib.nn.functional


CASES_2D = [
    ((2, 3, 7, 6), dict(kernel_size=2, output_size=(4, 3))),
    ((1, 2, 9, 8), dict(kernel_size=(2, 3), output_size=(5, 4))),
    ((1, 2, 8, 8), dict(kernel_size=3, output_ratio=(0.5, 0.6))),
    ((2, 5, 6), dict(kernel_size=2, output_size=3)),  # unbatched
    ((1, 1, 5, 5), dict(kernel_size=1, output_size=(5, 5))),
    ((1, 1, 4, 4), dict(kernel_size=2, output_size=(1, 1))),
]


@pytest.mark.parametrize("shape,kw", CASES_2D)
def test_fractional_max_pool2d(shape, kw):
    batch = shape[0] if len(shape) == 4 else 1
    s = _samples(batch, shape[-3], 2)
    grad = [True, False]
    check_op(
        lambda T, x, u: F(T).fractional_max_pool2d(x, **kw, _random_samples=u),
        _arr(shape),
        s,
        grad=grad,
    )
    check_op(
        lambda T, x, u: F(T).fractional_max_pool2d_with_indices(x, **kw, _random_samples=u),
        _arr(shape, 2),
        s,
        grad=grad,
    )


CASES_3D = [
    ((1, 2, 6, 5, 7), dict(kernel_size=2, output_size=(3, 2, 4))),
    ((2, 1, 5, 6, 6), dict(kernel_size=(1, 2, 3), output_ratio=(0.5, 0.5, 0.5))),
    ((2, 5, 4, 6), dict(kernel_size=2, output_size=2)),  # unbatched
]


@pytest.mark.parametrize("shape,kw", CASES_3D)
def test_fractional_max_pool3d(shape, kw):
    batch = shape[0] if len(shape) == 5 else 1
    s = _samples(batch, shape[-4], 3)
    check_op(
        lambda T, x, u: F(T).fractional_max_pool3d(x, **kw, return_indices=True, _random_samples=u),
        _arr(shape),
        s,
        grad=[True, False],
    )


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [2, 3])
def test_indices_match_torch_on_many_planes(dtype, n):
    """Many random samples: the window starts (computed in the input's dtype) must agree."""
    rng = np.random.default_rng(n)
    shape = (3, 40, 31, 29) if n == 2 else (2, 20, 13, 17, 11)
    out = (9, 13) if n == 2 else (5, 7, 4)
    x = rng.standard_normal(shape).astype(dtype)
    s = rng.uniform(0, 1, (shape[0], shape[1], n)).astype(dtype)
    results = []
    for lib in (tinyattn, torch):
        pool = getattr(F(lib), f"fractional_max_pool{n}d")
        y, idx = pool(lib.tensor(x), 3, out, return_indices=True, _random_samples=lib.tensor(s))
        results.append((y.numpy(), idx.numpy()))
    np.testing.assert_array_equal(results[0][1], results[1][1])
    np.testing.assert_array_equal(results[0][0], results[1][0])


@needs_torch
def test_nan_and_ties_follow_torch():
    x = np.array([[[[1, 1, np.nan, 2], [np.nan, 3, 3, 0], [5, 5, 5, 5], [-np.inf, -np.inf, 0, 0]]]])
    s = np.array([[[0.3, 0.7]]])
    outs = [
        F(lib).fractional_max_pool2d(
            lib.tensor(x), 2, output_size=2, return_indices=True, _random_samples=lib.tensor(s)
        )
        for lib in (tinyattn, torch)
    ]
    np.testing.assert_array_equal(outs[0][1].numpy(), outs[1][1].numpy())
    np.testing.assert_array_equal(outs[0][0].numpy(), outs[1][0].numpy())


def test_drawn_samples_give_valid_windows():
    tinyattn.manual_seed(0)
    x = tinyattn.tensor(_arr((2, 3, 10, 9)))
    y, idx = F(tinyattn).fractional_max_pool2d(x, 2, output_size=(4, 4), return_indices=True)
    assert tuple(y.shape) == (2, 3, 4, 4)
    flat = x.numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(
        np.take_along_axis(flat, idx.numpy().reshape(2, 3, -1), 2), y.numpy().reshape(2, 3, -1)
    )
    again = F(tinyattn).fractional_max_pool2d(x, 2, output_size=(4, 4))
    assert tuple(again.shape) == (2, 3, 4, 4)


def test_indices_feed_max_unpool():
    x = tinyattn.tensor(_arr((1, 2, 6, 6)))
    y, idx = F(tinyattn).fractional_max_pool2d(
        x, 2, output_size=3, return_indices=True, _random_samples=tinyattn.tensor(_samples(1, 2, 2))
    )
    back = F(tinyattn).max_unpool2d(y, idx, 2, output_size=(6, 6))
    kept = back.numpy() != 0
    np.testing.assert_array_equal(back.numpy()[kept], x.numpy()[kept])


@needs_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_modules_match_torch(dtype):
    s2 = _samples(2, 3, 2).astype(dtype)
    for kw in (dict(output_size=(3, 2)), dict(output_ratio=0.5)):
        m_t = torch.nn.FractionalMaxPool2d(2, **kw, _random_samples=torch.tensor(s2))
        m_o = tinyattn.nn.FractionalMaxPool2d(2, **kw, _random_samples=tinyattn.tensor(s2))
        module_parity(m_t, m_o, _arr((2, 3, 6, 5)), dtype=dtype)
    s3 = _samples(1, 2, 3).astype(dtype)
    m_t = torch.nn.FractionalMaxPool3d(
        2, output_size=2, return_indices=True, _random_samples=torch.tensor(s3)
    )
    m_o = tinyattn.nn.FractionalMaxPool3d(
        2, output_size=2, return_indices=True, _random_samples=tinyattn.tensor(s3)
    )
    module_parity(m_t, m_o, _arr((1, 2, 5, 4, 4)), dtype=dtype)


def test_module_registers_samples_as_buffer_and_repr():
    s = tinyattn.rand(1, 1, 2)
    m = tinyattn.nn.FractionalMaxPool2d(3, output_size=2, _random_samples=s)
    assert list(m.state_dict()) == ["_random_samples"]
    assert repr(m) == "FractionalMaxPool2d()"
    assert list(tinyattn.nn.FractionalMaxPool3d(2, output_ratio=0.5).state_dict()) == []
    assert tinyattn.nn.FractionalMaxPool3d(2, output_ratio=0.5).output_ratio == (0.5, 0.5, 0.5)


MODULE_ERRORS = [
    (
        "neither",
        lambda lib: lib.nn.FractionalMaxPool2d(2),
        "either an output size, or a pooling ratio",
    ),
    (
        "both",
        lambda lib: lib.nn.FractionalMaxPool2d(2, 2, 0.5),
        "only one of output_size and output_ratio",
    ),
    ("ratio_1", lambda lib: lib.nn.FractionalMaxPool2d(2, output_ratio=1), "between 0 and 1"),
    ("kernel_0_3d", lambda lib: lib.nn.FractionalMaxPool3d(0, output_size=2), "greater than 0"),
]


@pytest.mark.parametrize("name,call,expected", MODULE_ERRORS, ids=[c[0] for c in MODULE_ERRORS])
def test_module_bad_arguments(name, call, expected):
    check_bad_call(call, expected)


def _x(lib, shape=(2, 3, 7, 6), dtype=None):
    return lib.tensor(_arr(shape)) if dtype is None else lib.tensor(_arr(shape)).to(dtype)


def _u(lib, shape, dtype="float64"):
    return lib.tensor(_samples(*shape)).to(getattr(lib, dtype))


BAD = [
    (
        "pool_too_large_h",
        lambda lib: F(lib).fractional_max_pool2d(_x(lib), 3, output_size=(6, 4)),
        "pool height 3 too large relative to input height 7",
    ),
    (
        "pool_too_large_w",
        lambda lib: F(lib).fractional_max_pool2d(_x(lib), 3, output_size=(5, 5)),
        "pool width 3 too large relative to input width 6",
    ),
    (
        "pool_too_large_t",
        lambda lib: F(lib).fractional_max_pool3d(
            _x(lib, (1, 1, 5, 6, 7)), 2, output_size=(5, 2, 4)
        ),
        "pool time 2 too large relative to input time 5",
    ),
    (
        "samples_batch",
        lambda lib: F(lib).fractional_max_pool2d(
            _x(lib), 2, output_size=3, _random_samples=_u(lib, (1, 3, 2))
        ),
        r"size\(0\) no less then input batch size",
    ),
    (
        "samples_channels",
        lambda lib: F(lib).fractional_max_pool2d(
            _x(lib), 2, output_size=3, _random_samples=_u(lib, (2, 2, 2))
        ),
        r"size\(1\) equals to input channel size",
    ),
    (
        "samples_dims",
        lambda lib: F(lib).fractional_max_pool2d(
            _x(lib), 2, output_size=3, _random_samples=_u(lib, (2, 3, 3))
        ),
        r"size\(2\) equals to 2; got 3",
    ),
    (
        "samples_dtype",
        lambda lib: F(lib).fractional_max_pool2d(
            _x(lib), 2, output_size=3, _random_samples=_u(lib, (2, 3, 2), "float32")
        ),
        "same dtype as input",
    ),
    (
        "samples_ndim",
        lambda lib: F(lib).fractional_max_pool2d(
            _x(lib), 2, output_size=3, _random_samples=lib.rand(2, 3, dtype=lib.float64)
        ),
        "3 dimensions, got 2",
    ),
    (
        "no_size",
        lambda lib: F(lib).fractional_max_pool2d(_x(lib), 2),
        "either an output_size or an output_ratio",
    ),
    (
        "size_len",
        lambda lib: F(lib).fractional_max_pool2d(_x(lib), 2, output_size=(2, 3, 4)),
        "single Int or tuple of Ints",
    ),
    (
        "ratio_scalar",
        lambda lib: F(lib).fractional_max_pool2d(_x(lib), 2, output_ratio=0.5),
        "float",
    ),
    (
        "ndim",
        lambda lib: F(lib).fractional_max_pool2d(_x(lib, (6, 7)), 2, output_size=2),
        "3D or 4D|out of range",
    ),
    (
        "int_input",
        lambda lib: F(lib).fractional_max_pool2d(_x(lib).long(), 2, output_size=2),
        "floating point",
    ),
    (
        "empty_channels",
        lambda lib: F(lib).fractional_max_pool2d(_x(lib, (2, 0, 5, 5)), 2, output_size=2),
        "non-zero size for non-batch dimensions",
    ),
]


@pytest.mark.parametrize("name,call,expected", BAD, ids=[c[0] for c in BAD])
def test_bad_input(name, call, expected):
    check_bad_call(call, expected)


@pytest.mark.parametrize("value", [1.0, -0.25])
def test_samples_outside_unit_interval_are_refused(value):
    # torch reads outside the input for these; tinyattn refuses them
    u = tinyattn.full((1, 1, 2), value, dtype=tinyattn.float64)
    with pytest.raises(RuntimeError, match=r"_random_samples must lie in \[0, 1\)"):
        F(tinyattn).fractional_max_pool2d(
            _x(tinyattn, (1, 1, 6, 6)), 2, output_size=3, _random_samples=u
        )


def test_kernel_must_be_positive():
    with pytest.raises(RuntimeError, match="kernel_size must be positive"):
        F(tinyattn).fractional_max_pool2d(_x(tinyattn), 0, output_size=2)


def test_empty_batch_and_zero_output():
    y = F(tinyattn).fractional_max_pool2d(_x(tinyattn, (0, 2, 5, 5)), 2, output_size=2)
    assert tuple(y.shape) == (0, 2, 2, 2)
    y = F(tinyattn).fractional_max_pool2d(_x(tinyattn), 2, output_size=0)
    assert tuple(y.shape) == (2, 3, 0, 0)
