"""DataLoader: batches, lengths and errors as torch; shuffling determinism; worker processes."""

import os
import warnings

import numpy as np
import pytest
from _data_helpers import same

import tinyattn
from tinyattn.utils.data import (
    BatchSampler,
    DataLoader,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
    get_worker_info,
)


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


class Stream(IterableDataset):
    """0..n-1, sharded across workers by ``get_worker_info`` (stride = num_workers)."""

    def __init__(self, n, with_len=True):
        self.n, self.with_len = n, with_len

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        if not self.with_len:
            raise TypeError(f"object of type '{type(self).__name__}' has no len()")
        return self.n


def _torch_stream(torch, n, with_len=True):
    td = torch.utils.data

    class TorchStream(td.IterableDataset):
        def __iter__(self):
            info = td.get_worker_info()
            start, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(range(start, n, step))

    if with_len:
        TorchStream.__len__ = lambda self: n
    return TorchStream()


_X = np.arange(20.0, dtype=np.float32).reshape(10, 2)

MAP_CASES = {
    "bs1": dict(),
    "bs3": dict(batch_size=3),
    "bs3_drop": dict(batch_size=3, drop_last=True),
    "bs_none": dict(batch_size=None),
    "bs_exact": dict(batch_size=5, drop_last=True),
    "sampler": dict(sampler=[9, 0, 4, 4], batch_size=3),
    "batch_sampler": dict(batch_sampler=[[0, 1], [9], [2, 3, 4]]),
    "collate_fn": dict(batch_size=4, collate_fn=lambda b: len(b)),
}


def _map_dataset(lib):
    return lib.utils.data.TensorDataset(lib.tensor(_X), lib.tensor(np.arange(10)))


@pytest.mark.parametrize("case", list(MAP_CASES))
def test_map_style_batches_and_len_match_torch(case, torch):
    ours = DataLoader(_map_dataset(tinyattn), **MAP_CASES[case])
    theirs = torch.utils.data.DataLoader(_map_dataset(torch), **MAP_CASES[case])
    assert len(ours) == len(theirs)
    same(list(ours), list(theirs), torch)


