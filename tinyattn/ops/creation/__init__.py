"""Tensor creation: factories (tensor, zeros, rand ...), tensors from buffers and strides, the count samplers, in-place fills."""

from . import factories, fill, from_buffers
