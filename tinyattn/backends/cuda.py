"""``tinyattn.backends.cuda``: CUDA switches, settable and without effect (no GPU backend).

``matmul.allow_tf32`` and the reduced-precision flags record what a script asked for;
tinyattn's products are NumPy's, in the operands' dtype, whatever they say. The
scaled-dot-product-attention switches (``enable_flash_sdp`` ...) choose among CUDA
kernels in torch; tinyattn picks its CPU kernel from its own rules and ignores them.
"""

from __future__ import annotations

__all__ = [
    "is_built",
    "matmul",
    "enable_flash_sdp",
    "enable_mem_efficient_sdp",
    "enable_math_sdp",
    "flash_sdp_enabled",
    "mem_efficient_sdp_enabled",
    "math_sdp_enabled",
]


def is_built() -> bool:
    """False: tinyattn has no CUDA build."""
    return False


class _MatmulFlags:
    """``tinyattn.backends.cuda.matmul``: torch's flags, stored and ignored."""

    __slots__ = (
        "allow_tf32",
        "allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction",
    )

    def __init__(self) -> None:
        # torch's defaults
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __setattr__(self, name: str, value) -> None:
        if name not in self.__slots__:
            raise AttributeError(f"Unknown attribute {name}")
        object.__setattr__(self, name, value)


matmul = _MatmulFlags()
_sdp = {"flash": True, "mem_efficient": True, "math": True}


def enable_flash_sdp(enabled: bool) -> None:
    """Recorded, no effect (torch's flash kernel is CUDA-only)."""
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Recorded, no effect."""
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    """Recorded, no effect."""
    _sdp["math"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def math_sdp_enabled() -> bool:
    return _sdp["math"]
