"""How a Tensor method reads its arguments: dims (negative ones counted from the end), shapes given as
sizes or a tuple, numbers, and the checks that refuse a dtype an op has no meaning for.
"""

import math
import numbers

import numpy as np

from .. import autograd, backend, dtypes, ops, tensor_core
from ..errors import ShapeError
from ..tensor_core import TensorCore


def parse_to_args(args, kwargs, options=("non_blocking",)):
    """The (device, dtype) of a call to(device), to(dtype), to(device, dtype) or to(tensor).

    Keyword arguments other than device, dtype and the caller's `options` are refused by name."""
    for name in kwargs:
        if name not in ("device", "dtype") and name not in options:
            raise TypeError(f"to() got an unexpected keyword argument {name!r}")
    dev, dt = kwargs.get("device"), kwargs.get("dtype")
    for arg in args:
        if isinstance(arg, dtypes.dtype):
            dt = arg
        elif isinstance(arg, TensorCore):
            dev, dt = arg.device, arg.dtype
        elif arg is not None:
            dev = arg
    return dev, dt


def _dim(dim, ndim):
    return ops.normalize_dim(dim, ndim)


def _dims_tuple(dim, ndim):
    return ops.normalize_dims(dim, ndim)


def _dims_or_none(dim, ndim):
    return None if dim is None else _dims_tuple(dim, ndim)


