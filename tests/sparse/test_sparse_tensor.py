"""Sparse COO tensors: construction, queries, coalescing, printing, leaf gradients' layout,
the refusal of unsupported ops and bad input, compared with torch where it is installed."""

import numpy as np
import pytest
from harness import torch

import tinyattn as T

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

IDX = [[0, 1, 1], [2, 0, 2]]
VALS = [3.0, 4.0, 5.0]


def test_a_sparse_tensor_is_a_tensor_with_the_coo_queries():
    s = T.sparse_coo_tensor(IDX, VALS, (2, 3))
    assert isinstance(s, T.Tensor) and s.is_sparse and s.layout is T.sparse_coo
    assert T.ones(2).layout is T.strided and not T.ones(2).is_sparse
    assert (s.sparse_dim(), s.dense_dim(), s._nnz(), tuple(s.shape)) == (2, 0, 3, (2, 3))
    assert s.dtype == T.float32 and s._indices().dtype == T.int64
    np.testing.assert_array_equal(s.to_dense().numpy(), [[0, 0, 3], [4, 0, 5]])


def test_duplicates_sum_and_coalesce_sorts():
    s = T.sparse_coo_tensor([[1, 0, 1]], [1.0, 2.0, 3.0], (3,))
    assert not s.is_coalesced()
    with pytest.raises(RuntimeError, match="uncoalesced tensor, please call .coalesce"):
        s.values()
    np.testing.assert_array_equal(s._values().numpy(), [1, 2, 3])
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 2
    np.testing.assert_array_equal(c.indices().numpy(), [[0, 1]])
    np.testing.assert_array_equal(c.values().numpy(), [2, 4])


def test_size_is_inferred_and_to_sparse_keeps_dense_dims():
    s = T.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]])
    assert tuple(s.shape) == (3, 2) and s.dense_dim() == 1
    x = T.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    h = x.to_sparse(1)
    np.testing.assert_array_equal(h.indices().numpy(), [[1]])
    np.testing.assert_array_equal(h.values().numpy(), [[1.0, 0.0]])
    assert x.to_sparse().is_coalesced() and x.to_sparse()._nnz() == 1


@needs_torch
@pytest.mark.parametrize(
    "make",
    [
        lambda L: L.sparse_coo_tensor(L.tensor(IDX), L.tensor(VALS), (2, 3)),
        lambda L: L.sparse_coo_tensor(L.tensor(IDX), L.tensor(VALS, dtype=L.float64), (2, 3)),
        lambda L: L.sparse_coo_tensor(L.tensor([[0, 2]]), L.tensor([[1.0, 2], [3, 4]])),
        lambda L: L.tensor([[0, 2], [3, 0]]).to_sparse(),
        lambda L: L.zeros(2, 3).to_sparse(1),
        lambda L: L.sparse_coo_tensor(IDX, VALS, (2, 3), requires_grad=True),
        lambda L: L.tensor([[0.0, 2]], requires_grad=True).to_sparse(),
        lambda L: L.tensor([[0.0, 2, 3]], requires_grad=True, dtype=L.float64).to_sparse(1),
        lambda L: L.tensor([[0.0, 2, 3], [1.0, 0, 0]], requires_grad=True).to_sparse().coalesce(),
        lambda L: L.sparse_coo_tensor([[0, 0]], [1.0, 2], (2,), requires_grad=True).coalesce(),
    ],
)
def test_repr_is_torchs(make):
    assert repr(make(T)) == repr(make(torch)).replace("torch.", "tinyattn.")


@needs_torch
def test_coalesce_matches_torch():
    idx, vals = [[2, 0, 2, 1], [1, 1, 1, 0]], [1.0, 2.0, 3.0, 4.0]
    ours = T.sparse_coo_tensor(idx, vals, (3, 2)).coalesce()
    theirs = torch.sparse_coo_tensor(idx, vals, (3, 2)).coalesce()
    np.testing.assert_array_equal(ours.indices().numpy(), theirs.indices().numpy())
    np.testing.assert_array_equal(ours.values().numpy(), theirs.values().numpy())
    for n in (0, 1, 2):
        i, v = [[k for k in range(n)]], [1.0] * n
        assert (
            T.sparse_coo_tensor(i, v, (3,)).is_coalesced()
            == torch.sparse_coo_tensor(i, v, (3,)).is_coalesced()
        )


