"""Datasets, samplers and the DataLoader (``torch.utils.data``), with torch's semantics.

>>> import tinyattn as torch
>>> from tinyattn.utils.data import DataLoader, TensorDataset
>>> loader = DataLoader(TensorDataset(torch.randn(10, 3)), batch_size=4, shuffle=True)
>>> len(loader), [tuple(x.shape) for (x,) in loader]
(3, [(4, 3), (4, 3), (2, 3)])

Files: ``dataset.py`` (what samples are), ``sampler.py`` (which indices, in which
order), ``_collate.py`` (samples -> batch), ``dataloader.py`` (the loop, in-process or
with workers), ``_multiprocess.py`` (the main process's side of the workers),
``_worker.py`` (what runs in a worker process).
"""

from ._collate import default_collate, default_convert
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .distributed import DistributedSampler
from . import distributed
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "DistributedSampler",
    "Dataset",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
