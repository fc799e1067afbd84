"""Tensor long-tail methods: the random in-place samplers (cauchy_, geometric_,
log_normal_: distribution checks with a fixed seed, argument checks as torch's), the
deprecated resize / resize_as, to_dense and dim_order."""

import warnings

import numpy as np
import pytest
from harness import check_op, rand, torch

import tinyattn

needs_torch = pytest.mark.skipif(torch is None, reason="compares with torch directly")
N = 200_000


def test_cauchy_quantiles():
    tinyattn.manual_seed(0)
    x = tinyattn.empty(N, dtype=tinyattn.float64)
    assert x.cauchy_(2.0, 3.0) is x
    q25, q50, q75 = np.quantile(x.numpy(), [0.25, 0.5, 0.75])
    assert abs(q50 - 2.0) < 0.05 and abs(q25 - (2.0 - 3.0)) < 0.06 and abs(q75 - 5.0) < 0.06
    # the tails are heavy: P(|X - median| > 10 sigma) = 2 atan(1/10) / pi ~ 6.3%
    assert abs(np.mean(np.abs(x.numpy() - 2.0) > 30.0) - 2 * np.arctan(0.1) / np.pi) < 0.003


def test_geometric_moments_any_dtype():
    tinyattn.manual_seed(1)
    for dtype in (tinyattn.float32, tinyattn.int64):
        x = tinyattn.zeros(N, dtype=dtype).geometric_(0.25).numpy().astype(np.float64)
        assert x.min() == 1.0 and np.all(x == np.round(x))
        assert abs(x.mean() - 4.0) < 0.05  # 1 / p
        assert abs(x.var() - 12.0) / 12.0 < 0.03  # (1 - p) / p^2
        assert abs(np.mean(x == 1.0) - 0.25) < 0.005


def test_log_normal_moments():
    tinyattn.manual_seed(2)
    x = tinyattn.empty(N, dtype=tinyattn.float64).log_normal_(0.5, 0.75).numpy()
    assert x.min() > 0
    logs = np.log(x)
    assert abs(logs.mean() - 0.5) < 0.01 and abs(logs.std() - 0.75) < 0.01
    assert abs(np.median(x) - np.exp(0.5)) < 0.02
    y = tinyattn.empty(N, dtype=tinyattn.float64).log_normal_().numpy()  # defaults 1, 2
    assert abs(np.log(y).mean() - 1.0) < 0.02 and abs(np.log(y).std() - 2.0) < 0.02


def test_samplers_follow_the_seed():
    tinyattn.manual_seed(5)
    a = tinyattn.empty(4).cauchy_()
    tinyattn.manual_seed(5)
    assert tinyattn.empty(4).cauchy_().tolist() == a.tolist()
    g = tinyattn.Generator().manual_seed(3)
    b = tinyattn.empty(4).log_normal_(generator=g)
    g.manual_seed(3)
    assert tinyattn.empty(4).log_normal_(generator=g).tolist() == b.tolist()


def test_sampler_argument_errors_match_torch():
    cases = [
        (lambda L: L.zeros(3).cauchy_(0, 0), RuntimeError, "cauchy_ expects sigma > 0.0, but found sigma=0"),
        (lambda L: L.zeros(3).cauchy_(0, -1), RuntimeError, "found sigma=-1"),
        (lambda L: L.zeros(3, dtype=L.int64).cauchy_(), RuntimeError, "you specified long int"),
        (lambda L: L.zeros(3).geometric_(0), RuntimeError, r"geometric_ expects p to be in \(0, 1\), but got p=0"),
        (lambda L: L.zeros(3).geometric_(1.5), RuntimeError, "but got p=1.5"),
        (lambda L: L.zeros(3).log_normal_(1, 0), RuntimeError, "log_normal_ expects std > 0.0, but found std=0"),
        (lambda L: L.zeros(3, dtype=L.int64).log_normal_(), NotImplementedError, "log_normal_cpu"),
        (lambda L: L.zeros(3, requires_grad=True).cauchy_(), RuntimeError, "leaf Variable that requires grad"),
    ]  # fmt: skip
    for call, error, text in cases:
        with pytest.raises(error, match=text):
            call(tinyattn)
        if torch is not None:
            with pytest.raises(error, match=text):
                call(torch)


@pytest.mark.filterwarnings("ignore:non-inplace resize")
def test_resize_and_resize_as():
    check_op(lambda L, x: x.resize(3, 2), rand(2, 3, seed=1))
    check_op(lambda L, x: x.t().resize(6), rand(2, 3, seed=2))
    check_op(lambda L, x, y: x.resize_as(y), rand(2, 3, seed=3), rand(6, 1, seed=4))
    x = tinyattn.arange(6.0)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(2, 3)
    y[0, 0] = 7.0  # a view of a contiguous tensor, as torch's
    assert x[0].item() == 7.0
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        x.resize_as(tinyattn.zeros(3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="can only change the shape of a given tensor"):
            x.resize(2, 4)


def test_to_dense():
    x = tinyattn.arange(3.0)
    assert x.to_dense() is x and x.to_dense(tinyattn.float32) is x
    assert x.to_dense(tinyattn.float64).dtype == tinyattn.float64
    check_op(lambda L, x: (x * 2).to_dense(), rand(3, seed=5))


@pytest.mark.parametrize(
    "make",
    [lambda L: L.zeros(2, 3, 4), lambda L: L.zeros(2, 3, 4).permute(2, 0, 1),
     lambda L: L.zeros(3, 1).expand(3, 4), lambda L: L.zeros(2, 1, 4), lambda L: L.zeros(4, 3).t(),
     lambda L: L.zeros(2, 3, 4, 5).permute(0, 2, 3, 1), lambda L: L.zeros(()),
     lambda L: L.zeros(5, 2, 3)[:, :, ::2].transpose(0, 2)],
)  # fmt: skip
def test_dim_order(make):
    ours = make(tinyattn).dim_order()
    assert sorted(ours) == list(range(make(tinyattn).ndim))
    if torch is not None:
        assert ours == make(torch).dim_order()
        for check in (True,):
            try:
                expected = make(torch).dim_order(ambiguity_check=check)
            except RuntimeError:
                with pytest.raises(RuntimeError, match="does not have unique dim order"):
                    make(tinyattn).dim_order(ambiguity_check=check)
            else:
                assert make(tinyattn).dim_order(ambiguity_check=check) == expected


def test_dim_order_values():
    assert tinyattn.zeros(2, 3, 4).permute(2, 0, 1).dim_order() == (1, 2, 0)
    with pytest.raises(RuntimeError, match="unique dim order"):
        tinyattn.zeros(2, 1, 4).dim_order(ambiguity_check=True)
