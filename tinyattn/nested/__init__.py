"""``tinyattn.nested``: a batch of tensors whose first dim differs (torch's nested tensors).

What is here: building them (``nested_tensor``, ``as_nested_tensor``), looking at them
(``unbind``, ``size(i)`` of a regular dim, ``dim``, ``dtype``, ``is_nested``, the
printout) and turning them into one padded tensor (``to_padded_tensor``), plus the
elementwise ops torch runs on them (``+ - * /`` with a number or a nested tensor of the
same structure, and one-input functions such as ``relu`` or ``exp``), applied to each
component. Other ops (reductions, matmul, attention on nested inputs) raise
``NotImplementedError``, as torch does for the ops its nested backend lacks: pad with
``to_padded_tensor`` and pass a mask instead.

    >>> import tinyattn as torch
    >>> nt = torch.nested.nested_tensor([torch.ones(2, 3), torch.zeros(1, 3)])
    >>> nt.size(0), nt.dim(), [tuple(t.shape) for t in nt.unbind()]
    (2, 3, [(2, 3), (1, 3)])
    >>> (nt * 2).to_padded_tensor(-1.0)[1]
    tensor([[ 0.,  0.,  0.],
            [-1., -1., -1.]])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tinyattn
from ..foundations.type_names import type_name

__all__ = ["NestedTensor", "nested_tensor", "as_nested_tensor", "to_padded_tensor"]

# One-input functions applied to each component (torch's nested backend has these).
_ELEMENTWISE = frozenset(
    "abs neg exp log sqrt sin cos tanh sigmoid relu gelu silu sign floor ceil round "
    "clone detach float double half to contiguous".split()
)


class NestedTensor:
    """Components of equal ``dim()`` (at least 1) that may differ in their first dim."""

    is_nested = True

    def __init__(self, components: Sequence[Any]) -> None:
        self._components = tuple(components)

    # -- what it is ------------------------------------------------------------------------
    @property
    def dtype(self):
        return self._components[0].dtype if self._components else tinyattn.get_default_dtype()

    @property
    def device(self):
        return tinyattn.device("cpu")

    @property
    def layout(self):
        return tinyattn.strided

    @property
    def requires_grad(self) -> bool:
        return any(t.requires_grad for t in self._components)

    def dim(self) -> int:
        return self._components[0].dim() + 1 if self._components else 1

    def size(self, dim: int | None = None) -> int:
        """The length of a regular dim (0: the number of components); the ragged one raises."""
        if dim is None:
            raise RuntimeError(
                "NestedTensor has no single size: its components differ in shape; use "
                "size(dim) for a regular dim or unbind() for the components"
            )
        dim = dim + self.dim() if dim < 0 else dim
        if dim == 0:
            return len(self._components)
        lengths = {t.shape[dim - 1] for t in self._components}
        if len(lengths) != 1:
            raise RuntimeError(
                f"size({dim}): dim {dim} is irregular in this nested tensor (lengths "
                f"{sorted(lengths)})"
            )
        return lengths.pop()

    def unbind(self, dim: int = 0) -> tuple:
        if dim != 0:
            raise RuntimeError(f"unbind(): only dim=0 is supported for nested tensors, got {dim}")
        return self._components

    def to_padded_tensor(self, padding: float, output_size: Sequence[int] | None = None):
        return to_padded_tensor(self, padding, output_size)

    def __repr__(self) -> str:
        body = ",\n".join("  " + repr(t).replace("\n", "\n  ") for t in self._components)
        return f"nested_tensor([\n{body}\n])"

    # -- elementwise ops, per component ------------------------------------------------------
    def _map(self, fn: Callable) -> NestedTensor:
        return NestedTensor([fn(t) for t in self._components])

    def _binary(self, other, op: Callable) -> NestedTensor:
        if isinstance(other, NestedTensor):
            if len(other._components) != len(self._components) or any(
                a.shape != b.shape for a, b in zip(self._components, other._components)
            ):
                raise RuntimeError(
                    "nested tensors of different structure: the components' shapes must match"
                )
            return NestedTensor([op(a, b) for a, b in zip(self._components, other._components)])
        if isinstance(other, (int, float, bool)):
            return self._map(lambda t: op(t, other))
        raise NotImplementedError(
            "nested tensors combine with a number or a nested tensor of the same structure, "
            f"not {type_name(other)}"
        )

    def __add__(self, other):
        return self._binary(other, lambda a, b: a + b)

    def __radd__(self, other):
        return self._binary(other, lambda a, b: b + a)

    def __sub__(self, other):
        return self._binary(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._binary(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._binary(other, lambda a, b: a * b)

    def __rmul__(self, other):
        return self._binary(other, lambda a, b: b * a)

    def __truediv__(self, other):
        return self._binary(other, lambda a, b: a / b)

    def __neg__(self):
        return self._map(lambda t: -t)

    def __getattr__(self, name: str):
        if name in _ELEMENTWISE:
            return lambda *args, **kwargs: self._map(lambda t: getattr(t, name)(*args, **kwargs))
        if name.startswith("_"):
            raise AttributeError(name)
        raise NotImplementedError(
            f"Could not run '{name}' on a nested tensor: tinyattn's nested tensors support "
            "construction, unbind, to_padded_tensor and elementwise ops only"
        )


def _components(tensor_list, dtype, requires_grad: bool, copy: bool) -> list:
    if not isinstance(tensor_list, (list, tuple)) or not tensor_list:
        raise TypeError("nested_tensor(): expected a non-empty list of tensors")
    out = []
    for i, t in enumerate(tensor_list):
        if not isinstance(t, tinyattn.Tensor):
            t = tinyattn.tensor(t, dtype=dtype)
        if dtype is not None and t.dtype != dtype:
            t = t.to(dtype)
        out.append(t.detach().clone().requires_grad_(requires_grad) if copy else t)
        if t.dim() != out[0].dim() or t.dim() == 0:
            raise RuntimeError(
                "All Tensors given to nested_tensor must have the same dimension (at least 1); "
                f"component 0 has {out[0].dim()} and component {i} has {t.dim()}"
            )
    return out


def nested_tensor(
    tensor_list: Sequence[Any],
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> NestedTensor:
    """A nested tensor made of copies of ``tensor_list`` (a leaf, as torch's)."""
    return NestedTensor(_components(tensor_list, dtype, requires_grad, copy=True))


def as_nested_tensor(ts: Any, dtype=None, device=None, layout=None) -> NestedTensor:
    """A nested tensor of ``ts`` itself (no copy: gradients flow back to the components)."""
    if isinstance(ts, NestedTensor):
        return ts
    if isinstance(ts, tinyattn.Tensor):
        ts = list(ts.unbind(0))
    return NestedTensor(_components(ts, dtype, False, copy=False))


def to_padded_tensor(input: NestedTensor, padding: float, output_size: Sequence[int] | None = None):
    """One tensor ``(n, max sizes ...)`` with the components in place and ``padding`` around."""
    parts = input.unbind()
    shape = [len(parts)] + [max(t.shape[d] for t in parts) for d in range(parts[0].dim())]
    if output_size is not None:
        if len(output_size) != len(shape) or any(o < s for o, s in zip(output_size, shape)):
            raise RuntimeError(
                f"to_padded_tensor: output_size {list(output_size)} must have {len(shape)} "
                f"dims, each at least {shape}"
            )
        shape = list(output_size)
    pads = []
    for t in parts:
        widths: list[int] = []
        for d in reversed(range(t.dim())):
            widths += [0, shape[d + 1] - t.shape[d]]
        pads.append(tinyattn.nn.functional.pad(t, widths, value=padding))
    return tinyattn.stack(pads)
