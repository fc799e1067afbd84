"""Pretrained-style models whose weights load from hub files (see docs/weights.md)."""
