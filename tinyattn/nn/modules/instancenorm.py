"""``InstanceNorm1d`` / ``2d`` / ``3d``: each (n, c) map normalised on its own.

torch's defaults: ``affine=False``, ``track_running_stats=False``; with running stats, eval
mode normalises with them (``num_batches_tracked`` exists but is not counted, as in torch).
"""

from __future__ import annotations

import warnings

from ...tensor_api.tensor import Tensor
from ..functional.norm_group import instance_norm
from .batchnorm import _BatchNorm, _LazyBatchNorm

__all__ = [
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
]


class _InstanceNorm(_BatchNorm):
    """Shared by the instance-norm layers: ``_dims`` = (unbatched rank, batched rank)."""

    _dims = (2, 3)
    _is_instance_norm = True  # (a _BatchNorm here, not in torch: SyncBatchNorm skips it)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, input: Tensor) -> Tensor:
        """(N, C, *) or unbatched (C, *) -> same shape: ``y = (x - mean) / sqrt(var + eps)``
        per map (then ``* weight + bias``); gradient as :func:`F.instance_norm`'s."""
        self._check_input_dim(input)
        unbatched = input.dim() == self._get_no_batch_dim()
        channels = input.shape[0 if unbatched else 1]
        if channels != self.num_features:
            if self.affine:
                raise ValueError(
                    f"{type(self).__name__}: expected input's size at dim="
                    f"{0 if unbatched else 1} to match num_features ({self.num_features}), "
                    f"but got: {channels}."
                )
            warnings.warn(
                "input's size at dim=1 does not match num_features. You can silence this "
                "warning by not passing in num_features, which is not used because affine=False",
                stacklevel=2,
            )
        if unbatched:
            return self._handle_no_batch_input(input)
        return self._apply_instance_norm(input)

    def _get_no_batch_dim(self) -> int:
        """The rank of an unbatched input: (C, L) 2, (C, H, W) 3, (C, D, H, W) 4."""
        return self._dims[0]

    def _handle_no_batch_input(self, input: Tensor) -> Tensor:
        """An unbatched input normalised as a batch of one."""
        return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)

    def _apply_instance_norm(self, input: Tensor) -> Tensor:
        """:func:`F.instance_norm` of a batched input with this layer's state."""
        return instance_norm(
            input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )


class InstanceNorm1d(_InstanceNorm):
    """Over (N, C, L) or (C, L) input: each (n, c) signal normalised over L."""

    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Over (N, C, H, W) or (C, H, W) input: each (n, c) map normalised over H, W."""

    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Over (N, C, D, H, W) or (C, D, H, W) input: each (n, c) volume normalised over D, H, W."""

    _dims = (4, 5)


class _LazyInstanceNorm(_LazyBatchNorm):
    """``num_features`` inferred from the first input's channel dim (dim 0 when unbatched);
    then the eager class. torch's lazy defaults: ``affine=True``, ``track_running_stats=True``."""

    def _features(self, input: Tensor) -> int:
        return input.shape[0 if input.ndim == self._dims[0] else 1]

    # torch's lazy instance norms are instance norms: the same steps, for subclasses to call
    _get_no_batch_dim = _InstanceNorm._get_no_batch_dim
    _handle_no_batch_input = _InstanceNorm._handle_no_batch_input
    _apply_instance_norm = _InstanceNorm._apply_instance_norm


class LazyInstanceNorm1d(_LazyInstanceNorm):
    """``InstanceNorm1d`` whose ``num_features`` is inferred from the first input."""

    _dims = (2, 3)
    _eager = InstanceNorm1d


class LazyInstanceNorm2d(_LazyInstanceNorm):
    """``InstanceNorm2d`` whose ``num_features`` is inferred from the first input."""

    _dims = (3, 4)
    _eager = InstanceNorm2d


class LazyInstanceNorm3d(_LazyInstanceNorm):
    """``InstanceNorm3d`` whose ``num_features`` is inferred from the first input."""

    _dims = (4, 5)
    _eager = InstanceNorm3d
