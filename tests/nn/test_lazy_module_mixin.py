"""``LazyModuleMixin``'s steps on the lazy modules, with torch's names: placeholders,
``_infer_parameters``, ``_lazy_load_hook``, ``_get_in_channels``; against torch."""

import numpy as np
import pytest
from harness import torch

import tinyattn
import tinyattn.nn as nn
from tinyattn.nn.modules.lazy import LazyModuleMixin

LAZY = ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConvTranspose2d", "LazyBatchNorm1d",
        "LazyInstanceNorm2d"]  # fmt: skip
INPUTS = {"LazyLinear": (2, 4), "LazyConv1d": (2, 5, 6), "LazyConv2d": (2, 5, 4, 4),
          "LazyConvTranspose2d": (2, 5, 4, 4), "LazyBatchNorm1d": (3, 5),
          "LazyInstanceNorm2d": (2, 5, 3, 3)}  # fmt: skip


def _make(lib, name: str):
    cls = getattr(lib.nn, name)
    return cls() if "Norm" in name else (cls(3) if name == "LazyLinear" else cls(3, 2))


def _inferred(lib, name: str) -> list:
    m = _make(lib, name)
    before = m.has_uninitialized_params()
    m._infer_parameters(m, (lib.ones(*INPUTS[name]),))
    state = m.state_dict(keep_vars=True)  # (torch's module is its eager class by now)
    left = any(type(v).__name__.startswith("Uninitialized") for v in state.values())
    return [before, left, {k: tuple(v.shape) for k, v in state.items()}]


@pytest.mark.parametrize("name", LAZY)
def test_infer_parameters_materialises_from_the_input(name):
    mine = _inferred(tinyattn, name)
    assert mine[:2] == [True, False]
    assert isinstance(_make(tinyattn, name), LazyModuleMixin)
    if torch is not None:
        assert mine == _inferred(torch, name)


def test_a_module_left_half_initialised_is_an_error():
    class Half(LazyModuleMixin, nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.UninitializedParameter()
            self.b = nn.UninitializedParameter()

        def initialize_parameters(self, x):
            self.a.materialize((2,))

    half = Half()
    with pytest.raises(RuntimeError, match="module Half has not been fully initialized"):
        half._infer_parameters(half, (tinyattn.ones(1),))
    with pytest.raises(NotImplementedError, match="initialize_parameters"):
        LazyModuleMixin.initialize_parameters(half, tinyattn.ones(1))


def _loaded(lib):
    lin = lib.nn.LazyLinear(3)
    errors: list = []
    state = {"weight": lib.ones(3, 7), "bias": lib.ones(3)}
    lin._lazy_load_hook(state, "", {}, True, [], [], errors)
    return tuple(lin.weight.shape), lin.has_uninitialized_params(), errors


def test_lazy_load_hook_materialises_with_the_stored_shapes():
    mine = _loaded(tinyattn)
    assert mine == ((3, 7), False, [])
    if torch is not None:
        assert mine == _loaded(torch)
    lin = nn.LazyLinear(3)
    lin._lazy_load_hook({"weight": tinyattn.ones(4, 7)}, "", {}, True, [], [], errors := [])
    assert "size mismatch for weight" in errors[0] and lin.has_uninitialized_params()
    lin = nn.LazyLinear(3)
    lin._lazy_load_hook({"lin.weight": tinyattn.ones(3, 2)}, "lin.", {}, True, [], [], [])
    lin.load_state_dict({"weight": tinyattn.ones(3, 2), "bias": tinyattn.zeros(3)})
    np.testing.assert_array_equal(lin(tinyattn.ones(1, 2)).detach().numpy(), [[2.0, 2.0, 2.0]])


def _channels(lib) -> list:
    conv = lib.nn.LazyConv2d(3, 2)
    return [conv._get_in_channels(lib.ones(2, 5, 4, 4)), conv._get_in_channels(lib.ones(5, 4, 4)),
            conv._get_num_spatial_dims()]  # fmt: skip


def test_get_in_channels():
    assert _channels(tinyattn) == [5, 5, 2]
    if torch is not None:
        assert _channels(torch) == [5, 5, 2]
    with pytest.raises(RuntimeError, match=r"expected a 3D \(unbatched\) or 4D"):
        nn.LazyConv2d(3, 2)._get_in_channels(tinyattn.ones(4, 4))
