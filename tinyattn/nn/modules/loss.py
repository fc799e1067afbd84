"""Loss modules: thin wrappers over ``tinyattn.nn.functional``'s losses (torch's arguments)."""

from __future__ import annotations

import warnings

from ...tensor_api.tensor import Tensor
from .. import functional as F
from .distance import PairwiseDistance
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


class NLLLoss2d(NLLLoss):
    """Deprecated alias of :class:`NLLLoss` (torch keeps it for old code); same arguments."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction: str = "mean",
    ) -> None:
        warnings.warn(
            "`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in "
            "replacement and see https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for "
            "more details.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


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


# -- regression, likelihood, margin and CTC losses ---------------------------------------------


class L1Loss(_Loss):
    """Mean absolute error."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.l1_loss``: ``|input - target|``, then the reduction.

        ``d input = g sign(input - target)``, ``d target = -d input``.
        """
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above (``beta = 0``: L1)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.smooth_l1_loss``. ``d input = g d / beta`` where ``|d| < beta``, else
        ``g sign(d)`` (``d = input - target``)."""
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, ``delta``-scaled linear above."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.huber_loss``. ``d input = g d`` where ``|d| <= delta``, else ``g delta sign(d)``."""
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities (logs clamped at -100)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.binary_cross_entropy``. ``d input = g w (x - t) / max(x (1 - x), 1e-12)``."""
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss ``log(1 + exp(-y x))``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.soft_margin_loss``. ``d input = -g y sigmoid(-y x)``."""
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class _MarginLoss(_Loss):
    default_margin = 0.0

    def __init__(self, margin=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = self.default_margin if margin is None else margin


class MarginRankingLoss(_MarginLoss):
    """``max(0, -y (x1 - x2) + margin)``."""

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """``F.margin_ranking_loss``. Where active: ``d input1 = -g y``, ``d input2 = g y``."""
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """``x`` for ``y = 1``, ``max(0, margin - x)`` for ``y = -1``."""

    default_margin = 1.0

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.hinge_embedding_loss``. ``d input = g`` (y = 1), ``-g`` (y = -1, active)."""
        return F.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_MarginLoss):
    """``1 - cos(x1, x2)`` for ``y = 1``, ``max(0, cos(x1, x2) - margin)`` for ``y = -1``."""

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """``F.cosine_embedding_loss``. For y = 1:
        ``d x1 = -g (x2 / (|x1| |x2|) - cos x1 / |x1|^2)``."""
        return F.cosine_embedding_loss(
            input1, input2, target, self.margin, reduction=self.reduction
        )


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class logistic loss averaged over classes: input, target (N, C)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.multilabel_soft_margin_loss``. ``d input = g w (sigmoid(x) - t) / C``."""
        return F.multilabel_soft_margin_loss(
            input, target, weight=self.weight, reduction=self.reduction
        )


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss ``sum_{j != y} max(0, margin - x[y] + x[j])^p / C``."""

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor | None = None,
        size_average=None,
        reduce=None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 supported, got p={p}")
        if weight is not None and weight.ndim != 1:
            raise ValueError(
                f"MultiMarginLoss: weight must be 1-D (one per class), got {list(weight.shape)}"
            )
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.multi_margin_loss``. Where ``z_j > 0``: ``d x[j] = g w_y p z_j^(p-1) / C``,
        ``d x[y] = -sum_j d x[j]``."""
        return F.multi_margin_loss(
            input, target, self.p, self.margin, self.weight, reduction=self.reduction
        )


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss; target rows list classes, ended by -1."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.multilabel_margin_loss``. Per active pair (j, k): ``d x[j] = -g / C``,
        ``d x[k] = g / C``."""
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the pairwise p-norm distance."""

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average=None,
        reduce=None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead"
            )
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """``F.triplet_margin_loss``. Active, p = 2, ``r = a - pos + eps``, ``s = a - neg + eps``:
        ``d anchor = g (r / |r| - s / |s|)``."""
        return F.triplet_margin_loss(
            anchor,
            positive,
            negative,
            margin=self.margin,
            p=self.p,
            eps=self.eps,
            swap=self.swap,
            reduction=self.reduction,
        )


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with a custom distance (a function or Module; default PairwiseDistance)."""

    def __init__(
        self,
        *,
        distance_function=None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got "
                f"{margin} instead"
            )
        self.distance_function = (
            distance_function if distance_function is not None else PairwiseDistance()
        )
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """``F.triplet_margin_with_distance_loss``. Where active:
        ``d anchor = g (dd(a, pos)/da - dd(a, neg)/da)``."""
        return F.triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood with predicted variances."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var) -> Tensor:
        """``F.gaussian_nll_loss``. ``d input = g (input - target) / var``,
        ``d var = g (1 / var - (input - target)^2 / var^2) / 2``."""
        return F.gaussian_nll_loss(
            input, target, var, full=self.full, eps=self.eps, reduction=self.reduction
        )


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood (``log_input``: the input is the log-rate)."""

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average=None,
        eps: float = 1e-8,
        reduce=None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        """``F.poisson_nll_loss``. ``d input = g (exp(x) - t)`` (log_input),
        ``g (1 - t / (x + eps))`` otherwise."""
        return F.poisson_nll_loss(
            log_input,
            target,
            log_input=self.log_input,
            full=self.full,
            eps=self.eps,
            reduction=self.reduction,
        )


class CTCLoss(_Loss):
    """Connectionist temporal classification loss (alignment-free sequence labelling)."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets, input_lengths, target_lengths) -> Tensor:
        """``F.ctc_loss``: log_probs (T, N, C), targets (N, S) or 1-D, lengths (N,).

        ``d log_probs[t, n, k] = -g / p * sum_{s: l'_s = k} alpha_t(s) beta_t(s)``.
        """
        return F.ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            self.blank,
            self.reduction,
            self.zero_infinity,
        )
