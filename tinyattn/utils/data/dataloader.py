"""``DataLoader``: batches from a dataset, in the main process or in worker processes.

>>> import tinyattn as torch
>>> from tinyattn.utils.data import DataLoader, TensorDataset
>>> ds = TensorDataset(torch.arange(5.0), torch.arange(5))
>>> [x.tolist() for x, y in DataLoader(ds, batch_size=2)]
[[0.0, 1.0], [2.0, 3.0], [4.0]]

How a batch is made (as in torch): the *sampler* yields indices (sequential, or random
with ``shuffle=True``); the *batch sampler* groups them into lists of ``batch_size``;
the *fetcher* looks the samples up (``dataset[i]``, or the next items of an
iterable dataset); ``collate_fn`` merges them (:func:`default_collate`).

``num_workers > 0`` runs that fetch-and-collate step in real worker processes
(``multiprocessing``; "fork" where the platform has it, as torch on Linux), keeping up
to ``prefetch_factor`` batches per worker in flight. Batch ``k`` goes to worker
``k mod num_workers`` and the batches come back in order, so the result is the same as
with ``num_workers=0`` (unless ``in_order=False``). An :class:`IterableDataset` is
iterated by every worker: shard it with :func:`get_worker_info`.

CPU only: ``pin_memory`` and ``pin_memory_device`` are accepted and do nothing
(``pin_memory=True`` warns, as torch does on a machine without an accelerator).
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import pickle
import sys
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ...random import Generator, _numpy_generator
from . import _worker
from ._collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]


class _InfiniteConstantSampler(Sampler):
    """The "sampler" of an iterable dataset: ``None`` forever (the stream has no indices)."""

    def __iter__(self):
        while True:
            yield None


class _MapFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, indices):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[indices])
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.collate_fn(self.dataset.__getitems__(indices))
        return self.collate_fn([self.dataset[i] for i in indices])


class _IterableFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool):
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, indices):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = list(itertools.islice(self.dataset_iter, len(indices)))
        if len(data) < len(indices):
            self.ended = True
        if not data or (self.drop_last and len(data) < len(indices)):
            raise StopIteration
        return self.collate_fn(data)


def _make_fetcher(iterable: bool, auto_collation, collate_fn, drop_last, dataset):
    cls = _IterableFetcher if iterable else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def _default_context():
    import multiprocessing

    if sys.platform != "darwin" and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _worker_options(num_workers, timeout, prefetch_factor, persistent_workers):
    """Check DataLoader's worker options as torch does; returns the prefetch factor."""
    if num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; "
            "use num_workers=0 to disable multiprocessing."
        )
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing."
            "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor "
            "to None."
        )
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    elif prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    return prefetch_factor


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
        Seconds to wait for a batch from the workers before raising (0: wait forever).
    worker_init_fn : callable
        Called as ``worker_init_fn(worker_id)`` in each worker after seeding.
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
        prefetch_factor = _worker_options(num_workers, timeout, prefetch_factor, persistent_workers)
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value in (
                ("shuffle", shuffle),
                ("sampler", sampler),
                ("batch_sampler", batch_sampler),
            ):
                if value is not None and value is not False:
                    raise ValueError(
                        "DataLoader with IterableDataset: expected unspecified "
                        f"{name} option, but got {name}={value}"
                    )
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive "
                    "with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching "
                "and is mutually exclusive with drop_last"
            )
        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
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
        self._iterator = None
        self.__initialized = True

    _FROZEN = (
        "batch_size",
        "batch_sampler",
        "sampler",
        "drop_last",
        "dataset",
        "persistent_workers",
    )

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_DataLoader__initialized") and name in self._FROZEN:
            raise ValueError(
                f"{name} attribute should not be set after {self.__class__.__name__} is initialized"
            )
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _fetcher_factory(self) -> Callable:
        return functools.partial(
            _make_fetcher, self._iterable, self._auto_collation, self.collate_fn, self.drop_last
        )

    def __iter__(self):
        if self.pin_memory:
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, "
                "then device pinned memory won't be used.",
                stacklevel=2,
            )
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        """Batches per epoch; for an iterable dataset, from ``len(dataset)`` (TypeError if none)."""
        if self._iterable:
            length = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                length = (
                    length // self.batch_size
                    if self.drop_last
                    else math.ceil(length / self.batch_size)
                )
            return length
        return len(self._index_sampler)


