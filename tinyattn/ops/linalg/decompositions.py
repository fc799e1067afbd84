"""Matrix functions and decompositions with gradients: inv, det, slogdet, solve, cholesky,
eigh, svd, qr, pinv, matrix_exp (the Functions behind ``tinyattn.linalg``).

Every op takes batches of matrices ``(..., m, n)`` (NumPy's ``np.linalg`` does the
numerics, batched over the leading dims). Backward formulas are written against
``xp = ctx.xp`` and call other Functions through ``xp.apply``, so the gradients are
themselves differentiable (``create_graph=True``).

Decompositions with several differentiable outputs (eigh, svd, qr) return them packed
in one array; the public functions in ``tinyattn.linalg`` slice the parts out with
differentiable views, so each backward receives the gradients of all parts at once.
"""

from __future__ import annotations

import numpy as np

from ...core.function import Function
from ...core.tensor import Tensor
from ...core.xp import numpy_xp
from ...foundations.type_names import type_name

__all__ = ["LinAlgError", "check_matrix", "converged", "from_triangle"]


class LinAlgError(RuntimeError):
    """A matrix that is singular or not positive-definite (torch's ``linalg.LinAlgError``)."""


def check_matrix(x, op: str, name: str = "A", square: bool = True) -> None:
    """Raise torch-like errors unless ``x`` is a float Tensor of (square) matrices."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type_name(x)}")
    if x.ndim < 2:
        raise RuntimeError(
            f"{op}: The input tensor {name} must have at least 2 dimensions "
            f"(got shape {list(x.shape)})."
        )
    if x._data.dtype.kind != "f":
        raise RuntimeError(
            f"{op}: Expected a floating point tensor as input {name}. Got {x.dtype} "
            f"(shape {list(x.shape)})"
        )
    if square and x.shape[-1] != x.shape[-2]:
        raise RuntimeError(
            f"{op}: {name} must be batches of square matrices, but they are "
            f"{x.shape[-2]} by {x.shape[-1]} matrices (shape {list(x.shape)})"
        )


def _mT(xp, x):
    return xp.swapaxes(x, -1, -2)


def _dtype(x):
    return x._data.dtype if isinstance(x, Tensor) else x.dtype


def _eye(n: int, like) -> np.ndarray:
    return np.eye(n, dtype=_dtype(like))


def converged(numerics, a: np.ndarray, op: str, *args, **kwargs):
    """``numerics(a, ...)`` (an SVD or eigensolver) as torch runs it: LinAlgError for a NaN
    element or when the algorithm fails; all-NaN results for a matrix with an inf."""
    if np.isnan(a).any():
        raise LinAlgError(
            f"{op}: The algorithm failed to converge because the input matrix of shape "
            f"{list(a.shape)} contained non-finite values."
        )
    infinite = ~np.isfinite(a).all(axis=(-2, -1))
    try:
        out = numerics(np.where(infinite[..., None, None], 0, a), *args, **kwargs)
    except np.linalg.LinAlgError:
        raise LinAlgError(f"{op}: The algorithm failed to converge.") from None
    if not infinite.any():
        return out
    parts = out if isinstance(out, tuple) else (out,)
    for part in parts:
        part[infinite] = np.nan
    return out if isinstance(out, tuple) else parts[0]


def _singular(op: str, a: np.ndarray, what: str) -> LinAlgError:
    return LinAlgError(
        f"{op}: The {what} could not be completed because the input matrix A of shape "
        f"{list(a.shape)} is singular."
    )


class Inv(Function):
    """Y = A^-1 (..., n, n).   dA = -Y^T dY Y^T"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a):
        try:
            y = np.linalg.inv(a)
        except np.linalg.LinAlgError:
            raise _singular("linalg.inv", a, "inversion") from None
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (y,) = ctx.saved_tensors
        yt = _mT(xp, y)
        return -xp.matmul(xp.matmul(yt, g), yt)


