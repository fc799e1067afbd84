"""``tinyattn.nn.functional``: stateless layer functions with torch's names and semantics."""

from __future__ import annotations

from ..ops.activation import log_softmax, softmax
from ..ops.elementwise import relu, sigmoid, tanh

__all__ = ["softmax", "log_softmax", "relu", "sigmoid", "tanh"]
