"""Silent differences from torch 2.13 found by differential testing, pinned one per test.

Each test pins one difference that was found (seeded random and edge cases compared
against torch: values, dtypes, shapes, gradients) and fixed. Where the right value is
known without torch it is asserted directly, so the test runs (and would fail before the
fix) on a machine without torch; the torch comparison runs when torch is installed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tinyattn

NAN = float("nan")


def _torch():
    return pytest.importorskip("torch")


def _same(ours, theirs, tol=1e-12):
    """ours (tinyattn) equals theirs (torch): dtype name, shape and values (NaN where NaN)."""
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), rtol=tol, atol=tol, equal_nan=True
    )


# -- addmm / addbmm / addmv: alpha = 0 drops the product; integer results truncate scalars --
_NAN_MAT = [[NAN, 1.0], [1.0, 1.0]]


def _add_products(lib, nan_mat, ones):
    return {
        "addmm": lib.addmm(ones, nan_mat, ones, alpha=0),
        "addbmm": lib.addbmm(ones, nan_mat[None], ones[None], alpha=0),
        "addmv": lib.addmv(ones[0], nan_mat, ones[0], alpha=0.0),
        "addmm beta=0": lib.addmm(ones, nan_mat, ones, alpha=0, beta=0),
    }


def test_alpha_zero_drops_a_nan_product():
    ours = _add_products(tinyattn, tinyattn.tensor(_NAN_MAT), tinyattn.ones(2, 2))
    for name, value in ours.items():  # was NaN in row 0: alpha * NaN
        assert not np.isnan(value.numpy()).any(), name
    np.testing.assert_array_equal(ours["addmm"].numpy(), np.ones((2, 2)))
    np.testing.assert_array_equal(ours["addmm beta=0"].numpy(), np.zeros((2, 2)))
    torch = _torch()
    theirs = _add_products(torch, torch.tensor(_NAN_MAT), torch.ones(2, 2))
    for name in ours:
        _same(ours[name], theirs[name])


def test_alpha_zero_product_gets_a_zero_gradient():
    mat = tinyattn.tensor(_NAN_MAT, requires_grad=True)
    tinyattn.addmm(tinyattn.ones(2, 2), mat, tinyattn.ones(2, 2), alpha=0).sum().backward()
    np.testing.assert_array_equal(mat.grad.numpy(), np.zeros((2, 2)))


def test_baddbmm_and_addr_keep_the_nan_with_alpha_zero():
    """torch's baddbmm and addr multiply the product by 0 (NaN stays): so do we."""
    ones = tinyattn.ones(2, 2)
    mat = tinyattn.tensor(_NAN_MAT)
    assert np.isnan(tinyattn.baddbmm(ones[None], mat[None], ones[None], alpha=0).numpy()).any()
    assert np.isnan(tinyattn.addr(ones, mat[0], ones[0], alpha=0).numpy()).any()


@pytest.mark.parametrize("kw", [{"beta": 0.5}, {"alpha": 2.7}, {"alpha": -1.5, "beta": 0}])
@pytest.mark.parametrize("op", ["addmm", "baddbmm", "addbmm", "addmv"])
def test_integer_inputs_truncate_float_scalars(op, kw):
    """Integer tensors with a float beta/alpha: torch keeps int64 and truncates the scalar
    (beta=0.5 acts as 0, alpha=2.7 as 2); tinyattn returned float32."""
    a = [[1, 2], [3, 4]]

    def run(lib):
        m = lib.tensor(a)
        args = {
            "addmm": (m, m, m),
            "baddbmm": (m[None], m[None], m[None]),
            "addbmm": (m, m[None], m[None]),
            "addmv": (m[0], m, m[0]),
        }[op]
        return getattr(lib, op)(*args, **kw)

    ours = run(tinyattn)
    assert ours.dtype == tinyattn.int64
    m = np.array(a)
    product = {"addmm": m @ m, "baddbmm": (m @ m)[None], "addbmm": m @ m, "addmv": m @ m[0]}[op]
    base = {"addmm": m, "baddbmm": m[None], "addbmm": m, "addmv": m[0]}[op]
    want = int(kw.get("beta", 1)) * base + int(kw.get("alpha", 1)) * product
    np.testing.assert_array_equal(ours.numpy(), want)
    _same(ours, run(_torch()))


