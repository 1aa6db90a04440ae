"""Counting values: `histogram`, `histc` and `bincount`, as PyTorch's torch.* functions and Tensor methods.

They count, so nothing here is differentiable (neither is it in PyTorch): the results record no graph.
"""

import math

from .. import backend, dtypes, return_types, tensor_core
from ..errors import ShapeError
from ..tensor_core import TensorCore
from .creation import linspace


HistogramResult = return_types.named_result("histogram", ["hist", "bin_edges"])


def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, 2, ... occurs in a 1-D tensor of non-negative integers (summing
    `weights` instead of counting ones, when given); at least `minlength` entries."""
    if not isinstance(input, TensorCore) or input.dtype.is_floating_point or input.dtype is dtypes.bool_:
        raise TypeError(f"bincount counts integers: got {_what(input)}; use .long() first")
    if input.ndim != 1:
        raise ShapeError(f"bincount only supports 1-d non-negative integral inputs, got shape {list(input.shape)}")
    if minlength < 0:
        raise ValueError(f"minlength should be >= 0, got {minlength}")
    xp = backend.namespace(input.array)
    ids = xp.astype(input.array, xp.int64)
    if input.numel() and int(xp.min(ids)) < 0:
        raise ValueError(f"bincount only supports non-negative integers, got {int(xp.min(ids))}")
    if weights is not None and (not isinstance(weights, TensorCore) or weights.ndim != 1
                                or weights.shape[0] != input.shape[0]):
        raise ShapeError(f"bincount: weights should be 1-d and have the same length as input "
                         f"({input.shape[0]}), got {_what(weights)}")
    length = max(int(xp.max(ids)) + 1 if input.numel() else 0, minlength)
    if weights is None or not input.numel():  # (PyTorch counts nothing as int64 even with weights)
        dtype, values = dtypes.int64, xp.ones(ids.shape, dtype=xp.int64, **backend.creation_kwargs(xp))
    else:
        dtype = weights.dtype if weights.dtype.is_floating_point else dtypes.float64  # as PyTorch
        values = xp.astype(weights.array, backend.array_dtype(xp, dtype))
    counts = xp.zeros((length,), dtype=backend.array_dtype(xp, dtype), **backend.creation_kwargs(xp))
    return tensor_core.wrap(backend.scatter_add(counts, ids, values))


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """(hist, bin_edges): how many elements fall in each bin. `bins` (100 unless given, as in PyTorch) is
    a number of equal bins between
    range=(low, high) (the data's smallest and largest value by default) or a 1-D tensor of edges; every
    bin holds [left, right) but the last, [left, right]. `weight` counts each element by its weight;
    density=True divides by the total and the bin widths."""
    x = _floats(input, "histogram")
    xp = backend.namespace(x.array)
    if isinstance(bins, TensorCore):
        if bins.ndim != 1 or bins.shape[0] < 1:
            raise ShapeError(f"histogram: a bins tensor holds the edges, one dimension, got shape {list(bins.shape)}")
        if bins.dtype is not x.dtype:
            raise TypeError(f"histogram: the bin edges must have the input's dtype {x.dtype}, got {bins.dtype}")
        edges = bins.array
    else:
        if not isinstance(bins, int) or bins <= 0:
            raise ValueError(f"histogram: bins must be > 0, but got {bins}")
        low, high = _bin_range(x, range, "histogram", 0.5)
        edges = _linspace(low, high, bins + 1, x)
    values = xp.reshape(x.array, (-1,))
    if weight is not None:
        if not isinstance(weight, TensorCore) or tuple(weight.shape) != tuple(x.shape) or weight.dtype is not x.dtype:
            raise ShapeError(f"histogram: weight must be a {x.dtype} tensor of the input's shape {list(x.shape)}, "
                             f"got {_what(weight)}")
        weight = xp.reshape(weight.array, (-1,))
    count = edges.shape[0] - 1
    inside = (values >= edges[0]) & (values <= edges[-1])  # outside the edges (and NaN): not counted
    position = xp.searchsorted(edges, values, side="right") - 1
    position = xp.clip(position, 0, max(count - 1, 0))  # the right edge belongs to the last bin
    hist = _counts(position, inside, weight, count, x, xp)
    if density:
        hist = hist / xp.sum(hist) / (edges[1:] - edges[:-1])
    return HistogramResult(tensor_core.wrap(hist), tensor_core.wrap(xp.asarray(edges, copy=True)))


def histc(input, bins=100, min=0, max=0):
    """The counts of `bins` equal bins between min and max (the data's range when min == max and there is
    data); elements outside are not counted."""
    x = _floats(input, "histc")
    if not isinstance(bins, int) or bins <= 0:
        raise ValueError(f"histc: bins must be > 0, but got {bins}")
    if min > max:
        raise ValueError(f"histc: max must be larger than min, got min={min} and max={max}")
    xp = backend.namespace(x.array)
    low, high = _bin_range(x, None if min == max and x.numel() else (min, max), "histc", 1.0)
    values = xp.reshape(x.array, (-1,))
    low_, high_, bins_ = (xp.asarray(v, dtype=x.array.dtype, **backend.creation_kwargs(xp)) for v in (low, high, bins))
    inside = (values >= low_) & (values <= high_)
    scaled = (values - low_) * bins_ / (high_ - low_)  # in the input's dtype, as PyTorch computes it
    position = xp.astype(xp.where(inside, scaled, xp.zeros_like(scaled)), xp.int64)
    position = xp.clip(position, 0, bins - 1)  # the right edge belongs to the last bin
    return tensor_core.wrap(_counts(position, inside, None, bins, x, xp))


def _counts(position, inside, weight, count, x, xp):
    """The sum of `weight` (or of ones) per bin, over the elements `inside` the bins."""
    hist = xp.zeros((count,), dtype=x.array.dtype, **backend.creation_kwargs(xp))
    ones = xp.ones(position.shape, dtype=x.array.dtype, **backend.creation_kwargs(xp)) if weight is None else weight
    taken = xp.where(inside, ones, xp.zeros_like(ones))
    return backend.scatter_add(hist, position, taken) if count else hist


def _bin_range(x, given, name, widen):
    """(low, high) of the bins: as given, or the data's; widened by `widen` each way when they are equal."""
    xp = backend.namespace(x.array)
    if given is not None:
        low, high = (float(v) for v in given)
        if low > high:
            raise ValueError(f"{name}: min should not exceed max, but got min {low} max {high}")
    elif x.numel():
        low, high = float(xp.min(x.array)), float(xp.max(x.array))
    else:  # no data: histogram's bins span [0, 1]
        low, high = 0.0, 1.0
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"{name}: the range [{low}, {high}] is not finite: give range= (or min=, max=) "
                         "or remove inf and NaN first")
    if low == high:
        low, high = low - widen, high + widen
    return low, high


def _linspace(low, high, steps, like):

    return linspace(low, high, steps, dtype=like.dtype, device=like.device).array


def _floats(input, name):
    if not isinstance(input, TensorCore) or not input.dtype.is_floating_point:
        raise TypeError(f"{name} counts floating point values, got {_what(input)}: use .float() first")
    return input


def _what(value):
    return f"a {value.dtype} tensor of shape {list(value.shape)}" if isinstance(value, TensorCore) else type(value).__name__
