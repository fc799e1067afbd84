"""The short paths of the op hot path keep the general rules: a node's gradient handed on
directly by its last consumer, add/sub without a stored alpha, the float-with-number case
of add/sub/mul, unary ops on float32/float64, and what a released node says."""

import numpy as np
import pytest

import tinyattn as T
from tinyattn.core import engine
from tinyattn.core.function import Node


def _x(values, dtype=T.float64):
    return T.tensor(values, dtype=dtype, requires_grad=True)


def test_a_root_consumed_by_another_root_sums_both_gradients():
    x = _x([1.0, 2.0])
    y = x * 3.0
    z = y * 2.0
    T.autograd.backward([y, z], [T.ones(2, dtype=T.float64), T.ones(2, dtype=T.float64)])
    np.testing.assert_allclose(x.grad.numpy(), [9.0, 9.0])  # 3 * (1 + 2)


def test_the_counts_include_every_root():
    x = _x([1.0])
    y = x * 2.0
    z = y * 2.0
    counts = engine._count_consumers([z._grad_fn, y._grad_fn])
    assert counts[z._grad_fn] == 0 and counts[y._grad_fn] == 1
    assert counts[x._grad_node()] == 1


@pytest.mark.parametrize("hooked", [False, True])
def test_a_slice_gradient_reaching_its_only_consumer_is_a_full_array(hooked):
    x = _x([1.0, 2.0, 3.0, 4.0])
    y = x * 2.0  # y's node gets only the narrow's gradient (a zero-padded block)
    seen = []
    if hooked:
        y.register_hook(lambda g: seen.append(g.numpy().copy()))
    y.narrow(0, 1, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, 2.0, 0.0])
    assert not hooked or np.array_equal(seen[0], [0.0, 1.0, 1.0, 0.0])


def test_slice_gradients_from_several_consumers_add_up():
    x = _x([1.0, 2.0, 3.0, 4.0])
    y = x * 1.0
    a, b = y.narrow(0, 0, 3), y.narrow(0, 1, 3)
    (a.sum() + (b * 3.0).sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 4.0, 4.0, 3.0])


def test_a_node_with_several_consumers_runs_once_with_their_sum():
    x = _x([0.5, -1.5])
    y = x.tanh()
    runs = []
    y.grad_fn.register_prehook(lambda grads: runs.append(grads[0].numpy().copy()))
    (y * 2.0 + y * 3.0 + y).sum().backward()
    assert len(runs) == 1
    np.testing.assert_allclose(runs[0], [6.0, 6.0])
    np.testing.assert_allclose(x.grad.numpy(), 6.0 * (1 - np.tanh([0.5, -1.5]) ** 2))


@pytest.mark.parametrize("alpha", [1, 2.5])
def test_add_and_sub_gradients_with_alpha(alpha):
    a, b = _x([1.0, 2.0]), _x([3.0, 5.0])
    (T.add(a, b, alpha=alpha).sum() + T.sub(a, b, alpha=alpha).sum() * 2.0).backward()
    np.testing.assert_allclose(a.grad.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(b.grad.numpy(), [alpha - 2.0 * alpha] * 2)


def test_add_and_sub_nodes_keep_nothing_and_backpropagate_twice():
    a, b = _x([1.0, 2.0]), _x([3.0, 5.0])
    out = (a + b) - b
    assert out.grad_fn.__dict__ == {} and out.grad_fn.next_functions[0][0].__dict__ == {}
    out.sum().backward()
    out.sum().backward()  # (nothing saved: no retain_graph needed)
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(b.grad.numpy(), [0.0, 0.0])


def test_in_place_add_with_alpha_keeps_its_gradient():
    a, b = _x([1.0, 2.0]), _x([3.0, 5.0])
    c = a * 1.0
    c.add_(b, alpha=-3)
    c.sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), [-3.0, -3.0])


@pytest.mark.parametrize(
    "left, right",
    [(lambda: T.tensor([True, False]), lambda: 1.0), (lambda: T.ones(2), lambda: True)],
)
def test_sub_refuses_a_bool_operand(left, right):
    with pytest.raises(TypeError, match="sub: subtraction with a bool operand"):
        left() - right()


@pytest.mark.parametrize("number", [2, 0.5])
@pytest.mark.parametrize("dtype", [T.float32, T.float64, T.float16])
def test_float_tensor_with_a_python_number_keeps_its_dtype(dtype, number):
    x = T.ones(3, dtype=dtype)
    for out in (x + number, x - number, x * number, number * x, number - x):
        assert out.dtype == dtype


def test_int_tensor_with_a_python_float_promotes_to_the_default_float():
    x = T.tensor([1, 2])
    assert (x * 0.5).dtype == T.float32 and (x + 1).dtype == T.int64


def test_unary_float16_is_computed_in_float32_and_rounded_once():
    values = np.array([0.1, 0.7, -2.3], dtype=np.float16)
    out = T.tensor(values).tanh()
    assert out.dtype == T.float16
    np.testing.assert_array_equal(out.numpy(), np.tanh(values.astype(np.float32)).astype("f2"))


def test_unary_integer_input_computes_in_the_default_float():
    out = T.tensor([0, 1]).exp()
    assert out.dtype == T.float32
    np.testing.assert_allclose(out.numpy(), np.exp([0.0, 1.0]).astype(np.float32))


def test_unary_complex_gradient_follows_the_conjugate_convention():
    z = T.tensor([0.3 + 0.4j, -0.2 + 0.1j], dtype=T.complex128, requires_grad=True)
    g = np.array([1.0 - 0.5j, 0.25 + 2.0j])
    z.tanh().backward(T.tensor(g))
    expected = g * np.conj(1 - np.tanh(z.detach().numpy()) ** 2)
    np.testing.assert_allclose(z.grad.numpy(), expected)


def test_a_real_only_unary_op_refuses_complex_input():
    with pytest.raises(NotImplementedError, match="not implemented for complex"):
        T.tensor([1 + 1j]).log2()


def test_what_a_released_node_says():
    x = _x([1.0, 2.0])
    y = x * x
    node = y.grad_fn
    assert node._released is False and len(node.saved_tensors) == 2
    y.sum().backward()
    assert node._released is True and type(node) is not Node  # (a _ReleasedNode)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        node.saved_tensors  # noqa: B018
    assert node.next_functions[0][0] is x._grad_node()
    unsaved = (x + 1.0).grad_fn
    assert unsaved.saved_tensors == () and unsaved._released is False
