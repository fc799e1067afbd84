"""dtype/device/thread/print helpers (tinyattn/torch_surface/queries.py, tensor_api/printing.py: set_printoptions) and the
Tensor's meta methods, against torch."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")

FLOATS = ["float16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
ALL = FLOATS + INTS + ["bool"]


def _both(name):
    return getattr(tinyattn, name if name != "bool" else "bool"), getattr(torch, name)


@needs_torch
@pytest.mark.parametrize("name", FLOATS)
def test_finfo(name):
    ours, theirs = tinyattn.finfo(getattr(tinyattn, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert type(ours.bits) is int and type(ours.min) is float


@needs_torch
def test_finfo_default_follows_default_dtype_and_masks():
    assert tinyattn.finfo().dtype == "float32"
    tinyattn.set_default_dtype(tinyattn.float64)
    try:
        assert tinyattn.finfo().eps == torch.finfo(torch.float64).eps
    finally:
        tinyattn.set_default_dtype(tinyattn.float32)
    scores = tinyattn.zeros(2, 2).masked_fill(
        tinyattn.eye(2).bool(), tinyattn.finfo(tinyattn.float32).min
    )
    assert scores.softmax(-1).tolist() == [[0.0, 1.0], [1.0, 0.0]]


def test_finfo_of_python_float_is_float64_and_finfo_compares_by_dtype():
    # torch.finfo(float) describes float64 (ours gave float32's eps); finfo/iinfo objects
    # of one dtype compare equal (ours compared identity: finfo(float32) != finfo(float32))
    assert tinyattn.finfo(float).eps == np.finfo(np.float64).eps
    assert tinyattn.finfo(float).dtype == "float64"
    assert tinyattn.finfo(tinyattn.float32) == tinyattn.finfo()
    assert tinyattn.finfo(tinyattn.float32) != tinyattn.finfo(tinyattn.float64)
    assert tinyattn.iinfo(tinyattn.int8) == tinyattn.iinfo(tinyattn.int8)
    assert tinyattn.iinfo(tinyattn.int8) != tinyattn.iinfo(tinyattn.uint8)


@needs_torch
@pytest.mark.parametrize("name", INTS)
def test_iinfo(name):
    ours, theirs = tinyattn.iinfo(getattr(tinyattn, name)), torch.iinfo(getattr(torch, name))
    for field in ("bits", "max", "min", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field


@needs_torch
@pytest.mark.parametrize("a", ALL)
@pytest.mark.parametrize("b", ALL)
def test_promote_types_and_can_cast(a, b):
    (ta, tta), (tb, ttb) = _both(a), _both(b)
    assert tinyattn.promote_types(ta, tb).name == str(torch.promote_types(tta, ttb))[6:]
    assert tinyattn.can_cast(ta, tb) == torch.can_cast(tta, ttb)


@needs_torch
@pytest.mark.parametrize(
    "make",
    [
        lambda T: (T.tensor([1, 2]), 1.0),
        lambda T: (T.tensor([1.0], dtype=T.float16), T.tensor(1.0, dtype=T.float64)),
        lambda T: (T.tensor([1], dtype=T.int32), T.tensor([1], dtype=T.int64)),
        lambda T: (T.tensor([True]), 2),
        lambda T: (T.tensor(1, dtype=T.uint8), T.tensor(1, dtype=T.int8)),
        lambda T: (3, T.tensor([1.0], dtype=T.float64)),
    ],
)
def test_result_type(make):
    assert tinyattn.result_type(*make(tinyattn)).name == str(torch.result_type(*make(torch)))[6:]


@needs_torch
def test_predicates_and_sizes():
    for lib in (tinyattn, torch):
        x = lib.zeros(4, 3)
        assert lib.is_complex(x) is False and x.is_complex() is False
        assert x.is_signed() and not lib.tensor([1], dtype=lib.uint8).is_signed()
        assert lib.is_signed(x) and not lib.tensor([True]).is_signed()
        assert lib.is_nonzero(lib.tensor([2.0])) and not lib.tensor(0).is_nonzero()
        assert lib.is_same_size(x, lib.ones(4, 3)) and not x.is_same_size(lib.ones(3, 4))
        assert (x.nbytes, x.itemsize) == (48, 4)
        assert lib.tensor([1], dtype=lib.float64).nbytes == 8
        assert [v.storage_offset() for v in (x, x[1:], x[1:, 2], x.t()[2], x[2:, 1:].t())] == [
            0,
            3,
            5,
            2,
            7,
        ]
        d = lib.detach(lib.ones(2, requires_grad=True))
        assert not d.requires_grad
        assert str(lib.get_default_device()) == "cpu"
        lib.set_default_device("cpu")
        lib.set_default_device(None)


def test_num_threads_round_trip():
    n = tinyattn.get_num_threads()
    assert n >= 1
    tinyattn.set_num_threads(1)
    try:
        assert tinyattn.get_num_threads() == 1
        x = tinyattn.randn(2, 2, 4, 8)
        out = tinyattn.nn.functional.scaled_dot_product_attention(x, x, x)
        assert out.shape == (2, 2, 4, 8)
    finally:
        tinyattn.set_num_threads(n)
    assert tinyattn.get_num_threads() == n


@pytest.fixture
def printoptions():
    yield
    tinyattn.set_printoptions(profile="default")
    if torch is not None:
        torch.set_printoptions(profile="default")


@needs_torch
@pytest.mark.parametrize(
    "options",
    [
        dict(precision=2),
        dict(precision=6),
        dict(sci_mode=True),
        dict(sci_mode=False),
        dict(threshold=5),
        dict(threshold=5, edgeitems=1),
        dict(linewidth=30),
        dict(profile="short"),
        dict(profile="full"),
        dict(profile="short", sci_mode=True),
    ],
)
def test_set_printoptions_repr_matches_torch(options, printoptions):
    tinyattn.set_printoptions(**options)
    torch.set_printoptions(**options)
    data = [
        np.array([1.23456789, -2.5, 1000.0]),
        np.array([1e-6, 1.0, 5.0]),
        np.array([1.0, 2.0, 3.0]),
        np.arange(40.0).reshape(4, 10) / 7,
        np.arange(1200.0) / 3,
        np.array([0.0, 0.0]),
        np.arange(12).reshape(3, 4),
    ]
    for arr in data:
        dtype = np.float32 if arr.dtype.kind == "f" else arr.dtype
        ours = repr(tinyattn.tensor(arr.astype(dtype)))
        theirs = repr(torch.tensor(arr.astype(dtype)))
        assert ours == theirs, f"{options}:\n{ours}\n{theirs}"


def test_dtype_suffix_wraps_where_torchs_does(printoptions):
    # the suffix is measured as "dtype=torch.float64": "tinyattn." is 3 characters longer,
    # which moved the suffix to its own line where torch keeps it on the tensor's line
    x = tinyattn.tensor([0.1, float("nan"), float("inf"), -float("inf")], dtype=tinyattn.float64)
    tinyattn.set_printoptions(precision=8)
    assert "\n" not in repr(x)
    tinyattn.set_printoptions(profile="default", linewidth=40)
    assert repr(tinyattn.tensor([1.0, 2.0], dtype=tinyattn.float64)) == (
        "tensor([1., 2.], dtype=tinyattn.float64)"
    )


def test_set_printoptions_resets_sci_mode_when_left_out(printoptions):
    tinyattn.set_printoptions(sci_mode=True)
    assert "e+00" in repr(tinyattn.tensor([1.5]))
    tinyattn.set_printoptions(precision=4)
    assert repr(tinyattn.tensor([1.5])) == "tensor([1.5000])"


BAD = [
    ("finfo_int", lambda T: T.finfo(T.int32), "floating point.*int32"),
    ("iinfo_float", lambda T: T.iinfo(T.float32), "integer.*float32"),
    ("iinfo_bool", lambda T: T.iinfo(T.bool), "bool is not supported by torch.iinfo"),
    ("is_nonzero_many", lambda T: T.is_nonzero(T.ones(2)), "more than one value"),
    ("is_nonzero_none", lambda T: T.zeros(0).is_nonzero(), "no values"),
    ("set_num_threads_0", lambda T: T.set_num_threads(0), "between 1 and"),
]


@pytest.mark.parametrize("call,expected", [(c, e) for _, c, e in BAD], ids=[i for i, _, _ in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)


def test_unknown_print_profile_raises():
    """Deviation kept: torch 2.13 ignores an unknown profile silently."""
    with pytest.raises(ValueError, match="profile.*'long'"):
        tinyattn.set_printoptions(profile="long")


def test_default_device_other_than_cpu_raises_clearly():
    with pytest.raises(RuntimeError, match="'cuda'.*CPU only"):
        tinyattn.set_default_device("cuda")
