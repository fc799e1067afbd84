"""F.bilinear and nn.Bilinear against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand
from tests.nn._module_parity import module_parity

torch = pytest.importorskip("torch")

# (input1 shape, input2 shape, weight shape, bias)
CASES = [
    ((2, 3), (2, 2), (4, 3, 2), True),
    ((2, 2, 3), (2, 2, 2), (2, 3, 2), False),
    ((3,), (2,), (2, 3, 2), True),  # unbatched
]


@pytest.mark.parametrize("case", CASES)
def test_bilinear_gradcheck_and_parity(case):
    s1, s2, sw, bias = case
    arrays = [rand(*s1, seed=1), rand(*s2, seed=2), rand(*sw, seed=3)]
    if bias:
        arrays.append(rand(sw[0], seed=4))

    def f(lib, x1, x2, w, b=None):
        return lib.nn.functional.bilinear(x1, x2, w, b)

    check_op(f, *arrays)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_module_parity(dtype, bias):
    t = torch.nn.Bilinear(3, 2, 4, bias=bias)
    o = tinyattn.nn.Bilinear(3, 2, 4, bias=bias)
    assert repr(o) == repr(t)
    assert list(o.state_dict()) == list(t.state_dict())
    assert [tuple(v.shape) for v in o.state_dict().values()] == [
        tuple(v.shape) for v in t.state_dict().values()
    ]
    module_parity(t, o, rand(5, 3, seed=5), rand(5, 2, seed=6), dtype=dtype)


def test_bilinear_init_bounds():
    m = tinyattn.nn.Bilinear(9, 4, 30)  # U(-1/sqrt(in1), 1/sqrt(in1)) = U(-1/3, 1/3)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert w.shape == (30, 9, 4) and b.shape == (30,)
    assert np.abs(w).max() <= 1 / 3 and np.abs(b).max() <= 1 / 3
    assert np.abs(w).max() > 0.3  # spread over the whole interval, not a narrower one
    assert w.std() > 1 / 3 / 2  # uniform on [-1/3, 1/3] has std 0.19


@pytest.mark.parametrize(
    "shapes,match",
    [
        (((2, 3), (3, 2), (4, 3, 2), (4,)), "batch dimensions do not match at dim 0: got 2 and 3"),
        (((2, 4), (2, 2), (4, 3, 2), (4,)), "input1 size does not match weight size: got 4 but"),
        (((2, 3), (2, 5), (4, 3, 2), (4,)), "input2 size does not match weight size: got 5 but"),
        (((2, 3), (2, 2), (4, 3, 2), (3,)), r"bias size does not match .*\[3\].*\[4\]"),
        (((2, 3), (2, 2), (4, 3), None), r"weight must be 3-D.*\[4, 3\]"),
    ],
)
def test_bilinear_bad_input(shapes, match):
    def args(lib):
        return [None if s is None else lib.zeros(*s) for s in shapes]

    with pytest.raises(RuntimeError, match=match):
        tinyattn.nn.functional.bilinear(*args(tinyattn))
    with pytest.raises((RuntimeError, IndexError)):
        torch.nn.functional.bilinear(*args(torch))


def test_bilinear_bad_types():
    with pytest.raises(TypeError, match="input2"):
        tinyattn.nn.functional.bilinear(tinyattn.zeros(2, 3), [1.0], tinyattn.zeros(4, 3, 1))
    with pytest.raises(RuntimeError, match="dtype"):
        tinyattn.nn.functional.bilinear(
            tinyattn.zeros(2, 3), tinyattn.zeros(2, 2).double(), tinyattn.zeros(4, 3, 2)
        )
