"""``tinyattn.backends``: torch's backend switches, as documented no-ops on the CPU.

Training scripts written for GPUs set these flags at the top; tinyattn accepts them so
those scripts run unchanged. None of them changes what tinyattn computes: there is no
TF32, cuDNN or MPS here, NumPy does the float32 products in float32 and the numba
attention kernels are deterministic.

>>> import tinyattn as torch
>>> torch.backends.cuda.matmul.allow_tf32 = True    # accepted, no effect
>>> torch.backends.cudnn.benchmark = True           # accepted, no effect
>>> torch.backends.mps.is_available()
False
"""

import warnings

from . import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps", "get_float32_matmul_precision", "set_float32_matmul_precision"]

_matmul_precision = "highest"


def get_float32_matmul_precision() -> str:
    """What was set by :func:`set_float32_matmul_precision` (torch's default: "highest")."""
    return _matmul_precision


def set_float32_matmul_precision(precision: str) -> None:
    """Recorded, no effect: float32 products are always full float32 here (no TF32/bf16).

    An unknown value warns and is ignored, as in torch.
    """
    global _matmul_precision
    if precision not in ("highest", "high", "medium"):
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
            "set_float32_matmul_precision call has no effect.",
            UserWarning,
            stacklevel=2,
        )
        return
    _matmul_precision = precision
