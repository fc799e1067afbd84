"""tinyattn.func held to tinyattn itself (no torch needed): transforms against loops,
against ``autograd.grad`` / ``autograd.functional``, and against finite differences."""

import warnings
from collections import namedtuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tinyattn
from tinyattn import autograd, func
from tinyattn.func._pytree import tree_flatten, tree_unflatten


def _t(*shape, seed=0, requires_grad=False):
    rng = np.random.default_rng(seed)
    return tinyattn.tensor(rng.standard_normal(shape), requires_grad=requires_grad)


def _eq(a, b, tol=1e-12):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def _f(x):
    return tinyattn.tanh(x) * x.sum() + x**2


def _scalar(x, y):
    return (tinyattn.sin(x) * y).sum() + (x**3).mean()


# -- pytrees -----------------------------------------------------------------------------------
def test_pytree_round_trip():
    Pair = namedtuple("Pair", "a b")
    tree = (1, [2, {"k": 3, "j": (4,)}], Pair(5, None))
    leaves, spec = tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5, None]
    assert tree_unflatten(leaves, spec) == tree
    assert str(spec) == "(*, [*, {'k': *, 'j': (*,)}], (*, *))"


# -- vmap --------------------------------------------------------------------------------------
def test_vmap_equals_stacking_each_sample():
    x, y = _t(4, 3), _t(3, 4, seed=1)
    _eq(func.vmap(_f)(x), tinyattn.stack([_f(x[i]) for i in range(4)]))
    _eq(
        func.vmap(lambda a, b: a @ b, in_dims=(0, 1))(x, y),
        tinyattn.stack([x[i] @ y[:, i] for i in range(4)]),
    )
    out = func.vmap(lambda a: (a.sum(), a * 2), out_dims=(0, 1))(x)
    _eq(out[0], x.sum(1))
    _eq(out[1], (x * 2).t())
    nested = func.vmap(func.vmap(lambda a: a.exp() + 1))(x)
    _eq(nested, x.exp() + 1)
    d = func.vmap(lambda p, z: p["w"] * z, in_dims=({"w": None}, 0))({"w": x[0]}, x)
    _eq(d, x * x[0])
    _eq(func.vmap(lambda a, scale=1.0: a * scale)(x, scale=3.0), x * 3.0)  # kwargs: not mapped


def test_vmap_is_differentiable_and_aliases():
    x = _t(4, 3, requires_grad=True)
    func.vmap(_f)(x).pow(2).sum().backward()
    loop = x.detach().requires_grad_(True)
    tinyattn.stack([_f(loop[i]) for i in range(4)]).pow(2).sum().backward()
    _eq(x.grad, loop.grad)
    assert tinyattn.vmap is func.vmap and "func" in dir(tinyattn)


