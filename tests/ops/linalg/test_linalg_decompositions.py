"""tinyattn.linalg matrix functions: gradcheck + torch parity (first and second order),
gauge-invariant checks for the decompositions, and errors like torch's."""

import numpy as np
import pytest
from harness import check_op, rand, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="compares with torch directly")


def well(*shape, seed=0):
    """Well-conditioned square matrices: random + 3 I."""
    return rand(*shape, seed=seed) + 3 * np.eye(shape[-1])


def spd(*shape, seed=0):
    """Symmetric positive-definite matrices with distinct eigenvalues."""
    x = rand(*shape, seed=seed)
    n = shape[-1]
    return x @ np.swapaxes(x, -1, -2) + np.diag(np.arange(1.0, n + 1))


def sym(L, a):
    """The symmetric part (so finite differences move A within symmetric matrices)."""
    return (a + a.mT) / 2


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (1, 1)])
def test_inv_det_slogdet(shape):
    a = well(*shape)
    check_op(lambda L, a: L.linalg.inv(a), a)
    check_op(lambda L, a: L.linalg.det(a), a)
    check_op(lambda L, a: L.linalg.slogdet(a).logabsdet, a)
    check_op(lambda L, a: L.logdet(a), a)
    check_op(lambda L, a: (L.inverse(a), a.inverse(), a.det(), L.det(a)), a)


@needs_torch
def test_det_of_negative_and_singular_matrices():
    check_op(lambda L, a: L.linalg.det(a), -well(3, 3))
    check_op(lambda L, a: L.linalg.slogdet(a).logabsdet, -well(3, 3, seed=2))
    singular = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, 1.0, 2.0]])
    from harness import run_gradcheck

    # the cofactor gradient, checked by finite differences (torch 2.13 returns zeros here,
    # which fails torch's own gradcheck: a deliberate difference, see Det)
    run_gradcheck(lambda L, a: L.linalg.det(a), singular)
    a = tinyattn.tensor(singular, requires_grad=True)
    tinyattn.linalg.det(a).backward()
    assert np.abs(a.grad.numpy()).max() > 0.1
    b = tinyattn.tensor(singular, requires_grad=True)
    tinyattn.linalg.slogdet(b).logabsdet.backward()  # cofactor / 0: infinite, no error
    assert np.isinf(b.grad.numpy()).all()
    sign, logabs = tinyattn.linalg.slogdet(tinyattn.tensor(-well(2, 3, 3)))
    ts, tl = torch.linalg.slogdet(torch.tensor(-well(2, 3, 3)))
    np.testing.assert_allclose(sign.numpy(), ts.numpy())
    assert type(tinyattn.slogdet(tinyattn.tensor(well(3, 3)))).__name__ == "slogdet"


@pytest.mark.parametrize(
    "a_shape, b_shape, left",
    [
        ((3, 3), (3, 2), True),
        ((3, 3), (3,), True),
        ((2, 3, 3), (2, 3), True),
        ((2, 3, 3), (3, 1), True),
        ((3, 3), (2, 3, 2), True),
        ((3, 3), (2, 3), False),
        ((2, 3, 3), (2, 4, 3), False),
    ],
)
def test_solve(a_shape, b_shape, left):
    check_op(lambda L, a, b: L.linalg.solve(a, b, left=left), well(*a_shape), rand(*b_shape))


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, float("inf"), float("-inf")])
def test_matrix_norm(ord):
    a = rand(2, 3, 4, seed=3)
    check_op(lambda L, a: L.linalg.matrix_norm(a, ord), a)
    check_op(lambda L, a: L.linalg.matrix_norm(a, ord, dim=(0, 2), keepdim=True), a)
    check_op(lambda L, a: L.linalg.norm(a[0], ord), a)


