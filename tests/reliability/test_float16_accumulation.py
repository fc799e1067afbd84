"""float16 accumulates as torch does: sums, squares and running products in float32.

Every case below feeds float16 values whose squares, partial sums or partial products
leave float16's range (65504), or whose running sum stalls in float16 (2048 + 1 rounds
to 2048), while the result itself fits. The float16 forward and the float16 gradient
(for a fixed upstream gradient) must be the exact result rounded once:

- against a float64 NumPy formula of the forward (always, torch or not), and the float64
  gradient of the same op (tinyattn's float64 gradients are held to finite differences
  by the gradchecks in tests/ops and tests/nn);
- against torch in float16, forward and gradients, where torch is installed.

docs/float16.md holds the audit's table: op, torch's accumulation dtype, tinyattn's.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tinyattn

try:
    import torch
except ImportError:  # the NumPy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity: torch is not installed")

H = np.float16
RTOL = 5e-3  # a few float16 ulps (eps 9.8e-4): the result rounded once, not at each step


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _spread(shape, std: float, seed: int) -> np.ndarray:
    """float16 values of standard deviation ``std`` (std 400: squares near 160000)."""
    return (_rng(seed).standard_normal(shape) * std).astype(H)


def _affine(n: int, seed: int) -> np.ndarray:
    return (1 + 0.5 * _rng(seed).standard_normal(n)).astype(H)


# ±30000: any two of one sign sum past 65504; the totals below are 0 or small
CANCELLING = np.array(
    [[30000, -1], [30000, 2], [30000, -3], [-30000, 4], [-30000, 5], [-30000, 6]], H
)
PRODUCTS = np.array([300, 300, 1 / 300, 1 / 300], H)  # 300 * 300 = 90000 overflows
ONES = np.ones((3000, 2), H)  # a float16 running sum stalls at 2048


# -- float64 NumPy references of the forwards ---------------------------------------------------
def _normalised(x, axes, eps):
    mean = x.mean(axes, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(axes, keepdims=True) + eps)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _attention(q, k, v, scale=None, causal=False):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape[-2:], bool)), scores, -np.inf)
    return _softmax(scores, -1) @ v


def _group_norm_ref(x, w, b, groups):
    n, c = x.shape[:2]
    y = _normalised(x.reshape(n, groups, -1), (-1,), 1e-5).reshape(x.shape)
    return y * w[None, :, None] + b[None, :, None]


# name: (f(lib, *tensors), float16 inputs, float64 NumPy reference of the forward, upstream)
# upstream "ones" sums the output's gradient as it is (the broadcast case); else random
CASES = {
    # the failures this file was written for
    "var": (lambda L, x: x.var(1), [_spread((4, 8), 100, 1)], lambda x: x.var(1, ddof=1), None),
    "std": (lambda L, x: x.std(1), [_spread((4, 8), 400, 2)], lambda x: x.std(1, ddof=1), None),
    "norm": (
        lambda L, x: x.norm(dim=1),
        [_spread((4, 8), 400, 3)],
        lambda x: np.linalg.norm(x, axis=1),
        None,
    ),
    "linalg.vector_norm p=3": (
        lambda L, x: L.linalg.vector_norm(x, 3, dim=1),
        [_spread((4, 8), 400, 4)],
        lambda x: (np.abs(x) ** 3).sum(1) ** (1 / 3),
        None,
    ),
    "linalg.matrix_norm": (
        lambda L, x: L.linalg.matrix_norm(x),
        [_spread((4, 8), 400, 5)],
        lambda x: np.linalg.norm(x),
        None,
    ),
    "dist": (
        lambda L, x, y: L.dist(x, y),
        [_spread((4, 8), 200, 6), _spread((4, 8), 200, 7)],
        lambda x, y: np.linalg.norm(x - y),
        None,
    ),
    "F.normalize": (
        lambda L, x: L.nn.functional.normalize(x, dim=1),
        [_spread((4, 8), 400, 8)],
        lambda x: x / np.linalg.norm(x, axis=1, keepdims=True),
        None,
    ),
    "F.cosine_similarity": (
        lambda L, x, y: L.nn.functional.cosine_similarity(x, y, dim=1),
        [_spread((4, 8), 400, 9), _spread((4, 8), 400, 10)],
        lambda x, y: (x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1),
        None,
    ),
    "F.layer_norm": (
        lambda L, x, w, b: L.nn.functional.layer_norm(x, (8,), w, b),
        [_spread((4, 8), 400, 11), _affine(8, 12), _affine(8, 13)],
        lambda x, w, b: _normalised(x, (1,), 1e-5) * w + b,
        None,
    ),
    "F.rms_norm": (
        lambda L, x, w: L.nn.functional.rms_norm(x, (8,), w),
        [_spread((4, 8), 400, 14), _affine(8, 15)],
        lambda x, w: x / np.sqrt((x * x).mean(1, keepdims=True) + np.finfo(H).eps) * w,
        None,
    ),
    "F.group_norm": (
        lambda L, x, w, b: L.nn.functional.group_norm(x, 2, w, b),
        [_spread((2, 4, 4), 400, 16), _affine(4, 17), _affine(4, 18)],
        lambda x, w, b: _group_norm_ref(x, w, b, 2),
        None,
    ),
    "F.batch_norm": (
        lambda L, x, w, b: L.nn.functional.batch_norm(x, None, None, w, b, training=True),
        [_spread((8, 4), 400, 19), _affine(4, 20), _affine(4, 21)],
        lambda x, w, b: _normalised(x, (0,), 1e-5) * w + b,
        None,
    ),
    "F.instance_norm": (
        lambda L, x, w, b: L.nn.functional.instance_norm(x, weight=w, bias=b),
        [_spread((2, 4, 6), 400, 22), _affine(4, 23), _affine(4, 24)],
        lambda x, w, b: _group_norm_ref(x, w, b, 4),
        None,
    ),
    # the audit: the other reductions, forward and backward
    "sum over dim 0": (lambda L, x: x.sum(0), [CANCELLING], lambda x: x.sum(0), None),
    "sum of 3000 ones": (lambda L, x: x.sum(0), [ONES], lambda x: x.sum(0), None),
    "sum of all": (lambda L, x: x.sum(), [CANCELLING], lambda x: x.sum(), None),
    "mean over dim 0": (lambda L, x: x.mean(0), [CANCELLING], lambda x: x.mean(0), None),
    "nansum": (lambda L, x: L.nansum(x, 0), [CANCELLING], lambda x: x.sum(0), None),
    "nanmean": (lambda L, x: L.nanmean(x, 0), [CANCELLING], lambda x: x.mean(0), None),
    "var_mean": (
        lambda L, x: L.var_mean(x, 1)[0],
        [_spread((4, 8), 100, 25)],
        lambda x: x.var(1, ddof=1),
        None,
    ),
    "std_mean": (
        lambda L, x: L.std_mean(x, 1)[0],
        [_spread((4, 8), 400, 26)],
        lambda x: x.std(1, ddof=1),
        None,
    ),
    "prod": (lambda L, x: x.prod(), [PRODUCTS], lambda x: x.prod(), None),
    "cumsum": (lambda L, x: x.cumsum(0), [CANCELLING], lambda x: x.cumsum(0), None),
    "cumsum of 3000 ones": (lambda L, x: x.cumsum(0), [ONES], lambda x: x.cumsum(0), None),
    "cumprod": (lambda L, x: x.cumprod(0), [PRODUCTS], lambda x: x.cumprod(0), "forward"),
    "logcumsumexp": (
        lambda L, x: L.logcumsumexp(x, 0),
        [np.zeros(3000, H)],
        lambda x: np.log(np.arange(1, 3001)),
        None,
    ),
    "logsumexp": (
        lambda L, x: L.logsumexp(x, 0),
        [np.zeros((3000, 2), H)],
        lambda x: np.log(np.full(2, 3000.0)),
        None,
    ),
    "softmax": (
        lambda L, x: L.softmax(x, 0),
        [np.zeros((3000, 2), H)],
        lambda x: _softmax(x, 0),
        None,
    ),
    "log_softmax": (
        lambda L, x: L.log_softmax(x, 0),
        [np.zeros((3000, 2), H)],
        lambda x: np.log(_softmax(x, 0)),
        None,
    ),
    "broadcast gradient (x + b)": (lambda L, x, b: x + b, [ONES, np.zeros(2, H)], np.add, "ones"),
    "div gradient (x / y, y > 256)": (
        lambda L, x, y: x / y,
        [_spread((8,), 400, 27), (np.abs(_spread((8,), 400, 28)) + 300).astype(H)],
        np.divide,
        None,
    ),
    "F.mse_loss": (
        lambda L, x, y: L.nn.functional.mse_loss(x, y),
        [(_rng(29).uniform(150, 180, 64)).astype(H), np.zeros(64, H)],
        lambda x, y: ((x - y) ** 2).mean(),
        None,
    ),
    "F.l1_loss": (
        lambda L, x, y: L.nn.functional.l1_loss(x, y),
        [(_rng(35).uniform(2000, 3000, (64, 2))).astype(H), np.zeros((64, 2), H)],
        lambda x, y: np.abs(x - y).mean(),
        None,
    ),
    "F.smooth_l1_loss": (
        lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y),
        [(_rng(36).uniform(2000, 3000, (64, 2))).astype(H), np.zeros((64, 2), H)],
        lambda x, y: (np.abs(x - y) - 0.5).mean(),
        None,
    ),
    "F.kl_div": (
        lambda L, x, y: L.nn.functional.kl_div(x, y, reduction="mean"),
        [(-_rng(37).uniform(2000, 3000, (64, 2))).astype(H), np.ones((64, 2), H)],
        lambda x, y: (y * (np.log(y) - x)).mean(),
        None,
    ),
    "F.binary_cross_entropy_with_logits": (
        lambda L, x, y: L.nn.functional.binary_cross_entropy_with_logits(x, y),
        [(-_rng(38).uniform(2000, 3000, (64, 2))).astype(H), np.ones((64, 2), H)],
        lambda x, y: np.logaddexp(0, -x).mean(),
        None,
    ),
    "F.nll_loss": (
        lambda L, x: L.nn.functional.nll_loss(x, L.tensor(np.zeros(3000, np.int64))),
        [np.full((3000, 2), -1.0, H)],
        lambda x: -x[:, 0].mean(),
        None,
    ),
    "matmul, 3000 terms": (
        lambda L, a, b: a @ b,
        [np.ones((2, 3000), H), np.ones((3000, 2), H)],
        np.matmul,
        None,
    ),
    "matmul, cancelling terms": (
        lambda L, a, b: a @ b,
        [np.array([[300, 300, 1]], H), np.array([[300], [-300], [7]], H)],
        np.matmul,
        None,
    ),
    "F.avg_pool2d": (
        lambda L, x: L.nn.functional.avg_pool2d(x, 2),
        [(_rng(39).uniform(29000, 30000, (1, 2, 4, 4))).astype(H)],
        lambda x: x.reshape(1, 2, 2, 2, 2, 2).mean((3, 5)),
        None,
    ),
    "F.adaptive_avg_pool1d": (
        lambda L, x: L.nn.functional.adaptive_avg_pool1d(x, 1),
        [(_rng(48).uniform(29000, 30000, (1, 2, 8))).astype(H)],
        lambda x: x.mean(-1, keepdims=True),
        None,
    ),
    "F.conv2d, cancelling products": (
        lambda L, x, w: L.nn.functional.conv2d(x, w),
        [np.full((1, 1, 3, 3), 300, H), np.array([[[[300, 300], [-300, -299]]]], H)],
        lambda x, w: np.full((1, 1, 2, 2), 300.0),
        None,
    ),
    "F.embedding_bag, mean": (
        lambda L, w: L.nn.functional.embedding_bag(
            L.tensor([0, 1, 2, 3]), w, L.tensor([0]), mode="mean"
        ),
        [(_rng(49).uniform(29000, 30000, (4, 2))).astype(H)],
        lambda w: w.mean(0, keepdims=True),
        None,
    ),
    "F.cross_entropy, 3000 classes": (
        lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([0, 2999])),
        [np.zeros((2, 3000), H)],
        lambda x: np.log(3000.0),
        None,
    ),
    "SDPA, q.k above 65504": (
        lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v),
        [
            np.array([[[180, 180, 180, 1]]], H),
            np.array([[[180, 180, 180, 0], [180, 180, 180, 1]]], H),
            _spread((1, 2, 4), 1, 30),
        ],
        _attention,
        None,
    ),
    "SDPA, 3000 keys": (
        lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v),
        [np.zeros((1, 1, 4), H), np.zeros((1, 3000, 4), H), _spread((1, 3000, 4), 1, 31)],
        _attention,
        None,
    ),
    "SDPA, causal + scale": (
        lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True, scale=0.25
        ),
        [
            _spread((1, 2, 3, 4), 130, 32),
            _spread((1, 2, 3, 4), 130, 33),
            _spread((1, 2, 3, 4), 1, 34),
        ],
        lambda q, k, v: _attention(q, k, v, 0.25, causal=True),
        None,
    ),
}

# Where torch overflows and tinyattn does not (docs/float16.md): torch's CPU prod multiplies
# float16 in float16 (300 * 300: inf), where tinyattn keeps the running product in float32
# as torch's own cumprod does; torch's p-norm gradient (p not 1, 2, inf) raises the norm to
# p - 1 in float16 (NaN), where tinyattn computes it in float32. The test checks that torch
# still does so: if it stops, the table must change.
TORCH_OVERFLOWS = {
    "prod": "forward",
    "linalg.vector_norm p=3": "gradient",
    "F.embedding_bag, mean": "forward",  # torch sums the bag in float16, then divides
}


# The query gradient of attention is scale * sum_j dS_j k_j with sum_j dS_j = 0: with keys
# of size 180 the terms cancel to near 0, and dS comes from the float16-rounded output
# (rowsum(dO * O), in torch as here), so the result holds a few ulps of the terms' size,
# not of its own. These cases measure every gradient against the largest of the case's.
JOINT_GRADIENT_SCALE = {"SDPA, q.k above 65504", "SDPA, causal + scale"}


def _upstream(shape, kind, seed: int = 99) -> np.ndarray:
    if kind == "ones":
        return np.ones(shape, H)
    return _rng(seed).standard_normal(shape).astype(H)


def _run(lib, case: str, dtype):
    """The case's output and the gradient of each input, as float64 NumPy arrays."""
    f, arrays, _, upstream = CASES[case]
    xs = [lib.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    y = f(lib, *xs)
    assert str(y.dtype).endswith(np.dtype(dtype).name), f"{case}: output dtype {y.dtype}"
    out = y.detach().numpy().astype(np.float64)
    if upstream == "forward":
        return out, []
    y.backward(lib.tensor(_upstream(tuple(y.shape), upstream).astype(dtype)))
    for x in xs:
        assert str(x.grad.dtype).endswith(np.dtype(dtype).name), f"{case}: grad {x.grad.dtype}"
    return out, [x.grad.numpy().astype(np.float64) for x in xs]


def _assert_rounded_once(actual: np.ndarray, exact, what: str, scale: float = 0.0) -> None:
    """``actual`` (float16 values) is ``exact`` rounded to float16, up to a few ulps (of
    the largest exact value, or of ``scale`` if larger); an exact value beyond float16's
    range must be inf there, as rounding makes it."""
    with np.errstate(over="ignore"):  # beyond 65504: inf, as rounding to float16 gives
        expected = np.asarray(np.asarray(exact, np.float64).astype(H), np.float64)
    expected = np.broadcast_to(expected, actual.shape)
    finite = np.isfinite(expected)
    assert np.array_equal(np.isfinite(actual), finite), f"{what}: {actual} != {expected}"
    assert np.array_equal(actual[~finite], expected[~finite]), f"{what}: {actual} != {expected}"
    scale = max(scale, np.abs(expected[finite]).max(initial=0.0))
    np.testing.assert_allclose(
        actual[finite], expected[finite], rtol=RTOL, atol=RTOL * scale, err_msg=what
    )


@pytest.mark.parametrize("case", list(CASES))
def test_float16_forward_is_the_exact_result_rounded_once(case):
    _, arrays, reference, _ = CASES[case]
    out, _ = _run(tinyattn, case, H)
    exact = reference(*(a.astype(np.float64) for a in arrays))
    _assert_rounded_once(out, exact, f"{case} forward")


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][3] != "forward"])
def test_float16_gradient_is_the_float64_gradient_rounded_once(case):
    _, grads = _run(tinyattn, case, H)
    _, exact = _run(tinyattn, case, np.float64)
    scale = _joint_scale(case, exact)
    for i, (grad, reference) in enumerate(zip(grads, exact)):
        _assert_rounded_once(grad, reference, f"{case} gradient of input {i}", scale)


