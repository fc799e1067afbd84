"""RAdam: Adam whose adaptive step is switched on only once its variance is tractable."""

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


class RAdam(Optimizer):
    r"""RAdam (``torch.optim.RAdam``, Liu et al. 2020), same update order as torch.

    For each parameter ``p`` with gradient ``g`` (negated if ``maximize``), at step ``t``::

        p = p * (1 - lr * weight_decay)  (decoupled)  or  g = g + weight_decay * p
        m = m + (1 - beta1) * (g - m);   v = beta2 * v + (1 - beta2) * g * g
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
        m_hat = m / (1 - beta1**t)
        if rho_t > 5:
            r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
            p = p - lr * m_hat * sqrt(1 - beta2**t) / (sqrt(v) + eps) * r
        else:
            p = p - lr * m_hat                                   (plain momentum SGD)

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    weight_decay : float, default 0
    decoupled_weight_decay : bool, default False
    foreach, capturable, differentiable
        Accepted with torch's defaults; ``capturable``/``differentiable`` True raise.
    maximize : bool, default False

    State per parameter: ``step`` (0-d, of torch's scalar dtype), ``exp_avg``, ``exp_avg_sq``.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = torch.optim.RAdam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.8000, -1.6000], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        lr = _lr_value(lr)
        _check_hyper(0.0 <= lr, "learning rate", lr)
        _check_hyper(0.0 <= eps, "epsilon value", eps)
        _check_hyper(0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
        _check_hyper(0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
        _check_hyper(0.0 <= weight_decay, "weight_decay value", weight_decay)
        _check_no_unsupported("RAdam", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            decoupled_weight_decay=decoupled_weight_decay,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar(0.0)
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
        return state

    @no_grad()
    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad, state = _counted_step(self, p, group)
                _radam_update(p._data, grad, state, group, float(state["step"]._data))
                _bump_versions(p, state)
        return loss


def _radam_update(param: np.ndarray, grad: np.ndarray, state: dict, group: dict, t: float) -> None:
    """One RAdam update of one parameter in place (the formula in ``RAdam``'s docstring)."""
    lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
    beta1, beta2 = group["betas"]
    if weight_decay != 0:
        if group["decoupled_weight_decay"]:
            param *= 1 - lr * weight_decay
        else:
            grad = grad + weight_decay * param
    exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
    exp_avg += (1 - beta1) * (grad - exp_avg)
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * grad * grad
    bias_correction2 = 1 - beta2**t
    m_hat = exp_avg / (1 - beta1**t)
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * t * beta2**t / bias_correction2
    if rho_t > 5.0:
        rect = (
            (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
        ) ** 0.5
        adaptive = bias_correction2**0.5 / (np.sqrt(exp_avg_sq) + eps)
        param -= m_hat * lr * adaptive * rect
    else:
        param -= m_hat * lr
