"""autograd.forward_ad: jvps against finite differences and torch, torch's errors, the tutorial.

Each case is ``f(lib, *tensors)`` run with ``lib`` = tinyattn or torch. The jvp of
tinyattn (``make_dual`` on every float input with a random tangent, then
``unpack_dual(out).tangent``) must equal the central difference
``(f(x + eps t) - f(x - eps t)) / (2 eps)`` in float64, and torch's forward AD on the
same inputs (skipped without torch).
"""

import numpy as np
import pytest

import tinyattn as T
import tinyattn.autograd.forward_ad as fwAD

try:
    import torch
    import torch.autograd.forward_ad as torch_fwAD
except ImportError:  # parity tests skip; the finite-difference checks still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(0)


def _rand(*shape, positive=False):
    a = rng.standard_normal(shape)
    return np.abs(a) + 0.5 if positive else a


def _mlp(M, x, w1, b1, w2, b2):
    F = M.nn.functional
    return F.linear(M.tanh(F.linear(x, w1, b1)), w2, b2)


def _attention(M, q, k, v):
    return M.nn.functional.scaled_dot_product_attention(q, k, v)


def _causal_attention(M, q, k, v):
    return M.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def _masked_attention(M, q, k, v):
    mask = M.tensor(np.array([[True, False, True], [True, True, False]]))
    return M.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _cross_entropy(M, logits):
    return M.nn.functional.cross_entropy(logits, M.tensor(np.array([2, 0, 1])))


CASES = {
    "sin_exp": (lambda M, x: (M.sin(x) * M.exp(x)).sum(-1), [_rand(3, 4)]),
    "tanh_sigmoid_relu": (
        lambda M, x: M.tanh(x) + M.sigmoid(2 * x) * M.relu(x),
        [_rand(5)],
    ),
    "log_sqrt_pow": (lambda M, x: M.log(x) + M.sqrt(x) * x**1.5, [_rand(4, positive=True)]),
    "div_broadcast": (lambda M, x, y: x / y + x * y, [_rand(2, 3), _rand(3, positive=True)]),
    "matmul_bias": (lambda M, x, w, b: x @ w + b, [_rand(2, 3), _rand(3, 4), _rand(4)]),
    "reductions": (
        lambda M, x: x.sum(0) * x.mean(1).sum() + x.amax(dim=1).sum() + (x * x).var(),
        [_rand(3, 4)],
    ),
    "shape_ops": (
        lambda M, x, y: M.cat([x.transpose(0, 1).reshape(6), y[1:]], 0)[::2] * 2,
        [_rand(2, 3), _rand(4)],
    ),
    "cumsum_where": (lambda M, x: M.where(x > 0, x.cumsum(0), x * x), [_rand(6)]),
    "einsum": (lambda M, a, b: M.einsum("ij,jk->ik", a, b), [_rand(2, 3), _rand(3, 2)]),
    "softmax": (lambda M, x: M.softmax(x, dim=-1), [_rand(2, 5)]),
    "log_softmax": (lambda M, x: M.nn.functional.log_softmax(x, dim=0), [_rand(4, 3)]),
    "layer_norm": (
        lambda M, x, w, b: M.nn.functional.layer_norm(x, (4,), w, b),
        [_rand(3, 4), _rand(4), _rand(4)],
    ),
    "gelu": (lambda M, x: M.nn.functional.gelu(x), [_rand(6)]),
    "cross_entropy": (_cross_entropy, [_rand(3, 4)]),
    "mlp": (_mlp, [_rand(5, 3), _rand(4, 3), _rand(4), _rand(2, 4), _rand(2)]),
    "attention": (_attention, [_rand(2, 3, 4), _rand(2, 3, 4), _rand(2, 3, 4)]),
    "causal_attention": (_causal_attention, [_rand(1, 3, 2), _rand(1, 3, 2), _rand(1, 3, 2)]),
    "masked_attention": (_masked_attention, [_rand(2, 2, 4), _rand(2, 3, 4), _rand(2, 3, 4)]),
    "inplace": (
        lambda M, x: x.clone().mul_(3).add_(x * x).exp_(),
        [_rand(4)],
    ),
}


