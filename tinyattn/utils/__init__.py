"""Utilities (``torch.utils``): activation checkpointing and data loading.

>>> import tinyattn as torch
>>> from tinyattn.utils.checkpoint import checkpoint
>>> from tinyattn.utils.data import DataLoader, TensorDataset

``tinyattn.utils.data`` is imported on first use (``import tinyattn`` does not pay its
~10 ms); ``tinyattn.utils.data.DataLoader`` works after a plain ``import tinyattn``.
"""

from . import checkpoint

__all__ = ["benchmark", "checkpoint", "data"]


def __getattr__(name: str):
    if name in ("data", "benchmark"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
