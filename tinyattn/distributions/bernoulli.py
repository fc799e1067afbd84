"""``tinyattn.distributions.bernoulli``: torch's module path of ``Bernoulli``."""

from .categorical import Bernoulli

__all__ = ["Bernoulli"]
