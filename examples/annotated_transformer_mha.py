"""The Annotated Transformer's multi-head attention ("MultiHeadAttention实现详解") on tinyattn.

``clones`` (``copy.deepcopy`` into an ``nn.ModuleList``), ``attention()`` and the
multi-head layer (renamed ``MultiHeadAttention`` by the document, which adds the
size prints), run on the document's example: h=8, d_model=512, one sequence of 10.
It prints the document's four lines, with ``tinyattn.Size`` for ``torch.Size``::

    Input size: torch.Size([1, 10, 512])
    Before transform query: torch.Size([1, 10, 512])
    After transform query: torch.Size([1, 8, 10, 64])
    Output size: torch.Size([1, 10, 512])

Run: python examples/annotated_transformer_mha.py
"""

import contextlib
import copy
import io
import math

import tinyattn as torch
import tinyattn.nn as nn
import tinyattn.nn.functional as F


def clones(module, N):
    "Produce N identical layers."
    # deepcopy: four independent Linear layers (same initial values, separate parameters).
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = F.softmax(scores, dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadAttention(nn.Module):
    def __init__(self, h, d_model, dropout=0.1):
        "Take in model size and number of heads."
        super(MultiHeadAttention, self).__init__()  # noqa: UP008 - as in the document
        assert d_model % h == 0
        # We assume d_v always equals d_k
        self.d_k = d_model // h
        self.h = h
        self.linears = clones(nn.Linear(d_model, d_model), 4)  # create 4 linear layers
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            # Same mask applied to all h heads.
            mask = mask.unsqueeze(1)
        batch_size = query.size(0)

        print("Before transform query: " + str(query.size()))  # (batch_size, seq_length, d_model)

        # (batch_size, seq_length, d_model), use first 3 self.linears
        query, key, value = [l(x) for l, x in zip(self.linears, (query, key, value))]
        query, key, value = [
            x.view(batch_size, -1, self.h, self.d_k).transpose(1, 2) for x in (query, key, value)
        ]  # (batch_size, h, seq_length, d_k)

        print("After transform query: " + str(query.size()))

        # 2) Apply attention on all the projected vectors in batch.
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)

        # 3) "Concat" using a view and apply a final linear.
        x = x.transpose(1, 2).contiguous().view(batch_size, -1, self.h * self.d_k)
        return self.linears[-1](x)


def main():
    torch.manual_seed(0)
    h = 8
    d_model = 512
    batch_size = 1
    seq_length = 10
    model = MultiHeadAttention(h, d_model)

    query = torch.randn([batch_size, seq_length, d_model])
    key = query
    value = query

    print("Input size: " + str(query.size()))

    m = model(query, key, value)

    print("Output size: " + str(m.size()))

    # clones() deep-copies ONE initialised Linear, so the four layers start with identical
    # values (the full Annotated Transformer re-initialises every weight with xavier
    # afterwards; this layer alone does not). They are still separate parameters.
    w = [lin.weight for lin in model.linears]
    identical_init = all(torch.equal(a, b) for a, b in zip(w, w[1:]))
    distinct = len({id(p) for p in w}) == 4
    print(f"4 linears: identical initial weights {identical_init}, separate parameters {distinct}")

    # self.attn is stored AFTER dropout (p=0.1, the module is in training mode), so its rows
    # do not sum to 1; in eval mode (dropout off) they do.
    ones = torch.ones(batch_size, h, seq_length)
    train_rows = bool(torch.allclose(model.attn.sum(-1), ones))
    model.eval()
    with contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
        model(query, key, value)
    eval_rows = bool(torch.allclose(model.attn.sum(-1), ones))
    print(
        f"attention weights {tuple(model.attn.shape)}, rows sum to 1: "
        f"train mode {train_rows}, eval mode {eval_rows}"
    )
    return {
        "input": query.size(),
        "output": m.size(),
        "identical_init": identical_init,
        "distinct": distinct,
        "train_rows_sum_to_1": train_rows,
        "eval_rows_sum_to_1": eval_rows,
    }


if __name__ == "__main__":
    main()
