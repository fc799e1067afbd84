"""``tinyattn.nn.init``: in-place parameter initialisers with torch's names and distributions.

Every initialiser fills the tensor under ``no_grad`` and returns it. The
distributions (bounds, standard deviations, fan computations, gains) are
torch's; the random numbers are tinyattn's own stream, not torch's.
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
import warnings

import numpy as np

from ..autograd.grad_mode import no_grad
from ..random import _numpy_generator
from ..random.fill import draw_dtype, fill_normal_, fill_uniform_
from ..tensor_api.tensor import Tensor

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "eye_",
    "dirac_",
    "sparse_",
]


_skipping = [0]  # > 0 inside nn.utils.skip_init: initialisers leave tensors as they are


def _initializer(fn):
    """Mark ``fn`` as an initialiser: inside ``nn.utils.skip_init`` it returns the tensor untouched."""

    @functools.wraps(fn)
    def init_fn(tensor, *args, **kwargs):
        if _skipping[0]:
            return tensor
        return fn(tensor, *args, **kwargs)

    return init_fn


@contextlib.contextmanager
def _skip_init():
    """Within this block every initialiser is a no-op (no values written, no random numbers drawn)."""
    _skipping[0] += 1
    try:
        yield
    finally:
        _skipping[0] -= 1


def _no_op_if_empty(tensor: Tensor) -> bool:
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def _fill(tensor: Tensor, values) -> Tensor:
    with no_grad():
        tensor._data[...] = values
        tensor._bump_version()
    return tensor


def _fill_with(tensor: Tensor, fill, p: float, q: float, generator) -> Tensor:
    """``fill(tensor's array, p, q, rng)`` under ``no_grad``, then bump the tensor's version."""
    with no_grad():
        fill(tensor._data, p, q, _numpy_generator(generator))
        tensor._bump_version()
    return tensor


def _finite(name: str, arg: str, value) -> float:
    """``value`` as a float (a number or a one-element tensor); ValueError naming ``arg``
    for anything else, NaN or infinity."""
    try:
        number = None if isinstance(value, (str, bytes)) else float(value)
    except (TypeError, ValueError, RuntimeError):
        number = None
    if number is None or not math.isfinite(number):
        raise ValueError(f"{name}: {arg} must be a finite real number, got {value!r}")
    return number


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (torch's table).

    linear / conv / sigmoid: 1,  tanh: 5/3,  relu: sqrt(2),
    leaky_relu: sqrt(2 / (1 + slope^2)) (slope defaults to 0.01),  selu: 3/4.
    """
    linear_fns = (
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
    )
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, numbers.Real) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """fan_in = size(1) * receptive field, fan_out = size(0) * receptive field (>= 2-D only)."""
    if tensor.ndim < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
            f"(got shape {list(tensor.shape)})"
        )
    receptive = int(np.prod(tensor.shape[2:])) if tensor.ndim > 2 else 1
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _xavier_std(tensor: Tensor, gain: float) -> float:
    """std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return gain * math.sqrt(2.0 / float(fan_in + fan_out))


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    """std = gain / sqrt(fan), gain = calculate_gain(nonlinearity, a) (He et al., 2015)."""
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


@_initializer
def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b), drawn in the tensor's dtype, in place (one draw per tensor)."""
    a, b = _finite("uniform_", "a", a), _finite("uniform_", "b", b)
    return _fill_with(tensor, fill_uniform_, a, b, generator)


@_initializer
def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2), drawn in the tensor's dtype, in place (one draw per tensor)."""
    mean, std = _finite("normal_", "mean", mean), _finite("normal_", "std", std)
    if std < 0:
        raise ValueError(f"normal_: std must be non-negative, got {std}")
    return _fill_with(tensor, fill_normal_, mean, std, generator)


