"""Datasets and random_split against torch (lengths, indices, errors) and on their own."""

import pickle
import warnings

import numpy as np
import pytest
from _data_helpers import same

import tinyattn
from tinyattn.utils.data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def test_tensor_dataset_matches_torch(torch):
    x, y = np.arange(12.0).reshape(6, 2), np.arange(6)
    ours = TensorDataset(tinyattn.tensor(x), tinyattn.tensor(y))
    theirs = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    assert len(ours) == len(theirs) == 6
    for i in (0, 3, -1):
        same(ours[i], theirs[i], torch)
    same(ours[1:4], theirs[1:4], torch)


def test_tensor_dataset_size_mismatch_is_an_assertion_error():
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(tinyattn.ones(3), tinyattn.ones(4))


def test_tensor_dataset_pickles_as_arrays():
    ds = TensorDataset(tinyattn.arange(4.0), tinyattn.arange(4))
    back = pickle.loads(pickle.dumps(ds))
    assert [t.tolist() for t in back[2]] == [2.0, 2]
    assert back.tensors[1].dtype == tinyattn.int64


def test_subset_and_concat_match_torch(torch):
    from torch.utils import data as td

    a, b = list(range(10, 13)), list(range(20, 24))
    ours, theirs = ConcatDataset([a, b]), td.ConcatDataset([a, b])
    assert len(ours) == len(theirs) and ours.cumulative_sizes == theirs.cumulative_sizes
    assert [ours[i] for i in range(-7, 7)] == [theirs[i] for i in range(-7, 7)]
    for bad in (-8, 7):
        e_t = _raised(lambda bad=bad: theirs[bad])
        e_o = _raised(lambda bad=bad: ours[bad])
        assert type(e_o) is type(e_t)
    sub_o, sub_t = Subset(ours, [6, 0, 3]), td.Subset(theirs, [6, 0, 3])
    assert len(sub_o) == len(sub_t) == 3
    assert [sub_o[i] for i in range(3)] == [sub_t[i] for i in range(3)]
    assert sub_o.__getitems__([2, 0]) == sub_t.__getitems__([2, 0])
    torch_stream = _torch_stream(td)
    assert list(ChainDataset([Stream(2), Stream(3)])) == list(
        td.ChainDataset([torch_stream(2), torch_stream(3)])
    )


def _torch_stream(td):
    class TorchStream(td.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

    return TorchStream


@pytest.mark.parametrize("kind", ["empty", "iterable"])
def test_concat_errors_match_torch(kind, torch):
    td = torch.utils.data
    ours = [] if kind == "empty" else [Stream(2)]
    theirs = [] if kind == "empty" else [_torch_stream(td)(2)]
    e_t = _raised(lambda: td.ConcatDataset(theirs))
    e_o = _raised(lambda: ConcatDataset(ours))
    assert type(e_o) is type(e_t) and str(e_o) == str(e_t)


def test_dataset_base_and_operators():
    with pytest.raises(NotImplementedError, match="__getitem__"):
        Dataset()[0]
    ds = TensorDataset(tinyattn.arange(3))
    both = ds + ds
    assert isinstance(both, ConcatDataset) and len(both) == 6
    chained = Stream(2) + Stream(3)
    assert isinstance(chained, ChainDataset)
    assert list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5


@pytest.mark.parametrize(
    "n, lengths",
    [
        (10, [3, 7]),
        (10, [0.33, 0.33, 0.34]),
        (11, [0.5, 0.5]),
        (10, [0.25, 0.25, 0.25, 0.25]),
        (7, [0.1, 0.2, 0.7]),
        (3, [0.1, 0.1, 0.8]),
        (100, [0.8, 0.1, 0.1]),
    ],
)
def test_random_split_lengths_match_torch(n, lengths, torch):
    with warnings.catch_warnings(record=True) as w_t:
        warnings.simplefilter("always")
        theirs = torch.utils.data.random_split(range(n), lengths)
    with warnings.catch_warnings(record=True) as w_o:
        warnings.simplefilter("always")
        ours = random_split(range(n), lengths)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert [str(w.message) for w in w_o] == [str(w.message) for w in w_t]
    everything = sorted(i for s in ours for i in s)
    assert everything == list(range(n))  # a partition: disjoint and complete


@pytest.mark.parametrize("lengths", [[3, 3], [0.5, 1.5], [-0.5, 1.5], [0.6, 0.6]])
def test_random_split_errors_match_torch(lengths, torch):
    e_t = _raised(lambda: torch.utils.data.random_split(range(10), lengths))
    e_o = _raised(lambda: random_split(range(10), lengths))
    assert type(e_o) is type(e_t) and str(e_o) == str(e_t)


def test_random_split_generator_is_deterministic_and_independent_of_global_rng():
    def split(seed, global_seed):
        tinyattn.manual_seed(global_seed)
        g = tinyattn.Generator().manual_seed(seed)
        return [s.indices for s in random_split(range(20), [0.5, 0.5], generator=g)]

    assert split(1, 0) == split(1, 123)
    assert split(1, 0) != split(2, 0)
    tinyattn.manual_seed(5)
    first = [s.indices for s in random_split(range(20), [10, 10])]
    tinyattn.manual_seed(5)
    assert [s.indices for s in random_split(range(20), [10, 10])] == first
