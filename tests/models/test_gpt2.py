"""GPT-2 in the hub's layout: weights written by torch (pytorch_model.bin and safetensors)
give torch's logits (float32, 1e-4) and greedy tokens; the KV cache changes nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tinyattn
from tinyattn.models.gpt2 import GPT2, from_file, generate
from tinyattn.safetensors import save_file

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="parity with torch: torch not installed")
ROOT = str(Path(__file__).resolve().parents[2])
SIZES = dict(vocab_size=300, n_positions=48, n_embd=32, n_layer=2, n_head=4)


def _torch_gpt2(V, T, C, L, H):
    """A GPT-2 in torch with the hub's parameter names, written out for the test."""
    nn = torch.nn

    class Conv1D(nn.Module):
        def __init__(self, n_in, n_out):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(n_in, n_out) * 0.2)
            self.bias = nn.Parameter(torch.randn(n_out) * 0.2)

        def forward(self, x):
            return x @ self.weight + self.bias

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.attn, self.mlp = nn.Module(), nn.Module()
            self.attn.c_attn, self.attn.c_proj = Conv1D(C, 3 * C), Conv1D(C, C)
            self.mlp.c_fc, self.mlp.c_proj = Conv1D(C, 4 * C), Conv1D(4 * C, C)
            self.attn.register_buffer("bias", torch.tril(torch.ones(1, 1, T, T)))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (z.view(b, t, H, C // H).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / (C // H) ** 0.5
            att = att.masked_fill(self.attn.bias[:, :, :t, :t] == 0, float("-inf"))
            y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)
            x = x + self.attn.c_proj(y)
            hidden = nn.functional.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh")
            return x + self.mlp.c_proj(hidden)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            self.h = nn.ModuleList([Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(C)
            for name, p in self.named_parameters():
                if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                    nn.init.normal_(p, 1.0, 0.2)
                elif "ln" in name:
                    nn.init.normal_(p, 0.0, 0.2)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
            for block in self.h:
                x = block(x)
            return self.ln_f(x) @ self.wte.weight.t()

    torch.manual_seed(0)
    return Model().eval()


def _torch_greedy(model, ids, n):
    seq = list(ids)
    with torch.no_grad():
        for _ in range(n):
            seq.append(int(model(torch.tensor([seq]))[0, -1].argmax()))
    return seq


@needs_torch
@pytest.mark.parametrize("layout", ["pytorch_model.bin", "model.safetensors"])
def test_torch_written_weights_give_torchs_logits_and_greedy_tokens(tmp_path, layout):
    s = SIZES
    ref = _torch_gpt2(s["vocab_size"], s["n_positions"], s["n_embd"], s["n_layer"], s["n_head"])
    sd = ref.state_dict()
    path = tmp_path / layout
    if layout.endswith(".bin"):  # as transformers saves GPT2LMHeadModel: prefix, tied head
        full = {f"transformer.{k}": v for k, v in sd.items()}
        full["lm_head.weight"] = sd["wte.weight"]
        torch.save(full, path)
    else:  # as the hub stores model.safetensors: no prefix, no head, no mask buffers
        arrays = {k: v.numpy() for k, v in sd.items() if not k.endswith(".attn.bias")}
        save_file({k: tinyattn.tensor(a) for k, a in arrays.items()}, path)
    model = from_file(path, n_head=s["n_head"])
    ids = [72, 101, 108, 108, 111, 32, 7]
    with tinyattn.no_grad():
        ours = model(tinyattn.tensor([ids]))[0].numpy()
    with torch.no_grad():
        theirs = ref(torch.tensor([ids])).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)
    assert generate(model, ids, 12) == _torch_greedy(ref, ids, 12)


def _random_model() -> GPT2:
    tinyattn.manual_seed(0)
    model = GPT2(**SIZES).eval()
    with tinyattn.no_grad():
        for p in model.parameters():
            p.add_(tinyattn.randn(p.shape) * 0.2)
    return model


def test_kv_cache_generation_equals_recomputing_the_whole_sequence():
    model, ids = _random_model(), list(b"attention")
    seq = list(ids)
    with tinyattn.no_grad():
        for _ in range(10):
            seq.append(int(model(tinyattn.tensor([seq]))[0][0, -1].argmax()))
    assert generate(model, ids, 10) == seq


def test_torch_layout_with_prefix_and_tied_head_loads_without_torch(tmp_path):
    model = _random_model()
    sd = {f"transformer.{k}": v for k, v in model.state_dict().items()}
    sd["lm_head.weight"] = model.wte.weight
    tinyattn.save(sd, tmp_path / "pytorch_model.bin", format="torch")
    loaded = from_file(tmp_path / "pytorch_model.bin", n_head=SIZES["n_head"])
    ids = tinyattn.tensor([list(b"weights")])
    with tinyattn.no_grad():
        assert np.array_equal(loaded(ids)[0].numpy(), model(ids)[0].numpy())


def test_generate_command_prints_text_and_tokens_per_second(tmp_path):
    save_file(_random_model().state_dict(), tmp_path / "model.safetensors")
    (tmp_path / "config.json").write_text('{"n_head": 4}')
    result = subprocess.run(
        [sys.executable, "-m", "tinyattn", "generate", "--weights",
         str(tmp_path / "model.safetensors"), "--prompt", "Hi", "--tokens", "5"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Hi")
    assert "5 tokens in" in result.stdout and "tokens/s" in result.stdout


def test_generate_refuses_bad_arguments():
    model = _random_model()
    for kwargs, match in (
        ({"ids": [], "max_new_tokens": 1}, "at least one token"),
        ({"ids": [1], "max_new_tokens": -1}, "max_new_tokens must be an int >= 0, got -1"),
        ({"ids": [1], "max_new_tokens": 1, "temperature": -0.5}, "temperature must be >= 0"),
    ):
        with pytest.raises(ValueError, match=match):
            generate(model, **kwargs)
    with pytest.raises(ValueError, match="n_embd \\(32\\) must be divisible by n_head \\(5\\)"):
        GPT2(**dict(SIZES, n_head=5))