def _joint_scale(case: str, grads: list) -> float:
    if case not in JOINT_GRADIENT_SCALE:
        return 0.0
    return max(float(np.abs(g[np.isfinite(g)]).max(initial=0.0)) for g in grads)


@needs_torch
@pytest.mark.parametrize("case", list(CASES))
def test_float16_matches_torch(case):
    out, grads = _run(tinyattn, case, H)
    if TORCH_OVERFLOWS.get(case) == "forward":
        torch_out = CASES[case][0](torch, *(torch.tensor(a) for a in CASES[case][1]))
        assert not torch.isfinite(torch_out).all() and np.isfinite(out).all()
        return
    torch_out, torch_grads = _run(torch, case, H)
    _assert_rounded_once(out, torch_out, f"{case} forward against torch")
    if TORCH_OVERFLOWS.get(case) == "gradient":
        assert not all(np.isfinite(g).all() for g in torch_grads)
        assert all(np.isfinite(g).all() for g in grads)
        return
    scale = _joint_scale(case, torch_grads)
    for i, (grad, reference) in enumerate(zip(grads, torch_grads)):
        _assert_rounded_once(grad, reference, f"{case} gradient of input {i} against torch", scale)


# -- the instances beyond single ops: clipping, modules, optimizers, attention modules ----------
def _clip(lib, grads: list, max_norm: float):
    params = [lib.zeros(g.shape, dtype=lib.float16, requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = lib.tensor(g)
    total = lib.nn.utils.clip_grad_norm_(params, max_norm)
    return float(total), [p.grad.numpy().astype(np.float64) for p in params]


# float16 gradients of total norm ~9000: each square fits below 65504 only under 256
CLIPPED = [_spread((600,), 300, 40), _spread((300,), 300, 41)]


def test_clip_grad_norm_of_float16_gradients_is_finite_and_clips():
    total, clipped = _clip(tinyattn, CLIPPED, 1.0)
    exact = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in CLIPPED))
    _assert_rounded_once(np.array([total]), exact, "total norm")
    for g, c in zip(CLIPPED, clipped):
        _assert_rounded_once(c, g.astype(np.float64) / exact, "clipped gradient")


