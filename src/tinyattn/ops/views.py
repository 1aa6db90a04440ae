"""Shapes, views and copies, each forward beside its backward: reshape, view, permute, transpose, expand,
contiguous, clone, dtype and device moves, tril/triu, diagonals, cat and stack, roll and flip. Most
backwards put the gradient back in the input's layout.
"""

import math

from .. import backend
from ..errors import ShapeError
from .base import Op, normalize_dim, unbroadcast


# ---------------------------------------------------------------------------------------------
# shapes and views


class Reshape(Op):
    """The elements in a new shape (a view where the layout allows). Backward: reshaped back."""

    is_view = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        y = backend.reshape_view(x, shape)  # a view when the memory layout allows it, as in PyTorch
        if y is not None:
            ctx.name_hint = "View"
            return y
        ctx.copied, ctx.name_hint = True, "UnsafeView"  # a copy: no longer shares x's memory
        try:
            return ctx.xp.reshape(x, shape)
        except ValueError:
            raise ShapeError(
                f"cannot reshape a tensor of shape {list(x.shape)} ({math.prod(x.shape)} elements) "
                f"into shape {list(shape)}"
            ) from None

    @staticmethod
    def backward(ctx, grad):
        return ctx.xp.reshape(grad, ctx.in_shape), None


class View(Reshape):
    """Like reshape, but never copies: PyTorch's `view` needs a memory layout that allows it."""

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        y = backend.reshape_view(x, shape)
        if y is None:
            Reshape.forward(ctx, x, shape)  # raises the clear error when the element count is wrong
            raise ShapeError(
                f"view size {list(shape)} is not compatible with the input's memory layout (shape "
                f"{list(x.shape)}, not contiguous, e.g. after transpose): call .contiguous() before "
                ".view(...), or use .reshape(...), which copies when it must"
            )
        return y


class Permute(Op):
    """The dims reordered (a view). Backward: the gradient permuted back by the inverse order."""

    is_view = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return ctx.xp.permute_dims(x, dims)

    @staticmethod
    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for position, d in enumerate(ctx.dims):
            inverse[d] = position
        return ctx.xp.permute_dims(grad, tuple(inverse)), None


class Transpose(Permute):
    """Swap two dims: a permute, named as the user wrote it."""


class T(Permute):
    """x.t(): a matrix (or vector) transposed, named as PyTorch names it (TBackward0)."""


class Expand(Op):
    """Size-1 dims repeated to a new shape (a view). Backward: summed back over the repeats."""

    is_view = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        if math.prod(shape) == math.prod(x.shape):  # nothing repeats: a plain view, writable as in PyTorch
            return ctx.xp.reshape(x, shape)
        return ctx.xp.broadcast_to(x, shape)

    @staticmethod
    def backward(ctx, grad):
        return unbroadcast(ctx.xp, grad, ctx.in_shape), None


