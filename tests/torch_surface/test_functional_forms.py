"""``torch.<op>`` top-level forms of functional ops (ATen signatures: ``torch.dropout(input,
p, train)``, ``torch.embedding(weight, input)``, int ``reduction`` ...) and the top-level
in-place forms (``torch.exp_``). Each checked against F / the Tensor method without torch,
and forward + gradients against torch (``check_op``) when torch is installed."""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn
import tinyattn.nn.functional as F
from tests.harness import check_op, rand, run_gradcheck, run_parity, torch

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")

X3 = rand(2, 4, 5, seed=1)
X4 = rand(2, 4, 3, 3, seed=2)


def _close(a, b, tol=1e-12):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), np.asarray(b), atol=tol, rtol=tol)


# -- same math as F: gradcheck + torch parity through the top-level name --------------------
PARITY_CASES = {
    "layer_norm": (lambda lib, x, w, b: lib.layer_norm(x, [5], w, b, 1e-5, False),
                   (X3, rand(5, seed=3), rand(5, seed=4))),
    "group_norm": (lambda lib, x, w, b: lib.group_norm(x, 2, w, b, 1e-5, True),
                   (X3, rand(4, seed=3), rand(4, seed=4))),
    "batch_norm": (lambda lib, x, w, b: lib.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
                   (X3, rand(4, seed=3), rand(4, seed=4))),
    "instance_norm": (lambda lib, x, w, b: lib.instance_norm(x, w, b, None, None, True, 0.1,
                                                             1e-5, False),
                      (X3, rand(4, seed=3), rand(4, seed=4))),
    "rms_norm": (lambda lib, x, w: lib.rms_norm(x, [5], w, 1e-6), (X3, rand(5, seed=3))),
    "embedding": (lambda lib, w, i: lib.embedding(w, i, 3), (rand(5, 3, seed=5),
                                                           np.array([[0, 2], [4, 2]]))),
    "conv1d": (lambda lib, x, w, b: lib.conv1d(x, w, b, 1, 1),
               (X3, rand(3, 4, 2, seed=6), rand(3, seed=7))),
    "conv2d": (lambda lib, x, w: lib.conv2d(x, w, None, 1, "same", 1, 2),
               (X4, rand(2, 2, 3, 3, seed=6))),
    "conv3d": (lambda lib, x, w: lib.conv3d(x, w), (rand(1, 2, 3, 3, 3, seed=8),
                                                   rand(2, 2, 2, 2, 2, seed=9))),
    "conv_transpose1d": (lambda lib, x, w: lib.conv_transpose1d(x, w, None, 2, 1, 1),
                         (X3, rand(4, 2, 3, seed=10))),
    "conv_transpose2d": (lambda lib, x, w: lib.conv_transpose2d(x, w, None, 1, 0, 0, 2),
                         (X4, rand(4, 1, 2, 2, seed=10))),
    "conv_transpose3d": (lambda lib, x, w: lib.conv_transpose3d(x, w),
                         (rand(1, 2, 2, 2, 2, seed=8), rand(2, 1, 2, 2, 2, seed=9))),
    "convolution": (lambda lib, x, w: lib.convolution(x, w, None, [1, 1], [1, 0], [1, 1], False,
                                                      [0, 0], 1),
                    (X4, rand(3, 4, 2, 2, seed=11))),
    "convolution_t": (lambda lib, x, w: lib.convolution(x, w, None, [2], [0], [1], True, [1], 1),
                      (X3, rand(4, 3, 2, seed=12))),
    "max_pool1d": (lambda lib, x: lib.max_pool1d(x, 2), (X3,)),
    "max_pool2d": (lambda lib, x: lib.max_pool2d(x, [2, 2], [1, 1], 1), (X4,)),
    "max_pool3d": (lambda lib, x: lib.max_pool3d(x, 2), (rand(1, 2, 4, 4, 4, seed=13),)),
    "max_pool1d_with_indices": (lambda lib, x: lib.max_pool1d_with_indices(x, 3, 2, 1), (X3,)),
    "avg_pool1d": (lambda lib, x: lib.avg_pool1d(x, 3, 2, 1, True, False), (X3,)),
    "adaptive_avg_pool1d": (lambda lib, x: lib.adaptive_avg_pool1d(x, 3), (X3,)),
    "adaptive_max_pool1d": (lambda lib, x: lib.adaptive_max_pool1d(x, 2), (X3,)),
    "cosine_similarity": (lambda lib, a, b: lib.cosine_similarity(a, b, 2), (X3, rand(2, 4, 5))),
    "pairwise_distance": (lambda lib, a, b: lib.pairwise_distance(a, b, 3.0, 1e-6, True),
                          (rand(3, 4, seed=14), rand(3, 4, seed=15))),
    "pixel_shuffle": (lambda lib, x: lib.pixel_shuffle(x, 2), (X4,)),
    "pixel_unshuffle": (lambda lib, x: lib.pixel_unshuffle(x, 1), (X4,)),
    "channel_shuffle": (lambda lib, x: lib.channel_shuffle(x, 2), (X4,)),
    "prelu": (lambda lib, x, w: lib.prelu(x, w), (X3, rand(4, seed=17))),
    "selu": (lambda lib, x: lib.selu(x), (X3,)),
    "celu": (lambda lib, x: lib.celu(x, 0.5), (X3,)),
    "threshold": (lambda lib, x: lib.threshold(x, 0.1, -2.0), (X3,)),
    "rrelu": (lambda lib, x: lib.rrelu(x, 0.1, 0.3, False), (X3,)),
    "hardshrink": (lambda lib, x: lib.hardshrink(x, 0.3), (X3,)),
    "bilinear": (lambda lib, a, b, w, c: lib.bilinear(a, b, w, c),
                 (rand(3, 2, seed=18), rand(3, 4, seed=19), rand(5, 2, 4, seed=20),
                  rand(5, seed=21))),
    "kl_div": (lambda lib, x, t: lib.kl_div(x, t, 1, log_target=True),
               (X3, rand(2, 4, 5, seed=22))),
    "kl_div_sum": (lambda lib, x, t: lib.kl_div(x, t, 2), (X3, rand(2, 4, 5, low=0.1, high=1.0, seed=23))),
    "margin_ranking_loss": (lambda lib, a, b, y: lib.margin_ranking_loss(a, b, y, 0.2, 0),
                            (rand(6, seed=24), rand(6, seed=25),
                             np.array([1.0, -1, 1, -1, 1, 1]))),
    "hinge_embedding_loss": (lambda lib, x, y: lib.hinge_embedding_loss(x, y, 0.5, 2),
                             (rand(6, seed=26), np.array([1.0, -1, 1, -1, 1, 1]))),
    "cosine_embedding_loss": (lambda lib, a, b, y: lib.cosine_embedding_loss(a, b, y, 0.1, 1),
                              (rand(3, 4, seed=27), rand(3, 4, seed=28), np.array([1.0, -1, 1]))),
    "triplet_margin_loss": (lambda lib, a, p, n: lib.triplet_margin_loss(a, p, n, 1.0, 2.0,
                                                                         1e-6, True, 1),
                            (rand(3, 4, seed=29), rand(3, 4, seed=30), rand(3, 4, seed=31))),
    "poisson_nll_loss": (lambda lib, x, t: lib.poisson_nll_loss(x, t, True, True, 1e-8, 1),
                         (X3, rand(2, 4, 5, low=0.5, high=3.0, seed=32))),
    "bce_with_logits": (lambda lib, x, t, w, pw: lib.binary_cross_entropy_with_logits(
                            x, t, w, pw, 2),
                        (rand(3, 4, seed=33), rand(3, 4, low=0.0, high=1.0, seed=34),
                         rand(4, low=0.5, high=1.5, seed=35), rand(4, low=0.5, high=2.0, seed=36))),
    "constant_pad_nd": (lambda lib, x: lib.constant_pad_nd(x, [1, -1, 2, 0], 0.5), (X3,)),
    "affine_grid_generator": (lambda lib, t: lib.affine_grid_generator(t, [2, 1, 3, 4], False),
                              (rand(2, 2, 3, seed=37),)),
    "grid_sampler": (lambda lib, x, g: lib.grid_sampler(x, g, 0, 1, True),
                     (rand(1, 2, 4, 4, seed=38), rand(1, 3, 3, 2, low=-0.9, high=0.9, seed=39))),
    "dropout_eval": (lambda lib, x: lib.dropout(x, 0.3, False), (X3,)),
    "feature_dropout_eval": (lambda lib, x: lib.feature_dropout(x, 0.3, False), (X3,)),
    "alpha_dropout_eval": (lambda lib, x: lib.alpha_dropout(x, 0.3, False), (X3,)),
    "feature_alpha_dropout_p0": (lambda lib, x: lib.feature_alpha_dropout(x, 0.0, True), (X3,)),
}  # fmt: skip


