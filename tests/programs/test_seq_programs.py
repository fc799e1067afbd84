"""Sequence programs as the corpus writes them, run in lockstep under torch and tinyattn.

* a GRU encoder-decoder with additive (Bahdanau) attention and teacher forcing
  (bentrevett/pytorch-seq2seq 3, d2l Bahdanau attention, the PyTorch seq2seq tutorial);
* an ``nn.TransformerEncoder`` language model with sinusoidal positions in a buffer,
  ``batchify``/``get_batch`` and ``StepLR`` (pytorch/examples word_language_model);
* attention written with einops (lucidrains/vit-pytorch): patches, ``rearrange`` of
  heads, ``repeat`` of a class token.
"""

from __future__ import annotations

import math
import random

import numpy as np
from programs._lockstep import Exact, grads, lockstep, params

# ------------------------------------------------------- GRU seq2seq + attention


def build_seq2seq(lib):
    nn, F = lib.nn, lib.nn.functional

    class Encoder(nn.Module):
        def __init__(self, vocab, emb, enc_hid, dec_hid, dropout) -> None:
            super().__init__()
            self.embedding = nn.Embedding(vocab, emb)
            self.rnn = nn.GRU(emb, enc_hid, bidirectional=True)
            self.fc = nn.Linear(enc_hid * 2, dec_hid)
            self.dropout = nn.Dropout(dropout)

        def forward(self, src):
            embedded = self.dropout(self.embedding(src))  # (src_len, B, emb)
            outputs, hidden = self.rnn(embedded)
            hidden = lib.tanh(self.fc(lib.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
            return outputs, hidden

    class Attention(nn.Module):
        def __init__(self, enc_hid, dec_hid) -> None:
            super().__init__()
            self.attn = nn.Linear(enc_hid * 2 + dec_hid, dec_hid)
            self.v = nn.Linear(dec_hid, 1, bias=False)

        def forward(self, hidden, encoder_outputs):
            src_len = encoder_outputs.shape[0]
            hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
            encoder_outputs = encoder_outputs.permute(1, 0, 2)
            energy = lib.tanh(self.attn(lib.cat((hidden, encoder_outputs), dim=2)))
            attention = self.v(energy).squeeze(2)
            return F.softmax(attention, dim=1)

    class Decoder(nn.Module):
        def __init__(self, vocab, emb, enc_hid, dec_hid, dropout, attention) -> None:
            super().__init__()
            self.output_dim = vocab
            self.attention = attention
            self.embedding = nn.Embedding(vocab, emb)
            self.rnn = nn.GRU(enc_hid * 2 + emb, dec_hid)
            self.fc_out = nn.Linear(enc_hid * 2 + dec_hid + emb, vocab)
            self.dropout = nn.Dropout(dropout)

        def forward(self, input, hidden, encoder_outputs):
            input = input.unsqueeze(0)
            embedded = self.dropout(self.embedding(input))
            a = self.attention(hidden, encoder_outputs).unsqueeze(1)
            weighted = lib.bmm(a, encoder_outputs.permute(1, 0, 2)).permute(1, 0, 2)
            output, hidden = self.rnn(lib.cat((embedded, weighted), dim=2), hidden.unsqueeze(0))
            assert (output == hidden).all()
            prediction = self.fc_out(
                lib.cat((output.squeeze(0), weighted.squeeze(0), embedded.squeeze(0)), dim=1)
            )
            return prediction, hidden.squeeze(0), a.squeeze(1)

    class Seq2Seq(nn.Module):
        def __init__(self, encoder, decoder) -> None:
            super().__init__()
            self.encoder, self.decoder = encoder, decoder

        def forward(self, src, trg, teacher_forcing_ratio=0.5, coin=random.random):
            trg_len, batch_size = trg.shape
            outputs = lib.zeros(trg_len, batch_size, self.decoder.output_dim, dtype=src_dtype(self))
            encoder_outputs, hidden = self.encoder(src)
            input = trg[0, :]
            for t in range(1, trg_len):
                output, hidden, _ = self.decoder(input, hidden, encoder_outputs)
                outputs[t] = output
                teacher_force = coin() < teacher_forcing_ratio
                top1 = output.argmax(1)
                input = trg[t] if teacher_force else top1
            return outputs

    def src_dtype(model):
        return model.decoder.fc_out.weight.dtype

    return Encoder, Attention, Decoder, Seq2Seq


def _init_weights(lib):
    def init_weights(m):
        for name, param in m.named_parameters():
            if "weight" in name:
                lib.nn.init.normal_(param.data, mean=0, std=0.3)
            else:
                lib.nn.init.constant_(param.data, 0)

    return init_weights


def program_gru_seq2seq(lib, init, dtype: str) -> dict:
    Encoder, Attention, Decoder, Seq2Seq = build_seq2seq(lib)
    V, PAD = 9, 0
    attn = Attention(5, 6)
    model = Seq2Seq(Encoder(V, 4, 5, 6, 0.0), Decoder(V, 4, 5, 6, 0.0, attn))
    model.apply(_init_weights(lib))
    init(lib, model.to(getattr(lib, dtype)))
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-2)
    criterion = lib.nn.CrossEntropyLoss(ignore_index=PAD)
    rng = np.random.default_rng(5)
    coin = random.Random(0).random  # the same teacher-forcing coin flips in both runs
    obs, losses = {}, []
    model.train()
    for step in range(3):
        src = lib.tensor(rng.integers(1, V, size=(6, 3)))  # (src_len, B)
        trg = lib.tensor(rng.integers(1, V, size=(5, 3)))
        trg[-1, 0] = PAD
        optimizer.zero_grad()
        output = model(src, trg, teacher_forcing_ratio=0.5, coin=coin)
        output_dim = output.shape[-1]
        output = output[1:].view(-1, output_dim)
        loss = criterion(output, trg[1:].view(-1))
        loss.backward()
        if step == 0:
            obs["output"], obs["grads"] = output, grads(model)
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with lib.no_grad():
        src = lib.tensor(rng.integers(1, V, size=(6, 2)))
        trg = lib.tensor(np.ones((5, 2), dtype=np.int64))
        greedy = model(src, trg, teacher_forcing_ratio=0.0).argmax(-1)
    obs["losses"], obs["params"], obs["greedy"] = losses, params(model), Exact(greedy[1:])
    return obs


def test_gru_seq2seq_bahdanau_attention_teacher_forcing():
    lockstep(program_gru_seq2seq)


# ---------------------------------------------- TransformerEncoder LM + StepLR


def build_transformer_lm(lib):
    nn, F = lib.nn, lib.nn.functional

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout=0.1, max_len=50) -> None:
            super().__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = lib.zeros(max_len, d_model)
            position = lib.arange(0, max_len, dtype=lib.float).unsqueeze(1)
            div_term = lib.exp(lib.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = lib.sin(position * div_term)
            pe[:, 1::2] = lib.cos(position * div_term)
            pe = pe.unsqueeze(0).transpose(0, 1)
            self.register_buffer("pe", pe)

        def forward(self, x):
            x = x + self.pe[: x.size(0), :]
            return self.dropout(x)

    class TransformerModel(nn.Transformer):
        def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.0) -> None:
            super().__init__(
                d_model=ninp,
                nhead=nhead,
                dim_feedforward=nhid,
                num_encoder_layers=nlayers,
                dropout=dropout,
            )
            self.model_type = "Transformer"
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, dropout)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)
            self.init_weights()

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, src, has_mask=True):
            if has_mask:
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    self.src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
            else:
                self.src_mask = None
            src = self.input_emb(src) * math.sqrt(self.ninp)
            src = self.pos_encoder(src)
            output = self.encoder(src, mask=self.src_mask.to(src.dtype))
            output = self.decoder(output)
            return F.log_softmax(output, dim=-1)

    return TransformerModel


