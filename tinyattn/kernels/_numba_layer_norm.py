"""LayerNorm forward and backward over the rows of a 2-D array, parallel over rows.

The NumPy twin is the formula of ``tinyattn.nn.functional.LayerNormFunction``;
``tests/kernels/test_gelu_layer_norm_kernels.py`` holds the kernels to it. Per row of
``N`` numbers (the trailing normalized dims, flattened)::

    forward   mu = mean(x),  rstd = 1 / sqrt(mean((x - mu)^2) + eps),
              xhat = (x - mu) rstd,  y = xhat * weight + bias
    backward  g' = g * weight,
              dx = rstd (g' - mean(g') - xhat mean(g' xhat)),
              dweight = sum over rows of g xhat,  dbias = sum over rows of g

Sums, means and each element are computed in float64 and rounded once to the array's
dtype (two passes for the variance, no cancellation). ``mean`` and ``rstd`` are what the
forward saves for the backward, instead of ``xhat``: 2 numbers a row, not ``N``.
The backward's ``dweight``/``dbias`` are reduced here: ``ROWS_PER_BLOCK`` rows per
``prange`` iteration, each iteration adding into its own row of the float64 partial
sums ``dweight_parts``/``dbias_parts`` (the caller sums those rows), so the result does
not depend on the number of threads. Arrays are C-contiguous, of one dtype (the partial
sums float64), prepared and checked by ``tinyattn.kernels.gelu_layer_norm``; no
iteration allocates.
"""

from __future__ import annotations

import math

from numba import prange

from ._jit import njit

ROWS_PER_BLOCK = 32

_REDUCE = {"reassoc", "contract"}  # lets LLVM keep vector partial sums (fixed order per build)


@njit(inline="always", fastmath=_REDUCE)
def _row_stats(row, eps):
    """(mu, rstd) of one row, float64."""
    n = row.shape[0]
    total = 0.0
    for j in range(n):
        total += float(row[j])
    mu = total / n
    squares = 0.0
    for j in range(n):
        d = float(row[j]) - mu
        squares += d * d
    return mu, 1.0 / math.sqrt(squares / n + eps)


@njit(inline="always", fastmath=_REDUCE)
def _forward_row(row, weight, bias, eps, out):
    """out = (row - mu) rstd * weight + bias; returns (mu, rstd)."""
    mu, rs = _row_stats(row, eps)
    for j in range(row.shape[0]):
        out[j] = (float(row[j]) - mu) * rs * float(weight[j]) + float(bias[j])
    return mu, rs


@njit(parallel=True, cache=True, fastmath=_REDUCE, error_model="numpy")
def layer_norm_forward(x, weight, bias, eps, y, mean, rstd):
    """y[r] = (x[r] - mu) rstd * weight + bias; mean[r] = mu, rstd[r] = rstd."""
    for r in prange(x.shape[0]):
        mean[r], rstd[r] = _forward_row(x[r], weight, bias, eps, y[r])


@njit(cache=True, fastmath=_REDUCE, error_model="numpy")
def layer_norm_forward_serial(x, weight, bias, eps, y, mean, rstd):
    """``layer_norm_forward`` on the calling thread (few rows: no thread to wake)."""
    for r in range(x.shape[0]):
        mean[r], rstd[r] = _forward_row(x[r], weight, bias, eps, y[r])


@njit(inline="always", fastmath=_REDUCE)
def _backward_row(g, x, weight, mu, rs, dx, dweight_part, dbias_part):
    n = x.shape[0]
    sum_gw = 0.0
    sum_gw_xhat = 0.0
    for j in range(n):
        gw = float(g[j]) * float(weight[j])
        sum_gw += gw
        sum_gw_xhat += gw * ((float(x[j]) - mu) * rs)
    a = sum_gw / n
    b = sum_gw_xhat / n
    for j in range(n):
        xhat = (float(x[j]) - mu) * rs
        gj = float(g[j])
        dx[j] = rs * (gj * float(weight[j]) - a - xhat * b)
        dweight_part[j] += gj * xhat
        dbias_part[j] += gj


@njit(inline="always", fastmath=_REDUCE)
def _backward_block(c, g, x, weight, mean, rstd, dx, dweight_part, dbias_part):
    """Rows of block ``c`` into dx and this block's partial sums (zeroed here)."""
    dweight_part[:] = 0.0
    dbias_part[:] = 0.0
    for r in range(c * ROWS_PER_BLOCK, min(c * ROWS_PER_BLOCK + ROWS_PER_BLOCK, x.shape[0])):
        _backward_row(
            g[r], x[r], weight, float(mean[r]), float(rstd[r]), dx[r], dweight_part, dbias_part
        )


@njit(parallel=True, cache=True, fastmath=_REDUCE, error_model="numpy")
def layer_norm_backward(g, x, weight, mean, rstd, dx, dweight_parts, dbias_parts):
    """dx (R, N); dweight_parts, dbias_parts (blocks, N) float64, zeroed here."""
    for c in prange(dweight_parts.shape[0]):
        _backward_block(c, g, x, weight, mean, rstd, dx, dweight_parts[c], dbias_parts[c])


@njit(cache=True, fastmath=_REDUCE, error_model="numpy")
def layer_norm_backward_serial(g, x, weight, mean, rstd, dx, dweight_parts, dbias_parts):
    """``layer_norm_backward`` on the calling thread (the same blocks, so the same sums)."""
    for c in range(dweight_parts.shape[0]):
        _backward_block(c, g, x, weight, mean, rstd, dx, dweight_parts[c], dbias_parts[c])