# torch has no second derivative for these: first order only (our gradcheck + torch parity)
FIRST_ORDER = {
    "pdist": (lambda lib, x: lib.pdist(x, 1.5), (rand(4, 3, seed=16),)),
}
GRAD_MASK = {"bce_with_logits": [True, True, False, False]}  # torch: none for the weights


@pytest.mark.parametrize("name", sorted(PARITY_CASES))
def test_top_level_functional_form_gradcheck_and_torch_parity(name):
    f, arrays = PARITY_CASES[name]
    check_op(f, *arrays, grad=GRAD_MASK.get(name))


@pytest.mark.parametrize("name", sorted(FIRST_ORDER))
def test_top_level_functional_form_first_order(name):
    f, arrays = FIRST_ORDER[name]
    run_gradcheck(f, *arrays)
    run_parity(f, *arrays)


def test_ctc_loss_int_reduction():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 2, 4))
    targets = np.array([[1, 2, 1], [3, 1, 0]])

    def f(lib, x):
        lp = x.log_softmax(2)
        return lib.ctc_loss(lp, lib.tensor(targets), [6, 5], [3, 2], 0, 1, False)

    run_gradcheck(f, logits)
    run_parity(f, logits)  # (torch has no second derivative of ctc_loss)
    x = tinyattn.tensor(logits).log_softmax(2)
    want = F.ctc_loss(x, tinyattn.tensor(targets), [6, 5], [3, 2], 0, "sum")
    _close(tinyattn.ctc_loss(x, tinyattn.tensor(targets), [6, 5], [3, 2], 0, 2), want.numpy())