def program_transformer_lm_steplr(lib, init, dtype: str) -> dict:
    TransformerModel = build_transformer_lm(lib)
    ntokens, bsz, bptt = 11, 3, 5
    stream = lib.tensor(np.random.default_rng(8).integers(0, ntokens, size=70))

    def batchify(data, bsz):
        nbatch = data.size(0) // bsz
        data = data.narrow(0, 0, nbatch * bsz)
        return data.view(bsz, -1).t().contiguous()

    def get_batch(source, i):
        seq_len = min(bptt, len(source) - 1 - i)
        data = source[i : i + seq_len]
        target = source[i + 1 : i + 1 + seq_len].view(-1)
        return data, target

    train_data = batchify(stream, bsz)
    model = TransformerModel(ntokens, 8, 2, 16, 2, dropout=0.0).to(getattr(lib, dtype))
    init(lib, model)
    criterion = lib.nn.NLLLoss()
    optimizer = lib.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    scheduler = lib.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    obs, losses, lrs = {}, [], []
    for epoch in range(3):
        model.train()
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i)
            model.zero_grad()
            output = model(data)
            output = output.view(-1, ntokens)
            loss = criterion(output, targets)
            loss.backward()
            if epoch == 0 and batch == 0:
                obs["output"], obs["grads"] = output, grads(model)
            lib.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        lrs.append(scheduler.get_last_lr())
    obs["losses"], obs["lrs"], obs["params"] = losses, lrs, params(model)
    return obs


