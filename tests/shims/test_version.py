"""``tinyattn.version`` answers as torch's module does on a CPU-only build."""

from __future__ import annotations

import importlib

import pytest

import tinyattn


def test_build_metadata_is_a_cpu_builds():
    v = importlib.import_module("tinyattn.version")
    assert tinyattn.version is v and v.__version__ == tinyattn.__version__
    assert (v.cuda, v.hip, v.rocm, v.xpu, v.debug) == (None, None, None, None, False)
    assert isinstance(v.git_version, str)


def test_same_names_as_torchs_module():
    torch = pytest.importorskip("torch", reason="compares with torch.version")
    theirs = {n for n in vars(torch.version) if not n.startswith("_") and n != "Optional"}
    assert theirs | {"__version__"} == set(tinyattn.version.__all__)
    if torch.version.cuda is None:  # a CPU build: the same answers
        assert all(getattr(tinyattn.version, n) == getattr(torch.version, n)
                   for n in ("cuda", "hip", "rocm", "xpu"))  # fmt: skip
