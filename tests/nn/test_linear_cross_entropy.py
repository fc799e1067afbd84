"""linear_cross_entropy (reference and chunked paths), LinearCrossEntropyOptions and
LinearCrossEntropyLoss: gradchecks (first and second order), torch parity against both of
torch's paths, chunk sizes, memory (no full logits), reprs and bad input."""

import tracemalloc
import warnings

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, rand, run_parity, torch

import tinyattn
from tests.nn._module_parity import module_parity

needs_torch = pytest.mark.skipif(torch is None, reason="torch parity")
TARGET = np.array([0, 3, -100, 2, 1, 3, 4])


def _options(lib, **kw):
    return lib.nn.LinearCrossEntropyOptions(**kw)


def _chunked_here_reference_in_torch(chunk, **kw):
    """tinyattn's chunked path against torch's reference path (same math, every order)."""

    def f(T, x, w, *rest):
        b = rest[0] if rest else None
        opts = _options(T, batch_chunk_size=chunk) if T is tinyattn else None
        return T.nn.functional.linear_cross_entropy(
            x, w, T.tensor(TARGET), linear_bias=b, options=opts, **kw
        )

    return f


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk", [1, 3, 7])
@pytest.mark.parametrize("bias", [False, True])
def test_chunked_path(reduction, chunk, bias):
    arrays = [rand(7, 3, seed=1), rand(5, 3, seed=2)] + ([rand(5, seed=3)] if bias else [])
    check_op(_chunked_here_reference_in_torch(chunk, reduction=reduction), *arrays)


def test_chunked_path_with_class_weights():
    weight = np.array([0.5, 1.0, 2.0, 0.25, 1.5])

    def f(T, x, w):
        opts = _options(T, batch_chunk_size=2) if T is tinyattn else None
        return T.nn.functional.linear_cross_entropy(
            x, w, T.tensor(TARGET), weight=T.tensor(weight).to(x.dtype), options=opts
        )

    check_op(f, rand(7, 3, seed=4), rand(5, 3, seed=5))


@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_first_order_parity_with_torch_chunked_path(reduction):
    def f(T, x, w, b):
        return T.nn.functional.linear_cross_entropy(
            x,
            w,
            T.tensor(TARGET),
            linear_bias=b,
            reduction=reduction,
            options=_options(T, batch_chunk_size=3),
        )

    run_parity(f, rand(7, 3, seed=6), rand(5, 3, seed=7), rand(5, seed=8))


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(reduction="none", label_smoothing=0.2),
        dict(ignore_index=3, reduction="sum"),
    ],
)
def test_reference_path(kw):
    target = np.where(TARGET < 0, kw.get("ignore_index", -100), TARGET)

    def f(T, x, w, b):
        return T.nn.functional.linear_cross_entropy(x, w, T.tensor(target), linear_bias=b, **kw)

    check_op(f, rand(7, 3, seed=9), rand(5, 3, seed=10), rand(5, seed=11))


def test_k_dimensional_and_probability_targets():
    target = np.random.default_rng(0).integers(0, 4, (3, 2))

    def kdim(T, x, w, b):
        return T.nn.functional.linear_cross_entropy(x, w, T.tensor(target), linear_bias=b)

    check_op(kdim, rand(3, 5, seed=1), rand(4, 2, 5, seed=2), rand(4, 2, seed=3))
    probs = np.random.default_rng(1).dirichlet(np.ones(4), size=3)

    def soft(T, x, w):
        return T.nn.functional.linear_cross_entropy(x, w, T.tensor(probs), reduction="sum")

    check_op(soft, rand(3, 5, seed=4), rand(4, 5, seed=5), grad=[True, True])


def test_unbatched_input():
    def f(T, x, w):
        opts = _options(T, batch_chunk_size=1) if T is tinyattn else None
        return T.nn.functional.linear_cross_entropy(x, w, T.tensor(np.array(2)), options=opts)

    check_op(f, rand(3, seed=1), rand(4, 3, seed=2))


