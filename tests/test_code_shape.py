"""Code shape limit: no function in ``tinyattn/`` over 60 lines of code.

A function's length counts the lines of its body that hold code: blank lines, comment-only
lines and the docstring are not counted (a nested function counts inside its parent, once).
Files have no cap: a file is as long as its concept needs, split by concept, never by count
(the layout rules are in ``test_layout_rules.py``).
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tinyattn"
MAX_FUNCTION_LINES = 60


def _code_lines(source: str) -> set[int]:
    """The line numbers that carry a token other than a comment, newline or indentation."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip and tok.type != tokenize.ENDMARKER:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines


def _docstring_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int]:
    first = fn.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return set()


def function_lengths(source: str) -> list[tuple[int, str, int]]:
    """``(line, name, lines of code)`` of every function and method in ``source``."""
    code = _code_lines(source)
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = node.body[0].lineno
            body = set(range(start, (node.end_lineno or start) + 1)) - _docstring_lines(node)
            out.append((node.lineno, node.name, len(body & code)))
    return out


def _files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_scan_sees_the_package():
    files = _files()
    assert len(files) >= 100, len(files)
    assert sum(len(function_lengths(f.read_text())) for f in files) >= 1000


def test_function_length_counts_code_only():
    src = (
        "def f(x):\n"
        '    """Doc.\n\n    More doc.\n    """\n'
        "    # a comment\n"
        "\n"
        "    y = (x +\n"
        "         1)\n"
        "    return y\n"
    )
    assert function_lengths(src) == [(1, "f", 3)]


def test_no_function_longer_than_60_lines_of_code():
    too_long = [
        f"{path.relative_to(PACKAGE.parent)}:{line} {name} ({n} lines)"
        for path in _files()
        for line, name, n in function_lengths(path.read_text())
        if n > MAX_FUNCTION_LINES
    ]
    assert not too_long, "functions over 60 lines of code:\n" + "\n".join(too_long)