class _SingleProcessIter:
    def __init__(self, loader: DataLoader) -> None:
        self._length = loader.__len__
        self._sampler_iter = iter(loader._index_sampler)
        self._fetcher = loader._fetcher_factory()(loader.dataset)

    def __iter__(self):
        return self

    def __next__(self):
        return self._fetcher.fetch(next(self._sampler_iter))

    def __len__(self) -> int:
        return self._length()


class _MultiProcessIter:
    """Feeds tasks to worker processes round-robin and yields their batches in task order.

    ``_task_info[k]`` is ``(worker_id,)`` while task ``k`` is out, and
    ``(worker_id, data)`` once its batch arrived ahead of an earlier one.
    """

    def __init__(self, loader: DataLoader) -> None:
        self._length = loader.__len__
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._in_order = loader.in_order
        import multiprocessing  # here, not at import: it costs ~5 ms

        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = _default_context()
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        base_seed = int(_numpy_generator(loader.generator).integers(0, 2**63 - 1))
        self._data_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        for worker_id in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            w = ctx.Process(
                target=_worker.worker_loop,
                args=(
                    loader._fetcher_factory(),
                    loader.dataset,
                    index_queue,
                    self._data_queue,
                    self._done_event,
                    base_seed,
                    loader.worker_init_fn,
                    worker_id,
                    self._num_workers,
                    os.getpid(),
                ),
                daemon=True,
            )
            w.start()
            self._index_queues.append(index_queue)
            self._workers.append(w)
        self._shutdown_done = False
        self._reset(loader, first=True)

    def _reset(self, loader: DataLoader, first: bool = False) -> None:
        self._sampler_iter = iter(loader._index_sampler)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info: dict[int, tuple] = {}
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        self._workers_active = [True] * self._num_workers
        if not first:  # persistent workers: start a new epoch, wait until all have
            for q in self._index_queues:
                q.put(_worker.ResumeIteration())
            pending = self._num_workers
            while pending:
                task, _ = self._get_data()
                if isinstance(task, _worker.ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch):
            self._try_put_index()

    def _try_put_index(self) -> None:
        if not any(self._workers_active):
            return
        try:
            indices = next(self._sampler_iter)
        except StopIteration:
            return
        worker_id = next(self._worker_cycle)
        while not self._workers_active[worker_id]:
            worker_id = next(self._worker_cycle)
        self._index_queues[worker_id].put((self._send_idx, indices))
        self._task_info[self._send_idx] = (worker_id,)
        self._send_idx += 1

    def _get_data(self):
        """The next message from any worker, checking on the workers while waiting."""
        import queue

        start = time.monotonic()
        poll = _worker._POLL_SECONDS
        if self._timeout > 0:
            poll = min(poll, self._timeout)
        while True:
            try:
                return self._data_queue.get(timeout=poll)
            except queue.Empty:
                if self._timeout > 0 and time.monotonic() - start >= self._timeout:
                    self._shutdown()
                    raise RuntimeError(
                        f"DataLoader timed out after {self._timeout} seconds"
                    ) from None
                dead = [
                    str(w.pid)
                    for w, active in zip(self._workers, self._workers_active)
                    if active and not w.is_alive()
                ]
                if dead:
                    self._shutdown()
                    raise RuntimeError(
                        f"DataLoader worker (pid(s) {', '.join(dead)}) exited unexpectedly"
                    ) from None

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            # Skip tasks whose worker ran out of data before answering them.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_active[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._deliver(info[1])
            task_index, payload = self._get_data()
            data = pickle.loads(payload)
            if isinstance(data, _worker.IterableStop):
                self._workers_active[data.worker_id] = False
                if not self._persistent:
                    self._index_queues[data.worker_id].put(None)
                continue
            if task_index == self._rcvd_idx:
                del self._task_info[task_index]
                self._rcvd_idx += 1
                return self._deliver(data)
            if not self._in_order:
                del self._task_info[task_index]
                return self._deliver(data)
            self._task_info[task_index] += (data,)

    def _deliver(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            self._shutdown()
            data.reraise()
        return _worker.unpack(data)

    def __len__(self) -> int:
        return self._length()

    def _shutdown(self) -> None:
        if self._shutdown_done:
            return
        self._shutdown_done = True
        self._done_event.set()
        for q in self._index_queues:
            q.put(None)
        for w in self._workers:
            w.join(timeout=5)
            if w.is_alive():
                w.terminate()
        for q in (*self._index_queues, self._data_queue):
            q.cancel_join_thread()
            q.close()

    def __del__(self) -> None:
        if getattr(self, "_shutdown_done", True) is False:
            self._shutdown()
