"""clip_grad_norm_ / clip_grad_value_ against torch's results."""

import math

import numpy as np
import pytest

import tinyattn
from tinyattn.nn.utils import clip_grad_norm_, clip_grad_value_

torch = pytest.importorskip("torch")


def _pair(dtype=np.float64, scale=1.0, with_none=True):
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (5,), (2, 2, 2)]
    grads = [scale * rng.standard_normal(s).astype(dtype) for s in shapes]
    ours, theirs = [], []
    for g in grads:
        p, q = (
            tinyattn.zeros(
                *g.shape,
                dtype=tinyattn.float64 if dtype == np.float64 else tinyattn.float32,
                requires_grad=True,
            ),
            torch.zeros(
                g.shape,
                dtype=torch.float64 if dtype == np.float64 else torch.float32,
                requires_grad=True,
            ),
        )
        p.grad, q.grad = tinyattn.tensor(g.copy()), torch.tensor(g.copy())
        ours.append(p)
        theirs.append(q)
    if with_none:  # parameters without a gradient are skipped
        ours.append(tinyattn.zeros(2, requires_grad=True))
        theirs.append(torch.zeros(2, requires_grad=True))
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_clip_grad_norm_matches_torch(norm_type, max_norm, dtype):
    ours, theirs = _pair(dtype)
    total_o = clip_grad_norm_(ours, max_norm, norm_type)
    total_t = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    rtol = 1e-10 if dtype == np.float64 else 1e-5
    assert total_o.dtype.name == str(total_t.dtype).replace("torch.", "")
    np.testing.assert_allclose(total_o.numpy(), total_t.numpy(), rtol=rtol)
    for p, q in zip(ours, theirs):
        if q.grad is None:
            assert p.grad is None
        else:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=rtol, atol=1e-12)


def test_clip_grad_norm_actually_clips_and_accepts_single_tensor():
    p = tinyattn.zeros(4, requires_grad=True)
    p.grad = tinyattn.tensor([3.0, 4.0, 0.0, 0.0])
    total = clip_grad_norm_(p, 1.0)
    assert total.item() == pytest.approx(5.0)
    assert np.linalg.norm(p.grad.numpy()) == pytest.approx(1.0, rel=1e-5)


def test_clip_grad_norm_nonfinite():
    p = tinyattn.zeros(2, requires_grad=True)
    p.grad = tinyattn.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert math.isinf(clip_grad_norm_([p], 1.0).item())


def test_clip_grad_norm_no_grads_returns_zero():
    assert clip_grad_norm_([tinyattn.zeros(2, requires_grad=True)], 1.0).item() == 0.0


def test_clip_grad_value_matches_torch():
    ours, theirs = _pair(scale=2.0)
    clip_grad_value_(ours, 0.7)
    torch.nn.utils.clip_grad_value_(theirs, 0.7)
    for p, q in zip(ours, theirs):
        if q.grad is not None:
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    assert max(np.abs(p.grad.numpy()).max() for p in ours if p.grad is not None) == 0.7
