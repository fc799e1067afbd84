"""The orthogonal parametrization behind ``parametrizations.orthogonal`` (torch's three maps).

A weight ``(..., n, k)`` (transposed first when ``n < k``) is made orthonormal-columned:

* ``matrix_exp``: ``Q = exp(A)`` with ``A = L - L^T`` skew-symmetric, ``L = tril(X)``;
* ``cayley``:    ``Q = (I - A/2)^{-1} (I + A/2)``;
* ``householder``: ``Q = H_1 ... H_k [:, :k]``, ``H_i = I - tau_i v_i v_i^T`` with
  ``v_i = e_i + (strict lower part of column i of X)``, ``tau_i = 2 / ||v_i||^2``.

With the default trivialization, ``Q`` is further multiplied on the left by an
orthogonal buffer ``base``, set by ``right_inverse``: assigning an orthogonal matrix
stores it in ``base`` and resets ``X`` to the point that maps to the identity.
Every map is a composition of differentiable tinyattn ops.
"""

from __future__ import annotations

import numpy as np

from ...autograd.grad_mode import no_grad
from ...linalg import solve
from ...ops.creation.factories import eye, tensor, zeros, zeros_like
from ...ops.linalg.api import matrix_exp
from ...ops.shape.rearrange import cat
from ...tensor_api.tensor import Tensor
from ..modules.module import Module

MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(Q: Tensor) -> bool:
    """``Q^T Q == I`` up to ``10 n eps`` (torch's test)."""
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10.0 * n * float(np.finfo(Q._data.dtype).eps)
    gram = np.swapaxes(Q._data, -1, -2) @ Q._data
    return bool(np.allclose(gram, np.eye(k), rtol=1e-5, atol=eps))


def _make_orthogonal(A: Tensor) -> Tensor:
    """The ``Q`` of ``A = QR`` with ``diag(R) >= 0`` (unique for full-rank ``A``); no gradient."""
    q, r = np.linalg.qr(A._data)
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    return tensor(q * signs[..., None, :], dtype=A.dtype)


def _householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """``(H_1 H_2 ... H_k)[..., :k]``, ``H_i = I - tau_i v_i v_i^T``, ``v_i = e_i + A[..., :, i]``.

    ``A`` is ``(..., n, k)`` with zeros on and above the diagonal. Gradients flow
    through the matrix products: each step is ``Q <- Q - tau_i (Q v_i) v_i^T``.
    """
    n, k = A.shape[-2], A.shape[-1]
    identity = eye(n, dtype=A.dtype)
    Q = identity.expand(*A.shape[:-2], n, n)
    for i in range(k):
        v = (A.select(-1, i) + identity[i]).unsqueeze(-1)
        Q = Q - tau.select(-1, i).unsqueeze(-1).unsqueeze(-1) * ((Q @ v) @ v.mT)
    return Q[..., :k]


class _Orthogonal(Module):
    """``weight = base @ Q(X)`` (or ``Q(X)`` without trivialization), ``Q`` one of :data:`MAPS`."""

    def __init__(
        self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True
    ) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                X = cat([X, zeros(*X.shape[:-2], n, n - k, dtype=X.dtype)], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == "matrix_exp":
                Q = matrix_exp(A)
            else:
                identity = eye(n, dtype=A.dtype)
                Q = solve(identity - 0.5 * A, identity + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).trunc().unsqueeze(-2)  # torch's .int(): +-1
        if "base" in self._buffers:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        """Store an orthogonal ``base`` spanning ``Q`` and return the ``X`` that maps to ``Q``."""
        if Q.shape != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape {Q.shape}."
            )
        with no_grad():
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in ("matrix_exp", "cayley"):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential "
                        "or the Cayley parametrizations when use_trivialization=False."
                    )
                return self._householder_inverse(Q, transpose)
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                extra = tensor(
                    np.random.default_rng().standard_normal((*Q.shape[:-2], n, n - k)),
                    dtype=Q.dtype,
                )
                Q = _make_orthogonal(cat([Q, extra], dim=-1))
            self.base = Q
            neg_identity = zeros_like(Q_init)
            diag = np.arange(k)  # k = min of the two matrix dims
            neg_identity._data[..., diag, diag] = -1.0
            return neg_identity

    @staticmethod
    def _householder_inverse(Q: Tensor, transpose: bool) -> Tensor:
        """Householder reflectors of ``Q`` (LAPACK's geqrf storage) with ``sign(diag)`` on the diagonal."""
        reflectors = []
        for matrix in Q._data.reshape(-1, *Q.shape[-2:]):
            a = matrix.copy()
            k = a.shape[1]
            for i in range(k):
                x = a[i:, i].copy()
                alpha = x[0]
                if not np.any(x[1:]):  # nothing to reflect: LAPACK's tau = 0, torch flips the sign
                    a[i, i] = -np.sign(alpha)
                    continue
                beta = -np.copysign(np.linalg.norm(x), alpha)
                v = x / (alpha - beta)
                v[0] = 1.0
                tau = (beta - alpha) / beta
                a[i:, i + 1 :] -= tau * np.outer(v, v @ a[i:, i + 1 :])
                a[i + 1 :, i] = v[1:]
                a[i, i] = np.sign(beta)
            reflectors.append(a)
        X = tensor(np.stack(reflectors).reshape(Q.shape), dtype=Q.dtype)
        return X.mT if transpose else X
