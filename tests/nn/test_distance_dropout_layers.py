"""Flatten/Unflatten, normalize, cosine_similarity, pairwise_distance, channel and alpha
dropout: gradcheck + torch parity, modules (repr, parity), dropout statistics, bad input."""

import warnings

import numpy as np
import pytest
from bad_calls import check_bad_call
from harness import check_op, rand, run_parity

import tinyattn
import tinyattn.nn as nn
import tinyattn.nn.functional as F

try:
    import torch
except ImportError:  # parity parts skip; gradchecks still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
@pytest.mark.parametrize("dim", [1, 0, -1])
def test_normalize(p, dim):
    check_op(lambda T, x: T.nn.functional.normalize(x, p=p, dim=dim), rand(3, 4, seed=1))


def test_normalize_tiny_norm_uses_eps():
    """A norm below eps: the denominator is the constant eps (d input = g / eps)."""
    x = np.array([[1e-14, -2e-14, 0.0]])
    run_parity(lambda T, x: T.nn.functional.normalize(x, dim=1), x, dtypes=(np.float64,))
    y = tinyattn.tensor(x, requires_grad=True)
    F.normalize(y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), 1e12)


@pytest.mark.parametrize("shapes,dim", [(((3, 4), (3, 4)), 1), (((2, 3, 4), (1, 3, 4)), -1)])
def test_cosine_similarity(shapes, dim):
    a, b = rand(*shapes[0], seed=2), rand(*shapes[1], seed=3)
    check_op(lambda T, a, b: T.nn.functional.cosine_similarity(a, b, dim=dim), a, b)


@needs_torch
def test_cosine_similarity_zero_and_tiny_vectors_match_torch():
    a = np.array([[0.0, 0.0, 0.0], [1e-9, 0.0, 0.0], [3.0, 4.0, 1.0]])
    b = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [-1.0, 2.0, 0.5]])
    run_parity(lambda T, a, b: T.nn.functional.cosine_similarity(a, b), a, b, dtypes=(np.float64,))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance(p, keepdim):
    a, b = rand(4, 5, seed=4), rand(5, seed=5)
    check_op(lambda T, a, b: T.nn.functional.pairwise_distance(a, b, p, 1e-6, keepdim), a, b)


def test_pairwise_distance_1d():
    check_op(lambda T, a, b: T.nn.functional.pairwise_distance(a, b), rand(5, seed=6), rand(5))


# -- dropout -----------------------------------------------------------------------------------

CHANNEL = [
    ("dropout1d", (8, 50, 6), (8, 50, 1)),
    ("dropout1d", (50, 6), (50, 1)),
    ("dropout2d", (8, 50, 3, 4), (8, 50, 1, 1)),
    ("dropout3d", (4, 50, 2, 3, 2), (4, 50, 1, 1, 1)),
    ("dropout3d", (50, 2, 3, 2), (50, 1, 1, 1)),
]


@pytest.mark.parametrize("name,shape,mask_shape", CHANNEL)
@pytest.mark.parametrize("inplace", [False, True])
def test_channel_dropout_zeroes_whole_channels(name, shape, mask_shape, inplace):
    tinyattn.manual_seed(0)
    p = 0.3
    x = tinyattn.tensor(rand(*shape, low=1.0, high=2.0, seed=7), requires_grad=True)
    src = x * 1.0 if inplace else x
    y = getattr(F, name)(src, p, True, inplace)
    assert (y is src) == inplace
    out = y.detach().numpy()
    ratio = out / x.detach().numpy()
    # per (n, c) the ratio is one value over the whole channel: 0 or 1 / (1 - p)
    per_channel = ratio.reshape(*[s for s, m in zip(shape, mask_shape) if m != 1], -1)
    assert np.allclose(per_channel, per_channel[..., :1])
    values = np.unique(np.round(per_channel[..., 0], 12))
    np.testing.assert_allclose(values, [0.0, 1 / (1 - p)])
    dropped = (per_channel[..., 0] == 0).mean()
    assert 0.15 < dropped < 0.45, dropped
    w = rand(*shape, seed=8)
    (y * tinyattn.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), w * ratio)  # d input = g * m


