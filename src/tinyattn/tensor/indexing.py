"""Tensor methods: indexing and masking (x[key], x[key] = value, gather, masked_fill, where), and
sorting, selecting and scattering (sort, topk, index_select, scatter, ...).
"""

import builtins

import numpy as np

from .. import autograd, backend, dtypes, numpy_names, ops, return_types, tensor_core
from ..errors import ShapeError
from ..tensor_core import TensorCore
from . import counting
from .arguments import (_check_differentiable_dtype, _check_index_range, _check_output_size, _dim, _dims_tuple,
                        _scalar, _shape_arg, _value_to_write)
from .promotion import _as_operand, _broadcastable, _promote, result_dtype
from .index_keys import (_array_key, _as_index_tensor, _index_mask, _index_tensors, _index_vector, _mask_tensor,
                         _pytorch_order, _sequence_as_tuple, _simple_key)


SortResult = return_types.named_result("sort", ["values", "indices"])


def _where(condition, input, other):
    """input where condition is True, other elsewhere, with PyTorch's promotion (Tensor.where, torch.where)."""
    if not isinstance(condition, TensorCore) or condition.dtype is not dtypes.bool_:
        raise TypeError("where expects a bool tensor as its condition")
    like = input if isinstance(input, TensorCore) else other if isinstance(other, TensorCore) else condition
    if not isinstance(input, TensorCore) and not isinstance(other, TensorCore):  # where(c, 1.0, 0.0): float32
        input = tensor_core.from_data(input, dtype=result_dtype(input, other), device=condition.device)
    a, b = _promote(_as_operand(input, like), _as_operand(other, like))
    backend.same_device([condition.array] + [x.array for x in (a, b) if isinstance(x, TensorCore)])
    shapes = [tuple(x.shape) for x in (condition, a, b) if isinstance(x, TensorCore)]
    if ops.broadcast_shape(*shapes) is None:
        raise ShapeError(f"where: the shapes of the condition {list(condition.shape)}, input {list(ops.shape_of(a))} "
                         f"and other {list(ops.shape_of(b))} cannot be broadcast together")
    return ops.Where.apply(condition, a, b)


# torch.* functions that are Tensor methods too (x.asin() is tinyattn.asin(x)): the class below
# binds them, so each is written once

