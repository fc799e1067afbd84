"""In-place random fills: ``uniform_``, ``normal_``, ``bernoulli_``, ``exponential_``,
``random_`` (the Tensor methods forward here).

They write data only, no graph: ``nn.init`` calls them under ``no_grad``. Each refuses a
write that autograd forbids (a leaf that requires grad, a view of one) and bumps the
tensor's version.
"""

from __future__ import annotations

import numpy as np

from ...core.tensor import Tensor
from ...random import _numpy_generator
from ...random.fill import fill_normal_, fill_uniform_
from ..inplace import check_inplace_allowed

__all__ = ["uniform_", "normal_", "bernoulli_", "exponential_", "random_"]


def _random_fill(self: Tensor, values: np.ndarray, op: str) -> Tensor:
    check_inplace_allowed(self, op)
    self._data[...] = values
    self._bump_version()
    return self


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None) -> Tensor:
    check_inplace_allowed(self, "uniform_")
    fill_uniform_(self._data, a, b, _numpy_generator(generator))
    self._bump_version()
    return self


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    if std < 0:
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std}")
    check_inplace_allowed(self, "normal_")
    fill_normal_(self._data, mean, std, _numpy_generator(generator))
    self._bump_version()
    return self


def bernoulli_(self: Tensor, p: float = 0.5, *, generator=None) -> Tensor:
    rng = _numpy_generator(generator)
    return _random_fill(self, rng.random(self.shape) < p, "bernoulli_")


def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    rng = _numpy_generator(generator)
    return _random_fill(self, rng.exponential(1.0 / lambd, self.shape), "exponential_")


def random_(self: Tensor, low: int = 0, high: int | None = None, *, generator=None) -> Tensor:
    if high is None:
        low, high = 0, low if low else 2**24
    rng = _numpy_generator(generator)
    return _random_fill(self, rng.integers(low, high, self.shape), "random_")
