"""Print the setup commands a new user copies from the README: its first ``bash`` block.

Each line of that block is one command; a trailing ``# comment`` is dropped. .ci/run runs
these lines, unchanged, in a fresh virtual environment without torch.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def readme_commands(readme: Path) -> list[str]:
    match = re.search(r"```bash\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    if match is None:
        raise SystemExit(f"{readme}: no ```bash block with the setup commands")
    lines = [re.sub(r"\s+#\s.*$", "", line).strip() for line in match.group(1).splitlines()]
    return [line for line in lines if line]


if __name__ == "__main__":
    print("\n".join(readme_commands(Path(sys.argv[1]))))
