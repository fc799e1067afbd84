"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor_api.tensor import Tensor
from .optimizer import (
    Optimizer,
    _check_no_unsupported,
    _check_state_shapes,
    _lr_value,
    _write,
)


class SGD(Optimizer):
    r"""Stochastic gradient descent (``torch.optim.SGD``), same update order and numerics.

    For each parameter ``p`` with gradient ``g`` (negated if ``maximize``)::

        g = g + weight_decay * p
        b = g                                   (first step)
        b = momentum * b + (1 - dampening) * g  (later steps)
        g = g + momentum * b   if nesterov  else  g = b      (when momentum != 0)
        p = p - lr * g

    Parameters
    ----------
    params : iterable of Tensor or dict
        Tensors to optimize or parameter groups.
    lr : float, default 1e-3
    momentum : float, default 0
    dampening : float, default 0
    weight_decay : float, default 0
        L2 penalty added to the gradient.
    nesterov : bool, default False
        Requires ``momentum > 0`` and ``dampening == 0``.
    maximize : bool, default False
        Ascend the objective instead of descending.
    foreach, fused : bool or None
        Accepted for torch compatibility (both True together is an error, as in torch):
        every setting runs the same update, equal to torch's fused CPU kernel's.
    differentiable : bool, default False
        True raises ``NotImplementedError``.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.8000, -1.6000], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        lr = _lr_value(lr)
        if lr < 0.0:
            raise ValueError(f"SGD: invalid learning rate lr={lr} (expected >= 0)")
        if momentum < 0.0:
            raise ValueError(f"SGD: invalid momentum value {momentum} (expected >= 0)")
        if weight_decay < 0.0:
            raise ValueError(f"SGD: invalid weight_decay value {weight_decay} (expected >= 0)")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError(
                f"SGD: Nesterov momentum requires a momentum and zero dampening (got "
                f"momentum={momentum}, dampening={dampening})"
            )
        _check_no_unsupported("SGD", differentiable=differentiable)
        if fused and foreach:
            raise RuntimeError("SGD: `fused` and `foreach` cannot be `True` together.")
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            foreach=foreach,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, momentum = group["lr"], group["momentum"]
            dampening, weight_decay = group["dampening"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad._data
                if group["maximize"]:
                    grad = -grad
                if weight_decay != 0:
                    grad = grad + weight_decay * p._data
                if momentum != 0:
                    state = self.state[p]
                    _check_state_shapes(self, p, state)
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = Tensor._make(np.array(grad, copy=True))
                        state["momentum_buffer"] = buf
                    else:
                        b = buf._data
                        np.multiply(b, momentum, out=b)
                        np.add(b, (1 - dampening) * grad, out=b, casting="same_kind")
                        buf._bump_version()
                    grad = grad + momentum * buf._data if group["nesterov"] else buf._data
                _write(p, p._data + (-lr) * grad)
        return loss
