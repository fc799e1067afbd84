"""Torch's older top-level matrix functions: ``cholesky_solve``, ``cholesky_inverse``,
``triangular_solve``, ``nuclear_norm``, ``frobenius_norm``, the Householder trio
``geqrf`` / ``orgqr`` / ``ormqr``, and the functions torch removed in 1.9 (``solve``,
``lstsq``, ``eig``, ``symeig``, ``matrix_rank``), which raise torch's RuntimeError
pointing to ``torch.linalg``. LU is in ``ops/linalg/lu.py``.

Shapes: matrices are ``(..., m, n)``, batched over the leading dims (broadcast where
torch broadcasts them).
"""

from __future__ import annotations

import numbers

import numpy as np

from ...core.function import Function
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import gradient_doc
from ..reduce.reduction import norm as _vector_norm
from . import decompositions as D
from .api import _const, _tuple, matrix_norm, solve_triangular
from .lu import _warn_once
from .matmul import matmul

__all__ = [
    "cholesky_solve", "cholesky_inverse", "triangular_solve", "nuclear_norm",
    "frobenius_norm", "geqrf", "orgqr", "ormqr", "solve", "lstsq", "eig", "symeig",
    "matrix_rank",
]  # fmt: skip

triangular_solve_return = _tuple("triangular_solve", "solution cloned_coefficient")
geqrf_return = _tuple("geqrf", "a tau")


def _triangle(l_data: np.ndarray, upper: bool) -> np.ndarray:
    """The lower factor L of A = L L^T read from the given triangle (U^T when ``upper``)."""
    return np.swapaxes(np.triu(l_data), -1, -2) if upper else np.tril(l_data)


class CholeskySolve(Function):
    """X = (L L^T)^-1 B with L (..., n, n) lower triangular (A = U^T U, U upper, when
    ``upper``; only that triangle is read), B (..., n, k); batch dims broadcast.
    dB = (L L^T)^-1 dX,  C = dB X^T + X dB^T,  dL = -C L  (upper: dU = -U C), as torch
    (the formula is applied to the whole argument: its other triangle gets a gradient too)."""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, b, l_factor, upper=False):
        low = _triangle(l_factor, upper)
        batch = np.broadcast_shapes(low.shape[:-2], b.shape[:-2])
        low = np.broadcast_to(low, batch + low.shape[-2:])
        try:  # L y = b, then L^T x = y (forming L L^T would square the condition number)
            y = np.linalg.solve(low, np.broadcast_to(b, batch + b.shape[-2:]))
            x = np.linalg.solve(np.swapaxes(low, -1, -2), y)
        except np.linalg.LinAlgError:
            raise D.LinAlgError(
                f"cholesky_solve: the factor of shape {list(l_factor.shape)} is singular"
            ) from None
        ctx.save_for_backward(l_factor, x)
        ctx.upper = upper
        return x

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        l_factor, x = ctx.saved_tensors
        gb = xp.apply(CholeskySolve, g, l_factor, ctx.upper)
        if not ctx.needs_input_grad[1]:
            return gb, None, None
        c = xp.matmul(gb, D._mT(xp, x))
        c = c + D._mT(xp, c)
        gl = -xp.matmul(l_factor, c) if ctx.upper else -xp.matmul(c, l_factor)
        return gb, gl, None


def _same_dtype(b: Tensor, A: Tensor) -> None:
    if b._data.dtype != A._data.dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type {b.dtype} and A "
            f"of type {A.dtype} instead."
        )