def _cofactor(a: np.ndarray) -> np.ndarray:
    """The cofactor matrix det(A) A^-T, also for singular A (from the SVD A = U S V^T:
    det(U) det(V) U diag(prod_{j != i} s_j) V^T)."""
    det = np.linalg.det(a)
    out = np.empty_like(a)
    ok = det != 0
    if ok.any():
        out[ok] = det[ok][..., None, None] * np.swapaxes(np.linalg.inv(a[ok]), -1, -2)
    if (~ok).any():
        u, s, vh = np.linalg.svd(a[~ok])
        n = s.shape[-1]
        others = np.stack([np.prod(np.delete(s, i, axis=-1), axis=-1) for i in range(n)], -1)
        sign = np.linalg.det(u) * np.linalg.det(vh)
        out[~ok] = sign[..., None, None] * np.matmul(u * others[..., None, :], vh)
    return out


class Det(Function):
    """d = det(A) (..., n, n) -> (...).   dA = dd * det(A) A^-T  (the cofactor matrix; from
    the SVD when A is singular: torch 2.13 returns zeros there, which fails its own gradcheck)"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.asarray(np.linalg.det(a))

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (a,) = ctx.saved_tensors
        if xp is numpy_xp:
            return g[..., None, None] * _cofactor(a)
        det = Det.apply(a)  # under create_graph: det(A) A^-T, differentiable
        return (g * det)[..., None, None] * _mT(xp, xp.apply(Inv, a))


class LogAbsDet(Function):
    """l = log|det(A)| (..., n, n) -> (...).   dA = dl * A^-T  (= cofactor(A) / det(A): infinite
    for singular A, where torch's LU solve gives an arbitrary mix of ±inf, NaN and finite)"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.asarray(np.linalg.slogdet(a)[1])

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (a,) = ctx.saved_tensors
        if xp is numpy_xp:  # (singular A: cofactor / 0, infinite as torch's)
            return g[..., None, None] * _cofactor(a) / np.linalg.det(a)[..., None, None]
        return g[..., None, None] * _mT(xp, xp.apply(Inv, a))


class Solve(Function):
    """X = A^-1 B, A (..., n, n), B (..., n, k) (batch dims broadcast).
    dB = A^-T dX,  dA = -dB X^T"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, b):
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a2 = np.broadcast_to(a, batch + a.shape[-2:])
        b2 = np.broadcast_to(b, batch + b.shape[-2:])
        try:
            x = np.linalg.solve(a2, b2)
        except np.linalg.LinAlgError:
            raise LinAlgError(
                f"linalg.solve: The solver failed because the input matrix A of shape "
                f"{list(a.shape)} is singular."
            ) from None
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        a, x = ctx.saved_tensors
        gb = xp.apply(Solve, _mT(xp, a), g)
        ga = -xp.matmul(gb, _mT(xp, x)) if ctx.needs_input_grad[0] else None
        return ga, gb


def _not_positive_definite(a: np.ndarray, op: str) -> LinAlgError:
    flat = a.reshape((-1,) + a.shape[-2:])
    for i, m in enumerate(flat):
        for k in range(1, m.shape[-1] + 1):
            try:
                ok = not np.isnan(np.linalg.cholesky(m[:k, :k])).any()
            except np.linalg.LinAlgError:
                ok = False
            if not ok:
                where = f"(Batch element {i}): " if a.ndim > 2 else ""
                return LinAlgError(
                    f"{op}: {where}The factorization could not be completed because the input "
                    f"is not positive-definite (the leading minor of order {k} is not "
                    "positive-definite)."
                )
    return LinAlgError(f"{op}: The input is not positive-definite.")


class Cholesky(Function):
    """A = L L^T with L lower triangular (..., n, n); only the lower triangle of A is read.
    With Phi(X) = tril(X) with its diagonal halved and S = L^-T Phi(L^T dL) L^-1:
    dA = (S + S^T) / 2"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a):
        try:
            low = np.linalg.cholesky(np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2))
        except np.linalg.LinAlgError:
            raise _not_positive_definite(a, "linalg.cholesky") from None
        if np.isnan(low).any():  # a NaN pivot is not positive: torch raises too
            raise _not_positive_definite(a, "linalg.cholesky")
        ctx.save_for_backward(low)
        return low

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (low,) = ctx.saved_tensors
        p = xp.matmul(_mT(xp, low), g)
        p = 0.5 * (xp.tril(p) + xp.tril(p, -1))
        inv = xp.apply(Inv, low)
        s = xp.matmul(xp.matmul(_mT(xp, inv), p), inv)
        return 0.5 * (s + _mT(xp, s))


