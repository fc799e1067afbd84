"""DataLoader worker processes: failures, epochs and edge cases of the multiprocess iterator."""

import os
import time

import pytest

import tinyattn
from tinyattn.utils.data import DataLoader, IterableDataset, get_worker_info


class DiesAt:
    """Map-style dataset whose worker process exits (no exception, no reply) at one index."""

    def __init__(self, index):
        self.index = index

    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == self.index and get_worker_info() is not None:
            os._exit(3)
        return i


def test_a_worker_dying_mid_epoch_is_an_error_not_a_hang():
    loader = DataLoader(DiesAt(3), batch_size=1, num_workers=2, timeout=30)
    got = []
    with pytest.raises(
        RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"
    ):
        for batch in loader:
            got.append(batch.item())
    # in order, and none past the lost batch 3 (a dying process may also lose answers it
    # had queued but not yet flushed to the pipe, so fewer may arrive)
    assert got == [0, 1, 2][: len(got)]


class Sleepy:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        if i == 1:
            time.sleep(10)  # interrupted: the loader terminates its workers on the error
        return i


def test_timeout_raises_torch_message():
    loader = DataLoader(Sleepy(), batch_size=1, num_workers=1, timeout=0.2)
    it = iter(loader)
    assert next(it).item() == 0
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        next(it)


def test_worker_error_carries_the_worker_traceback_and_the_iterator_goes_on():
    class Bad:
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 1:
                raise ValueError("sample 1 is broken")
            return i

    it = iter(DataLoader(Bad(), batch_size=1, num_workers=2))
    assert next(it).item() == 0
    with pytest.raises(ValueError) as info:
        next(it)
    message = str(info.value)
    assert "Caught ValueError in DataLoader worker process 1" in message
    assert "Traceback (most recent call last)" in message and "sample 1 is broken" in message
    assert "__getitem__" in message  # the frame where it was raised, in the worker
    assert [b.item() for b in it] == [2, 3]  # the loop may go on: no batch is lost


def test_persistent_workers_start_afresh_after_an_error():
    class BadAt1:
        def __len__(self):
            return 3

        def __getitem__(self, i):
            if i == 1:
                raise KeyError(i)
            return i

    loader = DataLoader(BadAt1(), batch_size=1, num_workers=2, persistent_workers=True)
    for _ in range(2):  # an epoch left after the error; the next one starts afresh
        it = iter(loader)
        assert next(it).item() == 0
        with pytest.raises(KeyError, match="worker process 1"):
            next(it)


def test_worker_init_fn_error_is_raised_for_the_first_batch():
    def init(worker_id):
        raise OSError(f"cannot set up worker {worker_id}")

    loader = DataLoader(range(4), batch_size=2, num_workers=1, worker_init_fn=init)
    with pytest.raises(OSError, match="cannot set up worker 0"):
        list(loader)


class Uneven(IterableDataset):
    """Worker 0 yields 5 items, worker 1 yields 1: the workers run dry at different times."""

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(6))
        return iter(range(5) if info.id == 0 else [100])


def test_a_dry_worker_leaves_the_rotation_and_the_others_finish_the_stream():
    # batches: w0 [0, 1], w1 [100], w0 [2, 3], w1 dry, w0 [4], w0 dry
    for prefetch in (1, 2, 4):
        loader = DataLoader(Uneven(), batch_size=2, num_workers=2, prefetch_factor=prefetch)
        assert [b.tolist() for b in loader] == [[0, 1], [100], [2, 3], [4]]


def test_iterable_unbatched_with_workers():
    loader = DataLoader(Uneven(), batch_size=None, num_workers=2)
    assert sorted(loader) == [0, 1, 2, 3, 4, 100]  # default_convert keeps ints


def test_persistent_workers_restart_an_iterable_dataset_each_epoch():
    loader = DataLoader(Uneven(), batch_size=2, num_workers=2, persistent_workers=True)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]  # leave the first epoch early
    for _ in range(2):
        assert [b.tolist() for b in loader] == [[0, 1], [100], [2, 3], [4]]


