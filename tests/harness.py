"""Shared checks for differentiable ops.

``check_op(f, *arrays)`` runs the same function ``f(lib, *tensors)`` against
tinyattn and (when installed) torch:

1. a float64 central-finite-difference gradcheck of tinyattn over every element
   of every floating input;
2. torch parity in float64 and float32: forward values and the gradients of
   every input for a random upstream gradient;
3. when every op in the graph supports ``create_graph=True``: a float64
   ``gradgradcheck`` (finite differences of the vector-Jacobian product with
   respect to the inputs and the upstream gradient, every element) and torch
   parity of second derivatives in float64 and float32, both as a double
   ``backward`` and as ``autograd.grad`` of a gradient.

Every ``Function`` class seen in the graphs it checks is recorded, so
``test_registry.py`` can fail when an op has no gradcheck or no parity test.

Complex arrays (``rand(..., complex=True)``) become complex128 tensors for the
gradchecks (each complex element checked as its real and imaginary parts) and
complex128/complex64 for parity in float64/float32; a complex output's upstream
gradient is complex, and a loss from it is the real number ``Re(sum(conj(seed) * out))``,
whose gradients torch reports by its convention (docs/complex.md).
"""

from __future__ import annotations

import warnings

import numpy as np

import tinyattn
from tinyattn.autograd.gradcheck import gradcheck, gradgradcheck

try:
    import torch
except ImportError:  # parity tests skip; gradchecks still run
    torch = None

GRADCHECKED: set[str] = set()
PARITY: set[str] = set()
GRADGRADCHECKED: set[str] = set()  # second order: gradgradcheck
PARITY2: set[str] = set()  # second order: torch parity of double backward
TOL = {np.float64: (1e-10, 1e-10), np.float32: (1e-5, 1e-5)}


def _functions_in_graph(outputs) -> set[str]:
    """Names of the Function classes of every node reachable from ``outputs``."""
    return {cls.__name__ for cls in _function_classes(outputs)}


def _function_classes(outputs) -> set[type]:
    """The Function classes of every node reachable from ``outputs``."""
    seen, names, stack = set(), set(), []
    for o in outputs:
        if isinstance(o, tinyattn.Tensor) and o.grad_fn is not None:
            stack.append(o.grad_fn)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        fn = getattr(node, "fn", None)
        if isinstance(fn, type):
            names.add(fn)
        op_node = getattr(node, "op_node", None)
        if op_node is not None:
            stack.append(op_node)
        stack.extend(n for n in node.next_nodes if n is not None)
    return names


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _float_outputs(out, lib):
    """The outputs that carry gradients: floating and complex tensors."""
    return [
        o
        for o in _as_list(out)
        if isinstance(o, lib.Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex)
    ]


_COMPLEX_OF = {np.float64: np.complex128, np.float32: np.complex64}


