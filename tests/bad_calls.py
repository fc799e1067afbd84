"""Bad-input checks for op test files: tinyattn must raise a clear error naming the
problem, and torch (when installed) must reject the same call.

Each case is ``(id, call, expected)``: ``call(lib)`` runs the bad call against
``tinyattn`` or ``torch``; ``expected`` is a regex the tinyattn message must match.
"""

from __future__ import annotations

import re

import pytest
from harness import torch

import tinyattn

CLEAR_ERRORS = (ValueError, TypeError, RuntimeError, IndexError)
TORCH_ERRORS = (*CLEAR_ERRORS, NotImplementedError, AssertionError)
RAW = re.compile(r"is out of bounds for axis|axis -?\d+ is out of bounds|could not broadcast")


def check_bad_call(call, expected: str) -> None:
    with pytest.raises(CLEAR_ERRORS) as info:
        call(tinyattn)
    message = str(info.value)
    assert not RAW.search(message), f"raw NumPy message: {message}"
    assert re.search(expected, message), f"message {message!r} does not match {expected!r}"
    if torch is not None:
        with pytest.raises(TORCH_ERRORS):
            call(torch)
