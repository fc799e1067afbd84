"""Decay schedules: the rate shrinks by a factor at chosen epochs (``torch.optim.lr_scheduler``).

``ExponentialLR`` (every epoch), ``MultiStepLR`` (at milestones), ``MultiplicativeLR``
(by a user function of the epoch), ``ConstantLR`` (a fixed factor, then released) and
``PolynomialLR`` (``(1 - t / T) ** power``). Each ``get_lr`` is the chainable form,
derived from the group's current rate as torch does; ``step(epoch)`` uses the closed
form where torch has one.
"""

from __future__ import annotations

import types
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ..foundations.type_names import type_name
from .lr_scheduler import LRScheduler, _warn_get_lr_called_within_step
from .optimizer import Optimizer

__all__ = ["ExponentialLR", "MultiStepLR", "MultiplicativeLR", "ConstantLR", "PolynomialLR"]


def _current_lrs(optimizer: Optimizer) -> list[float]:
    return [group["lr"] for group in optimizer.param_groups]


class ExponentialLR(LRScheduler):
    """Multiply every group's rate by ``gamma`` each epoch: ``lr_t = initial_lr * gamma**t``.

    Examples
    --------
    >>> import tinyattn as torch
    >>> opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    >>> opt.step(); sched.step(); sched.get_last_lr()
    [0.5]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _current_lrs(self.optimizer)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rate by ``gamma`` at each epoch listed in ``milestones``.

    A milestone listed twice multiplies by ``gamma**2`` (milestones are counted, as torch).
    ``lr_t = initial_lr * gamma ** (number of milestones <= t)``.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        hits = self.milestones.get(self.last_epoch, 0)
        if hits == 0:
            return _current_lrs(self.optimizer)
        return [group["lr"] * self.gamma**hits for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]


class MultiplicativeLR(LRScheduler):
    """Multiply each group's rate by ``lr_lambda(epoch)`` every epoch (one function or one per
    group): ``lr_t = lr_{t-1} * lr_lambda(t)``.

    ``state_dict`` keeps the ``__dict__`` of callable objects, not plain functions, as torch.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(
                    f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type_name(fn)}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """Attributes except the functions; callable objects' ``__dict__`` is kept."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        saved_fns = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, saved_fns):
            if saved is not None:
                fn.__dict__.update(saved)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _current_lrs(self.optimizer)
        return [
            group["lr"] * fn(self.last_epoch)
            for fn, group in zip(self.lr_lambdas, self.optimizer.param_groups)
        ]


class ConstantLR(LRScheduler):
    """Scale the rate by ``factor`` for the first ``total_iters`` epochs, then restore it.

    ``lr_t = initial_lr * factor`` for ``t < total_iters``, ``initial_lr`` afterwards.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in groups]
        if self.last_epoch != self.total_iters:
            return _current_lrs(self.optimizer)
        return [group["lr"] * (1.0 / self.factor) for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        released = self.last_epoch >= self.total_iters
        return [base * (self.factor + released * (1 - self.factor)) for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the rate to zero over ``total_iters`` epochs along a polynomial.

    ``lr_t = initial_lr * (1 - min(t, total_iters) / total_iters) ** power``; ``step()``
    applies the ratio of consecutive values to the current rate (chainable form).
    """

    def __init__(
        self,
        optimizer: Optimizer,
        total_iters: int = 5,
        power: float = 1.0,
        last_epoch: int = -1,
    ) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self._is_initial or self.last_epoch > self.total_iters:
            return _current_lrs(self.optimizer)
        t, total = self.last_epoch, self.total_iters
        ratio = ((1.0 - t / total) / (1.0 - (t - 1) / total)) ** self.power
        return [group["lr"] * ratio for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        t = min(self.total_iters, self.last_epoch)
        return [base * (1.0 - t / self.total_iters) ** self.power for base in self.base_lrs]