def _tiny_jvp(f, arrays, tangents):
    with fwAD.dual_level():
        duals = [fwAD.make_dual(T.tensor(a), T.tensor(t)) for a, t in zip(arrays, tangents)]
        out = f(T, *duals)
        primal, tangent = fwAD.unpack_dual(out)
    return primal.detach().numpy(), tangent.numpy()


def _finite_difference(f, arrays, tangents, eps=1e-6):
    def at(sign):
        return f(T, *(T.tensor(a + sign * eps * t) for a, t in zip(arrays, tangents))).numpy()

    return (at(1) - at(-1)) / (2 * eps)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_matches_finite_differences(name):
    f, arrays = CASES[name]
    tangents = [rng.standard_normal(a.shape) for a in arrays]
    value, jvp = _tiny_jvp(f, arrays, tangents)
    np.testing.assert_allclose(value, f(T, *map(T.tensor, arrays)).numpy(), rtol=0, atol=0)
    fd = _finite_difference(f, arrays, tangents)
    np.testing.assert_allclose(jvp, fd, rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_matches_torch(name):
    f, arrays = CASES[name]
    tangents = [rng.standard_normal(a.shape) for a in arrays]
    _, jvp = _tiny_jvp(f, arrays, tangents)
    with torch_fwAD.dual_level():
        duals = [
            torch_fwAD.make_dual(torch.tensor(a), torch.tensor(t)) for a, t in zip(arrays, tangents)
        ]
        expected = torch_fwAD.unpack_dual(f(torch, *duals)).tangent.numpy()
    np.testing.assert_allclose(jvp, expected, rtol=1e-10, atol=1e-10)


def test_jvp_float32_matches_float64():
    f, arrays = CASES["mlp"]
    tangents = [rng.standard_normal(a.shape) for a in arrays]
    _, jvp64 = _tiny_jvp(f, arrays, tangents)
    with fwAD.dual_level():
        duals = [
            fwAD.make_dual(T.tensor(a, dtype=T.float32), T.tensor(t, dtype=T.float32))
            for a, t in zip(arrays, tangents)
        ]
        jvp32 = fwAD.unpack_dual(f(T, *duals)).tangent
    assert jvp32.dtype == T.float32
    np.testing.assert_allclose(jvp32.numpy(), jvp64, rtol=1e-4, atol=1e-5)


# -- errors, as torch's -----------------------------------------------------------------------


def _outcome(lib, scenario):
    """(exception type name, message) of ``scenario(lib, fwAD module)``, or ("ok", None)."""
    ad = fwAD if lib is T else torch_fwAD
    try:
        scenario(lib, ad)
    except Exception as e:  # (the point is to compare what was raised)
        return type(e).__name__, str(e).replace("torch.", "tinyattn.")  # dtype names
    finally:
        while ad._current_level >= 0:  # leave no level behind a failed scenario
            ad.exit_dual_level()
    return "ok", None


def _x(lib, *shape, dtype=None):
    return lib.ones(*shape, dtype=dtype or lib.float64)


def _in_level(body):
    def scenario(lib, ad):
        with ad.dual_level():
            body(lib, ad)

    return scenario


ERRORS = {
    "outside_a_level": lambda lib, ad: ad.make_dual(_x(lib, 3), _x(lib, 3)),
    "level_0_outside": lambda lib, ad: ad.make_dual(_x(lib, 3), _x(lib, 3), level=0),
    "shape": _in_level(lambda lib, ad: ad.make_dual(_x(lib, 3), _x(lib, 4))),
    "shape_broadcastable": _in_level(lambda lib, ad: ad.make_dual(_x(lib, 3), _x(lib, 1))),
    "int_primal": _in_level(
        lambda lib, ad: ad.make_dual(lib.arange(3), _x(lib, 3)),
    ),
    "int_tangent": _in_level(lambda lib, ad: ad.make_dual(_x(lib, 3), lib.arange(3))),
    "dtype_differs_ok": _in_level(
        lambda lib, ad: ad.make_dual(_x(lib, 3), _x(lib, 3, dtype=lib.float32))
    ),
    "wrong_level": _in_level(lambda lib, ad: ad.make_dual(_x(lib, 3), _x(lib, 3), level=1)),
    "dual_of_dual": _in_level(
        lambda lib, ad: ad.make_dual(ad.make_dual(_x(lib, 3), _x(lib, 3)), _x(lib, 3))
    ),
    "dual_of_result": _in_level(
        lambda lib, ad: ad.make_dual(ad.make_dual(_x(lib, 3), _x(lib, 3)) * 2, _x(lib, 3))
    ),
    "nested_enter": _in_level(lambda lib, ad: ad.enter_dual_level()),
    "nested_context": _in_level(lambda lib, ad: ad.dual_level().__enter__()),
    "exit_not_last": _in_level(lambda lib, ad: ad.exit_dual_level(level=5)),
    "exit_without_level": lambda lib, ad: ad.exit_dual_level(),
    "exit_level_0_without_level": lambda lib, ad: ad.exit_dual_level(level=0),
    "unpack_result_at_other_level": _in_level(
        lambda lib, ad: ad.unpack_dual(ad.make_dual(_x(lib, 3), _x(lib, 3)) * 2, level=3)
    ),
    "unpack_plain_at_other_level_ok": _in_level(
        lambda lib, ad: ad.unpack_dual(_x(lib, 3), level=3)
    ),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_are_torchs(name):
    mine = _outcome(T, ERRORS[name])
    assert mine == _outcome(torch, ERRORS[name])
    assert (mine[0] == "ok") == name.endswith("_ok")


def test_errors_without_torch():
    assert _outcome(T, ERRORS["outside_a_level"])[1].startswith(
        "Trying to create a dual Tensor for forward AD but no level exists"
    )
    kind, msg = _outcome(T, ERRORS["shape"])
    assert kind == "RuntimeError" and "Tensor is of size [3]" in msg and "size [4]" in msg
    assert _outcome(T, ERRORS["nested_enter"]) == (
        "RuntimeError",
        "Nested forward mode AD is not supported at the moment",
    )
    assert _outcome(T, ERRORS["int_primal"])[0] == "ValueError"
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        fwAD.unpack_dual(3.0)
    with fwAD.dual_level(), pytest.raises(TypeError, match="tangent to be a Tensor"):
        fwAD.make_dual(_x(T, 2), [1.0, 2.0])


# -- semantics --------------------------------------------------------------------------------


def test_level_lifecycle_and_namedtuple():
    x, t = T.tensor(_rand(3)), T.tensor(_rand(3))
    assert fwAD.unpack_dual(x) == (x, None)
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, t)
        y = d * d
        unpacked = fwAD.unpack_dual(d)
        assert unpacked.tangent is t and unpacked[1] is t and len(unpacked) == 2
        assert isinstance(unpacked, fwAD.UnpackedDualTensor)
        assert fwAD.unpack_dual(x).tangent is None  # the source is not dual
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), 2 * x.numpy() * t.numpy())
        assert fwAD.unpack_dual(y).tangent is fwAD.unpack_dual(y).tangent  # cached
    assert fwAD.unpack_dual(y).tangent is None and fwAD.unpack_dual(d).tangent is None
    assert fwAD.unpack_dual(y, level=0).tangent is None
    assert not d.requires_grad and d.grad_fn is None  # a plain tensor again
    assert fwAD.enter_dual_level() == 0  # a new level can be entered
    fwAD.exit_dual_level()
    with pytest.raises(ValueError, match="inside"), fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        raise ValueError("inside")
    assert fwAD._current_level == -1 and fwAD.unpack_dual(d).tangent is None


