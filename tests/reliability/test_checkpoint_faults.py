"""``tinyattn.load`` on damaged and hostile files: one exception type, no hang, no huge allocation.

Every single-bit flip and every truncation of a small checkpoint must either load the
identical data or raise ``CheckpointError`` naming the file. Zip bombs, oversized
declared shapes and malformed indexes (hand-made and Hypothesis-fuzzed) must raise
``CheckpointError`` before anything large is allocated.
"""

from __future__ import annotations

import io
import json
import os
import tracemalloc
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyattn
from tinyattn.serialization import CheckpointError, load, save

INDEX = "__tinyattn_index__.npy"


def _small_tree():
    return {
        "w": tinyattn.tensor([[1.5, -2.0], [0.25, 3.0]]),
        "idx": tinyattn.tensor([1, 0], dtype=tinyattn.int64),
        "step": 3,
        "lr": 0.5,
    }


def _same(a, b) -> bool:
    if isinstance(a, tinyattn.Tensor):
        return (
            isinstance(b, tinyattn.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and a._data.tobytes() == b._data.tobytes()
            and a.requires_grad == b.requires_grad
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _index_bytes(index: dict) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(json.dumps(index).encode(), dtype=np.uint8))
    return buf.getvalue()


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _write(path, members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _index(arrays: dict, root: dict) -> dict:
    return {"format": "tinyattn.save", "version": 1, "arrays": arrays, "root": root}


def _expect_error(path, match: str = "") -> CheckpointError:
    with pytest.raises(CheckpointError) as info:
        load(path)
    msg = str(info.value)
    assert os.path.basename(str(path)) in msg, msg
    if match:
        assert match in msg, msg
    return info.value


# -- every bit flip, every truncation ---------------------------------------------------
@pytest.fixture(scope="module")
def small_checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("faults") / "small.pt"
    tree = _small_tree()
    save(tree, path)
    return path, path.read_bytes(), tree


def test_the_fault_checkpoint_is_small(small_checkpoint):
    _, data, tree = small_checkpoint
    assert 300 <= len(data) <= 4096, len(data)
    assert _same(tree, load(io.BytesIO(data)))


def test_every_single_bit_flip_loads_identically_or_raises_checkpoint_error(small_checkpoint):
    _, data, tree = small_checkpoint
    identical = refused = 0
    for pos in range(len(data)):
        for bit in range(8):
            damaged = bytearray(data)
            damaged[pos] ^= 1 << bit
            buf = io.BytesIO(bytes(damaged))
            buf.name = "flipped.pt"
            try:
                out = load(buf)
            except CheckpointError as e:
                assert "flipped.pt" in str(e)
                refused += 1
                continue
            # anything else raised fails the test with its own traceback
            assert _same(tree, out), f"flip of bit {bit} at byte {pos} loaded different data"
            identical += 1
    assert identical + refused == 8 * len(data)
    assert refused > identical  # most flips hit data, CRCs or structure


def test_every_truncation_raises_checkpoint_error(small_checkpoint):
    _, data, _ = small_checkpoint
    for cut in range(len(data)):
        buf = io.BytesIO(data[:cut])
        buf.name = "cut.pt"
        with pytest.raises(CheckpointError, match=r"cut\.pt"):
            load(buf)


def test_appended_garbage_is_refused_or_ignored_consistently(small_checkpoint):
    _, data, tree = small_checkpoint
    buf = io.BytesIO(data + b"\0" * 17)
    buf.name = "tail.pt"
    try:
        out = load(buf)
    except CheckpointError:
        return
    assert _same(tree, out)


# -- the same faults in torch's formats and safetensors ------------------------------------
# torch's zip files protect the pickle and every storage with a CRC, so a flip loads the
# same data or is refused. The legacy format and safetensors carry no checksum: a flip in a
# value's bytes loads a different value (torch cannot tell either), so for them the promise
# is only that a flip never raises anything but CheckpointError. Each byte gets one flip
# (its bit chosen by position), and every bit of the first 64 and last 64 bytes (the
# headers: zip local header, pickle and magic, safetensors length and JSON; the zip's end
# of central directory) is flipped, to keep the test to a few thousand loads.
DATA = os.path.join(os.path.dirname(__file__), os.pardir, "io", "data")


def _foreign_files() -> dict[str, tuple[bytes, bool]]:
    """name -> (file bytes, whether every flip must load identical data or be refused)."""
    from tinyattn.safetensors import save as safetensors_bytes

    out = {}
    for name in ("small_zip.pt", "small_legacy.pt"):
        with open(os.path.join(DATA, name), "rb") as fh:
            out[name] = (fh.read(), name == "small_zip.pt")
    small = {k: v for k, v in _small_tree().items() if isinstance(v, tinyattn.Tensor)}
    out["small.safetensors"] = (safetensors_bytes(small), False)
    return out


def _flips(size: int):
    for pos in range(size):
        if pos < 64 or pos >= size - 64:
            yield from ((pos, bit) for bit in range(8))
        else:
            yield pos, (pos * 5) % 8


@pytest.mark.parametrize("name", ["small_zip.pt", "small_legacy.pt", "small.safetensors"])
def test_bit_flips_in_torch_and_safetensors_files_load_or_raise_checkpoint_error(name):
    data, checksummed = _foreign_files()[name]
    clean = load(io.BytesIO(data))
    refused = loaded = 0
    for pos, bit in _flips(len(data)):
        damaged = bytearray(data)
        damaged[pos] ^= 1 << bit
        buf = io.BytesIO(bytes(damaged))
        buf.name = "flipped." + name.rsplit(".", 1)[1]
        try:
            out = load(buf)
        except CheckpointError as e:
            assert "flipped." in str(e)
            refused += 1
            continue
        # anything else raised fails the test with its own traceback
        loaded += 1
        if checksummed:
            assert _same(clean, out), f"flip of bit {bit} at byte {pos} loaded different data"
    assert refused > 0 and refused + loaded == len(list(_flips(len(data))))


@pytest.mark.parametrize("name", ["small_zip.pt", "small_legacy.pt", "small.safetensors"])
def test_every_truncation_of_torch_and_safetensors_files_raises_checkpoint_error(name):
    data, _ = _foreign_files()[name]
    assert _same(_small_tree_without_grad(name), load(io.BytesIO(data)))
    for cut in range(len(data)):
        buf = io.BytesIO(data[:cut])
        buf.name = "cut.pt"
        with pytest.raises(CheckpointError, match=r"cut\.pt"):
            load(buf)


def _small_tree_without_grad(name: str) -> dict:
    tree = _small_tree()
    if name.endswith(".safetensors"):
        tree = {k: v for k, v in tree.items() if isinstance(v, tinyattn.Tensor)}
        return {k: tree[k] for k in sorted(tree, key=lambda k: (-tree[k].element_size(), k))}
    return tree


# -- zip bombs and oversized declarations -------------------------------------------------
def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


def test_zip_bomb_is_refused_without_inflating(tmp_path):
    # 64 MiB of zeros compress to ~64 KiB: a small stand-in for the 512 MiB / 2 GiB bombs.
    big = np.zeros(8 * 2**20, dtype=np.float64)
    index = _index({"a0": {"dtype": "<f8", "shape": [big.size]}}, {"t": "tensor", "a": "a0"})
    path = tmp_path / "bomb.pt"
    _write(path, {INDEX: _index_bytes(index), "a0.npy": _npy(big)}, zipfile.ZIP_DEFLATED)
    del big
    assert path.stat().st_size < 2**20

    def attempt():
        with pytest.raises(CheckpointError, match="compressed"):
            load(path)

    assert _peak_bytes(attempt) < 4 * 2**20


def test_compressed_index_is_refused(tmp_path):
    tree_path = tmp_path / "ok.pt"
    save({"a": 1}, tree_path)
    with zipfile.ZipFile(tree_path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    path = tmp_path / "zindex.pt"
    _write(path, members, zipfile.ZIP_DEFLATED)
    _expect_error(path, "compressed")


@pytest.mark.parametrize(
    "shape", [[10**12], [2**40, 2**40], [2**63], [10**6, 10**6, 10**6]], ids=str
)
def test_oversized_declared_shape_is_refused_before_allocating(tmp_path, shape):
    small = np.zeros(4, dtype=np.float64)
    index = _index({"a0": {"dtype": "<f8", "shape": shape}}, {"t": "tensor", "a": "a0"})
    path = tmp_path / "huge.pt"
    _write(path, {INDEX: _index_bytes(index), "a0.npy": _npy(small)})

    def attempt():
        _expect_error(path, "'a0'")

    assert _peak_bytes(attempt) < 2**20


def test_npy_header_declaring_a_larger_shape_than_the_index_is_refused(tmp_path):
    # The member's own header lies (a 10^12-element array over 32 bytes of data).
    header = _npy(np.zeros(4, dtype=np.float64))
    lying = header.replace(b"(4,), }" + b" " * 10, b"(10000000000,), }")
    assert len(lying) == len(header)
    index = _index({"a0": {"dtype": "<f8", "shape": [4]}}, {"t": "tensor", "a": "a0"})
    path = tmp_path / "lie.pt"
    _write(path, {INDEX: _index_bytes(index), "a0.npy": lying})
    assert _peak_bytes(lambda: _expect_error(path, "'a0'")) < 2**20


def test_member_claiming_more_bytes_than_the_file_is_refused(tmp_path):
    save({"w": tinyattn.ones(3)}, tmp_path / "ok.pt")
    data = bytearray((tmp_path / "ok.pt").read_bytes())
    # Patch the central-directory sizes of a0.npy to 2 GiB (both, so they agree).
    cd = data.rfind(b"PK\x01\x02", 0, data.find(b"PK\x05\x06"))
    while cd != -1:
        name_len = int.from_bytes(data[cd + 28 : cd + 30], "little")
        if bytes(data[cd + 46 : cd + 46 + name_len]) == b"a0.npy":
            data[cd + 20 : cd + 28] = (2**31).to_bytes(4, "little") * 2
            break
        cd = data.rfind(b"PK\x01\x02", 0, cd)
    assert cd != -1
    (tmp_path / "liar.pt").write_bytes(bytes(data))
    assert _peak_bytes(lambda: _expect_error(tmp_path / "liar.pt")) < 2**20


# -- index schema: hand-made cases ------------------------------------------------------
def _one_array_file(path, root, arrays=None, members=None):
    arrays = {"a0": {"dtype": "<f4", "shape": [2]}} if arrays is None else arrays
    members = {"a0.npy": _npy(np.ones(2, np.float32))} if members is None else members
    _write(path, {INDEX: _index_bytes(_index(arrays, root)), **members})


def _nested(depth: int) -> dict:
    node = {"t": "none"}
    for _ in range(depth):
        node = {"t": "list", "items": [node]}
    return node


BAD_ROOTS = {
    "str-holding-dict": ({"t": "str", "v": {"x": 1}}, "obj"),
    "int-holding-float": ({"t": "int", "v": 1.7}, "'int' node holds float"),
    "int-holding-bool": ({"t": "int", "v": True}, "'int' node"),
    "bool-holding-int": ({"t": "bool", "v": 1}, "'bool' node"),
    "float-not-hex": ({"t": "float", "v": "1.5x"}, "hex"),
    "list-where-mapping": ([{"t": "none"}], "obj"),
    "items-mapping": ({"t": "list", "items": {"a": 1}}, "'items'"),
    "dict-keys-mismatch": ({"t": "dict", "keys": [], "values": [{"t": "none"}]}, "keys"),
    "dict-key-list": (
        {"t": "dict", "keys": [{"t": "list", "items": []}], "values": [{"t": "none"}]},
        "dict key",
    ),
    "dict-key-repeated": (
        {
            "t": "dict",
            "keys": [{"t": "int", "v": 1}, {"t": "int", "v": 1}],
            "values": [{"t": "none"}, {"t": "none"}],
        },
        "repeats",
    ),
    "unknown-type": ({"t": "set", "items": []}, "unknown"),
    "extra-field": ({"t": "none", "v": 3}, "fields"),
    "missing-type": ({"v": 3}, "obj"),
    "array-unknown": ({"t": "tensor", "a": "a7"}, "a7"),
    "array-not-str": ({"t": "tensor", "a": 0}, "obj"),
    "rg-not-bool": ({"t": "tensor", "a": "a0", "rg": 1}, "'rg'"),
    "npscalar-shape": ({"t": "npscalar", "a": "a0"}, "scalar"),
    "deep-300": (_nested(300), "deep"),
    "array-two-kinds": (
        {"t": "list", "items": [{"t": "tensor", "a": "a0"}, {"t": "ndarray", "a": "a0"}]},
        "also used",
    ),
    "unreferenced": ({"t": "none"}, "not referenced"),
}


@pytest.mark.parametrize("case", sorted(BAD_ROOTS))
def test_malformed_index_tree_raises_checkpoint_error(tmp_path, case):
    root, match = BAD_ROOTS[case]
    if case != "unreferenced":  # keep a0 referenced, so the fault at hand is the one found
        root = {"t": "list", "items": [root, {"t": "tensor", "a": "a0"}]}
    path = tmp_path / f"{case}.pt"
    _one_array_file(path, root)
    _expect_error(path, match)


@pytest.mark.parametrize("depth", [2000, 100_000])
def test_deeply_nested_index_text_is_refused(tmp_path, depth):
    # Written as text: the json module cannot even encode this many levels.
    root = '{"t": "list", "items": [' * depth + '{"t": "none"}' + "]}" * depth
    text = (
        '{"format": "tinyattn.save", "version": 1, "arrays": {}, "root": ' + root + "}"
    ).encode()
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(text, dtype=np.uint8))
    _write(tmp_path / "deep.pt", {INDEX: buf.getvalue()})
    _expect_error(tmp_path / "deep.pt", "deep")


def test_error_names_the_index_path(tmp_path):
    root = {
        "t": "dict",
        "keys": [{"t": "str", "v": "model"}],
        "values": [
            {
                "t": "dict",
                "keys": [{"t": "str", "v": "weight"}],
                "values": [{"t": "int", "v": "seven"}],
            }
        ],
    }
    _one_array_file(tmp_path / "p.pt", {"t": "list", "items": [root, {"t": "tensor", "a": "a0"}]})
    _expect_error(tmp_path / "p.pt", "obj[0]['model']['weight']")


@pytest.mark.parametrize(
    "dtype", ["<U2", ">f4", "<M8[s]", "<m8[s]", "|V4", "|S3", "<f16", "float32", 7, None]
)
def test_unsupported_dtype_in_index_is_refused(tmp_path, dtype):
    arr = np.zeros(2, dtype=np.float32)
    _one_array_file(
        tmp_path / "dt.pt",
        {"t": "ndarray", "a": "a0"},
        arrays={"a0": {"dtype": dtype, "shape": [2]}},
        members={"a0.npy": _npy(arr)},
    )
    _expect_error(tmp_path / "dt.pt", "dtype")


@pytest.mark.parametrize("dtype", ["<U2", ">f4", "<M8[s]"])
def test_unsupported_dtype_member_matching_its_index_is_refused(tmp_path, dtype):
    arr = np.zeros(2, dtype=dtype)
    _one_array_file(
        tmp_path / "dt.pt",
        {"t": "ndarray", "a": "a0"},
        arrays={"a0": {"dtype": np.dtype(dtype).str, "shape": [2]}},
        members={"a0.npy": _npy(arr)},
    )
    _expect_error(tmp_path / "dt.pt", "unsupported dtype")


def test_requires_grad_on_an_int_tensor_is_refused_naming_the_node(tmp_path):
    _one_array_file(
        tmp_path / "rg.pt",
        {
            "t": "dict",
            "keys": [{"t": "str", "v": "ids"}],
            "values": [{"t": "tensor", "a": "a0", "rg": True}],
        },
        arrays={"a0": {"dtype": "<i8", "shape": [2]}},
        members={"a0.npy": _npy(np.zeros(2, np.int64))},
    )
    _expect_error(tmp_path / "rg.pt", "obj['ids']")


@pytest.mark.parametrize("shape", [[-1], [2.0], [True, 2], "2", None, [2] * 65], ids=repr)
def test_malformed_shape_is_refused(tmp_path, shape):
    _one_array_file(
        tmp_path / "s.pt",
        {"t": "tensor", "a": "a0"},
        arrays={"a0": {"dtype": "<f4", "shape": shape}},
    )
    _expect_error(tmp_path / "s.pt", "shape")


@pytest.mark.parametrize(
    "index",
    [
        "not json",
        "[1, 2]",
        '{"format": "tinyattn.save", "version": 1, "arrays": [], "root": {"t": "none"}}',
        '{"format": "tinyattn.save", "version": 3, "arrays": {}, "root": {"t": "none"}}',
        '{"format": "tinyattn.save", "version": 1, "arrays": {}, "root": {"t": "none"}, "x": 1}',
        '{"format": "tinyattn.save", "version": 1, "arrays": {}, "root": {"t": "float", "v": NaN}}',
        '{"format": "tinyattn.save", "format": "tinyattn.save", "version": 1, "arrays": {}, "root": {"t": "none"}}',
        '{"format": "tinyattn.save", "version": 1, "arrays": {"b0": {"dtype": "<f4", "shape": []}}, "root": {"t": "none"}}',
        "[" * 5000 + "]" * 5000,
        b"\xff\xfe",  # not UTF-8
    ],
    ids=lambda s: repr(s[:30]),
)
def test_malformed_index_document_is_refused(tmp_path, index):
    raw = index if isinstance(index, bytes) else index.encode()
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(raw, dtype=np.uint8))
    _write(tmp_path / "doc.pt", {INDEX: buf.getvalue()})
    _expect_error(tmp_path / "doc.pt")


def test_index_of_wrong_dtype_is_refused(tmp_path):
    _write(tmp_path / "i.pt", {INDEX: _npy(np.zeros(3, np.float32))})
    _expect_error(tmp_path / "i.pt", "index")


def test_bool_member_with_bytes_other_than_0_and_1_is_refused(tmp_path):
    raw = _npy(np.ones(2, np.bool_))
    raw = raw[:-2] + b"\x02\x01"
    _one_array_file(
        tmp_path / "b.pt",
        {"t": "tensor", "a": "a0"},
        arrays={"a0": {"dtype": "|b1", "shape": [2]}},
        members={"a0.npy": raw},
    )
    _expect_error(tmp_path / "b.pt", "bool")


def test_duplicate_zip_members_are_refused(tmp_path):
    import warnings

    save({"w": tinyattn.ones(2)}, tmp_path / "ok.pt")
    with zipfile.ZipFile(tmp_path / "ok.pt") as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
        with zipfile.ZipFile(tmp_path / "dup.pt", "w") as zf:
            for n, d in members.items():
                zf.writestr(n, d)
            zf.writestr("a0.npy", _npy(np.zeros(2, np.float32)))
    _expect_error(tmp_path / "dup.pt", "duplicate")


# -- index schema: Hypothesis fuzzing ------------------------------------------------------
_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["a0", "a1", "t", "none", "int", "str", "tensor", "list", "dict", "0x1p+0"]),
)
_json = st.recursive(
    _json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.sampled_from(["t", "v", "a", "rg", "param", "items", "keys", "values", "x"]),
            children,
            max_size=4,
        ),
    ),
    max_leaves=20,
)
_node_type = st.sampled_from(
    [
        "none",
        "bool",
        "int",
        "float",
        "str",
        "tensor",
        "ndarray",
        "npscalar",
        "list",
        "tuple",
        "dict",
        "odict",
        "x",
    ]
)
_node = st.recursive(
    st.fixed_dictionaries(
        {"t": _node_type}, optional={"v": _json_leaf, "a": _json_leaf, "rg": _json_leaf}
    ),
    lambda children: st.one_of(
        st.fixed_dictionaries({"t": _node_type, "items": st.lists(children, max_size=3)}),
        st.fixed_dictionaries(
            {
                "t": _node_type,
                "keys": st.lists(children, max_size=3),
                "values": st.lists(children, max_size=3),
            }
        ),
        _json,
    ),
    max_leaves=12,
)
_arrays = st.dictionaries(
    st.sampled_from(["a0", "a1", "b", "a01"]),
    st.one_of(
        st.fixed_dictionaries(
            {
                "dtype": st.sampled_from(["<f4", "<f8", "<i8", "|b1", "<U2", ">f4", "|O", "x"]),
                "shape": st.one_of(st.lists(st.integers(-2, 10**13), max_size=3), _json_leaf),
            }
        ),
        _json,
    ),
    max_size=2,
)


