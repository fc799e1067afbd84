"""Every public differentiable op documents its gradient, so ``help(tinyattn.add)`` teaches it.

The ops are found two ways: every public function of ``tinyattn`` that refers to a
``Function`` subclass (directly, through a closure or a private helper), and an explicit list of the
ones built from other public ops (``std`` is ``sqrt(var(...))``, ``split`` is
``narrow`` calls ...). A gradient line is ``d<name> = ...`` or the word "Gradient".
"""

import inspect
import re

import pytest

import tinyattn
import tinyattn.nn.functional as F
from tinyattn.autograd.function import Function

GRADIENT_LINE = re.compile(r"\bd ?[A-Za-z_]\w*(\[[^\]]*\])?\s*=|\b[Gg]radient")

# Differentiable, but composed of other ops, so they name no Function themselves.
COMPOSED = [
    "chunk",
    "flatten",
    "floor_divide",
    "index_select",
    "masked_select",
    "movedim",
    "outer",
    "split",
    "squeeze",
    "std",
    "std_mean",
    "t",
    "unbind",
    "unflatten",
    "unsqueeze",
    "var_mean",
]

LOSSES = ["nll_loss", "cross_entropy", "kl_div", "mse_loss", "binary_cross_entropy_with_logits"]


def _refers_to_a_function(fn, depth: int = 2) -> bool:
    """Whether ``fn`` names a Function subclass, itself or through its private helpers."""
    refs = inspect.getclosurevars(fn)
    values = [*refs.globals.values(), *refs.nonlocals.values()]
    if any(isinstance(v, type) and issubclass(v, Function) for v in values):
        return True
    helpers = [v for v in values if inspect.isfunction(v) and v.__name__.startswith("_")]
    return depth > 0 and any(_refers_to_a_function(h, depth - 1) for h in helpers)


def _found_by_reference() -> list[str]:
    return sorted(
        name
        for name, obj in vars(tinyattn).items()
        if not name.startswith("_") and inspect.isfunction(obj) and _refers_to_a_function(obj)
    )


def test_the_search_finds_the_ops():
    found = _found_by_reference()
    assert len(found) >= 60, found  # the search itself works (not vacuously green)
    for name in ("add", "exp", "matmul", "einsum", "sum", "masked_fill", "gather", "softmax"):
        assert name in found


@pytest.mark.parametrize("name", sorted(set(_found_by_reference()) | set(COMPOSED)))
def test_public_op_states_its_gradient(name):
    doc = getattr(tinyattn, name).__doc__ or ""
    assert GRADIENT_LINE.search(doc), f"tinyattn.{name}'s docstring has no gradient line:\n{doc}"


@pytest.mark.parametrize("name", LOSSES)
def test_loss_states_its_gradient(name):
    doc = getattr(F, name).__doc__ or ""
    assert GRADIENT_LINE.search(doc), f"F.{name}'s docstring has no gradient line:\n{doc}"


def test_gradient_line_pattern():
    assert GRADIENT_LINE.search("out = exp(x).   dx = g * out")
    assert GRADIENT_LINE.search("dlogp[i, c] = -w_i * g_i'")
    assert GRADIENT_LINE.search("d input_i = the matching slice of g")
    assert not GRADIENT_LINE.search("Elementwise product with broadcasting.")
    assert not GRADIENT_LINE.search("out = a + b, with dtype promotion")
