"""AdaptiveLogSoftmaxWithLoss against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import rand
from tests.nn._module_parity import module_parity

torch = pytest.importorskip("torch")


def _pair(head_bias=False):
    kw = dict(div_value=2.0, head_bias=head_bias)
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], **kw)
    o = tinyattn.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], **kw)
    return t, o


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_forward_and_gradients(dtype, head_bias):
    t, o = _pair(head_bias)
    assert repr(o) == repr(t)
    assert [(k, tuple(v.shape)) for k, v in o.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in t.state_dict().items()
    ]
    target = np.array([0, 4, 9, 2, 6, 5])  # head, both clusters
    module_parity(t, o, rand(6, 8, seed=1), target, dtype=dtype)
    module_parity(t, o, rand(3, 8, seed=2), np.array([0, 1, 2]), dtype=dtype)  # head only
    module_parity(t, o, rand(8, seed=3), np.array(7), dtype=dtype)  # unbatched


def test_adaptive_log_softmax_log_prob_and_predict():
    torch.manual_seed(0)
    t, o = _pair(head_bias=True)
    with torch.no_grad():  # the clusters' head entries win often: predict's full path runs
        t.head.bias.zero_()
        t.head.bias[3:] = 2.0
    o.load_state_dict(t.state_dict())
    t.double()
    o.double()
    x = rand(16, 8, seed=4) * 3
    full = o.log_prob(tinyattn.tensor(x))
    full = full.detach()
    np.testing.assert_allclose(full.numpy(), t.log_prob(torch.tensor(x)).detach().numpy())
    np.testing.assert_allclose(np.exp(full.numpy()).sum(1), 1.0)
    pred = o.predict(tinyattn.tensor(x))
    np.testing.assert_array_equal(pred.numpy(), t.predict(torch.tensor(x)).numpy())
    np.testing.assert_array_equal(pred.numpy(), full.numpy().argmax(1))
    assert (pred.numpy() >= 3).any() and (pred.numpy() < 3).any()  # both of predict's paths
    # forward's output is log_prob at the targets
    target = np.array([0, 3, 5, 9] * 4)
    out = o(tinyattn.tensor(x), tinyattn.tensor(target)).output
    np.testing.assert_allclose(out.detach().numpy(), full.numpy()[np.arange(16), target])


def test_adaptive_log_softmax_init_bounds():
    o = tinyattn.nn.AdaptiveLogSoftmaxWithLoss(16, 100, [10, 50])
    bound = 1 / 4  # Linear's U(-1/sqrt(in), 1/sqrt(in)), in = 16
    assert o.head.weight.shape == (12, 16) and np.abs(o.head.weight.detach().numpy()).max() <= bound
    assert o.tail[1][0].weight.shape == (1, 16)  # 16 // 4^2
    assert o.tail[1][1].weight.shape == (50, 1)


@pytest.mark.parametrize("cutoffs", [[3, 3], [0, 3], [3, 10], [6, 3], [2.5]])
def test_adaptive_log_softmax_bad_cutoffs(cutoffs):
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        tinyattn.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
    with pytest.raises(ValueError):
        torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
    with pytest.raises(ValueError, match="length larger than 0"):
        tinyattn.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [])


@pytest.mark.parametrize(
    "x_shape,target,match",
    [
        ((3, 8), [1, 2, 10], r"Target values should be in \[0, 9\].*\[1, 10\]"),
        ((3, 8), [1, 2], r"same size in the batch dimension.*\[3, 8\].*\[2\]"),
        ((3, 8), [[1, 2, 3]], "0D or 1D target tensor expected"),
        ((3, 8), [1, -1, 2], r"values in range \[-1, 2\]"),
        ((3, 2, 8), [1, 2, 3], r"1D target tensor expects 2D input.*\[3, 2, 8\]"),
    ],
)
def test_adaptive_log_softmax_bad_input(x_shape, target, match):
    t, o = _pair()
    with pytest.raises(RuntimeError, match=match):
        o(tinyattn.zeros(*x_shape), tinyattn.tensor(target))
    with pytest.raises(RuntimeError):
        t(torch.zeros(*x_shape), torch.tensor(target))
