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
