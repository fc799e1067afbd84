"""tinyattn.autograd.functional against torch.autograd.functional (values and semantics)."""

import numpy as np
import pytest

import tinyattn
from tinyattn.autograd.function import Function

torch = pytest.importorskip("torch")

X = np.array([[0.3, -0.5, 1.2], [0.7, 0.1, -0.9]])
Y = np.array([0.2, 0.4, -0.3])


def _vector_fn(lib):
    return lambda a, b: (lib.tanh(a) * b + lib.exp(a) / (1 + b * b)).sum(-1)


def _scalar_fn(lib):
    return lambda a, b: (lib.softmax(a * b, -1) ** 2).sum() + lib.logsumexp(a, 1).sum()


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [z for e in r for z in _flat(e)]
    return [r]


def _compare(ours, theirs, rtol=1e-10):
    fo, ft = _flat(ours), _flat(theirs)
    assert len(fo) == len(ft)
    for o, t in zip(fo, ft):
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=1e-12)


def _call(lib, name, create_graph=False, single=False):
    F = lib.autograd.functional
    a, b = lib.tensor(X), lib.tensor(Y)
    inputs = a if single else (a, b)
    f2, s2 = _vector_fn(lib), _scalar_fn(lib)
    f, s = f2, s2
    if single:
        f, s = (lambda a: f2(a, lib.tensor(Y))), (lambda a: s2(a, lib.tensor(Y)))
    va = lib.tensor(X * 2) if single else (lib.tensor(X * 2), lib.tensor(Y))
    kw = {"create_graph": create_graph}
    return {
        "jacobian": lambda: F.jacobian(f, inputs, **kw),
        "hessian": lambda: F.hessian(s, inputs, **kw),
        "vjp": lambda: F.vjp(f, inputs, lib.tensor(np.array([1.0, -2.0])), **kw),
        "jvp": lambda: F.jvp(f, inputs, va, **kw),
        "hvp": lambda: F.hvp(s, inputs, va, **kw),
        "vhp": lambda: F.vhp(s, inputs, va, **kw),
    }[name]()


NAMES = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]


