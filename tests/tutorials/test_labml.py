"""labml's einsum multi-head attention (seed 000): seq-first layout, mask checks, in-place scale."""

import math

import numpy as np
import pytest
from twins import assert_close, assert_same_grads, to_both, twin_modules


def build(torch, nn, F):
    class PrepareForMultiHeadAttention(nn.Module):
        def __init__(self, d_model, heads, d_k, bias):
            super().__init__()
            self.linear = nn.Linear(d_model, heads * d_k, bias=bias)
            self.heads = heads
            self.d_k = d_k

        def forward(self, x):
            head_shape = x.shape[:-1]
            x = self.linear(x)
            x = x.view(*head_shape, self.heads, self.d_k)
            return x

    class MultiHeadAttention(nn.Module):
        def __init__(self, heads, d_model, dropout_prob=0.1, bias=True):
            super().__init__()
            self.d_k = d_model // heads
            self.heads = heads
            self.query = PrepareForMultiHeadAttention(d_model, heads, self.d_k, bias=bias)
            self.key = PrepareForMultiHeadAttention(d_model, heads, self.d_k, bias=bias)
            self.value = PrepareForMultiHeadAttention(d_model, heads, self.d_k, bias=True)
            self.softmax = nn.Softmax(dim=1)
            self.output = nn.Linear(d_model, d_model)
            self.dropout = nn.Dropout(dropout_prob)
            self.scale = 1 / math.sqrt(self.d_k)
            self.attn = None

        def get_score(self, query, key):
            return torch.einsum("ibhd,jbhd->ijbh", query, key)

        def prepare_mask(self, mask, query_shape, key_shape):
            assert mask.shape[0] == 1 or mask.shape[0] == query_shape[0]
            assert mask.shape[1] == key_shape[0]
            assert mask.shape[2] == 1 or mask.shape[2] == query_shape[1]
            mask = mask.unsqueeze(-1)
            return mask

        def forward(self, query, key, value, mask):
            seq_len, batch_size, _ = query.shape
            if mask is not None:
                mask = self.prepare_mask(mask, query.shape, key.shape)
            query = self.query(query)
            key = self.key(key)
            value = self.value(value)
            scores = self.get_score(query, key)
            scores *= self.scale
            if mask is not None:
                scores = scores.masked_fill(mask == 0, float("-inf"))
            attn = self.softmax(scores)
            attn = self.dropout(attn)
            x = torch.einsum("ijbh,jbhd->ibhd", attn, value)
            self.attn = attn.detach()
            x = x.reshape(seq_len, batch_size, -1)
            return self.output(x)

    return MultiHeadAttention


@pytest.mark.parametrize("with_mask", [False, True])
def test_labml_mha_matches_torch(with_mask):
    ref, ours = twin_modules(build, lambda T: (4, 16, 0.0))
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


def test_labml_mask_of_wrong_shape_fails_its_assert():
    """The tutorial's bare asserts fire the same way under tinyattn."""
    ref, ours = twin_modules(build, lambda T: (2, 8, 0.0))
    x_r, x = to_both(np.zeros((3, 2, 8)))
    bad_r, bad = to_both(np.ones((3, 4, 2), dtype=np.int64))  # seq_k is 3, not 4
    with pytest.raises(AssertionError):
        ref(x_r, x_r, x_r, bad_r)
    with pytest.raises(AssertionError):
        ours(x, x, x, bad)
