"""torch's ``device`` type and ``check_device``, which every ``device=`` argument passes (CPU only)."""

from __future__ import annotations

# torch's device types (its message lists them in this order)
DEVICE_TYPES = (
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
    "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone",
)  # fmt: skip


class device:
    """A device, as torch names one: ``device("cpu")``, ``device("cuda:1")``,
    ``device("cuda", 1)``, ``device(other_device)``.

    Any of torch's device types constructs (a CPU-only torch builds ``device("cuda")``
    too), but tinyattn runs on the CPU only: putting a tensor anywhere else raises
    (:func:`check_device`). Devices are equal when type and index are; a string compares
    by its type (``device("cpu") == "cpu"``, as tinyattn always did).
    """

    def __init__(self, type: str = "cpu", index: int | None = None) -> None:
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a device string or device, got {type!r}")
        name, _, idx = type.partition(":")
        if name not in DEVICE_TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device "
                f"string: {type}"
            )
        if idx:
            if not idx.isdigit() or index is not None:
                raise RuntimeError(f"Invalid device string: {type!r}")
            index = int(idx)
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            raise TypeError(f"device(): argument 'index' must be int, not {index!r}")
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        self.type = name
        self.index = index

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            return other.split(":")[0] == self.type
        return isinstance(other, device) and (other.type, other.index) == (self.type, self.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


_CPU = device("cpu")


def check_device(d) -> None:
    """Accept None, "cpu" or a cpu ``device``; raise a clear error for anything else."""
    if d is not None and device(d).type != "cpu":
        raise RuntimeError(
            f"device {str(d)!r} is not available: tinyattn runs on the CPU only (use 'cpu')"
        )
