"""Indexing ops: gradcheck + torch parity for ``ops/index/indexing.py``, tutorial patterns, errors."""

import numpy as np
import pytest
from harness import check_op, rand, torch
from hypothesis import given
from hypothesis import strategies as st

import tinyattn

needs_torch = pytest.mark.skipif(
    torch is None, reason="compares with torch directly; torch is not installed"
)


def _index(T, arr):
    return T.tensor(np.asarray(arr))


# -- Index (x[...]) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x: x[1],
        lambda T, x: x[-1, 1],
        lambda T, x: x[0, 1, 1],
        lambda T, x: x[:, 1:],
        lambda T, x: x[::2, ::2],
        lambda T, x: x[1:, :, ::3],
        lambda T, x: x[..., 0],
        lambda T, x: x[None, ..., None, 1],
        lambda T, x: x[:, None, 1:3],
        lambda T, x: x[[0, 0, 2]],  # repeated rows: scatter-add in backward
        lambda T, x: x[_index(T, [[1, 1], [0, 2]])],
        lambda T, x: x[:, _index(T, [1, 0, 1])],
        lambda T, x: x[_index(T, [0, 2]), :, _index(T, [1, 1])],
        lambda T, x: x[_index(T, [0, 2]), None, _index(T, [1, 1])],
        lambda T, x: x[..., _index(T, [2, 2, 2])],
        lambda T, x: x[_index(T, [True, False, True])],
        lambda T, x: x[x > 0],
        lambda T, x: x[:, x[0] > 0],
        lambda T, x: x[_index(T, 1)],
        lambda T, x: x[1:1],  # empty
        lambda T, x: T.masked_select(x, x < 0),
        lambda T, x: x.masked_select(_index(T, [True, False, True, True])),
        lambda T, x: x.index_select(2, _index(T, [3, 0, 3])),
        lambda T, x: T.index_select(x, 0, _index(T, [2])),
    ],
)
def test_getitem(fn):
    check_op(fn, rand(3, 2, 4, seed=1))


@given(
    rows=st.lists(st.integers(-3, 2), min_size=0, max_size=4),
    step=st.integers(1, 3),
    start=st.integers(-4, 4),
    transpose=st.booleans(),
)
def test_getitem_hypothesis(rows, step, start, transpose):
    x = rand(3, 4, seed=2)

    def f(T, x):
        if transpose:
            x = x.t().contiguous().t()  # non-contiguous input
        picked = x[start::step]
        return picked, x[_index(T, np.array(rows, dtype=np.int64))]

    check_op(f, x)


def test_basic_index_is_a_view_and_int_index_writes_through():
    x = tinyattn.zeros(2, 3)
    x[0, 1].add_(5)
    x[1][2] = 7
    x[:, 0] += 1
    np.testing.assert_array_equal(x.numpy(), [[1, 5, 0], [1, 0, 7]])
    assert x[0]._base is x and x[x > 0]._base is None


def test_getitem_errors():
    x = tinyattn.zeros(3, 4)
    with pytest.raises(IndexError, match=r"index 3 is out of bounds.*tensor shape \[3, 4\]"):
        x[3]
    with pytest.raises(IndexError, match=r"index 9 is out of bounds"):
        x[tinyattn.tensor([0, 9])]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="must be long, int, byte or bool"):
        x[tinyattn.tensor([0.0])]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError):
        x[tinyattn.tensor([True, False])]
    with pytest.raises(IndexError, match="unsupported index"):
        x["a"]


@needs_torch
def test_nonzero_and_argwhere():
    data = np.array([[0, 1, 0], [2, 0, 3]])
    for as_tuple in (False, True):
        ours = tinyattn.nonzero(tinyattn.tensor(data), as_tuple=as_tuple)
        theirs = torch.nonzero(torch.tensor(data), as_tuple=as_tuple)
        for o, t in zip(ours if as_tuple else [ours], theirs if as_tuple else [theirs]):
            np.testing.assert_array_equal(o.numpy(), t.numpy())
            assert o.dtype == tinyattn.int64
    assert tinyattn.tensor([0.0, 0.0]).nonzero().shape == (0, 1)
    np.testing.assert_array_equal(
        tinyattn.argwhere(tinyattn.tensor(data)).numpy(), torch.argwhere(torch.tensor(data))
    )


