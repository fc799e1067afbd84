"""The Tensor API is written out: every method is defined in a class body, typed, and visible."""

import ast
import importlib.util
import inspect
import pydoc
from pathlib import Path

import numpy as np
import pytest
from harness import torch

import tinyattn
from tinyattn import Tensor

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_tensor_methods", ROOT / "tools" / "gen_tensor_methods.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _public_methods() -> dict:
    return {
        name: value
        for name in dir(Tensor)
        if not name.startswith("_")
        and inspect.isfunction(value := inspect.getattr_static(Tensor, name))
    }


def _class_body_names(cls) -> set[str]:
    """Names bound by ``def`` or assignment directly in the class statement's body."""
    tree = ast.parse(inspect.getsource(inspect.getmodule(cls)))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            names = set()
            for stmt in node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(stmt.name)
                elif isinstance(stmt, ast.Assign):
                    names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
            return names
    raise AssertionError(f"no class statement for {cls.__name__}")


def test_generated_method_modules_are_in_sync_with_the_ops():
    gen = _generator()
    for path, text in gen.render().items():
        on_disk = (ROOT / path).read_text()
        assert on_disk == text, f"{path} is out of date: run python tools/gen_tensor_methods.py"


def test_every_public_method_is_defined_in_a_class_body_not_by_setattr():
    methods = _public_methods()
    assert len(methods) > 170  # the ~145 op methods and the hand-written ones
    defined = set()
    for cls in Tensor.__mro__[:-1]:
        defined |= _class_body_names(cls)
    missing = sorted(set(methods) - defined)
    assert not missing, f"set outside a class body: {missing}"


def test_every_public_method_shows_in_help_with_its_signature():
    text = pydoc.render_doc(Tensor, renderer=pydoc.plaintext)
    for name, fn in _public_methods().items():
        signature = str(inspect.signature(fn))
        shown = f"{name}{signature}" in text  # an alias shows as "ndimension = dim(self)"
        alias = f"{name} = {fn.__name__}{signature}" in text
        assert shown or alias, name


def test_no_method_takes_only_args_and_kwargs():
    for name, fn in _public_methods().items():
        kinds = [p.kind for p in inspect.signature(fn).parameters.values()][1:]
        assert kinds != [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD], name
        assert fn.__doc__, f"{name} has no docstring"


def test_op_methods_carry_the_op_signature_and_point_to_it():
    sig = inspect.signature(Tensor.sum)
    assert list(sig.parameters) == ["self", "dim", "keepdim", "dtype"]
    assert sig.parameters["dtype"].kind is inspect.Parameter.KEYWORD_ONLY
    assert Tensor.exp.__doc__ == "See :func:`tinyattn.exp`."
    assert Tensor.exp.__qualname__ == "TensorMathMethods.exp"
    x = tinyattn.tensor([[1.0, -2.0], [3.0, 0.5]])
    assert x.sum(1, keepdim=True).shape == (2, 1)
    assert x.clamp(max=1.0).tolist() == [[1.0, -2.0], [1.0, 0.5]]


def test_where_method_takes_torch_argument_order():
    x = tinyattn.tensor([1.0, -2.0, 3.0])
    assert x.where(x > 0, 0.0).tolist() == [1.0, 0.0, 3.0]
    if torch is not None:
        xt = torch.tensor([1.0, -2.0, 3.0])
        assert xt.where(xt > 0, 0.0).tolist() == [1.0, 0.0, 3.0]


@pytest.mark.parametrize("other", [None, "abc", object(), [1.0, 2.0], (1.0, 2.0)])
def test_eq_and_ne_with_non_tensor_objects_are_identity_comparisons_like_torch(other):
    x = tinyattn.tensor([1.0, 2.0])
    assert (x == other) is False and (x != other) is True
    if torch is not None:
        xt = torch.tensor([1.0, 2.0])
        assert (xt == other) is False and (xt != other) is True


def test_eq_with_numbers_arrays_and_tensors_stays_elementwise_and_hash_is_by_id():
    x = tinyattn.tensor([1.0, 2.0])
    assert (x == 1).tolist() == [True, False]
    assert (x != np.array([1.0, 0.0])).tolist() == [False, True]
    assert (x == tinyattn.tensor([0.0, 2.0])).tolist() == [False, True]
    y = tinyattn.tensor([1.0, 2.0])
    assert len({x, y}) == 2 and hash(x) == object.__hash__(x)
