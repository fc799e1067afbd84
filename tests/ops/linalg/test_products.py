"""Matrix products (ops/linalg/products.py): gradchecks and torch parity via the harness, bad input."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, run_gradcheck, run_gradgradcheck, run_parity, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def _arr(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape)


def test_trace_diagflat_kron():
    check_op(lambda T, x: T.trace(x), _arr(3, 4))
    check_op(lambda T, x: x.trace(), _arr(4, 2))
    check_op(lambda T, x: T.diagflat(x), _arr(2, 2))
    check_op(lambda T, x: x.diagflat(-1), _arr(3))
    check_op(lambda T, x, y: T.kron(x, y), _arr(2, 3), _arr(2, 2, seed=1))
    check_op(lambda T, x, y: x.kron(y), _arr(2), _arr(3, 2, seed=1))
    check_op(lambda T, x, y: T.kron(x, y), _arr(2, 1, 2), _arr(3, seed=1))


@needs_torch
def test_trace_integer_dtype():
    assert tinyattn.trace(tinyattn.arange(6).reshape(2, 3)).dtype == tinyattn.int64


@pytest.mark.parametrize(
    "sa,sb,dims",
    [
        ((2, 3, 4), (3, 4, 5), 2),
        ((2, 3), (4,), 0),
        ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])),
        ((2, 3), (3, 2), ([0], [1])),
        ((3,), (3,), 1),
    ],
)
def test_tensordot(sa, sb, dims):
    check_op(lambda T, a, b: T.tensordot(a, b, dims), _arr(*sa), _arr(*sb, seed=1))


def test_mv_ger_vdot_inner_chain_matmul():
    check_op(lambda T, m, v: T.mv(m, v), _arr(2, 3), _arr(3, seed=1))
    check_op(lambda T, m, v: m.mv(v), _arr(1, 3), _arr(3, seed=1))
    check_op(lambda T, a, b: T.ger(a, b) + a.ger(b), _arr(2), _arr(3, seed=1))
    check_op(lambda T, a, b: T.vdot(a, b) + a.vdot(b), _arr(4), _arr(4, seed=1))
    check_op(lambda T, a, b: a.inner(b), _arr(2, 4), _arr(3, 4, seed=1))
    check_op(
        lambda T, a, b, c: T.chain_matmul(a, b, c),
        _arr(2, 3),
        _arr(3, 4, seed=1),
        _arr(4, 2, seed=2),
    )
    check_op(lambda T, a: T.chain_matmul(a), _arr(2, 3))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_matrix_power(n):
    check_op(lambda T, a: T.matrix_power(a, n) * 1, _arr(3, 3) * 0.8)
    check_op(lambda T, a: a.matrix_power(n) * 1, _arr(2, 2, 2) * 0.8)


@pytest.mark.parametrize("n", [-1, -3])
def test_matrix_power_negative_is_a_power_of_the_inverse(n):
    well_conditioned = _arr(3, 3) * 0.3 + 2 * np.eye(3)
    check_op(lambda T, a: T.matrix_power(a, n), well_conditioned)
    check_op(lambda T, a: a.matrix_power(n) * 1, _arr(2, 3, 3) * 0.3 + 2 * np.eye(3))


def test_block_diag_cartesian_prod_combinations():
    check_op(
        lambda T, a, b, c: T.block_diag(a, b, c),
        _arr(),
        _arr(2, seed=1),
        _arr(2, 3, seed=2),
    )
    check_op(lambda T, a, b: T.cartesian_prod(a, b), _arr(2), _arr(3, seed=1))
    check_op(lambda T, a, b, c: T.cartesian_prod(a, b, c), _arr(2), _arr(1), _arr(2, seed=2))
    check_op(lambda T, a: T.cartesian_prod(a), _arr(3))
    for r, rep in [(2, False), (2, True), (3, False), (1, True), (3, True)]:
        check_op(lambda T, a, r=r, rep=rep: T.combinations(a, r, rep), _arr(3))
    assert tinyattn.combinations(tinyattn.ones(3), 4).shape == (0, 4)
    assert tinyattn.combinations(tinyattn.ones(3), 0).shape == (0,)


@needs_torch
def test_block_diag_promotes_and_combinations_ints():
    got = tinyattn.block_diag(tinyattn.tensor(1), tinyattn.ones(2, 1, dtype=tinyattn.float64))
    want = torch.block_diag(torch.tensor(1), torch.ones(2, 1, dtype=torch.float64))
    assert got.dtype.name == "float64" and got.tolist() == want.tolist()
    got = tinyattn.combinations(tinyattn.tensor([1, 2, 3]), with_replacement=True)
    assert (
        got.tolist() == torch.combinations(torch.tensor([1, 2, 3]), with_replacement=True).tolist()
    )


def _check_no_torch_double_backward(f, *arrays):
    """check_op without the torch parity of second derivatives: torch 2.13's cdist has
    no double backward ('the derivative for _cdist_backward is not implemented')."""
    run_gradcheck(f, *arrays)
    run_parity(f, *arrays)
    run_gradgradcheck(f, *arrays)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, 0.0, float("inf")])
def test_cdist(p):
    x1, x2 = _arr(2, 3, 4), _arr(2, 5, 4, seed=1)
    _check_no_torch_double_backward(lambda T, a, b: T.cdist(a, b, p), x1, x2)
    _check_no_torch_double_backward(
        lambda T, a, b: T.cdist(a, b, p=p), _arr(3, 2), _arr(1, 4, 2, seed=1)
    )


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_cdist_zero_distance_has_zero_gradient(p):
    x = np.array([[0.0, 0.0], [1.0, 2.0]])
    run_parity(lambda T, a, b: T.cdist(a, b, p), x, x[:1].copy())


@needs_torch
def test_cdist_large_matches_torch_mm_path():
    """torch computes p=2 through a matmul past 25 rows; values agree within float32."""
    x1, x2 = _arr(30, 8).astype(np.float32), _arr(40, 8, seed=1).astype(np.float32)
    got = tinyattn.cdist(tinyattn.tensor(x1), tinyattn.tensor(x2)).numpy()
    want = torch.cdist(torch.tensor(x1), torch.tensor(x2)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)


def test_dist():
    for p in (2, 1, 3, float("inf")):
        check_op(lambda T, a, b, p=p: T.dist(a, b, p) + a.dist(b, p), _arr(2, 3), _arr(3, seed=1))


@pytest.mark.parametrize("shape", [(3,), (2, 5), (1, 4), (3, 6)])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov(shape, correction):
    check_op(lambda T, x: T.cov(x, correction=correction), _arr(*shape))
    n = shape[-1]
    fw = np.arange(1, n + 1)
    aw = np.linspace(0.5, 2.0, n)
    check_op(lambda T, x: T.cov(x, correction=correction, fweights=T.tensor(fw)), _arr(*shape))
    check_op(lambda T, x, a: x.cov(correction=correction, aweights=a), _arr(*shape), aw)
    check_op(
        lambda T, x, a: T.cov(x, correction=correction, fweights=T.tensor(fw), aweights=a),
        _arr(*shape),
        aw,
    )


@pytest.mark.parametrize("shape", [(3,), (2, 5), (3, 6)])
def test_corrcoef(shape):
    check_op(lambda T, x: T.corrcoef(x) + x.corrcoef(), _arr(*shape))


def test_block_diag_of_nothing_is_one_by_zero():
    out = tinyattn.block_diag()  # torch: shape (1, 0) in the default dtype (was (0, 0))
    assert out.shape == (1, 0) and out.dtype == tinyattn.float32


def test_cdist_no_coordinates_and_compute_mode():
    # M = 0: every distance is 0 for every p, inf included (was: a NumPy reduction error)
    for p in (0.0, 1.0, 2.0, float("inf")):
        out = tinyattn.cdist(tinyattn.zeros(2, 3, 0), tinyattn.zeros(2, 4, 0), p=p)
        assert out.shape == (2, 3, 4) and not out.numpy().any()
    x = tinyattn.ones(2, 3)
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        assert tinyattn.cdist(x, x, compute_mode=mode).shape == (2, 2)
    with pytest.raises(ValueError, match="bogus is not a valid value for compute_mode"):
        tinyattn.cdist(x, x, compute_mode="bogus")  # torch: ValueError (was accepted)


def test_cov_promotes_to_the_aweights_dtype():
    # torch: float32 input with float64 aweights computes and returns float64 (was float32)
    x = np.random.default_rng(0).standard_normal((3, 5))
    w = np.linspace(0.5, 2.0, 5)
    out = tinyattn.cov(tinyattn.tensor(x, dtype=tinyattn.float32), aweights=tinyattn.tensor(w))
    assert out.dtype == tinyattn.float64
    ints = tinyattn.cov(tinyattn.tensor([1, 4, 2, 8, 5]), aweights=tinyattn.tensor(w))
    assert ints.dtype == tinyattn.float64
    fw = tinyattn.cov(
        tinyattn.tensor(x, dtype=tinyattn.float32), fweights=tinyattn.tensor([1, 2, 1, 1, 3])
    )
    assert fw.dtype == tinyattn.float32


@needs_torch
def test_cov_of_integers_is_float():
    got = tinyattn.cov(tinyattn.tensor([1, 2, 4]))
    assert got.dtype.name == "float32" and abs(got.item() - 2.3333333) < 1e-6


BAD = [
    ("trace_1d", lambda T: T.trace(T.zeros(3)), r"matrix.*\[3\]"),
    ("tensordot_dims", lambda T: T.tensordot(T.zeros(2, 3), T.zeros(4, 3)), "match.*3.*4|4.*3"),
    ("mv_size", lambda T: T.mv(T.zeros(2, 3), T.zeros(2)), r"\[2, 3\].*\[2\]"),
    ("mv_vec_2d", lambda T: T.mv(T.zeros(2, 3), T.zeros(3, 1)), r"vec.*\[3, 1\]"),
    ("matrix_power_rect", lambda T: T.matrix_power(T.zeros(2, 3), 2), r"square.*\[2, 3\]"),
    ("block_diag_3d", lambda T: T.block_diag(T.zeros(1, 1, 1)), "2 or fewer"),
    ("cartesian_2d", lambda T: T.cartesian_prod(T.zeros(2, 2)), "1-D"),
    ("combinations_2d", lambda T: T.combinations(T.zeros(2, 2)), "1D"),
    ("cdist_cols", lambda T: T.cdist(T.zeros(2, 3), T.zeros(2, 4)), "columns.*3.*4"),
    ("cdist_1d", lambda T: T.cdist(T.zeros(3), T.zeros(2, 3)), "2D"),
    ("cdist_neg_p", lambda T: T.cdist(T.zeros(2, 3), T.zeros(2, 3), -1), "non-negative"),
    ("cov_3d", lambda T: T.cov(T.zeros(2, 2, 2)), "two or fewer"),
    ("cov_fweights", lambda T: T.cov(T.zeros(2, 3), fweights=T.tensor([1, 2])), "fweights.*3.*2"),
    ("cov_fweights_float", lambda T: T.cov(T.zeros(2, 2), fweights=T.ones(2)), "integral"),
    ("cov_aweights_neg", lambda T: T.cov(T.zeros(2, 2), aweights=-T.ones(2)), "negative"),
]


@pytest.mark.parametrize("call,expected", [(c, e) for _, c, e in BAD], ids=[i for i, _, _ in BAD])
def test_bad_input(call, expected):
    check_bad_call(call, expected)
