"""The Tensor API: creation functions, attributes, conversions, repr, Python protocols."""

import numpy as np
import pytest
from harness import torch

import tinyattn

# -- creation -------------------------------------------------------------------------------


def test_tensor_infers_dtypes_like_torch():
    assert tinyattn.tensor([1.5, 2]).dtype == tinyattn.float32
    assert tinyattn.tensor([1, 2]).dtype == tinyattn.int64
    assert tinyattn.tensor([True]).dtype == tinyattn.bool
    assert tinyattn.tensor(np.float64(1.5)).dtype == tinyattn.float64
    assert tinyattn.tensor(np.arange(3, dtype=np.int32)).dtype == tinyattn.int32
    assert tinyattn.tensor([[1, 2]], dtype=tinyattn.float64).dtype == tinyattn.float64
    a = np.ones(3)
    t = tinyattn.tensor(a)
    a[0] = 5
    assert t[0].item() == 1  # tensor() copies
    assert tinyattn.from_numpy(a)[0].item() == 5 and tinyattn.as_tensor(a)[0].item() == 5
    x = tinyattn.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf


def test_factories_take_varargs_or_tuple_and_options():
    for f in (tinyattn.zeros, tinyattn.ones, tinyattn.empty, tinyattn.rand, tinyattn.randn):
        assert f(2, 3).shape == (2, 3) == f((2, 3)).shape == f([2, 3]).shape
        assert f(2, dtype=tinyattn.float64).dtype == tinyattn.float64
        assert f(2, requires_grad=True).requires_grad
        assert f(2, device="cpu").device == tinyattn.device("cpu")
    assert tinyattn.zeros(2, 3).sum().item() == 0 and tinyattn.ones(2, 3).sum().item() == 6
    assert tinyattn.full((2, 2), 3).dtype == tinyattn.int64
    assert tinyattn.full((2,), 1.5).tolist() == [1.5, 1.5]
    x = tinyattn.ones(2, 3, dtype=tinyattn.float64)
    for f, v in ((tinyattn.zeros_like, 0), (tinyattn.ones_like, 1)):
        y = f(x)
        assert y.shape == x.shape and y.dtype == x.dtype and (y.numpy() == v).all()
    assert tinyattn.full_like(x, 7).tolist() == [[7.0] * 3] * 2
    assert tinyattn.empty_like(x).shape == (2, 3)
    with pytest.raises(RuntimeError, match="negative dimension"):
        tinyattn.zeros(2, -1)


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize(
    "expr",
    [
        "T.arange(5)",
        "T.arange(0, 1, 0.25)",
        "T.arange(5.0)",
        "T.arange(1, 0, -0.3)",
        "T.arange(2, 10, 3)",
        "T.linspace(0, 1, 5)",
        "T.linspace(-1, 1, steps=1)",
        "T.eye(3)",
        "T.eye(2, 3)",
        "T.triu(T.ones(3, 4))",
        "T.tril(T.ones(3, 3), diagonal=-1)",
        "T.tensor([[1, 2], [3, 4]]).triu(1)",
        "T.FloatTensor([1, 2])",
        "T.LongTensor([1.5, 2])",
        "T.BoolTensor([1, 0])",
        "T.full((2,), True)",
    ],
)
def test_creation_matches_torch(expr):
    ours, theirs = eval(expr, {"T": tinyattn}), eval(expr, {"T": torch})
    assert str(theirs.dtype) == "torch." + ours.dtype.name
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_legacy_constructors_with_sizes():
    assert tinyattn.FloatTensor(2, 3).shape == (2, 3)
    assert tinyattn.LongTensor(4).dtype == tinyattn.int64