@needs_torch
def test_clip_grad_norm_of_float16_gradients_matches_torch():
    total, clipped = _clip(tinyattn, CLIPPED, 1.0)
    torch_total, torch_clipped = _clip(torch, CLIPPED, 1.0)
    assert total == torch_total
    for c, t in zip(clipped, torch_clipped):
        _assert_rounded_once(c, t, "clipped gradient against torch")


def _layer_norm_module(lib, dtype, x: np.ndarray):
    module = lib.nn.LayerNorm(8)
    with lib.no_grad():
        module.weight.copy_(lib.tensor(_affine(8, 42)))
        module.bias.copy_(lib.tensor(_affine(8, 43)))
    module = module.half() if dtype == H else module.double()
    y = module(lib.tensor(x.astype(dtype)))
    y.backward(lib.tensor(_upstream(x.shape, None).astype(dtype)))
    return [
        t.detach().numpy().astype(np.float64) for t in (y, module.weight.grad, module.bias.grad)
    ]


def test_layer_norm_module_in_half_normalises_and_learns():
    x = _spread((4, 8), 400, 44)
    half = _layer_norm_module(tinyattn, H, x)
    exact = _layer_norm_module(tinyattn, np.float64, x)
    for what, a, e in zip(("output", "weight gradient", "bias gradient"), half, exact):
        _assert_rounded_once(a, e, f"nn.LayerNorm(8).half() {what}")
    assert np.abs(half[1]).max() > 0.1  # the affine gradients are not zeroed


