"""``BatchNorm1d`` / ``2d`` / ``3d`` and ``LazyBatchNorm1d`` / ``2d`` / ``3d``: torch's
parameters (``weight``, ``bias``), buffers (``running_mean``, ``running_var``,
``num_batches_tracked``) and train/eval behaviour."""

from __future__ import annotations

from ...core import _dtype as dt
from ...foundations.type_names import type_name
from ...ops.creation.factories import ones, tensor, zeros
from ...tensor_api.tensor import Tensor
from .. import init
from .._lazy_buffer import UninitializedBuffer
from ..functional.norm_batch import batch_norm
from ..parameter import Parameter, UninitializedParameter
from ._args import size_arg
from .linear import _lazy_dtype, _placeholder
from .module import Module

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "SyncBatchNorm",
]


class _BatchNorm(Module):
    """Shared by the batch-norm layers; ``_dims`` are the accepted input ranks.

    ``momentum=None`` averages every batch seen equally (factor ``1 / num_batches_tracked``).
    ``track_running_stats=False``: no buffers, batch statistics in eval mode too.
    """

    _dims: tuple[int, ...] = (2, 3)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.use_bias = bias and affine  # torch shows bias=False without affine
        self.num_features = size_arg(type(self).__name__, "num_features", num_features)
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        self._make_state(dtype)
        self.reset_parameters()

    def _make_state(self, dtype) -> None:
        c = self.num_features
        if self.affine:
            self.weight = Parameter(ones(c, dtype=dtype))
            if self.use_bias:
                self.bias = Parameter(zeros(c, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if self.track_running_stats:
            self.register_buffer("running_mean", zeros(c, dtype=dtype))
            self.register_buffer("running_var", ones(c, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dt.int64))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean._data[...] = 0
            self.running_var._data[...] = 1
            self.num_batches_tracked._data[...] = 0

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        if not isinstance(input, Tensor):
            raise TypeError(
                f"{type(self).__name__}: input must be a Tensor, got {type_name(input)}"
            )
        if input.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(
                f"{type(self).__name__}: expected {want} input (got {input.ndim}D input)"
            )

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked._data[...] += 1
            self.num_batches_tracked._bump_version()
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return batch_norm(
            input,
            self.running_mean if keep else None,
            self.running_var if keep else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.use_bias}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Over (N, C) or (N, C, L) input, per channel C."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Over (N, C, H, W) input, per channel C."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Over (N, C, D, H, W) input, per channel C."""

    _dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """Over (N, C, *) input, per channel C. tinyattn runs one process, so the statistics are
    this batch's: it is ``BatchNorm1d`` / ``2d`` / ``3d`` for every rank >= 2 (as torch's
    SyncBatchNorm outside a process group). ``process_group`` is kept, unused."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group=None,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if not isinstance(input, Tensor):
            raise TypeError(f"SyncBatchNorm: input must be a Tensor, got {type_name(input)}")
        if input.ndim < 2:
            raise ValueError(f"SyncBatchNorm: expected at least 2D input (got {input.ndim}D input)")

    def _check_non_zero_input_channels(self, input: Tensor) -> None:
        """``ValueError`` for an input with no channels (dim 1 of size 0), as torch."""
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input: Tensor) -> Tensor:
        """Batch norm over every dim but 1 (one process: the local batch is the batch).

        Composes: F.batch_norm
        """
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """``module`` with every batch-norm layer in it replaced by a ``SyncBatchNorm`` that
        shares its parameters and buffers (instance norms are left alone, as in torch)."""
        out = module
        if isinstance(module, _BatchNorm) and not getattr(module, "_is_instance_norm", False):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group, bias=module.use_bias)  # fmt: skip
            for name in ("weight", "bias"):
                if module._parameters.get(name) is not None:
                    out._parameters[name] = module._parameters[name]
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                out._buffers[name] = module._buffers.get(name)
            out.training = module.training
        for name, child in module._modules.items():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class _LazyBatchNorm(_BatchNorm):
    """``num_features`` inferred from the first input's dim 1; then the eager class."""

    _eager: type = BatchNorm1d

    def __init__(
        self,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        self._lazy_init_dtype = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
        super().__init__(0, eps, momentum, affine, track_running_stats, bias=bias)

    _dtype = property(_lazy_dtype)  # read by load_state_dict to materialise placeholders

    def _make_state(self, dtype) -> None:
        names = (("weight", "bias") if self.use_bias else ("weight",)) if self.affine else ()
        for name in ("weight", "bias"):
            self.register_parameter(
                name, _placeholder(self._lazy_init_dtype) if name in names else None
            )
        if self.track_running_stats:
            for name in ("running_mean", "running_var"):
                self.register_buffer(name, UninitializedBuffer(dtype=self._lazy_init_dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dt.int64))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def has_uninitialized_params(self) -> bool:
        stores = (*self._parameters.values(), *self._buffers.values())
        return any(isinstance(t, (UninitializedParameter, UninitializedBuffer)) for t in stores)

    def reset_parameters(self) -> None:
        if self.num_features != 0 and not self.has_uninitialized_params():
            super().reset_parameters()

    def _check_lazy_load(self, name: str, shape: tuple[int, ...]) -> str | None:
        if len(shape) == 1:
            return None
        return (
            f"copying a param with shape {list(shape)} from checkpoint, expected "
            f"[num_features] ({type(self).__name__})."
        )

    def _features(self, input: Tensor) -> int:
        """The input's channel count (dim 1)."""
        return input.shape[1]

    def initialize_parameters(self, input: Tensor) -> None:
        """Materialise the parameters and buffers with ``num_features = input.shape[1]``."""
        self._check_input_dim(input)
        self.num_features = c = self._features(input)
        for store in (self._parameters, self._buffers):
            for t in store.values():
                if isinstance(t, (UninitializedParameter, UninitializedBuffer)):
                    t.materialize((c,), dtype=t.dtype)
        self.reset_parameters()

    def forward(self, input: Tensor) -> Tensor:
        if self.has_uninitialized_params():
            self.initialize_parameters(input)
        else:
            self.num_features = (
                self.running_mean.shape[0]
                if self.track_running_stats
                else (self.weight.shape[0] if self.affine else self._features(input))
            )
        for name in ("running_mean", "running_var"):  # buffers are plain tensors, not Parameters
            t = self._buffers.get(name)
            if isinstance(t, Parameter):
                self._buffers[name] = Tensor._make(t._data)
        del self._lazy_init_dtype
        eager = self._eager
        self.__class__ = eager
        return eager.forward(self, input)


class LazyBatchNorm1d(_LazyBatchNorm):
    """``BatchNorm1d`` whose ``num_features`` is inferred from the first input."""

    _dims = (2, 3)
    _eager = BatchNorm1d


class LazyBatchNorm2d(_LazyBatchNorm):
    """``BatchNorm2d`` whose ``num_features`` is inferred from the first input."""

    _dims = (4,)
    _eager = BatchNorm2d


class LazyBatchNorm3d(_LazyBatchNorm):
    """``BatchNorm3d`` whose ``num_features`` is inferred from the first input."""

    _dims = (5,)
    _eager = BatchNorm3d


# torch's common base of the batch and instance norms, and of their lazy forms: here the
# batch-norm classes play both parts (every tinyattn norm layer derives from them), so
# ``isinstance(m, _NormBase)`` answers as torch's.
_NormBase = _BatchNorm
_LazyNormBase = _LazyBatchNorm
