"""Fused flash-attention kernels (numba): forward with online softmax, recomputing backward.

Blocking (the idea of PyTorch's CPU FlashAttentionKernel, written from scratch):

forward, one work item = (b, h, block of ``block_q`` query rows)::

    m = -inf, l = 0, acc = 0                      running max, running sum, unnormalised out
    for each block of ``block_k`` keys j (only j <= last row if causal):
        s    = scale * Q_i K_j^T + mask           (block_q x block_k tile, per-thread scratch)
        m'   = max(m, rowmax(s));  p = exp(s - m')
        l    = l * exp(m - m') + rowsum(p)
        acc  = acc * exp(m - m') + dropout(p) V_j
    out = acc / l,  logsumexp = m + log(l)        (acc and -inf for a fully masked row)

A tile row holding a NaN or +inf score is poisoned: its row of weights is NaN in
torch's math path, so its output and logsumexp are NaN (``_numba_softmax.poisoned``;
the NaN-skipping ``row_max`` and the float32 exp, which maps NaN to 0, never see it).
A fully masked row keeps ``acc``, which is 0, or NaN when a value it multiplied by 0
was NaN or inf (0 * NaN, as in the math path).

backward, one work item = (b, kv head): for each query head h of its group, for
each key block j, for each query block i (skipping blocks above the diagonal)::

    p   = exp(scale * Q_i K_j^T + mask - logsumexp_i)      recomputed, never stored
    dV_j += dropout(p)^T dO_i;  dp = dropout(dO_i V_j^T);  ds = p * (dp - delta_i)
    dQ_i += scale * ds K_j;     dK_j += scale * ds^T Q_i
    (a row whose logsumexp is NaN has p = NaN: the forward found it poisoned)

Causal: tiles above the diagonal (every score -inf) are skipped, which is exact
only when the skipped q, k, v (and dout, out, logsumexp) rows are finite: a NaN
there reaches every row in the math path (NaN + -inf = NaN, 0 * NaN = NaN). Each
work item checks that first (a read of O(rows * D), against O(rows * S * D) of
work) and runs its whole key range when it fails. The causal -inf is added to
the scores, not written over them, so a NaN score stays NaN.

Each ``prange`` iteration is one worker that takes every ``n_workers``-th item
(round robin balances the causal triangle) and uses only its own slice of the
scratch arrays, allocated once by the launcher. Items write disjoint output
slices (the backward owns a whole kv head, so GQA needs no reduction across
workers), so results are bitwise identical run to run.

The launchers ``forward``/``backward`` take checked ``AttentionArgs`` only.

Layout: q, k, v (and out, dout) may be strided views, e.g. heads split off a
fused (B, L, 3, H, D) projection, as long as their last dim has unit stride
(``_boundary.kernel_layout``); row tiles go to BLAS with the row stride as
leading dimension. The launchers type these arrays as numba layout "A"
(read-only for the inputs) whatever their actual layout, so each kernel is
compiled once per dtype, for contiguous and strided callers alike (``_call``).
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from numba import prange, types

from ._boundary import AttentionArgs, empty_like_order
from ._jit import njit
from ._numba_softmax import nan_count, poisoned
from ._numba_tiles import (
    dropout_row,
    exp_shifted,
    exp_shifted_sum,
    gemm,
    row_dot,
    row_max,
    scalar_exp,
    unit_stride,
)

_CONTRACT = {"contract"}
FORWARD_BLOCKS = (512, 512)  # (block_q, block_k)
CAUSAL_FORWARD_BLOCKS = (256, 512)
BACKWARD_BLOCKS = (256, 256)
DIAGONAL_ROWS = 64  # causal: row strip height on tiles crossing the diagonal


@njit(fastmath=_CONTRACT, cache=True)
def _mask_row(mask, b, h, i):
    """The additive mask row of (b, h, i), honouring size-1 (broadcast) dimensions."""
    return mask[
        b if mask.shape[0] > 1 else 0, h if mask.shape[1] > 1 else 0, i if mask.shape[2] > 1 else 0
    ]


@njit(fastmath=_CONTRACT, cache=True)
def _scores_tile(q_rows, k_rows, mask, options, b, h, i0, j0, scores):
    """scores = scale * Q_i K_j^T + mask, -inf where key j0 + c > query i0 + r if causal."""
    scale, causal, _, _, _, use_blas = options
    gemm(scale, q_rows, k_rows.T, 0.0, scores, use_blas)
    n_rows, n_keys = scores.shape
    neg_inf = scores.dtype.type(-np.inf)
    for r in range(n_rows):
        row = scores[r]
        if mask.shape[0] > 0:
            mask_row = _mask_row(mask, b, h, i0 + r)
            for c in range(n_keys):
                row[c] += mask_row[j0 + c]
        if causal:
            for c in range(max(0, i0 + r - j0 + 1), n_keys):
                row[c] += neg_inf  # added, so that a NaN score stays NaN


@njit(fastmath=_CONTRACT, cache=True)
def _forward_tile(q, k, v, mask, options, b, h, i0, r0, r1, j0, j1, acc, stats, scores_flat):
    """Online-softmax update of rows i0 + r0 : i0 + r1 of head (b, h) with keys j0:j1."""
    scale, causal, dropout_p, keep_scale, seed, use_blas = options
    L, S = q.shape[2], k.shape[2]
    hk = h // (q.shape[1] // k.shape[1])
    n_rows, n_keys = r1 - r0, j1 - j0
    running_max, running_sum = stats[0], stats[1]
    neg_inf = q.dtype.type(-np.inf)
    scores = scores_flat[: n_rows * n_keys].reshape((n_rows, n_keys))
    q_rows = q[b, h, i0 + r0 : i0 + r1]
    _scores_tile(q_rows, k[b, hk, j0:j1], mask, options, b, h, i0 + r0, j0, scores)
    for t in range(n_rows):
        r = r0 + t
        row = scores[t]
        top = row_max(row)
        if running_sum[r] != running_sum[r] or poisoned(row, top):
            running_sum[r] = np.nan  # a NaN row: its output and logsumexp will be NaN
            row[:] = 0
            continue
        new_max = max(running_max[r], top)
        if new_max == neg_inf:  # nothing visible yet: this tile adds nothing
            row[:] = 0
            continue
        correction = scalar_exp(running_max[r] - new_max)
        running_sum[r] = running_sum[r] * correction + exp_shifted_sum(row, new_max)
        running_max[r] = new_max
        if correction != 1:
            acc_row = acc[r]
            for c in range(acc_row.shape[0]):
                acc_row[c] *= correction
        if dropout_p > 0:
            dropout_row(
                row, seed, ((b * q.shape[1] + h) * L + i0 + r) * S + j0, dropout_p, keep_scale
            )
    gemm(1.0, scores, v[b, hk, j0:j1], 1.0, acc[r0:r1], use_blas)


@njit(cache=True)
def _nonfinite_count(rows):
    """How many entries of a 2-d slice (unit stride along a row) are NaN or +-inf
    (x - x is NaN exactly for those)."""
    n = 0
    for i in range(rows.shape[0]):
        row = unit_stride(rows[i])
        for j in range(row.shape[0]):
            n += (row[j] - row[j]) != 0
    return n


@njit(cache=True)
def _mask_poisons(mask, b, h, i0, i1):
    """Whether mask rows i0:i1 of head (b, h) hold a NaN or +inf (-inf only blocks)."""
    if mask.shape[0] == 0:
        return False
    for i in range(i0, i1):
        row = _mask_row(mask, b, h, i)
        if poisoned(row, row_max(row)):
            return True
    return False


@njit(cache=True)
def _forward_skip_is_exact(q, k, v, mask, b, h, i0, i1):
    """Causal: may query rows i0:i1 skip keys > i? Yes unless a NaN/inf could cross the
    diagonal (q rows, the k/v rows after i0, or the mask rows are not finite)."""
    hk = h // (q.shape[1] // k.shape[1])
    return (
        _nonfinite_count(q[b, h, i0:i1]) == 0
        and _nonfinite_count(k[b, hk, i0 + 1 :]) == 0
        and _nonfinite_count(v[b, hk, i0 + 1 :]) == 0
        and not _mask_poisons(mask, b, h, i0, i1)
    )


@njit(cache=True)
def _backward_skip_is_exact(inputs, out, mask, b, hk, group):
    """Causal backward of (b, kv head hk): may tiles above the diagonal be skipped? Yes
    unless some input it reads is not finite (or a logsumexp is NaN: a poisoned row)."""
    dout, q, k, v, logsumexp = inputs
    if _nonfinite_count(k[b, hk]) or _nonfinite_count(v[b, hk]):
        return False
    for h in range(hk * group, (hk + 1) * group):
        if _nonfinite_count(q[b, h]) or _nonfinite_count(dout[b, h]):
            return False
        if _nonfinite_count(out[b, h]) or nan_count(logsumexp[b, h]):
            return False
        if _mask_poisons(mask, b, h, 0, q.shape[2]):
            return False
    return True


@njit(fastmath=_CONTRACT, cache=True)
def _forward_rows(q, k, v, mask, options, b, h, i0, i1, block_k, out, logsumexp, scratch):
    """One work item of the forward: query rows i0:i1 of head (b, h)."""
    causal = options[1]
    scores_flat, acc_all, stats = scratch
    S = k.shape[2]
    n_rows = i1 - i0
    acc = acc_all[:n_rows]
    running_max, running_sum = stats[0], stats[1]
    neg_inf = q.dtype.type(-np.inf)
    for r in range(n_rows):
        running_max[r] = neg_inf
        running_sum[r] = 0
        acc[r] = 0
    skip = causal and _forward_skip_is_exact(q, k, v, mask, b, h, i0, i1)
    key_end = min(S, i1) if skip else S
    for j0 in range(0, key_end, block_k):
        j1 = min(j0 + block_k, key_end)
        # A tile crossing the causal diagonal goes in strips of DIAGONAL_ROWS
        # rows, each only up to its last visible key.
        strip = DIAGONAL_ROWS if skip and j1 - 1 > i0 else n_rows
        for r0 in range(0, n_rows, strip):
            r1 = min(r0 + strip, n_rows)
            keys_end = min(j1, i0 + r1) if skip else j1
            if keys_end > j0:
                _forward_tile(
                    q, k, v, mask, options, b, h, i0, r0, r1, j0, keys_end, acc, stats, scores_flat
                )
    for r in range(n_rows):
        out_row = unit_stride(out[b, h, i0 + r])
        if running_sum[r] > 0:
            inv = 1 / running_sum[r]
            for c in range(out_row.shape[0]):
                out_row[c] = acc[r, c] * inv
            logsumexp[b, h, i0 + r] = running_max[r] + np.log(running_sum[r])
        elif running_sum[r] == 0:  # fully masked row: acc is 0 (NaN if it met 0 * NaN)
            out_row[:] = acc[r]
            logsumexp[b, h, i0 + r] = neg_inf
        else:  # a NaN row
            out_row[:] = np.nan
            logsumexp[b, h, i0 + r] = np.nan


@njit(inline="always", fastmath=_CONTRACT)
def _forward_items(w, q, k, v, mask, options, blocks, out, logsumexp, scratch_bufs):
    """Worker ``w``'s share of the forward: every ``n_workers``-th item, its own scratch."""
    scores_buf, acc_buf, stats_buf = scratch_bufs
    block_q, block_k = blocks
    B, Hq, L = q.shape[0], q.shape[1], q.shape[2]
    n_qblocks = (L + block_q - 1) // block_q
    n_items = B * Hq * n_qblocks
    n_workers = scores_buf.shape[0]
    for item in range(w, n_items, n_workers):
        bh, qblock = divmod(item, n_qblocks)
        if bh % 2 == 1:
            # Causal blocks grow with qblock; reversing every other head's order
            # keeps round-robin workers balanced (else one always gets the odd,
            # larger, blocks).
            qblock = n_qblocks - 1 - qblock
        b, h = divmod(bh, Hq)
        i0 = qblock * block_q
        scratch = (scores_buf[w], acc_buf[w], stats_buf[w])
        i1 = min(i0 + block_q, L)
        _forward_rows(q, k, v, mask, options, b, h, i0, i1, block_k, out, logsumexp, scratch)


