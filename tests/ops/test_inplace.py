"""In-place ops under autograd: writes through views (CopySlices), version counters, errors."""

import numpy as np
import pytest
from harness import check_op, rand, torch

import tinyattn

needs_torch = pytest.mark.skipif(
    torch is None, reason="compares with torch directly; torch is not installed"
)


def test_setitem_through_view_updates_base_grad():
    def f(T, x, w):
        y = x * 1
        row = y[0]
        row[1:] = w
        return y

    check_op(f, rand(2, 4, seed=1), rand(3, seed=2))


def test_mul_through_flat_view():
    def f(T, x):
        y = x.clone()
        v = y.view(-1)
        v.mul_(2)
        return y * y

    check_op(f, rand(2, 3, seed=3))


def test_iadd_on_transposed_and_strided_views():
    def f(T, x, w):
        y = x * 1
        v = y.t()[::2]  # rows 0, 2 of the transpose: non-contiguous
        v += w
        return y.exp()

    check_op(f, rand(2, 3, seed=4), rand(2, seed=5))


def test_inplace_on_view_of_view_and_stale_sibling_views():
    def f(T, x):
        y = x * 1
        a, b = y[0], y[:, 1]  # overlapping views, made before the writes
        a[1:].mul_(3)  # a view of a view
        y.add_(1)
        return a * 2, b.exp(), y

    check_op(f, rand(3, 3, seed=6))


def test_scalar_view_write():
    def f(T, x):
        y = x * 1
        y[1, 2].add_(y[0, 0])
        return y * y

    check_op(f, rand(2, 3, seed=7))


def test_indexed_rows_written_in_place():
    def f(T, x):
        y = x * 1
        for i in range(len(y)):
            y[i].mul_(i + 1)
        return y

    check_op(f, rand(3, 2, seed=8))


@needs_torch
def test_multi_output_views_refuse_inplace_like_torch():
    for lib in (tinyattn, torch):
        y = lib.ones(3, 2, requires_grad=True) * 1
        for views in (y.unbind(0), y.split(1), y.chunk(3), list(y)):
            with pytest.raises(RuntimeError, match="function that returns multiple views"):
                views[0].mul_(2)
        with lib.no_grad():
            y.unbind(0)[0].mul_(2)  # allowed outside autograd
        lib.zeros(3).unbind()[0].add_(1)  # and when nothing requires grad


def test_reshape_view_masked_assignment():
    """d2l: ``X = X.reshape(-1, n); X[~mask] = -1e6`` on a computed tensor."""

    def f(T, x):
        y = x * 2  # (x.exp() would fail: exp saved its output, which the write changes)
        flat = y.reshape(-1, 3)
        mask = T.arange(3)[None, :] < T.tensor([1, 2, 3, 2])[:, None]
        flat[~mask] = -1e6
        return T.softmax(y, dim=-1)

    check_op(f, rand(2, 2, 3, seed=9))


def test_masked_fill_inplace_with_tensor_value_through_view():
    def f(T, x, v):
        y = x * 1
        y[:, 1:].masked_fill_(T.tensor([True, False]), v)
        return y

    check_op(f, rand(2, 3, seed=10), rand(seed=11))


def test_inplace_chain_on_nonleaf():
    def f(T, x, w):
        y = x * 1
        y.mul_(w).add_(1).div_(2)
        y[0].sub_(w)
        return y

    check_op(f, rand(2, 3, seed=12), rand(3, seed=13))


def test_nonlinear_write_through_views_is_twice_differentiable():
    """CopySlices / AsStrided under create_graph: the op's saved input (a strided view of
    the base) connects the double backward to the base's earlier value."""

    def f(T, x, w):
        y = x * x
        y.t()[1:].mul_(w)  # CopySlices around the product, through a transposed view
        v = y[:, 1]  # a view made before the next write: re-derived as AsStrided
        y[0].mul_(y[1] * 1)
        return (y * v.unsqueeze(1)).exp()

    check_op(f, rand(2, 3, seed=20), rand(2, seed=21))


def test_views_share_version_counter():
    x = tinyattn.zeros(3, 4)
    views = [x[0], x.view(12), x.t(), x[:, ::2], x.unsqueeze(0), x.reshape(2, 6), x.narrow(1, 1, 2)]
    views += list(x.unbind(1)) + list(x.split(2, 1))
    start = x._version.value
    views[-1].add_(1)
    for v in views:
        assert v._version.value == start + 1
        assert v._base is x
    assert x.detach()._version is x._version


@needs_torch
def test_modified_saved_tensor_raises_naming_op():
    for lib in (tinyattn, torch):
        a = lib.ones(3, requires_grad=True)
        y = a * 2
        z = y.exp()  # saves its output
        w = y * y  # saves y
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            w.sum().backward()
    a = tinyattn.ones(3, requires_grad=True)
    y = a * 2
    w = y[1:] * y[1:]
    y[0] = 5.0  # a write through the shared counter, to another region: torch raises too
    with pytest.raises(RuntimeError, match=r"MulBackward0 saved its input"):
        w.sum().backward()
    del z


