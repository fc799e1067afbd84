"""The differentiable steps of sparse COO tensors, on arrays (see docs/sparse.md).

A sparse tensor keeps its dense array underneath, so each step is a dense computation
plus the index bookkeeping; the backward formulas give torch's gradients: a gradient that
reaches a sparse operand through ``to_dense``, ``values`` or ``sparse.mm`` is *masked* to
the operand's sparsity pattern (torch returns it as a sparse tensor with that pattern),
one that reaches it through ``mm`` / ``@`` is the full dense gradient, as in torch.
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function


def scatter(values: np.ndarray, indices: np.ndarray, shape: tuple) -> np.ndarray:
    """A dense array of ``shape``: ``values`` summed in at ``indices`` (sparse_dim, nnz)."""
    out = np.zeros(shape, dtype=values.dtype)
    np.add.at(out, tuple(indices), values)
    return out


def mask(dense: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``dense`` with every entry outside the sparsity pattern ``indices`` set to zero."""
    return scatter(dense[tuple(indices)], np.unique(indices, axis=1), dense.shape)


class Assemble(Function):
    """values (nnz, *dense_dims) -> the dense array of the sparse tensor (duplicates sum)."""

    node_name = "SparseCooTensorWithDimsAndTensorsBackward0"
    supports_complex = True

    @staticmethod
    def forward(ctx, values, indices, shape):
        ctx.indices = indices
        return scatter(values, indices, shape)

    @staticmethod
    def backward(ctx, grad):
        return grad[tuple(ctx.indices)], None, None


class Gather(Function):
    """The values of a coalesced sparse tensor: its dense array at its indices."""

    node_name = "ValuesBackward0"
    supports_complex = True

    @staticmethod
    def forward(ctx, dense, indices):
        ctx.indices, ctx.shape = indices, dense.shape
        return dense[tuple(indices)]

    @staticmethod
    def backward(ctx, grad):
        return scatter(grad, ctx.indices, ctx.shape), None


class Relabel(Function):
    """The same dense array under a new sparse form (``to_sparse``, ``coalesce``,
    ``to_dense``); ``masked``: the gradient keeps only the pattern ``indices``."""

    supports_complex = True

    @staticmethod
    def forward(ctx, dense, indices, masked, node_name):
        ctx.indices, ctx.masked = indices, masked
        ctx._name = node_name
        return dense.copy()

    @staticmethod
    def backward(ctx, grad):
        return (mask(grad, ctx.indices) if ctx.masked else grad), None, None, None


class SparseDenseMM(Function):
    """sparse (n, k) @ dense (k, m) -> dense (n, m); ``masked``: torch.sparse.mm's gradient
    for the sparse operand (its pattern only), else mm's full dense gradient."""

    node_name = "SparseAddmmBackward0"

    @staticmethod
    def forward(ctx, sparse, dense, indices, masked):
        ctx.save_for_backward(sparse, dense)
        ctx.indices, ctx.masked = indices, masked
        return sparse @ dense

    @staticmethod
    def backward(ctx, grad):
        sparse, dense = ctx.saved_tensors
        g_sparse = g_dense = None
        if ctx.needs_input_grad[0]:
            g_sparse = grad @ dense.T
            g_sparse = mask(g_sparse, ctx.indices) if ctx.masked else g_sparse
        if ctx.needs_input_grad[1]:
            g_dense = sparse.T @ grad
        return g_sparse, g_dense, None, None
