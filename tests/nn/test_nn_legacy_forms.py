"""Old and kernel-level torch.nn names: lp_pool3d / LPPool3d, max_unpool3d / MaxUnpool3d, conv_tbc,
native_channel_shuffle, CrossMapLRN2d, NLLLoss2d, Container and UninitializedBuffer with
the lazy batch norms: gradchecks, torch parity, reprs and bad input."""

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, rand, run_gradcheck, torch

import tinyattn
from tests.nn._module_parity import module_parity

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def F(lib):
    return lib.nn.functional


def _arr(shape, seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return (rng.permutation(n) / n * 2 - 1 + rng.uniform(0, 0.2 / n, n)).reshape(shape)


# -- lp_pool3d --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "p,kw",
    [
        (2.0, dict(kernel_size=2)),
        (3, dict(kernel_size=(2, 1, 2), stride=(1, 2, 1))),
        (1.5, dict(kernel_size=2, stride=1, ceil_mode=True)),
        (float("inf"), dict(kernel_size=2)),
        (-float("inf"), dict(kernel_size=(1, 2, 2))),
    ],
)
def test_lp_pool3d(p, kw):
    x = rand(1, 2, 4, 3, 4, low=0.2, high=1.5, seed=3)  # positive: x^p defined for every p
    check_op(lambda T, x: F(T).lp_pool3d(x, p, **kw), x)


def test_lp_pool3d_unbatched_and_negative_values():
    check_op(lambda T, x: F(T).lp_pool3d(x, 2, 2), _arr((2, 4, 4, 2)) + 0.05)


@needs_torch
def test_lp_pool3d_module():
    for kw in (dict(), dict(stride=1, ceil_mode=True)):
        module_parity(
            torch.nn.LPPool3d(2, 2, **kw), tinyattn.nn.LPPool3d(2, 2, **kw), rand(1, 2, 4, 4, 3)
        )
    assert repr(tinyattn.nn.LPPool3d(2, 3)) == repr(torch.nn.LPPool3d(2, 3))


def test_lp_pool3d_bad_norm():
    with pytest.raises(ValueError, match="norm_type must be a non-zero number"):
        F(tinyattn).lp_pool3d(tinyattn.ones(1, 1, 2, 2, 2), 0, 2)


# -- max_unpool3d ------------------------------------------------------------------------------


def _pooled(shape, kernel_size, seed=0, **kw):
    x = torch.tensor(_arr(shape, seed)) if torch is not None else None
    if x is None:
        pytest.skip("needs torch to build max_pool3d indices as torch does")
    y, idx = torch.nn.functional.max_pool3d(x, kernel_size, return_indices=True, **kw)
    return y.numpy(), idx.numpy()


@pytest.mark.parametrize(
    "shape,kw,out",
    [
        ((1, 2, 4, 4, 6), dict(kernel_size=2), None),
        ((2, 1, 4, 6, 4), dict(kernel_size=2), (5, 7, 5)),
        ((1, 1, 5, 5, 5), dict(kernel_size=2, stride=2, padding=1), (5, 5, 5)),
        ((2, 4, 4, 4), dict(kernel_size=2), None),  # unbatched
    ],
)
def test_max_unpool3d(shape, kw, out):
    y, idx = _pooled(shape, **kw)
    check_op(
        lambda T, v, i: F(T).max_unpool3d(v, i, **kw, output_size=out), y, idx, grad=[True, False]
    )


@needs_torch
def test_max_unpool3d_module():
    y, idx = _pooled((1, 2, 4, 4, 4), 2)
    m_t, m_o = torch.nn.MaxUnpool3d(2), tinyattn.nn.MaxUnpool3d(2)
    module_parity(m_t, m_o, y, idx)
    assert (
        repr(m_o)
        == repr(m_t)
        == "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"
    )


def test_max_unpool3d_bad_input():
    y, idx = _pooled((1, 1, 4, 4, 4), 2)
    bad = idx.copy()
    bad.flat[0] = 999
    check_bad_call(
        lambda lib: F(lib).max_unpool3d(lib.tensor(y), lib.tensor(bad), 2), "invalid max index"
    )
    check_bad_call(
        lambda lib: F(lib).max_unpool3d(lib.tensor(y), lib.tensor(idx), 2, output_size=(9, 4, 4)),
        "output_size",
    )
    check_bad_call(
        lambda lib: F(lib).max_unpool3d(lib.tensor(y[0, 0, 0]), lib.tensor(idx[0, 0, 0]), 2),
        "4D .unbatched. or 5D|shape",
    )


