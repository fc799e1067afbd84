"""``autograd.detect_anomaly``: NaN gradients raise, failing nodes show their forward call.

Each test runs the same code on tinyattn and (when installed) torch.
"""

from __future__ import annotations

import warnings

import pytest
from harness import torch

import tinyattn

LIBS = [tinyattn] + ([torch] if torch is not None else [])
each_lib = pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)


def _sqrt_at_zero(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    return (x.sqrt() * 0).sum()  # d sqrt(x)/dx at 0 is inf; times 0: NaN


@each_lib
def test_nan_gradient_raises_and_names_the_forward_line(lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly():
            assert lib.is_anomaly_enabled()
            y = _sqrt_at_zero(lib)
            with pytest.raises(
                RuntimeError, match="'SqrtBackward0' returned nan values in its 0th"
            ):
                y.backward()
    messages = [str(w.message) for w in caught]
    assert messages[0].startswith("Anomaly Detection has been enabled")
    stack = [m for m in messages if m.startswith("Error detected in SqrtBackward0")]
    assert stack and "_sqrt_at_zero" in stack[0]  # the user's frame that called sqrt
    assert not lib.is_anomaly_enabled()


@each_lib
def test_off_or_check_nan_false_lets_nan_through(lib):
    _sqrt_at_zero(lib).backward()  # off: NaN gradient, no error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.detect_anomaly(check_nan=False):
            _sqrt_at_zero(lib).backward()
    with lib.autograd.set_detect_anomaly(True):
        with pytest.raises(RuntimeError, match="returned nan values"):
            _sqrt_at_zero(lib).backward()
    assert not lib.is_anomaly_enabled()


@each_lib
def test_a_failing_backward_shows_its_forward_call(lib):
    class Broken(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("broken backward")

    x = lib.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly():
            y = Broken.apply(x).sum()
            with pytest.raises(ValueError, match="broken backward"):
                y.backward()
    assert any(str(w.message).startswith("Error detected in BrokenBackward") for w in caught)
