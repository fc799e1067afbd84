"""Every public differentiable function documents its gradient, so ``help(F.linear)`` teaches it.

Covered: the public functions of ``tinyattn`` and ``tinyattn.nn.functional`` that refer to a
``Function`` subclass (directly, through a closure or a private helper), an explicit list of
the ones built from other public ops (``std`` is ``sqrt(var(...))``, ``split`` is ``narrow``
calls ...), and the ``forward`` of every ``nn.Module`` subclass exported by ``tinyattn.nn``
that defines its own.

A docstring passes with a gradient formula, ``d<name> = ...`` (``dx = g * out``,
``d input = beta * g``, ``dlogp[i, c] = -w_i g_i``), or with a line naming the ops whose
gradients it composes, ``Composes: F.linear, F.softmax, Tensor.masked_fill``, where every
name must exist. The bare word "gradient" does not count.
"""

import inspect
import re

import pytest

import tinyattn
import tinyattn.nn as nn
import tinyattn.nn.functional as F
from tinyattn.autograd.function import Function

# ``d<name> = <something>``; not ``dim = 1``, ``dtype = ...`` and other words starting with d.
_NOT_GRADIENTS = r"(?!(?:im|ims|type|evice|efault|ropout|ata|ecay|elta)\b)"
GRADIENT_FORMULA = re.compile(
    r"\bd ?" + _NOT_GRADIENTS + r"[A-Za-z_]\w*(\[[^\]]*\])?\s*=(?!=)\s*\S"
)
# "Composes: a, b," and its continuation lines, up to a blank line.
COMPOSES_LINE = re.compile(r"^\s*Composes:(?P<ops>.*(?:\n[ \t]*\S.*)*)", re.MULTILINE)

# Differentiable, but composed of other ops, so they name no Function themselves.
COMPOSED = [
    "addbmm",
    "addmm",
    "baddbmm",
    "chunk",
    "diag",
    "diff",
    "flatten",
    "floor_divide",
    "index_select",
    "inner",
    "masked_select",
    "movedim",
    "msort",
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
COMPOSED_F = ["mse_loss", "multi_head_attention_forward"]

# Modules whose forward is not differentiable math of their own.
NOT_COMPOSING = {"Module"}


def _refers_to_a_function(fn, depth: int = 2) -> bool:
    """Whether ``fn`` names a Function subclass, itself or through its private helpers."""
    refs = inspect.getclosurevars(
        inspect.unwrap(fn)
    )  # (through the out= wrapper, torch_surface/out.py)
    values = [*refs.globals.values(), *refs.nonlocals.values()]
    if any(isinstance(v, type) and issubclass(v, Function) for v in values):
        return True
    helpers = [v for v in values if inspect.isfunction(v) and v.__name__.startswith("_")]
    return depth > 0 and any(_refers_to_a_function(h, depth - 1) for h in helpers)


def _found_by_reference(namespace) -> list[str]:
    return sorted(
        name
        for name, obj in vars(namespace).items()
        if not name.startswith("_") and inspect.isfunction(obj) and _refers_to_a_function(obj)
    )


def _modules_with_a_forward() -> list[str]:
    exported = {name: getattr(nn, name) for name in [*vars(nn), *nn._EINOPS_LAYERS]}
    return sorted(
        name
        for name, obj in exported.items()
        if isinstance(obj, type)
        and issubclass(obj, nn.Module)
        and "forward" in vars(obj)
        and name not in NOT_COMPOSING
    )


def _resolves(name: str) -> bool:
    """``F.linear``, ``tinyattn.softmax``, ``Tensor.masked_fill``, ``nn.Linear``, ``matmul``."""
    parts = name.strip("`").removesuffix("()").split(".")
    roots = {"tinyattn": tinyattn, "torch": tinyattn, "F": F, "nn": nn, "Tensor": tinyattn.Tensor}
    if parts[0] in roots:
        obj, parts = roots[parts[0]], parts[1:]
        for part in parts:
            obj = getattr(obj, part, None)
        return obj is not None
    return any(hasattr(ns, parts[0]) for ns in (tinyattn, F, nn, tinyattn.Tensor))


def states_its_gradient(doc: str) -> str | None:
    """None if ``doc`` has a gradient formula or a valid Composes line, else what is wrong."""
    if GRADIENT_FORMULA.search(doc):
        return None
    match = COMPOSES_LINE.search(doc)
    if not match:
        return "no gradient formula (d<name> = ...) and no 'Composes: op, op' line"
    names = [n.strip().rstrip(".") for n in re.split(r"[,;\n]| and ", match["ops"])]
    unknown = [n for n in names if n and not _resolves(n)]
    return f"the Composes line names unknown ops {unknown}" if unknown else None


def test_the_search_finds_the_ops():
    top, functional = _found_by_reference(tinyattn), _found_by_reference(F)
    assert len(top) >= 80, top  # the search itself works (not vacuously green)
    for name in ("add", "exp", "matmul", "einsum", "sum", "masked_fill", "gather", "softmax"):
        assert name in top
    assert len(functional) >= 15, functional
    for name in ("linear", "layer_norm", "cross_entropy", "scaled_dot_product_attention"):
        assert name in functional
    modules = _modules_with_a_forward()
    assert len(modules) >= 30, modules
    for name in ("Linear", "LayerNorm", "MultiheadAttention", "TransformerEncoderLayer"):
        assert name in modules


@pytest.mark.parametrize("name", sorted(set(_found_by_reference(tinyattn)) | set(COMPOSED)))
def test_public_op_states_its_gradient(name):
    doc = getattr(tinyattn, name).__doc__ or ""
    problem = states_its_gradient(doc)
    assert problem is None, f"tinyattn.{name}: {problem}:\n{doc}"


@pytest.mark.parametrize("name", sorted(set(_found_by_reference(F)) | set(COMPOSED_F)))
def test_functional_states_its_gradient(name):
    doc = getattr(F, name).__doc__ or ""
    problem = states_its_gradient(doc)
    assert problem is None, f"F.{name}: {problem}:\n{doc}"


@pytest.mark.parametrize("name", _modules_with_a_forward())
def test_module_forward_states_its_gradient(name):
    doc = getattr(nn, name).forward.__doc__ or ""
    problem = states_its_gradient(doc)
    assert problem is None, f"nn.{name}.forward: {problem}:\n{doc}"


def test_gradient_patterns():
    assert states_its_gradient("out = exp(x).   dx = g * out") is None
    assert states_its_gradient("dlogp[i, c] = -w_i * g_i'") is None
    assert states_its_gradient("d input_i = the matching slice of g") is None
    assert (
        states_its_gradient("x.\n\n    Composes: F.linear, F.softmax, Tensor.masked_fill\n") is None
    )
    assert states_its_gradient("Composes: matmul and softmax.") is None
    assert states_its_gradient("Composes: F.linear,\n    F.nope\n\nMore.") is not None
    assert states_its_gradient("Composes: F.linear,\n    F.softmax\n\nMore.") is None
    assert states_its_gradient("Composes: F.linear, F.no_such_op") is not None
    assert states_its_gradient("Elementwise product with broadcasting.") is not None
    assert states_its_gradient("out = a + b, with dtype promotion") is not None
    assert states_its_gradient("Gradient: as usual; the gradient flows to input.") is not None
    assert states_its_gradient("dim = -1, dtype = None, default = 0") is not None
    assert states_its_gradient("if d == 0") is not None