# -- IndexPut (setitem) -----------------------------------------------------------------


def _setitem(index_fn, value_is_tensor=True):
    def f(T, x, *value):
        y = x * 1
        y[index_fn(T)] = value[0] if value_is_tensor else 2.5
        return y

    return f


@pytest.mark.parametrize(
    "index_fn, value_shape",
    [
        (lambda T: (0, slice(1, None)), (3,)),
        (lambda T: (slice(None), 1), (1,)),
        (lambda T: 1, (1, 4)),
        (lambda T: (Ellipsis, slice(0, 4, 2)), (1, 2)),
        (lambda T: _index(T, [2, 0]), (2, 4)),
        (lambda T: (slice(None), _index(T, [0, 3])), (1, 2)),
        (lambda T: _index(T, [[True, False, True, False]] * 3), ()),
        (lambda T: _index(T, [True, False, True]), (4,)),
    ],
)
def test_setitem_value_requires_grad(index_fn, value_shape):
    check_op(_setitem(index_fn), rand(3, 4, seed=3), rand(*value_shape, seed=4))
    check_op(_setitem(index_fn, value_is_tensor=False), rand(3, 4, seed=3))


def test_setitem_row_then_backward_matches_torch():
    def f(T, x, w):
        y = x * 1
        y[0, 1:] = w
        return y

    check_op(f, rand(2, 4, seed=5), rand(3, seed=6))


def test_setitem_complement_mask():
    x = rand(3, 4, seed=7)

    def f(T, x):
        mask = T.tensor(np.array([[True] * 2 + [False] * 2] * 3))
        y = x.clone()
        y[~mask] = -1e6
        return y

    check_op(f, x)


def test_sequence_mask_d2l():
    """d2l's sequence_mask writes through a reshaped view of the scores."""

    def sequence_mask(T, X, valid_len, value=0.0):
        maxlen = X.size(1)
        mask = T.arange(maxlen, dtype=T.float32)[None, :] < valid_len[:, None]
        X[~mask] = value
        return X

    def masked_softmax(T, X):
        shape = X.shape
        valid_lens = T.tensor([2, 3]).repeat_interleave(shape[1])
        X = sequence_mask(T, (X * 1).reshape(-1, shape[-1]), valid_lens, value=-1e6)
        return T.softmax(X.reshape(shape), dim=-1)

    check_op(masked_softmax, rand(2, 2, 4, seed=8))


def test_setitem_without_grad_writes_in_place():
    x = tinyattn.zeros(2, 3)
    data = x._data
    x[0] = tinyattn.tensor([1.0, 2.0, 3.0])
    x[1, x[0] > 1] = 9
    assert x._data is data and x._version.value == 2
    np.testing.assert_array_equal(x.numpy(), [[1, 2, 3], [0, 9, 9]])
    x[:, 0] = [5, 6]
    np.testing.assert_array_equal(x[:, 0].numpy(), [5, 6])


