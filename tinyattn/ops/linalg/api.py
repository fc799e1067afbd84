"""The public matrix functions of ``tinyattn.linalg`` and their top-level spellings
(``torch.det``, ``torch.inverse``, ``torch.svd`` ...): argument checks, then either one
``Function`` of ``ops/linalg/decompositions.py`` or a composition of differentiable ops.

Shapes: ``A`` is ``(..., m, n)`` (square where the op needs it), batched over the
leading dims. Gradient formulas are in the Functions' docstrings (appended here).
"""

from __future__ import annotations

import numbers
from collections import namedtuple

import numpy as np

from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import gradient_doc, normalize_dims
from ..elementwise.unary import abs as _abs
from ..reduce.reduction import amax, amin
from ..reduce.reduction import norm as _vector_norm
from ..reduce.reduction import sum as _sum
from . import decompositions as D
from .matmul import matmul
from .products import matrix_power as _matrix_power

__all__ = [
    "inv", "det", "slogdet", "solve", "matrix_norm", "norm", "vecdot", "multi_dot",
    "matrix_power", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv",
    "solve_triangular", "matrix_rank", "lstsq", "matrix_exp", "LinAlgError",
]  # fmt: skip

LinAlgError = D.LinAlgError


def _tuple(name: str, fields: str):
    cls = namedtuple(name, fields.split())
    cls.__module__ = "tinyattn.return_types"
    return cls


slogdet_return = _tuple("slogdet", "sign logabsdet")
eigh_return = _tuple("eigh", "eigenvalues eigenvectors")
svd_return = _tuple("svd", "U S Vh")
qr_return = _tuple("qr", "Q R")
lstsq_return = _tuple("lstsq", "solution residuals rank singular_values")


def _const(array: np.ndarray) -> Tensor:
    return Tensor._make(np.array(array, order="C"))


@gradient_doc(D.Inv)
def inv(A: Tensor) -> Tensor:
    """Inverse of square matrices (..., n, n); LinAlgError when singular."""
    D.check_matrix(A, "linalg.inv")
    return D.Inv.apply(A)


@gradient_doc(D.Det)
def det(A: Tensor) -> Tensor:
    """Determinant (..., n, n) -> (...)."""
    D.check_matrix(A, "linalg.det")
    return D.Det.apply(A)


@gradient_doc(D.LogAbsDet)
def slogdet(A: Tensor):
    """``(sign, logabsdet)`` of det(A), each (...); sign (1, -1 or 0) has no gradient."""
    D.check_matrix(A, "linalg.slogdet")
    with np.errstate(all="ignore"):
        sign, logabs = np.linalg.slogdet(A._data)
    sign = np.where(np.isnan(logabs), 0, sign).astype(A._data.dtype)  # (NaN / inf input, as torch)
    return slogdet_return(_const(sign), D.LogAbsDet.apply(A))


def _check_solve_b(A: Tensor, B: Tensor, op: str):
    if not isinstance(B, Tensor):
        raise TypeError(f"{op}(): argument 'B' must be a Tensor, not {type_name(B)}")
    if B._data.dtype != A._data.dtype:
        raise RuntimeError(
            f"{op}: Expected A and B to have the same dtype, but found A of type {A.dtype} "
            f"and B of type {B.dtype} instead"
        )
    if B.ndim == 0:
        raise RuntimeError(f"{op}: B must have at least 1 dimension, got shape []")