def _differentiable(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind in "fc"


def _to_lib(lib, arrays, dtype, grad_mask):
    tensors = []
    for a, g in zip(arrays, grad_mask):
        if isinstance(a, np.ndarray):
            if a.dtype.kind == "f":
                arr = a.astype(dtype)
            elif a.dtype.kind == "c":  # the complex dtype of that precision
                arr = a.astype(_COMPLEX_OF[dtype])
            else:
                arr = a
            t = lib.tensor(arr.copy()) if lib is not tinyattn else tinyattn.tensor(arr.copy())
            if g and arr.dtype.kind in "fc":
                t.requires_grad_(True)
            tensors.append(t)
        else:
            tensors.append(a)
    return tensors


def _random_like(rng, shape, dtype, is_complex: bool) -> np.ndarray:
    """Standard normal values of ``shape``: complex (of ``dtype``'s precision) if asked."""
    values = rng.standard_normal(shape)
    if is_complex:
        return np.asarray(values + 1j * rng.standard_normal(shape)).astype(_COMPLEX_OF[dtype])
    return values.astype(dtype)


def _real_dot(lib, t, seed: np.ndarray):
    """``sum(t * seed)``, for complex ``t`` ``Re(sum(conj(seed) * t))``: the real loss whose
    gradient for ``t`` is ``seed`` under torch's convention."""
    if seed.dtype.kind == "c":
        return (t * lib.tensor(np.conj(seed))).real.sum()
    return (t * lib.tensor(seed)).sum()


def run_gradcheck(f, *arrays, grad=None, atol=1e-6, rtol=1e-5, eps=1e-6):
    """float64 finite-difference gradcheck of ``f(tinyattn, ...)`` over every element."""
    grad = grad or [_differentiable(a) for a in arrays]
    xs = _to_lib(tinyattn, arrays, np.float64, grad)
    assert any(isinstance(x, tinyattn.Tensor) and x.requires_grad for x in xs), "nothing to check"
    out = f(tinyattn, *xs)
    GRADCHECKED.update(_functions_in_graph(_as_list(out)))
    assert gradcheck(lambda *ys: f(tinyattn, *ys), xs, eps=eps, atol=atol, rtol=rtol)


def run_parity(
    f, *arrays, grad=None, dtypes=(np.float64, np.float32), atol=None, rtol=None, seed=0
):
    """Forward values and input gradients of tinyattn vs torch, per dtype."""
    if torch is None:
        return
    grad = grad or [_differentiable(a) for a in arrays]
    for dtype in dtypes:
        a_tol, r_tol = TOL[dtype]
        a_tol, r_tol = atol or a_tol, rtol or r_tol
        ours = _to_lib(tinyattn, arrays, dtype, grad)
        theirs = _to_lib(torch, arrays, dtype, grad)
        out_o, out_t = f(tinyattn, *ours), f(torch, *theirs)
        PARITY.update(_functions_in_graph(_as_list(out_o)))
        fo, ft = _as_list(out_o), _as_list(out_t)
        assert len(fo) == len(ft)
        for o, t in zip(fo, ft):
            if isinstance(t, torch.Tensor):
                assert tuple(o.shape) == tuple(t.shape), (o.shape, t.shape)
                tv = t.detach().resolve_conj().numpy()  # (torch's conj() is a lazy view)
                assert o.dtype.name == str(t.dtype).replace("torch.", ""), (o.dtype, t.dtype)
                np.testing.assert_allclose(o.detach().numpy(), tv, atol=a_tol, rtol=r_tol)
            else:
                assert o == t
        float_o, float_t = _float_outputs(out_o, tinyattn), _float_outputs(out_t, torch)
        pairs = [(o, t) for o, t in zip(float_o, float_t) if t.requires_grad]
        if not pairs:
            continue
        rng = np.random.default_rng(seed)
        seeds = [_random_like(rng, tuple(t.shape), dtype, t.is_complex()) for _, t in pairs]
        if any(t.is_complex() for _, t in pairs):  # complex upstream gradients, as given
            tinyattn.autograd.backward([o for o, _ in pairs], [tinyattn.tensor(s) for s in seeds])
            torch.autograd.backward([t for _, t in pairs], [torch.tensor(s) for s in seeds])
        else:
            sum((o * tinyattn.tensor(s)).sum() for (o, _), s in zip(pairs, seeds)).backward()
            sum((t * torch.tensor(s)).sum() for (_, t), s in zip(pairs, seeds)).backward()
        for i, (xo, xt) in enumerate(zip(ours, theirs)):
            if isinstance(xt, torch.Tensor) and xt.requires_grad:
                assert (xo.grad is None) == (xt.grad is None), f"input {i}: grad presence differs"
                if xt.grad is not None:
                    np.testing.assert_allclose(
                        xo.grad.numpy(),
                        xt.grad.resolve_conj().numpy(),
                        atol=a_tol * 10,
                        rtol=r_tol * 10,
                        err_msg=f"gradient of input {i} ({dtype.__name__})",
                    )


def supports_second_order(f, *arrays, grad=None) -> bool:
    """Whether every op in the graph of ``f`` supports ``create_graph=True``."""
    grad = grad or [_differentiable(a) for a in arrays]
    xs = _to_lib(tinyattn, arrays, np.float64, grad)
    classes = _function_classes(_as_list(f(tinyattn, *xs)))
    return bool(classes) and all(getattr(c, "supports_create_graph", False) for c in classes)


def run_gradgradcheck(f, *arrays, grad=None, atol=1e-6, rtol=1e-5, eps=1e-6):
    """float64 finite-difference check of second derivatives of ``f(tinyattn, ...)``."""
    grad = grad or [_differentiable(a) for a in arrays]
    xs = _to_lib(tinyattn, arrays, np.float64, grad)
    GRADGRADCHECKED.update(_functions_in_graph(_as_list(f(tinyattn, *xs))))
    assert gradgradcheck(lambda *ys: f(tinyattn, *ys), xs, eps=eps, atol=atol, rtol=rtol)


def _dense(t, x):
    """A gradient as an array (zeros for None, as an unused input's)."""
    if t is None:
        return np.zeros(tuple(x.shape))
    if torch is not None and isinstance(t, torch.Tensor):
        values = t.detach().numpy(force=True)  # (may be a ZeroTensor)
    else:
        values = t.detach().numpy()
    return values.astype(np.complex128 if values.dtype.kind == "c" else np.float64)


def _first_grads(lib, out, xs, seeds, via_backward: bool):
    """d(sum(out * seed))/dx with a graph: by ``autograd.grad`` or by ``backward``'s ``.grad``."""
    outs = [o for o in _float_outputs(out, lib) if o.requires_grad]
    loss = sum(_real_dot(lib, o, s) for o, s in zip(outs, seeds))
    if via_backward:
        with warnings.catch_warnings():  # torch warns of the .grad -> graph reference cycle
            warnings.simplefilter("ignore", UserWarning)
            loss.backward(create_graph=True)
        return [x.grad for x in xs]
    return list(lib.autograd.grad(loss, xs, create_graph=True, allow_unused=True))


def _second_grads(lib, out, xs, seeds, ws, double_backward: bool):
    """Second derivatives d(sum(grad * w))/dx, by two routes (see ``run_parity2``)."""
    grads = _first_grads(lib, out, xs, seeds, via_backward=not double_backward)
    terms = [_real_dot(lib, g, w) for g, w in zip(grads, ws) if g is not None]
    terms = [t for t in terms if t.requires_grad]
    if not terms:
        return [None] * len(xs)
    loss2 = sum(terms)
    if double_backward:  # autograd.grad(create_graph) then backward() into .grad
        loss2.backward()
        return [x.grad for x in xs]
    return list(lib.autograd.grad(loss2, xs, allow_unused=True))  # .grad holds the first grads


def run_parity2(
    f, *arrays, grad=None, dtypes=(np.float64, np.float32), atol=None, rtol=None, seed=0, tol32=None
):
    """Second derivatives of tinyattn vs torch: double backward and autograd.grad of a gradient.

    ``tol32``: an (atol, rtol) pair for float32 only, for ops whose second derivative is
    ill-conditioned in float32 (torch's own float32 value is as far from the truth).
    """
    if torch is None:
        return
    grad = grad or [_differentiable(a) for a in arrays]
    for dtype in dtypes:
        a_tol, r_tol = TOL[dtype]
        a_tol, r_tol = (atol or a_tol) * 10, (rtol or r_tol) * 10
        if tol32 is not None and dtype == np.float32:
            a_tol, r_tol = tol32
        for double_backward in (True, False):
            results = []
            for lib in (tinyattn, torch):
                xs = _to_lib(lib, arrays, dtype, grad)
                diff = [x for x in xs if isinstance(x, lib.Tensor) and x.requires_grad]
                out = f(lib, *xs)
                if lib is tinyattn:
                    PARITY2.update(_functions_in_graph(_as_list(out)))
                rng = np.random.default_rng(seed + 1)
                outs = [o for o in _float_outputs(out, lib) if o.requires_grad]
                seeds = [_random_like(rng, tuple(o.shape), dtype, o.is_complex()) for o in outs]
                ws = [_random_like(rng, tuple(x.shape), dtype, x.is_complex()) for x in diff]
                got = _second_grads(lib, out, diff, seeds, ws, double_backward)
                results.append([_dense(g, x) for g, x in zip(got, diff)])
            for i, (o, t) in enumerate(zip(*results)):
                np.testing.assert_allclose(
                    o,
                    t,
                    atol=a_tol,
                    rtol=r_tol,
                    err_msg=f"second derivative, input {i} ({dtype.__name__}, "
                    f"{'double backward' if double_backward else 'grad of grad'})",
                )


def check_op(f, *arrays, grad=None, gradcheck_kw=None, parity_kw=None, parity2_kw=None):
    """Gradcheck (float64) and torch parity (float64, float32) of ``f(lib, *tensors)``.

    Second order too (``run_gradgradcheck``, ``run_parity2``) when every op in the
    graph supports ``create_graph=True``.
    """
    run_gradcheck(f, *arrays, grad=grad, **(gradcheck_kw or {}))
    run_parity(f, *arrays, grad=grad, **(parity_kw or {}))
    if supports_second_order(f, *arrays, grad=grad):
        run_gradgradcheck(f, *arrays, grad=grad, **(gradcheck_kw or {}))
        run_parity2(f, *arrays, grad=grad, **(parity_kw or {}), **(parity2_kw or {}))


def rand(*shape, low=-1.0, high=1.0, seed=None, complex=False):
    """Uniform values in [low, high); ``complex=True``: real and imaginary parts each so."""
    rng = np.random.default_rng(seed if seed is not None else abs(hash(shape)) % 2**32)
    values = rng.uniform(low, high, shape)
    if complex:
        return np.asarray(values + 1j * rng.uniform(low, high, shape))
    return values
