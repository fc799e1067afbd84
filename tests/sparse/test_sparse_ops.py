"""Sparse COO products, conversions and sums: float64 gradcheck and torch parity (values
and gradients) through the shared harness, with the indices held fixed."""

import numpy as np
import pytest
from harness import check_op, rand, run_gradcheck, run_gradgradcheck, run_parity

# A (3, 4) pattern with a duplicate entry (1, 2) twice: duplicates sum, as in torch.
IDX = [[0, 1, 1, 2, 1], [3, 2, 0, 1, 2]]
IDX_UNIQUE = [[0, 1, 1, 2], [3, 2, 0, 1]]


def _coo(T, v, idx=IDX, size=(3, 4)):
    return T.sparse_coo_tensor(T.tensor(idx), v, size)


def test_sparse_coo_tensor_to_dense():
    check_op(lambda T, v: _coo(T, v).to_dense(), rand(5))


def test_sparse_coo_tensor_with_dense_values():
    """Hybrid: 1 sparse dim, values of shape (nnz, 3)."""
    check_op(
        lambda T, v: T.sparse_coo_tensor(T.tensor([[2, 0, 2]]), v, (4, 3)).to_dense(), rand(3, 3)
    )


def test_coalesced_values():
    check_op(lambda T, v: _coo(T, v).coalesce().values(), rand(5))


def _check_without_torchs_second_order(f, *arrays):
    """check_op without the torch parity of second derivatives: torch's gradient with
    respect to a sparse tensor's values is not itself differentiable (its graph stops
    there, so torch reports zero second derivatives), while tinyattn's is; the second
    derivatives are checked against finite differences instead."""
    run_gradcheck(f, *arrays)
    run_parity(f, *arrays)
    run_gradgradcheck(f, *arrays)


def test_sparse_mm():
    _check_without_torchs_second_order(
        lambda T, v, d: T.sparse.mm(_coo(T, v), d), rand(5), rand(4, 2)
    )


def test_products_with_constant_values_match_torch_to_second_order():
    def f(T, d):
        return _coo(T, T.tensor(rand(5), dtype=d.dtype)) @ d

    check_op(f, rand(4, 2))


@pytest.mark.parametrize("name", ["spmm", "mm", "matmul", "operator"])
def test_sparse_dense_products(name):
    def f(T, v, d):
        s = _coo(T, v)
        if name == "operator":
            return s @ d
        return getattr(T, name)(s, d)

    _check_without_torchs_second_order(f, rand(5), rand(4, 2))


def test_dense_times_sparse():
    _check_without_torchs_second_order(lambda T, d, v: T.mm(d, _coo(T, v)), rand(2, 3), rand(5))
    _check_without_torchs_second_order(lambda T, d, v: d @ _coo(T, v), rand(2, 3), rand(5))


def test_to_sparse_then_products():
    """The gradient of a dense x through to_sparse: masked by sparse.mm, whole by mm."""
    x = rand(3, 4) * (rand(3, 4, seed=7) > 0)
    run_parity(lambda T, x, d: T.sparse.mm(x.to_sparse(), d), x, rand(4, 2))
    check_op(lambda T, x, d: x.to_sparse() @ d, x, rand(4, 2))
    check_op(lambda T, x: x.to_sparse(1).to_dense() * 2, x)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_sparse_sum(dim):
    def f(T, v):
        out = T.sparse.sum(_coo(T, v), dim) if dim is not None else T.sparse.sum(_coo(T, v))
        return out.to_dense() if out.is_sparse else out

    check_op(f, rand(5))


def test_sparse_sum_of_a_hybrid_tensor():
    def f(T, v):
        s = T.sparse_coo_tensor(T.tensor([[0, 2, 2], [1, 0, 1]]), v, (3, 2, 2))
        return T.sparse.sum(s, 1).to_dense()

    check_op(f, rand(3, 2))


def test_products_need_matching_shapes_and_a_sparse_operand():
    import tinyattn as T

    s = _coo(T, T.tensor(rand(5)))
    with pytest.raises(RuntimeError, match=r"sparse.mm: expected a sparse \(n, k\) matrix"):
        T.sparse.mm(s, T.ones(3, 2, dtype=T.float64))
    with pytest.raises(TypeError, match="sparse must be a sparse COO tensor"):
        T.sparse.mm(T.ones(3, 4), T.ones(4, 2))
    with pytest.raises(RuntimeError, match="same dtype"):
        T.sparse.mm(s, T.ones(4, 2))
    assert np.allclose(T.sparse.mm(s, T.eye(4, dtype=T.float64)).numpy(), s.to_dense().numpy())


@pytest.mark.parametrize(
    "dims",
    [
        lambda s: s.t(),
        lambda s: s.transpose(0, 1),
        lambda s: s.transpose(-1, 0),
        lambda s: s.permute(1, 0),
        lambda s: s.permute((1, 0)),
    ],
)
def test_transposed_sparse_tensor_is_sparse_with_swapped_indices(dims):
    import tinyattn as T

    check_op(lambda L, v: dims(_coo(L, v)).to_dense(), rand(5))
    _check_without_torchs_second_order(
        lambda L, v, d: dims(_coo(L, v)) @ d, rand(5), rand(3, 2, seed=1)
    )
    s = dims(_coo(T, T.tensor(rand(5))))
    assert s.is_sparse and s.shape == (4, 3) and not s.is_coalesced()
    assert s._indices().tolist() == [IDX[1], IDX[0]]


def test_transposed_leafs_grad_keeps_torchs_layout():
    import tinyattn as T

    torch = pytest.importorskip("torch", reason="compares with torch")
    grads = []
    for L in (T, torch):
        s = L.sparse_coo_tensor(L.tensor(IDX_UNIQUE), L.tensor(rand(4)), (3, 4)).requires_grad_()
        (s.t().to_dense() * L.arange(12.0, dtype=L.float64).view(4, 3)).sum().backward()
        grads.append(s.grad)
    assert grads[0].is_sparse == grads[1].is_sparse
    assert np.allclose(grads[0].to_dense().numpy(), grads[1].to_dense().numpy())


def test_dense_plus_sparse_is_dense():
    check_op(lambda L, d, v: d + _coo(L, v), rand(3, 4), rand(5, seed=1))
    check_op(lambda L, d, v: d - _coo(L, v), rand(3, 4), rand(5, seed=1))
    import tinyattn as T

    out = T.eye(3) + T.sparse_coo_tensor([[0, 1], [1, 2]], T.ones(2), (3, 3), dtype=T.int64)
    assert not out.is_sparse and out.dtype == T.float32
    assert out.tolist() == [[1, 1, 0], [0, 1, 1], [0, 0, 1]]


def test_sparse_dims_must_be_a_permutation():
    import tinyattn as T

    s = _coo(T, T.tensor(rand(5)))
    with pytest.raises(IndexError, match="Dimension out of range"):
        s.transpose(0, 2)
    with pytest.raises(RuntimeError, match="not a permutation"):
        s.permute(0, 0)
    hybrid = T.sparse_coo_tensor(T.tensor([[0, 2]]), T.ones(2, 3), (4, 3))
    with pytest.raises(NotImplementedError, match="dense dims of a hybrid"):
        hybrid.t()
