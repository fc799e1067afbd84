"""Random numbers: one NumPy generator underneath, seeded by ``manual_seed``.

tinyattn's random streams are deterministic for a given seed but are not the
same numbers torch draws (its Mersenne-Twister/Philox streams are not
reproduced); load torch weights through ``state_dict`` to compare numerically.
"""

from __future__ import annotations

import contextlib

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


@contextlib.contextmanager
def fork_rng(
    devices=None,
    enabled: bool = True,
    _caller: str = "fork_rng",
    _devices_kw: str = "devices",
    device_type: str | None = None,
):
    """Run the ``with`` block, then restore the random state it started with.

    Only the CPU generator exists here: ``devices`` must be None or empty (torch forks
    the listed accelerators' generators too). ``enabled=False`` does nothing."""
    if devices is not None and len(list(devices)) > 0:
        raise RuntimeError(
            f"{_caller}: {_devices_kw} must be None or empty (tinyattn runs on the CPU only), "
            f"got {list(devices)!r}"
        )
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def thread_safe_generator() -> Generator | None:
    """The generator of the calling DataLoader thread worker; None elsewhere (tinyattn's
    workers are processes, so always None: random ops use the global generator)."""
    return None


def _numpy_generator(generator: Generator | None) -> np.random.Generator:
    return (generator or default_generator)._rng
