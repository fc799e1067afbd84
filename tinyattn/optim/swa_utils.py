"""Weight averaging (``torch.optim.swa_utils``): SWA and EMA copies of a model.

Stochastic Weight Averaging (Izmailov et al. 2018) keeps the running mean of the weights
visited late in training; an exponential moving average (EMA, Polyak averaging with
exponential weights) keeps ``decay * W_ema + (1 - decay) * W``. ``AveragedModel`` holds
the averaged copy, ``SWALR`` anneals the learning rate to a constant for the SWA phase,
and ``update_bn`` recomputes batch-norm statistics for the averaged weights.

>>> import tinyattn as torch
>>> from tinyattn.optim.swa_utils import AveragedModel
>>> model = torch.nn.Linear(1, 1, bias=False)
>>> swa = AveragedModel(model)
>>> for value in (1.0, 2.0, 6.0):
...     with torch.no_grad():
...         _ = model.weight.fill_(value)
...     swa.update_parameters(model)
>>> swa.module.weight.item(), swa.n_averaged.item()
(3.0, 3)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

from ..autograd.grad_mode import no_grad
from ..core import _dtype as dt
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from ..ops.creation.factories import tensor
from ..tensor_api.tensor import Tensor
from ._cyclic import _per_group
from .lr_scheduler import LRScheduler
from .optimizer import Optimizer, _lerp

__all__ = [
    "AveragedModel",
    "update_bn",
    "SWALR",
    "get_ema_multi_avg_fn",
    "get_swa_multi_avg_fn",
    "get_ema_avg_fn",
    "get_swa_avg_fn",
]

ParamList = list[Tensor] | tuple[Tensor, ...]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )


def _lerp_into(targets: ParamList, ends: ParamList, weight: float) -> None:
    """``t = lerp(t, e, weight)`` in place for each pair (torch's ``_foreach_lerp_``)."""
    for target, end in zip(targets, ends, strict=True):
        target._data[...] = _lerp(target._data, end._data.astype(target._data.dtype), weight)
        target._bump_version()


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[ParamList, ParamList, Any], None]:
    """An in-place EMA over lists of tensors, for ``AveragedModel(multi_avg_fn=...)``.

    ``W_ema = decay * W_ema + (1 - decay) * W`` (as ``lerp(W_ema, W, 1 - decay)`` for
    floating tensors; integer ones are truncated back to their dtype).
    ``decay`` must lie in [0, 1].
    """
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list: ParamList, current_param_list: ParamList, _) -> None:
        if ema_param_list[0].is_floating_point():
            _lerp_into(ema_param_list, current_param_list, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable[[ParamList, ParamList, Any], None]:
    """An in-place running mean over lists of tensors: ``W_avg += (W - W_avg) / (n + 1)``,
    ``n`` the number of models averaged so far (for ``AveragedModel(multi_avg_fn=...)``).

    For floating tensors this is ``lerp(W_avg, W, 1 / (n + 1))``; a tensor ``n`` gives a
    float32 weight, as torch's. Integer tensors raise torch's errors.
    """

    @no_grad()
    def swa_update(
        averaged_param_list: ParamList, current_param_list: ParamList, num_averaged
    ) -> None:
        if averaged_param_list[0].is_floating_point():
            weight = 1 / (num_averaged + 1)
            _lerp_into(averaged_param_list, current_param_list, _as_float(weight))
        elif isinstance(num_averaged, Tensor):
            raise RuntimeError(
                "Integer division with addcdiv is no longer supported, and in a future  "
                "release addcdiv will perform a true division of tensor1 and tensor2. The "
                "historic addcdiv behavior can be implemented as (input + value * "
                "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv "
                "behavior is just the latter implementation: (input + value * tensor1 / "
                "tensor2), for all dtypes."
            )
        else:
            raise RuntimeError(
                "For integral input tensors, argument alpha must not be a floating point number."
            )

    return swa_update


def _as_float(value) -> float:
    return value.item() if isinstance(value, Tensor) else float(value)


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """An EMA of one tensor, for ``AveragedModel(avg_fn=...)``: returns
    ``decay * ema_param + (1 - decay) * current_param``. ``decay`` must lie in [0, 1]."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """A running mean of one tensor, for ``AveragedModel(avg_fn=...)``: returns
    ``averaged + (current - averaged) / (num_averaged + 1)``."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters are a running average (SWA, or EMA with
    ``get_ema_multi_avg_fn``) of ``model``'s (``torch.optim.swa_utils.AveragedModel``).

    The first ``update_parameters(model)`` copies ``model``'s values; each later call
    averages them in with ``avg_fn(averaged, current, n_averaged)`` (its result is
    copied in) or ``multi_avg_fn(averaged_list, current_list, n_averaged)`` (in place,
    per dtype), by default the equal-weight mean ``W += (W_model - W) / (n + 1)``.
    ``n_averaged`` is an int64 buffer counting the calls (saved in ``state_dict``; the
    averaging functions are not).

    Parameters
    ----------
    model : Module
        Deep-copied into ``self.module``; ``forward`` calls the copy.
    device : optional
        Move the copy there (tinyattn has the CPU only).
    avg_fn, multi_avg_fn : callable, optional
        At most one of the two.
    use_buffers : bool, default False
        Average the buffers (batch-norm statistics ...) with the parameters. When False
        the buffers are copied from ``model`` at every update.

    Examples
    --------
    >>> import tinyattn as torch
    >>> from tinyattn.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
    >>> model = torch.nn.Linear(1, 1, bias=False)
    >>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.5))
    >>> for value in (4.0, 2.0):
    ...     with torch.no_grad():
    ...         _ = model.weight.fill_(value)
    ...     ema.update_parameters(model)
    >>> ema.module.weight.item()
    3.0
    """

    n_averaged: Tensor

    def __init__(
        self,
        model: Module,
        device=None,
        avg_fn: Callable[[Tensor, Tensor, Any], Tensor] | None = None,
        multi_avg_fn: Callable[[ParamList, ParamList, Any], None] | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=dt.int64))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the averaged copy: ``self.module(*args, **kwargs)``."""
        return self.module(*args, **kwargs)

    @no_grad()
    def update_parameters(self, model: Module) -> None:
        """Average ``model``'s current parameters (and buffers if ``use_buffers``) in."""
        if self.use_buffers:
            mine = list(chain(self.module.parameters(), self.module.buffers()))
            theirs = list(chain(model.parameters(), model.buffers()))
        else:
            mine, theirs = list(self.parameters()), list(model.parameters())
        pairs = [(a.detach(), b.detach()) for a, b in zip(mine, theirs)]  # zip: not strict
        n_averaged = self.n_averaged
        if int(n_averaged.item()) == 0:
            for averaged, current in pairs:
                averaged.copy_(current)
        elif self.avg_fn is not None and self.multi_avg_fn is None:
            for averaged, current in pairs:
                averaged.copy_(self.avg_fn(averaged, current, n_averaged))
        elif self.multi_avg_fn is not None:
            for averaged, current in _by_dtype(pairs):
                self.multi_avg_fn(averaged, current, n_averaged)
        else:  # torch's CPU path: the single-tensor running mean
            swa = get_swa_avg_fn()
            for averaged, current in pairs:
                averaged.copy_(swa(averaged, current, n_averaged))
        if not self.use_buffers:
            for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_swa.detach().copy_(b_model.detach())
        self.n_averaged += 1


