"""``kernels.backend()`` reads ``TINYATTN_KERNELS`` at every call (off ``os.environ``'s own
table on POSIX, each value parsed once): every change through ``os.environ`` switches it."""

import importlib

import pytest

from tinyattn import kernels


def test_every_setting_through_os_environ_is_seen(monkeypatch):
    monkeypatch.delenv("TINYATTN_KERNELS", raising=False)
    assert kernels.backend() == "numba"
    for value, expected in [("numpy", "numpy"), (" NumBa-Loops ", "numba-loops"), ("", "numba")]:
        monkeypatch.setenv("TINYATTN_KERNELS", value)
        assert kernels.backend() == expected
    monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
    assert kernels.backend() == "numpy"  # (a value seen before: the parsed one)
    monkeypatch.delenv("TINYATTN_KERNELS")
    assert kernels.backend() == "numba"


def test_an_unknown_backend_raises_at_every_call(monkeypatch):
    monkeypatch.setenv("TINYATTN_KERNELS", "cuda")
    for _ in range(2):
        with pytest.raises(ValueError, match=r"TINYATTN_KERNELS: expected one of .* got 'cuda'"):
            kernels.backend()


def test_submodule_is_the_imported_module():
    module = kernels.submodule("_numba_layer_norm")
    assert module is importlib.import_module("tinyattn.kernels._numba_layer_norm")
    assert kernels.submodule("_numba_layer_norm") is module
