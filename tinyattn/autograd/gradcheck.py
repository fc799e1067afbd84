"""Finite-difference gradient checking.

For each element ``x_k`` of each input that requires grad, the central
difference ``(f(x + eps e_k) - f(x - eps e_k)) / (2 eps)`` estimates the
derivative of every output element; the analytic gradients from ``backward``
(one backward per output element, i.e. the full Jacobian) must match within
``atol + rtol * |numeric|``. Run it in float64: float32 rounding swamps eps.

``check_forward_ad=True`` builds the Jacobian column by column with forward mode
(``autograd.forward_ad``: the tangent of the outputs for a unit tangent on one input
element) and holds it to the same finite differences; ``fast_mode`` compares
``v^T J u`` for random ``u`` and ``v`` instead of whole Jacobians. The other torch
keywords are listed in :func:`gradcheck`.

Complex inputs and outputs are checked as torch's gradcheck checks them: each complex
element is two real numbers (its real and imaginary parts), perturbed separately, and a
complex output is two real outputs. The analytic column for ``Re(out_j)`` is the gradient
for the upstream gradient 1 at j, the one for ``Im(out_j)`` the gradient for ``1j``;
under torch's convention each gradient is ``dL/da + i dL/db`` (``docs/complex.md``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..core.tensor_base import TensorBase
from ..foundations.type_names import type_name


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` with a report of the worst mismatch."""


