"""tinyattn.save / tinyattn.load: bit-exact round trips, no pickle, atomic writes, clear errors."""

import io
import json
import math
import os
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import tinyattn
import tinyattn.optim as optim
from tinyattn.serialization import CheckpointError, load, save

DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, bool]


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_is_bit_exact_for_every_dtype(tmp_path, dtype):
    rng = np.random.default_rng(0)
    if np.dtype(dtype).kind == "f":
        base = rng.standard_normal((3, 4)).astype(dtype)
        base[0, :3] = [np.nan, np.inf, -0.0]
    elif dtype is bool:
        base = rng.random((3, 4)) > 0.5
    else:
        info = np.iinfo(dtype)
        base = rng.integers(info.min, info.max, (3, 4), dtype=dtype, endpoint=True)
    tree = {
        "full": tinyattn.tensor(base),
        "scalar": tinyattn.tensor(np.array(base[1, 1])),  # 0-d
        "empty": tinyattn.tensor(base[:0]),
        "transposed": tinyattn.tensor(base).t(),  # non-contiguous view
        "strided": tinyattn.tensor(base)[:, ::2],
        "array": base[::-1],
    }
    path = tmp_path / "ckpt.pt"
    save(tree, path)
    out = load(path)
    for key in ("full", "scalar", "empty", "transposed", "strided"):
        got, want = out[key], tree[key]
        assert isinstance(got, tinyattn.Tensor) and not got.requires_grad
        assert got._data.dtype == want._data.dtype and got.shape == want.shape
        assert _bits(got._data) == _bits(want._data), key
    assert isinstance(out["array"], np.ndarray)
    assert out["array"].dtype == base.dtype and _bits(out["array"]) == _bits(base[::-1])


def test_nested_structure_and_python_values_round_trip(tmp_path):
    t = tinyattn.randn(2, 3, requires_grad=True)
    tree = {
        "model": OrderedDict([("layer.weight", t), ("layer.bias", tinyattn.zeros(3))]),
        "optimizer": {
            "state": {0: {"step": tinyattn.tensor(3.0)}},
            "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0]}],
        },
        "meta": [None, True, False, 7, -(2**70), 1.5, math.inf, -math.inf, "text", ("a", 1)],
        "np_scalar": np.float32(2.5),
        "keys": {1: "int key", 2.5: "float key", None: "none", False: "bool", ("x", 1): "tuple"},
        "tied": [t, t],
    }
    save(tree, tmp_path / "c.pt")
    out = load(tmp_path / "c.pt")
    assert type(out["model"]) is OrderedDict and list(out["model"]) == [
        "layer.weight",
        "layer.bias",
    ]
    assert out["optimizer"]["param_groups"] == tree["optimizer"]["param_groups"]
    assert out["optimizer"]["state"][0]["step"].item() == 3.0
    assert out["meta"] == tree["meta"] and type(out["meta"][-1]) is tuple
    assert out["np_scalar"] == np.float32(2.5) and type(out["np_scalar"]) is np.float32
    assert out["keys"] == tree["keys"]
    assert out["tied"][0] is out["tied"][1]  # stored once, one object again
    assert out["model"]["layer.weight"] is out["tied"][0]
    nan = load_nan(tmp_path)
    assert math.isnan(nan)


def load_nan(tmp_path):
    save({"x": math.nan}, tmp_path / "nan.pt")
    return load(tmp_path / "nan.pt")["x"]


def test_optimizer_state_dict_round_trip_resumes_training(tmp_path):
    w = tinyattn.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = optim.Adam([w], lr=0.1, amsgrad=True)
    for _ in range(3):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
    save({"model": {"w": w}, "opt": opt.state_dict()}, tmp_path / "train.pt")
    ckpt = load(tmp_path / "train.pt", map_location="cpu", weights_only=True)
    w2 = ckpt["model"]["w"].requires_grad_(True)
    opt2 = optim.Adam([w2], lr=1.0, amsgrad=True)
    opt2.load_state_dict(ckpt["opt"])
    for o, p in ((opt, w), (opt2, w2)):
        o.zero_grad()
        (p * p).sum().backward()
        o.step()
    assert _bits(w._data) == _bits(w2._data)


def test_no_pickle_in_the_file(tmp_path):
    save({"w": tinyattn.ones(2), "s": "hello"}, tmp_path / "c.pt")
    with zipfile.ZipFile(tmp_path / "c.pt") as zf:
        assert sorted(zf.namelist()) == ["__tinyattn_index__.npy", "a0.npy"]
        for name in zf.namelist():
            arr = np.load(io.BytesIO(zf.read(name)), allow_pickle=False)  # would raise on pickle
            assert arr.dtype != object
        index = json.loads(np.load(io.BytesIO(zf.read("__tinyattn_index__.npy"))).tobytes())
    assert index["format"] == "tinyattn.save" and index["arrays"]["a0"]["shape"] == [2]


_EXECUTED = []


class _Payload:
    def __reduce__(self):
        return (_EXECUTED.append, ("pwned",))