# -- conv_tbc ------------------------------------------------------------------------------------


@pytest.mark.parametrize("pad", [0, 1, 2, -1])
def test_conv_tbc(pad):
    x, w, b = rand(7, 2, 3, seed=1), rand(3, 3, 4, seed=2), rand(4, seed=3)
    check_op(lambda T, x, w, b: F(T).conv_tbc(x, w, b, pad), x, w, b)


def test_conv_tbc_empty_output():
    y = F(tinyattn).conv_tbc(tinyattn.ones(3, 2, 1), tinyattn.ones(4, 1, 2), tinyattn.zeros(2), 0)
    assert tuple(y.shape) == (0, 2, 2)


TBC_BAD = [
    (
        "bias_none",
        lambda lib: F(lib).conv_tbc(lib.ones(5, 2, 3), lib.ones(2, 3, 4), None),
        "'bias'.*must be Tensor",
    ),
    (
        "input_2d",
        lambda lib: F(lib).conv_tbc(lib.ones(5, 3), lib.ones(2, 3, 4), lib.ones(4)),
        "Input must have 3 dims",
    ),
    (
        "weight_2d",
        lambda lib: F(lib).conv_tbc(lib.ones(5, 2, 3), lib.ones(3, 4), lib.ones(4)),
        "Weight tensor must have 3 dims",
    ),
    (
        "bias_2d",
        lambda lib: F(lib).conv_tbc(lib.ones(5, 2, 3), lib.ones(2, 3, 4), lib.ones(1, 4)),
        "Bias must be 1-D",
    ),
    (
        "channels",
        lambda lib: F(lib).conv_tbc(lib.ones(5, 2, 3), lib.ones(2, 2, 4), lib.ones(4)),
        "input channels",
    ),
    (
        "bias_size",
        lambda lib: F(lib).conv_tbc(lib.ones(5, 2, 3), lib.ones(2, 3, 4), lib.ones(3)),
        "Bias size",
    ),
    (
        "too_short",
        lambda lib: F(lib).conv_tbc(lib.ones(5, 2, 3), lib.ones(9, 3, 4), lib.ones(4)),
        "time steps|negative dimension",
    ),
]


@pytest.mark.parametrize("name,call,expected", TBC_BAD, ids=[c[0] for c in TBC_BAD])
def test_conv_tbc_bad_input(name, call, expected):
    check_bad_call(call, expected)


# -- native_channel_shuffle ------------------------------------------------------------------------


def test_native_channel_shuffle():
    x = _arr((2, 6, 3, 2))
    run_gradcheck(lambda T, x: F(T).native_channel_shuffle(x, 3), x)
    ours = F(tinyattn).native_channel_shuffle(tinyattn.tensor(x), 3).numpy()
    np.testing.assert_array_equal(ours, F(tinyattn).channel_shuffle(tinyattn.tensor(x), 3).numpy())
    if torch is not None:  # torch's has no derivative: compare the forward
        np.testing.assert_array_equal(
            ours, torch.nn.functional.native_channel_shuffle(torch.tensor(x), 3).numpy()
        )


def test_native_channel_shuffle_bad_input():
    check_bad_call(
        lambda lib: F(lib).native_channel_shuffle(lib.ones(2, 6, 3), 4), "divisible by groups"
    )
    check_bad_call(
        lambda lib: F(lib).native_channel_shuffle(lib.ones(2, 6, 3), 0), "groups must be a positive"
    )


# -- CrossMapLRN2d ---------------------------------------------------------------------------------


@pytest.mark.parametrize("size,channels", [(1, 3), (2, 4), (3, 1), (5, 3), (5, 9), (4, 7)])
def test_cross_map_lrn2d(size, channels):
    x = rand(2, channels, 3, 2, seed=size * 10 + channels)
    run_gradcheck(lambda T, x: T.nn.CrossMapLRN2d(size, 0.3, 0.75, 1.5)(x), x)
    if torch is None:
        return
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-6)):
        ours = tinyattn.nn.CrossMapLRN2d(size, 0.3, 0.75, 1.5)(tinyattn.tensor(x.astype(dtype)))
        theirs = torch.nn.CrossMapLRN2d(size, 0.3, 0.75, 1.5)(torch.tensor(x.astype(dtype)))
        assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
        np.testing.assert_allclose(
            ours.detach().numpy(), theirs.detach().numpy(), rtol=tol, atol=tol
        )


