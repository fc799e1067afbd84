"""torch's older matrix functions (cholesky_solve, cholesky_inverse, triangular_solve, lu,
lu_unpack, lu_solve, nuclear_norm, frobenius_norm, geqrf, orgqr, ormqr) and the removed
ones (solve, lstsq, eig, symeig, matrix_rank): gradcheck, torch parity, errors."""

import warnings

import numpy as np
import pytest
from harness import check_op, rand, run_parity, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="compares with torch directly")

pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")


def lower_factor(L, x):
    """A lower Cholesky-like factor: tril(x) with a diagonal kept away from 0."""
    n = x.shape[-1]
    return L.tril(x) + 2 * L.eye(n, dtype=x.dtype)


def upper_factor(L, x):
    n = x.shape[-1]
    return L.triu(x) + 2 * L.eye(n, dtype=x.dtype)


@pytest.mark.parametrize(
    "shape_b,shape_l", [((3, 2), (3, 3)), ((2, 3, 1), (3, 3)), ((3, 2), (2, 3, 3))]
)
def test_cholesky_solve(shape_b, shape_l):
    b, x = rand(*shape_b, seed=1), rand(*shape_l, seed=2)
    check_op(lambda L, b, x: L.cholesky_solve(b, lower_factor(L, x)), b, x)
    check_op(lambda L, b, x: L.cholesky_solve(b, upper_factor(L, x), True), b, x)
    check_op(lambda L, b, x: b.cholesky_solve(upper_factor(L, x), upper=True), b, x)


def test_cholesky_solve_leaf_factor_gets_torchs_dense_gradient():
    """torch's formula dL = -(C + C^T) L fills the unread triangle too; so does ours."""
    b = rand(3, 2, seed=3)
    low = np.tril(rand(3, 3, seed=4)) + 2 * np.eye(3)
    run_parity(lambda L, b, l: L.cholesky_solve(b, l), b, low)
    l = tinyattn.tensor(low, requires_grad=True)
    tinyattn.cholesky_solve(tinyattn.tensor(b), l).sum().backward()
    assert np.abs(np.triu(l.grad.numpy(), 1)).max() > 1e-3
    x = tinyattn.cholesky_solve(tinyattn.tensor(b), tinyattn.tensor(low)).numpy()
    np.testing.assert_allclose(low @ low.T @ x, b, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1)])
def test_cholesky_inverse(shape):
    x = rand(*shape, seed=5)
    check_op(lambda L, x: L.cholesky_inverse(lower_factor(L, x)), x)
    check_op(lambda L, x: upper_factor(L, x).cholesky_inverse(True), x)
    low = lower_factor(tinyattn, tinyattn.tensor(x)).numpy()
    a = low @ np.swapaxes(low, -1, -2)
    np.testing.assert_allclose(
        tinyattn.cholesky_inverse(tinyattn.tensor(low)).numpy(), np.linalg.inv(a), atol=1e-12
    )


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_triangular_solve(upper, transpose, unit):
    b, a = rand(3, 2, seed=6), rand(3, 3, seed=7) + 3 * np.eye(3)

    def f(L, b, a):
        return L.triangular_solve(b, a, upper, transpose, unit)

    check_op(f, b, a)
    check_op(lambda L, b, a: b.triangular_solve(a, upper=upper), rand(2, 3, 2, seed=8), a)


def test_triangular_solve_broadcasts_and_returns_a_named_copy():
    b, a = rand(2, 1, 3, 2, seed=9), rand(3, 3, seed=10) + 3 * np.eye(3)
    check_op(lambda L, b, a: tuple(L.triangular_solve(b, a)), b, a)
    out = tinyattn.triangular_solve(tinyattn.tensor(b), tinyattn.tensor(a))
    assert type(out).__name__ == "triangular_solve"
    assert out.cloned_coefficient.shape == (2, 1, 3, 3)
    assert out.solution.shape == (2, 1, 3, 2)


@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 4), (2, 3, 2), (1, 1)])
def test_lu(shape):
    a = rand(*shape, seed=11)
    check_op(lambda L, a: L.lu(a), a)
    check_op(lambda L, a: a.lu(get_infos=True), a)
    check_op(lambda L, a: tuple(L.lu_unpack(*L.lu(a))), a)
    lu, piv = tinyattn.lu(tinyattn.tensor(a))
    p, low, up = tinyattn.lu_unpack(lu, piv)
    np.testing.assert_allclose((p @ low @ up).numpy(), a, atol=1e-12)
    assert piv.dtype == tinyattn.int32 and p.dtype == tinyattn.float64