@gradient_doc(D.Solve)
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with ``A X = B`` (``X A = B`` when ``left=False``). A (..., n, n); B (..., n, k),
    or (..., n) / (n,) for a batch of vectors; batch dims broadcast."""
    D.check_matrix(A, "linalg.solve")
    _check_solve_b(A, B, "linalg.solve")
    n = A.shape[-1]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if left:
        rows = B.shape[-1] if vector else B.shape[-2]
    else:
        rows = B.shape[-1]
    if rows != n or (not left and vector):
        kb = f"{B.shape[-1]}x1" if vector else f"{B.shape[-2]}x{B.shape[-1]}"
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation {eq} "
            f"({n}x{n} and {kb}) (A {list(A.shape)}, B {list(B.shape)})"
        )
    batch_a, batch_b = A.shape[:-2], (B.shape[:-1] if vector else B.shape[:-2])
    try:
        np.broadcast_shapes(batch_a, batch_b)
    except ValueError:
        raise RuntimeError(
            f"linalg.solve: the batch dimensions of A {list(A.shape)} and B {list(B.shape)} "
            "are not broadcastable"
        ) from None
    if not left:
        return D.Solve.apply(A.mT, B.mT).mT
    if vector:
        return D.Solve.apply(A, B.unsqueeze(-1)).squeeze(-1)
    return D.Solve.apply(A, B)


def _check_ord_dim(A: Tensor, dim, op: str):
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument 'A' must be a Tensor, not {type_name(A)}")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    dims = normalize_dims(dim, A.ndim, op)
    if dims is None or len(dims) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {dim}")
    return [d % A.ndim for d in dim]


def matrix_norm(input: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):
    """Matrix norm over ``dim`` (two dims): 'fro', 'nuc' (sum of singular values), 2 / -2
    (largest / smallest singular value), 1 / -1 (max / min column abs-sum), inf / -inf
    (max / min row abs-sum). Composes: norm, svdvals, abs, sum, amax, amin."""
    A = input  # torch's keyword is ``input``; the math calls the matrix A
    d0, d1 = _check_ord_dim(A, dim, "linalg.matrix_norm")
    if ord not in ("fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf")):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if dtype is not None:
        A = A.to(dtype)
    if A._data.dtype.kind != "f":
        raise RuntimeError(
            f"linalg.matrix_norm: Expected a floating point tensor as input. Got {A.dtype}"
        )
    if ord == "fro":
        return _vector_norm(A, 2, (d0, d1), keepdim)
    x = A.movedim((d0, d1), (-2, -1))
    if ord in ("nuc", 2, -2):
        sums = svdvals(x)
    else:
        along = -2 if ord in (1, -1) else -1  # column sums for 1, row sums for inf
        sums = _sum(_abs(x), along)
    if ord == "nuc" or (ord > 0 and sums.shape[-1] == 0):  # (the max of none is 0, as torch)
        out = _sum(sums, -1)
    else:
        out = (amax if ord > 0 else amin)(sums, -1)
    if keepdim:
        for d in sorted((d0, d1)):
            out = out.unsqueeze(d)
    return out


def norm(input: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``vector_norm`` when ``dim`` is an int (or A is 1-D), ``matrix_norm`` when ``dim``
    is a 2-tuple (or A is 2-D and ``ord`` is given); the 2-norm of all elements when both
    ``ord`` and ``dim`` are None."""
    A = input  # torch's keyword is ``input``; the math calls the matrix A
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.norm(): argument 'A' must be a Tensor, not {type_name(A)}")
    matrix = isinstance(ord, str)  # 'fro' / 'nuc' are matrix norms whatever dim is
    if dim is not None:
        dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(
                f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}"
            )
        if len(dims) == 2 or matrix:  # (matrix_norm raises for one dim, as torch)
            return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
        return _vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return _vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim not in (1, 2):
        raise RuntimeError(
            "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
            f"Got {A.ndim}D (shape {list(A.shape)})."
        )
    if A.ndim == 2 or matrix:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    return _vector_norm(A, ord, None, keepdim, dtype=dtype)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """``sum(x * y, dim)`` (shapes broadcast). Composes: mul, sum."""
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg.vecdot(): argument '{name}' must be a Tensor")
    if x.shape[dim] != y.shape[dim]:
        raise RuntimeError(
            f"linalg.vecdot: x {list(x.shape)} and y {list(y.shape)} differ in size along "
            f"dim {dim} ({x.shape[dim]} vs {y.shape[dim]})"
        )
    return _sum(x * y, dim)


