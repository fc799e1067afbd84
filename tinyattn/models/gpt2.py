"""GPT-2 in the layout model hubs store it, with a KV cache for generation.

The parameter names are the hub's (``wte``, ``wpe``, ``h.N.ln_1``, ``h.N.attn.c_attn``,
``h.N.attn.c_proj``, ``h.N.ln_2``, ``h.N.mlp.c_fc``, ``h.N.mlp.c_proj``, ``ln_f``), so a
``model.safetensors`` or ``pytorch_model.bin`` loads with :func:`from_file` (a
``transformer.`` prefix and a tied ``lm_head.weight`` are accepted). GPT-2's projections
are "Conv1D" layers: ``y = x @ W + b`` with ``W`` of shape ``(in, out)``, the transpose
of ``nn.Linear``'s weight. Each block computes::

    x = x + attn(ln_1(x))        attn: causal softmax(q k^T / sqrt(d)) v over n_head heads
    x = x + mlp(ln_2(x))         mlp:  c_proj(gelu_tanh(c_fc(x)))

and the logits are ``ln_f(x) @ wte.weight^T`` (the embedding is tied to the output).

Generation keeps each layer's keys and values (the KV cache): the prompt is run once,
then each new token attends to the cache instead of recomputing the whole sequence.
``forward`` takes either cache: a list of (keys, values) per layer, extended by
concatenation and returned (what torch code usually writes; it keeps gradients), or a
preallocated :class:`~tinyattn.models.KVCache`, written in place (the inference fast path
that :func:`generate` uses: no copy of the cache per step).
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

import numpy as np

from .. import nn
from ..autograd.grad_mode import no_grad
from ..nn import functional as F
from ..ops.creation.factories import tensor as make_tensor
from ..ops.shape.rearrange import cat
from ..tensor_api.tensor import Tensor
from .kv_cache import KVCache

Cache = list[tuple[Tensor, Tensor]]  # per layer: keys and values, (batch, heads, time, dim)


class Conv1D(nn.Module):
    """GPT-2's projection: ``y = x @ weight + bias``, ``weight`` of shape ``(in, out)``."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(make_tensor(np.zeros((n_in, n_out), np.float32)))
        self.bias = nn.Parameter(make_tensor(np.zeros(n_out, np.float32)))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x: Tensor) -> Tensor:
        # F.linear on the transposed view: one GEMM on the weight as stored, the bias added
        # into the product's output, at the BLAS thread count timed faster for the shape
        return F.linear(x, self.weight.t(), self.bias)


class Attention(nn.Module):
    """Causal multi-head self-attention with GPT-2's fused ``c_attn`` (q, k, v) projection."""

    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"GPT-2: n_embd ({n_embd}) must be divisible by n_head ({n_head})")
        self.n_head = n_head
        self.c_attn = Conv1D(n_embd, 3 * n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)

    def forward(self, x: Tensor, past=None, layer: int = 0):
        """``x``: (batch, time, n_embd); returns the output and this layer's keys and values.

        ``past``: None, this layer's earlier (keys, values), concatenated with the new ones,
        or a :class:`KVCache` whose slot ``layer`` the new ones are written into."""
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (
            z.reshape(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v)
        )
        earlier = 0
        if isinstance(past, KVCache):
            earlier = past.lengths[layer]
            k, v = past.update(k, v, layer)
        elif past is not None:
            earlier = past[0].shape[2]
            k, v = cat([past[0], k], dim=2), cat([past[1], v], dim=2)
        # with a cache, the new queries are the last positions: a causal mask is only needed
        # among the new tokens themselves (the whole prompt, or none for a single token)
        causal = t > 1
        if causal and earlier > 0:
            raise ValueError("GPT-2: several new tokens after a non-empty cache are not supported")
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, c)), (k, v)


class MLP(nn.Module):
    """``c_proj(gelu_tanh(c_fc(x)))`` with a 4x wider hidden layer."""

    def __init__(self, n_embd: int) -> None:
        super().__init__()
        self.c_fc = Conv1D(n_embd, 4 * n_embd)
        self.c_proj = Conv1D(4 * n_embd, n_embd)

    def forward(self, x: Tensor) -> Tensor:
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    """A pre-norm transformer block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``."""

    def __init__(self, n_embd: int, n_head: int, eps: float) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, eps=eps)
        self.attn = Attention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd, eps=eps)
        self.mlp = MLP(n_embd)

    def forward(self, x: Tensor, past=None, layer: int = 0):
        a, present = self.attn(self.ln_1(x), past, layer)
        x = x + a
        return x + self.mlp(self.ln_2(x)), present