# -- without torch: the argument order and int conventions ------------------------------------
def test_argument_orders_differ_from_functional_as_in_torch():
    x = tinyattn.tensor(X3)
    w, b = tinyattn.tensor(rand(4, seed=3)), tinyattn.tensor(rand(4, seed=4))
    rm, rv = tinyattn.zeros(4), tinyattn.ones(4)
    got = tinyattn.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5, False)
    _close(got, F.batch_norm(x, rm, rv, w, b, False).numpy())
    table = tinyattn.tensor(rand(5, 3, seed=5))
    idx = tinyattn.tensor([1, 4])
    _close(tinyattn.embedding(table, idx), table.numpy()[[1, 4]])
    with pytest.raises(TypeError):
        tinyattn.dropout(x, 0.5)  # train is required, as in torch
    assert tinyattn.dropout(x, 0.5, False) is x or np.array_equal(
        tinyattn.dropout(x, 0.5, False).numpy(), x.numpy()
    )


def test_embedding_padding_idx_conventions():
    table = tinyattn.tensor(rand(5, 2, seed=40), requires_grad=True)
    idx = tinyattn.tensor([0, 3, 4, 4])
    tinyattn.embedding(table, idx, padding_idx=-2).sum().backward()  # negative: no padding
    assert table.grad.numpy()[:, 0].tolist() == [1, 0, 0, 1, 2]
    table.grad = None
    tinyattn.embedding(table, idx, padding_idx=4).sum().backward()
    assert table.grad.numpy()[:, 0].tolist() == [1, 0, 0, 1, 0]