def test_setitem_errors():
    x = tinyattn.zeros(2, 3)
    with pytest.raises(ValueError, match=r"value of shape \[2\] cannot be broadcast.*\[3\]"):
        x[0] = tinyattn.zeros(2)
    with pytest.raises(IndexError, match="out of bounds"):
        x[5] = 1.0
    leaf = tinyattn.zeros(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf[0] = 1.0
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf[0][1] = 1.0
    with tinyattn.no_grad():
        leaf[0] = 1.0
    assert leaf[0, 0].item() == 1.0
    with pytest.raises(RuntimeError, match="read-only|more than one element"):
        tinyattn.zeros(3).expand(2, 3)[0, 0] = 1.0


def test_index_put_():
    def f(T, x, v):
        return (x * 1).index_put_((T.tensor([0, 2]), T.tensor([1, 1])), v)

    check_op(f, rand(3, 2, seed=9), rand(2, seed=10))


def test_index_put_accumulate_adds_at_repeated_indices():
    def f(T, x, v):
        rows, cols = T.tensor([0, 2, 0, 0]), T.tensor([1, 1, 1, 0])
        return (x * x).index_put_((rows, cols), v * v, accumulate=True)

    check_op(f, rand(3, 2, seed=9), rand(4, seed=10))
    x = tinyattn.zeros(2, 2)
    x.index_put_((tinyattn.tensor([1, 1]), tinyattn.tensor([0, 0])), tinyattn.ones(2), True)
    assert x.tolist() == [[0.0, 0.0], [2.0, 0.0]]


def test_index_backward_is_differentiable_again():
    """x[idx] with a repeated index: second derivatives flow through the scatter-add."""

    def f(T, x):
        return (x[T.tensor([0, 2, 0])] ** 3).sum(0)

    check_op(f, rand(3, 2, seed=11))


# -- MaskedFill -------------------------------------------------------------------------


@given(
    mask_shape=st.sampled_from([(3, 4), (4,), (1, 4), (3, 1), (1,), ()]),
    seed=st.integers(0, 100),
)
def test_masked_fill_broadcast_masks(mask_shape, seed):
    mask = np.random.default_rng(seed).random(mask_shape) > 0.5

    def f(T, x, v):
        m = T.tensor(mask)
        return x.masked_fill(m, v) + (x * 1).masked_fill_(m, 0.5)

    check_op(f, rand(3, 4, seed=11), rand(seed=12))


def test_causal_masked_fill_then_softmax():
    T_ = 3

    def f(T, scores):
        mask = T.triu(T.ones(5, 5), diagonal=1)
        mask_bool = mask.bool()[:T_, :T_]
        attn_scores = scores * 1
        attn_scores.masked_fill_(mask_bool, -T.inf)
        return T.softmax(attn_scores, dim=-1)

    check_op(f, rand(2, T_, T_, seed=13))


def test_masked_fill_unsqueezed_padding_mask():
    key_padding = np.array([[False, False, True], [False, True, True]])

    def f(T, scores):
        mask = T.tensor(key_padding).unsqueeze(1).unsqueeze(1)  # (b, 1, 1, k)
        return scores.masked_fill(mask, float("-inf")).softmax(-1)

    check_op(f, rand(2, 2, 3, 3, seed=14))


def test_masked_fill_errors():
    x = tinyattn.zeros(2, 3)
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_fill(tinyattn.ones(2, 3), 1.0)
    with pytest.raises(RuntimeError, match=r"mask of shape \[4\] is not broadcastable.*\[2, 3\]"):
        x.masked_fill(tinyattn.ones(4).bool(), 1.0)
    with pytest.raises(RuntimeError, match=r"doesn't match the broadcast shape \[2, 2, 3\]"):
        x.masked_fill_(tinyattn.ones(2, 2, 3).bool(), 1.0)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        x.masked_fill(tinyattn.ones(2, 3).bool(), tinyattn.ones(2))


# -- Gather / Scatter -------------------------------------------------------------------

GATHER_INDEX = np.array([[0, 0], [3, 1], [2, 2]])  # repeats: fine for gather / scatter_add
SCATTER_INDEX = np.array([[0, 1], [3, 1], [2, 0]])  # scatter: a repeat would make "last wins"


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x, s: x.gather(1, _index(T, GATHER_INDEX)),
        lambda T, x, s: T.gather(x, 0, _index(T, [[2, 0, 1, 1]])),
        lambda T, x, s: x.gather(-1, _index(T, [[1], [1], [0]])),
        lambda T, x, s: x.scatter(1, _index(T, SCATTER_INDEX), s),
        lambda T, x, s: T.scatter(x, 1, _index(T, GATHER_INDEX), 0.5),
        lambda T, x, s: (x * 1).scatter_(1, _index(T, SCATTER_INDEX), s),
        lambda T, x, s: (x * 1).scatter_(1, _index(T, GATHER_INDEX), value=-1.0),
        lambda T, x, s: x.scatter_add(1, _index(T, GATHER_INDEX), s),
        lambda T, x, s: T.scatter_add(x, 0, _index(T, [[2, 0], [2, 2]]), s[:2]),
        lambda T, x, s: (x * 1).scatter_add_(1, _index(T, GATHER_INDEX), s),
    ],
)
def test_gather_scatter(fn):
    check_op(fn, rand(3, 4, seed=15), rand(3, 2, seed=16))


