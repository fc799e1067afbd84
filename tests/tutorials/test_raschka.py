"""Raschka's causal and multi-head attention (seed 002): registered triu buffer,
``mask.bool()[:T, :T]``, in-place ``masked_fill_`` with ``-torch.inf``."""

import numpy as np
import pytest
from twins import assert_close, assert_same_grads, load_example, to_both, twin_modules


@pytest.mark.parametrize(
    "name, args, width",
    [
        ("CausalAttention", (3, 2, 6, 0.0), 2),
        ("MultiHeadAttentionWrapper", (3, 2, 6, 0.0, 2), 4),
        ("MultiHeadAttention", (3, 2, 6, 0.0, 2), 2),
    ],
)
def test_raschka_attention_matches_torch(name, args, width):
    ref, ours = twin_modules("raschka_attention", lambda m: getattr(m, name)(*args))
    inputs = load_example("raschka_attention", "tinyattn").inputs.numpy().astype(np.float64)
    batch = np.stack([inputs, inputs])  # the book's six 3-d token embeddings, twice
    xr, x = to_both(batch, requires_grad=True)
    out_r, out = ref(xr), ours(x)
    assert tuple(out.shape) == (2, 6, width)
    assert_close(out, out_r)
    (out_r * out_r).sum().backward()
    (out * out).sum().backward()
    assert_same_grads(ours, ref)
    assert_close(x.grad, xr.grad, what="input gradient")


def test_batched_matmul_example_from_the_document():
    import tinyattn as torch

    a = torch.tensor(
        [
            [
                [
                    [0.2745, 0.6584, 0.2775, 0.8573],
                    [0.8993, 0.0390, 0.9268, 0.7388],
                    [0.7179, 0.7058, 0.9156, 0.4340],
                ],
                [
                    [0.0772, 0.3565, 0.1479, 0.5331],
                    [0.4066, 0.2318, 0.4545, 0.9737],
                    [0.4606, 0.5159, 0.4220, 0.5786],
                ],
            ]
        ]
    )
    out = a @ a.transpose(2, 3)
    np.testing.assert_allclose(
        out[0, 0].numpy(),
        [[1.3208, 1.1631, 1.2879], [1.1631, 2.2150, 1.8424], [1.2879, 1.8424, 2.0402]],
        atol=1e-4,
    )
    first_head = a[0, 0, :, :]
    np.testing.assert_allclose((first_head @ first_head.T).numpy(), out[0, 0].numpy(), rtol=1e-6)