def test_reduction_must_be_an_int_code():
    x = tinyattn.tensor(X3)
    with pytest.raises(ValueError, match="reduction must be 0"):
        tinyattn.kl_div(x, x, "mean")
    with pytest.raises(ValueError, match="interpolation_mode"):
        tinyattn.grid_sampler(tinyattn.tensor(X4), tinyattn.zeros(2, 1, 1, 2), 5, 0, False)
    with pytest.raises(RuntimeError, match="3-D, 4-D or 5-D"):
        tinyattn.convolution(tinyattn.zeros(3), tinyattn.zeros(3), None, [1], [0], [1], False,
                             [0], 1)  # fmt: skip


def test_feature_dropout_zeroes_whole_channels_and_scales():
    tinyattn.manual_seed(0)
    x = tinyattn.ones(8, 16, 3, requires_grad=True)
    y = tinyattn.feature_dropout(x, 0.5, True)
    v = y.detach().numpy()
    assert set(np.unique(v).tolist()) <= {0.0, 2.0}
    assert (v == v[:, :, :1]).all()  # one decision per (n, c)
    assert 0 < (v == 0).mean() < 1
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), v)  # d input = mask / (1 - p)
    two = tinyattn.feature_dropout(tinyattn.ones(50, 40), 0.5, True).numpy()
    assert not (two == two[:, :1]).all()  # 2-D: single elements, as torch
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tinyattn.feature_dropout(tinyattn.ones(5), 0.5, True)
    assert tinyattn.feature_dropout(x, 1.0, True).abs().sum().item() == 0
    z = tinyattn.ones(4, 6, 2)
    assert tinyattn.feature_dropout_(z, 0.5, True) is z
    assert (z.numpy() == z.numpy()[:, :, :1]).all()


def test_dropout_inplace_forms_write_the_input():
    tinyattn.manual_seed(1)
    for name in ("dropout_", "alpha_dropout_", "feature_alpha_dropout_"):
        z = tinyattn.ones(4, 6, 2)
        out = getattr(tinyattn, name)(z, 0.5, True)
        assert out is z and not np.all(z.numpy() == 1.0), name
    z = tinyattn.ones(100)
    tinyattn.dropout(z, 0.25, True)
    kept = tinyattn.dropout(tinyattn.ones(4000), 0.25, True).numpy()
    np.testing.assert_allclose(np.unique(kept), [0.0, 1 / 0.75], rtol=1e-6)


def test_inplace_activations_write_the_input():
    for name, args in (("selu_", ()), ("celu_", (0.5,)), ("threshold_", (0.0, 9.0)),
                       ("rrelu_", ()), ("relu_", ())):  # fmt: skip
        z = tinyattn.tensor(X3.copy())
        want = getattr(tinyattn, name[:-1])(tinyattn.tensor(X3), *args)
        assert getattr(tinyattn, name)(z, *args) is z
        _close(z, want.numpy())


def test_pooling_stride_default_and_indices():
    x = tinyattn.tensor(X3)
    _close(tinyattn.max_pool1d(x, 2), F.max_pool1d(x, 2).numpy())
    _close(tinyattn.max_pool1d(x, 2, []), F.max_pool1d(x, 2, 2).numpy())
    values, indices = tinyattn.adaptive_max_pool1d(x, 2)
    assert indices.dtype == tinyattn.int64 and tuple(values.shape) == (2, 4, 2)


def test_embedding_bag_outputs():
    w = tinyattn.tensor(rand(5, 2, seed=41), requires_grad=True)
    idx, off = tinyattn.tensor([0, 3, 4, 4, 1]), tinyattn.tensor([0, 2])
    for mode, name in enumerate(("sum", "mean", "max")):
        out, offset2bag, bag_size, max_idx = tinyattn.embedding_bag(w, idx, off, False, mode)
        _close(out, F.embedding_bag(idx, w, off, mode=name).detach().numpy())
        assert offset2bag.tolist() == [0, 0, 1, 1, 1] and bag_size.tolist() == [2, 3]
    assert max_idx.shape == (2, 2)
    out[0].sum().backward()
    assert w.grad is not None