def from_triangle(a: np.ndarray, uplo: str) -> np.ndarray:
    """The symmetric matrix holding a's ``uplo`` triangle: the other triangle is never read
    (so a NaN there does not matter, as in LAPACK)."""
    tri = np.tril(a) if uplo == "L" else np.triu(a)
    return tri + np.swapaxes(np.tril(a, -1) if uplo == "L" else np.triu(a, 1), -1, -2)


class EighPacked(Function):
    """A = Q diag(w) Q^T, A symmetric (..., n, n) (only the ``uplo`` triangle is read);
    packed output (..., n + 1, n): row 0 holds w (ascending), rows 1.. hold Q.
    With E_ij = w_j - w_i (i != j) and K = (Q^T dQ - dQ^T Q) / 2:
    dA = Q (diag(dw) + K / E) Q^T  (infinite / NaN for repeated eigenvalues, as torch)"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, uplo="L"):
        w, q = converged(np.linalg.eigh, from_triangle(a, uplo), "linalg.eigh")
        out = np.concatenate([w[..., None, :], q], axis=-2)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (out,) = ctx.saved_tensors
        w, q = out[..., 0, :], out[..., 1:, :]
        gw, gq = g[..., 0, :], g[..., 1:, :]
        n = q.shape[-1]
        m = xp.matmul(_mT(xp, q), gq)
        k = 0.5 * (m - _mT(xp, m))
        e = w[..., None, :] - w[..., :, None] + _eye(n, q)  # (K's diagonal is 0)
        inner = k / e + _eye(n, q) * gw[..., None, :]
        return xp.matmul(xp.matmul(q, inner), _mT(xp, q)), None


class Eigvalsh(Function):
    """w = eigenvalues of symmetric A (..., n, n) -> (..., n).   dA = Q diag(dw) Q^T"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, uplo="L"):
        ctx.save_for_backward(a)
        ctx.uplo = uplo
        return converged(np.linalg.eigvalsh, from_triangle(a, uplo), "linalg.eigvalsh")

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (a,) = ctx.saved_tensors
        q = xp.apply(EighPacked, a, ctx.uplo)[..., 1:, :]
        return xp.matmul(q * g[..., None, :], _mT(xp, q)), None


def svd_split(packed, m: int, n: int, full: bool):
    """(U, S, Vh) from SvdPacked's output (arrays or Tensors)."""
    k = min(m, n)
    cu, rv = (m, n) if full else (k, k)
    u = packed[..., : m * cu].reshape(packed.shape[:-1] + (m, cu))
    s = packed[..., m * cu : m * cu + k]
    vh = packed[..., m * cu + k :].reshape(packed.shape[:-1] + (rv, n))
    return u, s, vh