def test_vmap_out_dims_none_empty_batch_and_randomness():
    x = _t(3, 2)
    _eq(func.vmap(lambda a: tinyattn.ones(2), out_dims=None)(x), tinyattn.ones(2))
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        func.vmap(lambda a: a, out_dims=None)(x)
    empty = func.vmap(lambda a: a.sum(-1, keepdim=True) * 2, out_dims=1)(tinyattn.zeros(0, 5))
    assert tuple(empty.shape) == (1, 0)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        func.vmap(lambda a: a + tinyattn.randn(2))(x)
    same = func.vmap(lambda a: tinyattn.randn(2), randomness="same")(x)
    _eq(same[0], same[1])
    different = func.vmap(lambda a: tinyattn.randn(2), randomness="different")(x)
    assert not np.allclose(different[0].numpy(), different[1].numpy())


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda x: func.vmap(lambda a, b: a, in_dims=(0,))(x, x),
            ValueError,
            "in_dims is not compatible with the structure of `inputs`",
        ),
        (
            lambda x: func.vmap(lambda a, b: a)(x, tinyattn.zeros(4)),
            ValueError,
            r"got sizes \[3, 4\] for the mapped dimension",
        ),
        (
            lambda x: func.vmap(lambda a: 3)(x),
            ValueError,
            "must only return Tensors, got type <class 'int'>",
        ),
        (
            lambda x: func.vmap(lambda a: a, in_dims=2)(x),
            ValueError,
            "expected in_dim to satisfy -2 <= in_dim < 2",
        ),
        (
            lambda x: func.vmap(lambda a: a, in_dims=(None,))(x),
            ValueError,
            "Expected at least one Tensor to vmap over",
        ),
        (
            lambda x: func.grad(lambda a: a * 2)(x),
            RuntimeError,
            "Expected f\\(\\*args\\) to return a scalar Tensor, got tensor with 2 dims",
        ),
        (
            lambda x: func.grad(lambda a: 1.0)(x),
            RuntimeError,
            "Expected f\\(\\*args\\) to return a Tensor",
        ),
        (
            lambda x: func.grad(lambda a: a.sum(), argnums=1)(x),
            RuntimeError,
            "Got argnum=1, but only 1 positional inputs",
        ),
        (
            lambda x: func.jacrev(lambda a: [a, 1])(x),
            RuntimeError,
            "expected f\\(\\*primals\\) to return only tensors",
        ),
        (
            lambda x: func.jvp(lambda a: a, (x,), (tinyattn.zeros(2),)),
            RuntimeError,
            "different size than that of the original Tensor",
        ),
        (
            lambda x: func.vjp(lambda a: a, x)[1](tinyattn.zeros(2)),
            RuntimeError,
            "Mismatch in shape: grad_output\\[0\\]",
        ),
    ],
)
def test_misuse(call, error, message):
    with pytest.raises(error, match=message):
        call(_t(3, 2))


# -- grad, vjp, jvp ----------------------------------------------------------------------------
def test_grad_matches_autograd_grad():
    x, y = _t(3, 4), _t(3, 4, seed=1)
    xr, yr = x.detach().requires_grad_(True), y.detach().requires_grad_(True)
    gx, gy = autograd.grad(_scalar(xr, yr), (xr, yr))
    ours = func.grad(_scalar, argnums=(0, 1))(x, y)
    _eq(ours[0], gx)
    _eq(ours[1], gy)
    assert not ours[0].requires_grad
    g, value = func.grad_and_value(_scalar)(x, y)
    _eq(g, gx)
    _eq(value, _scalar(x, y))
    tree = func.grad(lambda p: (p["a"] * p["b"][0]).sum())({"a": x, "b": [y]})
    _eq(tree["a"], y)
    _eq(tree["b"][0], x)


def test_grad_against_finite_differences():
    x = _t(5)
    g = func.grad(lambda a: (a.sin() * a.exp()).sum())(x).numpy()
    eps, base = 1e-6, x.numpy()
    for i in range(5):
        up, down = base.copy(), base.copy()
        up[i] += eps
        down[i] -= eps
        fd = (np.sum(np.sin(up) * np.exp(up)) - np.sum(np.sin(down) * np.exp(down))) / (2 * eps)
        assert abs(fd - g[i]) < 1e-7


def test_nested_grad_keeps_the_inner_and_outer_uses_apart():
    x = _t(3)
    # d/dx [x * (d/dy (x*y) at y=x)] = d/dx [x * x] = 2x: the inner gradient is x, not 2x
    outer = func.grad(lambda a: (a * func.grad(lambda b: (a * b).sum())(a)).sum())(x)
    _eq(outer, 2 * x)
    second = func.grad(lambda a: func.grad(lambda b: (b**3).sum())(a).sum())(x)
    _eq(second, 6 * x)


