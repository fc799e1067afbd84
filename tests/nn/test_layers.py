"""Layer modules vs torch: LayerNorm, RMSNorm, Embedding, Dropout, activations."""

import numpy as np
import pytest
from _parity import module_parity
from harness import rand

import tinyattn
import tinyattn.nn as nn

torch = pytest.importorskip("torch")

DTYPES = [np.float64, np.float32]


def _randomize(module):
    with torch.no_grad():
        for p in module.parameters():
            p.normal_()
    return module


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize(
    "kwargs",
    [dict(), dict(eps=1e-3), dict(bias=False), dict(elementwise_affine=False)],
)
def test_layer_norm_matches_torch(dtype, train, kwargs):
    module_parity(
        _randomize(torch.nn.LayerNorm((3, 4), **kwargs)),
        nn.LayerNorm((3, 4), **kwargs),
        rand(2, 3, 4, seed=1),
        dtype=dtype,
        train=train,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", [dict(), dict(eps=1e-6), dict(elementwise_affine=False)])
def test_rms_norm_matches_torch(dtype, kwargs):
    module_parity(
        _randomize(torch.nn.RMSNorm(4, **kwargs)),
        nn.RMSNorm(4, **kwargs),
        rand(3, 2, 4, seed=2),
        dtype=dtype,
    )


def test_norm_reprs_and_init():
    assert repr(nn.LayerNorm(4)) == repr(torch.nn.LayerNorm(4))
    assert repr(nn.LayerNorm((2, 3), eps=1e-6, elementwise_affine=False)) == repr(
        torch.nn.LayerNorm((2, 3), eps=1e-6, elementwise_affine=False)
    )
    assert repr(nn.RMSNorm(4)) == repr(torch.nn.RMSNorm(4))
    ln = nn.LayerNorm(4)
    assert (ln.weight.detach().numpy() == 1).all() and (ln.bias.detach().numpy() == 0).all()
    assert list(nn.LayerNorm(4, bias=False).state_dict()) == ["weight"]


def test_norm_errors():
    with pytest.raises(
        RuntimeError, match=r"LayerNorm: input shape \[2, 5\].*normalized_shape=\[4\]"
    ):
        nn.LayerNorm(4)(tinyattn.randn(2, 5))
    with pytest.raises(RuntimeError, match=r"RMSNorm: input shape \[3\]"):
        nn.RMSNorm((2, 3))(tinyattn.randn(3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("padding_idx", [None, 0, -2])
def test_embedding_matches_torch(dtype, padding_idx):
    idx = np.array([[0, 3, 4], [4, 1, 0]])
    tm = torch.nn.Embedding(5, 3, padding_idx=padding_idx)
    om = nn.Embedding(5, 3, padding_idx=padding_idx)
    assert repr(om) == repr(tm)
    module_parity(tm, om, idx, dtype=dtype)
    if padding_idx is not None:
        assert (om.weight.grad.numpy()[padding_idx] == 0).all()


def test_embedding_init_and_errors():
    emb = nn.Embedding(300, 200, padding_idx=3)
    w = emb.weight.detach().numpy()
    assert (w[3] == 0).all()
    assert abs(w.std() - 1) < 0.01 and abs(w.mean()) < 0.01
    with pytest.raises(IndexError, match="index 300 is out of range for num_embeddings=300"):
        emb(tinyattn.tensor([1, 300]))
    frozen = nn.Embedding.from_pretrained(tinyattn.randn(4, 2))
    assert not frozen.weight.requires_grad and frozen.embedding_dim == 2


@pytest.mark.parametrize(
    "name,args",
    [
        ("ReLU", ()),
        ("GELU", ()),
        ("GELU", ("tanh",)),
        ("Tanh", ()),
        ("Sigmoid", ()),
        ("Softmax", (1,)),
        ("LogSoftmax", (-1,)),
        ("Dropout", (0.0,)),
    ],
)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("train", [True, False])
def test_activations_match_torch(name, args, dtype, train):
    tm, om = getattr(torch.nn, name)(*args), getattr(nn, name)(*args)
    assert repr(om) == repr(tm)
    module_parity(tm, om, rand(3, 4, low=-3, high=3, seed=3), dtype=dtype, train=train)


def test_dropout_module_modes():
    drop = nn.Dropout(0.5)
    x = tinyattn.ones(100, 100)
    y = drop(x)
    assert 0.45 < (y.numpy() == 0).mean() < 0.55
    assert set(np.unique(y.numpy())) == {0.0, 2.0}
    drop.eval()
    assert drop(x) is x
    assert repr(nn.Dropout(0.2, inplace=True)) == repr(torch.nn.Dropout(0.2, inplace=True))
    for bad in (-0.5, 1.01):
        with pytest.raises(ValueError, match="between 0 and 1"):
            nn.Dropout(bad)


def test_relu_inplace_repr_and_effect():
    assert repr(nn.ReLU(inplace=True)) == repr(torch.nn.ReLU(inplace=True))
    x = tinyattn.tensor([-1.0, 2.0])
    nn.ReLU(inplace=True)(x)
    np.testing.assert_array_equal(x.numpy(), [0.0, 2.0])


def test_sequential_mlp_matches_torch():
    tm = torch.nn.Sequential(
        torch.nn.Linear(4, 8),
        torch.nn.GELU(),
        torch.nn.LayerNorm(8),
        torch.nn.Dropout(0.0),
        torch.nn.Linear(8, 3),
    )
    om = nn.Sequential(
        nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Dropout(0.0), nn.Linear(8, 3)
    )
    assert repr(om) == repr(tm)
    for dtype in DTYPES:
        module_parity(tm, om, rand(5, 4, seed=4), dtype=dtype)