@_initializer
def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator=None,
) -> Tensor:
    """Fill with N(mean, std^2) restricted to [a, b] (redrawing the values that fall outside)."""
    rng = _numpy_generator(generator)
    n = int(np.prod(tensor.shape))
    dtype = draw_dtype(tensor._data.dtype)
    values = np.empty(0, dtype=dtype)
    lo, hi = (a - mean) / std if std else -np.inf, (b - mean) / std if std else np.inf
    # acceptance rate of the standard-normal draw, bounded below so the loop stays short
    rate = max(0.5 * (math.erf(hi / math.sqrt(2)) - math.erf(lo / math.sqrt(2))), 1e-3)
    while values.size < n:
        draw = rng.standard_normal(int((n - values.size) / rate) + 16, dtype=dtype)
        draw = mean + std * draw
        values = np.concatenate([values, draw[(draw >= a) & (draw <= b)]])
    return _fill(tensor, values[:n].reshape(tuple(tensor.shape)))


@_initializer
def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    return _fill(tensor, val)


@_initializer
def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return _fill(tensor, 1)


@_initializer
def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    return _fill(tensor, 0)


@_initializer
def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    bound = math.sqrt(3.0) * _xavier_std(tensor, gain)  # U(-a, a) has std a / sqrt(3)
    return uniform_(tensor, -bound, bound, generator)


@_initializer
def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    return normal_(tensor, 0.0, _xavier_std(tensor, gain), generator)


@_initializer
def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """U(-bound, bound), bound = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a) (He et al., 2015)."""
    if _no_op_if_empty(tensor):
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


@_initializer
def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """N(0, std^2), std = gain / sqrt(fan), gain = calculate_gain(nonlinearity, a)."""
    if _no_op_if_empty(tensor):
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


@_initializer
def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix times ``gain`` (Saxe et al., 2013).

    The tensor is viewed as ``(rows, cols) = (size(0), numel / rows)``. A standard
    normal matrix (transposed when rows < cols, so it is tall) is QR-factored and
    ``Q`` is multiplied column-wise by ``sign(diag(R))``, which makes ``Q`` Haar
    distributed (Mezzadri, 2007). Then ``W W^T = gain^2 I`` when rows <= cols and
    ``W^T W = gain^2 I`` when rows >= cols.
    """
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flattened = _numpy_generator(generator).standard_normal((rows, cols))
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q = q * np.sign(np.diag(r))  # sign(0) = 0, as torch's d.sign()
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q.reshape(tuple(tensor.shape)))


@_initializer
def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the main diagonal, zeros elsewhere)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tuple(tensor.shape)))


@_initializer
def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3/4/5-D convolution weight with the Dirac delta, per group.

    For each group ``g`` and channel ``d < min(out_channels / groups, in_channels)``,
    ``w[g * out_per_group + d, d, centre...] = 1`` and every other entry is 0, so a
    convolution with this weight copies as many input channels as it can.
    """
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    centre = tuple(s // 2 for s in sizes[2:])
    values = np.zeros(sizes)
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return _fill(tensor, values)


@_initializer
def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fill a 2-D tensor with N(0, std^2), then zero ``ceil(sparsity * rows)`` random rows per column.

    Martens (2010), "Deep learning via Hessian-free optimization". Each column gets
    exactly that many zeros, at positions drawn independently per column.
    """
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tuple(tensor.shape)
    num_zeros = math.ceil(sparsity * rows)
    rng = _numpy_generator(generator)
    values = rng.normal(0.0, std, (rows, cols))
    for col in range(cols):
        values[rng.permutation(rows)[:num_zeros], col] = 0
    return _fill(tensor, values)


# -- torch's deprecated spellings without the trailing underscore -------------------------------
def _deprecated(new_fn):
    old = new_fn.__name__[:-1]

    def fn(*args, **kwargs) -> Tensor:
        warnings.warn(
            f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new_fn.__name__}`.",
            FutureWarning,
            stacklevel=2,
        )
        return new_fn(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = old
    fn.__doc__ = (
        f"Deprecated alias of :func:`{new_fn.__name__}` (warns ``FutureWarning``, as torch)."
    )
    return fn


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
