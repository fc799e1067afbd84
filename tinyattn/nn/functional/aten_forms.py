"""``torch.<op>`` forms of the functional ops: ``tinyattn.dropout``, ``tinyattn.layer_norm``,
``tinyattn.conv2d``, ``tinyattn.pdist``, ``tinyattn.kl_div`` ...

PyTorch exposes its ATen kernels at top level with the ATen signature, which often differs
from ``torch.nn.functional``'s: ``torch.dropout(input, p, train)`` has no defaults,
``torch.embedding(weight, input)`` takes the table first, ``torch.batch_norm`` puts
``weight, bias`` before the running statistics, and the losses take ``reduction`` as an
int (0 ``'none'``, 1 ``'mean'``, 2 ``'sum'``). Public programs call both spellings.

Each function here takes torch's top-level signature and calls the one implementation in
``tinyattn.nn.functional``: no op is written twice, and the gradients are those of the
functional op. The package root exports these names (``tinyattn.dropout``); the
``nn.functional`` namespace keeps its own signatures, so it does not list them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F

if TYPE_CHECKING:
    from ...tensor_api.tensor import Tensor

__all__ = [
    "dropout",
    "dropout_",
    "alpha_dropout",
    "alpha_dropout_",
    "feature_alpha_dropout",
    "feature_alpha_dropout_",
    "feature_dropout",
    "feature_dropout_",
    "layer_norm",
    "group_norm",
    "batch_norm",
    "instance_norm",
    "rms_norm",
    "embedding",
    "embedding_bag",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "convolution",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "max_pool1d_with_indices",
    "avg_pool1d",
    "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    # distances, rearrangements, activations, losses
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

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(reduction, op: str) -> str:
    """torch's int reduction (``at::Reduction``) as the functional API's string."""
    if isinstance(reduction, bool) or reduction not in _REDUCTIONS:
        raise ValueError(
            f"{op}: reduction must be 0 ('none'), 1 ('mean') or 2 ('sum'), got {reduction!r}"
        )
    return _REDUCTIONS[reduction]


# -- dropout ---------------------------------------------------------------------------------
def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``F.dropout(input, p, training=train)``; all three arguments are required, as in torch."""
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``dropout``: ``F.dropout(input, p, train, inplace=True)``."""
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``F.alpha_dropout(input, p, training=train)`` (SELU-preserving dropout)."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``alpha_dropout``."""
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``F.feature_alpha_dropout(input, p, training=train)``: whole channels at once."""
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``feature_alpha_dropout``."""
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def _feature_mask(input: Tensor, p: float, op: str):
    """The kept-and-scaled channel mask of shape (N, C, 1, ..., 1): ``bernoulli(1-p)/(1-p)``."""
    from ... import ops

    if input.ndim < 2:
        raise RuntimeError(
            f"{op}: Feature dropout requires at least 2 dimensions in the input, got shape "
            f"{list(input.shape)}"
        )
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    if p == 1.0:
        return ops.creation.factories.zeros(shape, dtype=input.dtype)
    keep = ops.creation.factories.full(shape, 1.0 - p, dtype=input.dtype)
    return ops.random.sampling.bernoulli(keep) / (1.0 - p)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero whole channels ``input[n, c]`` with probability ``p``, scale the rest by 1/(1-p).

    Shapes: ``input`` (N, C, *) -> same. A 2-D input (N, C) drops single elements (as torch).
    Gradient: ``d input = g * mask`` (the same scaled mask). ``train=False``: the identity.
    """
    if not train or p == 0.0:
        return input
    return input * _feature_mask(input, p, "feature_dropout")


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``feature_dropout``."""
    if not train or p == 0.0:
        return input
    return input.mul_(_feature_mask(input, p, "feature_dropout_"))


