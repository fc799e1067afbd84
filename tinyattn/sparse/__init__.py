"""torch.sparse: sparse COO tensors and their products (see docs/sparse.md).

``tinyattn.sparse_coo_tensor`` and ``Tensor.to_sparse`` make a :class:`SparseTensor`;
``tinyattn.sparse.mm`` / ``tinyattn.spmm`` / ``sparse @ dense`` multiply it by a dense
matrix and ``tinyattn.sparse.sum`` sums it. The dense array is kept underneath.
"""

from ..torch_surface.out import with_out
from .construction import sparse_coo_tensor, to_sparse
from .coo import SparseTensor
from .legacy import DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor
from .products import addmm, log_softmax, mm, softmax, sum
from .products import spmm as _spmm

spmm = with_out(_spmm, "spmm")  # torch.spmm(input, mat2, *, out=None)

__all__ = [
    "DoubleTensor", "FloatTensor", "HalfTensor", "IntTensor", "LongTensor", "SparseTensor",
    "addmm", "log_softmax", "mm", "softmax", "spmm", "sparse_coo_tensor", "sum", "to_sparse",
]  # fmt: skip