@needs_torch
@pytest.mark.filterwarnings("ignore:The reduce argument")
def test_scatter_reduce_add_forward():
    # torch has no backward for scatter(reduce=...); compare values only
    x, s = rand(3, 4, seed=15), rand(3, 2, seed=16)
    ours = tinyattn.tensor(x).scatter(
        1, tinyattn.tensor(GATHER_INDEX), tinyattn.tensor(s), reduce="add"
    )
    theirs = torch.tensor(x).scatter(1, torch.tensor(GATHER_INDEX), torch.tensor(s), reduce="add")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


@needs_torch
def test_gather_scatter_index_smaller_than_src():
    def f(T, x, s):
        return x.scatter_add(1, T.tensor([[0], [3]]), s)  # src (2, 3), index (2, 1)

    check_op(f, rand(2, 4, seed=17), rand(2, 3, seed=18), parity_kw={"dtypes": ()})
    # torch's own backward rejects this shape combination; compare values and dx by hand
    x, s = tinyattn.tensor(rand(2, 4, seed=17)), tinyattn.tensor(rand(2, 3, seed=18))
    xt, st_ = torch.tensor(rand(2, 4, seed=17)), torch.tensor(rand(2, 3, seed=18))
    idx = [[0], [3]]
    np.testing.assert_allclose(
        x.scatter_add(1, tinyattn.tensor(idx), s).numpy(),
        xt.scatter_add(1, torch.tensor(idx), st_).numpy(),
    )


def test_label_smoothing_pattern():
    """The Annotated Transformer's LabelSmoothing: scatter_, index_fill_, masked fill by rows."""
    target = np.array([2, 0, 3, 1])

    def f(T, x):
        true_dist = x.detach().clone() * 0 + 0.1 / 3
        tgt = T.tensor(target)
        true_dist.scatter_(1, tgt.unsqueeze(1), 0.9)
        true_dist[:, 0] = 0
        mask = T.nonzero(tgt == 0)
        true_dist.index_fill_(0, mask.squeeze(), 0.0)
        return (true_dist * x).sum(-1)

    check_op(f, rand(4, 5, seed=19))


def test_gather_scatter_errors():
    x = tinyattn.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"same number of dimensions.*input \[3, 4\]"):
        x.gather(1, tinyattn.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"Size does not match at dimension 0"):
        x.gather(1, tinyattn.zeros(4, 1, dtype=tinyattn.int64))
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        x.gather(1, tinyattn.tensor([[4]]))
    with pytest.raises(IndexError, match="index -1 is out of bounds"):
        x.gather(1, tinyattn.tensor([[-1]]))
    with pytest.raises(RuntimeError, match="Expected dtype int64"):
        x.gather(1, tinyattn.tensor([[0.0]]))
    with pytest.raises(RuntimeError, match="to be smaller than src"):
        x.scatter(1, tinyattn.tensor([[0, 1, 2]]), tinyattn.zeros(1, 2))
    with pytest.raises(TypeError, match="src tensor or a value"):
        x.scatter(1, tinyattn.tensor([[0]]))


# -- IndexFill / IndexAdd ---------------------------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x, v, s: x.index_fill(1, _index(T, [0, 0, 2]), v),
        lambda T, x, v, s: x.index_fill(1, _index(T, [-1]), 2.0),
        lambda T, x, v, s: T.index_fill(x, 0, _index(T, 1), v),
        lambda T, x, v, s: (x * 1).index_fill_(0, _index(T, [2, 0]), -3.0),
        lambda T, x, v, s: (x * 1).index_fill_(1, _index(T, [3, 3]), v),
        lambda T, x, v, s: (x * 1).index_add_(0, _index(T, [0, 0]), s),
        lambda T, x, v, s: (x * 1).index_add_(0, _index(T, [2, 1]), s, alpha=-2.0),
    ],
)
def test_index_fill_add(fn):
    x = rand(3, 4, seed=20)
    check_op(fn, x, rand(seed=21), rand(2, 4, seed=22))


