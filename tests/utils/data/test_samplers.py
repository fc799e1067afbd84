"""Samplers: orders as torch where they are RNG-free, semantics and determinism elsewhere."""

import collections
import itertools

import pytest

import tinyattn
from tinyattn.utils.data import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def _same_error(ours, theirs):
    e_t, e_o = _raised(theirs), _raised(ours)
    assert type(e_o) is type(e_t), (e_o, e_t)
    assert str(e_o) == str(e_t)


def test_sequential_and_batch_samplers_match_torch(torch):
    from torch.utils import data as td

    data = list(range(7))
    assert list(SequentialSampler(data)) == list(td.SequentialSampler(data))
    for bs in (1, 2, 3, 7, 10):
        for drop_last in (False, True):
            ours = BatchSampler(SequentialSampler(data), bs, drop_last)
            theirs = td.BatchSampler(td.SequentialSampler(data), bs, drop_last)
            assert list(ours) == list(theirs)
            assert len(ours) == len(theirs)


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.BatchSampler(range(3), 0, False),
        lambda lib: lib.BatchSampler(range(3), True, False),
        lambda lib: lib.BatchSampler(range(3), 2, 1),
        lambda lib: lib.RandomSampler(range(3), replacement=1),
        lambda lib: lib.RandomSampler(range(3), num_samples=0),
        lambda lib: lib.WeightedRandomSampler([[1.0, 2.0]], 2),
        lambda lib: lib.WeightedRandomSampler([1.0, 2.0], 0),
        lambda lib: lib.WeightedRandomSampler([1.0, 2.0], 2, replacement=0),
    ],
)
def test_sampler_errors_match_torch(make, torch):
    import tinyattn.utils.data as ours

    _same_error(lambda: make(ours), lambda: make(torch.utils.data))


def test_random_sampler_is_a_permutation_per_pass():
    sampler = RandomSampler(range(10), generator=tinyattn.Generator().manual_seed(0))
    first, second = list(sampler), list(sampler)
    assert sorted(first) == sorted(second) == list(range(10))
    assert first != second  # a new permutation each pass
    assert len(sampler) == 10


def test_random_sampler_num_samples_without_replacement_is_whole_permutations_then_a_head():
    sampler = RandomSampler(range(4), num_samples=10, generator=tinyattn.Generator().manual_seed(3))
    out = list(sampler)
    assert len(out) == len(sampler) == 10
    assert sorted(out[:4]) == sorted(out[4:8]) == [0, 1, 2, 3]
    assert len(set(out[8:])) == 2


def test_random_sampler_with_replacement():
    sampler = RandomSampler(
        range(3), replacement=True, num_samples=100, generator=tinyattn.Generator().manual_seed(0)
    )
    out = list(sampler)
    assert len(out) == 100 and set(out) == {0, 1, 2}  # repeats, every value seen
    assert len(sampler) == 100


def test_random_sampler_determinism_and_global_rng():
    def order(seed=None, global_seed=0):
        tinyattn.manual_seed(global_seed)
        g = None if seed is None else tinyattn.Generator().manual_seed(seed)
        return list(RandomSampler(range(50), generator=g))

    assert order(seed=7, global_seed=0) == order(seed=7, global_seed=99)  # generator only
    assert order(seed=7) != order(seed=8)
    assert order(global_seed=1) == order(global_seed=1)  # no generator: the global seed
    assert order(global_seed=1) != order(global_seed=2)


def test_subset_random_sampler():
    indices = [5, 9, 11, 20]
    g = tinyattn.Generator().manual_seed(0)
    out = list(SubsetRandomSampler(indices, generator=g))
    assert sorted(out) == indices and len(SubsetRandomSampler(indices)) == 4
    g2 = tinyattn.Generator().manual_seed(0)
    assert list(SubsetRandomSampler(indices, generator=g2)) == out


def test_weighted_random_sampler():
    g = tinyattn.Generator().manual_seed(0)
    draws = list(WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=g))
    counts = collections.Counter(draws)
    assert counts[0] == 0 and 0.7 < counts[2] / 4000 < 0.8
    unique = list(WeightedRandomSampler([1.0, 1.0, 0.5, 2.0], 4, replacement=False))
    assert sorted(unique) == [0, 1, 2, 3]
    assert len(WeightedRandomSampler(tinyattn.tensor([1.0, 2.0]), 5)) == 5
    with pytest.raises(RuntimeError):
        list(WeightedRandomSampler([1.0, 2.0], 3, replacement=False))


def test_random_sampler_with_replacement_draws_lazily():
    """An "endless" sampler yields its first indices without building all of them."""
    sampler = tinyattn.utils.data.RandomSampler(range(5), replacement=True, num_samples=10**12)
    first = list(itertools.islice(iter(sampler), 3000))
    assert len(first) == 3000 and set(first) <= set(range(5))
