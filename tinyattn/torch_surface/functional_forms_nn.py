"""``torch.<op>`` forms of functional ops: distances, rearrangements, activations, losses.

The nn half of ``functional_forms.py`` (see its docstring): torch's top-level
(ATen) signatures, each calling the one implementation in ``tinyattn.nn.functional``.
The losses take ``reduction`` as an int: 0 ``'none'`` (the default, as torch's), 1 ``'mean'``, 2
``'sum'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .functional_forms import _F, _reduction

if TYPE_CHECKING:
    from ..tensor_api.tensor import Tensor

__all__ = [
    "cosine_similarity",
    "pairwise_distance",
    "pdist",
    "pixel_shuffle",
    "pixel_unshuffle",
    "channel_shuffle",
    "constant_pad_nd",
    "affine_grid_generator",
    "grid_sampler",
    "bilinear",
    "prelu",
    "selu",
    "selu_",
    "celu",
    "celu_",
    "threshold",
    "threshold_",
    "rrelu",
    "rrelu_",
    "hardshrink",
    "relu_",
    "ctc_loss",
    "kl_div",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "cosine_embedding_loss",
    "triplet_margin_loss",
    "poisson_nll_loss",
    "binary_cross_entropy_with_logits",
]


# -- distances and rearrangements -------------------------------------------------------------
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-08) -> Tensor:
    """``F.cosine_similarity``."""
    return _F().cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-06, keepdim: bool = False
) -> Tensor:
    """``F.pairwise_distance``."""
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """``F.pdist``."""
    return _F().pdist(input, p)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``F.pixel_shuffle``."""
    return _F().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``F.pixel_unshuffle``."""
    return _F().pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``F.channel_shuffle``."""
    return _F().channel_shuffle(input, groups)


def constant_pad_nd(input: Tensor, pad, value: float = 0) -> Tensor:
    """``F.pad(input, pad, 'constant', value)`` (negative pads crop, as in torch)."""
    return _F().pad(input, list(pad), "constant", value)


def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """``F.affine_grid(theta, size, align_corners)`` (``align_corners`` required)."""
    return _F().affine_grid(theta, list(size), align_corners)


_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """``F.grid_sample`` with ATen's int modes: interpolation 0 bilinear, 1 nearest,
    2 bicubic; padding 0 zeros, 1 border, 2 reflection."""
    if interpolation_mode not in _INTERPOLATION or padding_mode not in _PADDING:
        raise ValueError(
            f"grid_sampler: interpolation_mode must be 0, 1 or 2 and padding_mode 0, 1 or 2; "
            f"got {interpolation_mode!r} and {padding_mode!r}"
        )
    return _F().grid_sample(
        input, grid, _INTERPOLATION[interpolation_mode], _PADDING[padding_mode], align_corners
    )


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    """``F.bilinear``."""
    return _F().bilinear(input1, input2, weight, bias)


# -- activations -----------------------------------------------------------------------------
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``F.prelu``."""
    return _F().prelu(input, weight)


def selu(input: Tensor) -> Tensor:
    """``F.selu``."""
    return _F().selu(input)


def selu_(input: Tensor) -> Tensor:
    """In-place ``selu``."""
    return _F().selu_(input)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``F.celu``."""
    return _F().celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``celu``."""
    return _F().celu_(input, alpha)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``F.threshold``: ``input`` where ``input > threshold``, else ``value``."""
    return _F().threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place ``threshold``."""
    return _F().threshold_(input, threshold, value)


def rrelu(
    input: Tensor,
    lower: float = 0.125,
    upper: float = 1.0 / 3.0,
    training: bool = False,
    generator=None,
) -> Tensor:
    """``F.rrelu``; ``generator`` must be None (the global generator is used)."""
    _no_generator(generator, "rrelu")
    return _F().rrelu(input, lower, upper, training)


def rrelu_(
    input: Tensor,
    lower: float = 0.125,
    upper: float = 1.0 / 3.0,
    training: bool = False,
    generator=None,
) -> Tensor:
    """In-place ``rrelu``."""
    _no_generator(generator, "rrelu_")
    return _F().rrelu_(input, lower, upper, training)


def _no_generator(generator, op: str) -> None:
    if generator is not None:
        raise NotImplementedError(
            f"{op}: a generator argument is not supported by tinyattn (seed the global one "
            "with tinyattn.manual_seed)"
        )


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``F.hardshrink``."""
    return _F().hardshrink(input, lambd)


def relu_(input: Tensor) -> Tensor:
    """In-place ``relu``."""
    return input.relu_()


# -- losses (``reduction`` is an int: 0 none, 1 mean, 2 sum) ----------------------------------
# Left out, it is 0 ('none'): torch 2.13's top-level losses return the unreduced loss
# (torch.kl_div(x, t) has x's shape), unlike the nn.functional forms' 'mean'.
def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: int = 0,
    zero_infinity: bool = False,
) -> Tensor:
    """``F.ctc_loss`` with an int ``reduction``."""
    return _F().ctc_loss(
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank,
        _reduction(reduction, "ctc_loss"),
        zero_infinity,
    )


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *, log_target: bool = False):
    """``F.kl_div`` with an int ``reduction`` (0, unreduced, by default); 1 is the plain
    elementwise mean (torch's top-level form does not warn about ``'mean'`` as ``F.kl_div``
    does)."""
    import warnings

    red = _reduction(reduction, "kl_div")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return _F().kl_div(input, target, reduction=red, log_target=log_target)


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 0
) -> Tensor:
    """``F.margin_ranking_loss`` with an int ``reduction``."""
    red = _reduction(reduction, "margin_ranking_loss")
    return _F().margin_ranking_loss(input1, input2, target, margin, reduction=red)


def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 0
) -> Tensor:
    """``F.hinge_embedding_loss`` with an int ``reduction``."""
    red = _reduction(reduction, "hinge_embedding_loss")
    return _F().hinge_embedding_loss(input, target, margin, reduction=red)


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 0
) -> Tensor:
    """``F.cosine_embedding_loss`` with an int ``reduction``."""
    red = _reduction(reduction, "cosine_embedding_loss")
    return _F().cosine_embedding_loss(input1, input2, target, margin, reduction=red)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-06,
    swap: bool = False,
    reduction: int = 0,
) -> Tensor:
    """``F.triplet_margin_loss`` with an int ``reduction``."""
    red = _reduction(reduction, "triplet_margin_loss")
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=red)


def poisson_nll_loss(
    input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float, reduction: int
) -> Tensor:
    """``F.poisson_nll_loss``; every argument is required and ``reduction`` is an int."""
    red = _reduction(reduction, "poisson_nll_loss")
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=red)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: int = 0,
) -> Tensor:
    """``F.binary_cross_entropy_with_logits``; here ``pos_weight`` comes before the int
    ``reduction``."""
    red = _reduction(reduction, "binary_cross_entropy_with_logits")
    return _F().binary_cross_entropy_with_logits(
        input, target, weight, reduction=red, pos_weight=pos_weight
    )
