"""The random programs of ``tests/test_differential.py``, differentiated twice.

Each program (arithmetic, unary math, pow, clamp, reductions, softmax, views,
indexing, in-place ops) ends with ``autograd.grad(..., create_graph=True)`` of a
random weighted sum and then ``autograd.grad`` of a weighted sum of those
gradients, both compared with torch at 1e-10. A program that reaches an op
whose backward does not support ``create_graph`` yet (listed in
``FIRST_ORDER_ONLY``) is accepted when tinyattn says so; any other difference fails.
"""

from __future__ import annotations

import numpy as np
import pytest
import test_differential as td
from hypothesis import given, note
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

UNSUPPORTED = "does not support create_graph=True yet"


class SecondOrderProgram(td.Program):
    """A program whose final step is a gradient, then the gradient of a gradient."""

    def backward(self, seed: int) -> None:
        candidates = [n for n in self.names if self.t(n).requires_grad]
        if not candidates:
            return
        out, leaves = candidates[-1], ", ".join(self.leaves)
        rng = np.random.default_rng(seed)
        w = np.round(rng.uniform(-1, 1, self.t(out).shape), 2).tolist()
        ws = [np.round(rng.uniform(-1, 1, self.t(x).shape), 2).tolist() for x in self.leaves]
        n = len(self.leaves)
        steps = [
            (
                f"_g = lib.autograd.grad(({out} * lib.tensor({w!r}, dtype=lib.float64)).sum(), "
                f"[{leaves}], create_graph=True, allow_unused=True)",
                "_g",
            ),
            (
                f"_t = [(g * lib.tensor(w, dtype=lib.float64)).sum() for g, w in zip(_g, {ws!r}) "
                "if g is not None and g.requires_grad]\n"
                f"_h = lib.autograd.grad(sum(_t), [{leaves}], allow_unused=True) if _t else "
                f"[None] * {n}",
                "_h",
            ),
        ]
        for line, target in steps:
            if not self._run_step(line, target):
                return

    def _run_step(self, line: str, target: str) -> bool:
        self.lines.append(line)
        note(line)
        errors = {}
        for lib, ns in self.ns.items():
            try:
                exec(line, ns)
            except Exception as e:
                errors[lib] = e
        if "tinyattn" in errors and "torch" not in errors:
            if UNSUPPORTED in str(errors["tinyattn"]):
                return False  # an op still in FIRST_ORDER_ONLY
            self.fail(f"{target}: tinyattn raised {errors['tinyattn']!r} but torch did not")
        if "torch" in errors and "tinyattn" not in errors:
            self.fail(f"{target}: torch raised {errors['torch']!r} but tinyattn did not")
        if errors:
            return False
        for leaf, gt, go in zip(self.leaves, self.ns["torch"][target], self.ns["tinyattn"][target]):
            shape = tuple(self.t(leaf).shape)
            want = np.zeros(shape) if gt is None else gt.detach().numpy(force=True)
            got = np.zeros(shape) if go is None else go.detach().numpy()
            if want.shape != got.shape or not np.allclose(
                got, want, rtol=1e-10, atol=1e-10, equal_nan=True
            ):
                self.fail(f"{target} for {leaf} differs\ntinyattn:\n{got}\ntorch:\n{want}")
        return True


def _run(data, families) -> None:
    saved = td.Program
    td.Program = SecondOrderProgram  # run_program builds its Program from the module
    try:
        td.run_program(data, families)
    finally:
        td.Program = saved


CONVERTED_MATH = ["binary", "binary_fn", "pow", "unary", "clamp", "reduce", "softmax"]


@td.SETTINGS
@given(st.data())
def test_second_order_programs_math(data):
    _run(data, CONVERTED_MATH)


@td.SETTINGS
@given(st.data())
def test_second_order_programs_everything(data):
    _run(data, list(td.GENERATORS))