def test_vjp_and_jvp_match_the_jacobian():
    x, y = _t(3, 2), _t(2, 4, seed=1)
    jx, jy = autograd.functional.jacobian(lambda a, b: tinyattn.exp(a) @ b, (x, y))
    u = _t(3, 4, seed=2)
    out, fn = func.vjp(lambda a, b: tinyattn.exp(a) @ b, x, y)
    _eq(out, tinyattn.exp(x) @ y)
    gx, gy = fn(u)
    _eq(gx, (u.reshape(12) @ jx.reshape(12, 6)).reshape(3, 2))
    _eq(gy, (u.reshape(12) @ jy.reshape(12, 8)).reshape(2, 4))
    tx, ty = _t(3, 2, seed=3), _t(2, 4, seed=4)
    value, jvp_out = func.jvp(lambda a, b: tinyattn.exp(a) @ b, (x, y), (tx, ty))
    expected = jx.reshape(12, 6) @ tx.reshape(6) + jy.reshape(12, 8) @ ty.reshape(8)
    _eq(jvp_out, expected.reshape(3, 4))


# -- Jacobians and Hessians --------------------------------------------------------------------
def test_jacrev_equals_jacfwd_and_autograd_functional():
    x = _t(4)
    jr, jf = func.jacrev(_f)(x), func.jacfwd(_f)(x)
    _eq(jr, jf)
    _eq(jr, autograd.functional.jacobian(_f, x))
    h = func.hessian(lambda a: (a.sin() * a.sum()).sum())(x)
    _eq(h, autograd.functional.hessian(lambda a: (a.sin() * a.sum()).sum(), x))
    _eq(func.jacrev(func.jacrev(lambda a: (a**3).sum()))(x), tinyattn.diag(6 * x))
    jac, aux = func.jacrev(lambda a: (a * 2, a.sum()), has_aux=True)(x)
    _eq(jac, 2 * tinyattn.eye(4, dtype=tinyattn.float64))
    _eq(aux, x.sum())


# -- modules -----------------------------------------------------------------------------------
def _mlp(seed=0):
    tinyattn.manual_seed(seed)
    return tinyattn.nn.Sequential(
        tinyattn.nn.Linear(3, 5), tinyattn.nn.Tanh(), tinyattn.nn.Linear(5, 2)
    ).double()


def test_per_sample_gradients_equal_a_loop_of_backward():
    model = _mlp()
    xs, ys = _t(6, 3), _t(6, 2, seed=1)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        out = func.functional_call(model, p, (x.unsqueeze(0),))
        return tinyattn.nn.functional.mse_loss(out, y.unsqueeze(0))

    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    for i in range(6):
        model.zero_grad()
        tinyattn.nn.functional.mse_loss(model(xs[i : i + 1]), ys[i : i + 1]).backward()
        for name, p in model.named_parameters():
            _eq(per_sample[name][i], p.grad)
    assert all(p.grad is not None for p in model.parameters())  # the module's own were used


