"""Grad mode: whether ops record the graph. Thread-local, as in torch."""

from __future__ import annotations

import functools
import threading


class _State(threading.local):
    enabled = True  # a class default, so every thread starts enabled and no lookup fails


_state = _State()


def is_grad_enabled() -> bool:
    """True when ops on tensors that require grad record a backward graph."""
    return _state.enabled


def _set(enabled: bool) -> None:
    _state.enabled = bool(enabled)


class set_grad_enabled:
    """Enable or disable gradient recording: a function call, a context manager or a decorator.

    ``set_grad_enabled(False)`` takes effect immediately (as in torch); used as a
    context manager it restores the previous mode on exit.
    """

    def __init__(self, mode: bool) -> None:
        self.prev = is_grad_enabled()
        self.mode = bool(mode)
        _set(self.mode)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        _set(self.prev)

    def __call__(self, fn):
        mode = self.mode
        _set(self.prev)  # used as a decorator: do not change the mode now

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class _Mode:
    """Base of ``no_grad`` / ``enable_grad``: context manager and decorator."""

    mode = True

    def __enter__(self) -> None:
        self.prev = is_grad_enabled()
        _set(self.mode)

    def __exit__(self, *exc) -> None:
        _set(self.prev)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_Mode):
    """Context manager / decorator: ops inside record no graph (inference, parameter updates)."""

    mode = False


class enable_grad(_Mode):
    """Context manager / decorator: re-enable recording inside a ``no_grad`` block."""

    mode = True


class inference_mode(no_grad):
    """Alias of ``no_grad`` (tinyattn has no separate inference tensors)."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = not mode