def test_random_is_deterministic_under_manual_seed():
    tinyattn.manual_seed(123)
    a = (tinyattn.rand(3), tinyattn.randn(2, 2), tinyattn.randint(0, 10, (5,)))
    tinyattn.manual_seed(123)
    b = (tinyattn.rand(3), tinyattn.randn(2, 2), tinyattn.randint(0, 10, (5,)))
    for x, y in zip(a, b):
        assert x.tolist() == y.tolist()
    assert a[2].dtype == tinyattn.int64 and 0 <= a[2].min().item() and a[2].max().item() < 10
    assert 0 <= a[0].min().item() and a[0].max().item() < 1
    g1, g2 = tinyattn.Generator().manual_seed(7), tinyattn.Generator().manual_seed(7)
    assert tinyattn.rand(4, generator=g1).tolist() == tinyattn.rand(4, generator=g2).tolist()
    state = tinyattn.get_rng_state()
    first = tinyattn.randn(3).tolist()
    tinyattn.set_rng_state(state)
    assert tinyattn.randn(3).tolist() == first
    assert tinyattn.initial_seed() == 123


def test_constants():
    assert tinyattn.inf == float("inf") and np.isnan(tinyattn.nan)
    assert tinyattn.pi == pytest.approx(3.141592653589793)


def test_bad_creation_input():
    with pytest.raises(ValueError, match="rectangular"):
        tinyattn.tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="infer a dtype"):
        tinyattn.tensor("abc")
    with pytest.raises(TypeError, match="unsupported dtype"):
        tinyattn.from_numpy(np.array(["a"]))
    with pytest.raises(RuntimeError, match="CPU only"):
        tinyattn.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="floating point"):
        tinyattn.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point.*int64"):
        tinyattn.tensor([1, 2]).requires_grad_()


# -- attributes and conversions --------------------------------------------------------------


def test_shape_is_a_sliceable_size():
    x = tinyattn.zeros(2, 3, 8)
    assert isinstance(x.shape, tuple) and isinstance(x.shape[:-1], tinyattn.Size)
    b, t, c = x.shape
    assert (b, t, c) == (2, 3, 8) and x.shape.numel() == 48
    assert x.view(*x.shape[:-1], 2, 4).shape == (2, 3, 2, 4)
    assert x.size(1) == 3 and x.size(-1) == 8 and x.size() == (2, 3, 8)
    assert x.dim() == x.ndim == 3 and x.numel() == 48 and len(x) == 2
    with pytest.raises(IndexError, match="range"):
        x.size(3)


def test_device_dtype_and_conversions():
    x = tinyattn.tensor([[1.5, -2.0]])
    assert str(x.device) == "cpu" and x.to("cpu") is x and x.cpu() is x
    with pytest.raises(RuntimeError, match="CPU only"):
        x.cuda()
    assert x.to(tinyattn.float64).dtype == tinyattn.float64
    assert x.double().dtype == tinyattn.float64 and x.long().tolist() == [[1, -2]]
    assert x.bool().dtype == tinyattn.bool and x.float() is x
    assert x.type(tinyattn.int32).dtype == tinyattn.int32 and x.type() == "torch.FloatTensor"
    assert x.type_as(tinyattn.zeros(1, dtype=tinyattn.float64)).dtype == tinyattn.float64
    assert x.T.shape == (2, 1) and tinyattn.zeros(2, 3, 4).mT.shape == (2, 4, 3)
    assert x.tolist() == [[1.5, -2.0]] and np.asarray(x).shape == (1, 2)
    assert x.numpy().dtype == np.float32 and x.contiguous() is x
    m = tinyattn.zeros(2, 3)
    assert not m.t().is_contiguous() and m.t().contiguous().is_contiguous()


def test_autograd_attributes():
    x = tinyattn.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert not y.is_leaf and y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    assert isinstance(x.grad, tinyattn.Tensor) and x.grad.tolist() == [2.0, 2.0]
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None
    assert y.data.requires_grad is False
    c = x.clone()
    assert c.grad_fn is not None and c.requires_grad
    with pytest.raises(RuntimeError, match="detach"):
        x.numpy()


# -- repr -----------------------------------------------------------------------------------

