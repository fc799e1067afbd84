"""Anomaly detection: find the forward op behind a NaN gradient or a failing backward.

Inside ``with tinyattn.autograd.detect_anomaly():`` every recorded op keeps the Python
stack of its forward call, and the backward pass checks each node's gradients: a node
that returns NaN raises ``RuntimeError("Function 'SqrtBackward0' returned nan values in
its 0th output.")``, and whenever a node's backward fails, a warning first shows the
forward line that created it. As in torch, it slows every op down; use it to debug.

    >>> import warnings, tinyattn as torch
    >>> x = torch.tensor([0.0, 1.0], requires_grad=True)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     with torch.autograd.detect_anomaly():
    ...         y = (x.sqrt() * 0).sum()     # d sqrt(x)/dx at 0 is inf; inf * 0 is NaN
    ...         try:
    ...             y.backward()
    ...         except RuntimeError as error:
    ...             print(error)
    Function 'SqrtBackward0' returned nan values in its 0th output.
"""

from __future__ import annotations

import traceback
import warnings
from typing import Any

import numpy as np

from ..core.extensions import extensions
from ..core.function import Node

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return extensions.anomaly is not None


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks gradients for NaN (True when it is off, as torch)."""
    return extensions.anomaly is None or extensions.anomaly.check_nan


def _set(mode: bool, check_nan: bool) -> None:
    extensions.set_anomaly_mode(_AnomalyMode(check_nan) if mode else None)


class set_detect_anomaly:
    """Turn anomaly detection on or off, now and (as a context manager) for a block."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        _set(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _set(*self.prev)


class detect_anomaly:
    """Anomaly detection for a block (context manager) or a function (decorator)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self.prev = (False, True)
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and "
            "should only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self) -> None:
        self.prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        _set(True, self.check_nan)

    def __exit__(self, *exc: object) -> None:
        _set(*self.prev)

    def __call__(self, fn):
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return wrapper


# -- what the engine and Function.apply call while it is on --------------------------------
class _AnomalyMode:
    """Anomaly mode as the engine's seam holds it (``extensions.anomaly``)."""

    __slots__ = ("check_nan",)

    def __init__(self, check_nan: bool) -> None:
        self.check_nan = bool(check_nan)

    @staticmethod
    def record_forward_stack(node: Node) -> None:
        """Keep where the op was called (the user's frames, not tinyattn's)."""
        stack = traceback.extract_stack()[:-2]
        node.__dict__["_forward_stack"] = traceback.format_list(stack)

    def call_backward(self, node: Node, grad: Any) -> tuple:
        """Run the node's backward: on failure, say which forward call made the node; raise
        on a NaN gradient (with ``check_nan``)."""
        with set_detect_anomaly(False):  # (the backward's own ops are not checked)
            try:
                input_grads = node.fn.backward(node, grad)  # type: ignore[union-attr]
            except Exception:
                warn_forward_stack(node)
                raise
        if type(input_grads) is not tuple:
            input_grads = (input_grads,)
        if self.check_nan:
            check_gradients(node, input_grads)
        return input_grads


def warn_forward_stack(node: Node) -> None:
    """Warn with the forward call that made ``node`` (kept while anomaly mode was on)."""
    lines = "".join(node.__dict__.get("_forward_stack", ()))
    warnings.warn(
        f"Error detected in {node.name()}. Traceback of forward call that caused the "
        f"error:\n{lines}",
        stacklevel=2,
    )


def check_gradients(node: Node, input_grads) -> None:
    """Raise torch's error if the node returned a NaN gradient."""
    if input_grads is None:
        return
    for i, grad in enumerate(input_grads):
        data = getattr(grad, "_data", grad)
        if isinstance(data, np.ndarray) and data.dtype.kind in "fc" and np.isnan(data).any():
            warn_forward_stack(node)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
