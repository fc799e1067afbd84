import pytest


@pytest.fixture
def torch():
    """torch for side-by-side checks (skipped when torch is not installed)."""
    return pytest.importorskip("torch")
