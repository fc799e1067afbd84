"""grid_sample corner cases found by a randomised differential review against torch 2.13:
the grid gradient of 'border'/'reflection' at exactly the first/last pixel, and non-finite
grid coordinates (torch's CPU kernels: 2-D and 3-D differ). torch's values are stored as
data (printed by torch 2.13.0 CPU), with a live comparison where torch is installed."""

import numpy as np
import pytest
from harness import torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")
NAN, INF = float("nan"), float("inf")

# grid points on the pixel centres at the ends (align_corners=True): x = +-1, y = 1
EDGE_GRID = [[[[1.0, 0.3], [-1.0, -0.2], [0.5, 1.0], [0.75, -1.0]]]]
EDGE_Y = [9.2, 4.2, 11.25, 3.625]
EDGE_DGRID = [0.0, 4.0, 0.0, 4.0, 1.5, 0.0, 1.5, 0.0]  # torch: 0 on the bounds


def _edge(lib, padding_mode):
    x = lib.arange(1.0, 13.0, dtype=lib.float64).reshape(1, 1, 3, 4)
    g = lib.tensor(EDGE_GRID, dtype=lib.float64, requires_grad=True)
    y = lib.nn.functional.grid_sample(x, g, padding_mode=padding_mode, align_corners=True)
    y.sum().backward()
    return y.detach().numpy().ravel(), g.grad.numpy().ravel()


@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
def test_grid_grad_is_zero_on_the_edge_pixels(padding_mode):
    # we gave one-sided slopes there (reflection: of the wrong sign), e.g. -0.495 for 0.0
    y, dgrid = _edge(tinyattn, padding_mode)
    np.testing.assert_allclose(y, EDGE_Y, atol=1e-12)
    np.testing.assert_allclose(dgrid, EDGE_DGRID, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
def test_grid_grad_on_the_edge_pixels_is_torchs(padding_mode):
    for ours, theirs in zip(_edge(tinyattn, padding_mode), _edge(torch, padding_mode)):
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


def test_identity_affine_grid_border_grad_is_torchs():
    # the spatial-transformer start (identity theta, align_corners=True) lands on the corners
    theta = tinyattn.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=tinyattn.float64)
    theta.requires_grad_(True)
    x = tinyattn.arange(1.0, 13.0, dtype=tinyattn.float64).reshape(1, 1, 3, 4)
    grid = tinyattn.nn.functional.affine_grid(theta, [1, 1, 3, 4], align_corners=True)
    out = tinyattn.nn.functional.grid_sample(x, grid, padding_mode="border", align_corners=True)
    out.sum().backward()
    # torch 2.13: theta.grad for this case
    np.testing.assert_allclose(
        theta.grad.numpy(), [[[0.0, 0.0, 9.0], [0.0, 0.0, 16.0]]], atol=1e-12
    )


# (mode, padding_mode) -> torch's outputs for x = NaN, inf, -inf (y = 0.3, z = -0.2), on
# arange(1, 13).reshape(1, 1, 3, 4) (2-D) and arange(1, 25).reshape(1, 1, 2, 3, 4) (3-D)
NONFINITE = {
    ("bilinear", "border"): ([6.8, 9.8, 6.8], [13.4, 13.4, 10.4]),
    ("bilinear", "reflection"): ([6.8, 6.8, 6.8], [13.4, 13.4, 13.4]),
    ("bilinear", "zeros"): (None, [0.0, 0.0, 0.0]),  # 2-D: NaN in torch and here
    ("nearest", "zeros"): ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]),
    ("nearest", "border"): ([5.0, 8.0, 5.0], [8.0, 8.0, 5.0]),
    ("nearest", "reflection"): ([5.0, 5.0, 5.0], [8.0, 8.0, 8.0]),
}


def _nonfinite(lib, mode, padding_mode, d):
    shape = (1, 1, 3, 4) if d == 2 else (1, 1, 2, 3, 4)
    x = lib.arange(1.0, 1.0 + int(np.prod(shape)), dtype=lib.float64).reshape(*shape)
    rows = [[v, 0.3, -0.2][:d] for v in (NAN, INF, -INF)]
    g = lib.tensor(rows, dtype=lib.float64).reshape(*((1,) * (d - 1)), 3, d)
    g = g.reshape(1, *((1,) * (d - 1)), 3, d)
    y = lib.nn.functional.grid_sample(
        x, g, mode=mode, padding_mode=padding_mode, align_corners=False
    )
    return y.numpy().ravel()


@pytest.mark.parametrize("key", sorted(NONFINITE))
@pytest.mark.parametrize("d", [2, 3])
def test_nonfinite_grid_coordinates(key, d):
    # we gave NaN (3-D zeros, 2-D/3-D border and reflection) or sampled the wrong pixel
    want = NONFINITE[key][d - 2]
    got = _nonfinite(tinyattn, *key, d)
    if want is None:
        assert np.isnan(got).all()
    else:
        np.testing.assert_allclose(got, want, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("key", sorted(NONFINITE))
@pytest.mark.parametrize("d", [2, 3])
def test_nonfinite_grid_coordinates_are_torchs(key, d):
    np.testing.assert_allclose(_nonfinite(tinyattn, *key, d), _nonfinite(torch, *key, d), atol=1e-6)
