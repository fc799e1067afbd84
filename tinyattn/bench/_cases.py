"""The benchmark cases, written once against the torch API and run on either library.

Each suite maps a case name to ``setup(lib) -> run``: ``lib`` is the ``tinyattn``
or the ``torch`` module, ``run()`` does one timed unit of work. Inputs are
float32 and drawn from NumPy with a fixed seed, so both libraries see the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Case = Callable[[object], Callable[[], object]]


def _tensor(lib, array: np.ndarray, requires_grad: bool = False):
    return lib.tensor(array, requires_grad=requires_grad)


def _normal(shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


# --------------------------------------------------------------------------- kernels


def sdpa(shape, causal: bool, backward: bool) -> Case:
    """scaled_dot_product_attention on (B, H, L, D); backward: also out.backward(dout)."""

    def setup(lib):
        q, k, v = (_tensor(lib, _normal(shape, i), backward) for i in range(3))
        dout = _tensor(lib, _normal(shape, 3))
        F = lib.nn.functional

        def run():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            if backward:
                out.backward(dout)

        return run

    return setup


# --------------------------------------------------------------------------- layers


def _layer_case(make_layer, shape, call=None) -> Case:
    """Forward + backward of ``make_layer(lib)`` on a (B, L, E) input."""

    def setup(lib):
        lib.manual_seed(0)
        layer = make_layer(lib)
        x = _tensor(lib, _normal(shape), True)
        dout = _tensor(lib, _normal(shape, 1))

        def run():
            out = call(layer, x) if call else layer(x)
            out.backward(dout)

        return run

    return setup


def mha(shape, num_heads: int, need_weights: bool) -> Case:
    E = shape[-1]
    return _layer_case(
        lambda lib: lib.nn.MultiheadAttention(E, num_heads, batch_first=True),
        shape,
        lambda layer, x: layer(x, x, x, need_weights=need_weights)[0],
    )


def layer_norm(shape) -> Case:
    return _layer_case(lambda lib: lib.nn.LayerNorm(shape[-1]), shape)


def encoder_layer(shape, num_heads: int) -> Case:
    E = shape[-1]
    return _layer_case(
        lambda lib: lib.nn.TransformerEncoderLayer(
            E, num_heads, dim_feedforward=4 * E, dropout=0.0, batch_first=True
        ),
        shape,
    )


# --------------------------------------------------------------------------- train


def gpt_step(n_layer: int, d: int, n_head: int, T: int, B: int, vocab: int) -> Case:
    """One AdamW training step of a small pre-LayerNorm GPT (causal SDPA, GELU MLP)."""

    def setup(lib):
        nn, F = lib.nn, lib.nn.functional

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
                self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
                self.fc, self.fc_out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

            def forward(self, x):
                b, t, _ = x.shape
                heads = [
                    h.view(b, t, n_head, d // n_head).transpose(1, 2)
                    for h in self.qkv(self.ln_1(x)).split(d, dim=2)
                ]
                y = F.scaled_dot_product_attention(*heads, is_causal=True)
                x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
                return x + self.fc_out(F.gelu(self.fc(self.ln_2(x))))

        class GPT(nn.Module):
            def __init__(self):
                super().__init__()
                self.tokens, self.positions = nn.Embedding(vocab, d), nn.Embedding(T, d)
                self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])
                self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

            def forward(self, idx):
                x = self.tokens(idx) + self.positions(lib.arange(idx.shape[1]))
                for block in self.blocks:
                    x = block(x)
                return self.head(self.ln_f(x))

        lib.manual_seed(0)
        model = GPT()
        optimizer = lib.optim.AdamW(model.parameters(), lr=3e-4)
        data = np.random.default_rng(0).integers(0, vocab, (B, T + 1))
        idx, targets = _tensor(lib, data[:, :-1]), _tensor(lib, data[:, 1:])

        def run():
            logits = model(idx)
            loss = F.cross_entropy(logits.view(-1, vocab), targets.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        return run

    return setup


# --------------------------------------------------------------------------- construction

GPT2_SMALL = dict(n_layer=12, d=768, n_head=12, n_ctx=1024, vocab=50257)


def gpt2_model(lib, n_layer: int, d: int, n_head: int, n_ctx: int, vocab: int):
    """A GPT-2-shaped model written as a torch user writes it (nanoGPT's layout): default
    layer construction, then ``apply`` re-initialises every weight with N(0, 0.02^2),
    biases with zeros, and the head shares the token embedding's weight.

    ``model(idx, cache)`` runs ``idx`` (batch, time) after the ``cache``'s positions and
    returns the last position's logits (batch, 1, vocab); ``cache.update(k, v, layer)``
    stores a layer's keys and values and returns all of them (``_inference``'s caches)."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x, cache, layer):
            b, t, _ = x.shape
            q, k, v = (
                h.view(b, t, n_head, d // n_head).transpose(1, 2)
                for h in self.c_attn(self.ln_1(x)).split(d, dim=2)
            )
            k, v = cache.update(k, v, layer)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1)
            x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(n_ctx, d)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f, self.lm_head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
            self.lm_head.weight = self.wte.weight
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

        def forward(self, idx, cache):
            start, t = cache.length, idx.shape[1]
            x = self.wte(idx) + self.wpe(lib.arange(start, start + t))
            for layer, block in enumerate(self.h):
                x = block(x, cache, layer)
            return self.lm_head(self.ln_f(x[:, -1:]))

    return GPT()


