"""Tensor methods: shapes and views (reshape, transpose, expand, split, ...) and how the numbers lie
in memory (strides, storage offset, as_strided): a view shares its base's memory and version counter.
"""

import math
import numbers
import warnings

import numpy as np

from .. import autograd, backend, dtypes, numpy_names, ops, storage, tensor_core
from ..errors import ShapeError
from ..tensor_core import Size, TensorCore
from .arguments import _check_not_0d, _dim, _dims_tuple, _reshape_arg, _scalar, _shape_arg
from .index_keys import _int_index
from .creation import tensor


# torch.* functions that are Tensor methods too (x.asin() is tinyattn.asin(x)): the class below
# binds them, so each is written once

def ravel(input):
    """The elements as a 1-D tensor (a view where the layout allows, as reshape(-1))."""
    return input.reshape(-1)


def swapaxes(input, axis0, axis1):
    """NumPy's name for transpose(input, axis0, axis1)."""
    return input.transpose(axis0, axis1)


def swapdims(input, dim0, dim1):
    """Another name of transpose(input, dim0, dim1)."""
    return input.transpose(dim0, dim1)


def _become(tensor, result, name):
    """Make `tensor` hold `result` (same elements, a new shape): squeeze_, unsqueeze_, resize_.
    Recorded like an in-place op; refused on a view while recording, where PyTorch would have to
    rewrite the view's base too."""
    recording = autograd.grad_mode.enabled and tensor.requires_grad
    tensor._check_inplace(recording)
    if recording and tensor._base is not None:
        raise RuntimeError(f"{name} of a view of another tensor while gradients are recorded: write "
                           f"x = x.{name[:-1]}(...) instead")
    tensor.array = result.array
    if recording:
        tensor.grad_fn, tensor.output_nr = result.grad_fn, result.output_nr
    tensor._bump_version()
    return tensor


def squeeze_(input, dim=None, *, axis=None):
    """squeeze in place: the tensor itself loses its size-1 dims (all, or `dim`)."""
    return _become(input, input.squeeze(numpy_names.dim_or_axis("squeeze_", dim, axis)), "squeeze_")


def unsqueeze_(input, dim=None, *, axis=None):
    """unsqueeze in place: the tensor itself gains a size-1 dim at `dim`."""
    return _become(input, input.unsqueeze(numpy_names.required_dim("unsqueeze_", dim, axis)), "unsqueeze_")


def resize_(input, *sizes):
    """Give the tensor a new shape in place. With as many elements as before this is reshape; with
    fewer, the first ones are kept; with more, the new ones are 0 (PyTorch leaves them uninitialised:
    do not count on their values). A tensor that requires grad cannot be resized, as in PyTorch."""
    shape = _shape_arg(sizes)
    if input.requires_grad:
        raise RuntimeError("cannot resize variables that require grad: resize x.detach(), or use reshape")
    n = math.prod(shape)
    if n == input.numel():
        return _become(input, input.reshape(shape), "resize_")
    xp = backend.namespace(input.array)
    flat = xp.reshape(input.array, (-1,))
    if n < flat.shape[0]:
        array = xp.reshape(flat[:n], shape)
    else:
        array = xp.concat([flat, xp.zeros(n - flat.shape[0], dtype=flat.dtype, **backend.creation_kwargs(xp))])
        array = xp.reshape(array, shape)
    return _become(input, tensor_core.wrap(array), "resize_")


def resize(input, *sizes):
    """The deprecated out-of-place resize: a reshape to as many elements, with PyTorch's warning."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    shape = _shape_arg(sizes)
    if math.prod(shape) != input.numel():
        raise RuntimeError(f"resize of a tensor of {input.numel()} elements to {list(shape)}: the out-of-place "
                           "resize keeps the number of elements; use resize_ on a tensor that needs no grad")
    return input.reshape(shape)


def new(input, *args, dtype=None, device=None):
    """The legacy `weight.new(2, 3)` (uninitialised numbers of input's dtype and device: zeros here,
    do not count on them), `weight.new([1, 2])` (those values) or `weight.new()` (empty)."""
    dtype, device = dtype or input.dtype, device or input.device
    if len(args) == 1 and not isinstance(args[0], (numbers.Integral, Size)):
        return tensor(args[0], dtype=dtype, device=device)
    return input.new_zeros(_shape_arg(args) if args else (0,), dtype=dtype, device=device)


def diag(input, diagonal=0):
    """A vector: the square matrix with it on diagonal `diagonal` (0 the main one, > 0 above it, < 0
    below). A matrix: that diagonal of it, as a vector."""
    if input.ndim not in (1, 2):
        raise ShapeError(f"diag expects a vector or a matrix, got shape {list(input.shape)}: for batches of "
                         "matrices use torch.diagonal(x, dim1=-2, dim2=-1)")
    return ops.Diag.apply(input, int(diagonal))


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal `offset` of the matrices in dims dim1 and dim2, as the last dim of the result: a
    view, as in PyTorch (x.diagonal().zero_() clears x's diagonal)."""
    a, b = _dim(dim1, input.ndim), _dim(dim2, input.ndim)
    if a == b:
        raise ValueError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return storage.Diagonal.apply(input, int(offset), a, b)