@njit(parallel=True, nogil=True, fastmath=_CONTRACT, cache=True)
def _forward_kernel(q, k, v, mask, options, blocks, out, logsumexp, scores_buf, acc_buf, stats_buf):
    for w in prange(scores_buf.shape[0]):
        scratch_bufs = (scores_buf, acc_buf, stats_buf)
        _forward_items(w, q, k, v, mask, options, blocks, out, logsumexp, scratch_bufs)


@njit(nogil=True, fastmath=_CONTRACT, cache=True)
def _forward_kernel_serial(
    q, k, v, mask, options, blocks, out, logsumexp, scores_buf, acc_buf, stats_buf
):
    """``_forward_kernel`` on the calling thread (one worker): the same items and tiles."""
    scratch_bufs = (scores_buf, acc_buf, stats_buf)
    _forward_items(0, q, k, v, mask, options, blocks, out, logsumexp, scratch_bufs)


@njit(fastmath=_CONTRACT, cache=True)
def _backward_tile(inputs, mask, options, b, h, i0, i1, j0, j1, delta, grads, tiles):
    """Contributions of query rows i0:i1 x keys j0:j1 of head (b, h) to dq, dk, dv."""
    dout, q, k, v, logsumexp = inputs
    dq, dk, dv = grads
    scale, causal, dropout_p, keep_scale, seed, use_blas = options
    hk = h // (q.shape[1] // k.shape[1])
    L, S = q.shape[2], k.shape[2]
    n_rows, n_keys = i1 - i0, j1 - j0
    size = n_rows * n_keys
    weights = tiles[0, :size].reshape((n_rows, n_keys))
    dscores = tiles[1, :size].reshape((n_rows, n_keys))
    q_rows, dout_rows = q[b, h, i0:i1], dout[b, h, i0:i1]
    k_rows, v_rows = k[b, hk, j0:j1], v[b, hk, j0:j1]
    _scores_tile(q_rows, k_rows, mask, options, b, h, i0, j0, weights)
    for r in range(n_rows):
        lse = logsumexp[b, h, i0 + r]
        if lse == -np.inf:  # fully masked row: weights 0 (gradients 0 unless 0 * NaN)
            weights[r] = 0
        elif lse != lse:  # a NaN row (the forward found a NaN or +inf score)
            weights[r] = np.nan
        else:
            exp_shifted(weights[r], lse)
    dropped = weights
    if dropout_p > 0:
        keep = tiles[2, :size].reshape((n_rows, n_keys))
        dropped = tiles[3, :size].reshape((n_rows, n_keys))
        for r in range(n_rows):
            keep[r] = 1
            dropout_row(
                keep[r], seed, ((b * q.shape[1] + h) * L + i0 + r) * S + j0, dropout_p, keep_scale
            )
            for c in range(n_keys):
                dropped[r, c] = weights[r, c] * keep[r, c]
    gemm(1.0, dropped.T, dout_rows, 1.0, dv[b, hk, j0:j1], use_blas)
    gemm(1.0, dout_rows, v_rows.T, 0.0, dscores, use_blas)  # d(dropped)
    for r in range(n_rows):
        delta_r = delta[i0 + r]
        w_row, ds_row = weights[r], dscores[r]
        if dropout_p > 0:
            keep_row = tiles[2, r * n_keys : (r + 1) * n_keys]
            for c in range(n_keys):
                ds_row[c] = w_row[c] * (ds_row[c] * keep_row[c] - delta_r)
        else:
            for c in range(n_keys):
                ds_row[c] = w_row[c] * (ds_row[c] - delta_r)
    gemm(scale, dscores, k_rows, 1.0, dq[b, h, i0:i1], use_blas)
    gemm(scale, dscores.T, q_rows, 1.0, dk[b, hk, j0:j1], use_blas)