def test_out_of_order_delivery_with_a_slow_worker_keeps_every_batch():
    class SlowFirst:
        def __len__(self):
            return 6

        def __getitem__(self, i):
            if i == 0:
                time.sleep(0.3)
            return i

    loader = DataLoader(SlowFirst(), batch_size=1, num_workers=2, in_order=False)
    out = [b.item() for b in loader]
    assert sorted(out) == list(range(6))
    ordered = DataLoader(SlowFirst(), batch_size=1, num_workers=2)
    assert [b.item() for b in ordered] == list(range(6))


def test_len_of_the_worker_iterator_and_a_fresh_iterator_per_epoch():
    loader = DataLoader(range(7), batch_size=3, num_workers=2)
    it = iter(loader)
    assert len(it) == 3
    assert [b.tolist() for b in it] == [[0, 1, 2], [3, 4, 5], [6]]
    assert next(it, "done") == "done"  # exhausted iterators stay exhausted
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]


def test_prefetch_factor_zero_with_workers_is_rejected_when_iterating():
    loader = DataLoader(range(4), num_workers=1, prefetch_factor=0)
    with pytest.raises(ValueError, match="prefetch_factor must be greater than 0"):
        iter(loader)


def test_abandoned_iterators_do_not_leave_processes_behind():
    import multiprocessing

    before = len(multiprocessing.active_children())
    for _ in range(3):
        it = iter(DataLoader(range(40), batch_size=2, num_workers=2))
        next(it)
        del it
    loader = DataLoader(range(40), batch_size=2, num_workers=2, persistent_workers=True)
    next(iter(loader))
    assert len(multiprocessing.active_children()) == before + 2
    del loader
    assert len(multiprocessing.active_children()) == before


def test_worker_info_is_read_only_and_has_torch_repr():
    class Infos(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            try:
                info.id = 5
            except RuntimeError as e:
                yield str(e), repr(info).split(", dataset=")[0]

    (out,) = list(DataLoader(Infos(), batch_size=None, num_workers=1, generator=_gen(0)))
    message, head = out
    assert message == "Cannot assign attributes to WorkerInfo objects"
    assert head.startswith("WorkerInfo(id=0, num_workers=1, seed=")


def _gen(seed):
    return tinyattn.Generator().manual_seed(seed)


class StopsAt:
    """Map-style dataset whose ``__getitem__`` raises StopIteration at one index."""

    def __len__(self):
        return 20

    def __getitem__(self, i):
        if i == 4:
            raise StopIteration
        return i


def test_stop_iteration_in_a_map_style_dataset_ends_the_epoch_as_in_process():
    """Not a silently skipped batch: iteration ends where it ends without workers (torch too)."""

    def batches(workers):
        loader = DataLoader(StopsAt(), batch_size=2, num_workers=workers, timeout=30)
        return [b.tolist() for b in loader]

    assert batches(0) == [[0, 1], [2, 3]]
    assert batches(2) == [[0, 1], [2, 3]]


class Gelus:
    """A dataset whose items run a numba kernel (GELU) in the worker."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        x = tinyattn.full((64,), float(i))
        return tinyattn.nn.functional.gelu(x).sum()


@pytest.mark.skipif(
    "fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork"
)
def test_forked_workers_after_kernels_ran_in_the_parent():
    """GNU OpenMP does not survive fork: workers forked after a kernel launch use the twins."""
    tinyattn.nn.functional.gelu(tinyattn.ones(1 << 17))  # a parallel launch in this process
    loader = DataLoader(Gelus(), batch_size=2, num_workers=2, timeout=60)
    got = [value for batch in loader for value in batch.tolist()]
    assert got == pytest.approx([Gelus()[i].item() for i in range(4)], rel=1e-6)
