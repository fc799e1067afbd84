"""ops/random/sampling.py: randint_like, poisson, binomial, and the Tensor methods
multinomial / bernoulli (seeded draws, their moments, degenerate probabilities); rand /
randn / randint / randperm / normal and their ``*_like`` forms (shapes, dtypes, ranges,
determinism per seed); bad input."""

import pytest
from bad_calls import check_bad_call

import tinyattn


def test_random_samplers():
    g = tinyattn.Generator().manual_seed(0)
    r = tinyattn.randint_like(tinyattn.zeros(200), 3, 6, generator=g)
    assert r.dtype == tinyattn.float32 and set(r.tolist()) == {3.0, 4.0, 5.0}
    assert tinyattn.randint_like(tinyattn.tensor([1, 2]), 5).dtype == tinyattn.int64
    p = tinyattn.poisson(tinyattn.full((4000,), 3.0), generator=g)
    assert p.dtype == tinyattn.float32 and abs(p.mean().item() - 3.0) < 0.15
    assert tinyattn.poisson(tinyattn.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    b = tinyattn.binomial(tinyattn.full((4000,), 10.0), tinyattn.tensor([0.25]), generator=g)
    assert abs(b.mean().item() - 2.5) < 0.1 and b.max().item() <= 10
    assert tinyattn.binomial(tinyattn.tensor([7.0]), tinyattn.tensor([1.0])).tolist() == [7.0]


def test_tensor_sampling_methods():
    probs = tinyattn.tensor([[0.0, 1.0], [1.0, 0.0]])
    assert probs.multinomial(2, replacement=True).tolist() == [[1, 1], [0, 0]]
    assert probs.bernoulli().tolist() == [[0.0, 1.0], [1.0, 0.0]]


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda L: L.randint_like(L.zeros(2), 5, 3), r"low.*less than.*high"),
        (lambda L: L.poisson(L.tensor([1, 2])), r"poisson.*floating.*int64"),
        (lambda L: L.poisson(L.tensor([-1.0])), r"poisson.*rate.*non-negative"),
        (lambda L: L.binomial(L.tensor([10, 5]), L.tensor([0.5, 0.1])), r"binomial.*count.*int64"),
    ],
)
def test_sampling_bad_input(call, expected):
    check_bad_call(call, expected)


def test_binomial_refuses_bad_probabilities():
    # torch does not check and returns arbitrary counts; here the argument is named
    with pytest.raises(ValueError, match="prob.*\\[0, 1\\]"):
        tinyattn.binomial(tinyattn.tensor([10.0]), tinyattn.tensor([1.5]))
    with pytest.raises(ValueError, match="count.*non-negative"):
        tinyattn.binomial(tinyattn.tensor([-1.0]), tinyattn.tensor([0.5]))


def test_rand_randn_randint_randperm_shapes_dtypes_ranges():
    g = tinyattn.Generator().manual_seed(1)
    u = tinyattn.rand(2, 500, generator=g)
    assert u.shape == (2, 500) and u.dtype == tinyattn.float32
    assert 0.0 <= u.min().item() and u.max().item() < 1.0
    z = tinyattn.randn((4000,), generator=g, dtype=tinyattn.float64)
    assert z.dtype == tinyattn.float64 and abs(z.mean().item()) < 0.1
    assert abs(z.std().item() - 1.0) < 0.1
    c = tinyattn.randn(4000, dtype=tinyattn.complex64, generator=g)  # E|z|^2 = 1, as torch
    assert c.dtype == tinyattn.complex64 and abs((c.abs() ** 2).mean().item() - 1.0) < 0.1
    r = tinyattn.randint(3, 7, (300,), generator=g)
    assert r.dtype == tinyattn.int64 and set(r.tolist()) == {3, 4, 5, 6}
    assert tinyattn.randint(5, (2, 3)).shape == (2, 3)  # randint(high, size)
    p = tinyattn.randperm(10, generator=g)
    assert p.dtype == tinyattn.int64 and sorted(p.tolist()) == list(range(10))


def test_samples_are_leaves_and_rand_can_require_grad():
    x = tinyattn.rand(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad_fn is None
    assert not tinyattn.randint(0, 2, (3,)).requires_grad


def test_the_same_seed_gives_the_same_samples():
    def draw():
        g = tinyattn.Generator().manual_seed(7)
        return [
            tinyattn.rand(3, generator=g).tolist(),
            tinyattn.randn(3, generator=g).tolist(),
            tinyattn.randint(0, 100, (3,), generator=g).tolist(),
            tinyattn.randperm(5, generator=g).tolist(),
            tinyattn.normal(0.0, 1.0, (3,), generator=g).tolist(),
        ]

    assert draw() == draw()


def test_like_forms_take_the_shape_and_dtype_of_their_input():
    x = tinyattn.zeros(2, 3, dtype=tinyattn.float64)
    assert tinyattn.rand_like(x).dtype == tinyattn.float64 and tinyattn.rand_like(x).shape == (2, 3)
    assert tinyattn.randn_like(x, dtype=tinyattn.float32).dtype == tinyattn.float32
    assert tinyattn.randint_like(x, 4).shape == (2, 3)


def test_normal_broadcasts_tensor_moments():
    g = tinyattn.Generator().manual_seed(3)
    mean = tinyattn.tensor([[0.0], [100.0]], dtype=tinyattn.float64)
    s = tinyattn.normal(mean, tinyattn.tensor([0.01, 0.01, 0.01]), generator=g)
    assert s.shape == (2, 3) and s.dtype == tinyattn.float64
    assert abs(s[1].mean().item() - 100.0) < 0.1 and abs(s[0].mean().item()) < 0.1


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: tinyattn.rand(2, dtype=tinyattn.int64), r"rand\(\): expected a floating"),
        (lambda: tinyattn.randn(-1), r"randn\(\).*negative dimension"),
        (lambda: tinyattn.randint(5, 5, (2,)), r"randint\(\).*low.*less than.*high"),
        (lambda: tinyattn.randperm(-2), r"randperm\(\).*non-negative.*-2"),
        (lambda: tinyattn.multinomial(tinyattn.tensor([1.0, 1.0]), 3), r"num_samples=3 > 2"),
        (lambda: tinyattn.multinomial(tinyattn.tensor([-1.0, 1.0]), 1), r"non-negative"),
    ],
)
def test_bad_sampling_arguments_are_named(call, message):
    with pytest.raises((RuntimeError, TypeError), match=message):
        call()
