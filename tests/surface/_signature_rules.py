"""Does a tinyattn callable accept every call torch's recorded signature accepts?

The table (``torch_signatures.json``, written by ``tools/torch_signatures.py``) gives each
torch callable as overloads of ``[name, kind, default]`` parameters (kinds ``P``, ``PK``,
``K``, ``VP``, ``VK``, ``PKV``; ``default`` None when required). ``mismatches`` compares
one tinyattn signature against all of an entry's overloads:

* every name torch accepts by keyword (``PK``, ``PKV``, ``K``) is accepted by keyword
  (a ``**kwargs`` parameter counts: the function reads it itself);
* positions agree: tinyattn's i-th positional parameter has a name torch gives some
  overload's i-th positional parameter (torch's overloads may name one position
  differently, as ``max(input, dim)`` and ``max(input, other)``), or tinyattn takes
  ``*args`` there; a torch ``*args`` needs a tinyattn ``*args``;
* a parameter tinyattn requires is required by every torch overload that has it.
"""

from __future__ import annotations

import inspect

_POSITIONAL = ("P", "PK", "PKV", "VP")
_KIND = {
    inspect.Parameter.POSITIONAL_ONLY: "P",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "PK",
    inspect.Parameter.KEYWORD_ONLY: "K",
    inspect.Parameter.VAR_POSITIONAL: "VP",
    inspect.Parameter.VAR_KEYWORD: "VK",
}


def ours(obj, bound: bool) -> list | None:
    """A tinyattn callable's parameters in the table's form (``self`` dropped if ``bound``)."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    params = [
        [p.name, _KIND[p.kind], None if p.default is p.empty else repr(p.default)]
        for p in sig.parameters.values()
    ]
    if (bound or inspect.isclass(obj)) and params and params[0][1] in ("P", "PK"):
        params = params[1:]
    return params


def _positional(params: list) -> list:
    return [p for p in params if p[1] in _POSITIONAL]


def _keyword_problems(theirs: list, mine: list) -> list[str]:
    takes_any = any(p[1] == "VK" for p in mine)
    by_keyword = {p[0] for p in mine if p[1] in ("PK", "PKV", "K")}
    missing = [p[0] for p in theirs if p[1] in ("PK", "PKV", "K") and p[0] not in by_keyword]
    return [] if takes_any or not missing else [f"keyword(s) {missing} not accepted"]


def _position_problems(overloads: list[list], mine: list) -> list[str]:
    names_at: dict[int, set] = {}
    varargs_at = None
    for overload in overloads:
        for i, p in enumerate(_positional(overload)):
            if p[1] == "VP":
                varargs_at = i if varargs_at is None else min(varargs_at, i)
                break
            names_at.setdefault(i, set()).add(p[0] if p[1] != "P" else "*")
    problems = []
    positional = _positional(mine)
    mine_varargs = next((i for i, p in enumerate(positional) if p[1] == "VP"), None)
    if varargs_at is not None and (mine_varargs is None or mine_varargs > varargs_at):
        problems.append(f"torch takes *args from position {varargs_at + 1}")
    for i, names in sorted(names_at.items()):
        if mine_varargs is not None and i >= mine_varargs:
            break
        if i >= len(positional):
            problems.append(f"position {i + 1} ({sorted(names)}) not accepted positionally")
            break
        if "*" not in names and positional[i][0] not in names:
            problems.append(f"position {i + 1} is {positional[i][0]!r}, torch: {sorted(names)}")
    return problems


def _required_problems(overloads: list[list], mine: list) -> list[str]:
    problems = []
    for p in mine:
        if p[1] in ("VP", "VK") or p[2] is not None:
            continue
        optional_in = [o for o in overloads if any(q[0] == p[0] and q[2] is not None for q in o)]
        if optional_in:
            problems.append(f"{p[0]!r} is required here, optional in torch")
    return problems


def mismatches(overloads: list[list], mine: list) -> list[str]:
    """Every way ``mine`` refuses a call some overload in ``overloads`` accepts."""
    problems = []
    for overload in overloads:
        problems += [q for q in _keyword_problems(overload, mine) if q not in problems]
    return problems + _position_problems(overloads, mine) + _required_problems(overloads, mine)
