"""Rules of the package's layout, each a test (they replace a cap on file length: a file is
as long as its concept needs, split by concept, never by count).

- no module or test file is named by a delivery round (``_more``, ``_new``, ``_round<N>``,
  ``_breadth<N>``, ``issue<N>``);
- no public name is bound twice in ``tinyattn/__init__.py`` or ``nn/functional/__init__.py``
  (otherwise import order picks the winner);
- no module writes another module's private globals (``mod._name = ...``,
  ``mod._name.append(...)``, ``mod._name += ...``);
- the imports between folders form no cycle.

The violations that exist today are listed by name below, each set with what removes it; a
new one fails. The layer table is checked by ``test_layering.py``.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tinyattn"
MODULES = sorted(PACKAGE.rglob("*.py"))

# -- names by concept -----------------------------------------------------------------------

ROUND_NAME = re.compile(r"(^|_)(more|new)(_|$)|round\d+|breadth\d*|issue\d+")


def test_no_file_is_named_by_a_delivery_round():
    files = [
        *MODULES,
        *sorted((ROOT / "tests").rglob("*.py")),
        *sorted((ROOT / "tools").rglob("*.py")),
    ]
    named = [str(p.relative_to(ROOT)) for p in files if ROUND_NAME.search(p.stem)]
    assert not named, f"files named by a round, not by what they hold: {named}"


@pytest.mark.parametrize("stem", ["_tensor_more", "test_torch_names_more", "_round4", "_breadth3",
                                  "test_issue8_utils", "ops_new", "_breadth"])  # fmt: skip
def test_the_round_pattern_sees_round_names(stem):
    assert ROUND_NAME.search(stem)


@pytest.mark.parametrize("stem", ["moreau", "renew", "newton", "test_rounding", "aroundness"])
def test_the_round_pattern_spares_concept_names(stem):
    assert not ROUND_NAME.search(stem)


# -- the package root -------------------------------------------------------------------------

ROOT_FILES = {"__init__.py", "__main__.py", "_version.py"}


def test_the_package_root_holds_only_the_namespace_and_folders():
    """Every module lives in a folder named by its concept; the root keeps the package
    namespace, ``python -m tinyattn`` and the version."""
    files = {p.name for p in PACKAGE.glob("*.py")}
    assert files == ROOT_FILES, f"modules at the package root: {sorted(files - ROOT_FILES)}"


# -- one binding per public name ------------------------------------------------------------


def _module_of(package: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def bindings(path: Path, package: str) -> dict[str, list[int]]:
    """Public name -> the lines of the top-level statements of ``path`` that bind it
    (``from m import *`` binds ``m.__all__``)."""
    found: dict[str, list[int]] = defaultdict(list)
    for node in ast.parse(path.read_text()).body:
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    module = importlib.import_module(_module_of(package, node))
                    names += getattr(module, "__all__", [n for n in vars(module) if n[0] != "_"])
                else:
                    names.append(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            names = [a.asname or a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        for name in names:
            if not name.startswith("_"):
                found[name].append(node.lineno)
    return found


NAMESPACES = [
    ("tinyattn/__init__.py", "tinyattn"),
    ("tinyattn/nn/functional/__init__.py", "tinyattn.nn.functional"),
]


@pytest.mark.parametrize("path, package", NAMESPACES)
def test_no_public_name_is_bound_twice(path, package):
    twice = {n: lines for n, lines in bindings(ROOT / path, package).items() if len(lines) > 1}
    assert not twice, f"{path}: names bound more than once (name: lines): {twice}"


def test_nn_functional_lists_each_name_once():
    import tinyattn.nn.functional as F

    names = F.__all__
    assert len(names) == len(set(names)) and len(names) > 100
    assert all(hasattr(F, n) for n in names)


def test_the_binding_scan_sees_a_rebinding(tmp_path):
    src = tmp_path / "ns.py"
    src.write_text("from math import pi, tau\nfrom cmath import *\ndef e():\n    pass\n")
    found = bindings(src, "x")
    assert found["pi"] == [1, 2] and found["e"] == [2, 3] and found["tau"] == [1, 2]


# -- no writes into another module's private globals -----------------------------------------

MUTATORS = {"append", "extend", "insert", "remove", "pop", "clear", "add", "discard", "update",
            "setdefault"}  # fmt: skip


def _module_aliases(path: Path, tree: ast.AST) -> set[str]:
    """Names that ``path`` binds to a module (``import a.b as m``, ``from . import engine``)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    package = ".".join(parts if path.name == "__init__.py" else parts[:-1]).removesuffix(
        ".__init__"
    )
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _module_of(package, node)
            for alias in node.names:
                full = ROOT.joinpath(*base.split("."), alias.name)
                if full.with_suffix(".py").is_file() or (full / "__init__.py").is_file():
                    aliases.add(alias.asname or alias.name)
    return aliases


