"""Scaled matrix-vector updates and row renormalisation: addmv, addr, renorm (+ in-place).

Each composes differentiable ops (mv, outer, norm, where, mul), so its gradient, and its
second derivative, follow from theirs; the docstrings give the resulting formulas.
"""

from __future__ import annotations

import numbers

from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from .._util import normalize_dim
from ..elementwise.arithmetic import _tensor, where
from ..inplace import check_inplace_allowed
from ..reduce.reduction import norm
from .matmul import _add_scaled, outer
from .products import mv

__all__ = ["addmv", "addmv_", "addr", "addr_", "renorm", "renorm_"]


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``.

    Parameters
    ----------
    input : Tensor
        Broadcastable to (n,).
    mat : Tensor
        (n, m).
    vec : Tensor
        (m,).

    Returns
    -------
    Tensor
        (n,). With ``beta = 0`` the input is ignored (its NaNs do not propagate).

    Gradient: ``d input = beta * g``, ``d mat = alpha * outer(g, vec)``,
    ``d vec = alpha * mat^T @ g``.   Composes: mv, mul, add
    """
    _tensor(input, "addmv")
    if not isinstance(mat, Tensor) or not isinstance(vec, Tensor):
        raise TypeError(
            f"addmv(): arguments 'mat' and 'vec' must be Tensors, got {type_name(mat)} and "
            f"{type_name(vec)}"
        )
    return _add_scaled(input, mv(mat, vec), beta, alpha, "addmv")


def addmv_(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """In-place :func:`addmv` (``input`` must already have the result's shape (n,))."""
    check_inplace_allowed(input, "addmv_")
    return input.copy_(addmv(input, mat, vec, beta=beta, alpha=alpha))


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``.

    Parameters
    ----------
    input : Tensor
        Broadcastable to (n, m).
    vec1 : Tensor
        (n,).
    vec2 : Tensor
        (m,).

    Returns
    -------
    Tensor
        (n, m). With ``beta = 0`` the input is ignored (its NaNs do not propagate).

    Gradient: ``d input = beta * g``, ``d vec1 = alpha * g @ vec2``,
    ``d vec2 = alpha * g^T @ vec1``.   Composes: outer, mul, add
    """
    _tensor(input, "addr")
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if not isinstance(v, Tensor):
            raise TypeError(f"addr(): argument '{name}' must be a Tensor, not {type_name(v)}")
        if v.ndim != 1:
            raise RuntimeError(
                f"addr: Expected 1-D argument {name}, but got {v.ndim}-D (shape {list(v.shape)})"
            )
    return _add_scaled(input, outer(vec1, vec2), beta, alpha, "addr")


def addr_(self: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """In-place :func:`addr` (``self`` must already have the result's shape (n, m))."""
    check_inplace_allowed(self, "addr_")
    return self.copy_(addr(self, vec1, vec2, beta=beta, alpha=alpha))


def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Rescale each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` to
    norm ``maxnorm`` (the others are unchanged).

    ``out = input * f``, ``f = maxnorm / (norm + 1e-7)`` where ``norm > maxnorm``, else 1,
    ``norm`` the ``p``-norm over every dim but ``dim`` (shape (..., 1, k, 1, ...)).

    Parameters
    ----------
    input : Tensor
        Floating, at least 2-D.
    p : float
        The norm's order, > 0 (``inf`` allowed).
    dim : int
        The dim indexing the slices.
    maxnorm : float
        >= 0.

    Returns
    -------
    Tensor
        ``input``'s shape and dtype.

    Gradient: ``d input = g * f + input * (df/dnorm) * d norm/d input`` summed over each
    slice, where ``norm > maxnorm`` (the second term is 0 elsewhere).
    Composes: norm, where, div, mul
    """
    x = _tensor(input, "renorm")
    if x.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {x.ndim} dimensions")
    if not isinstance(p, numbers.Real) or isinstance(p, bool) or not p > 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported, got p={p!r}")
    if not isinstance(maxnorm, numbers.Real) or not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm!r}")
    if x._data.dtype.kind != "f":
        raise RuntimeError(
            f"renorm: expected a floating point tensor as input, got {x.dtype} (as torch)"
        )
    d = normalize_dim(dim, x.ndim, "renorm")
    others = tuple(i for i in range(x.ndim) if i != d)
    norms = norm(x, p, dim=others, keepdim=True)
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return x * factor


def renorm_(self: Tensor, p, dim: int, maxnorm) -> Tensor:
    """In-place :func:`renorm`.

    Computed on a clone: the norm keeps its input for backward, which the write would
    overwrite (the clone passes the gradient straight through).
    """
    check_inplace_allowed(self, "renorm_")
    return self.copy_(renorm(self.clone(), p, dim, maxnorm))
