"""BatchNorm3d / LazyBatchNorm3d / InstanceNorm3d and F.batch_norm / F.instance_norm on 5-D
input against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand
from tests.nn._module_parity import module_parity

torch = pytest.importorskip("torch")

SHAPE = (2, 3, 2, 3, 2)


def test_batch_norm_5d_gradcheck_and_parity():
    def f(lib, x, w, b):
        return lib.nn.functional.batch_norm(x, None, None, w, b, training=True)

    check_op(f, rand(*SHAPE, seed=1), rand(3, seed=2), rand(3, seed=3))


def test_instance_norm_5d_gradcheck_and_parity():
    def f(lib, x, w, b):
        return lib.nn.functional.instance_norm(x, weight=w, bias=b)

    check_op(f, rand(*SHAPE, seed=4), rand(3, seed=5), rand(3, seed=6))


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm3d_follows_torch_in_train_and_eval(momentum):
    t = torch.nn.BatchNorm3d(3, momentum=momentum).double()
    o = tinyattn.nn.BatchNorm3d(3, momentum=momentum).double()
    assert repr(o) == repr(t)
    assert list(o.state_dict()) == list(t.state_dict())
    assert [k for k, _ in o.named_parameters()] == ["weight", "bias"]
    for step in range(3):
        x = rand(*SHAPE, seed=10 + step) * (step + 1) + step
        o(tinyattn.tensor(x))
        t(torch.tensor(x))
    for name, value in t.state_dict().items():
        np.testing.assert_allclose(o.state_dict()[name].numpy(), value.numpy(), rtol=1e-12)
    with torch.no_grad():
        t.weight.uniform_(0.5, 1.5)
        t.bias.uniform_(-0.5, 0.5)
    for dtype in (np.float64, np.float32):
        module_parity(t, o, rand(*SHAPE, seed=20), dtype=dtype, train=True)
        module_parity(t, o, rand(*SHAPE, seed=21), dtype=dtype, train=False)


def test_batchnorm3d_rejects_other_ranks_and_lazy_infers_features():
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        tinyattn.nn.BatchNorm3d(3)(tinyattn.zeros(3, 2, 2, 2))
    with pytest.raises(ValueError):
        torch.nn.BatchNorm3d(3)(torch.zeros(3, 2, 2, 2))
    lazy = tinyattn.nn.LazyBatchNorm3d()
    out = lazy(tinyattn.tensor(rand(*SHAPE, seed=7)).float())
    assert type(lazy).__name__ == "BatchNorm3d" and lazy.num_features == 3
    assert out.shape == SHAPE and lazy.running_mean.shape == (3,)


@pytest.mark.parametrize("shape", [SHAPE, SHAPE[1:]])
@pytest.mark.parametrize("affine,track", [(False, False), (True, True), (True, False)])
def test_instance_norm3d_module(shape, affine, track):
    kw = dict(affine=affine, track_running_stats=track, momentum=0.2)
    o, t = tinyattn.nn.InstanceNorm3d(3, **kw), torch.nn.InstanceNorm3d(3, **kw)
    assert repr(o) == repr(t)
    assert list(o.state_dict()) == list(t.state_dict())
    if affine:
        with torch.no_grad():
            t.weight.uniform_(0.5, 1.5)
            t.bias.uniform_(-0.5, 0.5)
    module_parity(t, o, rand(*shape, seed=8), train=True)
    for key, value in t.state_dict().items():
        np.testing.assert_allclose(o.state_dict()[key].numpy(), value.numpy(), rtol=1e-12)
    module_parity(t, o, rand(*shape, seed=9), train=False)


def test_instance_norm3d_rejects_other_ranks():
    with pytest.raises(ValueError, match=r"InstanceNorm3d.*4D or 5D.*3D"):
        tinyattn.nn.InstanceNorm3d(3)(tinyattn.zeros(3, 2, 2))
    with pytest.raises(ValueError):
        torch.nn.InstanceNorm3d(3)(torch.zeros(3, 2, 2))
