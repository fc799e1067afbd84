"""Pretrained-style models whose weights load from hub files (see docs/weights.md), and
the preallocated key/value cache their generation uses (:class:`KVCache`)."""

from .kv_cache import KVCache

__all__ = ["KVCache"]
