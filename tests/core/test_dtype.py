"""torch's type promotion, checked against torch's own results."""

import itertools

import numpy as np
import pytest
from harness import torch

import tinyattn
from tinyattn.core import _dtype as dt

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def _make(lib, name, zero_dim):
    return lib.ones(() if zero_dim else (2,), dtype=getattr(lib, name))


OPS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": lambda a, b: a.maximum(b) if hasattr(a, "maximum") else b.maximum(a),
}


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("op", sorted(OPS))
def test_tensor_tensor_promotion_table_matches_torch(op):
    f = OPS[op]
    mismatches = []
    for a, b in itertools.product(NAMES, NAMES):
        for za, zb in itertools.product((False, True), repeat=2):
            want = f(_make(torch, a, za), _make(torch, b, zb)).dtype
            got = f(_make(tinyattn, a, za), _make(tinyattn, b, zb)).dtype
            if str(want) != "torch." + got.name:
                mismatches.append((a, za, b, zb, want, got))
    assert not mismatches


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("scalar", [True, 3, 2.5])
def test_tensor_scalar_promotion_matches_torch(scalar):
    mismatches = []
    for name, zero in itertools.product(NAMES, (False, True)):
        for f in (lambda a, s: a + s, lambda a, s: s * a, lambda a, s: a / s, lambda a, s: s / a):
            want = f(_make(torch, name, zero), scalar).dtype
            got = f(_make(tinyattn, name, zero), scalar).dtype
            if str(want) != "torch." + got.name:
                mismatches.append((name, zero, scalar, want, got))
    assert not mismatches


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_result_type_matches_torch_result_type():
    for a, b in itertools.product(NAMES, NAMES):
        for za, zb in itertools.product((False, True), repeat=2):
            ta, tb = _make(torch, a, za), _make(torch, b, zb)
            arr_a = np.ones(() if za else (2,), dtype=dt.to_dtype(a).np_dtype)
            arr_b = np.ones(() if zb else (2,), dtype=dt.to_dtype(b).np_dtype)
            assert str(torch.result_type(ta, tb)) == "torch." + str(dt.result_type(arr_a, arr_b))


def test_key_rules_without_torch():
    f32 = tinyattn.ones(2)
    assert (f32 * 2.5).dtype == tinyattn.float32
    assert (tinyattn.tensor([1, 2]) * 2.5).dtype == tinyattn.float32
    assert (tinyattn.tensor([1, 2]) / tinyattn.tensor([2, 4])).dtype == tinyattn.float32
    assert (tinyattn.tensor(2.0, dtype=tinyattn.float64) * f32).dtype == tinyattn.float32
    assert (tinyattn.tensor([True]) + 1).dtype == tinyattn.int64
    assert (tinyattn.tensor([1], dtype=tinyattn.int32) + tinyattn.tensor(5)).dtype == tinyattn.int32
    assert (
        tinyattn.tensor([1], dtype=tinyattn.uint8) + tinyattn.tensor([1], dtype=tinyattn.int8)
    ).dtype == tinyattn.int16


def test_default_dtype_switch():
    try:
        tinyattn.set_default_dtype(tinyattn.float64)
        assert tinyattn.tensor([1.5]).dtype == tinyattn.float64
        assert (tinyattn.tensor([1]) / 2).dtype == tinyattn.float64
        assert tinyattn.zeros(2).dtype == tinyattn.float64
    finally:
        tinyattn.set_default_dtype(tinyattn.float32)
    with pytest.raises(TypeError, match="floating"):
        tinyattn.set_default_dtype(tinyattn.int64)


def test_dtype_conversions_and_errors():
    # Python's float is a double (torch: ones(2, dtype=float) is float64, whatever the default)
    assert dt.to_dtype(float) is tinyattn.float64 and dt.to_dtype(int) is tinyattn.int64
    assert tinyattn.ones(2, dtype=float).dtype == tinyattn.float64
    assert tinyattn.ones(2).to(float).dtype == tinyattn.float64
    assert dt.to_dtype(np.float64) is tinyattn.float64 and dt.to_dtype("int32") is tinyattn.int32
    assert repr(tinyattn.float16) == "tinyattn.float16"
    assert tinyattn.float is tinyattn.float32 and tinyattn.long is tinyattn.int64
    import copy

    assert copy.deepcopy(tinyattn.float64) is tinyattn.float64
    with pytest.raises(TypeError, match="unsupported dtype.*supports"):
        dt.to_dtype(np.uint32)
    with pytest.raises(TypeError, match="unsupported operand"):
        dt.result_type(np.ones(2), "x")
