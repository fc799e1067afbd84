"""Finite-difference gradient checking.

For each element ``x_k`` of each input that requires grad, the central
difference ``(f(x + eps e_k) - f(x - eps e_k)) / (2 eps)`` estimates the
derivative of every output element; the analytic gradients from ``backward``
(one backward per output element, i.e. the full Jacobian) must match within
``atol + rtol * |numeric|``. Run it in float64: float32 rounding swamps eps.
"""

from __future__ import annotations

import numpy as np

from .tensor_base import TensorBase


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` with a report of the worst mismatch."""


def _outputs(fn, inputs) -> list:
    out = fn(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o for o in outs if isinstance(o, TensorBase) and o._data.dtype.kind == "f"]


def _jacobians_numeric(fn, inputs, eps):
    from .grad_mode import no_grad

    with no_grad():
        base = _outputs(fn, inputs)
    jac = {}
    for i, x in enumerate(inputs):
        if not getattr(x, "requires_grad", False):
            continue
        data = x._data
        flat = data.reshape(-1) if data.flags.c_contiguous else None
        cols = []
        for k in range(data.size):
            idx = np.unravel_index(k, data.shape)
            orig = data[idx].copy()
            with no_grad():
                data[idx] = orig + eps
                plus = [o._data.astype(np.float64).copy() for o in _outputs(fn, inputs)]
                data[idx] = orig - eps
                minus = [o._data.astype(np.float64).copy() for o in _outputs(fn, inputs)]
                data[idx] = orig
            cols.append([(p - m).reshape(-1) / (2 * eps) for p, m in zip(plus, minus)])
        del flat
        jac[i] = cols
    return base, jac


def _worst_mismatch(fn, inputs, diff, eps, atol, rtol):
    """(excess, input, element, output, output element, analytic, numeric, error), or None."""
    from . import grad as autograd_grad

    base, numeric = _jacobians_numeric(fn, inputs, eps)
    worst = None
    for o_idx, out_ref in enumerate(base):
        # numeric Jacobian of this output, per input: (input elements, output elements)
        num_jac = {
            i: np.reshape(
                [col[o_idx] for col in numeric[i]], (inputs[i]._data.size, out_ref._data.size)
            )
            for i in diff
        }
        for j in range(out_ref._data.size):
            outs = _outputs(fn, inputs)
            out = outs[o_idx]
            if not out.requires_grad:
                analytic = [None for _ in diff]
            else:
                seed = np.zeros(out._data.shape, dtype=out._data.dtype)
                seed.reshape(-1)[j] = 1
                analytic = autograd_grad(out, [inputs[i] for i in diff], seed, allow_unused=True)
            for a_tensor, i in zip(analytic, diff):
                num = num_jac[i][:, j]
                ana = np.zeros(num.size) if a_tensor is None else a_tensor._data.reshape(-1)
                found = _worst_in_row(ana.astype(np.float64), num, atol, rtol)
                if found is not None and (worst is None or found[0] > worst[0]):
                    excess, k = found
                    worst = (
                        excess,
                        i,
                        k,
                        o_idx,
                        j,
                        float(ana[k]),
                        float(num[k]),
                        abs(ana[k] - num[k]),
                    )
    return worst


def _worst_in_row(ana: np.ndarray, num: np.ndarray, atol: float, rtol: float):
    """(excess, element) of the worst element with ``|ana - num| > atol + rtol |num|`` or a
    non-finite ``ana`` (excess inf when the error is not finite), or None if all agree."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        err = np.abs(ana - num)
        tol = atol + rtol * np.abs(num)
        bad = ~np.isfinite(ana) | (err > tol)
        if not bad.any():
            return None
        excess = np.where(np.isfinite(err), err / tol, np.inf)
    excess = np.where(bad, excess, -np.inf)
    k = int(np.argmax(excess))
    return float(excess[k]), k


def gradcheck(
    fn,
    inputs,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    **_ignored,
) -> bool:
    """Compare backward's gradients of ``fn(*inputs)`` with central finite differences.

    Every element of every input with ``requires_grad=True`` is perturbed. Returns
    True, or raises ``GradcheckError`` (or returns False with
    ``raise_exception=False``) naming the input, the element, the analytic and
    numeric values and the error of the worst mismatch.
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, TensorBase) and x._requires_grad]
    if not diff:
        raise ValueError("gradcheck: no input requires grad; nothing to check")
    for i in diff:
        if inputs[i]._data.dtype != np.float64:
            import warnings

            warnings.warn(
                f"gradcheck: input {i} is {inputs[i].dtype}, not float64: expect false alarms",
                stacklevel=2,
            )
    worst = _worst_mismatch(fn, inputs, diff, eps, atol, rtol)
    if worst is None:
        return True
    _, i, k, o_idx, j, ana, num, err = worst
    idx = np.unravel_index(k, inputs[i]._data.shape)
    msg = (
        f"gradcheck failed: d output[{o_idx}][flat {j}] / d input[{i}][{tuple(int(v) for v in idx)}]: "
        f"analytic {ana:.8g}, numeric {num:.8g}, error {err:.3g} "
        f"(allowed {atol} + {rtol} * |numeric|)"
    )
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    seed: int = 0,
    **_ignored,
) -> bool:
    """Check second derivatives: ``gradcheck`` of the vector-Jacobian product of ``func``.

    The function checked is ``(inputs, v) -> autograd.grad(func(inputs), inputs, v,
    create_graph=True)``; finite differences are taken with respect to every element
    of the inputs AND of the upstream gradients ``v`` (random float64 tensors when
    ``grad_outputs`` is None), as torch's ``gradgradcheck``.
    """
    from . import grad as autograd_grad

    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    n = len(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, TensorBase) and x._requires_grad]
    if not diff:
        raise ValueError("gradgradcheck: no input requires grad; nothing to check")
    outs = [o for o in _outputs(func, inputs) if o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = [
            TensorBase._make(rng.standard_normal(o._data.shape).astype(o._data.dtype)) for o in outs
        ]
        for v in grad_outputs:
            v._requires_grad = True
    grad_outputs = (
        tuple(grad_outputs) if isinstance(grad_outputs, (list, tuple)) else (grad_outputs,)
    )

    def vjp(*args):
        from .grad_mode import enable_grad

        xs, vs = args[:n], args[n:]
        with enable_grad():  # also while gradcheck perturbs the inputs under no_grad
            ys = [o for o in _outputs(func, xs) if o.requires_grad]
            grads = autograd_grad(
                ys, [xs[i] for i in diff], list(vs), create_graph=True, allow_unused=True
            )
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        vjp, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception
    )
