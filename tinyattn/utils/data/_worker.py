"""The worker side of a DataLoader with ``num_workers > 0``: what runs in each process.

A worker waits on its own *inbox* for tasks ``(epoch, batch_number, indices)``, builds
that batch (dataset lookups + ``collate_fn``) and puts ``(epoch, batch_number, reply)``
into the *outbox* it shares with the other workers. The reply is the pickled batch, a
:class:`WorkerError` (the exception, with the worker's traceback as text), or
:class:`StreamEnd` when the worker's copy of an iterable dataset has run dry. The main
process side (who gets which task, how order is restored) is in ``_multiprocess.py``.

Epochs: the first task of a new epoch makes the worker start over (a fresh iterator
over an iterable dataset); a task from an epoch the main process has abandoned (the
shared ``current_epoch`` has moved on) is skipped unanswered.

Batches travel pickled. tinyattn tensors refuse pickle (see ``tinyattn.save``), so
tensors inside lists, tuples, dicts and namedtuples travel as NumPy arrays and become
tensors again in the main process; a tensor inside any other object is an error.

Seeds: worker ``i`` seeds ``random`` and ``tinyattn`` with ``base_seed + i`` (its
``WorkerInfo.seed``) and NumPy's legacy global generator from ``(base_seed, i)``, so
random augmentations in workers differ between workers and repeat with the loader's
``generator``.
"""

from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...random import manual_seed
from ...tensor_api.tensor import Tensor

__all__ = ["WorkerInfo", "get_worker_info"]

# How often a waiting process looks up from its queue to check on the other side.
POLL_SECONDS = 0.5

_this_worker: WorkerInfo | None = None  # set once, at the start of a worker process


class WorkerInfo:
    """Who am I, inside a worker: ``id``, ``num_workers``, ``seed``, ``dataset`` (read-only).

    ``dataset`` is this worker's own copy of the loader's dataset.
    """

    _FIELDS = ("id", "num_workers", "seed", "dataset")

    def __init__(self, *, id: int, num_workers: int, seed: int, dataset: Any) -> None:
        for name, value in zip(self._FIELDS, (id, num_workers, seed, dataset)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)}" for name in self._FIELDS)
        return f"{type(self).__name__}({fields})"


def get_worker_info() -> WorkerInfo | None:
    """The current worker's :class:`WorkerInfo`; ``None`` in the main process.

    An :class:`~tinyattn.utils.data.IterableDataset` uses it to shard its stream::

        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        yield from itertools.islice(stream, start, None, step)
    """
    return _this_worker


# -- what a worker sends back besides batches ------------------------------------------------
@dataclass(frozen=True)
class StreamEnd:
    """This worker's iterator over the iterable dataset is exhausted for this epoch."""


class WorkerError:
    """The exception being handled in a worker, made ready to be raised in the main process.

    The exception object itself may not pickle, so its type travels (when it can) with
    a message holding the worker's formatted traceback.
    """

    def __init__(self, where: str, in_setup: bool = False) -> None:
        self.in_setup = in_setup  # from worker_init_fn: the worker answers nothing more
        kind, exc, _ = sys.exc_info()
        self.message = f"Caught {kind.__name__} {where}.\nOriginal {traceback.format_exc()}"
        try:
            pickle.dumps(kind)
            self.kind = kind
        except Exception:  # e.g. a class defined inside a function
            self.kind = RuntimeError

    def raise_in_main(self):
        try:
            error = self.kind(self.message)
        except Exception:  # an exception type that needs other constructor arguments
            error = RuntimeError(self.message)
        raise error


# -- tensors across the process boundary ------------------------------------------------------
@dataclass
class _TensorPayload:
    array: np.ndarray
    requires_grad: bool


def _map_containers(fn: Callable, data):
    """``data`` with ``fn`` applied to each leaf of its list/tuple/dict/namedtuple nesting."""
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_map_containers(fn, item) for item in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_map_containers(fn, item) for item in data)
    if isinstance(data, dict):
        return type(data)((key, _map_containers(fn, item)) for key, item in data.items())
    return fn(data)


def _tensor_to_payload(leaf):
    if not isinstance(leaf, Tensor):
        return leaf
    if leaf.requires_grad and leaf.grad_fn is not None:
        raise RuntimeError(
            "DataLoader worker: a batch holds a non-leaf tensor that requires grad; "
            "detach it in the dataset or collate_fn (it cannot leave the worker process)"
        )
    return _TensorPayload(leaf.detach().numpy(), leaf.requires_grad)


def _payload_to_tensor(leaf):
    if not isinstance(leaf, _TensorPayload):
        return leaf
    tensor = Tensor._make(leaf.array)
    return tensor.requires_grad_(True) if leaf.requires_grad else tensor