def construction(config: dict) -> Case:
    """Build (and drop) a GPT-2-shaped model: weight allocation and initialisation."""

    def setup(lib):
        lib.manual_seed(0)
        return lambda: gpt2_model(lib, **config)

    return setup


# --------------------------------------------------------------------------- overhead


def op_chain(n_ops: int = 1000) -> Case:
    """``n_ops`` small elementwise ops on a (16,) tensor, forward + backward: per-op overhead."""

    def setup(lib):
        x = lib.ones(16, requires_grad=True)

        def run():
            y = x
            for _ in range(n_ops // 4):
                y = ((y * 1.0001 + 0.001).tanh()) - 0.0005
            y.sum().backward()

        return run

    return setup


def matmul_softmax(rows: int = 64, n: int = 512) -> Case:
    """softmax(a @ w) weighted sum, forward + backward: a matmul-bound block."""

    def setup(lib):
        a = _tensor(lib, _normal((rows, n)), True)
        w = _tensor(lib, _normal((n, n), 1) / np.float32(n**0.5), True)
        g = _tensor(lib, _normal((rows, n), 2))

        def run():
            (lib.softmax(a @ w, dim=-1) * g).sum().backward()

        return run

    return setup


# --------------------------------------------------------------------------- suites


def mha_shapes(quick: bool) -> tuple[list[tuple[int, int, int]], int]:
    """The (B, L, E) shapes of the MHA cases, and their head count."""
    if quick:
        return [(2, 16, 32)], 4
    return [(8, 128, 512), (4, 512, 512)], 8


def mha_name(shape, need_weights: bool) -> str:
    return f"MHA {shape} need_weights={need_weights}"


def gpt_configs(quick: bool) -> list[dict]:
    """The small GPTs of the ``train`` suite."""
    if quick:
        return [dict(n_layer=1, d=32, n_head=2, T=16, B=2, vocab=64)]
    return [
        dict(n_layer=4, d=256, n_head=8, T=128, B=8, vocab=256),
        dict(n_layer=6, d=384, n_head=6, T=256, B=8, vocab=256),
    ]


def gpt_step_name(c: dict) -> str:
    return "GPT step L={n_layer} d={d} h={n_head} T={T} B={B} V={vocab}".format(**c)


def suites(quick: bool) -> dict[str, dict[str, Case]]:
    """suite -> case name -> setup; ``quick``: tiny shapes (a smoke test of the harness)."""
    sdpa_shapes = [(1, 2, 64, 16)] if quick else [(8, 8, 512, 64), (2, 8, 2048, 64)]
    kernels = {
        f"sdpa {shape} {'causal' if causal else 'full'} {'fwd+bwd' if backward else 'fwd'}": sdpa(
            shape, causal, backward
        )
        for shape in sdpa_shapes
        for backward in (False, True)
        for causal in (False, True)
    }
    shapes, heads = mha_shapes(quick)
    layer_shape = shapes[0]
    layers = {
        mha_name(shape, need): mha(shape, heads, need) for shape in shapes for need in (False, True)
    }
    layers |= {
        f"LayerNorm {layer_shape}": layer_norm(layer_shape),
        f"TransformerEncoderLayer {layer_shape}": encoder_layer(layer_shape, heads),
    }
    train = {gpt_step_name(c): gpt_step(**c) for c in gpt_configs(quick)}
    rows, n = (8, 64) if quick else (64, 512)
    overhead = {
        f"op chain {100 if quick else 1000} ops fwd+bwd": op_chain(100 if quick else 1000),
        f"matmul+softmax ({rows}x{n}x{n}) fwd+bwd": matmul_softmax(rows, n),
    }
    small = dict(GPT2_SMALL, n_layer=1, d=32, n_head=2, n_ctx=16, vocab=64) if quick else GPT2_SMALL
    builds = {
        "GPT-2 small (124M) construction" if not quick else "GPT-2 tiny construction": construction(
            small
        )
    }
    return dict(kernels=kernels, layers=layers, train=train, overhead=overhead, construction=builds)


# --------------------------------------------------------------------------- interference


def probes(quick: bool) -> dict[str, Case]:
    """The products timed by the interference suite: torch's and NumPy's own BLAS."""
    n = 128 if quick else 512

    def torch_matmul(lib):
        a, b = _tensor(lib, _normal((n, n))), _tensor(lib, _normal((n, n), 1))
        return lambda: a @ b

    def numpy_matmul(lib):
        a, b = _normal((n, n)), _normal((n, n), 1)
        return lambda: a @ b

    def torch_mha(lib):
        run = mha((2, 16, 32) if quick else (8, 128, 512), 4 if quick else 8, False)(lib)
        return run

    return {
        f"torch matmul {n}x{n}x{n}": torch_matmul,
        f"numpy matmul {n}x{n}x{n}": numpy_matmul,
        "torch MHA fwd+bwd (8, 128, 512)"
        if not quick
        else "torch MHA fwd+bwd (2, 16, 32)": torch_mha,
    }


def tinyattn_call(quick: bool) -> Case:
    """The tinyattn work done before each probe: attention fwd+bwd (numba kernels) and a
    LayerNorm (NumPy), as a model's layer would."""
    shape = (2, 4, 64, 16) if quick else (4, 8, 512, 64)
    attention = sdpa(shape, causal=True, backward=True)
    norm = layer_norm((2, 16, 32) if quick else (8, 128, 512))

    def setup(lib):
        runs = attention(lib), norm(lib)

        def run():
            for r in runs:
                r()

        return run

    return setup
