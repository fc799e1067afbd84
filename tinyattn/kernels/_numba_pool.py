"""Max and average pooling, forward and backward, parallel over the (N * C) planes.

Every array is laid out as planes of a 3-D volume, ``(P, D, H, W)``; 1-D and 2-D pools
are the cases D = H = 1 and D = 1. Window ``o`` along a dim covers positions
``start[o], start[o] + step, ... < stop[o]`` (already clipped to the input, so an empty
window has ``start >= stop``), and the output at ``(od, oh, ow)`` pools the product of
the three ranges::

    max:   index[p, o] = the flat position (d H + h) W + w of the window's maximum,
           scanned d, h, w in order: a larger value or a NaN takes over (the first
           maximum wins a tie, the last NaN wins over numbers; torch's scan, done as
           "first maximum, unless the window holds a NaN: then its last NaN");
           an empty window keeps (start_d H + start_h) W + start_w.
    gather:  y[p, o] = x[p, index[p, o]]        (fill where the index is outside the
                                                 plane: -1 marks an empty window)
    scatter: dx[p, i] = sum of g[p, o] over the o with index[p, o] = i   (its adjoint;
                                                 an index outside the plane adds nothing)
    avg:     y[p, o] = sum of x over window o / divisor[o]
    avg backward: dx[p, i] = sum over the windows o holding i of g[p, o] / divisor[o]

The max and average kernels work a row of outputs at a time, columns first: one pass
along each input row of the windows (contiguous, no branch: it vectorises), then a short
span per output. Both average kernels sum in float64 and round once to the array's dtype
(the twins too, in another order: kernel and twin agree to rounding). Their windows have
step 1 and starts and stops that never decrease along a dim (average and adaptive
pooling's), so the windows holding an input position are a range of outputs: the
backward reads them (each dx element written once) instead of adding into dx window by
window. The NumPy twin of each kernel is in ``tinyattn.kernels.pool``, which also checks every
shape, dtype and window bound before a kernel runs (the kernels check nothing; an index
outside its plane is no error but defined above, so no kernel reads or writes out of
bounds). Each ``prange`` iteration writes only its own plane of the output and its own
rows of the scratch arrays; nothing is allocated inside the loops.
"""

from __future__ import annotations

import math

from numba import prange

from ._jit import njit


@njit(parallel=True, cache=True, error_model="numpy")
def max_pool_argmax(x, start_d, stop_d, step_d, start_h, stop_h, step_h, start_w, stop_w,
                    step_w, col_max, col_at, index):  # fmt: skip
    """index[p, od, oh, ow] = flat position of the maximum of window (od, oh, ow) of x[p].

    A row of outputs at a time, columns first: over the window's input rows (in scan
    order) each column w keeps ``col_max[p, w]``, its maximum or, once it has met one, its
    last NaN, and where that is, ``col_at[p, w]`` (-1: nothing above -inf), in a pass
    along the row with no branch to mispredict; then each output takes, over its span of
    columns, the largest NaN position if any column holds a NaN, else the largest maximum
    at the smallest position among equal ones (the first maximum in scan order, d then h
    then w).
    """
    planes, _, height, width = x.shape
    out_d, out_h, out_w = index.shape[1], index.shape[2], index.shape[3]
    for p in prange(planes):
        plane, best_col, at_col = x[p], col_max[p], col_at[p]
        for od in range(out_d):
            for oh in range(out_h):
                for w in range(width):
                    best_col[w] = -math.inf
                    at_col[w] = -1
                for d in range(start_d[od], stop_d[od], step_d):
                    for h in range(start_h[oh], stop_h[oh], step_h):
                        row, base = plane[d, h], (d * height + h) * width
                        for w in range(width):
                            v = row[w]
                            take = v > best_col[w] or v != v  # (NaN never gives way)
                            best_col[w] = v if take else best_col[w]
                            at_col[w] = base + w if take else at_col[w]
                out_row = index[p, od, oh]
                first = (start_d[od] * height + start_h[oh]) * width
                for ow in range(out_w):
                    best, at, nan = -math.inf, first + start_w[ow], -1
                    for w in range(start_w[ow], stop_w[ow], step_w):
                        v, pos = best_col[w], at_col[w]
                        if v != v:
                            nan = max(nan, pos)
                        elif v > best or (v == best and 0 <= pos < at):
                            best, at = v, pos
                    out_row[ow] = nan if nan >= 0 else at


@njit(parallel=True, cache=True, error_model="numpy")
def gather(x, index, fill, out):
    """out[p, o] = x[p, index[p, o]], ``fill`` where the index is outside the plane."""
    planes, outputs = index.shape
    size = x.shape[1]
    for p in prange(planes):
        for o in range(outputs):
            i = index[p, o]
            out[p, o] = x[p, i] if 0 <= i < size else fill


