"""``ReduceLROnPlateau``: cut the learning rate when a watched metric stops improving."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from typing import Any

from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor
from .lr_scheduler import EPOCH_DEPRECATION_WARNING, LRScheduler
from .optimizer import Optimizer

__all__ = ["ReduceLROnPlateau"]

# The value a metric has to beat to count as an improvement on ``best``, per
# (mode, threshold_mode). Written as torch computes it, so borderline cases round alike.
_BAR: dict[tuple[str, str], Callable[[float, float], float]] = {
    ("min", "rel"): lambda best, threshold: best * (1.0 - threshold),
    ("min", "abs"): lambda best, threshold: best - threshold,
    ("max", "rel"): lambda best, threshold: best * (threshold + 1.0),
    ("max", "abs"): lambda best, threshold: best + threshold,
}


def _check_choices(mode: str, threshold_mode: str) -> None:
    if mode not in ("min", "max"):
        raise ValueError(f"ReduceLROnPlateau: mode {mode!r} is unknown (use 'min' or 'max')")
    if threshold_mode not in ("rel", "abs"):
        raise ValueError(
            f"ReduceLROnPlateau: threshold mode {threshold_mode!r} is unknown (use 'rel' or 'abs')"
        )


class ReduceLROnPlateau(LRScheduler):
    """Multiply every group's lr by ``factor`` after ``patience`` epochs without improvement.

    ``step(metric)`` once per epoch. The metric improves when (``best`` = best so far):

    ====  =====  =============================
    mode  thr.   improvement
    ====  =====  =============================
    min   rel    ``metric < best * (1 - threshold)``
    min   abs    ``metric < best - threshold``
    max   rel    ``metric > best * (1 + threshold)``
    max   abs    ``metric > best + threshold``
    ====  =====  =============================

    After more than ``patience`` non-improving epochs each lr becomes
    ``max(lr * factor, min_lr)`` (changes smaller than ``eps`` are skipped), then
    ``cooldown`` epochs pass during which bad epochs are not counted. The attributes
    (``best``, ``num_bad_epochs``, ``cooldown_counter``, ``mode_worse``, ...) and so the
    ``state_dict`` are torch's.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: list[float] | float = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: argument 'factor' should be < 1.0, got {factor}")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"ReduceLROnPlateau: argument 'optimizer' must be an Optimizer, got "
                f"{type(optimizer).__name__}"
            )
        groups = len(optimizer.param_groups)
        one_per_group = isinstance(min_lr, (list, tuple))
        if one_per_group and len(min_lr) != groups:  # type: ignore[arg-type]
            raise ValueError(
                f"ReduceLROnPlateau: argument 'min_lr': expected {groups} min_lrs "
                f"(one per param group), got {len(min_lr)}"  # type: ignore[arg-type]
            )
        _check_choices(mode, threshold_mode)
        self.optimizer = optimizer
        self.factor, self.patience, self.cooldown, self.eps = factor, patience, cooldown, eps
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        # ``default_min_lr`` (None when given per group) fills in groups added later.
        self.default_min_lr = None if one_per_group else min_lr
        self.min_lrs = list(min_lr) if one_per_group else [min_lr] * groups  # type: ignore
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self._forget_history()

    def _forget_history(self) -> None:
        """Forget the history: no best yet, no bad epochs, no cooldown."""
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _improves(self, value: float) -> bool:
        bar = _BAR[self.mode, self.threshold_mode](self.best, self.threshold)
        return value < bar if self.mode == "min" else value > bar

    def step(self, metrics, epoch=None) -> None:  # type: ignore[override]
        """Record one epoch's ``metrics`` (a number or a one-element tensor)."""
        if not isinstance(metrics, numbers.Number) and not hasattr(metrics, "__float__"):
            raise TypeError(
                f"ReduceLROnPlateau.step(): argument 'metrics' must be a number, got "
                f"{type_name(metrics)}"
            )
        if isinstance(metrics, Tensor) and metrics.numel() != 1:
            raise ValueError(
                "ReduceLROnPlateau.step(): argument 'metrics' must be a number or a one-element "
                f"tensor, got a tensor of shape {list(metrics.shape)}"
            )
        value = float(metrics)
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch

        improved = self._improves(value)
        if improved:
            self.best = value
        if self.in_cooldown:  # just after a cut: the epoch counts as neither good nor bad
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs = 0 if improved else self.num_bad_epochs + 1

        if self.num_bad_epochs > self.patience:
            self._cut_learning_rates()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _floors(self) -> list[float]:
        """The lowest lr of each param group, covering groups added since construction."""
        groups = len(self.optimizer.param_groups)
        if len(self.min_lrs) != groups:
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"ReduceLROnPlateau: the optimizer has {groups} param groups but "
                    f"min_lr was given for {len(self.min_lrs)} (a param group was added after "
                    f"the scheduler was made): set .min_lrs to one value per group"
                )
            self.min_lrs = [self.default_min_lr] * groups
        return self.min_lrs

    def _cut_learning_rates(self) -> None:
        for group, floor in zip(self.optimizer.param_groups, self._floors()):
            lr = float(group["lr"])
            cut = max(lr * self.factor, floor)
            if lr - cut > self.eps:  # a cut below eps is not worth making
                group["lr"] = cut

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        _check_choices(self.mode, self.threshold_mode)
        self.mode_worse = math.inf if self.mode == "min" else -math.inf
