"""LU factorization with partial pivoting: ``torch.lu``, ``torch.lu_unpack``,
``torch.lu_solve`` (torch's older spellings of ``linalg.lu_factor`` and friends).

``A = P L U`` for A (..., m, n), k = min(m, n): P (..., m, m) a permutation, L (..., m, k)
unit lower triangular, U (..., k, n) upper triangular. L and U are stored packed in one
(..., m, n) matrix (L's unit diagonal implied); ``pivots`` (..., k) are LAPACK's 1-based
row swaps (row j was swapped with row ``pivots[j] - 1``, in order).
"""

from __future__ import annotations

import warnings

import numpy as np

from ...core.function import Function
from ...core.tensor import Tensor
from ...core.xp import numpy_xp
from ...foundations.type_names import type_name
from .._util import gradient_doc
from . import decompositions as D
from .api import _const, _tuple, solve_triangular
from .matmul import matmul

__all__ = ["lu", "lu_unpack", "lu_solve"]

lu_unpack_return = _tuple("lu_unpack", "P L U")
_WARNED: set[str] = set()


def _warn_once(key: str, text: str) -> None:
    """torch's deprecation notes come once per process (TORCH_WARN_ONCE)."""
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(text, UserWarning, stacklevel=3)


def lu_factor_numpy(a: np.ndarray):
    """Doolittle elimination with partial pivoting (the largest |entry| of each column, the
    first on ties, as LAPACK's getrf), batched. Returns ``(lu, pivots, info)``: lu as ``a``;
    pivots (..., k) int32, 1-based; info (...) int32, the 1-based index of the first zero
    pivot (0 when U is invertible). A zero pivot skips its column's scaling (as LAPACK)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    w = np.array(a, order="C").reshape((-1, m, n))
    pivots = np.zeros((w.shape[0], k), np.int32)
    info = np.zeros(w.shape[0], np.int32)
    rows = np.arange(w.shape[0])
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + np.argmax(np.abs(w[:, j:, j]), axis=1)
            pivots[:, j] = p + 1
            top = w[rows, j].copy()
            w[rows, j] = w[rows, p]
            w[rows, p] = top
            d = w[:, j, j]
            zero = d == 0
            info[zero & (info == 0)] = j + 1
            w[:, j + 1 :, j] = np.where(
                zero[:, None], w[:, j + 1 :, j], w[:, j + 1 :, j] / d[:, None]
            )
            w[:, j + 1 :, j + 1 :] -= w[:, j + 1 :, j, None] * w[:, j, None, j + 1 :]
    return w.reshape(a.shape), pivots.reshape(batch + (k,)), info.reshape(batch)


def permutation_matrix(pivots: np.ndarray, m: int, dtype) -> np.ndarray:
    """P (..., m, m) with ``A = P L U`` from 1-based row swaps (..., k)."""
    flat = pivots.reshape((-1, pivots.shape[-1])).astype(np.int64) - 1
    order = np.tile(np.arange(m), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        p = flat[:, j]
        top = order[rows, j].copy()
        order[rows, j] = order[rows, p]
        order[rows, p] = top
    perm = np.zeros((flat.shape[0], m, m), dtype)
    perm[rows[:, None], order, np.arange(m)[None, :]] = 1  # row order[i] of A is row i of L U
    return perm.reshape(pivots.shape[:-1] + (m, m))


def _solve_left(xp, a, b):
    """a^-1 b (differentiable under create_graph)."""
    return xp.apply(D.Solve, a, b)


def _square_grad(xp, low, up, g_low, g_up):
    """dA of A = L U (square): L^-T [tril(L^T dL, -1) + triu(dU U^T)] U^-T."""
    mt = D._mT
    inner = xp.tril(xp.matmul(mt(xp, low), g_low), -1) + xp.triu(xp.matmul(g_up, mt(xp, up)))
    left = _solve_left(xp, mt(xp, low), inner)  # L^-T inner
    return mt(xp, _solve_left(xp, up, mt(xp, left)))  # (U^-1 left^T)^T = left U^-T


class LuFactor(Function):
    """Packed LU of A = P L U (..., m, n), k = min(m, n); the factorization is computed by
    ``lu_factor_numpy`` and passed in with P (a constant). With dL = tril(dLU, -1),
    dU = triu(dLU) and phi(L, U, dL, dU) = L^-T [tril(L^T dL, -1) + triu(dU U^T)] U^-T:
    m = n: dA = P phi(L, U, dL, dU);
    m > n (L = [L1; L2]): dA = P [phi(L1, U, dL1, dU - L2^T dL2 U^-T); dL2 U^-T];
    m < n (U = [U1 | U2]): dA = P [phi(L, U1, dL - L^-T dU2 U2^T, dU1) | L^-T dU2]"""

    supports_create_graph = True

    @staticmethod
    def forward(ctx, a, lu, perm):
        ctx.save_for_backward(lu)
        ctx.perm = perm
        return lu

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        (lu,) = ctx.saved_tensors
        mt = D._mT
        m, n = lu.shape[-2:]
        k = min(m, n)
        eye = np.eye(m, k, dtype=D._dtype(lu))
        low, up = xp.tril(lu, -1)[..., :, :k] + eye, xp.triu(lu)[..., :k, :]
        g_low, g_up = xp.tril(g, -1)[..., :, :k], xp.triu(g)[..., :k, :]
        perm = ctx.perm if xp is numpy_xp else Tensor._make(ctx.perm)
        if m == n:
            return xp.matmul(perm, _square_grad(xp, low, up, g_low, g_up)), None, None
        if m > n:
            l1, l2, gl1, gl2 = (
                low[..., :k, :],
                low[..., k:, :],
                g_low[..., :k, :],
                g_low[..., k:, :],
            )
            gl2_ut = mt(xp, _solve_left(xp, up, mt(xp, gl2)))  # dL2 U^-T
            top = _square_grad(xp, l1, up, gl1, g_up - xp.matmul(mt(xp, l2), gl2_ut))
            return xp.matmul(perm, xp.concatenate([top, gl2_ut], axis=-2)), None, None
        u1, u2, gu1, gu2 = up[..., :k], up[..., k:], g_up[..., :k], g_up[..., k:]
        lt_gu2 = _solve_left(xp, mt(xp, low), gu2)  # L^-T dU2
        left = _square_grad(xp, low, u1, g_low - xp.matmul(lt_gu2, mt(xp, u2)), gu1)
        return xp.matmul(perm, xp.concatenate([left, lt_gu2], axis=-1)), None, None


@gradient_doc(LuFactor)
def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out=None):
    """``(A_LU, pivots)`` (``(A_LU, pivots, infos)`` with ``get_infos``): the packed LU
    factors (..., m, n) of A = P L U and the 1-based row swaps (..., min(m, n)) int32;
    infos (...) int32 is the index of the first zero pivot of U (0 if none). Torch's
    deprecated spelling of ``linalg.lu_factor`` (warns once, as torch). ``out``: a tuple of
    tensors the results are written into (and returned).
    """
    _warn_once(
        "lu",
        "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex "
        "and will be removed in a future PyTorch release.",
    )
    if not isinstance(A, Tensor):
        raise TypeError(f"lu(): argument 'A' must be a Tensor, not {type_name(A)}")
    if A.ndim < 2:
        raise RuntimeError(
            f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: "
            f"{list(A.shape)} instead"
        )
    if A._data.dtype.kind != "f":
        raise RuntimeError(f"\"lu_cpu\" not implemented for '{A.dtype.name.capitalize()}'")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu_data, pivots, info = lu_factor_numpy(A._data)
    perm = permutation_matrix(pivots, A.shape[-2], A._data.dtype)
    packed = LuFactor.apply(A, lu_data, perm)
    result = (packed, _const(pivots)) + ((_const(info),) if get_infos else ())
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"lu(): out must be a tuple of {len(result)} tensors, got {out!r}")
        return tuple(o.resize_(r.shape).copy_(r.detach()) for o, r in zip(out, result))
    return result


def _check_pivots(LU_data: Tensor, LU_pivots: Tensor, op: str) -> None:
    if not isinstance(LU_data, Tensor) or not isinstance(LU_pivots, Tensor):
        raise TypeError(f"{op}(): LU_data and LU_pivots must be Tensors")
    if LU_pivots._data.dtype != np.int32:
        raise RuntimeError(
            f"torch.{op}: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype."
            "\nNote: this function is intended to be used with the output produced by "
            "torch.linalg.lu_factor"
        )
    D.check_matrix(LU_data, op, "LU_data", square=False)
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    piv = LU_pivots._data
    if (
        tuple(piv.shape) != tuple(LU_data.shape[:-2]) + (k,)
        or (piv.size and (piv.min() < 1 or piv.max() > m))
    ):  # fmt: skip
        raise RuntimeError(
            f"pivots passed to {op} must be between 1 and LU.size(-2) inclusive.Did you "
            f"properly pass the result of lu_factor? (pivots {list(piv.shape)}, LU "
            f"{list(LU_data.shape)})"
        )


def lu_unpack(
    LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True
):
    """``(P, L, U)`` from packed LU factors (..., m, n): P (..., m, m) of LU's dtype,
    L = tril(LU, -1) + I (..., m, k), U = triu(LU) (..., k, n); a part not unpacked is an
    empty tensor. Gradient: ``d LU = tril(dL, -1) + triu(dU)`` (composes tril, triu)."""
    _check_pivots(LU_data, LU_pivots, "lu_unpack")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    dtype = LU_data._data.dtype
    empty = _const(np.zeros((0,), dtype))
    perm = _const(permutation_matrix(LU_pivots._data, m, dtype)) if unpack_pivots else empty
    if not unpack_data:
        return lu_unpack_return(perm, empty, empty)
    low = LU_data.tril(-1)[..., :, :k] + _const(np.eye(m, k, dtype=dtype))
    return lu_unpack_return(perm, low, LU_data.triu()[..., :k, :])


def lu_solve(input: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """X with ``A X = b`` for A = P L U given by ``lu``'s output (..., n, n); b = ``input``
    (..., n, k); batch dims broadcast. Composes: matmul (P^T b), then two triangular solves,
    so ``db = A^-T dX`` and ``d LU = tril(dL, -1) + triu(dU)`` of those solves."""
    b = input  # torch's keyword is ``input``
    _warn_once(
        "lu_solve",
        "torch.lu_solve is deprecated in favor of torch.linalg.lu_solve and will be removed "
        "in a future PyTorch release.",
    )
    _check_pivots(LU_data, LU_pivots, "lu_solve")
    if not isinstance(b, Tensor):
        raise TypeError(f"lu_solve(): argument 'b' must be a Tensor, not {type_name(b)}")
    D.check_matrix(LU_data, "linalg.lu_solve", "LU")
    if b.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    if b._data.dtype != LU_data._data.dtype:
        raise RuntimeError(
            f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
            f"{LU_data.dtype} and B of type {b.dtype} instead"
        )
    n = LU_data.shape[-1]
    if b.shape[-2] != n:
        raise RuntimeError(
            f"linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B "
            f"({n}x{n} and {b.shape[-2]}x{b.shape[-1]})"
        )
    perm = permutation_matrix(LU_pivots._data, n, b._data.dtype)
    y = matmul(_const(np.swapaxes(perm, -1, -2)), b)  # P^T b
    y = solve_triangular(LU_data, y, upper=False, unitriangular=True)
    return solve_triangular(LU_data, y, upper=True)
