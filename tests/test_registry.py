"""Every differentiable op must have a float64 gradcheck and a torch parity test.

The shared harness (``tests/harness.py``) records the ``Function`` classes seen in
the graphs it checks; this test, run after all others, compares that record with
every ``Function`` subclass tinyattn defines.
"""

import importlib
import pkgutil

import pytest
from harness import GRADCHECKED, PARITY, torch

import tinyattn
from tinyattn.autograd.function import Function


def _all_functions() -> set[str]:
    for mod in pkgutil.walk_packages(tinyattn.__path__, "tinyattn."):
        if mod.name.endswith("__main__") or ".bench" in mod.name:
            continue
        importlib.import_module(mod.name)
    found, stack = set(), list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("tinyattn."):
            found.add(cls.__name__)
    return found


def test_every_op_is_gradchecked_and_parity_tested():
    if len(GRADCHECKED) < 20:
        pytest.skip("run the whole suite: the registry is filled by the op tests")
    ops = _all_functions()
    missing_gradcheck = sorted(ops - GRADCHECKED)
    assert not missing_gradcheck, f"ops without a float64 gradcheck: {missing_gradcheck}"
    if torch is not None:
        missing_parity = sorted(ops - PARITY)
        assert not missing_parity, f"ops without a torch parity test: {missing_parity}"
