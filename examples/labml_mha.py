"""labml's multi-head attention ("一口气看完从零到一构建transformer架构代码一") on tinyattn.

The document's two classes are reproduced as written: ``PrepareForMultiHeadAttention``
(one Linear, then ``view`` into heads) and ``MultiHeadAttention`` in the seq-first
einsum layout (``'ibhd,jbhd->ijbh'``: scores are ``[seq_q, seq_k, batch, heads]``),
with ``scores *= self.scale`` in place and a mask shaped ``[seq_q, seq_k, batch]``.

Changes, each marked below: ``labml.tracker`` is replaced by a comment (not a
dependency here); the bare ``assert``s on the mask shape are kept in the document's
class, and a subclass shows the fixed behaviour (a ``ValueError`` naming both shapes).

Run: python examples/labml_mha.py
"""

import math

import tinyattn as torch
import tinyattn.nn.functional as F
from tinyattn import nn

# from labml import tracker  # the document logs attention with labml; not needed here


class PrepareForMultiHeadAttention(nn.Module):
    def __init__(self, d_model, heads, d_k, bias):
        super().__init__()
        self.linear = nn.Linear(d_model, heads * d_k, bias=bias)
        self.heads = heads
        self.d_k = d_k

    def forward(self, x):
        # [seq_len, batch_size, d_model] or [batch_size, d_model]
        head_shape = x.shape[:-1]
        x = self.linear(x)
        # -> [seq_len, batch_size, heads, d_k] or [batch_size, heads, d_k]
        x = x.view(*head_shape, self.heads, self.d_k)
        return x


class MultiHeadAttention(nn.Module):
    def __init__(self, heads, d_model, dropout_prob=0.1, bias=True):
        super().__init__()
        self.d_k = d_model // heads
        self.heads = heads
        self.query = PrepareForMultiHeadAttention(d_model, heads, self.d_k, bias=bias)
        self.key = PrepareForMultiHeadAttention(d_model, heads, self.d_k, bias=bias)
        self.value = PrepareForMultiHeadAttention(d_model, heads, self.d_k, bias=True)
        # The document says "softmax over the row dimension" / "along the sequence length".
        # Scores here are [seq_q, seq_k, batch, heads], so dim=1 IS the key dimension:
        # each query's weights over the keys sum to 1, which is correct. It only looks
        # unusual because in batch-first code ([batch, heads, seq_q, seq_k]) the key dim
        # is -1; copying `dim=-1` into this layout would normalise over heads instead.
        self.softmax = nn.Softmax(dim=1)
        self.output = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout_prob)
        self.scale = 1 / math.sqrt(self.d_k)
        self.attn = None

    def get_score(self, query, key):
        return torch.einsum("ibhd,jbhd->ijbh", query, key)

    def prepare_mask(self, mask, query_shape, key_shape):
        # mask is [seq_len_q, seq_len_k, batch_size]; a size-1 first or last dim broadcasts.
        # (The document's prose reads these as (batch, seq_k, seq_q); the code is right.)
        # FRAGILE: bare asserts carry no message, and `python -O` strips them entirely.
        # See CheckedMultiHeadAttention below for the fixed behaviour.
        assert mask.shape[0] == 1 or mask.shape[0] == query_shape[0]
        assert mask.shape[1] == key_shape[0]
        assert mask.shape[2] == 1 or mask.shape[2] == query_shape[1]
        # same mask for all heads: [seq_len_q, seq_len_k, batch_size, 1]
        mask = mask.unsqueeze(-1)
        return mask

    def forward(self, query, key, value, mask):
        seq_len, batch_size, _ = query.shape
        if mask is not None:
            mask = self.prepare_mask(mask, query.shape, key.shape)
        query = self.query(query)
        key = self.key(key)
        value = self.value(value)
        scores = self.get_score(query, key)
        scores *= self.scale  # in place on a graph tensor: autograd follows it
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        attn = self.softmax(scores)
        # tracker.debug('attn', attn)  # labml logging, replaced by this comment
        attn = self.dropout(attn)
        x = torch.einsum("ijbh,jbhd->ibhd", attn, value)
        self.attn = attn.detach()
        x = x.reshape(seq_len, batch_size, -1)
        return self.output(x)


def check_mask_shape(mask_shape, query_shape, key_shape):
    """Raise a ValueError naming all shapes unless ``mask`` is ``[seq_q|1, seq_k, batch|1]``.

    ``query_shape``/``key_shape`` are the seq-first inputs ``[seq, batch, d_model]``.
    """
    mask_shape, query_shape, key_shape = tuple(mask_shape), tuple(query_shape), tuple(key_shape)
    seq_q, batch = query_shape[0], query_shape[1]
    seq_k = key_shape[0]
    ok = (
        len(mask_shape) == 3
        and mask_shape[0] in (1, seq_q)
        and mask_shape[1] == seq_k
        and mask_shape[2] in (1, batch)
    )
    if not ok:
        raise ValueError(
            f"MultiHeadAttention.prepare_mask: mask has shape {mask_shape}, which does not fit "
            f"query {query_shape} and key {key_shape}; expected [seq_q or 1, seq_k, batch or 1]"
            f" = [{seq_q} or 1, {seq_k}, {batch} or 1]"
        )


