""" "Check it yourself": each backward step recomputed without its backward formula.

For a node that ran ``x_i -> y`` and received ``dy``, its backward claims
``dx_i = d<dy, y>/dx_i``. The check runs the node's forward again on the recorded
inputs, in float64, nudging one input element by ``+-eps`` at a time, and compares
the central difference ``(<dy, y(x + eps e)> - <dy, y(x - eps e)>) / (2 eps)`` with
the element of ``dx_i`` the backward produced. Up to ``ELEMENTS`` elements per input
are checked (chosen by a seeded generator; none when one of the op's arrays has over
``BIG`` elements, since each probe runs its forward twice), plus one random direction
``u`` over the whole input: ``<dx_i, u>`` against the difference along ``u``. The
largest difference is reported.

A node whose forward does not give back the recorded output (dropout draws a new
mask, a stateful op) is reported as not checkable rather than guessed at.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from .. import random as _random
from ..autograd.grad_mode import no_grad
from ..core.tensor_base import TensorBase
from .capture import ForwardRecord, StepRecord
from .pack import number

ELEMENTS = 12
BIG = 4096  # elements: a bigger input gets fewer single-element checks


def _elements(size: int, largest: int) -> int:
    """Single-element probes for an input of ``size``; none when the op is big (its
    forward, run twice per probe, is then the cost)."""
    return min(size, ELEMENTS if largest <= BIG else 0)


def _rerun(rec: ForwardRecord, args: list) -> np.ndarray | None:
    with no_grad():
        out = rec.fn.apply(*args, **rec.kwargs)
    if not isinstance(out, TensorBase):
        return None
    return np.asarray(out._data, dtype=np.float64)


def _float64_args(rec: ForwardRecord) -> list:
    args = []
    for a, is_tensor in zip(rec.args or (), rec.tensor_args):
        if is_tensor:
            a = np.asarray(a)
            if a.dtype.kind == "f":
                a = a.astype(np.float64)
            a = TensorBase._make(np.ascontiguousarray(a).copy())
        elif isinstance(a, np.dtype) and a.kind == "f":
            a = np.dtype(np.float64)  # (an op told to compute in float32 would round the check)
        args.append(a)
    return args


def _tolerance(dtype) -> tuple[float, float]:
    return (1e-6, 1e-6) if np.dtype(dtype) == np.float64 else (2e-3, 2e-3)


def _checkable(rec: ForwardRecord | None, step: StepRecord) -> str:
    if rec is None or rec.fn is None or rec.args is None:
        return "the forward of this op was not recorded"
    if any(a is not None and np.asarray(a).dtype.kind == "c" for a in step.input_grads):
        return "complex gradients are not checked"
    return ""


@contextlib.contextmanager
def _isolated():
    """Re-running ops: the script's generator does not move, and the NumPy twins of the
    kernels run (no float64 kernel is compiled just for a check)."""
    state = _random.get_rng_state()
    kernels = os.environ.get("TINYATTN_KERNELS")
    os.environ["TINYATTN_KERNELS"] = "numpy"
    try:
        yield
    finally:
        _random.set_rng_state(state)
        if kernels is None:
            del os.environ["TINYATTN_KERNELS"]
        else:
            os.environ["TINYATTN_KERNELS"] = kernels


def check_step(rec: ForwardRecord | None, step: StepRecord, seed: int = 0) -> dict:
    """``{status: PASS|FAIL|SKIP, max_diff, checked, reason}`` for one backward step."""
    reason = _checkable(rec, step)
    if reason:
        return {"status": "SKIP", "reason": reason, "checked": 0}
    try:
        with _isolated():
            return _check(rec, step, np.random.default_rng(seed))  # type: ignore[arg-type]
    except Exception as err:  # a check that cannot run says why, it never breaks the page
        return {"status": "SKIP", "reason": f"could not re-run the forward: {err}", "checked": 0}


GRADCHECK_ELEMENTS = 512


def gradcheck_step(rec: ForwardRecord | None, step: StepRecord) -> dict:
    """The op's backward formula against finite differences at every input element, in
    float64 (``tinyattn.autograd.gradcheck``), for ops with at most 512 input elements."""
    from ..autograd.gradcheck import gradcheck

    reason = _checkable(rec, step)
    if reason:
        return {"status": "SKIP", "reason": reason}
    args = _float64_args(rec)  # type: ignore[arg-type]
    wanted = [
        i
        for i, a in enumerate(args)
        if rec.tensor_args[i] and step.node.next_nodes[i] is not None and a._data.dtype.kind == "f"  # type: ignore[union-attr]
    ]
    total = sum(args[i]._data.size for i in wanted)
    if not wanted or total > GRADCHECK_ELEMENTS:
        return {
            "status": "SKIP",
            "reason": f"{total} input elements (the full gradcheck takes up to {GRADCHECK_ELEMENTS})",
        }
    leaves = [args[i].detach().requires_grad_() for i in wanted]

    def fn(*xs):
        full = list(args)
        for i, x in zip(wanted, xs):
            full[i] = x
        return rec.fn.apply(*full, **rec.kwargs)  # type: ignore[union-attr]

    try:
        with _isolated():
            ok = gradcheck(fn, leaves, raise_exception=False, check_undefined_grad=False)
    except Exception as err:
        return {"status": "SKIP", "reason": f"could not run: {err}"}
    return {"status": "PASS" if ok else "FAIL", "elements": total}


def _check(rec: ForwardRecord, step: StepRecord, rng) -> dict:
    args = _float64_args(rec)
    base = _rerun(rec, args)
    recorded = np.asarray(rec.value, dtype=np.float64)
    if base is None or base.shape != recorded.shape:
        return {"status": "SKIP", "reason": "the op has several outputs", "checked": 0}
    rtol, atol = _tolerance(rec.value.dtype)
    finite = np.isfinite(recorded)
    if not np.allclose(base[finite], recorded[finite], rtol=rtol, atol=atol):
        reason = "running the forward again gives another output (random or stateful op)"
        return {"status": "SKIP", "reason": reason, "checked": 0}
    dy = np.asarray(step.grad_output, dtype=np.float64)
    largest = max([recorded.size] + [a._data.size for a in args if isinstance(a, TensorBase)])
    worst, checked, failed = 0.0, 0, False
    for i, grad in enumerate(step.input_grads):
        if grad is None or not rec.tensor_args[i] or step.node.next_nodes[i] is None:
            continue
        x = args[i]._data
        if x.dtype.kind != "f" or x.size == 0:
            continue
        picks = np.sort(rng.choice(x.size, size=_elements(x.size, largest), replace=False))
        g64 = np.asarray(grad, dtype=np.float64).ravel()
        # a random direction, each element scaled like its own nudge (a -1e9 mask stays put)
        flat_x = x.reshape(-1)
        direction = rng.standard_normal(x.size) * np.where(
            np.isfinite(flat_x), np.maximum(1.0, np.abs(np.nan_to_num(flat_x))), 0.0
        )
        probes = [(None, direction)] + [(int(f), None) for f in picks]
        for flat, u in probes:
            if flat is not None and not np.isfinite(x.reshape(-1)[flat]):
                continue
            fd = _central_difference(rec, args, i, flat, u, dy)
            claimed = float(g64[flat]) if u is None else float(np.dot(g64, u))
            diff = abs(fd - claimed)
            worst = max(worst, diff)
            size = abs(fd) if u is None else max(abs(fd), float(np.abs(g64 * u).sum()))
            failed |= not diff <= atol + rtol * size
            checked += 1
    if checked == 0:
        return {"status": "SKIP", "reason": "no floating-point input gets a gradient", "checked": 0}
    return {
        "status": "FAIL" if failed else "PASS",
        "max_diff": number(worst),
        "checked": checked,
        "tolerance": f"{atol:g} + {rtol:g} * |finite difference|",
    }


def _central_difference(rec: ForwardRecord, args: list, i: int, flat, u, dy) -> float:
    """d<dy, y>/dt at t = 0 for x_i + t e_flat (``flat``) or x_i + t u (``u``)."""
    x = args[i]._data.reshape(-1)  # (a view: the arrays are made contiguous)
    old = x.copy() if u is not None else x[flat]
    eps = 1e-6 if u is not None else 1e-6 * max(1.0, abs(old))  # (u is scaled already)
    values = []
    for sign in (1.0, -1.0):
        if u is None:
            x[flat] = old + sign * eps
        else:
            x[:] = old + sign * eps * u
        y = np.broadcast_to(_rerun(rec, args), dy.shape)
        keep = np.isfinite(y)  # (a masked -inf output, whose gradient is 0, adds nothing)
        values.append(float(np.vdot(dy[keep], y[keep])))
    x[flat if u is None else slice(None)] = old
    return (values[0] - values[1]) / (2 * eps)
