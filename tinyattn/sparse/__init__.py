"""torch.sparse: sparse COO tensors and their products (see docs/sparse.md).

``tinyattn.sparse_coo_tensor`` and ``Tensor.to_sparse`` make a :class:`SparseTensor`;
``tinyattn.sparse.mm`` / ``tinyattn.spmm`` / ``sparse @ dense`` multiply it by a dense
matrix and ``tinyattn.sparse.sum`` sums it. The dense array is kept underneath.
"""

from .construction import sparse_coo_tensor, to_sparse
from .coo import SparseTensor
from .products import mm, spmm, sum

__all__ = ["SparseTensor", "mm", "spmm", "sparse_coo_tensor", "sum", "to_sparse"]
