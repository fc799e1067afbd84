"""Small helpers shared by the op modules: argument checks and dtype handling."""

from __future__ import annotations

import inspect
import numbers
import textwrap

import numpy as np

from ..core import _dtype as dt
from ..core.function import NoGradContext
from ..core.grad_mode import _state as _grad_mode
from ..core.quiet import IGNORE_ALL, enter, leave
from ..core.tensor_base import TensorBase
from ..core.xp import _np_sgn
from ..foundations.type_names import type_name


def records_no_graph(*tensors) -> bool:
    """Whether ``Function.apply`` on these inputs (Tensors, or None for an absent optional
    one; anything else answers False) would only run ``forward`` on their arrays and wrap the result: grad mode is off
    (``no_grad``, ``inference_mode``) and no input has a layout that checks its ops
    (sparse). Then an op may call :func:`forward_without_graph` instead of ``apply``.

    Why: ``apply`` reads every argument to find the ones that want a gradient; an op that
    knows which arguments are tensors skips that (~100 of ``apply``'s ~160 bytecodes; a
    GPT-2 decode step runs ~120 ops)."""
    if _grad_mode.enabled:
        return False
    try:  # (free when nothing is raised: no isinstance test per tensor)
        for t in tensors:
            if t is not None and t._op_guard:
                return False
    except AttributeError:  # not a Tensor (a NumPy weight): ``apply`` takes it as it is
        return False
    return True


def forward_without_graph(fn: type, *args, **kwargs):
    """``fn.apply(*tensors)`` when :func:`records_no_graph` said so, given the tensors'
    arrays: ``fn.forward`` with NumPy's floating-point warnings off, the result wrapped as a
    Tensor with no graph (exactly what ``apply`` does then)."""
    token = enter(IGNORE_ALL)
    try:
        out = fn.forward(NoGradContext(), *args, **kwargs)
    finally:
        leave(token)
    return TensorBase._make(out if type(out) is np.ndarray else np.asarray(out))


def normalize_dim(dim: int, ndim: int, op: str) -> int:
    """``dim`` as a non-negative axis; IndexError naming the op and the valid range."""
    if isinstance(dim, (float, np.floating)):  # int() would truncate 0.5 to 0 silently
        raise TypeError(f"{op}(): dim must be an int, got float {dim}")
    try:
        dim = int(dim)
    except (TypeError, ValueError):
        raise TypeError(f"{op}(): dim must be an int, got {type_name(dim)}") from None
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"{op}(): dimension out of range (expected to be in range of [{-n}, {n - 1}], "
            f"but got {dim})"
        )
    return dim % n if ndim else 0


def normalize_dims(dim, ndim: int, op: str) -> tuple[int, ...] | None:
    """``dim`` (None, int, or a sequence of ints) as a sorted tuple of axes, or None (all)."""
    if dim is None:
        return None
    if ndim == 0:  # a 0-d tensor takes dim 0 / -1 (torch); reducing over it = over "all"
        for d in [dim] if isinstance(dim, (int, np.integer)) else dim:
            normalize_dim(d, ndim, op)
        return None
    if isinstance(dim, (int, np.integer)):
        return (normalize_dim(dim, ndim, op),)
    try:
        dim = tuple(dim)
    except TypeError:
        raise TypeError(f"{op}(): dim must be an int or a sequence of ints, got {dim!r}") from None
    dims = tuple(normalize_dim(d, ndim, op) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{op}(): dim {tuple(dim)} appears multiple times in the list of dims")
    return dims if dims else None


def shape_args(args, op: str) -> tuple[int, ...]:
    """Shapes given as varargs ``f(2, 3)`` or one sequence ``f((2, 3))``."""
    if len(args) == 1 and not isinstance(args[0], (numbers.Integral, np.integer)):
        args = tuple(args[0])
    try:
        return tuple(map(int, args))
    except (TypeError, ValueError):
        raise TypeError(f"{op}(): expected integer sizes, got {args!r}") from None


def int_list(values: tuple, keyword, op: str, name: str) -> tuple:
    """An int-list argument as torch's parser takes it: varargs ``view(2, 3)``, one sequence
    ``view((2, 3))`` or torch's keyword ``view(size=(2, 3))``, never two of them.

    Returns the varargs form for :func:`shape_args` to read.
    """
    if keyword is None:
        return values
    if values:
        raise TypeError(
            f"{op}(): got {name} both positionally {values} and as keyword {name}={keyword!r}"
        )
    return (keyword,)


def refuse_complex_order(op: str, *operands) -> None:
    """Complex numbers have no order: ``<``, max, sort ... refuse them, as torch does."""
    for x in operands:
        data = getattr(x, "_data", x)
        if isinstance(data, (np.ndarray, np.generic, complex)) and np.iscomplexobj(data):
            raise RuntimeError(
                f"{op}(): does not support complex input: complex numbers have no order "
                "(compare .abs(), .real or .imag instead)"
            )


def to_float(x):
    """Integer/bool arrays as the default float dtype (torch's rule for exp, log, mean ...)."""
    if isinstance(x, np.ndarray) and x.dtype.kind not in "fc":
        return x.astype(dt.get_default_dtype().np_dtype)
    return x


def is_scalar(x) -> bool:
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, np.ndarray)


def broadcast_error(op: str, *arrays) -> ValueError:
    shapes = " and ".join(str(tuple(np.shape(a))) for a in arrays)
    return ValueError(
        f"{op}: shapes {shapes} are not broadcastable (sizes must match or be 1, "
        "aligned from the last dimension)"
    )


def gradient_doc(fn_class):
    """Decorator: append ``fn_class``'s docstring (its forward and gradient formulas) to an op's.

    The formulas are written once, beside the forward and backward code; the
    public op carries them too, so that ``help(tinyattn.add)`` shows the gradient.
    """

    def decorate(op):
        if fn_class.__doc__ is None:  # python -OO strips docstrings
            return op
        summary = inspect.cleandoc(op.__doc__) + "\n\n" if op.__doc__ else ""
        formulas = textwrap.indent(inspect.cleandoc(fn_class.__doc__), "    ")
        op.__doc__ = f"{summary}Gradient (``{fn_class.__name__}``)::\n\n{formulas}\n"
        return op

    return decorate


def sgn(x: np.ndarray) -> np.ndarray:
    """``sign(x)`` with ``sgn(NaN) = 0``, ``z / |z|`` for complex ``z``: the derivative of
    ``|x|`` torch uses. One definition, ``core.xp``'s (backward formulas call it as
    ``xp.sgn``)."""
    return _np_sgn(x)
