"""Random ops: sampling new tensors (``sampling.py``: rand, randn, randint, randperm, the
``*_like`` forms, normal, bernoulli, multinomial, poisson, binomial) and the in-place random
fills (``fills.py``: uniform_, normal_, bernoulli_, exponential_, random_). The generator
state they draw from is ``tinyattn/random/``."""

from . import fills, sampling

__all__ = ["fills", "sampling"]
