"""``tinyattn.nn.init``: in-place parameter initialisers with torch's names and distributions."""

from __future__ import annotations
