"""tinyattn's nn classes have the methods torch's define, with torch's signatures.

``torch_nn_methods.json`` (written by ``tools/torch_signatures.py``) lists, for
``torch.nn.Module`` and each public ``torch.nn`` module class, the methods it has below
``Module``, public and single-underscore (the ones subclasses call or override:
``_conv_forward``, ``_check_input_dim``, ``_get_name``, ``reset_parameters``,
``extra_repr``, ``_apply`` ...), each with its signature. For every class tinyattn has,
each method must exist and accept torch's calls (``_signature_rules``), unless
``NOT_YET`` names it with the reason.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import numpy as np
import pytest

import tinyattn
import tinyattn.nn as nn
from tests.surface._signature_rules import mismatches, ours

try:
    import torch
except ImportError:
    torch = None

CLASSES = json.loads((Path(__file__).parent / "torch_nn_methods.json").read_text())["classes"]

# Deliberate differences and what is not built, each with its reason: the methods torch's
# nn classes define that tinyattn's lack or spell differently (method name -> reason).
_DEVICE = "device and dtype moves tinyattn cannot make (CPU only; NumPy has no bfloat16)"
_MULTI_DEVICE = "replication across devices (DataParallel internals): CPU only"
_FLAT_WEIGHTS = "cuDNN's flat RNN weight buffers: tinyattn keeps the weights as separate parameters"

NOT_YET = {
    "bfloat16": _DEVICE, "ipu": _DEVICE, "mtia": _DEVICE, "xpu": _DEVICE,
    "gather": _MULTI_DEVICE, "scatter": _MULTI_DEVICE, "replicate": _MULTI_DEVICE,
    "parallel_apply": _MULTI_DEVICE, "_replicate_for_data_parallel": _MULTI_DEVICE,
    "_init_flat_weights": _FLAT_WEIGHTS, "_update_flat_weights": _FLAT_WEIGHTS,
    "_weights_have_changed": _FLAT_WEIGHTS,
}  # fmt: skip


def _problems() -> dict[str, list[str]]:
    found = {}
    for cls_name, methods in CLASSES.items():
        cls = getattr(nn, cls_name, None)
        if cls is None:
            continue
        for name, entry in methods.items():
            if not hasattr(cls, name):
                found[f"{cls_name}.{name}"] = ["missing"]
                continue
            static = isinstance(inspect.getattr_static(cls, name), staticmethod)
            mine = ours(getattr(cls, name), bound=not static)
            problems = [] if mine is None else mismatches(entry["overloads"], mine)
            if problems:
                found[f"{cls_name}.{name}"] = problems
    return found


def test_data_holds_the_methods_subclasses_use():
    for cls, name in [("Conv2d", "_conv_forward"), ("BatchNorm2d", "_check_input_dim"),
                      ("Module", "_get_name"), ("Linear", "reset_parameters"),
                      ("Module", "extra_repr"), ("Module", "_apply"),
                      ("Module", "_load_from_state_dict")]:  # fmt: skip
        assert name in CLASSES[cls]


def test_every_torch_method_is_here_with_torchs_signature():
    unexplained = {k: p for k, p in _problems().items() if k.rsplit(".", 1)[1] not in NOT_YET}
    assert not unexplained, "\n".join(f"{k}: {p}" for k, p in sorted(unexplained.items()))


def test_not_yet_entries_are_still_needed():
    needed = {k.rsplit(".", 1)[1] for k in _problems()}
    stale = sorted(set(NOT_YET) - needed)
    assert not stale, f"now present with torch's signature, remove from NOT_YET: {stale}"


def test_conv_forward_is_the_step_forward_calls():
    """A weight-standardised conv, written as public code writes it, runs: forward calls
    ``self._conv_forward(x, weight, bias)`` with the subclass's weight."""

    class StdConv2d(nn.Conv2d):
        def forward(self, x):
            w = self.weight
            w = (w - w.mean(dim=(1, 2, 3), keepdim=True)) / (
                w.std(dim=(1, 2, 3), keepdim=True) + 1e-5
            )
            return self._conv_forward(x, w, self.bias)

    conv = StdConv2d(2, 3, 3, padding=1, padding_mode="reflect")
    x = tinyattn.randn(1, 2, 5, 5)
    out = conv(x)
    plain = nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect")
    plain.load_state_dict(conv.state_dict())
    w = conv.weight
    std = (w - w.mean(dim=(1, 2, 3), keepdim=True)) / (w.std(dim=(1, 2, 3), keepdim=True) + 1e-5)
    with tinyattn.no_grad():
        plain.weight.copy_(std)
    np.testing.assert_allclose(out.detach().numpy(), plain(x).detach().numpy(), rtol=1e-6)
    out.sum().backward()
    assert conv.weight.grad is not None and conv.weight.grad.shape == conv.weight.shape


