"""``ReduceLROnPlateau``: cut the learning rate when a watched metric stops improving."""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from .lr_scheduler import EPOCH_DEPRECATION_WARNING, LRScheduler
from .optimizer import Optimizer

__all__ = ["ReduceLROnPlateau"]


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
    ``cooldown`` epochs pass during which bad epochs are not counted. Same state, order
    of updates and ``state_dict`` as torch's.
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
        self.factor = factor
        self.optimizer = optimizer
        n_groups = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n_groups:
                raise ValueError(
                    f"ReduceLROnPlateau: argument 'min_lr': expected {n_groups} min_lrs "
                    f"(one per param group), got {len(min_lr)}"
                )
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * n_groups
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self._set_mode(mode, threshold, threshold_mode)
        self._reset()

    def _set_mode(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode {mode!r} is unknown (use 'min' or 'max')")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(
                f"ReduceLROnPlateau: threshold mode {threshold_mode!r} is unknown "
                f"(use 'rel' or 'abs')"
            )
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        t = self.threshold
        if self.mode == "min":
            return a < (best * (1.0 - t) if self.threshold_mode == "rel" else best - t)
        return a > (best * (t + 1.0) if self.threshold_mode == "rel" else best + t)

    def step(self, metrics, epoch=None) -> None:  # type: ignore[override]
        """Record one epoch's ``metrics`` (a number or a one-element tensor)."""
        if not isinstance(metrics, numbers.Number) and not hasattr(metrics, "__float__"):
            raise TypeError(
                f"ReduceLROnPlateau.step(): argument 'metrics' must be a number, got "
                f"{type(metrics).__name__}"
            )
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:  # bad epochs during the cooldown do not count
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"ReduceLROnPlateau: the optimizer has {len(groups)} param groups but "
                    f"min_lr was given for {len(self.min_lrs)} (a param group was added after "
                    f"the scheduler was made): set .min_lrs to one value per group"
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                group["lr"] = new

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_mode(self.mode, self.threshold, self.threshold_mode)
