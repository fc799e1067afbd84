"""JAX versions of some benchmark cases: the peer a CPU user would pick instead of torch.

Each is written as a JAX user writes it: parameters in JAX's own layout (``x @ W`` with
``W`` of shape ``(in, out)``), the step under ``jax.jit`` (compiled in the warm-up calls,
not timed), ``jax.nn.dot_product_attention`` where torch's code calls SDPA. Case names
match ``_cases`` and ``_inference``, so the harness puts them in a third column:

- ``layers``: ``MultiheadAttention`` forward + backward (gradients of the weights and the
  input, as the torch case computes them); with ``need_weights`` the head-averaged
  attention weights are returned too;
- ``train``: the small GPT's AdamW step (forward, backward, update, all in one jit);
- ``inference``: the GPT-2-small shape (construction with ``jax.random``, prefill and
  greedy decode with a preallocated cache updated by ``lax.dynamic_update_slice``).

Imported only in a JAX benchmark process (the harness runs it where ``jax`` is installed).
"""

from __future__ import annotations

import math
import statistics
import time

import numpy as np

try:
    from . import _cases, _inference
except ImportError:  # run as the benchmark child's sibling script
    import _cases  # type: ignore[no-redef]
    import _inference  # type: ignore[no-redef]

import jax
import jax.numpy as jnp


def _normal(shape, seed: int = 0, std: float = 1.0):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape, dtype=np.float32) * std)


