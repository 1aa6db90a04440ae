"""`tinyattn.utils.data`: PyTorch's data loading (`from torch.utils.data import Dataset, DataLoader`).

    dataset.py     Dataset, IterableDataset, TensorDataset, Subset, ConcatDataset, ... random_split
    sampler.py     SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler, BatchSampler
    collate.py     default_collate, default_convert
    dataloader.py  DataLoader (in the main process, or in worker processes)
    worker.py      get_worker_info and what runs in a worker process
    distributed.py DistributedSampler (PyTorch's order; one process unless told num_replicas and rank)
"""

from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
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
from .worker import WorkerInfo, get_worker_info
from . import distributed  # noqa: E402  (DistributedSampler, for one process)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset", "RandomSampler",
    "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset",
    "WeightedRandomSampler", "WorkerInfo", "default_collate", "default_convert", "get_worker_info", "random_split",
]

# a PyTorch name this module lacks says so (tinyattn/missing.py)
from ... import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)  # its public names only