def test_modifying_output_saved_by_op_raises():
    a = tinyattn.ones(3, requires_grad=True)
    e = a.exp()
    e.mul_(2)
    with pytest.raises(RuntimeError, match=r"ExpBackward0 saved its output.*version 0"):
        e.sum().backward()


def test_inplace_on_leaf_requiring_grad_raises():
    x = tinyattn.zeros(2, 3, requires_grad=True)
    for op in (
        lambda: x.add_(1),
        lambda: x[0].mul_(2),
        lambda: x.masked_fill_(tinyattn.ones(2, 3).bool(), 0.0),
        lambda: x.scatter_(1, tinyattn.tensor([[0], [1]]), 1.0),
        lambda: x.index_fill_(0, tinyattn.tensor([0]), 0.0),
        lambda: x.view(-1).zero_(),
    ):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            op()
    assert x._version.value == 0
    with tinyattn.no_grad():
        x.add_(1)
        x[0].mul_(2)
    np.testing.assert_array_equal(x.numpy(force=True), [[2, 2, 2], [1, 1, 1]])


def test_inplace_on_expanded_view_raises():
    base = tinyattn.zeros(1, 3)
    e = base.expand(2, 3)
    with pytest.raises(RuntimeError, match="read-only|more than one element"):
        e.add_(1)
    y = tinyattn.zeros(1, 3, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="read-only|more than one element"):
        y.expand(2, 3).mul_(2)
    np.testing.assert_array_equal(base.numpy(), np.zeros((1, 3)))


def test_inplace_result_dtype_errors():
    x = tinyattn.zeros(3, dtype=tinyattn.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.add_(tinyattn.tensor(0.5))


def test_grad_fn_names_after_inplace():
    y = tinyattn.ones(2, 2, requires_grad=True) * 1
    v = y[0]
    v.mul_(2)
    assert y.grad_fn.name() == "CopySlices"
    y.add_(1)
    assert v.grad_fn.name() == "AsStridedBackward0"  # re-derived from the new base
    y.sum().backward()


def test_optimizer_style_update_then_view_backward():
    p = tinyattn.ones(2, 3, requires_grad=True)
    row = p[1]
    with tinyattn.no_grad():
        p.sub_(0.5)  # a parameter update; the old view is stale but still a view of p
    (row * 3).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), [[0, 0, 0], [3, 3, 3]])


# -- found by tests/core/test_differential.py ----------------------------------------------


def test_inplace_on_an_empty_view_of_a_leaf_raises():
    """An empty slice is still a view: torch refuses to write through it into a grad leaf."""
    x = tinyattn.ones(1, 1, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x[..., 1:].mul_(2.0)


@needs_torch
@pytest.mark.parametrize("code", ["y.mul_(y)", "y[0].mul_(y[1])", "y.div_(y)"])
def test_inplace_with_an_operand_sharing_storage_fails_backward(code):
    """The saved operand is at an old version after the write: backward raises, as in torch."""
    for lib in (torch, tinyattn):
        x = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
        y = x * 1
        exec(code)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


@pytest.mark.parametrize("code", ["y.add_(y)", "y[0].add_(y[1])", "y.mul_(2.0)"])
def test_inplace_with_an_operand_sharing_storage_that_is_not_saved(code):
    def f(T, x):
        y = x * 1
        exec(code)
        return y

    check_op(f, rand(2, seed=5))


@needs_torch
def test_div_saves_its_inputs_not_its_output():
    """Writing into ``a / b`` (or into b of ``2 / b``) is fine in torch; Div saved its output."""

    def f(T, x, w):
        q = x / w
        q.add_(1.0)  # q was saved: backward raised
        y = w * 1
        r = 2.5 / y
        y.mul_(3.0)  # torch's 2.5 / y saves only 1 / y
        return q * r

    check_op(f, rand(3, seed=6), rand(3, seed=7) + 2.0)

    for lib in (torch, tinyattn):  # x / y needs y (and x for dy): those writes still fail
        x = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
        y = x * 1
        q = 2.0 * x / y
        y.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            q.sum().backward()


@needs_torch
@pytest.mark.parametrize(
    "code, raises",
    [
        ("y.add_(y.mT)", True),
        ("y.add_(y[0])", True),
        ("y.mul_(y[0, 0])", True),
        ("y.add_(y)", False),
        ("y[0].add_(y[1])", False),
        ("y[:, :1].add_(y[:, 1:2])", False),
    ],
)
def test_partially_overlapping_operand(code, raises):
    """As torch: an operand that partly overlaps the written tensor is refused."""
    for lib in (torch, tinyattn):
        ns = {"y": lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, requires_grad=True) * 1}
        if raises:
            with pytest.raises(RuntimeError, match="refer to a single memory location"):
                exec(code, ns)
        else:
            exec(code, ns)


def test_inplace_on_an_empty_view():
    """An empty view of a non-leaf (even an expanded one) takes an in-place op, as in torch."""

    def f(T, x):
        y = x * 1
        y[0].mul_(2.0)
        return y

    check_op(f, rand(1, 2, 0, seed=11))
    tinyattn.zeros(1, 0).expand(3, 0).add_(1.0)  # read-only memory, but nothing to write
