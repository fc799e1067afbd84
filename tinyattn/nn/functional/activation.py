"""Elementwise activations beyond relu/gelu/tanh/sigmoid (``F.silu``, ``F.elu``, ``F.mish`` ...).

Most are compositions of differentiable ops (``where``, ``exp``, ``tanh`` ...), so their
first and second derivatives come from those ops. The branch each ``where`` selects at a
kink is the one torch's backward takes there (checked against torch 2.13), e.g.
``hardtanh``'s gradient is 0 *at* ``min_val``/``max_val`` and ``leaky_relu``'s is the
slope at 0. ``softplus`` (the threshold switch and a stable log1p) is a ``Function``.

In-place forms (``inplace=True``, ``F.elu_`` ...) compute out of place and ``copy_`` the
result back: autograd records the copy, so gradients flow as torch's do.
"""

from __future__ import annotations

import math

import numpy as np

from ... import ops
from ...core.function import Function
from ...foundations.type_names import type_name
from ...ops.elementwise.arithmetic import where
from ...ops.inplace import check_inplace_allowed
from ...ops.reduce.softmax import _implicit_dim, softmax
from ...random import _numpy_generator
from ...tensor_api.tensor import Tensor

__all__ = [
    "silu",
    "leaky_relu",
    "leaky_relu_",
    "elu",
    "elu_",
    "selu",
    "selu_",
    "celu",
    "celu_",
    "softplus",
    "softsign",
    "mish",
    "hardtanh",
    "hardtanh_",
    "relu6",
    "hardsigmoid",
    "hardswish",
    "logsigmoid",
    "softmin",
    "glu",
    "prelu",
    "threshold",
    "threshold_",
    "softshrink",
    "hardshrink",
    "tanhshrink",
    "rrelu",
    "rrelu_",
    "relu",
    "relu_",
    "gumbel_softmax",
]

# SELU's constants (Klambauer et al. 2017), as torch's.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _check_float(input, op: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type_name(input)}")
    if not input.is_floating_point():
        raise NotImplementedError(
            f'"{op}" not implemented for {input.dtype}: expected a float input'
        )
    return input


def _run(input: Tensor, compute, inplace: bool, op: str) -> Tensor:
    """``compute(input)``, or its result written into ``input`` (a recorded copy) when ``inplace``.

    In place, ``compute`` runs on a clone: the ops it records may save their input, which
    the copy is about to overwrite (torch keeps the original value for the same reason).
    """
    if not inplace:
        return compute(input)
    check_inplace_allowed(input, op)
    return input.copy_(compute(input.clone() if input.requires_grad else input))


# -- softplus: a Function (threshold switch; stable log(1 + e^z)) -----------------------------


class Softplus(Function):
    """y = log(1 + exp(beta x)) / beta,  or y = x where beta x > threshold.

    dx = g * sigmoid(beta x)   (dx = g where beta x > threshold)

    The forward uses the stable ``max(z, 0) + log1p(exp(-|z|))`` (``z = beta x``); the
    backward writes ``sigmoid(z) = (1 + tanh(z / 2)) / 2``, smooth and finite for any z, so
    the second derivative (``beta g sigmoid(z) (1 - sigmoid(z))``) has no overflow either.
    """

    supports_create_graph = True

    @staticmethod
    def forward(ctx, x, beta, threshold):
        z = x * beta
        with np.errstate(over="ignore"):
            soft = (np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))) / beta
        ctx.save_for_backward(x)
        ctx.beta, ctx.threshold = beta, threshold
        return np.where(z > threshold, x, soft).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (x,) = ctx.saved_tensors
        z = x * ctx.beta
        sig = 0.5 * (1 + xp.tanh(0.5 * z))
        return xp.where(z > ctx.threshold, g, g * sig), None, None


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``y = log(1 + exp(beta x)) / beta``, linear (``y = x``) where ``beta x > threshold``.

    Any shape. Gradient: ``d input = g sigmoid(beta x)`` (``g`` above the threshold).
    """
    _check_float(input, "softplus")
    return Softplus.apply(input, float(beta), float(threshold))


def logsigmoid(input: Tensor) -> Tensor:
    """``y = log(sigmoid(x)) = -softplus(-x)``, stable for any x. Any shape.

    Gradient: ``d input = g (1 - sigmoid(x)) = g sigmoid(-x)``.
    """
    _check_float(input, "log_sigmoid")
    return -Softplus.apply(-input, 1.0, math.inf)


# -- smooth activations ------------------------------------------------------------------------


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """SiLU / swish: ``y = x sigmoid(x)``. Any shape.

    Gradient: ``d input = g s (1 + x (1 - s))`` with ``s = sigmoid(x)``.
    """
    _check_float(input, "silu")
    return _run(input, lambda x: x * ops.elementwise.unary.sigmoid(x), inplace, "silu")


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``y = x tanh(softplus(x))``. Any shape.

    Gradient: ``d input = g (t + x sigmoid(x) (1 - t^2))`` with ``t = tanh(softplus(x))``.
    """
    _check_float(input, "mish")
    return _run(
        input,
        lambda x: x * ops.elementwise.unary.tanh(Softplus.apply(x, 1.0, 20.0)),
        inplace,
        "mish",
    )


