"""The CPU-only ``device`` type and ``check_device``, which every ``device=`` argument passes."""

from __future__ import annotations


class device:
    """tinyattn runs on the CPU only; ``device("cpu")`` exists so torch code runs unchanged."""

    def __init__(self, type: str = "cpu", index: int | None = None) -> None:
        if isinstance(type, device):
            type = type.type
        name = str(type).split(":")[0]
        if name != "cpu":
            raise RuntimeError(
                f"device {type!r} is not available: tinyattn runs on the CPU only (use 'cpu')"
            )
        self.type = "cpu"
        self.index = None

    def __eq__(self, other) -> bool:
        return isinstance(other, (device, str)) and str(other).split(":")[0] == "cpu"

    def __hash__(self) -> int:
        return hash("cpu")

    def __repr__(self) -> str:
        return "device(type='cpu')"

    def __str__(self) -> str:
        return "cpu"


_CPU = device("cpu")


def check_device(d) -> None:
    """Accept None, "cpu" or a cpu ``device``; raise a clear error for anything else."""
    if d is not None:
        device(d)
