"""Shape ops: gradcheck + torch parity for every Function in ``ops/shape/``, views, errors."""

import numpy as np
import pytest
from harness import check_op, rand, torch
from hypothesis import given
from hypothesis import strategies as st

import tinyattn

needs_torch = pytest.mark.skipif(
    torch is None, reason="compares with torch directly; torch is not installed"
)

small_shapes = st.lists(st.integers(0, 3), min_size=1, max_size=3).map(tuple)


def _noncontig(T, x, transpose):
    """``x`` itself, or a non-contiguous tensor with the same values (transpose of a copy)."""
    if not transpose or x.ndim < 2:
        return x
    return x.transpose(0, 1).contiguous().transpose(0, 1)


# -- Reshape ----------------------------------------------------------------------------


@given(shape=small_shapes, transpose=st.booleans())
def test_reshape_family_hypothesis(shape, transpose):
    x = rand(*shape, seed=1)

    def f(T, x):
        x = _noncontig(T, x, transpose)
        flat = x.reshape(-1)
        back = flat.reshape(shape)
        return back.flatten().unsqueeze(0).unsqueeze(-1).squeeze() * 1.0

    check_op(f, x)


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x: x.view(3, 4),
        lambda T, x: x.view(-1),
        lambda T, x: x.view(2, -1, 3),
        lambda T, x: x.view_as(T.zeros(6, 2, dtype=x.dtype)),
        lambda T, x: x.reshape_as(T.zeros(4, 3, dtype=x.dtype)),
        lambda T, x: x.flatten(1),
        lambda T, x: T.flatten(x, 0, 1),
        lambda T, x: x.unflatten(1, (2, -1)),
        lambda T, x: T.unflatten(x, 0, (1, 2)),
        lambda T, x: x.unsqueeze(1).unsqueeze(-1).squeeze(-1),
        lambda T, x: x.reshape(2, 1, 2, 1, 3).squeeze((1, 3)),
        lambda T, x: x.reshape(2, 1, 2, 3).squeeze(1),
        lambda T, x: x.reshape(2, 1, 2, 3).squeeze(0),  # not size 1: a no-op
        lambda T, x: x.transpose(1, 2).reshape(2, 6),  # non-contiguous: a copy
        lambda T, x: x.transpose(1, 2).contiguous().view(-1),
    ],
)
def test_reshape_views(fn):
    check_op(fn, rand(2, 2, 3, seed=2))


def test_view_shares_memory_and_version():
    x = tinyattn.zeros(2, 3)
    v = x.view(6)
    v[0] = 5.0
    assert x[0, 0].item() == 5.0
    assert v._version is x._version and x._version.value == 1
    assert x.reshape(3, 2)._base is x
    assert x.t().reshape(6)._base is None  # a copy


def test_view_on_noncontiguous_suggests_reshape():
    x = tinyattn.zeros(2, 3).t()
    with pytest.raises(RuntimeError, match=r"view size is not compatible.*reshape"):
        x.view(6)
    with pytest.raises(RuntimeError, match=r"view: shape '\[4\]' is invalid for input of size 6"):
        tinyattn.zeros(2, 3).view(4)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        tinyattn.zeros(2, 3).view(-1, -1)


def test_tutorial_head_split_and_merge():
    b, n, h, d = 2, 3, 2, 2
    x = rand(b, n, h * d, seed=3)

    def f(T, x):
        heads = x.view(b, n, h, d).transpose(1, 2)  # (b, h, n, d)
        scores = heads @ heads.transpose(-2, -1)
        return (scores @ heads).transpose(1, 2).contiguous().view(b, n, h * d)

    check_op(f, x)


