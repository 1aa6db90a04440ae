"""Index keys: what `x[key]` means. A key of ints, slices, None and Ellipsis is a view (basic
indexing); tensors, lists and masks in it pick elements (advanced indexing), and PyTorch's rules say
where the picked dims go. The checks here give PyTorch's errors for an index out of range.
"""

import warnings

import numpy as np

from .. import backend, dtypes, ops, tensor_core
from ..errors import ShapeError
from ..tensor_core import TensorCore
from .arguments import _dim


SEQUENCE_KEY = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated: PyTorch will read it as a tensor "
    "index, x[torch.tensor(seq)], which will result either in an error or a different result; use x[tuple(seq)] "
    "instead of x[seq]"
)


def _as_index_tensor(index, like, name):
    """An integer tensor of indices (from a tensor, a list or a number) on like's device."""
    if not isinstance(index, TensorCore):
        index = tensor_core.from_data(index, device=like.device)
    if index.dtype not in (dtypes.int64, dtypes.int32):
        raise TypeError(f"{name} expects integer indices (int64), got {index.dtype}")
    backend.same_device([like.array, index.array])
    return index


def _index_vector(index, like, name):
    """A 1-D int64 index (a 0-d index counts as one element), as index_select takes it."""
    index = _as_index_tensor(index, like, name)
    if index.ndim > 1:
        raise ShapeError(f"{name} expects a 1-D index, got shape {list(index.shape)}")
    return index.reshape(-1).long()


def _index_mask(x, dim, index, value):
    """index_fill's places as a bool mask that broadcasts with x: True at `index` along `dim`."""
    axis = _dim(dim, x.ndim)
    if not isinstance(index, TensorCore) or index.dtype is not dtypes.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index (a tinyattn.long tensor of positions)")
    if index.ndim > 1:
        raise ShapeError(f"index_fill: the index has to be a vector or a single number, got shape {list(index.shape)}")
    if isinstance(value, TensorCore) and value.ndim != 0:
        raise ShapeError(f"index_fill only supports a 0-dimensional value tensor, but got tensor with {value.ndim} "
                         "dimension(s): use value.squeeze() or a number")
    backend.same_device([x.array, index.array])
    size = x.shape[axis] if x.ndim else 1
    positions = index.reshape(-1)
    xp = backend.namespace(x.array)
    if positions.numel():  # negative indices count from the end, as in PyTorch
        low, high = int(xp.min(positions.array)), int(xp.max(positions.array))
        if low < -size or high >= size:
            raise IndexError(f"index_fill: index {high if high >= size else low} is out of range for dim {axis} "
                             f"with size {size} (valid indices are {-size} to {size - 1})")
    places = xp.arange(size, **backend.creation_kwargs(xp))
    hit = xp.any(places[:, None] == (positions.array[None, :] % size), axis=1)  # (size,): filled or not
    return tensor_core.wrap(xp.reshape(hit, tuple(size if d == axis else 1 for d in range(x.ndim))))


def _mask_tensor(mask, like):
    if not isinstance(mask, TensorCore):
        mask = tensor_core.from_data(mask, device=like.device)
    if mask.dtype is not dtypes.bool_:
        raise TypeError(f"masked_fill expects a bool mask, got {mask.dtype}: use mask.bool() or mask == 0")
    backend.same_device([like.array, mask.array])
    if ops.broadcast_shape(mask.shape, like.shape) != like.shape:
        raise ShapeError(f"the mask's shape {list(mask.shape)} does not broadcast to the tensor's {list(like.shape)}")
    return mask  # (a tensor: the op checks its version in backward)


def _index_tensors(key):
    """The index tensors (not 0-d integer ones, which index as ints) of a key: they go to the index
    ops as arguments, so that one changed in place after the forward makes backward raise."""
    if isinstance(key, TensorCore):
        return (key,) if key.ndim or key.dtype is dtypes.bool_ else ()
    if type(key) is not tuple:
        return ()
    return tuple(p for p in key if isinstance(p, TensorCore) and (p.ndim or p.dtype is dtypes.bool_))


