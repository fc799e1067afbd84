"""The differentiable steps of sparse COO tensors, on arrays (see docs/sparse.md).

A sparse tensor keeps its dense array underneath, so each step is a dense computation
plus the index bookkeeping; the backward formulas give torch's gradients: a gradient that
reaches a sparse operand through ``to_dense``, ``values`` or ``sparse.mm`` is *masked* to
the operand's sparsity pattern (torch returns it as a sparse tensor with that pattern),
one that reaches it through ``mm`` / ``@`` is the full dense gradient, as in torch.
Backward formulas use ``ctx.xp``, so they differentiate again (``create_graph=True``).
"""

from __future__ import annotations

import numpy as np

from ..core.function import Function


def scatter(values: np.ndarray, indices: np.ndarray, shape: tuple) -> np.ndarray:
    """A dense array of ``shape``: ``values`` summed in at ``indices`` (sparse_dim, nnz)."""
    out = np.zeros(shape, dtype=values.dtype)
    np.add.at(out, tuple(indices), values)
    return out


def pattern(indices: np.ndarray, shape: tuple, dtype) -> np.ndarray:
    """1 where ``indices`` store an entry (whole dense slices), 0 elsewhere, of ``shape``."""
    out = np.zeros(shape, dtype=dtype)
    out[tuple(indices)] = 1
    return out


def mask(dense: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``dense`` with every entry outside the sparsity pattern ``indices`` set to zero."""
    return dense * pattern(indices, dense.shape, dense.dtype)


class SparseAssemble(Function):
    """values (nnz, *dense_dims) -> the dense array of the sparse tensor (duplicates sum)."""

    node_name = "SparseCooTensorWithDimsAndTensorsBackward0"
    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, values, indices, shape):
        ctx.index = tuple(indices)
        return scatter(values, indices, shape)

    @staticmethod
    def backward(ctx, grad):
        return ctx.xp.getitem(grad, ctx.index), None, None


class SparseValues(Function):
    """The values of a coalesced sparse tensor: its dense array at its indices."""

    node_name = "ValuesBackward0"
    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, dense, indices):
        ctx.index, ctx.shape = tuple(indices), dense.shape
        return dense[ctx.index]

    @staticmethod
    def backward(ctx, grad):
        return ctx.xp.add_at(ctx.shape, ctx.index, grad), None


class SparseRelabel(Function):
    """The same dense array under a new sparse form (``to_sparse``, ``coalesce``,
    ``to_dense``); ``masked``: the gradient keeps only the pattern ``indices``."""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, dense, indices, masked, node_name):
        ctx.pattern = pattern(indices, dense.shape, dense.dtype) if masked else None
        ctx._name = node_name
        return dense.copy()

    @staticmethod
    def backward(ctx, grad):
        return (grad if ctx.pattern is None else grad * ctx.pattern), None, None, None


class SparseDenseMM(Function):
    """sparse (n, k) @ dense (k, m) -> dense (n, m); ``masked``: torch.sparse.mm's gradient
    for the sparse operand (its pattern only), else mm's full dense gradient."""

    node_name = "SparseAddmmBackward0"
    supports_create_graph = True

    @staticmethod
    def forward(ctx, sparse, dense, indices, masked):
        ctx.save_for_backward(sparse, dense)
        ctx.pattern = pattern(indices, sparse.shape, sparse.dtype) if masked else None
        return sparse @ dense

    @staticmethod
    def backward(ctx, grad):
        xp = ctx.xp
        sparse, dense = ctx.saved_tensors
        g_sparse = g_dense = None
        if ctx.needs_input_grad[0]:
            g_sparse = xp.matmul(grad, xp.swapaxes(dense, 0, 1))
            g_sparse = g_sparse if ctx.pattern is None else g_sparse * ctx.pattern
        if ctx.needs_input_grad[1]:  # (grad^T @ sparse)^T: the sparse operand stays on the right
            g_dense = xp.swapaxes(xp.matmul(xp.swapaxes(grad, 0, 1), sparse), 0, 1)
        return g_sparse, g_dense, None, None


class SparsePermute(Function):
    """The dense array with its dims permuted (``t``, ``transpose``, ``permute`` of a
    sparse tensor, whose indices' rows are permuted the same way)."""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, dense, perm, node_name):
        ctx.inverse = tuple(int(i) for i in np.argsort(perm))
        ctx._name = node_name
        return np.transpose(dense, perm).copy()

    @staticmethod
    def backward(ctx, grad):
        return ctx.xp.transpose(grad, ctx.inverse), None, None


class SparseMask(Function):
    """A dense array kept only on the sparsity pattern ``indices`` (zero elsewhere, even
    where it was inf or nan): the result of an elementwise op on a sparse tensor, computed
    densely and then given the sparse form. The gradient keeps the pattern too."""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, dense, indices, node_name):
        keep = pattern(indices, dense.shape, bool)
        ctx.pattern = keep.astype(dense.dtype)
        ctx._name = node_name
        return np.where(keep, dense, np.zeros((), dense.dtype))

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.pattern, None, None


class SparseFromValues(Function):
    """values (nnz, *dense_dims) at unique ``indices`` -> the dense array, for the ops
    that compute a sparse tensor's new values (``abs``, ``pow``, ``relu``); named as
    torch names that op's node."""

    supports_create_graph = True
    supports_complex = True

    @staticmethod
    def forward(ctx, values, indices, shape, node_name):
        ctx.index, ctx._name = tuple(indices), node_name
        return scatter(values, indices, shape)

    @staticmethod
    def backward(ctx, grad):
        return ctx.xp.getitem(grad, ctx.index), None, None, None
