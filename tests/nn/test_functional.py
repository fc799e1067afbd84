"""nn.functional ops: float64 gradcheck over every element + torch parity (tests/harness.py)."""

import numpy as np
import pytest
from harness import check_op, rand, run_gradcheck, run_parity, torch

import tinyattn
import tinyattn.nn.functional as F
from tinyattn.nn.functional.basic import _dropout_mask


def _F(lib):
    return lib.nn.functional


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 5), (0, 5)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear(shape, with_bias):
    x, w, b = rand(*shape, seed=1), rand(4, 5, seed=2), rand(4, seed=3)
    if 0 in shape:  # empty batch: forward/grad shapes only (nothing to finite-difference)
        run_parity(lambda T, x, w, b: _F(T).linear(x, w, b), x, w, b)
        return
    if with_bias:
        check_op(lambda T, x, w, b: _F(T).linear(x, w, b), x, w, b)
    else:
        check_op(lambda T, x, w: _F(T).linear(x, w), x, w)


def test_linear_non_contiguous_input():
    x, w, b = rand(5, 3, seed=4), rand(4, 3, seed=5), rand(4, seed=6)
    check_op(
        lambda T, x, w, b: _F(T).linear(x.transpose(0, 1)[:, ::2].transpose(0, 1), w, b), x, w, b
    )


def test_linear_errors():
    x, w = tinyattn.randn(2, 5), tinyattn.randn(4, 4)
    with pytest.raises(RuntimeError, match=r"last dimension 5.*in_features=4.*\[2, 5\]"):
        F.linear(x, w)
    with pytest.raises(RuntimeError, match="dtype"):
        F.linear(tinyattn.randn(2, 4, dtype=tinyattn.float64), w)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    x = rand(3, 7, low=-4, high=4, seed=7)
    check_op(lambda T, x: _F(T).gelu(x, approximate=approximate), x)


def test_second_order_of_nn_ops_recorded():
    """gelu, layer_norm and linear have a gradgradcheck and second-order parity (check_op)."""
    from harness import GRADGRADCHECKED, PARITY2

    x, w = rand(3, 4, seed=1), rand(4, seed=2)
    check_op(lambda T, x, w: _F(T).gelu(_F(T).layer_norm(x, (4,), w)), x, w)
    assert {"Gelu", "LayerNormFunction"} <= GRADGRADCHECKED
    if torch is not None:
        assert {"Gelu", "LayerNormFunction"} <= PARITY2


def test_gelu_extreme_values_match_torch():
    x = np.array([-40.0, -8.0, -1e-8, 0.0, 1e-8, 8.0, 40.0])
    run_parity(lambda T, x: _F(T).gelu(x), x)


def test_relu_tanh_sigmoid_softmax_exports():
    x = rand(3, 4, seed=8)
    check_op(lambda T, x: _F(T).relu(x) + _F(T).tanh(x) * _F(T).sigmoid(x), x)
    check_op(lambda T, x: _F(T).softmax(x, dim=1) + _F(T).log_softmax(x, dim=0), x)


def _dropout_fn(p):
    """Dropout with tinyattn's mask; torch multiplies by the very same mask (masks are RNG-specific)."""

    def f(T, x):
        tinyattn.manual_seed(123)
        if T is tinyattn:
            return F.dropout(x, p, training=True)
        mask = _dropout_mask(tuple(x.shape), p, x.detach().numpy().dtype)
        return x * torch.tensor(mask)

    return f


@pytest.mark.parametrize("p", [0.3, 0.9, 1.0])
def test_dropout_gradient(p):
    check_op(_dropout_fn(p), rand(6, 5, seed=9))


def test_dropout_statistics_and_modes():
    x = tinyattn.ones(200, 500)
    y = F.dropout(x, 0.25, training=True)
    kept = y.numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.01
    np.testing.assert_allclose(y.numpy()[kept], 1 / 0.75)
    assert F.dropout(x, 0.25, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert (F.dropout(x, 1.0).numpy() == 0).all()
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            F.dropout(x, bad)


def test_dropout_inplace_writes_into_input():
    x = tinyattn.ones(50, 40)
    y = F.dropout(x, 0.5, inplace=True)
    assert y is x and set(np.unique(x.numpy())) <= {0.0, 2.0}
    a = tinyattn.randn(4, 6, requires_grad=True)
    b = a * 1.0
    F.dropout(b, 0.5, inplace=True).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), (b.detach().numpy() != 0) * 2.0)