def _index_add_arguments(input, dim, index, source):
    """The axis and the index array (negative indices wrapped) of index_add, checked."""
    axis = _dim(dim, builtins.max(input.ndim, 1))
    if not isinstance(index, TensorCore) or index.dtype not in (dtypes.int64, dtypes.int32) or index.ndim > 1:
        raise TypeError(f"index_add: index must be a 1-D int64 tensor, got {index!r}")
    if not isinstance(source, TensorCore) or source.dtype is not input.dtype:
        raise TypeError(f"index_add: source must be a tensor of input's dtype {input.dtype}, got {source!r}: "
                        "convert it with .to(input.dtype)")
    expected = tuple(input.shape[:axis]) + (index.numel(),) + tuple(input.shape[axis + 1:])
    if tuple(source.shape) != expected and not (input.ndim == 0 and source.numel() == index.numel()):
        raise ShapeError(f"index_add: source of shape {list(source.shape)} does not fit: with dim={dim} and "
                         f"{index.numel()} indices it must be {list(expected)}")
    size = input.shape[axis] if input.ndim else 1
    if index.numel() and bool(((index < -size) | (index >= size)).any()):
        raise IndexError(f"index_add: an index is out of range for dim {dim} of size {size}")
    xp = backend.namespace(index.array)
    return axis, xp.reshape(index.array, (-1,)) % size


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of input with alpha * source added at the positions `index` along `dim` (repeats add up)."""
    axis, index_array = _index_add_arguments(input, dim, index, source)
    return ops.IndexAdd.apply(input, axis, index_array, source, alpha, index)  # (index: for its version)


def index_add_(input, dim, index, source, *, alpha=1):
    """index_add in place: input[:, index[j]] += alpha * source[:, j] for dim 1."""
    axis, index_array = _index_add_arguments(input, dim, index, source)
    return input._inplace(ops.IndexAdd, axis, index_array, source, alpha)


class IndexingMethods:
    """The indexing, masking, sorting and scattering methods of tinyattn.Tensor."""

    __slots__ = ()  # a mixin of Tensor, which keeps its numbers in TensorCore's slots

    # --- indexing and masking ---

    def __getitem__(self, key):
        if type(key) is list:
            key = _sequence_as_tuple(key)
        array = self.array
        if type(array) is np.ndarray:
            simple = _simple_key(key, array.shape)
            if simple is not None:  # x[3], x[k, j], C[ix]: a view, its dims in the order both libraries agree on
                if (type(simple) is not np.ndarray and not autograd.observers
                        and not (self._requires_grad and autograd.grad_mode.enabled)):
                    # nothing to record (Xb[k, j] under no_grad): the view Index.apply would make, directly
                    view = tensor_core.wrap(array[(simple if type(simple) is tuple else (simple,)) + (Ellipsis,)])
                    autograd._mark_views(self, (view,), (ops.Index, (simple,)))
                    return view
                # C[ix]: the index tensor itself is the key (an argument: its version is checked)
                return ops.Index.apply(self, key if type(simple) is np.ndarray else simple)
        index_tensors = _index_tensors(key)
        key = _array_key(key, self)
        order = _pytorch_order(key, self.ndim)
        # basic keys give a view: it shares self's version counter; the index tensors go along, for
        # the check of their versions in backward
        result = ops.Index.apply(self, key, *index_tensors)
        return result if order is None else ops.Permute.apply(result, order)

    def __setitem__(self, key, value):
        if type(key) is list:
            key = _sequence_as_tuple(key)
        if self._setitem_simple(key, value):
            return
        index_tensors = _index_tensors(key)
        key = _array_key(key, self)
        value = _value_to_write(self, value)
        if isinstance(value, TensorCore) and value.ndim and value.shape[0] == 1:
            # leading 1s are what broadcasting adds anyway: PyTorch drops them, so x[0] = t[None] works
            kept = list(value.shape)
            while kept and kept[0] == 1:
                kept.pop(0)
            value = value.reshape(tuple(kept))
        order = _pytorch_order(key, self.ndim)
        if order is not None and isinstance(value, TensorCore) and 0 < value.ndim <= len(order):
            # the value is laid out as PyTorch's x[key] (its missing leading dims broadcast); the write
            # below takes NumPy's layout. A value of more dims fails there, naming both shapes.
            shape = (1,) * (len(order) - value.ndim) + tuple(value.shape)
            numpy_order = sorted(range(len(order)), key=order.__getitem__)
            value = ops.Permute.apply(value.reshape(shape), tuple(numpy_order))
        try:
            if not self._setitem_direct(key, value):
                self._inplace(ops.IndexPut, key, value, *index_tensors)
        except (ValueError, TypeError):  # NumPy's errors for a value that does not fit: name both shapes
            target = self.detach()[key].shape if order is None else None
            if isinstance(value, TensorCore) and target is not None and ops.broadcast_shape(value.shape, target) != target:
                raise ShapeError(f"cannot write a value of shape {list(value.shape)} into x[key] of shape "
                                 f"{list(target)}: the value must broadcast to it") from None
            raise

    def _setitem_simple(self, key, value):
        """`dC[ix] = row` told at once: a simple key (ints, slices), a NumPy tensor of this dtype whose
        first dim is not a 1 to drop, nothing to record. What the full path below does for it, without
        its parsing; False where it does not apply (or where NumPy refuses: the full path says why)."""
        array = self.array
        if (type(array) is not np.ndarray or not isinstance(value, TensorCore) or autograd.observers
                or autograd.grad_mode.enabled and (self._requires_grad or value._requires_grad)):
            return False
        source = value.array
        if type(source) is not np.ndarray or source.dtype is not array.dtype or source.ndim and source.shape[0] == 1:
            return False
        simple = _simple_key(key, array.shape)
        if simple is None or type(simple) is np.ndarray:
            return False
        self._check_inplace(recording=False)
        try:
            array[simple] = source
        except (ValueError, TypeError):
            return False
        self._bump_version()
        if self._base is not None:
            self._view_version = self._version[0]
        return True

    def _setitem_direct(self, key, value):
        """x[key] = value with no graph to record (as in `dC[ix] += demb[k, j]` under no_grad): NumPy
        writes the value into x's memory, where IndexPut would write it into a copy of x that is then
        copied back. The same numbers either way. Returns False where that does not apply."""
        array = self.array
        if type(array) is not np.ndarray or autograd.observers:
            return False
        if autograd.grad_mode.enabled and (self._requires_grad or isinstance(value, TensorCore) and value._requires_grad):
            return False
        if isinstance(value, TensorCore):
            value = value.array
            if type(value) is not np.ndarray:
                return False
        self._check_inplace(recording=False)
        array[key] = value
        self._bump_version()
        if self._base is not None:
            self._view_version = self._version[0]
        return True

    def gather(self, dim, index):
        """The elements picked along `dim` by `index`: `out[i][j] = self[i][index[i][j]]` for dim 1."""
        if index.dtype not in (dtypes.int64, dtypes.int32):
            raise TypeError(f"gather expects an int64 index, got {index.dtype}")
        index = index.long()
        backend.same_device([self.array, index.array])
        axis = _dim(dim, self.ndim)
        if max(self.ndim, index.ndim) <= 1 and min(self.ndim, index.ndim) == 0:  # PyTorch takes 0-d as 1-d here
            return self.reshape(-1).gather(0, index.reshape(-1)).reshape(index.shape)
        too_big = any(n > m for i, (n, m) in enumerate(zip(index.shape, self.shape)) if i != axis)
        if index.ndim != self.ndim or too_big:
            raise ShapeError(
                f"gather: an index of shape {list(index.shape)} does not fit an input of shape "
                f"{list(self.shape)}: it needs as many dims, and no more than the input's size in every "
                f"dim but dim {axis}"
            )
        if index.numel():  # checked here: CuPy would wrap an index out of range instead of raising
            xp, size = backend.namespace(index.array), self.shape[axis]
            low, high = int(xp.min(index.array)), int(xp.max(index.array))
            if low < 0 or high >= size:
                raise IndexError(f"gather: index {high if high >= size else low} is out of bounds for dim "
                                 f"{axis} with size {size} (valid indices are 0 to {size - 1})")
        return ops.Gather.apply(self, axis, index)

    def masked_fill(self, mask, value):
        """A copy with `value` where `mask` (bool, broadcast) is True; the gradient skips those."""
        shape = ops.broadcast_shape(self.shape, mask.shape) if isinstance(mask, TensorCore) else None
        if shape is not None and shape != self.shape:  # the result has the broadcast shape, as in PyTorch
            return self.expand(shape).masked_fill(mask, value)
        if isinstance(value, TensorCore) and value.requires_grad and autograd.grad_mode.enabled:
            _scalar(value)  # a 0-d tensor only, as below
            _check_differentiable_dtype(value, self.dtype, "masked_fill")
            return _where(mask, value.to(self.dtype), self)  # so that the value receives its gradient too
        return ops.MaskedFill.apply(self, _mask_tensor(mask, self), _value_to_write(self, _scalar(value)))

    def masked_fill_(self, mask, value):
        """In place: `value` written where `mask` (bool, broadcast) is True."""
        if isinstance(value, TensorCore) and value.requires_grad and autograd.grad_mode.enabled and self.is_floating_point():
            _scalar(value)
            _mask_tensor(mask, self)
            return self.copy_(_where(mask, value.to(self.dtype), self))  # the value receives its gradient
        return self._inplace(ops.MaskedFill, _mask_tensor(mask, self), _value_to_write(self, _scalar(value)), True)

    def histogram(self, bins=100, *, range=None, weight=None, density=False):
        """(hist, bin_edges): how many elements fall in each of the bins."""
        return counting.histogram(self, bins, range=range, weight=weight, density=density)

    def histc(self, bins=100, min=0, max=0):
        """The counts of `bins` equal bins between min and max (the data's range when min == max)."""
        return counting.histc(self, bins, min, max)

    def bincount(self, weights=None, minlength=0):
        """How often each value 0, 1, 2, ... occurs in a 1-D tensor of non-negative integers."""
        return counting.bincount(self, weights, minlength)

    def index_fill(self, dim, index, value):
        """A copy with `value` written at positions `index` (int64, 1-D or 0-d) along `dim`; differentiable
        in the tensor (zero gradient where filled) and in a 0-d tensor value (the sum of those places')."""
        return self.masked_fill(_index_mask(self, dim, index, value), value)

    def index_fill_(self, dim, index, value):
        """In place: the slices at `index` along `dim` set to `value`."""
        return self.masked_fill_(_index_mask(self, dim, index, value), value)

    def where(self, condition, other):
        """self where `condition` is True, `other` elsewhere (differentiable in both)."""
        return _where(condition, self, other)

    # --- sorting, selecting, scattering ---

    def sort(self, dim=-1, descending=False, *, stable=False, axis=None):
        """(values, indices) along `dim`. Always stable (equal values keep their order), which
        stable=False allows; NaN sorts as the largest value, as in PyTorch."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("sort", dim, axis, -1)
        if self.ndim == 0:
            _dim(dim, 0)
            values, indices = self.reshape(1).sort(0, descending)
            return SortResult(values.reshape(()), indices.reshape(()))
        values, indices = ops.Sort.apply(self, _dim(dim, self.ndim), descending)
        return SortResult(values, indices.detach())  # indices are no part of the graph

    def argsort(self, dim=-1, descending=False, *, stable=False, axis=None):
        """The indices that sort the tensor along `dim` (ascending unless `descending=True`)."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("argsort", dim, axis, -1)
        if self.ndim == 0:
            _dim(dim, 0)
            return self.reshape(1).argsort(0, descending).reshape(())
        xp = backend.namespace(self.array)
        order = xp.argsort(self.array, axis=_dim(dim, self.ndim), descending=descending, stable=True)
        return tensor_core.wrap(xp.astype(order, xp.int64))

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        """The distinct elements in ascending order (sorted=False allows that too), or with `dim` the
        distinct slices along it in lexicographic order; with return_inverse, where each element (or
        slice) of self sits among them, and with return_counts how often each occurs. NaNs stay
        distinct, as in PyTorch (slices holding NaNs may come in another order than PyTorch's).
        Not differentiable: the result is no part of the graph."""
        if dim is None:
            values, inverse, counts = backend.unique(self.array)
            inverse = backend.namespace(inverse).reshape(inverse, self.shape)
        else:
            if self.ndim == 0:
                raise IndexError(f"unique: dim={dim} was given for a 0-d tensor, which has no dimensions")
            axis = _dim(dim, self.ndim)
            if any(size == 0 for d, size in enumerate(self.shape) if d != axis):
                raise ShapeError(f"unique: shape {list(self.shape)} has a dimension of size 0 other than "
                                 f"dim={dim}, so it has no slices to compare")
            values, inverse, counts = backend.unique(self.array, axis)
        xp = backend.namespace(values)
        result = (tensor_core.wrap(values),)
        if return_inverse:
            result += (tensor_core.wrap(xp.astype(inverse, xp.int64)),)
        if return_counts:
            result += (tensor_core.wrap(xp.astype(counts, xp.int64)),)
        return result[0] if len(result) == 1 else result

    def index_select(self, dim, index):
        """The slices at `index` (a 1-D integer tensor) along `dim`: a copy."""
        axis = _dim(dim, self.ndim)
        index = _index_vector(index, self, "index_select")
        size = self.shape[axis] if self.ndim else 1
        _check_index_range(index, size, f"index_select: index {{}} is out of range for dim {axis} with size {size}")
        if self.ndim == 0:
            return ops.IndexSelect.apply(self.reshape(1), 0, index).reshape(())
        return ops.IndexSelect.apply(self, axis, index)

    def masked_select(self, mask):
        """The elements where `mask` is True, as a 1-D tensor."""
        if not isinstance(mask, TensorCore) or mask.dtype is not dtypes.bool_:
            raise TypeError("masked_select expects a bool mask tensor: use mask.bool() or a comparison (x > 0)")
        backend.same_device([self.array, mask.array])
        if not _broadcastable(mask.shape, self.shape):
            raise ShapeError(f"masked_select: the mask's shape {list(mask.shape)} does not broadcast with the "
                             f"tensor's {list(self.shape)}")
        return ops.MaskedSelect.apply(self, mask)

    def repeat_interleave(self, repeats, dim=None, *, output_size=None, axis=None):
        """Each element (each slice along `dim`) repeated `repeats` times, or repeats[i] times for
        element i; with dim=None, of the flattened tensor."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("repeat_interleave", dim, axis)
        if dim is not None and self.ndim == 0:
            raise IndexError(f"repeat_interleave: a 0-d tensor has no dim {dim} to repeat along: leave dim out "
                             "(it repeats the flattened tensor)")
        x = self.reshape(-1) if dim is None else self
        axis = 0 if dim is None else _dim(dim, x.ndim)
        n = x.shape[axis]
        if isinstance(repeats, TensorCore) and repeats.ndim <= 1 and repeats.numel() == 1:
            repeats = _as_index_tensor(repeats, x, "repeat_interleave").item()  # one count for every element
        if isinstance(repeats, (int, np.integer)):
            if repeats < 0:
                raise ValueError(f"repeat_interleave: repeats must be 0 or more, got {repeats}")
            total = n * int(repeats)
            _check_output_size(output_size, total)
            # a view of the slices side by side, expanded and flattened: PyTorch's way (ViewBackward0)
            expanded = x.unsqueeze(axis + 1).expand(x.shape[:axis + 1] + (int(repeats),) + x.shape[axis + 1:])
            return expanded.reshape(x.shape[:axis] + (total,) + x.shape[axis + 1:])
        counts = _as_index_tensor(repeats, x, "repeat_interleave")
        if counts.ndim > 1:
            raise ShapeError(f"repeat_interleave: repeats must be a number or a 1-d tensor, got shape "
                             f"{list(counts.shape)}")
        counts = backend.to_host(counts.array).reshape(-1)
        if counts.shape[0] != n:
            raise ShapeError(f"repeat_interleave: {counts.shape[0]} repeats given for dim {axis} of size {n} "
                             f"(shape {list(x.shape)}): give one per element, or one number")
        if (counts < 0).any():
            raise ValueError(f"repeat_interleave: repeats must be 0 or more, got {counts.min()}")
        _check_output_size(output_size, int(counts.sum()))
        index = tensor_core.wrap(backend.from_host(np.repeat(np.arange(n), counts), x.device))
        return x.index_select(axis, index)

    def roll(self, shifts, dims=None):
        """The elements shifted by `shifts` along `dims`, wrapping around."""
        shift_tuple = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
        if not shift_tuple:
            raise ValueError("roll: no shifts given: give a shift (and a dim) to roll by")
        if dims is None or isinstance(dims, (tuple, list)) and not dims:  # dims=() rolls the flattened tensor too
            if len(shift_tuple) != 1:
                raise ValueError(f"roll: {len(shift_tuple)} shifts need as many dims, got dims=None (which rolls "
                                 "the flattened tensor by one shift)")
            return ops.Roll.apply(self, int(shift_tuple[0]), None)
        dim_tuple = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
        if len(shift_tuple) != len(dim_tuple):
            raise ValueError(f"roll: shifts and dims must align, got {len(shift_tuple)} shifts and "
                             f"{len(dim_tuple)} dims")
        if self.ndim == 0:
            raise IndexError(f"roll: a 0-d tensor has no dim {dim_tuple[0]} to roll along: leave dims out")
        axes = tuple(_dim(d, self.ndim) for d in dim_tuple)
        return ops.Roll.apply(self, tuple(int(s) for s in shift_tuple), axes)

    def flip(self, *dims):
        """The elements in reverse order along the given dims: a copy."""
        dims = _shape_arg(dims, lowest=None)  # flip(0, 1) or flip((0, 1))
        axes = _dims_tuple(dims, self.ndim)
        if len(set(axes)) != len(axes):
            repeated = next(d for d in axes if axes.count(d) > 1)
            raise ValueError(f"flip: dim {repeated} appears more than once in {list(dims)}")
        return ops.Flip.apply(self, axes) if self.ndim else ops.Flip.apply(self, ())

    def fliplr(self):
        """The columns in reverse order (dim 1)."""
        if self.ndim < 2:
            raise ShapeError(f"fliplr expects at least 2 dims, got shape {list(self.shape)}")
        return self.flip(1)

    def flipud(self):
        """The rows in reverse order (dim 0)."""
        if self.ndim < 1:
            raise ShapeError("flipud expects at least 1 dim, got a 0-d tensor")
        return self.flip(0)

    def nonzero(self, *, as_tuple=False):
        """The indices of the nonzero (True) elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim."""
        xp = backend.namespace(self.array)
        array = xp.reshape(self.array, (1,)) if self.ndim == 0 else self.array
        places = [xp.astype(p, xp.int64) for p in xp.nonzero(array)]
        if as_tuple:
            return tuple(tensor_core.wrap(p) for p in places)
        if self.ndim == 0:
            return tensor_core.wrap(xp.zeros((places[0].shape[0], 0), dtype=xp.int64, **backend.creation_kwargs(xp)))
        return tensor_core.wrap(xp.stack(places, axis=1))

    def argwhere(self):
        """The indices of the nonzero elements, one row per element: shape (count, ndim)."""
        return self.nonzero()

    def scatter(self, dim, index, src=None, value=None, *, reduce=None):
        """A copy with src's values (or one number) written at `index` along `dim`:
        `out[i][index[i][j]] = src[i][j]` for dim 1 (repeated indices: one of the writes wins)."""
        return ops.Scatter.apply(self, *self._scatter_args("scatter", dim, index, src, value, reduce), False)

    def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
        """In place: src (or value) written along `dim` at `index`: `self[i][index[i][j]] = src[i][j]`."""
        return self._inplace(ops.Scatter, *self._scatter_args("scatter_", dim, index, src, value, reduce), False)

    def scatter_add(self, dim, index, src):
        """A copy with src's values added at `index` along `dim`, repeated indices adding up."""
        return ops.Scatter.apply(self, *self._scatter_args("scatter_add", dim, index, src, None, None), True)

    def scatter_add_(self, dim, index, src):
        """In place: src added along `dim` at `index`; repeated indices add up."""
        return self._inplace(ops.Scatter, *self._scatter_args("scatter_add_", dim, index, src, None, None), True)

    def _scatter_args(self, name, dim, index, src, value, reduce):
        """(axis, index array, src tensor or number) for Scatter, after PyTorch's checks."""
        if reduce is not None:
            raise ValueError(f"{name}: reduce={reduce!r} is not supported: use scatter_add for 'add'")
        if (src is None) == (value is None):
            raise TypeError(f"{name} takes src (a tensor or a number) or value, e.g. x.{name}(1, index, src)")
        if src is None or not isinstance(src, TensorCore):
            src = _value_to_write(self, _scalar(value if src is None else src))
        else:
            if src.dtype is not self.dtype:
                raise TypeError(f"{name}: src is {src.dtype} but the tensor is {self.dtype}: convert it "
                                f"(src.to({self.dtype}))")
            backend.same_device([self.array, src.array])
        if not isinstance(index, TensorCore) or index.dtype is not dtypes.int64:
            raise TypeError(f"{name} expects an int64 index tensor, got "
                            f"{index.dtype if isinstance(index, TensorCore) else type(index).__name__}")
        backend.same_device([self.array, index.array])
        axis = _dim(dim, self.ndim)
        # a 0-d tensor, index or src counts as a 1-d one of one element, as in PyTorch
        shape, ndim = self.shape or (1,), max(self.ndim, 1)
        index = index.reshape(1) if index.ndim == 0 else index
        src = src.reshape(1) if isinstance(src, TensorCore) and src.ndim == 0 else src
        too_big = any(n > m for i, (n, m) in enumerate(zip(index.shape, shape)) if i != axis)
        too_big_src = isinstance(src, TensorCore) and any(n > m for n, m in zip(index.shape, src.shape))
        if index.ndim != ndim or too_big or too_big_src or (isinstance(src, TensorCore) and src.ndim != ndim):
            raise ShapeError(
                f"{name}: an index of shape {list(index.shape)} does not fit a tensor of shape {list(self.shape)}"
                + (f" and a src of shape {list(src.shape)}" if isinstance(src, TensorCore) else "")
                + f": all need {ndim} dims, and the index no more than the tensor's size in every dim but "
                f"dim {axis} (and no more than src's in any)"
            )
        size = shape[axis]
        _check_index_range(index, size, f"{name}: index {{}} is out of range for dim {axis} with size {size}")
        return axis, index, src  # (the index tensor: the op checks its version in backward)

    # the torch.* functions above, as methods
    index_add = index_add
    index_add_ = index_add_
