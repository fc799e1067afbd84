"""``tinyattn.distributions``: probability distributions with torch's interface.

``Normal``, ``Uniform``, ``Bernoulli`` and ``Categorical`` (and their base class
``Distribution``) at torch's module paths (``tinyattn.distributions.normal.Normal`` ...):
``sample``/``rsample`` of shape ``sample_shape + batch_shape + event_shape``,
``log_prob``, ``cdf``, ``icdf``, ``entropy``, ``mean``, ``mode``, ``stddev``,
``variance``, differentiable in the parameters, with torch's argument checks
(``validate_args``). torch's other distributions, transforms and ``kl_divergence`` are
not here.
"""

from . import bernoulli  # torch's module path of Bernoulli, an attribute as in torch
from .categorical import Bernoulli, Categorical
from .distribution import Distribution
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "Normal", "Uniform"]