def test_norm_vecdot_multi_dot_matrix_power():
    a = rand(2, 3, seed=4)
    check_op(lambda L, a: L.linalg.norm(a), a)
    check_op(lambda L, a: L.linalg.norm(a, 3, dim=1), a)
    check_op(lambda L, a, b: L.linalg.vecdot(a, b), a, rand(3, seed=5))
    check_op(lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), rand(3, seed=6), rand(3, 4), rand(4))
    check_op(lambda L, a, b: L.linalg.multi_dot([a, b]), rand(2, 3), rand(3, 4))
    for n in (0, 1, 3, -1, -2):
        check_op(lambda L, a, n=n: L.linalg.matrix_power(a, n), well(2, 3, 3, seed=7))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper):
    check_op(lambda L, a: L.linalg.cholesky(sym(L, a), upper=upper), spd(2, 3, 3))
    check_op(lambda L, a: L.cholesky(sym(L, a), upper), spd(3, 3, seed=1))


@needs_torch
@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 3, 4), (3, 4)])
def test_qr(shape):
    a = rand(*shape, seed=8)
    kw = {"parity2_kw": {"tol32": (1e-3, 1e-3)}}  # float32 second derivatives (rounding)
    check_op(lambda L, a: tuple(L.linalg.qr(a)), a, **kw)  # Householder: same signs as torch
    check_op(lambda L, a: tuple(L.qr(a)), a, **kw)
    q, r = tinyattn.linalg.qr(tinyattn.tensor(a), mode="complete")
    np.testing.assert_allclose((q @ r).numpy(), a, atol=1e-12)
    _, r = tinyattn.linalg.qr(tinyattn.tensor(a), mode="r")
    tr = torch.linalg.qr(torch.tensor(a), mode="r").R.numpy()
    np.testing.assert_allclose(r.numpy(), tr, atol=1e-12)


@needs_torch
def test_qr_backward_refused_like_torch():
    for mode in ("r", "complete"):
        for lib in (tinyattn, torch):
            a = lib.tensor(rand(4, 3), requires_grad=True)
            with pytest.raises(RuntimeError, match="The .*derivative of linalg.qr|QR"):
                lib.linalg.qr(a, mode=mode).R.sum().backward()


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(uplo):
    a = spd(2, 3, 3, seed=9)

    def gauge_free(L, a):  # eigenvalues and Q Q^T-type quantities do not depend on signs
        w, q = L.linalg.eigh(sym(L, a), UPLO=uplo)
        return w, (q * q), q @ L.diag_embed(w) @ q.mT

    check_op(gauge_free, a)
    check_op(lambda L, a: L.linalg.eigvalsh(sym(L, a), UPLO=uplo), a)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 3, 4)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(shape, full):
    a = rand(*shape, seed=10)
    k = min(shape[-2:])

    def gauge_free(L, a):
        u, s, vh = L.linalg.svd(a, full_matrices=full)
        u, vh = u[..., :k], vh[..., :k, :]
        return s, u * u, vh * vh, (u * s[..., None, :]) @ vh

    check_op(gauge_free, a)
    check_op(lambda L, a: L.linalg.svdvals(a), a)

    def old(L, a):
        u, s, v = L.svd(a, some=not full)
        return s, (u[..., :k] * s[..., None, :]) @ v[..., :k].mT

    check_op(old, a)


@needs_torch
def test_svd_compute_uv_false():
    a = rand(4, 3)
    ours, theirs = (
        tinyattn.svd(tinyattn.tensor(a), compute_uv=False),
        torch.svd(torch.tensor(a), compute_uv=False),
    )
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), t.numpy(), atol=1e-12)


@needs_torch
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_pinv_lstsq(shape):
    a = rand(*shape, seed=11)
    a[..., : min(shape[-2:]), : min(shape[-2:])] += 2 * np.eye(min(shape[-2:]))
    check_op(lambda L, a: L.linalg.pinv(a), a)
    check_op(lambda L, a: L.pinverse(a), a)
    b = rand(*shape[:-1], 2, seed=12)
    if shape[-2] >= shape[-1]:
        check_op(lambda L, a, b: L.linalg.lstsq(a, b).solution, a, b)
        out = tinyattn.linalg.lstsq(tinyattn.tensor(a), tinyattn.tensor(b))
        ref = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b))
        assert out.rank.tolist() == ref.rank.tolist() and tuple(out.residuals.shape) == (0,)