class ShapeMethods:
    """The shape and view methods of tinyattn.Tensor, and how its numbers lie in memory."""

    __slots__ = ()  # a mixin of Tensor, which keeps its numbers in TensorCore's slots

    # --- how the numbers lie in memory: a window (offset, strides) onto a storage that views share ---

    def stride(self, dim=None, *, axis=None):
        """How many elements of the storage one step along each dim skips (a tuple), or along `dim`.

        A (3, 4) tensor made at once has strides (4, 1); its transpose (1, 4): the same storage read
        in another order. An expand()ed dim has stride 0: all its elements are one place in memory.
        """
        if axis is not None:
            dim = numpy_names.dim_or_axis("stride", dim, axis)
        array = self.array
        strides = list(storage.storage_geometry(array)[2] if type(array) is not np.ndarray
                       else (s // array.itemsize for s in array.strides))
        empty = 0 in array.shape
        for d in reversed(range(len(strides))):
            if strides[d] == 0 and (array.shape[d] == 1 or empty):
                # a new dim of size 1 (x[None]): NumPy gives it stride 0, PyTorch the one unsqueeze gives;
                # NumPy gives the dims of an empty array stride 0 too, PyTorch those of a fresh tensor
                nxt = d + 1 < len(strides)
                strides[d] = (max(array.shape[d + 1], 1) if empty else array.shape[d + 1]) * strides[d + 1] if nxt else 1
        if dim is None:
            return tuple(strides)
        if self.ndim == 0:
            raise IndexError(f"stride({dim}) of a 0-d tensor: it has no dims (its stride() is ())")
        return strides[_dim(dim, self.ndim)]

    def storage_offset(self):
        """Where the tensor's first element is in its storage, in elements (x[1].storage_offset() is
        the length of a row of x)."""
        return storage.storage_geometry(self.array)[1]

    def storage(self):
        """The elements of the memory this tensor views, in its dtype (a `TypedStorage`): the same
        storage for the tensor and its views; writing into it changes them. PyTorch warns once that
        TypedStorage is deprecated; `untyped_storage()` is the bytes, without the warning."""
        storage.warn_typed_storage()
        return storage.TypedStorage(storage.storage_geometry(self.array)[0], self.dtype)

    def untyped_storage(self):
        """The bytes of the memory this tensor views (an `UntypedStorage`), shared with its views."""
        return storage.UntypedStorage(storage.storage_geometry(self.array)[0])

    @property
    def nbytes(self):
        """The bytes the tensor's elements take: numel() * element_size()."""
        return self.numel() * self.dtype.itemsize

    @property
    def itemsize(self):
        """The bytes one element takes (4 for float32)."""
        return self.dtype.itemsize

    def select(self, dim=None, index=None, *, axis=None):
        """The slice at `index` along `dim`, without that dim: a view (x.select(0, i) is x[i])."""
        dim = _dim(numpy_names.required_dim("select", dim, axis), self.ndim)
        if index is None:
            raise TypeError("select() missing 1 required argument: 'index'")
        return self[(slice(None),) * dim + (_int_index(index),)]

    def movedim(self, source, destination):
        """A view with dim(s) `source` moved to `destination`, the others in their order."""
        if isinstance(source, int) != isinstance(destination, int):
            raise TypeError(f"movedim() takes two ints or two tuples of ints, got {type(source).__name__} and "
                            f"{type(destination).__name__}")
        wrap = max(self.ndim, 1)  # a 0-d tensor takes dim 0 (and -1), as in PyTorch
        sources = [_dim(d, wrap) for d in ((source,) if isinstance(source, int) else source)]
        targets = [_dim(d, wrap) for d in ((destination,) if isinstance(destination, int) else destination)]
        if len(sources) != len(targets):
            raise ValueError(f"movedim: Invalid source or destination dims: source ({list(sources)} dims) should "
                             f"contain the same number of dims as destination ({list(targets)} dims)")
        if len(set(sources)) != len(sources) or len(set(targets)) != len(targets):
            raise ValueError("movedim: repeated dim in source or destination")
        if self.ndim == 0:
            return self.view(())
        order = [None] * self.ndim
        for s, t in zip(sources, targets):
            order[t] = s
        rest = iter(d for d in range(self.ndim) if d not in sources)
        return self.permute(*[d if d is not None else next(rest) for d in order])

    moveaxis = movedim

    def as_strided(self, size, stride, storage_offset=None):
        """A view of this tensor's storage with the sizes, strides and offset given (in elements; the
        offset is this tensor's own unless given). Every element must lie inside the storage."""
        size, stride = tuple(_int_index(n) for n in size), tuple(_int_index(s) for s in stride)
        _, own_offset, _ = storage.storage_geometry(self.array)
        offset = own_offset if storage_offset is None else _int_index(storage_offset)
        block_size = storage.storage_geometry(self.array)[0].shape[0] // self.dtype.itemsize
        storage.check_fits(size, stride, offset, block_size, self.dtype.itemsize)
        root = self if self._base is None else self._base
        if autograd.grad_mode.enabled and self.requires_grad and not (
                backend.is_contiguous(root.array) and root.storage_offset() == 0 and root.numel() == block_size):
            raise RuntimeError("as_strided of a tensor that requires grad needs that tensor's root to own its whole "
                               "storage in order (a fresh tensor, not a slice, detach() or from_numpy view): take "
                               "it from a .clone() of the tensor")
        return storage.AsStrided.apply(self, size, stride, offset - own_offset)

    def unfold(self, dimension, size, step):
        """A view of every slice of length `size` along `dimension`, `step` apart, as a new last dim
        (sliding windows: torch.arange(8.).unfold(0, 3, 2) has rows [0, 1, 2], [2, 3, 4], [4, 5, 6])."""
        dim = _dim(dimension, max(self.ndim, 1))
        length = self.array.shape[dim] if self.ndim else 1
        if size > length:
            raise RuntimeError(f"maximum size for tensor at dimension {dim} is {length} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        if self.ndim == 0:  # a 0-d tensor: its one element as a window of size 1
            return self.as_strided((size,), (1,))
        strides, shape = self.stride(), list(self.array.shape)
        shape[dim] = (length - size) // step + 1
        new_strides = list(strides)
        new_strides[dim] = strides[dim] * step
        return self.as_strided(shape + [size], new_strides + [strides[dim]])

    def __contains__(self, element):
        """`value in x`: whether some element of x equals `value` (a number, or a tensor compared with
        x by broadcasting, as `(value == x).any()`); `True in x.isnan()` asks whether x has a NaN."""
        if not isinstance(element, (TensorCore, numbers.Number, np.generic)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element)}.")
        return bool((element == self).any())

    def clone(self):
        """A copy with its own memory, recorded in the graph (the gradient flows back to self)."""
        return ops.Clone.apply(self)

    # --- shapes ---

    def reshape(self, *shape):
        """The same elements in a new shape (-1 infers one size): a view when possible."""
        return ops.Reshape.apply(self, _reshape_arg(shape, self.numel()))

    def view(self, *shape):
        """A view of the same memory in a new shape (-1 infers one size); needs a contiguous tensor."""
        if len(shape) == 1 and isinstance(shape[0], dtypes.dtype):
            raise TypeError("view(dtype) is not supported: use .to(dtype)")
        return ops.View.apply(self, _reshape_arg(shape, self.numel()))

    def view_as(self, other):
        """A view in `other`'s shape."""
        return self.view(other.shape)

    def reshape_as(self, other):
        """The same elements in `other`'s shape."""
        return self.reshape(other.shape)

    def transpose(self, dim0, dim1):
        """A view with dims `dim0` and `dim1` swapped."""
        dims = list(range(self.ndim))
        a, b = _dim(dim0, self.ndim), _dim(dim1, self.ndim)
        if self.ndim == 0:  # dims 0 and -1 of one number: nothing to swap
            return ops.Transpose.apply(self, ())
        dims[a], dims[b] = dims[b], dims[a]
        return ops.Transpose.apply(self, tuple(dims))

    def permute(self, *dims):
        """A view with the dims in the order given."""
        dims = tuple(_dim(d, self.ndim) for d in _shape_arg(dims, lowest=None))
        if sorted(dims) != list(range(self.ndim)):
            raise ShapeError(f"permute: {list(dims)} is not a permutation of the {self.ndim} dims")
        return ops.Permute.apply(self, dims)

    def t(self):
        """The transpose of a matrix (dims 0 and 1 swapped); a 0-d or 1-D tensor as it is."""
        if self.ndim > 2:
            raise ShapeError(f"t() expects a tensor with at most 2 dims, got shape {list(self.shape)}: use "
                             ".transpose(dim0, dim1), or .mT for the last two dims")
        return ops.T.apply(self, tuple(reversed(range(self.ndim))))

    @property
    def T(self):
        """The tensor with its dims in reverse order (the transpose of a matrix): a view."""
        return ops.Permute.apply(self, tuple(reversed(range(self.ndim))))

    @property
    def mT(self):
        """The tensor with its last two dims swapped (a batch of transposed matrices): a view."""
        return self.transpose(-2, -1)

    def unsqueeze(self, dim=None, *, axis=None):
        """A view with a new dim of size 1 at `dim`."""
        if dim is None or axis is not None:
            dim = numpy_names.required_dim("unsqueeze", dim, axis)
        axis = _dim(dim, self.ndim + 1)
        return ops.Reshape.apply(self, self.array.shape[:axis] + (1,) + self.array.shape[axis:])

    def squeeze(self, dim=None, *, axis=None):
        """A view without the size-1 dims (or only `dim`, if it has size 1)."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("squeeze", dim, axis)
        shape = self.array.shape
        if dim is None:
            axes = [i for i, n in enumerate(shape) if n == 1]
        else:
            axes = [a for a in _dims_tuple(dim, self.ndim) if shape[a] == 1]
        return ops.Reshape.apply(self, tuple(n for i, n in enumerate(shape) if i not in axes))

    def flatten(self, start_dim=0, end_dim=-1):
        """The dims from `start_dim` to `end_dim` merged into one."""
        start, end = _dim(start_dim, self.ndim), _dim(end_dim, self.ndim)
        if self.ndim == 0:
            return self.reshape(1)
        if start > end:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}: swap them")
        shape = self.array.shape
        return ops.Reshape.apply(self, shape[:start] + (math.prod(shape[start : end + 1]),) + shape[end + 1 :])

    def expand(self, *sizes):
        """A view repeating size-1 dims to `sizes` (-1 keeps a size) without copying."""
        sizes = _shape_arg(sizes, lowest=-1)
        lead = len(sizes) - self.ndim
        if lead < 0:
            raise ShapeError(f"expand: the target {list(sizes)} has fewer dims than the tensor {list(self.shape)}")
        if -1 in sizes[:lead]:  # -1 keeps a dim's size: a new dim has none to keep
            raise ShapeError(
                f"expand: -1 is not allowed in the new leading dims of {list(sizes)} (the tensor has shape "
                f"{list(self.shape)}): give their sizes"
            )
        target = tuple(
            self.array.shape[i - lead] if n == -1 else n for i, n in enumerate(sizes)
        )
        for i, n in enumerate(self.array.shape):
            if n != 1 and n != target[lead + i]:
                raise ShapeError(
                    f"expand: the tensor's shape {list(self.shape)} cannot be expanded to {list(sizes)} "
                    "(only size-1 dims can grow)"
                )
        return ops.Expand.apply(self, target)

    def expand_as(self, other):
        """A view expanded to `other`'s shape."""
        return self.expand(other.shape)

    def repeat(self, *sizes):
        """The tensor tiled `sizes` times along each dim: a copy."""
        sizes = _shape_arg(sizes)
        if len(sizes) < self.ndim:
            raise ShapeError(f"repeat: {list(sizes)} gives fewer repeats than the tensor of shape {list(self.shape)} "
                             "has dims: give one per dim (1 for a dim to keep)")
        x = self.reshape((1,) * (len(sizes) - self.ndim) + tuple(self.shape))
        expanded = x.reshape(tuple(d for n in x.shape for d in (1, n))).expand(
            tuple(d for r, n in zip(sizes, x.shape) for d in (r, n))
        )
        tiled = expanded.reshape(tuple(r * n for r, n in zip(sizes, x.shape)))
        # a copy with its own memory, as PyTorch's: with every repeat 1 the reshape is a view of self,
        # and where only size-1 dims repeat it is a read-only view whose repeated dims have stride 0
        return tiled.clone() if math.prod(sizes) == 1 else tiled.contiguous()

    def split(self, split_size, dim=0):
        """Pieces of split_size along dim (the last one shorter), or of the sizes in a list; views.
        (The keyword is `split_size` here, as Tensor.split spells it; torch.split's is
        `split_size_or_sections`.)"""
        _check_not_0d(self, "split")
        axis = _dim(dim, self.ndim)
        length = self.array.shape[axis]
        split_size_or_sections = split_size
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            if size < 0 or size == 0 and length:
                raise ValueError(f"split_size must be a positive integer (or 0 for a dim of size 0), got {size}")
            sizes = [min(size, length - s) for s in range(0, length, size)] if length else [0]  # one empty piece
        else:
            sizes = list(split_size_or_sections)
            if any(size < 0 for size in sizes):
                raise ValueError(f"split sizes {sizes} must not be negative")
            if sum(sizes) != length:
                raise ShapeError(f"split sizes {sizes} do not add up to the size {length} of dim {dim}")
        pieces, start = [], 0
        for size in sizes:
            pieces.append(self[(slice(None),) * axis + (slice(start, start + size),)])
            start += size
        return tuple(pieces)

    def chunk(self, chunks, dim=0, *, axis=None):
        """Splits the tensor into `chunks` nearly equal views along `dim`."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("chunk", dim, axis, 0)
        if chunks <= 0:
            raise ValueError(f"chunk expects chunks to be greater than 0, got {chunks}")
        _check_not_0d(self, "chunk")
        length = self.array.shape[_dim(dim, self.ndim)]
        if length == 0:  # as in PyTorch: `chunks` empty pieces
            return self.split([0] * chunks, dim)
        return self.split(-(-length // chunks), dim)

    def narrow(self, dim, start, length):
        """The `length` slices from `start` along `dim` (a negative start counts from the end): a view."""
        if self.ndim == 0:
            raise ShapeError("narrow() cannot be applied to a 0-dim tensor (a single number)")
        axis = _dim(dim, self.ndim)
        start, size = _scalar(start, "start"), self.shape[axis]
        if not isinstance(start, (int, np.integer)) or isinstance(start, bool):
            raise TypeError(f"narrow: start must be an int (or a 0-d integer tensor), got {start!r}")
        if not -size <= start <= size:
            raise IndexError(f"narrow: start {start} is out of range for dim {axis} of size {size} "
                             f"(expected to be in [{-size}, {size}])")
        start = start % size if start < 0 else start
        if length < 0:
            raise ValueError(f"narrow: length must be non-negative, got {length}")
        if start + length > size:
            raise IndexError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({size}) of dim {axis}")
        return self[(slice(None),) * axis + (slice(start, start + length),)]

    def unbind(self, dim=0, *, axis=None):
        """The slices along `dim`, as a tuple of views without that dim."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("unbind", dim, axis, 0)
        if self.ndim == 0:
            raise IndexError("unbind: a 0-d tensor has no dim to unbind (it is a single number)")
        axis = _dim(dim, self.ndim)
        return tuple(self[(slice(None),) * axis + (i,)] for i in range(self.array.shape[axis]))

    def tril(self, diagonal=0):
        """The lower triangle (on and below diagonal `diagonal`), zeros above."""
        return ops.Tril.apply(self, diagonal)

    def triu(self, diagonal=0):
        """The upper triangle (on and above diagonal `diagonal`), zeros below."""
        return ops.Triu.apply(self, diagonal)

    def tril_(self, diagonal=0):
        """In place: the elements above diagonal `diagonal` set to 0."""
        return self._inplace(ops.Tril, diagonal)

    def triu_(self, diagonal=0):
        """In place: the elements below diagonal `diagonal` set to 0."""
        return self._inplace(ops.Triu, diagonal)

    # the torch.* functions above, as methods
    ravel = ravel
    swapaxes = swapaxes
    swapdims = swapdims
    squeeze_ = squeeze_
    unsqueeze_ = unsqueeze_
    resize_ = resize_
    resize = resize
    new = new
    diag = diag
    diagonal = diagonal
