"""The xp functions added for the view/indexing/linalg/scan backward formulas give the same
values on arrays (numpy_xp) and on Tensors (tensor_xp), and the Tensor ones are recorded."""

import numpy as np
import pytest

import tinyattn
from tinyattn.autograd.xp import numpy_xp, tensor_xp

A = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7.0 - 1.0
IDX = (np.array([0, 1, 0]), slice(None), np.array([3, 3, 0]))

CASES = {
    "cumsum": lambda xp, x: xp.cumsum(x, 1),
    "transpose": lambda xp, x: xp.transpose(x, (2, 0, 1)),
    "tril": lambda xp, x: xp.tril(x, -1),
    "triu": lambda xp, x: xp.triu(x, 1),
    "roll": lambda xp, x: xp.roll(x, (1, -2), (0, 2)),
    "diagonal": lambda xp, x: xp.diagonal(x, 1, 1, 2),
    "cross": lambda xp, x: xp.cross(x[:, :, :3], xp.flip(x[:, :, 1:], -1), axis=-1),
    "split": lambda xp, x: xp.concatenate(xp.split(x, [1, 3], axis=2)[::-1], 2),
    "zero_pad": lambda xp, x: xp.zero_pad(x, [(1, 0), (0, 0), (2, 1)]),
    "zero_at": lambda xp, x: xp.zero_at(x, IDX),
    "getitem": lambda xp, x: xp.getitem(x, IDX),
    "add_at": lambda xp, x: xp.add_at((2, 3, 4), IDX, xp.getitem(x, IDX)),
    "add_at_basic": lambda xp, x: xp.add_at((2, 3, 4), (1, slice(0, 2)), x[0, :2]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_values_on_arrays_and_tensors(name):
    f = CASES[name]
    want = f(numpy_xp, A)
    x = tinyattn.tensor(A.copy(), requires_grad=True)
    got = f(tensor_xp, x)
    assert tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    assert got.requires_grad  # recorded: differentiable again


def test_add_at_accumulates_repeats_and_getitem_is_its_transpose():
    repeated = (np.array([0, 1, 0]), slice(None), np.array([3, 3, 3]))  # (0, 3) twice
    got = numpy_xp.add_at((2, 3, 4), repeated, np.ones((3, 3)))
    assert got[0, :, 3].tolist() == [2.0, 2.0, 2.0]
    assert got[1, :, 3].tolist() == [1.0, 1.0, 1.0]
    w = np.random.default_rng(0).standard_normal((2, 3, 4))
    v = tinyattn.tensor(np.random.default_rng(1).standard_normal((3, 3)), requires_grad=True)
    (tensor_xp.add_at((2, 3, 4), IDX, v) * tinyattn.tensor(w)).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), w[IDX])


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_add_at_axis_sorted_path_equals_np_add_at(axis):
    """The sort-and-sum path of ``add_at_axis`` (1-d integer index) gives np.add.at's sums:
    repeats add up (also written as negative indices), untouched rows stay 0."""
    rng = np.random.default_rng(axis)
    shape = [4, 5, 6]
    index = np.array([2, 0, 2, -2, 3, 2, 0])  # -2 names the same row as shape[axis] - 2
    values_shape = list(shape)
    values_shape[axis] = index.size
    values = rng.standard_normal(values_shape)
    expected = np.zeros(shape)
    np.add.at(np.moveaxis(expected, axis, 0), index, np.moveaxis(values, axis, 0))
    got = numpy_xp.add_at_axis(tuple(shape), axis, index, values)
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=1e-15)
    assert not np.any(np.take(got, [1], axis=axis))  # row 1 is never named


@pytest.mark.parametrize("index", [[0, 9], [0, -10]])
def test_add_at_axis_out_of_range_raises(index):
    with pytest.raises(IndexError):
        numpy_xp.add_at_axis((9, 2), 0, np.array(index), np.ones((2, 2)))