def test_addr_refuses_float_scalars_for_integer_inputs():
    a = tinyattn.tensor([1, 2])
    with pytest.raises(RuntimeError, match="beta must not be a floating point"):
        tinyattn.addr(tinyattn.ones(2, 2, dtype=tinyattn.int64), a, a, beta=0.5)


# -- linspace / logspace with an integer dtype: torch truncates the ends first --------------
@pytest.mark.parametrize(
    "call, want",
    [
        ("linspace(0.5, 2.5, 5, dtype={int64})", [0, 0, 1, 1, 2]),  # was [0, 1, 1, 2, 2]
        ("linspace(-0.5, 2.7, 4, dtype={int64})", [0, 0, 1, 2]),
        ("logspace(0.5, 2.5, 5, base=3.0, dtype={int64})", [1, 1, 3, 5, 9]),  # was [1, 3, 5, 9, 15]
        ("logspace(-0.5, 2.7, 4, dtype={int64})", [1, 4, 21, 100]),  # was [0, 3, 42, 501]
        ("logspace(2.7, 1, 1, dtype={int64})", [501]),  # one step: base ** start, untruncated
        ("logspace(0.5, 2.5, 4, base=3.0, dtype={int32})", [1, 2, 4, 9]),
        ("linspace(0.5, 2.5, 5)", [0.5, 1.0, 1.5, 2.0, 2.5]),
    ],
)
def test_integer_linspace_logspace_truncate_the_ends(call, want):
    def run(lib):
        return eval("lib." + call.format(int64="lib.int64", int32="lib.int32"), {"lib": lib})

    ours = run(tinyattn)
    np.testing.assert_array_equal(ours.numpy(), want)
    _same(ours, run(_torch()), tol=0)


# -- torch.<loss> top-level forms: reduction left out is 0 ('none'), not 'mean' -------------
_TOP_LEVEL_LOSSES = {
    "kl_div": lambda lib, x, t, y: lib.kl_div(x, t),
    "binary_cross_entropy_with_logits": lambda lib, x, t, y: lib.binary_cross_entropy_with_logits(
        x, t
    ),
    "cosine_embedding_loss": lambda lib, x, t, y: lib.cosine_embedding_loss(x, t, y, 0.1),
    "hinge_embedding_loss": lambda lib, x, t, y: lib.hinge_embedding_loss(x, t),
    "margin_ranking_loss": lambda lib, x, t, y: lib.margin_ranking_loss(x[:, 0], t[:, 0], y),
    "triplet_margin_loss": lambda lib, x, t, y: lib.triplet_margin_loss(x, t, x + 1),
}


@pytest.mark.parametrize("name", sorted(_TOP_LEVEL_LOSSES))
def test_top_level_losses_do_not_reduce_by_default(name):
    rng = np.random.default_rng(0)
    arrays = (rng.standard_normal((4, 3)), rng.random((4, 3)), np.array([1.0, -1.0, 1.0, -1.0]))
    ours = _TOP_LEVEL_LOSSES[name](tinyattn, *map(tinyattn.tensor, arrays))
    assert ours.ndim >= 1  # was a 0-d mean
    explicit = {"kl_div": lambda: tinyattn.kl_div(*map(tinyattn.tensor, arrays[:2]), 0)}
    if name in explicit:
        _same(ours, explicit[name]())
    torch = _torch()
    _same(ours, _TOP_LEVEL_LOSSES[name](torch, *map(torch.tensor, arrays)), tol=1e-10)


def test_top_level_ctc_loss_does_not_reduce_by_default():
    rng = np.random.default_rng(1)
    log_probs = tinyattn.tensor(rng.standard_normal((5, 2, 4))).log_softmax(2)
    targets = tinyattn.tensor([[1, 2], [1, 1]])
    lengths = tinyattn.tensor([5, 5]), tinyattn.tensor([2, 1])
    assert tinyattn.ctc_loss(log_probs, targets, *lengths).shape == (2,)