class Contiguous(Op):
    """A row-major copy. Backward: the gradient as it is."""

    @staticmethod
    def forward(ctx, x):
        ctx.name_hint = "Clone"  # a copy, which PyTorch records as a clone
        return backend.contiguous(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class Clone(Op):
    """A copy. Backward: the gradient as it is."""

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.asarray(x, copy=True)

    @staticmethod
    def backward(ctx, grad):
        return grad


class ToDtype(Op):
    """The array in another dtype. Backward: the gradient in the input's dtype."""

    @staticmethod
    def forward(ctx, x, dt):
        ctx.in_dtype, ctx.name_hint = x.dtype, "ToCopy"
        return ctx.xp.astype(x, backend.array_dtype(ctx.xp, dt))

    @staticmethod
    def backward(ctx, grad):
        return ctx.xp.astype(grad, ctx.in_dtype), None


class ToDevice(Op):
    """The array on another device. Backward: the gradient moved back to the input's device."""

    @staticmethod
    def forward(ctx, x, dev):
        ctx.in_device, ctx.name_hint = backend.device_of(x), "ToCopy"
        return backend.to_device(x, dev)

    @staticmethod
    def backward(ctx, grad):
        return backend.to_device(grad, ctx.in_device), None


def check_matrix(x, name):
    """Raises a ShapeError unless x has at least 2 dims (for tril and triu)."""
    if x.ndim < 2:
        raise ShapeError(f"{name} needs a tensor with at least 2 dims, got shape {list(x.shape)}")


class Tril(Op):
    """The lower triangle, zeros above. Backward: the lower triangle of the gradient."""

    @staticmethod
    def forward(ctx, x, diagonal):
        check_matrix(x, "tril")
        ctx.diagonal = diagonal
        return ctx.xp.tril(x, k=diagonal)

    @staticmethod
    def backward(ctx, grad):
        return ctx.xp.tril(grad, k=ctx.diagonal), None


class Triu(Op):
    """The upper triangle, zeros below. Backward: the upper triangle of the gradient."""

    @staticmethod
    def forward(ctx, x, diagonal):
        check_matrix(x, "triu")
        ctx.diagonal = diagonal
        return ctx.xp.triu(x, k=diagonal)

    @staticmethod
    def backward(ctx, grad):
        return ctx.xp.triu(grad, k=ctx.diagonal), None


# ---------------------------------------------------------------------------------------------
# joining: cat and stack


class Cat(Op):
    """Arrays joined along a dim. Backward: the gradient cut back into the pieces' sizes."""

    @staticmethod
    def forward(ctx, dim, *arrays):
        axis = normalize_dim(dim, arrays[0].ndim)
        for a in arrays[1:]:
            if a.ndim != arrays[0].ndim or any(
                n != m for i, (n, m) in enumerate(zip(a.shape, arrays[0].shape)) if i != axis
            ):
                raise ShapeError(
                    f"cat along dim {dim}: shapes {list(arrays[0].shape)} and {list(a.shape)} must "
                    "match in every other dim"
                )
        ctx.axis, ctx.sizes = axis, [a.shape[axis] for a in arrays]
        return ctx.xp.concat(arrays, axis=axis)

    @staticmethod
    def backward(ctx, grad):
        grads, start = [], 0
        for size in ctx.sizes:
            key = (slice(None),) * ctx.axis + (slice(start, start + size),)
            grads.append(grad[backend.index_key(ctx.xp, key, grad.ndim)])
            start += size
        return (None, *grads)


class Stack(Op):
    """Arrays stacked along a new dim. Backward: the gradient's slices along that dim."""

    @staticmethod
    def forward(ctx, dim, *arrays):
        for a in arrays[1:]:
            if a.shape != arrays[0].shape:
                raise ShapeError(
                    f"stack expects tensors of the same shape, got {list(arrays[0].shape)} and {list(a.shape)}"
                )
        axis = normalize_dim(dim, arrays[0].ndim + 1)
        ctx.axis, ctx.count = axis, len(arrays)
        return ctx.xp.stack(arrays, axis=axis)

    @staticmethod
    def backward(ctx, grad):
        leading = (slice(None),) * ctx.axis
        return (None, *(grad[backend.index_key(ctx.xp, leading + (i,), grad.ndim)] for i in range(ctx.count)))


# ---------------------------------------------------------------------------------------------
# rolling and flipping


class Roll(Op):
    """The elements shifted along dims, wrapping around. Backward: the gradient shifted back."""

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return ctx.xp.roll(x, shifts, axis=dims)

    @staticmethod
    def backward(ctx, grad):
        back = -ctx.shifts if isinstance(ctx.shifts, int) else tuple(-s for s in ctx.shifts)
        return ctx.xp.roll(grad, back, axis=ctx.dims), None, None


class Flip(Op):
    """The elements reversed along dims. Backward: the gradient reversed the same way."""

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return backend.contiguous(ctx.xp.flip(x, axis=dims))  # a copy, as PyTorch's: NumPy's flip is a view

    @staticmethod
    def backward(ctx, grad):
        return ctx.xp.flip(grad, axis=ctx.dims), None


# ---------------------------------------------------------------------------------------------
# diagonals


def _diagonal_places(xp, shape, offset):
    """The (rows, columns) of diagonal `offset` of a matrix of this shape (above the main one for
    offset > 0, below it for offset < 0)."""
    rows, cols = shape
    start_row, start_col = max(-offset, 0), max(offset, 0)
    n = max(min(rows - start_row, cols - start_col), 0)
    places = xp.arange(n, **backend.creation_kwargs(xp))
    return places + start_row, places + start_col


class Diag(Op):
    """torch.diag: a vector becomes a square matrix with the vector on diagonal `offset` (zeros
    elsewhere); a matrix gives its diagonal `offset` as a vector. Each backward takes the other way:
    the gradient's diagonal for a vector, the gradient placed on the diagonal for a matrix."""

    @staticmethod
    def forward(ctx, x, offset):
        xp = ctx.xp
        ctx.in_shape, ctx.offset = x.shape, offset
        if x.ndim == 1:
            n = x.shape[0] + abs(offset)
            out = xp.zeros((n, n), dtype=x.dtype, **backend.creation_kwargs(xp))
            return backend.setitem(out, _diagonal_places(xp, (n, n), offset), x)
        return backend.getitem(x, _diagonal_places(xp, x.shape, offset))

    @staticmethod
    def backward(ctx, grad):
        xp = ctx.xp
        if len(ctx.in_shape) == 1:
            return backend.getitem(grad, _diagonal_places(xp, grad.shape, ctx.offset)), None
        full = xp.zeros(ctx.in_shape, dtype=grad.dtype, **backend.creation_kwargs(xp))
        return backend.setitem(full, _diagonal_places(xp, ctx.in_shape, ctx.offset), grad), None