# -- Permute ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x: x.permute(2, 0, 1),
        lambda T, x: x.permute((1, 2, 0)),
        lambda T, x: T.permute(x, (-1, 0, 1)),
        lambda T, x: x.transpose(0, -1),
        lambda T, x: T.swapaxes(x, 0, 1),
        lambda T, x: x.mT,
        lambda T, x: x[0].T,
        lambda T, x: x[0].t(),
        lambda T, x: T.t(x[0, 0]),
        lambda T, x: x.movedim(0, -1),
        lambda T, x: T.movedim(x, (0, 1), (2, 0)),
    ],
)
def test_permute_family(fn):
    check_op(fn, rand(2, 3, 2, seed=4))


def test_permute_errors():
    x = tinyattn.zeros(2, 3)
    with pytest.raises(RuntimeError, match="number of dims don't match"):
        x.permute(0)
    with pytest.raises(RuntimeError, match="duplicate dims"):
        x.permute(0, 0)
    with pytest.raises(IndexError, match=r"transpose\(\): dimension out of range"):
        x.transpose(0, 2)
    with pytest.raises(RuntimeError, match=r"t\(\) expects"):
        tinyattn.zeros(1, 2, 3).t()


# -- Expand / Repeat / RepeatInterleave -------------------------------------------------


@given(
    shape=st.lists(st.sampled_from([1, 2]), min_size=1, max_size=3).map(tuple),
    lead=st.integers(0, 2),
)
def test_expand_hypothesis(shape, lead):
    target = (2,) * lead + tuple(3 if s == 1 else s for s in shape)
    check_op(lambda T, x: x.expand(*target), rand(*shape, seed=5))


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x: x.expand(2, 3, 4),
        lambda T, x: x.expand(-1, 4),
        lambda T, x: x.expand_as(T.zeros(2, 3, 4, dtype=x.dtype)),
        lambda T, x: x.expand(3, 0),
        lambda T, x: x.repeat(2, 1),
        lambda T, x: x.repeat(2, 1, 3),
        lambda T, x: x.repeat(0, 2),
        lambda T, x: x.repeat_interleave(2, dim=0),
        lambda T, x: x.repeat_interleave(2),
        lambda T, x: x.repeat_interleave(0, dim=0),
        lambda T, x: x.repeat_interleave(T.tensor([1, 0, 3]), dim=0),
        lambda T, x: x.repeat_interleave(T.tensor([2]), dim=1),
        lambda T, x: T.repeat_interleave(x, T.tensor(2), dim=-1),
    ],
)
def test_expand_repeat(fn):
    check_op(fn, rand(3, 1, seed=6))


@needs_torch
def test_tutorial_repeat_patterns():
    a = tinyattn.arange(40).view(1, 10, 4).repeat(2, 1, 1)
    b = torch.arange(40).view(1, 10, 4).repeat(2, 1, 1)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.dtype == tinyattn.int64
    valid_len = [3, 1]
    a = tinyattn.tensor(valid_len).repeat_interleave(3)
    np.testing.assert_array_equal(a.numpy(), torch.tensor(valid_len).repeat_interleave(3).numpy())
    counts = [2, 0, 1]
    np.testing.assert_array_equal(
        tinyattn.repeat_interleave(tinyattn.tensor(counts)).numpy(),
        torch.repeat_interleave(torch.tensor(counts)).numpy(),
    )
    assert tinyattn.repeat_interleave(tinyattn.tensor(counts)).dtype == tinyattn.int64


def test_expand_repeat_errors():
    x = tinyattn.zeros(3, 1)
    with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(4\) must match"):
        x.expand(4, 2)
    with pytest.raises(RuntimeError, match="number of sizes provided"):
        x.expand(3)
    with pytest.raises(RuntimeError, match="number of repeat dims"):
        x.repeat(2)
    with pytest.raises(RuntimeError, match="repeats must have the same size"):
        x.repeat_interleave(tinyattn.tensor([1, 2]), dim=0)
    with pytest.raises(RuntimeError, match="can not be negative"):
        x.repeat_interleave(-1, dim=0)


# -- Cat / Stack ------------------------------------------------------------------------


