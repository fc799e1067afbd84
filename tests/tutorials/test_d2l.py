"""d2l attention (seed 001): masked_softmax with valid lengths, dot-product and MLP
attention, and the seq2seq decoder with attention over an LSTM encoder."""

import math

import numpy as np
import pytest
from twins import assert_close, assert_same_grads, libs, to_both, twin_modules


def build_attention(torch, nn, F):
    def SequenceMask(X, X_len, value=-1e6):  # noqa: N802 - the tutorial's name
        maxlen = X.size(1)
        mask = torch.arange((maxlen), dtype=torch.float)[None, :] >= X_len[:, None]
        X[mask] = value
        return X

    def masked_softmax(X, valid_length):
        softmax = nn.Softmax(dim=-1)
        if valid_length is None:
            return softmax(X)
        shape = X.shape
        if valid_length.dim() == 1:
            valid_length = torch.FloatTensor(valid_length.numpy().repeat(shape[1], axis=0))
        else:
            valid_length = valid_length.reshape((-1,))
        X = SequenceMask(X.reshape((-1, shape[-1])), valid_length)
        return softmax(X).reshape(shape)

    class DotProductAttention(nn.Module):
        def __init__(self, dropout, **kwargs):
            super().__init__(**kwargs)
            self.dropout = nn.Dropout(dropout)

        def forward(self, query, key, value, valid_length=None):
            d = query.shape[-1]
            scores = torch.bmm(query, key.transpose(1, 2)) / math.sqrt(d)
            self.attention_weights = self.dropout(masked_softmax(scores, valid_length))
            return torch.bmm(self.attention_weights, value)

    class MLPAttention(nn.Module):
        def __init__(self, units, ipt_dim, dropout, **kwargs):
            super().__init__(**kwargs)
            self.W_k = nn.Linear(ipt_dim, units, bias=False)
            self.W_q = nn.Linear(ipt_dim, units, bias=False)
            self.v = nn.Linear(units, 1, bias=False)
            self.dropout = nn.Dropout(dropout)

        def forward(self, query, key, value, valid_length):
            query, key = self.W_k(query), self.W_q(key)
            features = query.unsqueeze(2) + key.unsqueeze(1)
            scores = self.v(features).squeeze(-1)
            attention_weights = self.dropout(masked_softmax(scores, valid_length))
            return torch.bmm(attention_weights, value)

    return masked_softmax, DotProductAttention, MLPAttention


def test_masked_softmax_1d_and_2d_valid_lengths():
    (T, Tnn, TF), (A, Ann, AF) = libs()
    ms_ref, _, _ = build_attention(T, Tnn, TF)
    ms, _, _ = build_attention(A, Ann, AF)
    X = np.random.default_rng(0).random((2, 2, 4)).astype(np.float32)
    for valid in ([2, 3], [[1, 3], [2, 4]]):
        xr, x = to_both(X.copy(), requires_grad=True)
        vr, v = T.tensor(valid, dtype=T.float), A.tensor(valid, dtype=A.float)
        out_r, out = ms_ref(xr * 1, vr), ms(x * 1, v)
        assert_close(out, out_r, atol=1e-6, rtol=1e-5)
        (out_r * T.arange(4.0)).sum().backward()
        (out * A.arange(4.0)).sum().backward()
        assert_close(x.grad, xr.grad, atol=1e-6, rtol=1e-5, what="gradient")
    # the document's example: rows beyond the valid length are exactly 0
    out = ms(A.tensor(X), A.FloatTensor([2, 3]))
    assert np.all(out.numpy()[0, :, 2:] == 0) and np.all(out.numpy()[1, :, 3:] == 0)


@pytest.mark.parametrize("which", ["dot", "mlp"])
def test_d2l_attention_reproduces_the_documents_outputs(which):
    (A, Ann, AF) = libs()[1]
    _, Dot, MLP = build_attention(A, Ann, AF)
    atten = Dot(dropout=0) if which == "dot" else MLP(ipt_dim=2, units=8, dropout=0)
    keys = A.ones((2, 10, 2), dtype=A.float)
    values = A.arange((40), dtype=A.float).view(1, 10, 4).repeat(2, 1, 1)
    out = atten(A.ones((2, 1, 2), dtype=A.float), keys, values, A.FloatTensor([2, 6]))
    np.testing.assert_allclose(
        out.detach().numpy(), [[[2, 3, 4, 5]], [[10, 11, 12, 13]]], rtol=1e-6
    )


