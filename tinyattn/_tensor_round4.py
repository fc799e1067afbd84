"""Tensor methods of torch's older matrix functions (``cholesky_solve``, ``lu``,
``triangular_solve``, the Householder trio, the removed ``solve`` / ``eig`` ...),
forwarding to ``tinyattn.ops.linalg_more`` / ``ops.lu`` at call time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from ._tensor import Tensor


def _ops():
    from . import ops

    return ops


class TensorRound4Methods:
    """Mixin of :class:`tinyattn.Tensor`."""

    __slots__ = ()

    # -- matrix functions (torch's older spellings) ---------------------------------------------
    def cholesky_solve(self, input2: Tensor, upper: bool = False) -> Tensor:
        """See :func:`tinyattn.cholesky_solve`."""
        return _ops().linalg_more.cholesky_solve(cast("Tensor", self), input2, upper)

    def cholesky_inverse(self, upper: bool = False) -> Tensor:
        """See :func:`tinyattn.cholesky_inverse`."""
        return _ops().linalg_more.cholesky_inverse(cast("Tensor", self), upper)

    def triangular_solve(
        self, A: Tensor, upper: bool = True, transpose: bool = False, unitriangular: bool = False
    ):
        """See :func:`tinyattn.triangular_solve`."""
        return _ops().linalg_more.triangular_solve(
            cast("Tensor", self), A, upper, transpose, unitriangular
        )

    def lu(self, pivot: bool = True, get_infos: bool = False):
        """See :func:`tinyattn.lu`."""
        return _ops().lu.lu(cast("Tensor", self), pivot, get_infos)

    def lu_solve(self, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
        """See :func:`tinyattn.lu_solve`."""
        return _ops().lu.lu_solve(cast("Tensor", self), LU_data, LU_pivots)

    def geqrf(self):
        """See :func:`tinyattn.geqrf`."""
        return _ops().linalg_more.geqrf(cast("Tensor", self))

    def orgqr(self, input2: Tensor) -> Tensor:
        """See :func:`tinyattn.orgqr`."""
        return _ops().linalg_more.orgqr(cast("Tensor", self), input2)

    def ormqr(
        self, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False
    ) -> Tensor:
        """See :func:`tinyattn.ormqr`."""
        return _ops().linalg_more.ormqr(cast("Tensor", self), input2, input3, left, transpose)

    def solve(self, A: Tensor):
        """Removed from torch: raises torch's RuntimeError. See :func:`tinyattn.solve`."""
        return _ops().linalg_more.solve(self, A)

    def lstsq(self, A: Tensor):
        """Removed from torch: raises torch's RuntimeError. See :func:`tinyattn.lstsq`."""
        return _ops().linalg_more.lstsq(self, A)

    def eig(self, eigenvectors: bool = False):
        """Removed from torch: raises torch's RuntimeError. See :func:`tinyattn.eig`."""
        return _ops().linalg_more.eig(self, eigenvectors)

    def symeig(self, eigenvectors: bool = False, upper: bool = True):
        """Removed from torch: raises torch's RuntimeError. See :func:`tinyattn.symeig`."""
        return _ops().linalg_more.symeig(self, eigenvectors, upper)

    # -- strided views and static-shape selection -----------------------------------------------
    def as_strided_(self, size, stride, storage_offset: int | None = None) -> Tensor:
        """In-place :meth:`as_strided`: ``self`` becomes that view of its storage."""
        ops = _ops()
        ops.inplace.check_inplace_allowed(self, "as_strided_")
        view = ops.strided.as_strided(cast("Tensor", self), size, stride, storage_offset)
        return cast("Tensor", self)._become_view(view, "as_strided_")

    def as_strided_scatter(
        self, src: Tensor, size, stride, storage_offset: int | None = None
    ) -> Tensor:
        """See :func:`tinyattn.as_strided_scatter`."""
        import tinyattn

        return tinyattn.as_strided_scatter(cast("Tensor", self), src, size, stride, storage_offset)

    def nonzero_static(self, *, size: int, fill_value: int = -1) -> Tensor:
        """See :func:`tinyattn.nonzero_static`."""
        import tinyattn

        return tinyattn.nonzero_static(cast("Tensor", self), size=size, fill_value=fill_value)
