"""``repr`` of a sparse COO tensor in torch's form (indices, values, size, nnz, layout)."""

from __future__ import annotations

from ..core import _dtype as dt
from ..tensor_api.printing import LINEWIDTH
from ..tensor_api.tensor import Tensor

_INDENT = len("tensor(")


def _field(head: str, t: Tensor) -> str:
    """``head`` then ``repr(t)`` without its dtype (the tail names it), its later lines
    indented under the first."""
    text = repr(t.detach()).replace(f", dtype={t.dtype!r}", "")
    if t.numel() == 0 and "size=" not in text:  # torch names an empty field's size
        text = text[:-1] + f", size={tuple(t.shape)})"
    return head + ("\n" + " " * len(head)).join(text.split("\n"))


def sparse_repr(s) -> str:
    """``tensor(indices=..., values=..., size=..., nnz=..., layout=tinyattn.sparse_coo)``."""
    tail = [f"size={tuple(s.shape)}", f"nnz={s._nnz()}"]
    if s.dtype not in (dt.get_default_dtype(), dt.int64) and s.dtype.np_dtype.kind != "b":
        tail.append(f"dtype={s.dtype!r}")
    tail.append(f"layout={s.layout!r}")
    if s._grad_fn is not None:
        tail.append(f"grad_fn=<{s._grad_fn.name()}>")
    elif s._requires_grad:
        tail.append("requires_grad=True")
    lines = [
        _field("tensor(indices=", s._indices()),
        _field(" " * _INDENT + "values=", s._values()),
    ]
    row: list[str] = []
    for suffix in tail:  # the tail starts a line; lines break where torch's would
        width = len(", ".join([*row, suffix]).replace("tinyattn.", "torch."))
        if row and _INDENT + width > LINEWIDTH:
            lines.append(" " * _INDENT + ", ".join(row))
            row = []
        row.append(suffix)
    lines.append(" " * _INDENT + ", ".join(row))
    return ",\n".join(lines) + ")"