def test_save_to_state_dict_is_the_step_state_dict_calls():
    class WithStep(nn.Linear):
        def _save_to_state_dict(self, destination, prefix, keep_vars):
            super()._save_to_state_dict(destination, prefix, keep_vars)
            destination[prefix + "step"] = tinyattn.tensor(7)

    model = nn.Sequential(WithStep(2, 2))
    assert list(model.state_dict()) == ["0.weight", "0.bias", "0.step"]


@pytest.mark.parametrize("recurse, changed", [(True, 2), (False, 0)])
def test_apply_recurse(recurse, changed):
    model = nn.Sequential(nn.Linear(2, 2))
    model._apply(lambda t: t.double(), recurse)
    assert sum(p.dtype == tinyattn.float64 for p in model.parameters()) == changed


def test_sequential_insert_extend_pop_renumber_as_torch():
    s = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    s.insert(1, nn.Tanh())
    assert [type(m).__name__ for m in s] == ["Linear", "Tanh", "ReLU"]
    assert isinstance(s.pop(0), nn.Linear) and list(s._modules) == ["0", "1"]
    s.extend([nn.Identity()])
    assert list(s._modules) == ["0", "1", "2"] and isinstance(s[2], nn.Identity)
    with pytest.raises(IndexError):
        s.insert(9, nn.ReLU())
    assert isinstance(nn.ModuleList([nn.ReLU(), nn.Tanh()]).pop(1), nn.Tanh)


def test_module_small_methods():
    model = nn.Sequential(nn.BatchNorm1d(2))
    assert model.get_buffer("0.running_mean").shape == (2,)
    with pytest.raises(AttributeError, match="no buffer"):
        model.get_buffer("0.weight")
    model.set_submodule("0", nn.Identity())
    assert isinstance(model[0], nn.Identity)
    assert nn.Linear(2, 2).type(tinyattn.DoubleTensor).weight.dtype == tinyattn.float64
    assert model.share_memory() is model
    with pytest.raises(RuntimeError, match="override get_extra_state"):
        model.get_extra_state()


def _hook_order(lib) -> list:
    log: list = []
    layer = lib.nn.Linear(2, 2)
    layer.register_forward_hook(lambda m, a, o: log.append("after"))
    layer.register_forward_hook(lambda m, a, o: log.append("first"), prepend=True)

    def pre(m, args, kwargs):
        log.append(("pre", len(args), sorted(kwargs)))
        return (args[0] * 0,), kwargs

    layer.register_forward_pre_hook(pre, with_kwargs=True)
    layer.register_forward_hook(
        lambda m, a, k, o: log.append(("kw", o.sum().item())), with_kwargs=True
    )
    with lib.no_grad():
        layer.bias.fill_(1.0)
        layer(lib.ones(1, 2))

    class Failing(lib.nn.Module):
        def forward(self, x):
            raise ValueError("fails")

    failing = Failing()
    failing.register_forward_hook(lambda m, a, o: log.append(("always", o)), always_call=True)
    failing.register_forward_hook(lambda m, a, o: log.append("not called"))
    with pytest.raises(ValueError):
        failing(1)
    return log


# What torch 2.13 does (checked against torch below when it is installed).
HOOK_ORDER = [("pre", 1, []), "first", "after", ("kw", 2.0), ("always", None)]


def test_forward_hook_options_as_recorded():
    """prepend=, with_kwargs= (pre-hook returning (args, kwargs)), always_call=."""
    assert _hook_order(tinyattn) == HOOK_ORDER


