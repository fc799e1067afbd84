"""Products and sums of sparse COO tensors: ``sparse.mm``, ``spmm``, ``sparse.sum``."""

from __future__ import annotations

import numpy as np

from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor
from . import functions as F
from .construction import to_sparse
from .coo import SparseTensor, wrap


def _check_mm(sparse, dense, name: str) -> None:
    if not isinstance(sparse, SparseTensor):
        raise TypeError(
            f"{name}: sparse must be a sparse COO tensor, got {type_name(sparse)} "
            "(make one with to_sparse() or sparse_coo_tensor)"
        )
    if not isinstance(dense, Tensor) or isinstance(dense, SparseTensor):
        raise TypeError(
            f"{name}: the second operand must be a dense Tensor, got {type_name(dense)} "
            "(sparse @ sparse is not supported in tinyattn; call .to_dense() on one)"
        )
    if sparse.ndim != 2 or dense.ndim != 2 or sparse.shape[1] != dense.shape[0]:
        raise RuntimeError(
            f"{name}: expected a sparse (n, k) matrix and a dense (k, m) matrix, got shapes "
            f"{list(sparse.shape)} and {list(dense.shape)}"
        )
    if sparse.dtype != dense.dtype:
        raise RuntimeError(
            f"{name}: expected both operands to have the same dtype, got {sparse.dtype} and "
            f"{dense.dtype}"
        )


def mm(sparse: Tensor, dense: Tensor) -> Tensor:
    """``sparse @ dense`` as a dense matrix (torch.sparse.mm). The gradient with respect to
    ``sparse`` keeps only its sparsity pattern (a sparse ``.grad`` on a leaf), as torch's."""
    _check_mm(sparse, dense, "sparse.mm")
    sparse._note_sparse_grad(True)  # type: ignore[attr-defined]
    return F.SparseDenseMM.apply(sparse, dense, sparse._indices_array, True)  # type: ignore[attr-defined]


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """``input @ mat2`` for a sparse ``input`` and a dense ``mat2`` (torch.spmm, and
    ``sparse @ dense``): the gradient with respect to ``input`` is the full dense one, as
    torch's."""
    _check_mm(input, mat2, "spmm")
    return F.SparseDenseMM.apply(input, mat2, input._indices_array, False)  # type: ignore[attr-defined]


def sum(input: Tensor, dim=None, dtype=None) -> Tensor:
    """torch.sparse.sum: all entries (a 0-d dense tensor), or over the dims ``dim``: sparse
    while a sparse dim remains, else dense. The gradient keeps ``input``'s pattern."""
    if not isinstance(input, SparseTensor):
        raise TypeError(f"sparse.sum: input must be a sparse COO tensor, got {type_name(input)}")
    x = input if dtype is None else to_sparse(input.to_dense().to(dtype), input.sparse_dim())
    if dim is None:
        return x.coalesce()._values().sum()
    dims = sorted({d % x.ndim for d in ((dim,) if isinstance(dim, int) else dim)})
    dense = x.to_dense().sum(dim=dims)
    kept = [d for d in range(x.sparse_dim()) if d not in dims]
    if not kept:
        return dense
    idx = np.unique(x._indices_array[kept], axis=1)
    return wrap(F.SparseRelabel.apply(dense, idx, False, "SparseSumBackward0"), idx, True)
