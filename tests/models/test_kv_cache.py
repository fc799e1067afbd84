"""KVCache: the preallocated cache gives the concatenating cache's numbers bit for bit,
torch's logits step by step, and refuses what it cannot hold."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tinyattn.models import KVCache
from tinyattn.models.gpt2 import GPT2, generate

try:
    import torch
except ImportError:
    torch = None

SIZES = dict(vocab_size=97, n_positions=24, n_embd=16, n_layer=2, n_head=2)


def _model() -> GPT2:
    tinyattn.manual_seed(0)
    model = GPT2(**SIZES).eval()
    with tinyattn.no_grad():
        for p in model.parameters():
            p.add_(tinyattn.randn(p.shape) * 0.3)
    return model


def _step_logits(model, ids, steps, cache):
    """Logits of the prompt's last position, then of each forced next token."""
    out = []
    with tinyattn.no_grad():
        logits, cache = model(tinyattn.tensor([ids]), cache, last_only=True)
        out.append(logits.numpy()[0, -1])
        for token in steps:
            logits, cache = model(tinyattn.tensor([[token]]), cache, last_only=True)
            out.append(logits.numpy()[0, -1])
    return np.stack(out)


def test_preallocated_cache_equals_concatenation_bit_for_bit():
    model, ids, steps = _model(), [5, 17, 3, 88, 41], [7, 60, 2, 19]
    concatenated = _step_logits(model, ids, steps, None)
    preallocated = _step_logits(model, ids, steps, model.new_cache(len(ids) + len(steps)))
    assert np.array_equal(preallocated, concatenated)
    a = generate(model, ids, 8, cache="preallocated")
    b = generate(model, ids, 8, cache="concatenating")
    assert a == b and len(a) == len(ids) + 8


@pytest.mark.skipif(torch is None, reason="parity with torch: torch not installed")
def test_cached_steps_match_torch_full_sequence_logits():
    model, ids, steps = _model(), [1, 2, 3, 50, 96, 4], [8, 9, 10]
    ours = _step_logits(model, ids, steps, model.new_cache(16))
    sd = {k: torch.tensor(v.detach().numpy()) for k, v in model.state_dict().items()}
    seq = torch.tensor([ids + steps])
    x = sd["wte.weight"][seq] + sd["wpe.weight"][: seq.shape[1]]
    C, H = SIZES["n_embd"], SIZES["n_head"]
    ln = torch.nn.functional.layer_norm
    for i in range(SIZES["n_layer"]):
        g = {k[len(f"h.{i}.") :]: v for k, v in sd.items() if k.startswith(f"h.{i}.")}
        h = ln(x, (C,), g["ln_1.weight"], g["ln_1.bias"]) @ g["attn.c_attn.weight"]
        q, k, v = (
            z.view(1, -1, H, C // H).transpose(1, 2)
            for z in (h + g["attn.c_attn.bias"]).split(C, 2)
        )
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = (
            x
            + y.transpose(1, 2).reshape(1, -1, C) @ g["attn.c_proj.weight"]
            + g["attn.c_proj.bias"]
        )
        h = (
            ln(x, (C,), g["ln_2.weight"], g["ln_2.bias"]) @ g["mlp.c_fc.weight"]
            + g["mlp.c_fc.bias"]
        )
        h = torch.nn.functional.gelu(h, approximate="tanh")
        x = x + h @ g["mlp.c_proj.weight"] + g["mlp.c_proj.bias"]
    theirs = ln(x, (C,), sd["ln_f.weight"], sd["ln_f.bias"]) @ sd["wte.weight"].T
    np.testing.assert_allclose(ours, theirs[0, len(ids) - 1 :].numpy(), rtol=1e-4, atol=1e-4)


def test_update_returns_views_of_what_was_written_and_reset_starts_over():
    cache = KVCache(n_layer=2, n_head=3, max_len=5, head_dim=4)
    first = tinyattn.randn(1, 3, 2, 4)
    k, v = cache.update(first, first * 2, 0)
    assert cache.length == 2 and cache.lengths == [2, 0]
    np.testing.assert_array_equal(k.numpy(), first.numpy())
    step = tinyattn.randn(1, 3, 1, 4)
    k, v = cache.update(step, step, 0)
    assert tuple(k.shape) == (1, 3, 3, 4)
    np.testing.assert_array_equal(k.numpy()[:, :, :2], first.numpy())
    np.testing.assert_array_equal(v.numpy()[:, :, 2:], step.numpy())
    cache.reset()
    assert cache.length == 0
    k, _ = cache.update(step, step, 0)
    assert tuple(k.shape) == (1, 3, 1, 4)


def test_bad_input_is_refused_by_name():
    cache = KVCache(n_layer=1, n_head=2, max_len=3, head_dim=4)
    ok = tinyattn.zeros(1, 2, 2, 4)
    with pytest.raises(ValueError, match="n_head must be an int >= 1, got 0"):
        KVCache(n_layer=1, n_head=0, max_len=3, head_dim=4)
    with pytest.raises(IndexError, match=r"layer must be in \[0, 1\), got 1"):
        cache.update(ok, ok, 1)
    with pytest.raises(TypeError, match="key must be a Tensor, got numpy.ndarray"):
        cache.update(np.zeros((1, 2, 2, 4)), ok, 0)
    with pytest.raises(ValueError, match=r"value must have shape .* got \[1, 2, 1, 4\]"):
        cache.update(ok, tinyattn.zeros(1, 2, 1, 4), 0)
    with pytest.raises(ValueError, match=r"key must have shape .*head_dim=4.* got \[1, 2, 2, 5\]"):
        cache.update(tinyattn.zeros(1, 2, 2, 5), tinyattn.zeros(1, 2, 2, 5), 0)
    cache.update(ok, ok, 0)
    with pytest.raises(ValueError, match=r"2 \+ 2 positions exceed max_len=3"):
        cache.update(ok, ok, 0)
    leaf = tinyattn.zeros(1, 2, 1, 4, requires_grad=True)
    with pytest.raises(
        RuntimeError, match="key requires grad; the preallocated cache is an inference path"
    ):
        cache.update(leaf, ok[:, :, :1], 0)
    with tinyattn.no_grad():
        cache.update(leaf, ok[:, :, :1], 0)  # under no_grad the values are just stored
    with pytest.raises(
        ValueError, match="cache must be 'preallocated' or 'concatenating', got 'static'"
    ):
        generate(_model(), [1], 1, cache="static")
