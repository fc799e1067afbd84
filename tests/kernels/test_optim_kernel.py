"""The fused Adam kernel against its NumPy twin: bit for bit, serial and parallel launches."""

import numpy as np
import pytest

pytest.importorskip("numba")

from tinyattn.kernels import _numba_optim as kernels
from tinyattn.optim.adam import _adam_update_numpy, _coefficients

GROUPS = [
    dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0),
    dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),  # coupled L2
    dict(lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, decoupled_weight_decay=True),
    dict(lr=1e-2, betas=(0.3, 0.9), eps=1e-8, weight_decay=0.0),  # lerp from the gradient end
]


def _group(base: dict, amsgrad: bool, maximize: bool) -> dict:
    return dict(base, amsgrad=amsgrad, maximize=maximize)


def _state(n: int, dtype, seed: int = 0):
    rng = np.random.default_rng(seed)
    param = rng.standard_normal(n).astype(dtype)
    exp_avg = (0.1 * rng.standard_normal(n)).astype(dtype)
    exp_avg_sq = (0.01 * rng.random(n)).astype(dtype)
    max_exp_avg_sq = exp_avg_sq + (0.01 * rng.random(n)).astype(dtype)
    return [param, exp_avg, exp_avg_sq, max_exp_avg_sq]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("base", GROUPS)
@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("n", [7, 3 * kernels.CHUNK + 123])
def test_kernel_equals_twin_bit_for_bit(dtype, base, amsgrad, maximize, n):
    group = _group(base, amsgrad, maximize)
    rng = np.random.default_rng(1)
    ours, twins = _state(n, dtype), _state(n, dtype)
    kernel = kernels.adam_step_parallel if n > kernels.CHUNK else kernels.adam_step_serial
    for step in (1, 2, 3, 10):
        grad = rng.standard_normal(n).astype(dtype)
        c = _coefficients(group, float(step), np.dtype(dtype))
        p, m, v, vmax = ours
        kernel(p, grad, m, v, vmax if amsgrad else v, *c)
        _adam_update_numpy(twins[0], grad, twins[1], twins[2], twins[3] if amsgrad else None, c)
    for a, b in zip(ours, twins):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, b)


def test_kernel_nan_propagates_like_twin():
    group = _group(GROUPS[0], amsgrad=True, maximize=False)
    ours, twins = _state(5, np.float32), _state(5, np.float32)
    grad = np.array([1.0, np.nan, -2.0, np.inf, 0.0], dtype=np.float32)
    c = _coefficients(group, 1.0, np.dtype(np.float32))
    kernels.adam_step_serial(ours[0], grad, ours[1], ours[2], ours[3], *c)
    with np.errstate(invalid="ignore"):  # inf / inf in the step of the inf gradient
        _adam_update_numpy(twins[0], grad, twins[1], twins[2], twins[3], c)
    for a, b in zip(ours, twins):
        np.testing.assert_array_equal(a, b)  # NaN in the same places
    assert np.isnan(ours[0][1]) and np.isnan(ours[3][1])
