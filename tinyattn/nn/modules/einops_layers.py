"""einops layers as tinyattn modules: ``Rearrange``, ``Reduce``, ``EinMix``.

The tinyattn counterparts of ``einops.layers.torch``: the same constructor arguments
and results, built on tinyattn's :class:`Module` (needs einops installed; importing
this module imports einops). Reachable as ``tinyattn.nn.Rearrange`` etc.

>>> import tinyattn as torch
>>> from tinyattn.nn import Rearrange, Reduce
>>> block = torch.nn.Sequential(Rearrange("b c h w -> b (h w) c"), Reduce("b n c -> b c", "mean"))
>>> block(torch.randn(2, 3, 4, 4)).shape
tinyattn.Size([2, 3])
"""

from __future__ import annotations

from einops.layers import RearrangeMixin, ReduceMixin
from einops.layers._einmix import _EinmixMixin

from ...ops.creation.factories import empty
from ...ops.linalg.matmul import einsum
from ...shims import einops as _einops
from ..parameter import Parameter
from .module import Module

__all__ = ["Rearrange", "Reduce", "EinMix"]

_einops.register()  # the layers call einops on tinyattn tensors


class Rearrange(RearrangeMixin, Module):
    """``einops.rearrange(x, pattern, **axes_lengths)`` as a layer (no parameters)."""

    def forward(self, input):
        """The rearranged ``input`` (transpose, reshape, repeat as the pattern says).

        Composes: Tensor.reshape, Tensor.permute, Tensor.expand
        """
        return self._apply_recipe(input)


class Reduce(ReduceMixin, Module):
    """``einops.reduce(x, pattern, reduction, **axes_lengths)`` as a layer (no parameters)."""

    def forward(self, input):
        """``input`` reduced over the axes the pattern drops (``reduction``: mean, sum, max, ...).

        Composes: Tensor.reshape, Tensor.permute, tinyattn.mean, tinyattn.sum, tinyattn.amax,
        tinyattn.amin, tinyattn.prod
        """
        return self._apply_recipe(input)


class EinMix(_EinmixMixin, Module):
    """A linear layer written as an einsum pattern (``einops.layers.torch.EinMix``).

    ``EinMix("b t c -> b t h", weight_shape="c h", bias_shape="h", c=8, h=16)`` is a
    ``Linear(8, 16)`` on the last axis; the weight and bias are drawn uniformly from
    einops' bounds. Output: ``einsum(pattern, input, weight) + bias``, with einops'
    optional rearranges before and after.
    """

    def _create_parameters(self, weight_shape, weight_bound, bias_shape, bias_bound):
        self.weight = Parameter(empty(weight_shape).uniform_(-weight_bound, weight_bound))
        if bias_shape is not None:
            self.bias = Parameter(empty(bias_shape).uniform_(-bias_bound, bias_bound))
        else:
            self.bias = None

    def _create_rearrange_layers(
        self, pre_reshape_pattern, pre_reshape_lengths, post_reshape_pattern, post_reshape_lengths
    ):
        self.pre_rearrange = None
        if pre_reshape_pattern is not None:
            self.pre_rearrange = Rearrange(pre_reshape_pattern, **pre_reshape_lengths)
        self.post_rearrange = None
        if post_reshape_pattern is not None:
            self.post_rearrange = Rearrange(post_reshape_pattern, **post_reshape_lengths)

    def forward(self, input):
        """``post(einsum(pattern, pre(input), weight) + bias)``, shapes as the pattern says.

        For the einsum ``y = einsum("btc,ch->bth", x, W)``: ``dx = einsum("bth,ch->btc", g, W)``,
        ``dW = einsum("btc,bth->ch", x, g)``, ``d bias = g`` summed over the broadcast axes.
        """
        if self.pre_rearrange is not None:
            input = self.pre_rearrange(input)
        result = einsum(self.einsum_pattern, input, self.weight)
        if self.bias is not None:
            result = result + self.bias
        if self.post_rearrange is not None:
            result = self.post_rearrange(result)
        return result
