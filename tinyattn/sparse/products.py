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


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """torch.sparse.addmm: ``beta * input + alpha * (mat1 @ mat2)`` for a sparse ``mat1``
    and dense ``input`` / ``mat2``; dense. ``mat1``'s gradient keeps its pattern. (torch's
    docstring calls ``input`` ``mat``; its binding takes ``input=``, as here.)"""
    if not isinstance(input, Tensor) or isinstance(input, SparseTensor):
        raise TypeError(f"sparse.addmm: input must be a dense Tensor, got {type_name(input)}")
    product = mm(mat1, mat2)
    if np.broadcast_shapes(tuple(input.shape), tuple(product.shape)) != tuple(product.shape):
        raise RuntimeError(
            f"sparse.addmm: input of shape {list(input.shape)} does not broadcast to the "
            f"product's shape {list(product.shape)}"
        )
    return input * beta + product * alpha


def _softmax(input: Tensor, dim: int, dtype, log: bool) -> SparseTensor:
    """Softmax over the specified entries of ``input`` along ``dim`` (unspecified
    entries count as absent, not as zeros): a coalesced sparse tensor of ``input``'s
    pattern. Slices with no entry stay empty."""
    name = "sparse.log_softmax" if log else "sparse.softmax"
    if not isinstance(input, SparseTensor):
        raise TypeError(f"{name}: input must be a sparse COO tensor, got {type_name(input)}")
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{name}: dim must be an int, got {type_name(dim)}")
    if not -input.ndim <= dim < input.ndim:
        raise IndexError(
            f"{name}: Dimension out of range (expected to be in range of "
            f"[{-input.ndim}, {input.ndim - 1}], but got {dim})"
        )
    c = input.coalesce() if dtype is None else input.coalesce().to(dtype)
    idx = c._indices_array
    keep = F.pattern(idx, tuple(c.shape), bool)
    # -inf off the pattern in slices that have an entry; 0 in empty slices (masked below)
    absent = ~keep & keep.any(axis=dim, keepdims=True)
    fill = np.where(absent, -np.inf, 0.0).astype(c.dtype.np_dtype)
    node = "SparseLogSoftmaxBackward0" if log else "SparseSoftmaxBackward0"
    c._note_sparse_grad(True)
    logits = F.SparseRelabel.apply(c, idx, True, node) + Tensor._make(fill)
    out = logits.log_softmax(dim) if log else logits.softmax(dim)
    return wrap(F.SparseMask.apply(out, idx, node), idx, True)


def softmax(input: Tensor, dim: int, *, dtype=None) -> SparseTensor:
    """torch.sparse.softmax: softmax along ``dim`` over the specified entries only."""
    return _softmax(input, dim, dtype, log=False)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> SparseTensor:
    """torch.sparse.log_softmax: log-softmax along ``dim`` over the specified entries."""
    return _softmax(input, dim, dtype, log=True)
