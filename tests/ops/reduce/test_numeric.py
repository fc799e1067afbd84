"""ops/reduce/numeric.py: gradient (gradcheck + torch parity), trapz, histogram and histogramdd
(bit-exact edges and counts against torch), bad input."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, rand, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
COORDS = np.array([0.0, 0.7, 1.5, 3.0, 3.2])
GRADIENT_CASES = [
    {},
    {"spacing": 2.0},
    {"dim": 1},
    {"dim": [0, 1], "spacing": [0.5, 2.0]},
    {"dim": 1, "coords": True},
    {"dim": -1, "coords": True},
]


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("case", range(len(GRADIENT_CASES)))
def test_gradient_gradcheck_and_parity(edge_order, case):
    def f(T, x):
        kw = dict(GRADIENT_CASES[case])
        if kw.pop("coords", False):
            kw["spacing"] = [T.tensor(COORDS)]
        return T.gradient(x, edge_order=edge_order, **kw)

    check_op(f, rand(3, 5))


def test_gradient_values_without_torch():
    (g,) = tinyattn.gradient(tinyattn.tensor([1.0, 4, 9, 16]), spacing=tinyattn.tensor(2.0))
    assert g.tolist() == [1.5, 2.0, 3.0, 3.5]  # a 0-d tensor spacing is a scalar
    (g,) = tinyattn.gradient(tinyattn.tensor([1, 4, 9, 16]))
    assert g.tolist() == [3.0, 4.0, 6.0, 7.0] and g.dtype == tinyattn.float32
    (g,) = tinyattn.gradient(tinyattn.tensor([1.0, 4, 9, 16]), spacing=2.0, edge_order=2)
    np.testing.assert_allclose(g.numpy(), [1.0, 2.0, 3.0, 4.0])  # exact for a quadratic
    x = tinyattn.tensor([0.0, 1.0, 3.0, 4.0], dtype=tinyattn.float64)
    (g,) = tinyattn.gradient(x**2, spacing=[x], edge_order=2)
    np.testing.assert_allclose(g.numpy(), 2 * x.numpy())  # non-uniform, still exact
    rows, cols = tinyattn.gradient(tinyattn.tensor([[1.0, 4, 2], [3, 5, 7]]), spacing=[1.0, 2.0])
    assert rows.tolist() == [[2.0, 1.0, 5.0], [2.0, 1.0, 5.0]]
    assert cols.tolist() == [[1.5, 0.25, -1.0], [1.0, 1.0, 1.0]]


def test_trapz_is_trapezoid():
    y, x = tinyattn.tensor([1.0, 2.0, 3.0]), tinyattn.tensor([0.0, 1.0, 3.0])
    assert tinyattn.trapz(y, x).item() == 6.5 and tinyattn.trapz(y, dx=2.0).item() == 8.0
    check_op(lambda T, y, x: T.trapz(y, x), rand(2, 4), np.array([0.0, 0.5, 1.5, 2.0]))


def _torch_kw(kw):
    return {
        k: (torch.tensor(v.numpy()) if isinstance(v, tinyattn.Tensor) else v) for k, v in kw.items()
    }


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_histogram_bit_exact_against_torch(dtype):
    rng = np.random.default_rng(1)
    for _ in range(60):
        data = (rng.standard_normal(40) * rng.uniform(0.1, 100)).astype(dtype)
        bins = int(rng.integers(1, 40))
        weight = rng.random(40).astype(dtype)
        for kw in (
            {"bins": bins},
            {"bins": bins, "range": (-1.0, 2.5)},
            {"bins": bins, "weight": tinyattn.tensor(weight), "density": True},
            {"bins": tinyattn.tensor(np.sort(data[:5]))},
        ):
            ours = tinyattn.histogram(tinyattn.tensor(data), **kw)
            theirs = torch.histogram(torch.tensor(data), **_torch_kw(kw))
            np.testing.assert_array_equal(ours.bin_edges.numpy(), theirs.bin_edges.numpy())
            np.testing.assert_allclose(ours.hist.numpy(), theirs.hist.numpy(), rtol=1e-6)
            assert ours.hist.dtype == ours.bin_edges.dtype == tinyattn.tensor(data).dtype
        points = data.reshape(20, 2)
        for kw in (
            {"bins": [bins, 3]},
            {"bins": 4, "range": [-1.0, 1.0, 0.0, 2.0], "weight": tinyattn.tensor(weight[:20])},
            {"bins": [tinyattn.tensor(np.sort(points[:4, 0])), 2], "density": True},
        ):
            ours = tinyattn.histogramdd(tinyattn.tensor(points), **kw)
            tkw = _torch_kw(kw)
            if isinstance(kw["bins"], list):
                tkw["bins"] = [
                    torch.tensor(b.numpy()) if isinstance(b, tinyattn.Tensor) else b
                    for b in kw["bins"]
                ]
                if not all(isinstance(b, torch.Tensor) for b in tkw["bins"]) and any(
                    isinstance(b, torch.Tensor) for b in tkw["bins"]
                ):
                    continue  # torch takes all counts or all edge tensors, not a mix
            theirs = torch.histogramdd(torch.tensor(points), **tkw)
            np.testing.assert_allclose(ours.hist.numpy(), theirs.hist.numpy(), rtol=1e-6)
            for a, b in zip(ours.bin_edges, theirs.bin_edges):
                np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_histogram_without_torch():
    hist, edges = tinyattn.histogram(tinyattn.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0))
    assert hist.tolist() == [0.0, 2.0, 1.0, 0.0] and edges.tolist() == [0.0, 0.75, 1.5, 2.25, 3.0]
    hist, edges = tinyattn.tensor([1.0, 1.0, 1.0]).histogram(bins=2)
    assert hist.tolist() == [0.0, 3.0] and edges.tolist() == [0.5, 1.0, 1.5]
    hist, edges = tinyattn.histogram(tinyattn.tensor([]), bins=2)
    assert hist.tolist() == [0.0, 0.0] and edges.tolist() == [0.0, 0.5, 1.0]
    out = tinyattn.histogram(
        tinyattn.tensor([0.0, 3.0, 5.0]), bins=tinyattn.tensor([0.0, 1.0, 3.0])
    )
    assert out.hist.tolist() == [1.0, 1.0]  # the last edge is inclusive; 5 is outside
    dens = tinyattn.histogram(tinyattn.rand(100, dtype=tinyattn.float64), bins=5, density=True)
    assert abs((dens.hist * (dens.bin_edges[1:] - dens.bin_edges[:-1])).sum().item() - 1) < 1e-12
    pts = tinyattn.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]])
    hist, edges = tinyattn.histogramdd(
        pts, bins=[3, 3], weight=tinyattn.tensor([1.0, 2.0, 4.0, 8.0])
    )
    assert hist.tolist() == [[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [4.0, 0.0, 8.0]] and len(edges) == 2


@pytest.mark.parametrize(
    "call, expected",
    [
        (
            lambda L: L.gradient(L.tensor([1.0, 4.0]), edge_order=2),
            r"at least edge_order\+1.*size 2",
        ),
        (
            lambda L: L.gradient(L.tensor([1.0, 4.0]), edge_order=3),
            r"edge_order=1 and edge_order=2.*3",
        ),
        (
            lambda L: L.gradient(L.ones(2, 3), spacing=[1.0, 2.0], dim=1),
            r"spacing argument of length 2 and a dim argument of length 1",
        ),
        (lambda L: L.gradient(L.ones(2, 3), dim=2), r"gradient.*[Dd]im"),
        (lambda L: L.gradient(L.ones(2, 3), spacing=(2.0,)), r"spacing argument of length 1"),
        (
            lambda L: L.gradient(L.ones(2, 3), spacing=[L.tensor(2.0), L.tensor(3.0)]),
            r"each element of spacing to have one dimension.*0 dimensions",
        ),
        (lambda L: L.histogramdd(L.ones(3), bins=2), r"at least 2 dimensions.*\[3\]"),
        (lambda L: L.histogram(L.tensor([1, 2]), bins=2), r"histogram.*floating.*int64"),
        (lambda L: L.histogram(L.tensor([1.0, 2.0]), bins=0), r"bins must be > 0, but got 0"),
        (lambda L: L.histogram(L.tensor([1.0, 2.0]), bins=2, range=(3.0, 1.0)), r"min 3.0? max 1"),
        (lambda L: L.histogram(L.tensor([1.0, float("nan")]), bins=2), r"range .*nan.* not finite"),
        (
            lambda L: L.histogram(L.tensor([1.0, 2.0]), bins=2, weight=L.tensor([1.0])),
            r"weight of shape \[1\].*\[2\]",
        ),
        (lambda L: L.histogramdd(L.ones(4, 2), bins=[2, 2, 2]), r"expected 2 .*got 3"),
        (
            lambda L: L.histogramdd(L.ones(4, 2), bins=2, range=[0.0, 1.0]),
            r"range must have 4 values",
        ),
    ],
)
def test_numeric_bad_input(call, expected):
    check_bad_call(call, expected)


def test_gradient_coordinates_of_the_wrong_length():
    # torch does not check this (it reads past or stops short); here the argument is named
    with pytest.raises(RuntimeError, match=r"coordinates for dim 1 must be 1-D with 3 values"):
        tinyattn.gradient(tinyattn.ones(2, 3), spacing=[tinyattn.tensor([0.0, 1.0])], dim=1)
    with pytest.raises(ValueError, match="increase monotonically"):
        tinyattn.histogram(tinyattn.tensor([1.0]), bins=tinyattn.tensor([0.0, 2.0, 1.0]))
