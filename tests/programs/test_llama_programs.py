"""The Llama-style program (``programs/llama.py``: complex rotary embeddings, RMSNorm,
SwiGLU, grouped-query attention, a key/value cache, greedy decoding).

With torch: both libraries run it from torch's weights, and must give the same logits at
every decoding step (1e-5 in float32), the same greedy tokens, and the same loss and
gradients of a training step. Without torch: the program still runs, its rotary
embedding is held to a NumPy reference written with cosines and sines (no complex
numbers), and cached decoding is held to the full forward without the cache.
"""

from __future__ import annotations

import numpy as np
import pytest
from programs.llama import ModelArgs, apply_rotary, build, greedy_decode, rotary_frequencies

import tinyattn

PROMPT = np.array([[3, 17, 5], [30, 2, 11]])


def _rope_reference(x: np.ndarray, start: int, theta: float = 10000.0) -> np.ndarray:
    """Rotate channels (2j, 2j + 1) of ``x`` (B, T, H, D) at position p by p theta^(-2j/D)."""
    D = x.shape[-1]
    inv_freq = theta ** (-np.arange(0, D, 2) / D)
    angles = np.arange(start, start + x.shape[1])[:, None] * inv_freq  # (T, D/2)
    cos, sin = np.cos(angles)[None, :, None, :], np.sin(angles)[None, :, None, :]
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


@pytest.mark.parametrize("start", [0, 5])
def test_complex_rotary_embedding_matches_a_real_reference(start):
    rng = np.random.default_rng(0)
    xq, xk = rng.standard_normal((2, 3, 4, 8)), rng.standard_normal((2, 3, 2, 8))
    freqs = rotary_frequencies(tinyattn, 8, 16)[start : start + 3]
    assert freqs.dtype is tinyattn.complex64
    q, k = apply_rotary(tinyattn, tinyattn.tensor(xq), tinyattn.tensor(xk), freqs)
    assert q.dtype is tinyattn.float64 and q.shape == xq.shape  # type_as brought it back
    np.testing.assert_allclose(q.numpy(), _rope_reference(xq, start), atol=1e-5)
    np.testing.assert_allclose(k.numpy(), _rope_reference(xk, start), atol=1e-5)


def test_rotary_gradient_is_the_inverse_rotation():
    """The gradient of sum(rope(x) * g) for x is g rotated back (a rotation's adjoint)."""
    rng = np.random.default_rng(1)
    x = tinyattn.tensor(rng.standard_normal((1, 3, 2, 4)).astype(np.float32), requires_grad=True)
    g = rng.standard_normal((1, 3, 2, 4))
    q, _ = apply_rotary(tinyattn, x, x, rotary_frequencies(tinyattn, 4, 8)[:3])
    (q * tinyattn.tensor(g, dtype=tinyattn.float32)).sum().backward()
    expected = np.empty_like(g)  # g rotated by -angle
    angles = np.arange(3)[:, None] * 10000.0 ** (-np.arange(0, 4, 2) / 4)
    cos, sin = np.cos(angles)[None, :, None, :], np.sin(angles)[None, :, None, :]
    expected[..., 0::2] = g[..., 0::2] * cos + g[..., 1::2] * sin
    expected[..., 1::2] = -g[..., 0::2] * sin + g[..., 1::2] * cos
    np.testing.assert_allclose(x.grad.numpy(), expected, atol=1e-5)


def test_cached_greedy_decoding_matches_the_full_forward():
    tinyattn.manual_seed(0)
    model = build(tinyattn)(ModelArgs()).eval()
    steps, tokens = greedy_decode(tinyattn, model, tinyattn.tensor(PROMPT), steps=5)
    assert tokens.shape == (2, 8) and tokens.dtype is tinyattn.int64
    fresh = build(tinyattn)(ModelArgs())
    fresh.load_state_dict(model.state_dict())
    with tinyattn.no_grad():
        full = fresh(tokens[:, :-1], 0, use_cache=False)  # every position at once, no cache
    for i, logits in enumerate(steps):
        position = PROMPT.shape[1] - 1 + i
        np.testing.assert_allclose(logits.numpy(), full[:, position].numpy(), atol=1e-5)
    assert (tokens[:, 3:] == full[:, 2:].argmax(-1)).all()


def _program(lib, init, dtype: str) -> dict:
    args = ModelArgs()
    model = init(lib, build(lib)(args))
    model.eval()
    prompt = lib.tensor(PROMPT)
    steps, tokens = greedy_decode(lib, model, prompt, steps=6)
    data = np.random.default_rng(2).integers(0, args.vocab_size, (2, 7))
    inputs, targets = lib.tensor(data[:, :-1].copy()), lib.tensor(data[:, 1:].copy())
    model.zero_grad()
    logits = model(inputs, 0, use_cache=False)
    loss = lib.nn.functional.cross_entropy(logits.view(-1, args.vocab_size), targets.reshape(-1))
    loss.backward()
    from programs._lockstep import Exact, grads

    return {
        "step_logits": steps,
        "tokens": Exact(tokens),
        "loss": loss.detach(),
        "grads": grads(model),
    }


def test_llama_complex_rope_lockstep_with_torch():
    pytest.importorskip("torch", reason="the lockstep run compares with torch")
    from programs._lockstep import lockstep

    obs_t, obs_a = lockstep(_program, dtype="float32")
    for ours, theirs in zip(obs_a["step_logits"], obs_t["step_logits"]):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-5, rtol=1e-5)
    assert obs_a["tokens"].value.tolist() == obs_t["tokens"].value.tolist()
