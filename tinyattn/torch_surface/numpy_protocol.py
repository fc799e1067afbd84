"""How NumPy sees a :class:`tinyattn.Tensor`: the array protocol torch's ``Tensor`` has.

Three rules, the ones ``torch.Tensor`` follows (docs/semantics.md, "NumPy interop"):

- **convert**: ``np.asarray(t)`` / ``np.array(t)`` / any NumPy function that takes an
  array reads the tensor's memory through ``__array__`` (shared, as ``t.numpy()``;
  ``dtype=`` casts, ``copy=True`` copies). A tensor that requires grad is refused with
  torch's RuntimeError: NumPy would drop its graph without a word.
- **wrap**: a ufunc (``np.sin(t)``, ``np.add(arr, t)``, ``np.isnan(t)``) and the NumPy
  functions that fall back to a method of the array (``np.argmax``, ``np.reshape``,
  ``np.cumsum`` ...) hand their result to ``__array_wrap__``, which returns a tensor
  sharing the result's memory. A bool result becomes ``uint8``, as torch's wrap does.
- **promote as NumPy**: an operator between a tensor and an ``ndarray`` computes in
  the dtypes NumPy's ufunc would (``t + np.array([1, 2])`` is float64 for a float32
  ``t``), because torch hands that pair to NumPy. The result stays a differentiable
  tensor op; the array is a constant.
- **defer**: ``__array_priority__`` makes NumPy arrays and NumPy scalars give way to the
  tensor's own operators, so ``np.float64(2) * t`` is a tensor op where the NumPy scalar
  counts as a Python number (a float32 tensor stays float32).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_REQUIRES_GRAD = (
    "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
)


def tensor_as_array(tensor: Any, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """The array NumPy receives for ``tensor`` (NumPy 2's ``__array__(dtype, copy)``).

    ``copy=None`` shares memory when ``dtype`` needs no cast, ``copy=True`` always copies,
    ``copy=False`` refuses (ValueError) a cast that would need a copy, as NumPy does.
    """
    if tensor.requires_grad:
        raise RuntimeError(_REQUIRES_GRAD)
    data = tensor._data
    if dtype is not None and np.dtype(dtype) != data.dtype:
        if copy is False:
            raise ValueError(
                f"__array__(): copy=False cannot cast a {tensor.dtype} tensor to "
                f"{np.dtype(dtype)} without a copy"
            )
        return data.astype(dtype)
    return data.copy() if copy else data


def wrap_array(array: Any) -> Any:
    """The tensor a NumPy ufunc's result becomes (torch's ``__array_wrap__``).

    A 0-d result stays a 0-d tensor (NumPy's ``return_scalar`` is not taken, as in
    torch) and a bool array becomes ``uint8``.
    """
    from ..ops.creation.factories import from_numpy

    if not isinstance(array, np.ndarray):
        return array
    if array.dtype == np.bool_:
        array = array.astype(np.uint8)
    return from_numpy(array)


class NumpyProtocol:
    """Mixin of :class:`tinyattn.Tensor`: ``__array__``, ``__array_wrap__`` and the priority."""

    __slots__ = ()
    __array_priority__ = 1000

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return tensor_as_array(self, dtype, copy)

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False) -> Any:
        return wrap_array(array)


def promote_as_numpy(tensor: Any, other: np.ndarray, ufunc: np.ufunc, reflected: bool, name: str):
    """The operands of the operator ``name`` (``tensor`` and the ndarray ``other``; the
    array on the left when ``reflected``) as two tensors of the loop dtypes NumPy's
    ``ufunc`` picks for them (the "promote as NumPy" rule above). The array becomes a
    constant tensor; ``tensor`` is cast with ``to``, so it stays in the graph.

    Each arithmetic operator of :class:`tinyattn.Tensor` calls this when its other operand
    is an ndarray (the check sits in the operator itself: no extra call for tensors and
    numbers).
    """
    from ..ops.creation.factories import from_numpy

    pair = (other.dtype, tensor._data.dtype)
    try:
        loop = ufunc.resolve_dtypes((*(pair if reflected else pair[::-1]), None))
    except TypeError:
        raise TypeError(
            f"{name}: NumPy has no {ufunc.__name__} for a {tensor.dtype} tensor "
            f"and an ndarray of dtype {other.dtype}"
        ) from None
    own, theirs = (loop[1], loop[0]) if reflected else (loop[0], loop[1])
    return tensor.to(own), from_numpy(np.asarray(other, dtype=theirs))
