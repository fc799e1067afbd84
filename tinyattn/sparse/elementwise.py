"""Elementwise ops and reductions of sparse COO tensors with a sparse result, as torch's.

Two recipes, both on the dense array underneath (docs/sparse.md):

- *linear* ops (``s * scalar``, ``s * dense``, ``s / scalar``, ``-s``, ``s + s``,
  ``s - s``) keep the stored entries: the result has the operand's indices, ``nnz`` and
  coalesced flag, as in torch. The op runs on the dense array and ``SparseMask`` keeps
  the result on the pattern (``s / 0`` is inf on the entries, 0 elsewhere);
- *nonlinear* ops (``pow``, ``abs``, ``relu``) coalesce first, as torch does, and apply
  the op to the values, so that no value outside the pattern is ever computed.

Gradients reach the sparse operand masked to its pattern (a sparse leaf's ``.grad`` is
sparse, as torch's).
"""

from __future__ import annotations

import numbers

import numpy as np

from ..foundations.type_names import type_name
from ..tensor_api.tensor import Tensor
from . import functions as F
from .coo import SparseTensor, wrap


def _dense_of(s: SparseTensor, name: str) -> Tensor:
    """``s``'s dense array as a plain tensor; its gradient reaches ``s`` masked."""
    s._note_sparse_grad(True)
    return F.SparseRelabel.apply(s, s._indices_array, True, name)


def _sparse_result(dense: Tensor, like: SparseTensor, name: str, raw=None) -> SparseTensor:
    """``dense`` kept on ``like``'s pattern, with ``like``'s indices and coalesced flag;
    ``raw``: the stored values of an uncoalesced result."""
    out = F.SparseMask.apply(dense, like._indices_array, name)
    return wrap(out, like._indices_array, like._coalesced, None if like._coalesced else raw)


def _raw(s: SparseTensor) -> Tensor | None:
    """The stored values of an uncoalesced ``s`` (None when they are not kept)."""
    return None if s._coalesced else s._raw_values


def _is_scalar(x) -> bool:
    if isinstance(x, SparseTensor):
        return False
    if isinstance(x, Tensor):
        return x.ndim == 0
    return isinstance(x, numbers.Number)


def _check_scalar(x, op: str) -> None:
    if not (_is_scalar(x) or isinstance(x, Tensor)):
        raise TypeError(
            f"{op}(sparse, other): other must be a number or a Tensor, got {type_name(x)}"
        )


def mul(s: SparseTensor, other) -> SparseTensor:
    """``s * other`` for a number, a 0-d tensor or a dense tensor that broadcasts to
    ``s``'s shape: sparse, with ``s``'s indices, ``nnz`` and coalesced flag."""
    _check_scalar(other, "mul")
    if isinstance(other, SparseTensor):
        raise NotImplementedError(
            "mul(sparse, sparse): sparse * sparse is not supported in tinyattn (torch's "
            "result keeps the common entries); call .to_dense() on one operand"
        )
    if isinstance(other, Tensor) and other.ndim:
        if np.broadcast_shapes(tuple(other.shape), tuple(s.shape)) != tuple(s.shape):
            raise RuntimeError(
                f"mul(sparse, dense): the dense operand of shape {list(other.shape)} must "
                f"broadcast to the sparse operand's shape {list(s.shape)}"
            )
    raw = _raw(s)
    if raw is not None:
        if isinstance(other, Tensor) and other.ndim:
            entries = tuple(s._indices_array)
            raw = raw * other.expand(*s.shape)[entries]
        else:
            raw = raw * other
    return _sparse_result(_dense_of(s, "MulBackward0") * other, s, "MulBackward0", raw)


