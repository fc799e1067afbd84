"""``tinyattn.core.tensor.Tensor`` (the tensor a learner reads) against the full
``tinyattn.Tensor``: each operator and method gives the same values, dtype and gradients
as the full tensor's, and ``tinyattn.Tensor`` is the core class with torch's surface added."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tinyattn.core import primitives
from tinyattn.core.tensor import Tensor as CoreTensor
from tinyattn.core.tensor import tensor as core_tensor

A = np.array([[0.5, 1.25, 2.0], [3.0, 0.75, 1.5]])
B = np.array([[1.5, 0.25, 2.5], [0.5, 2.0, 1.0]])

# (name, the expression on the core tensor, the same on the full tensor, the core node)
CASES = [
    ("add", lambda a, b: a + b, None, "AddBackward0"),
    ("add a number", lambda a, b: a + 1.5, None, "AddBackward0"),
    ("radd", lambda a, b: 1.5 + a, None, "AddBackward0"),
    ("sub", lambda a, b: a - b, None, "AddBackward0"),
    ("rsub", lambda a, b: 1 - a, None, "AddBackward0"),
    ("mul", lambda a, b: a * b, None, "MulBackward0"),
    ("rmul", lambda a, b: 2.5 * a, None, "MulBackward0"),
    ("neg", lambda a, b: -a, None, "MulBackward0"),
    ("div", lambda a, b: a / b, None, "DivBackward0"),
    ("rdiv", lambda a, b: 2 / a, None, "DivBackward0"),
    ("pow", lambda a, b: a**3, None, "PowBackward0"),
    ("pow tensor", lambda a, b: a**b, None, "PowBackward0"),
    ("rpow", lambda a, b: 2.0**a, None, "PowBackward0"),
    ("matmul", lambda a, b: a @ b.T, None, "MatmulBackward0"),
    ("matmul method", lambda a, b: a.matmul(b.T), None, "MatmulBackward0"),
    ("exp", lambda a, b: a.exp(), None, "ExpBackward0"),
    ("log", lambda a, b: a.log(), None, "LogBackward0"),
    ("sum", lambda a, b: a.sum(), None, "SumBackward0"),
    ("sum dim", lambda a, b: a.sum(-1, keepdim=True), None, "SumBackward0"),
    ("sum dims", lambda a, b: a.sum((0, 1)), None, "SumBackward0"),
    ("max", lambda a, b: a.max(), None, "MaxBackward0"),
    ("max dim", lambda a, b: a.max(1), lambda a, b: a.amax(1), "MaxBackward0"),
    ("reshape", lambda a, b: a.reshape(3, 2), None, "ReshapeBackward0"),
    ("reshape tuple", lambda a, b: a.reshape((-1,)), None, "ReshapeBackward0"),
    ("view", lambda a, b: a.view(6), None, "ReshapeBackward0"),
    ("permute", lambda a, b: a.permute(1, 0), None, "PermuteBackward0"),
    ("transpose", lambda a, b: a.transpose(0, 1), None, "PermuteBackward0"),
    ("T", lambda a, b: a.T, None, "PermuteBackward0"),
    ("expand", lambda a, b: a[:, None].expand(2, 4, 3), None, "ExpandBackward0"),
    ("expand -1", lambda a, b: a[0].expand(5, -1), None, "ExpandBackward0"),
    ("getitem int", lambda a, b: a[1], None, "IndexBackward0"),
    ("getitem slice", lambda a, b: a[:, 1:], None, "IndexBackward0"),
    ("getitem element", lambda a, b: a[1, 2], None, "IndexBackward0"),
    ("getitem repeats", lambda a, b: a[core_tensor([1, 1, 0])], None, "IndexBackward0"),
    ("getitem pairs", lambda a, b: a[core_tensor([1, 0]), 1:], None, "IndexBackward0"),
    ("softmax", lambda a, b: a.softmax(-1), None, "SoftmaxBackward0"),
    ("softmax dim 0", lambda a, b: a.softmax(dim=0), None, "SoftmaxBackward0"),
    (
        "attention",
        lambda a, b: (a @ b.T * 0.5).softmax(-1) @ b,
        None,
        "MatmulBackward0",
    ),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("name", "core_expr", "full_expr", "node"), CASES, ids=[c[0] for c in CASES]
)
def test_core_tensor_matches_the_full_tensor(name, core_expr, full_expr, node, dtype):
    a, b = (CoreTensor(x.astype(dtype), requires_grad=True) for x in (A, B))
    fa, fb = (tinyattn.tensor(x.astype(dtype), requires_grad=True) for x in (A, B))
    out = core_expr(a, b)
    expected = (full_expr or core_expr)(fa, fb)
    assert out.grad_fn.name() == node
    assert out._data.dtype == expected._data.dtype
    assert out._data.shape == expected._data.shape
    np.testing.assert_allclose(out._data, expected._data, rtol=1e-6)
    weights = np.arange(1.0, out._data.size + 1).reshape(out._data.shape).astype(dtype)
    out.backward(weights)
    expected.backward(tinyattn.tensor(weights))
    for mine, theirs in ((a, fa), (b, fb)):
        if theirs.grad is None:
            assert mine.grad is None
        else:
            np.testing.assert_allclose(mine.grad._data, theirs.grad._data, rtol=1e-6)


def test_the_full_tensor_is_the_core_tensor_with_torchs_surface():
    t = tinyattn.ones(2)
    assert isinstance(t, CoreTensor) and isinstance(t, tinyattn.Tensor)
    assert issubclass(tinyattn.Tensor, CoreTensor)
    # with the full API loaded, op results (also those of core tensors) are full tensors
    assert type(core_tensor([1.0, 2.0]) * 2) is tinyattn.Tensor


def test_ops_wrap_the_core_functions_and_keep_their_backward():
    from tinyattn.ops.elementwise import arithmetic, unary
    from tinyattn.ops.index import indexing
    from tinyattn.ops.linalg import matmul
    from tinyattn.ops.reduce import reduction, softmax
    from tinyattn.ops.shape import views

    wrappers = {
        arithmetic.Add: primitives.Add,
        arithmetic.Mul: primitives.Mul,
        arithmetic.Pow: primitives.Pow,
        unary.Exp: primitives.Exp,
        unary.Log: primitives.Log,
        reduction.Amax: primitives.Max,
        softmax.Softmax: primitives.Softmax,
        indexing.Index: primitives.Index,
        matmul.Matmul: primitives.Matmul,
    }
    for op, core_op in wrappers.items():
        assert issubclass(op, core_op) and op.backward is core_op.backward, op
    assert issubclass(arithmetic.Div, primitives.Div)  # (its backward adds rounding modes)
    same = (reduction.Sum, views.Reshape, views.Permute, views.Expand)
    assert same == (primitives.Sum, primitives.Reshape, primitives.Permute, primitives.Expand)


def test_core_construction():
    t = core_tensor([[1.0, 2.0]], requires_grad=True)
    assert t._data.dtype == np.float32 and t.requires_grad and t.is_leaf
    assert t.shape == (1, 2) and t.ndim == 2 and t.size(1) == 2 and t.size().numel() == 2
    assert core_tensor([1, 2])._data.dtype == np.int64
    assert core_tensor(np.zeros(2))._data.dtype == np.float64  # an array keeps its dtype
    assert core_tensor([1, 2], dtype=np.float64)._data.dtype == np.float64
    assert core_tensor(core_tensor(np.zeros(2)))._data.dtype == np.float64  # so does a tensor
    assert core_tensor(3.5).item() == 3.5
    with pytest.raises(RuntimeError, match="requires grad"):
        t.numpy()
    assert t.detach().numpy() is not None and not t.detach().requires_grad
    assert repr(CoreTensor([1.5])) == "tensor([1.5])"


def test_core_backward_refusals():
    t = CoreTensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        CoreTensor.backward(t * 2)
    with pytest.raises(RuntimeError, match="does not require grad"):
        CoreTensor.backward(CoreTensor([1.0]))


def test_the_full_tensor_redefines_every_core_method():
    """``tinyattn.Tensor`` keeps torch's behaviour: each method and property of the core
    tensor is redefined by the full class (or its mixins), none is inherited as it is."""
    inherited = [
        name
        for name in vars(CoreTensor)
        if name not in ("__module__", "__doc__", "__slots__", "__annotations__")
        and next(k for k in tinyattn.Tensor.__mro__ if name in vars(k)) is CoreTensor
    ]
    assert not inherited, f"core methods tinyattn.Tensor inherits unchanged: {inherited}"
