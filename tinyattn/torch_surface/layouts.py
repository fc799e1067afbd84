"""torch's ``layout`` and ``memory_format`` objects, as a CPU-only torch has them.

tinyattn stores every tensor dense, in NumPy's strided memory: ``strided`` is the only
layout a factory accepts (the sparse ones name what a program asked for and raise), and
``contiguous_format`` / ``preserve_format`` the memory formats it produces.
``channels_last`` exists so programs can name it (``x.is_contiguous(memory_format=
torch.channels_last)`` answers from the strides); a factory asked for it raises.
"""

from __future__ import annotations

import numpy as np


class layout:  # torch's class name
    """A tensor layout (``tinyattn.strided``, ``tinyattn.sparse_coo`` ...)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"tinyattn.{self._name}"


class memory_format:  # torch's class name
    """A memory format (``tinyattn.contiguous_format``, ``tinyattn.channels_last`` ...)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"tinyattn.{self._name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")

contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

__all__ = [
    "layout", "memory_format", "strided", "sparse_coo", "sparse_csr", "sparse_csc",
    "sparse_bsr", "sparse_bsc", "jagged", "contiguous_format", "preserve_format",
    "channels_last", "channels_last_3d",
]  # fmt: skip


def is_contiguous_as(array: np.ndarray, fmt) -> bool:
    """``Tensor.is_contiguous(memory_format=fmt)``: C order, or for ``channels_last`` (4-D)
    / ``channels_last_3d`` (5-D) C order of the dims N, spatial..., C (torch's rule)."""
    if fmt not in (channels_last, channels_last_3d):
        return array.flags.c_contiguous
    ndim = 4 if fmt is channels_last else 5
    return array.ndim == ndim and np.transpose(array, (0, *range(2, ndim), 1)).flags.c_contiguous
