"""Record torch's public call signatures and package tree as data (run with torch installed).

    python tools/torch_signatures.py            # writes tests/surface/torch_signatures.json,
                                                # torch_nn_methods.json, torch_packages.json

The tests in ``tests/surface/`` read those files and need no torch. Each callable is
stored as a list of overloads; an overload is a list of parameters
``[name, kind, default]`` with ``kind`` one of ``P`` (positional-only), ``PK``
(positional or keyword), ``K`` (keyword-only), ``VP`` (``*args``), ``VK``
(``**kwargs``) and ``PKV`` (an int list that may also be given as varargs, as
``zeros(2, 3)`` and ``zeros(size=(2, 3))``); ``default`` is a string, or ``None`` when
the parameter is required. Where each entry comes from (``source``):

* ``parser``: the overloads torch's Python argument parser lists when no overload
  matches a call (``add() ... but expected (Tensor input, Tensor other, *, Number
  alpha = 1, Tensor out = None)``): the exact signatures it accepts, used first.
* ``stub``: for builtins whose parser message lists nothing, the Python signature lines
  torch generates from its operator schemas (``torch/_C/_VariableFunctions.pyi``, class
  ``TensorBase`` in ``torch/_C/__init__.pyi``, ``torch/_C/_nn.pyi``), one entry per
  ``@overload``, each keyword checked by a call (keywords torch's parser calls
  unexpected are dropped and named in ``source``).
* ``schema``: the operator schemas (``torch._C._jit_get_all_schemas()``), for builtins
  without a stub with one Python overload: ``aten::linalg_X`` for ``torch.linalg.X``
  (and so on for ``special`` and ``fft``). ``self`` is ``input``; ``.out`` overloads
  become an ``out=`` keyword; factories take ``requires_grad``; TorchScript-only
  overloads (no tensor argument) and named-tensor ones are dropped.
* ``inspect``: ``inspect.signature`` of torch's Python-level functions and classes.
* ``doc``: the signature line opening the docstring (``zeros(*size, *, out=None, ...)``).
* ``overrides``: ``torch.overrides.get_testing_overrides()``, the last resort.
"""

from __future__ import annotations

import ast
import inspect
import json
import pkgutil
import re
import sys
import warnings
from pathlib import Path

import torch

OUT = Path(__file__).resolve().parent.parent / "tests" / "surface"
_FACTORY_KEYS = {"dtype", "layout", "device", "pin_memory"}
_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "P",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "PK",
    inspect.Parameter.KEYWORD_ONLY: "K",
    inspect.Parameter.VAR_POSITIONAL: "VP",
    inspect.Parameter.VAR_KEYWORD: "VK",
}


class _Probe:
    """An argument no torch overload accepts: calling with it makes the parser list them."""


# -- operator schemas --------------------------------------------------------------------
def _schemas_by_name() -> dict[str, list]:
    table: dict[str, list] = {}
    for schema in torch._C._jit_get_all_schemas():
        if schema.name.startswith("aten::"):
            table.setdefault(schema.name[6:], []).append(schema)
    return table


def _is_python_overload(schema) -> bool:
    types = [str(a.type) for a in schema.arguments]
    if any("Dimname" in t for t in types):
        return False  # named-tensor overloads
    keys = {a.name for a in schema.arguments if a.kwarg_only}
    return any("Tensor" in t for t in types) or _FACTORY_KEYS <= keys


def _default(arg) -> str | None:
    if not arg.has_default_value():
        return None
    return repr(arg.default_value)


def _schema_overload(schema, method: bool) -> list | None:
    """One schema as a Python overload, or None when it is not one for this kind of name."""
    args = list(schema.arguments)
    if method:
        if not args or args[0].name != "self" or "Tensor" not in str(args[0].type):
            return None
        args = args[1:]
    params, has_out = [], False
    for a in args:
        if a.is_out:
            has_out = True
            continue
        name = "input" if a.name == "self" and "Tensor" in str(a.type) else a.name
        params.append([name, "K" if a.kwarg_only else "PK", _default(a)])
    if has_out:
        params.append(["out", "K", "None"])
    keys = {p[0] for p in params if p[1] == "K"}
    if _FACTORY_KEYS <= keys:
        params.append(["requires_grad", "K", "False"])
    positional = [p for p in params if p[1] == "PK"]
    if len(positional) == 1 and str(_arg_type(args, positional[0][0])).endswith("[]"):
        positional[0][1] = "PKV"
    return params


