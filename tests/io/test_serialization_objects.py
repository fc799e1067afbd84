"""tinyattn.save / load of whole objects (modules, optimizers, plain objects), without pickle.

torch 2.13's semantics: ``load`` defaults to ``weights_only=True`` and then rebuilds only
allowlisted classes and functions (``add_safe_globals`` / ``safe_globals``), raising
torch's "Weights only load failed" error otherwise; ``weights_only=False`` trusts the file.
"""

from __future__ import annotations

import io
import json
import pickle
import sys
import zipfile
from collections import OrderedDict, defaultdict

import numpy as np
import pytest

import tinyattn
from tinyattn import nn
from tinyattn.serialization import (
    CheckpointError,
    WeightsOnlyError,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    load,
    safe_globals,
    save,
)

INDEX = "__tinyattn_index__.npy"


class Scale(nn.Module):
    """A custom module defined at test-module level, with a plain attribute."""

    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(7, 4)
        self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.LayerNorm(4), Scale(0.5)])
        self.norm = self.blocks[1]  # the same submodule twice
        self.head = nn.Linear(4, 7, bias=False)
        self.head.weight = self.embed.weight  # tied weights
        self.register_buffer("offset", tinyattn.arange(4, dtype=tinyattn.float32))
        self.act = nn.functional.relu  # a function as an attribute (as TransformerEncoderLayer)

    def forward(self, idx):
        x = self.embed(idx) + self.offset
        for block in self.blocks:
            x = block(x)
        return self.head(self.act(self.norm(x)))


NET_GLOBALS = [Net, Scale, nn.Embedding, nn.ModuleList, nn.Linear, nn.LayerNorm, nn.functional.relu]


class Point:
    """A plain Python object."""

    def __init__(self, x, y) -> None:
        self.x, self.y = x, y


class Slotted:
    __slots__ = ("a", "b")


class Counted:
    """Counts ``__new__`` calls: a refused load must build nothing."""

    made = 0

    def __new__(cls, *args):
        Counted.made += 1
        return super().__new__(cls)


def _roundtrip(obj, **kwargs):
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return load(buf, **kwargs)


def _index(path) -> dict:
    with zipfile.ZipFile(path) as zf:
        raw = np.load(io.BytesIO(zf.read(INDEX)), allow_pickle=False)
    return json.loads(raw.tobytes().decode())


