"""Engine reliability: threads, hooks, ``.grad`` assignment, version checks, freed graphs."""

import threading

import numpy as np
import pytest
from harness import torch

import tinyattn as T
from tinyattn.autograd.function import Function  # the array-level op base

# -- threads ----------------------------------------------------------------------------------


def test_threads_backpropagating_into_one_leaf_lose_no_update():
    n_threads, n_backwards = 4, 20
    # large enough that NumPy releases the GIL inside `grad += g`: without a lock,
    # threads overwrite each other's sums (this lost 3 of every 4 updates)
    w = T.zeros(1_000_000, dtype=T.float64, requires_grad=True)
    start = threading.Barrier(n_threads)

    def work():
        start.wait()
        for _ in range(n_backwards):
            (w * 1.0).sum().backward()

    threads = [threading.Thread(target=work) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (w.grad.numpy() == n_threads * n_backwards).all()


def test_threads_building_graphs_from_one_leaf_share_its_accumulator_node():
    w = T.ones(3, requires_grad=True)
    nodes = []
    start = threading.Barrier(4)

    def work():
        start.wait()
        nodes.append((w * 2).grad_fn.next_nodes[0])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(n) for n in nodes}) == 1


# -- hooks ------------------------------------------------------------------------------------


def _shrink(g):
    return g[:1]


@pytest.mark.parametrize("leaf", [True, False])
def test_a_hook_changing_the_gradient_size_raises_like_torch(leaf):
    for lib in (T,) + ((torch,) if torch is not None else ()):
        x = lib.ones(3, requires_grad=True)
        y = x if leaf else x * 2
        y.register_hook(_shrink)
        with pytest.raises(RuntimeError, match="hook '_shrink' has changed the size of value"):
            (y * 3).sum().backward()


def test_a_hook_changing_the_gradient_dtype_raises_like_torch():
    for lib in (T,) + ((torch,) if torch is not None else ()):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: g.double())
        with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the type of value"):
            y.sum().backward()
    x = T.ones(3, requires_grad=True)
    (x * 2).register_hook(lambda g: g.double())
    y = x * 2
    y.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match=r"was tinyattn.float32 got tinyattn.float64"):
        y.sum().backward()


def test_a_hook_returning_a_non_tensor_raises_like_torch():
    for lib in (T,) + ((torch,) if torch is not None else ()):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: 5)
        with pytest.raises(TypeError, match="hook returned 'int'"):
            y.sum().backward()


def test_a_hook_may_change_values():
    x = T.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert x.grad.tolist() == [20.0, 20.0, 20.0]


# -- .grad assignment -------------------------------------------------------------------------


def _grad_errors(lib, p):
    """The exception type and message of each bad assignment (and that None is allowed)."""
    out = []
    for bad in (
        lib.tensor([5.0]),
        np.ones(3, dtype=np.float32),
        lib.ones(3, dtype=lib.float64),
    ):
        with pytest.raises((RuntimeError, TypeError)) as info:
            p.grad = bad
        out.append((info.type, str(info.value)))
    p.grad = lib.ones(3)
    p.grad = None
    assert p.grad is None
    return out


def test_grad_assignment_is_validated_like_torch():
    ours = _grad_errors(T, T.nn.Parameter(T.ones(3)))
    assert (
        ours[0][0] is RuntimeError
        and "gradient of size '[1]' to a tensor of size '[3]'" in ours[0][1]
    )
    assert ours[1][0] is TypeError and "got grad of type numpy.ndarray" in ours[1][1]
    assert ours[2][0] is RuntimeError
    assert "dtype 'tinyattn.float64' to a tensor with dtype 'tinyattn.float32'" in ours[2][1]
    if torch is not None:
        theirs = _grad_errors(torch, torch.nn.Parameter(torch.ones(3)))
        assert [t for t, _ in ours] == [t for t, _ in theirs]
        assert ours[0][1] == theirs[0][1] and ours[1][1] == theirs[1][1]


