"""Datasets (``torch.utils.data``): what a :class:`DataLoader` draws samples from.

Two kinds, as in torch:

* a **map-style** dataset (:class:`Dataset`) answers ``dataset[i]`` and usually ``len``;
  a sampler chooses the indices;
* an **iterable-style** dataset (:class:`IterableDataset`) is a stream: ``iter(dataset)``
  yields samples in its own order (no sampler, no shuffling by the loader).

>>> import tinyattn as torch
>>> from tinyattn.utils.data import TensorDataset, random_split
>>> ds = TensorDataset(torch.arange(10.0), torch.arange(10))
>>> ds[3]
(tensor(3.), tensor(3))
>>> [len(s) for s in random_split(ds, [0.7, 0.3], generator=torch.Generator().manual_seed(0))]
[7, 3]
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ...ops.creation.factories import from_numpy
from ...ops.random.sampling import randperm
from ...random import Generator, default_generator
from ...tensor_api.tensor import Tensor

__all__ = [
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "Subset",
    "ConcatDataset",
    "ChainDataset",
    "random_split",
]


class Dataset:
    """A map-style dataset: subclasses implement ``__getitem__`` (and usually ``__len__``).

    ``a + b`` concatenates two datasets (:class:`ConcatDataset`).
    """

    def __getitem__(self, index) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """An iterable-style dataset: subclasses implement ``__iter__``.

    With ``num_workers > 0`` each worker process iterates its own copy of the
    dataset; use :func:`~tinyattn.utils.data.get_worker_info` inside ``__iter__``
    to give each worker its own shard, or every sample comes ``num_workers`` times.
    ``a + b`` chains two streams (:class:`ChainDataset`).
    """

    def __iter__(self) -> Iterator:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: IterableDataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are rows: ``dataset[i] == tuple(t[i] for t in tensors)``.

    Every tensor must have the same size in dimension 0 (the number of samples).
    """

    def __init__(self, *tensors: Tensor) -> None:
        assert all(tensors[0].size(0) == t.size(0) for t in tensors), (
            "Size mismatch between tensors"
        )
        self.tensors = tensors

    def __getitem__(self, index) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)

    def __reduce__(self):
        # tinyattn tensors refuse pickle; a worker started with "spawn" gets the arrays.
        return (_tensor_dataset_from_arrays, ([t.numpy() for t in self.tensors],))


def _tensor_dataset_from_arrays(arrays) -> TensorDataset:
    return TensorDataset(*(from_numpy(a) for a in arrays))


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order: ``subset[i] == dataset[indices[i]]``."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        """A whole batch at once (the loader calls this when the dataset has it)."""
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Map-style datasets one after another: indices run through the first, then the next ...

    ``cumulative_sizes[k]`` is the total length of datasets ``0..k``; negative indices
    count from the end, as for a list.
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        assert len(self.datasets) > 0, "datasets should not be an empty iterable"
        for d in self.datasets:
            assert not isinstance(d, IterableDataset), (
                "ConcatDataset does not support IterableDataset"
            )
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another (the stream version of :class:`ConcatDataset`)."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator:
        for d in self.datasets:
            assert isinstance(d, IterableDataset), "ChainDataset only supports IterableDataset"
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            assert isinstance(d, IterableDataset), "ChainDataset only supports IterableDataset"
            total += len(d)
        return total


def _lengths_from_fractions(fractions: Sequence[float], n: int) -> list[int]:
    """torch's rule: floor(n * f) each, then the remainder one by one from the first split."""
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
    lengths = [int(math.floor(n * frac)) for frac in fractions]
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(
                f"Length of split at index {i} is 0. This might result in an empty dataset.",
                stacklevel=3,
            )
    return lengths


def random_split(
    dataset: Dataset,
    lengths: Sequence[int | float],
    generator: Generator | None = default_generator,
) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random :class:`Subset` s.

    Parameters
    ----------
    dataset : Dataset
        A map-style dataset with ``len``.
    lengths : sequence of int or float
        Integer lengths summing to ``len(dataset)``, or fractions summing to 1: each
        split gets ``floor(len(dataset) * fraction)`` samples and the ``r`` left over
        go one each to splits ``0, 1, ..., r - 1`` (torch's rule).
    generator : Generator
        Source of the permutation (the global generator by default).
    """
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(lengths, n)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, indices[end - length : end]) for end, length in zip(ends, lengths)]
