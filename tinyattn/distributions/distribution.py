"""``Distribution``: the base class of ``tinyattn.distributions``, with torch's interface.

A distribution has a ``batch_shape`` (independent distributions of the same family,
from broadcasting its parameters) and an ``event_shape`` (the shape of one draw).
``sample(sample_shape)`` returns ``sample_shape + batch_shape + event_shape``; ``rsample``
does the same through a reparameterisation, so gradients reach the parameters;
``sample`` runs it without a graph. Parameters are checked at construction when
``validate_args`` is true (the default, as in torch), values at ``log_prob``.
"""

from __future__ import annotations

import math
from typing import Any

import tinyattn

from ..foundations.type_names import type_name

_VALIDATE_DEFAULT = True


class Distribution:
    """The interface every distribution of ``tinyattn.distributions`` has."""

    has_rsample = False
    has_enumerate_support = False

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None) -> None:
        self._batch_shape = tinyattn.Size(batch_shape)
        self._event_shape = tinyattn.Size(event_shape)
        self._validate_args = _VALIDATE_DEFAULT if validate_args is None else bool(validate_args)
        if self._validate_args:
            self._check_parameters()

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Whether distributions check their arguments by default (True, as in torch)."""
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args: expected True or False, got {value!r}")
        global _VALIDATE_DEFAULT
        _VALIDATE_DEFAULT = value

    @property
    def batch_shape(self) -> tinyattn.Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> tinyattn.Size:
        """The shape of a single draw."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> tinyattn.Size:
        if not isinstance(sample_shape, (tuple, list, tinyattn.Size)):
            raise TypeError(f"sample_shape: expected a tuple of ints, got {sample_shape!r}")
        return tinyattn.Size(tuple(sample_shape) + self._batch_shape + self._event_shape)

    def _check_parameters(self) -> None:
        """Raise ValueError for parameters outside their support (subclasses)."""

    def _check_value(self, value: Any) -> None:
        """Raise ValueError for a value outside the support (subclasses)."""
        if not isinstance(value, tinyattn.Tensor):
            raise ValueError(
                f"The value argument to log_prob must be a Tensor, got {type_name(value)}"
            )

    def sample(self, sample_shape=()) -> tinyattn.Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape``, without a graph."""
        with tinyattn.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> tinyattn.Tensor:
        """A reparameterised draw (gradients flow to the parameters)."""
        raise NotImplementedError(f"{type(self).__name__} has no rsample")

    def sample_n(self, n: int) -> tinyattn.Tensor:
        """``n`` draws (torch's deprecated spelling of ``sample((n,))``)."""
        return self.sample((n,))

    def log_prob(self, value: tinyattn.Tensor) -> tinyattn.Tensor:
        """The log density (or log mass) of ``value``."""
        raise NotImplementedError(f"{type(self).__name__} has no log_prob")

    def cdf(self, value: tinyattn.Tensor) -> tinyattn.Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} has no cdf")

    def icdf(self, value: tinyattn.Tensor) -> tinyattn.Tensor:
        """The inverse of ``cdf``."""
        raise NotImplementedError(f"{type(self).__name__} has no icdf")

    def entropy(self) -> tinyattn.Tensor:
        """The entropy of each distribution of the batch."""
        raise NotImplementedError(f"{type(self).__name__} has no entropy")

    def perplexity(self) -> tinyattn.Tensor:
        """``exp(entropy())``."""
        return tinyattn.exp(self.entropy())

    @property
    def stddev(self) -> tinyattn.Tensor:
        """The standard deviation: the square root of ``variance``."""
        return self.variance.sqrt()

    def __repr__(self) -> str:
        params = ", ".join(
            f"{k}: {v if v.numel() == 1 else v.size()}" for k, v in self._params().items()
        )
        return f"{type(self).__name__}({params})"

    def _params(self) -> dict:
        return {}


def as_float_tensors(*values: Any) -> list[tinyattn.Tensor]:
    """Parameters as tensors broadcast to one shape (numbers take the tensors' dtype, or the
    default dtype), as torch's ``broadcast_all``."""
    tensors = [v for v in values if isinstance(v, tinyattn.Tensor)]
    for v in values:
        if not isinstance(v, (tinyattn.Tensor, int, float)):
            raise ValueError(
                f"Input arguments must all be instances of numbers or Tensor, got {type_name(v)}"
            )
    dtype = tensors[0].dtype if tensors else tinyattn.get_default_dtype()
    full = [
        v if isinstance(v, tinyattn.Tensor) else tinyattn.tensor(float(v), dtype=dtype)
        for v in values
    ]
    return list(tinyattn.broadcast_tensors(*full))


def check_positive(name: str, value: tinyattn.Tensor) -> None:
    """ValueError naming the parameter when some element is not > 0 (NaN included)."""
    if not bool((value.detach() > 0).all()):
        raise ValueError(
            f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) to satisfy the "
            f"constraint GreaterThan(lower_bound=0.0), but found invalid values:\n{value}"
        )


LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