@gradient_doc(CholeskySolve)
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """X with ``A X = B`` for B = ``input`` (..., n, k) and A = L L^T given by its Cholesky
    factor L = ``input2`` (..., n, n) (A = U^T U when ``upper``); batch dims broadcast.
    """
    for name, t in (("input", input), ("input2", input2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"cholesky_solve(): argument '{name}' must be a Tensor")
    if input.ndim < 2:
        raise RuntimeError(
            f"b should have at least 2 dimensions, but has {input.ndim} dimensions instead"
        )
    if input2.ndim < 2:
        raise RuntimeError(
            f"u should have at least 2 dimensions, but has {input2.ndim} dimensions instead"
        )
    _same_dtype(input, input2)
    D.check_matrix(input2, "cholesky_solve", "A")
    if input.shape[-2] != input2.shape[-1]:
        raise RuntimeError(
            f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
            f"{input2.shape[-1]} by {input2.shape[-1]} but each b matrix is "
            f"{input.shape[-2]} by {input.shape[-1]}"
        )
    try:
        np.broadcast_shapes(tuple(input.shape[:-2]), tuple(input2.shape[:-2]))
    except ValueError:
        raise RuntimeError(
            f"cholesky_solve: the batch dimensions of b {list(input.shape)} and A "
            f"{list(input2.shape)} are not broadcastable"
        ) from None
    return CholeskySolve.apply(input, input2, bool(upper))


def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """(L L^T)^-1 (..., n, n) from the Cholesky factor L = ``input`` (U^T U when ``upper``).
    Gradient: ``CholeskySolve`` of the identity, C = A^-1 (dX + dX^T) A^-1,
    ``dL = -C L`` (``dU = -U C``)."""
    if not isinstance(input, Tensor):
        raise TypeError("cholesky_inverse(): argument 'input' must be a Tensor")
    if input.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    D.check_matrix(input, "cholesky_inverse")
    eye = _const(np.eye(input.shape[-1], dtype=input._data.dtype))
    return CholeskySolve.apply(eye, input, bool(upper))


def triangular_solve(
    input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
    unitriangular: bool = False,
):  # fmt: skip
    """``(solution, cloned_coefficient)``: X with ``op(T) X = b`` (b = ``input``
    (..., n, k)), T the upper (``upper``) or lower triangle of A (..., n, n) with a unit
    diagonal when ``unitriangular``, op(T) = T^T when ``transpose``; batch dims broadcast,
    and the copy of A is broadcast to them. Torch's deprecated spelling of
    ``linalg.solve_triangular`` (warns once). Gradient: ``db = op(T)^-T dX``,
    ``dA = -op(db X^T)`` restricted to T's triangle (composes solve_triangular, clone)."""
    _warn_once(
        "triangular_solve",
        "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular "
        "and will be removed in a future PyTorch release.",
    )
    for name, t in (("input", input), ("A", A)):
        if not isinstance(t, Tensor):
            raise TypeError(f"triangular_solve(): argument '{name}' must be a Tensor")
    if input.ndim < 2:
        raise RuntimeError(
            f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
            f"{input.ndim} dimensions instead"
        )
    if A.ndim < 2:
        raise RuntimeError(
            f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has "
            f"{A.ndim} dimensions instead"
        )
    _same_dtype(input, A)
    D.check_matrix(A, "triangular_solve")
    n = A.shape[-1]
    if input.shape[-2] != n:
        raise RuntimeError(
            f"Incompatible matrix sizes for triangular_solve: each A matrix is {n} by {n} but "
            f"each b matrix is {input.shape[-2]} by {input.shape[-1]}"
        )
    try:
        batch = np.broadcast_shapes(tuple(A.shape[:-2]), tuple(input.shape[:-2]))
    except ValueError:
        raise RuntimeError(
            f"triangular_solve: the batch dimensions of b {list(input.shape)} and A "
            f"{list(A.shape)} are not broadcastable"
        ) from None
    coefficient = A.mT if transpose else A
    x = solve_triangular(
        coefficient, input, upper=bool(upper) != bool(transpose), unitriangular=unitriangular
    )
    return triangular_solve_return(x, A.expand(*batch, n, n).clone())


def nuclear_norm(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Sum of the singular values over ``dim`` (two dims, default the last two):
    ``nuclear_norm(A, keepdim=False)`` or ``nuclear_norm(A, dim, keepdim=False)``.
    Gradient: ``dA = U diag(g) Vh`` (composes ``linalg.matrix_norm(A, 'nuc')``)."""
    if isinstance(dim, bool):  # torch's overload nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


def frobenius_norm(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``sqrt(sum x^2)`` over ``dim`` (one or two dims). Gradient: ``dx = g x / norm``."""
    if not isinstance(input, Tensor):
        raise TypeError("frobenius_norm(): argument 'input' must be a Tensor")
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(
            f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead."
        )
    if input._data.dtype.kind != "f":
        raise RuntimeError(
            "norm(): input dtype should be either floating point or complex. "
            f"Got {input.dtype.name.capitalize()} instead."
        )
    return _vector_norm(input, 2, dims, keepdim)


# -- Householder reflectors ---------------------------------------------------------------------
def geqrf(input: Tensor):
    """``(a, tau)``: LAPACK's geqrf QR of A (..., m, n): R in a's upper triangle, the
    Householder vectors v_i below its diagonal (v_i[i] = 1 implied), tau (..., min(m, n)),
    so Q = H_1 ... H_k with H_i = I - tau_i v_i v_i^T. Not differentiable (as torch, whose
    backward raises; here the outputs do not require grad)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"geqrf(): argument 'input' must be a Tensor, not {type_name(input)}")
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    D.check_matrix(input, "torch.geqrf", square=False)
    h, tau = np.linalg.qr(input._data, mode="raw")  # (h is a^T, LAPACK's column-major a)
    dtype = input._data.dtype
    return geqrf_return(_const(np.swapaxes(h, -1, -2).astype(dtype)), _const(tau.astype(dtype)))


def _reflector(input: Tensor, i: int) -> Tensor:
    """v_i (..., m): e_i plus the entries of column i below the diagonal."""
    m = input.shape[-2]
    below = _const((np.arange(m) > i).astype(input._data.dtype))
    unit = _const((np.arange(m) == i).astype(input._data.dtype))
    return input[..., :, i] * below + unit


def _reflect(c: Tensor, v: Tensor, tau: Tensor, left: bool) -> Tensor:
    """H c (``left``) or c H, H = I - tau v v^T (v (..., m), tau (...))."""
    t = tau[..., None, None]
    if left:
        return c - t * matmul(v[..., :, None], matmul(v[..., None, :], c))
    return c - t * matmul(matmul(c, v[..., :, None]), v[..., None, :])


def _check_householder(input: Tensor, tau: Tensor, op: str) -> None:
    for name, t in (("input", input), ("tau", tau)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be a Tensor")
    D.check_matrix(input, op, "input", square=False)
    if tau._data.dtype != input._data.dtype:
        raise RuntimeError(f"{op}: tau dtype {tau.dtype} does not match input dtype {input.dtype}")
    if tau.ndim != input.ndim - 1 or tuple(tau.shape[:-1]) != tuple(input.shape[:-2]):
        raise RuntimeError(
            f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], "
            f"got tau {list(tau.shape)} and input {list(input.shape)}"
        )
    if input.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")


def orgqr(input: Tensor, input2: Tensor) -> Tensor:
    """The first n columns (..., m, n) of Q = H_1 ... H_k from geqrf's ``(a, tau)``, tau
    given as ``input2`` (torch's keyword) (``linalg.householder_product``); m >= n >= k.
    Gradient by composition: each ``H_i C = C - tau_i v_i (v_i^T C)`` is a differentiable
    product."""
    tau = input2
    _check_householder(input, tau, "torch.linalg.householder_product")
    m, n = input.shape[-2:]
    if m < n:
        raise RuntimeError(
            "torch.linalg.householder_product: input.shape[-2] must be greater than or "
            "equal to input.shape[-1]"
        )
    q = _const(np.broadcast_to(np.eye(m, n, dtype=input._data.dtype), input.shape).copy())
    for i in reversed(range(tau.shape[-1])):
        q = _reflect(q, _reflector(input, i), tau[..., i], left=True)
    return q


def ormqr(
    input: Tensor, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False,
) -> Tensor:  # fmt: skip
    """``op(Q) C`` (``left``) or ``C op(Q)``: C = ``input3``, Q = H_1 ... H_k (m, m) from
    geqrf's ``(a, tau)`` = (``input``, ``input2``), op(Q) = Q^T when ``transpose``.
    Gradient by composition of the reflections (see ``orgqr``)."""
    _check_householder(input, input2, "torch.ormqr")
    if not isinstance(input3, Tensor):
        raise TypeError("ormqr(): argument 'input3' must be a Tensor")
    m = input.shape[-2]
    along = -2 if left else -1
    side = "other.shape[-2]" if left else "other.shape[-1]"
    if input3.ndim < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    if input3.ndim != input.ndim:
        raise RuntimeError(
            f"torch.ormqr: Expected other to have the same number of dimensions as input, but "
            f"got other.ndim equal to {input3.ndim} and input.ndim is equal to {input.ndim}"
        )
    if input3.shape[along] != m:
        raise RuntimeError(f"torch.ormqr: {side} must be equal to input.shape[-2]")
    if input2.shape[-1] != min(input3.shape[along], input.shape[-1]):
        raise RuntimeError(
            f"torch.ormqr: tau.shape[-1] must be equal to min({side}, input.shape[-1])"
        )
    if input3._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"torch.ormqr: Expected input and other to have the same dtype, but got "
            f"{input.dtype} and {input3.dtype}"
        )
    order = list(range(input2.shape[-1]))
    if left != bool(transpose):  # Q C = H_1 (... (H_k C)); C Q^T = (C H_k) ... H_1
        order.reverse()
    out = input3
    for i in order:
        out = _reflect(out, _reflector(input, i), input2[..., i], left)
    return out


# -- removed in torch 1.9: torch 2.13 raises these errors, whatever the arguments --------------
_REMOVED = "This function was deprecated since version 1.9 and is now removed."


def matrix_rank(input, tol=None, symmetric=False):
    """Removed from torch: raises torch's RuntimeError (use ``linalg.matrix_rank``)."""
    raise RuntimeError(
        f"{_REMOVED}\nPlease use the `torch.linalg.matrix_rank` function instead. The "
        "parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'."
    )


def solve(input, A):
    """Removed from torch: raises torch's RuntimeError (use ``linalg.solve(A, B)``)."""
    raise RuntimeError(
        f"{_REMOVED} `torch.solve` is deprecated in favor of `torch.linalg.solve`. "
        "`torch.linalg.solve` has its arguments reversed and does not return the LU "
        "factorization.\n\nTo get the LU factorization see `torch.lu`, which can be used with "
        "`torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should be "
        "replaced with:\nX = torch.linalg.solve(A, B)"
    )


def lstsq(input, A):
    """Removed from torch: raises torch's RuntimeError (use ``linalg.lstsq(A, B)``)."""
    raise RuntimeError(
        f"{_REMOVED} `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
        "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition "
        "in the returned tuple (although it returns other information about the problem).\n\n"
        "To get the QR decomposition consider using `torch.linalg.qr`.\n\nThe returned "
        "solution in `torch.lstsq` stored the residuals of the solution in the last m - n "
        "columns of the returned value whenever m > n. In torch.linalg.lstsq, the residuals "
        "are in the field 'residuals' of the returned named tuple.\n\nThe unpacking of the "
        "solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced "
        "with:\nX = torch.linalg.lstsq(A, B).solution"
    )


def eig(input, eigenvectors=False):
    """Removed from torch: raises torch's RuntimeError (``linalg.eig`` is complex-valued,
    which tinyattn does not have; ``linalg.eigh`` for symmetric matrices)."""
    raise RuntimeError(
        f"{_REMOVED} `torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` "
        "rather than real tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be "
        "replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, "
        "eigenvectors=True) should be replaced with:\nL_complex, V_complex = torch.linalg.eig(A)"
    )


def symeig(input, eigenvectors=False, upper=True):
    """Removed from torch: raises torch's RuntimeError (use ``linalg.eigh``)."""
    raise RuntimeError(
        f"{_REMOVED} The default behavior has changed from using the upper triangular portion "
        "of the matrix by default to using the lower triangular portion.\n\nL, _ = "
        "torch.symeig(A, upper=upper) should be replaced with:\nL = torch.linalg.eigvalsh(A, "
        "UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should "
        "be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')"
    )
