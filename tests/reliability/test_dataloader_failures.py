"""What a DataLoader with workers does after each way a worker can fail, on the epoch's
full batch list: a loop that catches the error and goes on loses no batch but the
failing one (docs/reliability.md, "DataLoader workers", has the table against torch).

Every loader here has a ``timeout`` or dies fast, so no failure can hang the suite.
"""

import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

import tinyattn
from tinyattn.utils.data import DataLoader, get_worker_info

SIZE = 8  # batches of one sample: the batch list is [0, 1, ..., 7]
BAD = 3  # the index that fails


def _in_worker() -> bool:
    """True inside a worker process, of tinyattn's loader or of torch's."""
    torch_data = sys.modules.get("torch.utils.data")
    return get_worker_info() is not None or (
        torch_data is not None and torch_data.get_worker_info() is not None
    )


class Failing:
    """Map-style dataset whose index BAD fails in the way ``how`` names."""

    def __init__(self, how: str) -> None:
        self.how = how

    def __len__(self) -> int:
        return SIZE

    def __getitem__(self, i: int) -> int:
        if i != BAD:
            return i
        if self.how == "raise":
            raise ValueError(f"sample {i} is broken")
        if _in_worker():
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.how == "exit":
                os._exit(3)
            if self.how == "sleep":
                time.sleep(0.6)
        return i


def collate_failing_on_bad(samples, tensor=tinyattn.tensor):
    if BAD in samples:
        raise ValueError(f"cannot collate {samples}")
    return tensor(samples)


def init_failing_in_worker_1(worker_id: int) -> None:
    if worker_id == 1:
        raise OSError(f"worker {worker_id} cannot open its files")


def events(loader) -> list:
    """Each ``next()`` until StopIteration: the batch's value, or the error's type name."""
    out, it = [], iter(loader)
    for _ in range(3 * SIZE):  # a bound: an iterator that never ends fails, not hangs
        try:
            out.append(int(next(it).reshape(-1)[0]))
        except StopIteration:
            return out
        except Exception as error:  # what a loop that goes on would catch
            out.append(type(error).__name__)
    raise AssertionError(f"the iterator did not end: {out}")


def batches(recorded: list) -> list:
    return [e for e in recorded if isinstance(e, int)]


def errors(recorded: list) -> list:
    return [e for e in recorded if isinstance(e, str)]


ALL = list(range(SIZE))
BUT_BAD = [i for i in ALL if i != BAD]


@pytest.mark.parametrize("where", ["getitem", "collate_fn"])
def test_an_exception_in_a_worker_is_raised_and_the_epoch_goes_on(where):
    """Before: the error stopped the workers and the loop got nothing after it."""
    options = {"collate_fn": collate_failing_on_bad} if where == "collate_fn" else {}
    dataset = Failing("raise" if where == "getitem" else "none")
    in_process = events(DataLoader(dataset, batch_size=1, **options))
    with_workers = events(DataLoader(dataset, batch_size=1, num_workers=2, timeout=30, **options))
    assert in_process == [0, 1, 2, "ValueError", 4, 5, 6, 7]
    assert with_workers == in_process


def test_a_worker_init_fn_error_is_raised_once_and_the_other_workers_build_every_batch():
    """torch raises for each batch of that worker (the later ones an UnboundLocalError)."""
    loader = DataLoader(
        Failing("none"), batch_size=1, num_workers=2, timeout=30,
        worker_init_fn=init_failing_in_worker_1,
    )  # fmt: skip
    recorded = events(loader)
    assert errors(recorded) == ["OSError"]
    assert batches(recorded) == ALL


def test_when_every_worker_init_fails_the_epoch_ends_with_the_error():
    def init(worker_id):
        raise OSError("no worker can start")

    loader = DataLoader(
        Failing("none"), batch_size=1, num_workers=2, timeout=30, worker_init_fn=init
    )
    recorded = events(loader)
    assert batches(recorded) == [] and set(errors(recorded)) == {"OSError"}


@pytest.mark.parametrize("how", ["kill", "exit"])
def test_a_dead_worker_loses_only_the_batch_it_was_building(how):
    """Before: the error ended the epoch. torch also drops the dead worker's other batches."""
    loader = DataLoader(Failing(how), batch_size=1, num_workers=2, timeout=30)
    it = iter(loader)
    recorded = []
    for _ in range(3 * SIZE):
        try:
            recorded.append(next(it).item())
        except StopIteration:
            break
        except RuntimeError as error:
            assert f"while building batch {BAD};" in str(error)
            recorded.append("RuntimeError")
    assert errors(recorded) == ["RuntimeError"]
    assert batches(recorded) == BUT_BAD


