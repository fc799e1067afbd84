"""End-to-end training parity with torch: same model code, same start, same batches.

Each model is written once as a function of the library (``build(lib)`` returns
model classes using ``lib.nn`` / ``lib.nn.functional``), so the torch run and the
tinyattn run execute the very same source. torch's initial ``state_dict`` is
copied into the tinyattn model, both train ~10 steps on fixed batches with the
same optimizer and scheduler, and losses are compared at every step and all
parameters at the end.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tinyattn as ta  # noqa: E402

# float64 runs agree to rounding; float32 runs accumulate float32 rounding
# differences (different summation orders) over the steps.
TOL = {"float64": dict(rtol=1e-9, atol=1e-11), "float32": dict(rtol=2e-4, atol=2e-5)}
DTYPES = ["float64", "float32"]


def _np(t) -> np.ndarray:
    """A tensor of either library as a NumPy array."""
    if isinstance(t, ta.Tensor):
        return t.detach().numpy()
    return t.detach().cpu().numpy()


def _tensor(lib, a: np.ndarray):
    return lib.tensor(np.array(a))


def _pair(build, dtype: str, *args, **kwargs):
    """The same model built with torch and with tinyattn, tinyattn loaded with torch's init."""
    torch.manual_seed(0)
    tm = build(torch)(*args, **kwargs).to(getattr(torch, dtype))
    am = build(ta)(*args, **kwargs).to(getattr(ta, dtype))
    result = am.load_state_dict(tm.state_dict())
    assert not result.missing_keys and not result.unexpected_keys
    return tm, am


def _assert_params_close(tm, am, dtype: str, what: str = "") -> None:
    tp = dict(tm.named_parameters())
    ap = dict(am.named_parameters())
    assert list(tp) == list(ap)
    for name in tp:
        assert ap[name].dtype == getattr(ta, dtype), name
        a, t = _np(ap[name]), _np(tp[name])
        if name.endswith(("in_proj_bias", "qkv.bias")):
            # The key bias adds q.b_k to every score of a query row, which softmax
            # ignores: its exact gradient is 0 and both libraries' gradients are
            # rounding noise (~1e-18 in float64). Adam (and its coupled weight decay)
            # amplify that noise into O(lr) steps of random sign, differently in each
            # library, so these entries are only checked to stay small.
            e = a.shape[0] // 3
            assert np.abs(a[e : 2 * e]).max() < 0.1, name
            a, t = np.delete(a, np.s_[e : 2 * e]), np.delete(t, np.s_[e : 2 * e])
        np.testing.assert_allclose(a, t, **TOL[dtype], err_msg=f"{what} parameter {name}")


def _assert_losses_close(tl, al, dtype: str) -> None:
    assert len(tl) == len(al)
    assert all(math.isfinite(v) for v in tl)
    np.testing.assert_allclose(al, tl, **TOL[dtype], err_msg="per-step losses")


def _run(lib, model, opt, sched, batches, step_loss, clip=None) -> list[float]:
    """A textbook training loop; returns the loss of every step."""
    losses = []
    model.train()
    for batch in batches:
        tb = [_tensor(lib, a) for a in batch]
        opt.zero_grad()
        loss = step_loss(lib, model, *tb)
        loss.backward()
        if clip is not None:
            lib.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if sched is not None:
            sched.step()
        losses.append(loss.item())
    return losses


# --------------------------------------------------------------------------- GPT


def build_gpt(lib):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self, d: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
            k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
            v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.proj(y)
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self, vocab: int = 11, block: int = 8, d: int = 16, heads: int = 2) -> None:
            super().__init__()
            self.tok_emb = nn.Embedding(vocab, d)
            self.pos_emb = nn.Embedding(block, d)
            self.blocks = nn.ModuleList([Block(d, heads) for _ in range(2)])
            self.ln_f = nn.LayerNorm(d)
            self.lm_head = nn.Linear(d, vocab, bias=False)
            self.lm_head.weight = self.tok_emb.weight  # weight tying
            self.apply(self._init)

        def _init(self, m) -> None:
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=0.2)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

        def forward(self, idx, targets=None):
            B, T = idx.size()
            pos = lib.arange(0, T, dtype=lib.long)
            x = self.tok_emb(idx) + self.pos_emb(pos)
            for block in self.blocks:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss

    return GPT


