"""d2l's attention chapter on tinyattn: masked softmax, dot-product and MLP attention,
and the seq2seq decoder with attention. Reproduces the document's printed values.

Run: python examples/d2l_attention.py
"""

import math

import tinyattn as torch
from tinyattn import nn


def SequenceMask(X, X_len, value=-1e6):
    maxlen = X.size(1)
    mask = torch.arange((maxlen), dtype=torch.float)[None, :] >= X_len[:, None]
    X[mask] = value  # boolean-mask assignment, in place (autograd follows it)
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
        attention_weights = self.dropout(masked_softmax(scores, valid_length))
        print("attention_weight\n", attention_weights)
        return torch.bmm(attention_weights, value)


class MLPAttention(nn.Module):
    def __init__(self, units, ipt_dim, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(ipt_dim, units, bias=False)
        self.W_q = nn.Linear(ipt_dim, units, bias=False)
        self.v = nn.Linear(units, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value, valid_length):
        # The document names these the other way round (W_k on the query); kept as written.
        query, key = self.W_k(query), self.W_q(key)
        features = query.unsqueeze(2) + key.unsqueeze(1)
        scores = self.v(features).squeeze(-1)
        attention_weights = self.dropout(masked_softmax(scores, valid_length))
        return torch.bmm(attention_weights, value)


class Seq2SeqEncoder(nn.Module):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
        super().__init__(**kwargs)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.LSTM(embed_size, num_hiddens, num_layers, dropout=dropout)

    def forward(self, X, *args):
        X = self.embedding(X).transpose(0, 1)
        return self.rnn(X)


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


def main():
    torch.manual_seed(0)
    print(masked_softmax(torch.rand((2, 2, 4), dtype=torch.float), torch.FloatTensor([2, 3])))
    print(
        torch.bmm(
            torch.ones((2, 1, 3), dtype=torch.float), torch.ones((2, 3, 2), dtype=torch.float)
        )
    )

    atten = DotProductAttention(dropout=0)
    keys = torch.ones((2, 10, 2), dtype=torch.float)
    values = torch.arange((40), dtype=torch.float).view(1, 10, 4).repeat(2, 1, 1)
    print(values.shape)
    dot_out = atten(
        torch.ones((2, 1, 2), dtype=torch.float), keys, values, torch.FloatTensor([2, 6])
    )
    print(dot_out)

    atten = MLPAttention(ipt_dim=2, units=8, dropout=0)
    mlp_out = atten(
        torch.ones((2, 1, 2), dtype=torch.float), keys, values, torch.FloatTensor([2, 6])
    )
    print(mlp_out)

    encoder = Seq2SeqEncoder(vocab_size=10, embed_size=8, num_hiddens=16, num_layers=2)
    decoder = Seq2SeqAttentionDecoder(vocab_size=10, embed_size=8, num_hiddens=16, num_layers=2)
    X = torch.zeros((4, 7), dtype=torch.long)
    print("batch size=4\nseq_length=7\nhidden dim=16\nnum_layers=2\n")
    print("encoder output size:", encoder(X)[0].size())
    print("encoder hidden size:", encoder(X)[1][0].size())
    print("encoder memory size:", encoder(X)[1][1].size())
    state = decoder.init_state(encoder(X), None)
    out, state = decoder(X, state)
    print((out.shape, len(state), state[0].shape, len(state[1]), state[1][0].shape))
    return dot_out, mlp_out, out, state


if __name__ == "__main__":
    main()