def _arg_type(args, name: str):
    for a in args:
        if a.name == name or (name == "input" and a.name == "self"):
            return a.type
    return ""


def _schema_overloads(schemas: list, method: bool) -> list[list]:
    """Python overloads of one operator: ``.out`` merged into its base, duplicates dropped."""
    found: list[list] = []
    for schema in schemas:
        if not _is_python_overload(schema):
            continue
        params = _schema_overload(schema, method)
        if params is None:
            continue
        names = [p[0] for p in params if p[0] != "out"]
        twin = next((o for o in found if [p[0] for p in o if p[0] != "out"] == names), None)
        if twin is None:
            found.append(params)
        elif any(p[0] == "out" for p in params) and not any(p[0] == "out" for p in twin):
            twin.append(["out", "K", "None"])
    return found


# -- the generated stubs ------------------------------------------------------------------
def _stub_params(fn_def: ast.FunctionDef, bound: bool) -> list:
    a = fn_def.args
    params = [[x.arg, "P", None] for x in a.posonlyargs] + [[x.arg, "PK", None] for x in a.args]
    for param, default in zip(reversed(params), reversed(a.defaults)):
        param[2] = ast.unparse(default)
    if a.vararg:
        params.append([a.vararg.arg, "VP", None])
    for x, default in zip(a.kwonlyargs, a.kw_defaults):
        params.append([x.arg, "K", None if default is None else ast.unparse(default)])
    if a.kwarg:
        params.append([a.kwarg.arg, "VK", None])
    return params[1:] if bound else params


def _stub_table(path: Path, class_name: str | None = None) -> dict[str, list]:
    """``{name: [overload, ...]}`` from a generated ``.pyi`` (module level or one class)."""
    tree = ast.parse(path.read_text())
    body = tree.body
    if class_name:
        body = next(
            n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name
        )
    table: dict[str, list] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef):
            table.setdefault(node.name, []).append(_stub_params(node, bound=class_name is not None))
    return table


def _stubs() -> dict[str, dict]:
    stub_dir = Path(torch.__file__).parent / "_C"
    return {
        "torch": _stub_table(stub_dir / "_VariableFunctions.pyi"),
        "Tensor": _stub_table(stub_dir / "__init__.pyi", "TensorBase"),
        "nn": _stub_table(stub_dir / "_nn.pyi"),
    }


# -- the Python argument parser's own list -------------------------------------------------
def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _parse_parser_signature(text: str) -> list:
    params, kind = [], "PK"
    for item in _split_top(text):
        if item == "*":
            kind = "K"
            continue
        decl, _, default = item.partition(" = ")
        name = decl.split()[-1].lstrip("*")
        params.append([name, kind, default.strip() if default else None])
    positional = [p for p in params if p[1] == "PK"]
    if len(positional) == 1 and re.search(
        r"(tuple of ints|tuple of SymInts) " + positional[0][0] + r"\b", text
    ):
        positional[0][1] = "PKV"
    return params


def _message(fn, *args, **kwargs) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args, **kwargs)
    except Exception as e:  # any failure: its message is read
        return str(e)
    return ""


def _parser_overloads(fn) -> tuple[list | None, str]:
    """The overloads torch's argument parser lists for a call no overload matches."""
    msg = ""
    calls = [((_Probe(),), {}), ((torch.ones(2, 2), _Probe()), {})]
    calls += [(args, {"__probe__": _Probe()}) for args, _ in calls]
    for args, kwargs in calls:
        msg = _message(fn, *args, **kwargs)
        if "expected one of:" in msg:
            sigs = re.findall(r"^ \* \((.*)\)$", msg, flags=re.M)
            return [_parse_parser_signature(s) for s in sigs], msg
        single = re.search(r"but expected \((.*)\)$", msg)
        if single:
            return [_parse_parser_signature(single.group(1))], msg
    return None, msg


_SAMPLES = {
    "Tensor": lambda: torch.ones(2, 2),
    "int": lambda: 1,
    "float": lambda: 1.0,
    "bool": lambda: False,
    "str": lambda: "sum",
    "tuple of ints": lambda: (1,),
    "torch.dtype": lambda: torch.float32,
    "Number": lambda: 1,
}


