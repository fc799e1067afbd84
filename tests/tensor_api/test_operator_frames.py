"""The arithmetic operators check for an ndarray operand in their own body: ``a + b`` with
a tensor or a number runs no wrapper frame around the operator (one Python frame fewer per
op in every chain of ops), while an ndarray operand still promotes as NumPy would."""

from __future__ import annotations

import sys

import numpy as np

import tinyattn


def _functions_called(thunk) -> list[str]:
    called = []

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            called.append(f"{code.co_filename.rsplit('tinyattn/', 1)[-1]}:{code.co_name}")

    sys.setprofile(profile)
    try:
        thunk()
    finally:
        sys.setprofile(None)
    return called


def test_an_operator_on_tensors_and_numbers_runs_no_wrapper():
    a, b = tinyattn.ones(3), tinyattn.ones(3)
    for thunk in (lambda: a + b, lambda: a * 2.0, lambda: 1.0 - a, lambda: a @ b, lambda: a**2):
        called = _functions_called(thunk)[1:]  # (after the lambda's own frame)
        assert called and called[0].startswith("tensor_api/tensor.py:__"), called
        assert not [c for c in called if "numpy_protocol" in c], called


def test_an_ndarray_operand_is_promoted_in_the_operator():
    a = tinyattn.ones(3)  # float32
    called = _functions_called(lambda: a + np.arange(3))
    assert any(c.endswith("numpy_protocol.py:promote_as_numpy") for c in called), called
    assert (a + np.arange(3)).dtype == tinyattn.float64  # NumPy's float32 + int64
    assert (np.arange(3) + a).dtype == tinyattn.float64
