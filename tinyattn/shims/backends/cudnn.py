"""``tinyattn.backends.cudnn``: cuDNN flags, settable and without effect (there is no cuDNN).

``benchmark``, ``deterministic``, ``allow_tf32`` and ``enabled`` keep torch's defaults and
whatever a script assigns; tinyattn reads none of them. Its CPU kernels are already
deterministic: the same inputs give the same bits on every run.
"""

from __future__ import annotations

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: tinyattn has no cuDNN."""
    return False


def version() -> None:
    """None, as torch without cuDNN."""
    return None