def test_map_style_without_torch():
    loader = DataLoader(_map_dataset(tinyattn), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [len(y) for _, y in batches] == [4, 4, 2]
    assert batches[1][1].tolist() == [4, 5, 6, 7] and batches[0][0].dtype == tinyattn.float32
    assert len(DataLoader(range(10), batch_size=4, drop_last=True)) == 2
    assert list(DataLoader(range(3), batch_size=None)) == [0, 1, 2]


ITER_CASES = {
    "bs1": dict(),
    "bs3": dict(batch_size=3),
    "bs3_drop": dict(batch_size=3, drop_last=True),
    "bs_none": dict(batch_size=None),
    "shuffle_false": dict(batch_size=2, shuffle=False),
}


@pytest.mark.parametrize("case", list(ITER_CASES))
def test_iterable_batches_and_len_match_torch(case, torch):
    ours = DataLoader(Stream(7), **ITER_CASES[case])
    theirs = torch.utils.data.DataLoader(_torch_stream(torch, 7), **ITER_CASES[case])
    assert len(ours) == len(theirs)
    same(list(ours), list(theirs), torch)


def test_iterable_without_len_has_no_len_but_iterates(torch):
    ours = DataLoader(Stream(5, with_len=False), batch_size=2)
    theirs = torch.utils.data.DataLoader(_torch_stream(torch, 5, with_len=False), batch_size=2)
    assert type(_raised(lambda: len(ours))) is type(_raised(lambda: len(theirs))) is TypeError
    same(list(ours), list(theirs), torch)


_SEQ = object()  # placeholder for "a SequentialSampler over the dataset"
ERROR_CASES = {
    "sampler_and_shuffle": dict(sampler=_SEQ, shuffle=True),
    "batch_sampler_and_batch_size": dict(batch_sampler=[[0]], batch_size=2),
    "batch_sampler_and_drop_last": dict(batch_sampler=[[0]], drop_last=True),
    "batch_sampler_and_shuffle": dict(batch_sampler=[[0]], shuffle=True),
    "batch_sampler_and_sampler": dict(batch_sampler=[[0]], sampler=_SEQ),
    "no_batching_and_drop_last": dict(batch_size=None, drop_last=True),
    "negative_workers": dict(num_workers=-1),
    "negative_timeout": dict(timeout=-1),
    "prefetch_without_workers": dict(prefetch_factor=2),
    "negative_prefetch": dict(num_workers=1, prefetch_factor=-1),
    "persistent_without_workers": dict(persistent_workers=True),
    "bad_batch_size": dict(batch_size=0),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_option_errors_match_torch(case, torch):
    def build(lib):
        ds = _map_dataset(lib)
        kw = {
            k: (lib.utils.data.SequentialSampler(ds) if v is _SEQ else v)
            for k, v in ERROR_CASES[case].items()
        }
        return lib.utils.data.DataLoader(ds, **kw)

    e_t, e_o = _raised(lambda: build(torch)), _raised(lambda: build(tinyattn))
    assert type(e_o) is type(e_t) and str(e_o) == str(e_t)


@pytest.mark.parametrize("option", ["shuffle", "sampler", "batch_sampler"])
def test_iterable_rejects_ordering_options_as_torch(option, torch):
    value = {"shuffle": True, "sampler": [0, 1], "batch_sampler": [[0, 1]]}[option]
    e_t = _raised(lambda: torch.utils.data.DataLoader(_torch_stream(torch, 3), **{option: value}))
    e_o = _raised(lambda: DataLoader(Stream(3), **{option: value}))
    assert type(e_o) is type(e_t) is ValueError and str(e_o) == str(e_t)


def test_frozen_attributes():
    loader = DataLoader(range(4), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set"):
        loader.batch_size = 3
    loader.num_workers = 0  # not frozen, as in torch


def test_default_collate_fn_per_mode():
    from tinyattn.utils.data import default_collate, default_convert

    assert DataLoader(range(3)).collate_fn is default_collate
    assert DataLoader(range(3), batch_size=None).collate_fn is default_convert


def test_pin_memory_is_accepted_and_warns():
    with pytest.warns(UserWarning, match="pin_memory"):
        (batch,) = list(DataLoader(range(3), batch_size=3, pin_memory=True))
    assert batch.tolist() == [0, 1, 2]


def _epochs(loader, n=2):
    return [[y.tolist() for _, y in loader] for _ in range(n)]


def test_shuffle_with_generator_is_deterministic_and_independent_of_global_rng():
    def run(seed, global_seed):
        tinyattn.manual_seed(global_seed)
        g = tinyattn.Generator().manual_seed(seed)
        return _epochs(DataLoader(_map_dataset(tinyattn), batch_size=4, shuffle=True, generator=g))

    first = run(0, 0)
    assert run(0, 42) == first
    assert run(1, 0) != first
    assert first[0] != first[1]  # a new order each epoch
    assert sorted(sum(first[0], [])) == list(range(10))


def test_shuffle_without_generator_follows_manual_seed():
    def run(global_seed):
        tinyattn.manual_seed(global_seed)
        return _epochs(DataLoader(_map_dataset(tinyattn), batch_size=4, shuffle=True))

    assert run(3) == run(3)
    assert run(3) != run(4)


# -- worker processes -----------------------------------------------------------------------
class PidDataset:
    """Each sample records which process loaded it and a random draw made there."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {"i": i, "pid": os.getpid(), "draw": tinyattn.rand(1), "x": tinyattn.full((2,), i)}


def test_workers_give_the_same_batches_as_the_main_process():
    ds = _map_dataset(tinyattn)
    serial = [[t.tolist() for t in b] for b in DataLoader(ds, batch_size=3)]
    loader = DataLoader(ds, batch_size=3, num_workers=2)
    parallel = [[t.tolist() for t in b] for b in loader]
    assert parallel == serial and len(loader) == 4


def test_workers_are_processes_seeded_per_worker_and_deterministic():
    def run():
        g = tinyattn.Generator().manual_seed(0)
        return list(DataLoader(PidDataset(), batch_size=2, num_workers=2, generator=g))

    batches = run()
    pids = [set(b["pid"].tolist()) for b in batches]
    assert os.getpid() not in set().union(*pids)
    assert pids[0] == pids[2] and pids[1] == pids[3] and pids[0] != pids[1]  # round-robin
    assert [b["i"].tolist() for b in batches] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    draws = [b["draw"].tolist() for b in batches]
    assert draws[0] != draws[1]  # workers are seeded differently
    assert [b["draw"].tolist() for b in run()] == draws  # and deterministically


def test_iterable_sharding_with_workers_matches_torch(torch):
    kw = dict(batch_size=2, num_workers=2)
    ours = [b.tolist() for b in DataLoader(Stream(11), **kw)]
    theirs = [b.tolist() for b in torch.utils.data.DataLoader(_torch_stream(torch, 11), **kw)]
    assert ours == theirs == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9]]


def test_worker_init_fn_and_get_worker_info():
    class Info(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            yield (info.id, info.num_workers, os.environ.get("TINYATTN_TEST_WORKER"))

    def init(worker_id):
        os.environ["TINYATTN_TEST_WORKER"] = f"w{worker_id}"

    out = list(DataLoader(Info(), batch_size=None, num_workers=2, worker_init_fn=init))
    assert sorted(out) == [[0, 2, "w0"], [1, 2, "w1"]]  # default_convert: tuples -> lists
    assert get_worker_info() is None


class Failing:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError(f"no sample {i}")
        return i


def test_worker_exception_is_raised_in_the_main_process():
    loader = DataLoader(Failing(), batch_size=1, num_workers=2)
    with pytest.raises(KeyError, match="in DataLoader worker process 0"):
        list(loader)


def test_persistent_workers_keep_their_processes():
    loader = DataLoader(PidDataset(), batch_size=4, num_workers=2, persistent_workers=True)
    epochs = [[sorted(set(b["pid"].tolist())) for b in loader] for _ in range(2)]
    assert epochs[0] == epochs[1]
    second = [b["i"].tolist() for b in loader]
    assert second == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_persistent_workers_survive_an_interrupted_epoch():
    loader = DataLoader(range(12), batch_size=2, num_workers=2, persistent_workers=True)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]


def test_out_of_order_delivery_keeps_every_batch():
    loader = DataLoader(range(10), batch_size=2, num_workers=2, in_order=False)
    assert sorted(b.tolist() for b in loader) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]


def test_workers_send_tensors_requiring_grad_as_leaves():
    class Leaves:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return tinyattn.ones(2, requires_grad=True)

    (batch,) = list(DataLoader(Leaves(), batch_size=None, num_workers=1, sampler=[0]))
    assert batch.requires_grad and batch.is_leaf


class Box:
    def __init__(self):
        self.t = tinyattn.ones(1)


def test_unpicklable_batches_raise_a_clear_error():
    class Boxes:
        def __len__(self):
            return 1

        def __getitem__(self, i):
            return Box()

    loader = DataLoader(Boxes(), batch_size=None, num_workers=1)
    with pytest.raises(TypeError, match="picklable"):
        list(loader)


def test_batch_sampler_with_workers():
    sampler = BatchSampler(SequentialSampler(range(5)), 2, drop_last=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = [b.tolist() for b in DataLoader(range(5), batch_sampler=sampler, num_workers=2)]
    assert out == [[0, 1], [2, 3], [4]]


def test_tensor_dataset_with_spawn_context():
    ds = TensorDataset(tinyattn.arange(4.0))
    loader = DataLoader(ds, batch_size=2, num_workers=1, multiprocessing_context="spawn")
    assert [x.tolist() for (x,) in loader] == [[0.0, 1.0], [2.0, 3.0]]
