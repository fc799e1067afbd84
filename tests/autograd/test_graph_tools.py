"""``autograd.graph``: saved-tensor hooks, multi-grad hooks, versions; ``grad_fn._saved_*``.

Each behaviour test runs the same code on tinyattn and (when installed) torch.
"""

from __future__ import annotations

import pytest
from harness import torch

import tinyattn

LIBS = [tinyattn] + ([torch] if torch is not None else [])
each_lib = pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)


@each_lib
def test_pack_and_unpack_each_saved_tensor(lib):
    calls = []

    def pack(t):
        calls.append(("pack", tuple(t.shape)))
        return t

    def unpack(t):
        calls.append(("unpack", tuple(t.shape)))
        return t

    a = lib.ones(3, requires_grad=True)
    b = lib.full((3,), 2.0, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (a * b).exp().sum()  # mul saves a and b, exp its result
    assert calls == [("pack", (3,))] * 3
    calls.clear()
    y.backward()
    assert calls == [("unpack", (3,))] * 3
    assert a.grad.tolist() == pytest.approx([2 * 7.38905609893065] * 3, rel=1e-6)


@each_lib
def test_pack_gets_the_input_itself_and_hooks_can_copy(lib):
    x = lib.ones(2, requires_grad=True)
    seen = []
    with lib.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t is x) or t, lambda t: t):
        x.pow(2).sum().backward()
    assert seen == [True] and x.grad.tolist() == [2.0, 2.0]
    # Hooks that keep a copy: the in-place change after saving is not seen (nor checked).
    leaf = lib.ones(2, requires_grad=True)
    z = leaf.clone()
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = (z * z).sum()
    with lib.no_grad():
        z.add_(1)
    y.backward()  # the copies, saved before the change, are used: 2 * 1, not 2 * 2
    assert leaf.grad.tolist() == [2.0, 2.0]


@each_lib
def test_unpack_must_return_a_tensor_and_disable(lib):
    a = lib.ones(2, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: 3, lambda t: t):
        y = (a * a).sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result of"):
        y.backward()
    with lib.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with lib.autograd.graph.save_on_cpu():
        y = (a * a).sum()
    y.backward()
    assert a.grad.tolist() == [2.0, 2.0]


@each_lib
def test_custom_function_saves_go_through_the_hooks(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    packed = []
    x = lib.tensor([1.0, 3.0], requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t * 1, lambda t: t):
        y = Square.apply(x)
    y.sum().backward()
    assert len(packed) == 1 and x.grad.tolist() == [2.0, 6.0]


@each_lib
def test_hooks_keep_second_derivatives_when_they_return_the_tensor(lib):
    x = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = (x * x * x).sum()
    (g,) = lib.autograd.grad(y, x, create_graph=True)
    (h,) = lib.autograd.grad(g.sum(), x)
    assert h.tolist() == pytest.approx([3.0, 9.0])


@each_lib
def test_register_multi_grad_hook(lib):
    a = lib.ones(2, requires_grad=True)
    b = lib.ones(2, requires_grad=True)
    got = []
    handle = lib.autograd.graph.register_multi_grad_hook(
        (a, b), lambda grads: got.append([None if g is None else g.tolist() for g in grads])
    )
    (a * 3).sum().backward()
    (a * b).sum().backward()
    assert got == [[[3.0, 3.0], None], [[1.0, 1.0], [1.0, 1.0]]]
    handle.remove()
    (a * b).sum().backward()
    assert len(got) == 2
    first = []
    lib.autograd.graph.register_multi_grad_hook((a, b), first.append, mode="any")
    (a * b * 2).sum().backward()
    assert len(first) == 1 and first[0].tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        lib.autograd.graph.register_multi_grad_hook((a,), print, mode="some")


@each_lib
def test_increment_version_and_gradient_edge(lib):
    a = lib.ones(2, requires_grad=True)
    y = a.clone()
    z = (y * y).sum()
    lib.autograd.graph.increment_version(y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
    edge = lib.autograd.graph.get_gradient_edge(y)
    assert edge.node is y.grad_fn and edge.output_nr == 0
    assert isinstance(y.grad_fn, lib.autograd.graph.Node)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        lib.autograd.graph.get_gradient_edge(lib.ones(1))


@each_lib
def test_saved_attributes_of_grad_fn(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    assert y.grad_fn._saved_self is a and y.grad_fn._saved_other.tolist() == [3.0, 4.0]
    z = (a * 1).exp()
    assert z.equal(z.grad_fn._saved_result) and z.grad_fn._saved_result is not z
    z.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.grad_fn._saved_result  # noqa: B018
    with pytest.raises(AttributeError, match="_saved_self"):
        (a + b).grad_fn._saved_self  # noqa: B018


@each_lib
def test_node_prehook_and_hook(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    c = lib.tensor([3.0, 4.0])
    y = a * c
    seen = []
    y.grad_fn.register_prehook(lambda go: seen.append(("pre", go[0].tolist())) or (go[0] * 10,))
    y.grad_fn.register_hook(
        lambda gi, go: seen.append(("post", [g if g is None else g.tolist() for g in gi]))
    )
    y.sum().backward()
    assert seen == [("pre", [1.0, 1.0]), ("post", [[30.0, 40.0], None])]
    assert a.grad.tolist() == [30.0, 40.0] and y.grad_fn.name() == "MulBackward0"
    a.grad = None
    y = a * c
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 1, gi[1]))  # replaces grad_inputs
    y.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0]
    a.grad = None
    y = a * c
    y.grad_fn.register_prehook(lambda go: (go[0] * 2,)).remove()
    y.sum().backward()
    assert a.grad.tolist() == [3.0, 4.0]


@each_lib
def test_pack_runs_without_grad_and_saved_self_unpacks(lib):
    x = lib.ones(3, requires_grad=True)
    modes = []

    def pack(t):
        modes.append(lib.is_grad_enabled())
        return t * 1

    with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = x.pow(2)
    assert modes == [False]
    assert y.grad_fn._saved_self.tolist() == [1.0, 1.0, 1.0]
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
