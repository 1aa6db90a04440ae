"""Indexing, each forward beside its backward: tensor[key] and its assignment, gather and scatter,
masked fill and select, index_select, index_add, and sort. The backward of reading some elements is
adding the gradient back into those places.
"""

from .. import backend
from .base import Op, broadcast_shape, normalize_dim, shape_of, unbroadcast


# ---------------------------------------------------------------------------------------------
# indexing, masking, joining


def is_basic_key(key):
    """True for keys of ints, slices, None and ... only: then x[key] is a view without repeats."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(p is None or p is Ellipsis or isinstance(p, (int, slice)) for p in parts)


def _ints(key):
    """Whether `key` is an int or a non-empty tuple of ints (told without a generator: it runs per index)."""
    if type(key) is int:
        return True
    if type(key) is not tuple or not key:
        return False
    for part in key:
        if type(part) is not int:
            return False
    return True


def basic_index_name(key):
    """PyTorch's name for the last step of a basic index: x[0] Select, x[1:] Slice, x[None] Unsqueeze."""
    name = "Slice"
    for part in key if isinstance(key, tuple) else (key,):
        if isinstance(part, int):
            name = "Select"
        elif part is None:
            name = "Unsqueeze"
        elif isinstance(part, slice) and part != slice(None):
            name = "Slice"
    return name


class Index(Op):
    """x[key]; the backward scatters the gradient back, adding where an index repeats."""

    is_view = True  # for basic keys (ints, slices, None, ...); forward sets ctx.copied otherwise

    @staticmethod
    def forward(ctx, x, key, *index_arrays):
        # the index tensors of the key come as arguments too (their arrays are the key's): so that one
        # changed in place after the forward makes backward raise, as in PyTorch
        ctx.in_shape, ctx.in_dtype = x.shape, x.dtype
        ctx.save_for_backward(key, *index_arrays)
        if _ints(key):  # x[3], x[k, j], the commonest keys: a view (a trailing ... keeps a 0-d result an array)
            ctx.name_hint = "Select"
            return x[(key, Ellipsis) if type(key) is int else key + (Ellipsis,)]
        if type(key) is slice:  # x[2:10], told at once (as basic_index_name would: a Slice)
            ctx.name_hint = "Slice"
            return x[(key, Ellipsis)]
        if hasattr(key, "dtype"):  # C[ix], one index array: a copy (told at once, as below)
            ctx.copied = True
            return backend.getitem(x, key)
        if is_basic_key(key):
            ctx.name_hint = basic_index_name(key)
            parts = key if isinstance(key, tuple) else (key,)
            if not any(p is Ellipsis for p in parts):  # a trailing ... gives a 0-d view, not a scalar copy
                key = parts + (Ellipsis,)
        else:
            ctx.copied = True  # advanced indexing (tensors, masks) copies, as in PyTorch
            return backend.getitem(x, key)
        return x[backend.index_key(ctx.xp, key, x.ndim)]

    @staticmethod
    def backward(ctx, grad):
        xp = ctx.xp
        key = ctx.saved_tensors[0]
        full = xp.zeros(ctx.in_shape, dtype=ctx.in_dtype, **backend.creation_kwargs(xp))
        if is_basic_key(key):
            # None only added size-1 axes: write without it (the Array API's setitem takes no None)
            parts = tuple(p for p in (key if isinstance(key, tuple) else (key,)) if p is not None)
            key = parts if Ellipsis in parts else parts + (Ellipsis,)
            full[key] = xp.reshape(grad, full[key].shape)
        else:
            full = backend.scatter_add(full, backend.index_key(xp, key, len(ctx.in_shape)), grad)
        return (full,) + (None,) * (len(ctx.needs_input_grad) - 1)


class IndexPut(Op):
    """x[key] = value, out of place (the in-place `x[key] = v` writes this result back into x)."""

    @staticmethod
    def forward(ctx, x, key, value, *index_arrays):
        xp = ctx.xp
        ctx.value_shape = shape_of(value)
        ctx.save_for_backward(key, *index_arrays)  # the key's index tensors, as Index's
        parts = key if isinstance(key, tuple) else (key,)
        if any(p is None or isinstance(p, int) or isinstance(p, slice) and p != slice(None) for p in parts):
            ctx.name_hint = "CopySlices"  # PyTorch writes through a view of x there (x[0] = v)
        return backend.setitem(xp.asarray(x, copy=True), key, value)

    @staticmethod
    def backward(ctx, grad):
        xp = ctx.xp
        key = ctx.saved_tensors[0]
        gx = gv = None
        if ctx.needs_input_grad[0]:
            gx = backend.setitem(xp.asarray(grad, copy=True), key, 0)
        if ctx.needs_input_grad[2]:
            gv = unbroadcast(xp, backend.getitem(grad, key), ctx.value_shape)
        return (gx, None, gv) + (None,) * (len(ctx.needs_input_grad) - 3)


