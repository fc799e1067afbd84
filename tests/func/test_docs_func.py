"""docs/func.md's Python example runs and prints what the page says it prints."""

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "func.md"


def test_the_per_sample_gradient_example_prints_what_the_page_shows():
    text = PAGE.read_text()
    code = re.findall(r"```python\n(.*?)```", text, flags=re.S)[0]
    shown = re.findall(r"```text\n(.*?)```", text, flags=re.S)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/func.md", "exec"), {"__name__": "docs"})
    assert out.getvalue().strip() == shown.strip()
