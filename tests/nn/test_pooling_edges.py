"""Pooling at its edges: lp_pool's norms (±inf, 1, odd p on negative input, 0, bool) and
max_unpool with duplicate indices, each against torch (parity skips without it)."""

import math

import numpy as np
import pytest
from harness import check_op, run_parity, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def _arr(shape, seed=0):
    # distinct values of both signs, |x| distinct too: no ties finite differences would cross
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    mags = (rng.permutation(n) + 1) / n + rng.uniform(0, 0.2 / n, n)
    return (mags * rng.choice([-1.0, 1.0], n)).reshape(shape)


def F(lib):
    return lib.nn.functional


LP = [  # (n, shape, kwargs)
    (1, (2, 3, 7), dict(kernel_size=2)),
    (1, (3, 7), dict(kernel_size=3, stride=2, ceil_mode=True)),  # unbatched
    (2, (1, 2, 5, 4), dict(kernel_size=2)),
    (2, (1, 2, 5, 5), dict(kernel_size=(2, 3), stride=1, ceil_mode=True)),
    (3, (1, 2, 4, 3, 4), dict(kernel_size=2)),
]


@pytest.mark.parametrize("n,shape,kw", LP)
@pytest.mark.parametrize("p", [math.inf, -math.inf])
def test_lp_pool_infinite_norms(n, shape, kw, p):
    """p = -inf is the min of |x| over each window (torch's special case); lp_pool1d and
    lp_pool2d gave 1.0 everywhere (x^-inf averaged, then the -0th power) and a NaN
    gradient."""
    check_op(lambda T, x: getattr(F(T), f"lp_pool{n}d")(x, p, **kw), _arr(shape, n))


@pytest.mark.parametrize("n,shape,kw", LP)
@pytest.mark.parametrize("p", [1, 1.0, True])
def test_lp_pool_norm_one_is_sum_pooling(n, shape, kw, p):
    """p = 1 (and True, which torch takes as 1: lp_pool3d refused it) on negative input:
    the window sums, gradient 1 per window element."""
    check_op(lambda T, x: getattr(F(T), f"lp_pool{n}d")(x, p, **kw), _arr(shape, 10 + n))


@needs_torch
@pytest.mark.parametrize("n,shape,kw", LP)
@pytest.mark.parametrize("p", [3, 3.0, -1, 2.5])
def test_lp_pool_negative_input_matches_torch(n, shape, kw, p):
    """Odd, negative and fractional p on input of both signs: a window whose power sum is
    negative (odd p) gives torch's NaN root, x^2.5 of a negative x a NaN; values and
    gradients, NaNs included, as torch's."""
    run_parity(lambda T, x: getattr(F(T), f"lp_pool{n}d")(x, p, **kw), _arr(shape, 20 + n))


def test_lp_pool_odd_norm_gradcheck_where_smooth():
    x = np.abs(_arr((1, 2, 6, 4), 30)) + 0.1  # positive: every window sum is too
    check_op(lambda T, x: F(T).lp_pool2d(x, 3, 2), x)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("p", [0, 0.0])
def test_lp_pool_zero_norm_raises_torchs_error(n, p):
    """torch fails on 1.0 / norm_type: ZeroDivisionError (ours: also a ValueError)."""
    x = tinyattn.ones(*(1, 1) + (4,) * n)
    with pytest.raises(ZeroDivisionError, match=f"lp_pool{n}d: norm_type must be a non-zero"):
        getattr(F(tinyattn), f"lp_pool{n}d")(x, p, 2)
    with pytest.raises(ValueError, match="norm_type"):
        getattr(F(tinyattn), f"lp_pool{n}d")(x, p, 2)
    if torch is not None:
        with pytest.raises(ZeroDivisionError):
            getattr(F(torch), f"lp_pool{n}d")(torch.ones(*(1, 1) + (4,) * n), p, 2)


def test_lp_pool_norm_type_not_a_number():
    with pytest.raises(TypeError, match="lp_pool2d: norm_type must be a number, got str"):
        F(tinyattn).lp_pool2d(tinyattn.ones(1, 1, 4, 4), "2", 2)


