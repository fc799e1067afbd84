"""The main-process side of a DataLoader with ``num_workers > 0``.

What runs where
    The main process walks the batch sampler and hands each batch's indices out as a
    numbered task; worker ``w`` (``_worker.run_worker``) builds the batches it is given
    and answers into one shared outbox.

Who gets which batch
    Workers take turns: batch ``k`` goes to worker ``k % num_workers``, as in torch, so
    code that looks at ``get_worker_info().id`` sees the same worker for the same batch.
    A worker whose copy of an iterable dataset has run dry leaves the rotation.

How order is kept
    Answers arrive in any order and wait in ``finished`` (batch number -> batch) until
    ``next_to_yield`` is theirs. ``assigned`` maps each batch number that is out to its
    worker. At most ``num_workers * prefetch_factor`` batches are in flight (out or
    waiting). A dry worker skips the tasks it still holds, so its numbers are dropped
    from ``assigned`` and ``next_to_yield`` steps over them.

Epochs and shutdown
    Tasks and answers carry the epoch number; answers from an abandoned epoch (a loop
    left early, then a new one with ``persistent_workers``) are ignored. Shutdown sets a
    stop event, sends each worker ``None``, waits briefly, then terminates what is left.
    While waiting for an answer the main process checks that every worker is alive and
    applies ``timeout``, so a dead or stuck worker is an error, not a hang.
"""

from __future__ import annotations

import os
import pickle
import queue
import sys
import time
from collections import deque

from ...random import _numpy_generator
from . import _worker

_PLAN_DONE = object()  # what next(plan, _PLAN_DONE) returns at the end of the plan

_JOIN_SECONDS = 2.0  # how long a worker may take to finish its batch when asked to stop


def _multiprocessing_context(choice):
    """``choice`` as a multiprocessing context; by default "fork" where it exists (not macOS)."""
    import multiprocessing  # here, not at import time: it costs ~5 ms

    if choice is None:
        if sys.platform != "darwin" and "fork" in multiprocessing.get_all_start_methods():
            return multiprocessing.get_context("fork")
        return multiprocessing.get_context()
    if isinstance(choice, str):
        return multiprocessing.get_context(choice)
    return choice


class _WorkerPool:
    """The worker processes, one inbox each, and the one outbox they all answer into."""

    def __init__(self, loader) -> None:
        context = _multiprocessing_context(loader.multiprocessing_context)
        base_seed = int(_numpy_generator(loader.generator).integers(0, 2**63 - 1))
        self.outbox = context.Queue()
        self.stop_event = context.Event()
        self.current_epoch = context.Value("q", 0)
        self.inboxes, self.processes = [], []
        for worker_id in range(loader.num_workers):
            setup = _worker.WorkerSetup(
                worker_id=worker_id,
                num_workers=loader.num_workers,
                base_seed=base_seed,
                dataset=loader.dataset,
                make_batches=loader._batch_maker(),
                streams=loader._iterable,
                worker_init_fn=loader.worker_init_fn,
                parent_pid=os.getpid(),
            )
            inbox = context.Queue()
            args = (setup, inbox, self.outbox, self.stop_event, self.current_epoch)
            process = context.Process(target=_worker.run_worker, args=args, daemon=True)
            process.start()
            self.inboxes.append(inbox)
            self.processes.append(process)
        self.closed = False

    def send(self, worker_id: int, task) -> None:
        self.inboxes[worker_id].put(task)

    def receive(self, timeout: float):
        """The next answer from any worker; RuntimeError if one died or ``timeout`` passed."""
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while True:
            wait = _worker.POLL_SECONDS
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            try:
                return self.outbox.get(timeout=wait)
            except queue.Empty:
                pass
            if deadline is not None and time.monotonic() >= deadline:
                self.close(grace=0.0)  # a worker that is stuck will not finish now
                raise RuntimeError(f"DataLoader timed out after {timeout} seconds")
            dead = [str(p.pid) for p in self.processes if not p.is_alive()]
            if dead:
                self.close()
                raise RuntimeError(
                    f"DataLoader worker (pid(s) {', '.join(dead)}) exited unexpectedly"
                )

    def close(self, grace: float = _JOIN_SECONDS) -> None:
        """Stop the workers: ask, wait up to ``grace`` seconds each, then terminate."""
        if self.closed:
            return
        self.closed = True
        self.stop_event.set()
        for inbox in self.inboxes:
            inbox.put(None)
        for process in self.processes:
            process.join(grace)
            if process.is_alive():
                process.terminate()
                process.join()
        for q in (*self.inboxes, self.outbox):
            q.cancel_join_thread()  # never block on tasks that no worker will read
            q.close()


