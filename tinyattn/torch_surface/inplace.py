"""``torch.<op>_(input)``: the in-place forms torch also exposes at top level, and a few
top-level forms of Tensor queries (``get_device``, ``is_inference``, ``isposinf`` ...).

``torch.exp_(x)`` is ``x.exp_()``; each function here forwards to the Tensor method
(which records the in-place op for autograd, bumps the version and handles views).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.tensor_base import TensorBase

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


def abs_(input: TensorBase) -> TensorBase:
    """``input.abs_()``."""
    return input.abs_()


def acos_(input: TensorBase) -> TensorBase:
    """``input.acos_()``."""
    return input.acos_()


def acosh_(input: TensorBase) -> TensorBase:
    """``input.acosh_()``."""
    return input.acosh_()


def arccos_(input: TensorBase) -> TensorBase:
    """``input.arccos_()``."""
    return input.arccos_()


def arccosh_(input: TensorBase) -> TensorBase:
    """``input.arccosh_()``."""
    return input.arccosh_()


def arcsin_(input: TensorBase) -> TensorBase:
    """``input.arcsin_()``."""
    return input.arcsin_()


def arcsinh_(input: TensorBase) -> TensorBase:
    """``input.arcsinh_()``."""
    return input.arcsinh_()


def arctan_(input: TensorBase) -> TensorBase:
    """``input.arctan_()``."""
    return input.arctan_()


def arctanh_(input: TensorBase) -> TensorBase:
    """``input.arctanh_()``."""
    return input.arctanh_()


def asin_(input: TensorBase) -> TensorBase:
    """``input.asin_()``."""
    return input.asin_()


def asinh_(input: TensorBase) -> TensorBase:
    """``input.asinh_()``."""
    return input.asinh_()


def atan_(input: TensorBase) -> TensorBase:
    """``input.atan_()``."""
    return input.atan_()


def atanh_(input: TensorBase) -> TensorBase:
    """``input.atanh_()``."""
    return input.atanh_()


def ceil_(input: TensorBase) -> TensorBase:
    """``input.ceil_()``."""
    return input.ceil_()


def cos_(input: TensorBase) -> TensorBase:
    """``input.cos_()``."""
    return input.cos_()


def cosh_(input: TensorBase) -> TensorBase:
    """``input.cosh_()``."""
    return input.cosh_()


def deg2rad_(input: TensorBase) -> TensorBase:
    """``input.deg2rad_()``."""
    return input.deg2rad_()


def detach_(input: TensorBase) -> TensorBase:
    """``input.detach_()``."""
    return input.detach_()


def erf_(input: TensorBase) -> TensorBase:
    """``input.erf_()``."""
    return input.erf_()


def erfc_(input: TensorBase) -> TensorBase:
    """``input.erfc_()``."""
    return input.erfc_()


def exp2_(input: TensorBase) -> TensorBase:
    """``input.exp2_()``."""
    return input.exp2_()


def exp_(input: TensorBase) -> TensorBase:
    """``input.exp_()``."""
    return input.exp_()


def expm1_(input: TensorBase) -> TensorBase:
    """``input.expm1_()``."""
    return input.expm1_()


def fix_(input: TensorBase) -> TensorBase:
    """``input.fix_()``."""
    return input.fix_()


def floor_(input: TensorBase) -> TensorBase:
    """``input.floor_()``."""
    return input.floor_()


def frac_(input: TensorBase) -> TensorBase:
    """``input.frac_()``."""
    return input.frac_()


def i0_(input: TensorBase) -> TensorBase:
    """``input.i0_()``."""
    return input.i0_()


def log10_(input: TensorBase) -> TensorBase:
    """``input.log10_()``."""
    return input.log10_()


def log1p_(input: TensorBase) -> TensorBase:
    """``input.log1p_()``."""
    return input.log1p_()


def log2_(input: TensorBase) -> TensorBase:
    """``input.log2_()``."""
    return input.log2_()


def log_(input: TensorBase) -> TensorBase:
    """``input.log_()``."""
    return input.log_()


def neg_(input: TensorBase) -> TensorBase:
    """``input.neg_()``."""
    return input.neg_()


def negative_(input: TensorBase) -> TensorBase:
    """``input.negative_()``."""
    return input.negative_()


def rad2deg_(input: TensorBase) -> TensorBase:
    """``input.rad2deg_()``."""
    return input.rad2deg_()


def reciprocal_(input: TensorBase) -> TensorBase:
    """``input.reciprocal_()``."""
    return input.reciprocal_()


def rsqrt_(input: TensorBase) -> TensorBase:
    """``input.rsqrt_()``."""
    return input.rsqrt_()


def sigmoid_(input: TensorBase) -> TensorBase:
    """``input.sigmoid_()``."""
    return input.sigmoid_()


def sin_(input: TensorBase) -> TensorBase:
    """``input.sin_()``."""
    return input.sin_()


def sinc_(input: TensorBase) -> TensorBase:
    """``input.sinc_()``."""
    return input.sinc_()


def sinh_(input: TensorBase) -> TensorBase:
    """``input.sinh_()``."""
    return input.sinh_()


def sqrt_(input: TensorBase) -> TensorBase:
    """``input.sqrt_()``."""
    return input.sqrt_()


def square_(input: TensorBase) -> TensorBase:
    """``input.square_()``."""
    return input.square_()


def tan_(input: TensorBase) -> TensorBase:
    """``input.tan_()``."""
    return input.tan_()


def tanh_(input: TensorBase) -> TensorBase:
    """``input.tanh_()``."""
    return input.tanh_()


def trunc_(input: TensorBase) -> TensorBase:
    """``input.trunc_()``."""
    return input.trunc_()


def zero_(input: TensorBase) -> TensorBase:
    """``input.zero_()``."""
    return input.zero_()


def clamp_(input: TensorBase, min=None, max=None) -> TensorBase:
    """``input.clamp_(...)``."""
    return input.clamp_(min, max)


def clip_(input: TensorBase, min=None, max=None) -> TensorBase:
    """``input.clip_(...)``."""
    return input.clip_(min, max)


def clamp_max_(input: TensorBase, max) -> TensorBase:
    """``input.clamp_max_(...)``."""
    return input.clamp_max_(max)


def clamp_min_(input: TensorBase, min) -> TensorBase:
    """``input.clamp_min_(...)``."""
    return input.clamp_min_(min)


def fill_(input: TensorBase, value) -> TensorBase:
    """``input.fill_(...)``."""
    return input.fill_(value)


def index_put_(input: TensorBase, indices, values, accumulate: bool = False) -> TensorBase:
    """``input.index_put_(...)``."""
    return input.index_put_(indices, values, accumulate)


def logit_(input: TensorBase, eps: float | None = None) -> TensorBase:
    """``input.logit_(...)``."""
    return input.logit_(eps)


def nan_to_num_(
    input: TensorBase, nan: float | None = None, posinf=None, neginf=None
) -> TensorBase:
    """``input.nan_to_num_(...)``."""
    return input.nan_to_num_(0.0 if nan is None else nan, posinf, neginf)


def round_(input: TensorBase, *, decimals: int = 0) -> TensorBase:
    """``input.round_(...)``."""
    return input.round_(decimals=decimals)


def xlogy_(input: TensorBase, other) -> TensorBase:
    """``input.xlogy_(...)``."""
    return input.xlogy_(other)


def fill(input: TensorBase, value) -> TensorBase:
    """A new tensor like ``input`` holding ``value`` everywhere: ``input.clone().fill_(value)``.

    Gradient: none to ``input`` (its values are all replaced); a 0-d tensor ``value``
    gets the sum of the upstream gradient, as in torch.
    """
    return input.clone().fill_(value)


def get_device(input: TensorBase) -> int:
    """``input.get_device()``: -1 (the CPU)."""
    return input.get_device()


def is_inference(input: TensorBase) -> bool:
    """``input.is_inference()``: False (tinyattn makes no inference tensors)."""
    return input.is_inference()


def resize_as_(input: TensorBase, the_template: TensorBase, *, memory_format=None) -> TensorBase:
    """``input.resize_as_(the_template)``."""
    return input.resize_as_(the_template)
