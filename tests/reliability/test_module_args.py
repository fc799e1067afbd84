"""Layer constructors reject bad arguments at construction, where torch does, with the same type.

Each case builds a layer with library ``L`` (tinyattn or torch). tinyattn must raise the
listed exception with a message naming the layer and the argument; torch, when present,
must raise the same exception type (``torch_too=False`` marks the few cases where torch
accepts the argument and only fails at the first forward: tinyattn refuses them early).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tinyattn

try:
    import torch
except ImportError:
    torch = None

CASES = [
    # (id, constructor, exception, regex for tinyattn's message, torch raises too)
    (
        "Linear-float-in",
        lambda L: L.nn.Linear(4.5, 2),
        TypeError,
        r"Linear.*in_features.*float",
        True,
    ),
    (
        "Linear-float-out",
        lambda L: L.nn.Linear(4, 2.0),
        TypeError,
        r"Linear.*out_features.*float",
        True,
    ),
    ("Linear-str", lambda L: L.nn.Linear("4", 2), TypeError, r"in_features.*str", True),
    ("Linear-None", lambda L: L.nn.Linear(None, 2), TypeError, r"in_features.*NoneType", True),
    ("Linear-np-float", lambda L: L.nn.Linear(np.float64(4.0), 2), TypeError, r"in_features", True),
    (
        "Linear-negative",
        lambda L: L.nn.Linear(-1, 2),
        RuntimeError,
        r"Linear.*in_features=-1",
        True,
    ),
    (
        "LazyLinear-float",
        lambda L: L.nn.LazyLinear(2.5),
        TypeError,
        r"LazyLinear.*out_features",
        False,
    ),
    ("LazyLinear-negative", lambda L: L.nn.LazyLinear(-2), RuntimeError, r"out_features=-2", False),
    (
        "Embedding-float",
        lambda L: L.nn.Embedding(4.5, 2),
        TypeError,
        r"Embedding.*num_embeddings",
        True,
    ),
    ("Embedding-neg-dim", lambda L: L.nn.Embedding(3, -2), RuntimeError, r"embedding_dim=-2", True),
    (
        "Embedding-neg-num",
        lambda L: L.nn.Embedding(-1, 2),
        RuntimeError,
        r"num_embeddings=-1",
        True,
    ),
    (
        "Embedding-padding-range",
        lambda L: L.nn.Embedding(3, 2, padding_idx=3),
        AssertionError,
        r"(?i)padding_idx",
        True,
    ),
    (
        "Embedding-padding-float",
        lambda L: L.nn.Embedding(3, 2, padding_idx=1.5),
        TypeError,
        r"padding_idx.*float",
        False,  # torch: IndexError
    ),
    (
        "LayerNorm-float",
        lambda L: L.nn.LayerNorm(4.5),
        TypeError,
        r"LayerNorm.*normalized_shape",
        True,
    ),
    ("LayerNorm-str", lambda L: L.nn.LayerNorm("a"), TypeError, r"normalized_shape.*str", True),
    (
        "LayerNorm-float-in-seq",
        lambda L: L.nn.LayerNorm((2, 2.0)),
        TypeError,
        r"normalized_shape",
        True,
    ),
    (
        "LayerNorm-negative",
        lambda L: L.nn.LayerNorm(-1),
        RuntimeError,
        r"normalized_shape=-1",
        True,
    ),
    ("RMSNorm-float", lambda L: L.nn.RMSNorm(4.5), TypeError, r"RMSNorm.*normalized_shape", True),
    ("RMSNorm-negative", lambda L: L.nn.RMSNorm([3, -1]), RuntimeError, r"RMSNorm.*=-1", True),
    ("LSTM-float-in", lambda L: L.nn.LSTM(4.5, 3), TypeError, r"LSTM.*input_size.*float", True),
    ("GRU-float-hidden", lambda L: L.nn.GRU(4, 3.5), TypeError, r"GRU.*hidden_size.*float", True),
    (
        "RNN-zero-hidden",
        lambda L: L.nn.RNN(4, 0),
        ValueError,
        r"RNN.*hidden_size.*greater than zero",
        True,
    ),
    ("LSTM-neg-in", lambda L: L.nn.LSTM(-4, 3), ValueError, r"input_size.*greater than zero", True),
    ("LSTM-layers-0", lambda L: L.nn.LSTM(4, 3, num_layers=0), ValueError, r"num_layers", True),
    (
        "LSTM-layers-float",
        lambda L: L.nn.LSTM(4, 3, num_layers=1.5),
        TypeError,
        r"num_layers",
        True,
    ),
    (
        "LSTM-dropout-range",
        lambda L: L.nn.LSTM(4, 3, dropout=1.5),
        ValueError,
        r"dropout.*1\.5",
        True,
    ),
    ("LSTM-dropout-bool", lambda L: L.nn.LSTM(4, 3, dropout=True), ValueError, r"dropout", True),
    ("LSTM-dropout-str", lambda L: L.nn.LSTM(4, 3, dropout="a"), ValueError, r"dropout", True),
    ("LSTM-proj-neg", lambda L: L.nn.LSTM(4, 3, proj_size=-1), ValueError, r"proj_size", True),
    (
        "LSTM-proj-big",
        lambda L: L.nn.LSTM(4, 3, proj_size=3),
        ValueError,
        r"proj_size.*smaller",
        True,
    ),
    (
        "GRU-proj",
        lambda L: L.nn.GRU(4, 3, proj_size=1),
        ValueError,
        r"only supported for LSTM",
        True,
    ),
    (
        "RNN-nonlinearity",
        lambda L: L.nn.RNN(4, 3, nonlinearity="x"),
        ValueError,
        r"nonlinearity",
        True,
    ),
    ("LSTMCell-float", lambda L: L.nn.LSTMCell(4.5, 3), TypeError, r"LSTMCell.*input_size", True),
    (
        "GRUCell-negative",
        lambda L: L.nn.GRUCell(4, -3),
        RuntimeError,
        r"GRUCell.*hidden_size=-3",
        True,
    ),
    ("Dropout-range", lambda L: L.nn.Dropout(1.5), ValueError, r"between 0 and 1.*1\.5", True),
    ("Dropout-negative", lambda L: L.nn.Dropout(-0.1), ValueError, r"-0\.1", True),
    ("Dropout-str", lambda L: L.nn.Dropout("a"), TypeError, r"Dropout.*str", True),
    ("Dropout-None", lambda L: L.nn.Dropout(None), TypeError, r"Dropout.*NoneType", True),
    (
        "EncoderLayer-ff-float",
        lambda L: L.nn.TransformerEncoderLayer(4, 2, dim_feedforward=2.5),
        TypeError,
        r"TransformerEncoderLayer.*dim_feedforward",
        True,
    ),
    (
        "DecoderLayer-ff-float",
        lambda L: L.nn.TransformerDecoderLayer(4, 2, dim_feedforward=2.5),
        TypeError,
        r"TransformerDecoderLayer.*dim_feedforward",
        True,
    ),
    (
        "EncoderLayer-dropout",
        lambda L: L.nn.TransformerEncoderLayer(4, 2, dropout=2),
        ValueError,
        r"between 0 and 1",
        True,
    ),
    (
        "EncoderLayer-activation",
        lambda L: L.nn.TransformerEncoderLayer(4, 2, activation="foo"),
        RuntimeError,
        r"activation.*foo",
        True,
    ),
    (
        "Encoder-layers-float",
        lambda L: L.nn.TransformerEncoder(L.nn.TransformerEncoderLayer(4, 2), 1.5),
        TypeError,
        r"num_layers",
        True,
    ),
    (
        "Decoder-layers-float",
        lambda L: L.nn.TransformerDecoder(L.nn.TransformerDecoderLayer(4, 2), 2.5),
        TypeError,
        r"num_layers",
        True,
    ),
    (
        "Transformer-layers-float",
        lambda L: L.nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1.5),
        TypeError,
        r"num_layers",
        True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_constructor_argument_is_refused(case):
    _, build, exc, pattern, torch_too = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=pattern):
            build(tinyattn)
        if torch is not None and torch_too:
            with pytest.raises(exc):
                build(torch)


GOOD = [
    ("Linear-bool", lambda L: L.nn.Linear(True, 2)),
    ("Linear-np-int", lambda L: L.nn.Linear(np.int64(3), 2)),
    ("Linear-zero", lambda L: L.nn.Linear(0, 2)),
    ("Embedding-np-padding", lambda L: L.nn.Embedding(3, 2, padding_idx=np.int64(-1))),
    ("LayerNorm-np-int", lambda L: L.nn.LayerNorm(np.int64(3))),
    ("LayerNorm-size", lambda L: L.nn.LayerNorm(L.Size([2, 3]))),
    ("LayerNorm-empty", lambda L: L.nn.LayerNorm([])),
    ("LSTM-bool-in", lambda L: L.nn.LSTM(True, 3)),
    ("Dropout-bool", lambda L: L.nn.Dropout(True)),
    ("Dropout-int", lambda L: L.nn.Dropout(0)),
    ("LSTMCell-zero-hidden", lambda L: L.nn.LSTMCell(4, 0)),
    (
        "Encoder-zero-layers",
        lambda L: L.nn.TransformerEncoder(L.nn.TransformerEncoderLayer(4, 2), 0),
    ),
]


@pytest.mark.parametrize("case", GOOD, ids=[c[0] for c in GOOD])
def test_arguments_torch_accepts_are_accepted(case):
    _, build = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        layer = build(tinyattn)
        if torch is not None:
            reference = build(torch)
            got = {k: tuple(v.shape) for k, v in layer.state_dict().items()}
            want = {k: tuple(v.shape) for k, v in reference.state_dict().items()}
            assert got == want


def test_sizes_are_stored_as_python_ints():
    layer = tinyattn.nn.Linear(np.int64(3), np.int32(2))
    assert type(layer.in_features) is int and type(layer.out_features) is int
    assert layer(tinyattn.ones(1, 3)).shape == (1, 2)


@pytest.mark.parametrize("lib", ["tinyattn", "torch"])
def test_rnn_dropout_with_one_layer_warns_like_torch(lib):
    if lib == "torch" and torch is None:
        pytest.skip("torch is not installed")
    L = tinyattn if lib == "tinyattn" else torch
    with pytest.warns(UserWarning) as record:
        L.nn.GRU(4, 3, dropout=0.5)
    messages = [str(w.message) for w in record]
    expected = (
        "dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
        "expects num_layers greater than 1, but got dropout=0.5 and num_layers=1"
    )
    assert expected in messages
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        L.nn.GRU(4, 3, num_layers=2, dropout=0.5)