# -- max_unpool with duplicate indices ----------------------------------------------------------


def _duplicates(n, seed):
    """(x, indices, g, output size): indices into 3^n positions with repeats in every plane."""
    rng = np.random.default_rng(seed)
    spatial, out = (2,) * n, (3,) * n
    x = _arr((2, 3) + spatial, seed)
    idx = rng.integers(0, 3**n, size=(2, 3) + spatial)
    flat = idx.reshape(6, -1)
    flat[:, 1] = flat[:, 0]  # each plane: its first two inputs share an index
    flat[:3, -1] = flat[:3, 0]  # and in half the planes a third one does too
    g = rng.standard_normal((2, 3) + out)
    return x, idx, g, out


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("unbatched", [False, True])
def test_max_unpool_duplicate_indices_gradient_is_torchs_gather(n, unbatched):
    """The gradient of unpooling is a gather at the indices: every input reads g at its
    index, also the inputs whose value a later duplicate overwrote (torch's formula)."""
    x0, idx0, g0, out = _duplicates(n, n)
    if unbatched:
        x0, idx0, g0 = x0[0], idx0[0], g0[0]
    x = tinyattn.tensor(x0, requires_grad=True)
    unpool = getattr(F(tinyattn), f"max_unpool{n}d")
    y = unpool(x, tinyattn.tensor(idx0), 2, stride=1, output_size=out)
    y.backward(tinyattn.tensor(g0))
    flat_g = g0.reshape(-1, 3**n)
    flat_i = idx0.reshape(flat_g.shape[0], -1)
    expected = np.take_along_axis(flat_g, flat_i, axis=1).reshape(x0.shape)
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    # the forward: at a repeated index the value latest in row-major order, zeros elsewhere
    want = np.zeros_like(flat_g)
    for p, row in enumerate(flat_i):
        for i, at in enumerate(row):
            want[p, at] = x0.reshape(flat_g.shape[0], -1)[p, i]
    np.testing.assert_array_equal(y.detach().numpy(), want.reshape(y.shape))
    if torch is not None:
        xt = torch.tensor(x0, requires_grad=True)
        unpool_t = getattr(F(torch), f"max_unpool{n}d")
        yt = unpool_t(xt, torch.tensor(idx0), 2, stride=1, output_size=out)
        yt.backward(torch.tensor(g0))
        np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
        # torch's CPU forward keeps one of the duplicates' values, which one unspecified
        written = yt.detach().numpy().reshape(flat_g.shape)
        for p, row in enumerate(flat_i):
            for at in set(row.tolist()):
                assert written[p, at] in x0.reshape(flat_g.shape[0], -1)[p, row == at]


@needs_torch
@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_duplicate_indices_double_backward(n):
    """Second order: d(dx)/dg is the scatter-add of the gather, duplicates adding up."""
    x0, idx0, g0, out = _duplicates(n, 40 + n)
    grads = []
    for lib in (tinyattn, torch):
        x = lib.tensor(x0, requires_grad=True)
        g = lib.tensor(g0, requires_grad=True)
        y = getattr(F(lib), f"max_unpool{n}d")(x, lib.tensor(idx0), 2, stride=1, output_size=out)
        (dx,) = lib.autograd.grad(y, x, g, create_graph=True)
        w = lib.tensor(np.linspace(-1, 1, dx.numel()).reshape(tuple(dx.shape)))
        (dg,) = lib.autograd.grad((dx * w).sum(), g)
        grads.append(dg.detach().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_distinct_indices_gradcheck(n):
    """Without duplicates the gather is the forward's derivative: finite differences agree."""
    rng = np.random.default_rng(50 + n)
    x0 = _arr((2, 3) + (2,) * n, 50 + n)
    idx0 = np.stack([rng.permutation(3**n)[: 2**n] for _ in range(6)]).reshape(x0.shape)
    kw = dict(kernel_size=2, stride=1, output_size=(3,) * n)
    check_op(
        lambda T, x, i: getattr(F(T), f"max_unpool{n}d")(x, i, **kw),
        x0,
        idx0,
        grad=[True, False],
    )
