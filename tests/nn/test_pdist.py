"""F.pdist against torch."""

from __future__ import annotations

import pytest

import tinyattn
from tests.harness import rand, run_gradcheck, run_gradgradcheck, run_parity

torch = pytest.importorskip("torch")


def _pdist(p):
    def f(lib, x):
        return lib.nn.functional.pdist(x, p)

    return f


@pytest.mark.parametrize("p", [2, 1, 3.5, float("inf")])
def test_pdist(p):
    """torch has no double backward of pdist: second order by finite differences only."""
    f = _pdist(p)
    x = rand(4, 3, seed=1)
    run_gradcheck(f, x)
    run_parity(f, x)
    run_gradgradcheck(f, x)


def test_pdist_p0_counts_differing_coordinates():
    x = tinyattn.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, 3.0], [0.0, 0.0, 0.0]])
    assert tinyattn.nn.functional.pdist(x, 0).tolist() == [1.0, 3.0, 2.0]
    run_parity(_pdist(0), rand(3, 2, seed=2))


def test_pdist_single_row_is_empty():
    assert tinyattn.nn.functional.pdist(tinyattn.zeros(1, 3)).shape == (0,)


@pytest.mark.parametrize(
    "shape,p,match",
    [((2, 3, 4), 2, r"2D tensors, got: 3D \(shape \[2, 3, 4\]\)"), ((3, 2), -1, "non-negative p")],
)
def test_pdist_bad_input(shape, p, match):
    with pytest.raises(RuntimeError, match=match):
        tinyattn.nn.functional.pdist(tinyattn.zeros(*shape), p)
    with pytest.raises(RuntimeError):
        torch.nn.functional.pdist(torch.zeros(*shape), p)
