"""How a tensor's numbers lie in memory: the storage that a tensor and all its views share.

A tensor is a window onto a storage, a flat row of numbers: `storage_offset()` says where its first
element is, `stride()` how many elements to step over for one step along each dim. A transpose, a
slice or an expand makes a new window onto the same storage; `contiguous()` copies into a new one.

`x.storage()` is PyTorch's TypedStorage (elements of the tensor's dtype; PyTorch warns once that
it is deprecated, and so does this), `x.untyped_storage()` its UntypedStorage (bytes). Both print
as PyTorch prints them, and writing into one changes every tensor that views it.
"""

import warnings

from . import backend
from .ops import Op

TYPED_STORAGE_DEPRECATED = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
    "storage class. This should only matter to you if you are using storages directly.  To access "
    "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()"
)
_warned = False


def warn_typed_storage(stacklevel=3):
    """PyTorch's deprecation warning for TypedStorage, once per process, as PyTorch gives it."""
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(TYPED_STORAGE_DEPRECATED, UserWarning, stacklevel=stacklevel)


class UntypedStorage:
    """The bytes of a block of memory (PyTorch's `torch.UntypedStorage`): `x.untyped_storage()`."""

    __slots__ = ("_bytes",)

    def __init__(self, block):
        self._bytes = block  # a 1-D uint8 array over the whole block (a view: writes reach the tensors)

    def size(self):
        """The number of bytes."""
        return self._bytes.shape[0]

    nbytes = size

    def __len__(self):
        return self.size()

    def element_size(self):
        """1: an untyped storage counts bytes."""
        return 1

    @property
    def device(self):
        """Where the bytes are."""
        return backend.device_of(self._bytes)

    def data_ptr(self):
        """The address of the first byte: equal for the storages of a tensor and its views."""
        return backend.data_pointer(self._bytes)

    def __getitem__(self, index):
        return int(backend.to_host(self._bytes[_element_index(index, self.size())]))

    def __setitem__(self, index, value):
        self._bytes[_element_index(index, self.size())] = value

    def tolist(self):
        """The bytes, as a list of ints."""
        return backend.to_host(self._bytes).tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self):
        values = "".join(f"\n {v}" for v in self.tolist())[1:]
        return f"{values}\n[tinyattn.storage.UntypedStorage(device={self.device}) of size {self.size()}]"

    __str__ = __repr__


