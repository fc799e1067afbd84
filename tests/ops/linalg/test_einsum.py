"""einsum: any valid equation (gradcheck + torch parity), the matmul lowering, bad equations."""

import numpy as np
import pytest
from harness import check_op, rand, torch
from hypothesis import given
from hypothesis import strategies as st

import tinyattn
from tinyattn.ops.linalg.matmul import _einsum_as_matmul

needs_torch = pytest.mark.skipif(
    torch is None, reason="compares with torch directly; torch is not installed"
)


@pytest.mark.parametrize(
    "equation, shapes",
    [
        # tutorial equations (Transformer-XL style and batched attention)
        ("ibhd,jbhd->ijbh", [(3, 2, 2, 2), (2, 2, 2, 2)]),
        ("ijbh,jbhd->ibhd", [(3, 2, 2, 2), (2, 2, 2, 2)]),
        ("bhqd,bhkd->bhqk", [(2, 2, 3, 2), (2, 2, 2, 2)]),
        ("bhqk,bhkd->bhqd", [(2, 2, 3, 2), (2, 2, 2, 2)]),
        # products
        ("ij,jk->ik", [(2, 3), (3, 2)]),
        ("ij,jk", [(2, 3), (3, 2)]),  # implicit output
        ("ba,ac", [(2, 3), (3, 2)]),  # implicit output is sorted: 'bc'
        ("Ab,bA", [(2, 3), (3, 2)]),  # uppercase sorts first
        ("i,i->", [(3,), (3,)]),
        ("i,j->ij", [(3,), (2,)]),
        ("ij,ij->ij", [(2, 3), (2, 3)]),
        ("ij,ij->", [(2, 3), (2, 3)]),
        ("bij,bjk->bki", [(2, 2, 3), (2, 3, 2)]),
        ("ij,k->i", [(2, 3), (2,)]),  # letters of one operand dropped
        ("ij,kj->", [(2, 3), (2, 3)]),
        ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
        # one operand: permutes, sums, traces, diagonals
        ("ij->ji", [(2, 3)]),
        ("ij->", [(2, 3)]),
        ("ij", [(2, 3)]),
        ("ji", [(2, 3)]),  # implicit: transposes
        ("ii->", [(3, 3)]),
        ("ii->i", [(3, 3)]),
        ("ii", [(3, 3)]),
        ("iij->j", [(3, 3, 2)]),
        ("iji->j", [(2, 3, 2)]),
        ("bii->bi", [(2, 3, 3)]),
        ("ii,jj->ij", [(2, 2), (3, 3)]),
        ("ij,jj->i", [(2, 3), (3, 3)]),
        # ellipsis
        ("...ij->...ji", [(2, 2, 3)]),
        ("...ij->ij", [(2, 2, 3)]),  # ellipsis dims summed when the output omits them
        ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 2)]),  # broadcasting ellipsis dims
        ("...d,...d->...", [(2, 3, 2), (3, 2)]),
        ("b...,b...->b", [(2, 3), (2, 3)]),
        ("...,...->...", [(2, 3), (3,)]),
        ("i...->...", [(2,)]),  # an empty ellipsis
        # size-1 broadcasting of named dims (torch allows it)
        ("ij,ij->ij", [(2, 1), (2, 3)]),
        ("ij,j->i", [(2, 3), (1,)]),
        ("bqd,bkd->bqk", [(1, 2, 3), (2, 2, 3)]),
        # zero-size dims
        ("ij,jk->ik", [(2, 0), (0, 3)]),
        ("ij,jk->ik", [(0, 2), (2, 3)]),
    ],
)
def test_einsum_equations(equation, shapes):
    arrays = [rand(*s, seed=i + 1) for i, s in enumerate(shapes)]
    check_op(lambda T, *xs: T.einsum(equation, *xs), *arrays)


