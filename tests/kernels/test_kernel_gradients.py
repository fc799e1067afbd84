"""The NumPy twins against float64 central finite differences, every element."""

from __future__ import annotations

import numpy as np
import pytest

from tinyattn.kernels import reference


def numerical_gradient(f, x, eps=1e-6):
    """d sum(f() * weights) / dx by central differences; f reads x in place."""
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        saved = x[index]
        x[index] = saved + eps
        plus = f()
        x[index] = saved - eps
        minus = f()
        x[index] = saved
        grad[index] = (plus - minus) / (2 * eps)
    return grad


CASES = [
    dict(B=1, Hq=1, Hkv=1, L=3, S=4, D=2, Dv=3, causal=False, mask=None),
    dict(B=1, Hq=2, Hkv=1, L=4, S=3, D=3, Dv=2, causal=True, mask=None),
    dict(B=2, Hq=2, Hkv=2, L=2, S=5, D=2, Dv=2, causal=False, mask="float"),
    dict(B=1, Hq=2, Hkv=1, L=3, S=3, D=2, Dv=2, causal=False, mask="bool"),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dropout_p", [0.0, 0.4])
def test_flash_twin_gradients(case, dropout_p):
    rng = np.random.default_rng(0)
    B, Hq, Hkv, L, S, D, Dv = (case[n] for n in ("B", "Hq", "Hkv", "L", "S", "D", "Dv"))
    q, k, v = (
        rng.standard_normal(shape) for shape in ((B, Hq, L, D), (B, Hkv, S, D), (B, Hkv, S, Dv))
    )
    weights = rng.standard_normal((B, Hq, L, Dv))
    mask = None
    if case["mask"] == "float":
        mask = rng.standard_normal((B, 1, L, S))
    elif case["mask"] == "bool":
        mask = rng.random((L, S)) > 0.3
        mask[0] = False  # one fully masked row: its gradient must be 0
    options = dict(causal=case["causal"], mask=mask, dropout_p=dropout_p, seed=7)

    def loss():
        return np.sum(reference.flash_attention_forward(q, k, v, **options)[0] * weights)

    out, logsumexp = reference.flash_attention_forward(q, k, v, **options)
    dq, dk, dv = reference.flash_attention_backward(weights, q, k, v, out, logsumexp, **options)
    for name, x, analytic in (("q", q, dq), ("k", k, dk), ("v", v, dv)):
        np.testing.assert_allclose(
            analytic, numerical_gradient(loss, x), atol=1e-7, rtol=1e-6, err_msg=name
        )
    assert np.all(np.isfinite(dq)) and np.all(np.isfinite(dk)) and np.all(np.isfinite(dv))


def test_materialised_path_gradients_and_mask_gradient():
    """scores -> softmax_rows -> dropout -> weighted_sum, including d/dmask = dscores."""
    rng = np.random.default_rng(1)
    q, k, v = (
        rng.standard_normal((1, 2, 3, 2)),
        rng.standard_normal((1, 1, 4, 2)),
        rng.standard_normal((1, 1, 4, 3)),
    )
    mask = rng.standard_normal((1, 2, 3, 4))
    weights_out = rng.standard_normal((1, 2, 3, 3))
    options = dict(dropout_p=0.3, seed=11)

    def forward():
        scores = reference.attention_scores(q, k, mask=mask)
        weights = reference.softmax_rows(scores)
        return reference.weighted_sum(reference.attention_dropout(weights, **options), v), weights

    def loss():
        return np.sum(forward()[0] * weights_out)

    _, weights = forward()
    dropped = reference.attention_dropout(weights, **options)
    ddropped, dv = reference.weighted_sum_backward(weights_out, dropped, v)
    dweights = reference.attention_dropout_backward(ddropped, **options)
    dscores = reference.softmax_rows_backward(dweights, weights)
    dq, dk = reference.attention_scores_backward(dscores, q, k)
    for name, x, analytic in (("q", q, dq), ("k", k, dk), ("v", v, dv), ("mask", mask, dscores)):
        np.testing.assert_allclose(
            analytic, numerical_gradient(loss, x), atol=1e-7, rtol=1e-6, err_msg=name
        )
