"""torch's legacy sparse constructors: ``torch.sparse.FloatTensor(indices, values, size)``.

Older graph code (GCN tutorials) builds its adjacency matrix this way. As in torch, the
result is an ordinary sparse COO tensor whose dtype is that of ``values`` (torch does not
cast them), ``FloatTensor(*sizes)`` is an empty sparse tensor of that size, and
``isinstance(s, sparse.FloatTensor)`` asks for a sparse tensor of the type's dtype.
"""

from __future__ import annotations

import numpy as np

from ..core import _dtype as dt
from .construction import sparse_coo_tensor
from .coo import SparseTensor


class _LegacySparseType(type):
    """The metaclass: construction makes a sparse COO tensor; isinstance checks the dtype."""

    _dtype: dt.dtype

    def __call__(cls, *args, size=None):
        if args and all(isinstance(a, (int, np.integer)) for a in args) and size is None:
            sizes = tuple(int(a) for a in args)
            empty_values = np.zeros((0,), dtype=cls._dtype.np_dtype)
            return sparse_coo_tensor(np.zeros((len(sizes), 0), np.int64), empty_values, sizes)
        if len(args) not in (2, 3):
            raise TypeError(
                f"sparse.{cls.__name__}(): expected (indices, values, size=None) or integer "
                f"sizes, got {len(args)} positional arguments"
            )
        shape = args[2] if len(args) == 3 else size
        return sparse_coo_tensor(args[0], args[1], shape)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, SparseTensor) and obj.dtype == cls._dtype


def _legacy(name: str, dtype: dt.dtype) -> type:
    doc = f"torch.sparse.{name}: a sparse COO tensor (``isinstance``: sparse and {dtype})."
    return _LegacySparseType(name, (), {"_dtype": dtype, "__doc__": doc})


FloatTensor = _legacy("FloatTensor", dt.float32)
DoubleTensor = _legacy("DoubleTensor", dt.float64)
HalfTensor = _legacy("HalfTensor", dt.float16)
LongTensor = _legacy("LongTensor", dt.int64)
IntTensor = _legacy("IntTensor", dt.int32)
