"""The rules of ``tinyattn/core/``: within its line budget, importing nothing outside
itself, and running on its own (a subprocess that imports only ``tinyattn.core``)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from core_alone import ROOT, run_core_alone

CORE = ROOT / "tinyattn" / "core"
BUDGET = 3000  # non-blank lines of core/*.py: what a learner reads in an afternoon


def non_blank_lines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip())


def test_the_core_stays_within_its_budget():
    counts = {p.name: non_blank_lines(p) for p in sorted(CORE.glob("*.py"))}
    total = sum(counts.values())
    assert "engine.py" in counts and "function.py" in counts
    assert total <= BUDGET, f"core/ has {total} non-blank lines (budget {BUDGET}): {counts}"


def outside_imports(path: Path) -> list[str]:
    """The tinyattn modules outside ``core`` that ``path`` (a module of core/) imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                continue  # ``from . import x`` / ``from .x import y``: inside core
            module = node.module or ""
            if node.level > 1 or module == "tinyattn" or module.startswith("tinyattn."):
                if not (node.level == 0 and module.startswith("tinyattn.core")):
                    found.append("." * node.level + module)
        elif isinstance(node, ast.Import):
            found += [
                a.name
                for a in node.names
                if a.name.startswith("tinyattn") and not a.name.startswith("tinyattn.core")
            ]
    return found


def test_the_core_imports_nothing_outside_itself():
    reaching = {p.name: outside_imports(p) for p in sorted(CORE.glob("*.py"))}
    reaching = {name: found for name, found in reaching.items() if found}
    assert not reaching, f"core/ modules that import the rest of tinyattn: {reaching}"


def test_the_import_scan_sees_outside_imports(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "from . import engine\nfrom .function import Node\nfrom .. import ops\n"
        "from ..autograd.xp import tensor_xp\nimport tinyattn.nn\nfrom tinyattn import _size\n"
        "from tinyattn.core import engine as e\nimport numpy\n"
    )
    assert outside_imports(src) == ["..", "..autograd.xp", "tinyattn.nn", "tinyattn"]


STANDALONE = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tinyattn.core as core

    loaded = sorted(m for m in sys.modules if m.startswith("tinyattn"))
    assert all(m == "tinyattn" or m.startswith("tinyattn.core") for m in loaded), loaded

    class Mul(core.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    class Exp(core.Function):
        @staticmethod
        def forward(ctx, x):
            y = np.exp(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class Sum(core.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.shape = x.shape
            return np.sum(x)

        @staticmethod
        def backward(ctx, g):
            return ctx.xp.broadcast_to(g, ctx.shape)

    def leaf(values):
        t = core.TensorBase()
        t._init(np.asarray(values, dtype=np.float64), None, True)
        return t

    def loss_of(w, x):
        return Sum.apply(Exp.apply(Mul.apply(w, x)))  # sum(exp(w * x)), x broadcast

    w = leaf([[0.5], [-1.0]])  # (2, 1): the engine sums the gradient over the broadcast axis
    x = leaf([0.1, 0.2, 0.3])
    loss = loss_of(w, x)
    core.run_backward([loss._grad_fn], [np.ones(())])
    expected = (np.exp(w._data * x._data) * x._data).sum(axis=1, keepdims=True)
    assert np.allclose(w.grad._data, expected), (w.grad._data, expected)

    eps, numeric = 1e-6, np.zeros(2)
    for i in range(2):
        for sign in (1, -1):
            shifted = leaf(w._data.copy())
            shifted._data[i, 0] += sign * eps
            with core.no_grad():
                numeric[i] += sign * loss_of(shifted, x)._data / (2 * eps)
    assert np.allclose(w.grad._data[:, 0], numeric, atol=1e-6), (w.grad._data, numeric)
    assert sorted(m for m in sys.modules if m.startswith("tinyattn")) == loaded
    print("ok")
    """
)


def test_the_core_runs_on_its_own():
    """Only ``tinyattn.core`` is imported (``tinyattn/__init__`` is skipped by loading the
    core as the top package's only child), and the engine backpropagates through ops
    written on it: broadcasting undone, gradients matching finite differences."""
    result = run_core_alone(STANDALONE)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