@needs_torch
def test_pinv_rank_deficient_forward_and_matrix_rank():
    a = rand(4, 2) @ rand(2, 3)
    ours = tinyattn.linalg.pinv(tinyattn.tensor(a)).numpy()
    np.testing.assert_allclose(ours, torch.linalg.pinv(torch.tensor(a)).numpy(), atol=1e-10)
    for kw in ({}, {"atol": 0.5}, {"rtol": 0.3}):
        r = tinyattn.linalg.matrix_rank(tinyattn.tensor(a), **kw)
        assert r.dtype == tinyattn.int64
        assert r.item() == torch.linalg.matrix_rank(torch.tensor(a), **kw).item()


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(upper, left, unit):
    b = rand(2, 3, 2) if left else rand(2, 2, 3)
    check_op(
        lambda L, a, b: L.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit),
        well(3, 3, seed=13),
        b,
    )


@pytest.mark.parametrize("scale", [0.1, 1.0, 8.0])
def test_matrix_exp(scale):
    a = rand(2, 3, 3, seed=14) * scale
    check_op(lambda L, a: L.linalg.matrix_exp(a), a, gradcheck_kw={"rtol": 1e-4})
    check_op(lambda L, a: L.matrix_exp(a), a[0], gradcheck_kw={"rtol": 1e-4})


@needs_torch
def test_singular_and_not_positive_definite_raise_linalg_error():
    assert issubclass(tinyattn.linalg.LinAlgError, RuntimeError)
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    cases = [
        (lambda L, a: L.linalg.inv(a), "singular"),
        (lambda L, a: L.linalg.solve(a, L.ones(2, 1, dtype=a.dtype)), "singular"),
        (lambda L, a: L.linalg.cholesky(a), "leading minor of order 2 is not positive"),
    ]
    for f, msg in cases:
        for lib in (tinyattn, torch):
            with pytest.raises(lib.linalg.LinAlgError, match=msg):
                f(lib, lib.tensor(sing))


BAD = [
    (lambda L: L.linalg.inv(L.ones(2, 3)), "square"),
    (lambda L: L.linalg.det(L.ones(3)), "at least 2 dimensions"),
    (lambda L: L.linalg.inv(L.ones(2, 2, dtype=L.int64)), "floating point"),
    (lambda L: L.linalg.eigh(L.ones(2, 3)), "square"),
    (lambda L: L.linalg.cholesky(L.ones(2, 3)), "square"),
    (lambda L: L.linalg.solve(L.eye(2), L.ones(3, 1)), "Incompatible shapes"),
    (lambda L: L.linalg.solve(L.eye(3), L.ones(3), left=False), "Incompatible shapes"),
    (lambda L: L.linalg.matrix_norm(L.ones(3)), "at least 2 dimensions"),
    (lambda L: L.linalg.matrix_norm(L.ones(3, 3), ord=3), "Order 3 not supported"),
    (lambda L: L.linalg.norm(L.ones(2, 2, 2), ord=2), "must be 1D or 2D"),
    (lambda L: L.linalg.multi_dot([L.ones(3)]), "at least 2 tensors"),
    (lambda L: L.linalg.qr(L.ones(3, 3), mode="x"), "unrecognized mode"),
]


@needs_torch
@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_input_raises_like_torch(i):
    f, msg = BAD[i]
    for lib in (tinyattn, torch):
        with pytest.raises(RuntimeError, match=msg):
            f(lib)


