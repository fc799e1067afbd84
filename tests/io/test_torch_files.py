"""Reading torch.save files without torch, and writing files torch.load reads.

The committed files in tests/io/data were written by torch (tests/io/torch_files.py), so
the reading tests run without torch; the parity tests write fresh files with torch and
read tinyattn's files back with ``torch.load`` (``weights_only=True``).
"""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
from torch_files import BF16_VALUES, DATA, DTYPES, arrays, build, write

import tinyattn
from tinyattn import nn
from tinyattn.serialization import (
    CheckpointError,
    WeightsOnlyError,
    add_safe_globals,
    clear_safe_globals,
    load,
    safe_globals,
    save,
)

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="parity with torch: torch not installed")
FILES = ["torch_zip.pt", "torch_legacy.pt"]


def _load(path, **kwargs):
    with pytest.warns(UserWarning, match=r"bfloat16 storages .* were loaded as float32"):
        return load(path, **kwargs)


def _bits(t) -> bytes:
    return np.ascontiguousarray(t._data).tobytes()


@pytest.mark.parametrize("name", FILES)
def test_torch_written_file_loads_bit_exactly_without_torch(name):
    out = _load(os.path.join(DATA, name))
    assert type(out["tensors"]) is OrderedDict and list(out["tensors"]) == DTYPES
    for key, expected in arrays().items():
        t = out["tensors"][key]
        assert isinstance(t, tinyattn.Tensor) and t.dtype.name == key
        assert t.shape == expected.shape and _bits(t) == expected.tobytes(), key
        assert not t.requires_grad
    assert out["bf16"].dtype == tinyattn.float32
    assert out["bf16"].tolist() == pytest.approx(BF16_VALUES, rel=0)
    assert out["scalar"].shape == () and out["scalar"].item() == 3.25
    assert out["empty"].shape == (0, 3)
    assert out["meta"] == [1, -2, 2**70, 0.1, "text", b"\x00\xff", None, True, (1, 2)]
    assert out["set"] == {3, 4} and out["step"] == 7
    assert out["size"] == tinyattn.Size([2, 3]) and isinstance(out["size"], tinyattn.Size)
    assert out["dtype"] is tinyattn.float16 and out["device"] == tinyattn.device("cpu")


@pytest.mark.parametrize("name", FILES)
def test_parameters_and_requires_grad_are_kept(name):
    out = _load(os.path.join(DATA, name))
    assert type(out["param"]) is nn.Parameter and out["param"].requires_grad
    assert out["param"].tolist() == [0.5, -0.5]
    assert type(out["frozen"]) is nn.Parameter and not out["frozen"].requires_grad
    assert type(out["grad_leaf"]) is tinyattn.Tensor and out["grad_leaf"].requires_grad
    assert out["grad_leaf"].is_leaf


@pytest.mark.parametrize("name", FILES)
def test_views_of_one_storage_stay_shared(name):
    out = _load(os.path.join(DATA, name))
    base, row, transposed = out["base"], out["row"], out["transposed"]
    assert row.tolist() == [4.0, 5.0, 6.0, 7.0] and transposed.shape == (4, 3)
    base[1, 0] = 100.0
    assert row[0].item() == 100.0 and transposed[0, 1].item() == 100.0


def test_the_format_is_read_from_the_bytes_not_the_name(tmp_path):
    for src, new_name in (("torch_zip.pt", "weights.safetensors"), ("torch_legacy.pt", "m.bin")):
        target = tmp_path / new_name
        target.write_bytes(open(os.path.join(DATA, src), "rb").read())
        assert _load(target)["step"] == 7
    buf = io.BytesIO(open(os.path.join(DATA, "torch_zip.pt"), "rb").read())
    assert _load(buf)["step"] == 7


def test_mmap_maps_the_zip_storages_and_refuses_what_torch_refuses(tmp_path):
    out = _load(os.path.join(DATA, "torch_zip.pt"), mmap=True)
    assert _bits(out["tensors"]["int16"]) == arrays()["int16"].tobytes()
    base = out["base"]._data
    while not isinstance(base, np.memmap) and isinstance(base.base, np.ndarray):
        base = base.base
    assert isinstance(base, np.memmap)
    out["base"][0, 0] = 5.0  # copy-on-write: the file is not changed
    assert _load(os.path.join(DATA, "torch_zip.pt"))["base"][0, 0].item() == 0.0
    with open(os.path.join(DATA, "torch_zip.pt"), "rb") as fh:
        with pytest.raises(ValueError, match="f must be a file path in order to use the mmap"):
            load(fh, mmap=True)
    with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
        load(os.path.join(DATA, "torch_legacy.pt"), mmap=True)


