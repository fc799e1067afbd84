"""Fixtures of the explain tests: the README's scripts and a self-attention script, as files."""

from __future__ import annotations

from pathlib import Path

import pytest
from explain_helpers import SELF_ATTENTION, readme_block


@pytest.fixture
def steps_script(tmp_path) -> Path:
    """The README's steps.py."""
    path = tmp_path / "steps.py"
    path.write_text(readme_block("## Backprop through attention, step by step"))
    return path


@pytest.fixture
def hessian_script(tmp_path) -> Path:
    """The README's Hessian-vector product example."""
    path = tmp_path / "hessian.py"
    path.write_text(readme_block("## Second derivatives through attention"))
    return path


@pytest.fixture
def self_attention_script(tmp_path) -> Path:
    """Hand-written two-head causal self-attention: x feeds three projections."""
    path = tmp_path / "self_attention.py"
    path.write_text(SELF_ATTENTION)
    return path