def test_dual_level_as_decorator():
    @fwAD.dual_level()
    def jvp_of_square(x, t):
        return fwAD.unpack_dual(fwAD.make_dual(x, t) ** 2).tangent

    x = T.tensor([1.0, 2.0], dtype=T.float64)
    np.testing.assert_allclose(jvp_of_square(x, T.ones(2, dtype=T.float64)).numpy(), [2.0, 4.0])
    assert fwAD._current_level == -1


def test_tangent_layout_dtype_and_alias():
    x = T.tensor(_rand(2, 3))
    with fwAD.dual_level():
        t_other_layout = T.tensor(_rand(3, 2)).T
        d = fwAD.make_dual(x, t_other_layout)
        got = fwAD.unpack_dual(d).tangent
        assert got is not t_other_layout and got.is_contiguous()
        np.testing.assert_array_equal(got.numpy(), t_other_layout.numpy())
        t32 = T.ones(2, 3, dtype=T.float32)
        d32 = fwAD.make_dual(x, t32)
        assert fwAD.unpack_dual(d32).tangent is t32  # kept as given (torch too)
        assert fwAD.unpack_dual(d32 * 2).tangent.dtype == T.float64  # results: the primal's
        x[0, 0] = 7.0  # the dual aliases the primal
        assert d[0, 0].item() == 7.0


