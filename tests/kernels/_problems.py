"""Random attention problems for the kernel tests."""

from __future__ import annotations

from tinyattn import kernels


def make_problem(rng, B, Hq, Hkv, L, S, D, Dv, dtype):
    """Random q, k, v, dout of the given sizes."""
    q = rng.standard_normal((B, Hq, L, D)).astype(dtype)
    k = rng.standard_normal((B, Hkv, S, D)).astype(dtype)
    v = rng.standard_normal((B, Hkv, S, Dv)).astype(dtype)
    dout = rng.standard_normal((B, Hq, L, Dv)).astype(dtype)
    return q, k, v, dout


def run_flash(q, k, v, dout, **options):
    """Forward and backward of the fused path with the current backend."""
    out, logsumexp = kernels.flash_attention_forward(q, k, v, **options)
    grads = kernels.flash_attention_backward(dout, q, k, v, out, logsumexp, **options)
    return (out, logsumexp, *grads)
