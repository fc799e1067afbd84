"""GPT programs as the corpus writes them, run in lockstep under torch and tinyattn.

Patterns (nanoGPT, minGPT, LLMs-from-scratch ch04-ch06, ng-video-lecture): weight
tying and AdamW parameter groups; ``generate`` with temperature, top-k and greedy
decoding; a ``Dataset``/``DataLoader`` training loop with ``estimate_loss``; a
checkpoint dict that round-trips through ``save``/``load``; classification
fine-tuning on the last token with frozen layers.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from programs._lockstep import Exact, Loose, grads, lockstep, params
from programs.gpt import GPTConfig, build

import tinyattn


def _tokens(n: int, seed: int = 0, vocab: int = 13) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, vocab, size=n)


def _batch(lib, seed: int, B: int = 3, T: int = 8):
    data = _tokens(B * (T + 1), seed).reshape(B, T + 1)
    return lib.tensor(data[:, :-1].copy()), lib.tensor(data[:, 1:].copy())


def _model(lib, init, dtype: str, **cfg):
    model = build(lib)(GPTConfig(**cfg))
    model.to(getattr(lib, dtype))
    return init(lib, model)


# ------------------------------------------------------------- AdamW groups, tying


def program_gpt_adamw(lib, init, dtype: str, flash: bool = True) -> dict:
    model = _model(lib, init, dtype, flash=flash)
    obs = {
        "tied": Exact(model.lm_head.weight is model.transformer.wte.weight),
        "n_params": model.get_num_params(),
    }
    optimizer = model.configure_optimizers(0.1, 1e-2, (0.9, 0.95))
    obs["group_sizes"] = [len(g["params"]) for g in optimizer.param_groups]
    losses = []
    for step in range(3):
        X, Y = _batch(lib, seed=step)
        logits, loss = model(X, Y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if step == 0:
            obs["logits"], obs["grads"] = logits, grads(model)
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    obs["losses"], obs["params"] = losses, params(model)
    obs["still_tied"] = Exact(model.lm_head.weight is model.transformer.wte.weight)
    return obs


@pytest.mark.parametrize("flash", [True, False], ids=["sdpa", "tril_buffer"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gpt_weight_tying_adamw_groups(dtype, flash):
    obs, _ = lockstep(program_gpt_adamw, dtype=dtype, flash=flash)
    assert obs["tied"].value and obs["still_tied"].value
    assert obs["group_sizes"][0] > 0 and obs["group_sizes"][1] > 0


# ------------------------------------------------------------------- generation


def program_generate(lib, init, dtype: str) -> dict:
    model = _model(lib, init, dtype)
    model.eval()
    idx = lib.tensor([[1, 2, 3], [4, 5, 6]])
    greedy = model.generate(idx, max_new_tokens=9, greedy=True)  # crosses block_size
    sampled = model.generate(idx, max_new_tokens=6, temperature=0.8, top_k=4)
    with lib.no_grad():
        logits, _ = model(idx)
    return {
        "greedy": Exact(greedy),
        "sampled": Loose(sampled),
        "sampled_prefix": Exact(sampled[:, :3]),
        "sampled_in_vocab": Exact(bool(((sampled >= 0) & (sampled < 13)).all())),
        "logits": logits,
    }


def test_generate_greedy_token_for_token_and_sampling_shapes():
    obs, obs_a = lockstep(program_generate)
    assert tuple(obs_a["greedy"].value.shape) == (2, 12)
    assert obs_a["sampled"].value.dtype == tinyattn.int64
    assert obs_a["sampled_in_vocab"].value


# ---------------------------------------------------- DataLoader + estimate_loss


def _dataset_class(lib):
    class TokenWindows(lib.utils.data.Dataset):
        """Sliding windows over a token stream (inputs, targets shifted by one)."""

        def __init__(self, tokens, max_length: int, stride: int) -> None:
            self.input_ids, self.target_ids = [], []
            for i in range(0, len(tokens) - max_length, stride):
                self.input_ids.append(lib.tensor(tokens[i : i + max_length]))
                self.target_ids.append(lib.tensor(tokens[i + 1 : i + max_length + 1]))

        def __len__(self) -> int:
            return len(self.input_ids)

        def __getitem__(self, idx):
            return self.input_ids[idx], self.target_ids[idx]

    return TokenWindows


def program_dataloader_estimate_loss(lib, init, dtype: str) -> dict:
    DataLoader = lib.utils.data.DataLoader
    Windows = _dataset_class(lib)
    tokens = _tokens(120, seed=7).tolist()
    split = int(0.8 * len(tokens))
    train_loader = DataLoader(
        Windows(tokens[:split], 8, 4), batch_size=3, shuffle=False, drop_last=True, num_workers=0
    )
    val_loader = DataLoader(Windows(tokens[split:], 8, 4), batch_size=3, shuffle=False)
    model = _model(lib, init, dtype)
    optimizer = lib.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.1)

    @lib.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for name, loader in (("train", train_loader), ("val", val_loader)):
            losses = lib.zeros(len(loader))
            for k, (X, Y) in enumerate(loader):
                _, loss = model(X, Y)
                losses[k] = loss.item()
            out[name] = losses.mean()
        model.train()
        return out

    def calc_loss_loader(loader):
        total = 0.0
        for X, Y in loader:
            logits, _ = model(X, Y)
            total += lib.nn.functional.cross_entropy(logits.flatten(0, 1), Y.flatten()).item()
        return total / len(loader)

    obs = {"batches": (len(train_loader), len(val_loader)), "before": estimate_loss()}
    first = next(iter(train_loader))
    obs["first_batch"] = Exact(first[0]), Exact(first[1])
    steps = []
    for X, Y in train_loader:
        optimizer.zero_grad()
        _, loss = model(X, Y)
        loss.backward()
        optimizer.step()
        steps.append(loss.item())
    obs["steps"], obs["after"] = steps, estimate_loss()
    with lib.no_grad():
        obs["val_loss_loader"] = calc_loss_loader(val_loader)
    return obs


def test_dataloader_training_loop_with_estimate_loss():
    obs, _ = lockstep(program_dataloader_estimate_loss)
    assert obs["batches"][0] >= 5
    assert obs["after"]["train"] < obs["before"]["train"]


# ------------------------------------------------------------------- checkpoint


def program_checkpoint(lib, init, dtype: str, tmpdir: str) -> dict:
    GPT = build(lib)
    model_args = dict(n_layer=2, n_head=2, n_embd=8, block_size=8, bias=True, vocab_size=13)
    model = init(lib, GPT(GPTConfig(**model_args)).to(getattr(lib, dtype)))
    straight = GPT(GPTConfig(**model_args)).to(getattr(lib, dtype))
    straight.load_state_dict(model.state_dict())  # an uninterrupted twin
    opt = model.configure_optimizers(0.1, 1e-2, (0.9, 0.95))
    opt_straight = straight.configure_optimizers(0.1, 1e-2, (0.9, 0.95))

    def train(m, o, steps):
        out = []
        for step in steps:
            X, Y = _batch(lib, seed=10 + step)
            _, loss = m(X, Y)
            o.zero_grad(set_to_none=True)
            loss.backward()
            o.step()
            out.append(loss.item())
        return out

    full = train(straight, opt_straight, range(4))
    head = train(model, opt, range(2))
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "model_args": model_args,
        "iter_num": 2,
        "best_val_loss": head[-1],
        "config": {"dataset": "tiny", "dtype": dtype, "compile": False},
    }
    path = os.path.join(tmpdir, f"ckpt_{lib.__name__}.pt")
    lib.save(checkpoint, path)
    del model, opt

    checkpoint = lib.load(path, map_location="cpu")
    resumed = GPT(GPTConfig(**checkpoint["model_args"])).to(getattr(lib, dtype))
    state_dict = checkpoint["model"]
    unwanted_prefix = "_orig_mod."
    for k, _v in list(state_dict.items()):
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix) :]] = state_dict.pop(k)
    resumed.load_state_dict(state_dict)
    opt2 = resumed.configure_optimizers(0.1, 1e-2, (0.9, 0.95))
    opt2.load_state_dict(checkpoint["optimizer"])
    tail = train(resumed, opt2, range(checkpoint["iter_num"], 4))
    same = all(bool((p == q).all()) for p, q in zip(resumed.parameters(), straight.parameters()))
    return {
        "iter_num": Exact(checkpoint["iter_num"]),
        "config": Exact(checkpoint["config"]),
        "model_args": Exact(checkpoint["model_args"]),
        "best_val_loss": checkpoint["best_val_loss"],
        "losses": head + tail,
        "resume_equals_straight": Exact(head + tail == full and same),
        "params": params(resumed),
    }


def test_checkpoint_dict_round_trips_and_resumes(tmp_path):
    obs, obs_a = lockstep(program_checkpoint, tmpdir=str(tmp_path))
    assert obs_a["resume_equals_straight"].value
    assert isinstance(obs_a["iter_num"].value, int)


# ----------------------------------------------------- classification fine-tune


def program_classify_last_token(lib, init, dtype: str) -> dict:
    nn = lib.nn
    model = _model(lib, init, dtype, flash=False)
    for param in model.parameters():
        param.requires_grad = False
    model.lm_head = nn.Linear(model.config.n_embd, 2).to(getattr(lib, dtype))
    for param in model.transformer.h[-1].parameters():
        param.requires_grad = True
    for param in model.transformer.ln_f.parameters():
        param.requires_grad = True
    init(lib, model)  # the new head too starts from torch's weights
    optimizer = lib.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    rng = np.random.default_rng(3)
    X = lib.tensor(rng.integers(0, 13, size=(6, 8)))
    y = lib.tensor(rng.integers(0, 2, size=6))
    obs = {"trainable": sum(p.numel() for p in model.parameters() if p.requires_grad)}
    losses = []
    for step in range(3):
        optimizer.zero_grad()
        logits = model(X)[0][:, -1, :]  # the last token's output
        loss = lib.nn.functional.cross_entropy(logits, y)
        loss.backward()
        if step == 0:
            obs["logits"], obs["grads"] = logits, grads(model)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with lib.no_grad():
        predicted = lib.argmax(model(X)[0][:, -1, :], dim=-1)
    obs["correct"] = (predicted == y).sum().item()
    obs["losses"], obs["params"] = losses, params(model)
    return obs


def test_classification_finetuning_on_last_token():
    obs, obs_a = lockstep(program_classify_last_token)
    assert obs["grads"]["transformer.h.0.attn.c_attn.weight"] is None
    assert obs_a["grads"]["lm_head.weight"] is not None