@pytest.mark.parametrize("name", ["dropout1d", "dropout2d", "dropout3d"])
def test_channel_dropout_eval_and_p0_are_identity(name):
    x = tinyattn.randn(
        *{"dropout1d": (2, 3, 4), "dropout2d": (2, 3, 4, 5)}.get(name, (2, 3, 4, 5, 6))
    )
    assert getattr(F, name)(x, 0.5, training=False) is x
    assert getattr(F, name)(x, 0.0) is x
    np.testing.assert_array_equal(getattr(F, name)(x, 1.0).numpy(), 0.0)


def test_dropout2d_3d_input_warns_and_drops_channels_of_n_c_l():
    with pytest.warns(UserWarning, match="3D input to dropout2d"):
        y = F.dropout2d(tinyattn.ones(4, 40, 5), 0.5)
    a = y.numpy()
    assert np.all(a == a[..., :1])


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_keeps_mean_and_variance(feature):
    tinyattn.manual_seed(1)
    alpha, p = 1.7580993408473766, 0.2
    scale = 1 / np.sqrt((alpha**2 * p + 1) * (1 - p))
    saturated = scale * (-alpha) + scale * alpha * p  # every dropped element's value
    x = tinyattn.randn(400, 200, 2, dtype=tinyattn.float64)
    fn = F.feature_alpha_dropout if feature else F.alpha_dropout
    a = fn(x, p, training=True).numpy()
    assert abs(a.mean()) < 0.02 and abs(a.std() - 1.0) < 0.02
    dropped = np.isclose(a, saturated)
    assert 0.17 < dropped.mean() < 0.23, dropped.mean()
    if feature:  # whole channels (both positions) at once
        assert np.array_equal(dropped[..., 0], dropped[..., 1])
    else:
        assert not np.array_equal(dropped[..., 0], dropped[..., 1])


@needs_torch
@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_matches_torch_for_the_same_mask(feature):
    """p=0 / eval are the identity in both; with a shared keep mask the affine map is torch's
    (recovered from torch's output where the input is known)."""
    x = rand(6, 5, 3, seed=9)
    name = "feature_alpha_dropout" if feature else "alpha_dropout"
    torch.manual_seed(0)
    yt = getattr(torch.nn.functional, name)(torch.tensor(x), 0.3, True).numpy()
    alpha, p = 1.7580993408473766, 0.3
    a = 1 / np.sqrt((alpha**2 * p + 1) * (1 - p))
    keep = ~np.isclose(yt, a * (-alpha) + a * alpha * p)
    np.testing.assert_allclose(yt[keep], a * x[keep] + a * alpha * p)
    ours = getattr(F, name)(tinyattn.tensor(x), 0.3, True).numpy()
    keep_o = ~np.isclose(ours, a * (-alpha) + a * alpha * p)
    np.testing.assert_allclose(ours[keep_o], a * x[keep_o] + a * alpha * p)
    for lib in (tinyattn, torch):
        xt = lib.tensor(x)
        assert getattr(lib.nn.functional, name)(xt, 0.3) is xt  # training=False by default


@pytest.mark.parametrize("name", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_modules_ignore_inplace_as_torch(name):
    """torch's AlphaDropout/FeatureAlphaDropout modules never pass ``inplace`` on: the input
    is left as it was and a new tensor returned (ours overwrote the input)."""
    x = tinyattn.tensor(rand(4, 6, 3, seed=12))
    before = x.numpy().copy()
    y = getattr(nn, name)(p=0.5, inplace=True).train()(x)
    assert y is not x
    np.testing.assert_array_equal(x.numpy(), before)
    assert not np.array_equal(y.numpy(), before)
    if torch is not None:
        xt = torch.tensor(before)
        assert getattr(torch.nn, name)(p=0.5, inplace=True).train()(xt) is not xt
        np.testing.assert_array_equal(xt.numpy(), before)


def test_alpha_dropout_gradient():
    tinyattn.manual_seed(2)
    x = tinyattn.tensor(rand(50, 8, seed=10), requires_grad=True)
    y = F.alpha_dropout(x, 0.4, training=True)
    y.sum().backward()
    alpha, p = 1.7580993408473766, 0.4
    a = 1 / np.sqrt((alpha**2 * p + 1) * (1 - p))
    kept = ~np.isclose(y.detach().numpy(), a * (-alpha) + a * alpha * p)
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, a, 0.0))


# -- modules -----------------------------------------------------------------------------------