@given(
    sizes=st.lists(st.integers(0, 2), min_size=1, max_size=3),
    dim=st.integers(-2, 1),
    transpose=st.booleans(),
)
def test_cat_hypothesis(sizes, dim, transpose):
    arrays = []
    for i, n in enumerate(sizes):
        shape = [2, 2]
        shape[dim % 2] = n
        arrays.append(rand(*shape, seed=10 + i))

    def f(T, *xs):
        return T.cat([_noncontig(T, x, transpose) * 1.0 for x in xs], dim=dim)

    check_op(f, *arrays)


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x, y: T.cat([x, y], dim=0),
        lambda T, x, y: T.cat((x, y, x), -1),
        lambda T, x, y: T.concat([x, y], 1),
        lambda T, x, y: T.stack([x, y]),
        lambda T, x, y: T.stack([x, y], dim=-1),
        lambda T, x, y: T.stack([x, y, x], 1),
        lambda T, x, y: T.stack([x]),
    ],
)
def test_cat_stack(fn):
    check_op(fn, rand(2, 3, seed=7), rand(2, 3, seed=8))


@needs_torch
def test_cat_of_heads_and_mixed_dtypes():
    x = rand(2, 3, seed=9)
    check_op(lambda T, x: T.cat([x[:, :1] * 2, x[:, 1:] ** 2, x.exp()], dim=-1), x)
    a = tinyattn.cat([tinyattn.ones(2, dtype=tinyattn.float32), tinyattn.arange(2)])
    b = torch.cat([torch.ones(2, dtype=torch.float32), torch.arange(2)])
    assert str(a.dtype) == str(b.dtype).replace("torch.", "tinyattn.")


def test_cat_stack_errors():
    a, b = tinyattn.zeros(2, 3), tinyattn.zeros(2, 4)
    with pytest.raises(RuntimeError, match=r"tensor 0 has shape \[2, 3\], tensor 1 has shape"):
        tinyattn.cat([a, b])
    tinyattn.cat([a, b], dim=1)  # fine along dim 1
    with pytest.raises(RuntimeError, match="zero-dimensional"):
        tinyattn.cat([tinyattn.tensor(1.0)])
    with pytest.raises(RuntimeError, match="non-empty"):
        tinyattn.cat([])
    with pytest.raises(TypeError, match="single Tensor"):
        tinyattn.cat(a)
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size"):
        tinyattn.stack([a, b])
    with pytest.raises(IndexError, match="dimension out of range"):
        tinyattn.cat([a, a], dim=2)


# -- Narrow / Select / split / chunk / unbind -------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x: x.narrow(1, 1, 2),
        lambda T, x: T.narrow(x, -1, 0, 0),
        lambda T, x: x.narrow(0, -1, 1),
        lambda T, x: T.cat(x.split(2, dim=1)[::-1], 1),
        lambda T, x: x.split([1, 3], 1)[1],
        lambda T, x: T.stack(T.split(x, 1)),
        lambda T, x: T.cat(x.chunk(3, 1)[::-1], 1),
        lambda T, x: x.chunk(2)[0],
        lambda T, x: x.select(1, 2),
        lambda T, x: T.select(x, 0, -1),
        lambda T, x: T.stack(list(x.unbind(1))[::-1], 1),
        lambda T, x: T.stack([row * i for i, row in enumerate(x)]),
        lambda T, x: x.unbind(0)[1] * x.unbind(0)[0],
    ],
)
def test_narrow_select(fn):
    check_op(fn, rand(3, 4, seed=11))


def test_qkv_unbind():
    qkv = rand(3, 2, 4, 2, seed=12)

    def f(T, qkv):
        q, k, v = qkv.unbind(0)
        return T.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

    check_op(f, qkv)