@njit(parallel=True, nogil=True, fastmath=_CONTRACT, cache=True)
def _backward_kernel(inputs, out, mask, options, blocks, grads, tiles_buf, delta_buf):
    """grads = (dq, dk, dv) must arrive zeroed. One item = (b, kv head), all heads of its group."""
    dout, q, k = inputs[0], inputs[1], inputs[2]
    causal = options[1]
    block_q, block_k = blocks
    B, Hq, L = q.shape[0], q.shape[1], q.shape[2]
    Hkv, S = k.shape[1], k.shape[2]
    group = Hq // Hkv
    n_workers = tiles_buf.shape[0]
    for w in prange(n_workers):
        delta = delta_buf[w]
        for item in range(w, B * Hkv, n_workers):
            b, hk = divmod(item, Hkv)
            skip = causal and _backward_skip_is_exact(inputs, out, mask, b, hk, group)
            for h in range(hk * group, (hk + 1) * group):
                for i in range(L):  # delta_i = rowsum(dO_i * O_i)
                    delta[i] = row_dot(unit_stride(dout[b, h, i]), unit_stride(out[b, h, i]))
                for j0 in range(0, S, block_k):
                    j1 = min(j0 + block_k, S)
                    first_row = (j0 // block_q) * block_q if skip else 0
                    for i0 in range(first_row, L, block_q):
                        i1 = min(i0 + block_q, L)
                        # A tile crossing the causal diagonal goes in strips of
                        # DIAGONAL_ROWS rows, each only up to its last visible key.
                        strip = DIAGONAL_ROWS if skip and i0 < j1 - 1 else i1 - i0
                        for s0 in range(i0, i1, strip):
                            s1 = min(s0 + strip, i1)
                            keys_end = min(j1, s1) if skip else j1
                            if keys_end > j0:
                                _backward_tile(
                                    inputs,
                                    mask,
                                    options,
                                    b,
                                    h,
                                    s0,
                                    s1,
                                    j0,
                                    keys_end,
                                    delta,
                                    grads,
                                    tiles_buf[w],
                                )


# --------------------------------------------------------------------------- launchers


def _mask_and_options(args: AttentionArgs, use_blas: bool) -> tuple[np.ndarray, tuple]:
    """The mask (an empty array when absent) and the kernels' options tuple
    (scale, causal, dropout_p, keep_scale, seed, use_blas) in the types the kernels use."""
    dtype = args.q.dtype.type
    mask = args.mask if args.mask is not None else _no_mask(args.q.dtype)
    if not (mask.flags.c_contiguous and mask.flags.aligned):  # (typed "in_c" by _call)
        raise AssertionError("the boundary hands the kernels an aligned C-contiguous mask")
    keep_scale = 0.0 if args.dropout_p >= 1 else 1.0 / (1.0 - args.dropout_p)
    options = (
        dtype(args.scale),
        args.causal,
        np.float64(args.dropout_p),
        dtype(keep_scale),
        np.uint64(args.seed),
        int(use_blas),
    )
    return mask, options


@functools.cache
def _no_mask(dtype: np.dtype) -> np.ndarray:
    """The empty mask array the kernels take when there is none (one per dtype, read-only)."""
    mask = np.zeros((0, 0, 0, 0), dtype)
    mask.flags.writeable = False
    return mask


_ROLES = {"in": ("A", True), "out": ("A", False), "in_c": ("C", True)}


def _array_type(x: np.ndarray, role: str) -> types.Array:
    """The numba type of array ``x`` in ``role``: "in" a read-only layout-A array (any
    strides), "out" a writable one, "in_c" a read-only C-contiguous one."""
    layout, readonly = _ROLES[role]
    if layout == "C" and not x.flags.c_contiguous:
        raise AssertionError("the boundary hands the kernels a C-contiguous array here")
    return types.Array(numba.from_dtype(x.dtype), x.ndim, layout, readonly=readonly)


_entry_points: dict = {}


def _call(kernel, args: tuple, roles: tuple):
    """Run ``kernel(*args)`` with each array whose entry in ``roles`` (a tuple of the
    same nesting as ``args``) is a role string typed as ``_array_type`` says, and
    everything else as numba's dispatcher would type it.

    numba's dispatcher would type a C-contiguous array as layout C and compile a
    second specialisation next to the strided one (and another for a read-only
    one); instead we pick the signature (``compile`` loads it from the on-disk cache,
    or compiles it once). The launchers build every other argument from the dtype
    (fresh C arrays, options of fixed types), so the signature depends on the kernel
    and the dtype only; its entry point is remembered per (kernel, dtype) (building
    numba types costs ~0.15 ms a call).
    """
    key = (kernel, args[0].dtype if isinstance(args[0], np.ndarray) else args[0][0].dtype)
    entry = _entry_points.get(key)
    if entry is None:

        def typed(arg, role):
            if isinstance(role, str):
                return _array_type(arg, role)
            if isinstance(role, tuple):
                return types.BaseTuple.from_types([typed(a, r) for a, r in zip(arg, role)])
            return numba.typeof(arg)

        signature = tuple(typed(a, r) for a, r in zip(args, roles))
        entry = _entry_points[key] = kernel.compile(signature)
    return entry(*args)


# Forward calls with fewer multiply-adds of Q K^T than this run on the calling thread.
# One query row against a cache (a decode step of GPT-2 small: 12 heads, 160 keys of 64)
# took 256 us a call through the parallel kernel at one numba thread and 519 us at two on
# the loaded 2-core machine (a launch waits for a thread that is not scheduled), 93-165 us
# through the serial one, most of it the checks around the kernel.
SERIAL_MAX_WORK = 1 << 20


def runs_serial(args: AttentionArgs) -> bool:
    """Whether ``forward`` runs ``args`` on the calling thread (a small call, e.g. decoding)."""
    B, Hq, L, D = args.q.shape
    return B * Hq * L * args.k.shape[2] * D < SERIAL_MAX_WORK


def forward(
    args: AttentionArgs, out: np.ndarray, use_blas: bool, serial: bool | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Allocate logsumexp and per-worker scratch; run the forward kernel into ``out``
    ((B, Hq, L, Dv), any strides with a unit last one). Returns (out, logsumexp).
    ``serial``: ``runs_serial(args)`` when the caller knows it already."""
    q, k, v = args.q, args.k, args.v
    B, Hq, L, _ = q.shape
    Dv = v.shape[3]
    block_q, block_k = CAUSAL_FORWARD_BLOCKS if args.causal else FORWARD_BLOCKS
    block_q, block_k = min(block_q, L), min(block_k, k.shape[2])
    serial = runs_serial(args) if serial is None else serial
    workers = 1 if serial else numba.get_num_threads()
    logsumexp = np.empty((B, Hq, L), q.dtype)
    scores_buf = np.empty((workers, block_q * block_k), q.dtype)
    acc_buf = np.empty((workers, block_q, Dv), q.dtype)
    stats_buf = np.empty((workers, 2, block_q), q.dtype)
    mask, options = _mask_and_options(args, use_blas)
    _call(
        _forward_kernel_serial if serial else _forward_kernel,
        (
            q,
            k,
            v,
            mask,
            options,
            (block_q, block_k),
            out,
            logsumexp,
            scores_buf,
            acc_buf,
            stats_buf,
        ),
        ("in", "in", "in", "in_c", None, None, "out", None, None, None, None),
    )
    return out, logsumexp


def backward(
    args: AttentionArgs, dout: np.ndarray, out: np.ndarray, logsumexp: np.ndarray, use_blas: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Allocate zeroed gradients (in the memory order of q, k, v) and per-worker scratch;
    run the backward."""
    q, k, v = args.q, args.k, args.v
    L = q.shape[2]
    block_q, block_k = BACKWARD_BLOCKS
    block_q, block_k = min(block_q, L), min(block_k, k.shape[2])
    workers = numba.get_num_threads()
    if not (logsumexp.flags.c_contiguous and logsumexp.flags.aligned):  # (typed "in_c")
        raise AssertionError("the boundary hands the kernels an aligned C-contiguous logsumexp")
    # laid out like q, k, v: for heads split off a fused qkv buffer, the gradient of
    # the user's view/transpose back to (B, L, H * D) is then free
    dq, dk, dv = (empty_like_order(x, x.shape) for x in (q, k, v))
    for grad in (dq, dk, dv):
        grad[...] = 0
    tiles_buf = np.empty((workers, 4 if args.dropout_p > 0 else 2, block_q * block_k), q.dtype)
    delta_buf = np.empty((workers, L), q.dtype)
    mask, options = _mask_and_options(args, use_blas)
    _call(
        _backward_kernel,
        (
            (dout, q, k, v, logsumexp),
            out,
            mask,
            options,
            (block_q, block_k),
            (dq, dk, dv),
            tiles_buf,
            delta_buf,
        ),
        (("in", "in", "in", "in", "in_c"), "in", "in_c", None, None, ("out",) * 3, None, None),
    )
    return dq, dk, dv
