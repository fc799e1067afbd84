"""A small Llama-style decoder written the way that model family writes it (our code), for
either library.

Patterns of the family: a ``ModelArgs`` dataclass; ``RMSNorm`` computed in float32 and
cast back with ``type_as``; a SwiGLU feed-forward (``w2(silu(w1 x) * w3 x)``, the hidden
size rounded up to a multiple); grouped-query attention (fewer key/value heads, repeated
with ``expand``/``reshape``); a key/value cache written by slice assignment; rotary
position embeddings applied *the complex way*: ``freqs_cis`` precomputed with
``polar``, queries and keys viewed as complex pairs with ``view_as_complex``, rotated
by one complex multiplication, brought back with ``view_as_real``, ``flatten`` and
``type_as``; a causal mask built with ``full``/``triu``/``hstack`` for the prompt, and
greedy decoding one token at a time from the cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class ModelArgs:
    dim: int = 32
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    vocab_size: int = 37
    multiple_of: int = 16
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_batch_size: int = 2
    max_seq_len: int = 16


def rotary_frequencies(lib, head_dim: int, positions: int, theta: float = 10000.0):
    """``freqs_cis[p, j] = exp(i p theta^(-2j / head_dim))``: a unit complex number per
    position and pair of channels (complex64)."""
    inv_freq = 1.0 / (theta ** (lib.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    angles = lib.outer(lib.arange(positions, dtype=lib.float32), inv_freq).float()
    return lib.polar(lib.ones_like(angles), angles)


def apply_rotary(lib, xq, xk, freqs_cis):
    """Rotate each consecutive pair of channels of ``xq``, ``xk`` (B, T, H, D) by its
    position's angle: a complex multiplication of the pairs seen as complex numbers."""

    def rotate(x):
        pairs = lib.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))  # (B, T, H, D/2)
        shape = [n if i in (1, pairs.ndim - 1) else 1 for i, n in enumerate(pairs.shape)]
        rotated = pairs * freqs_cis.view(*shape)
        return lib.view_as_real(rotated).flatten(3).type_as(x)

    return rotate(xq), rotate(xk)


def build(lib):
    """The model classes for ``lib`` (torch or tinyattn)."""
    nn, F = lib.nn, lib.nn.functional

    class RMSNorm(nn.Module):
        def __init__(self, dim: int, eps: float) -> None:
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(lib.ones(dim))

        def forward(self, x):
            x32 = x.float()
            normed = x32 * lib.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
            return normed.type_as(x) * self.weight

    class FeedForward(nn.Module):
        def __init__(self, dim: int, multiple_of: int) -> None:
            super().__init__()
            hidden = int(2 * (4 * dim) / 3)
            hidden = multiple_of * ((hidden + multiple_of - 1) // multiple_of)
            self.w1 = nn.Linear(dim, hidden, bias=False)
            self.w2 = nn.Linear(hidden, dim, bias=False)
            self.w3 = nn.Linear(dim, hidden, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class Attention(nn.Module):
        def __init__(self, args: ModelArgs) -> None:
            super().__init__()
            self.n_heads, self.n_kv_heads = args.n_heads, args.n_kv_heads
            self.head_dim = args.dim // args.n_heads
            self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
            self.wk = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
            self.wv = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
            self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
            cache = (args.max_batch_size, args.max_seq_len, args.n_kv_heads, self.head_dim)
            self.cache_k, self.cache_v = lib.zeros(cache), lib.zeros(cache)

        def repeat_kv(self, x):
            B, T, kv_heads, D = x.shape
            n_rep = self.n_heads // kv_heads
            if n_rep == 1:
                return x
            return x[:, :, :, None, :].expand(B, T, kv_heads, n_rep, D).reshape(B, T, -1, D)

        def forward(self, x, start_pos: int, freqs_cis, mask, use_cache: bool):
            B, T, _ = x.shape
            xq = self.wq(x).view(B, T, self.n_heads, self.head_dim)
            xk = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim)
            xv = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim)
            xq, xk = apply_rotary(lib, xq, xk, freqs_cis)
            if use_cache:
                self.cache_k = self.cache_k.to(xq)
                self.cache_v = self.cache_v.to(xq)
                self.cache_k[:B, start_pos : start_pos + T] = xk
                self.cache_v[:B, start_pos : start_pos + T] = xv
                xk = self.cache_k[:B, : start_pos + T]
                xv = self.cache_v[:B, : start_pos + T]
            q = xq.transpose(1, 2)
            k = self.repeat_kv(xk).transpose(1, 2)
            v = self.repeat_kv(xv).transpose(1, 2)
            scores = lib.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
            if mask is not None:
                scores = scores + mask
            weights = F.softmax(scores.float(), dim=-1).type_as(q)
            out = lib.matmul(weights, v).transpose(1, 2).contiguous().view(B, T, -1)
            return self.wo(out)

    class TransformerBlock(nn.Module):
        def __init__(self, args: ModelArgs) -> None:
            super().__init__()
            self.attention = Attention(args)
            self.feed_forward = FeedForward(args.dim, args.multiple_of)
            self.attention_norm = RMSNorm(args.dim, args.norm_eps)
            self.ffn_norm = RMSNorm(args.dim, args.norm_eps)

        def forward(self, x, start_pos, freqs_cis, mask, use_cache):
            h = x + self.attention(self.attention_norm(x), start_pos, freqs_cis, mask, use_cache)
            return h + self.feed_forward(self.ffn_norm(h))

    class Transformer(nn.Module):
        def __init__(self, args: ModelArgs) -> None:
            super().__init__()
            self.args = args
            self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
            self.layers = nn.ModuleList(TransformerBlock(args) for _ in range(args.n_layers))
            self.norm = RMSNorm(args.dim, args.norm_eps)
            self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
            head_dim = args.dim // args.n_heads
            self.freqs_cis = rotary_frequencies(
                lib, head_dim, 2 * args.max_seq_len, args.rope_theta
            )

        def forward(self, tokens, start_pos: int = 0, use_cache: bool = True):
            B, T = tokens.shape
            h = self.tok_embeddings(tokens)
            freqs_cis = self.freqs_cis[start_pos : start_pos + T]
            mask = None
            if T > 1:
                mask = lib.triu(lib.full((T, T), float("-inf")), diagonal=1)
                mask = lib.hstack([lib.zeros((T, start_pos)), mask]).type_as(h)
            for layer in self.layers:
                h = layer(h, start_pos, freqs_cis, mask, use_cache)
            return self.output(self.norm(h)).float()

    return Transformer


def greedy_decode(lib, model, prompt, steps: int) -> tuple[list, object]:
    """Prompt once through the cache, then one token at a time: (logits per step, tokens)."""
    logits_per_step = []
    tokens = prompt
    start = 0
    with lib.no_grad():
        for _ in range(steps):
            logits = model(tokens[:, start:], start)
            logits_per_step.append(logits[:, -1])
            next_token = lib.argmax(logits[:, -1], dim=-1)
            start = tokens.shape[1]
            tokens = lib.cat([tokens, next_token[:, None]], dim=1)
    return logits_per_step, tokens
