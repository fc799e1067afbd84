"""``Tensor``: a NumPy array plus what autograd needs (grad, grad_fn, version).

The methods are thin: each differentiable op lives in ``tinyattn/ops/`` as a
``Function`` with its forward and backward side by side, and the method only
forwards to it. The class is assembled from:

- the core's ``Tensor`` (``tinyattn/core/tensor.py``, on ``TensorBase``: the autograd
  fields): the tensor a learner reads, with the methods the README uses; every one of
  them is redefined here or in the mixins with torch's full rules, so it contributes its
  class (``isinstance(t, tinyattn.core.Tensor)``) and nothing else;
- ``TensorMathMethods``, ``TensorShapeMethods``, ``TensorSelectMethods``,
  ``TensorElementwiseMethods`` and ``TensorBinaryMethods`` (``methods_*.py``,
  written by ``tools/gen_tensor_methods.py``): one method per op, with the op's
  signature;
- ``TensorMetaMethods`` (``meta.py``: memory, dtype predicates, size checks),
  ``TensorInplaceMethods`` and ``TensorLongTailMethods`` (``torch_surface/tensor_*.py``:
  torch's less common methods and plumbing);
- this file: construction, metadata, conversions, Python protocols, operators (an
  ndarray operand is promoted as NumPy would, ``promote_as_numpy``, checked in each
  arithmetic operator itself).
"""

from __future__ import annotations

import builtins
import numbers
import typing
import weakref

import numpy as np

from ..autograd import _forward_only as forward_only
from ..core import _dtype as dt
from ..core.device import _CPU, check_device, device
from ..core.function import Function, Node, leaf_node
from ..core.size import Size
from ..core.tensor import Tensor as CoreTensor
from ..core.tensor_base import TensorBase
from ..torch_surface.numpy_protocol import NumpyProtocol, promote_as_numpy
from ..torch_surface.tensor_inplace import TensorInplaceMethods
from ..torch_surface.tensor_longtail import TensorLongTailMethods
from .meta import TensorMetaMethods
from .methods_binary import TensorBinaryMethods
from .methods_elementwise import TensorElementwiseMethods
from .methods_math import TensorMathMethods
from .methods_select import TensorSelectMethods
from .methods_shape import TensorShapeMethods

# What ``==`` and ``!=`` compare elementwise; anything else (None, a string, a list) is
# compared by identity, as in torch.
_COMPARABLE = (TensorBase, numbers.Number, np.ndarray, np.generic)


