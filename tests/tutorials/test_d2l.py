"""d2l attention (seed 001): masked_softmax with valid lengths, dot-product and MLP
attention, and the seq2seq decoder with attention over an LSTM encoder."""

import contextlib
import io

import numpy as np
import pytest
from twins import assert_close, assert_same_grads, both, to_both, twin_modules


def test_masked_softmax_1d_and_2d_valid_lengths():
    ref_module, our_module = both("d2l_attention")
    T, A = ref_module.torch, our_module.torch
    X = np.random.default_rng(0).random((2, 2, 4)).astype(np.float32)
    for valid in ([2, 3], [[1, 3], [2, 4]]):
        xr, x = to_both(X.copy(), requires_grad=True)
        vr, v = T.tensor(valid, dtype=T.float), A.tensor(valid, dtype=A.float)
        out_r, out = ref_module.masked_softmax(xr * 1, vr), our_module.masked_softmax(x * 1, v)
        assert_close(out, out_r, atol=1e-6, rtol=1e-5)
        (out_r * T.arange(4.0)).sum().backward()
        (out * A.arange(4.0)).sum().backward()
        assert_close(x.grad, xr.grad, atol=1e-6, rtol=1e-5, what="gradient")
    out = our_module.masked_softmax(A.tensor(X), A.FloatTensor([2, 3]))
    assert np.all(out.numpy()[0, :, 2:] == 0) and np.all(out.numpy()[1, :, 3:] == 0)


@pytest.mark.parametrize("which", ["dot", "mlp"])
def test_d2l_attention_matches_torch_and_the_document(which):
    def make(m):
        if which == "dot":
            return m.DotProductAttention(dropout=0)
        return m.MLPAttention(ipt_dim=2, units=8, dropout=0)

    ref, ours = twin_modules("d2l_attention", make)
    for module, lib in ((ref, pytest.importorskip("torch")), (ours, __import__("tinyattn"))):
        keys = lib.ones((2, 10, 2), dtype=lib.float64)
        values = lib.arange((40), dtype=lib.float64).view(1, 10, 4).repeat(2, 1, 1)
        with contextlib.redirect_stdout(io.StringIO()):  # DotProductAttention prints its weights
            out = module(
                lib.ones((2, 1, 2), dtype=lib.float64),
                keys,
                values,
                lib.tensor([2.0, 6.0], dtype=lib.float64),
            )
        np.testing.assert_allclose(
            out.detach().numpy(), [[[2, 3, 4, 5]], [[10, 11, 12, 13]]], rtol=1e-12
        )


def test_mlp_attention_gradients_match_torch():
    ref, ours = twin_modules("d2l_attention", lambda m: m.MLPAttention(8, 2, 0.0))
    rng = np.random.default_rng(1)
    q_r, q = to_both(rng.standard_normal((2, 3, 2)), requires_grad=True)
    k_r, k = to_both(rng.standard_normal((2, 5, 2)), requires_grad=True)
    v_r, v = to_both(rng.standard_normal((2, 5, 4)), requires_grad=True)
    lens_r, lens = to_both(np.array([2.0, 4.0]))
    out_r, out = ref(q_r, k_r, v_r, lens_r), ours(q, k, v, lens)
    assert_close(out, out_r)
    out_r.sum().backward()
    out.sum().backward()
    assert_same_grads(ours, ref)
    for a, b, name in ((q, q_r, "query"), (k, k_r, "key"), (v, v_r, "value")):
        assert_close(a.grad, b.grad, what=f"{name} gradient")


def _encoder_decoder(m):
    """The document's encoder and attention decoder, joined as d2l's EncoderDecoder does."""

    class EncoderDecoder(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = m.Seq2SeqEncoder(
                vocab_size=10, embed_size=8, num_hiddens=16, num_layers=2
            )
            self.decoder = m.Seq2SeqAttentionDecoder(
                vocab_size=10, embed_size=8, num_hiddens=16, num_layers=2
            )

        def forward(self, X, valid_len=None):
            return self.decoder(X, self.decoder.init_state(self.encoder(X), valid_len))

    return EncoderDecoder()


def test_seq2seq_decoder_shapes_and_parity():
    ref, ours = twin_modules("d2l_attention", _encoder_decoder)
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
