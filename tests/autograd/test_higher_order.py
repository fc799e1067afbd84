"""create_graph=True: the engine, saved-tensor unpacking, gradgradcheck, unsupported ops."""

import numpy as np
import pytest

import tinyattn
from tinyattn.autograd import grad, gradgradcheck
from tinyattn.autograd.gradcheck import GradcheckError

torch = pytest.importorskip("torch")

X = np.array([[0.3, -0.5, 1.2], [0.7, 0.1, -0.9]])


def _pair(a=X):
    return (
        tinyattn.tensor(a.copy(), requires_grad=True),
        torch.tensor(a.copy(), requires_grad=True),
    )


def _f(lib, x):
    return (lib.exp(x) * x * x).sum()


def test_grad_of_grad_matches_torch():
    xo, xt = _pair()
    (go,) = grad(_f(tinyattn, xo), xo, create_graph=True)
    (gt,) = torch.autograd.grad(_f(torch, xt), xt, create_graph=True)
    np.testing.assert_allclose(go.detach().numpy(), gt.detach().numpy(), rtol=1e-12)
    assert go.requires_grad and go.grad_fn is not None
    (ho,) = grad((go * go).sum(), xo)
    (ht,) = torch.autograd.grad((gt * gt).sum(), xt)
    np.testing.assert_allclose(ho.numpy(), ht.numpy(), rtol=1e-12)


def test_backward_create_graph_then_backward_accumulates_like_torch():
    xo, xt = _pair()
    _f(tinyattn, xo).backward(create_graph=True)
    _f(torch, xt).backward(create_graph=True)
    assert xo.grad.requires_grad
    xo.grad.sum().backward()
    xt.grad.sum().backward()
    np.testing.assert_allclose(xo.grad.detach().numpy(), xt.grad.detach().numpy(), rtol=1e-12)


def test_third_order():
    xo, xt = _pair()
    gs = []
    for lib, x in ((tinyattn, xo), (torch, xt)):
        y = (lib.sin(x) * lib.exp(x)).sum()
        (g1,) = lib.autograd.grad(y, x, create_graph=True)
        (g2,) = lib.autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = lib.autograd.grad(g2.sum(), x)
        gs.append(g3.detach().numpy())
    np.testing.assert_allclose(*gs, rtol=1e-12)


def test_grad_wrt_grad_outputs():
    """The result is differentiable with respect to a grad_output Tensor (jvp's trick)."""
    xo, xt = _pair()
    outs = []
    for lib, x in ((tinyattn, xo), (torch, xt)):
        v = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(lib.exp(x) * x, x, v, create_graph=True)
        (dv,) = lib.autograd.grad((g * g).sum(), v)
        outs.append(dv.detach().numpy())
    np.testing.assert_allclose(*outs, rtol=1e-12)


class _Twice(tinyattn.autograd.function.Function):
    """out = 2 x, with an array-only backward (no supports_create_graph)."""

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return 2 * g


def test_unsupported_op_names_itself():
    x = tinyattn.tensor(X.copy(), requires_grad=True)
    y = _Twice.apply(x).sum()
    with pytest.raises(RuntimeError, match="_TwiceBackward0 does not support create_graph=True"):
        grad(y, x, create_graph=True)


def test_first_order_unchanged_returns_plain_tensors():
    x = tinyattn.tensor(X.copy(), requires_grad=True)
    (g,) = grad(_f(tinyattn, x), x)
    assert not g.requires_grad and g.grad_fn is None


def test_gradgradcheck_passes_and_catches_a_wrong_second_derivative():
    x = tinyattn.tensor(X.copy(), requires_grad=True)
    assert gradgradcheck(lambda a: tinyattn.exp(a) * a, [x])

    class BadSquare(tinyattn.autograd.function.Function):
        """out = x * x, with a backward whose second derivative is wrong (x treated as constant)."""

        supports_create_graph = True

        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a.copy())  # a copy: a constant under create_graph
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * g * a

    assert tinyattn.autograd.gradcheck(BadSquare.apply, [x])
    with pytest.raises(GradcheckError):
        gradgradcheck(BadSquare.apply, [x])


def test_saved_output_unpacks_with_this_node():
    x = tinyattn.tensor(X.copy(), requires_grad=True)
    y = tinyattn.exp(x)
    node = y.grad_fn
    node._graph = True
    try:
        (_, out) = node.saved_tensors
    finally:
        node._graph = False
    assert out.grad_fn is node
    np.testing.assert_array_equal(out.detach().numpy(), y.detach().numpy())


def test_the_two_namespaces_offer_the_same_functions_with_the_same_values():
    from tinyattn.autograd.xp import numpy_xp, tensor_xp

    names = sorted(k for k in vars(tensor_xp) if not k.startswith("_"))
    missing = [n for n in names if not hasattr(numpy_xp, n)]
    assert not missing, f"tensor_xp functions without a NumPy twin: {missing}"
    a = X.copy()
    t = tinyattn.tensor(a)
    pairs = {
        "exp": lambda xp, x: xp.exp(x),
        "sgn": lambda xp, x: xp.sgn(x),
        "sum": lambda xp, x: xp.sum(x, axis=(0,), keepdims=True),
        "sum_all": lambda xp, x: xp.sum(x, keepdims=True),
        "expand": lambda xp, x: xp.expand(xp.sum(x, axis=(1,)), (1,), (2, 3)),
        "where": lambda xp, x: xp.where(x > 0, x, 0),
        "maximum": lambda xp, x: xp.maximum(x, 0.2),
        "swapaxes": lambda xp, x: xp.swapaxes(x, 0, 1),
        "concatenate": lambda xp, x: xp.concatenate([x, x], 1),
        "cumprod": lambda xp, x: xp.cumprod(x, 1),
        "flip": lambda xp, x: xp.flip(x, -1),
        "astype": lambda xp, x: xp.astype(x, np.float32),
    }
    for name, f in pairs.items():
        want, got = f(numpy_xp, a), f(tensor_xp, t)
        assert tuple(got.shape) == np.shape(want), name
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, err_msg=name)


def test_create_graph_works_right_after_import_tinyattn():
    """A program that only imports tinyattn (nothing else loads autograd.xp, whose tensor
    namespace the engine needs to build the gradient's own graph) differentiates twice."""
    import subprocess
    import sys

    code = (
        "import tinyattn\n"
        "x = tinyattn.tensor([1.0, 2.0], requires_grad=True)\n"
        "(g,) = tinyattn.autograd.grad((x**3).sum(), x, create_graph=True)\n"
        "g.sum().backward()\n"
        "print(g.tolist(), x.grad.tolist())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[3.0,", "12.0]", "[6.0,", "12.0]"]
