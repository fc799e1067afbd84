"""``Normal(loc, scale)``: the Gaussian, with reparameterised sampling."""

from __future__ import annotations

import math

import tinyattn

from .distribution import LOG_SQRT_2PI, Distribution, as_float_tensors, check_positive


class Normal(Distribution):
    """Normal distribution with mean ``loc`` and standard deviation ``scale`` (> 0).

    ``loc`` and ``scale`` are tensors or numbers, broadcast to the batch shape; every
    method is differentiable in both (``rsample`` is ``loc + scale * eps``)."""

    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        self.loc, self.scale = as_float_tensors(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def _check_parameters(self) -> None:
        check_positive("scale", self.scale)

    def _params(self) -> dict:
        return {"loc": self.loc, "scale": self.scale}

    @property
    def mean(self) -> tinyattn.Tensor:
        """``loc``."""
        return self.loc

    @property
    def mode(self) -> tinyattn.Tensor:
        """``loc``."""
        return self.loc

    @property
    def stddev(self) -> tinyattn.Tensor:
        """``scale``."""
        return self.scale

    @property
    def variance(self) -> tinyattn.Tensor:
        """``scale ** 2``."""
        return self.scale.pow(2)

    def rsample(self, sample_shape=()) -> tinyattn.Tensor:
        """``loc + scale * eps`` with ``eps`` standard normal."""
        shape = self._extended_shape(sample_shape)
        eps = tinyattn.randn(tuple(shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value) -> tinyattn.Tensor:
        """``-(value - loc)**2 / (2 scale**2) - log(scale) - log(sqrt(2 pi))``."""
        if self._validate_args:
            self._check_value(value)
        var = self.scale**2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - LOG_SQRT_2PI

    def cdf(self, value) -> tinyattn.Tensor:
        """``(1 + erf((value - loc) / (scale sqrt 2))) / 2``."""
        if self._validate_args:
            self._check_value(value)
        return 0.5 * (1 + tinyattn.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value) -> tinyattn.Tensor:
        """``loc + scale * sqrt(2) * erfinv(2 value - 1)``."""
        return self.loc + self.scale * tinyattn.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> tinyattn.Tensor:
        """``1/2 + log(sqrt(2 pi)) + log(scale)``."""
        return 0.5 + LOG_SQRT_2PI + self.scale.log()
