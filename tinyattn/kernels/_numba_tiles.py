"""numba building blocks of the flash-attention kernels: tile products and row ops.

Everything here works on one tile (a few dozen rows of a head) and is called
from inside the ``prange`` bodies of ``_numba_flash``; nothing allocates.

- ``gemm(alpha, a, b, beta, c, use_blas)``: ``c = alpha * a @ b + beta * c`` on
  2-d tiles that are row-major with strided rows (unit stride along a row, any
  row stride: a slice of rows of a head, also when the heads are views into a
  (B, L, 3, H, D) buffer) or the ``.T`` of one (column-major). BLAS takes such a
  tile as is: the row stride is its leading dimension. C and F tiles are the
  special cases with a row stride equal to the row length. ``use_blas``
  picks NumPy's bundled CBLAS (1), scipy's BLAS through numba's ``numba_xxgemm``
  helper (2) or plain loops (0); see ``_blas``. All three are compiled into the
  kernel and the code is read at run time, so the kernels compile (and run the
  loop path) without any BLAS.
  Why BLAS at all: on the 2-core target, one thread, float32 tiles of 64..256
  rows x 64, these loops reach 23-46 GFLOP/s and OpenBLAS 95-145 GFLOP/s, while
  torch's SDPA runs at ~200 GFLOP/s equivalent (``benchmarks/tile_products.py``).
- ``unit_stride(row)``: a 1-d row of a strided (layout A) array retyped as layout C,
  so that loops over it vectorise; only for rows along a dim the boundary checked
  to have unit stride (the last dim of q, k, v, out, dout).
- ``exp_shifted(row, shift)``: ``row = exp(row - shift)`` in place. For float32
  a Cephes-style polynomial that LLVM vectorises (numba has no vector exp here:
  no SVML, and ``math.exp`` is a scalar libm call at ~2.3 ns per element,
  against ~0.3 ns). Max relative error ~5e-7; exp(x) = 0 for x < -87.3.
- ``exp_shifted_sum``: the same, returning the row sum (the forward's one pass).
- ``row_max``, ``row_sum``: reductions written so that LLVM vectorises them
  with a fixed association order (bitwise reproducible run to run); the max
  through ``llvm.maxnum`` (numba's ``max`` keeps the loop scalar: 0.19 against
  0.08 ns per element measured).
- ``keep_scale(seed, n, p, inv)``: the dropout factor for element n of the
  (B, Hq, L, S) weights, the same splitmix64 stream as ``reference.dropout_keep``.

fastmath is limited to {"contract"} (fused multiply-add) except in ``row_sum``,
``exp_shifted_sum`` and the loop product's dot form, which add {"reassoc"} to
vectorise a sum.
No flag assuming "no NaN / no inf" is used: -inf carries the masking.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic, overload
from numba.np.arrayobj import populate_array
from numba.np.linalg import check_blas_return, get_blas_kind

from . import _blas
from ._jit import njit

_blas.register_symbols()  # before any kernel below is compiled or loaded from the cache

_CONTRACT = {"contract"}
_CBLAS_ROW_MAJOR, _CBLAS_NO_TRANS, _CBLAS_TRANS = 101, 111, 112

# --------------------------------------------------------------------------- gemm


def _tile_types_ok(a, b, c) -> bool:
    """Whether ``a``, ``b``, ``c`` type as tiles the BLAS products take.

    2-d arrays of one dtype, float32 or float64, of layout C, F or A. An A tile must
    have a unit stride along one of its dims at run time; ``gemm`` checks that
    (``_blas_tile_ok``) and takes the loops otherwise. c is not F (it is written row-major).
    """
    arrays = (a, b, c)
    if not all(isinstance(x, types.Array) and x.ndim == 2 for x in arrays):
        return False
    if len({x.dtype for x in arrays}) != 1 or a.dtype not in (types.float32, types.float64):
        return False
    return c.layout in "CA"


def _xxgemm_type():
    """C type of numba's ``numba_xxgemm`` helper.

    ``int (char kind, char transa, char transb, intp m, n, k, void *alpha, void *a,
    intp lda, void *b, intp ldb, void *beta, void *c, intp ldc)``.
    """
    char, size, void_p = ir.IntType(8), cgutils.intp_t, ir.IntType(8).as_pointer()
    params = [char] * 3 + [size] * 3 + [void_p, void_p, size, void_p, size, void_p, void_p, size]
    return ir.FunctionType(ir.IntType(32), params)


def _cblas_gemm_type(scalar):
    """C type of ``cblas_xgemm64_`` (ILP64): ``void (int order, int transa, int transb,
    int64 m, n, k, T alpha, T *a, int64 lda, T *b, int64 ldb, T beta, T *c, int64 ldc)``."""
    i32, i64, pointer = ir.IntType(32), ir.IntType(64), scalar.as_pointer()
    params = [i32] * 3 + [i64] * 3 + [scalar, pointer, i64, pointer, i64, scalar, pointer, i64]
    return ir.FunctionType(ir.VoidType(), params)


def _tile_arrays(context, builder, tys, values):
    """The (a, b, c) array structs and their sizes m, k, n."""
    arrs = [context.make_array(t)(context, builder, v) for t, v in zip(tys, values)]
    (m, k), (_, n), _ = [cgutils.unpack_tuple(builder, x.shape) for x in arrs]
    return arrs, m, k, n


def _leading_dim(context, builder, ty, arr):
    """``(is_row_major, leading dimension)`` of a tile, as LLVM values.

    A C tile is row-major with the row length as leading dimension, an F tile the
    transpose of one. An A tile is decided at run time from its strides (in elements
    s0, s1): row-major when s1 == 1 (or it has at most one column) with leading
    dimension s0, else column-major (s0 == 1) with leading dimension s1. A single row
    (column) takes the row (column) length, since its stride is arbitrary. The
    leading dimension is at least 1, as BLAS wants.
    """
    intp = cgutils.intp_t
    one = ir.Constant(intp, 1)
    rows, cols = cgutils.unpack_tuple(builder, arr.shape)

    def at_least(value, low):
        return builder.select(builder.icmp_signed("<", value, low), low, value)

    if ty.layout in "CF":
        lead = cols if ty.layout == "C" else rows
        return ir.Constant(ir.IntType(1), ty.layout == "C"), at_least(lead, one)
    itemsize = ir.Constant(intp, context.get_abi_sizeof(context.get_data_type(ty.dtype)))
    s0, s1 = (builder.sdiv(s, itemsize) for s in cgutils.unpack_tuple(builder, arr.strides))
    is_row = builder.or_(builder.icmp_signed("==", s1, one), builder.icmp_signed("<=", cols, one))
    row_lead = builder.select(builder.icmp_signed("<=", rows, one), at_least(cols, one), s0)
    col_lead = builder.select(builder.icmp_signed("<=", cols, one), at_least(rows, one), s1)
    return is_row, at_least(builder.select(is_row, row_lead, col_lead), one)


@intrinsic
def _gemm_blas(typingctx, alpha, a, b, beta, c):
    """c = alpha * a @ b + beta * c through numba's BLAS helper (scipy's cython_blas xgemm)."""
    if not _tile_types_ok(a, b, c):
        return None
    dtype = c.dtype

    def codegen(context, builder, sig, args):
        alpha_v, a_v, b_v, beta_v, c_v = args
        alpha_slot = cgutils.alloca_once_value(
            builder, context.cast(builder, alpha_v, sig.args[0], dtype)
        )
        beta_slot = cgutils.alloca_once_value(
            builder, context.cast(builder, beta_v, sig.args[3], dtype)
        )
        arrs, m, k, n = _tile_arrays(context, builder, (a, b, c), (a_v, b_v, c_v))
        void_p, char = ir.IntType(8).as_pointer(), ir.IntType(8)

        def operand(ty, arr):
            # Row-major c = a b is column-major c^T = b^T a^T: an operand whose
            # layout differs from c's (row-major) is passed transposed.
            is_row, lead = _leading_dim(context, builder, ty, arr)
            trans = builder.select(is_row, ir.Constant(char, ord("n")), ir.Constant(char, ord("t")))
            return trans, lead, builder.bitcast(arr.data, void_p)

        trans_b, ld_b, data_b = operand(b, arrs[1])
        trans_a, ld_a, data_a = operand(a, arrs[0])
        _, ld_c, data_c = operand(c, arrs[2])
        fn = cgutils.get_or_insert_function(builder.module, _xxgemm_type(), "numba_xxgemm")
        kind = ir.Constant(ir.IntType(8), ord(get_blas_kind(dtype)))
        alpha_p, beta_p = builder.bitcast(alpha_slot, void_p), builder.bitcast(beta_slot, void_p)
        call_args = (kind, trans_b, trans_a, n, m, k, alpha_p, data_b, ld_b, data_a, ld_a)
        res = builder.call(fn, call_args + (beta_p, data_c, ld_c))
        check_blas_return(context, builder, res)
        return context.get_dummy_value()

    return types.void(alpha, a, b, beta, c), codegen


@njit(fastmath={"contract", "reassoc"}, cache=True)
def _gemm_loops(alpha, a, b, beta, c):
    """c = alpha * a @ b + beta * c in plain loops (the fallback without any BLAS)."""
    m, k = a.shape
    n = b.shape[1]
    for i in range(m):
        c_row = c[i]
        for j in range(n):
            c_row[j] = 0 if beta == 0 else beta * c_row[j]
        if b.strides[0] == b.itemsize:
            # b is a transposed row-major tile: a dot product over contiguous memory.
            for j in range(n):
                total = c_row.dtype.type(0)
                for p in range(k):
                    total += a[i, p] * b[p, j]
                c_row[j] += alpha * total
        else:
            # Outer-product form: the inner loop runs along a contiguous row of b.
            for p in range(k):
                a_ip = alpha * a[i, p]
                b_row = b[p]
                for j in range(n):
                    c_row[j] += a_ip * b_row[j]


@intrinsic
def _gemm_cblas(typingctx, alpha, a, b, beta, c):
    """c = alpha * a @ b + beta * c through NumPy's bundled CBLAS (ILP64, row-major).

    Calls ``tinyattn_cblas_sgemm64`` / ``_dgemm64``, names that ``_blas.register_symbols``
    binds to the library's addresses before this module's kernels compile or load.
    """
    if not _tile_types_ok(a, b, c):
        return None
    dtype = c.dtype
    symbol = _blas.SYMBOLS[str(dtype)]

    def codegen(context, builder, sig, args):
        alpha_v, a_v, b_v, beta_v, c_v = args
        arrs, m, k, n = _tile_arrays(context, builder, (a, b, c), (a_v, b_v, c_v))
        i32 = ir.IntType(32)

        def operand(ty, arr):
            # A column-major tile (an F tile, the .T of a row-major one) is passed with Trans.
            is_row, lead = _leading_dim(context, builder, ty, arr)
            no_trans, trans = ir.Constant(i32, _CBLAS_NO_TRANS), ir.Constant(i32, _CBLAS_TRANS)
            return builder.select(is_row, no_trans, trans), lead, arr.data

        trans_a, ld_a, data_a = operand(a, arrs[0])
        trans_b, ld_b, data_b = operand(b, arrs[1])
        _, ld_c, data_c = operand(c, arrs[2])
        fnty = _cblas_gemm_type(context.get_value_type(dtype))
        fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
        alpha_x = context.cast(builder, alpha_v, sig.args[0], dtype)
        beta_x = context.cast(builder, beta_v, sig.args[3], dtype)
        order = ir.Constant(i32, _CBLAS_ROW_MAJOR)
        call_args = (order, trans_a, trans_b, m, n, k, alpha_x, data_a, ld_a, data_b, ld_b)
        builder.call(fn, call_args + (beta_x, data_c, ld_c))
        return context.get_dummy_value()

    return types.void(alpha, a, b, beta, c), codegen


@njit(inline="always")
def _blas_tile_ok(x, row_major_only):
    """Whether BLAS can take tile ``x`` as ``_leading_dim`` reads it: strides that are
    non-negative multiples of the itemsize, a unit stride along a row (or, unless
    ``row_major_only``, along a column) and rows (columns) that do not overlap."""
    rows, cols = x.shape
    s0, s1 = x.strides
    if s0 < 0 or s1 < 0 or s0 % x.itemsize or s1 % x.itemsize:
        return False
    s0, s1 = s0 // x.itemsize, s1 // x.itemsize
    if s1 == 1 or cols <= 1:
        return rows <= 1 or s0 >= cols
    return not row_major_only and s0 == 1 and s1 >= rows


@njit(cache=True)
def gemm(alpha, a, b, beta, c, use_blas):
    """c = alpha * a @ b + beta * c on 2-d tiles (any strides; see the module docstring).

    ``use_blas``: 0 plain loops, 1 NumPy's bundled CBLAS, 2 scipy's BLAS
    (``_blas.tile_blas_code()``; ``True`` counts as 1). A tile BLAS cannot take
    (no unit stride, overlapping rows, c not row-major) goes to the loops.
    """
    if a.shape[0] == 0 or a.shape[1] == 0 or b.shape[1] == 0:
        for i in range(c.shape[0]):
            for j in range(c.shape[1]):
                c[i, j] = 0 if beta == 0 else beta * c[i, j]
    elif not use_blas or not (
        _blas_tile_ok(a, False) and _blas_tile_ok(b, False) and _blas_tile_ok(c, True)
    ):
        _gemm_loops(alpha, a, b, beta, c)
    elif use_blas == 1:
        _gemm_cblas(alpha, a, b, beta, c)
    else:
        _gemm_blas(alpha, a, b, beta, c)


# --------------------------------------------------------------------------- rows


@intrinsic
def unit_stride(typingctx, row):
    """``row`` (1-d, any layout) as a C-layout view of the same memory: its stride is
    taken to be the itemsize. Only for rows the boundary guarantees to have unit
    stride (``_boundary.kernel_layout``): a loop over a layout-A row cannot assume
    it and stays scalar (e.g. the NaN scans: 1.0 against 0.1 ns per element)."""
    if not (isinstance(row, types.Array) and row.ndim == 1):
        return None
    result = row.copy(layout="C")

    def codegen(context, builder, sig, args):
        src = context.make_array(sig.args[0])(context, builder, args[0])
        dst = context.make_array(sig.return_type)(context, builder)
        populate_array(
            dst,
            data=src.data,
            shape=src.shape,
            strides=cgutils.pack_array(builder, [src.itemsize]),
            itemsize=src.itemsize,
            meminfo=src.meminfo,
            parent=src.parent,
        )
        return impl_ret_borrowed(context, builder, sig.return_type, dst._getvalue())

    return result(row), codegen


# --------------------------------------------------------------------------- vector width


@intrinsic
def _prefer_wide_vectors(typingctx):
    """Mark the calling function "prefer-vector-width"="512".

    LLVM keeps to 256-bit vectors on AVX-512 CPUs unless told; for the exp and
    max loops 512-bit vectors measured 0.34 -> 0.24 ns per element (exp + sum,
    bitwise identical results). Harmless on CPUs without AVX-512. llvmlite only
    accepts known attribute names, hence ``set.add`` on its attribute set.
    """

    def codegen(context, builder, sig, args):
        set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        return context.get_dummy_value()

    return types.void(), codegen


# --------------------------------------------------------------------------- exp


@intrinsic
def _float32_from_bits(typingctx, bits):
    """Reinterpret the low 32 bits of an integer as a float32 (vectorisable)."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        value = args[0]
        if bits.bitwidth > 32:
            value = builder.trunc(value, ir.IntType(32))
        return builder.bitcast(value, ir.FloatType())

    return types.float32(bits), codegen


