"""SyncBatchNorm (one process) and LazyInstanceNorm1d / 2d / 3d against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import rand
from tests.nn._module_parity import module_parity

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4), (2, 3, 2, 3), (2, 3, 2, 2, 2)])
def test_sync_batchnorm_is_batchnorm_in_one_process(shape):
    t, o = torch.nn.SyncBatchNorm(3, momentum=0.3), tinyattn.nn.SyncBatchNorm(3, momentum=0.3)
    assert repr(o) == repr(t)
    assert list(o.state_dict()) == list(t.state_dict())
    with torch.no_grad():
        t.weight.uniform_(0.5, 1.5)
        t.bias.uniform_(-0.5, 0.5)
    module_parity(t, o, rand(*shape, seed=1), train=True)
    o(tinyattn.tensor(rand(*shape, seed=2)))
    t(torch.tensor(rand(*shape, seed=2)))
    for key, value in t.state_dict().items():
        np.testing.assert_allclose(o.state_dict()[key].numpy(), value.numpy(), rtol=1e-12)
    module_parity(t, o, rand(*shape, seed=3), train=False)


def test_sync_batchnorm_bad_input():
    with pytest.raises(ValueError, match=r"at least 2D input \(got 1D input\)"):
        tinyattn.nn.SyncBatchNorm(3)(tinyattn.zeros(3))
    with pytest.raises(ValueError, match="at least 2D"):
        torch.nn.SyncBatchNorm(3)(torch.zeros(3))


def test_convert_sync_batchnorm_shares_state_and_skips_instance_norm():
    def model(nn):
        return nn.Sequential(
            nn.Conv2d(1, 2, 1),
            nn.BatchNorm2d(2),
            nn.InstanceNorm2d(2),
            nn.Sequential(nn.BatchNorm1d(4, affine=False)),
        )

    src = model(tinyattn.nn)
    src[1].running_mean._data[...] = 0.5
    src.eval()
    out = tinyattn.nn.SyncBatchNorm.convert_sync_batchnorm(src)
    ref = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model(torch.nn))
    assert [type(m).__name__ for m in out.modules()] == [type(m).__name__ for m in ref.modules()]
    assert repr(out) == repr(ref)
    assert out[1].weight is src[1].weight and out[1].running_mean is src[1].running_mean
    assert not out[1].training and out[2] is src[2]
    assert list(out.state_dict()) == list(ref.state_dict())


@pytest.mark.parametrize(
    "name,shape", [("LazyInstanceNorm1d", (2, 3, 5)), ("LazyInstanceNorm2d", (2, 3, 2, 3)),
                   ("LazyInstanceNorm3d", (2, 3, 2, 2, 2)), ("LazyInstanceNorm3d", (3, 2, 2, 2))],
)  # fmt: skip
def test_lazy_instance_norm_infers_num_features(name, shape):
    lazy, ref = getattr(tinyattn.nn, name)(), getattr(torch.nn, name)()
    assert repr(lazy) == repr(ref)
    assert list(lazy.state_dict()) == list(ref.state_dict())
    x = rand(*shape, seed=4)
    lazy(tinyattn.tensor(x).float())
    eager = name.replace("Lazy", "")
    assert type(lazy).__name__ == eager and lazy.num_features == 3
    assert lazy.weight.shape == (3,) and lazy.running_var.shape == (3,)
    twin = getattr(torch.nn, eager)(3, affine=True, track_running_stats=True)
    module_parity(twin, lazy, rand(*shape, seed=5), train=True)
    module_parity(twin, lazy, rand(*shape, seed=6), train=False)


def test_lazy_instance_norm_without_state_becomes_eager():
    lazy = tinyattn.nn.LazyInstanceNorm2d(affine=False, track_running_stats=False)
    out = lazy(tinyattn.tensor(rand(3, 2, 4, seed=7)))
    assert type(lazy).__name__ == "InstanceNorm2d" and lazy.num_features == 3
    ref = torch.nn.functional.instance_norm(torch.tensor(rand(3, 2, 4, seed=7)).unsqueeze(0))
    np.testing.assert_allclose(out.numpy(), ref.squeeze(0).numpy(), atol=1e-12)
