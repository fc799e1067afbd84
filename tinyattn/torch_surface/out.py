"""torch's ``out=`` keyword for the public functions (``torch.matmul(a, b, out=c)``).

``with_out(fn, op)`` wraps a function: without ``out`` it calls ``fn`` unchanged; with
``out`` it computes the result as usual and writes it into ``out`` (returned, the same
object), following torch:

- ``out`` must be a Tensor, or a tuple/list of Tensors for functions returning several
  (``torch.max(x, 0, out=(values, indices))``): TypeError naming ``out`` otherwise;
- no autograd: with grad mode on, an input or ``out`` that requires grad is a RuntimeError
  (torch: "functions with out=... arguments don't support automatic differentiation"),
  except for ``_out_names.ALLOWS_GRAD`` (torch's composites such as ``softmax`` and
  ``linalg.norm``, and results that are not differentiable such as ``eq``): there the
  graph goes on through the copy into ``out``, as in torch;
- an ``out`` of another shape is resized (``Tensor.resize_``), with torch's deprecation
  warning when it had elements;
- the result is cast to ``out``'s dtype when torch's casting rules allow it
  (``tinyattn.can_cast``); functions in ``EXACT_DTYPE`` (below) want the result's dtype exactly;
- creation functions (``zeros``, ``rand`` ...) take their dtype from ``out``, and so do
  ``sum``, ``prod``, ``cumsum``, ``cumprod`` (as with their ``dtype=``);
- the write is an in-place one (``Tensor.copy_``): ``out``'s version counter moves, so a
  graph that saved ``out`` refuses to run backward.

The wrappers replace the names in ``tinyattn``, ``tinyattn.linalg``, ``tinyattn.special``
and ``tinyattn.nn.functional`` (``install``); Tensor methods and operators call the ops
modules directly and are not wrapped.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from collections.abc import Callable

import numpy as np

from ..core._dtype import _category
from ..core.grad_mode import is_grad_enabled, no_grad
from ..core.tensor import Tensor
from ..foundations.type_names import type_name
from . import out_table as _out_names  # the names: data generated from torch 2.13

# torch's names of dtypes: in "result type Float can't be cast ..." and in the C type form
# of "Expected out tensor to have dtype float, but got double instead"
_TORCH_NAME = {
    "float16": ("Half", "c10::Half"), "bfloat16": ("BFloat16", "c10::BFloat16"),
    "float32": ("Float", "float"), "float64": ("Double", "double"),
    "int8": ("Char", "signed char"), "int16": ("Short", "short int"), "int32": ("Int", "int"),
    "int64": ("Long", "long int"), "uint8": ("Byte", "unsigned char"), "bool": ("Bool", "bool"),
    "complex64": ("ComplexFloat", "c10::complex<float>"),
    "complex128": ("ComplexDouble", "c10::complex<double>"),
}  # fmt: skip

# Creation functions: with ``out`` their dtype is ``out``'s (torch.zeros(2, out=c)).
CREATION = frozenset(
    {"arange", "empty", "eye", "full", "linspace", "logspace", "ones", "rand", "randint", "randn",
     "randperm", "zeros"}
)  # fmt: skip

# Functions whose ``out`` must have the result's dtype exactly (torch 2.13 raises "Expected
# out tensor to have dtype float, but got double instead" or alike instead of casting).
# Found by calling each with float32 inputs and a float64 ``out`` in torch; the others cast
# (add, exp, sum, mean, cat, stack, sigmoid, pow, outer, kron, linalg_pinv ...). Functions
# returning several tensors always want exact dtypes (values, and int64 indices).
EXACT_DTYPE = frozenset(
    {"matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "addmv", "mv", "dot", "vdot",
     "inner", "chain_matmul", "matrix_power", "tensordot", "where", "clamp", "clip",
     "clamp_min", "clamp_max", "round", "sgn", "conj_physical", "hardshrink", "argmax",
     "argmin", "norm", "amax", "amin", "softmax", "log_softmax", "tril", "triu", "gather",
     "index_select", "take", "take_along_dim", "masked_select", "diag", "renorm", "scatter",
     "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_reduce",
     "slice_scatter", "histc", "quantile", "nanquantile", "logcumsumexp", "nan_to_num",
     "msort", "heaviside", "cross", "alias_copy", "as_strided_copy", "detach_copy",
     "diagonal_copy", "expand_copy", "permute_copy", "select_copy", "slice_copy",
     "squeeze_copy", "t_copy", "transpose_copy", "unfold_copy", "unsqueeze_copy", "view_copy",
     "frobenius_norm", "nuclear_norm", "lu_solve", "lu_unpack", "triangular_solve",
     "native_batch_norm", "linalg_cholesky", "linalg_cross", "linalg_det",
     "linalg_eigvalsh", "linalg_inv", "linalg_matrix_norm", "linalg_matrix_power",
     "linalg_multi_dot", "linalg_norm", "linalg_solve", "linalg_solve_triangular",
     "linalg_svdvals", "linalg_vecdot", "linalg_vector_norm", "special_round", "avg_pool2d",
     "avg_pool3d", "gelu", "linear", "logsigmoid", "softplus", "softshrink", "abs",
     "absolute", "bitwise_not", "ceil", "fix", "floor", "frac", "neg", "negative", "sign",
     "trunc", "all", "any", "isin", "isneginf", "isposinf", "signbit", "nonzero",
     "multinomial", "searchsorted", "inverse", "lerp"}
)  # fmt: skip
# ... of which these say it as "Found dtype Double but expected Float"
FOUND_DTYPE = frozenset(
    {"abs", "absolute", "bitwise_not", "ceil", "fix", "floor", "frac", "neg", "negative", "sign",
     "trunc", "clamp", "clip", "clamp_min", "clamp_max", "round", "special_round", "sgn",
     "conj_physical", "hardshrink", "gelu", "softplus", "softshrink", "lerp"}
)  # fmt: skip
# Reductions that, like with their ``dtype=``, compute in ``out``'s dtype (torch.sum(x, 1,
# out=long_tensor) sums the values cast to int64).
REDUCE_IN_OUT_DTYPE = frozenset({"sum", "prod", "cumsum", "cumprod"})
# torch joins these with cat, whose refusal of a cast is a TypeError of its own
CAT_FAMILY = frozenset(
    {"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
     "row_stack"}
)  # fmt: skip

_RESIZE_WARNING = (
    "An output with one or more elements was resized since it had shape {old}, which does not "
    "match the required output shape {new}. This behavior is deprecated, and in a future "
    "PyTorch release outputs will not be resized unless they have zero elements. You can "
    "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
    "t.resize_(0)."
)


def _type_name(obj) -> str:
    return type_name(obj)


def _tensors_in(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, list | tuple):
            yield from _tensors_in(v)


def _check_out_type(op: str, out, n_results: int | None) -> tuple[Tensor, ...]:
    """``out`` as a tuple of Tensors (one per result); ``n_results`` None: one Tensor."""
    if n_results is None:
        if not isinstance(out, Tensor):
            raise TypeError(f"{op}(): argument 'out' must be Tensor, not {_type_name(out)}")
        return (out,)
    if not isinstance(out, tuple | list) or not all(isinstance(t, Tensor) for t in out):
        raise TypeError(f"{op}(): argument 'out' must be tuple of Tensors, not {_type_name(out)}")
    if len(out) != n_results:
        raise TypeError(
            f"{op}(): argument 'out' must be a tuple of {n_results} Tensors, got {len(out)}"
        )
    return tuple(out)


def _check_no_grad(op: str, args, kwargs, outs) -> None:
    if not is_grad_enabled():
        return
    values = (*args, *kwargs.values(), *outs)
    if any(t.requires_grad for t in _tensors_in(values)):
        raise RuntimeError(
            f"{op}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )


def _check_dtype(result: Tensor, out: Tensor, op: str, exact: bool) -> None:
    if result.dtype is out.dtype:
        return
    have, want = _TORCH_NAME[result.dtype.name], _TORCH_NAME[out.dtype.name]
    if op in FOUND_DTYPE:
        raise RuntimeError(f"Found dtype {want[0]} but expected {have[0]}")
    if exact:
        raise RuntimeError(
            f"Expected out tensor to have dtype {have[1]}, but got {want[1]} instead"
        )
    # torch.can_cast: no cast that lowers the category (float -> int, int -> bool ...)
    if _category(result.dtype.np_dtype) <= _category(out.dtype.np_dtype):
        return
    if op in CAT_FAMILY:
        raise TypeError(
            f"torch.cat(): input types can't be cast to the desired output type {want[0]}"
        )
    raise RuntimeError(f"result type {have[0]} can't be cast to the desired output type {want[0]}")


def _resize_warning(op: str, out: Tensor, shape: tuple[int, ...]) -> str | None:
    if not out.numel() or (op in CREATION and op != "arange"):  # creation resizes silently
        return None
    if op == "arange":
        return (
            f"The number of elements in the out tensor of shape {list(out.shape)} is "
            f"{out.numel()} which does not match the computed number of elements "
            f"{math.prod(shape)}. Note that this may occur as a result of rounding error. "
            f"The out tensor will be resized to a tensor of shape ({shape[0]},)."
        )
    return _RESIZE_WARNING.format(old=list(out.shape), new=list(shape))


def _resize(out: Tensor, shape: tuple[int, ...]) -> None:
    # torch resizes an out= tensor below autograd, so one that requires grad too (allowed
    # under no_grad); Tensor.resize_ refuses those, so the flag is lifted meanwhile.
    flag = out._requires_grad
    out._requires_grad = False
    try:
        out.resize_(shape)
    finally:
        out._requires_grad = flag


def write_out(result: Tensor, out: Tensor, op: str, exact: bool = False) -> Tensor:
    """Resize ``out`` to ``result``'s shape (warning if it had elements) and copy into it."""
    _check_dtype(result, out, op, exact or op in EXACT_DTYPE)
    if out.shape != result.shape:
        message = _resize_warning(op, out, tuple(result.shape))
        if message:
            warnings.warn(message, UserWarning, stacklevel=4)
        if np.may_share_memory(result._data, out._data):  # resize_ may reuse that memory
            result = result.clone()
        _resize(out, tuple(result.shape))
    elif np.may_share_memory(result._data, out._data) and result._data is not out._data:
        result = result.clone()
    if result._data is not out._data:
        out.copy_(result)
    return out