class CheckedMultiHeadAttention(MultiHeadAttention):
    """The fixed behaviour: a clear ValueError instead of bare asserts."""

    def prepare_mask(self, mask, query_shape, key_shape):
        check_mask_shape(mask.shape, query_shape, key_shape)
        return mask.unsqueeze(-1)


def causal_mask(seq_len):
    """``[seq_q, seq_k, 1]``: query i may see keys j <= i; broadcast over the batch."""
    return torch.tril(torch.ones(seq_len, seq_len)).unsqueeze(-1)


def trace_shapes(mha, query, key, value, mask):
    """Run ``mha`` once, printing the shape at each step (forward hooks on the sublayers)."""
    shapes = {"query in": tuple(query.shape)}
    print(f"query in          {tuple(query.shape)}   [seq_len, batch, d_model]")

    def hook(name, note):
        def record(module, inputs, output):
            shapes[name] = tuple(output.shape)
            print(f"{name:<17} {tuple(output.shape)}   {note}")

        return record

    handles = [
        mha.query.register_forward_hook(hook("query heads", "[seq_len, batch, heads, d_k]")),
        mha.key.register_forward_hook(hook("key heads", "[seq_len, batch, heads, d_k]")),
        mha.value.register_forward_hook(hook("value heads", "[seq_len, batch, heads, d_k]")),
        mha.output.register_forward_hook(hook("output", "[seq_len, batch, d_model]")),
    ]
    try:
        out = mha(query, key, value, mask)
    finally:
        for h in handles:
            h.remove()
    shapes["attn"] = tuple(mha.attn.shape)
    print(f"{'attn (softmax)':<17} {shapes['attn']}   [seq_q, seq_k, batch, heads]")
    return out, shapes


def reference_output(mha, query, key, value, mask):
    """The same layer through batch-first F.scaled_dot_product_attention (softmax on -1)."""
    q, k, v = (
        p(x).permute(1, 2, 0, 3)
        for p, x in ((mha.query, query), (mha.key, key), (mha.value, value))
    )
    attn_mask = mask.permute(2, 0, 1).unsqueeze(1).bool()  # [batch|1, 1, seq_q, seq_k]
    x = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)  # [batch, heads, seq_q, d_k]
    seq_len, batch_size, _ = query.shape
    return mha.output(x.permute(2, 0, 1, 3).reshape(seq_len, batch_size, -1))


def main():
    torch.manual_seed(0)
    seq_len, batch_size, d_model, heads = 10, 32, 512, 8  # the document's example sizes
    mha = MultiHeadAttention(heads, d_model, dropout_prob=0.0)
    x = torch.randn(seq_len, batch_size, d_model, requires_grad=True)
    mask = causal_mask(seq_len)

    print("Shapes through labml's MultiHeadAttention (self-attention, causal mask):")
    out, shapes = trace_shapes(mha, x, x, x, mask)

    # dim=1 is the key dim: every (query, batch, head) row of weights sums to 1, and the
    # causal mask zeroes keys after the query.
    row_sums = mha.attn.sum(dim=1)
    max_future = float(torch.triu(mha.attn.permute(2, 3, 0, 1), diagonal=1).abs().max())
    print(f"attn.sum(dim=1) in [{float(row_sums.min()):.6f}, {float(row_sums.max()):.6f}]")
    print(f"largest weight on a future key: {max_future}")

    ref = reference_output(mha, x, x, x, mask)
    max_diff = float((out - ref).abs().max())
    print(f"max |labml - F.scaled_dot_product_attention| = {max_diff:.2e}")

    # `scores *= self.scale` is in place on a tensor autograd needs; gradients still flow.
    out.sum().backward()
    print(f"grad wrt input: {tuple(x.grad.shape)}, finite: {bool(torch.isfinite(x.grad).all())}")

    # A mask in the layout the document's prose describes, (batch, seq_k, seq_q), is wrong
    # for this code. The document's asserts reject it with an empty AssertionError ...
    wrong = torch.ones(batch_size, seq_len, seq_len)
    with torch.no_grad():
        try:
            mha(x, x, x, wrong)
            assert_message = None
        except AssertionError as e:
            assert_message = str(e)
            print(f"document's prepare_mask: AssertionError({assert_message!r})")

    # ... the fixed version says which shapes disagree and what was expected.
    checked = CheckedMultiHeadAttention(heads, d_model, dropout_prob=0.0)
    checked.load_state_dict(mha.state_dict())
    with torch.no_grad():
        try:
            checked(x, x, x, wrong)
            error = None
        except ValueError as e:
            error = str(e)
            print(f"fixed prepare_mask: ValueError: {error}")
        same = float((checked(x, x, x, mask) - out).abs().max())
    print(f"fixed layer with a correct mask matches: max diff {same:.1e}")

    return {
        "shapes": shapes,
        "row_sum_range": (float(row_sums.min()), float(row_sums.max())),
        "max_future_weight": max_future,
        "max_diff_vs_sdpa": max_diff,
        "assert_message": assert_message,
        "mask_error": error,
        "checked_vs_original": same,
    }


if __name__ == "__main__":
    main()
