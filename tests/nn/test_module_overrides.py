"""User subclasses that override or call nn's internal steps, written as public code
writes them, behave as under torch.

Each scenario runs on ``lib`` (tinyattn or torch) and returns a record of what happened;
the record is compared with the recorded expectation and, when torch is installed, with
torch's own record.
"""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn

try:
    import torch
except ImportError:
    torch = None

LIBS = [tinyattn] + ([torch] if torch is not None else [])
needs_torch = pytest.mark.skipif(torch is None, reason="compares with torch's own record")


def _std_conv(lib):
    """Weight standardisation: forward calls ``self._conv_forward(x, w, b)``."""

    class StdConv2d(lib.nn.Conv2d):
        def forward(self, x):
            w = self.weight
            w = (w - w.mean(dim=(1, 2, 3), keepdim=True)) / (w.std(dim=(1, 2, 3), keepdim=True) + 1e-5)  # fmt: skip
            return self._conv_forward(x, w, self.bias)

    conv = StdConv2d(2, 3, 3, padding=1, padding_mode="circular", bias=True)
    rng = np.random.default_rng(0)
    with lib.no_grad():
        conv.weight.copy_(lib.tensor(rng.standard_normal((3, 2, 3, 3)), dtype=lib.float32))
        conv.bias.copy_(lib.tensor([0.1, -0.2, 0.3]))
    x = lib.tensor(rng.standard_normal((1, 2, 4, 4)), dtype=lib.float32)
    out = conv(x)
    out.square().sum().backward()
    return out.detach().numpy(), conv.weight.grad.numpy()


def test_conv_subclass_calling_conv_forward_as_torch():
    out, grad = _std_conv(tinyattn)
    assert out.shape == (1, 3, 4, 4) and np.abs(grad).sum() > 0
    if torch is not None:
        t_out, t_grad = _std_conv(torch)
        np.testing.assert_allclose(out, t_out, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(grad, t_grad, rtol=1e-3, atol=1e-4)


def _batchnorm_check(lib) -> list:
    """A BatchNorm1d that also takes 4-d input by overriding ``_check_input_dim``."""
    seen: list = []

    class FlexibleBatchNorm(lib.nn.BatchNorm1d):
        def _check_input_dim(self, input):
            seen.append(input.dim())
            if input.dim() not in (2, 3, 4):
                raise ValueError(f"2-d to 4-d input, got {input.dim()}-d")

    norm = FlexibleBatchNorm(3)
    seen.append(tuple(norm(lib.ones(2, 3, 2, 2)).shape))
    try:
        norm(lib.ones(1, 3, 1, 1, 1))
    except ValueError as err:
        seen.append(str(err))
    try:
        lib.nn.BatchNorm1d(3)(lib.ones(2, 3, 2, 2))
    except ValueError as err:  # the base class's check still refuses 4-d input
        seen.append(type(err).__name__)
    return seen


BATCHNORM_CHECK = [4, (2, 3, 2, 2), 5, "2-d to 4-d input, got 5-d", "ValueError"]


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_batchnorm_subclass_overriding_check_input_dim(lib):
    assert _batchnorm_check(lib) == BATCHNORM_CHECK


def _renaming_load(lib) -> list:
    """A LayerNorm that loads old checkpoints written with ``gamma`` / ``beta``."""
    calls: list = []

    class OldNamesLayerNorm(lib.nn.LayerNorm):
        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                  missing_keys, unexpected_keys, error_msgs):  # fmt: skip
            calls.append((prefix, sorted(state_dict)))
            for old, new in (("gamma", "weight"), ("beta", "bias")):
                if prefix + old in state_dict:
                    state_dict[prefix + new] = state_dict.pop(prefix + old)
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                          missing_keys, unexpected_keys, error_msgs)  # fmt: skip

    model = lib.nn.Sequential(lib.nn.Linear(2, 2), OldNamesLayerNorm(2))
    old = {"0.weight": lib.ones(2, 2), "0.bias": lib.zeros(2),
           "1.gamma": lib.tensor([2.0, 3.0]), "1.beta": lib.tensor([4.0, 5.0])}  # fmt: skip
    result = model.load_state_dict(old)
    record = [calls, result.missing_keys, result.unexpected_keys, model[1].weight.tolist()]
    record.append(model[1].bias.tolist())
    try:
        model.load_state_dict({**old, "1.extra": lib.ones(1)})
    except RuntimeError as err:
        record.append('Unexpected key(s) in state_dict: "1.extra"' in str(err))
    return record


RENAMING_LOAD = [
    [("1.", ["1.beta", "1.gamma"]), ("1.", ["1.beta", "1.extra", "1.gamma"])],
    [], [], [2.0, 3.0], [4.0, 5.0], True,
]  # fmt: skip


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_load_from_state_dict_override_renames_keys(lib):
    assert _renaming_load(lib) == RENAMING_LOAD


