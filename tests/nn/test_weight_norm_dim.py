"""weight_norm with a dim out of the weight's range: torch raises IndexError ('Dimension
out of range'); we wrapped it (dim % ndim) and normalised along another dim. Found by
the differential review against torch 2.13."""

import pytest
from harness import torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")


def _conv(lib):
    return lib.nn.Conv2d(3, 4, 2)  # weight (4, 3, 2, 2)


@pytest.mark.parametrize("dim", [4, 5, -5, 7])
@pytest.mark.parametrize("parametrization", [False, True])
def test_weight_norm_refuses_a_dim_out_of_range(dim, parametrization):
    utils = tinyattn.nn.utils
    wrap = utils.parametrizations.weight_norm if parametrization else utils.weight_norm
    with pytest.raises(IndexError, match="out of range"):
        wrap(_conv(tinyattn), dim=dim)


@pytest.mark.parametrize("dim,g_shape", [(-4, (4, 1, 1, 1)), (3, (1, 1, 1, 2)), (-1, ())])
def test_weight_norm_dims_in_range_still_work(dim, g_shape):
    m = tinyattn.nn.utils.weight_norm(_conv(tinyattn), dim=dim)
    assert tuple(m.weight_g.shape) == g_shape


@needs_torch
@pytest.mark.parametrize("dim", [4, -5])
def test_torch_refuses_them_too(dim):
    with pytest.raises(IndexError):
        torch.nn.utils.weight_norm(_conv(torch), dim=dim)
