"""safetensors both ways: tinyattn.safetensors, tinyattn.load/save, and the safetensors package."""

from __future__ import annotations

import json
import struct
import tracemalloc

import numpy as np
import pytest

import tinyattn
import tinyattn.safetensors as st
from tinyattn.serialization import CheckpointError, load, save

try:
    import safetensors.numpy as package_numpy
except ImportError:
    package_numpy = None

needs_package = pytest.mark.skipif(
    package_numpy is None, reason="safetensors package not installed (a test extra)"
)
DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


def _tensors() -> dict[str, tinyattn.Tensor]:
    rng = np.random.default_rng(0)
    out = {}
    for name in DTYPES:
        if name == "bool":
            a = rng.random((2, 3)) > 0.5
        elif name.startswith("float"):
            a = rng.standard_normal((2, 3)).astype(name)
        else:
            a = rng.integers(0, 100, (2, 3)).astype(name)
        out[f"t.{name}"] = tinyattn.tensor(a)
    out["scalar"] = tinyattn.tensor(2.5)
    out["empty"] = tinyattn.zeros(0, 4)
    out["strided"] = tinyattn.arange(12.0).reshape(3, 4).t()  # non-contiguous: written C-ordered
    return out


def _same(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
        assert np.array_equal(a[key].numpy(), b[key].numpy()), key


def test_round_trip_every_dtype_with_metadata(tmp_path):
    tensors = _tensors()
    st.save_file(tensors, tmp_path / "m.safetensors", metadata={"format": "pt", "step": "3"})
    _same(tensors, st.load_file(tmp_path / "m.safetensors"))
    _same(tensors, load(tmp_path / "m.safetensors"))
    with st.safe_open(tmp_path / "m.safetensors", framework="pt") as f:
        assert f.keys() == sorted(tensors) and f.metadata() == {"format": "pt", "step": "3"}
        assert f.get_slice("strided").get_shape() == [4, 3]
        assert f.get_slice("strided")[1].tolist() == [1.0, 5.0, 9.0]
    with st.safe_open(tmp_path / "m.safetensors", framework="np") as f:
        assert isinstance(f.get_tensor("t.int16"), np.ndarray)
    _same(tensors, st.load(st.save(tensors)))


def test_tinyattn_save_writes_safetensors_and_load_tells_it_by_its_bytes(tmp_path):
    tensors = _tensors()
    save(tensors, tmp_path / "weights.pt", format="safetensors")
    assert (tmp_path / "weights.pt").read_bytes()[8:9] == b"{"
    _same(tensors, load(tmp_path / "weights.pt"))
    with pytest.raises(TypeError, match=r"tensors\['x'\] is a list, not a Tensor"):
        save({"x": [1]}, tmp_path / "bad.safetensors", format="safetensors")
    assert not (tmp_path / "bad.safetensors").exists()


def test_safe_open_reads_only_the_tensor_asked_for(tmp_path):
    big = tinyattn.zeros(1_000_000)  # 4 MB
    st.save_file({"big": big, "small": tinyattn.ones(3)}, tmp_path / "m.safetensors")
    with st.safe_open(tmp_path / "m.safetensors", "pt") as f:
        tracemalloc.start()
        small = f.get_tensor("small")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert small.tolist() == [1.0, 1.0, 1.0]
    assert peak < 100_000, peak


def _file(path, header: dict, data: bytes, declared: int | None = None) -> None:
    text = json.dumps(header).encode()
    length = len(text) if declared is None else declared
    path.write_bytes(struct.pack("<Q", length) + text + data)


BAD_HEADERS = [  # (header, data bytes, what the message says)
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, 8, "need 8 bytes"),
    (
        {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
        8,
        "cover 4 bytes .*tensor 'a'",
    ),
    (
        {
            "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
        },
        8,
        "tensor 'b' at bytes 4.. overlaps",
    ),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, 8, "leaves a gap"),
    ({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, 8, "ends at byte 16"),
    ({"a": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}, 8, "dtype 'C64'"),
    ({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, 4, "shape"),
    ({"a": {"dtype": "F32", "shape": [1]}}, 4, "exactly dtype, shape and data_offsets"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, 4, r"not \[begin, end\]"),
    ({"__metadata__": {"k": 1}}, 0, "__metadata__ must map strings"),
    ([1, 2], 0, "not an object"),
]


@pytest.mark.parametrize("header, nbytes, match", BAD_HEADERS)
def test_bad_header_raises_checkpoint_error_naming_file_and_tensor(tmp_path, header, nbytes, match):
    path = tmp_path / "bad.safetensors"
    _file(path, header, b"\x00" * nbytes)
    with pytest.raises(CheckpointError, match=match) as info:
        st.load_file(path)
    assert "bad.safetensors" in str(info.value)
    if isinstance(header, dict) and "a" in header:
        assert "tensor 'a'" in str(info.value) or "tensor 'b'" in str(info.value)
    with pytest.raises(CheckpointError, match="bad.safetensors"):
        load(path)  # (a JSON array is not taken for safetensors at all)


def test_huge_declared_shape_or_header_is_refused_before_allocation(tmp_path):
    path = tmp_path / "bomb.safetensors"
    huge = {"a": {"dtype": "F64", "shape": [2**20, 2**20], "data_offsets": [0, 2**43]}}
    _file(path, huge, b"\x00" * 8)
    tracemalloc.start()
    with pytest.raises(CheckpointError, match="ends at byte"):
        load(path)
    assert tracemalloc.get_traced_memory()[1] < 1_000_000
    tracemalloc.stop()
    _file(path, {}, b"", declared=2**40)
    with pytest.raises(CheckpointError, match="the header claims 1099511627776 bytes"):
        load(path)
    path.write_bytes(struct.pack("<Q", 30) + b'{"a": 1, "a": 2}' + b" " * 14)
    with pytest.raises(CheckpointError, match="duplicate keys"):
        st.load_file(path)


def test_bf16_loads_as_float32_with_a_warning(tmp_path):
    path = tmp_path / "b.safetensors"
    bits = (np.array([1.5, -2.0], np.float32).view(np.uint32) >> 16).astype("<u2")
    _file(path, {"h": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}, bits.tobytes())
    with pytest.warns(UserWarning, match=r"BF16 tensors \['h'\] were loaded as float32"):
        out = st.load_file(path)
    assert out["h"].dtype == tinyattn.float32 and out["h"].tolist() == [1.5, -2.0]


@needs_package
def test_files_written_by_the_safetensors_package_load(tmp_path):
    arrays = {k: t.numpy() for k, t in _tensors().items() if k != "strided"}
    package_numpy.save_file(arrays, tmp_path / "p.safetensors", metadata={"m": "1"})
    out = load(tmp_path / "p.safetensors")
    for key, a in arrays.items():
        assert out[key].numpy().dtype == a.dtype and np.array_equal(out[key].numpy(), a), key
    with st.safe_open(tmp_path / "p.safetensors", "pt") as f:
        assert f.metadata() == {"m": "1"}


@needs_package
def test_files_tinyattn_writes_load_in_the_safetensors_package(tmp_path):
    tensors = _tensors()
    st.save_file(tensors, tmp_path / "t.safetensors", metadata={"m": "2"})
    out = package_numpy.load_file(tmp_path / "t.safetensors")
    for key, t in tensors.items():
        assert out[key].dtype == t.numpy().dtype and np.array_equal(out[key], t.numpy()), key
    raw = st.save(tensors)
    assert set(package_numpy.load(raw)) == set(tensors)