@needs_torch
def test_layer_norm_module_in_half_matches_torch():
    x = _spread((4, 8), 400, 44)
    for what, a, t in zip(
        ("output", "weight gradient", "bias gradient"),
        _layer_norm_module(tinyattn, H, x),
        _layer_norm_module(torch, H, x),
    ):
        _assert_rounded_once(a, t, f"nn.LayerNorm(8).half() {what} against torch")


OPTIMIZERS = {
    "SGD": {"lr": 0.1, "momentum": 0.9},
    "Adam": {"lr": 0.1},
    "AdamW": {"lr": 0.1, "amsgrad": True},
    "RMSprop": {"lr": 0.01},
    "Adagrad": {"lr": 0.1},
}
# gradients whose squares overflow float16 (300^2 = 90000): optimizers square them
OPTIMIZED_GRAD = np.array([300.0, -250.0, 1e-3, 2.0], H)


def _optimized(lib, name: str):
    p = lib.nn.Parameter(lib.tensor(np.array([1.0, 2.0, 3.0, 4.0], H)))
    opt = getattr(lib.optim, name)([p], **OPTIMIZERS[name])
    for _ in range(2):
        p.grad = lib.tensor(OPTIMIZED_GRAD)
        opt.step()
    state = {k: v for k, v in opt.state[p].items() if getattr(v, "ndim", 0) > 0}
    return p.detach().numpy().astype(np.float64), state


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_state_of_half_parameters_is_half(name):
    _, state = _optimized(tinyattn, name)
    assert state and all(v.dtype == tinyattn.float16 for v in state.values()), state