def _call(fn: Callable, op: str, args, kwargs, out):
    if op in REDUCE_IN_OUT_DTYPE and isinstance(out, Tensor) and kwargs.get("dtype") is None:
        kwargs = {**kwargs, "dtype": out.dtype}
    if op in CREATION:  # the dtype comes from out (torch.zeros(2, out=c))
        if not isinstance(out, Tensor):
            raise TypeError(f"{op}(): argument 'out' must be Tensor, not {_type_name(out)}")
        dtype = kwargs.get("dtype")
        if dtype is not None and dtype is not out.dtype:
            raise RuntimeError(
                f"dtype {_TORCH_NAME[dtype.name][0]} does not match dtype of out parameter "
                f"({_TORCH_NAME[out.dtype.name][0]})"
            )
        kwargs = {**kwargs, "dtype": out.dtype}
    if not isinstance(out, Tensor | tuple | list):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {_type_name(out)}")
    if op in _out_names.ALLOWS_GRAD:  # torch records these through the copy into out
        result = fn(*args, **kwargs)
    else:
        outs = _tensors_in(out if isinstance(out, tuple | list) else [out])
        _check_no_grad(_out_names.AUTOGRAD_ERROR_NAME.get(op, op), args, kwargs, outs)
        with no_grad():
            result = fn(*args, **kwargs)
    if isinstance(result, Tensor):
        (target,) = _check_out_type(op, out, None)
        return write_out(result, target, op)
    outs = _check_out_type(op, out, len(result))
    written = [write_out(r, o, op, exact=True) for r, o in zip(result, outs, strict=True)]
    return type(result)(*written) if hasattr(result, "_fields") else tuple(written)