def softsign(input: Tensor) -> Tensor:
    """``y = x / (1 + |x|)``. Any shape. Gradient: ``d input = g / (1 + |x|)^2``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"softsign(): argument 'input' must be a Tensor, not {type_name(input)}")
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """``y = x - tanh(x)``. Any shape; an integer input gives the default float (as torch).

    Gradient: ``d input = g tanh(x)^2``.
    """
    if not (isinstance(input, Tensor) and input.dtype.np_dtype.kind in "iu"):
        _check_float(input, "tanhshrink")
    return input - ops.elementwise.unary.tanh(input)


def _elu(input: Tensor, alpha: float, scale: float, input_scale: float) -> Tensor:
    """``scale * x`` for ``x > 0``, else ``scale * alpha * (exp(input_scale x) - 1)``.

    The exponential sees ``min(x, 0)`` (through a ``where``, so no overflow where it is
    not used); at ``x = 0`` the negative branch is taken, as torch's backward does.
    """
    positive = input > 0
    negative = where(positive, 0.0, input)
    branch = ops.elementwise.unary.expm1(negative * input_scale) * (alpha * scale)
    return where(positive, input * scale if scale != 1.0 else input, branch)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """ELU: ``y = x`` for ``x > 0``, ``alpha (exp(x) - 1)`` otherwise. Any shape.

    Gradient: ``d input = g`` for ``x > 0``, ``g alpha exp(x)`` for ``x <= 0``.
    """
    _check_float(input, "elu")
    return _run(input, lambda x: _elu(x, float(alpha), 1.0, 1.0), inplace, "elu")


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`elu`. Gradient: ``d input = g`` for ``x > 0``, ``g alpha exp(x)`` else."""
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """SELU: ``y = scale * elu(x, alpha)`` with torch's fixed ``alpha``, ``scale``. Any shape.

    Gradient: ``d input = g scale`` for ``x > 0``, ``g scale alpha exp(x)`` for ``x <= 0``.
    """
    _check_float(input, "selu")
    return _run(input, lambda x: _elu(x, _SELU_ALPHA, _SELU_SCALE, 1.0), inplace, "selu")


