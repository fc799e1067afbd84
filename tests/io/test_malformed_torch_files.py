"""Hand-damaged torch files: each raises CheckpointError naming the file and the entry or
storage at fault, before anything of a declared size is allocated."""

from __future__ import annotations

import io
import os
import tracemalloc
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch_files import DATA

import tinyattn
from tinyattn.nn import Parameter as nn_parameter
from tinyattn.serialization import CheckpointError, load, save


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _rezip(path, members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _torch_file(tree=None) -> dict[str, bytes]:
    buf = io.BytesIO()
    save(tree or {"w": tinyattn.tensor([[1.0, 2.0], [3.0, 4.0]])}, buf, format="torch")
    return _members(buf.getvalue())


def _expect(path, match: str) -> None:
    warm = io.BytesIO()  # first-use imports (nn, ...) are not the file's allocations
    save({"w": nn_parameter(tinyattn.ones(1))}, warm, format="torch")
    load(io.BytesIO(warm.getvalue()))
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError, match=match) as info:
            load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert os.path.basename(str(path)) in str(info.value)
    assert peak < 2_000_000, peak


def test_storage_entry_shorter_than_declared(tmp_path):
    members = _torch_file()
    members["archive/data/0"] = members["archive/data/0"][:8]
    _rezip(tmp_path / "short.pt", members)
    _expect(tmp_path / "short.pt", r"entry 'archive/data/0' holds 8 bytes; its 4 float32")


def test_huge_shape_on_a_small_storage(tmp_path):
    members = _torch_file()
    pkl = members["archive/data.pkl"]
    huge = b"J\x00\x00\x00\x40J\x00\x00\x00\x40\x86"
    assert pkl.count(b"K\x02K\x02\x86") == 1
    members["archive/data.pkl"] = pkl.replace(b"K\x02K\x02\x86", huge)
    _rezip(tmp_path / "huge.pt", members)
    _expect(tmp_path / "huge.pt", r"storage '0' holds 4 elements; a tensor of size \[1073741824")


def test_legacy_storage_larger_than_the_file(tmp_path):
    data = open(os.path.join(DATA, "small_legacy.pt"), "rb").read()
    assert data.count(b"K\x04N") == 1  # the 2x2 tensor's storage: 4 elements, no view
    (tmp_path / "bomb.pt").write_bytes(data.replace(b"K\x04N", b"J\x00\x00\x00\x40N"))
    _expect(tmp_path / "bomb.pt", r"storage '\d+' declares more bytes than the file holds")


def test_legacy_wrong_magic(tmp_path):
    data = bytearray(open(os.path.join(DATA, "small_legacy.pt"), "rb").read())
    data[6] ^= 0xFF
    (tmp_path / "magic.pt").write_bytes(bytes(data))
    _expect(tmp_path / "magic.pt", "not a file written by torch.save")


def test_compressed_entries_are_refused(tmp_path):
    _rezip(tmp_path / "deflated.pt", _torch_file(), zipfile.ZIP_DEFLATED)
    _expect(tmp_path / "deflated.pt", "entry 'archive/data.pkl' is compressed or encrypted")


@pytest.mark.parametrize(
    "entry, value, match",
    [
        ("archive/version", b"99\n", "format version '99'"),
        ("archive/byteorder", b"middle", "'archive/byteorder' says 'middle'"),
        ("archive/constants.pkl", b"", "a TorchScript archive"),
    ],
)
def test_unreadable_records(tmp_path, entry, value, match):
    members = _torch_file()
    members[entry] = value
    _rezip(tmp_path / "rec.pt", members)
    _expect(tmp_path / "rec.pt", match)


def test_bool_storage_with_other_bytes(tmp_path):
    members = _torch_file({"m": tinyattn.tensor([True, False])})
    members["archive/data/0"] = b"\x01\x02"
    _rezip(tmp_path / "bool.pt", members)
    _expect(tmp_path / "bool.pt", "storage '0': a bool storage holds bytes other than 0 and 1")


def test_storage_type_tinyattn_cannot_hold(tmp_path):
    members = _torch_file()
    pkl = members["archive/data.pkl"]
    members["archive/data.pkl"] = pkl.replace(b"FloatStorage", b"ComplexFloatStorage")
    _rezip(tmp_path / "complex.pt", members)
    _expect(tmp_path / "complex.pt", "storage '0' has type ComplexFloatStorage")


def test_bytearray_of_a_size_is_not_allocated(tmp_path):
    pkl = b"\x80\x02cbuiltins\nbytearray\nJ\x00\x00\x00\x40\x85R."  # bytearray(2**30)
    _rezip(tmp_path / "alloc.pt", {"archive/data.pkl": pkl, "archive/version": b"3\n"})
    _expect(tmp_path / "alloc.pt", r"bytearray\(<size>\) in a file is refused")
    ok = b"\x80\x02cbuiltins\nbytearray\nX\x02\x00\x00\x00abX\x06\x00\x00\x00latin1\x86R."
    _rezip(tmp_path / "bytes.pt", {"archive/data.pkl": ok, "archive/version": b"3\n"})
    assert load(tmp_path / "bytes.pt") == bytearray(b"ab")


def test_missing_storage_entry(tmp_path):
    members = _torch_file()
    del members["archive/data/0"]
    _rezip(tmp_path / "gone.pt", members)
    _expect(tmp_path / "gone.pt", "entry 'archive/data/0' is missing")


# -- fuzzed pickle streams ------------------------------------------------------------------
# Streams assembled from the opcodes the interpreter accepts (and a few it refuses), in any
# order: each loads or raises CheckpointError, never another exception.
_TOKENS = [
    b"N", b"\x88", b"\x89", b")", b"]", b"}", b"\x8f", b"(", b"t", b"\x85", b"\x86", b"\x87",
    b"s", b"u", b"a", b"e", b"R", b"b", b"\x81", b"Q", b"K\x05", b"M\x00\x01", b"J\xff\xff\xff\xff",
    b"G\x3f\xf0\x00\x00\x00\x00\x00\x00", b"\x8a\x01\x80", b"X\x01\x00\x00\x00a", b"U\x01b",
    b"X\x07\x00\x00\x00storage", b"X\x03\x00\x00\x00cpu", b"X\x01\x00\x00\x000",
    b"h\x00", b"h\x01", b"q\x00", b"q\x01", b"j\x00\x00\x00\x00", b"r\x01\x00\x00\x00",
    b"ccollections\nOrderedDict\n", b"ctorch._utils\n_rebuild_tensor_v2\n",
    b"ctorch._utils\n_rebuild_parameter\n", b"ctorch\nFloatStorage\n", b"ctorch\nSize\n",
    b"cbuiltins\nset\n", b"c_codecs\nencode\n", b"ctorch\nfloat16\n", b"cos\nsystem\n",
    b"c__builtin__\neval\n", b"\x95", b"\x94", b"V",
]  # fmt: skip


def _fuzz_case(tokens: list[bytes]) -> bytes:
    return b"\x80\x02" + b"".join(tokens) + b"."


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_TOKENS), max_size=40))
def test_fuzzed_pickle_streams_load_or_raise_checkpoint_error(tokens):
    members = {
        "archive/data.pkl": _fuzz_case(tokens),
        "archive/data/0": b"\x00" * 16,
        "archive/version": b"3\n",
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    buf.seek(0)
    buf.name = "fuzz.pt"
    try:
        load(buf)
    except CheckpointError as e:
        assert "fuzz.pt" in str(e)
