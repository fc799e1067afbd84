""" "PyTorch中Self-Attention机制实现详解与代码实践" on tinyattn.

The document's ``ScaledDotProductAttention`` (temperature = sqrt(d_k)),
``MultiHeadAttention`` (split_heads / combine_heads), ``TransformerBlock`` (post-norm)
and ``subsequent_mask`` (``torch.triu(...).type(torch.uint8)``, then ``== 0``) are
reproduced as written; the script prints the shapes through them.

Fixes, each marked below: the document calls ``np.power`` without importing NumPy
(NameError); ``.to(device)`` uses an undefined ``device``; and its 3-D masks rely on
broadcasting against the 4-D scores ``[B, N, L, L]``, which is right for the
``(1, L, L)`` causal mask but silently wrong for a per-sequence padding mask
``(B, 1, L)`` when B equals the number of heads (shown below, with the fix).

Run: python examples/self_attention_tutorial.py
"""

import numpy as np  # missing from the document, which uses np.power below

import tinyattn as torch
import tinyattn.nn as nn
import tinyattn.nn.functional as F


class ScaledDotProductAttention(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature  # sqrt(d_k)

    def forward(self, q, k, v, mask=None):
        # q, k, v: [batch_size, n_heads, seq_len, d_k]
        attn = torch.matmul(q, k.transpose(-2, -1))  # [B,N,L,L]
        attn = attn / self.temperature
        if mask is not None:
            # -1e9 rather than -inf: a fully masked row gives uniform weights, not NaN.
            attn = attn.masked_fill(mask == 0, -1e9)
        attn = F.softmax(attn, dim=-1)
        output = torch.matmul(attn, v)  # [B,N,L,d_v]
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
        # np.power gives a NumPy float64; dividing float32 scores by it stays float32.
        self.attention = ScaledDotProductAttention(temperature=np.power(self.d_k, 0.5))

    def split_heads(self, x):
        # [batch_size, seq_len, d_model] -> [batch_size, n_heads, seq_len, d_k]
        batch_size = x.size(0)
        return x.view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)

    def combine_heads(self, x):
        # [batch_size, n_heads, seq_len, d_k] -> [batch_size, seq_len, d_model]
        batch_size = x.size(0)
        return x.transpose(1, 2).contiguous().view(batch_size, -1, self.d_model)

    def forward(self, q, k, v, mask=None):
        q = self.w_q(q)  # [B,L,D]
        k = self.w_k(k)
        v = self.w_v(v)
        q = self.split_heads(q)  # [B,N,L,d_k]
        k = self.split_heads(k)
        v = self.split_heads(v)
        attn_output, attn_weights = self.attention(q, k, v, mask)
        output = self.combine_heads(attn_output)
        output = self.w_o(output)
        return output, attn_weights


class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads, ff_dim, dropout=0.1):
        super().__init__()
        self.self_attn = MultiHeadAttention(n_heads, d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, ff_dim), nn.ReLU(), nn.Linear(ff_dim, d_model))
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        attn_output, _ = self.self_attn(x, x, x, mask)
        x = x + self.dropout(attn_output)
        x = self.norm1(x)
        ffn_output = self.ffn(x)
        x = x + self.dropout(ffn_output)
        x = self.norm2(x)
        return x


def subsequent_mask(size):
    attn_shape = (1, size, size)
    subsequent_mask = torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8)
    return subsequent_mask == 0


def padding_mask_4d(lengths, seq_len):
    """The fixed padding mask: ``[B, 1, 1, L]`` (batch on dim 0, broadcast over heads/queries).

    A ``(B, 1, L)`` mask aligns its B with the *heads* dim of ``[B, N, L, L]``; this
    raises for B != N and is silently wrong for B == N.
    """
    keep = torch.arange(seq_len)[None, :] < torch.tensor(lengths)[:, None]  # [B, L]
    return keep[:, None, None, :]


def main():
    torch.manual_seed(0)
    batch_size, seq_len, d_model, n_heads, ff_dim = 2, 6, 64, 8, 128
    x = torch.randn(batch_size, seq_len, d_model)

    mha = MultiHeadAttention(n_heads, d_model)
    mask = subsequent_mask(seq_len)  # .to(device) in the document; CPU only here
    print(f"input x                  {tuple(x.shape)}   [B, L, D]")
    print(f"subsequent_mask          {tuple(mask.shape)} {mask.dtype}")
    heads = mha.split_heads(mha.w_q(x))
    print(f"split_heads(w_q(x))      {tuple(heads.shape)}   [B, N, L, d_k]")
    out, weights = mha(x, x, x, mask)
    print(f"attention weights        {tuple(weights.shape)}   [B, N, L, L]")
    print(f"combine_heads -> w_o     {tuple(out.shape)}   [B, L, D]")
    print(
        f"temperature {mha.attention.temperature} ({type(mha.attention.temperature).__name__}),"
        f" output dtype {out.dtype}"
    )
    print("causal weights, batch 0 head 0:")
    print(weights[0, 0])

    block = TransformerBlock(d_model, n_heads, ff_dim, dropout=0.0)
    y = block(x, mask)
    print(f"TransformerBlock output  {tuple(y.shape)}   [B, L, D]")

    # Padding masks: with B == n_heads the document's 3-D convention silently masks by
    # head instead of by sequence. Sequence 0 has 4 real tokens, sequence 1 all 6.
    small = MultiHeadAttention(n_heads=2, d_model=8)
    xs = torch.randn(2, seq_len, 8)
    lengths = [4, 6]
    mask_3d = torch.arange(seq_len)[None, None, :] < torch.tensor(lengths)[:, None, None]
    _, w_3d = small(xs, xs, xs, mask_3d)  # (2, 1, 6) -> broadcast as (1, 2, 1, 6): wrong
    _, w_4d = small(xs, xs, xs, padding_mask_4d(lengths, seq_len))
    leak_3d = float(w_3d[0, :, :, 4:].sum())  # weight sequence 0 puts on its padding
    leak_4d = float(w_4d[0, :, :, 4:].sum())
    print(
        f"padding mask (B, 1, L) = {tuple(mask_3d.shape)}: weight on sequence 0's padding"
        f" {leak_3d:.3f} (masked by head, not by sequence)"
    )
    print(
        f"padding mask [B, 1, 1, L] = {tuple(padding_mask_4d(lengths, seq_len).shape)}:"
        f" weight on sequence 0's padding {leak_4d:.3f}"
    )

    return {
        "mask": mask,
        "heads_shape": tuple(heads.shape),
        "weights": weights,
        "out": out,
        "block_out": y,
        "leak_3d": leak_3d,
        "leak_4d": leak_4d,
    }


if __name__ == "__main__":
    main()