class CopySlices(Op):
    """An in-place op on a view, recorded on the view's root: root[where the view is] = value.

    The view shares the root's memory, so the change is the root's too; recording it here keeps
    the root's gradients right. `view_of` takes the view again from any array laid out like the
    root; the backward uses it to split the gradient: the view's part goes to the value, the
    rest to the root as it was before.
    """

    @staticmethod
    def forward(ctx, root, value, view_of):
        ctx.view_of, ctx.root_layout = view_of, root  # kept for its memory layout (strides), not its numbers
        view_of(root)[...] = value
        return root

    @staticmethod
    def backward(ctx, grad):
        xp = ctx.xp
        g_root = xp.empty_like(ctx.root_layout)  # the root's strides, so that every step of the view is a view again
        g_root[...] = grad
        region = ctx.view_of(g_root)
        g_value = xp.asarray(region, copy=True) if ctx.needs_input_grad[1] else None
        region[...] = 0  # those elements of the old root were overwritten: they get no gradient
        return g_root, g_value, None


class Overwrite(Op):
    """New numbers for every element (x.normal_(), x.zero_() ...): no gradient reaches the old x."""

    @staticmethod
    def forward(ctx, x, values, name):
        ctx.name_hint = name
        return values

    @staticmethod
    def backward(ctx, grad):
        return ctx.xp.zeros_like(grad), None, None


def along_axis_key(xp, index, axis):
    """The advanced-index key that reaches `x[i][j][index[i][j]]` (along `axis`) for every place of
    `index`: index itself along the axis, the positions 0, 1, ... along the other dims."""
    key = tuple(
        index if i == axis else xp.reshape(
            xp.arange(n, **backend.creation_kwargs(xp)), tuple(-1 if j == i else 1 for j in range(index.ndim))
        )
        for i, n in enumerate(index.shape)
    )
    return tuple(xp.broadcast_to(k, index.shape) for k in key)


def corner(xp, x, shape):
    """The leading corner of x of the given shape (PyTorch's scatter and gather use only that much of
    a source or input that is larger than the index)."""
    return x[backend.index_key(xp, tuple(slice(0, n) for n in shape), x.ndim)]


class Gather(Op):
    """torch.gather: `out[i][j] = x[i][index[i][j]]` along `dim`."""

    @staticmethod
    def forward(ctx, x, dim, index, saves_input=True):
        xp = ctx.xp
        axis = normalize_dim(dim, x.ndim)
        # PyTorch's gather saves the input too (for its shape); topk, which gathers, saves only the indices
        ctx.save_for_backward(index, computed_from=(x,) if saves_input else ())
        ctx.axis, ctx.in_shape = axis, x.shape
        # like PyTorch, the index may be smaller than x in the other dims: gather from that corner
        corner = tuple(slice(None) if i == axis else slice(0, n) for i, n in enumerate(index.shape))
        return xp.take_along_axis(x[backend.index_key(xp, corner, x.ndim)], index, axis=axis)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        xp = ctx.xp
        full = xp.zeros(ctx.in_shape, dtype=grad.dtype, **backend.creation_kwargs(xp))
        # the scatter-add of take_along_axis: spell out the index along every dim
        return backend.scatter_add(full, along_axis_key(xp, index, ctx.axis), grad), None, None, None


class MaskedFill(Op):
    """Where `mask` is True, `value`; elsewhere x. No gradient flows through the filled places.

    With inplace=True (`masked_fill_`) the value is written straight into x's memory.
    """

    @staticmethod
    def forward(ctx, x, mask, value, inplace=False):
        ctx.in_shape = x.shape
        ctx.save_for_backward(mask)
        if inplace:
            backend.masked_assign(x, mask, value)
            return x
        return backend.masked_fill(x, mask, value)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return unbroadcast(ctx.xp, backend.masked_fill(grad, mask, 0), ctx.in_shape), None, None, None


# ---------------------------------------------------------------------------------------------
# sorting, selecting along a dim, scattering


class Sort(Op):
    """(values, indices) sorted along a dim (stable: ties keep their order; NaN sorts as the largest).
    The gradient of the values goes back to where each value came from: the inverse permutation."""

    @staticmethod
    def forward(ctx, x, axis, descending):
        xp = ctx.xp
        indices = xp.astype(xp.argsort(x, axis=axis, descending=descending, stable=True), xp.int64)
        ctx.save_for_backward(indices)  # the indices output, as PyTorch's
        ctx.axis = axis
        return xp.take_along_axis(x, indices, axis=axis), indices

    @staticmethod
    def backward(ctx, grad, _indices_grad):
        (indices,) = ctx.saved_tensors
        xp = ctx.xp
        inverse = xp.argsort(indices, axis=ctx.axis, stable=True)
        return xp.take_along_axis(grad, inverse, axis=ctx.axis), None, None


