"""Determinism, fully masked rows, mask forms, dropout, backend switch, torch parity."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tinyattn import kernels
from tinyattn.kernels import reference

from ._problems import make_problem, run_flash


def test_bitwise_deterministic(fused_backend):
    rng = np.random.default_rng(0)
    q, k, v, dout = make_problem(rng, 2, 4, 2, 67, 301, 32, 16, np.float32)
    options = dict(causal=True, mask=rng.random((2, 1, 1, 301)) > 0.2, dropout_p=0.1, seed=3)
    first, second = run_flash(q, k, v, dout, **options), run_flash(q, k, v, dout, **options)
    for a, b in zip(first, second):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fully_masked_rows_give_zeros(fused_backend, dtype):
    rng = np.random.default_rng(1)
    q, k, v, dout = make_problem(rng, 2, 2, 1, 9, 13, 8, 4, dtype)
    mask = rng.random((2, 2, 9, 13)) > 0.5
    mask[0, 1, 3] = False
    mask[1, :, 0] = False
    float_mask = np.where(mask, 0.0, -np.inf)
    for m in (mask, float_mask):
        out, logsumexp, dq, dk, dv = run_flash(q, k, v, dout, mask=m, dropout_p=0.2, seed=5)
        blocked = ~mask.any(axis=-1)
        assert np.all(out[blocked] == 0) and np.all(np.isneginf(logsumexp[blocked]))
        assert np.all(dq[blocked] == 0)
        assert all(np.all(np.isfinite(x)) for x in (out, dq, dk, dv))
        assert np.all(np.isfinite(logsumexp[~blocked]))
    weights = kernels.softmax_rows(kernels.attention_scores(q, k, mask=mask))
    assert np.all(weights[blocked] == 0) and np.all(np.isfinite(weights))


def test_empty_key_axis_gives_zeros(fused_backend):
    q, k, v, dout = make_problem(np.random.default_rng(2), 1, 2, 2, 3, 0, 4, 5, np.float32)
    out, logsumexp, dq, dk, dv = run_flash(q, k, v, dout)
    assert out.shape == (1, 2, 3, 5) and np.all(out == 0) and np.all(np.isneginf(logsumexp))
    assert np.all(dq == 0) and dk.shape == k.shape and dv.shape == v.shape


def test_mask_normalisation_forms():
    shape = (2, 4, 3, 5)
    key_padding = np.ones((2, 1, 1, 5), bool)
    assert kernels.normalize_mask(key_padding, shape, np.dtype(np.float32)).shape == (2, 1, 1, 5)
    assert kernels.normalize_mask(np.zeros((3, 1)), shape, np.dtype(np.float64)).shape == (
        1,
        1,
        3,
        5,
    )
    normalised = kernels.normalize_mask(
        np.array([True, False] * 2 + [True]), shape, np.dtype(np.float32)
    )
    assert normalised.dtype == np.float32 and normalised.shape == (1, 1, 1, 5)
    assert normalised[0, 0, 0, 0] == 0 and np.isneginf(normalised[0, 0, 0, 1])


def test_bool_and_float_masks_agree(fused_backend):
    rng = np.random.default_rng(3)
    q, k, v, dout = make_problem(rng, 1, 2, 2, 6, 7, 4, 4, np.float64)
    mask = rng.random((6, 7)) > 0.4
    mask[:, 0] = True
    as_bool = run_flash(q, k, v, dout, mask=mask)
    as_float = run_flash(q, k, v, dout, mask=np.where(mask, 0.0, -np.inf))
    for a, b in zip(as_bool, as_float):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_dropout_rng_is_shared_and_scaled(fused_backend):
    """The kernels drop exactly the weights that reference.dropout_keep drops."""
    B, H, L, S, p = 1, 2, 5, 300, 0.3
    q = np.zeros((B, H, L, 1))  # all scores 0: weights 1/S
    k = np.zeros((B, H, S, 1))
    v = np.eye(S)[None, None].repeat(H, axis=1)  # out[..., j] = dropped weight j
    out, _ = kernels.flash_attention_forward(q, k, v, dropout_p=p, seed=42)
    keep = reference.dropout_keep(42, (B, H, L, S), p)
    np.testing.assert_allclose(out, keep / (S * (1 - p)), rtol=1e-12)
    assert abs(keep.mean() - (1 - p)) < 0.03
    assert not np.array_equal(keep, reference.dropout_keep(43, (B, H, L, S), p))
    dropped = kernels.attention_dropout(np.full((B, H, L, S), 1 / S), dropout_p=p, seed=42)
    np.testing.assert_allclose(dropped, out, rtol=1e-12)
    out_all_dropped, _ = kernels.flash_attention_forward(q, k, v, dropout_p=1.0, seed=42)
    assert np.all(out_all_dropped == 0)


def test_numpy_backend_switch_read_at_call_time(monkeypatch):
    rng = np.random.default_rng(4)
    q, k, v, _ = make_problem(rng, 1, 1, 1, 4, 4, 2, 2, np.float64)
    monkeypatch.setenv("TINYATTN_KERNELS", "numpy")
    assert kernels.backend() == "numpy"
    out_numpy, _ = kernels.flash_attention_forward(q, k, v)
    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    out_numba, _ = kernels.flash_attention_forward(q, k, v)
    np.testing.assert_allclose(out_numpy, out_numba, rtol=1e-12)
    monkeypatch.setenv("TINYATTN_KERNELS", "cuda")
    with pytest.raises(ValueError, match="TINYATTN_KERNELS"):
        kernels.flash_attention_forward(q, k, v)


def test_import_does_not_load_numba():
    code = "import sys, tinyattn.kernels; print('numba' in sys.modules, 'scipy' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("causal", [False, True])
def test_parity_with_torch_sdpa(fused_backend, causal):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(5)
    q, k, v, dout = make_problem(rng, 2, 4, 2, 37, 45, 16, 8, np.float64)
    mask = None if causal else rng.random((2, 1, 37, 45)) > 0.3
    out, _, dq, dk, dv = run_flash(q, k, v, dout, causal=causal, mask=mask, scale=0.3)
    tq, tk, tv = (torch.tensor(x, requires_grad=True) for x in (q, k, v))
    tmask = None if mask is None else torch.tensor(mask)
    tout = F.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=tmask, is_causal=causal, scale=0.3, enable_gqa=True
    )
    tout.backward(torch.tensor(dout))
    for name, ours, theirs in (
        ("out", out, tout),
        ("dq", dq, tq.grad),
        ("dk", dk, tk.grad),
        ("dv", dv, tv.grad),
    ):
        np.testing.assert_allclose(
            ours, theirs.detach().numpy(), rtol=1e-10, atol=1e-10, err_msg=name
        )
