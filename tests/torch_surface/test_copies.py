"""torch's *_copy functions, as_strided_ / as_strided_scatter, empty_permuted and
nonzero_static: values, gradients (gradcheck + torch parity) and errors as torch's."""

import numpy as np
import pytest
from harness import check_op, rand, run_gradcheck, run_parity, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="compares with torch directly")

COPIES = [
    (lambda L, x: L.view_copy(x, (4, 6)), (2, 3, 4)),
    (lambda L, x: L.view_copy(x, (-1,)), (2, 3, 4)),
    (lambda L, x: L.permute_copy(x, (2, 0, 1)), (2, 3, 4)),
    (lambda L, x: L.expand_copy(x, (2, 3, 4)), (3, 1)),
    (lambda L, x: L.expand_copy(x, (5, 3, 2), implicit=True), (3, 1)),
    (lambda L, x: L.t_copy(x), (3, 2)),
    (lambda L, x: L.transpose_copy(x, 0, 2), (2, 3, 4)),
    (lambda L, x: L.unsqueeze_copy(x, -1), (2, 3)),
    (lambda L, x: L.squeeze_copy(x), (1, 3, 1)),
    (lambda L, x: L.squeeze_copy(x, 0), (1, 3, 1)),
    (lambda L, x: L.squeeze_copy(x, (0, 2)), (1, 3, 1)),
    (lambda L, x: L.select_copy(x, 1, -1), (2, 3, 4)),
    (lambda L, x: L.slice_copy(x, 1, 0, None, 2), (2, 5)),
    (lambda L, x: L.slice_copy(x, -1, -3), (2, 5)),
    (lambda L, x: L.slice_copy(x), (4, 2)),
    (lambda L, x: L.diagonal_copy(x, 1), (3, 4)),
    (lambda L, x: L.diagonal_copy(x, 0, 1, 2), (2, 3, 3)),
    (lambda L, x: L.alias_copy(x), (2, 3)),
    (lambda L, x: L.split_copy(x, 2, 1), (2, 5)),
    (lambda L, x: L.split_with_sizes_copy(x, [1, 3], 1), (2, 4)),
    (lambda L, x: L.unbind_copy(x, 1), (2, 3)),
    (lambda L, x: L.unfold_copy(x, 0, 2, 2), (7,)),
    (lambda L, x: L.as_strided_copy(x, (2, 2), (1, 2)), (6,)),
    (lambda L, x: L.as_strided_copy(x, (2, 2), (1, 2), 1), (6,)),
]


@pytest.mark.parametrize("i", range(len(COPIES)))
def test_copy_functions_match_torch_and_gradcheck(i):
    f, shape = COPIES[i]
    check_op(f, rand(*shape, seed=i))
    out = f(tinyattn, tinyattn.tensor(rand(*shape, seed=i)))
    for piece in out if isinstance(out, tuple) else (out,):
        assert piece.is_contiguous()  # as torch's *_copy results


def test_copies_do_not_share_memory():
    x = tinyattn.arange(6.0).reshape(2, 3)
    for out in (tinyattn.view_copy(x, (3, 2)), tinyattn.t_copy(x), tinyattn.alias_copy(x),
                tinyattn.select_copy(x, 0, 0), *tinyattn.split_copy(x, 1)):  # fmt: skip
        out.add_(100)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert tinyattn.permute_copy(x, (1, 0)).is_contiguous()


def test_detach_copy_is_a_copy_outside_the_graph():
    x = tinyattn.ones(2, requires_grad=True)
    y = tinyattn.detach_copy(x)
    assert not y.requires_grad and y.tolist() == [1.0, 1.0]
    y.add_(1)
    assert x.tolist() == [1.0, 1.0]


def test_as_strided_scatter():
    x, s = rand(2, 3, seed=1), rand(2, seed=2)
    f = lambda L, x, s: L.as_strided_scatter(x, s, (2,), (3,), 1)  # noqa: E731
    run_gradcheck(f, x, s)
    # torch 2.13's input gradient fails its own gradcheck: parity of values and d src only
    run_parity(f, x, s, grad=[False, True])
    out = tinyattn.as_strided_scatter(tinyattn.tensor(x), tinyattn.tensor(s), (2,), (3,), 1)
    expected = x.copy()
    expected[:, 1] = s
    np.testing.assert_array_equal(out.numpy(), expected)
    xt = tinyattn.tensor(x, requires_grad=True)
    xt.as_strided_scatter(tinyattn.tensor(s), (2,), (3,), 1).sum().backward()
    assert xt.grad.tolist() == [[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]]
    with pytest.raises(RuntimeError, match="src to have a size equal to the slice"):
        tinyattn.as_strided_scatter(tinyattn.tensor(x), tinyattn.ones(3), (2,), (3,), 1)


