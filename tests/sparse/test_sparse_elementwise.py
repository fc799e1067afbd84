"""Elementwise ops, reductions, softmax and addmm of sparse COO tensors: float64
gradcheck through the values (and the dense operands), torch parity of values and
gradients, and torch's result form (sparse or dense, indices, nnz, coalesced flag)."""

import numpy as np
import pytest
from harness import check_op, rand, run_gradcheck, run_gradgradcheck, run_parity, torch

import tinyattn as T

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

# A (3, 4) pattern with the entry (1, 2) twice (uncoalesced until coalesce()).
IDX = [[0, 1, 1, 2, 1], [3, 2, 0, 1, 2]]
IDX_UNIQUE = [[0, 1, 1, 2], [3, 2, 0, 1]]


def _coo(L, v, idx=IDX, size=(3, 4)):
    return L.sparse_coo_tensor(L.tensor(idx), v, size)


def _dense(out):
    return out.to_dense() if out.is_sparse else out


def _check(f, *arrays, grad=None, torch_backward=True):
    """gradcheck, parity and gradgradcheck of ``f`` (a sparse result compared densely).
    torch's gradient with respect to a sparse tensor's values is not differentiable (its
    second derivatives are zero), so second derivatives are checked against finite
    differences only."""

    def g(L, *xs):
        return _dense(f(L, *xs))

    run_gradcheck(g, *arrays, grad=grad)
    run_parity(g, *arrays, grad=grad if torch_backward else [False] * len(arrays))
    run_gradgradcheck(g, *arrays, grad=grad)


# name -> f(L, sparse s, dense d of s's shape); each result's form is compared with torch
OPS = {
    "s * d": lambda L, s, d: s * d,
    "d * s": lambda L, s, d: d * s,
    "s * row": lambda L, s, d: s * d[0],
    "s.mul(d)": lambda L, s, d: s.mul(d),
    "s * 2.5": lambda L, s, d: s * 2.5,
    "2.5 * s": lambda L, s, d: 2.5 * s,
    "s * 0-d": lambda L, s, d: s * d[0, 0],
    "s / 4": lambda L, s, d: s / 4,
    "s.div(4)": lambda L, s, d: s.div(4),
    "-s": lambda L, s, d: -s,
    "s.neg()": lambda L, s, d: s.neg(),
    "s + s": lambda L, s, d: s + s * 3,
    "s - s": lambda L, s, d: s - s * 3,
    "s.add(s, alpha)": lambda L, s, d: s.add(s, alpha=2),
    "s ** 3": lambda L, s, d: s**3,
    "s.pow(-1)": lambda L, s, d: s.pow(-1.0),
    "s.abs()": lambda L, s, d: s.abs(),
    "s.relu()": lambda L, s, d: s.relu(),
    "s.sum()": lambda L, s, d: s.sum(),
    "s.sum(0)": lambda L, s, d: s.sum(0),
    "s.sum(1)": lambda L, s, d: s.sum(-1),
    "sparse.softmax(s, 1)": lambda L, s, d: L.sparse.softmax(s, 1),
    "sparse.softmax(s, 0)": lambda L, s, d: L.sparse.softmax(s, 0),
    "sparse.log_softmax(s, 1)": lambda L, s, d: L.sparse.log_softmax(s, 1),
    "sparse.log_softmax(s, 0)": lambda L, s, d: L.sparse.log_softmax(s, 0),
    "sparse.addmm": lambda L, s, d: L.sparse.addmm(d[:, :3], s, d.t(), beta=0.5, alpha=2.0),
    "s.clone().mul_(d)": lambda L, s, d: s.clone().mul_(d),
    "s.clone().mul_(3)": lambda L, s, d: s.clone().mul_(3),
    "(s * d).coalesce()": lambda L, s, d: (s * d).coalesce(),
}
LINEAR_IN_D = {"s * d", "d * s", "s * row", "s.mul(d)", "s * 0-d", "s.clone().mul_(d)"}
DENSE_ARG = {"sparse.addmm"}
# torch computes s.sum(dim) but its backward raises ("expand is unsupported for Sparse
# tensors"); tinyattn's is torch.sparse.sum's: compared with torch forward only.
TORCH_NO_BACKWARD = {"s.sum(0)", "s.sum(1)"}


