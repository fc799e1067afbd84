"""``tinyattn.cuda``: tinyattn runs on the CPU only.

Present so the common tutorial idiom keeps working unchanged::

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")   # -> cpu
"""

from __future__ import annotations
from ...foundations.type_names import type_name


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


def empty_cache() -> None:
    """Does nothing, as torch's CPU-only build: there is no CUDA cache to release."""


def set_device(device) -> None:
    """Raises for a CUDA device: there is none (torch's CPU-only build fails there too).

    As in torch, a negative index is a no-op and a non-CUDA device is a ``ValueError``.
    """
    from ...core.device import device as _device_cls

    if isinstance(device, _device_cls):
        device = str(device)
    if isinstance(device, str):
        kind, _, idx = device.partition(":")
        if kind != "cuda":
            raise ValueError(f"set_device(): expected a cuda device, but got: {device}")
        index = int(idx) if idx else 0
    elif isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        raise TypeError(
            f"set_device(): argument 'device' must be an int, str or device, got "
            f"{type_name(device)}"
        )
    if index < 0:
        return
    raise RuntimeError(
        f"set_device(): cannot select CUDA device {index}: tinyattn runs on the CPU only"
    )


from . import amp


def synchronize(device=None) -> None:
    """Raises, as torch's CPU-only build does: there is no CUDA device to wait for.

    Programs call it only when they run on CUDA (makemore: ``if args.device.startswith(
    'cuda'): torch.cuda.synchronize()``), which tinyattn never does.
    """
    raise AssertionError("Torch not compiled with CUDA enabled (tinyattn runs on the CPU only)")


# -- device and memory queries (LLM scripts print them after training) ----------------------
_NOT_COMPILED = "Torch not compiled with CUDA enabled (tinyattn runs on the CPU only)"


def current_device() -> int:
    """Raises, as torch's CPU-only build: there is no CUDA device."""
    raise AssertionError(_NOT_COMPILED)


def get_device_name(device=None) -> str:
    """Raises, as torch's CPU-only build: there is no CUDA device to name."""
    raise AssertionError(_NOT_COMPILED)


def get_device_properties(device=None):
    """Raises, as torch's CPU-only build: there is no CUDA device."""
    raise AssertionError(_NOT_COMPILED)


def get_device_capability(device=None) -> tuple[int, int]:
    """Raises, as torch's CPU-only build: there is no CUDA device."""
    raise AssertionError(_NOT_COMPILED)


def is_initialized() -> bool:
    """False: CUDA is never initialised."""
    return False


def memory_allocated(device=None) -> int:
    """0 bytes, as torch's CPU-only build (nothing lives on a GPU)."""
    return 0


def max_memory_allocated(device=None) -> int:
    """0 bytes, as torch's CPU-only build."""
    return 0


def memory_reserved(device=None) -> int:
    """0 bytes, as torch's CPU-only build."""
    return 0


def max_memory_reserved(device=None) -> int:
    """0 bytes, as torch's CPU-only build."""
    return 0


def reset_peak_memory_stats(device=None) -> None:
    """Raises, as torch's CPU-only build does (there, an AttributeError from its C module;
    here the same assertion as the other device calls)."""
    raise AssertionError(_NOT_COMPILED)


class Event:
    """``torch.cuda.Event``: cannot be created without CUDA (torch's CPU-only build raises
    "Tried to instantiate dummy base class Event" too). Scripts time GPU kernels with it."""

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ):
        raise RuntimeError(
            "Tried to instantiate dummy base class Event: CUDA events need a GPU "
            "(tinyattn runs on the CPU only)"
        )
