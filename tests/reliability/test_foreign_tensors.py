"""A tensor of another library passed to tinyattn: the message names its type with its
module (``torch.Tensor``, never a bare ``Tensor`` that reads as tinyattn's own) and says
how to convert it without a copy. ``Tensor`` below is such a foreign class, so the tests
run without torch; the torch ones skip without it.
"""

import re
from pathlib import Path

import numpy as np
import pytest

import tinyattn
import tinyattn.nn.functional as F
from tinyattn.foundations.type_names import type_name

PACKAGE = Path(tinyattn.__file__).resolve().parent


class Tensor:
    """Another library's tensor, as tinyattn sees one: DLPack and ``.numpy()``."""

    def __init__(self, array):
        self.array = np.asarray(array, dtype=np.float32)
        self.shape = self.array.shape

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def numpy(self):
        return self.array


class DLPackOnly(Tensor):
    numpy = None  # no host copy: only DLPack is suggested


def calls(foreign):
    """The calls of the reported messages, and a few more entry points."""
    ours = tinyattn.ones(2, 3)
    return {
        "Linear": lambda: tinyattn.nn.Linear(3, 2)(foreign),
        "cat": lambda: tinyattn.cat([ours, foreign]),
        "add": lambda: ours + foreign,
        "add_": lambda: ours.add_(foreign),
        "softmax": lambda: tinyattn.softmax(foreign, 0),
        "relu": lambda: F.relu(foreign),
        "matmul": lambda: tinyattn.matmul(ours, foreign),
        "sdpa": lambda: F.scaled_dot_product_attention(foreign, foreign, foreign),
        "layer_norm": lambda: F.layer_norm(foreign, (3,)),
    }


BARE = re.compile(r"(got|not|type|but got) Tensor\b")


def message_of(call) -> str:
    with pytest.raises((TypeError, IndexError)) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("name", list(calls(None)))
def test_a_foreign_tensor_is_named_with_its_module_and_how_to_convert_it(name):
    """Before: "Linear: input must be a Tensor, got Tensor" and the like."""
    message = message_of(calls(Tensor([[1.0, 2.0, 3.0]] * 2))[name])
    assert f"{Tensor.__module__}.Tensor" in message
    assert not BARE.search(message), message
    assert "tinyattn.from_dlpack(t)" in message
    assert "tinyattn.from_numpy(t.numpy())" in message


def test_only_the_conversions_the_object_offers_are_suggested():
    message = message_of(calls(DLPackOnly([[1.0, 2.0, 3.0]] * 2))["relu"])
    assert "tinyattn.from_dlpack(t)" in message and "from_numpy" not in message


def test_the_suggested_conversion_shares_memory():
    foreign = Tensor([[1.0, 2.0, 3.0]])
    converted = tinyattn.from_dlpack(foreign)
    foreign.array[0, 0] = 7.0
    assert converted.tolist() == [[7.0, 2.0, 3.0]]


@pytest.mark.parametrize(
    "obj, name",
    [(1, "int"), ([1], "list"), (None, "NoneType"), (np.ones(2), "numpy.ndarray")],
    ids=["int", "list", "None", "ndarray"],
)
def test_builtins_keep_their_name_and_numpy_gets_its_module(obj, name):
    assert type_name(obj) == name
    assert type_name(tinyattn.ones(1)) == "tinyattn.Tensor"
    assert type_name(tinyattn.nn.Linear(1, 1)) == "tinyattn.nn.Linear"


def test_every_reported_type_goes_through_type_name():
    """A bare ``type(x).__name__`` in a message is how "got Tensor" came about. Left
    alone: a module's, optimizer's or exception's own class name (torch prints those
    bare too: "Error(s) in loading state_dict for Linear")."""
    own = r"self|module|mod|optimizer|scheduler|e|err|error|exc|ex|cls|self\.\w+"
    bare = re.compile(rf"\{{type\((?!(?:{own})\))[^(){{}}]+\)\.__name__\}}")
    offenders = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if bare.search(line)
    ]
    assert offenders == []


# -- with torch --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(calls(None)))
def test_a_torch_tensor_is_named_torch_tensor(name):
    torch = pytest.importorskip("torch")
    message = message_of(calls(torch.ones(2, 3))[name])
    assert "torch.Tensor (a tensor of another library" in message
    assert "tinyattn.from_dlpack(t)" in message and "tinyattn.from_numpy(t.numpy())" in message
    assert not BARE.search(message), message


def test_a_torch_tensor_converts_as_the_message_says():
    torch = pytest.importorskip("torch")
    t = torch.arange(6.0).reshape(2, 3)
    shared, copied_view = tinyattn.from_dlpack(t), tinyattn.from_numpy(t.numpy())
    t[0, 0] = 7.0
    assert shared[0, 0].item() == copied_view[0, 0].item() == 7.0