@njit(parallel=True, cache=True, error_model="numpy")
def scatter_add(g, index, dx):
    """dx[p] = zeros, then dx[p, index[p, o]] += g[p, o] (an index outside the plane: skipped)."""
    planes, outputs = index.shape
    size = dx.shape[1]
    for p in prange(planes):
        for i in range(size):
            dx[p, i] = 0.0
        for o in range(outputs):
            i = index[p, o]
            if 0 <= i < size:
                dx[p, i] += g[p, o]


@njit(parallel=True, cache=True, error_model="numpy")
def avg_pool_forward(x, start_d, stop_d, start_h, stop_h, start_w, stop_w, divisor, cols, out):
    """out[p, od, oh, ow] = sum of x[p] over the window / divisor[od, oh, ow].

    A row of outputs at a time, columns first: ``cols[p]`` (float64 scratch, one input
    row per plane) sums the window's input rows element by element (a loop along the
    row, which vectorises), then each output of the row sums its span of ``cols``.
    """
    planes, width = x.shape[0], x.shape[3]
    out_d, out_h, out_w = out.shape[1], out.shape[2], out.shape[3]
    for p in prange(planes):
        plane, col = x[p], cols[p]
        for od in range(out_d):
            for oh in range(out_h):
                for w in range(width):
                    col[w] = 0.0
                for d in range(start_d[od], stop_d[od]):
                    for h in range(start_h[oh], stop_h[oh]):
                        row = plane[d, h]
                        for w in range(width):
                            col[w] += row[w]
                out_row, div_row = out[p, od, oh], divisor[od, oh]
                for ow in range(out_w):
                    total = 0.0
                    for w in range(start_w[ow], stop_w[ow]):
                        total += col[w]
                    out_row[ow] = total / div_row[ow]


@njit(parallel=True, cache=True, error_model="numpy")
def avg_pool_backward(g, start_w, stop_w, first_d, end_d, first_h, end_h, slot_d, slot_h,
                      divisor, spread, tags, acc, dx):  # fmt: skip
    """dx[p, d, h, w] = sum over the windows o holding (d, h, w) of g[p, o] / divisor[o].

    The adjoint of the forward, in reverse: each output row (od, oh) is first spread along
    w, ``spread[w] = sum over the ow whose window holds w of g / divisor``; then each row of
    dx (written once) adds the spread rows of the (od, oh) windows holding it, which are
    ``first_d[d] <= od < end_d[d]`` and likewise along h (starts and stops never decrease).
    ``spread[p]`` keeps the last rows computed, row (od, oh) in slot
    ``(slot_d[od], slot_h[oh]) = (od % R_d, oh % R_h)`` (R = the most windows holding one
    position; ``tags[p]`` says whose row a slot holds), so a 2-D pool spreads each output
    row once; ``acc[p]`` is a row of float64 sums. A row held by the same windows as the
    row before it (adaptive pooling's runs) copies that row.
    """
    planes, depth, height, width = dx.shape
    out_h, out_w = g.shape[2], g.shape[3]
    reach_h = tags.shape[2]
    for p in prange(planes):
        rows, tag, total = spread[p], tags[p], acc[p]
        for k in range(tag.shape[0]):
            for j in range(tag.shape[1]):
                tag[k, j] = -1
        for d in range(depth):
            for h in range(height):
                out_row = dx[p, d, h]
                if h > 0 and first_h[h] == first_h[h - 1] and end_h[h] == end_h[h - 1]:
                    previous = dx[p, d, h - 1]  # held by the same windows: the same sums
                    for w in range(width):
                        out_row[w] = previous[w]
                    continue
                held = 0
                for od in range(first_d[d], end_d[d]):
                    for oh in range(first_h[h], end_h[h]):
                        k, j = slot_d[od], slot_h[oh]
                        row = rows[k * reach_h + j]
                        if tag[k, j] != od * out_h + oh:  # not spread yet
                            tag[k, j] = od * out_h + oh
                            g_row, div_row = g[p, od, oh], divisor[od, oh]
                            for w in range(width):
                                row[w] = 0.0
                            for ow in range(out_w):
                                share = g_row[ow] / div_row[ow]
                                for w in range(start_w[ow], stop_w[ow]):
                                    row[w] += share
                        if held == 0:
                            for w in range(width):
                                total[w] = row[w]
                        else:
                            for w in range(width):
                                total[w] += row[w]
                        held += 1
                for w in range(width):
                    out_row[w] = total[w] if held else 0.0