def _by_dtype(pairs: list[tuple[Tensor, Tensor]]) -> list[tuple[list[Tensor], list[Tensor]]]:
    """The pairs split into (averaged list, current list) per dtype of the averaged
    tensors, in order of first appearance (torch groups by device and dtype)."""
    groups: dict[Any, tuple[list[Tensor], list[Tensor]]] = {}
    for averaged, current in pairs:
        lists = groups.setdefault(averaged.dtype, ([], []))
        lists[0].append(averaged)
        lists[1].append(current)
    return list(groups.values())


@no_grad()
def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """Recompute the running mean/var of every batch-norm layer of ``model`` with one
    pass over ``loader`` (``torch.optim.swa_utils.update_bn``).

    Each layer's statistics are reset and its ``momentum`` set to None (an equal-weight
    average over the batches) for the pass, then restored, as is ``model``'s training
    mode. A batch is a tensor, or a list/tuple whose first element is the input.
    Nothing runs if ``model`` has no batch-norm layer.
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal every group's rate from its current value to ``swa_lr`` over
    ``anneal_epochs`` epochs, then hold it (``torch.optim.swa_utils.SWALR``).

    With ``t = min(1, epoch / anneal_epochs)`` and ``alpha = t`` ("linear") or
    ``(1 - cos(pi t)) / 2`` ("cos"), the rate is ``swa_lr * alpha + lr_0 * (1 - alpha)``,
    computed as torch does from the group's current rate (chainable).

    Parameters
    ----------
    optimizer : Optimizer
    swa_lr : float or list of float (one per group)
    anneal_epochs : int, default 10
    anneal_strategy : {"cos", "linear"}, default "cos"
    last_epoch : int, default -1

    Examples
    --------
    >>> import tinyattn as torch
    >>> opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = torch.optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=2,
    ...                                     anneal_strategy="linear")
    >>> lrs = []
    >>> for _ in range(3):
    ...     opt.step(); sched.step(); lrs.append(round(sched.get_last_lr()[0], 6))
    >>> lrs
    [0.55, 0.1, 0.1]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float | list[float],
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ) -> None:
        swa_lrs = _per_group("swa_lr", optimizer, swa_lr)
        for value, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        """The rate annealing started from, recovered from the current rate ``lr``
        reached at fraction ``alpha`` of the way."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        """The rates of the next epoch, derived from the groups' current rates."""
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use "
                "`get_last_lr()`.",
                UserWarning,
                stacklevel=2,
            )
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer and the anneal function (torch's keys)."""
        skip = ("optimizer", "anneal_func")
        return {key: value for key, value in self.__dict__.items() if key not in skip}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes and re-pick the anneal function from its name."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
