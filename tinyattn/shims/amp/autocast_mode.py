"""``autocast``: a context manager (and decorator) that keeps full precision, and says so."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

from ...core import _dtype as dt

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype"]

# torch's device types, for its error on an unknown one
_DEVICE_TYPES = (
    "cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, "
    "vulkan, mps, meta, hpu, mtia, privateuseone"
)
_DEFAULT_DTYPE = {"cpu": "bfloat16", "cuda": "float16"}


def _default_dtype(device_type: str) -> dt.dtype:
    return dt.bfloat16 if _DEFAULT_DTYPE.get(device_type, "float16") == "bfloat16" else dt.float16


def get_autocast_dtype(device_type: str) -> dt.dtype:
    """The dtype torch's autocast would use on ``device_type`` (bfloat16 on cpu, float16 else)."""
    return _default_dtype(device_type)


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """False, always: tinyattn's autocast never casts."""
    return False


class autocast:
    """Accepts torch's ``autocast`` arguments and runs the region in full precision.

    Parameters
    ----------
    device_type : str
        ``"cpu"`` or ``"cuda"`` (any device type torch knows is accepted).
    dtype : dtype, optional
        torch's lower-precision dtype (``bfloat16`` on cpu, ``float16`` on cuda by default).
    enabled : bool
        ``False``: nothing happens and nothing is said.
    cache_enabled : bool, optional
        Accepted, unused.

    What happens (with ``enabled=True``), and the warning given:

    * ``device_type="cuda"``: "CUDA is not available. Disabling autocast." (as torch);
    * ``device_type="cpu"`` with ``float32``/``float64``: torch's "target dtype is not
      supported" warning;
    * ``device_type="cpu"`` with ``bfloat16`` (the default) or ``float16``: a warning that
      tinyattn runs the region in full precision (where torch would cast matmuls).

    In every case the ops inside run in their inputs' dtypes and autograd is unchanged.
    Usable as ``with autocast("cpu"):`` or as a decorator ``@autocast("cpu")``.
    """

    _stacklevel = 2  # warnings point at the caller's line

    def __init__(
        self,
        device_type: str,
        dtype: dt.dtype | None = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _DEVICE_TYPES.split(", "):
            raise RuntimeError(
                f"Expected one of {_DEVICE_TYPES} device type at start of device string: "
                f"{device_type}"
            )
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else _default_dtype(device_type)
        self._enabled = bool(enabled)
        if self._enabled:
            warnings.warn(self._why_disabled(), UserWarning, stacklevel=self._stacklevel)
        self._enabled = False

    def _why_disabled(self) -> str:
        if self.device != "cpu":
            return (
                f"{self.device.upper()} is not available (tinyattn runs on the CPU only). "
                "Disabling autocast."
            )
        if self.fast_dtype not in (dt.bfloat16, dt.float16):
            return (
                "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CPU Autocast only supports dtypes of tinyattn.bfloat16, tinyattn.float16 "
                "currently."
            )
        return (
            f"tinyattn's CPU autocast runs in full precision: it does not cast ops to "
            f"{self.fast_dtype} (NumPy has no bfloat16, and per-op float16 casting is not "
            "implemented). Disabling autocast."
        )

    def __enter__(self) -> autocast:
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        return None

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return wrapper
