"""``torch.<op>_(input)``: the in-place forms torch also exposes at top level, and a few
top-level forms of Tensor queries (``get_device``, ``is_inference``, ``isposinf`` ...).

``torch.exp_(x)`` is ``x.exp_()``; each function here forwards to the Tensor method
(which records the in-place op for autograd, bumps the version and handles views).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.tensor import Tensor

__all__ = [
    "get_device",
    "is_inference",
    "resize_as_",
    "abs_",
    "acos_",
    "acosh_",
    "arccos_",
    "arccosh_",
    "arcsin_",
    "arcsinh_",
    "arctan_",
    "arctanh_",
    "asin_",
    "asinh_",
    "atan_",
    "atanh_",
    "ceil_",
    "cos_",
    "cosh_",
    "deg2rad_",
    "detach_",
    "erf_",
    "erfc_",
    "exp2_",
    "exp_",
    "expm1_",
    "fix_",
    "floor_",
    "frac_",
    "i0_",
    "log10_",
    "log1p_",
    "log2_",
    "log_",
    "neg_",
    "negative_",
    "rad2deg_",
    "reciprocal_",
    "rsqrt_",
    "sigmoid_",
    "sin_",
    "sinc_",
    "sinh_",
    "sqrt_",
    "square_",
    "tan_",
    "tanh_",
    "trunc_",
    "zero_",
    "clamp_",
    "clip_",
    "clamp_max_",
    "clamp_min_",
    "fill_",
    "index_put_",
    "logit_",
    "nan_to_num_",
    "round_",
    "xlogy_",
    "fill",
]


def abs_(input: Tensor) -> Tensor:
    """``input.abs_()``."""
    return input.abs_()


def acos_(input: Tensor) -> Tensor:
    """``input.acos_()``."""
    return input.acos_()


def acosh_(input: Tensor) -> Tensor:
    """``input.acosh_()``."""
    return input.acosh_()


def arccos_(input: Tensor) -> Tensor:
    """``input.arccos_()``."""
    return input.arccos_()


def arccosh_(input: Tensor) -> Tensor:
    """``input.arccosh_()``."""
    return input.arccosh_()


def arcsin_(input: Tensor) -> Tensor:
    """``input.arcsin_()``."""
    return input.arcsin_()


def arcsinh_(input: Tensor) -> Tensor:
    """``input.arcsinh_()``."""
    return input.arcsinh_()


def arctan_(input: Tensor) -> Tensor:
    """``input.arctan_()``."""
    return input.arctan_()


def arctanh_(input: Tensor) -> Tensor:
    """``input.arctanh_()``."""
    return input.arctanh_()


def asin_(input: Tensor) -> Tensor:
    """``input.asin_()``."""
    return input.asin_()


def asinh_(input: Tensor) -> Tensor:
    """``input.asinh_()``."""
    return input.asinh_()


def atan_(input: Tensor) -> Tensor:
    """``input.atan_()``."""
    return input.atan_()


def atanh_(input: Tensor) -> Tensor:
    """``input.atanh_()``."""
    return input.atanh_()


def ceil_(input: Tensor) -> Tensor:
    """``input.ceil_()``."""
    return input.ceil_()


def cos_(input: Tensor) -> Tensor:
    """``input.cos_()``."""
    return input.cos_()


def cosh_(input: Tensor) -> Tensor:
    """``input.cosh_()``."""
    return input.cosh_()


def deg2rad_(input: Tensor) -> Tensor:
    """``input.deg2rad_()``."""
    return input.deg2rad_()


def detach_(input: Tensor) -> Tensor:
    """``input.detach_()``."""
    return input.detach_()


def erf_(input: Tensor) -> Tensor:
    """``input.erf_()``."""
    return input.erf_()


def erfc_(input: Tensor) -> Tensor:
    """``input.erfc_()``."""
    return input.erfc_()


def exp2_(input: Tensor) -> Tensor:
    """``input.exp2_()``."""
    return input.exp2_()


def exp_(input: Tensor) -> Tensor:
    """``input.exp_()``."""
    return input.exp_()


def expm1_(input: Tensor) -> Tensor:
    """``input.expm1_()``."""
    return input.expm1_()


def fix_(input: Tensor) -> Tensor:
    """``input.fix_()``."""
    return input.fix_()


def floor_(input: Tensor) -> Tensor:
    """``input.floor_()``."""
    return input.floor_()


def frac_(input: Tensor) -> Tensor:
    """``input.frac_()``."""
    return input.frac_()


def i0_(input: Tensor) -> Tensor:
    """``input.i0_()``."""
    return input.i0_()


def log10_(input: Tensor) -> Tensor:
    """``input.log10_()``."""
    return input.log10_()


def log1p_(input: Tensor) -> Tensor:
    """``input.log1p_()``."""
    return input.log1p_()


def log2_(input: Tensor) -> Tensor:
    """``input.log2_()``."""
    return input.log2_()


def log_(input: Tensor) -> Tensor:
    """``input.log_()``."""
    return input.log_()


def neg_(input: Tensor) -> Tensor:
    """``input.neg_()``."""
    return input.neg_()


def negative_(input: Tensor) -> Tensor:
    """``input.negative_()``."""
    return input.negative_()


def rad2deg_(input: Tensor) -> Tensor:
    """``input.rad2deg_()``."""
    return input.rad2deg_()


def reciprocal_(input: Tensor) -> Tensor:
    """``input.reciprocal_()``."""
    return input.reciprocal_()


def rsqrt_(input: Tensor) -> Tensor:
    """``input.rsqrt_()``."""
    return input.rsqrt_()


def sigmoid_(input: Tensor) -> Tensor:
    """``input.sigmoid_()``."""
    return input.sigmoid_()


def sin_(input: Tensor) -> Tensor:
    """``input.sin_()``."""
    return input.sin_()


def sinc_(input: Tensor) -> Tensor:
    """``input.sinc_()``."""
    return input.sinc_()


def sinh_(input: Tensor) -> Tensor:
    """``input.sinh_()``."""
    return input.sinh_()


def sqrt_(input: Tensor) -> Tensor:
    """``input.sqrt_()``."""
    return input.sqrt_()


def square_(input: Tensor) -> Tensor:
    """``input.square_()``."""
    return input.square_()


def tan_(input: Tensor) -> Tensor:
    """``input.tan_()``."""
    return input.tan_()


def tanh_(input: Tensor) -> Tensor:
    """``input.tanh_()``."""
    return input.tanh_()


def trunc_(input: Tensor) -> Tensor:
    """``input.trunc_()``."""
    return input.trunc_()


def zero_(input: Tensor) -> Tensor:
    """``input.zero_()``."""
    return input.zero_()


def clamp_(input: Tensor, min=None, max=None) -> Tensor:
    """``input.clamp_(...)``."""
    return input.clamp_(min, max)


def clip_(input: Tensor, min=None, max=None) -> Tensor:
    """``input.clip_(...)``."""
    return input.clip_(min, max)


def clamp_max_(input: Tensor, max) -> Tensor:
    """``input.clamp_max_(...)``."""
    return input.clamp_max_(max)


def clamp_min_(input: Tensor, min) -> Tensor:
    """``input.clamp_min_(...)``."""
    return input.clamp_min_(min)


def fill_(input: Tensor, value) -> Tensor:
    """``input.fill_(...)``."""
    return input.fill_(value)


def index_put_(input: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """``input.index_put_(...)``."""
    return input.index_put_(indices, values, accumulate)


def logit_(input: Tensor, eps: float | None = None) -> Tensor:
    """``input.logit_(...)``."""
    return input.logit_(eps)


def nan_to_num_(input: Tensor, nan: float | None = None, posinf=None, neginf=None) -> Tensor:
    """``input.nan_to_num_(...)``."""
    return input.nan_to_num_(0.0 if nan is None else nan, posinf, neginf)


def round_(input: Tensor, *, decimals: int = 0) -> Tensor:
    """``input.round_(...)``."""
    return input.round_(decimals=decimals)


def xlogy_(input: Tensor, other) -> Tensor:
    """``input.xlogy_(...)``."""
    return input.xlogy_(other)


def fill(input: Tensor, value) -> Tensor:
    """A new tensor like ``input`` holding ``value`` everywhere: ``input.clone().fill_(value)``.

    Gradient: none to ``input`` (its values are all replaced); a 0-d tensor ``value``
    gets the sum of the upstream gradient, as in torch.
    """
    return input.clone().fill_(value)


def get_device(input: Tensor) -> int:
    """``input.get_device()``: -1 (the CPU)."""
    return input.get_device()


def is_inference(input: Tensor) -> bool:
    """``input.is_inference()``: False (tinyattn makes no inference tensors)."""
    return input.is_inference()


def resize_as_(input: Tensor, the_template: Tensor, *, memory_format=None) -> Tensor:
    """``input.resize_as_(the_template)``."""
    return input.resize_as_(the_template)
