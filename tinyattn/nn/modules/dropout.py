"""``Dropout``: inverted dropout, active only in training mode."""

from __future__ import annotations

import numbers

from ...foundations.type_names import type_name
from ...tensor_api.tensor import Tensor
from .. import functional as F
from .module import Module


class _DropoutNd(Module):
    """Base of the dropout layers: ``p`` checked as torch's, repr ``p=.., inplace=..``."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        name = type(self).__name__
        if not isinstance(p, numbers.Real):
            raise TypeError(f"{name}: p must be a number in [0, 1], got {type_name(p)} ({p!r})")
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability ``p`` and scale the rest by 1/(1-p) while training.

    In eval mode, or with ``p=0``, the input passes through unchanged.
    """

    def forward(self, input: Tensor) -> Tensor:
        """In training, ``y = x * m``, ``m = keep / (1 - p)``, ``keep ~ Bernoulli(1 - p)``;
        in eval mode ``y = x``. Any shape.

        ``dx = g * m`` (``dx = g`` in eval mode). See :func:`F.dropout`.
        """
        return F.dropout(input, self.p, self.training, self.inplace)


# -- channel and alpha dropout ----------------------------------------------------------------


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) with probability ``p`` while training."""

    def forward(self, input: Tensor) -> Tensor:
        """``y = x * m``, ``m`` (N, C, 1) = keep / (1 - p) in training, ``y = x`` in eval.

        ``dx = g * m``. See :func:`F.dropout1d`.
        """
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) with probability ``p`` while training."""

    def forward(self, input: Tensor) -> Tensor:
        """``y = x * m``, ``m`` (N, C, 1, 1) = keep / (1 - p) in training, ``y = x`` in eval.

        ``dx = g * m``. See :func:`F.dropout2d` (a 3-D input is read as (N, C, L)).
        """
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability ``p``."""

    def forward(self, input: Tensor) -> Tensor:
        """``y = x * m``, ``m`` (N, C, 1, 1, 1) = keep / (1 - p) in training, ``y = x`` in eval.

        ``dx = g * m``. See :func:`F.dropout3d`.
        """
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: keeps mean 0 and variance 1 (see :func:`F.alpha_dropout`)."""

    def forward(self, input: Tensor) -> Tensor:
        """``y = a (keep x - (1 - keep) alpha') + a alpha' p`` in training, ``y = x`` in eval.

        ``dx = g a keep``.
        """
        # torch's module ignores ``inplace`` (the input is never overwritten); so does ours
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels of (N, C, *) (see :func:`F.feature_alpha_dropout`)."""

    def forward(self, input: Tensor) -> Tensor:
        """As :class:`AlphaDropout` with one keep flag per (n, c). ``dx = g a keep``."""
        # (``inplace`` is ignored, as torch's module does)
        return F.feature_alpha_dropout(input, self.p, self.training)