def _rewrite(path, edit) -> None:
    """Apply ``edit`` to the JSON index of the checkpoint at ``path`` and write it back."""
    with zipfile.ZipFile(path) as zf:
        members = {
            n[:-4]: np.load(io.BytesIO(zf.read(n)), allow_pickle=False)
            for n in zf.namelist()
            if n != INDEX
        }
    index = _index(path)
    edit(index)
    members[INDEX[:-4]] = np.frombuffer(json.dumps(index).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:  # np.savez would add ".npz" to a path
        np.savez(fh, allow_pickle=False, **members)


@pytest.fixture(autouse=True)
def _no_leftover_allowlist():
    clear_safe_globals()
    yield
    clear_safe_globals()


@pytest.mark.parametrize("how", ["safe_globals", "weights_only_false"])
def test_nested_module_saved_whole_comes_back_equal_with_tied_weights(tmp_path, how):
    tinyattn.manual_seed(0)
    net = Net()
    path = tmp_path / "net.pt"
    save(net, path)
    if how == "safe_globals":
        with safe_globals(NET_GLOBALS):
            got = load(path)
    else:
        got = load(path, weights_only=False)
    assert type(got) is Net and got is not net
    idx = tinyattn.tensor([[1, 2, 6], [0, 3, 5]])
    np.testing.assert_array_equal(got(idx).detach().numpy(), net(idx).detach().numpy())
    want, have = net.state_dict(), got.state_dict()
    assert list(have) == list(want)
    for k in want:
        np.testing.assert_array_equal(have[k].numpy(), want[k].numpy())
    assert got.head.weight is got.embed.weight  # tied weights stay tied
    assert got.norm is got.blocks[1]
    assert isinstance(got.embed.weight, nn.Parameter) and got.embed.weight.requires_grad
    assert got.act is nn.functional.relu and got.blocks[2].factor == 0.5
    assert got.training and "offset" in dict(got.named_buffers())
    # it trains: the tied weight gets one gradient from both uses
    got(idx).sum().backward()
    assert got.embed.weight.grad is not None and got.head.weight.grad is got.embed.weight.grad


def test_default_load_refuses_unlisted_classes_with_torchs_message(tmp_path):
    path = tmp_path / "net.pt"
    save(Net(), path)
    with pytest.raises(WeightsOnlyError) as info:
        load(path)
    msg = str(info.value)
    name = f"{Net.__module__}.Net"
    assert msg.startswith("Weights only load failed.")
    assert (
        f"Unsupported global: GLOBAL {name} was not an allowed global by default. Please use "
        f"`tinyattn.serialization.add_safe_globals([{name}])` or the "
        f"`tinyattn.serialization.safe_globals([{name}])` context manager"
    ) in msg
    assert isinstance(info.value, pickle.UnpicklingError)  # torch's type, for except clauses
    assert isinstance(info.value, CheckpointError)
    # allowlisting only the outer class names the next missing one, as torch does
    with safe_globals([Net]), pytest.raises(WeightsOnlyError, match=r"GLOBAL tinyattn\.nn\."):
        load(path)
    assert load(path, weights_only=False).embed.num_embeddings == 7


def test_weights_only_message_matches_torchs(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save(Point(1, 2), tmp_path / "torch.pt")
    with pytest.raises(Exception) as theirs:
        torch.load(tmp_path / "torch.pt")
    save(Point(1, 2), tmp_path / "ours.pt")
    with pytest.raises(WeightsOnlyError) as ours:
        load(tmp_path / "ours.pt")
    assert type(theirs.value) is pickle.UnpicklingError

    def key_lines(text: str) -> list[str]:
        lines = [ln.strip() for ln in text.splitlines()]
        return [lines[0]] + [ln for ln in lines if ln.startswith("WeightsUnpickler error")]

    want = [
        ln.replace("torch.serialization", "tinyattn.serialization")
        for ln in key_lines(str(theirs.value))
    ]
    want[0] = want[0].replace("\x1b[1m", "").replace("\x1b[0m", "")
    assert key_lines(str(ours.value)) == want


def test_a_refused_load_builds_nothing(tmp_path):
    path = tmp_path / "c.pt"
    save([Counted(), Point(1, 2)], path)
    before = Counted.made
    with safe_globals([Counted]), pytest.raises(WeightsOnlyError, match="Point"):
        load(path)
    assert Counted.made == before  # every name is checked before anything is built


def test_lambda_local_and_bound_method_attributes_refuse_at_save(tmp_path):
    net = Net()
    net.blocks[2].fn = lambda x: x
    with pytest.raises(TypeError, match=r"obj\.blocks\.2\.fn: it is a lambda"):
        save(net, tmp_path / "a.pt")

    class Local:
        pass

    with pytest.raises(TypeError, match=r"obj\['k'\]'s class.*defined inside a function"):
        save({"k": Local()}, tmp_path / "b.pt")
    with pytest.raises(TypeError, match=r"obj\.x.*bound method"):
        save(Point(net.forward, 1), tmp_path / "c.pt")
    assert not (tmp_path / "a.pt").exists()


def test_optimizer_saved_whole_keeps_training_like_the_original(tmp_path):
    tinyattn.manual_seed(1)
    net = Net()
    opt = tinyattn.optim.Adam(net.parameters(), lr=0.01)
    idx = tinyattn.tensor([[1, 2, 3]])
    for _ in range(2):
        opt.zero_grad()
        net(idx).square().mean().backward()
        opt.step()
    save({"model": net, "opt": opt}, tmp_path / "ckpt.pt")
    got = load(tmp_path / "ckpt.pt", weights_only=False)
    net2, opt2 = got["model"], got["opt"]
    assert type(opt2) is tinyattn.optim.Adam and isinstance(opt2.state, defaultdict)
    params2 = list(net2.parameters())
    assert all(p is q for p, q in zip(opt2.param_groups[0]["params"], params2))
    assert set(map(id, opt2.state)) <= set(map(id, params2))  # state keyed by the new params
    for model, optim in ((net, opt), (net2, opt2)):
        optim.zero_grad()
        model(idx).square().mean().backward()
        optim.step()
    for a, b in zip(net.parameters(), params2):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    with safe_globals([*NET_GLOBALS, tinyattn.optim.Adam]):
        assert type(load(tmp_path / "ckpt.pt")["opt"]) is tinyattn.optim.Adam


def test_optimizer_with_a_scheduler_saves_whole_as_torch_does(tmp_path):
    # A scheduler wraps optimizer.step on the instance; torch's Optimizer.__getstate__ keeps
    # only defaults, state and param_groups, so the wrapper (a local function) is not saved.
    net = Net()
    opt = tinyattn.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    sched = tinyattn.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    idx = tinyattn.tensor([[1, 2, 3]])
    net(idx).square().mean().backward()
    opt.step()
    sched.step()
    save(opt, tmp_path / "opt.pt")
    opt2 = load(tmp_path / "opt.pt", weights_only=False)
    assert set(vars(opt2)) >= {"defaults", "state", "param_groups", "_optimizer_step_pre_hooks"}
    assert "step" not in vars(opt2) and opt2.param_groups[0]["lr"] == pytest.approx(0.05)
    momentum = [s["momentum_buffer"] for s in opt2.state.values()]
    assert len(momentum) == len(list(net.parameters()))
    for p in opt2.param_groups[0]["params"]:
        p.grad = tinyattn.ones_like(p)
    opt2.step()  # hooks and step work on the loaded optimizer


def test_rnn_flatten_parameters_is_a_no_op_as_on_torchs_cpu():
    lstm = nn.LSTM(3, 4)
    before = [p.detach().numpy().copy() for p in lstm.parameters()]
    assert lstm.flatten_parameters() is None
    for a, p in zip(before, lstm.parameters()):
        np.testing.assert_array_equal(a, p.detach().numpy())


def test_shared_objects_and_cycles_come_back_as_the_same_object():
    a = Point(1, None)
    a.y = a  # an object containing itself
    shared = [1, 2]
    loop: list = []
    loop.append(loop)
    d: dict = {}
    d["self"] = d
    got = _roundtrip({"a": a, "s1": shared, "s2": shared, "loop": loop, "d": d}, weights_only=False)
    assert got["a"].y is got["a"] and got["a"].x == 1
    assert got["s1"] is got["s2"] == [1, 2]
    assert got["loop"][0] is got["loop"]
    assert got["d"]["self"] is got["d"]


def test_sets_defaultdicts_dtypes_devices_slots_and_globals_round_trip():
    s = Slotted()
    s.a, s.b = 1, "two"
    tree = {
        "set": {3, 1, 2},
        "fz": frozenset({"x", "y"}),
        frozenset({1}): "frozenset key",
        "dd": defaultdict(list, {"k": [1]}),
        "od": OrderedDict(b=1, a=2),
        "dtype": tinyattn.float16,
        "device": tinyattn.device("cpu"),
        "cls": Point,
        "fn": np.mean,
        "slots": s,
        "size": tinyattn.Size([2, 3]),
        "bytes": b"\x00\xffab",
        "complex": 1.5 - 2j,
    }
    got = _roundtrip(tree, weights_only=False)
    assert got["set"] == {1, 2, 3} and type(got["fz"]) is frozenset
    assert got[frozenset({1})] == "frozenset key"
    assert got["dd"].default_factory is list and got["dd"]["new"] == []
    assert list(got["od"]) == ["b", "a"] and type(got["od"]) is OrderedDict
    assert got["dtype"] is tinyattn.float16 and got["device"] == tinyattn.device("cpu")
    assert got["cls"] is Point and got["fn"] is np.mean
    assert (got["slots"].a, got["slots"].b) == (1, "two")
    assert type(got["size"]) is tinyattn.Size and got["size"] == (2, 3)
    assert got["bytes"] == b"\x00\xffab" and got["complex"] == 1.5 - 2j
    # builtin containers, dtypes, devices and Size need no allowlisting; classes do
    plain = {k: tree[k] for k in ("set", "fz", "dd", "od", "dtype", "device", "size", "complex")}
    assert _roundtrip(plain)["dd"].default_factory is list
    with safe_globals([Point, np.mean, Slotted]):
        assert _roundtrip(tree)["slots"].b == "two"


def test_allowlist_api_and_tuple_entries(tmp_path):
    add_safe_globals([Point])
    assert get_safe_globals() == [Point]
    with safe_globals([Scale]):
        assert get_safe_globals() == [Point, Scale]
    assert get_safe_globals() == [Point]
    assert _roundtrip(Point(3, 4)).y == 4
    clear_safe_globals()
    assert get_safe_globals() == []
    with safe_globals([(Point, f"{Point.__module__}.Point")]):
        assert _roundtrip(Point(5, 6)).x == 5
    with pytest.raises(TypeError, match="safe_globals"):
        add_safe_globals(Point)


def test_main_names_resolve_from_the_running_script(monkeypatch):
    class MainThing:
        pass

    MainThing.__module__, MainThing.__qualname__ = "__main__", "MainThing"
    monkeypatch.setattr(sys.modules["__main__"], "MainThing", MainThing, raising=False)
    got = _roundtrip({"x": MainThing()}, weights_only=False)
    assert type(got["x"]) is MainThing
    with pytest.raises(WeightsOnlyError, match=r"GLOBAL __main__\.MainThing"):
        _roundtrip(MainThing())


def _object_file(tmp_path):
    path = tmp_path / "p.pt"
    save({"p": Point(1, 2)}, path)
    return path


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda n: n.update(cls="no_such_module_xyz:Thing"), r"cannot find no_such_module_xyz\.Thing"),
        (lambda n: n.update(cls=n["cls"] + "Missing"), r"cannot find .*PointMissing"),
        (lambda n: n.update(cls="os:system"), r"os\.system is not a class"),
        (lambda n: n.update(state={"t": "list", "items": []}), r"state of .*Point is a list"),
        (lambda n: n.update(cls="not a name"), r"not a 'module:qualname' name"),
        (lambda n: n.update(new_args={"t": "none"}), r"'new_args' is a dict"),
        (lambda n: n.update(extra=1), r"has fields"),
        (lambda n: n["state"].update(m=0) or n.update(new_args=[{"t": "ref", "m": 0}]), "not built"),
        (lambda n: n.update(m=0, new_args=[{"t": "ref", "m": 0}]), "not built"),
    ],
    ids=["unknown-module", "unknown-class", "not-a-class", "state-not-dict", "bad-name",
         "bad-args", "extra-field", "ref-forward", "ref-to-self-in-args"],
)  # fmt: skip
def test_malformed_object_node_raises_checkpoint_error(tmp_path, edit, match):
    path = _object_file(tmp_path)
    _rewrite(path, lambda index: edit(index["root"]["values"][0]))
    with pytest.raises(CheckpointError, match=match):
        load(path, weights_only=False)
    with pytest.raises(CheckpointError):  # refused by the schema or the allowlist
        load(path)