def test_adam_squares_a_float16_gradient_in_float32():
    p = tinyattn.nn.Parameter(tinyattn.tensor(np.array([1.0, 2.0], H)))
    opt = tinyattn.optim.Adam([p], lr=0.1)
    p.grad = tinyattn.tensor(np.array([300.0, -250.0], H))
    opt.step()
    exp_avg_sq = opt.state[p]["exp_avg_sq"].numpy().astype(np.float64)
    _assert_rounded_once(exp_avg_sq, 0.001 * np.array([300.0, 250.0]) ** 2, "exp_avg_sq")
    _assert_rounded_once(p.detach().numpy().astype(np.float64), [0.9, 2.1], "parameter")


@needs_torch
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_step_on_half_parameters_matches_torch(name):
    param, state = _optimized(tinyattn, name)
    torch_param, torch_state = _optimized(torch, name)
    np.testing.assert_array_equal(param, torch_param)
    assert set(state) == set(torch_state)
    for key, value in state.items():
        assert str(torch_state[key].dtype) == "torch.float16"
        np.testing.assert_array_equal(value.numpy(), torch_state[key].numpy(), err_msg=key)


def _mha(lib, dtype, x: np.ndarray):
    rng = _rng(45)
    module = lib.nn.MultiheadAttention(8, 2)
    weights = {
        "in_proj_weight": rng.standard_normal((24, 8)),
        "in_proj_bias": rng.standard_normal(24),
        "out_proj.weight": rng.standard_normal((8, 8)) * 0.3,
        "out_proj.bias": rng.standard_normal(8),
    }
    module.load_state_dict({k: lib.tensor(v.astype(H)) for k, v in weights.items()})
    module = module.half() if dtype == H else module.double()
    query = lib.tensor(x.astype(dtype), requires_grad=True)
    out, _ = module(query, query, query)
    out.backward(lib.tensor(_upstream(out.shape, None).astype(dtype)))
    grads = (query.grad, module.in_proj_weight.grad)
    return [t.detach().numpy().astype(np.float64) for t in (out, *grads)]


