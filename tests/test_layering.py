"""The layers of tinyattn/foundations/layers.py (shown in docs/architecture.md) import only downwards.

Every ``import`` in ``tinyattn/`` (module level and inside functions) is resolved to
the layer it names; a module may import its own layer and the ones below it. This
keeps the bottom of the stack readable on its own: the autograd engine never needs
the tensor class, the kernels never need autograd, the ops never need ``nn``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tinyattn.foundations import layers as _layers

PACKAGE = Path(__file__).resolve().parent.parent / "tinyattn"

# The table lives in tinyattn/foundations/layers.py (docs/architecture.md shows it).
LAYERS, TOP, ALLOWED_UPWARD, ALLOWED_FILES = (
    _layers.LAYERS,
    _layers.TOP,
    _layers.ALLOWED_UPWARD,
    _layers.ALLOWED_FILES,
)


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


_layer = _layers.layer


def _allowed(own: str, name: str) -> bool:
    return any(_within(own, a) and (b == name or _within(name, b)) for a, b in ALLOWED_UPWARD)


def _module_parts(path: Path) -> list[str]:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _is_module(parts: list[str]) -> bool:
    base = PACKAGE.parent.joinpath(*parts)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imports(path: Path):
    """(line, imported tinyattn module, dotted below ``tinyattn``) for every import in ``path``."""
    parts = _module_parts(path)
    package = parts if path.name == "__init__.py" else parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names = alias.name.split(".")
                if names[0] == "tinyattn":
                    yield node.lineno, ".".join(names[1:]) or "tinyattn"
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
            else:
                target = (node.module or "").split(".")
            if not target or target[0] != "tinyattn":
                continue
            for alias in node.names:  # ``from .. import x``: x may be a module of the package
                full = [*target, alias.name]
                chosen = full if _is_module(full) else target
                yield node.lineno, ".".join(chosen[1:]) or "tinyattn"


FILES = sorted(p for p in PACKAGE.rglob("*.py"))


def test_the_scan_sees_the_package():
    assert len(FILES) > 50
    found = {name.split(".")[0] for f in FILES for _, name in _imports(f)}
    assert {"autograd", "ops", "tensor_api", "kernels"} <= found


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_imports_point_down(path):
    own = ".".join(_module_parts(path)[1:]) or "tinyattn"
    if str(path.relative_to(PACKAGE).as_posix()) in ALLOWED_FILES:
        return
    if own == "tinyattn" or _layer(own) == TOP:
        return  # the package namespace and the top layer may import anything
    upward = [
        f"line {line}: {own} (layer {_layer(own)}) imports {name} (layer {_layer(name)})"
        for line, name in _imports(path)
        if not _within(name, own.split(".")[0])
        and not _allowed(own, name)
        and (name == "tinyattn" or _layer(name) > _layer(own))
    ]
    assert not upward, "imports that reach up a layer:\n" + "\n".join(upward)


def test_every_upward_allowance_is_used():
    """An entry of ALLOWED_UPWARD that no import needs any more is removed, so the table
    says only what is true."""
    used = {
        (a, b)
        for path in FILES
        for _, name in _imports(path)
        for a, b in ALLOWED_UPWARD
        if _within(".".join(_module_parts(path)[1:]), a) and (b == name or _within(name, b))
    }
    unused = sorted(set(ALLOWED_UPWARD) - used)
    assert not unused, f"ALLOWED_UPWARD entries no import uses (remove them): {unused}"


def test_the_architecture_document_shows_the_table():
    """docs/architecture.md holds the table of tinyattn/foundations/layers.py, as it prints it."""
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    assert _layers.markdown_table() in doc, (
        "docs/architecture.md's layer table differs from tinyattn/foundations/layers.py: "
        "paste the output of python -m tinyattn.foundations.layers"
    )


def test_every_listed_module_exists():
    missing = [m for m in LAYERS if not _is_module(["tinyattn", *m.split(".")])]
    assert not missing, missing


def test_the_layer_lookup_takes_the_longest_prefix():
    assert _layer("torch_surface.out_table") == 0 and _layer("torch_surface.aliases") == 4
    assert _layer("ops.elementwise.unary") == 2 and _layer("no_such_module") == TOP


def test_the_folders_stack_in_the_documented_order():
    order = ["core", "kernels", "ops", "autograd", "torch_surface", "tensor_api", "linalg",
             "shims", "nn", "optim"]  # fmt: skip
    assert [_layer(f) for f in order] == sorted(_layer(f) for f in order)
    assert len({_layer(f) for f in order}) == len(order)
