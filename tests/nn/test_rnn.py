"""LSTM, GRU, RNN and their cells: torch parity of outputs, states and every gradient."""

import numpy as np
import pytest
from _module_parity import module_parity
from harness import rand

import tinyattn
from tinyattn import nn

torch = pytest.importorskip("torch")

IN, HID, L, N = 3, 4, 5, 2


def pair(name, *args, seed=0, **kwargs):
    torch.manual_seed(seed)
    return getattr(torch.nn, name)(*args, **kwargs), getattr(nn, name)(*args, **kwargs)


def seq(batch_first=False, batched=True, seed=1):
    if not batched:
        return rand(L, IN, seed=seed)
    return rand(N, L, IN, seed=seed) if batch_first else rand(L, N, IN, seed=seed)


OPTIONS = [
    dict(),
    dict(num_layers=2),
    dict(bias=False),
    dict(batch_first=True),
    dict(bidirectional=True),
    dict(num_layers=2, bidirectional=True, batch_first=True),
]


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("options", OPTIONS)
def test_parity(name, options):
    t, o = pair(name, IN, HID, **options)
    module_parity(t, o, seq(options.get("batch_first", False)))


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("train", [True, False])
def test_initial_state_dtype_and_mode(name, dtype, train):
    t, o = pair(name, IN, HID, num_layers=2, bidirectional=True, dropout=0.0)
    h0 = rand(4, N, HID, seed=2)
    state = (h0, rand(4, N, HID, seed=3)) if name == "LSTM" else h0
    module_parity(t, o, seq(), state, dtype=dtype, train=train)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_unbatched(name):
    t, o = pair(name, IN, HID, num_layers=2)
    h0 = rand(2, HID, seed=2)
    state = (h0, rand(2, HID, seed=3)) if name == "LSTM" else h0
    module_parity(t, o, seq(batched=False), state)


def test_relu_rnn():
    t, o = pair("RNN", IN, HID, nonlinearity="relu", num_layers=2)
    module_parity(t, o, seq())


def test_seq2seq_decoder_style_steps():
    """d2l's decoder: one (1, N, E) step at a time, carrying the state tuple."""
    t, o = pair("LSTM", IN, HID, num_layers=2)
    o.load_state_dict(t.state_dict())
    o.double()
    t.double()
    x = seq()
    state_o = state_t = None
    for step in range(L):
        xs = x[step : step + 1]
        out_o, state_o = o(tinyattn.tensor(xs), state_o)
        out_t, state_t = t(torch.tensor(xs), state_t)
        assert tuple(out_o.shape) == (1, N, HID)
        np.testing.assert_allclose(out_o.detach().numpy(), out_t.detach().numpy(), atol=1e-12)
    full, (h_n, c_n) = o(tinyattn.tensor(x))
    np.testing.assert_allclose(state_o[0].detach().numpy(), h_n.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(state_o[1].detach().numpy(), c_n.detach().numpy(), atol=1e-12)
    assert tuple(h_n.shape) == (2, N, HID) and tuple(full.shape) == (L, N, HID)


@pytest.mark.parametrize("name, args", [("LSTMCell", 2), ("GRUCell", 1), ("RNNCell", 1)])
@pytest.mark.parametrize("bias", [True, False])
def test_cells(name, args, bias):
    t, o = pair(name, IN, HID, bias=bias)
    states = [rand(N, HID, seed=4 + i) for i in range(args)]
    hx = tuple(states) if args == 2 else states[0]
    module_parity(t, o, rand(N, IN, seed=1), hx)
    module_parity(t, o, rand(N, IN, seed=1))  # default zero state
    unbatched = tuple(s[0] for s in states) if args == 2 else states[0][0]
    module_parity(t, o, rand(IN, seed=1), unbatched)


def test_parameter_names_shapes_and_init():
    t, o = pair("LSTM", IN, 16, num_layers=2, bidirectional=True)
    assert [(k, tuple(v.shape)) for k, v in o.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in t.state_dict().items()
    ]
    w = np.concatenate([p.detach().numpy().ravel() for p in o.parameters()])
    assert np.abs(w).max() <= 0.25 and np.abs(w).max() > 0.24  # U(-1/sqrt(16), 1/sqrt(16))
    _, g = pair("GRU", IN, HID, bias=False)
    assert [k for k, _ in g.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]


def test_dropout_between_layers():
    o = nn.GRU(IN, HID, num_layers=2, dropout=0.5).double()
    x = tinyattn.tensor(seq())
    tinyattn.manual_seed(1)
    a, _ = o(x)
    tinyattn.manual_seed(1)
    b, _ = o(x)
    c, _ = o(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())
    o.eval()
    np.testing.assert_array_equal(o(x)[0].detach().numpy(), o(x)[0].detach().numpy())
    single = nn.GRU(IN, HID, num_layers=1, dropout=0.5).double()  # no dropout after last layer
    np.testing.assert_array_equal(single(x)[0].detach().numpy(), single(x)[0].detach().numpy())


def test_errors():
    o = nn.LSTM(IN, HID)
    with pytest.raises(RuntimeError, match="Expected 3, got 4"):
        o(tinyattn.zeros(L, N, 4))
    with pytest.raises(RuntimeError, match=r"h_0 size \(1, 2, 4\)"):
        o(tinyattn.zeros(L, N, IN), (tinyattn.zeros(1, 3, HID), tinyattn.zeros(1, 3, HID)))
    with pytest.raises(TypeError, match="tuple"):
        o(tinyattn.zeros(L, N, IN), tinyattn.zeros(1, N, HID))
    with pytest.raises(NotImplementedError, match="proj_size"):
        nn.LSTM(IN, HID, proj_size=2)


# -- second order (create_graph=True) ------------------------------------------------------
@pytest.mark.parametrize(
    "name, cell", [("LSTM", False), ("GRU", False), ("RNN", False), ("LSTMCell", True)]
)
def test_second_order_wrt_the_input(name, cell):
    """Hessian-vector products of the output w.r.t. the input vs torch (gradgradcheck too),
    once every op in the recurrence supports create_graph; until then the error names the op."""
    import harness

    t, o = pair(name, IN, HID)
    o.load_state_dict(t.state_dict())
    t.double(), o.double()

    def f(lib, x):
        out = (t if lib is torch else o)(x)
        return out[0] if isinstance(out, tuple) else out

    x = rand(N, IN, seed=1) if cell else seq()
    if harness.supports_second_order(f, x):
        harness.check_op(f, x, parity_kw=dict(dtypes=(np.float64,)))
        return
    xt = tinyattn.tensor(x, requires_grad=True)
    with pytest.raises(RuntimeError, match="does not support create_graph=True yet"):
        (g,) = tinyattn.autograd.grad(f(tinyattn, xt).sum(), xt, create_graph=True)
        tinyattn.autograd.grad((g * g).sum(), xt)