def _accepted(fn, name: str, params: list) -> bool | None:
    """Whether torch's parser reads keyword ``name`` (None: no call could tell).

    Calls ``fn`` with ``name`` bound to a value no overload takes, filling the required
    positional arguments the parser asks for with sample values, until its message
    either names ``name`` (it was read) or calls it unexpected.
    """
    args: list = []
    for _ in range(8):
        msg = _message(fn, *args, **{name: _Probe()})
        if re.search(rf"argument '{name}'( \(position \d+\))? must be", msg):
            return True
        if f"unexpected keyword argument '{name}'" in msg:
            return False
        if "missing" in msg and "required positional" in msg:
            args.append(torch.ones(2, 2))
            continue
        m = re.search(r"argument '\w+' \(position (\d+)\) must be (.+?), not", msg)
        if m and int(m.group(1)) <= len(args) and m.group(2) in _SAMPLES:
            args[int(m.group(1)) - 1] = _SAMPLES[m.group(2)]()
            continue
        return None
    return None


def _positional_count(fn, params: list) -> int | None:
    """How many arguments torch takes by position when it says ("takes 1 positional ...")."""
    msg = _message(fn, *[_Probe()] * (len(params) + 1))
    m = re.search(r"takes (\d+) positional argument", msg)
    return int(m.group(1)) if m else None


def _verified(fn, overload: list, dropped: list) -> list:
    """A stub's overload as torch's parser takes it, each keyword checked by a call.

    A keyword torch calls unexpected is dropped (and named in ``dropped``); a positional
    parameter it refuses by keyword is positional-only (``one_hot(tensor, ...)``); the
    stubs' ``from_`` is ``from`` where torch reads that (``uniform_(from=0, to=1)``).
    """
    kept = []
    for param in overload:
        if param[1] not in ("PK", "K") or _accepted(fn, param[0], overload) is not False:
            kept.append(param)
        elif param[0] == "from_" and _accepted(fn, "from", overload):
            kept.append(["from", *param[1:]])
        elif param[1] == "PK":
            dropped.append(param[0])
            kept.append([param[0], "P", param[2]])
        else:
            dropped.append(param[0])
    limit = _positional_count(fn, kept)
    positional = [p for p in kept if p[1] in ("P", "PK")]
    if limit is not None and limit < len(positional):
        for p in positional[limit:]:
            p[1] = "K"
    return kept


def _pick_by_message(candidates: list[list], msg: str) -> list[list]:
    """The schema overload the parser used, named by its message ("argument 'X' (position 1)")."""
    if len(candidates) <= 1:
        return candidates
    m = re.search(r"argument '(\w+)' \(position 1\)", msg)
    if m:
        named = [c for c in candidates if c and c[0][0] == m.group(1)]
        if named:
            return named[:1]
    return candidates[:1]


# -- Python-level signatures --------------------------------------------------------------
def _default_text(default) -> str | None:
    if default is inspect.Parameter.empty:
        return None
    if inspect.ismodule(default) or inspect.isfunction(default) or inspect.isclass(default):
        return f"<{type(default).__name__} {default.__name__}>"  # no machine-specific path
    return re.sub(r" at 0x[0-9a-f]+", "", repr(default))


def _inspect_overload(obj, bound: bool) -> list | None:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = [[p.name, _KINDS[p.kind], _default_text(p.default)] for p in sig.parameters.values()]
    if bound and params and params[0][1] in ("P", "PK"):
        params = params[1:]
    if [p[1] for p in params] == ["VP", "VK"]:
        return None  # a wrapper that hides the real signature
    return params


def _doc_overload(obj, name: str, bound: bool) -> list | None:
    doc = inspect.getdoc(obj) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    m = re.match(rf"^{re.escape(name)}\((.*)\)\s*(->.*)?$", first)
    if not m:
        return None
    src = f"def f({'self, ' if bound else ''}{m.group(1)}): pass"
    try:
        fn_def = ast.parse(src).body[0]
    except SyntaxError:
        return None
    ns: dict = {}
    try:
        module = ast.fix_missing_locations(ast.Module([_strip_defaults(fn_def)], []))
        exec(compile(module, "<doc>", "exec"), ns)
    except Exception:  # a line that is not Python
        return None
    params = _inspect_overload(ns["f"], bound)
    if params is None:
        return None
    return [[n, k, None if d is None else ast.literal_eval(d)] for n, k, d in params]