def _leaf_grad(L, product):
    s = L.sparse_coo_tensor(
        L.tensor(IDX), L.tensor(VALS, dtype=L.float64), (2, 3), requires_grad=True
    )
    d = L.tensor([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]], dtype=L.float64)
    product(L, s, d).sum().backward()
    return s.grad


PRODUCTS = {
    "sparse.mm": lambda L, s, d: L.sparse.mm(s, d),
    "mm": lambda L, s, d: L.mm(s, d),
    "operator": lambda L, s, d: s @ d,
    "dense @ sparse": lambda L, s, d: L.mm(d, s),
    "to_dense": lambda L, s, d: s.to_dense() * 2,
    "values": lambda L, s, d: s.coalesce().values() * 3,
}


@needs_torch
@pytest.mark.parametrize("name", PRODUCTS)
def test_a_sparse_leafs_grad_has_torchs_layout_and_values(name):
    ours, theirs = _leaf_grad(T, PRODUCTS[name]), _leaf_grad(torch, PRODUCTS[name])
    assert ours.is_sparse == theirs.is_sparse
    np.testing.assert_allclose(ours.to_dense().numpy(), theirs.to_dense().numpy())


def test_sparse_mm_grad_of_a_leaf_keeps_the_pattern():
    g = _leaf_grad(T, PRODUCTS["sparse.mm"])
    assert g.is_sparse
    np.testing.assert_array_equal(g.indices().numpy(), [[0, 1, 1], [2, 0, 2]])
    # (ones @ d.T)[i, j] is the row sum of d at row j: at (0, 2), (1, 0), (1, 2)
    np.testing.assert_allclose(g.values().numpy(), [3.0, -1.0, 3.0])


@pytest.mark.parametrize(
    "call, op",
    [
        (lambda s: s.exp(), "Exp"),
        (lambda s: s.sigmoid(), "Sigmoid"),
        (lambda s: T.sin(s), "Sin"),
        (lambda s: T.mul(s, 2), "Mul"),
        (lambda s: s.view(6), "Reshape"),
    ],
)
def test_ops_without_a_sparse_form_refuse_by_name(call, op):
    s = T.sparse_coo_tensor(IDX, VALS, (2, 3))
    with pytest.raises(
        NotImplementedError, match=rf"^{op}\w*: this op is not implemented for sparse"
    ):
        call(s)


@pytest.mark.parametrize(
    "indices, values, size, error, match",
    [
        ([[0, 5]], [1.0, 2.0], (3,), RuntimeError, "for dim 0, size is 3 but found index 5"),
        ([[0, -1]], [1.0, 2.0], (3,), RuntimeError, "found negative index -1 for dim 0"),
        ([[0.5]], [1.0], (3,), TypeError, "indices must be an integer tensor"),
        (
            [0, 1],
            [1.0, 2.0],
            (3,),
            RuntimeError,
            r"indices must be sparse_dim x nnz, but got: \[2\]",
        ),
        ([[0, 1]], [1.0], (3,), RuntimeError, "nnz from indices: 2, nnz from values: 1"),
        ([[0, 1]], [1.0, 2.0], (3, 2), RuntimeError, r"sparse_dim \(1\) \+ dense_dim \(0\)"),
        ([[0]], [[1.0, 2.0]], (3, 3), RuntimeError, "values has incorrect size"),
    ],
)
def test_bad_input_is_named(indices, values, size, error, match):
    with pytest.raises(error, match=match):
        T.sparse_coo_tensor(indices, values, size)


def test_bad_sparse_dim_is_named():
    with pytest.raises(RuntimeError, match="sparse_dim must be between 0 and 2"):
        T.ones(2, 2).to_sparse(3)


