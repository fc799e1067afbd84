"""``DataLoader``: batches from a dataset, in the main process or in worker processes.

>>> import tinyattn as torch
>>> from tinyattn.utils.data import DataLoader, TensorDataset
>>> ds = TensorDataset(torch.arange(5.0), torch.arange(5))
>>> [x.tolist() for x, y in DataLoader(ds, batch_size=2)]
[[0.0, 1.0], [2.0, 3.0], [4.0]]

How a batch is made (as in torch): the *sampler* yields indices (sequential, or random
with ``shuffle=True``); the *batch sampler* groups them into lists of ``batch_size``;
a *batch maker* (``_MapBatches``: ``dataset[i]`` for each index; ``_StreamBatches``: the
next items of an iterable dataset) gets the samples and ``collate_fn`` merges them
(:func:`default_collate`).

``num_workers > 0`` makes the batches in worker processes (``_multiprocess.py`` is the
main-process side, ``_worker.py`` the worker side), up to ``prefetch_factor`` batches
per worker in flight. Batch ``k`` goes to worker ``k mod num_workers`` and the batches
are yielded in order, so the result is the same as with ``num_workers=0`` (unless
``in_order=False``). An :class:`IterableDataset` is iterated by every worker: shard it
with :func:`get_worker_info`. A failing worker loses no batch but its failing one: an
error is raised for that batch, and a loop that catches it gets the rest of the epoch
(docs/reliability.md, "DataLoader workers").

CPU only: ``pin_memory`` and ``pin_memory_device`` are accepted and do nothing
(``pin_memory=True`` warns, as torch does on a machine without an accelerator).
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ...random import Generator
from ._collate import default_collate, default_convert
from ._multiprocess import MultiProcessBatches
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]


class _StreamSampler(Sampler):
    """The index sampler of an iterable dataset: ``None`` forever (a stream has no indices).

    Batching it gives ``[None] * batch_size`` per batch: only the batch's size matters.
    """

    def __iter__(self):
        return itertools.repeat(None)


class _MapBatches:
    """Makes a batch from a map-style dataset: look the indices up, then ``collate_fn``."""

    def __init__(self, dataset, batched: bool, collate_fn: Callable, drop_last: bool) -> None:
        self.dataset, self.batched, self.collate_fn = dataset, batched, collate_fn

    def __call__(self, indices):
        if not self.batched:  # ``indices`` is one index
            return self.collate_fn(self.dataset[indices])
        getitems = getattr(self.dataset, "__getitems__", None)
        samples = getitems(indices) if callable(getitems) else [self.dataset[i] for i in indices]
        return self.collate_fn(samples)


class _StreamBatches:
    """Makes a batch from the next items of an iterable dataset; StopIteration at its end.

    A short last batch is kept unless ``drop_last``; once the stream has come up short,
    every later call raises StopIteration.
    """

    def __init__(self, dataset, batched: bool, collate_fn: Callable, drop_last: bool) -> None:
        self.items = iter(dataset)
        self.batched, self.collate_fn, self.drop_last = batched, collate_fn, drop_last
        self.came_up_short = False

    def __call__(self, indices):
        if self.came_up_short:
            raise StopIteration
        if not self.batched:
            return self.collate_fn(next(self.items))
        wanted = len(indices)
        samples = list(itertools.islice(self.items, wanted))
        self.came_up_short = len(samples) < wanted
        if not samples or (self.came_up_short and self.drop_last):
            raise StopIteration
        return self.collate_fn(samples)


def _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers) -> None:
    """Reject bad worker options with torch's messages, in torch's order."""
    if num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; "
            "use num_workers=0 to disable multiprocessing."
        )
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if prefetch_factor is not None:
        if num_workers == 0:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor "
                "to None."
            )
        if prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


def _check_sampling_options(iterable, batch_size, shuffle, sampler, batch_sampler, drop_last):
    """Reject combinations of ordering and batching options that contradict each other."""
    if iterable:  # a stream has no indices to order
        given = {"shuffle": shuffle, "sampler": sampler, "batch_sampler": batch_sampler}
        for name, value in given.items():
            if value is not None and value is not False:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified "
                    f"{name} option, but got {name}={value}"
                )
    if shuffle and sampler is not None:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    custom_batching = batch_size != 1 or shuffle or sampler is not None or drop_last
    if batch_sampler is not None and custom_batching:
        raise ValueError(
            "batch_sampler option is mutually exclusive "
            "with batch_size, shuffle, sampler, and drop_last"
        )
    if batch_sampler is None and batch_size is None and drop_last:
        raise ValueError(
            "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
        )


def _default_sampler(dataset, iterable: bool, shuffle: bool, generator) -> Sampler:
    if iterable:
        return _StreamSampler()
    if shuffle:
        return RandomSampler(dataset, generator=generator)
    return SequentialSampler(dataset)


class DataLoader:
    """Iterate over ``dataset`` in batches (``torch.utils.data.DataLoader``).

    Parameters
    ----------
    dataset : Dataset or IterableDataset
    batch_size : int or None
        Samples per batch (1). ``None`` turns batching off: each item is one sample,
        passed through ``collate_fn`` (``default_convert`` by default).
    shuffle : bool
        Draw a new random order each epoch (map-style datasets only).
    sampler : Sampler or iterable of indices
        Which indices, in which order (excludes ``shuffle``).
    batch_sampler : iterable of lists of indices
        Whole batches of indices (excludes ``batch_size``, ``shuffle``, ``sampler``,
        ``drop_last``).
    num_workers : int
        Worker processes (0: load in the main process).
    collate_fn : callable
        Merges a list of samples into a batch (``default_collate``).
    pin_memory : bool
        Accepted, no effect (CPU only).
    drop_last : bool
        Drop the last batch when it is smaller than ``batch_size``.
    timeout : float
        Seconds to wait for a batch from the workers before raising RuntimeError (0: wait
        forever); the batch stays in flight and the next ``next()`` waits for it again.
    worker_init_fn : callable
        Called as ``worker_init_fn(worker_id)`` in each worker after seeding. If it raises,
        its error is raised once and the other workers build that worker's batches.
    multiprocessing_context : str or context
        "fork", "spawn", "forkserver" or a context (default: "fork" where available).
        Under "spawn"/"forkserver" the dataset is pickled into each worker.
    generator : Generator
        Source of the shuffling order and of the workers' base seed.
    prefetch_factor : int
        Batches in flight per worker (2 when ``num_workers > 0``).
    persistent_workers : bool
        Keep the workers (and their dataset copies and random state) between epochs.
    in_order : bool
        ``False`` yields worker batches as they arrive instead of in order.
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable | None = None,
        multiprocessing_context=None,
        generator: Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers)
        iterable = isinstance(dataset, IterableDataset)
        _check_sampling_options(iterable, batch_size, shuffle, sampler, batch_sampler, drop_last)
        shuffle = bool(shuffle)
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if sampler is None:
            sampler = _default_sampler(dataset, iterable, shuffle, generator)
        if batch_sampler is not None:  # it decides the batches: size and drop_last are its own
            batch_size, drop_last = None, False
        elif batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._iterable = iterable
        self._kept_iterator: MultiProcessBatches | None = None  # with persistent_workers
        self._frozen = True

    # Changing these after construction would desynchronise the sampler and the batches.
    _FROZEN = (
        "batch_size",
        "batch_sampler",
        "sampler",
        "drop_last",
        "dataset",
        "persistent_workers",
    )

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._FROZEN and self.__dict__.get("_frozen", False):
            raise ValueError(
                f"{name} attribute should not be set after {type(self).__name__} is initialized"
            )
        super().__setattr__(name, value)

    def _batch_plan(self) -> Iterable:
        """What to iterate for one epoch: lists of indices, or single indices if unbatched."""
        return self.sampler if self.batch_sampler is None else self.batch_sampler

    def _batch_maker(self) -> Callable:
        """``f(dataset)`` -> a function from one item of the plan to a batch (picklable)."""
        maker = _StreamBatches if self._iterable else _MapBatches
        batched = self.batch_sampler is not None
        return functools.partial(
            maker, batched=batched, collate_fn=self.collate_fn, drop_last=self.drop_last
        )

    def __iter__(self):
        if self.pin_memory:
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, "
                "then device pinned memory won't be used.",
                stacklevel=2,
            )
        if self.num_workers == 0:
            return _InProcessBatches(self)
        if not self.persistent_workers:
            return MultiProcessBatches(self)
        if self._kept_iterator is None or self._kept_iterator.workers_stopped:
            if self._kept_iterator is not None:
                self._kept_iterator.close()
            self._kept_iterator = MultiProcessBatches(self)
        else:
            self._kept_iterator.start_epoch(self)
        return self._kept_iterator

    def __len__(self) -> int:
        """Batches per epoch; for an iterable dataset, from ``len(dataset)`` (TypeError if none)."""
        return self._epoch_length()()

    def _epoch_length(self) -> Callable[[], int]:
        """``__len__`` for the iterators, without a reference back to the loader.

        (A persistent iterator is kept by its loader; pointing back would make a cycle
        that only the garbage collector frees, after the queues' own finalizers ran.)
        """
        if self._iterable:
            return functools.partial(_stream_length, self.dataset, self.batch_size, self.drop_last)
        return functools.partial(len, self._batch_plan())


def _stream_length(dataset, batch_size: int | None, drop_last: bool) -> int:
    samples = len(dataset)
    if batch_size is None:
        return samples
    full, partial = divmod(samples, batch_size)
    return full + (1 if partial and not drop_last else 0)


class _InProcessBatches:
    """The iterator of a DataLoader with ``num_workers=0``: each batch made when asked for."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader_len = loader._epoch_length()
        self._plan = iter(loader._batch_plan())
        self._make_batch = loader._batch_maker()(loader.dataset)

    def __iter__(self):
        return self

    def __next__(self):
        return self._make_batch(next(self._plan))

    def __len__(self) -> int:
        return self._loader_len()