def test_lu_of_singular_matrix_reports_the_zero_pivot():
    a = np.zeros((3, 3))
    a[0, 0] = 1.0
    lu, piv, info = tinyattn.lu(tinyattn.tensor(a), get_infos=True)
    assert info.item() == 2 and piv.tolist() == [1, 2, 3]
    np.testing.assert_array_equal(lu.numpy(), a)
    b = np.array([[0.0, 2.0], [3.0, 4.0]])  # row swap
    lu, piv = tinyattn.lu(tinyattn.tensor(b))
    assert piv.tolist() == [2, 2]


def test_lu_unpack_partial():
    a = rand(5, 3, seed=12)
    lu, piv = tinyattn.lu(tinyattn.tensor(a))
    p, low, up = tinyattn.lu_unpack(lu, piv, unpack_data=False)
    assert p.shape == (5, 5) and low.shape == (0,) and up.shape == (0,)
    p, low, up = tinyattn.lu_unpack(lu, piv, unpack_pivots=False)
    assert p.shape == (0,) and low.shape == (5, 3) and up.shape == (3, 3)
    assert type(tinyattn.lu_unpack(lu, piv)).__name__ == "lu_unpack"


@pytest.mark.parametrize(
    "shape_b,shape_a", [((3, 2), (3, 3)), ((2, 3, 2), (3, 3)), ((3, 1), (2, 3, 3))]
)
def test_lu_solve(shape_b, shape_a):
    b, a = rand(*shape_b, seed=13), rand(*shape_a, seed=14) + np.eye(3)

    def f(L, b, a):
        lu, piv = L.lu(a)
        return L.lu_solve(b, lu, piv)

    check_op(f, b, a)
    check_op(lambda L, b, a: b.lu_solve(*a.lu()), b, a)
    x = tinyattn.lu_solve(tinyattn.tensor(b), *tinyattn.lu(tinyattn.tensor(a)))
    np.testing.assert_allclose(
        (tinyattn.tensor(a) @ x).numpy(), np.broadcast_to(b, x.shape), atol=1e-12
    )


def test_norms():
    a = rand(2, 3, 4, seed=15)
    check_op(lambda L, a: L.nuclear_norm(a), a)
    check_op(lambda L, a: L.nuclear_norm(a, True), a)
    check_op(lambda L, a: L.nuclear_norm(a, (0, 2), keepdim=True), a)
    check_op(lambda L, a: L.frobenius_norm(a, (1, 2)), a)
    check_op(lambda L, a: L.frobenius_norm(a, (0,), keepdim=True), a)
    check_op(lambda L, a: L.frobenius_norm(a, 1), a)


@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (2, 4, 2), (3, 5)])
def test_geqrf_orgqr_ormqr(shape):
    a = rand(*shape, seed=16)
    run_parity(lambda L, a: tuple(L.geqrf(a)), a, grad=[False])
    a_t, tau_t = tinyattn.geqrf(tinyattn.tensor(a))
    h, tau = a_t.numpy(), tau_t.numpy()
    m, n = shape[-2:]
    if m >= n:
        check_op(lambda L, h, tau: L.orgqr(h, tau), h, tau)
        q = tinyattn.orgqr(a_t, tau_t).numpy()
        np.testing.assert_allclose(q @ np.triu(h)[..., :n, :], a, atol=1e-12)  # A = Q R
    c_left, c_right = rand(*shape[:-2], m, 2, seed=17), rand(*shape[:-2], 2, m, seed=18)
    for transpose in (False, True):
        check_op(lambda L, h, tau, c, t=transpose: L.ormqr(h, tau, c, True, t), h, tau, c_left)
        check_op(
            lambda L, h, tau, c, t=transpose: h.ormqr(tau, c, left=False, transpose=t),
            h,
            tau,
            c_right,
        )


