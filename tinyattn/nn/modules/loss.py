"""Loss modules: thin wrappers over ``tinyattn.nn.functional``'s losses (torch's arguments)."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .module import Module


def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    """torch's mapping of the deprecated size_average / reduce flags to ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    def __init__(
        self, weight: Tensor | None = None, size_average=None, reduce=None, reduction="mean"
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits (N, C, *) against class indices (N, *) or probabilities (N, C, *)."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.cross_entropy(input, target, ...)``: input (N, C) or (N, C, *) logits, target
        class indices (N) / (N, *) or probabilities shaped like ``input``.

        For one row with class-index target ``t``, ``p = softmax(x)``, loss ``-log p[t]``:
        ``dx = g (p - onehot(t))`` (scaled by ``weight[t]``, smoothing and the reduction).
        """
        return F.cross_entropy(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices under log-probabilities (N, C, *)."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.nll_loss``: input (N, C) or (N, C, *) log-probabilities, target (N) / (N, *) indices.

        Loss ``-w[t] logp[t]`` per row; ``dlogp[i, t_i] = -w[t_i] g_i`` (0 elsewhere and at
        ``ignore_index``), divided by the summed weights for ``reduction='mean'``.
        """
        return F.nll_loss(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
        )


class KLDivLoss(_Loss):
    """KL divergence with log-probability ``input``; ``reduction='batchmean'`` is the true KL."""

    def __init__(
        self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.kl_div``: pointwise ``target (log target - input)`` (``input`` log-probabilities).

        ``d input = -g * target`` (``-g * exp(target)`` with ``log_target=True``), then the
        reduction.
        """
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MSELoss(_Loss):
    """Mean squared error."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.mse_loss``: ``(input - target)^2``, then the reduction; inputs broadcast together.

        ``d input = 2 g (input - target)`` (divided by the element count for ``'mean'``),
        ``d target = -d input``.
        """
        return F.mse_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid + binary cross entropy, numerically stable; ``pos_weight`` scales positives."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average=None,
        reduce=None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.binary_cross_entropy_with_logits``: ``-w [pw t log s(x) + (1 - t) log(1 - s(x))]``
        with ``s`` the sigmoid; input and target the same shape.

        ``d input = g w ((pw t + 1 - t) s(x) - pw t)``, which is ``g w (s(x) - t)`` without
        ``pos_weight``.
        """
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, pos_weight=self.pos_weight, reduction=self.reduction
        )