def test_float32_acc_dtype_float64_matches_float64():
    x, w = rand(7, 3, seed=1), rand(5, 3, seed=2)
    opts = _options(tinyattn, batch_chunk_size=2, acc_dtype=tinyattn.float64)
    x32 = tinyattn.tensor(x.astype(np.float32), requires_grad=True)
    loss = tinyattn.nn.functional.linear_cross_entropy(
        x32, tinyattn.tensor(w.astype(np.float32)), tinyattn.tensor(TARGET), options=opts
    )
    loss.backward()
    assert loss.dtype == tinyattn.float32 and x32.grad.dtype == tinyattn.float32
    ref = tinyattn.nn.functional.cross_entropy(
        tinyattn.tensor(x) @ tinyattn.tensor(w).T, tinyattn.tensor(TARGET)
    )
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-6)


def test_all_rows_ignored_mean_is_nan_as_torch():
    t = tinyattn.tensor(np.full(3, -100))
    x, w = tinyattn.ones(3, 2), tinyattn.ones(4, 2)
    loss = tinyattn.nn.functional.linear_cross_entropy(x, w, t, options=_options(tinyattn))
    assert np.isnan(loss.item())
    if torch is not None:
        ref = torch.nn.functional.linear_cross_entropy(
            torch.ones(3, 2), torch.ones(4, 2), torch.full((3,), -100), options=_options(torch)
        )
        assert np.isnan(ref.item())


def test_chunked_path_never_holds_the_full_logits():
    """Peak NumPy memory of a 4096 x 8192 head in chunks of 64: far below one logits copy."""
    rng = np.random.default_rng(0)
    n, d, c = 4096, 16, 8192
    x = tinyattn.tensor(rng.standard_normal((n, d)).astype(np.float32), requires_grad=True)
    w = tinyattn.tensor(rng.standard_normal((c, d)).astype(np.float32), requires_grad=True)
    t = tinyattn.tensor(rng.integers(0, c, n))
    logits_bytes = n * c * 4
    tracemalloc.start()
    loss = tinyattn.nn.functional.linear_cross_entropy(
        x, w, t, options=_options(tinyattn, batch_chunk_size=64)
    )
    loss.backward()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < logits_bytes / 8, (peak, logits_bytes)
    assert w.grad is not None and tuple(x.grad.shape) == (n, d)


@needs_torch
@pytest.mark.parametrize("method", ["auto", "aspect_ratio", "aspect_ratio:4", None])
def test_chunk_sizes_follow_torch(method):
    ours = _options(tinyattn, chunking_method=method)
    for n, d, c in [(100, 8, 50), (7, 3, 5), (1000, 64, 32000), (3, 10, 2)]:
        expected = (
            _options(torch, chunking_method=method)._adjust(n, d, c, torch.float32).batch_chunk_size
        )
        assert ours.chunk_rows(n, d, c) == expected, (n, d, c)


def test_options_repr_and_validation():
    o = _options(tinyattn)
    assert repr(o) == (
        "LinearCrossEntropyOptions(allow_retain_graph=False, batch_chunk_size=None, "
        "chunking_method='auto', acc_policy='auto', acc_dtype=None)"
    )
    if torch is not None:
        assert repr(o) == repr(_options(torch))
    with pytest.raises(ValueError, match="batch_chunk_size must be positive int or None"):
        _options(tinyattn, batch_chunk_size=0)
    with pytest.raises(ValueError, match="invalid chunking_method"):
        _options(tinyattn, chunking_method="x")
    with pytest.raises(ValueError, match="invalid acc_policy"):
        _options(tinyattn, acc_policy="x")
    with pytest.raises(ValueError, match="acc_dtype must be one of"):
        _options(tinyattn, acc_dtype=tinyattn.int32)
    with pytest.raises(ValueError, match="give different chunk sizes"):
        _options(tinyattn, batch_chunk_size=2, chunking_method="aspect_ratio").chunk_rows(5, 3, 4)