def test_functional_call_swaps_and_restores():
    model = tinyattn.nn.Linear(2, 2).double()
    w = model.weight
    x = _t(3, 2)
    out = func.functional_call(model, {"weight": tinyattn.zeros(2, 2, dtype=tinyattn.float64)}, x)
    _eq(out, model.bias.expand(3, 2))
    assert model.weight is w
    with pytest.raises(RuntimeError):  # the module's own error, shape 2x7 against 3x2 input
        func.functional_call(model, {"weight": tinyattn.zeros(2, 7, dtype=tinyattn.float64)}, (x,))
    assert model.weight is w  # restored after the error too
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        func.functional_call(model, {"weight": w}, (x,), strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        func.functional_call(model, ({"weight": w}, {"weight": w}), (x,))
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        old = tinyattn.nn.utils.stateless.functional_call(model, {"bias": model.bias * 0}, (x,))
    _eq(old, x @ w.t())


def test_functional_call_tied_weights_and_buffers():
    class Tied(tinyattn.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = tinyattn.nn.Linear(2, 2, bias=False)
            self.b = tinyattn.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    model = Tied()
    x = tinyattn.ones(1, 2)
    eye = tinyattn.eye(2) * 2
    _eq(func.functional_call(model, {"a.weight": eye}, (x,)), x * 4)
    _eq(func.functional_call(model, {"a.weight": eye}, (x,), tie_weights=False), model.b(x * 2))
    with pytest.raises(ValueError, match="which are tied"):
        func.functional_call(model, {"a.weight": eye, "b.weight": eye * 1}, (x,))
    bn = tinyattn.nn.BatchNorm1d(2).eval()
    shifted = func.functional_call(bn, {"running_mean": tinyattn.ones(2)}, (x,))
    _eq(shifted, tinyattn.zeros(1, 2), tol=1e-4)
    assert float(bn.running_mean.sum()) == 0.0


def test_stack_module_state_and_ensembling():
    models = [_mlp(s) for s in range(3)]
    params, buffers = func.stack_module_state(models)
    assert buffers == {}
    assert tuple(params["0.weight"].shape) == (3, 5, 3)
    assert all(p.is_leaf and p.requires_grad for p in params.values())
    x = _t(4, 3)
    out = func.vmap(lambda p: func.functional_call(models[0], p, (x,)))(params)
    for i, m in enumerate(models):
        _eq(out[i], m(x))
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        func.stack_module_state([_mlp(), _mlp().eval()])


def test_no_warning_from_the_func_entry_point():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        func.functional_call(tinyattn.nn.Linear(2, 2), {}, (tinyattn.ones(2),))


def test_transforms_inside_other_transforms_and_outer_graphs():
    x = _t(3, 4)
    # grad of a function that uses vmap, and jacrev of a vmapped function
    _eq(func.grad(lambda a: func.vmap(lambda r: r.sin().sum())(a).sum())(x), x.cos())
    jac = func.jacrev(func.vmap(lambda r: r**2))(x[0:2, 0:2])
    _eq(jac.reshape(4, 4), tinyattn.diag(2 * x[0:2, 0:2].reshape(4)))
    # per-sample gradients of non-contiguous slices (in_dims=1), then backward through them
    xr = x.detach().requires_grad_(True)
    g = func.vmap(func.grad(lambda c: (c**3).sum()), in_dims=1)(xr)  # 3 c^2, shape (4, 3)
    assert g.requires_grad
    g.sum().backward()
    _eq(xr.grad, 6 * x)
    # constant outputs give zeros; grad mode off at the call does not stop the transform
    _eq(func.grad(lambda a: tinyattn.ones(()) * 3)(x), tinyattn.zeros(3, 4, dtype=x.dtype))
    with tinyattn.no_grad():
        _eq(func.grad(lambda a: (a * a).sum())(xr), 2 * x)
    _, tangent_out = func.jvp(lambda a: tinyattn.ones(2), (x,), (x,))
    _eq(tangent_out, tinyattn.zeros(2))


def test_stack_module_state_checks_the_models():
    frozen = _mlp(1).requires_grad_(False)
    params, _ = func.stack_module_state([frozen, _mlp(2).requires_grad_(False)])
    assert not any(p.requires_grad for p in params.values())
    with pytest.raises(RuntimeError, match="Expected 0.weight from each model to have the same"):
        func.stack_module_state([frozen, _mlp(2)])
    with pytest.raises(RuntimeError, match="same class"):
        func.stack_module_state([_mlp(), tinyattn.nn.Linear(3, 5)])
    bn = [tinyattn.nn.BatchNorm1d(2) for _ in range(2)]
    _, buffers = func.stack_module_state(bn)
    assert tuple(buffers["running_mean"].shape) == (2, 2)


@given(
    shape=st.lists(st.integers(0, 3), min_size=1, max_size=3),
    data=st.data(),
)
def test_vmap_in_and_out_dims_match_numpy(shape, data):
    """``vmap(f, in_dims=d, out_dims=o)(x)``: move axis d to the front, apply f per row,
    move the new axis to o (size-0 batches and dims included)."""
    in_dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    out_dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(0).standard_normal(shape)
    got = func.vmap(lambda r: r.exp() * 2, in_dims=in_dim, out_dims=out_dim)(tinyattn.tensor(x))
    rows = np.moveaxis(x, in_dim, 0)
    expected = np.moveaxis(np.exp(rows) * 2, 0, out_dim)
    assert tuple(got.shape) == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