def _shape_arg(shape, lowest=0):
    """Accept both x.view(2, 3) and x.view((2, 3)) (and a Size), as a tuple of ints, each >= `lowest`:
    0 for the sizes of a new tensor, -1 where -1 stands for a size to infer or keep (view, reshape,
    expand), None for dims (permute)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    if len(shape) == 1 and type(shape[0]) is int and (lowest is None or shape[0] >= lowest):
        return tuple(shape)  # (the common cases, decided without the loops below)
    if len(shape) == 2 and type(shape[0]) is int and type(shape[1]) is int and (
            lowest is None or (shape[0] >= lowest and shape[1] >= lowest)):
        return tuple(shape)
    if not all(hasattr(n, "__index__") and not isinstance(n, bool) for n in shape):
        raise TypeError(f"sizes must be integers, got {list(shape)}")
    shape = tuple(n.__index__() for n in shape)
    if lowest is not None and any(n < lowest for n in shape):
        raise ShapeError(f"invalid size {min(shape)} in {list(shape)}: sizes must be 0 or more"
                         + (", or -1 for a size to infer" if lowest == -1 else ""))
    return shape


def _reshape_arg(shape, numel):
    """The target of view/reshape: at most one -1, which a tensor with no elements cannot infer."""
    shape = _shape_arg(shape, lowest=-1)
    if shape.count(-1) > 1:
        raise ShapeError(f"only one size in {list(shape)} can be -1 (inferred from the others)")
    if -1 in shape and 0 in shape:  # (the product of the other sizes is 0)
        raise ShapeError(f"cannot reshape a tensor of {numel} elements into shape {list(shape)}: the -1 could "
                         "be any size there; give all the sizes")
    return shape


def _scalar(value, name="value"):
    """A Python number from a number or a 0-d tensor (for fill values and clamp bounds)."""
    if isinstance(value, TensorCore):
        if value.ndim != 0:  # PyTorch takes only 0-d tensors here: a [1]-shaped one would hide a mistake
            raise ShapeError(
                f"the {name} must be a number or a 0-d tensor, got a tensor of shape {list(value.shape)}: "
                "use value.item() or value.squeeze()"
            )
        return value.item()
    return value


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _value_to_write(tensor, value):
    """The value of x[key] = value, fill_ or masked_fill, converted to x's dtype as PyTorch's copy does.

    A write keeps x's dtype whatever the value's: 2.7 written into an int64 tensor is 2, as in PyTorch
    (arithmetic in place, x += 2.7, refuses instead: see _inplace_operand).
    """
    if isinstance(value, TensorCore):
        return value if value.dtype is tensor.dtype else value.to(tensor.dtype)
    if isinstance(value, (numbers.Number, np.bool_)):
        if tensor.dtype is dtypes.bool_:
            return bool(value)
        if tensor.dtype is dtypes.float32 and math.isfinite(value) and abs(value) > _FLOAT32_MAX:
            raise OverflowError(f"{value} does not fit in a float32 tensor (it would become inf): use float64")
        if tensor.dtype.is_floating_point:
            return float(value)
        info = np.iinfo(tensor.dtype.name)
        if not (math.isfinite(value) and info.min <= int(value) <= info.max):
            raise OverflowError(f"{value} does not fit in a {tensor.dtype} tensor (from {info.min} to {info.max}): "
                                "use a float tensor, or a number in that range")
        return int(value)  # int() truncates, as PyTorch
    return tensor_core.from_data(value, dtype=tensor.dtype, device=tensor.device)


def _all_dims_if_empty(dim):
    """sum(dim=()) reduces over every dim, as in PyTorch (NumPy's axis=() reduces over none)."""
    return None if isinstance(dim, (tuple, list)) and len(dim) == 0 else dim


def _check_differentiable_dtype(x, dtype, name):
    """An op of x into an integer dtype has no gradient: refused for an x that records one, as in PyTorch."""
    if dtype is not None and not dtype.is_floating_point and x.requires_grad and autograd.grad_mode.enabled:
        raise TypeError(f"{name} would give a {dtype} result from a tensor that requires grad, and an integer result "
                        "has no gradient: detach() the tensor first, or keep a floating point dtype")


def _check_not_0d(x, name):
    if x.ndim == 0:
        raise ShapeError(f"{name} expects a tensor with at least 1 dim, got a 0-d tensor (a single number): "
                         "reshape it to 1-d first (x.reshape(1))")


def _check_not_bool(x, name):
    if x.dtype is dtypes.bool_:
        raise TypeError(f"{name} is not defined for bool tensors: convert with .long() or .float() first")


def _check_floating(x, name):
    if not x.dtype.is_floating_point:  # PyTorch has no integer softmax either: it would round to 0 and 1
        raise TypeError(f"{name} needs a floating point tensor, got {x.dtype}: use x.float(), or "
                        f"{name}(x, dim, dtype=tinyattn.float32)")


def _floating(x):
    """Integer inputs of exp, log, softmax ... become float32 first, as in PyTorch."""
    return x if _numpy_float(x) or x.dtype.is_floating_point else x.to(dtypes.default_float)


def _numpy_float(x):
    """Whether x holds a NumPy array of a float dtype: the common case, told from the array itself
    (no lookup of the tinyattn dtype)."""
    array = x.array
    return type(array) is np.ndarray and array.dtype.kind == "f"


def _check_index_range(index, size, message):
    """Indices must lie in [0, size): checked here, as CuPy would wrap them around."""
    if index.numel():
        xp = backend.namespace(index.array)
        low, high = int(xp.min(index.array)), int(xp.max(index.array))
        if low < 0 or high >= size:
            raise IndexError(message.format(high if high >= size else low) + f" (valid indices are 0 to {size - 1})")


def _check_output_size(output_size, total):
    if output_size is not None and output_size != total:
        raise ValueError(f"repeat_interleave: output_size={output_size} but the repeats make {total} elements")


def _check_not_empty(x, dim, name):
    """max, min, argmax and argmin of no numbers are undefined: refused, as in PyTorch."""
    if dim is None:
        if x.numel() == 0:
            error = IndexError if name.startswith("arg") else RuntimeError  # PyTorch's types
            raise error(f"{name}() of a tensor with no elements (shape {list(x.shape)}) is undefined: give a dim "
                        "whose size is not 0, or check numel() first")
    elif x.ndim and x.shape[_dim(dim, x.ndim)] == 0:
        raise IndexError(f"{name}(): dim {dim} of the tensor of shape {list(x.shape)} has size 0, and there is no "
                         f"{name.removeprefix('arg')} of no numbers: reduce over a dim whose size is not 0")
