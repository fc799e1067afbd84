"""The Python examples of docs/attention-backward.md and docs/architecture.md run and
print what the pages show (each ```python block is followed by its ```text output)."""

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _pairs(page: str) -> list[tuple[str, str]]:
    text = (DOCS / page).read_text()
    code = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    shown = re.findall(r"```text\n(.*?)```", text, flags=re.S)
    assert len(code) == len(shown), f"{page}: every python block needs its text output"
    return list(zip(code, shown))


@pytest.mark.parametrize(
    "page, index",
    [("attention-backward.md", 0), ("attention-backward.md", 1), ("architecture.md", 0)],
)
def test_example_prints_what_the_page_shows(page, index):
    code, shown = _pairs(page)[index]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"docs/{page} python block {index}", "exec"), {"__name__": "docs"})
    assert out.getvalue().strip() == shown.strip()
    assert "False" not in shown  # every check the page makes holds


def test_every_example_is_tested():
    assert len(_pairs("attention-backward.md")) == 2
    assert len(_pairs("architecture.md")) == 1
