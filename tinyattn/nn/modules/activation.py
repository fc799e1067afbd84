"""Activation modules: the elementwise ones (ReLU, GELU, SiLU, LeakyReLU, ELU, ..., PReLU,
RReLU) and softmax, thin over ``F``; attention lives in attention.py.

Constructor arguments, attribute names and ``extra_repr`` strings are torch's, so
``print(model)`` reads the same.
"""

from __future__ import annotations

import warnings

from ...ops.creation.factories import empty
from ...tensor_api.tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class ReLU(Module):
    """max(x, 0) elementwise."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """``y = max(x, 0)``, any shape (in place with ``inplace=True``). ``dx = g * (x > 0)``."""
        return input.relu_() if self.inplace else F.relu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x * Phi(x) (``approximate='none'``) or its tanh approximation (``'tanh'``)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        """``y = x Phi(x)`` (or the tanh approximation), any shape; see :func:`F.gelu`.

        ``dx = g (Phi(x) + x phi(x))``, ``Phi``/``phi`` the standard normal CDF/density.
        """
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """tanh elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """``y = tanh(x)``, any shape. ``dx = g (1 - y^2)``."""
        return F.tanh(input)


class Sigmoid(Module):
    """1 / (1 + exp(-x)) elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """``y = 1 / (1 + exp(-x))``, any shape. ``dx = g y (1 - y)``."""
        return F.sigmoid(input)


class Softmax(Module):
    """exp(x) normalised to sum to 1 along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """``y = exp(x) / sum(exp(x))`` along ``self.dim``, same shape as ``x``.

        ``dx = y (g - sum(g y))``, the sum along ``self.dim``.
        """
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along ``dim``, computed stably."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """``y = x - logsumexp(x)`` along ``self.dim``, same shape as ``x``.

        ``dx = g - exp(y) sum(g)``, the sum along ``self.dim``.
        """
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


def __getattr__(name: str):
    # torch defines MultiheadAttention here (programs allowlist it by this path for
    # torch.load); ours lives in attention.py.
    if name == "MultiheadAttention":
        from .attention import MultiheadAttention

        return MultiheadAttention
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _inplace_suffix(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class _Inplace(Module):
    """A module whose only option is ``inplace`` (shown in its repr when True)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class SiLU(_Inplace):
    """``x * sigmoid(x)`` elementwise (swish)."""

    def forward(self, input: Tensor) -> Tensor:
        """``y = x s``, ``s = sigmoid(x)``, any shape. ``dx = g s (1 + x (1 - s))``."""
        return F.silu(input, inplace=self.inplace)


class Mish(_Inplace):
    """``x * tanh(softplus(x))`` elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """``y = x t``, ``t = tanh(softplus(x))``. ``dx = g (t + x sigmoid(x) (1 - t^2))``."""
        return F.mish(input, inplace=self.inplace)


class SELU(_Inplace):
    """``scale * elu(x, alpha)`` with the fixed self-normalising constants."""

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.selu`. ``dx = g scale`` (x > 0), ``g scale alpha exp(x)`` (x <= 0)."""
        return F.selu(input, inplace=self.inplace)


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6`` elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.hardsigmoid`. ``dx = g / 6`` for ``-3 < x < 3``, else 0."""
        return F.hardsigmoid(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return ""  # torch shows no inplace flag here


class Hardswish(_Inplace):
    """``x relu6(x + 3) / 6`` elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.hardswish`. ``dx = g (2x + 3) / 6`` on (-3, 3), ``g`` above, 0 below."""
        return F.hardswish(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return ""  # torch shows no inplace flag here


class LeakyReLU(Module):
    """``x`` for ``x > 0``, ``negative_slope * x`` otherwise."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.leaky_relu`. ``dx = g`` (x > 0), ``g negative_slope`` (x <= 0)."""
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_suffix(self.inplace)}"


