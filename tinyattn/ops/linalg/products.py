"""More of torch's products, built from matmul, einsum, broadcasting and norms: trace,
diagflat, kron, tensordot, mv, vdot, chain_matmul, matrix_power, block_diag,
cartesian_prod, combinations, cdist, dist, cov, corrcoef.

Each composes differentiable ops, so its gradient is theirs (named in its docstring).
"""

from __future__ import annotations

import builtins
import itertools
import numbers

import numpy as np

from ...core import _dtype as dt
from ...core.tensor import Tensor
from ...foundations.type_names import type_name
from ..elementwise.arithmetic import where
from ..reduce.reduction import norm, sum
from ..shape.rearrange import cat, diag, diagonal, meshgrid, stack
from ..shape.views import reshape, unsqueeze
from .matmul import dot, einsum, inner, matmul, mm, outer

__all__ = [
    "inner",
    "trace",
    "diagflat",
    "kron",
    "tensordot",
    "mv",
    "ger",
    "vdot",
    "chain_matmul",
    "matrix_power",
    "block_diag",
    "cartesian_prod",
    "combinations",
    "cdist",
    "dist",
    "cov",
    "corrcoef",
]

ger = outer


def _need(x, ndim: int, op: str, name: str = "input", what: str = "") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type_name(x)}")
    if x.ndim != ndim:
        raise RuntimeError(
            f"{op}(): expected {name} to be {what or f'{ndim}-D'}, but got a tensor of shape "
            f"{list(x.shape)}"
        )


def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a 2-D tensor (integers sum as int64, as torch's sum).

    Composes: tinyattn.diagonal, tinyattn.sum
    """
    _need(input, 2, "trace", what="a matrix")
    return sum(diagonal(input))


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A 2-D tensor with ``input`` (flattened) on its ``offset``-th diagonal.

    Composes: tinyattn.diag, tinyattn.reshape
    """
    return diag(reshape(input, -1), offset)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product: ``out[i*n + k, ...] = input[i, ...] * other[k, ...]`` per dim
    (the shorter shape padded with leading 1s).

    Composes: tinyattn.reshape, tinyattn.mul (a broadcast product)
    """
    nd = max(input.ndim, other.ndim)
    a_shape = (1,) * (nd - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (nd - other.ndim) + tuple(other.shape)
    a = reshape(input, tuple(x for s in a_shape for x in (s, 1)))
    b = reshape(other, tuple(x for s in b_shape for x in (1, s)))
    return reshape(a * b, tuple(p * q for p, q in zip(a_shape, b_shape)))


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def tensordot(a: Tensor, b: Tensor, dims=2, out=None) -> Tensor:
    """Sum of products over ``dims``: an int ``n`` contracts the last ``n`` dims of ``a``
    with the first ``n`` of ``b``; a pair of lists names the dims of each.

    Composes: tinyattn.einsum
    """
    if out is not None:
        raise TypeError("tensordot(): out= is not supported")
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, numbers.Integral):
        if dims < 0 or dims > min(a.ndim, b.ndim):
            raise RuntimeError(
                f"tensordot(): dims must be in [0, {min(a.ndim, b.ndim)}] for shapes "
                f"{list(a.shape)} and {list(b.shape)}, got {dims}"
            )
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, numbers.Integral) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError(
            f"tensordot(): both dimension lists should have the same length, got {dims_a} "
            f"and {dims_b}"
        )
    dims_a = [int(d) % max(a.ndim, 1) for d in dims_a]
    dims_b = [int(d) % max(b.ndim, 1) for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(
                f"tensordot(): contracted dimensions need to match, but first has size "
                f"{a.shape[da]} in dim {da} (shape {list(a.shape)}) and second has size "
                f"{b.shape[db]} in dim {db} (shape {list(b.shape)})"
            )
    ta = list(_LETTERS[: a.ndim])
    tb = list(_LETTERS[a.ndim : a.ndim + b.ndim])
    for da, db in zip(dims_a, dims_b):
        tb[db] = ta[da]
    kept = [c for i, c in enumerate(ta) if i not in dims_a]
    kept += [c for i, c in enumerate(tb) if i not in dims_b]
    return einsum(f"{''.join(ta)},{''.join(tb)}->{''.join(kept)}", a, b)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product: (n, m) @ (m,) -> (n,).

    Composes: tinyattn.matmul
    """
    _need(input, 2, "mv", what="a matrix")
    _need(vec, 1, "mv", "vec", "a vector")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(
            f"mv(): size mismatch, got input {list(input.shape)}, vec {list(vec.shape)}"
        )
    return matmul(input, vec)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """``sum(conj(input) * other)`` of two 1-D tensors (real dtypes: no conjugation).

    Composes: tinyattn.dot, tinyattn.conj
    """
    return dot(input.conj(), other)


def chain_matmul(*matrices) -> Tensor:
    """``matrices[0] @ matrices[1] @ ...`` of 2-D tensors (torch's deprecated spelling of
    ``linalg.multi_dot``).

    Composes: tinyattn.mm
    """
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): expected one or more tensors to be multiplied")
    for i, m in enumerate(matrices):
        _need(m, 2, "chain_matmul", f"matrices[{i}]")
    out = matrices[0]
    for m in matrices[1:]:
        out = mm(out, m)
    return out if len(matrices) > 1 else out.clone()


