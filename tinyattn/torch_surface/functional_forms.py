"""``torch.<op>`` forms of functional ops: ``tinyattn.dropout``, ``tinyattn.layer_norm`` ...

PyTorch exposes its ATen kernels at top level with the ATen signature, which often differs
from ``torch.nn.functional``'s: ``torch.dropout(input, p, train)`` has no defaults,
``torch.embedding(weight, input)`` takes the table first, ``torch.batch_norm`` puts
``weight, bias`` before the running statistics, and the losses take ``reduction`` as an
int (0 ``'none'``, 1 ``'mean'``, 2 ``'sum'``). Public programs call both spellings.

Each function here takes torch's top-level signature and calls the one implementation in
``tinyattn.nn.functional`` (imported inside the call, so ``import tinyattn`` stays light):
no op is written twice, and the gradients are those of the functional op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tensor_api.tensor import Tensor

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
]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _F():
    from ..nn import functional

    return functional


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
    return _F().dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``dropout``: ``F.dropout(input, p, train, inplace=True)``."""
    return _F().dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``F.alpha_dropout(input, p, training=train)`` (SELU-preserving dropout)."""
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``alpha_dropout``."""
    return _F().alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``F.feature_alpha_dropout(input, p, training=train)``: whole channels at once."""
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``feature_alpha_dropout``."""
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


def _feature_mask(input: Tensor, p: float, op: str):
    """The kept-and-scaled channel mask of shape (N, C, 1, ..., 1): ``bernoulli(1-p)/(1-p)``."""
    from .. import ops

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
    return ops.creation.factories.bernoulli(keep) / (1.0 - p)


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
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-05,
    cudnn_enabled: bool = True,
) -> Tensor:
    """``F.group_norm``; ``cudnn_enabled`` has no effect on the CPU."""
    return _F().group_norm(input, num_groups, weight, bias, eps)


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
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


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
    return _F().instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def rms_norm(
    input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """``F.rms_norm``."""
    return _F().rms_norm(input, normalized_shape, weight, eps)


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
    return _F().embedding(
        indices, weight, pad, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse
    )


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

    from .. import ops

    modes = ("sum", "mean", "max")
    if mode not in (0, 1, 2) or isinstance(mode, bool):
        raise ValueError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got {mode!r}")
    flat = indices.reshape(-1)  # ATen reads the indices flat, always cut by offsets
    output = _F().embedding_bag(
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
    return _F().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``F.conv2d`` (same signature)."""
    return _F().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``F.conv3d`` (same signature)."""
    return _F().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(
    input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, output_padding=0, groups=1,
    dilation=1,
):  # fmt: skip
    """``F.conv_transpose1d`` (same signature)."""
    return _F().conv_transpose1d(
        input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose2d(
    input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, output_padding=0, groups=1,
    dilation=1,
):  # fmt: skip
    """``F.conv_transpose2d`` (same signature)."""
    return _F().conv_transpose2d(
        input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose3d(
    input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, output_padding=0, groups=1,
    dilation=1,
):  # fmt: skip
    """``F.conv_transpose3d`` (same signature)."""
    return _F().conv_transpose3d(
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
        fn = getattr(_F(), f"conv_transpose{n}d")
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = getattr(_F(), f"conv{n}d")
    return fn(input, weight, bias, stride, padding, dilation, groups)


# -- pooling ---------------------------------------------------------------------------------
def _stride(stride):
    """ATen's default ``stride=[]`` means the kernel size: ``None`` for the functional API."""
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) else stride


def max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``F.max_pool1d`` without ``return_indices`` (``stride=()`` means ``kernel_size``)."""
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``F.max_pool2d`` without ``return_indices`` (``stride=()`` means ``kernel_size``)."""
    return _F().max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``F.max_pool3d`` without ``return_indices`` (``stride=()`` means ``kernel_size``)."""
    return _F().max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(
    input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False
):
    """``(values, indices)`` of ``F.max_pool1d(..., return_indices=True)``."""
    return _F().max_pool1d(
        input, kernel_size, _stride(stride), padding, dilation, ceil_mode, return_indices=True
    )


def avg_pool1d(
    input: Tensor, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True
):
    """``F.avg_pool1d`` (``stride=()`` means ``kernel_size``)."""
    return _F().avg_pool1d(
        input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad
    )


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """``F.adaptive_avg_pool1d``."""
    return _F().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size):
    """``(values, indices)``: torch's top-level form always returns the indices too."""
    return _F().adaptive_max_pool1d(input, output_size, return_indices=True)
