"""The CTC kernels (``tinyattn.kernels._numba_ctc``) against their NumPy twins
(``tinyattn.kernels.ctc``), the twins against finite differences, and the checks at
the boundary."""

from __future__ import annotations

import numpy as np
import pytest
from harness import rand, run_gradcheck

from tinyattn.kernels import ctc


def _case(seed, steps=9, batch=5, classes=6, width=4, dtype=np.float64):
    """Random log-probabilities, labels with repeats, empty and impossible targets."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((steps, batch, classes))
    lp = (x - np.log(np.exp(x).sum(2, keepdims=True))).astype(dtype)
    targets = rng.integers(1, 3, (batch, width))  # few labels: many repeats
    tg_len = rng.integers(0, width + 1, batch)
    in_len = rng.integers(1, steps + 1, batch)
    in_len[0], tg_len[0] = steps, width
    in_len[1], tg_len[1] = 2, width  # no alignment
    tg_len[2] = 0  # empty target
    ext = np.zeros((batch, 2 * width + 1), dtype=np.int64)
    ext[:, 1::2] = np.where(np.arange(width) < tg_len[:, None], targets, 0)
    skip = np.zeros(ext.shape, dtype=bool)
    skip[:, 3::2] = ext[:, 3::2] != ext[:, 1:-2:2]
    return lp, ext, skip, in_len.astype(np.int64), tg_len.astype(np.int64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", range(4))
def test_kernels_match_twins(seed, dtype, monkeypatch):
    args = _case(seed, dtype=dtype)
    g = np.random.default_rng(seed).standard_normal(args[0].shape[1])
    monkeypatch.setenv("TINYATTN_KERNELS", "numba")
    alpha, ll = ctc.ctc_alpha(*args)
    grad = ctc.ctc_grad(*args, alpha, ll, g)
    twin_alpha, twin_ll = ctc.ctc_alpha_twin(*args)
    twin_grad = ctc.ctc_grad_twin(*args, twin_alpha, twin_ll, g)
    assert ll[1] == -np.inf and np.isfinite(ll[[0, 2]]).all()
    np.testing.assert_array_equal(alpha == -np.inf, twin_alpha == -np.inf)
    live = alpha != -np.inf
    np.testing.assert_allclose(alpha[live], twin_alpha[live], rtol=1e-13)
    np.testing.assert_allclose(ll, twin_ll, rtol=1e-13)
    assert grad.dtype == twin_grad.dtype == dtype
    assert (grad[:, 1] == 0).all()  # no alignment: flat
    tol = 1e-12 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(grad, twin_grad, rtol=tol, atol=tol)


def test_gradient_sums_to_minus_g_per_step():
    """sum_k d ll / d lp[t, k] = 1 (every alignment passes one state per step), so each
    live step's gradient sums to -g."""
    lp, ext, skip, in_len, tg_len = _case(7)
    g = np.arange(1.0, 6.0)
    alpha, ll = ctc.ctc_alpha(lp, ext, skip, in_len, tg_len)
    grad = ctc.ctc_grad(lp, ext, skip, in_len, tg_len, alpha, ll, g)
    for n in (0, 2, 3, 4):
        np.testing.assert_allclose(grad[: in_len[n], n].sum(1), -g[n], rtol=1e-12)
        assert (grad[in_len[n] :, n] == 0).all()


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_op_gradcheck_on_each_backend(backend, monkeypatch):
    """The whole op through the kernels and through the twins: float64 finite differences."""
    monkeypatch.setenv("TINYATTN_KERNELS", backend)
    lp = np.log(rand(6, 3, 4, seed=50, low=0.1, high=0.9))
    tg, il, tl = np.array([[1, 1, 2], [3, 0, 0], [2, 3, 2]]), [6, 4, 5], [3, 1, 3]
    run_gradcheck(
        lambda T, x: T.nn.functional.ctc_loss(x, T.tensor(tg), il, tl, reduction="sum"), lp
    )


def test_boundary_checks():
    lp, ext, skip, in_len, tg_len = _case(0)
    bad = [
        ((lp[0], ext, skip, in_len, tg_len), "log_probs"),
        ((lp, ext.astype(np.int32), skip, in_len, tg_len), "ext"),
        ((lp, ext, skip[:, 1:], in_len, tg_len), "skip"),
        ((lp, ext, skip, in_len + 20, tg_len), "input_lengths"),
        ((lp, ext, skip, in_len, tg_len + 9), "target_lengths"),
        ((lp, ext + 10, skip, in_len, tg_len), "class indices"),
    ]
    for args, message in bad:
        with pytest.raises(ValueError, match=message):
            ctc.ctc_alpha(*args)
