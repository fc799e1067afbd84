"""Random numbers: one NumPy generator underneath, seeded by ``manual_seed``.

tinyattn's random streams are deterministic for a given seed but are not the
same numbers torch draws (its Mersenne-Twister/Philox streams are not
reproduced); load torch weights through ``state_dict`` to compare numerically.
"""

from __future__ import annotations

import numpy as np


class Generator:
    """A random-number generator (``torch.Generator``) wrapping ``numpy.random.Generator``."""

    def __init__(self, device="cpu") -> None:
        self._seed = 67280421310721
        self._rng = np.random.default_rng(self._seed)

    def manual_seed(self, seed: int) -> Generator:
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        s = int(np.random.SeedSequence().entropy % (2**63))
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        return self._rng.bit_generator.state

    def set_state(self, state) -> None:
        self._rng.bit_generator.state = state


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the global generator (all of tinyattn's random ops draw from it)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator from ``get_rng_state()``'s tensor."""
    default_generator.set_state(new_state)


def _numpy_generator(generator: Generator | None) -> np.random.Generator:
    return (generator or default_generator)._rng
