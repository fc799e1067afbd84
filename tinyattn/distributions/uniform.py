"""``Uniform(low, high)``: the uniform distribution on ``[low, high)``."""

from __future__ import annotations

import tinyattn

from .distribution import Distribution, as_float_tensors


class Uniform(Distribution):
    """Uniform distribution on ``[low, high)``; ``low < high`` elementwise."""

    has_rsample = True

    def __init__(self, low, high, validate_args: bool | None = None) -> None:
        self.low, self.high = as_float_tensors(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)

    def _check_parameters(self) -> None:
        if not bool((self.low.detach() < self.high.detach()).all()):
            raise ValueError(
                f"Expected parameter low (Tensor of shape {tuple(self.low.shape)}) to satisfy "
                f"the constraint LessThan(upper_bound=high), but found invalid values:\n{self.low}"
            )

    def _params(self) -> dict:
        return {"low": self.low, "high": self.high}

    @property
    def mean(self) -> tinyattn.Tensor:
        """``(low + high) / 2``."""
        return (self.high + self.low) / 2

    @property
    def mode(self) -> tinyattn.Tensor:
        """NaN: every point of the support is a mode."""
        return self.high * float("nan")

    @property
    def variance(self) -> tinyattn.Tensor:
        """``(high - low) ** 2 / 12``."""
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()) -> tinyattn.Tensor:
        """``low + u * (high - low)`` with ``u`` uniform on [0, 1)."""
        shape = self._extended_shape(sample_shape)
        u = tinyattn.rand(tuple(shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value) -> tinyattn.Tensor:
        """``-log(high - low)`` inside the support, ``-inf`` outside."""
        if self._validate_args:
            self._check_value(value)
        inside = (self.low.le(value) & self.high.gt(value)).type_as(self.low)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value) -> tinyattn.Tensor:
        """``(value - low) / (high - low)`` clamped to [0, 1]."""
        if self._validate_args:
            self._check_value(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value) -> tinyattn.Tensor:
        """``low + value * (high - low)``."""
        return value * (self.high - self.low) + self.low

    def entropy(self) -> tinyattn.Tensor:
        """``log(high - low)``."""
        return (self.high - self.low).log()