@needs_torch
def test_torch_cross_map_lrn2d_backward_is_not_its_forward_derivative():
    """Why only the forward is compared: torch's hand-written backward fails torch's gradcheck."""
    x = torch.tensor(rand(1, 5, 2, 2, seed=1), requires_grad=True)
    m = torch.nn.CrossMapLRN2d(3, 0.3, 0.75, 1.5)
    assert not torch.autograd.gradcheck(m, (x,), raise_exception=False)


def test_cross_map_lrn2d_repr_and_bad_input():
    m = tinyattn.nn.CrossMapLRN2d(5)
    assert repr(m) == "CrossMapLRN2d(5, alpha=0.0001, beta=0.75, k=1)"
    if torch is not None:
        assert repr(m) == repr(torch.nn.CrossMapLRN2d(5))
    check_bad_call(
        lambda lib: lib.nn.CrossMapLRN2d(3)(lib.ones(2, 3, 4)), "Expected input to be 4D, got 3D"
    )


# -- NLLLoss2d, Container ----------------------------------------------------------------------------


@needs_torch
def test_nll_loss2d_is_nll_loss():
    logp = np.log(np.random.default_rng(0).dirichlet(np.ones(3), size=(2, 4, 5))).transpose(
        0, 3, 1, 2
    )
    target = np.random.default_rng(1).integers(0, 3, (2, 4, 5))
    target[0, 0, 0] = -100
    kw = dict(weight=None, ignore_index=-100, reduction="sum")
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        ours = tinyattn.nn.NLLLoss2d(**kw)
    with pytest.warns(FutureWarning):
        module_parity(torch.nn.NLLLoss2d(**kw), ours, logp, target)
    assert issubclass(tinyattn.nn.NLLLoss2d, tinyattn.nn.NLLLoss)
    assert repr(ours) == "NLLLoss2d()"


def test_container_adds_keyword_children():
    for lib in [tinyattn] + ([torch] if torch is not None else []):
        with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
            c = lib.nn.Container(a=lib.nn.Linear(2, 3), b=lib.nn.ReLU())
        assert list(dict(c.named_children())) == ["a", "b"]
        assert list(c.state_dict()) == ["a.weight", "a.bias"]
    with pytest.raises(TypeError), pytest.warns(FutureWarning):
        tinyattn.nn.Container(a=3)


# -- UninitializedBuffer --------------------------------------------------------------------------------


def test_uninitialized_buffer_materializes_into_a_tensor():
    b = tinyattn.nn.UninitializedBuffer(dtype=tinyattn.float64)
    assert repr(b) == "<UninitializedBuffer>" and b.persistent and not b.requires_grad
    b.materialize((3, 2))
    assert type(b) is tinyattn.Tensor and tuple(b.shape) == (3, 2) and b.dtype == tinyattn.float64
    c = tinyattn.nn.UninitializedBuffer(persistent=False)
    c.materialize((2,), dtype=tinyattn.float16)
    assert c.dtype == tinyattn.float16


@pytest.mark.parametrize("cls", ["LazyBatchNorm1d", "LazyBatchNorm2d"])
def test_lazy_batch_norm_buffers_are_uninitialized_buffers(cls):
    m = getattr(tinyattn.nn, cls)()
    assert isinstance(m.running_mean, tinyattn.nn.UninitializedBuffer)
    assert isinstance(m.running_var, tinyattn.nn.UninitializedBuffer)
    if torch is not None:
        assert isinstance(getattr(torch.nn, cls)().running_mean, torch.nn.UninitializedBuffer)
    shape = (4, 3) if cls.endswith("1d") else (2, 3, 2, 2)
    m(tinyattn.randn(*shape))
    assert type(m.running_mean) is tinyattn.Tensor and tuple(m.running_var.shape) == (3,)


def test_lazy_batch_norm_loads_into_uninitialized_buffers():
    m = tinyattn.nn.LazyBatchNorm1d()
    state = {
        "weight": np.ones(3),
        "bias": np.zeros(3),
        "running_mean": np.full(3, 0.5),
        "running_var": np.full(3, 2.0),
        "num_batches_tracked": np.array(4),
    }
    m.load_state_dict(state)
    assert type(m.running_mean) is tinyattn.Tensor
    np.testing.assert_array_equal(m.running_var.numpy(), np.full(3, 2.0))
    with pytest.raises(RuntimeError, match="running_mean"):
        tinyattn.nn.LazyBatchNorm1d().load_state_dict({**state, "running_mean": np.ones((3, 1))})
