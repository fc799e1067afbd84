"""Channel dropout (``F.dropout1d/2d/3d``) and SELU's alpha dropout (``F.alpha_dropout``,
``F.feature_alpha_dropout``), with torch's input-rank rules and warnings.

Channel ("feature") dropout draws one keep/drop per (sample, channel) and broadcasts it
over the spatial dims: a mask of shape (N, C, 1, ...). The plain forms reuse
``DropoutFunction`` (``y = x * m``); the alpha forms are ``y = x * (keep a) + b`` with
torch's constants, composed from tensor ops.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from ...foundations.type_names import type_name
from ...random import _numpy_generator
from ...tensor_api.tensor import Tensor

__all__ = [
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
]

# -SELU's alpha * scale: the value SELU saturates to, which alpha dropout drops to.
_ALPHA = 1.7580993408473766


def _check(input, p, op: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type_name(input)}")
    if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return input


def _keep(shape, p: float) -> np.ndarray:
    """Bernoulli(1 - p) keep flags (as 0.0 / 1.0) of ``shape``."""
    return (_numpy_generator(None).random(shape) >= p).astype(np.float64)


def _feature_shape(shape, batched: bool = True) -> tuple[int, ...]:
    """The mask shape of channel dropout: (N, C, 1, ..., 1), or (C, 1, ..., 1) unbatched."""
    lead = 2 if batched else 1
    return tuple(shape[:lead]) + (1,) * (len(shape) - lead)


def _drop(input: Tensor, p: float, training: bool, inplace: bool, mask_shape) -> Tensor:
    from .basic import DropoutFunction

    if not training or p == 0.0 or input.numel() == 0:
        return input
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    mask = (_keep(mask_shape, p) * scale).astype(input._data.dtype)
    if inplace:
        return input._apply_inplace(DropoutFunction, mask)
    return DropoutFunction.apply(input, mask)


def dropout1d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels: input (N, C, L) or (C, L); each (n, c) row is kept with
    probability ``1 - p`` and scaled by ``1 / (1 - p)`` (training only).

    ``y = x * m``, ``m`` of shape (N, C, 1). Gradient: ``d input = g * m``.
    """
    _check(input, p, "dropout1d")
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input (shape "
            f"{list(input.shape)}). Note that dropout1d exists to provide channel-wise dropout "
            "on inputs with 1 spatial dimension, a channel dimension, and an optional batch "
            "dimension (i.e. 2D or 3D inputs)."
        )
    mask_shape = _feature_shape(input.shape, batched=input.ndim == 3)
    return _drop(input, p, training, inplace, mask_shape)


def dropout2d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of (N, C, H, W): each (n, c) plane is kept with probability
    ``1 - p`` and scaled by ``1 / (1 - p)`` (training only).

    As torch, a 3-D input is read as (N, C, L) (with a warning) and other ranks warn as
    deprecated. ``y = x * m``, ``m`` of shape (N, C, 1, 1). Gradient: ``d input = g * m``.
    """
    _check(input, p, "dropout2d")
    if input.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    if input.ndim < 2 and training and 0.0 < p < 1.0:  # (torch's feature-dropout check)
        raise RuntimeError(
            f"dropout2d: Feature dropout requires at least 2 dimensions in the input, got "
            f"shape {list(input.shape)}"
        )
    mask_shape = _feature_shape(input.shape) if input.ndim >= 2 else tuple(input.shape)
    return _drop(input, p, training, inplace, mask_shape)


def dropout3d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W), kept with probability
    ``1 - p`` and scaled by ``1 / (1 - p)`` (training only).

    ``y = x * m``, ``m`` of shape (N, C, 1, 1, 1). Gradient: ``d input = g * m``.
    """
    _check(input, p, "dropout3d")
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    if input.ndim == 4:  # (C, D, H, W): one flag per channel
        mask_shape = _feature_shape(input.shape, batched=False)
    else:  # (torch reads other ranks as (N, C, *) too)
        mask_shape = _feature_shape(input.shape) if input.ndim >= 2 else tuple(input.shape)
    return _drop(input, p, training, inplace, mask_shape)


def _alpha(input: Tensor, p: float, training: bool, inplace: bool, feature: bool) -> Tensor:
    """``y = x * (keep a) + (keep - 1) alpha a + alpha a p`` (torch's alpha dropout)."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        out = input * 0.0
        return input.copy_(out) if inplace else out
    shape = _feature_shape(input.shape) if feature else tuple(input.shape)
    keep = _keep(shape, p)
    a = 1.0 / np.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    dtype = input._data.dtype
    scale = Tensor._make((keep * a).astype(dtype))
    shift = Tensor._make(((keep - 1) * _ALPHA * a + _ALPHA * a * p).astype(dtype))
    if inplace:
        source = input.clone() if input.requires_grad else input
        return input.copy_(source * scale + shift)
    return input * scale + shift


def alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor:
    """Dropout that keeps SELU's self-normalisation: dropped elements take SELU's
    saturation value, then an affine map restores mean 0 and variance 1 (training only).

    With ``alpha' = 1.7580993408473766`` and ``a = ((alpha'^2 p + 1)(1 - p))^(-1/2)``:
    ``y = a (keep x + (1 - keep)(-alpha')) + a alpha' p``, ``keep ~ Bernoulli(1 - p)`` per
    element. Any shape. Gradient: ``d input = g a keep``.
    """
    _check(input, p, "alpha_dropout")
    return _alpha(input, float(p), training, inplace, feature=False)


def feature_alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor:
    """:func:`alpha_dropout` with one keep/drop per (sample, channel): input (N, C, *),
    the mask (N, C, 1, ...). Gradient: ``d input = g a keep``.
    """
    _check(input, p, "feature_alpha_dropout")
    if input.ndim < 2:
        raise RuntimeError(
            f"feature_alpha_dropout: Feature dropout requires at least 2 dimensions in the "
            f"input, got shape {list(input.shape)}"
        )
    return _alpha(input, float(p), training, inplace, feature=True)