@settings(max_examples=200, deadline=None)
@given(root=_node, arrays=_arrays)
def test_fuzzed_index_loads_or_raises_checkpoint_error(tmp_path_factory, root, arrays):
    members = {}
    for key in ("a0", "a1"):
        members[f"{key}.npy"] = _npy(np.arange(2, dtype=np.float32))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(INDEX, _index_bytes(_index(arrays, root)))
        for n, d in members.items():
            if n[:-4] in arrays:
                zf.writestr(n, d)
    buf.seek(0)
    buf.name = "fuzz.pt"
    try:
        load(buf)
    except CheckpointError as e:
        assert "fuzz.pt" in str(e)


@settings(max_examples=100, deadline=None)
@given(doc=_json)
def test_fuzzed_whole_index_document_raises_checkpoint_error(doc):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        raw = io.BytesIO()
        np.save(raw, np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8))
        zf.writestr(INDEX, raw.getvalue())
    buf.seek(0)
    buf.name = "doc.pt"
    with pytest.raises(CheckpointError, match=r"doc\.pt"):
        load(buf)


# -- save through a symlink ---------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_save_through_a_symlink_writes_the_target_and_keeps_the_link(tmp_path):
    target_dir = tmp_path / "store"
    target_dir.mkdir()
    target = target_dir / "real.pt"
    save({"v": 1}, target)
    link = tmp_path / "latest.pt"
    os.symlink(target, link)
    save({"v": 2}, link)
    assert os.path.islink(link) and os.readlink(link) == str(target)
    assert load(target) == {"v": 2} and load(link) == {"v": 2}
    assert sorted(os.listdir(target_dir)) == ["real.pt"]  # no temp file left beside it
    assert sorted(os.listdir(tmp_path)) == ["latest.pt", "store"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_save_through_a_relative_and_chained_symlink(tmp_path):
    (tmp_path / "d").mkdir()
    os.symlink("d/real.pt", tmp_path / "mid.pt")  # dangling at first, relative
    os.symlink("mid.pt", tmp_path / "top.pt")
    save([1, 2], tmp_path / "top.pt")
    assert os.path.islink(tmp_path / "top.pt") and os.path.islink(tmp_path / "mid.pt")
    assert load(tmp_path / "d" / "real.pt") == [1, 2]


def test_save_refuses_what_load_would_refuse(tmp_path):
    with pytest.raises(TypeError, match="<U"):
        save({"s": np.array(["ab"])}, tmp_path / "u.pt")
    with pytest.raises(TypeError, match=">f4"):
        save({"s": np.zeros(2, ">f4")}, tmp_path / "be.pt")
    deep = None
    for _ in range(300):
        deep = [deep]
    with pytest.raises(ValueError, match="nested more than"):
        save(deep, tmp_path / "deep.pt")
    assert os.listdir(tmp_path) == []
    ok = None
    for _ in range(150):
        ok = [ok]
    save(ok, tmp_path / "ok.pt")
    assert load(tmp_path / "ok.pt") == ok
