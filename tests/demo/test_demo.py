"""``python -m tinyattn demo``: trains, reports, draws the alignment, gradchecks, and
fails loudly when it did not learn."""

import subprocess
import sys

from tinyattn.demo import run


def test_demo_learns_the_reversal_alignment(capsys):
    assert run(task="reverse", steps=150, seed=0) == 0
    out = capsys.readouterr().out
    assert "exact match 100.0%" in out or "exact match 9" in out
    grid = [line for line in out.splitlines() if line.startswith("out")]
    assert len(grid) == 8
    # reversal: output position i attends to input position 7 - i (darkest cell)
    for i, line in enumerate(grid):
        cells = line.split(" ", 1)[1]
        pairs = [cells[j : j + 2] for j in range(0, 16, 2)]
        assert pairs.index("██") == 7 - i, line
    assert "gradient check of the trained attention layer" in out and "PASS" in out


def test_demo_exits_non_zero_when_it_did_not_learn():
    result = subprocess.run(
        [sys.executable, "-m", "tinyattn", "demo", "--steps", "2", "--task", "copy"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "below the target" in result.stdout


def test_selfcheck_is_still_the_default_command():
    result = subprocess.run(
        [sys.executable, "-m", "tinyattn"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "gradcheck softmax(q k^T / sqrt(d)) v" in result.stdout and "PASS" in result.stdout
