"""Muon: momentum whose update is orthogonalised by a Newton–Schulz iteration (2-D only)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor_api.tensor import Tensor
from .optimizer import (
    Optimizer,
    _bump_versions,
    _check_state_shapes,
    _grad_of,
    _lerp,
    _lr_value,
    _zeros_like,
)

# torch's defaults (Keller Jordan's quintic coefficients)
EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


class Muon(Optimizer):
    r"""Muon (``torch.optim.Muon``, Jordan et al. 2024) as torch 2.13 writes it.

    For each 2-D parameter ``p`` of shape ``(A, B)`` with gradient ``g``::

        buf = lerp(buf, g, 1 - momentum)             (= momentum * buf + (1 - momentum) * g)
        M   = lerp(g, buf, momentum)  if nesterov  else  buf
        O   = NS(M)                                   (approximately U V^T of M = U S V^T)
        p   = p * (1 - lr * weight_decay)
        p   = p - lr_adj * O

    ``NS`` runs in bfloat16, as torch's: ``X = M / max(||M||_F, eps)`` (transposed first
    when ``A > B``, so ``X X^T`` is the smaller Gram matrix), then ``ns_steps`` times::

        G = X X^T;   X = a X + (b G + c G G) X        (a, b, c) = ns_coefficients

    which pushes every singular value of ``X`` towards (roughly) 1. ``lr_adj`` is
    ``lr * sqrt(max(1, A / B))`` for ``adjust_lr_fn`` None or ``"original"``, and
    ``0.2 * lr * sqrt(max(A, B))`` for ``"match_rms_adamw"``.

    NumPy has no bfloat16: each bfloat16 result is emulated as a float32 computation
    rounded to bfloat16 (round to nearest even), the rounding torch's CPU kernels apply.
    Their float32 sums run in another order than NumPy's, so an element near a
    rounding tie can land one bfloat16 step (2**-8 relative) away from torch's;
    ``O`` matches torch's to that resolution, not bit for bit.

    Parameters
    ----------
    params : iterable of Tensor or dict
        2-D tensors only (weights of hidden layers); give biases, embeddings and gains to
        another optimizer such as AdamW.
    lr : float or 1-element Tensor, default 1e-3
    weight_decay : float, default 0.1
        Decoupled: ``p`` shrinks by ``1 - lr * weight_decay`` each step.
    momentum : float, default 0.95
    nesterov : bool, default True
    ns_coefficients : (float, float, float), default (3.4445, -4.7750, 2.0315)
    eps : float, default 1e-7
        Floor of the Frobenius norm ``M`` is divided by.
    ns_steps : int, default 5
        Newton–Schulz iterations (fewer than 100).
    adjust_lr_fn : {None, "original", "match_rms_adamw"}, default None

    State per parameter: ``momentum_buffer`` (shape of ``p``), torch's key.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
    >>> opt = torch.optim.Muon([w], lr=0.1, weight_decay=0.0)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([[ 0.9635, -1.9324],
            [ 2.8937,  0.4844]], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
        eps: float = EPS,
        ns_steps: int = DEFAULT_NS_STEPS,
        adjust_lr_fn: str | None = None,
    ) -> None:
        lr = _lr_value(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(
            lr=lr,
            weight_decay=weight_decay,
            momentum=momentum,
            nesterov=nesterov,
            ns_coefficients=ns_coefficients,
            eps=eps,
            ns_steps=ns_steps,
            adjust_lr_fn=adjust_lr_fn,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:  # as torch: the groups given here, not added ones
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {p.size()}"
                    )

    @no_grad()
    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = _grad_of(self, p, maximize=False)
                if grad.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = _zeros_like(p)
                _check_state_shapes(self, p, state)
                _muon_update(p._data, grad, state["momentum_buffer"]._data, group)
                _bump_versions(p, state)
        return loss


def _muon_update(param: np.ndarray, grad: np.ndarray, buf: np.ndarray, group: dict) -> None:
    """One Muon update of one parameter in place (``Muon``'s docstring)."""
    lr, momentum = group["lr"], group["momentum"]
    buf[...] = _lerp(buf, grad, 1 - momentum)
    update = _lerp(grad, buf, momentum) if group["nesterov"] else buf
    ortho = zeropower_via_newtonschulz(
        update, group["ns_coefficients"], group["ns_steps"], group["eps"]
    )
    adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], param.shape)
    param *= 1 - lr * group["weight_decay"]
    param += (-adjusted_lr) * ortho.astype(param.dtype)


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape: tuple[int, ...]) -> float:
    """The learning rate scaled for a ``shape[0] x shape[1]`` matrix (``Muon``'s docstring)."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


def _bfloat16(x: np.ndarray) -> np.ndarray:
    """``x`` rounded to bfloat16 (nearest, ties to even), kept as float32 values.

    bfloat16 is the top half of a float32: add half of the dropped 16 bits (minus one
    when the kept part is even, so that ties go to even) and clear them."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = bits.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, out)


def zeropower_via_newtonschulz(
    grad: np.ndarray, ns_coefficients: tuple[float, float, float], ns_steps: int, eps: float
) -> np.ndarray:
    """The Newton–Schulz orthogonalisation of a matrix, in emulated bfloat16.

    Parameters
    ----------
    grad : ndarray, shape (A, B)
    ns_coefficients : (a, b, c)
    ns_steps : int
        Iterations ``X = a X + (b G + c G G) X`` with ``G = X X^T``; fewer than 100.
    eps : float
        Floor of the Frobenius norm the input is divided by.

    Returns
    -------
    ndarray, shape (A, B), float32 holding bfloat16 values
        About ``U S' V^T`` for ``grad = U S V^T``, ``S'`` near the identity.
    """
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (np.float32(v) for v in ns_coefficients)
    # float64 -> bfloat16 goes through float32, as torch's conversion does
    x = _bfloat16(grad.astype(np.float32))
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = _bfloat16(np.sqrt(np.sum(x * x, dtype=np.float32)))
    x = _bfloat16(x / max(norm, _bfloat16(np.float32(eps))))
    for _ in range(ns_steps):
        gram = _bfloat16(x @ x.T)
        gram_update = _bfloat16(b * gram + c * (gram @ gram))
        x = _bfloat16(a * x + gram_update @ x)
    return x.T if tall else x