# -- Python ints outside an integer tensor's range wrap, as torch casts the scalar ----------
@pytest.mark.parametrize(
    "expr, want",
    [
        ("a + (-2)", [254, 255, 0, 1]),  # was OverflowError from NumPy
        ("a - 300", [212, 213, 214, 215]),  # 300 -> 44 mod 256
        ("a * (-1)", [0, 255, 254, 253]),
        ("a < -3", [True, True, True, True]),  # -3 -> 253 (torch compares in uint8)
        ("a + np.int32(-2)", [254, 255, 0, 1]),
    ],
)
def test_out_of_range_python_int_wraps_like_torch(expr, want):
    def run(lib):
        return eval(expr, {"a": lib.tensor([0, 1, 2, 3], dtype=lib.uint8), "np": np})

    ours = run(tinyattn)
    np.testing.assert_array_equal(ours.numpy(), want)
    assert ours.dtype == (tinyattn.bool if isinstance(want[0], bool) else tinyattn.uint8)
    _same(ours, run(_torch()), tol=0)


def test_negative_python_exponent_of_uint8_still_refused():
    with pytest.raises(RuntimeError, match="negative integer powers"):
        tinyattn.tensor([1, 2], dtype=tinyattn.uint8) ** -2


# -- NumPy scalars: torch reads np.bool_ as a float and other NumPy scalars as Python ones -----
@pytest.mark.parametrize(
    "expr, dtype",
    [
        ("lib.tensor([1, 2], dtype=lib.int32) + np.True_", "float32"),  # was int32
        ("lib.tensor([True, False]) * np.False_", "float32"),  # was bool
        ("lib.clamp(lib.tensor([1, 2]), np.True_)", "float32"),  # was int64
        ("lib.full((2,), np.float64(2.5))", "float32"),  # was float64
        ("lib.full((2,), np.int32(-2))", "int64"),  # was int32
        ("lib.full((2,), np.True_)", "float32"),  # was bool
        ("lib.full((2,), True)", "bool"),
    ],
)
def test_numpy_scalars_promote_as_torch_reads_them(expr, dtype):
    def run(lib):
        return eval(expr, {"lib": lib, "np": np})

    ours = run(tinyattn)
    assert str(ours.dtype).split(".")[-1] == dtype
    _same(ours, run(_torch()), tol=0)


# -- special.xlog1py with a bool other; zeta at its poles -------------------------------------
def test_xlog1py_with_bool_other_is_full_precision():
    """np.log1p(True) is float16: the result was log(2) to 3 digits (0.69336)."""
    x = tinyattn.tensor([2.0, -1.0], dtype=tinyattn.float64, requires_grad=True)
    for other in (True, np.True_):
        x.grad = None
        out = tinyattn.special.xlog1py(x, other)
        np.testing.assert_allclose(out.detach().numpy(), [2 * np.log(2), -np.log(2)], rtol=1e-15)
        out.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [np.log(2)] * 2, rtol=1e-15)
    ints = tinyattn.special.xlog1py(tinyattn.tensor([3]), True)
    np.testing.assert_allclose(ints.numpy(), [3 * np.log(2)], rtol=1e-6)


def test_zeta_poles_at_nonpositive_integer_q():
    s = [2.0, 2.5, 3.0, 0.5, -1.5, 1.0, NAN]
    for q in (-1.0, -2.0, 0.0):
        ours = tinyattn.special.zeta(tinyattn.tensor(s, dtype=tinyattn.float64), q)
        want = [np.inf, np.inf, np.inf, NAN, NAN, np.inf, np.inf]  # 2.5 at q=-1 was NaN
        np.testing.assert_array_equal(ours.numpy(), want)
    torch = _torch()
    for q in (-1.0, -3.0, 0.0, 0.5):
        ours = tinyattn.special.zeta(tinyattn.tensor(s, dtype=tinyattn.float64), q)
        _same(ours, torch.special.zeta(torch.tensor(s, dtype=torch.float64), q), tol=1e-12)