def selu_(input: Tensor) -> Tensor:
    """In-place :func:`selu`. Gradient: ``d input = g scale`` (x > 0), ``g scale alpha e^x``."""
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """CELU: ``y = max(0, x) + min(0, alpha (exp(x / alpha) - 1))``. Any shape.

    Gradient: ``d input = g`` for ``x > 0``, ``g exp(x / alpha)`` for ``x <= 0``.
    """
    _check_float(input, "celu")
    if alpha == 0:
        raise RuntimeError("celu: alpha cannot be 0 for CELU (it divides the input)")
    return _run(input, lambda x: _elu(x, float(alpha), 1.0, 1.0 / alpha), inplace, "celu")


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`celu`. Gradient: ``d input = g`` (x > 0), ``g exp(x / alpha)`` else."""
    return celu(input, alpha, inplace=True)


# -- piecewise-linear activations (kinks follow torch's backward) ------------------------------


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``y = x`` for ``x > 0``, ``negative_slope * x`` otherwise. Any shape.

    Gradient: ``d input = g`` for ``x > 0``, ``g negative_slope`` for ``x <= 0`` (at 0 too).
    """
    _check_float(input, "leaky_relu")
    slope = float(negative_slope)
    return _run(input, lambda x: where(x > 0, x, x * slope), inplace, "leaky_relu")


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place :func:`leaky_relu`. Gradient: ``d input = g`` (x > 0), ``g negative_slope``."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """``y = clamp(x, min_val, max_val)``. Any shape.

    Gradient: ``d input = g`` where ``min_val < x < max_val``, 0 elsewhere *including* at
    ``min_val`` and ``max_val`` (torch's rule; ``clamp``'s gradient passes there).
    """
    integer = isinstance(input, Tensor) and input.dtype.np_dtype.kind in "iu"
    if not integer:
        _check_float(input, "hardtanh")
    if min_val > max_val:
        raise ValueError(
            f"hardtanh: min_val cannot be greater than max_val ({min_val} > {max_val})"
        )
    if integer:  # torch clamps integers to the bounds cast to the input's dtype
        if input.dtype.np_dtype.kind == "u" and min_val < 0:
            raise RuntimeError(
                f"hardtanh: cannot clamp an unsigned {input.dtype} input to a negative "
                f"min_val ({min_val})"
            )
        bounds = Tensor._make(np.array([min_val, max_val]).astype(input.dtype.np_dtype))
        return _run(
            input,
            lambda x: ops.elementwise.unary.clamp(x, bounds[0], bounds[1]),
            inplace,
            "hardtanh",
        )
    lo, hi = float(min_val), float(max_val)
    return _run(input, lambda x: _clamp_inside(x, lo, hi), inplace, "hardtanh")


def _clamp_inside(x: Tensor, lo: float, hi: float) -> Tensor:
    """``clamp(x, lo, hi)`` whose gradient passes only strictly inside ``(lo, hi)``.

    A NaN keeps its value (NaN) but gets gradient 0, as torch's ``hardtanh_backward``
    (its ``lo < x < hi`` test is False for NaN).
    """
    outside = where(x <= lo, lo, where(x >= hi, hi, x.detach()))
    return where((x > lo) & (x < hi), x, outside)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place :func:`hardtanh`. Gradient: ``d input = g`` strictly inside the bounds, else 0."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``y = min(max(x, 0), 6)`` (``hardtanh(x, 0, 6)``). Any shape.

    Gradient: ``d input = g`` for ``0 < x < 6``, 0 elsewhere (0 at 0 and at 6, as torch).
    """
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``y = relu6(x + 3) / 6``. Any shape.

    Gradient: ``d input = g / 6`` for ``-3 < x < 3``, 0 elsewhere (0 at ±3, as torch).
    """
    _check_float(input, "hardsigmoid")

    def compute(x):  # (NaN: value NaN, gradient 0, as torch)
        outside = where(x <= -3.0, 0.0, where(x >= 3.0, 1.0, x.detach()))
        return where((x > -3.0) & (x < 3.0), x / 6.0 + 0.5, outside)

    return _run(input, compute, inplace, "hardsigmoid")


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``y = x relu6(x + 3) / 6``. Any shape.

    Gradient (torch's branches): ``d input = 0`` for ``x <= -3``, ``g (2x + 3) / 6`` for
    ``-3 < x < 3``, ``g`` for ``x >= 3``.
    """
    _check_float(input, "hardswish")

    def compute(x):
        # The middle branch sees x only where it is used (an inf there would give a NaN
        # gradient through the unselected branch); NaN takes the x >= 3 branch's gradient
        # and -inf gives NaN (-inf * 0), as torch's x * relu6(x + 3) / 6.
        inside = (x > -3.0) & (x < 3.0)
        middle = where(inside, x, 0.0)
        low = x.detach() * 0.0
        return where(x <= -3.0, low, where(inside, middle * (middle + 3.0) / 6.0, x))

    return _run(input, compute, inplace, "hardswish")


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``y = x`` where ``x > threshold``, else ``value``. Any shape.

    Gradient: ``d input = g`` where ``x > threshold``, 0 elsewhere.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"threshold(): argument 'input' must be a Tensor, not {type_name(input)}")
    filler = ops.creation.factories.full_like(input, value)
    # x <= threshold, not x > threshold: a NaN stays NaN (torch's test), with gradient g
    return _run(input, lambda x: where(x <= threshold, filler, x), inplace, "threshold")