@needs_torch
def test_embedding_bag_matches_torch():
    wv = rand(5, 2, seed=41)
    for mode in (0, 1, 2):
        ours = tinyattn.embedding_bag(tinyattn.tensor(wv), tinyattn.tensor([0, 3, 4, 4, 1]),
                                      tinyattn.tensor([0, 2]), False, mode)  # fmt: skip
        theirs = torch.embedding_bag(torch.tensor(wv), torch.tensor([0, 3, 4, 4, 1]),
                                     torch.tensor([0, 2]), False, mode)  # fmt: skip
        _close(ours[0], theirs[0].numpy())
        if mode:
            for a, b in zip(ours[1:], theirs[1:]):
                assert a.tolist() == b.tolist()

    def f(lib, w, psw):
        return lib.embedding_bag(w, lib.tensor([0, 3, 4, 4, 1]), lib.tensor([0, 2, 5]), False,
                                 0, False, psw, True)[0]  # fmt: skip

    run_parity(f, wv, rand(5, seed=42))


@needs_torch
def test_signatures_accept_torch_keyword_names():
    x = tinyattn.tensor(X3)
    tinyattn.layer_norm(input=x, normalized_shape=[5], cudnn_enable=False)
    tinyattn.group_norm(input=x, num_groups=2, cudnn_enabled=False)
    tinyattn.kl_div(input=x, target=x, reduction=1, log_target=True)
    tinyattn.binary_cross_entropy_with_logits(input=x, target=x.sigmoid(), pos_weight=None,
                                              reduction=2)  # fmt: skip
    tinyattn.constant_pad_nd(input=x, pad=[1, -1], value=2)
    tinyattn.max_pool1d(input=x, kernel_size=2)
    tinyattn.threshold(input=x, threshold=0.0, value=1.0)
    tinyattn.rrelu(input=x, generator=None)
    tinyattn.embedding(weight=tinyattn.ones(3, 2), indices=tinyattn.tensor([1]), padding_idx=-1)


# -- top-level in-place forms ---------------------------------------------------------------
UNARY_INPLACE = (
    "abs_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ atan_ "
    "atanh_ ceil_ cos_ cosh_ deg2rad_ erf_ erfc_ exp2_ exp_ expm1_ fix_ floor_ frac_ i0_ log10_ "
    "log1p_ log2_ log_ neg_ negative_ rad2deg_ reciprocal_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ "
    "sqrt_ square_ tan_ tanh_ trunc_ zero_"
).split()


NO_TORCH_GRAD = {"acosh_", "arccosh_", "asinh_", "arcsinh_", "atanh_", "arctanh_"}


def _domain(name):
    if name in ("acosh_", "arccosh_"):
        return rand(3, 4, low=1.2, high=3.0, seed=50)
    if name in ("log_", "log2_", "log10_", "sqrt_", "rsqrt_", "reciprocal_"):
        return rand(3, 4, low=0.3, high=2.0, seed=50)
    return rand(3, 4, low=-0.9, high=0.9, seed=50)


@pytest.mark.parametrize("name", UNARY_INPLACE)
def test_top_level_inplace_unary(name):
    data = _domain(name)
    z = tinyattn.tensor(data.copy())
    assert getattr(tinyattn, name)(z) is z
    _close(z, getattr(tinyattn.tensor(data.copy()), name)().numpy())

    def f(lib, x):
        return getattr(lib, name)(x * 1.0)  # (in place on a non-leaf)

    if name in ("ceil_", "floor_", "fix_", "trunc_", "zero_"):
        run_parity(f, data)  # piecewise constant: finite differences see the steps
    elif name in NO_TORCH_GRAD:
        run_gradcheck(f, data)
        if torch is not None:  # torch: "derivative for inplace version ... not implemented"
            want = getattr(torch, name)(torch.tensor(data))
            _close(getattr(tinyattn, name)(tinyattn.tensor(data)), want.numpy())
    else:
        check_op(f, data)


