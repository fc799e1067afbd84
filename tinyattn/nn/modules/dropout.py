"""``Dropout``: inverted dropout, active only in training mode."""

from __future__ import annotations

import numbers

from ..._tensor import Tensor
from .. import functional as F
from .module import Module


class Dropout(Module):
    """Zero elements with probability ``p`` and scale the rest by 1/(1-p) while training.

    In eval mode, or with ``p=0``, the input passes through unchanged.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not isinstance(p, numbers.Real):  # torch: TypeError from comparing p with 0
            raise TypeError(
                f"Dropout: p must be a number in [0, 1], got {type(p).__name__} ({p!r})"
            )
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """In training, ``y = x * m``, ``m = keep / (1 - p)``, ``keep ~ Bernoulli(1 - p)``;
        in eval mode ``y = x``. Any shape.

        ``dx = g * m`` (``dx = g`` in eval mode). See :func:`F.dropout`.
        """
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