class GPT2(nn.Module):
    """GPT-2 with the hub's parameter names; ``forward`` returns logits and the KV cache.

    Parameters
    ----------
    vocab_size, n_positions, n_embd, n_layer, n_head : int
        The hub's config names. GPT-2's released sizes all have 64-dimensional heads.
    layer_norm_epsilon : float
    """

    def __init__(
        self,
        vocab_size: int,
        n_positions: int,
        n_embd: int,
        n_layer: int,
        n_head: int,
        layer_norm_epsilon: float = 1e-5,
    ) -> None:
        super().__init__()
        self.config = dict(vocab_size=vocab_size, n_positions=n_positions, n_embd=n_embd)
        self.config.update(n_layer=n_layer, n_head=n_head)
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head, layer_norm_epsilon) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd, eps=layer_norm_epsilon)

    def forward(
        self, idx: Tensor, cache: Cache | KVCache | None = None, last_only: bool = False
    ) -> tuple[Tensor, Cache | KVCache]:
        """``idx``: (batch, time) token ids after the ``cache``'s positions.

        Returns the logits (batch, time, vocab_size), or only the last position's
        (batch, 1, vocab_size) with ``last_only`` (what generation needs: the projection
        onto the vocabulary is the largest product), and the cache extended by ``idx``:
        a new list for a list (concatenation), the same :class:`KVCache`, updated in place.
        """
        if isinstance(cache, KVCache):
            start = cache.length
        else:
            start = cache[0][0].shape[2] if cache else 0
        t = idx.shape[1]
        if start + t > self.config["n_positions"]:
            raise ValueError(
                f"GPT-2: {start + t} positions exceed n_positions={self.config['n_positions']}"
            )
        pos = make_tensor(np.arange(start, start + t))
        x = self.wte(idx) + self.wpe(pos)
        present: Cache = []
        for i, block in enumerate(self.h):
            if isinstance(cache, KVCache):
                x, _ = block(x, cache, i)
            else:
                x, kv = block(x, cache[i] if cache else None)
                present.append(kv)
        if last_only:
            x = x[:, -1:]
        # the tied head is one GEMM on the embedding as stored: (rows, C) @ (V, C)^T reads
        # wte.weight transposed in place (BLAS's transpose flag), no copy per call
        logits = F.linear(self.ln_f(x), self.wte.weight)
        return logits, cache if isinstance(cache, KVCache) else present

    def new_cache(self, max_len: int | None = None, batch: int = 1) -> KVCache:
        """A preallocated :class:`KVCache` for this model: ``max_len`` positions (default
        ``n_positions``), ``batch`` sequences, in the weights' dtype."""
        c = self.config
        max_len = c["n_positions"] if max_len is None else max_len
        head_dim = c["n_embd"] // c["n_head"]
        dtype = self.wte.weight.detach().numpy().dtype
        return KVCache(c["n_layer"], c["n_head"], max_len, head_dim, batch, dtype)


_LAYER = re.compile(r"h\.(\d+)\.")
_IGNORED = re.compile(r"h\.\d+\.attn\.(bias|masked_bias)")  # old files store the causal mask


def hub_state_dict(state: dict[str, Any]) -> dict[str, Tensor]:
    """The hub's names without a ``transformer.`` prefix, the stored causal masks and a
    ``lm_head.weight`` tied to ``wte`` (it must equal ``wte.weight``)."""
    out = {}
    for key, value in state.items():
        name = key[len("transformer.") :] if key.startswith("transformer.") else key
        if not _IGNORED.fullmatch(name) and name != "lm_head.weight":
            out[name] = value
    head = state.get("lm_head.weight")
    if head is not None and "wte.weight" in out:
        if not np.array_equal(head.detach().numpy(), out["wte.weight"].detach().numpy()):
            raise ValueError("GPT-2: lm_head.weight differs from wte.weight (untied head)")
    return out


