"""Utilities (``torch.utils``): activation checkpointing and data loading.

>>> import tinyattn as torch
>>> from tinyattn.utils.checkpoint import checkpoint
>>> from tinyattn.utils.data import DataLoader, TensorDataset
"""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