def test_transformer_encoder_language_model_steplr():
    obs, _ = lockstep(program_transformer_lm_steplr)
    assert obs["lrs"] == [[0.5], [0.25], [0.25]]


# --------------------------------------------------------------- einops attention


def build_einops_vit(lib):
    from einops import rearrange, repeat

    nn = lib.nn

    class Attention(nn.Module):
        def __init__(self, dim, heads=2, dim_head=4) -> None:
            super().__init__()
            inner = dim_head * heads
            self.heads, self.scale = heads, dim_head**-0.5
            self.norm = nn.LayerNorm(dim)
            self.attend = nn.Softmax(dim=-1)
            self.to_qkv = nn.Linear(dim, inner * 3, bias=False)
            self.to_out = nn.Sequential(nn.Linear(inner, dim), nn.Dropout(0.0))

        def forward(self, x):
            x = self.norm(x)
            qkv = self.to_qkv(x).chunk(3, dim=-1)
            q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in qkv)
            dots = lib.matmul(q, k.transpose(-1, -2)) * self.scale
            attn = self.attend(dots)
            out = lib.matmul(attn, v)
            return self.to_out(rearrange(out, "b h n d -> b n (h d)"))

    class ViT(nn.Module):
        def __init__(self, image=4, patch=2, channels=1, dim=8, classes=3) -> None:
            super().__init__()
            self.patch = patch
            n = (image // patch) ** 2
            self.to_patch = nn.Sequential(
                nn.LayerNorm(patch * patch * channels),
                nn.Linear(patch * patch * channels, dim),
                nn.LayerNorm(dim),
            )
            self.pos_embedding = nn.Parameter(lib.randn(1, n + 1, dim))
            self.cls_token = nn.Parameter(lib.randn(1, 1, dim))
            self.layers = nn.ModuleList([Attention(dim) for _ in range(2)])
            self.head = nn.Linear(dim, classes)

        def forward(self, img):
            p = self.patch
            x = rearrange(img, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=p, p2=p)
            x = self.to_patch(x)
            b = x.shape[0]
            cls = repeat(self.cls_token, "1 1 d -> b 1 d", b=b)
            x = lib.cat((cls, x), dim=1) + self.pos_embedding
            for attn in self.layers:
                x = attn(x) + x
            return self.head(x[:, 0]), x.mean(dim=1)

    return ViT


def program_einops_vit(lib, init, dtype: str) -> dict:
    ViT = build_einops_vit(lib)
    model = init(lib, ViT().to(getattr(lib, dtype)))
    rng = np.random.default_rng(9)
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-2)
    obs, losses = {}, []
    for step in range(3):
        img = lib.tensor(rng.standard_normal((2, 1, 4, 4))).to(getattr(lib, dtype))
        y = lib.tensor(rng.integers(0, 3, size=2))
        optimizer.zero_grad()
        logits, pooled = model(img)
        loss = lib.nn.functional.cross_entropy(logits, y) + 0.1 * pooled.pow(2).mean()
        loss.backward()
        if step == 0:
            obs["logits"], obs["pooled"], obs["grads"] = logits, pooled, grads(model)
        optimizer.step()
        losses.append(loss.item())
    obs["losses"], obs["params"] = losses, params(model)
    return obs


def test_einops_attention_vit():
    lockstep(program_einops_vit)
