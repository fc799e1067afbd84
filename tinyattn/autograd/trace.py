"""``autograd.trace()``: record what the backward pass does, node by node.

>>> import tinyattn
>>> x = tinyattn.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> loss = (x * x).sum()
>>> with tinyattn.autograd.trace() as t:
...     loss.backward()
>>> [r["op"] for r in t.records]  # print(t) shows them as a table, with shapes, |grad| and time
['SumBackward0', 'MulBackward0']
>>> t.records[1]["input_shapes"], t.records[1]["output_shape"]
([(3,), (3,)], (3,))
"""

from __future__ import annotations

import numpy as np

from ..core import engine


def _norm(g) -> float:
    """The 2-norm of a gradient, without a float64 copy of it (tracing should stay cheap)."""
    g = g._data if hasattr(g, "_data") else np.asarray(g)  # a Tensor under create_graph
    return float(np.sqrt(abs(np.vdot(g.ravel(), g.ravel()))))


class trace:
    """Context manager recording each backward node run while it is active."""

    def __init__(self) -> None:
        self.records: list[dict] = []

    def __enter__(self) -> trace:
        engine.add_tracer(self)
        return self

    def __exit__(self, *exc) -> None:
        engine.remove_tracer(self)

    def _record(self, node, grad_output, input_grads, seconds: float) -> None:
        out_shape = np.shape(grad_output)  # (a node's gradient has its output's shape)
        self.records.append(
            {
                "step": len(self.records),
                "op": node.name(),
                "input_shapes": [meta[0] if meta else None for meta in node.input_meta],
                "output_shape": tuple(out_shape),
                "grad_output_norm": _norm(grad_output),
                "grad_input_norms": [None if g is None else _norm(g) for g in input_grads],
                "seconds": seconds,
            }
        )

    def __len__(self) -> int:
        return len(self.records)

    def __str__(self) -> str:
        op_width = max([22] + [len(r["op"]) for r in self.records])  # (long names stay aligned)
        header = (
            f"{'#':>3}  {'op':<{op_width}} {'inputs':<30} {'output':<16} {'|grad out|':>11} "
            f"{'time':>9}"
        )
        lines = [header, "-" * len(header)]
        for r in self.records:
            inputs = ", ".join("-" if s is None else str(list(s)) for s in r["input_shapes"])
            lines.append(
                f"{r['step']:>3}  {r['op']:<{op_width}} {inputs:<30.30} "
                f"{str(list(r['output_shape'])):<16} "
                f"{r['grad_output_norm']:>11.4g} {r['seconds'] * 1e6:>7.1f}us"
            )
        return "\n".join(lines)

    __repr__ = __str__