def test_removed_functions_raise_torchs_errors():
    a = tinyattn.eye(3)
    for call in (
        lambda: tinyattn.solve(a, a), lambda: tinyattn.lstsq(a, a), lambda: tinyattn.eig(a),
        lambda: tinyattn.symeig(a), lambda: tinyattn.matrix_rank(a), lambda: a.solve(a),
        lambda: a.lstsq(a), lambda: a.eig(), lambda: a.symeig(eigenvectors=True),
    ):  # fmt: skip
        with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
            call()


@needs_torch
def test_removed_function_messages_match_torch():
    for name in ("solve", "lstsq", "eig", "symeig", "matrix_rank"):
        args = (2,) if name in ("solve", "lstsq") else (1,)
        with pytest.raises(RuntimeError) as ours:
            getattr(tinyattn, name)(*[tinyattn.eye(3)] * args[0])
        with pytest.raises(RuntimeError) as theirs:
            getattr(torch, name)(*[torch.eye(3)] * args[0])
        assert str(ours.value) == str(theirs.value)


def test_bad_inputs():
    a, b = tinyattn.eye(3, dtype=tinyattn.float64), tinyattn.ones(3, 2, dtype=tinyattn.float64)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tinyattn.cholesky_solve(tinyattn.ones(3, dtype=tinyattn.float64), a)
    with pytest.raises(RuntimeError, match="same dtype"):
        tinyattn.cholesky_solve(b.float(), a)
    with pytest.raises(RuntimeError, match="square"):
        tinyattn.cholesky_solve(b, b)
    with pytest.raises(RuntimeError, match="Incompatible matrix sizes for triangular_solve"):
        tinyattn.triangular_solve(tinyattn.ones(4, 2, dtype=tinyattn.float64), a)
    with pytest.raises(RuntimeError, match="not implemented on the CPU"):
        tinyattn.lu(a, pivot=False)
    with pytest.raises(RuntimeError, match="2 or more dimensions"):
        tinyattn.lu(tinyattn.ones(3))
    lu, piv = tinyattn.lu(a)
    with pytest.raises(RuntimeError, match="torch.int32"):
        tinyattn.lu_unpack(lu, piv.long())
    with pytest.raises(RuntimeError, match="between 1 and LU.size"):
        tinyattn.lu_unpack(lu, tinyattn.tensor([5, 2, 3], dtype=tinyattn.int32))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        tinyattn.lu_solve(tinyattn.ones(4, 2, dtype=tinyattn.float64), lu, piv)
    with pytest.raises(RuntimeError, match="Expected at most 2 dimensions"):
        tinyattn.frobenius_norm(a, (0, 1, 1))
    with pytest.raises(RuntimeError, match="input must have at least 2 dimensions"):
        tinyattn.geqrf(tinyattn.ones(3))
    h, tau = tinyattn.geqrf(tinyattn.ones(3, 5, dtype=tinyattn.float64))
    with pytest.raises(RuntimeError, match="greater than or equal"):
        tinyattn.orgqr(h, tau)
    h, tau = tinyattn.geqrf(tinyattn.ones(5, 3, dtype=tinyattn.float64))
    other = tinyattn.ones(5, 2, dtype=tinyattn.float64)
    with pytest.raises(RuntimeError, match=r"tau.shape\[-1\] must be equal to min\(other"):
        tinyattn.ormqr(h, tau[:2], other)
    with pytest.raises(RuntimeError, match="other must have at least 2 dimensions"):
        tinyattn.ormqr(h, tau, tinyattn.ones(5, dtype=tinyattn.float64))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        tinyattn.ormqr(h.expand(2, 5, 3), tau.expand(2, 3), other)


def test_deprecation_warnings_once():
    from tinyattn.ops.linalg import lu as lu_module

    lu_module._WARNED.discard("lu")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tinyattn.lu(tinyattn.eye(2))
        tinyattn.lu(tinyattn.eye(2))
    assert sum("torch.lu is deprecated" in str(w.message) for w in seen) == 1


def test_batch_dims_must_broadcast():
    b = tinyattn.ones(2, 3, 2, dtype=tinyattn.float64)
    a = tinyattn.eye(3, dtype=tinyattn.float64).expand(3, 3, 3)
    with pytest.raises(RuntimeError, match="batch dimensions .* not broadcastable"):
        tinyattn.cholesky_solve(b, a)
    with pytest.raises(RuntimeError, match="batch dimensions .* not broadcastable"):
        tinyattn.triangular_solve(b, a)