@needs_torch
def test_split_chunk_sizes_match_torch():
    for n, k in [(5, 2), (4, 3), (6, 4), (1, 3), (0, 2)]:
        ours = [tuple(p.shape) for p in tinyattn.zeros(n).chunk(k)]
        theirs = [tuple(p.shape) for p in torch.zeros(n).chunk(k)]
        assert ours == theirs, (n, k)
        ours = [tuple(p.shape) for p in tinyattn.zeros(n).split(k)]
        theirs = [tuple(p.shape) for p in torch.zeros(n).split(k)]
        assert ours == theirs, (n, k)


def test_select_of_vector_is_a_view():
    x = tinyattn.zeros(3)
    for i, item in enumerate(x):
        item.add_(i)
    np.testing.assert_array_equal(x.numpy(), [0.0, 1.0, 2.0])


def test_narrow_select_errors():
    x = tinyattn.zeros(3, 4)
    with pytest.raises(IndexError, match="exceeds dimension size"):
        x.narrow(1, 3, 2)
    with pytest.raises(IndexError, match=r"select\(\): index 3 out of range"):
        x.select(0, 3)
    with pytest.raises(RuntimeError, match="split_sizes to sum exactly to 4"):
        x.split([1, 2], 1)
    with pytest.raises(RuntimeError, match="chunk expects"):
        x.chunk(0)


# -- Flip / Roll / Triangle / Diagonal --------------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, x: x.flip(0),
        lambda T, x: x.flip(0, 1),
        lambda T, x: T.flip(x, (-1,)),
        lambda T, x: x.roll(1),
        lambda T, x: x.roll(-2, 1),
        lambda T, x: T.roll(x, (1, -1), (0, 1)),
        lambda T, x: x.triu(),
        lambda T, x: T.tril(x, -1),
        lambda T, x: x.triu(diagonal=2),
        lambda T, x: (x * 1).tril_(1),
        lambda T, x: (x * 1).triu_(),
        lambda T, x: x.diagonal(),
        lambda T, x: x.diagonal(1),
        lambda T, x: T.diagonal(x, -1),
        lambda T, x: x.unsqueeze(0).expand(2, 3, 4).triu(1),
    ],
)
def test_flip_roll_triangle_diagonal(fn):
    check_op(fn, rand(3, 4, seed=13))


def test_diagonal_batched():
    check_op(lambda T, x: T.diagonal(x, 0, 1, 2), rand(2, 3, 3, seed=14))
    check_op(lambda T, x: x.diagonal(offset=1, dim1=-1, dim2=0), rand(3, 2, 4, seed=15))


@needs_torch
def test_causal_mask_buffer_pattern():
    T_ = 3
    mask_buf = tinyattn.triu(tinyattn.ones(5, 5), diagonal=1)
    mask = mask_buf.bool()[:T_, :T_]
    ref = torch.triu(torch.ones(5, 5), diagonal=1).bool()[:T_, :T_]
    assert mask.dtype == tinyattn.bool
    np.testing.assert_array_equal(mask.numpy(), ref.numpy())
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tinyattn.triu(tinyattn.ones(3))


def test_squeeze_unsqueeze_inplace():
    x = tinyattn.zeros(2, 1, 3)
    assert x.squeeze_(1).shape == (2, 3)
    assert x.unsqueeze_(0).shape == (1, 2, 3)


def test_roll_errors_and_cat_legacy_empty():
    x = tinyattn.zeros(2, 3)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        x.roll((1, 2))
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        x.roll((1, 2), 0)
    with pytest.raises(IndexError, match=r"roll\(\): dimension out of range"):
        x.roll(1, 2)
    check_op(lambda T, x: T.cat([x, T.tensor([], dtype=x.dtype), x]), rand(2, 3, seed=16))


# -- found by tests/core/test_differential.py ----------------------------------------------


def test_movedim_of_a_0d_tensor():
    check_op(lambda T, x: x.movedim(0, -1) * 2, np.array(0.7))


def test_reshape_of_an_empty_contiguous_tensor_is_a_view():
    """torch: a view, so writing through it into a grad leaf is refused; was a silent copy."""
    x = tinyattn.zeros(0, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x.reshape(-1)[1:].mul_(2.0)