def matrix_power(input: Tensor, n: int) -> Tensor:
    """``input`` (..., m, m) multiplied by itself ``n`` times (``n = 0``: the identity,
    batched; ``n < 0``: ``inverse(input)`` to the power ``-n``, as ``linalg.matrix_power``).

    Composes: tinyattn.matmul, tinyattn.where, tinyattn.linalg.inv
    """
    if input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError(
            f"matrix_power(): A must be batches of square matrices, but got shape "
            f"{list(input.shape)}"
        )
    if int(n) < 0:
        from .api import inv  # (linalg_api imports this module)

        input, n = inv(input), -int(n)
    if n == 0:
        eye = np.broadcast_to(np.eye(input.shape[-1], dtype=input._data.dtype), input.shape)
        never = Tensor._make(np.zeros((), np.bool_))
        return where(never, input, Tensor._make(eye.copy()))  # connected, with a 0 gradient
    result, base, k = None, input, int(n)
    while k:  # square-and-multiply: O(log n) products
        if k & 1:
            result = base if result is None else matmul(result, base)
        k >>= 1
        if k:
            base = matmul(base, base)
    return result if result is not input else input.clone()


def block_diag(*tensors) -> Tensor:
    """The tensors (0-D, 1-D as a row, or 2-D) on the diagonal of a zero matrix, in order;
    the result has their promoted dtype.

    Composes: tinyattn.cat
    """
    blocks = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"block_diag(): argument {i} must be Tensor, not {type_name(t)}")
        if t.ndim > 2:
            raise RuntimeError(
                f"block_diag(): Input tensors must have 2 or fewer dimensions. Input {i} has "
                f"{t.ndim} dimensions (shape {list(t.shape)})"
            )
        blocks.append(reshape(t, (1, -1) if t.ndim < 2 else tuple(t.shape)))
    dtype = (
        dt.result_type(*(b._data for b in blocks)) if blocks else dt.get_default_dtype().np_dtype
    )
    width = int(np.sum([b.shape[1] for b in blocks]))
    rows, left = [], 0
    for b in blocks:
        b = b.to(dt.from_numpy_dtype(np.dtype(dtype)))
        r, c = b.shape
        pad = [Tensor._make(np.zeros((r, n), dtype)) for n in (left, width - left - c)]
        rows.append(cat([pad[0], b, pad[1]], 1))
        left += c
    return cat(rows, 0) if rows else Tensor._make(np.zeros((1, 0), dtype))  # torch: (1, 0)