def test_version_1_files_are_read_and_cannot_hold_objects(tmp_path):
    path = tmp_path / "v1.pt"
    save({"w": tinyattn.ones(2), "n": [1, (2, 3)]}, path)
    assert _index(path)["version"] == 2
    _rewrite(path, lambda index: index.update(version=1))
    got = load(path)
    assert got["n"] == [1, (2, 3)] and got["w"].tolist() == [1.0, 1.0]
    save({"p": Point(1, 2)}, path)
    _rewrite(path, lambda index: index.update(version=1))
    with pytest.raises(CheckpointError, match="unknown node type 'object'"):
        load(path, weights_only=False)


def test_unhashable_key_from_a_crafted_file_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "k.pt"
    save({"a": [1], "b": 2}, path)

    def edit(index):
        root = index["root"]
        root["values"][0]["m"] = 0
        root["keys"][1] = {"t": "ref", "m": 0}  # the list [1] as a dict key

    _rewrite(path, edit)
    with pytest.raises(CheckpointError, match="unhashable"):
        load(path)


def test_bytes_node_with_bad_hex_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "b.pt"
    save({"b": b"ok"}, path)
    _rewrite(path, lambda index: index["root"]["values"][0].update(v="zz"))
    with pytest.raises(CheckpointError, match="not bytes in hex form"):
        load(path)


