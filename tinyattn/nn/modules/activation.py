"""Activation modules (the elementwise ones and softmax); attention lives in attention.py."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .module import Module


class ReLU(Module):
    """max(x, 0) elementwise."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """``y = max(x, 0)``, any shape (in place with ``inplace=True``). ``dx = g * (x > 0)``."""
        return input.relu_() if self.inplace else F.relu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x * Phi(x) (``approximate='none'``) or its tanh approximation (``'tanh'``)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        """``y = x Phi(x)`` (or the tanh approximation), any shape; see :func:`F.gelu`.

        ``dx = g (Phi(x) + x phi(x))``, ``Phi``/``phi`` the standard normal CDF/density.
        """
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """tanh elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """``y = tanh(x)``, any shape. ``dx = g (1 - y^2)``."""
        return F.tanh(input)


class Sigmoid(Module):
    """1 / (1 + exp(-x)) elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """``y = 1 / (1 + exp(-x))``, any shape. ``dx = g y (1 - y)``."""
        return F.sigmoid(input)


class Softmax(Module):
    """exp(x) normalised to sum to 1 along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """``y = exp(x) / sum(exp(x))`` along ``self.dim``, same shape as ``x``.

        ``dx = y (g - sum(g y))``, the sum along ``self.dim``.
        """
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along ``dim``, computed stably."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """``y = x - logsumexp(x)`` along ``self.dim``, same shape as ``x``.

        ``dx = g - exp(y) sum(g)``, the sum along ``self.dim``.
        """
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


def __getattr__(name: str):
    # torch defines MultiheadAttention here (programs allowlist it by this path for
    # torch.load); ours lives in attention.py.
    if name == "MultiheadAttention":
        from .attention import MultiheadAttention

        return MultiheadAttention
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
