"""Raschka's causal and multi-head attention on tinyattn (registered triu buffer,
``mask.bool()[:T, :T]``, in-place ``masked_fill_`` with ``-torch.inf``).

The document prints context vectors from weights drawn by torch's generator with
seed 123. tinyattn's generator draws different numbers, so when torch is installed
this script copies torch's initial weights in (``load_state_dict``) and prints the
document's exact values; without torch it runs with tinyattn's own weights.

Run: python examples/raschka_attention.py
"""

import tinyattn as torch
from tinyattn import nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [
                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                for _ in range(num_heads)
            ]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


# "Your journey starts with one step": the book's six 3-d token embeddings.
inputs = torch.tensor(
    [
        [0.43, 0.15, 0.89],
        [0.55, 0.87, 0.66],
        [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33],
        [0.77, 0.25, 0.10],
        [0.05, 0.80, 0.55],
    ]
)
batch = torch.stack((inputs, inputs), dim=0)


def _with_torch_weights(model, class_name, *args):
    """Copy the initial weights torch draws with seed 123 (the document's numbers)."""
    try:
        import torch as real_torch
    except ImportError:
        print("(torch not installed: using tinyattn's own random weights)")
        return model
    real_torch.manual_seed(123)
    reference = _torch_twin(class_name)(*args)
    model.load_state_dict(reference.state_dict())
    return model


def _torch_twin(name):
    """The same class defined under real torch (this file's source with the import swapped)."""
    import pathlib

    source = pathlib.Path(__file__).read_text()
    source = source.replace("import tinyattn as torch", "import torch").replace(
        "from tinyattn import nn", "from torch import nn"
    )
    namespace = {"__name__": "raschka_torch_twin"}
    exec(compile(source.split('# "Your journey')[0], "raschka_torch_twin", "exec"), namespace)
    return namespace[name]


def main():
    torch.manual_seed(123)
    context_length = batch.shape[1]
    d_in, d_out = 3, 2
    mha = MultiHeadAttentionWrapper(d_in, d_out, context_length, 0.0, num_heads=2)
    mha = _with_torch_weights(mha, "MultiHeadAttentionWrapper", d_in, d_out, context_length, 0.0, 2)
    wrapper_vecs = mha(batch)
    print(wrapper_vecs)
    print("context_vecs.shape:", wrapper_vecs.shape)

    torch.manual_seed(123)
    batch_size, context_length, d_in = batch.shape
    d_out = 2
    mha = MultiHeadAttention(d_in, d_out, context_length, 0.0, num_heads=2)
    mha = _with_torch_weights(mha, "MultiHeadAttention", d_in, d_out, context_length, 0.0, 2)
    context_vecs = mha(batch)
    print(context_vecs)
    print("context_vecs.shape:", context_vecs.shape)
    return wrapper_vecs, context_vecs


if __name__ == "__main__":
    main()