def test_top_level_inplace_with_arguments():
    data = rand(3, 4, seed=51)
    for name, args, kw in (("clamp_", (-0.2, 0.3), {}), ("clip_", (None, 0.1), {}),
                           ("clamp_max_", (0.2,), {}), ("clamp_min_", (-0.1,), {}),
                           ("fill_", (1.5,), {}), ("logit_", (0.1,), {}),
                           ("nan_to_num_", (), {"posinf": 3.0}), ("round_", (), {"decimals": 1}),
                           ("xlogy_", (2.0,), {})):  # fmt: skip
        z = tinyattn.tensor(data.copy())
        assert getattr(tinyattn, name)(z, *args, **kw) is z, name
        _close(z, getattr(tinyattn.tensor(data.copy()), name)(*args, **kw).numpy())
    z = tinyattn.zeros(3)
    tinyattn.index_put_(z, (tinyattn.tensor([0, 0]),), tinyattn.tensor([1.0, 2.0]), True)
    assert z.tolist() == [3.0, 0.0, 0.0]
    y = tinyattn.ones(2, requires_grad=True) * 2
    tinyattn.detach_(y)
    assert y.grad_fn is None and not y.requires_grad
    check_op(lambda lib, x: lib.clamp_(x * 1.0, -0.5, 0.5), data)


def test_fill_is_out_of_place():
    def f(lib, x, v):
        return lib.fill(x, v.sum()) * x

    check_op(f, rand(3, seed=52), rand(2, seed=53))
    x = tinyattn.ones(2)
    y = tinyattn.fill(x, 4)
    assert y.tolist() == [4.0, 4.0] and x.tolist() == [1.0, 1.0]


ALIAS_MODULES = ("nn.functional.aten_forms",
                 "torch_surface.inplace", "torch_surface.aliases")  # fmt: skip
FACTORY_EXTRAS = {"layout", "pin_memory", "memory_format", "generator", "requires_grad", "out"}
OVERLOADED = {"trapz": ["y", "x", "dx", "dim"]}  # torch's two overloads in one function


@needs_torch
@pytest.mark.parametrize("module", ALIAS_MODULES)
def test_parameter_names_are_torch_schemas(module):
    """Every alias takes the parameters (names, order) of one of torch's ATen overloads,
    ``self`` spelled ``input`` as torch's Python binding does."""
    import importlib
    import inspect

    mod = importlib.import_module(f"tinyattn.{module}")
    wrong = []
    for name in mod.__all__:
        ours = [p for p in inspect.signature(getattr(mod, name)).parameters
                if p not in FACTORY_EXTRAS]  # fmt: skip
        overloads = [
            ["input" if a.name == "self" else a.name for a in s.arguments
             if a.name not in FACTORY_EXTRAS]
            for s in torch._C._jit_get_schemas_for_operator(f"aten::{name}")
        ]  # fmt: skip
        if ours not in overloads and OVERLOADED.get(name) != ours:
            wrong.append((name, ours, overloads))
    assert not wrong, wrong


# -- ``from tinyattn import *`` binds the lazy names, as ``from torch import *`` does -------
def _star(module_name: str) -> set[str]:
    namespace: dict = {}
    exec(f"from {module_name} import *", namespace)
    return {name for name in namespace if not name.startswith("_")}


def test_star_import_binds_the_lazy_functional_forms():
    names = _star("tinyattn")
    for name in ("conv2d", "native_layer_norm", "dropout", "save", "load", "vmap"):
        assert name in names, f"`from tinyattn import *` does not bind {name}"
    assert "nn" not in names  # subpackages stay lazy, as with torch
    x = tinyattn.ones(1, 1, 3, 3)
    namespace: dict = {}
    exec("from tinyattn import *", namespace)
    assert namespace["conv2d"](x, tinyattn.ones(1, 1, 2, 2)).shape == (1, 1, 2, 2)


@needs_torch
def test_star_import_binds_what_torch_binds():
    ours = _star("tinyattn")
    missing = sorted(n for n in _star("torch") - ours if hasattr(tinyattn, n))
    assert not missing, f"tinyattn has these names but `import *` does not bind them: {missing}"