_LOG2E = np.float32(1.44269504088896341)
_LN2_HI = np.float32(0.693359375)  # ln 2 = _LN2_HI + _LN2_LO (Cody-Waite split)
_LN2_LO = np.float32(-2.12194440e-4)
_EXP_MIN = np.float32(-87.33654)  # below: exp underflows the float32 normal range
_EXP_POLY = tuple(
    np.float32(c)
    for c in (
        1.9875691500e-4,
        1.3981999507e-3,
        8.3334519073e-3,
        4.1665795894e-2,
        1.6666665459e-1,
        5.0000001201e-1,
    )
)
_F32_HALF, _F32_ONE, _F32_ZERO = np.float32(0.5), np.float32(1.0), np.float32(0.0)


@njit(fastmath=_CONTRACT, inline="always")
def _exp_float32(x):
    """exp(x) = 2**n * exp(r), x = n ln2 + r, |r| <= ln2/2; exp(r) by a degree-7 polynomial."""
    xc = max(x, _EXP_MIN)
    n = np.floor(xc * _LOG2E + _F32_HALF)
    r = xc - n * _LN2_HI - n * _LN2_LO
    c0, c1, c2, c3, c4, c5 = _EXP_POLY
    poly = ((((c0 * r + c1) * r + c2) * r + c3) * r + c4) * r + c5
    poly = poly * r * r + r + _F32_ONE
    two_n = _float32_from_bits((np.int32(n) + np.int32(127)) << np.int32(23))
    return poly * two_n if x >= _EXP_MIN else _F32_ZERO