def _array_key(key, tensor):
    """An index key with tensors and lists turned into arrays on the tensor's device."""
    if type(tensor.array) is np.ndarray:
        simple = _simple_key(key, tensor.array.shape)
        if simple is not None:
            return simple
    parts = key if isinstance(key, tuple) else (key,)
    if sum(part is Ellipsis for part in parts) > 1:
        raise IndexError("an index can only have one ... (Ellipsis): write the other dims as `:`")
    if any(isinstance(p, bool) for p in parts) and any(not isinstance(p, (bool, slice)) and p is not None
                                                       and p is not Ellipsis for p in parts):
        # NumPy takes True and False as index arrays, which move the dims of ints and index lists around
        raise IndexError("a True or False in an index with index lists or tensors, or with ints, is not supported: "
                         "use None to add the dim")
    converted = []
    for part in parts:
        if isinstance(part, TensorCore):
            backend.same_device([tensor.array, part.array])
            if part.dtype.is_floating_point:
                raise IndexError("tensors used as indices must be long, int or bool tensors")
            if part.dtype is dtypes.uint8:  # PyTorch's old mask dtype: a mask still, with its warning
                warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
                              "instead.", UserWarning, stacklevel=3)
                part = part != 0
            if part.ndim == 0 and part.dtype is not dtypes.bool_:
                part = int(part.array)
            else:
                part = part.array
        elif isinstance(part, slice):
            part = slice(*(None if v is None else _int_index(v) for v in (part.start, part.stop, part.step)))
            if part.step is not None and part.step <= 0:  # PyTorch has no negative steps (NumPy has)
                raise ValueError(
                    f"step must be greater than zero, got {part.step}: to reverse a dim, index it with "
                    "reversed positions, e.g. x[tinyattn.arange(len(x) - 1, -1, -1)]"
                )
        elif isinstance(part, (list, tuple, np.ndarray)):  # a tuple inside a key is a list of indices
            values = np.asarray(part)
            if values.size == 0:  # x[[]]: no indices (NumPy would make the empty list float64)
                values = values.astype(np.int64)
            if values.dtype.kind not in "iub":
                raise IndexError("lists used as indices must hold ints or bools")
            part = backend.from_host(values.astype(np.int64) if values.dtype.kind != "b" else values, tensor.device)
        elif isinstance(part, np.integer):
            part = int(part)
        converted.append(part)
    _check_index_bounds(converted, tensor.array.shape)
    return tuple(converted) if isinstance(key, tuple) else converted[0]


def _simple_key(key, shape):
    """The commonest keys, checked at once: an int, a slice of ints, a tuple of those, a 0-d integer
    tensor, each in range (x[3], x[2:10], x[k, j], x[:, 0], C[ix] with ix 0-d), and a NumPy int64 index
    tensor whose ids are all in range (C[ix]). None for anything else, which _array_key parses in full."""
    if isinstance(key, TensorCore):
        array = key.array
        if type(array) is not np.ndarray:
            return None
        if array.ndim:  # an index array: negative ids read as unsigned are above any length, so one
            if array.dtype != np.int64 or not shape or not array.size:  # reduction checks the range
                return None
            return array if int(_UNSIGNED_MAX(array.view(np.uint64), axis=None)) < shape[0] else None
        if array.dtype.kind != "i":
            return None
        key = int(array)
    if type(key) is int:
        return key if shape and -shape[0] <= key < shape[0] else None
    if type(key) is slice:
        return key if shape and _plain_slice(key) else None
    if type(key) is tuple and len(key) <= len(shape):
        for part, size in zip(key, shape):
            if type(part) is int:
                if not -size <= part < size:
                    return None
            elif type(part) is not slice or not _plain_slice(part):
                return None
        return key
    return None


_UNSIGNED_MAX = np.maximum.reduce  # (np.max without its Python wrappers)


def _plain_slice(part):
    """A slice of Python ints (or None) with a positive step: what _array_key would keep as it is."""
    start, stop, step = part.start, part.stop, part.step
    return ((start is None or type(start) is int) and (stop is None or type(stop) is int)
            and (step is None or type(step) is int and step > 0))


def _pytorch_order(key, ndim):
    """PyTorch's order of the dims of x[key], as a permutation of NumPy's; None where the two agree.

    Index arrays (tensors, lists, masks) in a key give the dims of their broadcast shape. Both libraries
    put those dims where the first index array is if the index arrays stand together in the key, and in
    front of all other dims if something stands between them. They differ in what stands between:
    NumPy counts plain ints as index arrays, and a `...` as something between even where it stands for
    no dims; PyTorch applies the ints first, as selects (views), and then looks only at the dims the
    arrays index. So for x of shape (2, 3, 4), x[0, :, [0, 3]] is (2, 3) in NumPy (the 0 and the list
    stand apart) but (3, 2) in PyTorch, which indexes x[0], of shape (3, 4), with [:, [0, 3]].
    """
    if type(key) is int:
        return None
    parts = key if isinstance(key, tuple) else (key,)
    if not any(hasattr(p, "dtype") for p in parts):
        return None  # no index arrays (the common case: ints, slices, None, ...): the two agree
    if not any(p is Ellipsis for p in parts):  # `is`: `in` would compare the key's arrays with ==
        parts = parts + (Ellipsis,)  # the dims after the key are kept
    slots = []  # for each dim that the key indexes or adds: "int", "array", or "dim" (kept in the result)
    for part in parts:
        if part is Ellipsis:  # NumPy sees a `...` between index arrays even where it stands for no dims
            slots += ["..."] + ["dim"] * (ndim - sum(_dims_indexed(p) for p in parts))
        elif isinstance(part, bool):  # x[True] adds a dim, as None does: too rare to reorder around
            raise IndexError("a True or False in an index with index lists or tensors is not supported: "
                             "use None to add the dim")
        elif isinstance(part, int):
            slots.append("int")
        elif hasattr(part, "dtype"):  # an index array, or a mask over one or more dims
            slots += ["array"] * _dims_indexed(part)
        else:  # a slice or None
            slots.append("dim")

    def together(kinds):
        positions = [i for i, kind in enumerate(kinds) if kind in ("int", "array")]
        return positions == list(range(positions[0], positions[-1] + 1))

    if "array" not in slots:
        return None
    if together(slots) or not together([kind for kind in slots if kind not in ("int", "...")]):
        return None  # both put the index dims in the same place
    # NumPy put the index dims in front; PyTorch puts them after the `before` dims that precede them
    index_dims = max(1 if backend.dtype_of(p) is dtypes.bool_ else p.ndim  # a mask gives one dim
                     for p in parts if hasattr(p, "dtype"))
    before = slots[:slots.index("array")].count("dim")
    others = slots.count("dim")
    return (tuple(range(index_dims, index_dims + before)) + tuple(range(index_dims))
            + tuple(range(index_dims + before, index_dims + others)))


