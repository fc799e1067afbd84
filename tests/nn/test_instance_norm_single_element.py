"""instance_norm on one spatial element: torch raises ValueError whenever the input's
statistics are used (training, or eval without running stats), not only when running
stats are tracked; we returned zeros (+ bias). Found by the differential review against
torch 2.13."""

import pytest
from harness import torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")

SHAPES = [
    ("InstanceNorm1d", (2, 3, 1)),
    ("InstanceNorm2d", (2, 3, 1, 1)),
    ("InstanceNorm3d", (2, 3, 1, 1, 1)),
    ("InstanceNorm3d", (3, 1, 1, 1)),  # unbatched
]


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("name,shape", SHAPES)
def test_one_spatial_element_is_refused_without_running_stats(name, shape, affine, train):
    m = getattr(tinyattn.nn, name)(3, affine=affine).train(train)
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        m(tinyattn.ones(*shape))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        tinyattn.nn.functional.instance_norm(tinyattn.ones(2, 3, 1))


def test_running_stats_in_eval_still_normalise_one_element():
    m = tinyattn.nn.InstanceNorm3d(3, track_running_stats=True).eval()
    y = m(tinyattn.full((2, 3, 1, 1, 1), 2.0))
    assert abs(float(y.sum()) - 12.0 / (1 + 1e-5) ** 0.5) < 1e-4


@needs_torch
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("name,shape", SHAPES)
def test_torch_refuses_them_too(name, shape, train):
    with pytest.raises(ValueError):
        getattr(torch.nn, name)(3).train(train)(torch.ones(*shape))
