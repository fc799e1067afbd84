"""Making sparse COO tensors: ``sparse_coo_tensor`` and ``Tensor.to_sparse``."""

from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import no_grad
from ..core import _dtype as dt
from ..core.device import check_device
from ..ops.creation.factories import tensor as _tensor
from ..tensor_api.tensor import Tensor
from ..torch_surface.factory_options import check_options
from ..torch_surface.layouts import sparse_coo
from . import functions as F
from .coo import SparseTensor, wrap


def _index_array(indices) -> np.ndarray:
    """``indices`` as an int64 (sparse_dim, nnz) array, or a clear error."""
    arr = indices._data if isinstance(indices, Tensor) else np.asarray(indices)
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)  # (an empty list)
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"sparse_coo_tensor(): indices must be an integer tensor (int64), got dtype {arr.dtype}"
        )
    if arr.ndim != 2:
        raise RuntimeError(
            f"indices must be sparse_dim x nnz, but got: {list(arr.shape)} (argument 'indices')"
        )
    return arr.astype(np.int64)


def _shape(idx: np.ndarray, values: Tensor, size) -> tuple:
    """The tensor's size: ``size`` checked against the indices and values, or inferred."""
    sparse_dim, dense_shape = idx.shape[0], tuple(values.shape[1:])
    if size is None:
        extent = idx.max(axis=1) + 1 if idx.shape[1] else np.zeros(sparse_dim, np.int64)
        return tuple(int(n) for n in extent) + dense_shape
    shape = tuple(int(n) for n in size)
    if len(shape) != sparse_dim + len(dense_shape):
        raise RuntimeError(
            f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim "
            f"({len(dense_shape)}), but got {len(shape)} (argument 'size')"
        )
    if shape[sparse_dim:] != dense_shape:
        raise RuntimeError(
            f"values has incorrect size, expected {[idx.shape[1], *shape[sparse_dim:]]}, "
            f"got {list(values.shape)}"
        )
    for d in range(sparse_dim):
        if idx.shape[1] and idx[d].min() < 0:
            raise RuntimeError(f"found negative index {int(idx[d].min())} for dim {d}")
        if idx.shape[1] and idx[d].max() >= shape[d]:
            raise RuntimeError(
                f"size is inconsistent with indices: for dim {d}, size is {shape[d]} but "
                f"found index {int(idx[d].max())}"
            )
    return shape


def sparse_coo_tensor(
    indices,
    values,
    size=None,
    *,
    dtype=None,
    device=None,
    requires_grad: bool = False,
    check_invariants: bool | None = None,
    is_coalesced: bool | None = None,
    pin_memory: bool | None = False,
) -> SparseTensor:
    """A sparse COO tensor: ``values[k]`` at index ``indices[:, k]``, duplicates summed.

    ``indices``: integers (sparse_dim, nnz); ``values``: (nnz, *dense_dims); ``size``:
    inferred from the indices when None. The indices are always checked (tinyattn keeps
    the dense array underneath), whatever ``check_invariants`` says. Differentiable with
    respect to ``values``; ``requires_grad=True`` makes the result a leaf.
    """
    check_device(device)
    check_options("sparse_coo_tensor", pin_memory=pin_memory)
    idx = _index_array(indices)
    if not isinstance(values, Tensor):
        values = _tensor(values, dtype=dtype)
    elif dtype is not None and dt.to_dtype(dtype) != values.dtype:
        values = values.to(dtype)
    if values.ndim == 0 or values.shape[0] != idx.shape[1]:
        raise RuntimeError(
            f"indices and values must have same nnz, but got nnz from indices: {idx.shape[1]}, "
            f"nnz from values: {values.shape[0] if values.ndim else 'none (a 0-d tensor)'}"
        )
    shape = _shape(idx, values, size)
    coalesced = bool(is_coalesced) if is_coalesced is not None else idx.shape[1] < 2
    if not requires_grad:
        out = F.SparseAssemble.apply(values, idx, shape)
        return wrap(out, idx, coalesced, None if coalesced else values)
    with no_grad():
        out = F.SparseAssemble.apply(values.detach(), idx, shape)
    wrap(out, idx, coalesced, None if coalesced else values.detach())
    return out.requires_grad_()  # type: ignore[return-value]


def to_sparse(
    x: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None, dense_dim=None
) -> SparseTensor:
    """``x`` as a coalesced sparse COO tensor of its nonzero entries (or, with
    ``sparse_dim``, of the index tuples of its first ``sparse_dim`` dims whose slice is not
    all zero; ``dense_dim``: the trailing dims kept dense). The gradient reaches ``x``
    whole (torch's ``ToSparseBackward``). Layouts other than ``sparse_coo`` raise."""
    if layout not in (None, sparse_coo) or blocksize is not None:
        raise NotImplementedError(
            f"to_sparse: layout={layout!r}, blocksize={blocksize!r}: tinyattn has the "
            "sparse_coo layout only (no CSR, CSC or block layouts)"
        )
    if dense_dim is not None:
        if sparse_dim is not None:
            raise RuntimeError("to_sparse: give sparse_dim or dense_dim, not both")
        sparse_dim = x.ndim - int(dense_dim)
    k = x.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 <= k <= x.ndim:
        raise RuntimeError(
            f"to_sparse: sparse_dim must be between 0 and {x.ndim} (the tensor's dims), got {k}"
        )
    data = x.detach().numpy()
    nonzero = data != 0 if k == data.ndim else (data != 0).reshape(*data.shape[:k], -1).any(-1)
    idx = np.array(np.nonzero(nonzero), dtype=np.int64).reshape(k, -1)
    name = "ToSparseBackward1" if sparse_dim is None else "ToSparseBackward0"  # (torch's)
    return wrap(F.SparseRelabel.apply(x, idx, False, name), idx, True)
