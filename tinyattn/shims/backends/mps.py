"""``tinyattn.backends.mps``: Apple's Metal backend is not available (CPU only)."""

from __future__ import annotations


def is_available() -> bool:
    """False, so ``"mps" if torch.backends.mps.is_available() else "cpu"`` picks the CPU."""
    return False


def is_built() -> bool:
    return False