def test_weights_only_false_loads_the_same(tmp_path):
    for name in FILES:
        a = _load(os.path.join(DATA, name), weights_only=False)
        assert _bits(a["tensors"]["float64"]) == arrays()["float64"].tobytes()


# -- the allowlist ---------------------------------------------------------------------------
class Payload:
    """A class a checkpoint may name; building it must not run unless allowlisted."""

    def __init__(self, value=0):
        self.value = value


def _zip_with_pickle(path, data: bytes, prefix: str = "archive") -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{prefix}/data.pkl", data)
        zf.writestr(f"{prefix}/byteorder", "little")
        zf.writestr(f"{prefix}/version", "3\n")


class _Exploit:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_refused_global_raises_torchs_error_and_runs_nothing(tmp_path):
    path = tmp_path / "evil.pt"
    _zip_with_pickle(path, pickle.dumps({"x": _Exploit()}, protocol=2))
    with pytest.raises(WeightsOnlyError) as info:
        load(path)
    msg = str(info.value)
    assert "evil.pt" in msg and "Weights only load failed" in msg
    assert "whose module posix is blocked" in msg or "whose module os is blocked" in msg
    assert isinstance(info.value, pickle.UnpicklingError)


def test_user_class_needs_the_allowlist_then_loads(tmp_path):
    path = tmp_path / "obj.pt"
    _zip_with_pickle(path, pickle.dumps({"x": Payload(5)}, protocol=2))
    name = f"{Payload.__module__}.Payload"
    with pytest.raises(WeightsOnlyError, match=f"Unsupported global: GLOBAL {name} was not an"):
        load(path)
    with safe_globals([Payload]):
        assert load(path)["x"].value == 5
    with pytest.raises(WeightsOnlyError):
        load(path)
    add_safe_globals([Payload])
    try:
        assert load(path)["x"].value == 5
    finally:
        clear_safe_globals()
    assert load(path, weights_only=False)["x"].value == 5


@needs_torch
def test_refusal_message_matches_torchs(tmp_path):
    path = tmp_path / "payload.pt"
    torch.save({"x": Payload(5)}, path)
    with pytest.raises(pickle.UnpicklingError) as theirs:
        torch.load(path)
    with pytest.raises(WeightsOnlyError) as ours:
        load(path)

    def key_lines(text: str) -> list[str]:
        lines = [
            ln.strip() for ln in text.replace("\x1b[1m", "").replace("\x1b[0m", "").splitlines()
        ]
        return [lines[0]] + [ln for ln in lines if ln.startswith("WeightsUnpickler error")]

    want = [
        ln.replace("torch.serialization", "tinyattn.serialization")
        for ln in key_lines(str(theirs.value))
    ]
    assert key_lines(str(ours.value)) == want
    assert "payload.pt" in str(ours.value)


def test_opcodes_outside_the_subset_are_refused(tmp_path):
    path = tmp_path / "proto4.pt"
    _zip_with_pickle(path, pickle.dumps({"x": frozenset({1})}, protocol=4))
    with pytest.raises(WeightsOnlyError, match="Unsupported operand"):
        load(path)