def test_non_float_results_and_zero_derivatives():
    with fwAD.dual_level():
        d = fwAD.make_dual(T.tensor([0.5, -1.5, 2.5]), T.ones(3, dtype=T.float64))
        assert fwAD.unpack_dual(d > 0).tangent is None
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        assert fwAD.unpack_dual(d.detach()).tangent is None
        np.testing.assert_array_equal(fwAD.unpack_dual(d.floor()).tangent.numpy(), [0, 0, 0])
        assert fwAD.unpack_dual(T.ones(3) * 2).tangent is None  # not computed from a dual


def test_inplace_on_a_dual_changes_its_tangent():
    x, t = T.tensor(_rand(3)), T.tensor(_rand(3))
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        before = fwAD.unpack_dual(d).tangent
        d.mul_(2)
        np.testing.assert_allclose(fwAD.unpack_dual(d).tangent.numpy(), 2 * before.numpy())
        y = d.sin()
        first = fwAD.unpack_dual(y).tangent.numpy().copy()
        y.mul_(3)  # the cached tangent of y is stale now
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), 3 * first)
        a = T.zeros(3, dtype=T.float64)
        a.add_(d)  # a plain tensor gains a tangent from an in-place op
        np.testing.assert_allclose(fwAD.unpack_dual(a).tangent.numpy(), 2 * t.numpy())
        assert fwAD.unpack_dual(x).tangent is None


@needs_torch
def test_forward_over_reverse_matches_torch():
    xs, ts, ws = _rand(3), _rand(3), _rand(3)

    def run(lib, ad):
        x = lib.tensor(xs, requires_grad=True)
        w = lib.tensor(ws, requires_grad=True)
        t = lib.tensor(ts, requires_grad=True)
        with ad.dual_level():
            d = ad.make_dual(x, t)
            assert d.requires_grad and not d.is_leaf
            primal, tangent = ad.unpack_dual((lib.sin(d) * w * d).sum())
            assert tangent.requires_grad and primal.requires_grad
            assert ad.unpack_dual(ad.unpack_dual(d).primal).tangent is None
            assert ad.unpack_dual(primal * 2).tangent is None  # the primal carries no tangent
            (tangent * 3 + primal * primal).backward()  # and reverse gradients go through it
        return [v.grad.numpy() for v in (x, w, t)], tangent.detach().numpy()

    (grads, tangent), (expected, expected_tangent) = run(T, fwAD), run(torch, torch_fwAD)
    np.testing.assert_allclose(tangent, expected_tangent, rtol=1e-12)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_plain_tangent_does_not_require_grad():
    with fwAD.dual_level():
        d = fwAD.make_dual(T.tensor(_rand(3)), T.tensor(_rand(3)))
        primal, tangent = fwAD.unpack_dual(d.exp())
        assert not tangent.requires_grad and not primal.requires_grad
        assert fwAD.unpack_dual(primal).tangent is None


