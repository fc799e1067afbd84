"""The one exception type of every checkpoint reader, and its weights-only subclass."""

from __future__ import annotations

import pickle  # only for its exception class: torch's weights-only error is an UnpicklingError


class CheckpointError(RuntimeError):
    """A file is not a readable checkpoint (corrupted, truncated, malformed or unsafe).

    A ``RuntimeError``, as the errors of torch's ``load`` on a damaged file are; the
    message names the file and the entry or index node at fault. Raised by the
    readers of every format ``load`` accepts: tinyattn's own, torch's and safetensors.
    """


class WeightsOnlyError(CheckpointError, pickle.UnpicklingError):
    """``load(weights_only=True)`` met a class or function that is not allowlisted.

    Also a ``pickle.UnpicklingError``, the type torch's ``load`` raises for it, so code
    written for torch catches it (nothing is ever unpickled).
    """


CheckpointError.__module__ = "tinyattn.serialization"  # where users import it from
WeightsOnlyError.__module__ = "tinyattn.serialization"


def warn_user(message: str) -> None:
    """``warnings.warn`` pointing at the caller's line, outside tinyattn's io package."""
    import os
    import sys
    import warnings

    here = os.path.dirname(os.path.abspath(__file__))
    level, frame = 2, sys._getframe(1)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        level, frame = level + 1, frame.f_back
    warnings.warn(message, UserWarning, stacklevel=level)