def _write_zip(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name, arr in members.items():
            buf = io.BytesIO()
            np.save(buf, arr, allow_pickle=True)
            zf.writestr(name + ".npy", buf.getvalue())


def test_pickled_object_array_is_refused_and_not_executed(tmp_path):
    payload = np.empty(1, dtype=object)
    payload[0] = _Payload()
    index = {
        "format": "tinyattn.save",
        "version": 1,
        "arrays": {"a0": {"dtype": "|O", "shape": [1]}},
        "root": {"t": "ndarray", "a": "a0"},
    }
    index_arr = np.frombuffer(json.dumps(index).encode(), dtype=np.uint8)
    _write_zip(tmp_path / "evil.pt", {"__tinyattn_index__": index_arr, "a0": payload})
    with pytest.raises(CheckpointError, match=r"evil\.pt.*pickled object array"):
        load(tmp_path / "evil.pt")
    # an unlisted pickled member is refused too
    _write_zip(
        tmp_path / "evil2.pt", {"__tinyattn_index__": index_arr, "a0": np.zeros(1), "x": payload}
    )
    with pytest.raises(CheckpointError, match="unexpected entries"):
        load(tmp_path / "evil2.pt")
    # a plain np.savez file with a pickle and no index
    np.savez(tmp_path / "plain.npz", x=payload, allow_pickle=True)
    with pytest.raises(CheckpointError, match="NumPy .npz archive without tinyattn.s index"):
        load(tmp_path / "plain.npz")
    assert _EXECUTED == []


def test_unsupported_object_raises_type_error_with_key_path_and_keeps_old_file(tmp_path):
    path = tmp_path / "c.pt"
    save({"w": tinyattn.ones(2)}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError, match=r"obj\['opt'\]\['state'\]\[0\]\['fn'\].*function"):
        save({"w": tinyattn.zeros(2), "opt": {"state": {0: {"fn": lambda: 1}}}}, path)
    with pytest.raises(TypeError, match="dtype object"):
        save({"a": np.array([None, 1])}, path)
    with pytest.raises(TypeError, match=r"obj\[0\].*generator"):
        save([(i for i in range(2))], path)  # no standard __reduce_ex__(2)
    cyclic = ([],)
    cyclic[0].append(cyclic)  # a tuple containing itself cannot be rebuilt (pickle's too)
    with pytest.raises(TypeError, match="contains itself"):
        save(cyclic, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["c.pt"]  # no temporary file left behind


def test_failure_during_write_leaves_existing_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "c.pt"
    save({"w": tinyattn.ones(2)}, path)
    before = path.read_bytes()

    def boom(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        save({"w": tinyattn.zeros(1000)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["c.pt"]


@pytest.mark.parametrize("cut", [0, 10, 100, -30, -1])
def test_truncated_file_raises_checkpoint_error_naming_it(tmp_path, cut):
    path = tmp_path / "trunc.pt"
    save({"w": tinyattn.randn(50), "b": tinyattn.randn(5)}, path)
    data = path.read_bytes()
    path.write_bytes(data[:cut] if cut else b"")
    with pytest.raises(CheckpointError, match=r"trunc\.pt"):
        load(path)


def test_corrupted_payload_is_detected(tmp_path):
    path = tmp_path / "bad.pt"
    w = np.arange(64, dtype=np.float64)
    save({"w": tinyattn.tensor(w)}, path)
    data = bytearray(path.read_bytes())
    pos = bytes(data).find(w.tobytes()) + 100  # inside the tensor's bytes
    data[pos] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"bad\.pt.*(CRC|corrupted)"):
        load(path)
    assert issubclass(CheckpointError, RuntimeError)


def test_file_objects_and_torch_style_arguments(tmp_path):
    buf = io.BytesIO()
    save({"w": tinyattn.arange(3)}, buf)
    buf.seek(0)
    out = load(buf, map_location=tinyattn.device("cpu"), weights_only=False)
    assert out["w"].tolist() == [0, 1, 2]
    buf.seek(0)
    assert load(buf, map_location=lambda storage, loc: storage)["w"].dtype == tinyattn.int64
    buf.seek(0)
    with pytest.raises(RuntimeError, match="CPU only"):
        load(buf, map_location="cuda:0")
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.pt")


def test_save_to_path_without_npz_suffix_keeps_the_name(tmp_path):
    save([1, 2], tmp_path / "weights.bin")
    assert os.listdir(tmp_path) == ["weights.bin"]
    assert load(str(tmp_path / "weights.bin")) == [1, 2]


def test_requires_grad_and_parameter_class_survive_a_round_trip_like_torch(tmp_path):
    # torch.load gives back Parameters as Parameters and keeps requires_grad; a learner
    # saving hand-made weights and reloading them must be able to keep training.
    from tinyattn import nn

    w = tinyattn.randn(3, requires_grad=True)
    tree = {
        "w": w,
        "act": (w * 2).detach().requires_grad_(),
        "p": nn.Parameter(tinyattn.ones(2)),
        "frozen": nn.Parameter(tinyattn.ones(2), requires_grad=False),
        "plain": tinyattn.ones(2),
    }
    save(tree, tmp_path / "c.pt")
    out = load(tmp_path / "c.pt")
    got = {k: (type(v).__name__, v.requires_grad, v.is_leaf) for k, v in out.items()}
    assert got == {
        "w": ("Tensor", True, True),
        "act": ("Tensor", True, True),
        "p": ("Parameter", True, True),
        "frozen": ("Parameter", False, True),
        "plain": ("Tensor", False, True),
    }
    (out["w"] * out["w"]).sum().backward()
    np.testing.assert_array_equal(out["w"].grad.numpy(), 2 * w.detach().numpy())
