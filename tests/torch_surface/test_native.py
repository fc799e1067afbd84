"""torch's kernel-level names (native_layer_norm ... embedding_renorm_) and the functional
RNN cells (lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell): gradcheck, torch parity,
statistics outputs and errors as torch's."""

import numpy as np
import pytest
from harness import check_op, rand, run_parity, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="compares with torch directly")


def test_native_layer_norm():
    x, w, b = rand(2, 3, 4, seed=1), rand(3, 4, seed=2), rand(3, 4, seed=3)
    # mean and rstd have no gradient (as torch's): gradcheck the output, compare all three
    check_op(lambda L, x: L.native_layer_norm(x, (4,), None, None, 1e-5)[0], x)
    check_op(lambda L, x, w, b: L.native_layer_norm(x, (3, 4), w, b, 1e-3)[0], x, w, b)
    run_parity(lambda L, x, w, b: L.native_layer_norm(x, (3, 4), w, b, 1e-3), x, w, b)
    _, mean, rstd = tinyattn.native_layer_norm(tinyattn.tensor(x), (3, 4), None, None, 1e-5)
    assert mean.shape == (2, 1, 1) and not mean.requires_grad
    np.testing.assert_allclose(mean.numpy().reshape(-1), x.reshape(2, -1).mean(1))
    np.testing.assert_allclose(
        rstd.numpy().reshape(-1), 1 / np.sqrt(x.reshape(2, -1).var(1) + 1e-5)
    )


def test_native_batch_norm():
    x, w, b = rand(4, 3, 5, seed=4), rand(3, seed=5), rand(3, seed=6)
    check_op(
        lambda L, x, w, b: L.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)[0], x, w, b
    )

    def with_running(L, x, w, b, training=True):
        mean, var = L.zeros(3, dtype=x.dtype), L.ones(3, dtype=x.dtype)
        out = L.native_batch_norm(x, w, b, mean, var, training, 0.2, 1e-5)
        return (*out, mean, var)  # the running stats are updated in training

    run_parity(with_running, x, w, b)
    check_op(lambda L, x, w, b: with_running(L, x, w, b, False)[0], x, w, b)
    out = tinyattn.native_batch_norm(
        tinyattn.tensor(x), None, None, tinyattn.zeros(3, dtype=tinyattn.float64),
        tinyattn.ones(3, dtype=tinyattn.float64), False, 0.1, 1e-5,
    )  # fmt: skip
    assert out[1].shape == (0,) and out[2].shape == (0,)
    with pytest.raises(RuntimeError, match="must be defined in evaluation mode"):
        tinyattn.native_batch_norm(tinyattn.tensor(x), None, None, None, None, False, 0.1, 1e-5)


def test_native_group_norm():
    x, w, b = rand(2, 6, 5, seed=7), rand(6, seed=8), rand(6, seed=9)
    # mean and rstd are differentiable outputs in torch too: their gradients are compared
    check_op(lambda L, x, w, b: L.native_group_norm(x, w, b, 2, 6, 5, 3, 1e-5), x, w, b)
    check_op(lambda L, x: L.native_group_norm(x, None, None, 2, 6, 5, 2, 1e-5), x)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        tinyattn.native_group_norm(tinyattn.tensor(x), None, None, 2, 6, 5, 4, 1e-5)


def test_native_dropout():
    tinyattn.manual_seed(0)
    x = tinyattn.tensor(rand(200, 50, seed=10), requires_grad=True)
    out, mask = tinyattn.native_dropout(x, 0.3, True)
    assert mask.dtype == tinyattn.bool and mask.shape == x.shape
    assert abs(mask.float().mean().item() - 0.7) < 0.02
    keep = mask.numpy()
    np.testing.assert_allclose(out.detach().numpy(), np.where(keep, x.detach().numpy() / 0.7, 0))
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), keep / 0.7)
    out, mask = tinyattn.native_dropout(x, 0.3, False)
    assert mask.all().item() and out.tolist() == x.tolist()
    out, mask = tinyattn.native_dropout(x, 1.0, None)
    assert not mask.any().item() and (out == 0).all().item()
    with pytest.raises(RuntimeError, match=r"p to be in \[0, 1\], but got p=-0.5"):
        tinyattn.native_dropout(x, 1.5, True)


def test_native_norm_raises_as_torch_on_dense_tensors():
    with pytest.raises(NotImplementedError, match="Could not run 'aten::native_norm'"):
        tinyattn.native_norm(tinyattn.ones(3))
    if torch is not None:
        with pytest.raises(NotImplementedError, match="Could not run 'aten::native_norm'"):
            torch.native_norm(torch.ones(3))


@pytest.mark.parametrize("pow,dim", [(2, 0), (2, 1), (3, 0), (2, -1), (1, 2)])
def test_norm_except_dim(pow, dim):
    check_op(lambda L, v: L.norm_except_dim(v, pow, dim), rand(3, 4, 2, seed=11))