@pytest.mark.parametrize("single", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_matches_torch(name, single):
    _compare(_call(tinyattn, name, single=single), _call(torch, name, single=single))


@pytest.mark.parametrize("name", NAMES)
def test_results_are_detached_unless_create_graph(name):
    for r in _flat(_call(tinyattn, name)):
        assert not r.requires_grad
    # with create_graph, inputs that do not require grad give results without a graph too
    # (torch's rule); inputs that do are kept in it:
    a = tinyattn.tensor(X, requires_grad=True)
    at = torch.tensor(X, requires_grad=True)
    ours = tinyattn.autograd.functional.vjp(lambda x: (x**3).sum(), a, create_graph=True)[1]
    theirs = torch.autograd.functional.vjp(lambda x: (x**3).sum(), at, create_graph=True)[1]
    assert ours.requires_grad and theirs.requires_grad
    (go,) = tinyattn.autograd.grad(ours.sum(), a)
    (gt,) = torch.autograd.grad(theirs.sum(), at)
    np.testing.assert_allclose(go.numpy(), gt.numpy(), rtol=1e-12)


def test_hessian_create_graph_differentiable_like_torch():
    from tinyattn.ops.shape.views import Expand, Reshape

    if not (Expand.supports_create_graph and Reshape.supports_create_graph):
        pytest.skip("third order through the reductions' backward needs Reshape/Expand converted")
    outs = []
    for lib in (tinyattn, torch):
        a = lib.tensor(X, requires_grad=True)
        h = lib.autograd.functional.hessian(
            lambda x, lib=lib: (lib.exp(x) * x).sum(), a, create_graph=True
        )
        (g,) = lib.autograd.grad((h * h).sum(), a)
        outs.append(g.detach().numpy())
    np.testing.assert_allclose(*outs, rtol=1e-10)


def test_strict_and_unused_inputs():
    F = tinyattn.autograd.functional
    a, b = tinyattn.tensor(X), tinyattn.tensor(Y)
    jac = F.jacobian(lambda a, b: a * 2, (a, b))
    assert np.all(jac[1].numpy() == 0) and jac[1].shape == (2, 3, 3)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.jacobian(lambda a, b: a * 2, (a, b), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.vjp(lambda a, b: (a * 2).sum(), (a, b), strict=True)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function"):
        F.hessian(lambda a: (a * 2).sum(), a, strict=True)
    out, v = F.vjp(lambda a, b: (a * 2).sum(), (a, b))
    assert np.all(v[1].numpy() == 0)


def test_bad_arguments_as_torch():
    F = tinyattn.autograd.functional
    a = tinyattn.tensor(X)
    with pytest.raises(RuntimeError, match="v can only be None"):
        F.vjp(lambda x: x * 2, a)
    with pytest.raises(RuntimeError, match="invalid size"):
        F.vjp(lambda x: x * 2, a, tinyattn.ones(3, dtype=tinyattn.float64))
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        F.jacobian(lambda x: x, [a])
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        F.hessian(lambda x: (x.sum(), x.sum()), a)
    with pytest.raises(RuntimeError, match="single element"):
        F.vhp(lambda x: x * 2, a, a)


def _all_support_create_graph(fn, *args) -> bool:
    """Whether every op in fn's graph supports create_graph (else the case waits for them)."""
    xs = [tinyattn.tensor(a, requires_grad=True) for a in args]
    stack, seen = [fn(*xs).grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        fn_cls = getattr(node, "fn", None)
        if isinstance(fn_cls, type) and issubclass(fn_cls, Function):
            if not fn_cls.supports_create_graph:
                return False
        stack.extend(node.next_nodes)
    return True


def _layer_norm(lib, x):
    return (lib.nn.functional.layer_norm(x, (3,)) * lib.arange(3.0, dtype=lib.float64)).sum()


def _cross_entropy(lib, x):
    return lib.nn.functional.cross_entropy(x, lib.tensor([2, 0]))


def _mha(lib, x):
    lib.manual_seed(0)
    q = x.reshape(1, 2, 3)
    w = lib.tensor(np.linspace(-1, 1, 27).reshape(9, 3))
    out = lib.nn.functional.scaled_dot_product_attention(q, q @ w[:3], q @ w[3:6])
    return (out * out).sum()


@pytest.mark.parametrize("model", [_layer_norm, _cross_entropy, _mha])
def test_hessian_of_nn_functions_matches_torch(model):
    if not _all_support_create_graph(lambda x: model(tinyattn, x), X):
        pytest.skip("an op in this model does not support create_graph=True yet")
    ours = tinyattn.autograd.functional.hessian(lambda x: model(tinyattn, x), tinyattn.tensor(X))
    theirs = torch.autograd.functional.hessian(lambda x: model(torch, x), torch.tensor(X))
    _compare(ours, theirs, rtol=1e-8)


# -- whole layers: nn.MultiheadAttention and a 2-layer Transformer encoder ----------------


def _twin_modules(build):
    """The same float64 module in tinyattn and torch (torch gets tinyattn's weights)."""
    tinyattn.manual_seed(0)
    ours = build(tinyattn).double()
    theirs = build(torch).double()
    theirs.load_state_dict(
        {k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()}
    )
    return ours, theirs


def _mha_module(lib):
    return lib.nn.MultiheadAttention(4, 2, batch_first=True)


def _encoder(lib):
    layer = lib.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True)
    return lib.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


def _run(module, x):
    out = module(x, x, x)[0] if "Multihead" in type(module).__name__ else module(x)
    return (out * out).sum()


@pytest.mark.parametrize("build", [_mha_module, _encoder], ids=["MultiheadAttention", "encoder"])
def test_hessian_and_hvp_of_whole_layers_match_torch(build):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ours, theirs = _twin_modules(build)
    x = np.linspace(-1.0, 1.0, 12).reshape(1, 3, 4)
    v = np.cos(np.arange(12.0)).reshape(1, 3, 4)
    h_ours = tinyattn.autograd.functional.hessian(lambda a: _run(ours, a), tinyattn.tensor(x))
    hvp_ours = tinyattn.autograd.functional.hvp(
        lambda a: _run(ours, a), tinyattn.tensor(x), tinyattn.tensor(v)
    )
    with sdpa_kernel(SDPBackend.MATH):  # torch's fused CPU attention has no double backward
        h_theirs = torch.autograd.functional.hessian(lambda a: _run(theirs, a), torch.tensor(x))
        hvp_theirs = torch.autograd.functional.hvp(
            lambda a: _run(theirs, a), torch.tensor(x), torch.tensor(v)
        )
    _compare(h_ours, h_theirs, rtol=1e-8)
    _compare(hvp_ours, hvp_theirs, rtol=1e-8)