def div(s: SparseTensor, other) -> SparseTensor:
    """``s / other`` for a number or a 0-d tensor: sparse, ``s``'s indices and flags."""
    if not _is_scalar(other):
        raise NotImplementedError(
            f"div(sparse, other): other must be a number or a 0-d dense tensor, got "
            f"{type_name(other)}{'' if not isinstance(other, Tensor) else list(other.shape)} "
            "(a sparse result needs a divisor that is the same everywhere)"
        )
    raw = _raw(s)
    raw = None if raw is None else raw / other
    return _sparse_result(_dense_of(s, "DivBackward0") / other, s, "DivBackward0", raw)


def neg(s: SparseTensor) -> SparseTensor:
    """``-s``: sparse, ``s``'s indices and flags."""
    raw = _raw(s)
    return _sparse_result(
        -_dense_of(s, "NegBackward0"), s, "NegBackward0", None if raw is None else -raw
    )


def add(s: SparseTensor, other, alpha=1, *, op: str = "add") -> SparseTensor:
    """``s + alpha * other`` for a sparse ``other`` of the same shape: sparse, on the
    union of the two patterns (coalesced when both operands are; else the two lists of
    entries one after the other). A dense ``other`` raises, as in torch."""
    if not isinstance(other, SparseTensor):
        raise RuntimeError(
            f"{op}(sparse, dense) is not supported. Use {op}(dense, sparse) instead."
        )
    if tuple(other.shape) != tuple(s.shape) or other.sparse_dim() != s.sparse_dim():
        raise RuntimeError(
            f"{op}: expected sizes and sparse dims to match, got sizes {list(s.shape)} and "
            f"{list(other.shape)}, sparse dims {s.sparse_dim()} and {other.sparse_dim()}"
        )
    name = "AddBackward0" if op == "add" else "SubBackward0"
    dense = _dense_of(s, name) + _dense_of(other, name) * alpha
    both = np.concatenate([s._indices_array, other._indices_array], axis=1)
    if s._coalesced and other._coalesced:
        idx = np.unique(both, axis=1)
        return wrap(F.SparseMask.apply(dense, idx, name), idx, True)
    out = wrap(F.SparseMask.apply(dense, both, name), both, False)
    out.__dict__["_raw_values"] = _cat([s._values(), other._values() * alpha])
    return out


def _cat(values: list) -> Tensor:
    from ..ops.shape.rearrange import cat

    return cat(values, 0)


def sub(s: SparseTensor, other, alpha=1) -> SparseTensor:
    """``s - alpha * other`` for a sparse ``other`` (see :func:`add`)."""
    return add(s, other, -alpha, op="sub")


def _on_values(s: SparseTensor, fn, name: str) -> SparseTensor:
    """``fn`` applied to the values of ``s`` coalesced: a coalesced sparse tensor."""
    c = s.coalesce()
    values = fn(c._values())
    idx = c._indices_array
    return wrap(F.SparseFromValues.apply(values, idx, tuple(s.shape), name), idx, True)


def pow(s: SparseTensor, exponent) -> SparseTensor:
    """``s ** exponent`` for a nonzero number: coalesced, as torch's."""
    if not isinstance(exponent, numbers.Number) or isinstance(exponent, bool):
        if not (isinstance(exponent, Tensor) and exponent.ndim == 0):
            raise NotImplementedError(
                f"pow(sparse, exponent): exponent must be a number, got {type_name(exponent)}"
            )
        exponent = exponent.item()
    if exponent == 0:
        raise RuntimeError(
            "pow: cannot raise to zeroth power on sparse tensor; it would make the result "
            "tensor dense"
        )
    return _on_values(s, lambda v: v**exponent, "PowBackward0")


def abs(s: SparseTensor) -> SparseTensor:
    """``|s|``: coalesced, as torch's."""
    return _on_values(s, lambda v: v.abs(), "AbsBackward0")


def relu(s: SparseTensor) -> SparseTensor:
    """``max(s, 0)`` on the stored entries: coalesced, as torch's."""
    return _on_values(s, lambda v: v.relu(), "ReluBackward0")