def test_errors_name_the_shapes():
    with pytest.raises(RuntimeError, match=r"A \[2, 2\], B \[3, 1\]"):
        tinyattn.linalg.solve(tinyattn.eye(2), tinyattn.ones(3, 1))
    with pytest.raises(RuntimeError, match=r"shape \[2, 3\]"):
        tinyattn.linalg.inv(tinyattn.ones(2, 3))
    with pytest.raises(RuntimeError, match="not broadcastable"):
        tinyattn.linalg.solve(tinyattn.eye(2).expand(3, 2, 2), tinyattn.ones(2, 2, 1))


# --- regressions from the differential review against torch 2.13 -----------------------


def _both(f, *arrays):
    """f(lib, *tensors) for tinyattn and torch, as lists of NumPy arrays."""
    out = []
    for lib in (tinyattn, torch):
        r = f(lib, *[lib.tensor(a) for a in arrays])
        out.append([x.numpy() for x in (r if isinstance(r, tuple) else (r,))])
    return out


@needs_torch
def test_empty_batches_and_empty_matrices():
    """SVD / QR of a 0-size batch used to fail in a reshape; the max-type matrix norms of
    0 x 0 matrices are 0 in torch (tinyattn raised)."""
    a = np.zeros((0, 3, 3))
    for f in (
        lambda L, a: tuple(L.linalg.svd(a)),
        lambda L, a: tuple(L.linalg.svd(a, full_matrices=False)),
        lambda L, a: tuple(L.linalg.qr(a)),
        lambda L, a: tuple(L.linalg.qr(a, mode="complete")),
        lambda L, a: tuple(L.svd(a)),
    ):
        ours, theirs = _both(f, a)
        assert [x.shape for x in ours] == [x.shape for x in theirs]
    for ord in (2, 1, float("inf"), "nuc"):
        for shape in ((0, 0), (3, 0, 0), (2, 3, 0)):
            ours, theirs = _both(lambda L, a, o=ord: L.linalg.matrix_norm(a, o), np.zeros(shape))
            assert ours[0].shape == theirs[0].shape
            np.testing.assert_array_equal(ours[0], theirs[0])


@needs_torch
def test_cholesky_upper_reads_the_upper_triangle():
    """``upper=True`` used to read A's lower triangle and transpose; LAPACK (and torch)
    read the upper triangle."""
    low_noise = spd(4, 4) + np.tril(rand(4, 4, seed=11), -1) * 5
    up_noise = spd(4, 4) + np.triu(rand(4, 4, seed=12), 1) * 5
    for f in (
        lambda L, a: L.linalg.cholesky(a, upper=True),
        lambda L, a: L.cholesky(a, True),
        lambda L, a: a.cholesky(upper=True),
    ):
        ours, theirs = _both(f, low_noise)
        np.testing.assert_allclose(ours[0], theirs[0], atol=1e-12)
    ours, theirs = _both(lambda L, a: L.linalg.cholesky(a), up_noise)
    np.testing.assert_allclose(ours[0], theirs[0], atol=1e-12)
    with pytest.raises(tinyattn.linalg.LinAlgError):
        tinyattn.linalg.cholesky(tinyattn.tensor(up_noise), upper=True)


@needs_torch
def test_hermitian_flags_read_one_triangle():
    """eigh / eigvalsh raised for a NaN in the triangle they do not read; pinv and
    matrix_rank with hermitian=True used the whole (non-symmetric) matrix."""
    a = spd(3, 3)
    a[0, 2] = np.nan  # upper triangle: UPLO='L' never reads it
    for f in (lambda L, a: L.linalg.eigvalsh(a), lambda L, a: L.linalg.eigh(a)[0]):
        ours, theirs = _both(f, a)
        np.testing.assert_allclose(ours[0], theirs[0], atol=1e-12)
    b = np.tril(rand(4, 4, seed=13)) + np.triu(rand(4, 4, seed=14), 1) * 9
    for f in (
        lambda L, a: L.linalg.pinv(a, hermitian=True),
        lambda L, a: L.linalg.matrix_rank(a, hermitian=True),
        lambda L, a: L.linalg.matrix_rank(a, hermitian=True, atol=0.5),
    ):
        ours, theirs = _both(f, b)
        np.testing.assert_allclose(ours[0], theirs[0], atol=1e-10)
    check_op(lambda L, a: L.linalg.pinv(sym(L, a), hermitian=True), spd(2, 3, 3, seed=3))