def test_norm_except_dim_takes_an_int_pow():
    with pytest.raises(TypeError, match="'pow' \\(position 2\\) must be int, not float"):
        tinyattn.norm_except_dim(tinyattn.ones(2, 2), 1.5)


def test_native_channel_shuffle():
    x = np.arange(16.0).reshape(1, 4, 2, 2)
    run_parity(lambda L, x: L.native_channel_shuffle(x, 2), x, grad=[False])
    out = tinyattn.native_channel_shuffle(tinyattn.tensor(x), 2)
    assert out[0, :, 0, 0].tolist() == [0.0, 8.0, 4.0, 12.0]


@needs_torch
def test_embedding_renorm_():
    w, idx = rand(5, 3, seed=12, low=-2, high=2), np.array([0, 2, 2, 4])
    for norm_type in (2.0, 1.0):
        ours = tinyattn.tensor(w)
        assert tinyattn.embedding_renorm_(ours, tinyattn.tensor(idx), 1.0, norm_type) is ours
        theirs = torch.embedding_renorm_(torch.tensor(w), torch.tensor(idx), 1.0, norm_type)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)
        assert not np.allclose(ours.numpy(), w)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tinyattn.embedding_renorm_(
            tinyattn.tensor(w, requires_grad=True), tinyattn.tensor(idx), 1.0, 2.0
        )


def _cell_arrays(gates, batch=2, inp=3, hidden=4, seed=20):
    return (
        rand(batch, inp, seed=seed), rand(batch, hidden, seed=seed + 1),
        rand(gates * hidden, inp, seed=seed + 2), rand(gates * hidden, hidden, seed=seed + 3),
        rand(gates * hidden, seed=seed + 4), rand(gates * hidden, seed=seed + 5),
    )  # fmt: skip


@pytest.mark.parametrize(
    "name,gates", [("gru_cell", 3), ("rnn_tanh_cell", 1), ("rnn_relu_cell", 1)]
)
def test_rnn_cells(name, gates):
    arrays = _cell_arrays(gates)
    check_op(lambda L, *a: getattr(L, name)(*a), *arrays)
    check_op(lambda L, *a: getattr(L, name)(*a[:4]), *arrays[:4])  # no biases
    check_op(lambda L, *a: getattr(L, name)(*a[:5]), *arrays[:5])  # b_ih only


def test_lstm_cell():
    x, h, w_ih, w_hh, b_ih, b_hh = _cell_arrays(4)
    c = rand(2, 4, seed=40)
    check_op(lambda L, x, h, c, *w: L.lstm_cell(x, (h, c), *w), x, h, c, w_ih, w_hh, b_ih, b_hh)
    check_op(lambda L, x, h, c, *w: L.lstm_cell(x, [h, c], *w), x, h, c, w_ih, w_hh)


@needs_torch
def test_cells_match_nn_modules():
    cell = torch.nn.GRUCell(3, 4).double()
    x, h = torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64)
    args = [
        t.detach().numpy() for t in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    ]
    ours = tinyattn.gru_cell(
        tinyattn.tensor(x.numpy()), tinyattn.tensor(h.numpy()), *map(tinyattn.tensor, args)
    )
    np.testing.assert_allclose(ours.numpy(), cell(x, h).detach().numpy(), atol=1e-12)


def _lstm_weights():
    return [tinyattn.tensor(a) for a in _cell_arrays(4)[2:4]]


def test_cell_errors():
    x, h, w_ih, w_hh, b_ih, b_hh = (tinyattn.tensor(a) for a in _cell_arrays(1))
    with pytest.raises(RuntimeError, match="inconsistent input_size: got 5 expected 3"):
        tinyattn.rnn_tanh_cell(tinyattn.ones(2, 5, dtype=tinyattn.float64), h, w_ih, w_hh)
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0 batch size 3"):
        tinyattn.rnn_tanh_cell(x, tinyattn.ones(3, 4, dtype=tinyattn.float64), w_ih, w_hh)
    with pytest.raises(RuntimeError, match="weight_ih first dim must be 3 \\* hidden_size = 12"):
        tinyattn.gru_cell(x, h, w_ih, w_hh)
    with pytest.raises(RuntimeError, match=r"cell state cx \[2, 5\] must have the shape of hx"):
        tinyattn.lstm_cell(x, (h, tinyattn.ones(2, 5, dtype=tinyattn.float64)), *_lstm_weights())
    with pytest.raises(RuntimeError, match="lstm_cell expects two hidden states"):
        tinyattn.lstm_cell(x, (h,), w_ih, w_hh)
    with pytest.raises(RuntimeError, match="expected a 2-D input"):
        tinyattn.rnn_tanh_cell(x[0], h[0], w_ih, w_hh)