class ELU(Module):
    """``x`` for ``x > 0``, ``alpha (exp(x) - 1)`` otherwise."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.elu`. ``dx = g`` (x > 0), ``g alpha exp(x)`` (x <= 0)."""
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_suffix(self.inplace)}"


class CELU(ELU):
    """``max(0, x) + min(0, alpha (exp(x / alpha) - 1))``."""

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.celu`. ``dx = g`` (x > 0), ``g exp(x / alpha)`` (x <= 0)."""
        return F.celu(input, self.alpha, self.inplace)


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.softplus`. ``dx = g sigmoid(beta x)`` (``g`` above the threshold)."""
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softsign(Module):
    """``x / (1 + |x|)`` elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.softsign`. ``dx = g / (1 + |x|)^2``."""
        return F.softsign(input)


class LogSigmoid(Module):
    """``log(sigmoid(x))`` elementwise, stable."""

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.logsigmoid`. ``dx = g sigmoid(-x)``."""
        return F.logsigmoid(input)


class Tanhshrink(Module):
    """``x - tanh(x)`` elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.tanhshrink`. ``dx = g tanh(x)^2``."""
        return F.tanhshrink(input)


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)``; gradient 0 at and outside the bounds."""

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ) -> None:
        super().__init__()
        if min_value is not None or max_value is not None:
            warnings.warn(
                "keyword argument `min_value`/`max_value` is deprecated and will be removed in "
                "future releases, please use `min_val`/`max_val` instead.",
                FutureWarning,
                stacklevel=2,
            )
            min_val = min_val if min_value is None else min_value
            max_val = max_val if max_value is None else max_value
        if min_val > max_val:
            raise ValueError(
                f"Hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})"
            )
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.hardtanh`. ``dx = g`` strictly between the bounds, 0 elsewhere."""
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_suffix(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)`` (``Hardtanh(0, 6)``)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.relu6`. ``dx = g`` for ``0 < x < 6``, 0 elsewhere."""
        return F.relu6(input, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.threshold`. ``dx = g`` where ``x > threshold``, 0 elsewhere."""
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_suffix(self.inplace)}"


class Softshrink(Module):
    """``x - lambd`` (x > lambd), ``x + lambd`` (x < -lambd), else 0."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.softshrink`. ``dx = g`` where ``|x| > lambd``, 0 elsewhere."""
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """``x`` where ``|x| > lambd``, else 0."""

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.hardshrink`. ``dx = g`` where ``|x| > lambd``, 0 elsewhere."""
        return F.hardshrink(input, self.lambd)


class Softmin(Module):
    """``softmax(-x)`` along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """``y = softmax(-x)`` along ``self.dim``. ``dx = -y (g - sum(g y))``."""
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels at every spatial location: (N, C, H, W) or (C, H, W)."""

    def forward(self, input: Tensor) -> Tensor:
        """``y = softmax(x)`` along dim -3. ``dx = y (g - sum(g y))``, the sum over channels."""
        if input.ndim not in (3, 4):
            raise ValueError(
                f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead "
                f"(shape {list(input.shape)})"
            )
        return F.softmax(input, -3)


class GLU(Module):
    """Gated linear unit: halves ``a, b`` of the input along ``dim``, ``a * sigmoid(b)``."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.glu`. ``d a = g sigmoid(b)``, ``d b = g a sigmoid(b) (1 - sigmoid(b))``."""
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """``x`` for ``x > 0``, ``weight_c x`` otherwise; ``weight`` (num_parameters,) = ``init``."""

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None
    ) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty((num_parameters,), dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.prelu`. ``dx = g`` (x > 0), ``g weight_c`` (x <= 0);
        ``d weight_c = sum of g x over channel c where x <= 0``.
        """
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomised leaky ReLU: slope ~ U(lower, upper) in training, the mean slope in eval."""

    def __init__(
        self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False
    ) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """See :func:`F.rrelu`. ``dx = g`` (x > 0), ``g a`` (x <= 0) with the slopes ``a`` used."""
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_suffix(self.inplace)}"
