"""``ConvTranspose1d`` / ``2d`` / ``3d``: torch's parameter names, shapes, init and reprs.

weight (in_channels, out_channels / groups, *kernel), bias (out_channels,), both
~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with torch's fan_in of that weight
(``weight.size(1) * prod(kernel)``). ``forward(input, output_size)`` picks the
``output_padding`` that gives ``output_size``, as torch does.
"""

from __future__ import annotations

from ...core import _dtype as dt
from ...foundations.type_names import type_name
from ...ops.creation.factories import empty
from ...tensor_api.tensor import Tensor
from ..functional import conv as _conv
from ..functional.conv_transpose import conv_transpose1d, conv_transpose2d, conv_transpose3d
from ..parameter import Parameter, UninitializedParameter
from .conv import _ConvNd
from .linear import _lazy_dtype, _placeholder

__all__ = [
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
]


class _ConvTransposeNd(_ConvNd):
    """Shared by the transposed convolutions (only ``padding_mode='zeros'``, as in torch)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(
                f'{name}: only "zeros" padding_mode is supported, got {padding_mode!r}'
            )
        if isinstance(padding, str):
            raise ValueError(f"{name}: padding must be an int or a tuple of ints, got {padding!r}")
        self.output_padding = _conv._ints(output_padding, self._n, "output_padding", name)
        self.transposed = True  # (torch's _ConvNd attribute; FLOP counters read it)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)  # fmt: skip

    def _make_parameters(self, bias: bool, dtype, device) -> None:
        shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        self.weight = Parameter(empty(shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty((self.out_channels,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _output_padding(
        self,
        input: Tensor,
        output_size,
        stride,
        padding,
        kernel_size,
        num_spatial_dims: int,
        dilation=None,
    ) -> tuple[int, ...]:
        """The ``output_padding`` that makes the output ``output_size`` (spatial dims, or with
        batch and channel dims in front) for these conv settings; the module's own when None."""
        if output_size is None:
            return self.output_padding
        n, name = num_spatial_dims, type(self).__name__
        dilation = dilation if dilation is not None else (1,) * n
        size = [int(s) for s in output_size]
        if len(size) > n:
            size = size[-n:] if len(size) in (n + 1, n + 2) else size
        if len(size) != n:
            raise ValueError(
                f"{name}: output_size must have {n} or {n + 2} elements, got {list(output_size)}"
            )
        spatial = input.shape[-n:]
        extra = []
        for i in range(n):
            least = ((spatial[i] - 1) * stride[i] - 2 * padding[i]
                     + dilation[i] * (kernel_size[i] - 1) + 1)  # fmt: skip
            most = least + stride[i] - 1
            if not least <= size[i] <= most:
                raise ValueError(
                    f"{name}: requested an output size of {size}, but valid sizes range from "
                    f"{least} to {most} in dim {i} (for an input of {list(input.shape)})"
                )
            extra.append(size[i] - least)
        return tuple(extra)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        """(N, C_in, *) -> (N, C_out, *out): the adjoint of the matching convolution.

        Gradients: ``dx_j = W_j @ unfold(g)_j``, ``dW_j = sum_n x_j unfold(g)_j^T``,
        ``db = sum g`` (see :func:`F.conv_transpose2d`).
        """
        if not isinstance(input, Tensor):
            raise TypeError(
                f"{type(self).__name__}: input must be a Tensor, got {type_name(input)}"
            )
        fn = (conv_transpose1d, conv_transpose2d, conv_transpose3d)[self._n - 1]
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size, self._n, self.dilation
        )
        return fn(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                  self.groups, self.dilation)  # fmt: skip

    def extra_repr(self) -> str:
        n = self._n
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class ConvTranspose1d(_ConvTransposeNd):
    """(N, C_in, L) or (C_in, L) -> (N, C_out, L_out): see ``F.conv_transpose1d``."""

    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """(N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out): see ``F.conv_transpose2d``."""

    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    """(N, C_in, D, H, W) or (C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out): see
    ``F.conv_transpose3d``."""

    _n = 3


class _LazyConvTranspose(_ConvTransposeNd):
    """``in_channels`` inferred from the first input; then the module becomes its eager class."""

    _eager: type = ConvTranspose2d

    def __init__(
        self,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        self._lazy_init_dtype = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
        # in_channels=groups passes the divisibility check; the real one comes with the input
        super().__init__(groups, out_channels, kernel_size, stride, padding, output_padding,
                         groups, bias, dilation, padding_mode)  # fmt: skip
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
        per_group = self.out_channels // self.groups
        if name == "weight":
            ok = (len(shape) == self._n + 2 and shape[1] == per_group
                  and tuple(shape[2:]) == self.kernel_size)  # fmt: skip
            expected = f"[in_channels, {per_group}, {', '.join(map(str, self.kernel_size))}]"
        else:
            ok, expected = tuple(shape) == (self.out_channels,), f"[{self.out_channels}]"
        if ok:
            return None
        return (
            f"copying a param with shape {list(shape)} from checkpoint, the shape in current "
            f"model is {expected} ({type(self).__name__})."
        )

    def initialize_parameters(self, input: Tensor) -> None:
        """Materialise weight (in_channels, out/groups, *kernel) and bias from the input."""
        name, n = type(self).__name__, self._n
        if not isinstance(input, Tensor) or input.ndim not in (n + 1, n + 2):
            got = list(input.shape) if isinstance(input, Tensor) else type_name(input)
            raise RuntimeError(
                f"{name}: expected a {n + 1}D (unbatched) or {n + 2}D (batched) input, got {got}"
            )
        channels = input.shape[1] if input.ndim == n + 2 else input.shape[0]
        if channels % self.groups:
            raise ValueError(f"{name}: in_channels ({channels}) must be divisible by groups")
        self.in_channels = channels
        shape = (channels, self.out_channels // self.groups, *self.kernel_size)
        self.weight.materialize(shape, self.weight.dtype)
        if self.bias is not None:
            self.bias.materialize((self.out_channels,), self.bias.dtype)
        self.reset_parameters()

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        """Infers ``in_channels`` on the first call, then runs (and becomes) the eager layer.

        Composes: F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d
        """
        if self.has_uninitialized_params():
            self.initialize_parameters(input)
        elif self.in_channels == 0:  # parameters came from load_state_dict
            self.in_channels = self.weight.shape[0]
        del self._lazy_init_dtype
        eager = self._eager
        self.__class__ = eager
        return eager.forward(self, input, output_size)


class LazyConvTranspose1d(_LazyConvTranspose):
    """``ConvTranspose1d`` whose ``in_channels`` is inferred from the first input."""

    _n = 1
    _eager = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose):
    """``ConvTranspose2d`` whose ``in_channels`` is inferred from the first input."""

    _n = 2
    _eager = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose):
    """``ConvTranspose3d`` whose ``in_channels`` is inferred from the first input."""

    _n = 3
    _eager = ConvTranspose3d
