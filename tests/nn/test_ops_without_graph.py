"""Ops run without ``Function.apply`` when grad mode is off (``records_no_graph``): linear,
layer_norm, gelu and scaled_dot_product_attention give what ``apply`` gives then (values,
dtype, no graph, a fresh version), keep NumPy's floating-point warnings off, and still
send a guarded layout (sparse) through ``apply``; with grad on, the graph is recorded."""

import warnings

import numpy as np
import pytest

import tinyattn
import tinyattn.nn.functional as F
from tinyattn.nn.functional.attention import ScaledDotProductAttention
from tinyattn.nn.functional.basic import Gelu, LinearFunction
from tinyattn.nn.functional.norm_layer import LayerNormFunction

MODES = ["no_grad", "inference_mode"]


def _inputs():
    rng = np.random.default_rng(0)

    def t(*shape):
        return tinyattn.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)

    return dict(x=t(2, 3, 8), w=t(5, 8), b=t(5), g=t(8), q=t(1, 2, 1, 4), k=t(1, 2, 6, 4))


def _cases(i):
    """(name, the public call, the same op through Function.apply)."""
    sdpa = dict(causal=False, scale=0.5, dropout_p=0.0, groups=1, seed=0)
    return [
        (
            "linear",
            lambda: F.linear(i["x"], i["w"], i["b"]),
            (LinearFunction, i["x"], i["w"], i["b"]),
        ),
        (
            "linear, no bias",
            lambda: F.linear(i["x"], i["w"]),
            (LinearFunction, i["x"], i["w"], None),
        ),
        (
            "layer_norm",
            lambda: F.layer_norm(i["x"], (8,), i["g"], i["g"], 1e-5),
            (LayerNormFunction, i["x"], i["g"], i["g"], 1, 1e-5),
        ),
        (
            "layer_norm, no affine",
            lambda: F.layer_norm(i["x"], (8,)),
            (LayerNormFunction, i["x"], None, None, 1, 1e-5),
        ),
        ("gelu", lambda: F.gelu(i["x"]), (Gelu, i["x"], "none")),
        ("gelu tanh", lambda: F.gelu(i["x"], approximate="tanh"), (Gelu, i["x"], "tanh")),
        (
            "sdpa",
            lambda: F.scaled_dot_product_attention(i["q"], i["k"], i["k"], scale=0.5),
            (ScaledDotProductAttention, i["q"], i["k"], i["k"], None, sdpa),
        ),
    ]


def _apply(fn, *args):
    kwargs = args[-1] if isinstance(args[-1], dict) else {}
    return fn.apply(*(args[:-1] if kwargs else args), **kwargs)


@pytest.mark.parametrize("mode", MODES)
def test_without_graph_matches_apply(mode):
    inputs = _inputs()
    for name, call, (fn, *args) in _cases(inputs):
        with getattr(tinyattn, mode)():
            got, want = call(), _apply(fn, *args)
        assert type(got) is type(want), name
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)
        assert got.grad_fn is None and not got.requires_grad, name
        assert got._base is None and got._version.value == 0, name
        assert not np.shares_memory(got.numpy(), inputs["x"].detach().numpy()), name


def test_with_grad_on_the_graph_is_recorded():
    inputs = _inputs()
    for name, call, _ in _cases(inputs):
        out = call()
        assert out.grad_fn is not None and out.requires_grad, name
        out.sum().backward()
    assert all(t.grad is not None for t in inputs.values())


@pytest.mark.parametrize("mode", MODES)
def test_floating_point_warnings_stay_off(mode):
    """inf - inf in the bias add and in layer_norm's centring: NaN, as torch, no warning."""
    x = tinyattn.tensor([[np.inf, 1.0]])
    w, b = tinyattn.ones(2, 2), tinyattn.tensor([-np.inf, 0.0])
    with warnings.catch_warnings(), getattr(tinyattn, mode)():
        warnings.simplefilter("error")
        y = F.linear(x, w, b)
        z = F.layer_norm(x, (2,))
    assert np.isnan(y.numpy()[0, 0]) and np.isnan(z.numpy()).all()


@pytest.mark.parametrize("mode", MODES)
def test_a_sparse_input_still_goes_through_apply(mode):
    x, w = tinyattn.randn(3, 4).to_sparse(), tinyattn.randn(2, 4)
    with getattr(tinyattn, mode)(), pytest.raises(NotImplementedError, match="sparse COO"):
        F.linear(x, w)


def test_a_numpy_weight_for_layer_norm_still_works_without_graph():
    x = tinyattn.randn(2, 4)
    with tinyattn.no_grad():
        got = F.layer_norm(x, (4,), np.full(4, 2.0, np.float32))
    np.testing.assert_allclose(got.numpy(), 2 * F.layer_norm(x, (4,)).numpy(), rtol=1e-6)


def test_sdpa_checks_still_name_the_argument_without_graph():
    q = tinyattn.randn(1, 2, 1, 4)
    with tinyattn.inference_mode():
        with pytest.raises(TypeError, match="key must be a Tensor"):
            F.scaled_dot_product_attention(q, np.ones((1, 2, 3, 4)), q)
        with pytest.raises(ValueError, match="value must have at least 2 dims"):
            F.scaled_dot_product_attention(q, q, tinyattn.ones(4))
        with pytest.raises(ValueError, match=r"dropout_p must be in \[0, 1\], got 1.5"):
            F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)
        with pytest.raises(TypeError, match="dropout_p must be a float, got str"):
            F.scaled_dot_product_attention(q, q, q, dropout_p="0")
