"""Adam and AdamW: adaptive moment estimation, with coupled or decoupled weight decay."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _check_no_unsupported, _write


def _lerp_(start: np.ndarray, end: np.ndarray, weight: float) -> None:
    """``start += weight * (end - start)`` in place, in torch's two-branch form.

    torch evaluates ``lerp`` from whichever end is nearer to keep rounding small;
    following it keeps Adam's first moment equal to torch's in float32.
    """
    if weight < 0.5:
        start += weight * (end - start)
    else:
        np.subtract(end, (end - start) * (1 - weight), out=start, casting="same_kind")


class Adam(Optimizer):
    r"""Adam (``torch.optim.Adam``); with ``decoupled_weight_decay=True`` it is AdamW.

    For each parameter ``p`` with gradient ``g`` (negated if ``maximize``), at step ``t``::

        p = p * (1 - lr * weight_decay)      (decoupled)  or  g = g + weight_decay * p
        m = m + (1 - beta1) * (g - m)                       first moment
        v = beta2 * v + (1 - beta2) * g * g                 second moment
        v_max = max(v_max, v)                               (amsgrad; then v := v_max)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float, default 1e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    weight_decay : float, default 0
    amsgrad : bool, default False
    maximize : bool, default False
    decoupled_weight_decay : bool, default False

    State per parameter: ``step`` (0-d float32 tensor), ``exp_avg``, ``exp_avg_sq``
    and, with amsgrad, ``max_exp_avg_sq`` — the same keys as torch.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = torch.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        name = type(self).__name__
        if isinstance(lr, Tensor):
            lr = lr.item()
        if not 0.0 <= lr:
            raise ValueError(f"{name}: invalid learning rate lr={lr} (expected >= 0)")
        if not 0.0 <= eps:
            raise ValueError(f"{name}: invalid epsilon value eps={eps} (expected >= 0)")
        if len(betas) != 2:
            raise ValueError(f"{name}: betas must be a pair (beta1, beta2), got {betas!r}")
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(
                    f"{name}: invalid beta parameter at index {i}: {beta} (expected in [0, 1))"
                )
        if not 0.0 <= weight_decay:
            raise ValueError(f"{name}: invalid weight_decay value {weight_decay} (expected >= 0)")
        _check_no_unsupported(
            name, capturable=capturable, differentiable=differentiable, fused=fused
        )
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, amsgrad: bool) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = Tensor._make(np.zeros((), dtype=np.float32))
            state["exp_avg"] = Tensor._make(np.zeros_like(p._data))
            state["exp_avg_sq"] = Tensor._make(np.zeros_like(p._data))
        if amsgrad and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = Tensor._make(np.zeros_like(p._data))
        return state

    @no_grad()
    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            amsgrad = group["amsgrad"]
            decoupled = group.get("decoupled_weight_decay", False)
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._init_state(p, amsgrad)
                grad = p.grad._data
                if group["maximize"]:
                    grad = -grad
                state["step"]._data += 1
                step = float(state["step"]._data)

                if weight_decay != 0:
                    if decoupled:
                        _write(p, p._data * (1 - lr * weight_decay))
                    else:
                        grad = grad + weight_decay * p._data

                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                _lerp_(exp_avg._data, grad, 1 - beta1)
                np.multiply(exp_avg_sq._data, beta2, out=exp_avg_sq._data)
                exp_avg_sq._data += (1 - beta2) * grad * grad

                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = bias_correction2**0.5

                second = exp_avg_sq._data
                if amsgrad:
                    v_max = state["max_exp_avg_sq"]._data
                    np.maximum(v_max, second, out=v_max)
                    second = v_max
                denom = np.sqrt(second) / bias_correction2_sqrt + eps
                _write(p, p._data + (-step_size) * exp_avg._data / denom)
                for key in ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
                    if key in state:
                        state[key]._bump_version()
        return loss


class AdamW(Adam):
    r"""AdamW (``torch.optim.AdamW``): Adam with decoupled weight decay.

    The decay shrinks the parameter directly, ``p = p * (1 - lr * weight_decay)``,
    before the Adam update, instead of adding ``weight_decay * p`` to the gradient
    (where Adam's normalisation would rescale it). Default ``weight_decay=1e-2``.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = torch.optim.AdamW([w], lr=0.1, weight_decay=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.8900, -1.8800], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        for group in self.param_groups:  # as torch: AdamW always decouples
            group["decoupled_weight_decay"] = True