REPR_CASES = [
    "T.tensor([0.4047, 0.5953])",
    "T.tensor([1., 2.])",
    "T.tensor([1., 2.], dtype=T.float64)",
    "T.tensor([1., 2.], requires_grad=True)",
    "T.tensor([1., 2.], requires_grad=True) * 2",
    "T.tensor([[1.5, -2.25], [3.0, 4.125]])",
    "T.tensor([1e-5, 1.])",
    "T.tensor([1e10, 1.])",
    "T.tensor([float('nan'), float('inf'), 1.5])",
    "T.tensor([])",
    "T.zeros(2, 0)",
    "T.zeros(2, 0, dtype=T.int64)",
    "T.tensor(3.5)",
    "T.tensor(7)",
    "T.tensor([True, False])",
    "T.tensor([1, 2], dtype=T.int32)",
    "T.tensor([0., 0.])",
    "T.arange(2000)",
    "T.arange(3000.).reshape(50, 60)",
    "T.linspace(-3, 3, 60).reshape(3, 4, 5)",
    "T.linspace(-3, 3, 40)",
    "T.ones(3, dtype=T.float16) / 3",
    "T.tensor([123456.7, 1.])",
]


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("expr", REPR_CASES)
def test_repr_matches_torch(expr):
    ours = repr(eval(expr, {"T": tinyattn})).replace("tinyattn.", "torch.")
    assert ours == repr(eval(expr, {"T": torch}))


def test_repr_without_torch():
    assert repr(tinyattn.tensor([0.4047, 0.5953])) == "tensor([0.4047, 0.5953])"
    assert repr(tinyattn.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    x = tinyattn.tensor([1.0], requires_grad=True)
    assert repr(x) == "tensor([1.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2.], grad_fn=<MulBackward0>)"
    assert repr(tinyattn.tensor([1.0], dtype=tinyattn.float64)) == (
        "tensor([1.], dtype=tinyattn.float64)"
    )


# -- Python protocols -------------------------------------------------------------------------


def test_iteration_and_unpacking_over_dim0():
    qkv = tinyattn.arange(24.0).reshape(3, 2, 4)
    q, k, v = qkv
    assert q.shape == (2, 4) and v[0, 0].item() == 16
    assert [r.tolist() for r in tinyattn.tensor([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]
    x = tinyattn.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a, b, c = x
    (a * 1 + b * 2 + c * 3).backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="0-d"):
        iter(tinyattn.tensor(1.0))
    with pytest.raises(TypeError, match="0-d"):
        len(tinyattn.tensor(1.0))


def test_one_element_number_protocols():
    loss = tinyattn.tensor(7.0)
    n = 2
    assert "%6.2f" % (loss / n) == "  3.50"
    assert f"{loss:.3f}" == "7.000" and f"{loss}" == "7.0"  # as torch: 0-dim formats as its number
    assert float(tinyattn.tensor([[2.5]])) == 2.5 and int(tinyattn.tensor([2.7])) == 2
    assert bool(tinyattn.tensor([1.0])) and not bool(tinyattn.tensor(0))
    assert [10, 20, 30][tinyattn.tensor(1)] == 20
    assert tinyattn.tensor(3).item() == 3 and isinstance(tinyattn.tensor(3).item(), int)
    with pytest.raises(TypeError, match="integer tensors of a single element"):
        [1, 2][tinyattn.tensor(1.0)]
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(tinyattn.ones(2))
    with pytest.raises(RuntimeError, match="2 elements"):
        tinyattn.ones(2).item()
    with pytest.raises(TypeError, match="format"):
        f"{tinyattn.ones(2):.3f}"


def test_cuda_namespace_lets_the_device_idiom_pick_cpu():
    device = tinyattn.device("cuda" if tinyattn.cuda.is_available() else "cpu")
    assert str(device) == "cpu" and tinyattn.cuda.device_count() == 0
    x = tinyattn.ones(2).to(device)
    assert x.device == "cpu"
    with pytest.raises(RuntimeError, match="CPU only"):
        tinyattn.ones(2).to("cuda")
