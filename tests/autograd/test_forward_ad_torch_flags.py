"""forward_ad as torch shows it: the flags of dual tensors, custom Functions' ``jvp``.

Each scenario runs with ``lib`` = tinyattn and, when installed, torch; what it records
(flags, errors, tangents) must be equal. The tinyattn half also asserts the expected
values directly, so the file tests something without torch too.
"""

import numpy as np
import pytest

import tinyattn as T
import tinyattn.autograd.forward_ad as fwAD

try:
    import torch
except ImportError:  # the parity halves skip; the direct assertions still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(0)
X, TAN, W = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(3)


def _fw(lib):
    return T.autograd.forward_ad if lib is T else torch.autograd.forward_ad


def _flags(t) -> tuple:
    return (t.requires_grad, t.grad_fn is None, t.is_leaf)


def _error(f) -> str | None:
    try:
        f()
    except (RuntimeError, NotImplementedError) as e:
        # (tinyattn's autograd errors start with the function's name: "backward: ...")
        return f"{type(e).__name__}: {str(e).removeprefix('backward: ')}"
    return None


def _flag_scenario(lib) -> dict:
    """Flags of duals and of results, inside the level and after it."""
    fw = _fw(lib)
    x, t, w = lib.tensor(X), lib.tensor(TAN), lib.tensor(W, requires_grad=True)
    seen = {}
    with fw.dual_level():
        d = fw.make_dual(x, t)
        y = (d * 2).exp()
        seen["dual"], seen["result"] = _flags(d), _flags(y)
        seen["mixed"] = _flags(y * w)  # reaches w: in the reverse graph
        seen["dual_of_w"] = _flags(fw.make_dual(w, t))
        seen["backward"] = _error(lambda: y.sum().backward())
        seen["retain_grad"] = _error(y.retain_grad)
        seen["register_hook"] = _error(lambda: y.register_hook(lambda g: g))
        seen["numpy"] = y.numpy().tolist()
        seen["repr_has_grad_fn"] = "grad_fn" in repr(y)
        z = x.clone()
        z.mul_(d)  # a plain tensor written with a dual: forward-only too
        seen["inplace"] = _flags(z)
        seen["inplace_tangent"] = fw.unpack_dual(z).tangent.tolist()
        (y * w).sum().backward()  # the mixed graph still backpropagates to w
        seen["w_grad"] = w.grad.tolist()
    seen["after"] = (_flags(d), _flags(y))
    return seen


def test_flags_of_duals_and_results():
    seen = _flag_scenario(T)
    assert seen["dual"] == seen["result"] == seen["inplace"] == (False, True, True)
    assert seen["mixed"] == (True, False, False) and seen["dual_of_w"] == (True, False, False)
    assert "does not require grad" in seen["backward"]
    assert "requires_grad=False" in seen["retain_grad"]
    assert "doesn't require gradient" in seen["register_hook"]
    assert not seen["repr_has_grad_fn"]
    np.testing.assert_allclose(seen["inplace_tangent"], X * TAN)
    np.testing.assert_allclose(seen["w_grad"], np.exp(2 * X))
    assert seen["after"] == ((False, True, True), (False, True, True))


@needs_torch
def test_flags_match_torch():
    ours, theirs = _flag_scenario(T), _flag_scenario(torch)
    for key in ("numpy", "inplace_tangent", "w_grad"):
        np.testing.assert_allclose(ours.pop(key), theirs.pop(key), rtol=1e-6)
    assert ours == theirs


def _leaf_scenario(lib) -> dict:
    """``requires_grad_()`` on a dual: a leaf with ``.grad`` that keeps its tangent."""
    fw = _fw(lib)
    with fw.dual_level():
        d = fw.make_dual(lib.tensor(X), lib.tensor(TAN)).requires_grad_()
        flags = _flags(d)
        y = d * d
        tangent = fw.unpack_dual(y).tangent
        y.sum().backward()
        return {
            "flags": flags,
            "tangent": tangent.tolist(),
            "tangent_requires_grad": tangent.requires_grad,
            "grad": d.grad.tolist(),
        }


def test_requires_grad_on_a_dual_makes_a_leaf():
    seen = _leaf_scenario(T)
    assert seen["flags"] == (True, True, True) and seen["tangent_requires_grad"]
    np.testing.assert_allclose(seen["tangent"], 2 * X * TAN)
    np.testing.assert_allclose(seen["grad"], 2 * X)


@needs_torch
def test_requires_grad_on_a_dual_matches_torch():
    ours, theirs = _leaf_scenario(T), _leaf_scenario(torch)
    for key in ("tangent", "grad"):
        np.testing.assert_allclose(ours.pop(key), theirs.pop(key), rtol=1e-6)
    assert ours == theirs


# -- custom Functions with jvp -----------------------------------------------------------------


