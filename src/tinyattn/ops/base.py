"""What every op shares: the `Op` base class and the shape helpers of the backward.

An op is a `Function` with `takes_arrays = True`: its forward and backward take and return raw arrays
(NumPy or CuPy, `ctx.xp`). Broadcasting: an op that broadcast an input (a (3, 1) tensor added to a
(3, 4) one) must return a gradient of the input's own shape: `unbroadcast` sums the gradient over the
broadcast dimensions. `normalize_dims` reads a `dim` argument as PyTorch does.
"""

from .. import backend
from ..autograd import Function


class Op(Function):
    """The base of every op here: a `Function` whose forward and backward take and return arrays."""

    takes_arrays = True


def shape_of(value):
    """The shape of an array, or () for a Python number."""
    return getattr(value, "shape", ())


def unbroadcast(xp, grad, shape):
    """Sum `grad` down to `shape`: over the leading dims broadcasting added and the size-1 dims."""
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1
    )
    if axes:
        grad = backend.sum_along(grad, axes, keepdims=True)
    return xp.reshape(grad, shape)


def broadcast_shape(*shapes):
    """The shape that `shapes` broadcast to, or None when they do not broadcast together."""
    ndim = max(len(shape) for shape in shapes)
    result = []
    for sizes in zip(*[(1,) * (ndim - len(shape)) + tuple(shape) for shape in shapes]):
        others = {n for n in sizes if n != 1}
        if len(others) > 1:
            return None
        result.append(others.pop() if others else 1)
    return tuple(result)


def normalize_dim(dim, ndim):
    """One dim (an int) as a non-negative axis; a 0-d tensor takes 0 or -1, as in PyTorch (axis 0)."""
    if type(dim) is not int:
        if isinstance(dim, bool) or not hasattr(dim, "__index__") or isinstance(dim, (tuple, list)):
            raise TypeError(f"a dim must be an int, got {dim!r} ({type(dim).__name__})"
                            + (": this op takes one dim" if isinstance(dim, (tuple, list)) else ""))
        dim = dim.__index__()  # a NumPy integer
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError(
            f"dimension {dim} is out of range for a tensor with {ndim} dimensions "
            f"(expected a dim in [{-size}, {size - 1}])"
        )
    return dim % size


def normalize_dims(dim, ndim):
    """`dim` (an int, a tuple or list of ints, or None for every dim) as a tuple of non-negative axes.

    As in PyTorch: a negative dim counts from the end; a 0-d tensor takes dim 0 or -1, which stand
    for no axis there; a dim out of range is an IndexError, a dim given twice a ValueError.
    """
    if dim is None:
        return tuple(range(ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    result = []
    for d in dims:
        axis = normalize_dim(d, ndim)
        if axis in result:
            raise ValueError(f"dim {axis} appears more than once in the dims {list(dims)}: give each dim once")
        result.append(axis)
    return tuple(result) if ndim else ()


def keepdims_shape(shape, axes):
    """`shape` with the reduced `axes` kept as size 1 (where a reduction's gradient is broadcast from)."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))
