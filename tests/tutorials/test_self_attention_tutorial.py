"""The PyTorch self-attention tutorial (seed 003): ScaledDotProductAttention with a
temperature, MultiHeadAttention with split/combine heads, a post-norm TransformerBlock,
and ``subsequent_mask`` built with ``.type(torch.uint8)``."""

import numpy as np
from twins import assert_close, assert_same_grads, both, to_both, twin_modules

import tinyattn


def test_transformer_block_with_subsequent_mask_matches_torch():
    ref, ours = twin_modules(
        "self_attention_tutorial", lambda m: m.TransformerBlock(16, 4, 32, 0.0)
    )
    ref_module, our_module = both("self_attention_tutorial")
    mask_r, mask = ref_module.subsequent_mask(5), our_module.subsequent_mask(5)
    assert mask.dtype == tinyattn.bool and tuple(mask.shape) == (1, 5, 5)
    np.testing.assert_array_equal(mask.numpy(), mask_r.numpy())
    xr, x = to_both(np.random.default_rng(3).standard_normal((2, 5, 16)), requires_grad=True)
    out_r, out = ref(xr, mask_r.unsqueeze(1)), ours(x, mask.unsqueeze(1))
    assert_close(out, out_r)
    (out_r**3).sum().backward()
    (out**3).sum().backward()
    assert_same_grads(ours, ref)
    assert_close(x.grad, xr.grad, what="input gradient")