# -- map_location ----------------------------------------------------------------------------
def _saved_on(tmp_path, location: str):
    path = tmp_path / "dev.pt"
    save({"w": tinyattn.tensor([1.0, 2.0])}, path, format="torch")
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    old = b"X\x03\x00\x00\x00cpu"
    new = b"X" + len(location).to_bytes(4, "little") + location.encode()
    members["archive/data.pkl"] = members["archive/data.pkl"].replace(old, new)
    with zipfile.ZipFile(path, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    return path


def test_map_location_maps_a_cuda_file_to_the_cpu(tmp_path):
    path = _saved_on(tmp_path, "cuda:0")
    with pytest.raises(CheckpointError, match="saved on device 'cuda:0'.*map_location='cpu'"):
        load(path)
    for where in ("cpu", tinyattn.device("cpu"), {"cuda:0": "cpu"}, lambda s, loc: s):
        assert load(path, map_location=where)["w"].tolist() == [1.0, 2.0]
    with pytest.raises(CheckpointError, match="cuda:1"):
        load(path, map_location={"cuda:0": "cuda:1"})


# -- writing ---------------------------------------------------------------------------------
def _tinyattn_checkpoint():
    model = nn.Linear(3, 2)
    base = tinyattn.arange(12.0).reshape(3, 4)
    return model, {
        "model": model.state_dict(),
        "base": base,
        "row": base[1],
        "transposed": base.t(),
        "ints": tinyattn.arange(3),
        "mask": tinyattn.tensor([True, False]),
        "half": tinyattn.ones(2, dtype=tinyattn.float16),
        "param": nn.Parameter(tinyattn.ones(2)),
        "meta": [1, (2, 3), {"a": None}, b"\x00", 2**70, -5, 0.25, "s"],
        "set": {1, 2},
        "dtype": tinyattn.float32,
        "size": tinyattn.Size([2, 3]),
        "device": tinyattn.device("cpu"),
        "step": 7,
    }


def test_torch_format_round_trips_through_tinyattn(tmp_path):
    model, ckpt = _tinyattn_checkpoint()
    save(ckpt, tmp_path / "c.pt", format="torch")
    out = load(tmp_path / "c.pt")
    assert type(out["model"]) is OrderedDict
    assert _bits(out["model"]["weight"]) == _bits(model.weight)
    assert out["meta"] == ckpt["meta"] and out["set"] == {1, 2} and out["step"] == 7
    assert type(out["param"]) is nn.Parameter and out["param"].requires_grad
    assert out["dtype"] is tinyattn.float32 and out["size"] == tinyattn.Size([2, 3])
    out["base"][1, 0] = 50.0
    assert out["row"][0].item() == 50.0 and out["transposed"][0, 1].item() == 50.0


@needs_torch
def test_torch_loads_tinyattn_files_with_weights_only(tmp_path):
    model, ckpt = _tinyattn_checkpoint()
    save(ckpt, tmp_path / "c.pt", format="torch")
    out = torch.load(tmp_path / "c.pt", weights_only=True)
    assert out["model"]["weight"].numpy().tobytes() == _bits(model.weight)
    assert out["ints"].dtype == torch.int64 and out["mask"].dtype == torch.bool
    assert out["half"].dtype == torch.float16
    assert isinstance(out["param"], torch.nn.Parameter) and out["param"].requires_grad
    assert out["meta"] == ckpt["meta"] and out["set"] == {1, 2}
    assert out["dtype"] is torch.float32 and out["size"] == torch.Size([2, 3])
    assert out["device"] == torch.device("cpu") and out["step"] == 7
    storage = out["base"].untyped_storage().data_ptr()
    assert out["row"].untyped_storage().data_ptr() == storage
    assert out["transposed"].untyped_storage().data_ptr() == storage
    assert torch.equal(out["transposed"], out["base"].t())
    torch_model = torch.nn.Linear(3, 2)
    torch_model.load_state_dict(out["model"])
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    ours = model(tinyattn.tensor(x)).detach().numpy()
    theirs = torch_model(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "legacy"])
def test_fresh_torch_files_match_torch_bit_exactly(tmp_path, zipped):
    path = tmp_path / "pytorch_model.bin"
    obj = build(torch)
    torch.save(obj, path, _use_new_zipfile_serialization=zipped)
    out = _load(path)
    for key, t in obj["tensors"].items():
        assert _bits(out["tensors"][key]) == t.numpy().tobytes(), key
    bf16 = obj["bf16"].float().numpy()
    assert out["bf16"]._data.tobytes() == bf16.tobytes()


@needs_torch
def test_committed_files_are_what_torch_writes(tmp_path):
    write(torch, str(tmp_path))
    for name in FILES:
        fresh, committed = _load(tmp_path / name), _load(os.path.join(DATA, name))
        for key in DTYPES:
            assert _bits(fresh["tensors"][key]) == _bits(committed["tensors"][key])


def test_torch_format_refuses_what_torch_cannot_load_by_default(tmp_path):
    for obj, where in (
        ({"a": np.zeros(2)}, "obj['a']"),
        ({"m": nn.Linear(2, 2)}, "obj['m']"),
        ({"f": frozenset()}, "obj['f']"),
    ):
        with pytest.raises(TypeError, match=rf"cannot save {re_escape(where)}"):
            save(obj, tmp_path / "x.pt", format="torch")
    assert not (tmp_path / "x.pt").exists()
    with pytest.raises(ValueError, match="format must be 'tinyattn', 'torch' or 'safetensors'"):
        save({}, tmp_path / "x.pt", format="pickle")


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


# -- messages for files that are not checkpoints ----------------------------------------------
def test_an_npz_archive_gets_advice_that_does_not_loop(tmp_path):
    np.savez(tmp_path / "arrays.npz", x=np.ones(2))
    with pytest.raises(CheckpointError) as info:
        load(tmp_path / "arrays.npz")
    msg = str(info.value)
    assert "arrays.npz" in msg and "numpy.load" in msg and "np.savez" not in msg


def test_a_plain_pickle_and_an_unknown_file_name_the_formats_read(tmp_path):
    (tmp_path / "p.pkl").write_bytes(pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(CheckpointError, match="p.pkl.* not a file written by torch.save"):
        load(tmp_path / "p.pkl")
    (tmp_path / "t.txt").write_bytes(b"hello world, not weights")
    with pytest.raises(CheckpointError, match="t.txt.* reads files written by tinyattn.save"):
        load(tmp_path / "t.txt")
