"""``torch.*`` names public programs call, built from existing ops (no new ``Function``):
real-dtype answers to complex-number functions (``adjoint``; ``conj`` and the
rest of that family are in ``ops/elementwise/integer_math.py``) and the unsafe split forms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.tensor import Tensor

__all__ = [
    "adjoint",
    "narrow_copy",
    "unsafe_chunk",
    "unsafe_split",
    "unsafe_split_with_sizes",
]


def _ops():
    from .. import ops

    return ops


# -- complex-number functions on real tensors -----------------------------------------------
def adjoint(input: Tensor) -> Tensor:
    """``input.mH``: the last two dims swapped (no conjugation for a real dtype)."""
    return input.adjoint()


# -- copies and splits ------------------------------------------------------------------------
def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``input.narrow(dim, start, length).clone()``."""
    return input.narrow_copy(dim, start, length)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """``chunk`` (torch's unsafe form skips a view check tinyattn does not make)."""
    return input.unsafe_chunk(chunks, dim)


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple:
    """``split`` (torch's unsafe form skips a view check tinyattn does not make)."""
    return input.unsafe_split(split_size, dim)


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``split_with_sizes``."""
    return _ops().shape.composites.split_with_sizes(input, split_sizes, dim)