def test_engine_accumulation_still_fills_grad():
    p = T.nn.Parameter(T.ones(3))
    (p * 2).sum().backward()
    (p * 2).sum().backward()
    assert p.grad.tolist() == [4.0, 4.0, 4.0]


# -- version checks on saved views ------------------------------------------------------------


class SaveReshapedInput(Function):
    """y = x.reshape(-1) * 2 (saves a view of x's memory).   dx = 2 * dy (reshaped)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x.reshape(-1))
        return x.reshape(-1) * 2

    @staticmethod
    def backward(ctx, g):
        (flat,) = ctx.saved_tensors
        return (2 * g).reshape(flat.shape)


class SaveTransposedSlice(Function):
    """y = sum(x[:, 0] * w).   dx[:, 0] = g * w,  dw = g * x[:, 0]."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x.T[0], w)
        ctx.shape = x.shape
        return (x.T[0] * w).sum()

    @staticmethod
    def backward(ctx, g):
        col, w = ctx.saved_tensors
        dx = np.zeros(ctx.shape, dtype=col.dtype)
        dx[:, 0] = g * w
        return dx, g * col


def test_a_saved_view_of_an_input_is_version_checked():
    x = T.ones(2, 3, requires_grad=True)
    mask = x * 1  # a non-leaf we can modify in place
    y = SaveReshapedInput.apply(mask)
    mask.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*SaveReshapedInput"):
        y.sum().backward()


def test_a_saved_transposed_slice_is_version_checked_and_unmodified_works():
    w = T.tensor([1.0, 2.0], requires_grad=True)
    x = T.tensor([[3.0, 4.0], [5.0, 6.0]])
    out = SaveTransposedSlice.apply(x, w)
    out.backward()
    assert w.grad.tolist() == [3.0, 5.0]
    out = SaveTransposedSlice.apply(x, w)
    x[1, 0] = 7.0
    with pytest.raises(RuntimeError, match="saved its input.*version 0; it is now at version 1"):
        out.backward()


@pytest.mark.parametrize("shape", [(1, 2, 3, 4), (2, 3, 4)])  # fused kernel path / NumPy path
def test_an_inplace_edit_of_a_float_attn_mask_after_forward_is_detected(shape):
    q = T.randn(*shape, requires_grad=True)
    mask = T.zeros(3, 3)
    out = T.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    mask.add_(1.0)  # backward would read the changed mask
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*shape \[3, 3\]"):
        out.sum().backward()


def test_arrays_kept_on_ctx_are_version_checked():
    class KeepOnCtx(Function):
        """y = x * c (c kept on ctx, not saved).   dx = dy * c"""

        @staticmethod
        def forward(ctx, x, c):
            ctx.kept = (c[None, :],)  # a view, nested in a tuple
            return x * c

        @staticmethod
        def backward(ctx, g):
            return g * ctx.kept[0][0], None

    x = T.ones(2, requires_grad=True)
    c = T.tensor([2.0, 3.0])
    KeepOnCtx.apply(x, c).sum().backward()
    assert x.grad.tolist() == [2.0, 3.0]
    y = KeepOnCtx.apply(x, c)
    c.mul_(2)
    with pytest.raises(RuntimeError, match="KeepOnCtxBackward0 saved its input"):
        y.sum().backward()


# -- freed graphs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda x: (x.exp() * x).sum(),
        lambda x: x.softmax(-1).pow(2).sum(),
        lambda x: (x @ x.T).tanh().sum(),
    ],
)
def test_backward_through_a_freed_graph_fails_with_torchs_message(make):
    for lib in (T,) + ((torch,) if torch is not None else ()):
        x = lib.ones(2, 2, requires_grad=True)
        y = make(x)
        y.backward()
        with pytest.raises(
            RuntimeError, match="Trying to backward through the graph a second time"
        ):
            y.backward()


def test_freed_copyslices_graph_fails_too():
    x = T.ones(4, requires_grad=True)
    b = x * 1
    b[1:].mul_(b[:3].detach() + x[1:])
    loss = b.sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