_threshold = threshold  # (threshold_'s argument of the same name hides the function)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`. Gradient: ``d input = g`` where ``x > threshold``, else 0."""
    return _threshold(input, threshold, value, inplace=True)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``y = x - lambd`` (x > lambd), ``x + lambd`` (x < -lambd), 0 otherwise. Any shape.

    Gradient: ``d input = g`` where ``|x| > lambd``, 0 elsewhere (0 at ±lambd, as torch).
    """
    _check_float(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(
            f"softshrink: lambda must be greater or equal to 0, but found to be {lambd}."
        )
    # the dead zone gives x * 0 (constant): a NaN stays NaN with gradient 0, as torch's
    live = (input > lambd) | (input < -lambd)
    return where(live, where(input > 0, input - lambd, input + lambd), input.detach() * 0.0)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``y = x`` where ``|x| > lambd``, 0 otherwise. Any shape.

    Gradient: ``d input = g`` where ``|x| > lambd``, 0 elsewhere (0 at ±lambd, as torch).
    """
    _check_float(input, "hardshrink")
    # the dead zone gives |x| * 0 (constant): +0 as torch's, and a NaN stays NaN with
    # gradient 0, as torch's
    return where((input > lambd) | (input < -lambd), input, input.detach().abs() * 0.0)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``y = x`` for ``x > 0``, ``weight_c x`` otherwise, ``weight`` (C,) or (1,) per channel.

    Shapes: ``input`` (N, C, *) (channels along dim 1; a 0-d or 1-D input has one channel),
    ``weight`` (C,) or (1,). Gradient: ``d input = g`` (x > 0), ``g weight_c`` (x <= 0);
    ``d weight_c = sum of g x over the elements of channel c with x <= 0``.
    """
    _check_float(input, "prelu")
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.numel() not in (1, channels):
        raise RuntimeError(
            f"prelu: Mismatch of parameter numbers and input channel size. Found parameter "
            f"numbers = {weight.numel()} and channel size = {channels} (input shape "
            f"{list(input.shape)}, weight shape {list(weight.shape)})"
        )
    if weight.numel() == 1:
        w = weight.reshape(())
    else:
        w = weight.reshape((channels,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, input * w)


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
    generator=None,
) -> Tensor:
    """Randomised leaky ReLU: ``y = x`` (x > 0), ``a x`` (x <= 0). Any shape.

    Training: one slope ``a ~ U(lower, upper)`` per element; eval: ``a = (lower + upper) / 2``.
    Gradient: ``d input = g`` (x > 0), ``g a`` (x <= 0) with the same slopes.
    """
    _check_float(input, "rrelu")
    if lower > upper:
        raise RuntimeError(
            f"rrelu: Lower bound should be less than or equal to the upper bound "
            f"(lower={lower}, upper={upper})"
        )
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slopes = _numpy_generator(generator).uniform(lower, upper, tuple(input.shape))
    a = Tensor._make(slopes.astype(input._data.dtype))
    return _run(input, lambda x: where(x > 0, x, x * a), inplace, "rrelu")


def rrelu_(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    generator=None,
) -> Tensor:
    """In-place :func:`rrelu`. Gradient: ``d input = g`` (x > 0), ``g a`` (x <= 0)."""
    return rrelu(input, lower, upper, training, inplace=True, generator=generator)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``y = max(x, 0)``, any shape; ``inplace=True`` writes into ``input`` (torch's signature).

    Gradient: ``d input = g * (x > 0)``.
    """
    return input.relu_() if inplace else ops.elementwise.unary.relu(input)


def relu_(input: Tensor) -> Tensor:
    """In-place relu: ``x = max(x, 0)``. Gradient: ``d input = g * (x > 0)``."""
    return input.relu_()


# -- along a dim ---------------------------------------------------------------------------------


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``y = softmax(-x)`` along ``dim``, same shape as ``x``.

    Gradient: ``d input = -y (g - sum(g y))``, the sum along ``dim``.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"softmin(): argument 'input' must be a Tensor, not {type_name(input)}")
    if dim is None:  # (the warning names softmin, as torch's)
        dim = _implicit_dim(input.ndim, "softmin", _stacklevel - 1)
    return softmax(-input, dim, dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: ``a, b`` = the two halves of ``input`` along ``dim``; ``y = a sigmoid(b)``.

    Shapes: ``input`` (*, 2n, *) -> ``y`` (*, n, *). Gradient: ``d a = g sigmoid(b)``,
    ``d b = g a sigmoid(b) (1 - sigmoid(b))``.
    """
    _check_float(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = ops._util.normalize_dim(dim, input.ndim, "glu")
    if input.shape[d] % 2:
        raise RuntimeError(
            f"glu: Halving dimension must be even, but dimension {d} is size {input.shape[d]} "
            f"(input shape {list(input.shape)})"
        )
    a, b = input.chunk(2, d)
    return a * ops.elementwise.unary.sigmoid(b)


def gumbel_softmax(
    logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """Sample from the Gumbel-softmax distribution: ``y = softmax((logits + G) / tau)`` along
    ``dim``, ``G = -log(E)``, ``E ~ Exp(1)`` per element. Same shape as ``logits``.

    ``hard=True`` returns the one-hot of ``argmax(y)`` in the forward with ``y``'s gradient
    (straight-through: ``y_hard - y.detach() + y``). Gradient (soft): ``d logits =
    y (g - sum(g y)) / tau``, the sum along ``dim``; with ``hard`` the same, with ``g`` taken
    at the one-hot output.
    """
    _check_float(logits, "gumbel_softmax")
    rng = _numpy_generator(None)
    gumbels = -np.log(rng.exponential(1.0, tuple(logits.shape)))
    noise = Tensor._make(gumbels.astype(logits._data.dtype))
    y_soft = softmax((logits + noise) / tau, dim)
    if not hard:
        return y_soft
    d = ops._util.normalize_dim(dim, logits.ndim, "gumbel_softmax")
    index = np.argmax(y_soft._data, axis=d)
    one_hot = np.zeros(y_soft._data.shape, dtype=y_soft._data.dtype)
    np.put_along_axis(one_hot, np.expand_dims(index, d), 1.0, axis=d)
    return Tensor._make(one_hot) - y_soft.detach() + y_soft
