"""labml's einsum multi-head attention (seed 000): seq-first layout, mask checks, in-place scale."""

import numpy as np
import pytest
from twins import assert_close, assert_same_grads, both, to_both, twin_modules


@pytest.mark.parametrize("with_mask", [False, True])
def test_labml_mha_matches_torch(with_mask):
    ref, ours = twin_modules("labml_mha", lambda m: m.MultiHeadAttention(4, 16, 0.0))
    rng = np.random.default_rng(0)
    seq, batch = 5, 3
    xq_r, xq = to_both(rng.standard_normal((seq, batch, 16)), requires_grad=True)
    xk_r, xk = to_both(rng.standard_normal((7, batch, 16)), requires_grad=True)
    mask_r = mask = None
    if with_mask:
        m = np.tril(np.ones((seq, 7)), 2)[:, :, None].repeat(batch, 2)  # [seq_q, seq_k, batch]
        mask_r, mask = to_both(m.astype(np.int64))
    out_r = ref(xq_r, xk_r, xk_r, mask_r)
    out = ours(xq, xk, xk, mask)
    assert tuple(out.shape) == (seq, batch, 16)
    assert_close(out, out_r)
    assert_close(ours.attn, ref.attn, what="stored attention")
    out_r.pow(2).sum().backward()
    out.pow(2).sum().backward()
    assert_same_grads(ours, ref)
    assert_close(xq.grad, xq_r.grad, what="query input gradient")
    assert_close(xk.grad, xk_r.grad, what="key/value input gradient")


def test_labml_mask_of_wrong_shape_fails_its_assert_under_both():
    """The tutorial's bare asserts fire the same way under tinyattn."""
    ref_module, our_module = both("labml_mha")
    ref, ours = ref_module.MultiHeadAttention(2, 8, 0.0), our_module.MultiHeadAttention(2, 8, 0.0)
    x_r, x = to_both(np.zeros((3, 2, 8), dtype=np.float32))
    bad_r, bad = to_both(np.ones((3, 4, 2), dtype=np.int64))  # seq_k is 3, not 4
    with pytest.raises(AssertionError):
        ref(x_r, x_r, x_r, bad_r)
    with pytest.raises(AssertionError):
        ours(x, x, x, bad)