def _check_index_bounds(parts, shape):
    """An index out of range is an IndexError here (CuPy would silently wrap an index array around), and
    so is a key with more indices than the tensor has dims."""
    if len(parts) == 1 and type(parts[0]) is np.ndarray and parts[0].dtype.kind == "i" and shape:
        ids = parts[0]  # the commonest advanced key, C[ids]: one NumPy array of ints, checked at once
        if not ids.size or -shape[0] <= ids.min() and ids.max() < shape[0]:
            return
    consumed = [_dims_indexed(part) for part in parts]
    arrays = [part for part in parts if hasattr(part, "dtype")]
    if len(arrays) > 1:  # index arrays (a mask counts as the list of its True places) broadcast together
        shapes = [tuple(p.shape) if _is_index_array(p) else (_count_true(p),) for p in arrays]
        if ops.broadcast_shape(*shapes) is None:
            raise IndexError(f"the index arrays' shapes {[list(s) for s in shapes]} cannot be broadcast together")
    if sum(consumed) > len(shape):
        raise IndexError(f"too many indices for a tensor of shape {list(shape)}: the key indexes {sum(consumed)} "
                         f"dims, the tensor has {len(shape)}")
    dim = 0
    for part, width in zip(parts, consumed):
        if part is Ellipsis:
            dim += len(shape) - sum(consumed)
        elif isinstance(part, int) and not isinstance(part, bool) and not -shape[dim] <= part < shape[dim]:
            raise IndexError(f"index {part} is out of bounds for dim {dim} with size {shape[dim]} (valid indices are "
                             f"{-shape[dim]} to {shape[dim] - 1})")
        elif hasattr(part, "dtype") and not _is_index_array(part) and tuple(part.shape) != shape[dim:dim + width]:
            raise IndexError(f"the mask's shape {list(part.shape)} does not match the shape "
                             f"{list(shape[dim:dim + width])} of the dims {dim} to {dim + width - 1} it indexes")
        elif _is_index_array(part) and part.size and dim < len(shape):
            xp, size = backend.namespace(part), shape[dim]
            low, high = int(xp.min(part)), int(xp.max(part))
            if low < -size or high >= size:
                bad = high if high >= size else low
                raise IndexError(f"index {bad} is out of bounds for dim {dim} with size {size}")
        dim += width


def _count_true(mask):
    xp = backend.namespace(mask)
    return int(xp.sum(xp.astype(mask, xp.int64)))


def _is_index_array(part):
    return hasattr(part, "dtype") and backend.dtype_of(part) is not dtypes.bool_


def _dims_indexed(part):
    """How many dims of the indexed tensor one part of a key uses up."""
    if part is None or part is Ellipsis or isinstance(part, bool):  # (True and False add a dim, as None does)
        return 0
    if hasattr(part, "dtype") and not _is_index_array(part):  # a boolean mask
        return part.ndim
    return 1


def _sequence_as_tuple(key):
    """A short list key that holds a list, a tensor, a slice, None or Ellipsis, as PyTorch reads it (and
    NumPy did before 1.23): a tuple of indices, one per dim, with PyTorch's deprecation warning.
    Any other list (x[[0, 2]]) is one index array for the first dim."""
    if len(key) < 32:
        for item in key:
            if (isinstance(item, (TensorCore, np.ndarray, slice, list, tuple, range, str)) or item is None
                    or item is Ellipsis):
                warnings.warn(SEQUENCE_KEY, UserWarning, stacklevel=3)
                return tuple(key)
    return key


def _int_index(value):
    return int(value) if isinstance(value, TensorCore) else value.__index__()
