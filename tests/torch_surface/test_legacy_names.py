"""Pre-0.4 names old tutorials call: torch.autograd.Variable, torch.range,
nn.utils.clip_grad_norm (deprecated alias), cuda.synchronize (raises without CUDA)."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tinyattn.autograd import Variable

try:
    import torch
except ImportError:
    torch = None


def test_variable_is_a_detached_leaf_sharing_values():
    x = tinyattn.ones(2, requires_grad=True)
    v = Variable(x * 2)
    assert v.is_leaf and not v.requires_grad and v.grad_fn is None
    assert v.tolist() == [2.0, 2.0]
    w = Variable(tinyattn.ones(2), requires_grad=True)
    (w * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]
    assert isinstance(x, Variable) and not isinstance(np.ones(2), Variable)
    assert tuple(Variable().shape) == (0,)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1, 2])
    with pytest.warns(UserWarning, match="volatile"):
        Variable(x, volatile=True)


@pytest.mark.parametrize(
    "args, kw",
    [((0, 1, 0.25), {}), ((1, 4), {}), ((3, 0, -1), {}), ((0, 1, 0.3), {}),
     ((1, 4), {"dtype": "int64"}), ((0.5, 2.5), {"dtype": "float64"})],
)  # fmt: skip
def test_range_includes_the_end_like_torch(args, kw):
    with pytest.warns(UserWarning, match="deprecated"):
        ours = tinyattn.range(*args, **{k: getattr(tinyattn, v) for k, v in kw.items()})
    step = args[2] if len(args) > 2 else 1
    assert ours.numel() == int(np.floor((args[1] - args[0]) / step)) + 1  # the end included
    assert ours[-1].item() == pytest.approx(args[0] + (ours.numel() - 1) * step)
    if torch is not None:
        with pytest.warns(UserWarning):
            theirs = torch.range(*args, **{k: getattr(torch, v) for k, v in kw.items()})
        assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_range_bad_input():
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="step must be nonzero"):
        tinyattn.range(0, 1, 0)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="inconsistent"):
        tinyattn.range(1, 0)
    with pytest.warns(UserWarning), pytest.raises(TypeError, match="'end' must be a number"):
        tinyattn.range(0, "3")
    with pytest.warns(UserWarning), pytest.raises(TypeError, match='"end"'):
        tinyattn.range(4)  # torch requires end too


def test_clip_grad_norm_alias_warns_and_clips():
    p = tinyattn.nn.Parameter(tinyattn.ones(3))
    p.grad = tinyattn.ones(3) * 2
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = tinyattn.nn.utils.clip_grad_norm([p], 1.0)
    assert abs(total.item() - np.sqrt(12)) < 1e-6
    assert abs(np.linalg.norm(p.grad.numpy()) - 1.0) < 1e-5


def test_cuda_synchronize_raises_like_a_cpu_build():
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        tinyattn.cuda.synchronize()
