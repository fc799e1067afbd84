"""The layers of docs/architecture.md import only downwards.

Every ``import`` in ``tinyattn/`` (module level and inside functions) is resolved to
the layer it names; a module may import its own layer and the ones below it. This
keeps the bottom of the stack readable on its own: the autograd engine never needs
the tensor class, the kernels never need autograd, the ops never need ``nn``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tinyattn"

# Layer of each top-level module or subpackage of tinyattn (docs/architecture.md).
LAYERS = {
    "_dtype": 0,
    "_device": 0,
    "_size": 0,
    "random": 0,
    "_version": 0,
    "distributed": 0,  # a shim with no dependencies (nn.parallel reads its message)
    "autograd": 1,
    "kernels": 2,
    "_softmax_math": 2,
    "_matmul": 2,
    "_tensor": 3,
    "_printing": 3,
    "_tensor_methods_math": 3,
    "_tensor_methods_shape": 3,
    "_tensor_methods_select": 3,
    "_tensor_methods_elementwise": 3,
    "_tensor_methods_binary": 3,
    "_tensor_meta": 3,
    "_tensor_more": 3,
    "_tensor_round4": 3,
    "ops": 4,
    "linalg": 4,
    "_out": 4,  # the out= wrapper linalg/special/nn.functional apply to their names
    "_out_names": 0,  # data
    "_type_names": 0,  # how messages name types: no imports
    "nn": 5,
}
TOP = 6  # everything else: optim, utils, serialization, viz, amp, bench, demo, ...

# Imports that reach up on purpose, each with its reason.
ALLOWED_UPWARD = {
    # The generated Tensor methods forward to ``tinyattn.ops.<family>`` at call time.
    ("_tensor_methods_math", "tinyattn"),
    ("_tensor_methods_shape", "tinyattn"),
    ("_tensor_methods_select", "tinyattn"),
    ("_tensor_methods_elementwise", "tinyattn"),
    ("_tensor_methods_binary", "tinyattn"),
    ("_tensor", "ops"),
    ("_tensor_more", "ops"),  # in-place composite forms (addmm_ ...) call the ops at call time
    ("_tensor_more", "tinyattn"),
    ("_tensor_round4", "ops"),  # older matrix functions, *_copy ... call the ops at call time
    ("_tensor_round4", "tinyattn"),  # Tensor.hardshrink / prelu call the functional form
    # The einops layers (nn.Rearrange ...) share the einops backend's registration.
    ("nn", "_einops"),
    # ``nn.attention.sdpa_kernel`` sets torch's SDPA switches in ``backends.cuda`` (as torch's).
    ("nn", "backends"),
    # ``_printing`` formats a tensor through the public package namespace at call time.
    ("_printing", "tinyattn"),
}

# Files that sit above the ops by nature, though they live in the autograd package (as
# torch.autograd.functional does): they differentiate through ops at call time.
ALLOWED_FILES = {
    "autograd/xp.py": "tensor_xp builds create_graph formulas from differentiable ops",
    "autograd/functional.py": "jacobian/hessian/... run the user's function on ops",
}


def _layer(top: str) -> int:
    return LAYERS.get(top, TOP)


def _module_parts(path: Path) -> list[str]:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path):
    """(line, imported tinyattn top-level name) for every import in ``path``."""
    parts = _module_parts(path)
    package = parts if path.name == "__init__.py" else parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names = alias.name.split(".")
                if names[0] == "tinyattn":
                    yield node.lineno, names[1] if len(names) > 1 else "tinyattn"
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
            else:
                target = (node.module or "").split(".")
            if not target or target[0] != "tinyattn":
                continue
            if len(target) > 1:
                yield node.lineno, target[1]
            else:  # ``from .. import x``: each name is a module of the package
                for alias in node.names:
                    yield node.lineno, alias.name


FILES = sorted(p for p in PACKAGE.rglob("*.py"))


def test_the_scan_sees_the_package():
    assert len(FILES) > 50
    found = {name for f in FILES for _, name in _imports(f)}
    assert {"autograd", "ops", "_tensor", "kernels"} <= found


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_imports_point_down(path):
    own = _module_parts(path)[1] if len(_module_parts(path)) > 1 else "tinyattn"
    if str(path.relative_to(PACKAGE).as_posix()) in ALLOWED_FILES:
        return
    if own == "tinyattn" or _layer(own) == TOP:
        return  # the package namespace and the top layer may import anything
    upward = [
        f"line {line}: {own} (layer {_layer(own)}) imports {name} (layer {_layer(name)})"
        for line, name in _imports(path)
        if name != own
        and (own, name) not in ALLOWED_UPWARD
        and (name == "tinyattn" or _layer(name) > _layer(own))
    ]
    assert not upward, "imports that reach up a layer:\n" + "\n".join(upward)