def _exp(x):
    return math.exp(x)


@overload(_exp, jit_options={"fastmath": _CONTRACT})
def _exp_overload(x):
    if x == types.float32:
        return lambda x: _exp_float32(x)
    return lambda x: math.exp(x)


@njit(fastmath=_CONTRACT, cache=True)
def exp_shifted(row, shift):
    """row[j] = exp(row[j] - shift) in place."""
    _prefer_wide_vectors()
    for j in range(row.shape[0]):
        row[j] = _exp(row[j] - shift)


@njit(fastmath={"contract", "reassoc"}, cache=True)
def exp_shifted_sum(row, shift):
    """row[j] = exp(row[j] - shift) in place; returns sum(row) (one pass instead of two)."""
    _prefer_wide_vectors()
    total = row.dtype.type(0)
    for j in range(row.shape[0]):
        e = _exp(row[j] - shift)
        row[j] = e
        total += e
    return total


@njit(cache=True)
def scalar_exp(x):
    """exp(x) of one number (exp(-inf) = 0)."""
    return math.exp(x)


# --------------------------------------------------------------------------- reductions


@intrinsic
def _maxnum(typingctx, a, b):
    """llvm.maxnum: the larger of two floats (the other one if either is NaN).
    Unlike numba's ``max``, a loop reducing with it vectorises without fast-math flags."""
    if a != b or a not in (types.float32, types.float64):
        return None

    def codegen(context, builder, sig, args):
        ty = args[0].type
        name = "llvm.maxnum.f32" if a == types.float32 else "llvm.maxnum.f64"
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ty, [ty, ty]), name)
        return builder.call(fn, args)

    return a(a, b), codegen