# -- normalization ---------------------------------------------------------------------------
def layer_norm(
    input: Tensor,
    normalized_shape,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-05,
    cudnn_enable: bool = True,
) -> Tensor:
    """``F.layer_norm``; ``cudnn_enable`` has no effect on the CPU."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-05,
    cudnn_enabled: bool = True,
) -> Tensor:
    """``F.group_norm``; ``cudnn_enabled`` has no effect on the CPU."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """ATen's ``batch_norm``: ``weight, bias`` come *before* the running statistics, and
    every argument is required. Calls ``F.batch_norm`` (which updates the running stats in
    place when ``training``)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """ATen's ``instance_norm`` (argument order as ``batch_norm`` above); ``F.instance_norm``."""
    return F.instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def rms_norm(
    input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """``F.rms_norm``."""
    return F.rms_norm(input, normalized_shape, weight, eps)


# -- embeddings ------------------------------------------------------------------------------
def embedding(
    weight: Tensor,
    indices: Tensor,
    padding_idx: int = -1,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """``weight[indices]``: note the order, table first (``F.embedding(input, weight)``).

    A negative ``padding_idx`` means no padding row (ATen's convention: ``F.embedding``
    turns ``None`` into -1); a row ``padding_idx >= 0`` gets no gradient.
    """
    pad = None if padding_idx is None or padding_idx < 0 else padding_idx
    return F.embedding(indices, weight, pad, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_bag(
    weight: Tensor,
    indices: Tensor,
    offsets: Tensor,
    scale_grad_by_freq: bool = False,
    mode: int = 0,
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
):
    """ATen's ``embedding_bag``: ``mode`` 0 sum, 1 mean, 2 max; returns 4 tensors.

    ``(output, offset2bag, bag_size, max_indices)``: ``output`` is ``F.embedding_bag``'s;
    the other three are what their names say (the bag of each index; the entries per bag;
    for ``mode=2`` the index that won each ``output`` element, else ``bag_size``), integer
    tensors without gradient. torch's CPU kernel leaves some of them empty or zero in its
    fast paths; only ``output`` is meant to be used.
    """
    import numpy as np

    from ... import ops

    modes = ("sum", "mean", "max")
    if mode not in (0, 1, 2) or isinstance(mode, bool):
        raise ValueError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got {mode!r}")
    flat = indices.reshape(-1)  # ATen reads the indices flat, always cut by offsets
    output = F.embedding_bag(
        flat,
        weight,
        offsets,
        scale_grad_by_freq=scale_grad_by_freq,
        mode=modes[mode],
        sparse=sparse,
        per_sample_weights=per_sample_weights,
        include_last_offset=include_last_offset,
        padding_idx=padding_idx,
    )
    idx = np.asarray(flat._data, dtype=np.int64)
    bounds = np.asarray(offsets._data, dtype=np.int64)
    if not include_last_offset:
        bounds = np.append(bounds, idx.size)
    bags = bounds.size - 1
    offset2bag = np.searchsorted(bounds[1:], np.arange(idx.size), side="right").astype(np.int64)
    kept = idx != padding_idx if padding_idx is not None else np.ones(idx.size, bool)
    bag_size = np.bincount(offset2bag[kept], minlength=bags)[:bags].astype(np.int64)
    if mode == 2:
        table = weight._data
        max_indices = np.zeros((bags, table.shape[1]), dtype=np.int64)
        for b in range(bags):
            members = idx[bounds[b] : bounds[b + 1]][kept[bounds[b] : bounds[b + 1]]]
            if members.size:
                max_indices[b] = members[np.argmax(table[members], axis=0)]
    else:
        max_indices = bag_size.copy()
    make = ops.creation.factories.tensor
    return output, make(offset2bag), make(bag_size), make(max_indices)


# -- convolution -----------------------------------------------------------------------------
def conv1d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``F.conv1d`` (same signature; ``padding`` may be ``'valid'`` or ``'same'``)."""
    return F.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``F.conv2d`` (same signature)."""
    return F.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``F.conv3d`` (same signature)."""
    return F.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(
    input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, output_padding=0, groups=1,
    dilation=1,
):  # fmt: skip
    """``F.conv_transpose1d`` (same signature)."""
    return F.conv_transpose1d(
        input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose2d(
    input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, output_padding=0, groups=1,
    dilation=1,
):  # fmt: skip
    """``F.conv_transpose2d`` (same signature)."""
    return F.conv_transpose2d(
        input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose3d(
    input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, output_padding=0, groups=1,
    dilation=1,
):  # fmt: skip
    """``F.conv_transpose3d`` (same signature)."""
    return F.conv_transpose3d(
        input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def convolution(
    input: Tensor, weight: Tensor, bias, stride, padding, dilation, transposed: bool,
    output_padding, groups: int,
):  # fmt: skip
    """ATen's generic convolution: ``conv{n}d`` or (``transposed``) ``conv_transpose{n}d``,
    ``n = input.ndim - 2``; every argument is required."""
    n = input.ndim - 2
    if n not in (1, 2, 3):
        raise RuntimeError(
            f"convolution: expected a 3-D, 4-D or 5-D input (batch, channels, 1-3 spatial "
            f"dims), got shape {list(input.shape)}"
        )
    if transposed:
        fn = getattr(F, f"conv_transpose{n}d")
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = getattr(F, f"conv{n}d")
    return fn(input, weight, bias, stride, padding, dilation, groups)


# -- pooling ---------------------------------------------------------------------------------
def _stride(stride):
    """ATen's default ``stride=[]`` means the kernel size: ``None`` for the functional API."""
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) else stride


def max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``F.max_pool1d`` without ``return_indices`` (``stride=()`` means ``kernel_size``)."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``F.max_pool2d`` without ``return_indices`` (``stride=()`` means ``kernel_size``)."""
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``F.max_pool3d`` without ``return_indices`` (``stride=()`` means ``kernel_size``)."""
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(
    input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False
):
    """``(values, indices)`` of ``F.max_pool1d(..., return_indices=True)``."""
    return F.max_pool1d(
        input, kernel_size, _stride(stride), padding, dilation, ceil_mode, return_indices=True
    )


def avg_pool1d(
    input: Tensor, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True
):
    """``F.avg_pool1d`` (``stride=()`` means ``kernel_size``)."""
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """``F.adaptive_avg_pool1d``."""
    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size):
    """``(values, indices)``: torch's top-level form always returns the indices too."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


# -- distances and rearrangements -------------------------------------------------------------
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-08) -> Tensor:
    """``F.cosine_similarity``."""
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-06, keepdim: bool = False
) -> Tensor:
    """``F.pairwise_distance``."""
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """``F.pdist``."""
    return F.pdist(input, p)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``F.pixel_shuffle``."""
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``F.pixel_unshuffle``."""
    return F.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``F.channel_shuffle``."""
    return F.channel_shuffle(input, groups)


def constant_pad_nd(input: Tensor, pad, value: float = 0) -> Tensor:
    """``F.pad(input, pad, 'constant', value)`` (negative pads crop, as in torch)."""
    return F.pad(input, list(pad), "constant", value)


def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """``F.affine_grid(theta, size, align_corners)`` (``align_corners`` required)."""
    return F.affine_grid(theta, list(size), align_corners)


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
    return F.grid_sample(
        input, grid, _INTERPOLATION[interpolation_mode], _PADDING[padding_mode], align_corners
    )


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    """``F.bilinear``."""
    return F.bilinear(input1, input2, weight, bias)


# -- activations -----------------------------------------------------------------------------
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``F.prelu``."""
    return F.prelu(input, weight)


