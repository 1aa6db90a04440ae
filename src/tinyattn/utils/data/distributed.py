"""`tinyattn.utils.data.distributed`: `DistributedSampler`, for programs that import it at the top.

tinyattn trains in one process (see tinyattn.distributed), so without `num_replicas` and `rank` the
sampler is the one process's: num_replicas=1, rank=0 (PyTorch's would ask the process group, and
raise without one). Given them, it yields exactly the indices PyTorch's yields for that rank:

- shuffled with `randperm(len(dataset))` from a fresh generator seeded with `seed + epoch` (call
  `set_epoch(epoch)` at the start of every epoch for a new order), or in order with shuffle=False;
- padded by repeating the first indices until every rank gets the same number (or, with
  drop_last=True, cut to a multiple of num_replicas); then rank r takes every num_replicas-th index
  starting at r.
"""

import math
import numbers

from ... import random
from .sampler import Sampler


def _check_int(name, value, low):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
        raise ValueError(f"DistributedSampler: {name} must be an integer >= {low}, got {value!r}")


class DistributedSampler(Sampler):
    """The indices of one rank's share of a map-style dataset (PyTorch's order, for the same seed and epoch)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        num_replicas = 1 if num_replicas is None else num_replicas
        rank = 0 if rank is None else rank
        _check_int("num_replicas", num_replicas, 1)
        if not isinstance(rank, numbers.Integral) or isinstance(rank, bool) or not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        _check_int("seed", seed, 0)
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        self.shuffle = shuffle
        self.seed = seed
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)  # drop the tail, as PyTorch
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            generator = random.Generator()
            generator.manual_seed(self.seed + self.epoch)
            indices = generator.randperm(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch the next shuffle is seeded with (seed + epoch)."""
        self.epoch = epoch


__all__ = ["DistributedSampler"]