class SvdPacked(Function):
    """A = U diag(S) Vh (..., m, n), k = min(m, n); packed output (..., |U| + k + |Vh|).
    With E_ij = S_j^2 - S_i^2 (i != j, 1 on the diagonal), J = U^T dU, K = Vh dVh^T
    (U, Vh, dU, dVh cut to k columns / rows when full_matrices):
    dA = U [((J - J^T) / E) S + S ((K - K^T) / E) + diag(dS)] Vh
         + (I - U U^T) dU S^-1 Vh + U S^-1 dVh (I - Vh^T Vh)"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, full_matrices=False):
        u, s, vh = converged(np.linalg.svd, a, "linalg.svd", full_matrices=full_matrices)
        batch = a.shape[:-2]
        flat = [x.reshape(batch + (x.shape[-2] * x.shape[-1],)) for x in (u, vh)]  # (0-size batch)
        out = np.concatenate([flat[0], s, flat[1]], axis=-1)
        ctx.save_for_backward(out)
        ctx.mnf = (a.shape[-2], a.shape[-1], full_matrices)
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (out,) = ctx.saved_tensors
        m, n, full = ctx.mnf
        k = min(m, n)
        u, s, vh = svd_split(out, m, n, full)
        gu, gs, gvh = svd_split(g, m, n, full)
        u, gu, vh, gvh = u[..., :k], gu[..., :k], vh[..., :k, :], gvh[..., :k, :]
        eye = _eye(k, s)
        j = xp.matmul(_mT(xp, u), gu)
        kk = xp.matmul(vh, _mT(xp, gvh))
        s2 = s * s
        e = s2[..., None, :] - s2[..., :, None] + eye
        inner = (j - _mT(xp, j)) / e * s[..., None, :] + s[..., :, None] * (kk - _mT(xp, kk)) / e
        inner = inner + eye * gs[..., None, :]
        ga = xp.matmul(xp.matmul(u, inner), vh)
        if m > k:
            gus = gu / s[..., None, :]
            ga = ga + xp.matmul(gus - xp.matmul(u, xp.matmul(_mT(xp, u), gus)), vh)
        if n > k:
            gvs = gvh / s[..., :, None]
            ga = ga + xp.matmul(u, gvs - xp.matmul(xp.matmul(gvs, _mT(xp, vh)), vh))
        return ga, None


class Svdvals(Function):
    """S = singular values of A (..., m, n) -> (..., min(m, n)).   dA = U diag(dS) Vh"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return converged(np.linalg.svd, a, "linalg.svd", compute_uv=False)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (a,) = ctx.saved_tensors
        m, n = a.shape[-2], a.shape[-1]
        u, _, vh = svd_split(xp.apply(SvdPacked, a, False), m, n, False)
        return xp.matmul(u * g[..., None, :], vh)


def _copyltu(x, xp):
    """The symmetric matrix with x's lower triangle (diagonal included)."""
    return xp.tril(x) + _mT(xp, xp.tril(x, -1))


class QrPacked(Function):
    """A = Q R (..., m, n), k = min(m, n); packed output (..., |Q| + |R|).
    For m >= n (reduced): M = R dR^T - dQ^T Q,  dA = (dQ + Q copyltu(M)) R^-T
    (copyltu: the symmetric matrix with M's lower triangle). For m < n, A = [X | Y],
    R = [U | V]: dY = Q dV, dX = the m >= n formula with dQ + Y dV^T and dU.
    Not differentiable for mode='r' (no Q) nor for mode='complete' with m > n (as torch)."""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, mode="reduced"):
        m, n = a.shape[-2:]
        if mode == "r":
            q, r = np.zeros(a.shape[:-2] + (m, 0), a.dtype), np.linalg.qr(a, mode="r")
        else:
            q, r = np.linalg.qr(a, mode=mode)
        batch = a.shape[:-2]
        flat = [x.reshape(batch + (x.shape[-2] * x.shape[-1],)) for x in (q, r)]  # (0-size batch)
        out = np.concatenate(flat, axis=-1)
        ctx.save_for_backward(out)
        ctx.shapes = (q.shape[-2:], r.shape[-2:], mode)
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (out,) = ctx.saved_tensors
        (qm, qk), (rk, rn), mode = ctx.shapes
        if mode == "r" or (mode == "complete" and qm > rn):
            raise RuntimeError(
                "The derivative of linalg.qr depends on Q, which is not computed when "
                "mode='r'; and it is not defined for mode='complete' with more rows than columns."
            )
        (q, r), (gq, gr) = _qr_split(out, qm, qk, rk, rn), _qr_split(g, qm, qk, rk, rn)
        if qm >= rn:
            return _qr_tall_grad(xp, q, r, gq, gr), None
        u, v, gu, gv = r[..., :qm], r[..., qm:], gr[..., :qm], gr[..., qm:]
        y = xp.matmul(q, v)
        gx = _qr_tall_grad(xp, q, u, gq + xp.matmul(y, _mT(xp, gv)), gu)
        return xp.concatenate([gx, xp.matmul(q, gv)], axis=-1), None


def _qr_split(t, qm, qk, rk, rn):
    """(Q, R) from QrPacked's output (arrays or Tensors)."""
    q = t[..., : qm * qk].reshape(t.shape[:-1] + (qm, qk))
    return q, t[..., qm * qk :].reshape(t.shape[:-1] + (rk, rn))