@pytest.mark.parametrize(
    "shape,normalized", [((3, 6), (6,)), ((2, 3, 4), (3, 4)), ((5,), (5,)), ((2, 1, 1), (1,))]
)
def test_layer_norm(shape, normalized):
    x, w, b = rand(*shape, seed=10), rand(*normalized, seed=11), rand(*normalized, seed=12)
    check_op(lambda T, x, w, b: _F(T).layer_norm(x, normalized, w, b, eps=1e-5), x, w, b)
    check_op(lambda T, x: _F(T).layer_norm(x, normalized), x)


def test_layer_norm_weight_only_and_errors():
    x, w = rand(3, 4, seed=13), rand(4, seed=14)
    check_op(lambda T, x, w: _F(T).layer_norm(x, (4,), w, None, 1e-3), x, w)
    with pytest.raises(RuntimeError, match=r"layer_norm: input shape \[3, 4\].*\[5\]"):
        F.layer_norm(tinyattn.randn(3, 4), (5,))
    with pytest.raises(RuntimeError, match=r"weight must have shape \[4\]"):
        F.layer_norm(tinyattn.randn(3, 4), (4,), tinyattn.ones(3))


@pytest.mark.parametrize("eps", [None, 1e-6])
def test_rms_norm(eps):
    x, w = rand(3, 2, 5, seed=15), rand(2, 5, seed=16)
    check_op(lambda T, x, w: _F(T).rms_norm(x, (2, 5), w, eps), x, w)
    check_op(lambda T, x: _F(T).rms_norm(x, [5], eps=eps), x)


@pytest.mark.parametrize("padding_idx", [None, 1, -1])
def test_embedding(padding_idx):
    idx = np.array([[0, 2, 1, 2], [3, 1, 1, 0]])
    w = rand(4, 3, seed=17)

    def f(T, w):
        return _F(T).embedding(T.tensor(idx), w, padding_idx=padding_idx)

    if padding_idx is None:
        check_op(f, w)
    else:  # the padding row's zero gradient is by definition, not the finite difference
        run_parity(f, w)
    wt = tinyattn.tensor(w, requires_grad=True)
    f(tinyattn, wt).sum().backward()
    if padding_idx is not None:
        assert (wt.grad.numpy()[padding_idx] == 0).all()


def test_embedding_scale_grad_by_freq():
    idx = np.array([[0, 2, 1, 2], [3, 1, 1, 0]])  # row 1 three times, rows 0 and 2 twice
    w = rand(4, 3, seed=19)

    def f(T, w):
        return _F(T).embedding(T.tensor(idx), w, scale_grad_by_freq=True)

    run_parity(f, w)  # (by design not the derivative: no finite-difference check, as torch)
    wt = tinyattn.tensor(w, requires_grad=True)
    f(tinyattn, wt).sum().backward()  # each row's summed gradient over its count: all ones
    np.testing.assert_allclose(wt.grad.numpy(), np.ones((4, 3)))


def test_embedding_max_norm_renormalizes_the_rows_it_reads_in_place():
    idx = np.array([[1, 3], [3, 0]])
    w = rand(5, 3, seed=20) * 4
    norms = np.linalg.norm(w, axis=1)
    wt = tinyattn.tensor(w.copy(), requires_grad=True)
    out = F.embedding(tinyattn.tensor(idx), wt, max_norm=1.0)
    new = wt.detach().numpy()
    for row in range(5):  # rows read and too long: scaled to norm 1; the others untouched
        want = w[row] / (norms[row] + 1e-7) if row in idx and norms[row] > 1 else w[row]
        np.testing.assert_allclose(new[row], want, rtol=1e-12)
    np.testing.assert_array_equal(out.detach().numpy(), new[idx])
    if torch is not None:
        tw = torch.tensor(w.copy(), requires_grad=True)
        tout = torch.nn.functional.embedding(torch.tensor(idx), tw, max_norm=1.0)
        np.testing.assert_allclose(new, tw.detach().numpy(), rtol=1e-12)
        (tout * 2).sum().backward()
        (out * 2).sum().backward()
        np.testing.assert_allclose(wt.grad.numpy(), tw.grad.numpy())
    layer = tinyattn.nn.Embedding(5, 3, max_norm=0.5, norm_type=1.0, scale_grad_by_freq=True)
    layer(tinyattn.tensor(idx))
    assert np.abs(layer.weight.detach().numpy()[[0, 1, 3]]).sum(1).max() <= 0.5 + 1e-6
    with pytest.raises(NotImplementedError, match="sparse=True"):
        tinyattn.nn.Embedding(5, 3, sparse=True)


