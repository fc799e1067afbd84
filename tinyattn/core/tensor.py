"""``Tensor``: the tensor a learner reads. An array, the autograd fields of ``TensorBase``,
and the methods the README's walk-through uses, each a call of a primitive op
(``primitives.py``) through ``Function.apply``, which records the graph.

    x = tensor([[1.0, 2.0]], requires_grad=True)
    y = (x @ x.T).exp().sum()       # ops record nodes: y.grad_fn is a SumBackward0
    y.backward()                    # the engine (engine.py) fills x.grad

``tinyattn.Tensor`` subclasses this class and adds torch's full surface (dtype promotion
rules, ``alpha=``, every dim form, the long tail of methods); with the core alone, op
results are this class.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtype
from .engine import run_backward
from .primitives import (
    Add,
    Div,
    Exp,
    Expand,
    Index,
    Log,
    Matmul,
    Max,
    Mul,
    Permute,
    Pow,
    Reshape,
    Softmax,
    Sum,
)
from .size import Size
from .tensor_base import TensorBase

__all__ = ["Tensor", "tensor"]


def _axes(dim, ndim: int) -> tuple[int, ...] | None:
    """``dim`` (None, an int or a sequence of ints, negative from the end) as axes."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(d % ndim if ndim else 0 for d in dims)


def _shape(sizes: tuple) -> tuple:
    """``f(2, 3)`` or ``f((2, 3))`` as ``(2, 3)``."""
    return tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes


class Tensor(TensorBase, op_outputs=True):
    """An n-dimensional array that can record the ops applied to it, for backprop."""

    __slots__ = ()

    def __init__(self, data: Any, dtype: Any = None, requires_grad: bool = False) -> None:
        array = np.array(data._data if isinstance(data, TensorBase) else data)
        if dtype is not None:
            array = array.astype(_dtype.to_dtype(dtype).np_dtype)
        elif array.dtype == np.float64 and not isinstance(data, (np.ndarray, TensorBase)):
            array = array.astype(_dtype.get_default_dtype().np_dtype)  # Python floats
        self._init(array, None, requires_grad)

    # -- what a tensor is ----------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Any:
        """The shape, or its length along ``dim``."""
        return Size(self._data.shape) if dim is None else self._data.shape[dim]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self) -> _dtype.dtype:
        return _dtype.from_numpy_dtype(self._data.dtype)

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._requires_grad = bool(value)

    @property
    def grad_fn(self) -> Any:
        """The node that made this tensor (None for a leaf)."""
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    def numpy(self) -> np.ndarray:
        """The values (shared memory). Refused while the tensor requires grad."""
        if self._requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        return self._data

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.reshape(()).item()

    def detach(self) -> Tensor:
        """The same values, cut from the graph (shares memory and version counter)."""
        t = TensorBase._make(self._data)
        t._version = self._version
        return t

    def backward(self, gradient: Any = None) -> None:
        """Accumulate d(self)/d(leaf) into the ``.grad`` of every leaf that requires grad."""
        if not self._requires_grad:
            raise RuntimeError(
                "element 0 of tensors does not require grad and does not have a grad_fn"
            )
        if gradient is None:
            if self._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            seed = np.ones_like(self._data)
        else:
            seed = gradient._data if isinstance(gradient, TensorBase) else np.asarray(gradient)
        run_backward([self._grad_node()], [seed])

    def __repr__(self) -> str:
        body = np.array2string(self._data, separator=", ", prefix="tensor(")
        node = self._grad_fn
        extra = f", grad_fn=<{node.name()}>" if node is not None else ""
        if node is None and self._requires_grad:
            extra = ", requires_grad=True"
        return f"tensor({body}{extra})"

    # -- arithmetic: a - b is add(a, b, alpha=-1), -a is mul(a, -1) ----------------------
    def __add__(self, other: Any) -> Tensor:
        return Add.apply(self, other)

    def __radd__(self, other: Any) -> Tensor:
        return Add.apply(other, self)

    def __sub__(self, other: Any) -> Tensor:
        return Add.apply(self, other, alpha=-1)

    def __rsub__(self, other: Any) -> Tensor:
        return Add.apply(other, self, alpha=-1)

    def __mul__(self, other: Any) -> Tensor:
        return Mul.apply(self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return Mul.apply(other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return Div.apply(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return Div.apply(other, self)

    def __pow__(self, other: Any) -> Tensor:
        return Pow.apply(self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return Pow.apply(other, self)

    def __neg__(self) -> Tensor:
        return Mul.apply(self, -1)

    def __matmul__(self, other: Any) -> Tensor:
        return Matmul.apply(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return Matmul.apply(other, self)

    def matmul(self, other: Any) -> Tensor:
        """``self @ other``."""
        return Matmul.apply(self, other)

    def __getitem__(self, index: Any) -> Tensor:
        """NumPy's indexing: ints, slices, None, ``...``, int or bool tensors / arrays."""
        index = index if isinstance(index, tuple) else (index,)
        return Index.apply(self, tuple(i._data if isinstance(i, TensorBase) else i for i in index))

    # -- elementwise functions and reductions --------------------------------------------
    def exp(self) -> Tensor:
        """``e ** self``, elementwise."""
        return Exp.apply(self)

    def log(self) -> Tensor:
        """The natural logarithm, elementwise."""
        return Log.apply(self)

    def sum(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """The sum over ``dim`` (an int, a tuple of ints, or None for all)."""
        return Sum.apply(self, _axes(dim, self.ndim), keepdim, None)

    def max(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """The largest value over ``dim`` (None: all); ties share the gradient."""
        return Max.apply(self, _axes(dim, self.ndim), keepdim, True, False)

    def softmax(self, dim: int) -> Tensor:
        """``exp(self)`` normalised to sum to 1 along ``dim``."""
        return Softmax.apply(self, dim % self.ndim if self.ndim else None)

    # -- shapes --------------------------------------------------------------------------
    def reshape(self, *shape: Any) -> Tensor:
        """The same values in a new shape (one size may be -1): a view when possible."""
        return Reshape.apply(self, _shape(shape), False)

    def view(self, *shape: Any) -> Tensor:
        """The same memory seen with a new shape; refused when the layout forbids it."""
        return Reshape.apply(self, _shape(shape), True)

    def permute(self, *dims: Any) -> Tensor:
        """The dims reordered: ``out.shape[i] == self.shape[dims[i]]``."""
        return Permute.apply(self, tuple(d % self.ndim for d in _shape(dims)))

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        """Two dims swapped."""
        order = list(range(self.ndim))
        order[dim0], order[dim1] = order[dim1], order[dim0]
        return Permute.apply(self, tuple(order))

    @property
    def T(self) -> Tensor:
        """All dims reversed (the transpose of a matrix)."""
        return Permute.apply(self, tuple(range(self.ndim - 1, -1, -1)))

    def expand(self, *sizes: Any) -> Tensor:
        """Broadcast to ``sizes`` (-1 keeps a dim) without copying."""
        sizes = _shape(sizes)
        lead = len(sizes) - self.ndim
        shape = tuple(self._data.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
        return Expand.apply(self, shape)


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (numbers, nested lists, an array).

    Python floats become the default float dtype (float32); ``requires_grad=True`` asks the
    ops on it to be recorded, so that ``backward`` fills its ``.grad``.
    """
    return Tensor(data, dtype=dtype, requires_grad=requires_grad)
