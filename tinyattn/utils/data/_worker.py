"""What runs inside a DataLoader worker process, and how batches travel back.

Each worker owns an *index queue* (tasks from the main process) and shares one
*data queue* (results to the main process). A task is ``(task_index, indices)``; the
worker fetches and collates that batch and sends ``(task_index, batch)``. The main
process puts the results back in task order, so the batches come out in the same order
as with ``num_workers=0``.

Batches cross the process boundary pickled. tinyattn tensors refuse pickle (see
``tinyattn.save``), so tensors inside lists, tuples, dicts and namedtuples are sent
as their NumPy arrays and rebuilt as tensors in the main process; a tensor hidden
in another kind of object makes the worker raise a clear error instead.

Seeds: worker ``i`` seeds ``random``, ``tinyattn`` (with ``base_seed + i``) and NumPy's
legacy global generator (from ``(base_seed, i)``), so augmentations drawn in workers
are deterministic given the loader's ``generator`` and differ between workers.
"""

from __future__ import annotations

import os
import pickle
import random
import sys
import traceback
from dataclasses import dataclass

import numpy as np

from ..._tensor import Tensor
from ...random import manual_seed

__all__ = ["WorkerInfo", "get_worker_info"]

_POLL_SECONDS = 1.0
_worker_info: WorkerInfo | None = None


class WorkerInfo:
    """Inside a worker: ``id``, ``num_workers``, ``seed`` and this worker's copy of ``dataset``."""

    __initialized = False

    def __init__(self, **kwargs) -> None:
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val) -> None:
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self) -> str:
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{self.__class__.__name__}({items})"


def get_worker_info() -> WorkerInfo | None:
    """The current worker's :class:`WorkerInfo`; ``None`` in the main process.

    An :class:`~tinyattn.utils.data.IterableDataset` uses it to shard its stream::

        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        yield from itertools.islice(stream, start, None, step)
    """
    return _worker_info


# -- messages -------------------------------------------------------------------------------
@dataclass(frozen=True)
class IterableStop:
    """A worker's iterable dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class ResumeIteration:
    """Start a new epoch with persistent workers (the worker answers with the same message)."""


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process and raised there."""

    def __init__(self, where: str) -> None:
        exc_type, exc, _ = sys.exc_info()
        try:  # the type itself travels only if it can be pickled (local classes cannot)
            pickle.dumps(exc_type)
        except Exception:
            exc_type = RuntimeError
        self.exc_type = exc_type
        self.message = f"Caught {type(exc).__name__} {where}.\nOriginal {traceback.format_exc()}"

    def reraise(self):
        try:
            exception = self.exc_type(self.message)
        except Exception:  # a type whose constructor wants other arguments
            raise RuntimeError(self.message) from None
        raise exception


# -- tensors across processes ---------------------------------------------------------------
@dataclass
class _TensorPayload:
    array: np.ndarray
    requires_grad: bool


def pack(data):
    """``data`` with every tensor in its containers replaced by a picklable payload."""
    if isinstance(data, Tensor):
        if data.requires_grad and data.grad_fn is not None:
            raise RuntimeError(
                "DataLoader worker: a batch holds a non-leaf tensor that requires grad; "
                "detach it in the dataset or collate_fn (it cannot leave the worker process)"
            )
        return _TensorPayload(data.detach().numpy(), data.requires_grad)
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pack(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(pack(d) for d in data)
    if isinstance(data, dict):
        return type(data)((k, pack(v)) for k, v in data.items())
    return data


def unpack(data):
    """Inverse of :func:`pack`, in the main process."""
    if isinstance(data, _TensorPayload):
        t = Tensor._make(data.array)
        return t.requires_grad_(True) if data.requires_grad else t
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(unpack(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(unpack(d) for d in data)
    if isinstance(data, dict):
        return type(data)((k, unpack(v)) for k, v in data.items())
    return data


def _dumps(data, worker_id: int) -> bytes:
    """Pickle a result here, so an unpicklable batch becomes an error the main process sees."""
    try:
        return pickle.dumps(pack(data), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        where = (
            f"in DataLoader worker process {worker_id} while sending a batch (batches must be "
            "picklable; tinyattn tensors travel only inside lists, tuples, dicts and namedtuples)"
        )
        return pickle.dumps(ExceptionWrapper(where))


# -- the worker process ---------------------------------------------------------------------
def _seed_worker(base_seed: int, worker_id: int) -> int:
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(np.random.SeedSequence([base_seed, worker_id]).generate_state(1)[0])
    return seed


def worker_loop(
    make_fetcher,
    dataset,
    index_queue,
    data_queue,
    done_event,
    base_seed: int,
    worker_init_fn,
    worker_id: int,
    num_workers: int,
    parent_pid: int,
) -> None:
    """Serve tasks from ``index_queue`` until told to stop (``None``) or the parent is gone."""
    import queue

    global _worker_info
    seed = _seed_worker(base_seed, worker_id)
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error = None
    fetcher = None
    try:
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        fetcher = make_fetcher(dataset)
    except Exception:
        init_error = ExceptionWrapper(where)
    exhausted = False
    while True:
        try:
            task = index_queue.get(timeout=_POLL_SECONDS)
        except queue.Empty:
            if done_event.is_set() or os.getppid() != parent_pid:
                break
            continue
        if task is None:
            break
        if isinstance(task, ResumeIteration):
            exhausted = False
            fetcher = make_fetcher(dataset) if init_error is None else None
            data_queue.put((task, None))
            continue
        if done_event.is_set() or exhausted:
            continue
        task_index, indices = task
        if init_error is not None:
            data, init_error = init_error, None
        else:
            try:
                data = fetcher.fetch(indices)
            except StopIteration:
                data, exhausted = IterableStop(worker_id), True
            except Exception:
                data = ExceptionWrapper(where)
        data_queue.put((task_index, _dumps(data, worker_id)))