def test_index_add_source_shape():
    def f(T, x, s):
        return (x * 1).index_add_(1, T.tensor([3, 1, 3]), s)

    check_op(f, rand(2, 4, seed=23), rand(2, 3, seed=24))
    check_op(
        lambda T, x, s: x.index_add(1, T.tensor([0, 0, 2]), s, alpha=2.0),
        rand(2, 4, seed=25),
        rand(2, 3, seed=26),
    )


@pytest.mark.skipif(torch is None, reason="torch not installed (parity test)")
@pytest.mark.parametrize("alpha", [0.5, 1.5, -2.7, 3])
def test_index_add_integer_tensor_truncates_alpha_as_torch(alpha):
    idx, src = [0, 1, 2, 3], [-3, 3, -1, 5]
    ours = tinyattn.index_add(
        tinyattn.zeros(4, dtype=tinyattn.int64),
        0,
        tinyattn.tensor(idx),
        tinyattn.tensor(src),
        alpha=alpha,
    )
    want = torch.index_add(
        torch.zeros(4, dtype=torch.int64), 0, torch.tensor(idx), torch.tensor(src), alpha=alpha
    )
    np.testing.assert_array_equal(ours.numpy(), want.numpy())
    assert ours.dtype == tinyattn.int64


def test_index_select_fill_add_errors():
    x = tinyattn.zeros(3, 4)
    with pytest.raises(IndexError, match=r"index_select\(\): index out of range"):
        x.index_select(0, tinyattn.tensor([3]))
    with pytest.raises(IndexError, match=r"index_select\(\): index out of range"):
        x.index_select(0, tinyattn.tensor([-1]))
    with pytest.raises(IndexError, match="index should be 0- or 1-dimensional"):
        x.index_fill(0, tinyattn.tensor([[0]]), 1.0)
    with pytest.raises(IndexError, match="dimension out of range"):
        x.index_fill(2, tinyattn.tensor([0]), 1.0)
    with pytest.raises(IndexError, match=r"index_add_\(\): index out of range"):
        x.index_add_(0, tinyattn.tensor([-1]), tinyattn.ones(1, 4))


# -- found by tests/core/test_differential.py ----------------------------------------------


def test_masked_fill_broadcasts_input_to_a_wider_mask():
    """As torch: out-of-place masked_fill broadcasts input and mask; masked_fill_ can't grow."""

    def f(T, x):
        mask = T.tensor([[True, False, True], [False, False, True]])
        return x.masked_fill(mask, -1.0)

    check_op(f, rand(3, seed=4))
    with pytest.raises(RuntimeError, match=r"output with shape \[3\].*broadcast shape \[2, 3\]"):
        (tinyattn.ones(3, requires_grad=True) * 1).masked_fill_(tinyattn.ones(2, 3).bool(), 0.0)


def test_setitem_value_with_leading_size_one_dims():
    """torch drops leading 1s of the value (x[mask] = v of shape (1, n)); NumPy raised."""

    def f(T, x, v):
        y = x * 1
        y[y > 0] = v
        y[T.tensor([0])] = v[..., :1]
        return y

    x = np.array([[0.5, -0.3], [0.2, 0.9]])
    check_op(f, x, np.array([[0.7]]))


@pytest.mark.parametrize("index", ["0, :, t", "0, None, t", "0, ..., t", "t, :, 0", ":, 0, t"])
def test_ints_with_tensor_indices_select_first(index):
    """torch applies ints as select before tensor indices: x[0, :, t] of (3, 4, 5) is (4, 2);
    NumPy moved the advanced dims to the front, (2, 4)."""

    def get(T, x):
        return eval(f"x[{index}]", {"x": x, "t": T.tensor([2, 0])})

    def put(T, x, v):
        ns = {"y": x * 1, "t": T.tensor([2, 0]), "v": v}
        region = eval(f"y[{index}]", ns)
        ns["v"] = v[: region.numel()].reshape(region.shape)
        exec(f"y[{index}] = v", ns)
        return ns["y"]

    check_op(get, rand(3, 4, 5, seed=9))
    check_op(put, rand(3, 4, 5, seed=9), rand(40, seed=10))
