"""Torch's top-level spellings of the matrix functions (``torch.det``, ``torch.logdet``,
``torch.slogdet``, ``torch.inverse``, ``torch.cholesky``, ``torch.qr``, ``torch.svd``,
``torch.pinverse``, ``torch.matrix_exp``) and the Tensor methods of the same names:
thin wrappers of ``tinyattn.linalg`` (``ops/linalg/api.py``), with torch's older
argument conventions where they differ (``some=``, positional ``upper``, V not Vh).
"""

from __future__ import annotations

import numpy as np

from ...core.tensor import Tensor
from ..elementwise.unary import log as _log
from . import decompositions as D
from .api import _const, _tuple, inv, matrix_exp, pinv, svdvals
from .api import cholesky as _cholesky
from .api import det as _det
from .api import qr as _qr
from .api import slogdet as _slogdet
from .api import svd as _svd

__all__ = [
    "det", "logdet", "slogdet", "inverse", "cholesky", "qr", "svd", "pinverse", "matrix_exp",
]  # fmt: skip

old_svd_return = _tuple("svd", "U S V")


def det(input: Tensor) -> Tensor:
    """``torch.det``: :func:`tinyattn.linalg.det` (whose keyword is ``A``) under ``input``."""
    return _det(input)


def slogdet(input: Tensor):
    """``torch.slogdet``: :func:`tinyattn.linalg.slogdet` under the keyword ``input``."""
    return _slogdet(input)


def inverse(input: Tensor) -> Tensor:
    """``torch.inverse``: the same as :func:`inv`."""
    return inv(input)


def logdet(input: Tensor) -> Tensor:
    """``log(det(A))`` (...): NaN where det < 0, -inf where det = 0 (as torch).
    Gradient: ``dA = g * A^-T`` (``LogAbsDet``)."""
    D.check_matrix(input, "logdet")
    sign, logabs = slogdet(input)
    return logabs + _log(sign)


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky`` (deprecated in torch): :func:`cholesky` with a positional ``upper``."""
    return _cholesky(input, upper=upper)


def qr(input: Tensor, some: bool = True):
    """``torch.qr`` (deprecated in torch): ``linalg.qr(A, 'reduced' if some else 'complete')``."""
    return _qr(input, "reduced" if some else "complete")


def svd(input: Tensor, some: bool = True, compute_uv: bool = True):
    """``torch.svd`` (older API): ``(U, S, V)`` with V = Vh^T, reduced when ``some``;
    with ``compute_uv=False`` U and V are zero matrices (m, m) and (n, n), as torch."""
    D.check_matrix(input, "svd", square=False)
    if not compute_uv:
        m, n = input.shape[-2:]
        batch, dtype = tuple(input.shape[:-2]), input._data.dtype
        zeros = (_const(np.zeros(batch + (k, k), dtype)) for k in (m, n))
        return old_svd_return(next(zeros), svdvals(input), next(zeros))
    u, s, vh = _svd(input, full_matrices=not some)
    return old_svd_return(u, s, vh.mT)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: :func:`pinv` with ``rtol=rcond``."""
    return pinv(input, rtol=rcond)
