"""ASGD: stochastic gradient descent with Polyak-Ruppert averaging of the iterates."""

from __future__ import annotations

from collections.abc import Callable, Iterable

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
    _scalar_dtype,
    _zeros_like,
)


class ASGD(Optimizer):
    r"""Averaged SGD (``torch.optim.ASGD``, Polyak & Juditsky 1992), same order as torch.

    For each parameter ``p`` with gradient ``g`` (negated if ``maximize``), at step ``t``,
    with ``eta`` and ``mu`` the values stored at the previous step (float32 scalars)::

        g = g + weight_decay * p
        p = p * (1 - lambd * eta) - eta * g
        ax = p  if mu == 1  else  ax + mu * (p - ax)         running average of p
        eta = lr / (1 + lambd * lr * t) ** alpha
        mu = 1 / max(1, t - t0)

    The averaged parameters are in ``state[p]["ax"]``; ``p`` itself follows plain SGD.

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-2
    lambd : float, default 1e-4
        Decay term.
    alpha : float, default 0.75
        Power of the ``eta`` update.
    t0 : float, default 1e6
        Step at which averaging starts.
    weight_decay : float, default 0
    foreach, differentiable, capturable
        Accepted with torch's defaults; ``capturable``/``differentiable`` True raise.
    maximize : bool, default False

    State per parameter: ``step``, ``eta``, ``mu`` (0-d, of torch's scalar dtype) and ``ax``.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = torch.optim.ASGD([w], lr=0.1, lambd=0.0)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.8000, -1.6000], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        lr = _lr_value(lr)
        _check_hyper(0.0 <= lr, "learning rate", lr)
        _check_hyper(0.0 <= weight_decay, "weight_decay value", weight_decay)
        _check_no_unsupported("ASGD", capturable=capturable, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            lambd=lambd,
            alpha=alpha,
            t0=t0,
            weight_decay=weight_decay,
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
            state["eta"] = _scalar(lr)
            state["mu"] = _scalar(1.0)
            state["ax"] = _zeros_like(p)
        return state

    @no_grad()
    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad, state = _counted_step(self, p, group, lr)
                t = float(state["step"]._data)
                param = p._data
                if group["weight_decay"] != 0:
                    grad = grad + group["weight_decay"] * param
                eta, mu = float(state["eta"]._data), float(state["mu"]._data)
                param *= 1 - lambd * eta
                param -= eta * grad
                ax = state["ax"]._data
                if mu != 1:
                    ax += (param - ax) * mu
                else:
                    ax[...] = param
                # rounded to the scalar dtype even when the state was loaded as float64, as
                # torch (which builds them as default-dtype tensors before copying them in)
                rounded = _scalar_dtype()
                state["eta"]._data[...] = rounded(lr / (1 + lambd * lr * t) ** alpha)
                state["mu"]._data[...] = rounded(1 / max(1, t - t0))
                _bump_versions(p, state)
        return loss