MHA_INPUT = _spread((3, 1, 8), 25, 46)  # q.k reaches ~1e5 before the 1/sqrt(4) scale


def test_multihead_attention_in_half_is_the_float64_result_rounded():
    half = _mha(tinyattn, H, MHA_INPUT)
    exact = _mha(tinyattn, np.float64, MHA_INPUT)
    for what, a, e in zip(("output", "input gradient", "in_proj gradient"), half, exact):
        _assert_rounded_once(a, e, f"MultiheadAttention {what}", np.abs(e).max())


@needs_torch
def test_multihead_attention_in_half_matches_torch():
    half, theirs = _mha(tinyattn, H, MHA_INPUT), _mha(torch, H, MHA_INPUT)
    for what, a, t in zip(("output", "input gradient", "in_proj gradient"), half, theirs):
        _assert_rounded_once(a, t, f"MultiheadAttention {what} against torch", np.abs(t).max())


@needs_torch
@pytest.mark.parametrize("reduction", ["nll_loss mean", "kl_div batchmean"])
def test_losses_round_their_total_before_dividing_as_torch(reduction):
    """torch sums these losses in float32 but rounds the total to float16 before dividing
    by the count: a total past 65504 gives inf even where the mean would fit. tinyattn
    gives what torch gives (docs/float16.md)."""

    def loss(lib):
        F = lib.nn.functional
        if reduction == "nll_loss mean":
            return F.nll_loss(lib.tensor(np.full((64, 3), -1500.0, H)), lib.tensor([0] * 64))
        x = lib.tensor(np.full((64, 2), -2000.0, H))
        return F.kl_div(x, lib.tensor(np.ones((64, 2), H)), reduction="batchmean")

    assert float(loss(tinyattn)) == float(loss(torch))


