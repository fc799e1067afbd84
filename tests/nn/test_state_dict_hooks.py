"""Module state-dict hooks (torch's four public registrations and the private load
pre-hook), checked call by call against torch, and the legacy weight_norm keys they load."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from harness import torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")
LIBS = [tinyattn] + ([torch] if torch is not None else [])


def _net(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.ReLU(), lib.nn.Linear(2, 1))


def _record(lib):
    """What each hook saw (module types, prefixes, keys) for one save and one load."""
    net, seen = _net(lib), []
    net[0].register_state_dict_pre_hook(
        lambda m, p, kv: seen.append(("pre", type(m).__name__, p, kv))
    )

    def post(m, sd, p, meta):
        seen.append(("post", type(m).__name__, p, sorted(sd), meta["version"]))

    net[2].register_state_dict_post_hook(post)

    def load_pre(m, sd, p, meta, strict, missing, unexpected, errors):
        seen.append(("load_pre", type(m).__name__, p, sorted(sd), strict, meta.get("version")))

    net.register_load_state_dict_pre_hook(load_pre)
    net[2].register_load_state_dict_pre_hook(load_pre)
    net[0].register_load_state_dict_post_hook(
        lambda m, keys: seen.append(("load_post", type(m).__name__, list(keys.missing_keys)))
    )
    sd = net.state_dict(prefix="")
    del sd["2.bias"]
    net.load_state_dict(sd, strict=False)
    return seen


def test_hooks_see_what_torch_hooks_see():
    ours = _record(tinyattn)
    assert ours[0] == ("pre", "Linear", "0.", False)
    assert ("post", "Linear", "2.", ["0.bias", "0.weight", "2.bias", "2.weight"], 1) in ours
    # post-hooks run once the whole load is written (torch runs each right after its own
    # module, so it saw only the keys found missing so far): compare the rest exactly
    assert ours[-1] == ("load_post", "Linear", ["2.bias"])
    if torch is not None:
        theirs = _record(torch)
        assert ours[:-1] == [e for e in theirs if e[0] != "load_post"]


@pytest.mark.parametrize("lib", LIBS)
def test_handles_remove_hooks(lib):
    net, calls = lib.nn.Linear(2, 2), []
    handles = [
        net.register_state_dict_pre_hook(lambda *a: calls.append("pre")),
        net.register_state_dict_post_hook(lambda *a: calls.append("post")),
        net.register_load_state_dict_pre_hook(lambda *a: calls.append("load_pre")),
        net.register_load_state_dict_post_hook(lambda *a: calls.append("load_post")),
    ]
    assert len({h.id for h in handles}) == 4
    net.load_state_dict(net.state_dict())
    assert calls == ["pre", "post", "load_pre", "load_post"]
    for h in handles:
        h.remove()
    calls.clear()
    net.load_state_dict(net.state_dict())
    assert calls == []
    with net.register_state_dict_pre_hook(lambda *a: calls.append("ctx")):
        net.state_dict()
    net.state_dict()
    assert calls == ["ctx"]


@pytest.mark.parametrize("lib", LIBS)
def test_post_hook_may_clear_missing_keys_and_must_return_none(lib):
    net = _net(lib)
    net.register_load_state_dict_post_hook(lambda m, keys: keys.missing_keys.clear())
    result = net.load_state_dict({}, strict=True)
    assert list(result.missing_keys) == []
    net.register_load_state_dict_post_hook(lambda m, keys: keys)
    with pytest.raises(AssertionError, match="not expected to return new values"):
        net.load_state_dict(net.state_dict())


@pytest.mark.parametrize("lib", LIBS)
def test_state_dict_post_hook_rules(lib):
    net = lib.nn.Linear(2, 2)
    net.register_state_dict_post_hook(lambda m, sd, p, meta: sd.pop(p + "bias"))
    with pytest.raises(RuntimeError, match="must return None"):
        net.state_dict()
    old = lib.nn.Linear(2, 2)

    def replace(m, sd, p, meta):
        return {"only": 1}

    old._register_state_dict_hook(replace)  # the private form: the root's result replaces
    assert dict(old.state_dict()) == {"only": 1}
    both = lib.nn.Linear(2, 2)
    both.register_state_dict_post_hook(replace)
    with pytest.raises(
        RuntimeError, match="previously registered via register_state_dict_post_hook"
    ):
        both._register_state_dict_hook(replace)


@pytest.mark.parametrize("lib", LIBS)
def test_load_pre_hook_errors_and_private_form(lib):
    net = lib.nn.Linear(2, 2)
    net._register_load_state_dict_pre_hook(
        lambda sd, p, meta, strict, mk, uk, err: err.append("bad value")
    )
    with pytest.raises(RuntimeError, match="bad value"):
        net.load_state_dict(net.state_dict())
    renamer = lib.nn.Linear(2, 2)

    def rename(sd, prefix, *rest):
        sd[prefix + "weight"] = sd.pop(prefix + "w")

    renamer._register_load_state_dict_pre_hook(rename)
    src = lib.nn.Linear(2, 2)
    renamer.load_state_dict({"w": src.weight.detach(), "bias": src.bias.detach()})
    np.testing.assert_array_equal(renamer.weight.detach().numpy(), src.weight.detach().numpy())


def test_positional_state_dict_warns_as_torch():
    net = tinyattn.nn.Linear(2, 2)
    with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
        sd = net.state_dict(None, "lin.")
    assert list(sd) == ["lin.weight", "lin.bias"]
    assert sd._metadata == {"lin": {"version": 1}}


def test_failed_value_check_still_writes_nothing_with_hooks():
    net = tinyattn.nn.Linear(2, 2)
    net.register_load_state_dict_post_hook(lambda m, keys: None)
    before = net.weight.detach().numpy().copy()
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        net.load_state_dict({"weight": np.ones((3, 3)), "bias": np.zeros(2)})
    np.testing.assert_array_equal(net.weight.detach().numpy(), before)


def _rename_w(module, sd, prefix, *rest):
    if prefix + "w" in sd:
        sd[prefix + "weight"] = sd.pop(prefix + "w")


def test_modules_with_hooks_deepcopy():
    net = tinyattn.nn.Linear(2, 2)
    net.register_load_state_dict_pre_hook(_rename_w)
    again = copy.deepcopy(net)
    again.load_state_dict({"w": np.ones((2, 2)), "bias": np.zeros(2)})
    np.testing.assert_array_equal(again.weight.detach().numpy(), np.ones((2, 2)))


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrized_weight_norm_loads_old_weight_g_v_keys(lib, dim):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = lib.nn.Sequential(lib.nn.utils.weight_norm(lib.nn.Linear(3, 4), dim=dim))
    with lib.no_grad():
        old[0].weight_g.mul_(2.0)
    sd = old.state_dict()
    assert {"0.weight_g", "0.weight_v"} <= set(sd)
    new = lib.nn.Sequential(lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 4), dim=dim))
    result = new.load_state_dict(sd)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    old(lib.zeros(1, 3))  # (the old form recomputes the weight in its forward pre-hook)
    np.testing.assert_allclose(new[0].weight.detach().numpy(), old[0].weight.detach().numpy())


@needs_torch
def test_tinyattn_loads_torch_old_weight_norm_checkpoint():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ref = torch.nn.utils.weight_norm(torch.nn.Conv1d(2, 3, 2))
    ours = tinyattn.nn.utils.parametrizations.weight_norm(tinyattn.nn.Conv1d(2, 3, 2))
    ours.load_state_dict(ref.state_dict())
    x = np.random.default_rng(0).standard_normal((1, 2, 5)).astype(np.float32)
    np.testing.assert_allclose(
        ours(tinyattn.tensor(x)).detach().numpy(), ref(torch.tensor(x)).detach().numpy(), atol=1e-6
    )


def test_only_one_of_the_old_keys_is_left_alone():
    new = tinyattn.nn.utils.parametrizations.weight_norm(tinyattn.nn.Linear(3, 4))
    with pytest.raises(RuntimeError, match='Unexpected key.*"weight_g"'):
        new.load_state_dict({"weight_g": np.ones((4, 1)), "bias": np.zeros(4)})