def _private_target(node: ast.AST, aliases: set[str]) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and isinstance(node.value, ast.Name)
        and node.value.id in aliases
    ):
        return f"{node.value.id}.{node.attr}"
    return None


def private_writes(path: Path) -> set[str]:
    """``alias._name`` for each write into an imported module's private global in ``path``."""
    tree = ast.parse(path.read_text())
    aliases = _module_aliases(path, tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
        ):
            targets = [node.func.value]
        for target in targets:
            while isinstance(target, ast.Subscript):  # mod._table[key] = ...
                target = target.value
            name = _private_target(target, aliases)
            if name:
                found.add(name)
    return found


def test_no_module_writes_another_modules_private_globals():
    """Features plug into the engine through its seam (``extensions``), never by writing
    its globals."""
    found = sorted((str(p.relative_to(ROOT)), w) for p in MODULES for w in private_writes(p))
    assert not found, f"writes into another module's private globals: {found}"


def test_the_write_scan_sees_each_form(tmp_path):
    pkg = tmp_path / "tinyattn"
    pkg.mkdir()
    (pkg / "engine.py").write_text("_hooks = []\n")
    src = pkg / "user.py"
    src.write_text(
        "from . import engine\nimport tinyattn.engine as eng\n"
        "engine._hooks.append(1)\neng._mode = True\nengine._count += 1\n"
        "engine._table['k'] = 2\nengine.public = 3\nlocal = object()\nlocal._x = 4\n"
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert private_writes(src) == {
            "engine._hooks",
            "eng._mode",
            "engine._count",
            "engine._table",
        }
    finally:
        ROOT = saved


# -- no cycle between folders ----------------------------------------------------------------


def _unit(module: str) -> str:
    """The folder a module sits in (below ``tinyattn``), or the module itself at the root."""
    return module.split(".")[1] if module.count(".") >= 1 else module


def _resolve(path: Path, node: ast.ImportFrom) -> list[str]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    package = ".".join(parts if path.name == "__init__.py" else parts[:-1]).removesuffix(
        ".__init__"
    )
    base = _module_of(package, node)
    out = []
    for alias in node.names:
        full = ROOT.joinpath(*base.split("."), alias.name)
        is_module = full.with_suffix(".py").is_file() or (full / "__init__.py").is_file()
        out.append(f"{base}.{alias.name}" if is_module else base)
    return out


def folder_graph() -> dict[str, set[str]]:
    """Folder (or root module) -> the folders its modules import (module level and in functions)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in MODULES:
        own = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if own == "tinyattn":
            continue  # the package namespace gathers everything
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = _resolve(path, node)
            for target in targets:
                if target.startswith("tinyattn.") and _unit(target) != _unit(own):
                    graph[_unit(own)].add(_unit(target))
                elif target == "tinyattn":
                    graph[_unit(own)].add("tinyattn")
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = set()
            while True:
                w = stack.pop()
                on.discard(w)
                members.add(w)
                if w == v:
                    break
            if len(members) > 1:
                out.append(frozenset(members))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_scan_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    assert cycles({"a": {"b"}, "b": set()}) == []


# Folder cycles that exist today, each to be removed (none): a new cycle fails, and so does an
# entry here whose cycle is gone.
KNOWN_FOLDER_CYCLES: list[frozenset[str]] = []


def unexpected_cycles(found: list[frozenset[str]], known: list[frozenset[str]]) -> list[list[str]]:
    """The cycles of ``found`` that no entry of ``known`` contains."""
    return [sorted(c) for c in found if not any(c <= k for k in known)]


def test_no_new_cycle_between_folders():
    found = cycles(folder_graph())
    assert not [sorted(c) for c in found if "core" in c], "core/ must import nothing outside it"
    new = unexpected_cycles(found, KNOWN_FOLDER_CYCLES)
    assert not new, f"imports that close a cycle between folders: {new}"
    gone = [sorted(k) for k in KNOWN_FOLDER_CYCLES if not any(c <= k for c in found)]
    assert not gone, f"these cycles are gone: remove them from KNOWN_FOLDER_CYCLES: {gone}"


def test_a_new_folder_cycle_fails():
    graph = {"core": set(), "ops": {"core"}, "nn": {"ops", "core"}}
    assert unexpected_cycles(cycles(graph), []) == []
    graph["ops"].add("nn")  # ops reaching up into nn closes a cycle
    assert unexpected_cycles(cycles(graph), []) == [["nn", "ops"]]
    assert unexpected_cycles(cycles(graph), [frozenset({"nn", "ops", "shims"})]) == []
