"""The PyTorch self-attention tutorial (seed 003): ScaledDotProductAttention with a
temperature, MultiHeadAttention with split/combine heads, a post-norm TransformerBlock,
and ``subsequent_mask`` built with ``.type(torch.uint8)``."""

import numpy as np
from twins import assert_close, assert_same_grads, to_both, twin_modules


def build(torch, nn, F):
    class ScaledDotProductAttention(nn.Module):
        def __init__(self, temperature):
            super().__init__()
            self.temperature = temperature

        def forward(self, q, k, v, mask=None):
            attn = torch.matmul(q, k.transpose(-2, -1))
            attn = attn / self.temperature
            if mask is not None:
                attn = attn.masked_fill(mask == 0, -1e9)
            attn = F.softmax(attn, dim=-1)
            output = torch.matmul(attn, v)
            return output, attn

    class MultiHeadAttention(nn.Module):
        def __init__(self, n_heads, d_model):
            super().__init__()
            assert d_model % n_heads == 0
            self.d_model = d_model
            self.n_heads = n_heads
            self.d_k = d_model // n_heads
            self.w_q = nn.Linear(d_model, d_model)
            self.w_k = nn.Linear(d_model, d_model)
            self.w_v = nn.Linear(d_model, d_model)
            self.w_o = nn.Linear(d_model, d_model)
            self.attention = ScaledDotProductAttention(temperature=np.power(self.d_k, 0.5))

        def split_heads(self, x):
            batch_size = x.size(0)
            return x.view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)

        def combine_heads(self, x):
            batch_size = x.size(0)
            return x.transpose(1, 2).contiguous().view(batch_size, -1, self.d_model)

        def forward(self, q, k, v, mask=None):
            q = self.split_heads(self.w_q(q))
            k = self.split_heads(self.w_k(k))
            v = self.split_heads(self.w_v(v))
            attn_output, attn_weights = self.attention(q, k, v, mask)
            output = self.combine_heads(attn_output)
            return self.w_o(output), attn_weights

    class TransformerBlock(nn.Module):
        def __init__(self, d_model, n_heads, ff_dim, dropout=0.1):
            super().__init__()
            self.self_attn = MultiHeadAttention(n_heads, d_model)
            self.ffn = nn.Sequential(
                nn.Linear(d_model, ff_dim), nn.ReLU(), nn.Linear(ff_dim, d_model)
            )
            self.norm1 = nn.LayerNorm(d_model)
            self.norm2 = nn.LayerNorm(d_model)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x, mask=None):
            attn_output, _ = self.self_attn(x, x, x, mask)
            x = x + self.dropout(attn_output)
            x = self.norm1(x)
            ffn_output = self.ffn(x)
            x = x + self.dropout(ffn_output)
            return self.norm2(x)

    def subsequent_mask(size):
        attn_shape = (1, size, size)
        mask = torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8)
        return mask == 0

    return TransformerBlock, subsequent_mask


def test_transformer_block_with_subsequent_mask_matches_torch():
    ref, ours = twin_modules(lambda T, nn, F: build(T, nn, F)[0], lambda T: (16, 4, 32, 0.0))
    import torch

    import tinyattn

    mask_r = build(torch, torch.nn, torch.nn.functional)[1](5)
    mask = build(tinyattn, tinyattn.nn, tinyattn.nn.functional)[1](5)
    assert mask.dtype == tinyattn.bool and tuple(mask.shape) == (1, 5, 5)
    xr, x = to_both(np.random.default_rng(3).standard_normal((2, 5, 16)), requires_grad=True)
    out_r, out = ref(xr, mask_r.unsqueeze(1)), ours(x, mask.unsqueeze(1))
    assert_close(out, out_r)
    (out_r**3).sum().backward()
    (out**3).sum().backward()
    assert_same_grads(ours, ref)
    assert_close(x.grad, xr.grad, what="input gradient")