def _gpt_batches(steps: int, seed: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        seq = rng.integers(0, 11, size=(3, 9))
        out.append((seq[:, :-1].copy(), seq[:, 1:].copy()))
    return out


def _gpt_optim(lib, model, total: int = 10, warmup: int = 3):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = lib.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=3e-2,
        betas=(0.9, 0.95),
    )

    def lr_lambda(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    sched = lib.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
    return opt, sched


def _gpt_loss(lib, model, x, y):
    return model(x, y)[1]


@pytest.mark.parametrize("dtype", DTYPES)
def test_gpt_adamw_cosine_clip(dtype):
    tm, am = _pair(build_gpt, dtype)
    assert am.lm_head.weight is am.tok_emb.weight
    assert len(list(am.parameters())) == len(list(tm.parameters()))
    batches = _gpt_batches(10)
    topt, tsched = _gpt_optim(torch, tm)
    aopt, asched = _gpt_optim(ta, am)
    tl = _run(torch, tm, topt, tsched, batches, _gpt_loss, clip=0.5)
    al = _run(ta, am, aopt, asched, batches, _gpt_loss, clip=0.5)
    _assert_losses_close(tl, al, dtype)
    _assert_params_close(tm, am, dtype)
    assert am.lm_head.weight is am.tok_emb.weight
    assert asched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)


def test_gpt_save_load_resume_matches_uninterrupted(tmp_path):
    dtype = "float64"
    _, straight = _pair(build_gpt, dtype)
    _, first = _pair(build_gpt, dtype)
    batches = _gpt_batches(8)

    opt, sched = _gpt_optim(ta, straight)
    full = _run(ta, straight, opt, sched, batches, _gpt_loss, clip=0.5)

    opt1, sched1 = _gpt_optim(ta, first)
    head = _run(ta, first, opt1, sched1, batches[:4], _gpt_loss, clip=0.5)
    path = tmp_path / "ckpt.pt"
    ta.save(
        {"model": first.state_dict(), "opt": opt1.state_dict(), "sched": sched1.state_dict()},
        path,
    )
    saved_lr = sched1.get_last_lr()
    del first, opt1, sched1

    resumed = build_gpt(ta)().to(ta.float64)
    opt2, sched2 = _gpt_optim(ta, resumed)
    ckpt = ta.load(path)
    resumed.load_state_dict(ckpt["model"])
    opt2.load_state_dict(ckpt["opt"])
    sched2.load_state_dict(ckpt["sched"])
    assert resumed.lm_head.weight is resumed.tok_emb.weight
    assert sched2.last_epoch == 4 and sched2.get_last_lr() == saved_lr
    assert [g["lr"] for g in opt2.param_groups] == saved_lr
    tail = _run(ta, resumed, opt2, sched2, batches[4:], _gpt_loss, clip=0.5)

    assert head + tail == full
    for (n, p), (_, q) in zip(straight.named_parameters(), resumed.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=n)


def test_gpt_torch_checkpoint_resumes_in_tinyattn(tmp_path):
    """A torch optimizer/scheduler state dict (converted tensors) continues torch's trajectory."""
    dtype = "float64"
    tm, am = _pair(build_gpt, dtype)
    batches = _gpt_batches(8)
    topt, tsched = _gpt_optim(torch, tm)
    aopt, asched = _gpt_optim(ta, am)
    _run(torch, tm, topt, tsched, batches[:4], _gpt_loss, clip=0.5)
    am.load_state_dict(tm.state_dict())
    state = topt.state_dict()
    state = {
        "state": {
            k: {n: ta.tensor(v.numpy()) for n, v in s.items()} for k, s in state["state"].items()
        },
        "param_groups": state["param_groups"],
    }
    aopt.load_state_dict(state)
    asched.load_state_dict(tsched.state_dict())
    tl = _run(torch, tm, topt, tsched, batches[4:], _gpt_loss, clip=0.5)
    al = _run(ta, am, aopt, asched, batches[4:], _gpt_loss, clip=0.5)
    _assert_losses_close(tl, al, dtype)
    _assert_params_close(tm, am, dtype)