def test_make_dual_warns_under_no_grad():
    with fwAD.dual_level(), T.no_grad():
        with pytest.warns(UserWarning, match="no_grad"):
            d = fwAD.make_dual(T.tensor(_rand(3)), T.tensor(_rand(3)))
        assert fwAD.unpack_dual(d * 2).tangent is None  # the documented difference


# -- the tutorial's patterns (torch's forward_ad_usage) --------------------------------------


def _linear_pair():
    model = T.nn.Linear(5, 5)
    params = {name: p.detach().numpy().copy() for name, p in model.named_parameters()}
    tangents = {name: rng.random(p.shape) for name, p in params.items()}
    inputs = rng.standard_normal((16, 5))
    return model, params, tangents, inputs


def _expected_linear_jvp(params, tangents, inputs):
    return inputs @ tangents["weight"].T + tangents["bias"]


def test_tutorial_module_with_dual_parameters():
    model, params, tangents, inputs = _linear_pair()
    model.double()
    with fwAD.dual_level():
        for name, p in list(model.named_parameters()):
            delattr(model, name)
            setattr(model, name, fwAD.make_dual(p, T.tensor(tangents[name])))
        out = model(T.tensor(inputs))
        jvp = fwAD.unpack_dual(out).tangent
    np.testing.assert_allclose(jvp.detach().numpy(), _expected_linear_jvp(params, tangents, inputs))


def test_tutorial_functional_call():
    from tinyattn.func import functional_call

    model, params, tangents, inputs = _linear_pair()
    model.double()
    with fwAD.dual_level():
        dual_params = {
            name: fwAD.make_dual(p, T.tensor(tangents[name]))
            for name, p in model.named_parameters()
        }
        out = functional_call(model, dual_params, T.tensor(inputs))
        jvp = fwAD.unpack_dual(out).tangent
    np.testing.assert_allclose(jvp.detach().numpy(), _expected_linear_jvp(params, tangents, inputs))


def test_tutorial_basic():
    primal, tangent = T.tensor(_rand(10, 10)), T.tensor(_rand(10, 10))
    plain = T.tensor(_rand(10, 10))
    with fwAD.dual_level():
        dual_input = fwAD.make_dual(primal, tangent)
        assert fwAD.unpack_dual(dual_input).tangent is tangent
        dual_input_alt = fwAD.make_dual(primal, tangent.T)
        assert fwAD.unpack_dual(dual_input_alt).tangent is not tangent
        dual_output = dual_input**2 + plain**2
        jvp = fwAD.unpack_dual(dual_output).tangent
    np.testing.assert_allclose(jvp.numpy(), 2 * primal.numpy() * tangent.numpy())
    assert fwAD.unpack_dual(dual_output).tangent is None


def test_unpack_after_backward_freed_the_graph():
    x = T.tensor(_rand(3), requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, T.ones(3, dtype=T.float64))
        y = (d.sin() * d).sum()
        before = (d.cos() * d + d.sin()).sum()
        tangent = fwAD.unpack_dual(before).tangent  # asked for before backward: kept
        before.backward()
        assert fwAD.unpack_dual(before).tangent is tangent
        y.backward()
        with pytest.raises(RuntimeError, match="call unpack_dual before backward"):
            fwAD.unpack_dual(y)


@needs_torch
def test_namespace_is_torchs():
    assert sorted(fwAD.__all__) == sorted(torch_fwAD.__all__)
    assert T.autograd.forward_ad is fwAD


def test_inplace_write_before_unpack_raises_unpacking_first_works():
    x = T.ones(3, dtype=T.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, T.ones(3, dtype=T.float64))
        y, z = d * d, d * d
        np.testing.assert_allclose(fwAD.unpack_dual(z).tangent.numpy(), [2.0, 2.0, 2.0])
        x.add_(1)  # modifies what y's and z's MulBackward0 saved
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            fwAD.unpack_dual(y)
        np.testing.assert_allclose(fwAD.unpack_dual(z).tangent.numpy(), [2.0, 2.0, 2.0])
