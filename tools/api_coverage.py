"""Which torch API do public attention programs use, and does tinyattn have it?

The corpus is a list of public programs people learn or build attention models
from (``tests/corpus/manifest.json``: repository, files). Their code is never
stored here; only facts about it: for each program its repository, paths, commit
and every torch name it uses (``tests/corpus/api_usage.json``).

Names are canonical torch paths, found with an ``ast`` scan that follows imports
(``import torch.nn as nn``, ``from torch import nn``, ``from torch.nn import
functional as F``, ``from torch.utils.data import DataLoader``, aliases):

* ``torch.nn.functional.softmax``, ``torch.optim.AdamW``, ``torch.utils.data.DataLoader``
  ... resolve against tinyattn by swapping the first component: ``tinyattn.nn.functional.softmax``;
* ``Tensor.view``: an attribute *call* ``x.view(...)`` whose name is a
  ``torch.Tensor`` method, or an attribute read/write ``x.shape`` whose name is a
  ``torch.Tensor`` property (an approximation: the receiver's type is not known);
  resolves to ``tinyattn.Tensor.view``;
* ``torch.nn.Module.parameters``: likewise for ``nn.Module`` methods that are not
  Tensor methods; ``torch.optim.Optimizer.step`` for optimizer methods;
* ``einops.rearrange``, ``einops.layers.torch.Rearrange``: einops names; functions work
  with tinyattn when einops accepts tinyattn tensors, layers resolve to ``tinyattn.nn.X``.

Commands::

    python tools/api_coverage.py scan FILE... --repo R --path P --commit C
    python tools/api_coverage.py scan-manifest --mirrors /work/.mirror
    python tools/api_coverage.py report [--registry FILE]

``scan`` adds or replaces the record of program ``(R, P)`` in the JSON (FILE may be
``.py``, ``.ipynb``, or a d2l ``.md`` chapter, whose PyTorch blocks are used).
``scan-manifest`` scans every program of the manifest from fetched bare mirrors
(``<mirrors>/<owner>+<name>/repo``) at their HEAD. ``report`` writes
``docs/api-coverage.md`` and prints the names tinyattn lacks. Scanning needs torch
(to know Tensor's methods); the report and the test need only tinyattn.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # this checkout's tinyattn, not an installed one
    sys.path.insert(0, str(ROOT))
USAGE = ROOT / "tests" / "corpus" / "api_usage.json"
MANIFEST = ROOT / "tests" / "corpus" / "manifest.json"
DOC = ROOT / "docs" / "api-coverage.md"

TRACKED_ROOTS = ("torch", "einops")
# Tensor properties read as attributes (``x.shape``); generic words left out.
TENSOR_PROPERTIES = {
    "T", "mT", "H", "mH", "data", "device", "dtype", "grad", "grad_fn", "is_cuda", "is_cpu",
    "is_leaf", "ndim", "requires_grad", "shape", "itemsize", "nbytes", "real", "imag",
}  # fmt: skip
# Attribute names too generic to attribute to torch objects when called.
GENERIC_CALLS = {"compile", "name", "register_module", "share_memory"}
OPTIMIZER_ATTRS = {"param_groups"}
# Methods programs define themselves: the keywords of ``self.forward(x, mask=m)`` are theirs.
USER_DEFINED = {"torch.nn.Module.forward", "torch.nn.Module.extra_repr"}
SCHEDULER_METHODS = {"get_last_lr"}
# Not scanned: names whose first component after torch is private.
PRIVATE = re.compile(r"(^|\.)_[^_]")
# Optional features outside tinyattn's scope, recorded apart ("excluded") and not
# required: ONNX export, TensorBoard logging (a wrapper of another package), and what
# is passed to torch's pickle allow-lists (tinyattn.load never unpickles), which is
# where the internal class paths ``torch.nn.modules.<file>.<Class>`` appear.
OUT_OF_SCOPE = ("torch.onnx.", "torch.utils.tensorboard.", "torch.nn.modules.")
PICKLE_ALLOW_LISTS = ("torch.serialization.safe_globals", "torch.serialization.add_safe_globals")


# --------------------------------------------------------------------------- sources


def python_sources(path: str, text: str) -> list[str]:
    """The Python code of a file: itself, a notebook's code cells, or a d2l chapter's PyTorch blocks."""
    if path.endswith(".ipynb"):
        cells = json.loads(text)["cells"]
        out = []
        for c in cells:
            if c.get("cell_type") != "code":
                continue
            src = c["source"] if isinstance(c["source"], str) else "".join(c["source"])
            out.append(_strip_magics(src))
        return out
    if path.endswith(".md"):
        return _d2l_pytorch_blocks(text)
    return [text]


def _strip_magics(src: str) -> str:
    return "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines()
    )


def _d2l_pytorch_blocks(text: str) -> list[str]:
    """d2l's ```{.python .input} blocks tagged ``%%tab``/``#@tab`` pytorch or all."""
    blocks = re.findall(r"```\{\.python \.input\}\n(.*?)```", text, flags=re.S)
    hash_style = "#@tab" in text
    out = []
    for b in blocks:
        first = b.lstrip().splitlines()[0] if b.strip() else ""
        m = re.match(r"(%%tab|#@tab)\s+(.*)", first)
        if m:
            tabs = {t.strip() for t in m.group(2).split(",")}
            if "pytorch" not in tabs and "all" not in tabs:
                continue
        elif hash_style:  # old style: an untagged block is MXNet's
            continue
        out.append(_strip_magics(b))
    return out