def test_every_case_is_a_row_of_the_table_in_the_docs():
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "float16.md").read_text()
    for case in CASES:
        op = case.split()[0].strip(",").removeprefix("F.")
        assert op in doc, f"{case}: no row for {op} in docs/float16.md"


# -- the rule itself ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "f",
    [lambda L, x: x.norm(), lambda L, x: L.nn.functional.layer_norm(x, (8,)).pow(3).sum()],
    ids=["norm", "layer_norm"],
)
def test_second_order_gradients_in_half(f):
    x64 = _spread((4, 8), 400, 47).astype(np.float64)

    def hessian_vector(dtype):
        x = tinyattn.tensor(x64.astype(dtype), requires_grad=True)
        (grad,) = tinyattn.autograd.grad(f(tinyattn, x), x, create_graph=True)
        (grad * tinyattn.tensor(_upstream(x.shape, None).astype(dtype))).sum().backward()
        return x.grad.numpy().astype(np.float64)

    exact = hessian_vector(np.float64)
    _assert_rounded_once(hessian_vector(H), exact, "Hessian-vector product", np.abs(exact).max())


def test_float32_and_float64_calls_pass_straight_through():
    for dtype in (tinyattn.float32, tinyattn.float64):
        x = tinyattn.ones(3, dtype=dtype, requires_grad=True)
        assert x.sum().grad_fn.name() == "SumBackward0"
        assert tinyattn.nn.functional.layer_norm(x, (3,)).grad_fn.name() == "LayerNormBackward0"


def test_an_explicit_dtype_chooses_the_computation():
    x = tinyattn.ones(3000, dtype=tinyattn.float16)
    assert x.sum(dtype=tinyattn.float32).dtype == tinyattn.float32
    assert float(x.sum(dtype=tinyattn.float32)) == 3000.0
    assert tinyattn.softmax(x, 0, dtype=tinyattn.float32).dtype == tinyattn.float32
    assert x.sum().dtype == tinyattn.float16 and float(x.sum()) == 3000.0
