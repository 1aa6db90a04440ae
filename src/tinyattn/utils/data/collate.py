"""Turning a list of samples into a batch, as PyTorch's `default_collate` does.

    tensors          -> stacked along a new first dimension
    NumPy arrays     -> tensors, stacked (NumPy scalars -> a tensor of their dtype)
    float            -> float64 tensor;  int -> int64 tensor;  bool -> bool tensor
    str, bytes       -> left as a list
    dict             -> a dict of the same keys, each collated
    namedtuple       -> the same namedtuple, each field collated
    tuple, list      -> transposed: a list of the collated first elements, second elements, ...

`default_convert` (used when a DataLoader does not batch, `batch_size=None`) only turns NumPy arrays
into tensors, wherever they are in the sample. To handle a type of your own, add a function to
`default_collate_fn_map` or call `collate(batch, collate_fn_map=...)` with a map of your own.
"""

import collections.abc
import copy
import re

import numpy as np

from ... import dtypes, functions
from ...errors import ShapeError
from ...tensor import Tensor

_STRING_OR_OBJECT = re.compile(r"[SaUO]")  # NumPy dtype codes that cannot become tensors


def default_convert(data):
    """NumPy arrays and scalars (also inside dicts, lists, tuples) to tensors; the rest unchanged."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, (np.ndarray, np.bool_, np.number)):
        if isinstance(data, np.ndarray) and _STRING_OR_OBJECT.search(data.dtype.str):
            return data
        return functions.tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _same_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_sequence(data, [default_convert(d) for d in data])
    return data


def _same_mapping(original, values):
    """`values` in a mapping of the original's type where that type allows it, else a dict."""
    try:
        if isinstance(original, collections.abc.MutableMapping):
            clone = copy.copy(original)
            clone.update(values)
            return clone
        return type(original)(values)
    except TypeError:
        return values


def _same_sequence(original, values):
    """`values` in a sequence of the original's type where that type allows it, else a list."""
    try:
        if isinstance(original, collections.abc.MutableSequence):
            clone = copy.copy(original)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return type(original)(values)
    except TypeError:
        return values


def collate(batch, *, collate_fn_map=None):
    """Collate `batch` (a list of samples of one structure) with the functions in `collate_fn_map`
    (type -> function(batch, *, collate_fn_map)), recursing into mappings and sequences."""
    elem = batch[0]
    if collate_fn_map is not None:
        if type(elem) in collate_fn_map:
            return collate_fn_map[type(elem)](batch, collate_fn_map=collate_fn_map)
        for collate_type, collate_fn in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return collate_fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        _check_same_keys(batch)
        return _same_mapping(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                                    for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(collate(field, collate_fn_map=collate_fn_map) for field in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        lengths = [len(sample) for sample in batch]
        if any(n != lengths[0] for n in lengths):
            raise RuntimeError(f"each element in list of batch should be of equal size: the samples have "
                               f"lengths {lengths}; pad them to one length or pass a collate_fn")
        transposed = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed  # as PyTorch: tuples become lists
        return _same_sequence(elem, transposed)
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                    f"found {type(elem)}")


def _check_same_keys(batch):
    keys = set(batch[0])
    for i, sample in enumerate(batch):
        missing = keys - set(sample)
        if missing:
            raise KeyError(f"default_collate: sample {i} of the batch has no key {sorted(missing, key=str)[0]!r} "
                           f"that sample 0 has; give every sample the same keys")


def collate_tensor_fn(batch, *, collate_fn_map=None):
    shapes = [t.array.shape for t in batch]  # (the arrays' tuples: no Size made for each sample)
    for i, shape in enumerate(shapes):
        if shape != shapes[0]:
            raise ShapeError(f"default_collate: stack expects each tensor to be equal size, but sample 0 "
                             f"has shape {list(shapes[0])} and sample {i} has shape {list(shape)}; pad the "
                             f"samples to one shape or pass a collate_fn")
    return functions.stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    if _STRING_OR_OBJECT.search(batch[0].dtype.str):
        raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                        f"found {batch[0].dtype}")
    return collate([functions.tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return functions.tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return functions.tensor(batch, dtype=dtypes.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return functions.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """PyTorch's default_collate: see the module's docstring for what each type becomes."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
