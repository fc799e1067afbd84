"""``TensorBase``: the part of a tensor that the engine reads and writes.

A tensor, for autograd, is an array plus a few fields: the node that made it
(``grad_fn``), whether it wants a gradient, its ``.grad``, and a version counter
that in-place ops bump. Those fields live here, in the engine; the
methods (arithmetic, views, reductions ...) live in ``core/tensor.py``'s ``Tensor``, which
subclasses this class, and torch's full surface in ``tinyattn.tensor_api.tensor.Tensor``,
which subclasses that one.

The engine makes tensors too (op outputs, the gradients handed to hooks,
``.grad``), and they must be full ``Tensor`` objects. Rather than importing the
tensor module (which imports the ops, which import this layer: a cycle), the
engine builds them with ``TensorBase._make``, and the tensor class
declares itself the class to build, in its own class statement::

    class Tensor(TensorBase, op_outputs=True): ...   # core/tensor.py

(``tinyattn.Tensor`` declares itself the same way, later, and from then on is the class
built.) So the dependency points one way: ``tensor_api`` -> ``core``, never back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtype


class VersionCounter:
    """Shared by a tensor, its views and ``detach()``-ed aliases; bumped by in-place ops.

    ``value`` starts as this class attribute: making a counter (one per tensor an op
    returns) then runs no ``__init__``; the first bump gives the instance its own.
    """

    value: int = 0


class TensorBase:
    """A NumPy array plus the autograd fields; ``tinyattn.Tensor`` adds the API.

    Attributes
    ----------
    _data : np.ndarray
        The values.
    _grad_fn : Node or None
        The node that produced this tensor (None for a leaf).
    _requires_grad : bool
        Whether ops on this tensor are recorded.
    _grad : TensorBase or None
        What ``.grad`` returns. The engine writes it directly; user assignments go
        through the validating ``grad`` setter.
    _version : VersionCounter
        Bumped by every in-place write; shared with views of the same memory.
    _base : TensorBase or None
        The tensor this one is a view of.
    _accumulator : AccumulateGrad or None
        A leaf's node that adds incoming gradients to ``.grad`` (made on first use).
    _retains_grad : bool
        Set by ``retain_grad()`` on a non-leaf.
    """

    __slots__ = (
        "_data",
        "_grad_fn",
        "_requires_grad",
        "_grad",
        "_version",
        "_base",
        "_accumulator",
        "_retains_grad",
        "__dict__",
        "__weakref__",
    )

    _output_class: type  # the class op outputs are made of (declared with op_outputs=True)

    # A tensor class whose array only some ops may read (tinyattn.sparse's SparseTensor)
    # sets ``_op_guard = True`` and defines ``_check_op(op, args)``, which raises for the
    # others; ``Function.apply`` asks once per input (a class attribute: False when dense).
    _op_guard: bool = False

    # the slots' types (for type checkers; the values are set by ``_init`` / ``_make``)
    _data: np.ndarray
    _grad_fn: Any
    _requires_grad: bool
    _grad: Any
    _version: VersionCounter
    _base: Any
    _accumulator: Any
    _retains_grad: bool

    def __init_subclass__(cls, op_outputs: bool = False, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if op_outputs:
            TensorBase._output_class = cls

    def _init(self, data: np.ndarray, grad_fn, requires_grad: bool) -> None:
        self._data = data if data.size else _empty_with_strides(data)
        self._grad_fn = grad_fn
        self._requires_grad = requires_grad or grad_fn is not None
        self._grad = None
        self._version = VersionCounter()
        self._base = None
        self._accumulator = None
        self._retains_grad = False

    @classmethod
    def _make(cls, data: np.ndarray, grad_fn=None):
        """Wrap an array without copying, as a ``Tensor`` (the fast constructor every op uses)."""
        t: TensorBase = _new(cls._output_class)
        t._data = data if data.size else _empty_with_strides(data)
        t._grad_fn = grad_fn
        t._requires_grad = grad_fn is not None
        t._grad = t._base = t._accumulator = None
        t._version = VersionCounter()
        t._retains_grad = False
        return t

    def _grad_node(self):
        """The node gradients for this tensor flow into: its ``grad_fn``, or (a leaf) its
        accumulator. (``tinyattn.Tensor`` also refreshes a view whose base was written.)"""
        if self._grad_fn is not None:
            return self._grad_fn
        from .function import leaf_node  # (function.py imports this module)

        return leaf_node(self)

    @property
    def grad(self):
        """The gradient accumulated by ``backward`` (None until there is one)."""
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            check_grad_assignment(self, value)
        self._grad = value


TensorBase._output_class = TensorBase  # until a tensor class declares itself (core/tensor.py)
_new = object.__new__


def check_grad_assignment(tensor: TensorBase, grad) -> None:
    """torch's checks on ``tensor.grad = grad``: a tensor of the same shape and dtype."""
    if not isinstance(grad, TensorBase):
        raise TypeError(
            "assigned grad expected to be a Tensor or None but got grad of type "
            f"{type(grad).__module__}.{type(grad).__qualname__}"
        )
    if grad._data.shape != tensor._data.shape:
        raise RuntimeError(
            f"attempting to assign a gradient of size '{list(grad._data.shape)}' to a tensor of "
            f"size '{list(tensor._data.shape)}'. Please ensure that the gradient and the tensor "
            "are the same size"
        )
    if grad._data.dtype != tensor._data.dtype:
        have = _dtype.from_numpy_dtype(grad._data.dtype)
        want = _dtype.from_numpy_dtype(tensor._data.dtype)
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{have}' to a tensor with dtype "
            f"'{want}'. The gradient must match the tensor's dtype (convert it with "
            f".to({want}))"
        )


def _empty_with_strides(data: np.ndarray) -> np.ndarray:
    """A new zero-size array (NumPy gives it strides of 0) with torch's strides instead: C
    order, a size-0 dim counted as 1 (``empty(0, 3).stride() == (3, 1)``). Views of it then
    get torch's strides too (a transpose swaps them, a step multiplies them)."""
    if not isinstance(data, np.ndarray) or not data.ndim or any(data.strides):
        return data
    strides, step = [], data.itemsize
    for n in reversed(data.shape):
        strides.append(step)
        step *= max(n, 1)
    return np.lib.stride_tricks.as_strided(
        np.empty(1, data.dtype), data.shape, tuple(reversed(strides)), writeable=True
    )