def test_gpt_deepcopy_trains_independently():
    dtype = "float64"
    tm, am = _pair(build_gpt, dtype)
    before = {n: p.detach().numpy().copy() for n, p in am.named_parameters()}
    tcopy, acopy = copy.deepcopy(tm), copy.deepcopy(am)
    assert acopy.lm_head.weight is acopy.tok_emb.weight
    assert acopy.tok_emb.weight is not am.tok_emb.weight
    batches = _gpt_batches(5)
    topt, tsched = _gpt_optim(torch, tcopy)
    aopt, asched = _gpt_optim(ta, acopy)
    tl = _run(torch, tcopy, topt, tsched, batches, _gpt_loss)
    al = _run(ta, acopy, aopt, asched, batches, _gpt_loss)
    _assert_losses_close(tl, al, dtype)
    _assert_params_close(tcopy, acopy, dtype)
    for n, p in am.named_parameters():
        np.testing.assert_array_equal(p.detach().numpy(), before[n], err_msg=n)
        assert p.grad is None, n


# ------------------------------------------------------------ TransformerEncoder


def build_encoder_tagger(lib):
    nn = lib.nn

    class Tagger(nn.Module):
        def __init__(self, norm_first: bool, dropout: float = 0.0) -> None:
            super().__init__()
            self.emb = nn.Embedding(9, 12, padding_idx=0)
            layer = nn.TransformerEncoderLayer(
                12, 3, dim_feedforward=20, dropout=dropout, batch_first=True, norm_first=norm_first
            )
            self.enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.head = nn.Linear(12, 4)

        def forward(self, x, pad):
            return self.head(self.enc(self.emb(x), src_key_padding_mask=pad))

    return Tagger