def _layer_norm(x, g, b, eps: float = 1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * g + b


# --------------------------------------------------------------------------- layers


def mha(shape, num_heads: int, need_weights: bool):
    """Self-attention ``MultiheadAttention`` forward + backward on (B, L, E)."""
    B, L, E = shape
    hd = E // num_heads

    def forward(p, x):
        q, k, v = jnp.split(x @ p["w_in"] + p["b_in"], 3, axis=-1)
        q, k, v = (z.reshape(B, L, num_heads, hd) for z in (q, k, v))
        if need_weights:  # torch's slow path: explicit scores, weights averaged over heads
            s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(hd)
            w = jax.nn.softmax(s, axis=-1)
            o, aux = jnp.einsum("bhqk,bkhd->bqhd", w, v), w.mean(1)
        else:
            o, aux = jax.nn.dot_product_attention(q, k, v), None
        return o.reshape(B, L, E) @ p["w_out"] + p["b_out"], aux

    @jax.jit
    def step(p, x, dout):
        _, vjp, aux = jax.vjp(forward, p, x, has_aux=True)
        return vjp(dout), aux

    def setup():
        bound = 1 / math.sqrt(E)
        p = dict(
            w_in=_normal((E, 3 * E), 10, bound),
            b_in=jnp.zeros(3 * E),
            w_out=_normal((E, E), 11, bound),
            b_out=jnp.zeros(E),
        )
        x, dout = _normal(shape), _normal(shape, 1)
        return lambda: jax.block_until_ready(step(p, x, dout))

    return setup


# --------------------------------------------------------------------------- train


def _gpt_params(n_layer: int, d: int, T: int, vocab: int) -> dict:
    def linear(seed, n_in, n_out):
        return _normal((n_in, n_out), seed, 1 / math.sqrt(n_in)), jnp.zeros(n_out)

    blocks = []
    for i in range(n_layer):
        s = 100 + 10 * i
        blocks.append(
            dict(
                ln_1=(jnp.ones(d), jnp.zeros(d)),
                ln_2=(jnp.ones(d), jnp.zeros(d)),
                qkv=linear(s, d, 3 * d),
                proj=linear(s + 1, d, d),
                fc=linear(s + 2, d, 4 * d),
                fc_out=linear(s + 3, 4 * d, d),
            )
        )
    return dict(
        tokens=_normal((vocab, d), 1),
        positions=_normal((T, d), 2),
        blocks=blocks,
        ln_f=(jnp.ones(d), jnp.zeros(d)),
        head=_normal((d, vocab), 3, 1 / math.sqrt(d)),
    )


def _gpt_loss(p, idx, targets, n_head: int):
    B, T = idx.shape
    x = p["tokens"][idx] + p["positions"][:T]
    d = x.shape[-1]
    for blk in p["blocks"]:
        qkv = _layer_norm(x, *blk["ln_1"]) @ blk["qkv"][0] + blk["qkv"][1]
        q, k, v = (z.reshape(B, T, n_head, d // n_head) for z in jnp.split(qkv, 3, axis=-1))
        y = jax.nn.dot_product_attention(q, k, v, is_causal=True).reshape(B, T, d)
        x = x + y @ blk["proj"][0] + blk["proj"][1]
        h = jax.nn.gelu(_layer_norm(x, *blk["ln_2"]) @ blk["fc"][0] + blk["fc"][1], False)
        x = x + h @ blk["fc_out"][0] + blk["fc_out"][1]
    logits = _layer_norm(x, *p["ln_f"]) @ p["head"]
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, targets[..., None], axis=-1).mean()


def gpt_step(n_layer: int, d: int, n_head: int, T: int, B: int, vocab: int):
    """The small GPT's AdamW step (torch's defaults: lr 3e-4, betas 0.9/0.999, wd 0.01)."""
    lr, b1, b2, eps, wd = 3e-4, 0.9, 0.999, 1e-8, 0.01

    @jax.jit
    def step(p, m, v, t, idx, targets):
        grads = jax.grad(_gpt_loss)(p, idx, targets, n_head)
        t = t + 1
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        c1, c2 = 1 - b1**t, 1 - b2**t

        def update(p, m, v):
            return p * (1 - lr * wd) - lr * (m / c1) / (jnp.sqrt(v / c2) + eps)

        return jax.tree_util.tree_map(update, p, m, v), m, v, t

    def setup():
        p = _gpt_params(n_layer, d, T, vocab)
        zeros = jax.tree_util.tree_map(jnp.zeros_like, p)
        state = [p, zeros, zeros, jnp.zeros((), jnp.float32)]
        data = np.random.default_rng(0).integers(0, vocab, (B, T + 1))
        idx, targets = jnp.asarray(data[:, :-1]), jnp.asarray(data[:, 1:])

        def run():
            state[:] = step(*state, idx, targets)
            jax.block_until_ready(state[0])

        return run

    return setup


def suites(quick: bool) -> dict[str, dict]:
    """suite -> case name -> setup() -> run, for the suites JAX takes part in."""
    shapes, heads = _cases.mha_shapes(quick)
    layers = {
        _cases.mha_name(shape, need): mha(shape, heads, need)
        for shape in shapes
        for need in (False, True)
    }
    train = {_cases.gpt_step_name(c): gpt_step(**c) for c in _cases.gpt_configs(quick)}
    return dict(layers=layers, train=train)


# --------------------------------------------------------------------------- inference


def gpt2_params(c: dict, seed: int = 0) -> dict:
    """GPT-2-shaped parameters drawn with ``jax.random``: N(0, 0.02^2) weights, zero
    biases, LayerNorms at (1, 0); weights ``(in, out)``; the head is ``wte`` (tied)."""
    d, L, V = c["d"], c["n_layer"], c["vocab"]
    keys = iter(jax.random.split(jax.random.PRNGKey(seed), 2 + 4 * L))

    def normal(shape):
        return 0.02 * jax.random.normal(next(keys), shape, jnp.float32)

    def norm():
        return jnp.ones(d), jnp.zeros(d)

    blocks = [
        dict(
            ln_1=norm(),
            ln_2=norm(),
            attn=(normal((d, 3 * d)), jnp.zeros(3 * d)),
            proj=(normal((d, d)), jnp.zeros(d)),
            fc=(normal((d, 4 * d)), jnp.zeros(4 * d)),
            mlp_proj=(normal((4 * d, d)), jnp.zeros(d)),
        )
        for _ in range(L)
    ]
    return dict(wte=normal((V, d)), wpe=normal((c["n_ctx"], d)), h=blocks, ln_f=norm())


def _gpt2_forward(p, idx, keys, values, pos, n_head: int):
    """Logits of the last position and the caches with ``idx``'s keys/values written at
    ``pos``; caches (batch, max_len, heads, head_dim) per layer."""
    b, t = idx.shape
    d = p["wte"].shape[1]
    max_len = keys[0].shape[1]
    x = p["wte"][idx] + jax.lax.dynamic_slice_in_dim(p["wpe"], pos, t)
    visible = jnp.arange(max_len)[None, :] <= pos + jnp.arange(t)[:, None]  # (t, max_len)
    new_keys, new_values = [], []
    for blk, k_cache, v_cache in zip(p["h"], keys, values):
        qkv = _layer_norm(x, *blk["ln_1"]) @ blk["attn"][0] + blk["attn"][1]
        q, k, v = (z.reshape(b, t, n_head, d // n_head) for z in jnp.split(qkv, 3, axis=-1))
        k_cache = jax.lax.dynamic_update_slice_in_dim(k_cache, k, pos, axis=1)
        v_cache = jax.lax.dynamic_update_slice_in_dim(v_cache, v, pos, axis=1)
        new_keys.append(k_cache)
        new_values.append(v_cache)
        y = jax.nn.dot_product_attention(q, k_cache, v_cache, mask=visible[None, None])
        x = x + y.reshape(b, t, d) @ blk["proj"][0] + blk["proj"][1]
        h = jax.nn.gelu(_layer_norm(x, *blk["ln_2"]) @ blk["fc"][0] + blk["fc"][1], True)
        x = x + h @ blk["mlp_proj"][0] + blk["mlp_proj"][1]
    logits = _layer_norm(x[:, -1:], *p["ln_f"]) @ p["wte"].T
    return logits, new_keys, new_values


def run_inference(quick: bool, repeats: int) -> dict[str, float]:
    """The ``inference`` suite's figures for JAX (names as in ``_inference.run``).
    Construction includes compiling ``jax.random.normal`` for each weight shape."""
    c = _inference.config(quick)
    jnp.zeros(1).block_until_ready()  # the CPU client starts here, as an import would
    start = time.perf_counter()
    p = jax.block_until_ready(gpt2_params(c))
    out = {"construction s": time.perf_counter() - start}
    max_len, hd = c["prompt"] + c["new_tokens"], c["d"] // c["n_head"]
    forward = jax.jit(_gpt2_forward, static_argnames="n_head", donate_argnums=(2, 3))

    def fresh():
        shape = (1, max_len, c["n_head"], hd)
        return [jnp.zeros(shape) for _ in range(c["n_layer"])], [
            jnp.zeros(shape) for _ in range(c["n_layer"])
        ]

    prompt = jnp.asarray(np.random.default_rng(0).integers(0, c["vocab"], (1, c["prompt"])))

    def prefill():
        logits, keys, values = forward(p, prompt, *fresh(), 0, n_head=c["n_head"])
        return jax.block_until_ready(logits), keys, values

    prefill()  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        prefill()
        times.append(time.perf_counter() - start)
    out[f"prefill {c['prompt']} tokens ms"] = 1e3 * statistics.median(times)
    rates = []
    for _ in range(max(1, repeats // 2) + 1):  # the first compiles the one-token step
        logits, keys, values = prefill()
        token = int(logits[0, -1].argmax())
        start = time.perf_counter()
        for i in range(c["new_tokens"] - 1):
            step = jnp.asarray([[token]])
            logits, keys, values = forward(
                p, step, keys, values, c["prompt"] + i, n_head=c["n_head"]
            )
            token = int(logits[0, -1].argmax())
        rates.append((c["new_tokens"] - 1) / (time.perf_counter() - start))
    out["decode tokens/s, preallocated cache"] = statistics.median(rates[1:])
    out["peak RSS MiB"] = _inference.peak_rss_mib() or float("nan")
    return out
