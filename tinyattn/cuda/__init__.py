"""``tinyattn.cuda``: tinyattn runs on the CPU only.

Present so the common tutorial idiom keeps working unchanged::

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")   # -> cpu
"""

from __future__ import annotations


def is_available() -> bool:
    """Always False: there is no GPU backend."""
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    """Accepted and ignored (there is no CUDA generator), as torch does without a GPU."""


def manual_seed_all(seed: int) -> None:
    """Accepted and ignored (there is no CUDA generator)."""


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: no CUDA device (and tinyattn has no bfloat16 at all)."""
    return False


from . import amp
