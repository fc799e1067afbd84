"""A small GPT written the way the corpus writes it (our code), for either library.

Patterns from the corpus: a config dataclass, ``nn.ModuleDict`` of embeddings, blocks
and final norm, a causal mask as a ``register_buffer`` of ``tril`` ones or
``F.scaled_dot_product_attention(is_causal=True)``, weight tying of the token
embedding and the output head, ``self.apply(self._init_weights)`` with a scaled init
of residual projections, ``configure_optimizers`` with a decay / no-decay split, and
``generate`` with temperature, top-k and greedy decoding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class GPTConfig:
    block_size: int = 8
    vocab_size: int = 13
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 8
    dropout: float = 0.0
    bias: bool = True
    flash: bool = True


def build(lib):
    """The GPT classes for ``lib`` (torch or tinyattn)."""
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, cfg: GPTConfig) -> None:
            super().__init__()
            self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
            self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
            self.attn_dropout = nn.Dropout(cfg.dropout)
            self.resid_dropout = nn.Dropout(cfg.dropout)
            self.n_head, self.n_embd, self.dropout = cfg.n_head, cfg.n_embd, cfg.dropout
            self.flash = cfg.flash
            if not self.flash:
                mask = lib.tril(lib.ones(cfg.block_size, cfg.block_size))
                self.register_buffer("bias", mask.view(1, 1, cfg.block_size, cfg.block_size))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            if self.flash:
                y = F.scaled_dot_product_attention(
                    q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                    is_causal=True,
                )  # fmt: skip
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                att = F.softmax(att, dim=-1)
                y = self.attn_dropout(att) @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self, cfg: GPTConfig) -> None:
            super().__init__()
            self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
            self.dropout = nn.Dropout(cfg.dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, cfg: GPTConfig) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
            self.attn = CausalSelfAttention(cfg)
            self.ln_2 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
            self.mlp = MLP(cfg)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, cfg: GPTConfig) -> None:
            super().__init__()
            self.config = cfg
            self.transformer = nn.ModuleDict(
                dict(
                    wte=nn.Embedding(cfg.vocab_size, cfg.n_embd),
                    wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
                    drop=nn.Dropout(cfg.dropout),
                    h=nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)]),
                    ln_f=nn.LayerNorm(cfg.n_embd, bias=cfg.bias),
                )
            )
            self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith("c_proj.weight"):
                    lib.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

        def _init_weights(self, module) -> None:
            if isinstance(module, nn.Linear):
                lib.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    lib.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                lib.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def get_num_params(self) -> int:
            return sum(p.numel() for p in self.parameters())

        def forward(self, idx, targets=None):
            b, t = idx.size()
            assert t <= self.config.block_size
            pos = lib.arange(0, t, dtype=lib.long, device=idx.device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            if targets is not None:
                logits = self.lm_head(x)
                loss = F.cross_entropy(
                    logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1
                )
            else:
                logits = self.lm_head(x[:, [-1], :])
                loss = None
            return logits, loss

        def configure_optimizers(self, weight_decay, learning_rate, betas):
            param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
            decay = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay = [p for n, p in param_dict.items() if p.dim() < 2]
            groups = [
                {"params": decay, "weight_decay": weight_decay},
                {"params": nodecay, "weight_decay": 0.0},
            ]
            return lib.optim.AdamW(groups, lr=learning_rate, betas=betas, fused=False)

        @lib.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, greedy=False):
            for _ in range(max_new_tokens):
                if idx.size(1) <= self.config.block_size:
                    idx_cond = idx
                else:
                    idx_cond = idx[:, -self.config.block_size :]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = lib.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float("Inf")
                if greedy:
                    idx_next = lib.argmax(logits, dim=-1, keepdim=True)
                else:
                    probs = F.softmax(logits, dim=-1)
                    idx_next = lib.multinomial(probs, num_samples=1)
                idx = lib.cat((idx, idx_next), dim=1)
            return idx

    return GPT
