"""Strided q, k, v (heads as views of a fused projection) reach the fused kernels uncopied.

The transformer pattern ``qkv(x).split(d, dim=2)`` then ``.view(b, t, h, dh).transpose(1, 2)``
gives (B, H, L, D) views of a (B, L, 3, H, D) buffer: unit last stride, rows 3 * H * D
apart. The kernels read them in place and must give the numbers of the contiguous
copies; layouts they cannot read (non-unit last stride, negative, overlapping or odd
strides, unaligned) are copied at the boundary and still give the right numbers.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from tinyattn import kernels
from tinyattn.kernels import _blas
from tinyattn.kernels._boundary import check_attention, has_kernel_layout
from tinyattn.kernels._numba_tiles import gemm

from ._problems import run_flash

B, L, HQ, D = 2, 19, 4, 8
NAMES = ("out", "logsumexp", "dq", "dk", "dv")


def fused_heads(rng, dtype, B=B, L=L, Hq=HQ, Hkv=HQ, D=D):
    """q (B, Hq, L, D), k, v (B, Hkv, L, D) as views of one (B, L, (Hq + 2 Hkv) D) buffer,
    and dout as the transposed view of a (B, L, Hq, D) array (as autograd hands it back)."""
    buf = rng.standard_normal((B, L, (Hq + 2 * Hkv) * D)).astype(dtype)
    q = buf[..., : Hq * D].reshape(B, L, Hq, D).transpose(0, 2, 1, 3)
    k = buf[..., Hq * D : (Hq + Hkv) * D].reshape(B, L, Hkv, D).transpose(0, 2, 1, 3)
    v = buf[..., (Hq + Hkv) * D :].reshape(B, L, Hkv, D).transpose(0, 2, 1, 3)
    dout = rng.standard_normal((B, L, Hq, D)).astype(dtype).transpose(0, 2, 1, 3)
    return buf, (q, k, v, dout)


def contiguous(arrays):
    return tuple(np.ascontiguousarray(a) for a in arrays)


def assert_same(got, expected, dtype):
    """Equal within 1e-6 relative (float32) / 1e-13 (float64); the fused kernels are
    in fact bitwise equal on strided and contiguous inputs, but BLAS need not be."""
    tol = 1e-6 if dtype == np.float32 else 1e-13
    for name, x, y in zip(NAMES, got, expected):
        assert x.shape == y.shape, name
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol, err_msg=name)


OPTIONS = [
    dict(),
    dict(causal=True),
    dict(mask="bool"),
    dict(mask="float", causal=True),
    dict(dropout_p=0.3, seed=11),
    dict(dropout_p=0.3, seed=5, causal=True),
]


def _options(options, rng, dtype, Hq=HQ):
    options = dict(options)
    if options.get("mask") == "bool":
        options["mask"] = rng.random((B, 1, L, L)) > 0.3
    elif options.get("mask") == "float":
        options["mask"] = rng.standard_normal((1, Hq, L, L)).astype(dtype)
    return options


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("hkv", [HQ, 2])
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(map(str, o)) or "plain")
def test_strided_heads_equal_contiguous_copies(fused_backend, dtype, hkv, options):
    rng = np.random.default_rng(hkv)
    _, problem = fused_heads(rng, dtype, Hkv=hkv)
    options = _options(options, rng, dtype)
    got = run_flash(*problem, **options)
    expected = run_flash(*contiguous(problem), **options)
    assert_same(got, expected, dtype)


@pytest.mark.parametrize("options", OPTIONS[:2] + OPTIONS[4:5], ids=["plain", "causal", "dropout"])
def test_numpy_twin_gives_the_numbers_of_the_kernels_on_strided_heads(monkeypatch, options):
    rng = np.random.default_rng(4)
    _, problem = fused_heads(rng, np.float64, Hkv=2)
    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    fused = run_flash(*problem, **options)
    monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
    twin = run_flash(*problem, **options)
    for name, x, y in zip(NAMES, fused, twin):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12, err_msg=name)
    assert twin[0].strides == fused[0].strides  # the same output layout on every backend


def test_unit_last_stride_views_are_not_copied(monkeypatch):
    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    rng = np.random.default_rng(0)
    buf, (q, k, v, dout) = fused_heads(rng, np.float32)
    args = check_attention(q, k, v, scale=None, causal=False, mask=None, dropout_p=0.0, seed=0)
    assert all(np.shares_memory(x, buf) for x in (args.q, args.k, args.v))

    copies = []
    real = np.ascontiguousarray

    def spy(a, *rest, **kw):  # records the calls that copy
        result = real(a, *rest, **kw)
        if not np.shares_memory(result, a):
            copies.append(np.shape(a))
        return result

    monkeypatch.setattr(np, "ascontiguousarray", spy)
    out, logsumexp = kernels.flash_attention_forward(q, k, v, causal=True)
    kernels.flash_attention_backward(dout, q, k, v, out, logsumexp, causal=True)
    assert copies == []
    # the spy does see the copies that are needed: a non-unit last stride
    kernels.flash_attention_forward(q[..., ::2], k[..., ::2], v, causal=True)
    assert len(copies) == 2


def test_output_memory_follows_q_and_stays_contiguous_for_contiguous_q(fused_backend):
    rng = np.random.default_rng(1)
    _, (q, k, v, _) = fused_heads(rng, np.float32)
    out, _ = kernels.flash_attention_forward(q, k, v)
    assert out.shape == (B, HQ, L, D)
    # (B, L, Hq, D) memory seen as (B, Hq, L, D): the user's transpose back is free
    assert out.transpose(0, 2, 1, 3).flags.c_contiguous
    qc, kc, vc = contiguous((q, k, v))
    assert kernels.flash_attention_forward(qc, kc, vc)[0].flags.c_contiguous
    assert kernels.flash_attention_forward(q, k, v, out_like_q=False)[0].flags.c_contiguous


@pytest.mark.parametrize("name", ["numba", "numba-loops", "numpy"])
def test_gradients_follow_the_memory_order_of_their_inputs(monkeypatch, name):
    monkeypatch.setenv("TINYATTN_KERNELS", name)
    rng = np.random.default_rng(1)
    _, (q, k, v, dout) = fused_heads(rng, np.float32, Hkv=2)
    grads = run_flash(q, k, v, dout)[2:]
    for grad, x in zip(grads, (q, k, v)):
        assert grad.shape == x.shape and grad.transpose(0, 2, 1, 3).flags.c_contiguous
    grads = run_flash(*contiguous((q, k, v, dout)))[2:]
    assert all(grad.flags.c_contiguous for grad in grads)


def _raw_array(values, strides, offset):
    """An array of ``values``' shape and dtype over a byte buffer, with the given byte
    strides and byte offset (which may leave it unaligned or with odd strides)."""
    span = offset + sum((n - 1) * s for n, s in zip(values.shape, strides)) + values.itemsize
    raw = np.zeros(span, np.uint8)
    x = np.ndarray(values.shape, values.dtype, buffer=raw, offset=offset, strides=strides)
    x[...] = values
    return x


def _odd_layouts(rng, dtype):
    """(name, q, k, v) with a layout the kernels cannot read in place (copied at the
    boundary), or can but only with care (expanded heads: stride 0, read in place)."""
    wide = rng.standard_normal((B, HQ, L, 2 * D)).astype(dtype)
    base = rng.standard_normal((B, HQ, L, D)).astype(dtype)
    row = rng.standard_normal((B, HQ, 1, D)).astype(dtype)
    heads = rng.standard_normal((B, 1, L, D)).astype(dtype)
    size = base.itemsize
    c_strides = base.strides
    odd = (c_strides[0] + 2, c_strides[1], D * size + 2, size)  # not multiples of the itemsize
    expanded = np.broadcast_to(heads, base.shape)
    return [
        ("last stride 2", wide[..., ::2], wide[..., 1::2], base),
        ("negative rows", base[:, :, ::-1], base, base[:, ::-1]),
        ("negative last", base[..., ::-1], base, base),
        ("overlapping rows", np.broadcast_to(row, base.shape), base, base),
        ("expanded heads", base, expanded, expanded),
        ("unaligned", _raw_array(base, c_strides, 1), base, base),
        ("odd strides", _raw_array(base, odd, 0), base, base),
    ]


def test_the_boundary_reads_in_place_exactly_the_layouts_it_can():
    rng = np.random.default_rng(0)
    for name, q, k, v in _odd_layouts(rng, np.float32):
        in_place = all(has_kernel_layout(x) for x in (q, k, v))
        assert in_place == (name == "expanded heads"), name
        args = check_attention(q, k, v, scale=None, causal=False, mask=None, dropout_p=0, seed=0)
        assert all(has_kernel_layout(x) for x in (args.q, args.k, args.v)), name
        assert (args.q is q) == has_kernel_layout(q), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layouts_the_kernels_cannot_read_are_copied_and_right(fused_backend, dtype):
    rng = np.random.default_rng(2)
    dout = rng.standard_normal((B, HQ, L, D)).astype(dtype)
    for name, q, k, v in _odd_layouts(rng, dtype):
        for options in (dict(), dict(causal=True, dropout_p=0.2, seed=3)):
            got = run_flash(q, k, v, dout, **options)
            expected = run_flash(*contiguous((q, k, v, dout)), **options)
            assert_same(got, expected, dtype)
        # the same through strided dout and out in the backward
        out, logsumexp = kernels.flash_attention_forward(q, k, v)
        odd_dout = _raw_array(dout, (dout.strides[0] + 2,) + dout.strides[1:], 0)
        wide_out = np.zeros(out.shape[:-1] + (2 * D,), dtype)
        wide_out[..., ::2] = out
        got = kernels.flash_attention_backward(odd_dout, q, k, v, wide_out[..., ::2], logsumexp)
        expected = kernels.flash_attention_backward(dout, *contiguous((q, k, v, out)), logsumexp)
        for x, y in zip(got, expected):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6, err_msg=name)


@njit
def _gemm(alpha, a, b, beta, c, code):
    gemm(alpha, a, b, beta, c, code)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_on_strided_tiles_every_backend(dtype):
    """Tiles with strided rows (layout A): row-major, transposed, as output; and tiles
    that BLAS cannot take (no unit stride), which go to the loops."""
    codes = [0] + [c for c, ok in ((1, _blas.numpy_blas()), (2, _blas.scipy_available())) if ok]
    rng = np.random.default_rng(5)
    m, k, n = 13, 9, 11
    big = rng.standard_normal((3, 40, 60)).astype(dtype)
    cases = [
        (big[0, :m, 3 : 3 + k], big[1, :n, :k].T, "row-major a, transposed b"),
        (big[1, :k, 5 : 5 + m].T, big[2, 7 : 7 + k, :n], "transposed a, row-major b"),
        (big[0, : 2 * m : 2, : 2 * k : 2], big[2, :k, ::3][:, :n], "no unit stride: loops"),
        (big[0, :1, :k][[0] * m] * 0 + big[0, :m, :k], big[1, :k, :1][:, [0] * n], "gathered"),
    ]
    for code in codes:
        for a, b, what in cases:
            if a.flags.c_contiguous or a.flags.f_contiguous:
                a = np.lib.stride_tricks.as_strided(a)  # (gathered copies are contiguous)
            out_buf = rng.standard_normal((m, 2 * n)).astype(dtype)
            c = out_buf[:, 1 : 1 + n]  # strided rows
            expected = 0.5 * (a.astype(np.float64) @ b) - 2.0 * c
            before = out_buf.copy()
            _gemm(0.5, a, b, -2.0, c, code)
            tol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(c, expected, rtol=tol, atol=tol, err_msg=f"{code} {what}")
            untouched = np.ones(out_buf.shape, bool)
            untouched[:, 1 : 1 + n] = False
            assert np.array_equal(out_buf[untouched], before[untouched]), f"{code} {what}"


def test_each_kernel_compiles_once_per_dtype_for_contiguous_and_strided_callers(monkeypatch):
    from tinyattn.kernels import _numba_flash

    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    rng = np.random.default_rng(6)
    _, problem = fused_heads(rng, np.float32)
    run_flash(*problem, causal=True)
    run_flash(*contiguous(problem))
    # (a small forward runs the serial twin of the forward kernel: either may be the one
    # these calls compiled, depending on what ran before; each compiles at most once)
    forward = (_numba_flash._forward_kernel, _numba_flash._forward_kernel_serial)
    for group in (forward, (_numba_flash._backward_kernel,)):
        counts = [
            len([sig for sig in kernel.signatures if "float32" in str(sig[1])]) for kernel in group
        ]
        assert max(counts) == 1, [kernel.signatures for kernel in group]
