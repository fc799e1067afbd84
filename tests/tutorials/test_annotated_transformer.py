"""The Annotated Transformer's attention() and MultiHeadedAttention (seed 004):
``clones`` via ``copy.deepcopy``, ``mask.unsqueeze(1)``, ``masked_fill(mask == 0, -1e9)``."""

import copy
import math

import numpy as np
from twins import assert_close, assert_same_grads, libs, to_both, twin_modules


def build(torch, nn, F):
    def clones(module, N):  # noqa: N803 - the tutorial's name
        return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])

    def attention(query, key, value, mask=None, dropout=None):
        d_k = query.size(-1)
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        p_attn = F.softmax(scores, dim=-1)
        if dropout is not None:
            p_attn = dropout(p_attn)
        return torch.matmul(p_attn, value), p_attn

    class MultiHeadedAttention(nn.Module):
        def __init__(self, h, d_model, dropout=0.1):
            super().__init__()
            assert d_model % h == 0
            self.d_k = d_model // h
            self.h = h
            self.linears = clones(nn.Linear(d_model, d_model), 4)
            self.attn = None
            self.dropout = nn.Dropout(p=dropout)

        def forward(self, query, key, value, mask=None):
            if mask is not None:
                mask = mask.unsqueeze(1)
            nbatches = query.size(0)
            query, key, value = [
                lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                for lin, x in zip(self.linears, (query, key, value))
            ]
            x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)
            x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
            return self.linears[-1](x)

    return MultiHeadedAttention, clones


def test_shapes_printed_by_the_document():
    (A, Ann, AF) = libs()[1]
    MHA, clones = build(A, Ann, AF)
    model = MHA(8, 512)
    query = A.randn([1, 10, 512])
    out = model(query, query, query)
    assert tuple(out.shape) == (1, 10, 512)
    assert tuple(model.attn.shape) == (1, 8, 10, 10)
    layers = clones(Ann.Linear(4, 4), 3)
    assert layers[0].weight is not layers[1].weight
    np.testing.assert_array_equal(
        layers[0].weight.detach().numpy(), layers[2].weight.detach().numpy()
    )


def test_multiheaded_attention_with_padding_mask_matches_torch():
    ref, ours = twin_modules(lambda T, nn, F: build(T, nn, F)[0], lambda T: (4, 16, 0.0))
    rng = np.random.default_rng(4)
    xr, x = to_both(rng.standard_normal((2, 6, 16)), requires_grad=True)
    m = np.ones((2, 1, 6), dtype=bool)
    m[1, 0, 4:] = False  # padding in the second sequence
    mr, mm = to_both(m)
    out_r, out = ref(xr, xr, xr, mr), ours(x, x, x, mm)
    assert_close(out, out_r)
    assert_close(ours.attn, ref.attn, what="attention weights")
    out_r.tanh().sum().backward()
    out.tanh().sum().backward()
    assert_same_grads(ours, ref)
    assert_close(x.grad, xr.grad, what="input gradient")
