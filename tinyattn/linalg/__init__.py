"""``tinyattn.linalg``: the subset of ``torch.linalg`` tinyattn provides.

Matrix functions take batches ``(..., m, n)``; see ``ops/linalg/api.py`` (checks and
compositions) and ``ops/linalg/decompositions.py`` (the Functions and their gradients).
"""

from __future__ import annotations

from ..tensor_api.tensor import Tensor
from ..ops.linalg import matmul as _ops
from ..ops.linalg.api import (
    LinAlgError,
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    lstsq,
    matrix_exp,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    solve_triangular,
    svd,
    svdvals,
    vecdot,
)
from ..ops.reduce.reduction import norm as _norm

__all__ = [
    "cross", "vector_norm", "LinAlgError", "cholesky", "det", "eigh", "eigvalsh", "inv",
    "lstsq", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm",
    "pinv", "qr", "slogdet", "solve", "solve_triangular", "svd", "svdvals", "vecdot",
]  # fmt: skip


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (default -1); shapes broadcast.

    Gradient: ``d input = other x g``, ``d other = g x input``.
    """
    return _ops.cross(input, other, dim)


def vector_norm(input: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``(sum |x|^ord)^(1/ord)`` of the entries x of ``input`` over ``dim`` (all elements when
    None); see :func:`tinyattn.norm`."""
    return _norm(input, ord, dim, keepdim, dtype=dtype)


# torch's out= keyword (tinyattn/torch_surface/out.py; the names are data in tinyattn/torch_surface/out_table.py)
from ..torch_surface.out import install as _install_out
from ..torch_surface.out_table import OUT_LINALG as _OUT_NAMES

_install_out(globals(), _OUT_NAMES, "linalg_")
