"""Cyclical schedules: the rate (and momentum) rise and fall, or restart, within training.

``CyclicLR`` (triangular waves between ``base_lr`` and ``max_lr``), ``OneCycleLR``
(one warm-up and one annealing phase, optionally three) and ``CosineAnnealingWarmRestarts``
(cosine decay restarted every ``T_i`` epochs, ``T_i`` growing by ``T_mult``). These are
stepped once per *batch*. ``CyclicLR`` and ``OneCycleLR`` also cycle the momentum (SGD's
``momentum``, or ``beta1`` of Adam-like optimizers) against the rate.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from typing import Any

from .lr_scheduler import LRScheduler, _warn_get_lr_called_within_step
from .optimizer import Optimizer

__all__ = ["CyclicLR", "OneCycleLR", "CosineAnnealingWarmRestarts"]


def _per_group(name: str, optimizer: Optimizer, value) -> list:
    """``value`` repeated for every param group, or the given list checked for length."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has "
                f"{len(value)} values, param_groups has {n}."
            )
        return list(value)
    return [value] * n


def _set_momentum(group: dict, momentum: float, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


def _init_momentum_cycle(
    optimizer: Optimizer, base_momentum, max_momentum, last_epoch: int
) -> tuple[bool, list, list]:
    """Check the optimizer has a momentum to cycle; on a fresh start set it to the maximum
    and record ``max_momentum``/``base_momentum`` in every group. Returns
    ``(use_beta1, base_momentums, max_momentums)``."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError(
            "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
        )
    use_beta1 = "betas" in optimizer.defaults
    max_momentums = _per_group("max_momentum", optimizer, max_momentum)
    base_momentums = _per_group("base_momentum", optimizer, base_momentum)
    if last_epoch == -1:
        for high, low, group in zip(max_momentums, base_momentums, optimizer.param_groups):
            _set_momentum(group, high, use_beta1)
            group["max_momentum"] = high
            group["base_momentum"] = low
    return use_beta1, base_momentums, max_momentums


class CyclicLR(LRScheduler):
    r"""Cyclical learning rate (Smith, 2017): triangular waves between ``base_lr`` and ``max_lr``.

    At iteration ``t``, with ``cycle = floor(1 + t / (up + down))`` and ``x`` the position in
    the cycle in [0, 1), the height is ``x / r`` while rising (``r = up / (up + down)``) and
    ``(x - 1) / (r - 1)`` while falling; then::

        lr = base_lr + (max_lr - base_lr) * height * scale
        momentum = max_momentum - (max_momentum - base_momentum) * height * scale

    with ``scale = 1`` (``"triangular"``), ``1 / 2**(cycle - 1)`` (``"triangular2"``),
    ``gamma**t`` (``"exp_range"``) or ``scale_fn(cycle or t)`` per ``scale_mode``.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float = 0.8,
        max_momentum: float = 0.9,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1, self.base_momentums, self.max_momentums = _init_momentum_cycle(
                optimizer, base_momentum, max_momentum, last_epoch
            )
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        """The built-in modes fix ``scale_mode`` (cycle for triangular*, iterations for exp)."""
        if self._scale_fn_custom is None:
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x: float) -> float:
        """The amplitude scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        if self.mode == "exp_range":
            return self.gamma**x
        return 1.0

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        t = self.last_epoch
        cycle = math.floor(1 + t / self.total_size)
        x = 1.0 + t / self.total_size - cycle
        if x <= self.step_ratio:
            height = x / self.step_ratio
        else:
            height = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else t)
        lrs = [
            base + (high - base) * height * scale for base, high in zip(self.base_lrs, self.max_lrs)
        ]
        if self.cycle_momentum:
            pairs = zip(self.base_momentums, self.max_momentums, self.optimizer.param_groups)
            for low, high, group in pairs:
                _set_momentum(group, high - (high - low) * height * scale, self.use_beta1)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """Attributes, with a custom ``scale_fn`` kept only as its ``__dict__`` (callable
        objects) or None (plain functions), as torch."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        keep = fn is not None and not isinstance(fn, types.FunctionType)
        state["_scale_fn_custom"] = fn.__dict__.copy() if keep else None
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        fn_state = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn_state is not None:
            self._scale_fn_custom.__dict__.update(fn_state)
        self._init_scale_fn()


class OneCycleLR(LRScheduler):
    r"""The 1cycle policy (Smith & Topin, 2018): warm up to ``max_lr``, then anneal far below.

    Rates run ``max_lr / div_factor -> max_lr`` over the first ``pct_start`` of
    ``total_steps``, then ``-> max_lr / div_factor / final_div_factor``; momentum runs
    the other way (``max_momentum -> base_momentum -> max_momentum``). With
    ``three_phase`` the second phase mirrors the first and a third anneals to the minimum.
    Within a phase from ``a`` to ``b`` at fraction ``pct``::

        cos:    b + (a - b) / 2 * (1 + cos(pi * pct))
        linear: a + (b - a) * pct
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        self._schedule_phases = _phases(self.total_steps, pct_start, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for high, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = high / div_factor
                group["max_lr"] = high
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1, _, _ = _init_momentum_cycle(
                optimizer, base_momentum, max_momentum, last_epoch
            )
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        t = self.last_epoch
        if t > self.total_steps:
            raise ValueError(
                f"Tried to step {t} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if t <= end_step or i == last:
                    pct = (t - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                        )
                        _set_momentum(group, momentum, self.use_beta1)
                    break
                start_step = end_step
        return lrs


def _total_steps(total_steps: int | None, epochs: int | None, steps_per_epoch: int | None) -> int:
    if total_steps is not None:
        if total_steps <= 0 or not isinstance(total_steps, int):
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is not None and steps_per_epoch is not None:
        if not isinstance(epochs, int) or epochs <= 0:
            raise ValueError(f"Expected positive integer epochs, but got {epochs}")
        if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
            raise ValueError(
                f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}"
            )
        return epochs * steps_per_epoch
    raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")


def _phases(total_steps: int, pct_start: float, three_phase: bool) -> list[dict[str, Any]]:
    """OneCycleLR's phases: the step each ends at and the group keys it anneals between."""

    def phase(end_step, start_lr, end_lr, start_momentum, end_momentum):
        return dict(
            end_step=end_step,
            start_lr=start_lr,
            end_lr=end_lr,
            start_momentum=start_momentum,
            end_momentum=end_momentum,
        )

    warmup = phase(
        float(pct_start * total_steps) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"
    )
    if three_phase:
        return [
            warmup,
            phase(
                float(2 * pct_start * total_steps) - 2,
                "max_lr",
                "initial_lr",
                "base_momentum",
                "max_momentum",
            ),
            phase(total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
        ]
    return [warmup, phase(total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]


class CosineAnnealingWarmRestarts(LRScheduler):
    r"""SGDR (Loshchilov & Hutter, 2017): cosine decay restarted every ``T_i`` epochs.

    ``lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2``, where
    ``T_cur`` counts epochs since the last restart and ``T_i`` starts at ``T_0`` and is
    multiplied by ``T_mult`` at each restart. ``step(epoch)`` accepts fractional epochs
    (``step(epoch + i / iters)`` inside an epoch).
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        cosine = 1 + math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (base - self.eta_min) * cosine / 2 for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or jump to ``epoch`` (fractional allowed) and locate its cycle."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch < self.T_0:
            self.T_i = self.T_0
            self.T_cur = epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            # restarts so far: T_0 * (1 + m + ... + m**(n-1)) <= epoch
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult**n
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self._within_step(self.get_lr))