@pytest.mark.skipif(torch is None, reason="torch not installed: the record is checked against it")
def test_forward_hook_record_is_torchs():
    assert _hook_order(torch) == HOOK_ORDER


def test_pre_hook_with_kwargs_must_return_a_pair():
    layer = nn.Linear(2, 2)
    layer.register_forward_pre_hook(lambda m, a, k: a, with_kwargs=True)
    with pytest.raises(RuntimeError, match="new_args, new_kwargs"):
        layer(tinyattn.ones(1, 2))


def _dict_methods(lib) -> list:
    ones = lib.ones(1)
    params = lib.nn.ParameterDict({"a": ones, "b": lib.zeros(1)})
    seen = [params.popitem()[0], list(params.keys()), params.copy()["a"] is params["a"]]
    seen += [params.get("missing", 5), tuple(params.setdefault("c", lib.ones(2)).shape)]
    fresh = params.fromkeys(["x", "y"], ones)
    seen += [type(fresh).__name__, list(fresh.keys()), fresh["x"] is fresh["y"]]
    params.update({"d": ones})
    seen += [list(params.keys()), "a" in params, tuple(params.pop("a").shape)]
    params.clear()
    seen += [len(params), len(lib.nn.ParameterList([ones]).extend([ones, ones]))]
    return seen


DICT_METHODS = ["b", ["a"], True, 5, (2,), "ParameterDict", ["x", "y"], False,
                ["a", "c", "d"], True, (1,), 0, 3]  # fmt: skip


def test_parameter_dict_and_list_methods_as_recorded():
    assert _dict_methods(tinyattn) == DICT_METHODS


@pytest.mark.skipif(torch is None, reason="torch not installed: the record is checked against it")
def test_parameter_dict_record_is_torchs():
    assert _dict_methods(torch) == DICT_METHODS


# torch.nn.modules' private base classes that tinyattn does not have or places differently.
PRIVATE_BASES_DIFFER = {
    "conv._ConvTransposeMixin": "torch's deprecated mixin of transposed convolutions",
    "instancenorm._InstanceNorm<BatchNorm": "tinyattn's instance norms derive from _BatchNorm "
    "(they share its running-statistics code); torch's derive from _NormBase only",
    "instancenorm._InstanceNorm<Lazy": "a lazy instance norm is a _LazyBatchNorm until its "
    "first forward makes it an InstanceNorm",
}


def _private_bases(torch_module) -> dict:
    return {
        name: cls
        for name, cls in vars(torch_module).items()
        if inspect.isclass(cls) and issubclass(cls, torch.nn.Module)
        and name.startswith("_") and not name.startswith("__")
        and cls.__module__ == torch_module.__name__
    }  # fmt: skip


@pytest.mark.skipif(torch is None, reason="enumerates torch.nn.modules' private bases")
def test_private_bases_answer_isinstance_as_torchs():
    """``isinstance(m, nn.modules.batchnorm._BatchNorm)`` and the like, common in public
    code (weight-decay groups, freezing norms), answer as under torch."""
    import importlib
    import pkgutil

    import torch.nn.modules

    found = []
    for info in pkgutil.iter_modules(torch.nn.modules.__path__):
        theirs = importlib.import_module(f"torch.nn.modules.{info.name}")
        bases = _private_bases(theirs)
        if not bases:
            continue  # (torch's _functions, utils ...: no module classes)
        mine = importlib.import_module(f"tinyattn.nn.modules.{info.name}")
        for name, base in bases.items():
            if f"{info.name}.{name}" in PRIVATE_BASES_DIFFER:
                continue
            our_base = getattr(mine, name, None)
            if our_base is None:
                found.append(f"{info.name}.{name}: missing")
                continue
            for public in dir(torch.nn):
                cls, ours_cls = getattr(torch.nn, public), getattr(nn, public, None)
                if not (inspect.isclass(cls) and inspect.isclass(ours_cls)):
                    continue
                if issubclass(cls, base) != issubclass(ours_cls, our_base):
                    if "InstanceNorm" in public and name in ("_BatchNorm", "_InstanceNorm"):
                        continue  # the two instancenorm._InstanceNorm entries above
                    found.append(f"{public} vs {info.name}.{name}: {issubclass(cls, base)}")
    assert not found, "\n".join(found)
