"""``Categorical(probs=None, logits=None)`` and ``Bernoulli``: discrete distributions given
by probabilities or by logits (exactly one of the two)."""

from __future__ import annotations

from functools import cached_property

import tinyattn
import tinyattn.nn.functional as F

from .distribution import Distribution, as_float_tensors


def _one_of(probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _clamped_probs(probs: tinyattn.Tensor) -> tinyattn.Tensor:
    eps = tinyattn.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


class Categorical(Distribution):
    """A distribution over ``0 .. K-1`` for each batch element; ``K`` is the last dimension
    of ``probs`` (normalised to sum to 1) or ``logits`` (normalised by logsumexp)."""

    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        param = probs if probs is not None else logits
        name = "probs" if probs is not None else "logits"
        if not isinstance(param, tinyattn.Tensor) or param.dim() < 1:
            raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
        if probs is not None:
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = param
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)

    def _check_parameters(self) -> None:
        p = self._param.detach()
        if "probs" in self.__dict__ and not bool((p >= 0).all()):
            raise ValueError(
                f"Expected parameter probs (Tensor of shape {tuple(p.shape)}) to satisfy the "
                f"constraint Simplex(), but found invalid values:\n{p}"
            )
        if not bool((p == p).all()):
            name = "probs" if "probs" in self.__dict__ else "logits"
            raise ValueError(f"Expected parameter {name} (Tensor of shape {tuple(p.shape)}) "
                             f"to have no NaN, but found invalid values:\n{p}")  # fmt: skip

    def _params(self) -> dict:
        return {"probs" if "probs" in self.__dict__ else "logits": self._param}

    @cached_property
    def probs(self) -> tinyattn.Tensor:
        """The normalised probabilities."""
        return F.softmax(self.logits, dim=-1)

    @cached_property
    def logits(self) -> tinyattn.Tensor:
        """The normalised log-probabilities (probabilities clamped away from 0 and 1)."""
        return _clamped_probs(self.probs).log()

    @property
    def param_shape(self) -> tinyattn.Size:
        """The shape of ``probs``/``logits``."""
        return self._param.size()

    @property
    def mean(self) -> tinyattn.Tensor:
        """NaN (categories are labels), as torch."""
        return tinyattn.full(tuple(self.batch_shape), float("nan"), dtype=self.probs.dtype)

    @property
    def variance(self) -> tinyattn.Tensor:
        """NaN, as torch."""
        return self.mean

    @property
    def mode(self) -> tinyattn.Tensor:
        """The most probable category."""
        return self.probs.argmax(-1)

    def sample(self, sample_shape=()) -> tinyattn.Tensor:
        """Category indices of shape ``sample_shape + batch_shape`` (int64)."""
        shape = self._extended_shape(sample_shape)
        n = 1
        for s in sample_shape:
            n *= int(s)
        with tinyattn.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            draws = tinyattn.multinomial(probs_2d, max(n, 1), True).T
        return draws[:n].reshape(tuple(shape))

    def log_prob(self, value) -> tinyattn.Tensor:
        """``logits[..., value]``, broadcasting ``value`` against the batch shape."""
        if self._validate_args:
            self._check_value(value)
            v = value.detach()
            if not bool(((v >= 0) & (v < self._num_events) & (v == v.floor())).all()):
                raise ValueError(f"Expected value argument (Tensor of shape {tuple(v.shape)}) to be "
                                 f"an integer in [0, {self._num_events - 1}], but found invalid values:\n{v}")  # fmt: skip
        idx = value.long().unsqueeze(-1)
        idx, log_pmf = tinyattn.broadcast_tensors(idx, self.logits)
        return log_pmf.gather(-1, idx[..., :1]).squeeze(-1)

    def entropy(self) -> tinyattn.Tensor:
        """``-sum(p log p)`` over the categories."""
        logits = self.logits.clamp(min=tinyattn.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> tinyattn.Tensor:
        """``0 .. K-1`` along a new leading dimension, expanded over the batch if ``expand``."""
        values = tinyattn.arange(self._num_events).view((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1, *self.batch_shape)) if expand else values


class Bernoulli(Distribution):
    """A distribution over {0, 1} with probability ``probs`` of 1 (or ``sigmoid(logits)``)."""

    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = as_float_tensors(probs)
            self._param = self.probs
        else:
            (self.logits,) = as_float_tensors(logits)
            self._param = self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def _check_parameters(self) -> None:
        if "probs" in self.__dict__:
            p = self.probs.detach()
            if not bool(((p >= 0) & (p <= 1)).all()):
                raise ValueError(
                    f"Expected parameter probs (Tensor of shape {tuple(p.shape)}) to satisfy the "
                    f"constraint Interval(lower_bound=0.0, upper_bound=1.0), but found invalid values:\n{p}"
                )

    def _params(self) -> dict:
        return {"probs" if "probs" in self.__dict__ else "logits": self._param}

    @cached_property
    def probs(self) -> tinyattn.Tensor:
        """``sigmoid(logits)``."""
        return tinyattn.sigmoid(self.logits)

    @cached_property
    def logits(self) -> tinyattn.Tensor:
        """``log(p) - log(1 - p)`` of the probabilities clamped away from 0 and 1."""
        p = _clamped_probs(self.probs)
        return p.log() - (-p).log1p()

    @property
    def mean(self) -> tinyattn.Tensor:
        """``probs``."""
        return self.probs

    @property
    def variance(self) -> tinyattn.Tensor:
        """``probs * (1 - probs)``."""
        return self.probs * (1 - self.probs)

    @property
    def mode(self) -> tinyattn.Tensor:
        """1 where ``probs > 1/2``, 0 where below, NaN at exactly 1/2."""
        p = self.probs.detach()
        return tinyattn.where(p == 0.5, float("nan"), (p > 0.5).type_as(p))

    def sample(self, sample_shape=()) -> tinyattn.Tensor:
        """Draws of 0.0 / 1.0 of shape ``sample_shape + batch_shape``."""
        shape = tuple(self._extended_shape(sample_shape))
        with tinyattn.no_grad():
            return tinyattn.bernoulli(self.probs.expand(shape))

    def log_prob(self, value) -> tinyattn.Tensor:
        """``value log p + (1 - value) log(1 - p)``, computed from the logits."""
        if self._validate_args:
            self._check_value(value)
        logits, value = tinyattn.broadcast_tensors(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> tinyattn.Tensor:
        """``-(p log p + (1 - p) log(1 - p))``."""
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> tinyattn.Tensor:
        """``[0., 1.]`` along a new leading dimension, expanded over the batch if ``expand``."""
        values = tinyattn.arange(2, dtype=self._param.dtype).view(
            (-1,) + (1,) * len(self.batch_shape)
        )
        return values.expand((-1, *self.batch_shape)) if expand else values
