"""float16 ops that accumulate: computed in float32, rounded to float16 once, as torch does.

A float16 value fits below 65504, its square often does not: the variance of values of
std 400 is 160000, the norm of 9,000 made of float16 gradients squares to 8.1e7. torch
carries such sums, squares and running products in float32 (its "opmath" type,
``_dtype.accumulation_dtype``) and rounds the result to float16 once. tinyattn does the
same with one rule, :func:`accumulates_in_float32`, put on each public op that
accumulates: its float16 tensor arguments are cast to float32 (exactly: float32 holds
every float16 value), the op runs in float32, and its floating outputs are rounded to
float16. The casts are recorded ops, so the backward runs the same way: the float16
gradient is widened to float32 by the output cast's backward, the op's gradient formula
runs in float32, and the input cast's backward rounds the gradient to float16 once.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..core import _dtype as dt
from ..core.tensor import Tensor

__all__ = ["accumulates_in_float32"]

F = TypeVar("F", bound=Callable[..., Any])

_HALF = np.dtype(np.float16)


def accumulates_in_float32(*names: str) -> Callable[[F], F]:
    """Decorate a public op so that its float16 arguments ``names`` accumulate in float32.

    When one of the Tensor arguments ``names`` is float16 (and no ``dtype=`` argument
    chooses the computation's dtype), each float16 one among them is cast to float32, the
    op runs, and the floating Tensor outputs (one, or a tuple of them) are rounded to
    float16 when every argument in ``names`` was float16 (a float32 argument among them
    makes the result float32, as type promotion would). Other calls pass straight through.
    Arguments not named (running statistics updated in place, targets, masks) are left
    as they are.
    """

    def decorate(fn: F) -> F:
        params = list(inspect.signature(fn).parameters)
        unknown = [n for n in names if n not in params]
        if unknown:
            raise TypeError(f"accumulates_in_float32: {fn.__name__} has no argument {unknown}")
        slots = tuple((n, params.index(n)) for n in names)
        dtype_slot = params.index("dtype") if "dtype" in params else None

        @functools.wraps(fn)
        def op(*args, **kwargs):
            n = len(args)
            for name, i in slots:  # the common case, float32 or float64, costs this loop
                t = args[i] if i < n else kwargs.get(name)
                if isinstance(t, Tensor) and t._data.dtype == _HALF:
                    break
            else:
                return fn(*args, **kwargs)
            if dtype_slot is not None and _argument(args, kwargs, "dtype", dtype_slot) is not None:
                return fn(*args, **kwargs)  # the caller chose the dtype to compute in
            return _in_float32(fn, slots, list(args), dict(kwargs))

        return op  # type: ignore[return-value]

    return decorate


def _in_float32(fn: Callable, slots: tuple, args: list, kwargs: dict) -> Any:
    """``fn`` called with its float16 arguments in ``slots`` cast to float32; its floating
    outputs rounded to float16 when every Tensor among those arguments was float16."""
    all_half = True
    for name, i in slots:
        t = args[i] if i < len(args) else kwargs.get(name)
        if not isinstance(t, Tensor):
            continue
        if t._data.dtype != _HALF:
            all_half = False
            continue
        widened = t.to(dt.from_numpy_dtype(dt.accumulation_dtype(_HALF)))
        if i < len(args):
            args[i] = widened
        else:
            kwargs[name] = widened
    out = fn(*args, **kwargs)
    return _rounded(out) if all_half else out


def _argument(args: tuple, kwargs: dict, name: str, position: int) -> Any:
    return args[position] if position < len(args) else kwargs.get(name)


def _rounded(out: Any) -> Any:
    """The op's floating Tensor outputs as float16 (a namedtuple or tuple keeps its type)."""
    if isinstance(out, Tensor):
        return out.to(dt.float16) if out._data.dtype.kind == "f" else out
    if isinstance(out, tuple):
        items = [_rounded(o) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
    return out