def _load_order(lib) -> list:
    """Which module's ``_load_from_state_dict`` runs when, with which slice and metadata."""
    order: list = []

    class Recording(lib.nn.Module):
        def __init__(self, child=None):
            super().__init__()
            self.w = lib.nn.Parameter(lib.zeros(1))
            if child is not None:
                self.child = child

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, *args):
            order.append((prefix, sorted(state_dict), sorted(local_metadata)))
            super()._load_from_state_dict(state_dict, prefix, local_metadata, *args)

    model = Recording(Recording(Recording()))
    saved = model.state_dict()
    order.append(sorted(saved._metadata))
    model.load_state_dict(saved, assign=True)
    return order


LOAD_ORDER = [
    ["", "child", "child.child"],
    ("", ["child.child.w", "child.w", "w"], ["assign_to_params_buffers", "version"]),
    ("child.", ["child.child.w", "child.w"], ["assign_to_params_buffers", "version"]),
    ("child.child.", ["child.child.w"], ["assign_to_params_buffers", "version"]),
]


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_load_state_dict_calls_each_modules_load_from_state_dict_parents_first(lib):
    assert _load_order(lib) == LOAD_ORDER


def _apply_override(lib) -> list:
    """A module keeping an unregistered tensor cache moves it in its ``_apply``."""
    seen: list = []

    class WithCache(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = lib.nn.Linear(2, 2)
            self.register_buffer("steps", lib.zeros(1, dtype=lib.int64))
            self.cache = lib.ones(3)

        def _apply(self, fn, recurse=True):
            seen.append(callable(fn))
            self.cache = fn(self.cache)
            return super()._apply(fn, recurse)

    model = WithCache()
    weight = model.proj.weight
    for convert in (lambda m: m.double(), lambda m: m.to(lib.float16), lambda m: m.float()):
        assert convert(model) is model
        seen.append((str(model.cache.dtype)[-7:], str(model.proj.weight.dtype)[-7:],
                     str(model.steps.dtype)[-5:]))  # fmt: skip
    seen.append(model.proj.weight is weight and isinstance(weight, lib.nn.Parameter))
    seen.append(str(model.cpu().cache.dtype)[-7:])
    return seen


APPLY_OVERRIDE = [True, ("float64", "float64", "int64"), True, ("float16", "float16", "int64"),
                  True, ("float32", "float32", "int64"), True, True, "float32"]  # fmt: skip


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_apply_override_sees_every_conversion(lib):
    assert _apply_override(lib) == APPLY_OVERRIDE


def _repr_hooks(lib) -> str:
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 3
            self.proj = lib.nn.Linear(2, 4, bias=False)

        def extra_repr(self):
            return f"scale={self.scale}"

    class Renamed(lib.nn.ReLU):
        def _get_name(self):
            return "MyReLU"

    return repr(lib.nn.Sequential(Block(), Renamed()))


REPR = """Sequential(
  (0): Block(
    scale=3
    (proj): Linear(in_features=2, out_features=4, bias=False)
  )
  (1): MyReLU()
)"""


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_repr_uses_extra_repr_and_get_name(lib):
    assert _repr_hooks(lib) == REPR


def _extra_state(lib) -> list:
    class Counter(lib.nn.Linear):
        def __init__(self):
            super().__init__(1, 1)
            self.count = 0

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, state):
            self.count = state["count"]

    first, second = Counter(), Counter()
    first.count = 7
    saved = first.state_dict()
    second.load_state_dict(saved)
    missing = second.load_state_dict({"weight": lib.ones(1, 1), "bias": lib.ones(1)}, strict=False)
    return [list(saved), second.count, missing.missing_keys]


EXTRA_STATE = [["weight", "bias", "_extra_state"], 7, ["_extra_state"]]


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_extra_state_is_saved_and_loaded(lib):
    assert _extra_state(lib) == EXTRA_STATE


def _reset_parameters(lib) -> list:
    class ConstantLinear(lib.nn.Linear):
        def reset_parameters(self):
            lib.nn.init.constant_(self.weight, 0.5)
            if self.bias is not None:
                lib.nn.init.zeros_(self.bias)

    layer = ConstantLinear(2, 1)
    return [layer.weight.tolist(), layer.bias.tolist()]


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_init_calls_the_overridden_reset_parameters(lib):
    assert _reset_parameters(lib) == [[[0.5, 0.5]], [0.0]]


def test_an_override_that_breaks_a_value_leaves_the_model_unchanged():
    class Doubling(tinyattn.nn.Linear):
        def _load_from_state_dict(self, state_dict, prefix, *args):
            state_dict[prefix + "bias"] = tinyattn.ones(5)  # the wrong shape
            super()._load_from_state_dict(state_dict, prefix, *args)

    model = tinyattn.nn.Sequential(tinyattn.nn.Linear(1, 1), Doubling(1, 1))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    fresh = {k: tinyattn.full_like(v, 9.0) for k, v in before.items()}
    with pytest.raises(RuntimeError, match=r"size mismatch for 1\.bias"):
        model.load_state_dict(fresh)
    assert all(tinyattn.equal(model.state_dict()[k], v) for k, v in before.items())


