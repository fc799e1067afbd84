"""Transformer layers and models: torch parity of outputs and every gradient."""

import numpy as np
import pytest
from _module_parity import module_parity
from harness import rand

import tinyattn
from tinyattn import nn

torch = pytest.importorskip("torch")

D, H, FF, S, T, N = 4, 2, 6, 4, 3, 2


def pair(name, *args, seed=0, **kwargs):
    torch.manual_seed(seed)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    with torch.no_grad():  # non-trivial biases and norms so their gradients are tested
        for pname, p in theirs.named_parameters():
            if p.ndim == 1:
                p.uniform_(0.5 if "norm" in pname and "weight" in pname else -0.5, 1.0)
    ours = getattr(nn, name)(*args, **kwargs)
    return theirs, ours


def seq(length, batch_first=False, seed=1):
    return rand(N, length, D, seed=seed) if batch_first else rand(length, N, D, seed=seed)


def causal_bool(n):
    return ~np.tril(np.ones((n, n), dtype=bool))


LAYER_OPTIONS = [
    dict(),
    dict(norm_first=True),
    dict(activation="gelu"),
    dict(batch_first=True, bias=False),
    dict(layer_norm_eps=1e-3, norm_first=True, activation="gelu"),
]


@pytest.mark.parametrize("options", LAYER_OPTIONS)
@pytest.mark.parametrize("train", [True, False])
def test_encoder_layer(options, train):
    t, o = pair("TransformerEncoderLayer", D, H, FF, dropout=0.0, **options)
    bf = options.get("batch_first", False)
    kpm = np.array([[False, False, False, True], [False, True, False, False]])
    module_parity(t, o, seq(S, bf), src_mask=causal_bool(S), src_key_padding_mask=kpm, train=train)


@pytest.mark.parametrize("options", LAYER_OPTIONS)
def test_decoder_layer(options):
    t, o = pair("TransformerDecoderLayer", D, H, FF, dropout=0.0, **options)
    bf = options.get("batch_first", False)
    mem_kpm = np.array([[0, 0, 0, -np.inf], [0, -np.inf, 0, 0]])  # float, like memory_mask
    module_parity(
        t,
        o,
        seq(T, bf, seed=2),
        seq(S, bf, seed=3),
        tgt_mask=causal_bool(T),
        memory_key_padding_mask=mem_kpm,
        memory_mask=rand(T, S, seed=4),
    )


def test_layers_in_float32_and_callable_activation():
    t, o = pair("TransformerEncoderLayer", D, H, FF, dropout=0.0, activation=torch.tanh)
    o.activation = tinyattn.tanh
    module_parity(t, o, seq(S), dtype=np.float32)


@pytest.mark.parametrize("train", [True, False])
def test_encoder_and_decoder_stacks(train):
    t_layer, o_layer = pair("TransformerEncoderLayer", D, H, FF, dropout=0.0)
    t = torch.nn.TransformerEncoder(t_layer, 2, torch.nn.LayerNorm(D), enable_nested_tensor=False)
    o = nn.TransformerEncoder(o_layer, 2, nn.LayerNorm(D))
    kpm = np.array([[False, False, True, True], [False, False, False, False]])
    module_parity(t, o, seq(S), src_key_padding_mask=kpm, train=train)
    assert o.layers[0].linear1.weight is not o.layers[1].linear1.weight  # deep copies

    t_dec, o_dec = pair("TransformerDecoderLayer", D, H, FF, dropout=0.0)
    t = torch.nn.TransformerDecoder(t_dec, 2)
    o = nn.TransformerDecoder(o_dec, 2)
    module_parity(t, o, seq(T, seed=5), seq(S, seed=6), tgt_mask=causal_bool(T), train=train)


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_model(batch_first):
    torch.manual_seed(0)
    kw = dict(
        d_model=D,
        nhead=H,
        num_encoder_layers=2,
        num_decoder_layers=1,
        dim_feedforward=FF,
        dropout=0.0,
        batch_first=batch_first,
    )
    t, o = torch.nn.Transformer(**kw), nn.Transformer(**kw)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(T, dtype=tinyattn.float64).numpy()
    module_parity(
        t,
        o,
        seq(S, batch_first, seed=7),
        seq(T, batch_first, seed=8),
        tgt_mask=tgt_mask,
        src_key_padding_mask=np.array([[False, False, False, True], [False] * 4]),
        memory_key_padding_mask=np.array([[False, False, False, True], [False] * 4]),
        tgt_is_causal=True,
    )


def test_transformer_unbatched():
    torch.manual_seed(0)
    kw = dict(d_model=D, nhead=H, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=FF)
    t, o = torch.nn.Transformer(dropout=0.0, **kw), nn.Transformer(dropout=0.0, **kw)
    module_parity(t, o, rand(S, D, seed=1), rand(T, D, seed=2))


def test_parameter_names_init_and_state_dict():
    t = torch.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1)
    o = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1)
    shapes_t = [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
    shapes_o = [(k, tuple(v.shape)) for k, v in o.state_dict().items()]
    assert shapes_o == shapes_t
    w = o.encoder.layers[0].linear1.weight.detach().numpy()  # xavier_uniform on (2048, 8)
    assert np.abs(w).max() <= np.sqrt(6 / (2048 + 8))
    assert not o.encoder.layers[0].self_attn.in_proj_bias.detach().numpy().any()
    custom = nn.Transformer(d_model=8, nhead=2, custom_encoder=nn.Identity(), num_decoder_layers=1)
    assert isinstance(custom.encoder, nn.Identity)


def test_generate_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(4)
    ref = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert m.dtype == tinyattn.float32
    np.testing.assert_array_equal(m.numpy(), ref.numpy())


def test_mismatched_src_tgt_raise():
    o = nn.Transformer(d_model=D, nhead=H, num_encoder_layers=1, num_decoder_layers=1)
    with pytest.raises(RuntimeError, match="batch number"):
        o(tinyattn.zeros(S, 2, D), tinyattn.zeros(T, 3, D))
    with pytest.raises(RuntimeError, match="d_model=4"):
        o(tinyattn.zeros(S, 2, D), tinyattn.zeros(T, 2, D + 1))


def test_bad_activation():
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerEncoderLayer(D, H, activation="swish")


def test_dropout_in_training_is_seeded():
    o = nn.TransformerEncoderLayer(D, H, FF, dropout=0.5).double()
    x = tinyattn.tensor(seq(S))
    tinyattn.manual_seed(3)
    a = o(x)
    tinyattn.manual_seed(3)
    b = o(x)
    c = o(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())
    o.eval()
    np.testing.assert_array_equal(o(x).detach().numpy(), o(x).detach().numpy())