def test_unsupported_options_warn_and_fall_back():
    x, w = tinyattn.tensor(rand(7, 3)), tinyattn.tensor(rand(5, 3))
    with pytest.warns(UserWarning, match="``options`` ignored"):
        got = tinyattn.nn.functional.linear_cross_entropy(
            x, w, tinyattn.tensor(TARGET), label_smoothing=0.1, options=_options(tinyattn)
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ref = tinyattn.nn.functional.linear_cross_entropy(
            x, w, tinyattn.tensor(TARGET), label_smoothing=0.1
        )
    assert got.item() == ref.item()


def _lce(lib, *args, **kw):
    return lib.nn.functional.linear_cross_entropy(*args, **kw)


BAD = [
    (
        "input_3d",
        lambda lib: _lce(lib, lib.ones(2, 2, 3), lib.ones(4, 3), lib.zeros(2, 2).long()),
        "dimensionality 1 or 2, got 3",
    ),
    (
        "weight_1d",
        lambda lib: _lce(lib, lib.ones(2, 3), lib.ones(3), lib.zeros(2).long()),
        "linear_weight with dimensionality at least 2",
    ),
    (
        "in_features",
        lambda lib: _lce(lib, lib.ones(2, 3), lib.ones(4, 2), lib.zeros(2).long()),
        "got 3 and 2, respectively",
    ),
    (
        "bias_shape",
        lambda lib: _lce(
            lib, lib.ones(2, 3), lib.ones(4, 3), lib.zeros(2).long(), linear_bias=lib.ones(3)
        ),
        r"expected linear_bias shape \(4,\), got \(3,\)",
    ),
    (
        "kdim_unbatched",
        lambda lib: _lce(lib, lib.ones(3), lib.ones(2, 2, 3), lib.zeros(2).long()),
        "requires batched input",
    ),
    (
        "probs_ignore",
        lambda lib: _lce(lib, lib.ones(2, 3), lib.ones(4, 3), lib.ones(2, 4) / 4, ignore_index=1),
        "ignore_index cannot be specified",
    ),
    (
        "target_range",
        lambda lib: _lce(
            lib, lib.ones(2, 3), lib.ones(4, 3), lib.tensor([0, 4]), options=_options(lib)
        ),
        "out of bounds",
    ),
    (
        "reduction",
        lambda lib: _lce(lib, lib.ones(2, 3), lib.ones(4, 3), lib.zeros(2).long(), reduction="avg"),
        "reduction",
    ),
]


@pytest.mark.parametrize("name,call,expected", BAD, ids=[c[0] for c in BAD])
def test_bad_input(name, call, expected):
    check_bad_call(call, expected)


# -- the module ----------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_module_parity(dtype):
    torch.manual_seed(0)
    kw = dict(bias=True, reduction="sum")
    module_parity(
        torch.nn.LinearCrossEntropyLoss(3, 5, **kw),
        tinyattn.nn.LinearCrossEntropyLoss(
            3, 5, **kw, options=_options(tinyattn, batch_chunk_size=2)
        ),
        rand(7, 3),
        TARGET,
        dtype=dtype,
    )
    kd = dict(out_features=(2,), bias=True)
    target = np.random.default_rng(0).integers(0, 4, (3, 2))
    module_parity(
        torch.nn.LinearCrossEntropyLoss(5, 4, **kd),
        tinyattn.nn.LinearCrossEntropyLoss(5, 4, **kd),
        rand(3, 5),
        target,
        dtype=dtype,
    )


def test_module_repr_state_and_errors():
    m = tinyattn.nn.LinearCrossEntropyLoss(4, 5)
    assert list(m.state_dict()) == ["linear.weight"]
    expected = (
        "LinearCrossEntropyLoss(\n"
        "  in_features=4, num_classes=5, out_features=(), bias=False, reduction=mean, "
        "ignore_index=None, label_smoothing=0.0, options=None\n"
        "  (linear): Linear(in_features=4, out_features=5, bias=False)\n)"
    )
    assert repr(m) == expected
    if torch is not None:
        assert repr(torch.nn.LinearCrossEntropyLoss(4, 5)) == expected
    m2 = tinyattn.nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True)
    assert tuple(m2.linear.weight.shape) == (10, 4) and tuple(m2.linear.bias.shape) == (10,)
    check_bad_call(
        lambda lib: lib.nn.LinearCrossEntropyLoss(3, 4, weight=lib.ones(3)),
        r"expected weight shape to be \(4,\)",
    )
    check_bad_call(
        lambda lib: lib.nn.LinearCrossEntropyLoss(3, 4, label_smoothing=2),
        r"label_smoothing to be in range \[0, 1\]",
    )