class Tensor(
    TensorMathMethods,
    TensorShapeMethods,
    TensorSelectMethods,
    TensorElementwiseMethods,
    TensorBinaryMethods,
    TensorMetaMethods,
    TensorInplaceMethods,
    TensorLongTailMethods,
    NumpyProtocol,
    CoreTensor,
    op_outputs=True,
):
    """An n-dimensional array that can record the ops applied to it for backprop.

    ``Tensor(data)`` builds a float tensor from data, ``Tensor(2, 3)`` an
    uninitialised float tensor of that shape (torch's legacy constructor); prefer
    :func:`tinyattn.tensor`.
    """

    __slots__ = ()
    # A view's copy of its base's version when its grad_fn was last made (set by
    # ops.inplace in the instance __dict__; only views have it).
    _view_version: builtins.int

    def __init__(self, *args, dtype=None, device=None, requires_grad: bool = False) -> None:
        check_device(device)
        d = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            data = np.array(ops.creation.factories._unwrap_nested(args[0]), dtype=d.np_dtype)
        elif all(isinstance(a, (int, np.integer)) for a in args):
            data = np.empty(tuple(int(a) for a in args), dtype=d.np_dtype)
        else:
            raise TypeError(f"Tensor(): expected data or integer sizes, got {args!r}")
        Tensor._init(self, data, None, False)
        if requires_grad:
            self.requires_grad_(True)

    # -- autograd attributes --------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad and not self._is_forward_only()

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Mark a leaf tensor as needing gradients (floating dtypes only)."""
        if self._is_forward_only():  # torch: it becomes a leaf, keeping its tangent
            if requires_grad:
                forward_only.make_leaf(self)
            return self
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want "
                    "to use a computed variable in a subgraph that doesn't require "
                    "differentiation use var_no_grad = var.detach()."
                )
            return self
        if requires_grad and self._data.dtype.kind not in "fc":
            raise RuntimeError(
                f"only Tensors of floating point and complex dtype can require gradients; this tensor "
                f"is {self.dtype} (convert with .float() first)"
            )
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad_fn(self) -> Node | None:
        if self._base is not None and self._version.value != self._view_version:
            ops.inplace.refresh_view(self)  # the base was written in place since
        return None if self._is_forward_only() else self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None or self._is_forward_only()

    def _is_forward_only(self) -> bool:
        """Recorded only so that forward-mode AD can compute its tangents (a dual of a
        tensor that requires no grad, and what is computed from it): torch shows such a
        tensor as a leaf that requires no grad. See ``autograd/_forward_only.py``."""
        return self._grad_fn is not None and forward_only.is_forward_only(self)

    def _grad_node(self) -> Node:
        """The node gradients for this tensor flow into (its grad_fn, or its accumulator)."""
        if self._base is not None and self._version.value != self._view_version:
            ops.inplace.refresh_view(self)  # the base was written in place since
        if self._grad_fn is not None:
            return self._grad_fn
        return leaf_node(self)

    def retain_grad(self) -> None:
        """Fill ``.grad`` of this non-leaf tensor during backward (leaves always get it)."""
        if self._grad_fn is None or self._is_forward_only():
            if not self.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        self._retains_grad = True
        self._grad_fn._retained = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new one."""
        if not self._requires_grad or self._is_forward_only():
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        node = self._grad_node()
        node._register_tensor_hook(hook)

        class _Handle:
            def remove(self_inner) -> None:
                if hook in (node._hooks or []):
                    node._hooks.remove(hook)

        return _Handle()

    def backward(
        self, gradient=None, retain_graph: bool | None = None, create_graph=False, inputs=None
    ) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (see ``autograd.backward``)."""
        from ..autograd import backward

        backward(
            self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs
        )

    def detach(self) -> Tensor:
        """A tensor sharing this one's data (and version counter) that is cut from the graph."""
        t = Tensor._make(self._data)
        t._version = self._version
        return t

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place (it becomes a leaf)."""
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        """The underlying data as a tensor outside the graph (shares memory)."""
        return Tensor._make(self._data)

    @data.setter
    def data(self, value) -> None:
        value = value._data if isinstance(value, Tensor) else np.asarray(value)
        self._data = value

    # -- metadata -------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        """The shape, or its length along ``dim``."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[ops._util.normalize_dim(dim, self.ndim, "size")]

    @property
    def dtype(self) -> dt.dtype:
        return dt.from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> device:
        return _CPU

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        """The number of elements."""
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        """Bytes per element."""
        return self._data.itemsize

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point one."""
        return self._data.dtype.kind == "f"

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the elements are laid out in C order without gaps (for ``memory_format=
        channels_last``: in the order N, H, W, C; see ``torch_surface.layouts``)."""
        from ..torch_surface.layouts import is_contiguous_as

        return is_contiguous_as(self._data, memory_format)

    def stride(self, dim: int | None = None):
        """Steps (in elements) between neighbours along each dimension, or along ``dim``."""
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[dim]

    def data_ptr(self) -> int:
        """The address of the first element."""
        return self._data.__array_interface__["data"][0]

    @property
    def _version_value(self) -> int:
        return self._version.value

    # -- conversions ----------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array (shares memory). Raises if the tensor requires grad."""
        if self._requires_grad and not force and not self._is_forward_only():
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        return self._data

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.reshape(()).item()

    def tolist(self):
        """The values as (nested) Python lists of numbers."""
        return self._data.tolist()

    def to(
        self,
        *args,
        dtype=None,
        device=None,
        non_blocking: bool = False,
        copy: bool = False,
        memory_format=None,
        tensor: Tensor | None = None,
    ) -> Tensor:
        """``to(dtype)``, ``to("cpu")``, ``to(device, dtype)``, ``to(other)`` (or torch's
        ``to(tensor=other)``); copies only if needed."""
        target = dtype
        check_device(device)
        if tensor is not None:
            args = (*args, tensor)
        for a in args:
            if isinstance(a, Tensor):
                target = a.dtype
            elif isinstance(a, (dt.dtype, type, np.dtype)):
                target = a
            else:
                check_device(a)
        if target is None:
            result = self.clone() if copy else self
        else:
            result = ops.elementwise.unary.cast(self, dt.to_dtype(target), copy=copy)
        return typing.cast(Tensor, result)  # (an op's result: a Tensor, typed as the core's)

    def cpu(self, memory_format=None) -> Tensor:
        """This tensor (tinyattn tensors always live on the CPU)."""
        from ..torch_surface.factory_options import check_options

        check_options("cpu", memory_format_=memory_format)
        return self

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
        """Raises: tinyattn runs on the CPU only."""
        raise RuntimeError("tinyattn runs on the CPU only: .cuda() is not available (use .cpu())")

    def type(self, dtype=None, non_blocking: bool = False):
        """With no argument torch's type string (``'torch.FloatTensor'``); else the tensor
        converted to ``dtype``: a legacy type (``ByteTensor``), its name
        (``'torch.ByteTensor'``) or a dtype. See :mod:`tinyattn.torch_surface.legacy_types`."""
        from ..torch_surface.legacy_types import tensor_type

        return tensor_type(self, dtype, non_blocking)

    def type_as(self, other: Tensor) -> Tensor:
        """``self.to(other.dtype)``."""
        return self.to(other.dtype)

    def float(self) -> Tensor:
        """``self.to(tinyattn.float32)``."""
        return self.to(dt.float32)

    def double(self) -> Tensor:
        """``self.to(tinyattn.float64)``."""
        return self.to(dt.float64)

    def half(self) -> Tensor:
        """``self.to(tinyattn.float16)``."""
        return self.to(dt.float16)

    def long(self) -> Tensor:
        """``self.to(tinyattn.int64)``."""
        return self.to(dt.int64)

    def int(self) -> Tensor:
        """``self.to(tinyattn.int32)``."""
        return self.to(dt.int32)

    def bool(self) -> Tensor:
        """``self.to(tinyattn.bool)``."""
        return self.to(dt.bool_)

    def byte(self) -> Tensor:
        """``self.to(tinyattn.uint8)``."""
        return self.to(dt.uint8)

    # -- pinning -------------------------------------------------------------------------
    def pin_memory(self, device=None) -> Tensor:
        """Raises, as torch's CPU-only build does: pinning needs an accelerator."""
        raise RuntimeError(
            "pin_memory(): cannot pin memory: tinyattn runs on the CPU only and there is "
            "no accelerator to pin memory for (torch's CPU-only build raises the same way)"
        )

    def is_pinned(self, device=None) -> builtins.bool:
        """False: tinyattn never pins memory (there is no accelerator)."""
        return False

    # -- Python protocols -----------------------------------------------------------------
    def __len__(self) -> builtins.int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(ops.shape.views.unbind(self, 0))

    def __bool__(self) -> builtins.bool:
        if self._data.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {self._data.size} values is ambiguous"
            )
        return bool(self._data.reshape(()))

    def __float__(self) -> builtins.float:
        return float(self.item())

    def __complex__(self) -> builtins.complex:
        return builtins.complex(self.item())

    def __int__(self) -> builtins.int:
        return int(self.item())

    def __index__(self) -> builtins.int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError(
                f"only integer tensors of a single element can be converted to an index "
                f"(got {self.dtype}, shape {tuple(self.shape)})"
            )
        return int(self.item())

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self.item(), spec)
        if spec:  # torch: only 0-dim tensors take a number format
            raise TypeError(
                f"unsupported format string {spec!r} passed to Tensor.__format__ (only 0-dim "
                f"tensors format as numbers; this one has shape {tuple(self.shape)}; use .item())"
            )
        return repr(self)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        from .printing import tensor_repr

        return tensor_repr(self.detach() if self._is_forward_only() else self)

    __str__ = __repr__

    def __deepcopy__(self, memo) -> Tensor:
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the "
                "deepcopy protocol at the moment"
            )
        new = object.__new__(type(self))
        Tensor._init(new, self._data.copy(), None, self._requires_grad)
        memo[id(self)] = new
        if self._grad is not None:
            new._grad = Tensor._make(self._grad._data.copy())
        import copy

        for k, v in self.__dict__.items():
            new.__dict__[k] = copy.deepcopy(v, memo)
        return new

    def __reduce_ex__(self, protocol):
        raise TypeError(
            "tinyattn tensors are not pickled; use tinyattn.save / tinyattn.load (no pickle)"
        )

    # -- in-place machinery ---------------------------------------------------------------
    def _apply_inplace(self, fn: builtins.type[Function], *args, **kwargs) -> Tensor:
        """Run ``fn(self, *args)`` and write the result into ``self``'s memory.

        Autograd sees an in-place op as the out-of-place op followed by a rebinding:
        ``self`` gets the new node as its ``grad_fn`` (the old value's node becomes
        the new node's input). When ``self`` is a view, its base is rebound too, to
        a ``CopySlices`` node that routes the gradient of the viewed region through
        the op and the rest of the base straight through.
        """
        from ..ops import inplace

        return inplace.apply_inplace(self, fn, *args, **kwargs)

    def _bump_version(self) -> None:
        self._version.value += 1

    def __setitem__(self, index, value) -> None:
        ops.index.indexing.setitem(self, index, value)

    def __getitem__(self, index) -> Tensor:
        return ops.index.indexing.getitem(self, index)

    # -- operators ------------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.add, False, "__add__")
        return ops.elementwise.arithmetic.add(self, other)

    def __radd__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.add, True, "__radd__")
        return ops.elementwise.arithmetic.add(other, self)

    def __iadd__(self, other):
        return self.add_(other)

    def __sub__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.subtract, False, "__sub__")
        return ops.elementwise.arithmetic.sub(self, other)

    def __rsub__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.subtract, True, "__rsub__")
        return ops.elementwise.arithmetic.sub(other, self)

    def __isub__(self, other):
        return self.sub_(other)

    def __mul__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.multiply, False, "__mul__")
        return ops.elementwise.arithmetic.mul(self, other)

    def __rmul__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.multiply, True, "__rmul__")
        return ops.elementwise.arithmetic.mul(other, self)

    def __imul__(self, other):
        return self.mul_(other)

    def __truediv__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.true_divide, False, "__truediv__")
        return ops.elementwise.arithmetic.div(self, other)

    def __rtruediv__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.true_divide, True, "__rtruediv__")
        return ops.elementwise.arithmetic.div(other, self)

    def __itruediv__(self, other):
        return self.div_(other)

    def __floordiv__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.floor_divide, False, "__floordiv__")
        return ops.elementwise.arithmetic.floor_divide(self, other)

    def __rfloordiv__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.floor_divide, True, "__rfloordiv__")
        return ops.elementwise.arithmetic.floor_divide(other, self)

    def __mod__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.remainder, False, "__mod__")
        return ops.elementwise.arithmetic.remainder(self, other)

    def __pow__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.power, False, "__pow__")
        return ops.elementwise.arithmetic.pow(self, other)

    def __rpow__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.power, True, "__rpow__")
        return ops.elementwise.arithmetic.pow(other, self)

    def __matmul__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.matmul, False, "__matmul__")
        return ops.linalg.matmul.matmul(self, other)

    def __rmatmul__(self, other):
        if isinstance(other, np.ndarray):  # NumPy's dtype, as torch
            self, other = promote_as_numpy(self, other, np.matmul, True, "__rmatmul__")
        return ops.linalg.matmul.matmul(other, self)

    def __neg__(self):
        return ops.elementwise.unary.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return ops.elementwise.unary.abs(self)

    def __eq__(self, other):  # type: ignore[override]
        if not isinstance(other, _COMPARABLE):
            return NotImplemented  # as torch: Python then compares identities (t == None: False)
        return ops.elementwise.compare.eq(self, other)

    def __ne__(self, other):  # type: ignore[override]
        if not isinstance(other, _COMPARABLE):
            return NotImplemented  # (t != None: True)
        return ops.elementwise.compare.ne(self, other)

    def __lt__(self, other):
        return ops.elementwise.compare.lt(self, other)

    def __le__(self, other):
        return ops.elementwise.compare.le(self, other)

    def __gt__(self, other):
        return ops.elementwise.compare.gt(self, other)

    def __ge__(self, other):
        return ops.elementwise.compare.ge(self, other)

    def __invert__(self):
        return ops.elementwise.compare.logical_not_or_invert(self)

    def __and__(self, other):
        return ops.elementwise.compare.bitwise_and(self, other)

    __rand__ = __and__

    def __or__(self, other):
        return ops.elementwise.compare.bitwise_or(self, other)

    __ror__ = __or__

    def __xor__(self, other):
        return ops.elementwise.compare.bitwise_xor(self, other)

    __rxor__ = __xor__

    @property
    def T(self) -> Tensor:
        return ops.shape.views.permute(self, *range(self.ndim - 1, -1, -1))

    @property
    def mT(self) -> Tensor:
        return ops.shape.views.transpose(self, -2, -1)


# Imported last: the op modules import Tensor from this module.
from .. import ops  # noqa: E402
