"""tinyattn.func against torch.func: the same functions, the same inputs, the same numbers.

Every function below is written once against a ``lib`` namespace (``tinyattn`` or
``torch``), so both libraries run the same code. float64 throughout.
"""

import numpy as np
import pytest

import tinyattn
from tinyattn import func as tfunc

torch = pytest.importorskip("torch", reason="torch not installed: no reference for parity")
from torch import func as rfunc  # noqa: E402

LIBS = ((tinyattn, tfunc), (torch, rfunc))


def _arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _both(arrays):
    """(tinyattn tensors, torch tensors) of the same float64 values."""
    return [tinyattn.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


def _close(ours, theirs, tol=1e-10):
    """Pytrees of tensors equal in structure and in value."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs)
        for k in theirs:
            _close(ours[k], theirs[k], tol)
    elif isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _close(a, b, tol)
    else:
        assert isinstance(ours, tinyattn.Tensor), type(ours)
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(
            ours.detach().numpy(), theirs.detach().numpy(), rtol=tol, atol=tol
        )


def _scalar_fn(lib):
    return lambda x, y: (lib.sin(x) * y).sum() + (x**3).mean()


def _vector_fn(lib):
    return lambda x: lib.tanh(x) * x.sum() + x**2


def _pair_fn(lib):
    return lambda x, y: (lib.exp(x) @ y, (x * 2).sum(0))


def test_grad_argnums_and_pytrees():
    (x, y), (tx, ty) = _both(_arrays((3, 4), (3, 4)))
    for argnums in (0, 1, (0, 1), -1):
        _close(
            tfunc.grad(_scalar_fn(tinyattn), argnums)(x, y),
            rfunc.grad(_scalar_fn(torch), argnums)(tx, ty),
        )

    def loss(lib):
        return lambda p, z: (lib.tanh(z @ p["w"]) + p["b"]).pow(2).sum()

    ours = tfunc.grad(loss(tinyattn))({"w": x.t(), "b": y[0, :3]}, y)
    theirs = rfunc.grad(loss(torch))({"w": tx.t(), "b": ty[0, :3]}, ty)
    _close(ours, theirs)


def test_grad_and_value_with_aux():
    (x, y), (tx, ty) = _both(_arrays((5,), (5,)))

    def f(lib):
        return lambda a, b: ((a * b).sum(), {"double": a * 2, "n": [b.sum()]})

    ours = tfunc.grad_and_value(f(tinyattn), argnums=(0, 1), has_aux=True)(x, y)
    theirs = rfunc.grad_and_value(f(torch), argnums=(0, 1), has_aux=True)(tx, ty)
    _close(ours, theirs)
    g, aux = tfunc.grad(f(tinyattn), has_aux=True)(x, y)
    rg, raux = rfunc.grad(f(torch), has_aux=True)(tx, ty)
    _close((g, aux), (rg, raux))


def test_grad_of_grad_and_hessian():
    (x,), (tx,) = _both(_arrays((4,)))

    def f(lib):
        return lambda a: (lib.sin(a) * a.exp()).sum()

    def d1(lib, fn):
        return lambda a: fn.grad(f(lib))(a).sum()

    _close(tfunc.grad(d1(tinyattn, tfunc))(x), rfunc.grad(d1(torch, rfunc))(tx))
    _close(tfunc.hessian(f(tinyattn))(x), rfunc.hessian(f(torch))(tx))
    _close(tfunc.jacrev(tfunc.jacrev(f(tinyattn)))(x), rfunc.jacrev(rfunc.jacrev(f(torch)))(tx))


def test_vjp_and_jvp():
    (x, y, u, v), (tx, ty, tu, tv) = _both(_arrays((3, 2), (2, 4), (3, 4), (2,)))
    out, fn = tfunc.vjp(_pair_fn(tinyattn), x, y)
    rout, rfn = rfunc.vjp(_pair_fn(torch), tx, ty)
    _close(out, rout)
    _close(fn((u, v)), rfn((tu, tv)))
    _close(fn((u * 2, v)), rfn((tu * 2, tv)))  # vjp_fn may be called again
    (dx, dy), (tdx, tdy) = _both(_arrays((3, 2), (2, 4), seed=1))
    _close(
        tfunc.jvp(_pair_fn(tinyattn), (x, y), (dx, dy)),
        rfunc.jvp(_pair_fn(torch), (tx, ty), (tdx, tdy)),
    )
    _close(
        tfunc.jvp(_vector_fn(tinyattn), (x,), (dx,)), rfunc.jvp(_vector_fn(torch), (tx,), (tdx,))
    )


def test_jvp_and_vjp_with_aux():
    (x, t), (tx, tt) = _both(_arrays((4,), (4,)))

    def f(lib):
        return lambda a: (a.sin(), a.cos().sum())

    ours = tfunc.jvp(f(tinyattn), (x,), (t,), has_aux=True)
    theirs = rfunc.jvp(f(torch), (tx,), (tt,), has_aux=True)
    _close(ours, theirs)
    out, fn, aux = tfunc.vjp(f(tinyattn), x, has_aux=True)
    rout, rfn, raux = rfunc.vjp(f(torch), tx, has_aux=True)
    _close((out, fn(t), aux), (rout, rfn(tt), raux))


def test_jacrev_jacfwd_structures():
    (x, y), (tx, ty) = _both(_arrays((3, 2), (2, 4)))
    for argnums in (0, 1, (0, 1)):
        for name in ("jacrev", "jacfwd"):
            ours = getattr(tfunc, name)(_pair_fn(tinyattn), argnums)(x, y)
            theirs = getattr(rfunc, name)(_pair_fn(torch), argnums)(tx, ty)
            _close(ours, theirs)
    _close(tfunc.jacfwd(_vector_fn(tinyattn))(x), rfunc.jacfwd(_vector_fn(torch))(tx))


def test_hessian_with_two_argnums():
    (x, y), (tx, ty) = _both(_arrays((3,), (3,)))
    _close(
        tfunc.hessian(_scalar_fn(tinyattn), argnums=(0, 1))(x, y),
        rfunc.hessian(_scalar_fn(torch), argnums=(0, 1))(tx, ty),
    )


def test_vmap_dims_and_pytrees():
    (x, y, w), (tx, ty, tw) = _both(_arrays((3, 4), (4, 3), (4,)))
    cases = [
        (lambda lib: lambda a: lib.tanh(a).sum(), {}, lambda xs: (xs[0],)),
        (lambda lib: lambda a, b: a * b, {"in_dims": (0, 1)}, lambda xs: (xs[0], xs[1])),
        (lambda lib: lambda a, b: a * b, {"in_dims": (1, None)}, lambda xs: (xs[0], xs[2][:3])),
        (lambda lib: lambda a: (a, a.sum()), {"out_dims": (1, 0)}, lambda xs: (xs[0],)),
        (lambda lib: lambda a: a * 2, {"in_dims": -1, "out_dims": -1}, lambda xs: (xs[0],)),
        (
            lambda lib: lambda d: d["a"] @ d["w"],
            {"in_dims": ({"a": 0, "w": None},)},
            lambda xs: ({"a": xs[0], "w": xs[2]},),
        ),
    ]
    for make, kw, args in cases:
        _close(
            tfunc.vmap(make(tinyattn), **kw)(*args([x, y, w])),
            rfunc.vmap(make(torch), **kw)(*args([tx, ty, tw])),
        )


def test_vmap_of_grad_is_per_sample_gradients():
    (w, xs, ys), (tw, txs, tys) = _both(_arrays((3,), (5, 3), (5,)))

    def loss(lib):
        return lambda p, x, y: (lib.tanh(x @ p) - y) ** 2

    ours = tfunc.vmap(tfunc.grad(loss(tinyattn)), in_dims=(None, 0, 0))(w, xs, ys)
    theirs = rfunc.vmap(rfunc.grad(loss(torch)), in_dims=(None, 0, 0))(tw, txs, tys)
    _close(ours, theirs)
    _close(
        tfunc.vmap(tfunc.vmap(lambda a: a.sin() * 2))(xs),
        rfunc.vmap(rfunc.vmap(lambda a: a.sin() * 2))(txs),
    )
    _close(
        tfunc.vmap(tfunc.jacrev(lambda a: a.sin()))(xs),
        rfunc.vmap(rfunc.jacrev(lambda a: a.sin()))(txs),
    )


def _mlp(lib, seed):
    lib.manual_seed(seed)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2)).double()


def _copy_weights(ours, theirs):
    for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        p.data = tinyattn.tensor(q.detach().numpy())


def test_per_sample_gradients_of_a_module_and_ensembling():
    model, rmodel = _mlp(tinyattn, 0), _mlp(torch, 0)
    _copy_weights(model, rmodel)
    (xs, ys), (txs, tys) = _both(_arrays((6, 3), (6, 2)))

    def per_sample(lib, fn, m):
        params = {k: v.detach() for k, v in m.named_parameters()}

        def loss(p, x, y):
            out = fn.functional_call(m, p, (x.unsqueeze(0),))
            return lib.nn.functional.mse_loss(out, y.unsqueeze(0))

        return fn.vmap(fn.grad(loss), in_dims=(None, 0, 0))(
            params, xs if lib is tinyattn else txs, ys if lib is tinyattn else tys
        )

    _close(per_sample(tinyattn, tfunc, model), per_sample(torch, rfunc, rmodel))

    models = [_mlp(tinyattn, s) for s in range(3)]
    rmodels = [_mlp(torch, s) for s in range(3)]
    for m, r in zip(models, rmodels):
        _copy_weights(m, r)
    params, buffers = tfunc.stack_module_state(models)
    rparams, rbuffers = rfunc.stack_module_state(rmodels)
    _close(params, rparams)
    assert all(p.requires_grad and p.is_leaf for p in params.values())

    def run(fn, m, p, b, x):
        return fn.vmap(lambda p_, b_: fn.functional_call(m, (p_, b_), (x,)))(p, b)

    _close(
        run(tfunc, models[0], params, buffers, xs), run(rfunc, rmodels[0], rparams, rbuffers, txs)
    )


def test_grad_through_transform_result_reaches_outer_tensors():
    """A transform's result is differentiable w.r.t. what the function closes over."""
    (x, w), (tx, tw) = _both(_arrays((4,), (4,)))
    w.requires_grad_(True)
    tw.requires_grad_(True)
    g = tfunc.grad(lambda a: (a.sin() * w).sum())(x)
    rg = rfunc.grad(lambda a: (a.sin() * tw).sum())(tx)
    assert g.requires_grad and rg.requires_grad
    (g**2).sum().backward()
    (rg**2).sum().backward()
    _close(w.grad, tw.grad)
    plain = tfunc.grad(lambda a: a.sin().sum())(x)
    assert not plain.requires_grad  # nothing outer: a plain tensor, as torch's


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, fn, x: fn.vmap(lambda a, b: a + b, in_dims=(0,))(x, x),
        lambda lib, fn, x: fn.vmap(lambda a: a, in_dims="a")(x),
        lambda lib, fn, x: fn.vmap(lambda a: a, in_dims=3)(x),
        lambda lib, fn, x: fn.vmap(lambda a, b: a + b)(x, lib.zeros(4, 2, dtype=lib.float64)),
        lambda lib, fn, x: fn.vmap(lambda a: a, in_dims=(None,))(x),
        lambda lib, fn, x: fn.vmap(lambda a: 3)(x),
        lambda lib, fn, x: fn.vmap(lambda a: a, out_dims=None)(x),
        lambda lib, fn, x: fn.vmap(lambda a: a + lib.randn(2, dtype=lib.float64))(x),
        lambda lib, fn, x: fn.vmap(lambda a: a, randomness="foo")(x),
        lambda lib, fn, x: fn.vmap(lambda a: a, chunk_size=0)(x),
        lambda lib, fn, x: fn.grad(lambda a: a * 2)(x),
        lambda lib, fn, x: fn.grad(lambda a: a.sum().reshape(1))(x),
        lambda lib, fn, x: fn.grad(lambda a: 3.0)(x),
        lambda lib, fn, x: fn.grad(lambda a: a.sum(), argnums=2)(x),
        lambda lib, fn, x: fn.grad(lambda a: a.sum(), argnums=())(x),
        lambda lib, fn, x: fn.grad(lambda a, b: a.sum(), argnums=(0, 0))(x, x),
        lambda lib, fn, x: fn.grad(lambda a: a.sum(), has_aux=True)(x),
        lambda lib, fn, x: fn.grad(lambda a: a.sum())(lib.ones(3, dtype=lib.long)),
        lambda lib, fn, x: fn.grad(lambda a: a.sum())(3.0),
        lambda lib, fn, x: fn.jvp(lambda a: a, x, x),
        lambda lib, fn, x: fn.jvp(lambda a: a, (x,), (x, x)),
        lambda lib, fn, x: fn.jvp(lambda a: a, (x,), (3,)),
        lambda lib, fn, x: fn.jvp(lambda a: a, (3.0,), (x,)),
        lambda lib, fn, x: fn.jvp(lambda a: a, (lib.ones(2, dtype=lib.long),), (x,)),
        lambda lib, fn, x: fn.jacrev(lambda a: a)(3.0),
        lambda lib, fn, x: fn.jacfwd(lambda a: a, has_aux=True)(x),
        lambda lib, fn, x: fn.vmap(lambda a, b: a)(x, [1, 2]),
        lambda lib, fn, x: fn.vmap(lambda a: a, out_dims="x")(x),
        lambda lib, fn, x: fn.vmap(lambda a: a, out_dims=3)(x),
        lambda lib, fn, x: fn.vmap(lambda a: (a, a), out_dims=(0,))(x),
        lambda lib, fn, x: fn.vjp(lambda a: 3, x),
        lambda lib, fn, x: fn.vjp(lambda a: a, x)[1]((x,)),
        lambda lib, fn, x: fn.vjp(lambda a: a, x, has_aux=True),
        lambda lib, fn, x: fn.stack_module_state([]),
    ],
)
def test_misuse_raises_torchs_error(call):
    x, tx = tinyattn.randn(3, 2, dtype=tinyattn.float64), torch.randn(3, 2, dtype=torch.float64)
    with pytest.raises(Exception) as theirs:
        call(torch, rfunc, tx)
    with pytest.raises(type(theirs.value)) as ours:
        call(tinyattn, tfunc, x)
    # torch's pytree specs print differently; everything up to them must match
    # (and dtypes print with our package name: tinyattn.int64 for torch.int64)
    expected = str(theirs.value).split("TreeSpec")[0].split(" *")[0].replace("torch.", "tinyattn.")
    assert str(ours.value).startswith(expected), (str(ours.value), str(theirs.value))


