"""Rprop: per-coordinate step sizes grown or shrunk by the sign agreement of gradients."""

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


class Rprop(Optimizer):
    r"""Resilient backpropagation (``torch.optim.Rprop``, Riedmiller & Braun 1993).

    For each parameter ``p`` with gradient ``g`` (negated if ``maximize``); ``prev`` is
    the previous (possibly zeroed) gradient and ``s`` the per-coordinate step size::

        f = etaplus if g * prev > 0, etaminus if g * prev < 0, else 1
        s = clamp(s * f, step_size_min, step_size_max)
        g = 0 where f == etaminus                   (skip the step after a sign change)
        p = p - sign(g) * s;   prev = g

    Only the gradient's sign is used: full-batch training, not mini-batches.

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-2
        Initial step size.
    etas : (float, float), default (0.5, 1.2)
        ``(etaminus, etaplus)``, with ``0 < etaminus < 1 < etaplus``.
    step_sizes : (float, float), default (1e-6, 50)
        ``(step_size_min, step_size_max)``.
    capturable, foreach, differentiable
        Accepted with torch's defaults; ``capturable``/``differentiable`` True raise.
    maximize : bool, default False

    State per parameter: ``step`` (0-d, of torch's scalar dtype), ``prev``, ``step_size``.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = torch.optim.Rprop([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        lr = _lr_value(lr)
        _check_hyper(0.0 <= lr, "learning rate", lr)
        _check_hyper(0.0 < etas[0] < 1.0 < etas[1], "eta values", f"{etas[0]}, {etas[1]}")
        _check_no_unsupported("Rprop", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            etas=etas,
            step_sizes=step_sizes,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, lr: float) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar(0.0)
            state["prev"] = _zeros_like(p)
            state["step_size"] = Tensor._make(np.full_like(p._data, lr))
        return state

    @no_grad()
    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad, state = _counted_step(self, p, group, group["lr"])
                prev, step_size = state["prev"]._data, state["step_size"]._data
                agreement = np.sign(grad * prev)
                factor = np.where(
                    agreement > 0, etaplus, np.where(agreement < 0, etaminus, 1.0)
                ).astype(step_size.dtype)
                step_size *= factor
                np.clip(step_size, step_size_min, step_size_max, out=step_size)
                grad = np.where(factor == factor.dtype.type(etaminus), 0, grad).astype(grad.dtype)
                p._data -= np.sign(grad) * step_size
                prev[...] = grad
                _bump_versions(p, state)
        return loss
