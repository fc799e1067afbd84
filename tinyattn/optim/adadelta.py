"""Adadelta: step sizes from the ratio of running RMS of updates to RMS of gradients."""

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
    _zeros_like,
)


class Adadelta(Optimizer):
    r"""Adadelta (``torch.optim.Adadelta``, Zeiler 2012), same update order as torch.

    For each parameter ``p`` with gradient ``g`` (negated if ``maximize``)::

        g = g + weight_decay * p
        v = rho * v + (1 - rho) * g * g                       square_avg
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta               acc_delta
        p = p - lr * delta

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1.0
        Scales ``delta`` (the method itself needs none).
    rho : float, default 0.9
    eps : float, default 1e-6
    weight_decay : float, default 0
    foreach, capturable, differentiable
        Accepted with torch's defaults; ``capturable``/``differentiable`` True raise.
    maximize : bool, default False

    State per parameter: ``step`` (0-d, of torch's scalar dtype), ``square_avg``, ``acc_delta``.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = torch.optim.Adadelta([w])
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.9968, -1.9968], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        lr = _lr_value(lr)
        _check_hyper(0.0 <= lr, "learning rate", lr)
        _check_hyper(0.0 <= rho <= 1.0, "rho value", rho)
        _check_hyper(0.0 <= eps, "epsilon value", eps)
        _check_hyper(0.0 <= weight_decay, "weight_decay value", weight_decay)
        _check_no_unsupported("Adadelta", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            rho=rho,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            capturable=capturable,
            foreach=foreach,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar(0.0)
            state["square_avg"] = _zeros_like(p)
            state["acc_delta"] = _zeros_like(p)
        return state

    @no_grad()
    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, rho, eps, weight_decay = (
                group["lr"],
                group["rho"],
                group["eps"],
                group["weight_decay"],
            )
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad, state = _counted_step(self, p, group)
                param = p._data
                if weight_decay != 0:
                    grad = grad + weight_decay * param
                square_avg, acc_delta = state["square_avg"]._data, state["acc_delta"]._data
                square_avg *= rho
                square_avg += (1 - rho) * grad * grad
                delta = np.sqrt(acc_delta + eps) / np.sqrt(square_avg + eps) * grad
                acc_delta *= rho
                acc_delta += (1 - rho) * delta * delta
                param -= lr * delta
                _bump_versions(p, state)
        return loss
