"""The Annotated Transformer's attention() and MultiHeadedAttention (seed 004):
``clones`` via ``copy.deepcopy``, ``mask.unsqueeze(1)``, ``masked_fill(mask == 0, -1e9)``."""

import contextlib
import io

import numpy as np
from twins import assert_close, assert_same_grads, both, to_both, twin_modules


def test_clones_are_independent_deep_copies():
    _, ours = both("annotated_transformer_mha")
    layers = ours.clones(ours.nn.Linear(4, 4), 3)
    assert layers[0].weight is not layers[1].weight
    np.testing.assert_array_equal(
        layers[0].weight.detach().numpy(), layers[2].weight.detach().numpy()
    )


def test_multiheaded_attention_with_padding_mask_matches_torch():
    ref, ours = twin_modules(
        "annotated_transformer_mha", lambda m: m.MultiHeadAttention(4, 16, 0.0)
    )
    rng = np.random.default_rng(4)
    xr, x = to_both(rng.standard_normal((2, 6, 16)), requires_grad=True)
    m = np.ones((2, 1, 6), dtype=bool)
    m[1, 0, 4:] = False  # padding in the second sequence
    mr, mm = to_both(m)
    with contextlib.redirect_stdout(io.StringIO()):  # the document's forward prints shapes
        out_r, out = ref(xr, xr, xr, mr), ours(x, x, x, mm)
    assert_close(out, out_r)
    assert_close(ours.attn, ref.attn, what="attention weights")
    out_r.tanh().sum().backward()
    out.tanh().sum().backward()
    assert_same_grads(ours, ref)
    assert_close(x.grad, xr.grad, what="input gradient")
