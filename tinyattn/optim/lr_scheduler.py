"""Learning-rate schedulers (``torch.optim.lr_scheduler``), same formulas as torch.

A scheduler rewrites ``optimizer.param_groups[i]["lr"]`` each time ``step()`` is
called (once per epoch or per batch, after ``optimizer.step()``). Most
schedulers are *chainable*: ``get_lr`` derives the new rate from the group's
current one, exactly as torch does, so numbers match torch to the last bit and
several schedulers can act on one optimizer.

Per-epoch decays: StepLR, MultiStepLR, ExponentialLR, MultiplicativeLR, ConstantLR,
LinearLR, PolynomialLR, CosineAnnealingLR, LambdaLR (``_decay.py`` and here); per-batch
cycles: CyclicLR, OneCycleLR, CosineAnnealingWarmRestarts (``_cyclic.py``); compositions:
SequentialLR, ChainedScheduler (``_compose.py``); metric-driven: ReduceLROnPlateau (``_plateau.py``).

Examples
--------
>>> import tinyattn as torch
>>> w = torch.zeros(2, requires_grad=True)
>>> opt = torch.optim.SGD([w], lr=1.0)
>>> sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
>>> lrs = []
>>> for _ in range(5):
...     opt.step()
...     lrs.append(sched.get_last_lr()[0])
...     sched.step()
>>> lrs
[1.0, 1.0, 0.5, 0.5, 0.25]
"""

from __future__ import annotations

import functools
import math
import types
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from .optimizer import Optimizer

__all__ = [
    "LRScheduler",
    "LambdaLR",
    "StepLR",
    "CosineAnnealingLR",
    "LinearLR",
    "SequentialLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
    "ExponentialLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "ConstantLR",
    "PolynomialLR",
    "CyclicLR",
    "OneCycleLR",
    "CosineAnnealingWarmRestarts",
]


EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available. Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


