"""SparseAdam: Adam for sparse-layout gradients, which tinyattn does not have."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..autograd.grad_mode import no_grad
from ..tensor_api.tensor import Tensor
from .optimizer import Optimizer, _lr_value


class SparseAdam(Optimizer):
    r"""SparseAdam (``torch.optim.SparseAdam``): constructible, but every step with a
    gradient raises, as torch's does for dense gradients.

    torch's SparseAdam updates the moments and the parameter only at the entries a
    *sparse-layout* gradient stores (``nn.Embedding(sparse=True)`` makes them), and
    refuses a dense gradient with ``RuntimeError: SparseAdam does not support dense
    gradients, please consider Adam instead``. tinyattn has no sparse tensors, so every
    gradient is dense: construction, its checks, ``param_groups`` and ``state_dict``
    behave as torch's, and ``step()`` raises torch's error as soon as a parameter has a
    gradient. Use ``Adam`` (tinyattn's ``nn.Embedding`` gradients are dense).

    Parameters
    ----------
    params : iterable of Tensor or dict
    lr : float or 1-element Tensor, default 1e-3
        Must be > 0.
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
        Must be > 0.
    maximize : bool, default False

    State per parameter (torch's, never created here): ``step`` (a Python int),
    ``exp_avg``, ``exp_avg_sq``.

    Examples
    --------
    >>> import tinyattn as torch
    >>> w = torch.zeros(3, requires_grad=True)
    >>> opt = torch.optim.SparseAdam([w])
    >>> (w * w).sum().backward()
    >>> opt.step()
    Traceback (most recent call last):
    ...
    RuntimeError: SparseAdam does not support dense gradients, please consider Adam instead
    """

    def __init__(
        self,
        params: Iterable,
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ) -> None:
        lr = _lr_value(lr)
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, beta in enumerate(betas[:2]):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable | None = None):
        """Raise torch's error for the first parameter with a (necessarily dense) gradient;
        without any gradient, evaluate ``closure`` and return its loss as torch does."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    raise RuntimeError(
                        "SparseAdam does not support dense gradients, please consider Adam instead"
                    )
        return loss