def test_value_types_are_allowed_as_values_but_not_built_from_a_files_state(tmp_path):
    # tinyattn's device, dtype and Tensor classes may appear as values by default; built
    # from a crafted object node they would skip their constructors' checks.
    assert _roundtrip([tinyattn.device, tinyattn.Tensor]) == [tinyattn.device, tinyattn.Tensor]
    path = tmp_path / "d.pt"
    save({"d": Point(1, 2)}, path)
    device_cls = f"{tinyattn.device.__module__}:{tinyattn.device.__qualname__}"
    _rewrite(path, lambda index: index["root"]["values"][0].update(cls=device_cls))
    with pytest.raises(WeightsOnlyError, match=r"GLOBAL tinyattn\.core\.device\.device"):
        load(path)
    tensor_cls = f"{tinyattn.Tensor.__module__}:Tensor"
    _rewrite(path, lambda index: index["root"]["values"][0].update(cls=tensor_cls))
    with pytest.raises(CheckpointError, match="tensor class"):
        load(path, weights_only=False)


def test_a_bare_string_where_a_node_belongs_is_refused(tmp_path):
    path = tmp_path / "s.pt"
    save([1, 2], path)
    _rewrite(path, lambda index: index["root"]["items"].__setitem__(0, "ready"))
    with pytest.raises(CheckpointError, match=r"obj\[0\] is not a node"):
        load(path)


@pytest.mark.parametrize("weights_only", [True, False])
def test_files_naming_the_old_module_paths_of_tensor_size_and_device_still_load(
    tmp_path, weights_only
):
    """Files written before ``_tensor``, ``_size`` and ``_device`` moved into folders name
    those classes by their old module paths; loading maps them to the new ones."""
    path = tmp_path / "old.pt"
    save({"shape": tinyattn.Size([2, 3]), "cls": tinyattn.Tensor, "dev": tinyattn.device}, path)
    old = {
        "tinyattn.core.size:Size": "tinyattn._size:Size",
        "tinyattn.tensor_api.tensor:Tensor": "tinyattn._tensor:Tensor",
        "tinyattn.core.device:device": "tinyattn._device:device",
    }

    def to_old_paths(index):
        for node in index["root"]["values"]:
            key = "cls" if node["t"] == "object" else "name"
            assert node[key] in old, node
            node[key] = old[node[key]]

    _rewrite(path, to_old_paths)
    assert "tinyattn._size:Size" in json.dumps(_index(path))
    back = load(path, weights_only=weights_only)
    assert type(back["shape"]) is tinyattn.Size and back["shape"] == (2, 3)
    assert back["cls"] is tinyattn.Tensor and back["dev"] is tinyattn.device