def test_tutorial_compositions_hvp_and_neural_tangent_kernel():
    """torch's Jacobians/Hessians and NTK tutorials: jvp of grad, vmap of jacrev, vjp in vmap."""
    (x, v), (tx, tv) = _both(_arrays((4,), (4,)))

    def hvp(fn, lib, a, t):
        return fn.jvp(fn.grad(lambda z: (lib.sin(z) * z).sum()), (a,), (t,))[1]

    _close(hvp(tfunc, tinyattn, x, v), hvp(rfunc, torch, tx, tv))

    net, rnet = _mlp(tinyattn, 0), _mlp(torch, 0)
    _copy_weights(net, rnet)
    (x1, x2), (tx1, tx2) = _both(_arrays((3, 3), (2, 3), seed=2))

    def ntk(lib, fn, m, a, b):
        params = {k: p.detach() for k, p in m.named_parameters()}

        def single(p, z):
            return fn.functional_call(m, p, (z.unsqueeze(0),)).squeeze(0)

        j1 = fn.vmap(fn.jacrev(single), (None, 0))(params, a)
        j2 = fn.vmap(fn.jacrev(single), (None, 0))(params, b)
        blocks = [
            lib.einsum("Naf,Mbf->NMab", p.flatten(2), q.flatten(2))
            for p, q in zip(j1.values(), j2.values())
        ]
        by_jacobians = lib.stack(blocks).sum(0)

        def products(z1, z2):
            out, vjp_fn = fn.vjp(lambda p: single(p, z1), params)
            basis = lib.eye(out.numel(), dtype=out.dtype)
            return fn.vmap(lambda vec: fn.jvp(lambda p: single(p, z2), (params,), vjp_fn(vec))[1])(
                basis
            )

        by_products = fn.vmap(fn.vmap(products, (None, 0)), (0, None))(a, b)
        return by_jacobians, by_products

    ours = ntk(tinyattn, tfunc, net, x1, x2)
    theirs = ntk(torch, rfunc, rnet, tx1, tx2)
    _close(ours, theirs)
    _close(ours[0], ours[1])