def _strip_defaults(fn_def):
    """Defaults as their source text (``layout=torch.strided`` needs no evaluation)."""
    args = fn_def.args
    args.defaults = [ast.Constant(ast.unparse(d)) for d in args.defaults]
    args.kw_defaults = [
        None if d is None else ast.Constant(ast.unparse(d)) for d in args.kw_defaults
    ]
    return fn_def


_OVERRIDES: dict = {}


def _overrides_overload(obj, bound: bool) -> list | None:
    if not _OVERRIDES:
        _OVERRIDES.update(torch.overrides.get_testing_overrides())
    fake = _OVERRIDES.get(obj)
    return None if fake is None else _inspect_overload(fake, bound)


# -- one callable ---------------------------------------------------------------------------
def _aten_name(qualname: str) -> str:
    """``torch.linalg.norm`` -> ``linalg_norm``; ``Tensor.add`` / ``torch.add`` -> ``add``."""
    parts = qualname.split(".")
    for ns in ("linalg", "special", "fft"):
        if parts[:2] == ["torch", ns]:
            return f"{ns}_{parts[-1]}"
    return parts[-1]


def _stub_overloads(qualname: str, fn, stubs: dict) -> list | None:
    name = qualname.rsplit(".", 1)[-1]
    if qualname.startswith("Tensor."):
        return stubs["Tensor"].get(name)
    if qualname.startswith("torch.nn.functional.") and fn is getattr(torch._C._nn, name, None):
        return stubs["nn"].get(name)
    if fn is getattr(torch._C._VariableFunctions, name, None):
        return stubs["torch"].get(name)
    return None


def _builtin_overloads(qualname: str, fn, probe, method: bool, sources: dict):
    found, msg = _parser_overloads(probe)
    if found:
        return found, "parser"
    found = _stub_overloads(qualname, fn, sources["stubs"])
    source = "stub"
    if not found:
        candidates = _schema_overloads(sources["aten"].get(_aten_name(qualname), []), method)
        found, source = _pick_by_message(candidates, msg), "schema"
    if not found:
        return None, ""
    dropped: list = []
    found = [_verified(probe, [list(p) for p in overload], dropped) for overload in found]
    return found, source + (f" (torch refuses {sorted(set(dropped))})" if dropped else "")


def describe(qualname: str, fn, sources: dict, probe=None, bound: bool = False) -> dict | None:
    """``{"source": ..., "overloads": [...]}`` for one torch callable, or None if unknowable."""
    name = qualname.rsplit(".", 1)[-1]
    if isinstance(fn, (type(torch.zeros), type(torch.Tensor.add))) and probe is not None:
        overloads, source = _builtin_overloads(qualname, fn, probe, bound, sources)
        if overloads:
            return {"source": source, "overloads": overloads}
    for source, get in (
        ("inspect", lambda: _inspect_overload(fn, bound)),
        ("doc", lambda: _doc_overload(fn, name, bound)),
        ("overrides", lambda: _overrides_overload(fn, bound)),
    ):
        overload = get()
        if overload is not None:
            return {"source": source, "overloads": [overload]}
    return None


def _public(names) -> list[str]:
    return sorted(n for n in names if not n.startswith("_"))


def _functions(module, prefix: str, sources: dict) -> dict:
    table = {}
    for n in _public(dir(module)):
        fn = getattr(module, n)
        if inspect.isclass(fn) or inspect.ismodule(fn) or not callable(fn):
            continue
        entry = describe(f"{prefix}.{n}", fn, sources, probe=fn)
        if entry:
            table[f"{prefix}.{n}"] = entry
    return table


def _tensor_methods(sources: dict) -> dict:
    table, sample = {}, torch.ones(2, requires_grad=False)
    for n in _public(dir(torch.Tensor)):
        fn = inspect.getattr_static(torch.Tensor, n)
        if isinstance(fn, (property, type(torch.Tensor.grad))) or not callable(
            getattr(torch.Tensor, n)
        ):
            continue
        if isinstance(fn, (staticmethod, classmethod)):
            continue
        bound = getattr(sample.clone(), n)
        entry = describe(f"Tensor.{n}", getattr(torch.Tensor, n), sources, probe=bound, bound=True)
        if entry:
            table[f"Tensor.{n}"] = entry
    return table


