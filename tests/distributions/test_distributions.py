"""tinyattn.distributions against torch.distributions: densities, CDFs, entropies and
moments (gradcheck in float64 and torch parity of values and gradients through
tests/harness.py), reparameterised sampling, shapes, and argument checks."""

from __future__ import annotations

import numpy as np
import pytest
from harness import check_op, rand

import tinyattn
from tinyattn.distributions import Bernoulli, Categorical, Normal, Uniform
from tinyattn.distributions.normal import Normal as NormalAtTorchPath


def test_normal_density_cdf_icdf_entropy():
    loc, scale, x = rand(2, 3), rand(2, 3, low=0.5, high=2.0, seed=1), rand(2, 3, seed=2)
    check_op(lambda T, m, s, v: T.distributions.Normal(m, s).log_prob(v), loc, scale, x)
    check_op(lambda T, m, s, v: T.distributions.Normal(m, s).cdf(v), loc, scale, x)
    p = rand(2, 3, low=0.05, high=0.95, seed=3)
    check_op(lambda T, m, s, q: T.distributions.Normal(m, s).icdf(q), loc, scale, p)
    check_op(lambda T, s: T.distributions.Normal(0.0, s).entropy(), scale)
    check_op(
        lambda T, s: (
            T.distributions.Normal(1.0, s).variance + T.distributions.Normal(1.0, s).stddev
        ),
        scale,
    )


def test_uniform_density_cdf_icdf_entropy():
    low, x = rand(4, low=-2, high=-1), rand(4, low=-0.9, high=0.9, seed=1)
    high = rand(4, low=1, high=2, seed=2)
    check_op(lambda T, a, b, v: T.distributions.Uniform(a, b).log_prob(v), low, high, x)
    check_op(lambda T, a, b, v: T.distributions.Uniform(a, b).cdf(v), low, high, x)
    check_op(lambda T, a, b, v: T.distributions.Uniform(a, b).icdf(v.abs()), low, high, x)
    check_op(lambda T, a, b: T.distributions.Uniform(a, b).entropy(), low, high)
    out = Uniform(0.0, 1.0).log_prob(tinyattn.tensor([-0.5, 0.5, 1.0]))
    assert np.array_equal(out.numpy(), [-np.inf, 0.0, -np.inf])


def test_categorical_from_logits_and_from_probs():
    logits, probs = rand(3, 5), rand(3, 5, low=0.1, high=1.0, seed=1)
    value = np.array([0, 4, 2])
    check_op(lambda T, z: T.distributions.Categorical(logits=z).log_prob(T.tensor(value)), logits)
    check_op(lambda T, z: T.distributions.Categorical(logits=z).entropy(), logits)
    check_op(lambda T, p: T.distributions.Categorical(probs=p).log_prob(T.tensor(value)), probs)
    check_op(lambda T, p: T.distributions.Categorical(probs=p).entropy(), probs)
    check_op(lambda T, p: T.distributions.Categorical(probs=p).logits, probs)


def test_bernoulli_from_probs_and_from_logits():
    probs, logits, x = rand(4, low=0.1, high=0.9), rand(4, seed=1), np.array([0.0, 1.0, 1.0, 0.0])
    check_op(lambda T, p: T.distributions.Bernoulli(probs=p).log_prob(T.tensor(x)), probs)
    check_op(lambda T, p: T.distributions.Bernoulli(probs=p).entropy(), probs)
    check_op(lambda T, z: T.distributions.Bernoulli(logits=z).log_prob(T.tensor(x)), logits)
    check_op(lambda T, z: T.distributions.Bernoulli(logits=z).probs, logits)


def test_rsample_is_reparameterised():
    tinyattn.manual_seed(0)
    loc = tinyattn.tensor([0.5, -1.0], requires_grad=True)
    scale = tinyattn.tensor([2.0, 0.5], requires_grad=True)
    draw = Normal(loc, scale).rsample((3,))
    assert draw.shape == (3, 2) and Normal(loc, scale).sample().grad_fn is None
    draw.sum().backward()
    eps = ((draw - loc) / scale).detach().sum(0)
    assert np.allclose(loc.grad.numpy(), 3.0) and np.allclose(scale.grad.numpy(), eps.numpy())


def test_sample_shapes_and_statistics():
    tinyattn.manual_seed(1)
    d = Normal(tinyattn.zeros(2, 1), tinyattn.tensor([1.0, 3.0]))
    assert (
        d.batch_shape == (2, 2) and d.event_shape == () and d.sample((4, 5)).shape == (4, 5, 2, 2)
    )
    x = Normal(tinyattn.tensor(1.5), tinyattn.tensor(0.5)).sample((20000,)).numpy()
    assert abs(x.mean() - 1.5) < 0.02 and abs(x.std() - 0.5) < 0.02
    c = Categorical(probs=tinyattn.tensor([[0.1, 0.9], [1.0, 0.0]]))
    s = c.sample((3000,))
    assert s.shape == (3000, 2) and s.dtype == tinyattn.int64 and (s[:, 1] == 0).all()
    assert abs(s[:, 0].double().mean().item() - 0.9) < 0.03
    b = Bernoulli(probs=tinyattn.tensor([0.0, 1.0])).sample((5,))
    assert np.array_equal(b.numpy(), np.tile([0.0, 1.0], (5, 1)))
    u = Uniform(-1.0, 3.0).sample((2000,)).numpy()
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1.0) < 0.1
    assert NormalAtTorchPath is Normal and Bernoulli(0.3).enumerate_support().shape == (2,)


def test_moments_and_modes():
    n = Normal(tinyattn.tensor([1.0, 2.0]), tinyattn.tensor([3.0, 4.0]))
    assert np.array_equal(n.mean.numpy(), [1, 2]) and np.array_equal(n.variance.numpy(), [9, 16])
    c = Categorical(logits=tinyattn.tensor([[0.0, 2.0, 1.0]]))
    assert c.mode.tolist() == [1] and np.isnan(c.mean.numpy()).all() and c.mean.shape == (1,)
    b = Bernoulli(tinyattn.tensor([0.2, 0.5, 0.9]))
    assert np.allclose(b.variance.numpy(), [0.16, 0.25, 0.09])
    assert b.mode.numpy()[0] == 0 and np.isnan(b.mode.numpy()[1]) and b.mode.numpy()[2] == 1


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Normal(0.0, tinyattn.tensor([1.0, 0.0])), "parameter scale"),
        (lambda: Normal(0.0, -1.0), "GreaterThan"),
        (lambda: Normal("a", 1.0), "numbers or Tensor"),
        (lambda: Uniform(1.0, 0.0), "parameter low"),
        (lambda: Categorical(probs=tinyattn.ones(3), logits=tinyattn.ones(3)), "not both"),
        (lambda: Categorical(), "not both"),
        (lambda: Categorical(probs=tinyattn.tensor(1.0)), "at least one-dimensional"),
        (lambda: Categorical(probs=tinyattn.tensor([0.5, -0.5])), "Simplex"),
        (lambda: Bernoulli(probs=tinyattn.tensor([1.5])), "Interval"),
        (
            lambda: Categorical(logits=tinyattn.zeros(3)).log_prob(tinyattn.tensor([3])),
            "integer in",
        ),
        (lambda: Normal(0.0, 1.0).log_prob(0.5), "must be a Tensor"),
    ],
)
def test_bad_arguments_raise_naming_them(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_validation_can_be_switched_off():
    assert Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    with pytest.raises(TypeError, match="sample_shape"):
        Normal(0.0, 1.0).sample(3)
