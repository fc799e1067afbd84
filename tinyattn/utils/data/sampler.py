"""Samplers (``torch.utils.data``): which indices of a map-style dataset, in which order.

A sampler is any iterable of indices (a list works); :class:`BatchSampler` groups
another sampler's indices into lists, one list per batch. Random samplers draw from
``generator`` when given, so the order depends only on its seed and not on the
global random state; without one they draw a fresh seed from the global generator
on each pass (so ``tinyattn.manual_seed`` fixes every epoch's order).

The orders are deterministic but are not the permutations torch draws: tinyattn's
random streams are NumPy's, not torch's.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized

from ...core import _dtype as dt
from ...ops.creation.factories import as_tensor
from ...ops.random.sampling import multinomial, randint, randperm
from ...random import Generator, _numpy_generator

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
]

_CHUNK = 1024  # indices drawn at a time by RandomSampler(replacement=True)


class Sampler:
    """Base class: subclasses implement ``__iter__`` (indices) and, when known, ``__len__``."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


def _is_positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _fresh_generator(generator: Generator | None) -> Generator:
    """``generator`` itself, or a new one seeded from the global generator (torch's scheme)."""
    if generator is not None:
        return generator
    seed = int(_numpy_generator(None).integers(0, 2**63 - 1))
    return Generator().manual_seed(seed)


class SequentialSampler(Sampler):
    """Indices ``0, 1, ..., len(data_source) - 1`` in order."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices into ``data_source``.

    Without replacement: a random permutation of all indices per ``len(data_source)``
    samples drawn (``num_samples`` may exceed the length: whole permutations, then the
    head of one more). With replacement: ``num_samples`` independent uniform draws.

    Parameters
    ----------
    data_source : sized dataset
    replacement : bool
    num_samples : int, optional
        Samples per pass, ``len(data_source)`` by default.
    generator : Generator, optional
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        self.data_source = data_source
        self.replacement = replacement
        self.generator = generator
        self._requested = num_samples  # None: one pass over the dataset
        if not _is_positive_int(self.num_samples):
            raise ValueError(
                "num_samples should be a positive integer value, "
                f"but got num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._requested is None else self._requested

    def __iter__(self) -> Iterator[int]:
        # Drawn when iteration starts, as torch (a fresh seed per pass without a generator).
        # With replacement, lazily in chunks: an "endless" sampler (num_samples=10**10)
        # must not build all its indices up front. (Our stream is NumPy's, not torch's.)
        generator = _fresh_generator(self.generator)
        size, wanted = len(self.data_source), self.num_samples
        if self.replacement:
            for start in range(0, wanted, _CHUNK):
                count = min(_CHUNK, wanted - start)
                yield from randint(0, size, (count,), generator=generator).tolist()
            return
        whole_passes, rest = divmod(wanted, size)
        for _ in range(whole_passes):
            yield from randperm(size, generator=generator).tolist()
        if rest:
            yield from randperm(size, generator=generator).tolist()[:rest]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order (a new permutation per pass)."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        order = randperm(len(self.indices), generator=self.generator).tolist()
        yield from (self.indices[position] for position in order)

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probability proportional to ``weights``.

    Parameters
    ----------
    weights : sequence of float, shape (N,)
        Non-negative, not necessarily summing to one.
    num_samples : int
    replacement : bool
        Without replacement, an index is drawn at most once (``num_samples <= N``).
    generator : Generator, optional
    """

    def __init__(
        self,
        weights: Sequence[float],
        num_samples: int,
        replacement: bool = True,
        generator: Generator | None = None,
    ) -> None:
        if not _is_positive_int(num_samples):
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        weights_tensor = as_tensor(weights, dtype=dt.float64)
        if weights_tensor.ndim != 1:
            raise ValueError(
                "weights should be a 1d sequence but given weights have shape "
                f"{tuple(weights_tensor.shape)}"
            )
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        draw = multinomial(
            self.weights, self.num_samples, self.replacement, generator=self.generator
        )
        yield from draw.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``; the last may be shorter.

    >>> list(BatchSampler(range(7), batch_size=3, drop_last=False))
    [[0, 1, 2], [3, 4, 5], [6]]
    >>> list(BatchSampler(range(7), batch_size=3, drop_last=True))
    [[0, 1, 2], [3, 4, 5]]
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not _is_positive_int(batch_size):
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        indices = iter(self.sampler)
        while batch := list(itertools.islice(indices, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch

    def __len__(self) -> int:
        full, partial = divmod(len(self.sampler), self.batch_size)  # type: ignore[arg-type]
        return full + (1 if partial and not self.drop_last else 0)
