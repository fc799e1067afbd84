"""``DistributedSampler``: the share of a dataset's indices one replica (rank) reads.

No process group is needed when ``num_replicas`` and ``rank`` are given, as in torch
(tinyattn never has one, so leaving them out raises torch's "not initialized" error).
"""

from __future__ import annotations

import math

from ...foundations.type_names import type_name
from ...random import Generator
from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _int_arg(name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(
            f"DistributedSampler: argument '{name}' must be an int, got {type_name(value)}"
        )
    return value


class DistributedSampler(Sampler):
    """Indices ``rank, rank + R, rank + 2R, ...`` of the (shuffled, padded) index list, R = ``num_replicas``.

    With ``shuffle`` the list is a permutation drawn from a generator seeded with
    ``seed + epoch`` (call :meth:`set_epoch` each epoch for a new order), identical on
    every replica. Without ``drop_last`` the list is padded by repeating its start so
    that every replica gets ``ceil(N / R)`` indices; with it, the tail is dropped so that
    every replica gets ``floor(N / R)`` (when ``N % R != 0``).
    """

    def __init__(
        self,
        dataset,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        from ...shims import distributed

        if num_replicas is None:
            num_replicas = distributed.get_world_size()  # raises: no process group
        if rank is None:
            rank = distributed.get_rank()
        num_replicas, rank = _int_arg("num_replicas", num_replicas), _int_arg("rank", rank)
        if num_replicas < 1:
            raise ValueError(
                f"DistributedSampler: argument 'num_replicas' must be >= 1, got {num_replicas}"
            )
        if not 0 <= rank < num_replicas:
            raise ValueError(
                f"DistributedSampler: invalid rank {rank}, rank should be in the interval "
                f"[0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = _int_arg("seed", seed)

    def __iter__(self):
        from ...ops.random.sampling import randperm

        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        else:
            missing = self.total_size - len(indices)
            if missing > 0:
                indices += (indices * math.ceil(missing / len(indices)))[:missing]
        assert len(indices) == self.total_size
        own = indices[self.rank : self.total_size : self.num_replicas]
        assert len(own) == self.num_samples
        return iter(own)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` in the shuffle seed (call before each epoch's iteration)."""
        self.epoch = epoch