def selu(input: Tensor) -> Tensor:
    """``F.selu``."""
    return F.selu(input)


def selu_(input: Tensor) -> Tensor:
    """In-place ``selu``."""
    return F.selu_(input)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``F.celu``."""
    return F.celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``celu``."""
    return F.celu_(input, alpha)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``F.threshold``: ``input`` where ``input > threshold``, else ``value``."""
    return F.threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place ``threshold``."""
    return F.threshold_(input, threshold, value)


def rrelu(
    input: Tensor,
    lower: float = 0.125,
    upper: float = 1.0 / 3.0,
    training: bool = False,
    generator=None,
) -> Tensor:
    """``F.rrelu``; ``generator`` must be None (the global generator is used)."""
    _no_generator(generator, "rrelu")
    return F.rrelu(input, lower, upper, training)


def rrelu_(
    input: Tensor,
    lower: float = 0.125,
    upper: float = 1.0 / 3.0,
    training: bool = False,
    generator=None,
) -> Tensor:
    """In-place ``rrelu``."""
    _no_generator(generator, "rrelu_")
    return F.rrelu_(input, lower, upper, training)


def _no_generator(generator, op: str) -> None:
    if generator is not None:
        raise NotImplementedError(
            f"{op}: a generator argument is not supported by tinyattn (seed the global one "
            "with tinyattn.manual_seed)"
        )


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``F.hardshrink``."""
    return F.hardshrink(input, lambd)


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
    return F.ctc_loss(
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
        return F.kl_div(input, target, reduction=red, log_target=log_target)


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 0
) -> Tensor:
    """``F.margin_ranking_loss`` with an int ``reduction``."""
    red = _reduction(reduction, "margin_ranking_loss")
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=red)


def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 0
) -> Tensor:
    """``F.hinge_embedding_loss`` with an int ``reduction``."""
    red = _reduction(reduction, "hinge_embedding_loss")
    return F.hinge_embedding_loss(input, target, margin, reduction=red)


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 0
) -> Tensor:
    """``F.cosine_embedding_loss`` with an int ``reduction``."""
    red = _reduction(reduction, "cosine_embedding_loss")
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=red)


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
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=red)


def poisson_nll_loss(
    input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float, reduction: int
) -> Tensor:
    """``F.poisson_nll_loss``; every argument is required and ``reduction`` is an int."""
    red = _reduction(reduction, "poisson_nll_loss")
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=red)


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
    return F.binary_cross_entropy_with_logits(
        input, target, weight, reduction=red, pos_weight=pos_weight
    )