@given(
    perm_a=st.permutations("bhqd"),
    perm_b=st.permutations("bhkd"),
    out=st.permutations("bhqk"),
    transpose=st.booleans(),
)
def test_einsum_batched_contraction_hypothesis(perm_a, perm_b, out, transpose):
    size = {"b": 2, "h": 1, "q": 3, "k": 2, "d": 2}
    a = rand(*[size[c] for c in perm_a], seed=5)
    b = rand(*[size[c] for c in perm_b], seed=6)
    equation = "".join(perm_a) + "," + "".join(perm_b) + "->" + "".join(out)

    def f(T, a, b):
        if transpose:  # a non-contiguous operand with the same values
            a = a.transpose(0, -1).contiguous().transpose(0, -1)
        return T.einsum(equation, a, b)

    check_op(f, a, b)


@needs_torch
def test_einsum_list_operands_and_mixed_dtype():
    a, b = rand(2, 3, seed=7), rand(3, seed=8)
    check_op(lambda T, a, b: T.einsum("ij,j->i", [a, b]), a, b)
    ours = tinyattn.einsum("i,i->", tinyattn.ones(3), tinyattn.arange(3))
    theirs = torch.einsum("i,i->", torch.ones(3), torch.arange(3).float())
    assert ours.dtype == tinyattn.float32 and ours.item() == theirs.item()


def test_matmul_lowering_matches_numpy():
    rng = np.random.default_rng(0)
    cases = [
        ("bhqd", "bhkd", "bhqk"),
        ("ibhd", "jbhd", "ijbh"),
        ("ijbh", "jbhd", "ibhd"),
        ("ij", "jk", "ki"),
        ("ij", "kl", "ik"),  # j, l summed first
        ("bi", "bi", "b"),
        ("ij", "ij", "ji"),  # no contraction: a broadcast product
    ]
    for ta, tb, out in cases:
        size = {c: 2 + i for i, c in enumerate(sorted(set(ta + tb)))}
        a = rng.standard_normal([size[c] for c in ta])
        b = rng.standard_normal([size[c] for c in tb])
        got = _einsum_as_matmul(ta, tb, out, a, b)
        np.testing.assert_allclose(got, np.einsum(f"{ta},{tb}->{out}", a, b), atol=1e-12)
    assert _einsum_as_matmul("ii", "ij", "j", np.ones((2, 2)), np.ones((2, 2))) is None
    assert _einsum_as_matmul("ij", "j", "i", np.ones((2, 3)), np.ones(1)) is None


@pytest.mark.parametrize(
    "equation, shapes, message",
    [
        ("ij,jk->ik", [(2, 3), (4, 2)], r"subscript 'j' has size 4 for operand 1"),
        ("ij->k", [(2, 3)], r"output subscript 'k'.*does not appear"),
        ("ij->ii", [(2, 3)], r"output subscript 'i' appears more than once"),
        ("i1->i", [(2, 3)], r"invalid subscript '1'"),
        ("i.j->i", [(2, 3)], r"invalid subscript '\.'"),
        ("ij,jk->ik", [(2, 3)], r"2 operand subscripts but 1 operands"),
        ("ijk->i", [(2, 3)], r"number of subscripts in the equation \(3\).*operand 0"),
        ("ii->i", [(2, 3)], r"subscript 'i' is repeated for operand 0.*2 != 3"),
        ("...i...->i", [(2, 3)], r"more than one ellipsis"),
        ("ij->i->j", [(2, 3)], r"more than one '->'"),
        ("ijk...->i", [(2, 3)], r"operand 0 has 2 dims but subscripts 'ijk\.\.\.' name 3"),
    ],
)
def test_einsum_bad_equations(equation, shapes, message):
    operands = [tinyattn.zeros(*s) for s in shapes]
    with pytest.raises(ValueError, match=message):
        tinyattn.einsum(equation, *operands)


def test_einsum_argument_errors():
    with pytest.raises(ValueError, match="at least one operand"):
        tinyattn.einsum("i->i")
    with pytest.raises(TypeError, match="operand 0 must be a Tensor"):
        tinyattn.einsum("i->i", np.zeros(2))
    with pytest.raises(TypeError, match="equation must be a string"):
        tinyattn.einsum(3, tinyattn.zeros(2))