def config_from_state(state: dict[str, Tensor], n_head: int | None = None) -> dict[str, int]:
    """Sizes read off the weights; ``n_head`` (not in the weights) defaults to n_embd // 64."""
    for name in ("wte.weight", "wpe.weight"):
        if name not in state:
            raise ValueError(f"GPT-2: the weights have no {name!r} (keys: {sorted(state)[:6]}...)")
    vocab_size, n_embd = state["wte.weight"].shape
    layers = {int(m.group(1)) for k in state for m in [_LAYER.match(k)] if m}
    return dict(
        vocab_size=vocab_size,
        n_positions=state["wpe.weight"].shape[0],
        n_embd=n_embd,
        n_layer=len(layers),
        n_head=n_head or max(1, n_embd // 64),
    )


def from_file(path: str | os.PathLike, n_head: int | None = None) -> GPT2:
    """A GPT-2 from a torch or safetensors file in the hub's layout (read without torch).

    ``n_head`` defaults to the ``config.json`` beside the file, else ``n_embd // 64``.
    """
    from ..io.serialization import load

    state = hub_state_dict(load(path))
    config_json = os.path.join(os.path.dirname(os.fspath(path)), "config.json")
    eps = 1e-5
    if n_head is None and os.path.exists(config_json):
        with open(config_json, encoding="utf-8") as fh:
            saved = json.load(fh)
        n_head = saved.get("n_head")
        eps = saved.get("layer_norm_epsilon", eps)
    model = GPT2(**config_from_state(state, n_head), layer_norm_epsilon=eps)
    model.load_state_dict(state)
    return model.eval()


def generate(
    model: GPT2,
    ids: list[int],
    max_new_tokens: int,
    temperature: float = 0.0,
    seed: int = 0,
    cache: str = "preallocated",
) -> list[int]:
    """Extend ``ids`` by ``max_new_tokens`` tokens: greedy when ``temperature`` is 0.

    ``cache``: ``"preallocated"`` (a :class:`KVCache` for the prompt and the new tokens,
    written in place) or ``"concatenating"`` (each step concatenates the keys and values);
    both give the same tokens."""
    if not ids:
        raise ValueError("generate: the prompt must hold at least one token")
    if type(max_new_tokens) is not int or max_new_tokens < 0:
        raise ValueError(f"generate: max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if not temperature >= 0:
        raise ValueError(f"generate: temperature must be >= 0 (0 is greedy), got {temperature!r}")
    if cache not in ("preallocated", "concatenating"):
        raise ValueError(
            f"generate: cache must be 'preallocated' or 'concatenating', got {cache!r}"
        )
    rng = np.random.default_rng(seed)
    out = list(ids)
    past = model.new_cache(len(ids) + max_new_tokens) if cache == "preallocated" else None
    with no_grad():
        logits, past = model(make_tensor([ids]), past, last_only=True)
        for _ in range(max_new_tokens):
            last = logits[0, -1].numpy().astype(np.float64)
            if temperature > 0:
                p = np.exp((last - last.max()) / temperature)
                token = int(rng.choice(len(p), p=p / p.sum()))
            else:
                token = int(last.argmax())
            out.append(token)
            logits, past = model(make_tensor([[token]]), past, last_only=True)
    return out


def run_generate(weights: str, prompt: str, tokens: int, temperature: float, n_head) -> int:
    """``python -m tinyattn generate``: byte-level tokens in and out, then tokens per second."""
    model = from_file(weights, n_head)
    vocab = model.config["vocab_size"]
    ids = list(prompt.encode("utf-8"))
    if not ids or max(ids) >= vocab:
        raise SystemExit(
            f"generate: the prompt must be non-empty, with bytes < vocab_size ({vocab})"
        )
    print(prompt, end="", flush=True)
    start = time.perf_counter()
    out = generate(model, ids, tokens, temperature)
    seconds = time.perf_counter() - start
    text = bytes(t for t in out[len(ids) :] if t < 256).decode("utf-8", "replace")
    print(text)
    print(f"{tokens} tokens in {seconds:.2f} s ({tokens / seconds:.1f} tokens/s, KV cache)")
    return 0