class IndexSelect(Op):
    """The entries at `index` (1-D, repeats allowed) along one dim; the backward adds the gradient
    back into those places, repeats adding up."""

    @staticmethod
    def forward(ctx, x, axis, index):
        ctx.save_for_backward(index)  # (the index tensor is an argument: changed in place, backward raises)
        ctx.axis, ctx.in_shape = axis, x.shape
        return ctx.xp.take(x, index, axis=axis)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        xp = ctx.xp
        full = xp.zeros(ctx.in_shape, dtype=grad.dtype, **backend.creation_kwargs(xp))
        return backend.scatter_add(full, (slice(None),) * ctx.axis + (index,), grad), None, None


class MaskedSelect(Op):
    """The elements of x where the mask (broadcast with x) is True, as a 1-D tensor."""

    @staticmethod
    def forward(ctx, x, mask):
        xp = ctx.xp
        shape = broadcast_shape(x.shape, mask.shape)
        ctx.save_for_backward(xp.broadcast_to(mask, shape), computed_from=(x, mask))  # PyTorch's: both
        mask = ctx.saved[0]
        ctx.in_shape = x.shape
        return backend.getitem(xp.broadcast_to(x, shape), mask)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        xp = ctx.xp
        full = xp.zeros(mask.shape, dtype=grad.dtype, **backend.creation_kwargs(xp))
        return unbroadcast(xp, backend.setitem(full, mask, grad), ctx.in_shape), None


class Scatter(Op):
    """A copy of x with src (a tensor, or one number) written along `axis` at `index`:
    `out[i][index[i][j]] = src[i][j]` for dim 1. With add=True the values are added instead (scatter_add),
    repeated indices adding up. Gradients: to x where nothing was written (everywhere for add), to src
    the gradient at the places it went to."""

    @staticmethod
    def forward(ctx, x, axis, index, src, add):
        xp = ctx.xp
        key = along_axis_key(xp, index, axis)
        values = corner(xp, src, index.shape) if hasattr(src, "shape") else src
        ctx.name_hint = "ScatterAdd" if add else "ScatterBackward0" if hasattr(src, "shape") else "ScatterBackward1"
        ctx.save_for_backward(index)
        ctx.axis, ctx.src_shape, ctx.add, ctx.x_shape = axis, shape_of(src), add, x.shape
        out = xp.reshape(xp.asarray(x, copy=True), x.shape or (1,))  # a 0-d x: one element along dim 0
        out = backend.scatter_add(out, key, values) if add else backend.setitem(out, key, values)
        return xp.reshape(out, ctx.x_shape)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        xp = ctx.xp
        key = along_axis_key(xp, index, ctx.axis)
        grad_1d = xp.reshape(grad, ctx.x_shape or (1,))
        gx = gsrc = None
        if ctx.needs_input_grad[0]:
            gx = grad if ctx.add else xp.reshape(backend.setitem(xp.asarray(grad_1d, copy=True), key, 0), ctx.x_shape)
        if ctx.needs_input_grad[3]:
            gsrc = xp.zeros(ctx.src_shape, dtype=grad.dtype, **backend.creation_kwargs(xp))
            gsrc = backend.setitem(gsrc, tuple(slice(0, n) for n in index.shape), backend.getitem(grad_1d, key))
        return gx, None, None, gsrc, None


# ---------------------------------------------------------------------------------------------
# index_add


class IndexAdd(Op):
    """A copy of x with alpha * source added along `axis` at the positions `index` (1-D, repeats
    adding up): out[:, index[j]] += alpha * source[:, j] for axis 1. The gradient goes to x unchanged
    and to source as alpha times the gradient at the places it was added to."""

    @staticmethod
    def forward(ctx, x, axis, index, source, alpha, index_given=None):
        xp = ctx.xp
        # as PyTorch's: the index tensor given (of which `index` is a flattened copy) and the source
        ctx.save_for_backward(index, computed_from=(index_given, source))
        ctx.axis, ctx.alpha = axis, alpha
        key = (slice(None),) * axis + (index,)
        added = source if alpha == 1 else source * alpha  # (the caller checked source's dtype is x's)
        return backend.scatter_add(xp.asarray(x, copy=True), key, added)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gsource = None
        if ctx.needs_input_grad[3]:
            gsource = ctx.xp.take(grad, index, axis=ctx.axis)
            if ctx.alpha != 1:
                gsource = gsource * ctx.alpha
        return grad, None, None, gsource, None, None
