"""Tensor methods of torch's older matrix functions (``cholesky_solve``, ``lu``,
``triangular_solve``, the Householder trio, the removed ``solve`` / ``eig`` ...),
forwarding to ``tinyattn.ops.linalg.legacy`` / ``ops.linalg.lu`` at call time.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, cast

import numpy as np

from ..foundations.type_names import type_name

if TYPE_CHECKING:
    from ..core.tensor import Tensor


def _ops():
    from .. import ops

    return ops


def _dtype_words(t) -> str:
    """torch's C++ type spelling in error texts: 'long int', 'int', 'bool' ..."""
    return {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool"}.get(t.dtype.name, t.dtype.name)  # fmt: skip


def _fill(self, values: np.ndarray, op: str):
    from ..ops.random.fills import _random_fill

    return _random_fill(self, values, op)


def _rng(generator):
    from ..random import _numpy_generator

    return _numpy_generator(generator)


class TensorLongTailMethods:
    """Mixin of :class:`tinyattn.Tensor`."""

    __slots__ = ()
    _data: np.ndarray  # (TensorBase's field, declared for type checkers)

    # -- matrix functions (torch's older spellings) ---------------------------------------------
    def cholesky_solve(self, input2: Tensor, upper: bool = False) -> Tensor:
        """See :func:`tinyattn.cholesky_solve`."""
        return _ops().linalg.legacy.cholesky_solve(cast("Tensor", self), input2, upper)

    def cholesky_inverse(self, upper: bool = False) -> Tensor:
        """See :func:`tinyattn.cholesky_inverse`."""
        return _ops().linalg.legacy.cholesky_inverse(cast("Tensor", self), upper)

    def triangular_solve(
        self, A: Tensor, upper: bool = True, transpose: bool = False, unitriangular: bool = False
    ):
        """See :func:`tinyattn.triangular_solve`."""
        return _ops().linalg.legacy.triangular_solve(
            cast("Tensor", self), A, upper, transpose, unitriangular
        )

    def lu(self, pivot: bool = True, get_infos: bool = False):
        """See :func:`tinyattn.lu`."""
        return _ops().linalg.lu.lu(cast("Tensor", self), pivot, get_infos)

    def lu_solve(self, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
        """See :func:`tinyattn.lu_solve`."""
        return _ops().linalg.lu.lu_solve(cast("Tensor", self), LU_data, LU_pivots)

    def geqrf(self):
        """See :func:`tinyattn.geqrf`."""
        return _ops().linalg.legacy.geqrf(cast("Tensor", self))

    def orgqr(self, input2: Tensor) -> Tensor:
        """See :func:`tinyattn.orgqr`."""
        return _ops().linalg.legacy.orgqr(cast("Tensor", self), input2)

    def ormqr(
        self, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False
    ) -> Tensor:
        """See :func:`tinyattn.ormqr`."""
        return _ops().linalg.legacy.ormqr(cast("Tensor", self), input2, input3, left, transpose)

    def solve(self, A: Tensor):
        """Removed from torch: raises torch's RuntimeError. See :func:`tinyattn.solve`."""
        return _ops().linalg.legacy.solve(self, A)

    def lstsq(self, A: Tensor):
        """Removed from torch: raises torch's RuntimeError. See :func:`tinyattn.lstsq`."""
        return _ops().linalg.legacy.lstsq(self, A)

    def eig(self, eigenvectors: bool = False):
        """Removed from torch: raises torch's RuntimeError. See :func:`tinyattn.eig`."""
        return _ops().linalg.legacy.eig(self, eigenvectors)

    def symeig(self, eigenvectors: bool = False, upper: bool = True):
        """Removed from torch: raises torch's RuntimeError. See :func:`tinyattn.symeig`."""
        return _ops().linalg.legacy.symeig(self, eigenvectors, upper)

    # -- strided views and static-shape selection -----------------------------------------------
    def as_strided_(self, size, stride, storage_offset: int | None = None) -> Tensor:
        """In-place :meth:`as_strided`: ``self`` becomes that view of its storage."""
        ops = _ops()
        ops.inplace.check_inplace_allowed(self, "as_strided_")
        view = ops.shape.strided.as_strided(cast("Tensor", self), size, stride, storage_offset)
        return cast("Tensor", self)._become_view(view, "as_strided_")

    def as_strided_scatter(
        self, src: Tensor, size, stride, storage_offset: int | None = None
    ) -> Tensor:
        """See :func:`tinyattn.as_strided_scatter`."""
        from .copies import as_strided_scatter

        return as_strided_scatter(cast("Tensor", self), src, size, stride, storage_offset)

    def slice_inverse(
        self, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1
    ) -> Tensor:
        """See :func:`tinyattn.slice_inverse`."""
        from .copies import slice_inverse

        return slice_inverse(cast("Tensor", self), src, dim, start, end, step)

    def nonzero_static(self, *, size: int, fill_value: int = -1) -> Tensor:
        """See :func:`tinyattn.nonzero_static`."""
        from .copies import nonzero_static

        return nonzero_static(cast("Tensor", self), size=size, fill_value=fill_value)

    # -- random in-place samplers -----------------------------------------------------------------
    def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
        """Fill with Cauchy samples ``median + sigma * tan(pi (U - 1/2))``, U ~ Uniform(0, 1)."""
        if not self._data.dtype.kind == "f":
            raise RuntimeError(
                "Cauchy distribution is a continuous probability distribution. dtype must be a "
                f"floating point but you specified {_dtype_words(self)}"
            )
        if not sigma > 0.0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
        u = _rng(generator).random(self._data.shape)
        return _fill(self, median + sigma * np.tan(math.pi * (u - 0.5)), "cauchy_")

    def geometric_(self, p: float, *, generator=None) -> Tensor:
        """Fill with Geometric(p) samples: the number of Bernoulli(p) trials up to and
        including the first success (1, 2, ...); any dtype."""
        if not 0.0 < p < 1.0:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        return _fill(self, _rng(generator).geometric(p, self._data.shape), "geometric_")

    def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
        """Fill with ``exp(N(mean, std^2))`` samples (floating dtypes)."""
        if not self._data.dtype.kind == "f":
            name = self._data.dtype.name.replace("int64", "Long").replace("int32", "Int")
            raise NotImplementedError(f"\"log_normal_cpu\" not implemented for '{name}'")
        if not std > 0.0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        return _fill(self, _rng(generator).lognormal(mean, std, self._data.shape), "log_normal_")

    # -- deprecated out-of-place resizes, layout queries ------------------------------------------
    def resize(self, *sizes) -> Tensor:
        """Deprecated (warns, as torch): ``self`` with shape ``sizes`` and the same number of
        elements (a view when ``self`` is contiguous). Gradient: ``g`` reshaped back."""
        warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
        return _resize(cast("Tensor", self), sizes)

    def resize_as(self, tensor: Tensor) -> Tensor:
        """Deprecated (warns, as torch): :meth:`resize` to ``tensor``'s shape."""
        warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
        return _resize(cast("Tensor", self), tuple(tensor.shape))

    @property
    def layout(self):
        """``tinyattn.strided`` (a sparse tensor answers ``tinyattn.sparse_coo``)."""
        from .layouts import strided

        return strided

    @property
    def is_sparse(self) -> bool:
        """False: a dense tensor (see ``tinyattn.sparse``)."""
        return False

    def to_sparse(
        self, sparse_dim: int | None = None, *, layout=None, blocksize=None, dense_dim=None
    ) -> Tensor:
        """A sparse COO copy of ``self``'s nonzero entries (docs/sparse.md);
        ``sparse_dim``: how many leading dims to index (the rest stay dense values)."""
        import tinyattn

        return tinyattn.sparse.to_sparse(
            cast("Tensor", self),
            sparse_dim,
            layout=layout,
            blocksize=blocksize,
            dense_dim=dense_dim,
        )

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """``self`` (every tinyattn tensor is dense), converted to ``dtype`` if given."""
        me = cast("Tensor", self)
        return me if dtype is None or dtype == me.dtype else me.to(dtype)

    def dim_order(self, *, ambiguity_check: bool = False) -> tuple:
        """The dims from outermost to innermost in memory (by stride, as torch orders them).
        ``ambiguity_check=True``: raise when the order is not unique (a size-1 dim, or two
        neighbouring dims with equal strides). (torch also takes a list of memory formats
        there; tinyattn has no memory formats.)"""
        me = cast("Tensor", self)
        shape, strides = tuple(me.shape), me.stride()
        if not isinstance(ambiguity_check, bool):
            raise TypeError(
                "dim_order(): ambiguity_check must be a bool here (tinyattn has no memory "
                f"formats), got {type_name(ambiguity_check)}"
            )
        ambiguous = 1 in shape or any(a == b for a, b in zip(strides, strides[1:]))
        if ambiguity_check and ambiguous:
            raise RuntimeError(
                "The tensor does not have unique dim order, or cannot map to exact one of "
                "the given memory formats."
            )
        return _dim_order(shape, strides, ambiguity_check)

    # -- DLPack protocol ----------------------------------------------------------------------------
    def __dlpack__(self, *, stream=-1, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of ``self``'s memory (NumPy's exporter); refused when ``self``
        requires grad (torch's BufferError). ``stream`` is ignored (CPU memory)."""
        if cast("Tensor", self).requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        return self._data.__dlpack__(max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple:
        """``(1, 0)``: DLPack's kDLCPU, device 0."""
        return (1, 0)

    # -- regularized incomplete gamma ---------------------------------------------------------------
    def igamma(self, other) -> Tensor:
        """See :func:`tinyattn.igamma`."""
        return _ops().special.igamma.igamma(cast("Tensor", self), other)

    def igammac(self, other) -> Tensor:
        """See :func:`tinyattn.igammac`."""
        return _ops().special.igamma.igammac(cast("Tensor", self), other)

    def igamma_(self, other) -> Tensor:
        """In-place :func:`tinyattn.igamma`."""
        return _ops().special.igamma.igamma_(cast("Tensor", self), other)

    def igammac_(self, other) -> Tensor:
        """In-place :func:`tinyattn.igammac`."""
        return _ops().special.igamma.igammac_(cast("Tensor", self), other)


def _resize(x: Tensor, sizes) -> Tensor:
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    sizes = tuple(int(n) for n in sizes)
    if math.prod(sizes) != x.numel():
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, sizes))} ({math.prod(sizes)} elements in "
            f"total), but the given tensor has a size of {'x'.join(map(str, x.shape))} "
            f"({x.numel()} elements). autograd's resize can only change the shape of a given "
            "tensor, while preserving the number of elements. "
        )
    return x.reshape(sizes)


def _contiguous_in(shape: tuple, strides: tuple, order) -> bool:
    """Whether the dims laid out in ``order`` (outermost first) are densely packed
    (size-1 dims may have any stride; an empty tensor is contiguous)."""
    if 0 in shape:
        return True
    expected = 1
    for d in reversed(order):
        if shape[d] != 1 and strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def _dim_order(shape: tuple, strides: tuple, ambiguity_check: bool = False) -> tuple:
    """torch's logical-to-physical permutation: C order or channels-last when the tensor is
    exactly one of them, else an insertion sort of the dims by stride (larger outside) that
    leaves stride-0 pairs in place and puts the longer of two equal-stride dims outside.
    ``ambiguity_check``: raise when two neighbours of the result are not strictly ordered."""
    ndim = len(shape)
    if ndim <= 1:
        return tuple(range(ndim))
    c_order = _contiguous_in(shape, strides, range(ndim))
    channels_last = ndim == 4 and _contiguous_in(shape, strides, (0, 2, 3, 1))
    if c_order != channels_last:
        return tuple(range(ndim)) if c_order else (0, 2, 3, 1)

    def ge(a: int, b: int) -> bool:
        return b == 0 or (a != 0 and (a >= b or a % b == 0))

    def should_swap(a: int, b: int) -> int:
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if ge(shape[b], shape[a]) else 1
        return -1 if ge(sb, sa) else 1

    perm = list(reversed(range(ndim)))
    for i in range(1, ndim):
        j = i
        for k in reversed(range(i)):
            c = should_swap(perm[k], perm[j])
            if c > 0:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
            elif c < 0:
                break
    if ambiguity_check and any(should_swap(a, b) != -1 for a, b in zip(perm, perm[1:])):
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(reversed(perm))