def test_as_strided_in_place():
    x = tinyattn.arange(6.0)
    assert x.as_strided_((2, 2), (1, 2)) is x
    assert x.tolist() == [[0.0, 2.0], [1.0, 3.0]] and x.stride() == (1, 2)
    w = tinyattn.arange(6.0, requires_grad=True)
    y = w * 1
    y.as_strided_((2, 2), (1, 2), 1)
    y.sum().backward()
    assert w.grad.tolist() == [0.0, 1.0, 1.0, 1.0, 1.0, 0.0]


@needs_torch
def test_empty_permuted_strides_match_torch():
    for size, layout in (((2, 3, 4), (2, 0, 1)), ((2, 3), (1, 0)), ((5,), (0,))):
        ours = tinyattn.empty_permuted(size, layout, dtype=tinyattn.float64)
        theirs = torch.empty_permuted(size, layout, dtype=torch.float64)
        assert ours.shape == theirs.shape and ours.stride() == theirs.stride()
        assert ours.dtype == tinyattn.float64
    assert tinyattn.empty_permuted((2, 3), (1, 0), requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="Duplicate dim not allowed"):
        tinyattn.empty_permuted((2, 3), (0, 0))
    with pytest.raises(RuntimeError, match="does not match the length"):
        tinyattn.empty_permuted((2, 3), (0,))


@needs_torch
@pytest.mark.parametrize(
    "values,size,fill",
    [([0, 1, 0, 2], 3, -1), ([[0, 1], [1, 1]], 2, -5), ([1, 1, 1], 2, -1), (3, 2, -1),
     ([0.0, 1.5], 1, 0), ([], 2, 7)],
)  # fmt: skip
def test_nonzero_static(values, size, fill):
    ours = tinyattn.nonzero_static(tinyattn.tensor(values), size=size, fill_value=fill)
    theirs = torch.nonzero_static(torch.tensor(values), size=size, fill_value=fill)
    assert ours.dtype == tinyattn.int64 and ours.tolist() == theirs.tolist()
    assert ours.shape == theirs.shape
    assert (
        tinyattn.tensor(values).nonzero_static(size=size, fill_value=fill).tolist() == ours.tolist()
    )


def test_bad_inputs():
    with pytest.raises(RuntimeError, match="non-negative integer"):
        tinyattn.nonzero_static(tinyattn.tensor([0, 1]), size=-1)
    with pytest.raises(TypeError, match="argument 'input' must be a Tensor"):
        tinyattn.view_copy([1, 2], (2,))
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        tinyattn.slice_copy(tinyattn.ones(3), 0, 0, 3, 0)


def _slice_inverse_rows(L, x):
    base = x * 1  # a tensor whose storage the view below shares
    return L.slice_inverse(base[1:3], base, 0, 1, 3)


def test_slice_inverse():
    base = tinyattn.arange(12.0).reshape(4, 3)
    out = tinyattn.slice_inverse(base[1:3], base, 0, 1, 3)
    assert out.tolist() == base.tolist()
    out[0, 0] = 100.0  # a view of the storage, as torch's
    assert base[0, 0].item() == 100.0
    cols = tinyattn.slice_inverse(base[:, ::2], base, 1, 0, None, 2)
    assert cols.shape == (4, 3) and cols.stride() == (3, 1) and tinyattn.equal(cols, base)
    assert base[2:].slice_inverse(base, 0, -2).tolist() == base.tolist()
    # with gradients: slice_scatter(src, input) (torch's derivative formulas)
    run_parity(_slice_inverse_rows, rand(4, 3, seed=5))
    x, s = rand(2, 3, seed=6), rand(4, 3, seed=7)
    # (independent tensors: torch would read outside x's storage, so no parity here)
    run_gradcheck(lambda L, x, s: x.slice_inverse(s, 0, 1, 3), x, s)
    xt, st = (tinyattn.tensor(a, requires_grad=True) for a in (x, s))
    tinyattn.slice_inverse(xt, st, 0, 1, 3).sum().backward()
    assert xt.grad.tolist() == [[1.0] * 3] * 2
    assert st.grad.tolist() == [[1.0] * 3, [0.0] * 3, [0.0] * 3, [1.0] * 3]