class MultiProcessBatches:
    """The iterator a DataLoader with workers returns: batches in order, built in workers."""

    def __init__(self, loader) -> None:
        if loader.prefetch_factor <= 0:
            raise ValueError(
                "prefetch_factor must be greater than 0 when loading with workers "
                f"(num_workers > 0), got {loader.prefetch_factor}"
            )
        self._loader_len = loader._epoch_length()
        self._budget = loader.num_workers * loader.prefetch_factor
        self._timeout = loader.timeout
        self._keep_workers = loader.persistent_workers
        self._in_order = loader.in_order
        self._pool = _WorkerPool(loader)
        self._epoch = -1
        self.start_epoch(loader)

    @property
    def workers_stopped(self) -> bool:
        """True once the workers are shut down (after an error, or a non-persistent epoch)."""
        return self._pool.closed

    def start_epoch(self, loader) -> None:
        """Begin a pass over the batch sampler, abandoning whatever the last pass left out."""
        self._epoch += 1
        self._pool.current_epoch.value = self._epoch
        self._plan = iter(loader._batch_plan())
        self._plan_done = False
        self._rotation = deque(range(len(self._pool.processes)))  # whose turn is next
        self.next_to_dispatch = 0
        self.next_to_yield = 0
        self.assigned: dict[int, int] = {}  # batch number -> worker building it
        self.finished: dict[int, object] = {}  # batch number -> answer not yet yielded
        self._dispatch_up_to_budget()

    def _dispatch_up_to_budget(self) -> None:
        while not self._plan_done and self._rotation and self._in_flight() < self._budget:
            indices = next(self._plan, _PLAN_DONE)
            if indices is _PLAN_DONE:
                self._plan_done = True
                return
            worker_id = self._rotation[0]
            self._rotation.rotate(-1)
            self._pool.send(worker_id, (self._epoch, self.next_to_dispatch, indices))
            self.assigned[self.next_to_dispatch] = worker_id
            self.next_to_dispatch += 1

    def _in_flight(self) -> int:
        return len(self.assigned) + len(self.finished)

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return self._loader_len()

    def __next__(self):
        if self.workers_stopped:
            raise StopIteration
        while True:
            self._dispatch_up_to_budget()
            number = self._ready_batch_number()
            if number is not None:
                return self._hand_out(self.finished.pop(number))
            if self.next_to_yield == self.next_to_dispatch:  # nothing in flight: epoch over
                if not self._keep_workers:
                    self._pool.close()
                raise StopIteration
            self._take_one_answer()

    def _ready_batch_number(self) -> int | None:
        """The batch to yield now, if its answer is here (any answer when ``in_order=False``)."""
        while (
            self.next_to_yield < self.next_to_dispatch
            and self.next_to_yield not in self.assigned
            and self.next_to_yield not in self.finished
        ):
            self.next_to_yield += 1  # yielded already, or dropped by a dry worker
        if self.next_to_yield in self.finished:
            return self.next_to_yield
        if not self._in_order and self.finished:
            return min(self.finished)
        return None

    def _take_one_answer(self) -> None:
        epoch, number, encoded = self._pool.receive(self._timeout)
        if epoch != self._epoch:
            return  # an answer from an abandoned epoch
        answer = pickle.loads(encoded)
        worker_id = self.assigned.pop(number)
        if isinstance(answer, _worker.StreamEnd):
            self._rotation.remove(worker_id)
            self.assigned = {n: w for n, w in self.assigned.items() if w != worker_id}
        else:
            self.finished[number] = answer

    def _hand_out(self, answer):
        if isinstance(answer, _worker.WorkerError):
            self._pool.close()
            answer.raise_in_main()
        return _worker.unpack(answer)

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()