def _functions(lib) -> dict:
    class Exp(lib.autograd.Function):  # the tutorial's: forward and jvp, no backward
        @staticmethod
        def forward(ctx, foo):
            result = lib.exp(foo)
            ctx.result = result
            return result

        @staticmethod
        def jvp(ctx, g):
            out = g * ctx.result
            del ctx.result
            return out

    class ScaledMul(lib.autograd.Function):  # save_for_forward, a non-tensor, two outputs
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_forward(a, b)
            ctx.save_for_backward(a, b)
            ctx.k = k
            return a * b * k, a + b

        @staticmethod
        def jvp(ctx, ta, tb, tk):
            assert tk is None and lib.is_grad_enabled()
            a, b = ctx.saved_tensors
            return (ta * b + a * tb) * ctx.k, ta + tb

        @staticmethod
        def backward(ctx, g_prod, g_sum):
            a, b = ctx.saved_tensors
            return g_prod * b * ctx.k + g_sum, g_prod * a * ctx.k + g_sum, None

    class Double(lib.autograd.Function):  # backward only: double vjp here, an error in torch
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Bare(lib.autograd.Function):  # neither
        @staticmethod
        def forward(ctx, a):
            return a * 2

    def with_jvp(body):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def jvp(ctx, g):
                return body(g)

        return Bad

    return {
        "Exp": Exp,
        "ScaledMul": ScaledMul,
        "Double": Double,
        "Bare": Bare,
        "two_tangents": with_jvp(lambda g: (g, g)),
        "wrong_shape": with_jvp(lambda g: g[:2]),
        "not_a_tensor": with_jvp(lambda g: 3.0),
    }


def _jvp_scenario(lib) -> dict:
    fw, fns = _fw(lib), _functions(lib)
    x, t = lib.tensor(X), lib.tensor(TAN)
    w = lib.tensor(W, requires_grad=True)
    seen = {}
    with fw.dual_level():
        d = fw.make_dual(x, t)
        out = fns["Exp"].apply(d)
        seen["exp"] = (_flags(out), fw.unpack_dual(out).tangent.tolist())
        prod, total = fns["ScaledMul"].apply(d, w, 3.0)  # w: no tangent (zeros), requires grad
        seen["prod"] = (_flags(prod), type(prod.grad_fn).__name__ != "NoneType")
        seen["prod_tangent"] = fw.unpack_dual(prod).tangent.tolist()
        seen["sum_tangent"] = fw.unpack_dual(total).tangent.tolist()
        (prod.sum() + total.sum()).backward()  # the reverse graph goes through backward
        seen["w_grad"] = w.grad.tolist()
        seen["plain"] = fw.unpack_dual(fns["Exp"].apply(x)).tangent  # no dual input: None
        seen["bare"] = _error(lambda: fns["Bare"].apply(d))
        for name in ("two_tangents", "wrong_shape", "not_a_tensor"):
            seen[name] = _error(lambda name=name: fns[name].apply(d))
        p = fw.make_dual(lib.tensor(X, requires_grad=True), t)
        seen["jvp_only_backward"] = _error(lambda: fns["Exp"].apply(p).sum().backward())
    return seen


def test_custom_function_jvp():
    seen = _jvp_scenario(T)
    assert seen["exp"][0] == (False, True, True)
    np.testing.assert_allclose(seen["exp"][1], TAN * np.exp(X))
    assert seen["prod"] == ((True, False, False), True)
    np.testing.assert_allclose(seen["prod_tangent"], TAN * W * 3)
    np.testing.assert_allclose(seen["sum_tangent"], TAN)
    np.testing.assert_allclose(seen["w_grad"], X * 3 + 1)
    assert seen["plain"] is None
    assert "You must implement the jvp function" in seen["bare"]
    assert "invalid number of forward gradients (expected 1 but got 2)" in seen["two_tangents"]
    assert "different size" in seen["wrong_shape"]
    assert "expected Variable or None (got float)" in seen["not_a_tensor"]
    assert "You must implement either the backward or vjp" in seen["jvp_only_backward"]


@needs_torch
def test_custom_function_jvp_matches_torch():
    ours, theirs = _jvp_scenario(T), _jvp_scenario(torch)
    for key in ("prod_tangent", "sum_tangent", "w_grad"):
        np.testing.assert_allclose(ours.pop(key), theirs.pop(key), rtol=1e-6)
    (of, ot), (tf, tt) = ours.pop("exp"), theirs.pop("exp")
    assert of == tf
    np.testing.assert_allclose(ot, tt, rtol=1e-6)
    assert ours == theirs


def test_backward_only_function_gets_its_tangent_by_double_vjp():
    """tinyattn's extension (torch raises): a Function without jvp but with backward."""
    with fwAD.dual_level():
        out = _functions(T)["Double"].apply(fwAD.make_dual(T.tensor(X), T.tensor(TAN)))
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), 2 * TAN)
        assert _flags(out) == (False, True, True)


