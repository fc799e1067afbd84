"""``default_collate`` and ``default_convert``: turning samples into a batch, as torch does.

``default_collate(samples)`` merges a list of samples of the same structure into one
batch of that structure, recursively:

=====================================  ==================================================
sample element                          batch element
=====================================  ==================================================
Tensor of shape ``S``                   ``stack``: Tensor of shape ``(B, *S)``
NumPy array                             the same, keeping the array's dtype
NumPy scalar                            1-d Tensor of its dtype
Python ``float``                        1-d float64 Tensor (torch's choice, not float32)
Python ``int`` / ``bool``               1-d int64 / bool Tensor
``str`` / ``bytes``                     the list of them, unchanged
dict (any Mapping)                      same keys, each value collated
namedtuple                              same type, each field collated
tuple / list                            a *list* of the collated positions
=====================================  ==================================================

``default_convert`` is what the loader uses when ``batch_size=None``: no batching,
NumPy arrays and scalars become Tensors, containers are walked, the rest is unchanged.
"""

from __future__ import annotations

import collections.abc
import copy
import re
from typing import Any

import numpy as np

from ...core import _dtype as dt
from ...ops.creation.factories import as_tensor, tensor
from ...ops.shape.rearrange import stack
from ...tensor_api.tensor import Tensor

__all__ = ["default_collate", "default_convert"]

# NumPy dtypes that cannot become tensors: bytes, str, unicode, object.
_STR_OBJ_DTYPE = re.compile(r"[SaUO]")
_ERROR = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def _is_numpy_convertible(data) -> bool:
    """NumPy arrays and scalars, except string/object arrays (which stay as they are)."""
    if isinstance(data, np.ndarray):
        return _STR_OBJ_DTYPE.search(data.dtype.str) is None
    return isinstance(data, (np.bool_, np.number))


def default_convert(data: Any) -> Any:
    """Convert NumPy arrays/scalars in ``data`` to Tensors, walking containers; no batching.

    Tuples come back as lists (as in torch); other sequences and mappings keep their type.
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, (np.ndarray, np.generic)):
        return as_tensor(data) if _is_numpy_convertible(data) else data
    if isinstance(data, collections.abc.Mapping):
        return _same_mapping(data, {key: default_convert(data[key]) for key in data})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_sequence(data, [default_convert(d) for d in data])
    return data


def _same_mapping(template: collections.abc.Mapping, values: dict):
    """``values`` in a mapping of ``template``'s type when that type can be built so."""
    if isinstance(template, collections.abc.MutableMapping):
        clone = copy.copy(template)
        clone.update(values)
        return clone
    try:
        return type(template)(values)
    except TypeError:
        return values


def _same_sequence(template: collections.abc.Sequence, values: list):
    try:
        return type(template)(values)
    except TypeError:
        return values


def default_collate(batch: list | tuple) -> Any:
    """Merge a list of samples into a batch (see the module docstring for the rules).

    Parameters
    ----------
    batch : list
        Samples of the same structure; tensors/arrays at the same place must have the
        same shape, sequences at the same place the same length.

    Raises
    ------
    TypeError
        For an element type with no rule (``None``, arbitrary objects, string arrays).
    RuntimeError
        For sequences of different lengths or tensors of different shapes.
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if _STR_OBJ_DTYPE.search(elem.dtype.str) is not None:
            raise TypeError(_ERROR.format(elem.dtype))
        return default_collate([as_tensor(b) for b in batch])
    if isinstance(elem, (np.bool_, np.number)):
        return as_tensor(np.asarray(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=dt.float64)
    if isinstance(elem, int):  # bool too: torch.tensor([True, False]) is a bool tensor
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _same_mapping(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(samples) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed
        return _same_sequence(elem, transposed)
    raise TypeError(_ERROR.format(type(elem)))
