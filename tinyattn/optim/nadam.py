"""NAdam: Adam with Nesterov momentum (and a warming momentum schedule)."""

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


class NAdam(Optimizer):
    r"""NAdam (``torch.optim.NAdam``, Dozat 2016), same update order as torch.

    For each parameter ``p`` with gradient ``g`` (negated if ``maximize``), at step ``t``::

        p = p * (1 - lr * weight_decay)  (decoupled)  or  g = g + weight_decay * p
        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        P = P * mu_t                                             mu_product (float32)
        m = m + (1 - beta1) * (g - m)
        v = beta2 * v + (1 - beta2) * g * g
        d = sqrt(v / (1 - beta2**t)) + eps
        p = p - lr * (1 - mu_t) / (1 - P) * g / d
              - lr * mu_{t+1} / (1 - P * mu_{t+1}) * m / d

    ``mu_product`` is a float32 scalar, multiplied in float32, as torch keeps it.

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 2e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    weight_decay : float, default 0
    momentum_decay : float, default 4e-3
    decoupled_weight_decay : bool, default False
        Shrink ``p`` directly (NAdamW) instead of adding ``weight_decay * p`` to ``g``.
    foreach, capturable, differentiable
        Accepted with torch's defaults; ``capturable``/``differentiable`` True raise.
    maximize : bool, default False

    State per parameter: ``step``, ``mu_product`` (0-d, of torch's scalar dtype), ``exp_avg``,
    ``exp_avg_sq``.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = torch.optim.NAdam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.8944, -1.8944], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
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
        _check_hyper(0.0 <= momentum_decay, "momentum_decay value", momentum_decay)
        _check_no_unsupported("NAdam", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar(0.0)
            state["mu_product"] = _scalar(1.0)
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
                _nadam_update(p._data, grad, state, group, float(state["step"]._data))
                _bump_versions(p, state)
        return loss


def _nadam_update(param: np.ndarray, grad: np.ndarray, state: dict, group: dict, t: float) -> None:
    """One NAdam update of one parameter in place (the formula in ``NAdam``'s docstring)."""
    lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
    beta1, beta2 = group["betas"]
    if weight_decay != 0:
        if group["decoupled_weight_decay"]:
            param *= 1 - lr * weight_decay
        else:
            grad = grad + weight_decay * param
    momentum_decay = group["momentum_decay"]
    mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
    mu_product = state["mu_product"]._data
    # in the state's dtype: as torch creates it (float64 after loading into a
    # float64 parameter's optimizer, as torch casts it)
    mu_product[...] = mu_product * mu_product.dtype.type(mu)
    product = float(mu_product)
    exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
    exp_avg += (1 - beta1) * (grad - exp_avg)
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * grad * grad
    denom = np.sqrt(exp_avg_sq / (1 - beta2**t)) + eps
    param += (-lr * (1.0 - mu) / (1.0 - product)) * (grad / denom)
    param += (-lr * mu_next / (1.0 - product * mu_next)) * (exp_avg / denom)