def _tagger_batches(steps: int) -> list[tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(2)
    out = []
    for _ in range(steps):
        lengths = rng.integers(2, 7, size=4)
        x = rng.integers(1, 9, size=(4, 6))
        pad = np.arange(6)[None, :] >= lengths[:, None]
        x[pad] = 0
        y = rng.integers(0, 4, size=(4, 6))
        y[pad] = -1
        out.append((x, pad, y))
    return out


def _tagger_loss(lib, model, x, pad, y):
    logits = model(x, pad)
    crit = lib.nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=-1)
    return crit(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_tagger_adam(dtype, norm_first):
    tm, am = _pair(build_encoder_tagger, dtype, norm_first)
    batches = _tagger_batches(10)
    topt = torch.optim.Adam(tm.parameters(), lr=1e-2, weight_decay=1e-3)
    aopt = ta.optim.Adam(am.parameters(), lr=1e-2, weight_decay=1e-3)
    tl = _run(torch, tm, topt, None, batches, _tagger_loss)
    al = _run(ta, am, aopt, None, batches, _tagger_loss)
    _assert_losses_close(tl, al, dtype)
    _assert_params_close(tm, am, dtype)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_eval_no_grad_inference(norm_first):
    """Dropout active in training, off in eval; eval outputs match torch's."""
    tm, am = _pair(build_encoder_tagger, "float64", norm_first, dropout=0.3)
    x, pad, _ = _tagger_batches(1)[0]
    tm.eval()
    am.eval()
    with torch.no_grad():
        tout = tm(torch.tensor(x), torch.tensor(pad))
    with ta.no_grad():
        aout = am(ta.tensor(x), ta.tensor(pad))
    assert not aout.requires_grad
    keep = ~pad  # torch's fast path may leave padded rows different
    np.testing.assert_allclose(_np(aout)[keep], _np(tout)[keep], **TOL["float64"])
    with ta.no_grad():
        again = am(ta.tensor(x), ta.tensor(pad))
    np.testing.assert_array_equal(_np(again), _np(aout))
    am.train()
    with ta.no_grad():
        dropped = am(ta.tensor(x), ta.tensor(pad))
    assert not np.allclose(_np(dropped)[keep], _np(aout)[keep])


# ------------------------------------------------------------------ Transformer


def build_copy_transformer(lib):
    nn = lib.nn

    class Copier(nn.Module):
        def __init__(self, vocab: int = 8, d: int = 12) -> None:
            super().__init__()
            self.src_emb = nn.Embedding(vocab, d)
            self.tgt_emb = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(lib.randn(1, 8, d) * 0.1)
            self.tf = nn.Transformer(
                d_model=d,
                nhead=2,
                num_encoder_layers=1,
                num_decoder_layers=2,
                dim_feedforward=24,
                dropout=0.0,
                batch_first=True,
            )
            self.out = nn.Linear(d, vocab)

        def forward(self, src, tgt, src_pad, tgt_pad):
            S, T = src.shape[1], tgt.shape[1]
            mask = nn.Transformer.generate_square_subsequent_mask(T, dtype=self.pos.dtype)
            h = self.tf(
                self.src_emb(src) + self.pos[:, :S],
                self.tgt_emb(tgt) + self.pos[:, :T],
                tgt_mask=mask,
                src_key_padding_mask=src_pad,
                tgt_key_padding_mask=tgt_pad,
                memory_key_padding_mask=src_pad,
            )
            return self.out(h)

    return Copier


def _copy_batches(steps: int) -> list[tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(3)
    BOS, PAD = 1, 0
    out = []
    for _ in range(steps):
        lengths = rng.integers(3, 6, size=3)
        src = rng.integers(2, 8, size=(3, 5))
        src_pad = np.arange(5)[None, :] >= lengths[:, None]
        src[src_pad] = PAD
        tgt_in = np.concatenate([np.full((3, 1), BOS), src], axis=1)[:, :-1].copy()
        tgt_pad = np.arange(5)[None, :] > lengths[:, None]
        out.append((src, tgt_in, src_pad, tgt_pad, src.copy()))
    return out


def _copy_loss(lib, model, src, tgt_in, src_pad, tgt_pad, y):
    logits = model(src, tgt_in, src_pad, tgt_pad)
    return lib.nn.CrossEntropyLoss(ignore_index=0)(logits.transpose(1, 2), y)


@pytest.mark.parametrize("dtype", DTYPES)
def test_transformer_copy_task_sgd_nesterov_steplr(dtype):
    tm, am = _pair(build_copy_transformer, dtype)
    batches = _copy_batches(10)
    kw = dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
    topt = torch.optim.SGD(tm.parameters(), **kw)
    aopt = ta.optim.SGD(am.parameters(), **kw)
    tsched = torch.optim.lr_scheduler.StepLR(topt, step_size=3, gamma=0.5)
    asched = ta.optim.lr_scheduler.StepLR(aopt, step_size=3, gamma=0.5)
    tl = _run(torch, tm, topt, tsched, batches, _copy_loss, clip=1.0)
    al = _run(ta, am, aopt, asched, batches, _copy_loss, clip=1.0)
    _assert_losses_close(tl, al, dtype)
    _assert_params_close(tm, am, dtype)
    assert asched.get_last_lr() == pytest.approx(tsched.get_last_lr())


# ---------------------------------------------------- RNN seq2seq with attention


def build_rnn_seq2seq(lib):
    nn = lib.nn

    def sequence_mask(X, valid_len, value=0.0):
        maxlen = X.size(1)
        mask = lib.arange(maxlen, dtype=lib.float32)[None, :] < valid_len[:, None]
        X[~mask] = value
        return X

    def masked_softmax(X, valid_lens):
        shape = X.shape
        if valid_lens.dim() == 1:
            valid_lens = lib.repeat_interleave(valid_lens, shape[1])
        else:
            valid_lens = valid_lens.reshape(-1)
        X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
        return nn.functional.softmax(X.reshape(shape), dim=-1)

    class AdditiveAttention(nn.Module):
        def __init__(self, h: int) -> None:
            super().__init__()
            self.W_k = nn.Linear(h, h, bias=False)
            self.W_q = nn.Linear(h, h, bias=False)
            self.w_v = nn.Linear(h, 1, bias=False)

        def forward(self, queries, keys, values, valid_lens):
            queries, keys = self.W_q(queries), self.W_k(keys)
            features = lib.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
            scores = self.w_v(features).squeeze(-1)
            self.attention_weights = masked_softmax(scores, valid_lens)
            return lib.bmm(self.attention_weights, values)

    class Seq2Seq(nn.Module):
        def __init__(self, cell: str, vocab: int = 7, e: int = 6, h: int = 8) -> None:
            super().__init__()
            rnn = getattr(nn, cell)
            self.cell = cell
            self.enc_emb = nn.Embedding(vocab, e)
            self.encoder = rnn(e, h, num_layers=2)
            self.dec_emb = nn.Embedding(vocab, e)
            self.attention = AdditiveAttention(h)
            self.decoder = rnn(e + h, h, num_layers=2)
            self.dense = nn.Linear(h, vocab)

        def forward(self, src, tgt, valid_lens):
            enc_out, state = self.encoder(self.enc_emb(src).permute(1, 0, 2))
            enc_out = enc_out.permute(1, 0, 2)
            outputs = []
            for x in self.dec_emb(tgt).permute(1, 0, 2):
                top = state[0][-1] if self.cell == "LSTM" else state[-1]
                context = self.attention(top.unsqueeze(1), enc_out, enc_out, valid_lens)
                x = lib.cat((context, x.unsqueeze(1)), dim=-1)
                out, state = self.decoder(x.permute(1, 0, 2), state)
                outputs.append(out)
            out = self.dense(lib.cat(outputs, dim=0))
            return nn.functional.log_softmax(out.permute(1, 0, 2), dim=-1)

    return Seq2Seq


def _seq2seq_batches(steps: int) -> list[tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(4)
    out = []
    for _ in range(steps):
        src = rng.integers(0, 7, size=(3, 5))
        tgt = rng.integers(0, 7, size=(3, 4))
        valid = rng.integers(2, 6, size=3)
        target = rng.random((3, 4, 7)) + np.eye(7)[tgt] * 4.0
        target /= target.sum(-1, keepdims=True)
        out.append((src, tgt, valid, target))
    return out


def _seq2seq_loss(lib, model, src, tgt, valid, target):
    logp = model(src, tgt, valid)
    return lib.nn.KLDivLoss(reduction="batchmean")(logp, target.to(logp.dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", ["GRU", "LSTM"])
def test_rnn_seq2seq_additive_attention_kldiv(dtype, cell):
    tm, am = _pair(build_rnn_seq2seq, dtype, cell)
    batches = _seq2seq_batches(8)
    topt = torch.optim.Adam(tm.parameters(), lr=2e-2, amsgrad=True)
    aopt = ta.optim.Adam(am.parameters(), lr=2e-2, amsgrad=True)
    tl = _run(torch, tm, topt, None, batches, _seq2seq_loss, clip=1.0)
    al = _run(ta, am, aopt, None, batches, _seq2seq_loss, clip=1.0)
    _assert_losses_close(tl, al, dtype)
    _assert_params_close(tm, am, dtype)


# --------------------------------------------- MHA with attention-weight penalty


def build_mha_regressor(lib):
    nn = lib.nn

    class Regressor(nn.Module):
        def __init__(self, d: int = 8, heads: int = 2, kdim: int | None = None) -> None:
            super().__init__()
            self.inp = nn.Linear(3, d)
            self.mem = nn.Linear(3, kdim or d)
            self.mha = nn.MultiheadAttention(
                d, heads, batch_first=True, kdim=kdim, vdim=kdim, add_bias_kv=True
            )
            self.out = nn.Linear(d, 2)

        def forward(self, x, m, kpm, attn_mask):
            q = self.inp(x)
            kv = self.mem(m)
            h, w = self.mha(
                q,
                kv,
                kv,
                key_padding_mask=kpm,
                attn_mask=attn_mask,
                need_weights=True,
                average_attn_weights=False,
            )
            return self.out(h), w

    return Regressor


def _mha_batches(steps: int) -> list[tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(5)
    out = []
    for _ in range(steps):
        x = rng.standard_normal((3, 4, 3))
        m = rng.standard_normal((3, 5, 3))
        kpm = np.zeros((3, 5), dtype=bool)
        kpm[0, 3:] = True
        kpm[2, 4:] = True
        attn_mask = rng.standard_normal((4, 5)) * 0.5
        y = rng.standard_normal((3, 4, 2))
        out.append((x, m, kpm, attn_mask, y))
    return out


def _mha_loss(lib, model, x, m, kpm, attn_mask, y):
    dtype = model.out.weight.dtype
    x, m, y = x.to(dtype), m.to(dtype), y.to(dtype)
    pred, w = model(x, m, kpm, attn_mask.to(dtype))
    entropy = -(w * lib.log(w + 1e-9)).sum(-1).mean()
    sharp = (w**2).sum()
    return lib.nn.MSELoss()(pred, y) + 0.1 * entropy - 0.05 * sharp


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kdim", [None, 5])
def test_mha_attention_weight_regularisation(dtype, kdim):
    tm, am = _pair(build_mha_regressor, dtype, kdim=kdim)
    batches = _mha_batches(10)
    topt = torch.optim.AdamW(tm.parameters(), lr=1e-2, weight_decay=0.05)
    aopt = ta.optim.AdamW(am.parameters(), lr=1e-2, weight_decay=0.05)
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=10)
    asched = ta.optim.lr_scheduler.CosineAnnealingLR(aopt, T_max=10)
    tl = _run(torch, tm, topt, tsched, batches, _mha_loss)
    al = _run(ta, am, aopt, asched, batches, _mha_loss)
    _assert_losses_close(tl, al, dtype)
    _assert_params_close(tm, am, dtype)
