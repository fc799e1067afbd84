"""ops/index/writes.py: put / put_ and index_reduce / index_reduce_ (gradchecks, torch parity of
values and gradients, plain assertions, bad input)."""

import warnings

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, rand, run_gradcheck, run_parity

import tinyattn

warnings.filterwarnings("ignore", message="index_reduce\\(\\) is in beta")


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_gradcheck_and_parity(accumulate):
    # without accumulate, distinct positions only (which write wins at a repeat is unspecified)
    index = np.array([0, 3, 1, 0, -1]) if accumulate else np.array([0, 3, 1, -1, 4])
    check_op(
        lambda T, x, s: T.put(x, T.tensor(index), s, accumulate=accumulate), rand(2, 3), rand(5)
    )
    check_op(lambda T, x, s: x.put(T.tensor(index.reshape(5, 1)), s, accumulate), rand(6), rand(5))
    check_op(lambda T, x, s: (x * 1).put_(T.tensor(index), s, accumulate), rand(2, 3), rand(5))


def test_put_values_without_torch():
    x = tinyattn.arange(6.0).reshape(2, 3)
    out = tinyattn.put(x, tinyattn.tensor([0, -1, 0]), tinyattn.tensor([10.0, 20.0, 30.0]), True)
    assert out.tolist() == [[40.0, 1.0, 2.0], [3.0, 4.0, 25.0]]
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    y = tinyattn.zeros(2, 2, dtype=tinyattn.int64)
    assert y.put_(tinyattn.tensor([3]), tinyattn.tensor([7])) is y and y.tolist() == [
        [0, 0],
        [0, 7],
    ]


SOURCES = {0: ([0, 2, 0, 1], (4, 3)), 1: ([1, 1, 0, 2, 1], (3, 5))}


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_reduce_gradcheck_and_parity(reduce, include_self, dim):
    index, shape = SOURCES[dim % 2]

    def f(T, x, s):
        return T.index_reduce(x, dim, T.tensor(index), s, reduce, include_self=include_self)

    def f_(T, x, s):
        return (x * 1).index_reduce_(dim, T.tensor(index), s, reduce, include_self=include_self)

    check_op(f, rand(3, 3), rand(*shape))
    check_op(f_, rand(3, 3), rand(*shape))


@pytest.mark.parametrize("reduce", ["amax", "amin", "prod"])
def test_index_reduce_ties_and_zeros_match_torch(reduce):
    x = np.array([[1.0, 0.0], [2.0, 2.0], [0.5, -1.0]])
    s = np.array([[2.0, 0.0], [2.0, 2.0], [1.0, 0.0]])

    def f(T, x, s):
        return T.index_reduce(x, 0, T.tensor([1, 1, 0]), s, reduce)

    # first order only: at a tie amax/amin are not differentiable (torch's convention, g
    # shared evenly, is compared), and scatter_reduce's prod is exact at zeros to first order
    run_parity(f, x, s)
    if reduce == "prod":
        run_gradcheck(f, x, s)


def test_index_reduce_values_without_torch():
    src = tinyattn.tensor([[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
    idx = tinyattn.tensor([0, 2, 0])
    out = tinyattn.index_reduce(tinyattn.ones(3, 2), 0, idx, src, "prod")
    assert out.tolist() == [[12.0, 21.0], [1.0, 1.0], [4.0, 5.0]]
    out = tinyattn.index_reduce(tinyattn.ones(3, 2), 0, idx, src, "mean", include_self=False)
    assert out.tolist() == [[4.0, 5.0], [1.0, 1.0], [4.0, 5.0]]
    ints = tinyattn.tensor([-1, 2, 3])
    out = tinyattn.index_reduce(ints, 0, tinyattn.tensor([0, 0]), tinyattn.tensor([-5, -1]), "mean")
    assert out.tolist() == [-3, 2, 3]  # floor division, as torch
    scalar = tinyattn.index_reduce(
        tinyattn.tensor(2.0), 0, tinyattn.tensor([0]), tinyattn.tensor(3.0), "prod"
    )
    assert scalar.shape == () and scalar.item() == 6.0


@pytest.mark.parametrize(
    "call, expected",
    [
        (
            lambda L: L.put(L.zeros(2, 3), L.tensor([6]), L.tensor([1.0])),
            r"index 6 .*out of range.*6 elements",
        ),
        (
            lambda L: L.put(L.zeros(2, 3), L.tensor([-7]), L.tensor([1.0])),
            r"index -7 .*out of range",
        ),
        (
            lambda L: L.put(L.zeros(2, 3), L.tensor([0, 1]), L.tensor([1.0])),
            r"source.numel\(\) = 1, index.numel\(\) = 2",
        ),
        (
            lambda L: L.put(L.zeros(2, 3), L.tensor([0.0]), L.tensor([1.0])),
            r"long tensor for index.*float32",
        ),
        (
            lambda L: L.put(L.zeros(2, 3), L.tensor([0]), L.tensor([1])),
            r"same dtype.*float32.*int64",
        ),
        (
            lambda L: L.index_reduce(L.ones(3, 2), 0, L.tensor([0, 2]), L.ones(3, 2), "sum"),
            r"reduce to be one of prod, mean, amax or amin but got 'sum'",
        ),
        (
            lambda L: L.index_reduce(L.ones(3, 2), 0, L.tensor([0, 3, 0]), L.ones(3, 2), "amax"),
            r"index 3 is out of range for dim 0 of size 3",
        ),
        (
            lambda L: L.index_reduce(L.ones(3, 2), 0, L.tensor([0, -1, 0]), L.ones(3, 2), "amax"),
            r"index -1 is out of range",
        ),
        (
            lambda L: L.index_reduce(L.ones(3, 2), 0, L.tensor([0, 1]), L.ones(3, 2), "amax"),
            r"Number of indices \(2\).*source.size\(dim\)",
        ),
        (
            lambda L: L.index_reduce(L.ones(3, 2), 0, L.tensor([0, 1]), L.ones(2, 3), "amax"),
            r"source of shape \[2, 3\] must match self of shape \[3, 2\]",
        ),
        (
            lambda L: L.index_reduce(
                L.ones(3, 2), 0, L.tensor([0]), L.ones(1, 2, dtype=L.float64), "prod"
            ),
            r"index_reduce.*float32.*float64",
        ),
        (
            lambda L: L.index_reduce(L.ones(3, 2), 2, L.tensor([0]), L.ones(1, 2), "prod"),
            r"index_reduce.*[Dd]im",
        ),
    ],
)
def test_index_writes_bad_input(call, expected):
    check_bad_call(call, expected)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda L, x: x.put_(L.tensor([0]), L.tensor([5.0])), "put_"),
        (lambda L, x: x.index_reduce_(0, L.tensor([0]), L.tensor([5.0]), "amax"), "index_reduce_"),
        (lambda L, x: x.addmv_(L.ones(2, 2), L.ones(2)), "addmv_"),
        (lambda L, x: x.unsqueeze(0).addr_(L.ones(1), L.ones(2)), "addr_"),
        (lambda L, x: x.unsqueeze(0).renorm_(2, 0, 1.0), "renorm_"),
    ],
)
def test_inplace_on_a_leaf_that_requires_grad_is_refused(call, name):
    check_bad_call(
        lambda L: call(L, L.ones(2, requires_grad=True)), rf"^{name}: a (view of a )?leaf Variable"
    )
