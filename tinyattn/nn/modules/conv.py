"""``Conv1d``, ``Conv2d``, ``Conv3d`` and their lazy forms: torch's parameter names, init and checks."""

from __future__ import annotations

import math

from ...core import _dtype as dt
from ...foundations.type_names import type_name
from ...ops.creation.factories import empty
from ...tensor_api.tensor import Tensor
from .. import init
from ..functional import conv as _conv
from ..functional.sampling_spatial import pad
from ..parameter import Parameter, UninitializedParameter
from ._args import size_arg
from .linear import _lazy_dtype, _placeholder
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "LazyConv1d", "LazyConv2d", "LazyConv3d"]

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """Shared by ``Conv1d`` / ``Conv2d`` / ``Conv3d``: weight (out, in/groups, *kernel), bias (out,).

    Both ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups * prod(kernel) (torch's
    ``kaiming_uniform_(a=sqrt(5))``). ``padding_mode`` other than ``'zeros'`` pads the
    input with ``F.pad(mode=...)`` first.
    """

    _n = 2

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        name, n = type(self).__name__, self._n
        self.in_channels = size_arg(name, "in_channels", in_channels)
        self.out_channels = size_arg(name, "out_channels", out_channels)
        self.groups = size_arg(name, "groups", groups, minimum=1, error=ValueError)
        if self.in_channels % self.groups:
            raise ValueError(f"{name}: in_channels must be divisible by groups")
        if self.out_channels % self.groups:
            raise ValueError(f"{name}: out_channels must be divisible by groups")
        self.kernel_size = _conv._ints(kernel_size, n, "kernel_size", name)
        self.stride = _conv._ints(stride, n, "stride", name)
        self.dilation = _conv._ints(dilation, n, "dilation", name)
        if isinstance(padding, str):
            _conv._padding(padding, self.kernel_size, self.dilation, self.stride, name)
            self.padding = padding
        else:
            self.padding = _conv._ints(padding, n, "padding", name)
        if padding_mode not in PADDING_MODES:
            raise ValueError(
                f"{name}: padding_mode must be one of {list(PADDING_MODES)}, got {padding_mode!r}"
            )
        self.padding_mode = padding_mode
        self._make_parameters(bias, dtype, device)

    def _make_parameters(self, bias: bool, dtype, device) -> None:
        shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        self.weight = Parameter(empty(shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty((self.out_channels,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        """``self._conv_forward(input, self.weight, self.bias)``, as torch's ``forward``:
        subclasses that change the weight (weight standardisation, masks) call
        ``_conv_forward`` with their own.

        Composes: F.pad, F.conv1d, F.conv2d, F.conv3d
        """
        return self._conv_forward(input, self.weight, self.bias)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        """The convolution of ``F.conv1d`` / ``F.conv2d`` / ``F.conv3d`` with ``weight`` and
        ``bias`` and this layer's stride, padding, dilation and groups (after
        ``F.pad(mode=padding_mode)`` for non-zero padding modes)."""
        fn = (_conv.conv1d, _conv.conv2d, _conv.conv3d)[self._n - 1]
        if self.padding_mode == "zeros" or self.padding == "valid":
            return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)
        padded = pad(input, self._pad_widths(), mode=self.padding_mode)
        return fn(padded, weight, bias, self.stride, 0, self.dilation, self.groups)

    def _pad_widths(self) -> list[int]:
        """``F.pad``'s list (last dim first) for a non-zero ``padding_mode``. With
        ``padding='same'`` each dim gets ``dilation * (kernel - 1)`` in total, the smaller
        half on the left, as torch (the input is padded in that mode, not with zeros)."""
        if self.padding == "same":
            widths = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1)
                widths += [total // 2, total - total // 2]
            return widths
        return [p for p in reversed(self.padding) for _ in range(2)]

    def extra_repr(self) -> str:
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """(N, C_in, L) or (C_in, L) -> (N, C_out, L_out): see :func:`tinyattn.nn.functional.conv1d`."""

    _n = 1


class Conv2d(_ConvNd):
    """(N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out): see ``F.conv2d``."""

    _n = 2


class Conv3d(_ConvNd):
    """(N, C_in, D, H, W) or (C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out): see
    ``F.conv3d``."""

    _n = 3


class _LazyConv(_ConvNd):
    """``in_channels`` inferred from the first input; then the module becomes its eager class."""

    _eager: type = Conv2d

    def __init__(
        self,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        self._lazy_init_dtype = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
        # in_channels=groups passes the divisibility check; the real one comes with the input
        super().__init__(groups, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode)  # fmt: skip
        self.in_channels = 0

    _dtype = property(_lazy_dtype)  # read by load_state_dict to materialise placeholders

    def _make_parameters(self, bias: bool, dtype, device) -> None:
        self.weight = _placeholder(self._lazy_init_dtype)
        if bias:
            self.bias = _placeholder(self._lazy_init_dtype)
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def has_uninitialized_params(self) -> bool:
        return any(isinstance(p, UninitializedParameter) for p in self._parameters.values())

    def _check_lazy_load(self, name: str, shape: tuple[int, ...]) -> str | None:
        if name == "weight":
            ok = (
                len(shape) == self._n + 2
                and shape[0] == self.out_channels
                and tuple(shape[2:]) == self.kernel_size
            )
            expected = f"[{self.out_channels}, in_channels/groups, {', '.join(map(str, self.kernel_size))}]"
        else:
            ok = tuple(shape) == (self.out_channels,)
            expected = f"[{self.out_channels}]"
        if ok:
            return None
        return (
            f"copying a param with shape {list(shape)} from checkpoint, the shape in current "
            f"model is {expected} ({type(self).__name__})."
        )

    def initialize_parameters(self, input: Tensor) -> None:
        """Materialise weight and bias from the input's channel count, then initialise them."""
        name = type(self).__name__
        if not isinstance(input, Tensor) or input.ndim not in (self._n + 1, self._n + 2):
            got = list(input.shape) if isinstance(input, Tensor) else type_name(input)
            raise RuntimeError(
                f"{name}: expected a {self._n + 1}D (unbatched) or {self._n + 2}D (batched) "
                f"input, got {got}"
            )
        channels = input.shape[1] if input.ndim == self._n + 2 else input.shape[0]
        if channels % self.groups:
            raise ValueError(f"{name}: in_channels ({channels}) must be divisible by groups")
        self.in_channels = channels
        shape = (self.out_channels, channels // self.groups, *self.kernel_size)
        self.weight.materialize(shape, self.weight.dtype)
        if self.bias is not None:
            self.bias.materialize((self.out_channels,), self.bias.dtype)
        self.reset_parameters()

    def forward(self, input: Tensor) -> Tensor:
        if self.has_uninitialized_params():
            self.initialize_parameters(input)
        elif self.in_channels == 0:  # parameters came from load_state_dict
            self.in_channels = self.weight.shape[1] * self.groups
        del self._lazy_init_dtype
        eager = self._eager
        self.__class__ = eager
        return eager.forward(self, input)


class LazyConv1d(_LazyConv):
    """``Conv1d`` whose ``in_channels`` is inferred from the first input."""

    _n = 1
    _eager = Conv1d


class LazyConv2d(_LazyConv):
    """``Conv2d`` whose ``in_channels`` is inferred from the first input."""

    _n = 2
    _eager = Conv2d


class LazyConv3d(_LazyConv):
    """``Conv3d`` whose ``in_channels`` is inferred from the first input."""

    _n = 3
    _eager = Conv3d


def __getattr__(name: str):
    """torch keeps ``_ConvTransposeNd`` in ``nn.modules.conv``; here it lives beside the
    transposed convolutions (``conv_transpose.py``), which import this module."""
    if name == "_ConvTransposeNd":
        from .conv_transpose import _ConvTransposeNd

        return _ConvTransposeNd
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
