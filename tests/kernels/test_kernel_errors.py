"""Bad inputs are rejected at the boundary with messages naming the argument and shapes."""

from __future__ import annotations

import numpy as np
import pytest

from tinyattn import kernels

q = np.zeros((2, 4, 5, 8), np.float32)
k = np.zeros((2, 2, 6, 8), np.float32)
v = np.zeros((2, 2, 6, 3), np.float32)


@pytest.mark.parametrize(
    "change, error, pieces",
    [
        (dict(q=q[0]), ValueError, ["q:", "(4, 5, 8)"]),
        (
            dict(k=np.zeros((2, 2, 6, 7), np.float32)),
            ValueError,
            ["k:", "(2, 2, 6, 7)", "(2, 4, 5, 8)"],
        ),
        (
            dict(k=np.zeros((2, 3, 6, 8), np.float32), v=np.zeros((2, 3, 6, 3), np.float32)),
            ValueError,
            ["k:", "3", "4"],
        ),
        (
            dict(v=np.zeros((2, 2, 7, 3), np.float32)),
            ValueError,
            ["v:", "(2, 2, 7, 3)", "(2, 2, 6, 8)"],
        ),
        (dict(k=k.astype(np.float64)), TypeError, ["k:", "float64", "float32"]),
        (
            dict(q=q.astype(np.float16), k=k.astype(np.float16), v=v.astype(np.float16)),
            TypeError,
            ["q:", "float16"],
        ),
        (dict(q=q.tolist()), TypeError, ["q:", "list"]),
        (dict(mask=np.zeros((3, 5, 6), bool)), ValueError, ["mask:", "(3, 5, 6)", "(2, 4, 5, 6)"]),
        (
            dict(mask=np.zeros((5, 6), np.int64)),
            TypeError,
            ["mask:", "int64", "True = the key takes part"],
        ),
        (dict(dropout_p=1.5), ValueError, ["dropout_p", "1.5"]),
        (dict(seed=-1), ValueError, ["seed", "-1"]),
        (dict(scale=float("nan")), ValueError, ["scale", "nan"]),
        (dict(causal="yes"), TypeError, ["causal", "str"]),
    ],
)
def test_forward_rejects(change, error, pieces):
    args = dict(q=q, k=k, v=v)
    args.update(change)
    with pytest.raises(error) as info:
        kernels.flash_attention_forward(**args)
    for piece in pieces:
        assert piece in str(info.value)


def test_backward_rejects_mismatched_saved_tensors():
    out, logsumexp = kernels.flash_attention_forward(q, k, v)
    with pytest.raises(
        ValueError, match=r"dout: expected shape .*\(2, 4, 5, 3\), got \(2, 4, 5, 8\)"
    ):
        kernels.flash_attention_backward(
            np.zeros((2, 4, 5, 8), np.float32), q, k, v, out, logsumexp
        )
    with pytest.raises(ValueError, match=r"logsumexp: .*\(2, 4, 5\), got \(2, 4\)"):
        kernels.flash_attention_backward(out, q, k, v, out, logsumexp[..., 0])
    with pytest.raises(TypeError, match="out: dtype float64 does not match q dtype float32"):
        kernels.flash_attention_backward(out, q, k, v, out.astype(np.float64), logsumexp)


def test_materialised_path_rejects():
    with pytest.raises(ValueError, match=r"v: expected shape .*S=6.*got \(2, 2, 5, 3\)"):
        kernels.weighted_sum(np.zeros((2, 4, 5, 6), np.float32), np.zeros((2, 2, 5, 3), np.float32))
    with pytest.raises(ValueError, match=r"scores: expected a 4-d array"):
        kernels.softmax_rows(np.zeros((5, 6)))


def test_non_contiguous_inputs_are_accepted():
    rng = np.random.default_rng(0)
    big = rng.standard_normal((2, 4, 10, 16)).astype(np.float32)
    q_view, k_view, v_view = big[:, :, ::2, :8], big[:, :2, :6, ::2], big[:, 2:, :6, :3]
    out, _ = kernels.flash_attention_forward(q_view, k_view, v_view)
    expected, _ = kernels.reference.flash_attention_forward(
        *(np.ascontiguousarray(x) for x in (q_view, k_view, v_view))
    )
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
