"""Tensor creation: factories (tensor, zeros, arange ...), tensors from buffers and strides,
in-place fills of given values (the random ops are in ``ops/random/``)."""

from . import factories, fill, from_buffers
