"""Datasets: what a DataLoader reads samples from.

A map-style dataset (`Dataset`) answers `dataset[i]` and `len(dataset)`; an iterable-style one
(`IterableDataset`) is a stream to iterate over. The wrappers combine datasets without copying them:
`TensorDataset` (rows of tensors), `Subset` (chosen indices), `ConcatDataset` (one after another),
`ChainDataset` (streams one after another), `StackDataset` (side by side); `random_split` cuts a
dataset into random subsets, drawing its permutation as PyTorch does.
"""

import bisect
import itertools
import math
import numbers
import warnings

from ... import random
from ...errors import ShapeError


class Dataset:
    """A map from keys (usually 0..len-1) to samples: subclasses define `__getitem__` and, for the
    default samplers, `__len__`. They may define `__getitems__(indices)` to fetch a batch at once."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(self, index)")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define `__iter__`. With worker processes each worker
    iterates its own copy; `get_worker_info()` tells a copy which part of the stream is its own."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__(self)")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample i is `(t[i] for t in tensors)`: the tensors must have the same first dimension."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        sizes = [tuple(t.shape) for t in tensors]
        if any(not s or s[0] != sizes[0][0] for s in sizes):
            shown = ", ".join(str(list(s)) for s in sizes)
            raise ShapeError(f"TensorDataset needs tensors with the same first dimension (one row per "
                             f"sample), got shapes {shown}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple([t[index] for t in self.tensors])  # (a list first: quicker than a generator)

    def __len__(self):
        return self.tensors[0].shape[0]


class StackDataset(Dataset):
    """Datasets of one length side by side: sample i is a tuple (`StackDataset(a, b)`) or a dict
    (`StackDataset(image=a, text=b)`) of their samples i."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset takes datasets as positional arguments (samples are tuples) "
                             "or as keyword arguments (samples are dicts), not both")
        if not (args or kwargs):
            raise ValueError("StackDataset needs at least one dataset")
        self.datasets = args or kwargs
        lengths = [len(d) for d in (args or kwargs.values())]
        if any(n != lengths[0] for n in lengths):
            raise ValueError(f"StackDataset needs datasets of one length, got lengths {lengths}")
        self._length = lengths[0]

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: d[index] for key, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after another: index i falls in the first dataset whose running
    total of lengths (`cumulative_sizes`) exceeds it."""

    @staticmethod
    def cumsum(sequence):
        """The running totals of the datasets' lengths (where each one ends)."""
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset takes map-style datasets; chain IterableDatasets "
                                "with ChainDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise IndexError(f"index {index} is out of range for a ConcatDataset of length {len(self)}")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        if which == len(self.datasets):
            raise IndexError(f"index {index} is out of range for a ConcatDataset of length {len(self)}")
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class ChainDataset(IterableDataset):
    """IterableDatasets one after another, chained as they are iterated."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            _check_iterable(d)
            yield from d

    def __len__(self):
        return sum(len(_check_iterable(d)) for d in self.datasets)


def _check_iterable(dataset):
    if not isinstance(dataset, IterableDataset):
        raise TypeError(f"ChainDataset chains IterableDatasets, got {type(dataset).__name__}: "
                        f"combine map-style datasets with ConcatDataset")
    return dataset


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order: sample i is `dataset[indices[i]]`."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices):
        wanted = [self.indices[i] for i in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(wanted)
        return [self.dataset[i] for i in wanted]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split `dataset` into non-overlapping random `Subset`s of the given lengths.

    `lengths` are sizes that add up to `len(dataset)`, or fractions that add up to 1: each split
    then gets floor(fraction * len) samples and the remainder goes one by one to the splits in turn.
    The order comes from `randperm(len(dataset), generator=generator)` (the default generator when
    None), so a seed gives PyTorch's split.
    """
    lengths = list(lengths)
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ValueError(f"random_split: the fraction at index {i} is {fraction}, not between 0 and 1")
        lengths = [math.floor(len(dataset) * fraction) for fraction in lengths]
        for i in range(len(dataset) - sum(lengths)):
            lengths[i % len(lengths)] += 1
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    if any(isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0 for n in lengths):
        raise ValueError(f"random_split needs non-negative int lengths or fractions that sum to 1, got {lengths}")
    if sum(lengths) != len(dataset):
        raise ValueError(f"random_split: the lengths {lengths} sum to {sum(lengths)}, but the dataset has "
                         f"{len(dataset)} samples; give lengths that add up to {len(dataset)} or fractions "
                         f"that add up to 1")
    order = (generator or random.default_generator).randperm(len(dataset)).tolist()
    lengths = [int(n) for n in lengths]
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, order[end - length:end]) for end, length in zip(ends, lengths)]