# --------------------------------------------------------------------------- scanning


def _torch_attr_sets() -> tuple[set[str], set[str], set[str], set[str]]:
    import torch

    tensor = {n for n in dir(torch.Tensor) if not n.startswith("_")}
    methods = {n for n in tensor if callable(getattr(torch.Tensor, n, None))}
    module = {n for n in dir(torch.nn.Module) if not n.startswith("_") and n[0].islower()}
    module -= tensor | GENERIC_CALLS
    optim = {n for n in dir(torch.optim.Optimizer) if not n.startswith("_") and n[0].islower()}
    optim -= tensor | module | GENERIC_CALLS
    return methods - GENERIC_CALLS, module, optim, tensor


class _Scanner(ast.NodeVisitor):
    def __init__(self, sets) -> None:
        self.tensor_methods, self.module_methods, self.optim_methods, _ = sets
        self.alias: dict[str, str] = {}
        self.names: set[str] = set()
        self.excluded: set[str] = set()
        self.keywords: dict[str, set[str]] = defaultdict(set)

    # imports --------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name.split(".")[0] in TRACKED_ROOTS:
                if "." in a.name:  # ``import torch.onnx``: the module must import
                    self._record(a.name, module_ok=True)
                if a.asname:
                    self.alias[a.asname] = a.name
                else:
                    root = a.name.split(".")[0]
                    self.alias[root] = root

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if node.level or mod.split(".")[0] not in TRACKED_ROOTS:
            return
        for a in node.names:
            if a.name == "*":
                continue
            full = f"{mod}.{a.name}"
            self.alias[a.asname or a.name] = full
            self._record(full)

    # uses -----------------------------------------------------------------
    def _chain(self, node: ast.AST) -> list[str] | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.alias:
            return [self.alias[node.id], *reversed(parts)]
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = self._chain(node)
        if chain is not None:
            self._record(".".join(chain))
            return  # the whole chain is one name
        self.generic_visit(node)
        attr = node.attr
        is_call = getattr(node, "_is_call_func", False)
        if is_call:
            if attr in self.tensor_methods and not _looks_like_python_builtin(node):
                self.names.add(f"Tensor.{attr}")
            elif attr in self.module_methods:
                self.names.add(f"torch.nn.Module.{attr}")
            elif attr in self.optim_methods:
                self.names.add(f"torch.optim.Optimizer.{attr}")
            elif attr in SCHEDULER_METHODS:
                self.names.add(f"torch.optim.lr_scheduler.LRScheduler.{attr}")
        elif attr in TENSOR_PROPERTIES:
            self.names.add(f"Tensor.{attr}")
        elif attr in OPTIMIZER_ATTRS:
            self.names.add(f"torch.optim.Optimizer.{attr}")

    def visit_Call(self, node: ast.Call) -> None:
        chain = self._chain(node.func) if isinstance(node.func, ast.Attribute) else None
        if chain is not None and ".".join(chain) in PICKLE_ALLOW_LISTS:
            self._record(".".join(chain))
            for arg in (a for x in node.args for a in ast.walk(x)):  # classes to unpickle
                if isinstance(arg, ast.Attribute) and (c := self._chain(arg)):
                    self.excluded.add(".".join(c))
            return
        if isinstance(node.func, ast.Attribute):
            node.func._is_call_func = True  # type: ignore[attr-defined]
            node.func._call = node  # type: ignore[attr-defined]
        self.visit(node.func)
        called = self._called_name(node)
        kws = {k.arg for k in node.keywords if k.arg is not None}  # ``**opts`` has no name
        if called and kws and called not in USER_DEFINED:
            self.keywords[called] |= kws
        for child in [*node.args, *node.keywords]:
            self.visit(child)

    def _called_name(self, node: ast.Call) -> str | None:
        """The torch name this call calls: its function's chain (``F.softmax``), an imported
        name (``softmax``), or the method name recorded for an attribute call."""
        func = node.func
        chain = self._chain(func) if isinstance(func, ast.Attribute) else None
        if isinstance(func, ast.Name) and func.id in self.alias:
            chain = [self.alias[func.id]]
        if chain is not None:
            name = ".".join(chain)
            return name if name in self.names else None
        if isinstance(func, ast.Attribute) and not _looks_like_python_builtin(func):
            for prefix in ("Tensor.", "torch.nn.Module.", "torch.optim.Optimizer."):
                if prefix + func.attr in self.names:
                    return prefix + func.attr
        return None

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.alias and not _is_module(self.alias[node.id]):
            self._record(self.alias[node.id])

    def _record(self, name: str, module_ok: bool = False) -> None:
        name = _up_to_a_value(name)
        if PRIVATE.search(name):
            return
        if name.startswith(OUT_OF_SCOPE):
            self.excluded.add(name)
            return
        if not module_ok and _is_module(name):
            return
        self.names.add(name)