def _qr_tall_grad(xp, q, r, gq, gr):
    m = xp.matmul(r, _mT(xp, gr)) - xp.matmul(_mT(xp, gq), q)
    b = gq + xp.matmul(q, _copyltu(m, xp))
    return xp.matmul(b, _mT(xp, xp.apply(Inv, r)))


class Pinv(Function):
    """X = A^+ (..., m, n) -> (..., n, m), from the SVD (NaN for a matrix with an inf, where
    torch returns a finite matrix), dropping singular values
    <= max(atol, rtol * S_max); ``hermitian``: from A's lower triangle only.
    dA = -X^T dX X^T + (I - A X) dX^T X X^T + X^T X dX^T (I - X A)"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, atol=0.0, rtol=None, hermitian=False):
        m, n = a.shape[-2:]
        if rtol is None:
            rtol = np.finfo(a.dtype).eps * max(m, n) if not atol else 0.0
        sym = from_triangle(a, "L") if hermitian else a  # (hermitian: lower triangle only)
        u, s, vh = converged(np.linalg.svd, sym, "linalg.svd", full_matrices=False)
        smax = s.max(axis=-1, keepdims=True) if s.size else s
        keep = s > np.maximum(atol, rtol * smax)
        sinv = np.where(keep, 1 / np.where(keep, s, 1), 0).astype(a.dtype)
        x = np.matmul(np.swapaxes(vh, -1, -2) * sinv[..., None, :], np.swapaxes(u, -1, -2))
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        a, x = ctx.saved_tensors
        xt, gt = _mT(xp, x), _mT(xp, g)
        first = -xp.matmul(xp.matmul(xt, g), xt)
        left = gt - xp.matmul(a, xp.matmul(x, gt))  # (I - A X) dX^T
        right = gt - xp.matmul(xp.matmul(gt, x), a)  # dX^T (I - X A)
        ga = first + xp.matmul(left, xp.matmul(x, xt)) + xp.matmul(xp.matmul(xt, x), right)
        return ga, None, None, None


# Padé coefficients b_0..b_13 of the [13/13] approximant of exp, and the 1-norm bounds
# below which the lower-degree approximants suffice (Higham 2005, "The scaling and
# squaring method for the matrix exponential revisited").
_PADE13 = (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
    129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
    40840800.0, 960960.0, 16380.0, 182.0, 1.0,
)  # fmt: skip
_THETA13 = 5.371920351148152


def _expm(a: np.ndarray) -> np.ndarray:
    """exp(A) by scaling and squaring with the [13/13] Padé approximant (batched)."""
    if a.size == 0:
        return a.copy()
    work = a.astype(np.float64)
    norm = np.abs(work).sum(axis=-2).max(axis=-1)  # the 1-norm of each matrix
    finite = np.isfinite(norm)
    safe = np.where(finite, norm, 0.0)
    s = np.maximum(0, np.ceil(np.log2(np.maximum(safe, 1e-300) / _THETA13))).astype(int)
    work = work / (2.0**s)[..., None, None]
    b, eye = _PADE13, np.eye(a.shape[-1])
    a2 = work @ work
    a4, a6 = a2 @ a2, a2 @ a2 @ a2
    u = work @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4
                + b[3] * a2 + b[1] * eye)  # fmt: skip
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    out = np.linalg.solve(v - u, v + u)
    for i in range(int(s.max(initial=0))):
        out = np.where((s > i)[..., None, None], out @ out, out)
    out = np.where(finite[..., None, None], out, np.nan)
    return out.astype(a.dtype)


class MatrixExp(Function):
    """Y = exp(A) (..., n, n).   dA = top-right block of exp([[A^T, dY], [0, A^T]])"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _expm(a)

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (a,) = ctx.saved_tensors
        n = a.shape[-1]
        at = _mT(xp, a)
        zeros = xp.zeros_like(at)
        block = xp.concatenate(
            [xp.concatenate([at, g], axis=-1), xp.concatenate([zeros, at], axis=-1)], axis=-2
        )
        return xp.apply(MatrixExp, block)[..., :n, n:]
