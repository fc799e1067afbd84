"""``parameters_to_vector`` / ``vector_to_parameters``: a model's parameters as one flat vector."""

from __future__ import annotations

from collections.abc import Iterable

from ...foundations.type_names import type_name
from ...ops.shape.rearrange import cat
from ...tensor_api.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _typename(obj) -> str:
    """torch.typename: ``module.QualName`` of the object's type (``int`` for builtins)."""
    return type_name(obj)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Concatenate the flattened parameters, in iteration order, into one 1-D tensor.

    ``vec = cat([p.view(-1) for p in parameters])``, shape ``(sum of numel,)``. The result
    is part of the graph: ``d loss / d p`` is the matching slice of ``d loss / d vec``
    reshaped as ``p``.
    """
    return cat([param.view(-1) for param in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into ``parameters`` (the inverse of ``parameters_to_vector``).

    Each parameter ``p`` takes ``vec[offset : offset + p.numel()].view_as(p)`` as its new
    ``.data``; no autograd history is recorded.
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    pointer = 0
    for param in parameters:
        num_param = param.numel()
        chunk = vec[pointer : pointer + num_param]
        if chunk.numel() != num_param:
            raise RuntimeError(
                f"vector_to_parameters: vec has {vec.numel()} elements, fewer than the "
                f"parameters need (ran out at a parameter of shape {list(param.shape)})"
            )
        param.data = chunk.view_as(param).data
        pointer += num_param