@njit(cache=True)
def row_max(row):
    """max(row), -inf for an empty row (NaN entries are skipped, as by ``maxnum``).
    The maximum is exact, so the vectorised association order does not matter."""
    _prefer_wide_vectors()
    m = row.dtype.type(-np.inf)
    for j in range(row.shape[0]):
        m = _maxnum(m, row[j])
    return m


@njit(fastmath={"reassoc"}, cache=True)
def row_sum(row):
    """sum(row); "reassoc" lets LLVM keep vector partial sums (fixed order per build)."""
    total = row.dtype.type(0)
    for j in range(row.shape[0]):
        total += row[j]
    return total


@njit(fastmath={"reassoc", "contract"}, cache=True)
def row_dot(x, y):
    """sum(x * y) over one row."""
    total = x.dtype.type(0)
    for j in range(x.shape[0]):
        total += x[j] * y[j]
    return total


# --------------------------------------------------------------------------- dropout

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_U30, _U27, _U31, _U40, _U1 = (np.uint64(s) for s in (30, 27, 31, 40, 1))


@njit(inline="always")
def _splitmix64(seed, n):
    """Element n of the splitmix64 stream seeded with ``seed`` (uint64 arithmetic)."""
    z = seed + (n + _U1) * _GOLDEN
    z = (z ^ (z >> _U30)) * _MIX1
    z = (z ^ (z >> _U27)) * _MIX2
    return z ^ (z >> _U31)


@njit(cache=True)
def dropout_row(row, seed, first, dropout_p, keep_scale):
    """row[j] *= keep / (1 - p) where keep is decided by stream element first + j."""
    for j in range(row.shape[0]):
        bits = _splitmix64(seed, np.uint64(first + j))
        u = np.float64(bits >> _U40) * 5.9604644775390625e-08  # 2**-24
        row[j] = row[j] * keep_scale if u >= dropout_p else 0