def _outputs(fn, inputs) -> list:
    """The function's floating-point outputs (integer outputs have no gradient to check).

    An output that is not a Tensor raises (torch fails on it too): a function returning
    a number or None would otherwise leave nothing to compare, and pass.
    """
    out = fn(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    for i, o in enumerate(outs):
        if not isinstance(o, TensorBase):
            raise TypeError(
                f"gradcheck: output {i} of the function is a {type_name(o)}, not a Tensor: "
                "gradcheck compares the gradients of Tensor outputs"
            )
    return [o for o in outs if o._data.dtype.kind in "fc"]


def _real_flat(a: np.ndarray) -> np.ndarray:
    """The values as real float64 numbers in a row: a complex element gives two (real part,
    then imaginary part), as gradcheck sees it."""
    if a.dtype.kind == "c":
        a = np.stack([a.real, a.imag], axis=-1)
    return a.astype(np.float64).reshape(-1)


def _real_size(a: np.ndarray) -> int:
    return a.size * (2 if a.dtype.kind == "c" else 1)


def _unit_seed(out: np.ndarray, j: int) -> np.ndarray:
    """The upstream gradient that picks real number ``j`` of ``out`` (see ``_real_flat``)."""
    seed = np.zeros(out.shape, dtype=out.dtype)
    if out.dtype.kind == "c":
        seed.reshape(-1)[j // 2] = 1 if j % 2 == 0 else 1j
    else:
        seed.reshape(-1)[j] = 1
    return seed


def _jacobians_numeric(fn, inputs, eps):
    from ..core.grad_mode import no_grad

    with no_grad():
        base = _outputs(fn, inputs)
    jac = {}
    for i, x in enumerate(inputs):
        if not getattr(x, "requires_grad", False):
            continue
        data = x._data
        parts = (1, 1j) if data.dtype.kind == "c" else (1,)  # real, then imaginary part
        cols = []
        for k in range(data.size):
            idx = np.unravel_index(k, data.shape)
            orig = data[idx].copy()
            for step in parts:
                with no_grad():
                    data[idx] = orig + eps * step
                    plus = [_real_flat(o._data) for o in _outputs(fn, inputs)]
                    data[idx] = orig - eps * step
                    minus = [_real_flat(o._data) for o in _outputs(fn, inputs)]
                    data[idx] = orig
                cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
        jac[i] = cols
    return base, jac


def _worst_mismatch(fn, inputs, diff, jacobians, atol, rtol) -> str | None:
    """The report of the worst element of the reverse-mode Jacobian, or None if all agree."""
    from . import grad as autograd_grad

    base, numeric = jacobians
    worst: tuple | None = None
    for o_idx, out_ref in enumerate(base):
        # numeric Jacobian of this output, per input: (input elements, output elements)
        out_size = _real_size(out_ref._data)
        num_jac = {
            i: np.reshape(
                [col[o_idx] for col in numeric[i]], (_real_size(inputs[i]._data), out_size)
            )
            for i in diff
        }
        for j in range(out_size):
            outs = _outputs(fn, inputs)
            out = outs[o_idx]
            analytic: Any
            if not out.requires_grad:
                analytic = [None for _ in diff]
            else:
                seed = _unit_seed(out._data, j)
                analytic = autograd_grad(out, [inputs[i] for i in diff], seed, allow_unused=True)
            for a_tensor, i in zip(analytic, diff):
                num = num_jac[i][:, j]
                ana = np.zeros(num.size) if a_tensor is None else _real_flat(a_tensor._data)
                found = _worst_in_row(ana, num, atol, rtol)
                if found is not None and (worst is None or found[0] > worst[0]):
                    excess, k = found
                    worst = (excess, i, k, o_idx, j, float(ana[k]), float(num[k]))
                    worst += (abs(worst[5] - worst[6]),)
    return _report(worst, inputs, atol, rtol)


def _worst_forward_mismatch(fn, inputs, diff, jacobians, atol, rtol) -> str | None:
    """The same for the forward-mode Jacobian: column ``k`` of input ``i`` is the tangent
    of the outputs for the tangent ``e_k`` on input ``i`` (``forward_ad``)."""
    from ..core.grad_mode import enable_grad
    from . import forward_ad

    base, numeric = jacobians
    worst: tuple | None = None
    for i in diff:
        x = inputs[i]
        for k in range(x._data.size):
            unit = np.zeros(x._data.shape, dtype=x._data.dtype)
            unit.reshape(-1)[k] = 1
            args = [a.detach() if n in diff else a for n, a in enumerate(inputs)]
            with enable_grad(), forward_ad.dual_level():
                args[i] = forward_ad.make_dual(args[i], TensorBase._make(unit))
                outs = _outputs(fn, args)
                tangents = [forward_ad.unpack_dual(o).tangent for o in outs]
            for o_idx, (t, num) in enumerate(zip(tangents, numeric[i][k])):
                ana = np.zeros(num.size) if t is None else t._data.astype(np.float64).reshape(-1)
                found = _worst_in_row(ana, num, atol, rtol)
                if found is not None and (worst is None or found[0] > worst[0]):
                    excess, j = found
                    worst = (excess, i, k, o_idx, j, float(ana[j]), float(num[j]))
                    worst += (abs(worst[5] - worst[6]),)
    return _report(worst, inputs, atol, rtol, mode="forward AD")


def _random_like(rng, t) -> np.ndarray:
    values = rng.uniform(-1, 1, t._data.shape)
    if t._data.dtype.kind == "c":
        values = values + 1j * rng.uniform(-1, 1, t._data.shape)
    return np.asarray(values).astype(t._data.dtype)


def _check_backward_extras(fn, inputs, diff, nondet_tol, check_grad_dtypes) -> str | None:
    """torch's reentrant check (two backwards agree within ``nondet_tol``) and, with
    ``check_grad_dtypes``, that each gradient has its input's dtype."""
    from . import grad as autograd_grad

    rng = np.random.default_rng(0)
    xs = [inputs[i] for i in diff]
    for o_idx, out in enumerate(_outputs(fn, inputs)):
        if not out.requires_grad:
            continue
        v = _random_like(rng, out)
        first = autograd_grad(out, xs, v, retain_graph=True, allow_unused=True)
        second = autograd_grad(out, xs, v, retain_graph=True, allow_unused=True)
        for i, g1, g2 in zip(diff, first, second):
            if g1 is None or g2 is None:
                continue
            if check_grad_dtypes and g1._data.dtype != inputs[i]._data.dtype:
                return (
                    f"gradcheck failed: the gradient of input[{i}] has dtype {g1.dtype}, the "
                    f"input {inputs[i].dtype}"
                )
            with np.errstate(invalid="ignore"):
                gap = float(np.max(np.abs(g1._data - g2._data), initial=0.0))
            if not gap <= nondet_tol:
                return (
                    "Backward is not reentrant, i.e., running backward with same input and "
                    "grad_output multiple times gives different values, although analytical "
                    f"gradient matches numerical gradient (output[{o_idx}], input[{i}]: they "
                    f"differ by {gap:.3g}). The tolerance for nondeterminism was {nondet_tol}."
                )
    return None


def _check_undefined_grad(fn, inputs, diff) -> str | None:
    """Zero gradients of every output must give zero (or no) gradients of the inputs."""
    from . import grad as autograd_grad

    outs = [o for o in _outputs(fn, inputs) if o.requires_grad]
    if not outs:
        return None
    zeros = [np.zeros(o._data.shape, dtype=o._data.dtype) for o in outs]
    try:
        grads = autograd_grad(outs, [inputs[i] for i in diff], zeros, allow_unused=True)
    except RuntimeError as e:
        return f"Expected backward function to handle zero (undefined) output grads: {e}"
    for i, g in zip(diff, grads):
        if g is not None and not (g._data == 0).all():
            return (
                "Expected all input grads to be undefined or zero when all output grads are "
                f"zero: the gradient of input[{i}] has nonzero (or NaN) elements"
            )
    return None


def _fast_mismatch(fn, inputs, diff, tol, backward: bool, forward: bool) -> str | None:
    """torch's fast mode: ``v^T J u`` for random ``u`` per input and ``v`` per output, by
    central differences along ``u`` and by each mode (vjp dotted with ``u``; jvp with ``v``)."""
    from ..core.grad_mode import enable_grad, no_grad
    from . import forward_ad
    from . import grad as autograd_grad

    eps, atol, rtol = tol
    rng = np.random.default_rng(0)
    with no_grad():
        base = _outputs(fn, inputs)
    vs = [_real_flat(_random_like(rng, o)) for o in base]  # (real dots: Re(conj(v) . d))
    us = {i: _random_like(rng, inputs[i]) for i in diff}
    for i in diff:
        data, u = inputs[i]._data, us[i]
        orig = data.copy()
        with no_grad():
            data[...] = orig + eps * u
            plus = [_real_flat(o._data) for o in _outputs(fn, inputs)]
            data[...] = orig - eps * u
            minus = [_real_flat(o._data) for o in _outputs(fn, inputs)]
            data[...] = orig
        numeric = [float(np.sum(v * (p - m))) / (2 * eps) for v, p, m in zip(vs, plus, minus)]
        found: dict[str, list[float]] = {}
        if backward:
            outs = _outputs(fn, inputs)
            found["analytic"] = [
                0.0
                if not o.requires_grad or (g := _one_grad(autograd_grad, o, inputs[i], v)) is None
                else float(np.sum(_real_flat(g._data) * _real_flat(u)))
                for o, v in zip(outs, vs)
            ]
        if forward:
            args = [a.detach() if n in diff else a for n, a in enumerate(inputs)]
            with enable_grad(), forward_ad.dual_level():
                args[i] = forward_ad.make_dual(args[i], TensorBase._make(u.copy()))
                tangents = [forward_ad.unpack_dual(o).tangent for o in _outputs(fn, args)]
            found["forward AD"] = [
                0.0 if t is None else float(np.sum(v * _real_flat(t._data)))
                for t, v in zip(tangents, vs)
            ]
        for mode, values in found.items():
            for o_idx, (ana, num) in enumerate(zip(values, numeric)):
                if not abs(ana - num) <= atol + rtol * abs(num):
                    return (
                        f"gradcheck failed (fast mode): v^T J u of output[{o_idx}] along a random "
                        f"u on input[{i}]: {mode} {ana:.8g}, numeric {num:.8g}, error "
                        f"{abs(ana - num):.3g} (allowed {atol} + {rtol} * |numeric|)"
                    )
    return None


def _one_grad(autograd_grad, out, x, v):
    """The gradient of ``x`` for the upstream gradient ``v`` (real numbers, ``_real_flat``)."""
    seed = v.reshape(out._data.shape + ((2,) if out._data.dtype.kind == "c" else ()))
    if out._data.dtype.kind == "c":
        seed = seed[..., 0] + 1j * seed[..., 1]
    return autograd_grad(out, [x], seed.astype(out._data.dtype), allow_unused=True)[0]


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
    *,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Compare the derivatives of ``fn(*inputs)`` with central finite differences.

    Every element of every input with ``requires_grad=True`` is perturbed. Returns
    True, or raises ``GradcheckError`` (or returns False with
    ``raise_exception=False``) naming the input, the element, the analytic and
    numeric values and the error of the worst mismatch.

    The checks, with torch's keywords and defaults:

    * ``check_backward_ad`` (True): the Jacobian from reverse mode (one backward per
      output element) against finite differences; with ``nondet_tol``, a second
      backward must agree with the first within it (torch's "reentrant" check) and,
      with ``check_grad_dtypes``, every gradient must have its input's dtype.
    * ``check_forward_ad`` (False): the Jacobian from forward mode
      (``autograd.forward_ad``, one ``unpack_dual`` per input element) against them.
    * ``check_undefined_grad`` (True, with ``check_backward_ad``): zero output
      gradients must give zero (or no) input gradients. tinyattn has no undefined
      gradients, so zeros stand for them (torch checks the same with both).
    * ``fast_mode``: instead of whole Jacobians, ``v^T J u`` for random ``u`` (per
      input) and ``v`` (per output), from finite differences and from each mode.
    * ``check_batched_grad`` / ``check_batched_forward_grad`` warn and check nothing:
      ``tinyattn.func.vmap`` is a loop over the batch, so a batched gradient is the
      per-sample gradient by construction; there are no batching rules to check.
    * ``masked`` has no effect: it concerns sparse tensors, which tinyattn does not have.
    """
    del masked  # (sparse only)
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True"
        )
    for flag, name in (
        (check_batched_grad, "check_batched_grad"),
        (check_batched_forward_grad, "check_batched_forward_grad"),
    ):
        if flag:
            warnings.warn(
                f"gradcheck: {name}=True checks nothing in tinyattn: vmap is a loop over the "
                "batch (no batching rules), so batched gradients are per-sample gradients",
                stacklevel=2,
            )
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, TensorBase) and x._requires_grad]
    if not diff:
        raise ValueError("gradcheck: no input requires grad; nothing to check")
    _check_input_dtypes(inputs, diff, check_forward_ad)
    tol = (eps, atol, rtol)
    checks = []
    if check_backward_ad:
        checks.append(
            lambda: _check_backward_extras(fn, inputs, diff, nondet_tol, check_grad_dtypes)
        )
        if check_undefined_grad:
            checks.append(lambda: _check_undefined_grad(fn, inputs, diff))
    if fast_mode:
        checks.append(
            lambda: _fast_mismatch(fn, inputs, diff, tol, check_backward_ad, check_forward_ad)
        )
    else:
        numeric: list = []  # computed once, shared by both modes

        def jacobians():
            if not numeric:
                numeric.append(_jacobians_numeric(fn, inputs, eps))
            return numeric[0]

        if check_backward_ad:
            checks.append(lambda: _worst_mismatch(fn, inputs, diff, jacobians(), atol, rtol))
        if check_forward_ad:
            checks.append(
                lambda: _worst_forward_mismatch(fn, inputs, diff, jacobians(), atol, rtol)
            )
    for check in checks:
        msg = check()
        if msg is not None:
            if raise_exception:
                raise GradcheckError(msg)
            return False
    return True


def _check_input_dtypes(inputs, diff, check_forward_ad: bool) -> None:
    """Warn of inputs below double precision; refuse forward AD of complex inputs."""
    for i in diff:
        if inputs[i]._data.dtype not in (np.float64, np.complex128):
            warnings.warn(
                f"gradcheck: input {i} is {inputs[i].dtype}, not float64 or complex128: expect "
                "false alarms",
                stacklevel=3,
            )
    if check_forward_ad and any(inputs[i]._data.dtype.kind == "c" for i in diff):
        raise NotImplementedError(
            "gradcheck: check_forward_ad=True with complex inputs is not supported (tinyattn's "
            "forward AD is real-only); check complex inputs with check_backward_ad"
        )


def _report(worst, inputs, atol, rtol, mode: str = "analytic") -> str | None:
    if worst is None:
        return None
    _, i, k, o_idx, j, ana, num, err = worst
    data = inputs[i]._data
    part = ""
    if data.dtype.kind == "c":  # k counts real numbers: two per complex element
        k, part = k // 2, (".real", ".imag")[k % 2]
    idx = np.unravel_index(k, data.shape)
    return (
        f"gradcheck failed: d output[{o_idx}][flat {j}] / d input[{i}][{tuple(int(v) for v in idx)}]{part}: "
        f"{mode} {ana:.8g}, numeric {num:.8g}, error {err:.3g} "
        f"(allowed {atol} + {rtol} * |numeric|)"
    )


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    seed: int = 0,
    *,
    gen_non_contig_grad_outputs: bool = False,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Check second derivatives: ``gradcheck`` of the vector-Jacobian product of ``func``.

    The function checked is ``(inputs, v) -> autograd.grad(func(inputs), inputs, v,
    create_graph=True)``; finite differences are taken with respect to every element
    of the inputs AND of the upstream gradients ``v`` (random float64 tensors when
    ``grad_outputs`` is None; non-contiguous with ``gen_non_contig_grad_outputs``), as
    torch's ``gradgradcheck``. ``check_rev_over_rev`` (True) checks it by reverse mode,
    ``check_fwd_over_rev`` (False) by forward mode (``forward_ad``); the other keywords
    go to :func:`gradcheck`.
    """
    from . import grad as autograd_grad

    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True"
        )
    for flag, name in (
        (check_undefined_grad, "undefined_grad"),
        (check_batched_grad, "batched_grad"),
    ):
        if flag and not check_rev_over_rev:
            raise AssertionError(
                f"Setting check_{name}=True requires check_rev_over_rev to be True"
            )
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    n = len(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, TensorBase) and x._requires_grad]
    if not diff:
        raise ValueError("gradgradcheck: no input requires grad; nothing to check")
    outs = [o for o in _outputs(func, inputs) if o.requires_grad]
    if grad_outputs is None:
        grad_outputs = _random_grad_outputs(outs, seed, gen_non_contig_grad_outputs)
    grad_outputs = (
        tuple(grad_outputs) if isinstance(grad_outputs, (list, tuple)) else (grad_outputs,)
    )

    def vjp(*args):
        from ..core.grad_mode import enable_grad

        xs, vs = list(args[:n]), args[n:]
        for i in diff:  # gradcheck's forward-mode check hands in detached inputs
            if not xs[i]._requires_grad:
                xs[i] = xs[i].detach().requires_grad_()
        with enable_grad():  # also while gradcheck perturbs the inputs under no_grad
            ys = [o for o in _outputs(func, xs) if o.requires_grad]
            grads = autograd_grad(
                ys, [xs[i] for i in diff], list(vs), create_graph=True, allow_unused=True
            )
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        vjp,
        inputs + grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        fast_mode=fast_mode,
        masked=masked,
    )


def _random_grad_outputs(outs, seed: int, non_contiguous: bool) -> list:
    """Standard normal upstream gradients that require grad, one per output; with
    ``non_contiguous``, every other element of an array twice as long."""
    rng = np.random.default_rng(seed)
    grad_outputs = []
    for o in outs:
        values = rng.standard_normal(o._data.shape)
        if o._data.dtype.kind == "c":
            values = values + 1j * rng.standard_normal(o._data.shape)
        values = np.asarray(values).astype(o._data.dtype)  # (0-d: an array, not a scalar)
        if non_contiguous:
            wide = np.zeros(o._data.shape + (2,), dtype=o._data.dtype)
            wide[..., 0] = values
            values = wide[..., 0]
        v = TensorBase._make(values)
        v._requires_grad = True
        grad_outputs.append(v)
    return grad_outputs
