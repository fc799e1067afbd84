"""Adafactor: Adam-like steps from a factored (row x column) second moment."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor_api.tensor import Tensor
from .optimizer import Optimizer, _bump_versions, _grad_of, _lerp, _lr_value, _scalar


class Adafactor(Optimizer):
    r"""Adafactor (``torch.optim.Adafactor``, Shazeer & Stern 2018) as torch 2.13 writes it.

    For each parameter ``p`` (gradient ``g``, negated if ``maximize``) at step ``t``::

        w_t   = t ** beta2_decay                     (1 - beta2_t: 1 at t = 1, then decays)
        rho_t = min(lr, 1 / sqrt(t))                 (relative step size)
        alpha = max(eps2, RMS(p)) * rho_t            (RMS(p) = ||p|| / sqrt(numel), before decay)
        p = p * (1 - lr * weight_decay)
        if p.ndim > 1:                               (factored over the last two dims)
            R = lerp(R, mean(g * g, dim=-1), w_t)    row_var,  shape [..., n, 1]
            C = lerp(C, mean(g * g, dim=-2), w_t)    col_var,  shape [..., 1, m]
            V = (R @ C) / max(mean(R, dim=-2), eps1)
        else:
            V = lerp(V, g * g, w_t)                  variance, shape of p
        U = g / sqrt(max(V, eps1 ** 2))
        p = p - alpha / max(1, RMS(U) / d) * U

    ``lerp(a, b, w) = a + w * (b - a)``. ``eps1=None`` (the default) means the machine
    epsilon of the parameters' dtype. Unlike the paper, ``lr`` caps ``rho_t`` and scales
    the (decoupled) weight decay, and ``eps1`` is applied to ``V`` and ``U`` rather than
    to the squared gradient: torch's choices, followed here.

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float or 1-element Tensor, default 1e-2
    beta2_decay : float, default -0.8
        Must be <= 0.
    eps : (float or None, float), default (None, 1e-3)
        ``(eps1, eps2)``: ``eps1`` floors the variance estimate (None: the dtype's
        epsilon), ``eps2`` floors the parameter scale ``RMS(p)``.
    d : float, default 1.0
        Update clipping threshold (>= 1): the update's RMS is capped at ``d``.
    weight_decay : float, default 0.0
    foreach : bool or None
        Accepted; every path is the single-tensor loop.
    maximize : bool, default False

    State per parameter: ``step`` (0-d, of torch's scalar dtype) and either ``row_var``
    (``[..., n, 1]``) and ``col_var`` (``[..., 1, m]``) for parameters with two or more
    dimensions, or ``variance`` (shape of ``p``) for vectors and scalars: torch's keys.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
    >>> opt = torch.optim.Adafactor([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([[ 0.9044, -1.7067],
            [ 2.7892,  0.4461]], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        lr = _lr_value(lr)
        checks = [
            (0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}"),
            (0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}"),
            (eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}"),
            (0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}"),
            (1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}"),
            (0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        defaults = dict(
            lr=lr,
            beta2_decay=beta2_decay,
            eps=eps,
            d=d,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, grad: np.ndarray) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar(0.0)
            if grad.ndim > 1:
                state["row_var"] = Tensor._make(np.zeros(grad.shape[:-1] + (1,), grad.dtype))
                col_shape = grad.shape[:-2] + (1,) + grad.shape[-1:]
                state["col_var"] = Tensor._make(np.zeros(col_shape, grad.dtype))
            else:
                state["variance"] = Tensor._make(np.zeros_like(grad))
        return state

    @no_grad()
    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            eps1 = group["eps"][0]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = _grad_of(self, p, group["maximize"])
                state = self._init_state(p, grad)
                _check_factored_shapes(p, state)
                if eps1 is None:  # as torch: the first parameter's dtype sets it for the group
                    eps1 = float(np.finfo(p._data.dtype).eps)
                state["step"]._data += 1
                _adafactor_update(p._data, grad, state, group, eps1, float(state["step"]._data))
                _bump_versions(p, state)
        return loss


def _check_factored_shapes(p: Tensor, state: dict) -> None:
    """Refuse state saved for another shape (a state dict of other parameters), before
    any write; torch fails at the step as well."""
    shape = p._data.shape
    if len(shape) > 1:
        expected = {
            "row_var": shape[:-1] + (1,),
            "col_var": shape[:-2] + (1,) + shape[-1:],
        }
    else:
        expected = {"variance": shape}
    for key, want in expected.items():
        value = state.get(key)
        got = None if value is None else tuple(value.shape)
        if got != want:
            raise RuntimeError(
                f"Adafactor.step: state {key!r} of a parameter of shape {list(shape)} has "
                f"shape {None if got is None else list(got)} (expected {list(want)}; was the "
                "state dict saved for other parameters?)"
            )


def _norm(a: np.ndarray) -> float:
    return float(np.sqrt(np.sum(a * a)))


def _adafactor_update(
    param: np.ndarray, grad: np.ndarray, state: dict, group: dict, eps1: float, t: float
) -> None:
    """One Adafactor update of one parameter in place (``Adafactor``'s docstring)."""
    lr, d, weight_decay = group["lr"], group["d"], group["weight_decay"]
    one_minus_beta2 = t ** group["beta2_decay"]
    rho = min(lr, 1 / t**0.5)
    alpha = max(group["eps"][1], _norm(param) / param.size**0.5) * rho
    if weight_decay != 0:
        param *= 1 - lr * weight_decay
    if grad.ndim > 1:
        row_var, col_var = state["row_var"]._data, state["col_var"]._data
        row_var[...] = _lerp(row_var, np.mean(grad * grad, axis=-1, keepdims=True), one_minus_beta2)
        col_var[...] = _lerp(col_var, np.mean(grad * grad, axis=-2, keepdims=True), one_minus_beta2)
        row_mean = np.maximum(np.mean(row_var, axis=-2, keepdims=True), eps1)
        var_estimate = (row_var @ col_var) / row_mean.astype(grad.dtype)
    else:
        variance = state["variance"]._data
        variance[...] = _lerp(variance, grad * grad, one_minus_beta2)
        var_estimate = variance.copy()
    # torch: rsqrt(max(V, eps1**2)) * g, squared so that eps1 keeps its magnitude
    update = 1 / np.sqrt(np.maximum(var_estimate, np.asarray(eps1 * eps1, grad.dtype))) * grad
    denom = max(1.0, _norm(update) / (update.size**0.5 * d))
    param += (-alpha / denom) * update