def test_embedding_errors():
    w = tinyattn.randn(10, 3)
    with pytest.raises(IndexError, match="index 10 is out of range for num_embeddings=10"):
        F.embedding(tinyattn.tensor([1, 10]), w)
    with pytest.raises(RuntimeError, match="integer indices"):
        F.embedding(tinyattn.tensor([1.0]), w)


@pytest.mark.parametrize(
    "pads", [(1, 2), (1, 2, 0, 1), (0, 0, 2, 1, 1, 0), (-1, 2), (2, -2, -1, 0)]
)
def test_pad_constant(pads):
    x = rand(2, 3, 4, seed=18)
    check_op(lambda T, x: _F(T).pad(x, pads, value=0.5), x)
    check_op(lambda T, x: _F(T).pad(x, pads), x)


def test_pad_errors():
    with pytest.raises(ValueError, match="padding length"):
        F.pad(tinyattn.randn(2, 3), (1, 2, 3))
    with pytest.raises(RuntimeError, match="reflect"):  # reflect needs pad < size (as torch)
        F.pad(tinyattn.randn(2, 3), (3, 1), mode="reflect")


def test_one_hot_matches_torch():
    t = np.array([[0, 3], [2, 1]])
    ours = F.one_hot(tinyattn.tensor(t))
    assert ours.dtype == tinyattn.int64 and ours.shape == (2, 2, 4)
    if torch is not None:
        np.testing.assert_array_equal(
            ours.numpy(), torch.nn.functional.one_hot(torch.tensor(t)).numpy()
        )
        np.testing.assert_array_equal(
            F.one_hot(tinyattn.tensor(t), 6).numpy(),
            torch.nn.functional.one_hot(torch.tensor(t), 6).numpy(),
        )
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(tinyattn.tensor(t), 3)
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(tinyattn.tensor([-1, 0]))


def test_gradcheck_helper_rejects_wrong_gradient():
    """The harness must be able to fail: a deliberately wrong backward is caught."""
    from tinyattn.autograd.function import Function

    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(Exception):  # noqa: B017
        run_gradcheck(lambda T, x: Wrong.apply(x), rand(3, seed=19))


# -- shapes from Hypothesis: size-1 dims, several batch dims, transposed (non-contiguous) input --

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_batch = st.lists(st.integers(1, 3), min_size=0, max_size=2)


@given(batch=_batch, features=st.integers(1, 4), k=st.integers(1, 2), transposed=st.booleans())
def test_layer_norm_and_rms_norm_shapes(batch, features, k, transposed):
    normalized = (2, features)[-k:]
    x = rand(*batch, *normalized, seed=len(batch) * 10 + features)
    w, b = rand(*normalized, seed=1), rand(*normalized, seed=2)
    if transposed and x.ndim >= 2:  # hand the op a transposed view of a contiguous array
        x = np.ascontiguousarray(np.swapaxes(x, -1, -2))

        def prep(T, x):
            return x.transpose(-1, -2)
    else:

        def prep(T, x):
            return x

    # Over 2 features the normalised values are +-1 whatever x is, so the second derivative
    # cancels catastrophically in float32: torch's own float32 value is 1.3e-4 off (relative).
    loose = {"tol32": (1e-3, 1e-3)} if normalized[-1] == 2 and k == 1 else None
    check_op(
        lambda T, x, w, b: _F(T).layer_norm(prep(T, x), normalized, w, b),
        x,
        w,
        b,
        parity2_kw=loose,
    )
    check_op(lambda T, x, w: _F(T).rms_norm(prep(T, x), normalized, w), x, w, parity2_kw=loose)


@given(batch=_batch, n_in=st.integers(1, 4), n_out=st.integers(1, 3))
def test_linear_shapes(batch, n_in, n_out):
    x, w, b = rand(*batch, n_in, seed=3), rand(n_out, n_in, seed=4), rand(n_out, seed=5)
    check_op(lambda T, x, w, b: _F(T).linear(x, w, b), x, w, b)
