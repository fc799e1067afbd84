"""RMSprop: divide the gradient by a running root-mean-square of recent gradients."""

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


class RMSprop(Optimizer):
    r"""RMSprop (``torch.optim.RMSprop``, Hinton's lecture 6e), same update order as torch.

    For each parameter ``p`` with gradient ``g`` (negated if ``maximize``)::

        g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g                  square_avg
        a = alpha * a + (1 - alpha) * g   (centered)         grad_avg
        d = sqrt(v - a * a) + eps   (centered)  else  sqrt(v) + eps
        b = momentum * b + g / d;  p = p - lr * b   (momentum > 0)
        p = p - lr * g / d                          (otherwise)

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-2
    alpha : float, default 0.99
        Smoothing constant of the running averages.
    eps : float, default 1e-8
    weight_decay : float, default 0
    momentum : float, default 0
    centered : bool, default False
        Normalise by an estimate of the gradient's variance instead of its second moment.
    capturable, foreach, differentiable
        Accepted with torch's defaults; ``capturable``/``differentiable`` True raise.
    maximize : bool, default False

    State per parameter: ``step`` (0-d, of torch's scalar dtype), ``square_avg``,
    ``momentum_buffer``
    (momentum > 0) and ``grad_avg`` (centered), the same keys as torch.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = torch.optim.RMSprop([w], lr=0.01)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        lr = _lr_value(lr)
        _check_hyper(0.0 <= lr, "learning rate", lr)
        _check_hyper(0.0 <= eps, "epsilon value", eps)
        _check_hyper(0.0 <= momentum, "momentum value", momentum)
        _check_hyper(0.0 <= weight_decay, "weight_decay value", weight_decay)
        _check_hyper(0.0 <= alpha, "alpha value", alpha)
        _check_no_unsupported("RMSprop", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            momentum=momentum,
            alpha=alpha,
            eps=eps,
            centered=centered,
            weight_decay=weight_decay,
            capturable=capturable,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar(0.0)
            state["square_avg"] = _zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = _zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = _zeros_like(p)
        return state

    @no_grad()
    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            momentum, weight_decay = group["momentum"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad, state = _counted_step(self, p, group, group)
                param = p._data
                if weight_decay != 0:
                    grad = grad + weight_decay * param
                square_avg = state["square_avg"]._data
                square_avg *= alpha
                square_avg += (1 - alpha) * grad * grad
                if group["centered"]:
                    grad_avg = state["grad_avg"]._data
                    grad_avg += (1 - alpha) * (grad - grad_avg)  # lerp towards g
                    denom = np.sqrt(square_avg - grad_avg * grad_avg) + eps
                else:
                    denom = np.sqrt(square_avg) + eps
                if momentum > 0:
                    buf = state["momentum_buffer"]._data
                    buf *= momentum
                    buf += grad / denom
                    param -= lr * buf
                else:
                    param -= lr * (grad / denom)
                _bump_versions(p, state)
        return loss
