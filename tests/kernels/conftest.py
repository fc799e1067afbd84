"""Backend switching fixtures for the kernel tests."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["numba", "numba-loops"])
def fused_backend(request, monkeypatch):
    """Run a test under each fused backend (BLAS tiles and plain-loop tiles)."""
    monkeypatch.setenv("TINYATTN_KERNELS", request.param)
    return request.param


@pytest.fixture
def numpy_backend(monkeypatch):
    monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
