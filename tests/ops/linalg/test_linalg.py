"""Matrix products: gradcheck + torch parity for Matmul (matmul, mm, bmm, dot, outer), errors."""

import numpy as np
import pytest
from harness import check_op, rand, torch
from hypothesis import given
from hypothesis import strategies as st

import tinyattn

needs_torch = pytest.mark.skipif(
    torch is None, reason="compares with torch directly; torch is not installed"
)


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((3,), (3,)),
        ((3,), (3, 2)),
        ((2, 3), (3,)),
        ((2, 3), (3, 4)),
        ((2, 2, 3), (3, 2)),
        ((3,), (2, 3, 2)),
        ((2, 1, 2, 3), (3,)),
        ((2, 1, 2, 3), (3, 3, 2)),
        ((1, 2, 3), (2, 3, 1)),
        ((0, 3), (3, 2)),
        ((2, 0), (0, 3)),
    ],
)
def test_matmul_shapes(a_shape, b_shape):
    check_op(lambda T, a, b: a @ b, rand(*a_shape, seed=1), rand(*b_shape, seed=2))


@given(
    batch_a=st.lists(st.sampled_from([1, 2]), max_size=2),
    batch_b=st.lists(st.sampled_from([1, 2]), max_size=2),
    n=st.integers(1, 2),
    k=st.integers(0, 2),
    m=st.integers(1, 2),
    transpose_a=st.booleans(),
    transpose_b=st.booleans(),
)
def test_matmul_hypothesis(batch_a, batch_b, n, k, m, transpose_a, transpose_b):
    a_shape = (*batch_a, k, n) if transpose_a else (*batch_a, n, k)
    b_shape = (*batch_b, m, k) if transpose_b else (*batch_b, k, m)

    def f(T, a, b):
        a = a.transpose(-2, -1) if transpose_a else a  # non-contiguous operands
        b = b.transpose(-2, -1) if transpose_b else b
        return T.matmul(a, b)

    check_op(f, rand(*a_shape, seed=3), rand(*b_shape, seed=4))


@pytest.mark.parametrize(
    "fn, shapes",
    [
        (lambda T, a, b: T.mm(a, b), [(2, 3), (3, 2)]),
        (lambda T, a, b: a.mm(b.t()), [(2, 3), (2, 3)]),
        (lambda T, a, b: T.bmm(a, b), [(2, 2, 3), (2, 3, 1)]),
        (lambda T, a, b: a.bmm(b.mT), [(2, 2, 3), (2, 1, 3)]),
        (lambda T, a, b: T.dot(a, b), [(4,), (4,)]),
        (lambda T, a, b: a.dot(b[::2]), [(2,), (4,)]),
        (lambda T, a, b: T.inner(a, b), [(3,), (3,)]),
        (lambda T, a, b: T.outer(a, b), [(3,), (2,)]),
        (lambda T, a, b: a.outer(b), [(3,), (2,)]),
        (lambda T, a, b: a.matmul(b), [(2, 3), (3,)]),
        (lambda T, a, b: a @ a.transpose(-2, -1) @ b, [(2, 2, 3), (2, 1)]),
    ],
)
def test_named_products(fn, shapes):
    check_op(fn, *[rand(*s, seed=10 + i) for i, s in enumerate(shapes)])


@needs_torch
def test_matmul_integer_and_float32():
    a, b = np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2)
    ours = tinyattn.tensor(a) @ tinyattn.tensor(b)
    theirs = torch.tensor(a) @ torch.tensor(b)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.dtype == tinyattn.int64
    x = tinyattn.ones(2, 3) @ tinyattn.ones(3)
    assert x.dtype == tinyattn.float32


def test_matmul_errors_name_op_and_shapes():
    a, b = tinyattn.zeros(2, 3), tinyattn.zeros(4, 5)
    with pytest.raises(RuntimeError, match=r"matmul: inner dimensions.*\[2, 3\].*\[4, 5\]"):
        a @ b
    with pytest.raises(RuntimeError, match=r"matmul: inner dimensions"):
        tinyattn.zeros(3) @ tinyattn.zeros(4)
    with pytest.raises(RuntimeError, match=r"batch dimensions \[2\] and \[3\]"):
        tinyattn.zeros(2, 2, 3) @ tinyattn.zeros(3, 3, 2)
    with pytest.raises(RuntimeError, match="at least 1D"):
        tinyattn.tensor(1.0) @ a
    with pytest.raises(RuntimeError, match="same dtype"):
        a @ tinyattn.zeros(3, 2, dtype=tinyattn.float64)
    with pytest.raises(RuntimeError, match=r"mm: mat2 must be a matrix"):
        tinyattn.mm(a, tinyattn.zeros(3))
    with pytest.raises(RuntimeError, match=r"bmm: input must be a 3D tensor"):
        tinyattn.bmm(a, a)
    with pytest.raises(RuntimeError, match=r"bmm: batch sizes differ"):
        tinyattn.bmm(tinyattn.zeros(2, 2, 3), tinyattn.zeros(3, 3, 2))
    with pytest.raises(RuntimeError, match=r"dot: 1D tensors expected"):
        tinyattn.dot(a, a)
    with pytest.raises(RuntimeError, match=r"outer: 1D tensors expected"):
        tinyattn.outer(a, a)
    with pytest.raises(TypeError, match="must be a Tensor"):
        tinyattn.matmul(a, np.zeros((3, 2)))


def test_matmul_saved_operand_modified_raises():
    a = tinyattn.ones(2, 3, requires_grad=True)
    b = tinyattn.ones(3, 2) * 1
    c = a @ b
    b.mul_(2)
    with pytest.raises(RuntimeError, match=r"MatmulBackward0 saved its input"):
        c.sum().backward()
