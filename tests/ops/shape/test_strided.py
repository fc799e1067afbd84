"""ops/shape/strided.py: as_strided (gradcheck and torch parity including overlapping views,
memory sharing, in-place writes through the view, refusals)."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, rand

import tinyattn

CASES = [
    ((2, 2), (1, 2), None),
    ((3,), (2,), 1),
    ((3, 3), (1, 1), None),  # overlapping: an element seen by several indices
    ((2, 3), (0, 1), 2),  # stride 0 repeats
    ((4,), (1,), 0),
    ((0, 3), (1, 1), None),
]


@pytest.mark.parametrize("size, stride, offset", CASES)
def test_as_strided_gradcheck_and_parity(size, stride, offset):
    extra = () if offset is None else (offset,)
    check_op(lambda T, x: T.as_strided(x, size, stride, *extra), rand(6))
    check_op(lambda T, x: (x * 2).as_strided(size, stride, *extra) * 3, rand(2, 3))


def test_as_strided_shares_memory_and_counts_storage_from_the_base():
    x = tinyattn.arange(6.0)
    v = tinyattn.as_strided(x, (2, 2), (1, 2))
    x[0] = 100.0
    assert v.tolist() == [[100.0, 2.0], [1.0, 3.0]]
    b = tinyattn.arange(10.0)
    s = b[2:8]
    assert tinyattn.as_strided(s, (2,), (1,)).tolist() == [2.0, 3.0]  # starts where s starts
    assert tinyattn.as_strided(s, (2,), (1,), 0).tolist() == [0.0, 1.0]  # the storage's start
    with pytest.raises(RuntimeError, match="read-only"):
        tinyattn.as_strided(x, (3, 3), (1, 1)).add_(1)


def test_as_strided_inplace_write_and_view_of_a_leaf():
    def run(T):
        x = T.tensor(np.arange(6.0), requires_grad=True)
        y = x * 1
        T.as_strided(y, (2, 2), (1, 2)).mul_(T.tensor([[2.0, 3.0], [4.0, 5.0]]))
        (y * T.arange(6.0)).sum().backward()
        return y.tolist(), x.grad.tolist()

    assert run(tinyattn) == ([0.0, 4.0, 6.0, 15.0, 4.0, 5.0], [0.0, 4.0, 6.0, 15.0, 4.0, 5.0])
    x = tinyattn.tensor(np.arange(6.0), requires_grad=True)
    tinyattn.as_strided(x[1:5], (3,), (1,)).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    check_op(lambda T, x: T.as_strided(x[1:5], (2, 2), (1, 1)), rand(6))


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda L: L.as_strided(L.ones(6), (3,), (3,), 1), r"storage of 8 elements.*has 6"),
        (lambda L: L.as_strided(L.ones(6), (3,), (-1,), 4), r"Negative strides.*\[-1\]"),
        (lambda L: L.as_strided(L.ones(6), (3, 2), (1,)), r"length of strides and shape"),
    ],
)
def test_as_strided_bad_input(call, expected):
    check_bad_call(call, expected)


def test_as_strided_refuses_what_it_cannot_route():
    x = tinyattn.tensor(np.arange(6.0), requires_grad=True)
    with pytest.raises(RuntimeError, match="outside this input.*requires grad"):
        tinyattn.as_strided(x[1:5], (2,), (1,), 0)
    with pytest.raises(RuntimeError, match="storage_offset must be >= 0"):
        tinyattn.as_strided(tinyattn.ones(3), (1,), (1,), -1)
    strided = tinyattn.from_numpy(np.arange(12.0).reshape(3, 4)[:, ::2])
    with pytest.raises(RuntimeError, match="not one contiguous block.*contiguous\\(\\)"):
        tinyattn.as_strided(strided, (2,), (1,))