class TypedStorage:
    """The elements of a block of memory, in one dtype (PyTorch's `torch.TypedStorage`): `x.storage()`.

    Its elements are numbered as the tensor's `storage_offset()` and `stride()` count them.
    """

    __slots__ = ("_values", "dtype")

    def __init__(self, block, dtype):
        usable = block.shape[0] - block.shape[0] % dtype.itemsize
        self._values = block[:usable].view(backend.array_dtype(backend.namespace(block), dtype))
        self.dtype = dtype

    def size(self):
        """The number of elements."""
        warn_typed_storage()
        return self._values.shape[0]

    def __len__(self):
        warn_typed_storage()
        return self._values.shape[0]

    def nbytes(self):
        """The number of bytes: size() * element_size()."""
        warn_typed_storage()
        return self._values.shape[0] * self.dtype.itemsize

    def element_size(self):
        """The bytes one element takes (4 for float32)."""
        warn_typed_storage()
        return self.dtype.itemsize

    @property
    def device(self):
        """Where the elements are."""
        return backend.device_of(self._values)

    def data_ptr(self):
        """The address of the first element: equal for the storages of a tensor and its views."""
        warn_typed_storage()
        return backend.data_pointer(self._values)

    def untyped(self):
        """The same memory as bytes (an UntypedStorage)."""
        warn_typed_storage()
        return UntypedStorage(self._values.view(backend.namespace(self._values).uint8))

    def __getitem__(self, index):
        warn_typed_storage()
        if isinstance(index, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return _python_number(backend.to_host(self._values[_element_index(index, len(self._values))]))

    def __setitem__(self, index, value):
        warn_typed_storage()
        if isinstance(index, slice):
            self._values[index] = value
        else:
            self._values[_element_index(index, len(self._values))] = value

    def fill_(self, value):
        """Sets every element to `value` (every tensor viewing this storage sees it); returns self."""
        warn_typed_storage()
        self._values[...] = value
        return self

    def tolist(self):
        """The elements, as a list of Python numbers."""
        warn_typed_storage()
        return backend.to_host(self._values).tolist()

    def __iter__(self):
        warn_typed_storage()
        return iter(self.tolist())

    def __repr__(self):
        warn_typed_storage()
        values = " " + "\n ".join(str(v) for v in self.tolist())
        return (f"{values}\n[tinyattn.storage.TypedStorage(dtype={self.dtype}, device={self.device}) "
                f"of size {len(self._values)}]")

    __str__ = __repr__


def _element_index(index, size):
    """`index` as a place in a storage of `size` elements (negative ones count from the end)."""
    if isinstance(index, bool) or not hasattr(index, "__index__"):
        raise RuntimeError(f"can't index a storage with {type(index)}: use an int")
    index = index.__index__()
    if not -size <= index < size:
        raise IndexError(f"index {index} out of range for storage of size {size}")
    return index + size if index < 0 else index


def _python_number(value):
    """One element as PyTorch's storage gives it: a Python bool, int or float."""
    return value.item()


def storage_geometry(array):
    """(the block's uint8 array, the offset of `array` in it in elements, its strides in elements)."""
    block, offset_bytes = backend.memory_block(array)
    inner = getattr(array, "_array", array)  # array_api_strict keeps a NumPy array inside
    itemsize = inner.dtype.itemsize
    return block, offset_bytes // itemsize, tuple(s // itemsize for s in inner.strides)


__all__ = ["TypedStorage", "UntypedStorage"]


# --- as_strided: a view made from sizes, strides and an offset (ops' layer: imported after Tensor) ---



def check_fits(size, stride, offset, storage_size, itemsize):
    """PyTorch's checks of a view made from its geometry: as many strides as sizes, none negative,
    and every element inside the storage."""
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: sizes {list(size)}, strides {list(stride)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"as_strided: sizes cannot be negative, got {list(size)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    needed = 0 if 0 in size else offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if needed > storage_size:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and itemsize "
            f"{itemsize} requiring a storage size of {needed * itemsize} are out of bounds for storage of size "
            f"{storage_size * itemsize}"
        )


def places(xp, size, stride, offset):
    """The place in the storage of each element of a view: offset + the sum over dims of index * stride."""
    kwargs = backend.creation_kwargs(xp)
    result = xp.full(tuple(size), offset, dtype=xp.int64, **kwargs)
    for d, (n, s) in enumerate(zip(size, stride)):
        steps = xp.arange(n, dtype=xp.int64, **kwargs) * s
        result = result + xp.reshape(steps, tuple(n if i == d else 1 for i in range(len(size))))
    return result


class AsStrided(Op):
    """A view of the input's storage: the elements at offset + sum(index * stride).

    The offset is counted from the input's first element (`shift`), so that taking the view again
    from an array laid out as the input's root gives the same elements. Backward: each output
    element's gradient is added at its place in the storage, and the input reads its own places
    back (a place that several input elements share splits its gradient among them, as PyTorch does).
    """

    is_view = True

    @staticmethod
    def forward(ctx, x, size, stride, shift):
        _, x_offset, x_strides = storage_geometry(x)
        ctx.x_geometry = (tuple(x.shape), x_strides, x_offset)
        ctx.geometry = (size, stride, x_offset + shift)
        return backend.strided_view(x, size, stride, x_offset + shift)

    @staticmethod
    def backward(ctx, grad):
        xp = ctx.xp
        inputs, outputs = places(xp, *ctx.x_geometry), places(xp, *ctx.geometry)
        low = min(ctx.x_geometry[2], ctx.geometry[2])  # (strides are not negative: no place lies below an offset)
        high = max(offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
                   for size, stride, offset in (ctx.x_geometry, ctx.geometry))
        storage = xp.zeros(high - low, dtype=grad.dtype, **backend.creation_kwargs(xp))
        storage = backend.scatter_add(storage, xp.reshape(outputs - low, (-1,)), xp.reshape(grad, (-1,)))
        gx = xp.take(storage, xp.reshape(inputs - low, (-1,)))
        if _overlaps(ctx.x_geometry):
            counts = backend.scatter_add(xp.zeros(high - low, dtype=grad.dtype, **backend.creation_kwargs(xp)),
                                         xp.reshape(inputs - low, (-1,)), xp.ones(gx.shape, dtype=grad.dtype))
            gx = gx / xp.take(counts, xp.reshape(inputs - low, (-1,)))
        return xp.reshape(gx, ctx.x_geometry[0]), None, None, None


def _overlaps(geometry):
    """Whether two elements of a view with this geometry can be one place in the storage."""
    size, stride, _ = geometry
    dims = sorted((s, n) for n, s in zip(size, stride) if n > 1)
    reach = 0  # the farthest place the smaller strides reach
    for s, n in dims:
        if s <= reach:
            return True
        reach += (n - 1) * s
    return False


class Diagonal(Op):
    """The diagonal `offset` of the matrices in dims a and b, as the last dim: a view whose stride is
    the sum of the two dims' strides (one step down and one step right). Backward: zeros of the
    input's shape with the gradient on that diagonal."""

    is_view = True

    @staticmethod
    def forward(ctx, x, offset, a, b):
        ctx.in_shape, ctx.where = x.shape, (offset, a, b)
        return _diagonal_view(x, offset, a, b)

    @staticmethod
    def backward(ctx, grad):
        xp = ctx.xp
        full = xp.zeros(ctx.in_shape, dtype=grad.dtype, **backend.creation_kwargs(xp))
        _diagonal_view(full, *ctx.where)[...] = grad
        return full, None, None, None


def _diagonal_view(x, offset, a, b):
    """The diagonal `offset` of dims a and b of array x, as a view of x's memory (from x's strides,
    so it is the same diagonal whatever x's layout)."""
    _, start, strides = storage_geometry(x)
    rows, cols = x.shape[a], x.shape[b]
    skip_rows, skip_cols = max(-offset, 0), max(offset, 0)
    length = max(min(rows - skip_rows, cols - skip_cols), 0)
    if length:
        start += skip_rows * strides[a] + skip_cols * strides[b]
    rest = [d for d in range(x.ndim) if d not in (a, b)]
    shape = tuple(x.shape[d] for d in rest) + (length,)
    return backend.strided_view(x, shape, tuple(strides[d] for d in rest) + (strides[a] + strides[b],), start)
