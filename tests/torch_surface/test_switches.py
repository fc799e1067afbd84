"""torch's global switches and small queries (determinism, anomaly and inference mode,
warn-always, default tensor type, inter-op threads, typename, legacy constructors,
GradScaler), each compared with what the installed torch answers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tinyattn
from tests.harness import torch
from tinyattn.torch_surface import switches as _switches

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


@pytest.fixture(autouse=True)
def _restore_switches():
    saved = dict(vars(_switches._switches))
    dtype = tinyattn.get_default_dtype()
    yield
    for k in list(vars(_switches._switches)):
        delattr(_switches._switches, k)
    vars(_switches._switches).update(saved)
    tinyattn.set_default_dtype(dtype)


def _determinism_trace(lib):
    out = [lib.get_deterministic_debug_mode()]
    lib.use_deterministic_algorithms(True, warn_only=True)
    out.append((lib.are_deterministic_algorithms_enabled(),
                lib.is_deterministic_algorithms_warn_only_enabled(),
                lib.get_deterministic_debug_mode()))  # fmt: skip
    lib.use_deterministic_algorithms(False)
    for mode in ("error", 1, "default", 2, 0):
        lib.set_deterministic_debug_mode(mode)
        out.append((lib.get_deterministic_debug_mode(), lib.are_deterministic_algorithms_enabled()))
    return out


def test_determinism_switches():
    trace = _determinism_trace(tinyattn)
    assert trace == [0, (True, True, 1), (2, True), (1, True), (0, False), (2, True), (0, False)]
    with pytest.raises(TypeError, match="must be bool"):
        tinyattn.use_deterministic_algorithms(1)
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
        tinyattn.set_deterministic_debug_mode("bad")
    with pytest.raises(RuntimeError, match="expected 0, 1, or 2"):
        tinyattn.set_deterministic_debug_mode(5)


@needs_torch
def test_determinism_switches_match_torch():
    try:
        assert _determinism_trace(tinyattn) == _determinism_trace(torch)
    finally:
        torch.use_deterministic_algorithms(False)


def _anomaly_trace(lib):
    out = [(lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled())]
    lib.set_anomaly_enabled(True)
    out.append((lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()))
    lib.set_anomaly_enabled(True, False)
    out.append((lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()))
    lib.set_anomaly_enabled(False)
    out.append((lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()))
    return out


def test_anomaly_switches():
    assert _anomaly_trace(tinyattn) == [(False, True), (True, True), (True, False), (False, True)]


@needs_torch
def test_anomaly_switches_match_torch():
    try:
        assert _anomaly_trace(tinyattn) == _anomaly_trace(torch)
    finally:
        torch.set_anomaly_enabled(False)


def _inference_trace(lib):
    out = [lib.is_inference_mode_enabled()]
    with lib.inference_mode():
        out.append((lib.is_inference_mode_enabled(), lib.is_grad_enabled()))
        with lib.inference_mode(False):
            out.append((lib.is_inference_mode_enabled(), lib.is_grad_enabled()))
        out.append(lib.is_inference_mode_enabled())
    with lib.no_grad():
        out.append(lib.is_inference_mode_enabled())

    @lib.inference_mode()
    def inside():
        return lib.is_inference_mode_enabled(), lib.is_grad_enabled()

    @lib.inference_mode(False)
    def outside():
        return lib.is_inference_mode_enabled(), lib.is_grad_enabled()

    @lib.inference_mode
    def bare():
        return lib.is_inference_mode_enabled(), lib.is_grad_enabled()

    out += [inside(), outside(), bare(), bare.__name__, lib.is_inference_mode_enabled()]
    return out


def test_inference_mode_is_visible():
    assert _inference_trace(tinyattn) == [
        False, (True, False), (False, True), True, False, (True, False), (False, True),
        (True, False), "bare", False,
    ]  # fmt: skip
    assert tinyattn.autograd.inference_mode is tinyattn.inference_mode


@needs_torch
def test_inference_mode_matches_torch():
    assert _inference_trace(tinyattn) == _inference_trace(torch)


def test_warn_always_and_small_queries():
    assert tinyattn.is_warn_always_enabled() is False
    tinyattn.set_warn_always(True)
    assert tinyattn.is_warn_always_enabled() is True
    tinyattn.set_warn_always(False)
    assert tinyattn.set_flush_denormal(True) is False  # no flush-to-zero switch in NumPy
    assert tinyattn.is_storage(tinyattn.ones(2)) is False
    assert tinyattn.compiled_with_cxx11_abi() is True
    assert tinyattn.get_num_interop_threads() >= 1


def test_set_num_interop_threads_once():
    with pytest.raises(RuntimeError, match="positive"):
        tinyattn.set_num_interop_threads(0)
    with pytest.raises(TypeError, match="int"):
        tinyattn.set_num_interop_threads(1.5)
    tinyattn.set_num_interop_threads(3)
    assert tinyattn.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        tinyattn.set_num_interop_threads(2)


@needs_torch
def test_small_queries_match_torch():
    assert tinyattn.get_num_interop_threads() == torch.get_num_interop_threads()
    assert tinyattn.is_storage(tinyattn.ones(1)) == torch.is_storage(torch.ones(1))
    assert tinyattn.compiled_with_cxx11_abi() == torch.compiled_with_cxx11_abi()
    assert tinyattn.is_warn_always_enabled() == torch.is_warn_always_enabled()


def test_set_default_tensor_type():
    with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
        tinyattn.set_default_tensor_type(tinyattn.DoubleTensor)
    assert tinyattn.get_default_dtype() == tinyattn.float64
    assert tinyattn.tensor([1.0]).dtype == tinyattn.float64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tinyattn.set_default_tensor_type("torch.HalfTensor")
        assert tinyattn.get_default_dtype() == tinyattn.float16
        tinyattn.set_default_tensor_type("tinyattn.FloatTensor")
        assert tinyattn.get_default_dtype() == tinyattn.float32
        with pytest.raises(TypeError, match="only floating-point types"):
            tinyattn.set_default_tensor_type(tinyattn.LongTensor)
        with pytest.raises(TypeError, match="invalid type object"):
            tinyattn.set_default_tensor_type(tinyattn.float64)
        with pytest.raises(ValueError, match="invalid type"):
            tinyattn.set_default_tensor_type("numpy.FloatTensor")
    assert tinyattn.get_default_dtype() == tinyattn.float32


@needs_torch
def test_set_default_tensor_type_matches_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for name in ("DoubleTensor", "HalfTensor", "FloatTensor"):
                tinyattn.set_default_tensor_type(getattr(tinyattn, name))
                torch.set_default_tensor_type(getattr(torch, name))
                assert (
                    str(tinyattn.get_default_dtype()).split(".")[1]
                    == str(torch.get_default_dtype()).split(".")[1]
                )
            with pytest.raises(TypeError):
                torch.set_default_tensor_type(torch.LongTensor)
        finally:
            torch.set_default_dtype(torch.float32)


def test_typename():
    assert tinyattn.typename(tinyattn.ones(2)) == "torch.FloatTensor"  # as x.type()
    assert tinyattn.typename(tinyattn.ones(2, dtype=tinyattn.int64)) == "torch.LongTensor"
    assert tinyattn.typename(3) == "int" and tinyattn.typename("a") == "str"
    assert tinyattn.typename(int) == "int"
    assert tinyattn.typename(tinyattn.nn.Linear(1, 1)).endswith(".Linear")
    assert tinyattn.typename(np.ones) == "numpy.ones"


@needs_torch
def test_typename_matches_torch_outside_tensors():
    for obj in (3, "a", int, np.ones, np.float64(1.0), [1], test_typename):
        assert tinyattn.typename(obj) == torch.typename(obj), obj


@pytest.mark.parametrize("name, dtype", [("HalfTensor", "float16"), ("CharTensor", "int8"),
                                         ("ShortTensor", "int16")])  # fmt: skip
def test_legacy_constructors(name, dtype):
    ctor = getattr(tinyattn, name)
    assert ctor(2, 3).dtype == getattr(tinyattn, dtype) and tuple(ctor(2, 3).shape) == (2, 3)
    assert ctor([1, 2]).tolist() == [1, 2]
    if torch is not None:
        theirs = getattr(torch, name)([1.7, -2.0])
        ours = ctor([1.7, -2.0])
        assert ours.tolist() == theirs.tolist() and ours.dtype.name == str(theirs.dtype)[6:]


def test_grad_scaler_alias():
    assert tinyattn.GradScaler is tinyattn.amp.GradScaler
    if torch is not None:
        assert torch.GradScaler is torch.amp.GradScaler
