"""One dropout mask for every attention path.

For the same ``manual_seed``, every path that runs attention with dropout draws the
same seed (``nn._attention.dropout_seed``) and turns it into the same keep mask
(``kernels.dropout_keep``, a function of the weight's flat index), so outputs and
gradients agree across: the fused numba kernels, their NumPy twins
(``TINYATTN_KERNELS=numpy``), the stored-weights path (taken for a float mask that
requires grad, for leading dims that broadcast, for 5-D inputs), and
``nn.MultiheadAttention`` with ``need_weights`` True and False.
"""

import numpy as np
import pytest

import tinyattn
from tinyattn import kernels
from tinyattn.nn.functional import scaled_dot_product_attention as sdpa
from tinyattn.nn.functional.attention import dropout_seed

P, SEED = 0.4, 11
B, H, L, S, D = 2, 3, 5, 6, 4


def _arrays(dtype=np.float64):
    rng = np.random.default_rng(0)
    q, k, v = (
        rng.standard_normal(s).astype(dtype) for s in ((B, H, L, D), (1, H, S, D), (1, H, S, D))
    )
    return q, k, v, rng.standard_normal((B, H, L, D)).astype(dtype)


def _run(q, k, v, dout, **kw):
    """Output and q/k/v gradients of one SDPA call after manual_seed(SEED)."""
    ts = [tinyattn.tensor(a, requires_grad=True) for a in (q, k, v)]
    tinyattn.manual_seed(SEED)
    out = sdpa(*ts, dropout_p=P, **kw)
    out.backward(tinyattn.tensor(dout.reshape(tuple(out.shape))))
    return out, [out.detach().numpy().reshape(B, H, L, D)] + [
        t.grad.numpy().reshape(-1, H, t.shape[-2], D).sum(0) for t in ts[1:]
    ] + [ts[0].grad.numpy().reshape(B, H, L, D)]


def _expected(q, k, v, dout):
    """The stored-weights NumPy math with the seed every path draws after manual_seed(SEED)."""
    tinyattn.manual_seed(SEED)
    seed = dropout_seed(P)
    kb, vb = (np.broadcast_to(a, (B, H, S, D)) for a in (k, v))
    out, weights = kernels.reference.attention_forward(q, kb, vb, dropout_p=P, seed=seed)
    dq, dk, dv, _ = kernels.reference.attention_backward(
        dout, q, kb, vb, weights, dropout_p=P, seed=seed
    )
    return [out, dk.sum(0), dv.sum(0), dq]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_sdpa_path_draws_the_same_dropout_mask(dtype, monkeypatch):
    q, k, v, dout = _arrays(dtype)
    kB, vB = (np.repeat(a, B, axis=0) for a in (k, v))
    runs = {}
    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    out, runs["fused"] = _run(q, kB, vB, dout)
    assert out.grad_fn.fused is not None
    monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
    out, runs["flash twin"] = _run(q, kB, vB, dout)
    assert out.grad_fn.fused is not None
    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    mask = tinyattn.zeros(L, S, dtype=out.dtype, requires_grad=True)
    out, runs["stored weights: mask grad"] = _run(q, kB, vB, dout, attn_mask=mask)
    assert out.grad_fn.fused is None
    out, runs["stored weights: broadcast"] = _run(q, k, v, dout)
    assert out.grad_fn.fused is None
    five = [a.reshape((a.shape[0], 1) + a.shape[1:]) for a in (q, kB, vB)]
    out, runs["stored weights: 5-D"] = _run(*five, dout)
    assert out.grad_fn.fused is None
    expected = _expected(q, k, v, dout.astype(np.float64) if dtype == np.float64 else dout)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    names = ["out", "dk", "dv", "dq"]
    for path, got in runs.items():
        for name, g, e in zip(names, got, expected):
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol, err_msg=f"{path}: {name}")


def test_dropout_actually_drops_and_depends_on_the_seed():
    q, k, v, dout = _arrays()
    kB, vB = (np.repeat(a, B, axis=0) for a in (k, v))
    ts = [tinyattn.tensor(a) for a in (q, kB, vB)]
    plain = sdpa(*ts).numpy()
    tinyattn.manual_seed(SEED)
    a = sdpa(*ts, dropout_p=P).numpy()
    tinyattn.manual_seed(SEED + 1)
    b = sdpa(*ts, dropout_p=P).numpy()
    assert not np.allclose(a, plain) and not np.allclose(a, b)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_multihead_attention_need_weights_true_and_false_drop_the_same_weights(
    backend, monkeypatch
):
    monkeypatch.setenv("TINYATTN_KERNELS", backend)
    tinyattn.manual_seed(0)
    mha = tinyattn.nn.MultiheadAttention(8, 2, dropout=0.5, dtype=tinyattn.float64)
    mha.train()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3, 8))
    results = []
    for need_weights in (True, False):
        xt = tinyattn.tensor(x, requires_grad=True)
        tinyattn.manual_seed(SEED)
        out, _ = mha(xt, xt, xt, need_weights=need_weights)
        out.sum().backward()
        results.append(
            (out.detach().numpy(), xt.grad.numpy(), mha.in_proj_weight.grad.numpy().copy())
        )
        mha.zero_grad()
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    mha.eval()
    out_eval, _ = mha(tinyattn.tensor(x), tinyattn.tensor(x), tinyattn.tensor(x))
    assert not np.allclose(out_eval.detach().numpy(), results[0][0])  # dropout did act