def test_per_sample_gradients_of_a_small_cnn():
    """torch's per-sample-gradients tutorial: conv, max-pool, log_softmax, nll_loss."""

    def build(lib):
        class CNN(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = lib.nn.Conv2d(1, 2, 3)
                self.fc = lib.nn.Linear(8, 3)

            def forward(self, x):
                x = lib.nn.functional.max_pool2d(lib.nn.functional.relu(self.conv(x)), 2)
                return lib.nn.functional.log_softmax(self.fc(lib.flatten(x, 1)), dim=1)

        return CNN().double()

    model, rmodel = build(tinyattn), build(torch)
    _copy_weights(model, rmodel)
    images = np.random.default_rng(0).standard_normal((4, 1, 6, 6))
    labels = np.array([0, 2, 1, 2])

    def per_sample(lib, fn, m):
        params = {k: v.detach() for k, v in m.named_parameters()}
        buffers = {k: v.detach() for k, v in m.named_buffers()}

        def loss(p, b, image, label):
            out = fn.functional_call(m, (p, b), (image.unsqueeze(0),))
            return lib.nn.functional.nll_loss(out, label.unsqueeze(0))

        grads = fn.vmap(fn.grad(loss), in_dims=(None, None, 0, 0))
        return grads(params, buffers, lib.tensor(images), lib.tensor(labels))

    _close(per_sample(tinyattn, tfunc, model), per_sample(torch, rfunc, rmodel))
