"""Kernels know arrays only: no module in ``tinyattn/kernels/`` imports the engine, the tensor,
the ops or ``nn`` (module level or inside a function), so a kernel reads as NumPy in, NumPy out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[2] / "tinyattn" / "kernels"
# what sits above the kernels (a prefix below ``tinyattn``): the tensor types of core/ and
# tensor_api/, autograd, the ops and everything built on them
ABOVE = ("autograd", "ops", "nn", "core", "tensor_api", "tinyattn", "torch_surface", "shims")


def imported_modules(path: Path) -> list[str]:
    """The tinyattn modules ``path`` imports, dotted below ``tinyattn`` ("tinyattn" for the root)."""
    package = ["tinyattn", "kernels"]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "tinyattn"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
                found += [f"{module}.{a.name}" for a in node.names]
            elif (node.module or "").split(".")[0] == "tinyattn":
                found += [f"{node.module}.{a.name}" for a in node.names]
    return [m.removeprefix("tinyattn.") if m != "tinyattn" else m for m in found]


def _above(module: str) -> bool:
    if module in ("tinyattn", "tinyattn.*") or module.startswith("tinyattn."):
        return True  # the package namespace gathers everything
    return any(module == a or module.startswith(a + ".") or module.startswith(a + "_")
               for a in ABOVE)  # fmt: skip


@pytest.mark.parametrize("path", sorted(KERNELS.glob("*.py")), ids=lambda p: p.name)
def test_a_kernel_module_imports_nothing_above_the_kernels(path):
    above = [m for m in imported_modules(path) if _above(m)]
    assert not above, f"kernels/{path.name} imports {above}: kernels take and return arrays"


def test_the_scan_sees_an_import_from_above(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(
        "import numpy as np\nfrom ..autograd.xp import tensor_xp\nfrom . import softmax_math\n"
        "def f():\n    from ..ops.linalg import matmul\n    import tinyattn\n"
    )
    found = imported_modules(src)
    assert [m for m in found if _above(m)] == ["autograd.xp.tensor_xp", "ops.linalg.matmul",
                                               "tinyattn"]  # fmt: skip
    assert "kernels.softmax_math" in found
