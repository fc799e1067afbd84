"""The README's Python examples run, and print what the README says they print."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_every_python_block_runs():
    for i, code in enumerate(_blocks(README.read_text(), "python")):
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, f"README.md python block {i}", "exec"), {"__name__": "readme"})


def test_step_by_step_output_is_what_the_readme_shows():
    text = README.read_text()
    section = text.split("## Backprop through attention, step by step", 1)[1]
    code = _blocks(section, "python")[0]
    shown = _blocks(section, "text")[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README step by step", "exec"), {"__name__": "readme"})
    assert out.getvalue().strip() == shown.strip()
    assert shown.count("matches backward: True") == 5


def test_every_block_shown_with_its_output_prints_it():
    # Each Python block followed by "prints" and a text block must print exactly that text
    # (the Hessian block once claimed 26 and 91 graph edges after the graph had shrunk).
    pairs = re.findall(
        r"```python\n((?:(?!```).)*)```\s*\nprints\n\n```text\n(.*?)```",
        README.read_text(),
        flags=re.S,
    )
    assert len(pairs) >= 3
    for i, (code, shown) in enumerate(pairs):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README.md block {i} with output", "exec"), {"__name__": "readme"})
        assert out.getvalue().strip() == shown.strip(), f"block {i}"
