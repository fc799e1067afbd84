"""Utilities (``torch.utils``): activation checkpointing.

>>> import tinyattn as torch
>>> from tinyattn.utils.checkpoint import checkpoint
"""

from . import checkpoint

__all__ = ["checkpoint"]