def _up_to_a_value(name: str) -> str:
    """The chain cut after the first plain value in torch (``torch.version.cuda.split`` ->
    ``torch.version.cuda``: what follows is a method of a ``str``, not a torch name)."""
    parts = name.split(".")
    if parts[0] != "torch":
        return name
    obj = importlib.import_module("torch")
    for i, part in enumerate(parts[1:], start=1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            return name
        if obj is None or isinstance(obj, (str, bytes, int, float)):
            return ".".join(parts[: i + 1])
    return name


def _looks_like_python_builtin(node: ast.Attribute) -> bool:
    """``"a b".split()``, ``lst.sort(key=...)``, ``df.rename(columns=...)``, ``d.values()``: not tensors."""
    call = getattr(node, "_call", None)
    if call is None:
        return False
    if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return True
    kw = {k.arg for k in call.keywords}
    if node.attr == "split":
        if not call.args and not kw:
            return True
        first = call.args[0] if call.args else None
        return isinstance(first, ast.Constant) and isinstance(first.value, str)
    if node.attr == "sort":
        return "key" in kw or "reverse" in kw
    if node.attr == "rename":
        return "columns" in kw or "index" in kw
    if node.attr in ("index", "count"):
        return True
    if node.attr == "values":  # ``d.values()``; Tensor.values() is for sparse tensors only
        return not call.args and not kw
    return False


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
        return True
    except Exception:
        return False


def scan_sources(sources: list[str], sets=None) -> tuple[set[str], set[str]]:
    """(names used, names excluded) in the Python sources of one file."""
    scanner = _scan(sources, sets)
    return scanner.names, scanner.excluded - scanner.names


def scan_keywords(sources: list[str], sets=None) -> dict[str, set[str]]:
    """``name -> keyword argument names`` of the calls of torch names in the sources."""
    return dict(_scan(sources, sets).keywords)


def _scan(sources: list[str], sets=None) -> _Scanner:
    scanner = _Scanner(sets or _torch_attr_sets())
    for src in sources:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue  # e.g. a notebook cell of shell commands
        scanner.visit(tree)  # aliases carry over from earlier cells, as in a notebook
    return scanner


def scan_files(files: list[tuple[str, str]]) -> dict:
    """``{"names": [...], "excluded": [...], "keywords": {name: [...]}}`` of a program made
    of ``(path, text)`` files."""
    sets = _torch_attr_sets()
    names: set[str] = set()
    excluded: set[str] = set()
    keywords: dict[str, set[str]] = defaultdict(set)
    for path, text in files:
        scanner = _scan(python_sources(path, text), sets)
        names |= scanner.names
        excluded |= scanner.excluded - scanner.names
        for name, kws in scanner.keywords.items():
            keywords[name] |= kws
    return {
        "names": sorted(names),
        "excluded": sorted(excluded - names),
        "keywords": {n: sorted(k) for n, k in sorted(keywords.items()) if n in names},
    }


# --------------------------------------------------------------------------- records


def load_usage() -> dict:
    if USAGE.exists():
        return json.loads(USAGE.read_text())
    return {"programs": []}


def save_usage(data: dict) -> None:
    data["programs"].sort(key=lambda p: (p["repo"], p["path"]))
    USAGE.parent.mkdir(parents=True, exist_ok=True)
    USAGE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def upsert(data: dict, record: dict) -> None:
    progs = [
        p for p in data["programs"] if (p["repo"], p["path"]) != (record["repo"], record["path"])
    ]
    data["programs"] = [*progs, record]


def _git(gitdir: str, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={gitdir}", *args], check=True, capture_output=True, text=True
    ).stdout


def scan_manifest(mirrors: str, only: str = "") -> None:
    manifest = json.loads(MANIFEST.read_text())
    data = load_usage()
    for prog in manifest["programs"]:
        repo = prog["repo"]
        if only and only not in f"{repo}:{prog['path']}":
            continue
        if "text" in prog:  # read through the search index: scan it by hand
            print(f"skip {repo}:{prog['path']} (not a mirror; scan it by hand)")
            continue
        gitdir = os.path.join(mirrors, repo.replace("/", "+"), "repo")
        if not os.path.isdir(gitdir):
            print(f"skip {repo}:{prog['path']} (no mirror at {gitdir}; its record is kept)")
            continue
        commit = _git(gitdir, "rev-parse", "HEAD").strip()
        files = [(p, _git(gitdir, "show", f"{commit}:{p}")) for p in prog["files"]]
        record = {
            "repo": repo,
            "path": prog["path"],
            "files": prog["files"],
            "commit": commit,
            "what": prog.get("what", ""),
            **scan_files(files),
        }
        upsert(data, record)
        print(f"{repo} {prog['path']}: {len(record['names'])} names")
    save_usage(data)


# --------------------------------------------------------------------------- resolving


def tinyattn_target(name: str) -> str:
    """The tinyattn path a torch name resolves to."""
    if name.startswith("Tensor."):
        return "tinyattn." + name
    if name.startswith("torch."):
        return "tinyattn" + name[len("torch") :]
    if name.startswith("einops.layers.torch."):
        # einops ships no tinyattn layers module; tinyattn's own are ``tinyattn.nn.Rearrange``
        # etc. (same constructor arguments, built on tinyattn's Module).
        return "tinyattn.nn." + name.rsplit(".", 1)[1]
    return name  # einops functions: called on tinyattn tensors


def resolve(name: str):
    """The tinyattn object a torch name resolves to; raises AttributeError/ImportError if absent."""
    import tinyattn

    target = tinyattn_target(name)
    if name == "torch.optim.Optimizer.param_groups":  # an instance attribute
        p = tinyattn.zeros(1, requires_grad=True)
        return tinyattn.optim.SGD([p], lr=0.1).param_groups
    if name.startswith("einops.") and not name.startswith("einops.layers."):
        return _einops_on_tinyattn(name.split(".", 1)[1])
    parts = target.split(".")
    obj = importlib.import_module(parts[0]) if parts[0] != "tinyattn" else tinyattn
    path = parts[0]
    for p in parts[1:]:
        path = f"{path}.{p}"
        try:
            obj = getattr(obj, p)
        except AttributeError:
            obj = importlib.import_module(path)  # a submodule not imported by its parent
    return obj


def _einops_on_tinyattn(fn: str):
    """An einops function, after checking einops accepts tinyattn tensors for it."""
    import einops
    import numpy as np

    import tinyattn

    x = tinyattn.tensor(np.arange(6.0).reshape(2, 3))
    f = getattr(einops, fn)
    if fn in ("rearrange", "repeat", "reduce"):
        extra = ("mean",) if fn == "reduce" else ()
        out = f(x, "a b -> b a" if fn != "reduce" else "a b -> b", *extra)
        if not isinstance(out, tinyattn.Tensor):
            raise AttributeError(f"einops.{fn} on a tinyattn tensor gave {type(out).__name__}")
    elif fn == "einsum":
        out = f(x, x, "a b, a b -> a")
        if not isinstance(out, tinyattn.Tensor):
            raise AttributeError(f"einops.einsum on tinyattn tensors gave {type(out).__name__}")
    elif fn in ("pack", "unpack"):
        packed, ps = einops.pack([x, x], "* b")
        if not isinstance(packed, tinyattn.Tensor):
            raise AttributeError(f"einops.pack on tinyattn tensors gave {type(packed).__name__}")
    return f


def accepts_keyword(obj, keyword: str) -> bool | None:
    """Whether calling ``obj`` (a function, method or class) accepts ``keyword=...``:
    True/False from its signature, None when the signature cannot tell (``**kwargs``,
    or no signature)."""
    import inspect

    target = obj.__init__ if isinstance(obj, type) else obj
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    param = sig.parameters.get(keyword)
    if param is not None:
        return param.kind is not inspect.Parameter.POSITIONAL_ONLY
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return False


def presence(names: list[str]) -> dict[str, str | None]:
    """``name -> None`` when tinyattn has it, else the reason it does not."""
    out = {}
    for n in names:
        try:
            resolve(n)
            out[n] = None
        except Exception as e:
            out[n] = f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
    return out


def category(name: str) -> str:
    if name.startswith("Tensor."):
        return "Tensor"
    if name.startswith("einops"):
        return "einops"
    for prefix, cat in [
        ("torch.nn.functional.", "F"),
        ("torch.nn.Module.", "nn.Module"),
        ("torch.nn.", "nn"),
        ("torch.optim.", "optim"),
        ("torch.utils.", "utils"),
    ]:
        if name.startswith(prefix):
            return cat
    return "torch"


# --------------------------------------------------------------------------- report


def report(registry: str | None = None) -> list[str]:
    data = load_usage()
    users: dict[str, list[str]] = defaultdict(list)
    for p in data["programs"]:
        label = f"{p['repo'].split('/')[1]}:{p['path']}"
        for n in p["names"]:
            users[n].append(label)
    names = sorted(users, key=lambda n: (category(n), n))
    present = presence(names)
    reg = json.loads(Path(registry).read_text()) if registry else None
    tested = _tested_how(names, present, reg)
    missing = [n for n in names if present[n] is not None]

    lines = [DOC_HEAD.strip(), ""]
    lines.append("## Corpus\n")
    lines.append("| repository | program | files | commit | names |")
    lines.append("| --- | --- | --- | --- | --- |")
    for p in data["programs"]:
        files = ", ".join(f"`{f}`" for f in p.get("files", [p["path"]]))
        lines.append(
            f"| {p['repo']} | {p['path']} | {files} | `{p['commit'][:10]}` | {len(p['names'])} |"
        )
    lines.append("")
    lines.append(
        f"{len(names)} distinct names in {len(data['programs'])} programs; "
        f"{len(names) - len(missing)} present in tinyattn, {len(missing)} missing.\n"
    )
    lines.append("## Names\n")
    lines.append(
        '"tested how" reads the gradcheck/parity registry of a full test run '
        "(`TINYATTN_REGISTRY_DUMP=FILE python -m pytest tests`, then `report --registry FILE`)."
        if reg
        else '"tested how" lists the probed Functions only: run `report --registry FILE` '
        "with the registry of a full test run for their gradcheck/parity status."
    )
    lines.append("")
    lines.append("| name | programs using it | present in tinyattn? | tested how |")
    lines.append("| --- | --- | --- | --- |")
    for n in names:
        ok = "yes" if present[n] is None else f"**no** ({present[n]})"
        lines.append(f"| `{n}` | {len(users[n])} | {ok} | {tested[n]} |")
    lines.append("")
    extra = (
        DOC.read_text().split(RUNS_MARK, 1)[1]
        if DOC.exists() and RUNS_MARK in DOC.read_text()
        else RUNS_DEFAULT
    )
    lines.append(RUNS_MARK + extra.rstrip("\n"))
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text("\n".join(lines) + "\n")
    return missing


def _tested_how(names, present, reg) -> dict[str, str]:
    """How each present name is exercised: probe-found Function classes vs the registry."""
    sys.path.insert(0, str(ROOT / "tests" / "corpus"))
    sys.path.insert(0, str(ROOT / "tests"))
    import numpy as np
    from probes import probe_functions  # tests/corpus/probes.py

    out = {}
    for n in names:
        if present[n] is not None:
            out[n] = "-"
            continue
        try:
            with np.errstate(all="ignore"):
                fns = probe_functions(n)
        except Exception as e:
            out[n] = f"probe failed ({type(e).__name__})"
            continue
        if fns is None:
            out[n] = "exists (not differentiable, or no probe)"
        elif not fns:
            out[n] = "returns no graph for float inputs"
        elif reg is None:
            out[n] = "Functions: " + ", ".join(sorted(fns))
        else:
            lack = [f for f in sorted(fns) if f not in reg["gradchecked"] or f not in reg["parity"]]
            out[n] = (
                "gradcheck + parity: " + ", ".join(sorted(fns))
                if not lack
                else "**untested**: " + ", ".join(lack)
            )
    return out


RUNS_MARK = "## Runs unchanged"
RUNS_DEFAULT = """

Not measured yet: run `python tools/run_public_programs.py --mirrors /work/.mirror`.
"""

DOC_HEAD = """
# API coverage: what public attention programs use

Generated by `python tools/api_coverage.py report` from `tests/corpus/api_usage.json`
(do not edit by hand above the "Runs unchanged" section). The corpus is a set of public
programs people learn or build attention models from; only facts about them are stored
(repository, paths, commit, the torch names they use), never their code.
`tests/corpus/test_api_coverage.py` fails for every name tinyattn lacks, and for every
differentiable name whose autograd `Function`s are not gradchecked and parity-tested.

## How names are collected

An `ast` scan (`tools/api_coverage.py`) follows each file's imports
(`import torch.nn as nn`, `from torch import nn`, `from torch.nn import functional as F`,
`from torch.utils.data import DataLoader`, any alias) and records canonical torch paths:

* `torch.X.Y`: any attribute chain rooted at an imported torch name, resolved against
  tinyattn by replacing `torch` with `tinyattn` (`torch.nn.functional.softmax` ->
  `tinyattn.nn.functional.softmax`);
* `Tensor.name`: an attribute call `x.name(...)` where `name` is a `torch.Tensor` method,
  or an attribute access `x.shape` for Tensor properties (`shape`, `T`, `grad`, `data`,
  `dtype`, `device`, ...). The receiver's type is unknown, so this over-approximates
  (`np_array.reshape(...)` counts), except that obvious Python calls are skipped
  (`"a b".split()`, `str.split(",")`, `list.sort(key=...)`, `.index(...)`, `.count(...)`,
  `d.values()`: `Tensor.values()` is for sparse tensors, which the corpus never builds);
  resolves to `tinyattn.Tensor.name`;
* `torch.nn.Module.name` / `torch.optim.Optimizer.name`: attribute calls whose name is an
  `nn.Module` (resp. `Optimizer`) method and not a Tensor method (`model.parameters()`,
  `optimizer.step()`), plus `optimizer.param_groups` and `scheduler.get_last_lr()`;
* `einops.name`: einops functions count as present when they accept and return tinyattn
  tensors; `einops.layers.torch.X` (torch modules) resolves to `tinyattn.nn.X` (einops has no
  tinyattn layers module; tinyattn's layers take the same arguments).

Notebooks contribute their code cells (shell and magic lines dropped); d2l chapters
contribute their ` ```{.python .input}` blocks tagged `%%tab pytorch`/`all` (or
`#@tab pytorch`/`all`). d2l's own helpers (`d2l.xxx`) are not torch names and are not
counted.

### Which programs

Programs people learn attention and sequence models from: GPTs (nanoGPT, minGPT,
ng-video-lecture, makemore, LLMs-from-scratch), Transformers (the Annotated Transformer,
d2l, jadore801120, hyunwoongko, graykode/nlp-tutorial, ViT), and RNN encoder-decoders
with attention (bentrevett/pytorch-seq2seq, d2l's modern-RNN chapter, spro/practical-pytorch,
whose char-RNN and seq2seq notebooks became the PyTorch tutorials of those names).
Then modern LLM blocks and more Transformers people read: karpathy/llama2.c (Llama 2 with
RMSNorm, RoPE as cos/sin pairs, grouped-query attention, SwiGLU), labml's annotated
implementations (einsum multi-head attention, feed-forward, encoder/decoder layers,
positional encodings, RoPE, ALiBi: the source of many multi-head attention tutorials),
LLMs-from-scratch's bonus material (ten multi-head attention implementations, KV cache,
grouped-query attention, standalone Llama 3.2 and Qwen3), hkproj/pytorch-transformer
(the "Coding a Transformer from scratch" video), pytorch/examples' nn.Transformer
translation example, and vit-pytorch's MAE, CaiT and small-dataset ViT.
Programs whose core computes in complex numbers (`torch.polar`, `torch.view_as_complex`
RoPE, as in Meta's Llama reference) are not in: complex tensors are outside tinyattn's
scope for now. The multi-head attention notebook imports FlexAttention
(`torch.nn.attention.flex_attention`) only when CUDA is available; its names are
counted all the same, by the rule below.
Fourteen official pytorch/tutorials programs are in (autograd basics, custom functions and
double backward, saved-tensor hooks, forward-mode AD, torch.func's Jacobians, Hessians and
per-sample gradients, the SDPA tutorial, seq2seq translation, the tensor tutorials): the
repository is too large to fetch here, so they were read through the search index at the
commits listed, and scanned by hand (`scan FILE ...`). spro/practical-pytorch predates PyTorch 0.4 and calls
`torch.autograd.Variable`, `torch.range` and `nn.utils.clip_grad_norm`, which torch still
ships (the last two warn they are deprecated); tinyattn has them too, with the same warnings.

### Exclusion rule

Nothing the corpus touches is excluded for being hardware-specific: `torch.cuda.*`,
`torch.backends.*`, `torch.accelerator.*`, `torch.amp`/`torch.cuda.amp`, `torch.compile`,
`torch.distributed` run on a CPU-only machine in torch too (returning "not available" or
doing nothing), and the programs call them unconditionally, so tinyattn must have them
(as shims) for the programs to run unchanged. Modules a program imports by their dotted
name (`import torch.onnx`, `import torch.nn as nn`) must import too.

Excluded (listed per program under `excluded` in the JSON, not required):

* private names (any component starting with a single `_`, e.g. `torch._dynamo`);
* optional features outside tinyattn's scope that the programs use only behind an option:
  `torch.onnx.*` (export to another runtime) and `torch.utils.tensorboard.*` (a logger
  wrapping another package);
* `torch.nn.modules.<file>.<Class>` paths: they appear only in lists handed to torch's
  pickle allow-list (`torch.serialization.safe_globals`), and tinyattn never unpickles;
* files that are not the program (download helpers, the book's unit tests) are not
  scanned, and module objects used bare are not names.

### "Tested how"

`tests/corpus/probes.py` calls each name on float64 inputs that require grad, as the
corpus does. When the output has an autograd graph, the name is differentiable and
every `Function` class in that graph must be in the harness's gradcheck and parity
records (`tests/harness.py`), checked by
`test_differentiable_name_is_gradchecked_and_parity_tested` after the whole suite ran.
Names that do not compute on tensors (dtypes, flags, optimizers, data loaders, `nn.init`,
`Module` methods) are only required to exist.
"""


def _registry_default() -> str | None:
    p = os.environ.get("TINYATTN_REGISTRY_DUMP")
    return p if p and Path(p).exists() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scan", help="scan files of one program into the JSON")
    s.add_argument("files", nargs="+")
    s.add_argument("--repo", required=True)
    s.add_argument("--path", required=True, help="program label (its main file's path)")
    s.add_argument("--commit", required=True)
    s.add_argument("--what", default="")
    m = sub.add_parser("scan-manifest", help="scan every program of the manifest from mirrors")
    m.add_argument("--mirrors", default="/work/.mirror")
    m.add_argument("--only", default="", help="programs whose 'repo:path' contains this")
    r = sub.add_parser("report", help="write docs/api-coverage.md, print missing names")
    r.add_argument(
        "--registry",
        default=None,
        help="JSON {gradchecked: [...], parity: [...]} dumped by a test run with "
        "TINYATTN_REGISTRY_DUMP=FILE",
    )
    args = ap.parse_args(argv)
    if args.cmd == "scan":
        files = [(f, Path(f).read_text()) for f in args.files]
        data = load_usage()
        upsert(
            data,
            {
                "repo": args.repo,
                "path": args.path,
                "files": [os.path.basename(f) for f in args.files],
                "commit": args.commit,
                "what": args.what,
                **scan_files(files),
            },
        )
        save_usage(data)
    elif args.cmd == "scan-manifest":
        scan_manifest(args.mirrors, args.only)
    else:
        missing = report(args.registry or _registry_default())
        print(f"{len(missing)} names missing in tinyattn:")
        for n in missing:
            print("  " + n)
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