def _track_optimizer_steps(optimizer: Optimizer) -> None:
    """Wrap ``optimizer.step`` once so it records that it ran (``optimizer._opt_called``).

    torch does the same, so that a scheduler stepped before its optimizer can warn:
    that order skips the first value of the schedule.
    """
    step = optimizer.step
    if hasattr(step, "_wrapped_by_lr_sched") or not hasattr(step, "__func__"):
        return
    func, opt_ref = step.__func__, weakref.ref(optimizer)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        opt = opt_ref()
        opt._opt_called = True
        return func.__get__(opt, type(opt))(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


def _warn_get_lr_called_within_step(scheduler: LRScheduler) -> None:
    """torch's hint when ``get_lr()`` is called by hand: for a chainable scheduler it
    computes the *next* rate from the current one, not the rate in use."""
    if not scheduler._get_lr_called_within_step:
        warnings.warn(
            "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
            UserWarning,
            stacklevel=3,
        )


class LRScheduler:
    """Base class: tracks ``last_epoch`` and writes ``get_lr()`` into the param groups.

    Parameters
    ----------
    optimizer : Optimizer
    last_epoch : int, default -1
        The index of the last epoch when resuming; ``-1`` starts fresh and records
        each group's ``initial_lr``.
    """

    _is_initial: bool = False
    _get_lr_called_within_step: bool = False  # True while step() calls get_lr (no warning)

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        f"{type(self).__name__} with last_epoch={last_epoch}: load the "
                        "optimizer's state dict first, or start with last_epoch=-1"
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        _track_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        """Set the rates for epoch 0 (called once from ``__init__``)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The new rates for ``self.last_epoch`` (implemented by subclasses)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The rates set by the latest ``step()``, one per parameter group."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to ``epoch``, using the closed form when there is one).

        Warns, with torch's messages, when called before the first ``optimizer.step()``
        (which skips the schedule's first value) and when ``epoch`` is given.
        """
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(
                    "Seems like `optimizer.step()` has been overridden after learning rate "
                    "scheduler initialization. Please, make sure to call `optimizer.step()` "
                    "before `lr_scheduler.step()`. See more details at "
                    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning,
                    stacklevel=2,
                )
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                    "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
                    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
                    "will result in PyTorch skipping the first value of the learning rate "
                    "schedule. See more details at "
                    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning,
                    stacklevel=2,
                )
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self._within_step(self.get_lr)
        else:
            self.last_epoch = epoch
            closed_form = getattr(self, "_get_closed_form_lr", None)
            values = self._within_step(closed_form or self.get_lr)
        self._set_lrs(values)

    def _set_lrs(self, values: list[float]) -> None:
        """Write one rate per param group (torch's error when the counts differ: a group
        added by ``add_param_group`` after the scheduler was built has no base rate)."""
        groups = self.optimizer.param_groups
        if len(values) != len(groups):
            raise ValueError(
                f"{type(self).__name__}: the optimizer has {len(groups)} param groups but the "
                f"schedule gives {len(values)} learning rates (was a group added with "
                "add_param_group after the scheduler was created? create the scheduler after "
                "adding every group)"
            )
        for group, lr in zip(groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in groups]

    def _within_step(self, compute: Callable[[], list[float]]) -> list[float]:
        """``compute()`` (``get_lr`` or the closed form) called as part of a step, so
        ``get_lr`` does not warn."""
        self._get_lr_called_within_step = True
        try:
            return compute()
        finally:
            self._get_lr_called_within_step = False

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (torch's format: the instance's attributes)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(epoch)``, one lambda for all groups or one per group.

    The Annotated Transformer's "Noam" warm-up schedule is written with it::

        LambdaLR(opt, lr_lambda=lambda step: d_model**-0.5
                 * min(max(step, 1) ** -0.5, max(step, 1) * warmup**-1.5))
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(
                    f"LambdaLR: expected {len(optimizer.param_groups)} lr_lambdas (one per "
                    f"parameter group), but got {len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """Attributes except the lambdas; callable objects' ``__dict__`` is kept (as torch)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lr_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs."""

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    r"""Cosine decay from ``initial_lr`` to ``eta_min`` over ``T_max`` epochs (then back up).

    Closed form: ``eta_min + (initial_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2``;
    ``step()`` uses torch's recursive form (so other schedulers can be chained).
    """

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        groups = self.optimizer.param_groups
        t, T, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and t > 0:
            return [
                eta_min + (base - eta_min) * (1 + math.cos(t * math.pi / T)) / 2
                for base in self.base_lrs
            ]
        if (t - 1 - T) % (2 * T) == 0:
            return [
                group["lr"] + (base - eta_min) * (1 - math.cos(math.pi / T)) / 2
                for base, group in zip(self.base_lrs, groups)
            ]
        return [
            (1 + math.cos(math.pi * t / T))
            / (1 + math.cos(math.pi * (t - 1) / T))
            * (group["lr"] - eta_min)
            + eta_min
            for group in groups
        ]

    def _get_closed_form_lr(self) -> list[float]:
        return [
            self.eta_min
            + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
            for base in self.base_lrs
        ]


class LinearLR(LRScheduler):
    """Scale the rate linearly from ``start_factor`` to ``end_factor`` over ``total_iters``."""

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        delta = self.end_factor - self.start_factor
        factor = 1.0 + delta / (
            self.total_iters * self.start_factor + (self.last_epoch - 1) * delta
        )
        return [group["lr"] * factor for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [
            base
            * (
                self.start_factor
                + (self.end_factor - self.start_factor)
                * min(self.total_iters, self.last_epoch)
                / self.total_iters
            )
            for base in self.base_lrs
        ]


from ._compose import ChainedScheduler, SequentialLR  # noqa: E402
from ._cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR  # noqa: E402
from ._decay import (  # noqa: E402
    ConstantLR,
    ExponentialLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
)
from ._plateau import ReduceLROnPlateau  # noqa: E402  (it subclasses LRScheduler)