def test_torchs_options_are_taken_or_refused_by_name():
    x = T.tensor([[0.0, 1.0], [0.0, 0.0]])
    np.testing.assert_array_equal(x.to_sparse(dense_dim=1).indices().numpy(), [[0]])
    with pytest.raises(NotImplementedError, match="sparse_coo layout only"):
        x.to_sparse(layout=T.sparse_csr)
    with pytest.raises(RuntimeError, match="pin_memory"):
        T.sparse_coo_tensor([[0]], [1.0], (2,), pin_memory=True)
    out = T.empty(2, 2)
    assert T.spmm(x.to_sparse(), T.eye(2), out=out) is out
    np.testing.assert_array_equal(out.numpy(), x.numpy())


def test_copies_and_conversions_stay_sparse():
    s = T.sparse_coo_tensor([[1, 0, 1]], [1.0, 2.0, 3.0], (3,))
    for copy in (s.detach(), s.clone(), s.double(), s.to(T.float16)):
        assert copy.is_sparse and not copy.is_coalesced()
        np.testing.assert_array_equal(copy._indices().numpy(), [[1, 0, 1]])
        np.testing.assert_array_equal(copy._values().numpy(), [1, 2, 3])
    assert s.double().dtype == T.float64 and s.double()._values().dtype == T.float64
    assert s.to(T.float32) is s


def test_a_modules_sparse_buffer_survives_to_and_state_dict():
    """The constructor idiom: a sparse adjacency buffer, used by sparse.mm in forward."""
    m = T.nn.Module()
    m.register_buffer("adj", T.tensor([[0.0, 1.0], [1.0, 0.0]]).to_sparse())
    m.register_buffer("raw", T.sparse_coo_tensor([[1, 1]], [1.0, 2.0], (2,)))
    m.double()
    assert m.adj.is_sparse and m.adj.dtype == T.float64
    assert m.raw._values().dtype == T.float64
    assert m.state_dict()["adj"].is_sparse
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=T.float64, requires_grad=True)
    T.sparse.mm(m.adj, x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1], [1, 1]])


def test_sparse_times_sparse_is_refused():
    s = T.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
    with pytest.raises(TypeError, match="sparse @ sparse is not supported"):
        s @ s
    with pytest.raises(NotImplementedError, match="Matmul"):
        T.matmul(s, s)


def test_legacy_constructors_as_gcn_code_calls_them():
    i, v = T.tensor([[0, 1], [1, 0]]), T.tensor([1.0, 2.0])
    s = T.sparse.FloatTensor(i, v, T.Size([2, 2]))
    assert s.is_sparse and isinstance(s, T.sparse.FloatTensor)
    assert not isinstance(s, T.sparse.DoubleTensor) and not isinstance(
        T.ones(2), T.sparse.FloatTensor
    )
    np.testing.assert_array_equal(s.to_dense().numpy(), [[0, 1], [2, 0]])
    empty = T.sparse.FloatTensor(2, 3)
    assert tuple(empty.shape) == (2, 3) and empty._nnz() == 0


@needs_torch
def test_legacy_constructors_match_torch():
    for L in (T, torch):
        i, v = L.tensor([[0, 1], [1, 0]]), L.tensor([1.0, 2.0])
        assert L.sparse.DoubleTensor(i, v, (2, 2)).dtype == L.float32  # values' dtype, as torch
    assert repr(T.sparse.FloatTensor(2, 3)) == repr(torch.sparse.FloatTensor(2, 3)).replace(
        "torch.", "tinyattn."
    )


@needs_torch
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_sparse_sum_with_a_dtype_matches_torch(dim):
    results = []
    for L in (T, torch):
        s = L.sparse_coo_tensor(L.tensor(IDX), L.tensor(VALS), (2, 3))
        out = L.sparse.sum(s, dtype=L.float64) if dim is None else L.sparse.sum(s, dim, L.float64)
        results.append(out.to_dense() if out.is_sparse else out)
    assert results[0].dtype == T.float64 and results[1].dtype == torch.float64
    np.testing.assert_allclose(results[0].numpy(), results[1].numpy())
