"""Old torch layers kept for checkpoints and code that still name them.

``Container`` is the pre-``Module`` base (``Container(a=..., b=...)`` adds each keyword as
a child); ``CrossMapLRN2d`` is the Lua-torch cross-channel LRN, which differs from
``LocalResponseNorm`` at the channel edges (see :func:`~tinyattn.nn.functional.legacy.cross_map_lrn2d`).
"""

from __future__ import annotations

import warnings

from ...tensor_api.tensor import Tensor
from ..functional.legacy import cross_map_lrn2d
from .module import Module

__all__ = ["Container", "CrossMapLRN2d"]


class Container(Module):
    """Deprecated (as in torch): a ``Module`` whose keyword arguments become its children."""

    def __init__(self, **kwargs: Module) -> None:
        warnings.warn(
            "`nn.Container` is deprecated. All of its functionality is now implemented in "
            "`nn.Module`. Subclass that instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


class CrossMapLRN2d(Module):
    """Legacy cross-channel LRN over (N, C, H, W): ``y = x * (k + alpha/size * s)^-beta``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, H, W) -> (N, C, H, W), ``y = x * scale^-beta``.

        ``dx = g * scale^-beta - 2 alpha beta / size * x * sum over c' whose window holds c
        of g[c'] y[c'] / scale[c']`` (the composite's exact derivative).
        """
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