@pytest.mark.parametrize("coalesced", [True, False], ids=["coalesced", "uncoalesced"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_op_gradients_through_values(name, coalesced):
    """Gradients with respect to the values: gradcheck, parity, gradgradcheck."""
    op = OPS[name]

    def f(L, v):
        s = _coo(L, v)
        return op(L, s.coalesce() if coalesced else s, L.tensor(_D, dtype=v.dtype))

    _check(f, rand(5), torch_backward=name not in TORCH_NO_BACKWARD)


_D = rand(3, 4, seed=3) + 2.0  # (away from 0: pow(-1) of the products stays tame)


@pytest.mark.parametrize("name", sorted(LINEAR_IN_D | DENSE_ARG))
def test_op_gradients_through_the_dense_operand(name):
    """Gradients with respect to both the values and the dense operand (gradcheck; torch's
    dense operand of ``s * d`` gets a sparse ``.grad``: compared densely below)."""
    op = OPS[name]
    run_gradcheck(lambda L, v, d: _dense(op(L, _coo(L, v).coalesce(), d)), rand(5), _D)
    if name in DENSE_ARG:
        run_parity(lambda L, v, d: _dense(op(L, _coo(L, v), d)), rand(5), _D)


@needs_torch
@pytest.mark.parametrize("name", sorted(LINEAR_IN_D - {"s * row"}))
def test_dense_operands_grad_matches_torch(name):
    """(torch cannot backward to a dense operand that broadcasts: its gradient would be a
    sum over a sparse dim; tinyattn's is gradchecked above.)"""
    op, grads = OPS[name], []
    for L in (T, torch):
        d = L.tensor(_D, requires_grad=True)
        out = _dense(op(L, _coo(L, L.tensor(rand(5))).coalesce(), d))
        (out * L.tensor(rand(*out.shape, seed=5))).sum().backward()
        grads.append(d.grad)
    assert not grads[0].is_sparse  # (torch's is sparse for a d of s's shape: documented)
    np.testing.assert_allclose(grads[0].numpy(), _dense(grads[1]).numpy(), rtol=1e-5)


def _form(out):
    """What torch programs can see of a result besides its values."""
    if not out.is_sparse:
        return ("dense", tuple(out.shape))
    nnz, coal = out._nnz(), out.is_coalesced()
    idx, vals = out._indices().tolist(), out._values().detach().tolist()
    if coal:
        return ("sparse", tuple(out.shape), nnz, coal, idx)
    entries = sorted((*i, round(v, 9)) for *i, v in zip(*idx, vals))  # (stored order aside)
    return ("sparse", tuple(out.shape), nnz, coal, entries)


@needs_torch
@pytest.mark.parametrize("coalesced", [True, False], ids=["coalesced", "uncoalesced"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_result_form_matches_torch(name, coalesced):
    if name in ("s + s", "s - s", "s.add(s, alpha)") and not coalesced:
        pytest.skip("uncoalesced s + s: torch merges the two entry lists, tinyattn concatenates")
    forms, dense = [], []
    for L in (T, torch):
        s = _coo(L, L.tensor(rand(5), dtype=L.float64))
        out = OPS[name](L, s.coalesce() if coalesced else s, L.tensor(_D))
        forms.append(_form(out))
        dense.append(_dense(out).detach().numpy())
    assert forms[0] == forms[1]
    np.testing.assert_allclose(dense[0], dense[1], rtol=1e-7)


def test_uncoalesced_sum_of_sparse_tensors_concatenates_the_entries():
    s = _coo(T, T.tensor(rand(5)))
    out = s + s
    assert not out.is_coalesced() and out._nnz() == 10
    np.testing.assert_allclose(out._values().numpy(), np.concatenate([rand(5), rand(5)]))
    np.testing.assert_allclose(out.to_dense().numpy(), 2 * s.to_dense().numpy())


@needs_torch
@pytest.mark.parametrize("name", sorted(OPS))
def test_sparse_leafs_grad_layout_matches_torch(name):
    """A sparse leaf's ``.grad``: sparse with its pattern, except through ``s.sum()``."""
    if name in TORCH_NO_BACKWARD:
        pytest.skip("torch's backward of s.sum(dim) raises")
    grads = []
    for L in (T, torch):
        s = L.sparse_coo_tensor(L.tensor(IDX_UNIQUE), L.tensor(rand(4)), (3, 4))
        s = s.coalesce().requires_grad_()
        out = _dense(OPS[name](L, s if "mul_" not in name else s * 1, L.tensor(_D)))
        (out * L.tensor(rand(*out.shape, seed=5))).sum().backward()
        grads.append(s.grad)
    assert grads[0].is_sparse == grads[1].is_sparse
    np.testing.assert_allclose(_dense(grads[0]).numpy(), _dense(grads[1]).numpy(), rtol=1e-5)


def test_softmax_is_over_the_specified_entries_only():
    s = T.sparse_coo_tensor([[0, 0, 2], [0, 3, 1]], [1.0, 1.0, -5.0], (3, 4))
    out = T.sparse.softmax(s, 1).to_dense().numpy()
    np.testing.assert_allclose(out, [[0.5, 0, 0, 0.5], [0, 0, 0, 0], [0, 1, 0, 0]])
    logs = T.sparse.log_softmax(s, 1)
    np.testing.assert_allclose(logs.values().numpy(), np.log([0.5, 0.5, 1.0]))


def test_hybrid_tensor_ops():
    def f(L, v, d):
        s = L.sparse_coo_tensor(L.tensor([[2, 0, 2]]), v, (4, 3))
        return [(s * d).to_dense(), L.sparse.softmax(s, 1).to_dense(), s.abs().to_dense()]

    check = [run_gradcheck, run_parity]
    for run in check:
        run(f, rand(3, 3), rand(4, 3, seed=2), grad=[True, False])


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda s: s + 1, RuntimeError, r"add\(sparse, dense\) is not supported"),
        (lambda s: s - T.ones(3, 4), RuntimeError, r"sub\(sparse, dense\) is not supported"),
        (lambda s: s.pow(0), RuntimeError, "cannot raise to zeroth power"),
        (lambda s: s / T.ones(3, 4), NotImplementedError, "div.*a number or a 0-d"),
        (lambda s: s * s, NotImplementedError, r"mul\(sparse, sparse\)"),
        (lambda s: s * T.ones(2, 3, 4), RuntimeError, "must broadcast to the sparse"),
        (lambda s: s * "a", TypeError, "number or a Tensor, got str"),
        (lambda s: s + T.sparse_coo_tensor([[0]], [1.0], (5,)), RuntimeError, "sizes"),
        (lambda s: T.sparse.softmax(s, 2), IndexError, "Dimension out of range"),
        (lambda s: T.sparse.softmax(s.to_dense(), 0), TypeError, "sparse COO tensor"),
        (lambda s: T.sparse.addmm(s, s, T.ones(4, 2)), TypeError, "input must be a dense"),
        (lambda s: s.sum(0, keepdim=True), NotImplementedError, "keepdim"),
    ],
)
def test_bad_operands_raise_clearly(call, error, match):
    s = _coo(T, T.tensor(rand(5), dtype=T.float32))
    with pytest.raises(error, match=match):
        call(s)


def test_in_place_mul_on_a_leaf_that_requires_grad_raises():
    s = _coo(T, T.tensor(rand(5))).coalesce().requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        s.mul_(2)


def test_second_derivatives_match_torch_where_torch_has_them():
    """Through a 0-d dense operand and through values computed from it (pow, relu), torch's
    graph is twice differentiable: tinyattn's second derivatives match it. (A dense operand of
    ``s``'s shape gets a sparse ``.grad`` in torch, which the harness cannot compare.)"""
    s = lambda L, dtype: _coo(L, L.tensor(rand(4), dtype=dtype), IDX_UNIQUE)  # noqa: E731
    check_op(lambda L, d: (s(L, d.dtype) * (d * d).sum()).to_dense(), _D)
    check_op(lambda L, d: (s(L, d.dtype).coalesce() / d.sum()).to_dense(), _D)

    sc = lambda L, d: s(L, d.dtype).coalesce() * d.sum()  # noqa: E731
    check_op(lambda L, d: [sc(L, d).pow(3).to_dense(), sc(L, d).relu().to_dense()], _D)


@needs_torch
def test_torchs_keyword_names_are_taken():
    out = []
    for L in (T, torch):
        s = _coo(L, L.tensor(rand(5), dtype=L.float32))
        d = L.tensor(_D, dtype=L.float32)
        soft = L.sparse.softmax(input=s, dim=1, dtype=L.float64)
        logs = L.sparse.log_softmax(input=s, dim=0, dtype=L.float64)
        mm = L.sparse.addmm(input=d[:, :3], mat1=s, mat2=d.t(), beta=0.5, alpha=2.0)
        out.append([soft.to_dense(), logs.to_dense(), mm, s.add(s, alpha=2).to_dense()])
    for o, t in zip(*out):
        assert o.dtype.name == str(t.dtype).replace("torch.", "")
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)
