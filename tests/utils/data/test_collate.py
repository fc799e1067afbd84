"""default_collate / default_convert: the same batch structure, dtypes and values as torch."""

import collections

import numpy as np
import pytest
from _data_helpers import same

import tinyattn
from tinyattn.utils.data import default_collate, default_convert

Point = collections.namedtuple("Point", "x y")


def _batches(lib):
    """The same batches built for tinyattn and for torch (tensors from NumPy)."""
    f32 = np.arange(6, dtype=np.float32).reshape(2, 3)
    return {
        "tensors": [lib.tensor(f32[0]), lib.tensor(f32[1])],
        "int_tensors": [lib.tensor([1, 2]), lib.tensor([3, 4])],
        "arrays_f32": [f32[0], f32[1]],
        "arrays_i16": [np.array([1, 2], np.int16), np.array([3, 4], np.int16)],
        "zero_dim_arrays": [np.array(3.0), np.array(4.0)],
        "np_scalars_f32": [np.float32(1), np.float32(2)],
        "np_scalars_i32": [np.int32(1), np.int32(2)],
        "np_bools": [np.bool_(True), np.bool_(False)],
        "floats": [1.5, 2.0],
        "ints": [1, 2, 3],
        "int_then_float": [1, 2.5],
        "bools": [True, False],
        "strings": ["a", "b"],
        "bytes": [b"a", b"b"],
        "tuples": [(1, 2.0), (3, 4.0)],
        "lists": [[1, 2], [3, 4]],
        "dicts": [{"a": 1, "b": f32[0]}, {"a": 2, "b": f32[1]}],
        "ordered_dicts": [collections.OrderedDict(z=1.0), collections.OrderedDict(z=2.0)],
        "namedtuples": [Point(1, 2.0), Point(3, 4.0)],
        "nested": [
            {"x": (lib.tensor(f32[0]), [1, "s"]), "y": Point(np.int64(1), 0.5)},
            {"x": (lib.tensor(f32[1]), [2, "t"]), "y": Point(np.int64(2), 1.5)},
        ],
        "tensor_samples": [(lib.tensor(f32[0]), 0), (lib.tensor(f32[1]), 1)],
    }


@pytest.mark.parametrize("case", list(_batches(tinyattn)))
def test_default_collate_matches_torch(case, torch):
    from torch.utils.data import default_collate as torch_collate

    same(default_collate(_batches(tinyattn)[case]), torch_collate(_batches(torch)[case]), torch)


def test_default_collate_dtypes_without_torch():
    """torch's dtype rules, stated: float -> float64, int -> int64, bool -> bool, str kept."""
    assert default_collate([1.0, 2.0]).dtype == tinyattn.float64
    assert default_collate([1, 2]).dtype == tinyattn.int64
    assert default_collate([True, False]).dtype == tinyattn.bool
    assert default_collate([np.float32(1)]).dtype == tinyattn.float32
    assert default_collate(["a", "b"]) == ["a", "b"]
    out = default_collate([(tinyattn.ones(2), 1), (tinyattn.zeros(2), 0)])
    assert isinstance(out, list) and out[0].shape == (2, 2) and out[1].tolist() == [1, 0]


@pytest.mark.parametrize(
    "batch",
    [
        [[1, 2], [3]],
        [None, None],
        [object(), object()],
        [np.array(["a"]), np.array(["b"])],
    ],
    ids=["ragged", "none", "object", "str_array"],
)
def test_default_collate_errors_match_torch(batch, torch):
    from torch.utils.data import default_collate as torch_collate

    with pytest.raises(Exception) as theirs:
        torch_collate(batch)
    with pytest.raises(type(theirs.value)) as ours:
        default_collate(batch)
    assert str(ours.value) == str(theirs.value)


def test_default_collate_unequal_tensor_shapes_raise():
    with pytest.raises(RuntimeError):
        default_collate([tinyattn.ones(2), tinyattn.ones(3)])


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.ones(2),
        lambda: np.float32(3),
        lambda: 3,
        lambda: "s",
        lambda: np.array(["a"]),
        lambda: (np.ones(1), [np.int64(3)], {"a": np.zeros(1)}),
        lambda: Point(np.ones(1), 2),
        lambda: [np.arange(3), "x"],
    ],
)
def test_default_convert_matches_torch(make, torch):
    from torch.utils.data import default_convert as torch_convert

    ours, theirs = default_convert(make()), torch_convert(make())
    if isinstance(theirs, np.ndarray):  # string arrays stay arrays
        np.testing.assert_array_equal(ours, theirs)
    else:
        same(ours, theirs, torch)


def test_default_convert_leaves_tensors_alone():
    t = tinyattn.ones(2)
    assert default_convert(t) is t
