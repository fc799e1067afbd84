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

Failures lose no batch but the failing one (docs/reliability.md has the table)
    An exception in a worker (dataset, ``collate_fn``, ``worker_init_fn``) is raised for
    its batch only; a loop that catches it gets the rest of the epoch, as without workers.
    ``timeout`` raises RuntimeError and leaves the batch in flight: the next ``next()``
    waits for it again. A worker that dies is an error naming the batch it was building
    (``building`` is shared with the workers); the other batches it held are rebuilt by
    the workers still alive. Only when none is left does the epoch end.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from collections import deque
from dataclasses import dataclass

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


@dataclass(frozen=True)
class _Deaths:
    """Workers found dead while waiting for an answer: their ids and process ids."""

    worker_ids: tuple[int, ...]
    pids: tuple[int, ...]


class _WorkerPool:
    """The worker processes, one inbox each, and the one outbox they all answer into."""

    def __init__(self, loader) -> None:
        context = _multiprocessing_context(loader.multiprocessing_context)
        base_seed = int(_numpy_generator(loader.generator).integers(0, 2**63 - 1))
        # A SimpleQueue writes in the calling thread (a Queue's feeder thread would write
        # while the worker runs user code): a worker that exits inside __getitem__ cannot
        # die halfway through a write, holding the lock every worker writes under.
        self.outbox = context.SimpleQueue()
        self.stop_event = context.Event()
        self.current_epoch = context.Value("q", 0)
        # building[w]: the batch number worker w is building now, -1 when idle
        self.building = context.Array("q", [-1] * loader.num_workers, lock=False)
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
            args = (setup, inbox, self.outbox, self.stop_event, self.current_epoch, self.building)
            process = context.Process(target=_worker.run_worker, args=args, daemon=True)
            process.start()
            self.inboxes.append(inbox)
            self.processes.append(process)
        self.alive = set(range(loader.num_workers))
        self.closed = False

    def send(self, worker_id: int, task) -> None:
        self.inboxes[worker_id].put(task)

    def receive(self, timeout: float):
        """The next answer from any worker, or :class:`_Deaths` for workers found dead.

        RuntimeError if ``timeout`` passes first; the workers keep going.
        """
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while True:
            wait = _worker.POLL_SECONDS
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            if self.outbox._reader.poll(wait):  # SimpleQueue.get has no timeout
                return self.outbox.get()
            dead = sorted(w for w in self.alive if not self.processes[w].is_alive())
            if dead:
                self.alive.difference_update(dead)
                return _Deaths(tuple(dead), tuple(self.processes[w].pid for w in dead))
            if deadline is not None and time.monotonic() >= deadline:
                raise RuntimeError(f"DataLoader timed out after {timeout} seconds")

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
        for inbox in self.inboxes:
            inbox.cancel_join_thread()  # never block on tasks that no worker will read
            inbox.close()
        self.outbox.close()


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
        self._streams = loader._iterable
        self._pool = _WorkerPool(loader)
        self._epoch = -1
        self.start_epoch(loader)

    @property
    def workers_stopped(self) -> bool:
        """True once the workers are shut down or one has died (a new epoch needs new ones)."""
        return self._pool.closed or len(self._pool.alive) < len(self._pool.processes)

    def close(self) -> None:
        """Stop the worker processes now (a new iterator starts new ones)."""
        self._pool.close()

    def start_epoch(self, loader) -> None:
        """Begin a pass over the batch sampler, abandoning whatever the last pass left out."""
        self._epoch += 1
        self._pool.current_epoch.value = self._epoch
        self._plan = iter(loader._batch_plan())
        self._plan_done = False
        self._rotation = deque(sorted(self._pool.alive))  # whose turn is next
        self.next_to_dispatch = 0
        self.next_to_yield = 0
        self.assigned: dict[int, int] = {}  # batch number -> worker building it
        self.indices: dict[int, object] = {}  # batch number -> its indices, while assigned
        self.finished: dict[int, object] = {}  # batch number -> answer not yet yielded
        self._dispatch_up_to_budget()

    def _dispatch_up_to_budget(self) -> None:
        while not self._plan_done and self._rotation and self._in_flight() < self._budget:
            indices = next(self._plan, _PLAN_DONE)
            if indices is _PLAN_DONE:
                self._plan_done = True
                return
            self._send(self.next_to_dispatch, indices)
            self.next_to_dispatch += 1

    def _send(self, number: int, indices) -> None:
        """Give batch ``number`` to the worker whose turn it is."""
        worker_id = self._rotation[0]
        self._rotation.rotate(-1)
        self._pool.send(worker_id, (self._epoch, number, indices))
        self.assigned[number] = worker_id
        self.indices[number] = indices

    def _in_flight(self) -> int:
        return len(self.assigned) + len(self.finished)

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return self._loader_len()

    def __next__(self):
        if self._pool.closed:
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
        reply = self._pool.receive(self._timeout)
        if isinstance(reply, _Deaths):
            self._recover_from_deaths(reply)
            return
        epoch, number, encoded = reply
        if epoch != self._epoch or number not in self.assigned:
            return  # from an abandoned epoch, or a rebuilt batch whose first answer came
        answer = pickle.loads(encoded)
        if isinstance(answer, _worker.WorkerError) and answer.in_setup:
            self._retire(self.assigned[number], building=-1)  # this batch goes to another
            if not self._rotation:
                self._pool.close()
            answer.raise_in_main()
        worker_id = self.assigned.pop(number)
        del self.indices[number]
        if isinstance(answer, _worker.StreamEnd):
            self._rotation.remove(worker_id)
            self.assigned = {n: w for n, w in self.assigned.items() if w != worker_id}
        else:
            self.finished[number] = answer

    def _recover_from_deaths(self, deaths: _Deaths) -> None:
        """Drop the batch each dead worker was building, rebuild its others; then raise."""
        lost = []
        for worker_id in deaths.worker_ids:
            lost += self._retire(worker_id, building=self._pool.building[worker_id])
        pids = ", ".join(str(pid) for pid in deaths.pids)
        message = f"DataLoader worker (pid(s) {pids}) exited unexpectedly"
        if not self._rotation:
            self._pool.close()
            raise RuntimeError(f"{message}; no worker is left, the epoch ends here")
        raise RuntimeError(
            f"{message} while building batch {', '.join(map(str, lost)) or 'none'}; "
            "the other workers rebuild the rest of its batches"
        )

    def _retire(self, worker_id: int, building: int) -> list[int]:
        """Take ``worker_id`` out of the rotation; hand its batches to the others.

        Returns the batch numbers lost: ``building`` (what it was building when it
        failed), and all it held if no worker is left or the dataset is a stream (a
        stream's items live in its worker, and another worker's next batch stands in).
        """
        self._pool.alive.discard(worker_id)
        if worker_id in self._rotation:
            self._rotation.remove(worker_id)
        lost = []
        for number in sorted(n for n, w in self.assigned.items() if w == worker_id):
            del self.assigned[number]
            indices = self.indices.pop(number)
            if number == building or self._streams or not self._rotation:
                lost.append(number)
            else:
                self._send(number, indices)
        return lost

    def _hand_out(self, answer):
        if isinstance(answer, _worker.WorkerError):
            answer.raise_in_main()  # the workers go on: the next call yields the next batch
        return _worker.unpack(answer)

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()
