"""Adamax: Adam with the second moment replaced by a decaying infinity norm."""

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


class Adamax(Optimizer):
    r"""Adamax (``torch.optim.Adamax``, Kingma & Ba 2015, section 7), same order as torch.

    For each parameter ``p`` with gradient ``g`` (negated if ``maximize``), at step ``t``::

        g = g + weight_decay * p
        m = m + (1 - beta1) * (g - m)                         exp_avg
        u = max(beta2 * u, |g| + eps)                         exp_inf
        p = p - lr / (1 - beta1**t) * m / u

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 2e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    weight_decay : float, default 0
    foreach, capturable, differentiable
        Accepted with torch's defaults; ``capturable``/``differentiable`` True raise.
    maximize : bool, default False

    State per parameter: ``step`` (0-d, of torch's scalar dtype), ``exp_avg``, ``exp_inf``.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = torch.optim.Adamax([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        lr = _lr_value(lr)
        _check_hyper(0.0 <= lr, "learning rate", lr)
        _check_hyper(0.0 <= eps, "epsilon value", eps)
        _check_hyper(0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
        _check_hyper(0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
        _check_hyper(0.0 <= weight_decay, "weight_decay value", weight_decay)
        _check_no_unsupported("Adamax", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar(0.0)
            state["exp_avg"] = _zeros_like(p)
            state["exp_inf"] = _zeros_like(p)
        return state

    @no_grad()
    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad, state = _counted_step(self, p, group)
                t = float(state["step"]._data)
                param = p._data
                if weight_decay != 0:
                    grad = grad + weight_decay * param
                exp_avg, exp_inf = state["exp_avg"]._data, state["exp_inf"]._data
                exp_avg += (1 - beta1) * (grad - exp_avg)
                exp_inf *= beta2
                np.maximum(exp_inf, np.abs(grad) + eps, out=exp_inf)
                param -= lr / (1 - beta1**t) * (exp_avg / exp_inf)
                _bump_versions(p, state)
        return loss