def test_load_from_state_dict_called_alone_writes_as_torch():
    layer = tinyattn.nn.Linear(1, 1)
    missing, unexpected, errors = [], [], []
    state = {"p.weight": tinyattn.full((1, 1), 2.0), "p.other": tinyattn.ones(1)}
    layer._load_from_state_dict(state, "p.", {}, True, missing, unexpected, errors)
    assert layer.weight.item() == 2.0
    assert (missing, unexpected, errors) == (["p.bias"], ["p.other"], [])


def test_apply_fn_must_return_a_tensor():
    with pytest.raises(TypeError, match="fn must return a Tensor, got"):
        tinyattn.nn.Linear(1, 1)._apply(lambda t: 1.0)


@needs_torch
def test_cuda_on_a_module_without_tensors_is_a_no_op_as_torch():
    for lib in (tinyattn, torch):
        assert isinstance(lib.nn.ReLU().cuda(), lib.nn.ReLU)
    with pytest.raises(RuntimeError, match="CPU only"):
        tinyattn.nn.Linear(1, 1).cuda()


def _rnn_steps(lib) -> list:
    """An LSTM subclass sees forward's checking steps, in torch's order and arguments."""
    calls: list = []

    class Recording(lib.nn.LSTM):
        def check_forward_args(self, input, hidden, batch_sizes):
            calls.append(("check_forward_args", tuple(input.shape), batch_sizes is None))
            super().check_forward_args(input, hidden, batch_sizes)

        def permute_hidden(self, hx, permutation):
            calls.append(("permute_hidden", permutation is None))
            return super().permute_hidden(hx, permutation)

    lstm = Recording(3, 2, batch_first=True)
    h = (lib.zeros(1, 4, 2), lib.zeros(1, 4, 2))
    lstm(lib.ones(4, 5, 3), h)
    calls.append(lstm.get_expected_hidden_size(lib.ones(4, 5, 3), None))
    calls.append(lstm.get_expected_cell_size(lib.ones(4, 5, 3), None))
    try:
        lstm(lib.ones(4, 5, 3), (lib.zeros(1, 3, 2), lib.zeros(1, 4, 2)))
    except RuntimeError as err:
        calls.append(("(1, 4, 2)" in str(err), "1, 3, 2" in str(err)))
    try:
        lib.nn.GRU(3, 2).check_input(lib.ones(5, 3), None)
    except RuntimeError as err:
        calls.append(str(err))
    return calls


RNN_STEPS = [("check_forward_args", (4, 5, 3), True), ("permute_hidden", True),
             ("permute_hidden", True), (1, 4, 2), (1, 4, 2), ("check_forward_args", (4, 5, 3), True), (True, True),
             "input must have 3 dimensions, got 2"]  # fmt: skip


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_rnn_forward_calls_check_forward_args_and_permute_hidden(lib):
    assert _rnn_steps(lib) == RNN_STEPS


def _small_steps(lib) -> list:
    seen: list = []

    class Counting(lib.nn.InstanceNorm1d):
        def _apply_instance_norm(self, input):
            seen.append(tuple(input.shape))
            return super()._apply_instance_norm(input)

    norm = Counting(2)
    seen.append(tuple(norm(lib.ones(2, 3)).shape))
    seen.append(norm._get_no_batch_dim())
    for call in (lambda: lib.nn.CircularPad2d(1)(lib.ones(2, 2)),
                 lambda: lib.nn.Unflatten(1, (2, "x")),
                 lambda: lib.nn.ParameterDict()[1]):  # fmt: skip
        try:
            call()
        except (ValueError, TypeError) as err:
            seen.append(type(err).__name__)
    shared = lib.nn.Linear(1, 1)
    tree = lib.nn.Sequential(shared, shared)
    seen.append((len(list(tree.modules())), len(list(tree.modules(remove_duplicate=False)))))
    seen.append(lib.nn.ModuleList([lib.nn.ReLU()] * 3)._get_abs_string_index(-1))
    emptied = lib.nn.Linear(2, 2).to_empty(device="cpu")
    seen.append((tuple(emptied.weight.shape), isinstance(emptied.weight, lib.nn.Parameter)))
    deconv = lib.nn.ConvTranspose1d(1, 1, 3, stride=2)
    seen.append(list(deconv._output_padding(lib.ones(1, 1, 4), [10], [2], [0], [3], 1, [1])))
    return seen


SMALL_STEPS = [(1, 2, 3), (2, 3), 2, "ValueError", "TypeError", "TypeError", (2, 3), "2",
               ((2, 2), True), [1]]  # fmt: skip


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_torch_named_steps_of_small_layers(lib):
    assert _small_steps(lib) == SMALL_STEPS