def _save_for_forward_error(lib) -> str:
    class Saves(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_forward(a, 3.0)
            return a * 1

        @staticmethod
        def jvp(ctx, g):
            return g

    fw = _fw(lib)
    with fw.dual_level(), pytest.raises(AssertionError) as info:
        Saves.apply(fw.make_dual(lib.tensor(X), lib.tensor(TAN)))
    return str(info.value)


def test_save_for_forward_checks_its_arguments():
    assert "argument 1 is of type float" in _save_for_forward_error(T)


@needs_torch
def test_save_for_forward_error_is_torchs():
    assert _save_for_forward_error(T).startswith(_save_for_forward_error(torch))


def test_gradcheck_forward_ad_uses_jvp():
    """The tutorial's ``gradcheck(check_forward_ad=True, check_backward_ad=False, ...)``: a
    right jvp passes, a wrong one fails."""
    exp = _functions(T)["Exp"]
    x = T.tensor(X, requires_grad=True)
    options = dict(
        check_forward_ad=True,
        check_backward_ad=False,
        check_undefined_grad=False,
        check_batched_grad=False,
    )
    assert T.autograd.gradcheck(exp.apply, (x,), **options)

    class WrongExp(exp):
        @staticmethod
        def jvp(ctx, g):
            return g * 2 * ctx.result

    assert not T.autograd.gradcheck(WrongExp.apply, (x,), raise_exception=False, **options)


# -- flags of tangents -------------------------------------------------------------------------

TANGENT_CASES = {  # y(M, dual of a w that requires grad, dual of a plain x, w, x)
    "mul_plain": lambda M, dw, dx, w, x: dw * x,
    "add_plain": lambda M, dw, dx, w, x: dw + x,
    "view": lambda M, dw, dx, w, x: dw.view(3),
    "exp": lambda M, dw, dx, w, x: dw.exp(),
    "mul_number": lambda M, dw, dx, w, x: dw * 2,
    "sum": lambda M, dw, dx, w, x: dw.sum(),
    "dot": lambda M, dw, dx, w, x: dw @ x,
    "neg": lambda M, dw, dx, w, x: -dw,
    "forward_only_times_w": lambda M, dw, dx, w, x: dx * w,
    "forward_only_times_number": lambda M, dw, dx, w, x: dx * 2,
    "linear": lambda M, dw, dx, w, x: M.nn.functional.linear(x[None], dw[None]),
    "sin_sum": lambda M, dw, dx, w, x: dw.sin().sum(),
    "where": lambda M, dw, dx, w, x: M.where(x > 0, dw, x),
    "softmax": lambda M, dw, dx, w, x: M.softmax(dw, 0),
    "cat": lambda M, dw, dx, w, x: M.cat([dw, x]),
}


def _tangent_flags(lib, f) -> tuple:
    """(requires_grad, grad_fn is None, the tangent's own tangent is None, value, w.grad after
    backpropagating the tangent) of ``unpack_dual(f(...)).tangent``."""
    fw = _fw(lib)
    w, x = lib.tensor(W, requires_grad=True), lib.tensor(X)
    with fw.dual_level():
        y = f(lib, fw.make_dual(w, lib.tensor(TAN)), fw.make_dual(x, lib.tensor(TAN)), w, x)
        tangent = fw.unpack_dual(y).tangent
        flags = (tangent.requires_grad, tangent.grad_fn is None)
        flags += (fw.unpack_dual(tangent).tangent is None,)
        if tangent.requires_grad:
            try:
                tangent.sum().backward()
            except RuntimeError:  # (torch's softmax: its saved output was changed in place)
                return flags, tangent.detach().numpy(), "error"
    # (+ zeros: torch's zero gradient is a ZeroTensor, which has no storage to read)
    grad = None if w.grad is None else (lib.zeros(3, dtype=lib.float64) + w.grad).tolist()
    return flags, tangent.detach().numpy(), grad


def test_tangent_requires_grad_when_a_formula_reads_a_tensor_that_does():
    flags = {name: _tangent_flags(T, f)[0] for name, f in TANGENT_CASES.items()}
    assert flags["exp"] == flags["mul_number"] == flags["linear"] == (True, False, True)
    assert flags["add_plain"] == flags["view"] == flags["cat"] == (False, True, True)
    assert flags["forward_only_times_number"] == (False, True, True)
    _, tangent, grad = _tangent_flags(T, TANGENT_CASES["mul_plain"])
    np.testing.assert_allclose(tangent, TAN * X)
    assert grad == [0.0, 0.0, 0.0]  # (torch's: the zero term of the formula)


@needs_torch
@pytest.mark.parametrize("name", sorted(TANGENT_CASES))
def test_tangent_flags_match_torch(name):
    (ours, tangent, grad) = _tangent_flags(T, TANGENT_CASES[name])
    (theirs, expected, expected_grad) = _tangent_flags(torch, TANGENT_CASES[name])
    assert ours == theirs
    np.testing.assert_allclose(tangent, expected, rtol=1e-10)
    if expected_grad == "error":
        return
    assert (grad is None) == (expected_grad is None)
    if grad is not None:
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-8, atol=1e-12)
