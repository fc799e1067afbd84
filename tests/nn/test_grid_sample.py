"""F.affine_grid and F.grid_sample (2-D and 3-D) against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
from tests.harness import check_op, rand, run_gradcheck, run_parity

torch = pytest.importorskip("torch")
F = tinyattn.nn.functional


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 3, 4), (1, 2, 2, 3, 4), (1, 1, 1, 3)])
@pytest.mark.filterwarnings("ignore:Since version 1.3.0, affine_grid")
def test_affine_grid(align_corners, size):
    d = len(size) - 2

    def f(lib, theta):
        return lib.nn.functional.affine_grid(theta, size, align_corners=align_corners)

    check_op(f, rand(size[0], d, d + 1, seed=1))


def _sample(mode, padding_mode, align_corners):
    def f(lib, x, grid):
        return lib.nn.functional.grid_sample(
            x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        )

    return f


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_bilinear_2d(padding_mode, align_corners):
    f = _sample("bilinear", padding_mode, align_corners)
    check_op(f, rand(2, 2, 3, 4, seed=2), rand(2, 3, 2, 2, low=-1.6, high=1.6, seed=3))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_bicubic_2d(padding_mode, align_corners):
    f = _sample("bicubic", padding_mode, align_corners)
    check_op(f, rand(1, 2, 3, 4, seed=12), rand(1, 2, 3, 2, low=-1.6, high=1.6, seed=13))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_trilinear_3d(padding_mode, align_corners):
    f = _sample("bilinear", padding_mode, align_corners)
    check_op(f, rand(1, 2, 2, 3, 2, seed=4), rand(1, 2, 2, 1, 3, low=-1.5, high=1.5, seed=5))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("shape", [(2, 2, 3, 4), (1, 2, 2, 3, 2)])
def test_grid_sample_nearest_gives_the_grid_a_zero_gradient(padding_mode, align_corners, shape):
    d = len(shape) - 2
    grid = rand(shape[0], 3, 2, *([2] if d == 3 else []), d, low=-1.4, high=1.4, seed=6)
    f = _sample("nearest", padding_mode, align_corners)
    run_gradcheck(f, rand(*shape, seed=7), grid)
    run_parity(f, rand(*shape, seed=7), grid)
    x, g = tinyattn.tensor(rand(*shape, seed=7)), tinyattn.tensor(grid, requires_grad=True)
    f(tinyattn, x, g).sum().backward()
    assert g.grad is not None and not g.grad.numpy().any()


def test_grid_sample_size_one_input_dims():
    for align in (False, True):
        for pm in ("zeros", "border", "reflection"):
            f = _sample("bilinear", pm, align)
            run_parity(f, rand(1, 1, 1, 3, seed=8), rand(1, 2, 2, 2, low=-1.2, high=1.2, seed=9))


def test_affine_grid_then_grid_sample_identity():
    x = tinyattn.tensor(rand(1, 2, 3, 4, seed=10))
    theta = tinyattn.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=tinyattn.float64)
    for align in (False, True):
        grid = F.affine_grid(theta, (1, 2, 3, 4), align_corners=align)
        out = F.grid_sample(x, grid, align_corners=align)
        np.testing.assert_allclose(out.numpy(), x.numpy(), atol=1e-12)


def test_align_corners_none_warns_as_torch():
    theta = tinyattn.zeros(1, 2, 3)
    with pytest.warns(UserWarning, match="align_corners"):
        grid = F.affine_grid(theta, (1, 1, 2, 2))
    with pytest.warns(UserWarning, match="align_corners"):
        F.grid_sample(tinyattn.zeros(1, 1, 2, 2), grid)


BAD_GRID_SAMPLE = [
    ((1, 1, 3, 4), (1, 2, 2, 3), {}, RuntimeError, r"size 2 in last dimension.*\[1, 2, 2, 3\]"),
    ((1, 1, 3, 4), (2, 2, 2, 2), {}, RuntimeError, r"same batch size.*\[1, 1, 3, 4\].*\[2, 2, 2"),
    ((1, 1, 3, 4), (1, 2, 2, 2), dict(mode="foo"), ValueError, "mode .* but got: 'foo'"),
    ((1, 1, 3, 4), (1, 2, 2, 2), dict(padding_mode="foo"), ValueError, "padding_mode .*'foo'"),
    ((1, 3, 4), (1, 2, 2), {}, RuntimeError, r"4D or 5D input.*\[1, 3, 4\]"),
    ((1, 1, 3, 4), (1, 2, 2, 2, 2), {}, RuntimeError, r"same number of dim.*\[1, 2, 2, 2, 2\]"),
    ((1, 1, 2, 2, 2), (1, 2, 2, 2, 3), dict(mode="bicubic"), RuntimeError, "bicubic .* 4D input"),
]


@pytest.mark.parametrize("xs,gs,kw,error,match", BAD_GRID_SAMPLE)
def test_grid_sample_bad_input(xs, gs, kw, error, match):
    with pytest.raises(error, match=match):
        F.grid_sample(tinyattn.zeros(*xs), tinyattn.zeros(*gs), align_corners=False, **kw)
    with pytest.raises((RuntimeError, ValueError)):
        torch.nn.functional.grid_sample(
            torch.zeros(*xs), torch.zeros(*gs), align_corners=False, **kw
        )


def test_grid_sample_dtype_mismatch_and_types():
    with pytest.raises(RuntimeError, match="float64 and .*float32"):
        F.grid_sample(
            tinyattn.zeros(1, 1, 2, 2).double(), tinyattn.zeros(1, 1, 1, 2), align_corners=False
        )
    with pytest.raises(TypeError, match="grid"):
        F.grid_sample(tinyattn.zeros(1, 1, 2, 2), [[0.0, 0.0]], align_corners=False)


BAD_AFFINE = [
    ((1, 2, 3), (1, 1, 3), NotImplementedError, r"4D and 5D sizes.*\(1, 1, 3\)"),
    ((1, 3, 4), (1, 1, 3, 4), ValueError, r"shape \[1, 2, 3\].*got theta of shape \[1, 3, 4\]"),
    ((1, 2, 3), (2, 1, 3, 4), ValueError, r"\[2, 2, 3\].*\[1, 2, 3\]"),
    ((1, 2, 3), (1, 1, 0, 4), ValueError, r"positive output size.*\(1, 1, 0, 4\)"),
]


@pytest.mark.parametrize("ts,size,error,match", BAD_AFFINE)
def test_affine_grid_bad_input(ts, size, error, match):
    with pytest.raises(error, match=match):
        F.affine_grid(tinyattn.zeros(*ts), size, align_corners=False)
    with pytest.raises((RuntimeError, ValueError, NotImplementedError)):
        torch.nn.functional.affine_grid(torch.zeros(*ts), size, align_corners=False)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_empty_batch_and_empty_grid(mode):
    for x_shape, g_shape in (((0, 2, 3, 3), (0, 1, 2, 2)), ((1, 2, 3, 3), (1, 0, 2, 2))):
        shapes = []
        for lib in (tinyattn, torch):
            x = lib.ones(*x_shape, requires_grad=True)
            out = lib.nn.functional.grid_sample(
                x, lib.zeros(*g_shape), mode=mode, align_corners=False
            )
            out.sum().backward()
            shapes.append((tuple(out.shape), tuple(x.grad.shape)))
        assert shapes[0] == shapes[1]