@needs_torch
def test_norm_ord_dim_rules():
    """linalg.norm: a string ord is always a matrix norm; dim of length > 2 raises; a 3-D
    input with ord and no dim raises; solve with a batch of vectors and left=False raises."""
    x = rand(2, 3, 4, seed=15)
    bad = [
        lambda L: L.linalg.norm(L.tensor(x), dim=(0, 1, 2)),
        lambda L: L.linalg.norm(L.tensor(x), "fro", dim=-1),
        lambda L: L.linalg.norm(L.tensor(x), "nuc", dim=(1,)),
        lambda L: L.linalg.norm(L.tensor(x[0, 0]), "fro"),
        lambda L: L.linalg.norm(L.tensor(x), 2),
        lambda L: L.linalg.solve(L.tensor(well(2, 3, 3)), L.tensor(rand(2, 3)), left=False),
    ]
    for f in bad:
        for lib in (tinyattn, torch):
            with pytest.raises(RuntimeError):
                f(lib)


@needs_torch
@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
@pytest.mark.parametrize(
    "a_shape, b_shape", [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((2, 5, 3), (2, 5))]
)
def test_lstsq_fields_follow_the_driver(driver, a_shape, b_shape):
    """The driver was ignored: residuals / singular_values were always empty and rank
    always computed. torch: rank unless 'gels', singular values for 'gelsd' / 'gelss',
    residuals when m > n, the driver is not 'gelsy' and A has full rank."""
    a, b = rand(*a_shape, seed=16), rand(*b_shape, seed=17)
    ours, theirs = _both(lambda L, a, b: tuple(L.linalg.lstsq(a, b, driver=driver)), a, b)
    for x, y in zip(ours, theirs):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_allclose(x, y, atol=1e-10)
    deficient = rand(5, 2, seed=18) @ rand(2, 3, seed=19)  # rank 2: no residuals
    b = rand(5, 2, seed=20)
    ours, theirs = _both(lambda L, a, b: tuple(L.linalg.lstsq(a, b, driver="gelsd")), deficient, b)
    assert [x.shape for x in ours] == [x.shape for x in theirs]
    check_op(lambda L, a, b: L.linalg.lstsq(a, b, driver="gelsd").residuals, rand(5, 3), rand(5, 2))
    for lib in (tinyattn, torch):
        with pytest.raises(RuntimeError):
            lib.linalg.lstsq(lib.tensor(rand(5, 3)), lib.tensor(rand(2, 5, 2)))
        with pytest.raises(RuntimeError):
            lib.linalg.lstsq(lib.tensor(rand(5, 3)), lib.tensor(rand(5, 2)), driver="qr")


@needs_torch
def test_slogdet_sign_of_non_finite_input_is_zero():
    """NumPy reports sign 1 for a NaN / inf matrix; torch reports 0 (with NaN logabsdet)."""
    for bad in (np.nan, np.inf):
        a = well(3, 3)
        a[1, 2] = bad
        ours, theirs = _both(lambda L, a: tuple(L.linalg.slogdet(a)), a)
        np.testing.assert_array_equal(ours[0], theirs[0])
        np.testing.assert_array_equal(ours[1], theirs[1])


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_qr_and_pinv_gradients_without_torch(shape):
    """Finite-difference checks that run on a machine without torch as well (the torch
    comparisons of qr and pinv above skip there). Q * Q and R * R do not depend on the
    signs LAPACK picks for the columns of Q."""
    a = rand(*shape, seed=41)
    check_op(lambda L, x: tuple(part * part for part in L.linalg.qr(x)), a)
    check_op(lambda L, x: L.linalg.pinv(x), a)
