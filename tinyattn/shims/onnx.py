"""``tinyattn.onnx``: present so ``torch.onnx.export(...)`` fails with a clear message.

tinyattn has no ONNX exporter (it records no graph that could be serialised to ONNX).
"""

from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]


def export(model, args=(), f=None, *unused_args, **unused_kwargs):
    """Raises ``NotImplementedError``: tinyattn cannot export ONNX models."""
    raise NotImplementedError(
        "tinyattn.onnx.export(): tinyattn has no ONNX exporter; save the weights with "
        "tinyattn.save(model.state_dict(), path) and export from PyTorch instead"
    )


def is_in_onnx_export() -> bool:
    """False: no export ever runs."""
    return False