def pack(data):
    """``data`` with every tensor in its containers replaced by a picklable payload."""
    return _map_containers(_tensor_to_payload, data)


def unpack(data):
    """Inverse of :func:`pack`, in the main process."""
    return _map_containers(_payload_to_tensor, data)


# -- the worker process -----------------------------------------------------------------------
@dataclass
class WorkerSetup:
    """Everything a worker process needs to know, sent once when it starts."""

    worker_id: int
    num_workers: int
    base_seed: int
    dataset: Any
    make_batches: Callable  # make_batches(dataset) -> callable(indices) -> batch
    streams: bool  # an iterable dataset (StopIteration ends this worker's stream)
    worker_init_fn: Callable | None
    parent_pid: int

    @property
    def where(self) -> str:
        return f"in DataLoader worker process {self.worker_id}"


def _seed_this_process(setup: WorkerSetup) -> int:
    seed = setup.base_seed + setup.worker_id
    random.seed(seed)
    manual_seed(seed)
    numpy_seed = np.random.SeedSequence([setup.base_seed, setup.worker_id]).generate_state(1)[0]
    np.random.seed(numpy_seed)
    return seed


def _wait_for_task(inbox, stop_event, parent_pid: int):
    """The next task from ``inbox``; ``None`` when told to stop or when the parent is gone."""
    while True:
        try:
            return inbox.get(timeout=POLL_SECONDS)
        except queue.Empty:
            # the ``None`` sent at shutdown can be lost if the main process is exiting
            if stop_event.is_set() or os.getppid() != parent_pid:
                return None


def _encode(reply, setup: WorkerSetup) -> bytes:
    """Pickle ``reply`` here, so that an unpicklable batch is an error the main process sees."""
    try:
        return pickle.dumps(pack(reply), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        where = (
            f"{setup.where} while sending a batch (batches must be picklable; "
            "tinyattn tensors travel only inside lists, tuples, dicts and namedtuples)"
        )
        return pickle.dumps(WorkerError(where))


def _avoid_forked_openmp() -> None:
    """A worker forked from a process whose numba kernels started GNU OpenMP threads would
    abort at its first kernel launch (libgomp does not survive a fork): such a worker
    computes with the kernels' NumPy twins (``TINYATTN_KERNELS=numpy``), same results."""
    numba = sys.modules.get("numba")
    if numba is None:
        return
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel has run in this process image
        return
    if layer == "omp":
        os.environ["TINYATTN_KERNELS"] = "numpy"


def _run_worker_init_fn(setup: WorkerSetup) -> WorkerError | None:
    """Call ``worker_init_fn``; its error is this worker's only answer (the others take over)."""
    try:
        if setup.worker_init_fn is not None:
            setup.worker_init_fn(setup.worker_id)
    except Exception:
        return WorkerError(setup.where, in_setup=True)
    return None


def run_worker(setup: WorkerSetup, inbox, outbox, stop_event, current_epoch, building) -> None:
    """The body of a worker process: answer tasks from ``inbox`` until told to stop."""
    global _this_worker
    _avoid_forked_openmp()
    seed = _seed_this_process(setup)
    _this_worker = WorkerInfo(
        id=setup.worker_id, num_workers=setup.num_workers, seed=seed, dataset=setup.dataset
    )
    setup_failed = _run_worker_init_fn(setup)
    epoch_seen, make_batch, dry, retired = -1, None, False, False
    while (task := _wait_for_task(inbox, stop_event, setup.parent_pid)) is not None:
        if stop_event.is_set():
            break
        epoch, batch_number, indices = task
        if epoch < current_epoch.value:
            continue  # the main process has moved on to a later epoch
        if epoch != epoch_seen:  # a new epoch starts from a fresh iterator
            epoch_seen, make_batch, dry = epoch, None, False
        if dry or retired:
            continue  # the main process learns of it from the StreamEnd or error already sent
        reply, retired = setup_failed, setup_failed is not None
        building[setup.worker_id] = batch_number  # who to blame if this process dies now
        if reply is None:
            try:
                if make_batch is None:
                    make_batch = setup.make_batches(setup.dataset)
                reply = make_batch(indices)
            except StopIteration:
                if not setup.streams:  # user code stopped a map-style dataset: the main
                    reply = WorkerError(setup.where)  # process ends iteration, as in-process
                else:
                    reply, dry = StreamEnd(), True
            except Exception:
                reply = WorkerError(setup.where)
        outbox.put((epoch, batch_number, _encode(reply, setup)))
        building[setup.worker_id] = -1
