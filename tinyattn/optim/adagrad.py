"""Adagrad: per-coordinate step sizes shrinking with the sum of squared past gradients."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor_api.tensor import Tensor
from .optimizer import (
    Optimizer,
    _bump_versions,
    _check_hyper,
    _check_no_unsupported,
    _counted_step,
    _lr_value,
    _scalar,
)


class Adagrad(Optimizer):
    r"""Adagrad (``torch.optim.Adagrad``, Duchi et al. 2011), same update order as torch.

    For each parameter ``p`` with gradient ``g`` (negated if ``maximize``), at step ``t``::

        g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g                                   sum
        p = p - clr * g / (sqrt(s) + eps)

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-2
    lr_decay : float, default 0
    weight_decay : float, default 0
    initial_accumulator_value : float, default 0
        Starting value of ``sum`` (taken from the optimizer's defaults, as torch).
    eps : float, default 1e-10
    foreach, fused, differentiable
        Accepted with torch's defaults; ``differentiable=True`` raises. ``fused=True`` runs
        the same update (torch's fused CPU kernel agrees with its single-tensor one to
        rounding); ``fused`` and ``foreach`` both True is an error, as in torch.
    maximize : bool, default False

    State per parameter, created for every parameter at construction (as torch):
    ``step`` (0-d, of torch's scalar dtype) and ``sum``.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = torch.optim.Adagrad([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        lr = _lr_value(lr)
        _check_hyper(0.0 <= lr, "learning rate", lr)
        _check_hyper(0.0 <= lr_decay, "lr_decay value", lr_decay)
        _check_hyper(0.0 <= weight_decay, "weight_decay value", weight_decay)
        _check_hyper(
            0.0 <= initial_accumulator_value,
            "initial_accumulator_value value",
            initial_accumulator_value,
        )
        _check_hyper(0.0 <= eps, "epsilon value", eps)
        _check_no_unsupported("Adagrad", differentiable=differentiable)
        if fused and foreach:
            raise RuntimeError("Adagrad: `fused` and `foreach` cannot be `True` together.")
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p: Tensor) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar(0.0)
            start = self.defaults["initial_accumulator_value"]
            state["sum"] = Tensor._make(np.full_like(p._data, start))
        return state

    @no_grad()
    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
            weight_decay = group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad, state = _counted_step(self, p, group)
                t = float(state["step"]._data)
                param = p._data
                if weight_decay != 0:
                    grad = grad + weight_decay * param
                clr = lr / (1 + (t - 1) * lr_decay)
                total = state["sum"]._data
                total += grad * grad
                param -= clr * (grad / (np.sqrt(total) + eps))
                _bump_versions(p, state)
        return loss
