"""Every differentiable op must have a float64 gradcheck and a torch parity test.

The shared harness (``tests/harness.py``) records the ``Function`` classes seen in
the graphs it checks; this test, run after all others, compares that record with
every ``Function`` subclass tinyattn defines.

Second order: every Function not in ``FIRST_ORDER_ONLY`` must support
``create_graph=True`` and have a ``gradgradcheck`` and a torch parity test of
second derivatives (both recorded by ``check_op``). ``FIRST_ORDER_ONLY`` is the one
list of ops whose backward still runs on arrays only; it must be exact (an op that
gained support must leave it), so it can only shrink. See docs/higher-order.md.
"""

import importlib
import pkgutil

import pytest
from harness import GRADCHECKED, GRADGRADCHECKED, PARITY, PARITY2, torch

import tinyattn
from tinyattn.autograd.function import Function

# Ops whose backward does not support create_graph=True yet (one name a line, sorted).
FIRST_ORDER_ONLY: set[str] = set()


def _all_function_classes() -> dict[str, list[type]]:
    for mod in pkgutil.walk_packages(tinyattn.__path__, "tinyattn."):
        if mod.name.endswith("__main__") or ".bench" in mod.name:
            continue
        importlib.import_module(mod.name)
    found: dict[str, list[type]] = {}
    stack = list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("tinyattn."):
            found.setdefault(cls.__name__, []).append(cls)
    return found


def _all_functions() -> set[str]:
    return set(_all_function_classes())


def test_first_order_only_is_exact():
    """FIRST_ORDER_ONLY lists exactly the ops without create_graph support (so it only shrinks)."""
    classes = _all_function_classes()
    stale = sorted(FIRST_ORDER_ONLY - set(classes))
    assert not stale, f"FIRST_ORDER_ONLY names ops that do not exist: {stale}"
    supported = {n for n, cs in classes.items() if all(c.supports_create_graph for c in cs)}
    gained = sorted(FIRST_ORDER_ONLY & supported)
    assert not gained, (
        f"these ops support create_graph now: remove them from FIRST_ORDER_ONLY: {gained}"
    )
    lacking = sorted(set(classes) - FIRST_ORDER_ONLY - supported)
    assert not lacking, (
        f"these ops do not support create_graph=True: convert their backward to ctx.xp "
        f"(docs/higher-order.md) or list them in FIRST_ORDER_ONLY: {lacking}"
    )


def test_every_op_is_gradchecked_and_parity_tested():
    if len(GRADCHECKED) < 20:
        pytest.skip("run the whole suite: the registry is filled by the op tests")
    ops = _all_functions()
    missing_gradcheck = sorted(ops - GRADCHECKED)
    assert not missing_gradcheck, f"ops without a float64 gradcheck: {missing_gradcheck}"
    if torch is not None:
        missing_parity = sorted(ops - PARITY)
        assert not missing_parity, f"ops without a torch parity test: {missing_parity}"


def test_every_second_order_op_is_gradgradchecked_and_parity_tested():
    if len(GRADCHECKED) < 20:
        pytest.skip("run the whole suite: the registry is filled by the op tests")
    ops = _all_functions() - FIRST_ORDER_ONLY
    missing = sorted(ops - GRADGRADCHECKED)
    assert not missing, f"ops without a float64 gradgradcheck: {missing}"
    if torch is not None:
        missing_parity = sorted(ops - PARITY2)
        assert not missing_parity, (
            f"ops without torch parity of second derivatives: {missing_parity}"
        )