def multi_dot(tensors) -> Tensor:
    """``A_1 @ A_2 @ ... @ A_k``: 2-D matrices; the first may be a 1-D row vector and the
    last a 1-D column vector. Composes: matmul (left to right)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        edge = i in (0, len(tensors) - 1)
        if not isinstance(t, Tensor) or not (t.ndim == 2 or (edge and t.ndim == 1)):
            shape = list(t.shape) if isinstance(t, Tensor) else type_name(t)
            raise RuntimeError(
                f"multi_dot(): tensor {i} must be 2D (the first and last may be 1D), got {shape}"
            )
    out = tensors[0]
    for t in tensors[1:]:
        out = matmul(out, t)
    return out


def matrix_power(input: Tensor, n: int) -> Tensor:
    """``A^n`` for square A (..., m, m); ``n < 0``: ``inv(A)^-n``. Composes: matmul, inv."""
    A = input  # torch's keyword is ``input``; the math calls the matrix A
    D.check_matrix(A, "linalg.matrix_power")
    if int(n) < 0:
        return _matrix_power(inv(A), -int(n))
    return _matrix_power(A, int(n))


@gradient_doc(D.Cholesky)
def cholesky(input: Tensor, *, upper: bool = False) -> Tensor:
    """L (lower) with ``A = L L^T`` for symmetric positive-definite A (..., n, n), read from
    A's lower triangle; ``upper``: U with ``A = U^T U``, read from A's upper triangle.
    LinAlgError when A is not positive-definite."""
    A = input  # torch's keyword is ``input``; the math calls the matrix A
    D.check_matrix(A, "linalg.cholesky")
    if upper:  # U = L^T of the matrix read from A's upper triangle (as LAPACK's uplo='U')
        return D.Cholesky.apply(A.mT).mT
    return D.Cholesky.apply(A)


@gradient_doc(D.QrPacked)
def qr(A: Tensor, mode: str = "reduced"):
    """``(Q, R)`` with A = Q R, A (..., m, n), k = min(m, n): 'reduced' Q (m, k), R (k, n);
    'complete' Q (m, m), R (m, n); 'r' Q empty, R (k, n)."""
    D.check_matrix(A, "linalg.qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
            "(default), 'r', or 'complete'"
        )
    m, n = A.shape[-2:]
    k = min(m, n)
    qk, rk = (m, m) if mode == "complete" else (k, k)
    packed = D.QrPacked.apply(A, mode)
    batch = tuple(A.shape[:-2])
    r = packed[..., (m * qk if mode != "r" else 0) :].reshape(batch + (rk, n))
    if mode == "r":
        return qr_return(_const(np.zeros((0,), A._data.dtype)), r)
    return qr_return(packed[..., : m * qk].reshape(batch + (m, qk)), r)


def _check_uplo(UPLO: str, op: str) -> str:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO


@gradient_doc(D.EighPacked)
def eigh(input: Tensor, UPLO: str = "L"):
    """``(eigenvalues (..., n) ascending, eigenvectors (..., n, n))`` of symmetric A,
    read from its ``UPLO`` triangle."""
    A = input  # torch's keyword is ``input``; the math calls the matrix A
    D.check_matrix(A, "linalg.eigh")
    packed = D.EighPacked.apply(A, _check_uplo(UPLO, "linalg.eigh"))
    return eigh_return(packed[..., 0, :], packed[..., 1:, :])


@gradient_doc(D.Eigvalsh)
def eigvalsh(input: Tensor, UPLO: str = "L") -> Tensor:
    """Eigenvalues (..., n), ascending, of symmetric A (its ``UPLO`` triangle)."""
    A = input  # torch's keyword is ``input``; the math calls the matrix A
    D.check_matrix(A, "linalg.eigvalsh")
    return D.Eigvalsh.apply(A, _check_uplo(UPLO, "linalg.eigvalsh"))


@gradient_doc(D.SvdPacked)
def svd(A: Tensor, full_matrices: bool = True, *, driver=None):
    """``(U, S, Vh)`` with A = U diag(S) Vh, A (..., m, n), k = min(m, n): U (m, m) and
    Vh (n, n) when ``full_matrices``, else U (m, k), Vh (k, n); S (k,) descending.
    U and Vh are defined up to the signs of their columns / rows. ``driver`` must be None
    (torch takes it for CUDA inputs only)."""
    _check_no_driver(driver, "linalg.svd")
    D.check_matrix(A, "linalg.svd", square=False)
    m, n = A.shape[-2:]
    u, s, vh = D.svd_split(D.SvdPacked.apply(A, bool(full_matrices)), m, n, full_matrices)
    return svd_return(u, s, vh)


def _check_no_driver(driver, op: str) -> None:
    if driver is not None:
        raise RuntimeError(
            f"{op}: keyword argument `driver=` is only supported on CUDA inputs with "
            f"cuSOLVER backend (got driver={driver!r}; tinyattn runs on the CPU only)."
        )


@gradient_doc(D.Svdvals)
def svdvals(A: Tensor, *, driver=None) -> Tensor:
    """Singular values (..., min(m, n)), descending."""
    _check_no_driver(driver, "linalg.svdvals")
    D.check_matrix(A, "linalg.svdvals", square=False)
    return D.Svdvals.apply(A)


def _tolerances(atol, rtol):
    atol = 0.0 if atol is None else float(atol)
    return atol, (None if rtol is None else float(rtol))


@gradient_doc(D.Pinv)
def pinv(input: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """Moore-Penrose pseudo-inverse (..., n, m) of A (..., m, n); singular values
    <= max(atol, rtol * S_max) count as zero (rtol defaults to eps * max(m, n) when atol is
    not given, else to 0). ``hermitian``: A is symmetric and only its lower triangle is read
    (the gradient formula is evaluated at A as given, as torch's)."""
    A = input  # torch's keyword is ``input``; the math calls the matrix A
    D.check_matrix(A, "linalg.pinv", square=bool(hermitian))
    return D.Pinv.apply(A, *_tolerances(atol, rtol), bool(hermitian))


def solve_triangular(
    input: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Tensor:
    """X with ``T X = B`` (``X T = B`` when ``left=False``), T the upper (``upper``) or lower
    triangle of A (..., n, n), with a unit diagonal when ``unitriangular``; B (..., n, k)
    ((..., k, n) when ``left=False``). Only T's entries get a gradient.
    Composes: triu / tril, solve."""
    A = input  # torch's keyword is ``input``; the math calls the matrix A
    D.check_matrix(A, "linalg.solve_triangular")
    _check_solve_b(A, B, "linalg.solve_triangular")
    if B.ndim < 2:
        raise RuntimeError(
            f"linalg.solve_triangular: The input tensor B must have at least 2 dimensions "
            f"(got shape {list(B.shape)})."
        )
    k = 1 if unitriangular else 0
    t = A.triu(k) if upper else A.tril(-k)
    if unitriangular:
        t = t + _const(np.eye(A.shape[-1], dtype=A._data.dtype))
    return solve(t, B, left=left)


def matrix_rank(input: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """Number of singular values > max(atol, rtol * S_max) (int64, (...)); not differentiable.
    ``hermitian``: A is symmetric and only its lower triangle is read."""
    A = input  # torch's keyword is ``input``; the math calls the matrix A
    D.check_matrix(A, "linalg.matrix_rank", square=bool(hermitian))
    atol, rtol = _tolerances(atol, rtol)
    m, n = A.shape[-2:]
    if rtol is None:
        rtol = np.finfo(A._data.dtype).eps * max(m, n) if not atol else 0.0
    a = D.from_triangle(A._data, "L") if hermitian else A._data
    s = D.converged(np.linalg.svd, a, "linalg.matrix_rank", compute_uv=False)
    smax = s.max(axis=-1, keepdims=True) if s.size else s
    return _const(np.asarray((s > np.maximum(atol, rtol * smax)).sum(-1), dtype=np.int64))


def lstsq(input: Tensor, b: Tensor, rcond=None, *, driver=None):
    """Least squares ``argmin_X |A X - B|`` for A (..., m, n), B (..., m, k) or (..., m):
    the solution is ``pinv(A) @ B`` (differentiable), whatever the driver. The other
    fields follow torch's CPU drivers ('gelsy' by default): ``rank`` (...) unless 'gels';
    ``singular_values`` (..., min(m, n)) for 'gelsd' / 'gelss'; ``residuals`` (..., k),
    the squared column norms of A X - B, when m > n, the driver is not 'gelsy' and every
    A has full rank ('gels': always when m > n); empty otherwise.
    Composes: pinv, matmul, sum."""
    A = input  # torch's keyword is ``input``; the math calls the matrix A
    B = b
    D.check_matrix(A, "linalg.lstsq", square=False)
    _check_solve_b(A, B, "linalg.lstsq")
    driver = "gelsy" if driver is None else driver
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(
            "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, "
            f"gelss), got {driver!r}"
        )
    if not 0 <= A.ndim - B.ndim <= 1:
        raise RuntimeError(
            "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
            f"(input.dim() - other.dim()) <= 1 (A {list(A.shape)}, B {list(B.shape)})"
        )
    vector = B.ndim == A.ndim - 1
    b = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2:]
    if b.shape[-2] != m:
        raise RuntimeError(
            f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) "
            f"(A {list(A.shape)}, B {list(B.shape)})"
        )
    p = pinv(A, rtol=rcond) if rcond is not None else pinv(A)
    x = matmul(p, b)
    empty = _const(np.zeros((0,), A._data.dtype))
    tol = {} if rcond is None else {"rtol": rcond}
    rank = matrix_rank(A, **tol) if driver != "gels" else _const(np.zeros((0,), np.int64))
    full = driver == "gels" or bool((rank._data == n).all())
    residuals = empty
    if m > n and driver != "gelsy" and full:
        residuals = _sum((matmul(A, x) - b) ** 2, -2)
    sv = _const(D.Svdvals.apply(A)._data) if driver in ("gelsd", "gelss") else empty
    return lstsq_return(x.squeeze(-1) if vector else x, residuals, rank, sv)


@gradient_doc(D.MatrixExp)
def matrix_exp(input: Tensor) -> Tensor:
    """exp(A) = sum_k A^k / k! of square A (..., n, n) (scaling and squaring, [13/13] Padé)."""
    A = input  # torch's keyword is ``input``; the math calls the matrix A
    D.check_matrix(A, "linalg.matrix_exp")
    return D.MatrixExp.apply(A)