def test_mlp_attention_matches_torch_with_gradients():
    ref, ours = twin_modules(lambda T, nn, F: build_attention(T, nn, F)[2], lambda T: (8, 2, 0.0))
    rng = np.random.default_rng(1)
    q_r, q = to_both(rng.standard_normal((2, 3, 2)), requires_grad=True)
    k_r, k = to_both(rng.standard_normal((2, 5, 2)), requires_grad=True)
    v_r, v = to_both(rng.standard_normal((2, 5, 4)), requires_grad=True)
    import torch

    import tinyattn

    out_r = ref(q_r, k_r, v_r, torch.tensor([2.0, 4.0], dtype=torch.float64))
    out = ours(q, k, v, tinyattn.tensor([2.0, 4.0], dtype=tinyattn.float64))
    assert_close(out, out_r)
    out_r.sum().backward()
    out.sum().backward()
    assert_same_grads(ours, ref)
    for a, b, name in ((q, q_r, "query"), (k, k_r, "key"), (v, v_r, "value")):
        assert_close(a.grad, b.grad, what=f"{name} gradient")


def build_seq2seq(torch, nn, F):
    _, _, MLPAttention = build_attention(torch, nn, F)

    class Seq2SeqEncoder(nn.Module):
        def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
            super().__init__(**kwargs)
            self.embedding = nn.Embedding(vocab_size, embed_size)
            self.rnn = nn.LSTM(embed_size, num_hiddens, num_layers, dropout=dropout)

        def forward(self, X, *args):
            X = self.embedding(X)
            X = X.transpose(0, 1)
            out, state = self.rnn(X)
            return out, state

    class Seq2SeqAttentionDecoder(nn.Module):
        def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
            super().__init__(**kwargs)
            self.attention_cell = MLPAttention(num_hiddens, num_hiddens, dropout)
            self.embedding = nn.Embedding(vocab_size, embed_size)
            self.rnn = nn.LSTM(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
            self.dense = nn.Linear(num_hiddens, vocab_size)

        def init_state(self, enc_outputs, enc_valid_len, *args):
            outputs, hidden_state = enc_outputs
            return (outputs.permute(1, 0, -1), hidden_state, enc_valid_len)

        def forward(self, X, state):
            enc_outputs, hidden_state, enc_valid_len = state
            X = self.embedding(X).transpose(0, 1)
            outputs = []
            for x in X:
                query = hidden_state[0][-1].unsqueeze(1)
                context = self.attention_cell(query, enc_outputs, enc_outputs, enc_valid_len)
                x = torch.cat((context, x.unsqueeze(1)), dim=-1)
                out, hidden_state = self.rnn(x.transpose(0, 1), hidden_state)
                outputs.append(out)
            outputs = self.dense(torch.cat(outputs, dim=0))
            return outputs.transpose(0, 1), [enc_outputs, hidden_state, enc_valid_len]

    class EncoderDecoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = Seq2SeqEncoder(vocab_size=10, embed_size=8, num_hiddens=16, num_layers=2)
            self.decoder = Seq2SeqAttentionDecoder(
                vocab_size=10, embed_size=8, num_hiddens=16, num_layers=2
            )

        def forward(self, X, valid_len=None):
            state = self.decoder.init_state(self.encoder(X), valid_len)
            return self.decoder(X, state)

    return EncoderDecoder


def test_seq2seq_decoder_shapes_and_parity():
    ref, ours = twin_modules(build_seq2seq, lambda T: ())
    X = np.random.default_rng(2).integers(0, 10, (4, 7))
    xr, x = to_both(X)
    enc_out, (h, c) = ours.encoder(x)
    assert tuple(enc_out.shape) == (7, 4, 16)
    assert tuple(h.shape) == (2, 4, 16) and tuple(c.shape) == (2, 4, 16)
    out_r, state_r = ref(xr)
    out, state = ours(x)
    assert tuple(out.shape) == (4, 7, 10)
    assert len(state) == 3 and tuple(state[0].shape) == (4, 7, 16)
    assert len(state[1]) == 2 and tuple(state[1][0].shape) == (2, 4, 16)
    assert_close(out, out_r)
    out_r.sum().backward()
    out.sum().backward()
    assert_same_grads(ours, ref)
