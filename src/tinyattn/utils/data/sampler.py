"""Samplers: the order in which a DataLoader visits a map-style dataset's indices.

The random ones draw exactly what PyTorch's draw, in the same order, so that after the same
`manual_seed` the batches, and everything drawn after them, are PyTorch's:

- `RandomSampler` without a generator draws a seed from the default generator
  (`torch.empty((), dtype=torch.int64).random_()`) when its iteration starts, and shuffles with a
  fresh generator seeded with it; given a generator, it shuffles with that one directly;
- without replacement it yields `randperm(n)` as many times as `num_samples` needs, and then the
  first `num_samples % n` of one more permutation (drawn even when that part is empty);
- with replacement it yields `randint(0, n)` in chunks of 32, then one chunk of the remainder.

Each `__iter__` is a Python generator, as in PyTorch, so nothing is drawn before the first index
is asked for.
"""

import itertools
import numbers

import numpy as np

from ... import random


def _generator_or_default(generator):
    return random.default_generator if generator is None else generator


def _is_positive_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > 0


class Sampler:
    """Base class: subclasses define `__iter__` (indices, or lists of indices for a batch sampler)
    and usually `__len__`."""

    def __init__(self, data_source=None):  # PyTorch's signature; the argument is not used
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__(self)")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices in random order: a shuffle of the dataset, or `num_samples` draws with replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not _is_positive_int(self.num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        # the dataset's length is read every time: it may change
        """How many indices one pass yields (the dataset's length unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if n == 0:
            raise ValueError("RandomSampler cannot draw from an empty dataset (its length is 0)")
        generator = self.generator
        if generator is None:
            generator = random.Generator().manual_seed(random.default_generator.draw_seed())
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from generator.randint(0, n, (32,)).tolist()
            yield from generator.randint(0, n, (self.num_samples % 32,)).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from generator.randperm(n).tolist()
            yield from generator.randperm(n).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in random order (`randperm` drawn from `generator`, or the default one)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _generator_or_default(self.generator).randperm(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights` (`multinomial`)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not _is_positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = np.asarray(weights.tolist() if hasattr(weights, "tolist") else weights, dtype=np.float64)
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {weights.shape}")
        self.weights = weights
        self.num_samples = int(num_samples)
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        drawn = _generator_or_default(self.generator).multinomial(self.weights, self.num_samples, self.replacement)
        yield from drawn.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of `batch_size` indices taken from `sampler` in its order; the last list is shorter,
    or left out with `drop_last=True`."""

    def __init__(self, sampler, batch_size, drop_last):
        if not _is_positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        indices = iter(self.sampler)
        while batch := list(itertools.islice(indices, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