def test_a_timeout_leaves_the_batch_in_flight_and_the_next_call_yields_it():
    """Before: the timeout terminated the workers and the epoch ended there."""
    loader = DataLoader(Failing("sleep"), batch_size=1, num_workers=2, timeout=0.2)
    recorded = events(loader)
    assert batches(recorded) == ALL
    assert errors(recorded) and set(errors(recorded)) == {"RuntimeError"}


def test_when_every_worker_dies_the_epoch_ends_with_an_error_not_a_hang():
    class DiesAlways:
        def __len__(self):
            return 4

        def __getitem__(self, i):
            os._exit(3)

    it = iter(DataLoader(DiesAlways(), batch_size=1, num_workers=2, timeout=30))
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        for _ in range(4):
            next(it)
    assert list(it) == []


def test_persistent_workers_replace_a_dead_worker_for_the_next_epoch():
    loader = DataLoader(
        Failing("exit"), batch_size=1, num_workers=2, timeout=30, persistent_workers=True
    )
    first = events(loader)
    assert batches(first) == BUT_BAD
    assert batches(events(loader)) == BUT_BAD  # new workers; worker 1 dies at BAD again


# -- against torch -----------------------------------------------------------------------------
def _torch_events(dataset, **options):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader as TorchLoader

    if "collate_fn" in options:
        options["collate_fn"] = lambda samples: collate_failing_on_bad(samples, torch.tensor)
    return events(TorchLoader(dataset, batch_size=1, num_workers=2, **options))


@pytest.mark.parametrize(
    "how, options",
    [
        ("raise", {"timeout": 30}),
        ("none", {"timeout": 30, "collate_fn": True}),
        ("sleep", {"timeout": 0.2}),
    ],
    ids=["getitem", "collate_fn", "timeout"],
)
def test_batches_and_errors_as_torch(how, options):
    theirs = _torch_events(Failing(how), **options)
    if "collate_fn" in options:
        options["collate_fn"] = collate_failing_on_bad
    ours = events(DataLoader(Failing(how), batch_size=1, num_workers=2, **options))
    assert batches(ours) == batches(theirs) == (ALL if how == "sleep" else BUT_BAD)
    assert set(errors(ours)) == set(errors(theirs))


def test_a_dead_worker_loses_no_batch_that_torch_keeps():
    theirs = _torch_events(Failing("exit"), timeout=30)
    ours = events(DataLoader(Failing("exit"), batch_size=1, num_workers=2, timeout=30))
    assert set(batches(theirs)) <= set(batches(ours)) == set(BUT_BAD)
    assert errors(ours) == errors(theirs) == ["RuntimeError"]


class BigThenDies:
    """Batch 1 is large (its write takes a while); batch 3, the same worker's next, exits."""

    def __len__(self) -> int:
        return SIZE

    def __getitem__(self, i: int):
        if i == 1:
            return np.full(2_000_000, 1.0, dtype=np.float32)
        if i == BAD and _in_worker():
            time.sleep(0.2)  # batch 1 is being written meanwhile, if the write is not done
            os._exit(3)
        return np.full(1, float(i), dtype=np.float32)


def test_a_worker_exiting_right_after_a_large_batch_does_not_block_the_others():
    """Before: the large batch went out from a background thread of the worker, which,
    while the loop slept (nobody reading), died mid-write holding the lock every worker
    writes its answers under; the loop then blocked forever reading half a message."""
    loader = DataLoader(BigThenDies(), batch_size=1, num_workers=2, timeout=5)
    recorded = []

    def loop():
        it = iter(loader)
        for _ in range(12):
            try:
                recorded.append(int(next(it)[0, 0]))
            except StopIteration:
                return
            except RuntimeError:
                recorded.append("RuntimeError")
            time.sleep(1.0 if len(recorded) == 1 else 0)  # worker 1 writes, nobody reads

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), f"the loop is blocked after {recorded}"
    assert errors(recorded) == ["RuntimeError"]
    assert batches(recorded) == BUT_BAD