def _signature_with_out(fn: Callable) -> inspect.Signature | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    if "out" in sig.parameters:
        return sig
    out = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    return sig.replace(parameters=[*params[:at], out, *params[at:]])


class _SignatureWithOut:
    """The link between a wrapper and its function in the ``__wrapped__`` chain.

    ``inspect.signature`` unwraps until an object has a ``__signature__``: this one builds
    the function's signature plus ``out`` on first request (building all ~290 at import
    took 6 ms); ``inspect.unwrap`` goes on through it to the function.
    """

    __slots__ = ("__wrapped__", "_signature")

    def __init__(self, fn: Callable) -> None:
        self.__wrapped__ = fn
        self._signature: inspect.Signature | None = None

    @property
    def __signature__(self) -> inspect.Signature | None:
        if self._signature is None:
            self._signature = _signature_with_out(self.__wrapped__)
        return self._signature

    def __call__(self, *args, **kwargs):
        return self.__wrapped__(*args, **kwargs)


def with_out(fn: Callable, op: str) -> Callable:
    """``fn`` taking torch's ``out=`` (``op``: the name torch's messages use, e.g. ``linalg_norm``)."""

    stacklevel = (getattr(fn, "__kwdefaults__", None) or {}).get("_stacklevel")
    if stacklevel is not None:  # (softmax's warning names the caller: one frame more here)

        @functools.wraps(fn)
        def wrapper(*args, out=None, **kwargs):
            kwargs.setdefault("_stacklevel", stacklevel + 1)
            if out is None:
                return fn(*args, **kwargs)
            return _call(fn, op, args, kwargs, out)

    else:

        @functools.wraps(fn)
        def wrapper(*args, out=None, **kwargs):
            if out is None:
                return fn(*args, **kwargs)
            return _call(fn, op, args, kwargs, out)

    wrapper.__wrapped__ = _SignatureWithOut(fn)  # type: ignore[attr-defined]
    wrapper.__wrapped_for_out__ = fn  # type: ignore[attr-defined]
    return wrapper


def install(namespace: dict, names: tuple[str, ...] | None = None, prefix: str = "") -> None:
    """Replace each of ``names`` in ``namespace`` (a module's globals) by its ``out=`` form.

    ``names`` None: the ``tinyattn`` namespace's list (``_out_names.OUT_TORCH``).
    """
    for name in _out_names.OUT_TORCH if names is None else names:
        fn = namespace[name]
        if not hasattr(fn, "__wrapped_for_out__"):
            namespace[name] = with_out(fn, prefix + name)