# -- nn.ConvNd(padding='same', padding_mode=...) pads in that mode (was zeros) ---------------
@pytest.mark.parametrize(
    "kernel, mode, want",
    [
        (3, "circular", [7.0, 6.0, 9.0, 8.0]),  # zeros gave [3, 6, 9, 7]
        (3, "reflect", [5.0, 6.0, 9.0, 10.0]),
        (3, "replicate", [4.0, 6.0, 9.0, 11.0]),
        (2, "replicate", [3.0, 5.0, 7.0, 8.0]),  # total 1: nothing left, 1 right
        (3, "zeros", [3.0, 6.0, 9.0, 7.0]),
    ],
)
def test_conv_same_padding_uses_the_padding_mode(kernel, mode, want):
    def run(lib):
        conv = lib.nn.Conv1d(1, 1, kernel, padding="same", padding_mode=mode, bias=False)
        with lib.no_grad():
            conv.weight.fill_(1.0)
        return conv(lib.tensor([[[1.0, 2.0, 3.0, 4.0]]]))

    ours = run(tinyattn)
    np.testing.assert_array_equal(ours.detach().numpy().ravel(), want)
    _same(ours, run(_torch()), tol=1e-6)


def test_conv2d_same_padding_dilated_circular_matches_torch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 5, 6))
    torch = _torch()
    theirs = torch.nn.Conv2d(3, 2, (3, 2), padding="same", dilation=(2, 1), padding_mode="circular")
    theirs = theirs.double()
    ours = tinyattn.nn.Conv2d(
        3, 2, (3, 2), padding="same", dilation=(2, 1), padding_mode="circular"
    )
    ours = ours.double()
    ours.load_state_dict(
        {k: tinyattn.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    )
    _same(ours(tinyattn.tensor(x)), theirs(torch.tensor(x)), tol=1e-12)


# -- losses: bool targets for mse/smooth_l1; bce_with_logits keeps the target's dtype ---------
@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss", "huber_loss"])
def test_regression_losses_read_a_bool_target_as_0_1(name):
    x = [0.5, -1.0, 2.0]
    target = [True, False, True]

    def run(lib):
        return getattr(lib.nn.functional, name)(
            lib.tensor(x, dtype=lib.float64), lib.tensor(target)
        )

    ours = run(tinyattn)  # was TypeError: sub with a bool operand
    want = getattr(tinyattn.nn.functional, name)(
        tinyattn.tensor(x, dtype=tinyattn.float64), tinyattn.tensor([1.0, 0.0, 1.0])
    )
    _same(ours, want)
    _same(ours, run(_torch()))


def test_bce_with_logits_result_has_the_target_dtype():
    def run(lib):
        logits = lib.tensor([-2.0, 0.5, 3.0], dtype=lib.float64)
        return lib.nn.functional.binary_cross_entropy_with_logits(
            logits, lib.tensor([0.0, 1.0, 0.25], dtype=lib.float32)
        )

    ours = run(tinyattn)
    assert ours.dtype == tinyattn.float32  # was float64
    _same(ours, run(_torch()), tol=1e-6)


# -- batch norm on an empty batch: an empty output, running stats untouched (was ValueError) --
def test_batch_norm_training_on_an_empty_batch():
    def run(lib):
        bn = lib.nn.BatchNorm1d(3).double()
        with lib.no_grad():
            bn.running_mean.fill_(2.0)
            bn.running_var.fill_(3.0)
        x = lib.zeros(0, 3, dtype=lib.float64, requires_grad=True)
        out = bn(x)
        out.sum().backward()
        return out, bn

    out, bn = run(tinyattn)
    assert tuple(out.shape) == (0, 3)
    np.testing.assert_array_equal(bn.running_mean.numpy(), [2.0] * 3)
    np.testing.assert_array_equal(bn.running_var.numpy(), [3.0] * 3)
    assert int(bn.num_batches_tracked) == 1
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        tinyattn.nn.BatchNorm1d(3)(tinyattn.zeros(1, 3))
    theirs, torch_bn = run(_torch())
    _same(out, theirs)
    _same(bn.weight.grad, torch_bn.weight.grad)
    _same(bn.running_mean, torch_bn.running_mean)


@pytest.mark.parametrize(
    "kw", [{}, {"beta": 0}, {"alpha": 0}, {"alpha": 3}, {"beta": 0, "alpha": 0}]
)
def test_addr_of_bool_tensors_stays_bool(kw):
    """(beta and input) or (alpha and outer(vec1, vec2)); beta=0 gave int64."""
    m, v1, v2 = [[True, False], [False, True]], [True, False], [False, True]

    def run(lib):
        return lib.addr(lib.tensor(m), lib.tensor(v1), lib.tensor(v2), **kw)

    ours = run(tinyattn)
    assert ours.dtype == tinyattn.bool
    want = (np.array(m) & bool(kw.get("beta", 1))) | (
        np.outer(v1, v2).astype(bool) & bool(kw.get("alpha", 1))
    )
    np.testing.assert_array_equal(ours.numpy(), want)
    _same(ours, run(_torch()), tol=0)


# -- 0-d nonzero / argwhere (was NumPy's ValueError); median of no integers (was a crash) ----
@pytest.mark.parametrize("value, rows", [(3.0, 1), (0.0, 0)])
def test_nonzero_of_a_0d_tensor(value, rows):
    x = tinyattn.tensor(value)
    assert tuple(tinyattn.nonzero(x).shape) == (rows, 0)
    assert tuple(tinyattn.argwhere(x).shape) == (rows, 0)
    (only,) = tinyattn.nonzero(x, as_tuple=True)
    np.testing.assert_array_equal(only.numpy(), [0] * rows)
    torch = _torch()
    _same(tinyattn.nonzero(x), torch.nonzero(torch.tensor(value)), tol=0)


@pytest.mark.parametrize(
    "name, want",
    [("int64", -(2**63)), ("int32", -(2**31)), ("int16", 0), ("uint8", 0), ("float32", NAN)],
)
def test_median_of_an_empty_tensor(name, want):
    for fn in ("median", "nanmedian"):
        ours = getattr(tinyattn, fn)(tinyattn.zeros(0, dtype=getattr(tinyattn, name)))
        assert str(ours.dtype).split(".")[-1] == name
        np.testing.assert_array_equal(ours.numpy(), np.array(want))


# -- arange into an integer dtype from float bounds; tensor() of mixed NumPy/Python leaves ---
@pytest.mark.parametrize(
    "call, want",
    [
        ("arange(0, 5, 1.5, dtype={int32})", [0, 1, 2, 3]),  # was [0, 1, 3, 4]
        ("arange(0.5, 5, 1.5, dtype={int64})", [0, 1, 2, 3, 4]),  # int64: length from 0, 5, 1
        ("arange(1, 6, 2.5, dtype={int64})", [1, 3, 5]),
        ("arange(2, 5.5, 0.3, dtype={int32})", [2] * 12),  # the step cast to 0 repeats start
        ("arange(0, 5, 2)", [0, 2, 4]),
    ],
)
def test_integer_arange_from_float_bounds(call, want):
    def run(lib):
        return eval("lib." + call.format(int64="lib.int64", int32="lib.int32"), {"lib": lib})

    ours = run(tinyattn)
    np.testing.assert_array_equal(ours.numpy(), want)
    _same(ours, run(_torch()), tol=0)


def test_integer_arange_with_a_step_cast_to_zero_raises():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        tinyattn.arange(0, 1, 0.3, dtype=tinyattn.int64)


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy")
@pytest.mark.parametrize(
    "data, dtype",
    [
        ("[np.float32(1.5), 2]", "float32"),  # was float64 (NumPy's promotion)
        ("[1.5, np.float16(2)]", "float32"),  # was float64
        ("[np.float16(1), 2]", "float16"),
        ("[np.int32(1), 2]", "int64"),
        ("[np.int8(1), np.uint8(2)]", "int16"),
        ("[np.array([1.0, 2.0], dtype=np.float32), [3, 4.5]]", "float32"),
    ],
)
def test_tensor_infers_dtype_from_numpy_leaves_as_torch(data, dtype):
    def run(lib):
        return lib.tensor(eval(data, {"np": np}))

    ours = run(tinyattn)
    assert str(ours.dtype).split(".")[-1] == dtype
    _same(ours, run(_torch()), tol=0)


# -- addcmul of integers truncates a float value; float_power takes a bool exponent ----------
@pytest.mark.parametrize(
    "value, want", [(0.5, [1, 2, 3]), (2.7, [5, 14, 27]), (-1.5, [-1, -4, -9])]
)
def test_integer_addcmul_truncates_a_float_value(value, want):
    def run(lib, inplace):
        a, b = lib.tensor([1, 2, 3]), lib.tensor([2, 3, 4])
        if inplace:
            return a.clone().addcmul_(a, b, value=value)  # was RuntimeError (float64 result)
        return lib.addcmul(a, a, b, value=value)  # was a float result

    for inplace in (False, True):
        ours = run(tinyattn, inplace)
        assert ours.dtype == tinyattn.int64
        np.testing.assert_array_equal(ours.numpy(), want)
        _same(ours, run(_torch(), inplace), tol=0)


def test_float_power_with_a_bool_exponent():
    ours = tinyattn.float_power(tinyattn.tensor([2.0, 3.0]), True)  # was TypeError
    assert ours.dtype == tinyattn.float64
    np.testing.assert_array_equal(ours.numpy(), [2.0, 3.0])


# -- hardtanh / relu6 / tanhshrink on integer tensors (were NotImplementedError) -------------
@pytest.mark.parametrize(
    "call, want, dtype",
    [
        ("F.relu6(x)", [0, 0, 0, 2, 6], "int64"),
        ("F.hardtanh(x)", [-1, -1, 0, 1, 1], "int64"),
        ("F.hardtanh(x, -2.5, 3.7)", [-2, -1, 0, 2, 3], "int64"),  # bounds cast to int64
        ("F.tanhshrink(x)", [-7.0, -0.2384058, 0.0, 1.0359724, 6.0000019], "float32"),
    ],
)
def test_integer_clamping_activations(call, want, dtype):
    def run(lib):
        return eval(call, {"F": lib.nn.functional, "x": lib.tensor([-8, -1, 0, 2, 7])})

    ours = run(tinyattn)
    assert str(ours.dtype).split(".")[-1] == dtype
    np.testing.assert_allclose(ours.numpy(), want, rtol=1e-6)
    _same(ours, run(_torch()), tol=1e-6)


def test_hardtanh_refuses_negative_bounds_for_uint8():
    with pytest.raises(RuntimeError, match="unsigned"):
        tinyattn.nn.functional.hardtanh(tinyattn.tensor([1, 2], dtype=tinyattn.uint8))


# -- scatter(reduce="multiply") multiplied nothing: it wrote the value -----------------------
@pytest.mark.parametrize("inplace", [False, True])
def test_scatter_reduce_multiply(inplace):
    def run(lib):
        a = lib.tensor([[1, 2, 3], [-2, 1, 1]])
        x = a.float()
        index = lib.tensor([[0], [0]])
        if inplace:
            ints = a.clone().scatter_(1, index, 2.5, reduce="multiply")
            floats = x.clone().scatter_(1, lib.tensor([[0, 0], [1, 1]]), x + 1, reduce="multiply")
        else:
            ints = a.scatter(1, index, 2.5, reduce="multiply")
            floats = x.scatter(1, lib.tensor([[0, 0], [1, 1]]), x + 1, reduce="multiply")
        return ints, floats

    ints, floats = run(tinyattn)
    np.testing.assert_array_equal(ints.numpy(), [[2, 2, 3], [-4, 1, 1]])  # 2.5 acts as 2
    np.testing.assert_array_equal(floats.numpy(), [[6.0, 2.0, 3.0], [-2.0, -2.0, 1.0]])
    with pytest.raises(RuntimeError, match="add or multiply"):
        tinyattn.zeros(2).scatter(0, tinyattn.tensor([0]), 1.0, reduce="max")
    torch = _torch()
    with warnings.catch_warnings():  # torch deprecates reduce= with a Tensor src
        warnings.simplefilter("ignore", UserWarning)
        theirs = run(torch)
    for o, t in zip((ints, floats), theirs):
        _same(o, t, tol=0)


def test_bincount_of_an_empty_input_counts_in_int64():
    """torch ignores the weights' dtype when there is nothing to count (was float64)."""
    empty = tinyattn.zeros(0, dtype=tinyattn.int64)
    for minlength in (0, 3):
        ours = tinyattn.bincount(empty, tinyattn.zeros(0, dtype=tinyattn.float64), minlength)
        assert ours.dtype == tinyattn.int64
        np.testing.assert_array_equal(ours.numpy(), np.zeros(minlength, np.int64))
