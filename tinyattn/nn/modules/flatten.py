"""``Flatten`` and ``Unflatten``: reshape layers for ``nn.Sequential`` (torch's arguments)."""

from __future__ import annotations

import numbers

from ...foundations.type_names import type_name
from ...tensor_api.tensor import Tensor
from .module import Module


class Flatten(Module):
    """Flatten dims ``start_dim..end_dim`` into one: (N, *dims) -> (N, prod(dims)) by default."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        """``input.flatten(start_dim, end_dim)`` (a view when possible). ``dx = reshape(g)``
        back to the input's shape."""
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dim ``dim`` into ``unflattened_size``: (N, C*H*W) -> (N, C, H, W)."""

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        if not isinstance(dim, numbers.Integral):
            raise TypeError(f"Unflatten: invalid type of dim, expected int, got {type_name(dim)}")
        self._require_tuple_int(unflattened_size)
        self.dim = dim
        self.unflattened_size = unflattened_size

    def _require_tuple_int(self, input) -> None:
        """``TypeError`` unless ``input`` (``unflattened_size``) is a tuple or list of ints."""
        if not isinstance(input, (tuple, list)) or not all(
            isinstance(s, numbers.Integral) for s in input
        ):
            raise TypeError(
                f"Unflatten: unflattened_size must be a tuple (or list) of ints, got {input!r}"
            )

    def forward(self, input: Tensor) -> Tensor:
        """``input.unflatten(dim, unflattened_size)``. ``dx = reshape(g)`` back to the input's
        shape."""
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
