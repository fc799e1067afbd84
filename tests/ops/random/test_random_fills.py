"""ops/random/fills.py: the in-place random fills uniform_, normal_, bernoulli_, exponential_
and random_ (the Tensor methods forward to them): values and moments, determinism per
generator seed, the version bump, and the writes autograd refuses."""

import pytest

import tinyattn
from tinyattn.ops.random import fills


def _seeded(seed: int = 0):
    return tinyattn.Generator().manual_seed(seed)


def test_fills_draw_from_their_distributions():
    x = tinyattn.empty(4000, dtype=tinyattn.float64)
    assert fills.uniform_(x, 2.0, 3.0, generator=_seeded()) is x
    assert 2.0 <= x.min().item() and x.max().item() < 3.0
    fills.normal_(x, 5.0, 0.5, generator=_seeded())
    assert abs(x.mean().item() - 5.0) < 0.05 and abs(x.std().item() - 0.5) < 0.05
    fills.exponential_(x, 4.0, generator=_seeded())  # mean 1 / lambda
    assert x.min().item() >= 0.0 and abs(x.mean().item() - 0.25) < 0.02
    fills.bernoulli_(x, 0.3, generator=_seeded())
    assert set(x.tolist()) == {0.0, 1.0} and abs(x.mean().item() - 0.3) < 0.03


def test_random_takes_a_range_and_an_upper_bound():
    x = tinyattn.empty(500, dtype=tinyattn.int64)
    fills.random_(x, 3, 6, generator=_seeded())
    assert set(x.tolist()) == {3, 4, 5}
    fills.random_(x, 2, generator=_seeded())  # random_(to): [0, to)
    assert set(x.tolist()) == {0, 1}


def test_the_same_seed_gives_the_same_fill():
    a, b = tinyattn.empty(6), tinyattn.empty(6)
    a.normal_(generator=_seeded(4))
    b.normal_(generator=_seeded(4))
    assert a.tolist() == b.tolist()


def test_a_fill_bumps_the_version_and_breaks_a_saved_tensor():
    w = tinyattn.ones(3, requires_grad=True)
    x = tinyattn.ones(3) * 1.0
    y = (w * x).sum()  # x is saved for w's gradient
    before = x._version.value
    fills.uniform_(x)
    assert x._version.value == before + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_a_leaf_that_requires_grad_is_refused():
    w = tinyattn.zeros(3, requires_grad=True)
    for fill in (fills.uniform_, fills.normal_, fills.bernoulli_, fills.exponential_):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            fill(w)
    with tinyattn.no_grad():
        fills.normal_(w)  # what nn.init does
    assert w.requires_grad