def _classes(module, prefix: str, base: type, methods: tuple[str, ...] = ()) -> dict:
    """Constructors (``__init__`` without ``self``) of ``module``'s public subclasses of ``base``."""
    table = {}
    for n in _public(dir(module)):
        cls = getattr(module, n)
        if not (inspect.isclass(cls) and issubclass(cls, base)):
            continue
        init = _inspect_overload(cls.__init__, bound=True)
        if init is not None and cls.__init__ is not object.__init__:
            table[f"{prefix}.{n}"] = {"source": "inspect", "overloads": [init]}
        for m in methods:
            if m in vars(cls):
                sig = _inspect_overload(getattr(cls, m), bound=True)
                if sig is not None:
                    table[f"{prefix}.{n}.{m}"] = {"source": "inspect", "overloads": [sig]}
    return table


def build_signatures() -> dict:
    import torch.nn.functional as F
    import torch.utils.data as data

    sources = {"aten": _schemas_by_name(), "stubs": _stubs()}  # operator schemas, .pyi stubs
    table: dict = {}
    table.update(_functions(torch, "torch", sources))
    table.update(_tensor_methods(sources))
    for mod in (F, torch.linalg, torch.special, torch.fft):
        prefix = "torch.nn.functional" if mod is F else mod.__name__
        table.update(_functions(mod, prefix, sources))
    table.update(_classes(torch.nn, "torch.nn", torch.nn.Module, ("forward",)))
    table.update(_classes(torch.optim, "torch.optim", torch.optim.Optimizer))
    table.update(
        _classes(
            torch.optim.lr_scheduler,
            "torch.optim.lr_scheduler",
            torch.optim.lr_scheduler.LRScheduler,
        )
    )
    table.update(_classes(data, "torch.utils.data", object))
    table.update(_functions(data, "torch.utils.data", sources))
    return {"torch_version": torch.__version__.split("+")[0], "callables": table}


# -- nn module internals --------------------------------------------------------------------
def _own_methods(cls: type, stop: type) -> dict:
    """Methods ``cls`` has from its own class and bases below ``stop`` (public and
    single-underscore: the ones subclasses call or override, such as ``_conv_forward``)."""
    found = {}
    for klass in cls.__mro__:
        if klass is stop or klass is object:
            break
        for name, value in vars(klass).items():
            if name.startswith("__") or name in found:
                continue
            if inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod)):
                sig = _inspect_overload(
                    getattr(cls, name), bound=not isinstance(value, staticmethod)
                )
                if sig is not None:
                    found[name] = {"defined_in": klass.__name__, "overloads": [sig]}
    return found


def build_nn_methods() -> dict:
    """``{class: {method: {"defined_in", "overloads"}}}`` for ``torch.nn.Module`` (its own
    methods) and each public ``torch.nn`` module class (methods below ``Module``)."""
    table = {"Module": _own_methods(torch.nn.Module, object)}
    for name in _public(dir(torch.nn)):
        cls = getattr(torch.nn, name)
        if inspect.isclass(cls) and issubclass(cls, torch.nn.Module) and cls is not torch.nn.Module:
            table[name] = _own_methods(cls, torch.nn.Module)
    return {"torch_version": torch.__version__.split("+")[0], "classes": table}


# -- the package tree -------------------------------------------------------------------------
def build_packages() -> dict:
    """Every public submodule of torch, and whether it imports in this (CPU) build."""
    modules: dict[str, bool] = {}
    failed: set[str] = set()

    def onerror(name: str) -> None:
        failed.add(name)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(torch.__path__, "torch.", onerror=onerror):
            if any(part.startswith("_") for part in info.name.split(".")):
                continue
            modules[info.name] = _imports(info.name)
    for name in failed:
        if not any(part.startswith("_") for part in name.split(".")):
            modules[name] = False
    return {
        "torch_version": torch.__version__.split("+")[0],
        "modules": dict(sorted(modules.items())),
    }


def _imports(name: str) -> bool:
    try:
        __import__(name)
    except Exception:  # recorded: a CPU build cannot import it
        return False
    return True


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    sigs = build_signatures()
    (OUT / "torch_signatures.json").write_text(json.dumps(sigs, indent=0, sort_keys=True) + "\n")
    nn_methods = build_nn_methods()
    (OUT / "torch_nn_methods.json").write_text(
        json.dumps(nn_methods, indent=0, sort_keys=True) + "\n"
    )
    packages = build_packages()
    (OUT / "torch_packages.json").write_text(json.dumps(packages, indent=1) + "\n")
    print(
        f"{len(sigs['callables'])} callables, {len(packages['modules'])} public modules",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