def cartesian_prod(*tensors) -> Tensor:
    """Rows of every combination of one element from each 1-D tensor, (prod n_i, k); one
    tensor comes back as it is.

    Composes: tinyattn.meshgrid, tinyattn.stack
    """
    for i, t in enumerate(tensors):
        _need(t, 1, "cartesian_prod", f"tensors[{i}]", "1-D")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, -1) for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Rows of the length-``r`` combinations of a 1-D tensor's elements (itertools order).

    Composes: Tensor.__getitem__
    """
    _need(input, 1, "combinations", what="a 1D vector")
    if int(r) < 0:
        raise RuntimeError(f"combinations(): Expect a non-negative number, but got {r}")
    if r == 0:  # torch: an empty 1-D tensor
        return input[:0]
    make = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(make(range(input.shape[0]), int(r))), dtype=np.int64).reshape(-1, r)
    return input[Tensor._make(idx)]


_COMPUTE_MODES = (
    "use_mm_for_euclid_dist_if_necessary",
    "use_mm_for_euclid_dist",
    "donot_use_mm_for_euclid_dist",
)


def cdist(
    x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"
) -> Tensor:
    """Pairwise p-norm distances: (..., P, M) and (..., R, M) -> (..., P, R),
    ``out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p`` (leading dims broadcast).
    ``compute_mode`` is checked but every mode computes the differences directly (torch's
    matrix-product shortcut for p = 2 only changes rounding).

    Composes: tinyattn.sub, tinyattn.norm (0 gradient at zero distance, as torch)
    """
    for name, x in (("x1", x1), ("x2", x2)):
        if not isinstance(x, Tensor) or x.ndim < 2:
            raise RuntimeError(
                f"cdist(): {name} only supports at least 2D tensors, got shape "
                f"{list(getattr(x, 'shape', []))}"
            )
        if not x.dtype.is_floating_point:
            raise RuntimeError(
                f"cdist(): only supports floating-point dtypes, {name} got {x.dtype.name}"
            )
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"cdist(): X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
            f"(shape {list(x1.shape)}) X2: {x2.shape[-1]} (shape {list(x2.shape)})"
        )
    if p < 0:
        raise RuntimeError(f"cdist(): only supports non-negative p values, got {p}")
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.shape[-1] == 0:
        p = 2.0  # no coordinates: every distance is 0 (the inf norm of nothing has no value)
    return norm(unsqueeze(x1, -2) - unsqueeze(x2, -3), p, -1)


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """``||input - other||_p`` over all elements (shapes broadcast).

    Composes: tinyattn.sub, tinyattn.norm
    """
    return norm(input - other, p)


def _weights(w, n: int, name: str, integer: bool):
    if w is None:
        return None
    _need(w, 1, "cov", name, "a 1-D tensor")
    if w.shape[0] != n:
        raise RuntimeError(
            f"cov(): expected {name} to have the same numel as there are observations in "
            f"the input ({n}), but got {w.shape[0]}"
        )
    if integer and w.dtype.is_floating_point:
        raise RuntimeError(f"cov(): expected fweights to have integral dtype, got {w.dtype.name}")
    if w.numel() and float(w.min().item()) < 0:
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w


def cov(input: Tensor, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    """Covariance of the rows (variables) over the columns (observations) of a 1-D or 2-D
    tensor: ``sum_k w_k (x_ik - mean_i)(x_jk - mean_j) / (sum w - correction * sum(w a)/sum w)``,
    ``w = fweights * aweights`` (frequency and importance weights, optional).

    Composes: tinyattn.matmul, tinyattn.mean
    """
    if not isinstance(input, Tensor) or input.ndim > 2:
        raise RuntimeError(
            f"cov(): expected input to have two or fewer dimensions but got shape "
            f"{list(getattr(input, 'shape', []))}"
        )
    x = reshape(input, (1, -1)) if input.ndim < 2 else input
    if not x.dtype.is_floating_point:
        x = x.to(dt.get_default_dtype())
    if isinstance(aweights, Tensor) and aweights.dtype.is_floating_point:
        # torch computes in the promoted dtype (float32 input, float64 aweights -> float64)
        x = x.to(dt.from_numpy_dtype(dt._promote_same_rank([x._data.dtype, aweights._data.dtype])))
    n = x.shape[1]
    fw = _weights(fweights, n, "fweights", True)
    aw = _weights(aweights, n, "aweights", False)
    w = fw if aw is None else (aw if fw is None else fw * aw)
    if w is None:
        total = float(n)
        avg = x.mean(1, keepdim=True)
        norm_factor = total - correction
    else:
        w = w.to(x.dtype)
        total = w.sum()
        avg = (x * w).sum(1, keepdim=True) / total
        norm_factor = total - correction * (
            (w * aw.to(x.dtype)).sum() / total if aw is not None else 1
        )
    centred = x - avg
    weighted = centred if w is None else centred * w
    products = matmul(weighted, centred.t())
    if w is None:
        out = products / builtins.max(norm_factor, 0)
    else:
        out = products / norm_factor.clamp(min=0)
    return reshape(out, ()) if x.shape[0] == 1 else out  # one variable: 0-D, as torch


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation of the rows: ``cov[i, j] / sqrt(cov[i, i] cov[j, j])``, clipped
    to [-1, 1].

    Composes: tinyattn.cov, tinyattn.sqrt, tinyattn.clamp
    """
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = diagonal(c)
    std = d.sqrt()
    return (c / unsqueeze(std, 1) / unsqueeze(std, 0)).clamp(-1, 1)