MODULES = [
    ("Flatten", (), (2, 3, 4, 5)),
    ("Flatten", (0, 2), (2, 3, 4, 5)),
    ("Flatten", (-3, -2), (2, 3, 4, 5)),
    ("Unflatten", (1, (3, 4)), (2, 12, 5)),
    ("Unflatten", (-1, [2, 1, 3]), (2, 6)),
    ("CosineSimilarity", (), None),
    ("CosineSimilarity", (0, 1e-6), None),
    ("PairwiseDistance", (), None),
    ("PairwiseDistance", (1.0, 1e-3, True), None),
    ("Dropout1d", (), (2, 3, 4)),
    ("Dropout2d", (0.2, True), (2, 3, 4, 4)),
    ("Dropout3d", (), (2, 3, 2, 2, 2)),
    ("AlphaDropout", (), (3, 4)),
    ("FeatureAlphaDropout", (0.1,), (3, 4, 2)),
]


@needs_torch
@pytest.mark.parametrize("name,args,shape", MODULES)
def test_module_repr_and_parity(name, args, shape):
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    ours.eval(), theirs.eval()  # dropouts: the identity (training is tested by statistics)
    inputs = [rand(*shape, seed=11)] if shape else [rand(4, 3, seed=12), rand(4, 3, seed=13)]
    xo = [tinyattn.tensor(a, requires_grad=True) for a in inputs]
    xt = [torch.tensor(a, requires_grad=True) for a in inputs]
    yo, yt = ours(*[x * 1.0 for x in xo]), theirs(*[x * 1.0 for x in xt])
    assert tuple(yo.shape) == tuple(yt.shape)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    w = rand(*yt.shape, seed=14)
    (yo * tinyattn.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    for a, b in zip(xo, xt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_dropout_modules_train_mode_drop():
    tinyattn.manual_seed(3)
    m = nn.Dropout2d(0.5)
    y = m(tinyattn.ones(4, 30, 3, 3)).numpy()
    assert set(np.unique(y)) == {0.0, 2.0} and np.all(y == y[..., :1, :1])
    m.eval()
    x = tinyattn.ones(4, 30, 3, 3)
    assert m(x) is x


# -- bad input -----------------------------------------------------------------------------------

BAD = [
    ("dropout1d_4d", lambda T: T.nn.functional.dropout1d(T.ones(2, 3, 4, 5)), r"2D or 3D.*4D"),
    (
        "dropout1d_p",
        lambda T: T.nn.functional.dropout1d(T.ones(3, 4), 1.5),
        r"between 0 and 1.*1.5",
    ),
    ("dropout2d_p", lambda T: T.nn.functional.dropout2d(T.ones(1, 3, 4), -0.1), r"-0.1"),
    (  # (was: element-wise dropout)
        "dropout2d_1d",
        lambda T: T.nn.functional.dropout2d(T.ones(6), 0.3),
        r"at least 2 dimensions.*\[6\]",
    ),
    ("alpha_p", lambda T: T.nn.functional.alpha_dropout(T.ones(3), 2.0), r"between 0 and 1"),
    ("Dropout1d_p", lambda T: T.nn.Dropout1d(1.5), r"between 0 and 1"),
    (
        "feature_alpha_1d",
        lambda T: T.nn.functional.feature_alpha_dropout(T.ones(3), 0.5, True),
        r"at least 2 dimensions",
    ),
    (
        "cosine_shapes",
        lambda T: T.nn.functional.cosine_similarity(T.ones(3, 4), T.ones(2, 4)),
        r"\[3, 4\].*\[2, 4\]",
    ),
    (
        "pairwise_shapes",
        lambda T: T.nn.functional.pairwise_distance(T.ones(3, 4), T.ones(2, 4)),
        r"\[3, 4\].*\[2, 4\]",
    ),
    ("normalize_dim", lambda T: T.nn.functional.normalize(T.ones(4)), r"dim|[Dd]imension out"),
    (
        "unflatten_sizes",
        lambda T: T.nn.Unflatten(1, (2, 3))(T.ones(2, 5)),
        r"unflatten|multiply|5",
    ),
    ("flatten_1d", lambda T: T.nn.Flatten()(T.ones(2)), r"[Dd]imension out of range"),
]


@pytest.mark.parametrize("name,call,expected", BAD, ids=[b[0] for b in BAD])
def test_bad_input(name, call, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_bad_call(call, expected)
