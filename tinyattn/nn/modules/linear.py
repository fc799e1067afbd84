"""``Linear`` and ``LazyLinear``: y = x W^T + b with torch's parameter names and init."""

from __future__ import annotations

import math

from ...core import _dtype as dt
from ...foundations.type_names import type_name
from ...ops.creation.factories import empty
from ...tensor_api.tensor import Tensor
from .. import functional as F
from .. import init
from .._lazy_buffer import UninitializedBuffer
from ..parameter import Parameter, UninitializedParameter
from ._args import size_arg
from .lazy import LazyModuleMixin
from .module import Module


class Linear(Module):
    """Affine layer ``y = x @ weight.T + bias``: (*, in_features) -> (*, out_features).

    weight: (out_features, in_features) ~ kaiming_uniform(a=sqrt(5)), i.e.
    U(-1/sqrt(in_features), 1/sqrt(in_features)); bias: (out_features,) ~ the same bound.
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__()
        name = type(self).__name__
        in_features = size_arg(name, "in_features", in_features)
        out_features = size_arg(name, "out_features", out_features)
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty((out_features,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        """``y = input @ weight.T + bias``: (*, in_features) -> (*, out_features).

        Gradient (sums over the leading dims)::

            d input = g @ weight,   d weight = sum g^T input,   d bias = sum g

        Example:

        >>> import tinyattn
        >>> tinyattn.manual_seed(0)  # doctest: +ELLIPSIS
        <...>
        >>> layer = tinyattn.nn.Linear(3, 2)
        >>> layer(tinyattn.ones(4, 3)).shape
        tinyattn.Size([4, 2])
        """
        if not isinstance(input, Tensor):
            raise TypeError(f"Linear: input must be a Tensor, got {type_name(input)}")
        x = input._data  # (the array's shape and dtype: no Size or dtype object per check)
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            last = input.shape[-1] if input.ndim else "none (0-d input)"
            raise RuntimeError(
                f"{type(self).__name__}: input has last dimension {last} but "
                f"in_features={self.in_features} (input shape {list(input.shape)})"
            )
        weight = self.weight  # read once: a parametrized weight is recomputed on each read
        if x.dtype != weight._data.dtype:
            raise RuntimeError(
                f"{type(self).__name__}: input dtype {input.dtype} does not match the "
                f"weight dtype {weight.dtype} (convert with .to() on the input or module)"
            )
        return F.linear(input, weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


def _placeholder(dtype: dt.dtype) -> UninitializedParameter:
    """An ``UninitializedParameter`` whose (empty) data has ``dtype``."""
    p = UninitializedParameter()
    p._data = p._data.astype(dtype.np_dtype)
    return p


def _lazy_dtype(module) -> dt.dtype:
    """The dtype a lazy module's checkpoint values are loaded in: its placeholders' (which
    ``module.to(dtype)`` converts, as torch's), else the dtype it was built with."""
    for t in (*module._parameters.values(), *module._buffers.values()):
        if isinstance(t, (UninitializedParameter, UninitializedBuffer)):
            return t.dtype
    return module._lazy_init_dtype


class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` whose ``in_features`` is inferred from the first input.

    The parameters are ``UninitializedParameter`` until the first forward (or
    until a ``state_dict`` is loaded), then materialised and initialised as ``Linear``'s;
    the module then becomes a ``Linear``.
    """

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        Module.__init__(self)
        self.in_features = 0
        # torch accepts a float here and fails at the first forward: refuse it now.
        self.out_features = size_arg("LazyLinear", "out_features", out_features)
        self._lazy_init_dtype = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
        # The placeholders carry the dtype (as torch's do), so ``module.to(dtype)`` before
        # the first forward decides the dtype the parameters are materialised with.
        self.weight = _placeholder(self._lazy_init_dtype)
        if bias:
            self.bias = _placeholder(self._lazy_init_dtype)
        else:
            self.register_parameter("bias", None)

    _dtype = property(_lazy_dtype)  # read by load_state_dict to materialise placeholders

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def _check_lazy_load(self, name: str, shape: tuple[int, ...]) -> str | None:
        """Why a loaded ``name`` of ``shape`` cannot materialise this layer (None if it can)."""
        if name == "weight":
            ok = len(shape) == 2 and shape[0] == self.out_features
            expected = f"[{self.out_features}, in_features]"
        else:
            ok = tuple(shape) == (self.out_features,)
            expected = f"[{self.out_features}]"
        if ok:
            return None
        return (
            f"copying a param with shape {list(shape)} from checkpoint, the shape in current "
            f"model is {expected} (LazyLinear with out_features={self.out_features})."
        )

    def has_uninitialized_params(self) -> bool:
        return any(isinstance(p, UninitializedParameter) for p in self._parameters.values())

    def initialize_parameters(self, input: Tensor) -> None:
        """Materialise weight (out, input.shape[-1]) and bias (out,), then initialise them."""
        if input.ndim == 0:
            raise RuntimeError("LazyLinear: input must have at least 1 dimension, got a 0-d tensor")
        self.in_features = input.shape[-1]
        self.weight.materialize((self.out_features, self.in_features), self.weight.dtype)
        if self.bias is not None:
            self.bias.materialize((self.out_features,), self.bias.dtype)
        self.reset_parameters()

    def forward(self, input: Tensor) -> Tensor:
        """Infer ``in_features`` from the first input, become a :class:`Linear`, apply it.

        ``y = input @ weight.T + bias``; ``d input = g @ weight``, ``d weight = sum g^T input``,
        ``d bias = sum g``, as :meth:`Linear.forward`.
        """
        if self.has_uninitialized_params():
            self.initialize_parameters(input)
        elif self.in_features == 0:  # parameters came from load_state_dict
            self.in_features = self.weight.shape[1]
        del self._lazy_init_dtype
        self.__class__ = Linear
        return Linear.forward(self, input)


def __getattr__(name: str):
    # torch defines NonDynamicallyQuantizableLinear here (programs allowlist it by this
    # path for torch.load); ours lives beside MultiheadAttention, which imports this module.
    if name == "NonDynamicallyQuantizableLinear":
        from .attention import NonDynamicallyQuantizableLinear

        return NonDynamicallyQuantizableLinear
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
