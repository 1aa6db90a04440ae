"""PyTorch's type promotion for binary ops: which dtype `a + b` has (a Python number adapts to the
tensor; a float tensor wins over an integer one), and the checks that refuse what PyTorch refuses
(bool subtraction, integer division by zero, bitwise ops on floats).
"""

import numbers

import numpy as np

from .. import backend, dtypes, ops, tensor_core
from ..errors import ShapeError
from ..tensor_core import TensorCore, _inferred_dtype


def _python_dtype(value):
    if isinstance(value, bool):
        return dtypes.bool_
    if isinstance(value, numbers.Integral):
        return dtypes.int64
    if isinstance(value, numbers.Real):
        return dtypes.default_float
    raise TypeError(f"unsupported operand type for a tensor op: {type(value).__name__}")


def result_dtype(*operands):
    """PyTorch's type promotion: dimensioned tensors first, then 0-d tensors, then Python numbers.

    A 0-d tensor or a Python number only changes the result when it is of a higher category
    (bool < integer < float): `int_tensor * 0.5` is float32, `float32_tensor * 2.0` stays float32.
    """
    by_priority = [None, None, None]
    for value in operands:
        if isinstance(value, TensorCore):
            d, level = value.dtype, 0 if value.ndim else 1
        else:
            d, level = _python_dtype(value), 2
        by_priority[level] = d if by_priority[level] is None else dtypes.promote(by_priority[level], d)
    result = None
    for d in by_priority:
        if d is not None and (result is None or dtypes.category(d) > dtypes.category(result)):
            result = d if result is None else dtypes.promote(result, d)
    return result


def _as_operand(value, like):
    """The other operand of a binary op: tensors and Python numbers as they are, the rest a tensor."""
    if isinstance(value, (TensorCore, numbers.Number)):
        return value.item() if isinstance(value, np.generic) else value
    return tensor_core.from_data(value, device=like.device)


def _to_one_device(a, b):
    """A 0-d CPU tensor meets a tensor on the GPU there, as a number would (PyTorch allows it too)."""
    if isinstance(a, TensorCore) and isinstance(b, TensorCore) and type(a.array) is not type(b.array):
        if a.ndim == 0 and a.device.type == "cpu":
            return a.to(b.device), b
        if b.ndim == 0 and b.device.type == "cpu":
            return a, b.to(a.device)
    return a, b  # anything else on two devices is an error, raised by the op


def _float_tensor_and_number(t, number):
    return (isinstance(t, TensorCore) and type(number) in (int, float)
            and backend.dtype_of(t.array).is_floating_point)


def _promote(a, b, true_division=False, subtraction=False):
    if isinstance(a, TensorCore) and isinstance(b, TensorCore) and a.array.dtype is b.array.dtype:
        target = a.dtype
        if subtraction and target is dtypes.bool_:
            _check_no_bool_subtraction(a, b)
        if target.is_floating_point or not true_division:
            return a, b  # the common case: nothing to convert
    elif _float_tensor_and_number(a, b) or _float_tensor_and_number(b, a):
        return a, b  # a float tensor keeps its dtype next to a Python number, as in PyTorch
    else:
        if subtraction:
            _check_no_bool_subtraction(a, b)
        target = result_dtype(a, b)
    if true_division and not target.is_floating_point:
        target = dtypes.default_float
    if isinstance(a, TensorCore) and a.dtype is not target:
        a = a.to(target)
    if isinstance(b, TensorCore) and b.dtype is not target:
        b = b.to(target)
    if target.itemsize < 8 and not target.is_floating_point and target is not dtypes.bool_:
        a, b = _wrapped_int(a, target), _wrapped_int(b, target)
    return a, b


def _wrapped_int(value, target):
    """A Python int outside the range of an integer dtype, wrapped around into it (uint8: 300 -> 44), as
    PyTorch converts it before computing; NumPy would refuse it."""
    if type(value) is not int:
        return value
    span = 1 << (8 * target.itemsize)
    low = 0 if target is dtypes.uint8 else -(span >> 1)
    return value if low <= value < low + span else (value - low) % span + low


def _binary(function, a, b):
    """Apply a binary op after PyTorch's type promotion; name both shapes if they don't broadcast."""
    if not _same_float(a, b):  # (two float tensors of one dtype, or one and a Python number: nothing to do)
        tensor = a if isinstance(a, TensorCore) else b
        a, b = _to_one_device(_as_operand(a, tensor), _as_operand(b, tensor))
        a, b = _promote(a, b, true_division=function is ops.Div, subtraction=function is ops.Sub)
    try:
        return function.apply(a, b)
    except ValueError:
        shapes = [list(x.shape) for x in (a, b) if isinstance(x, TensorCore)]
        if len(shapes) == 2 and not _broadcastable(*shapes):
            raise ShapeError(
                f"{function.__name__.lower()}: shapes {shapes[0]} and {shapes[1]} cannot be broadcast "
                "together (each dim, aligned from the right, must be equal or 1)"
            ) from None
        raise


def _same_float(a, b):
    """The common case of a binary op, told at once: NumPy float tensors of one dtype, or such a tensor
    and a Python int or float (which takes the tensor's dtype). No conversion or promotion is needed."""
    if isinstance(a, TensorCore):
        x = a.array
        if isinstance(b, TensorCore):
            y = b.array
            return type(x) is np.ndarray and type(y) is np.ndarray and x.dtype is y.dtype and x.dtype.kind == "f"
        return type(b) in (int, float) and type(x) is np.ndarray and x.dtype.kind == "f"
    if isinstance(b, TensorCore) and type(a) in (int, float):
        y = b.array
        return type(y) is np.ndarray and y.dtype.kind == "f"
    return False


def _broadcastable(s, t):
    return all(m == n or m == 1 or n == 1 for m, n in zip(reversed(s), reversed(t)))


def _promoted_arrays(a, b):
    tensor = a if isinstance(a, TensorCore) else b
    a, b = _promote(*_to_one_device(_as_operand(a, tensor), _as_operand(b, tensor)))
    arrays = [x.array if isinstance(x, TensorCore) else x for x in (a, b)]
    tensors = [x.array for x in (a, b) if isinstance(x, TensorCore)]
    backend.same_device(tensors)
    if len(tensors) == 2 and not _broadcastable(tensors[0].shape, tensors[1].shape):
        raise ShapeError(
            f"shapes {list(tensors[0].shape)} and {list(tensors[1].shape)} cannot be broadcast together"
        )
    return arrays


def _check_no_bool_subtraction(a, b):
    """a - b with a bool tensor is refused, as in PyTorch (NumPy refuses bool - bool, computes int - bool)."""
    bools = [isinstance(x, bool) or isinstance(x, TensorCore) and x.dtype is dtypes.bool_ for x in (a, b)]
    if all(bools):
        raise TypeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                        "Use the `^` or `logical_xor()` operator instead.")
    if any(bools):  # one bool tensor, or a Python True/False (PyTorch takes it as a bool tensor)
        raise TypeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                        "to invert a mask, use the `~` or `logical_not()` operator instead.")


def _check_no_bool_negation(x):
    if x.dtype is dtypes.bool_:
        raise TypeError("negation, the `-` operator, is not defined for bool tensors: to invert a mask, use the "
                        "`~` or `logical_not()` operator instead")


def _check_integer_divisor(a, b, symbol):
    """Integer // and % by zero raise ZeroDivisionError, as in PyTorch: NumPy would quietly give 0.

    `a` and `b` are promoted arrays or numbers; float division by zero keeps its inf and nan.
    """
    dtype = backend.dtype_of(a if hasattr(a, "dtype") else b)
    if dtype is dtypes.bool_:
        raise TypeError(f"{symbol} is not defined for two bool tensors: convert one with .long() first")
    if dtype.is_floating_point:
        return
    has_zero = bool(backend.namespace(b).any(b == 0)) if hasattr(b, "dtype") else b == 0
    if has_zero and all(x.size for x in (a, b) if hasattr(x, "dtype")):  # an empty result divides nothing
        raise ZeroDivisionError(
            f"integer {symbol} by zero: the divisor holds a 0 (NumPy would give 0 there, PyTorch raises); "
            "mask the zeros out first, or use floats (x.float()) to get inf and nan"
        )


@backend.quiet_float_errors  # a float division by zero gives inf or NaN silently, as in PyTorch
def _floor_divide(a, b):
    _check_integer_divisor(a, b, "//")
    return a // b


@backend.quiet_float_errors
def _remainder(a, b):
    _check_integer_divisor(a, b, "%")
    result = a % b
    if backend.is_float(result):  # a zero takes the dividend's sign, as in PyTorch (NumPy gives the divisor's)
        xp = backend.namespace(result)
        result = xp.where(result == 0, xp.copysign(result, a), result)
    return result


def _bitwise(compute, symbol):
    """compute(a, b) for bool and integer operands; floats are refused, as in PyTorch."""

    def checked(a, b):
        _check_bitwise(symbol, a, b)
        return compute(a, b)

    return checked


def _check_bitwise(symbol, *operands):
    if any(backend.is_float(x) if hasattr(x, "dtype") else isinstance(x, float) for x in operands):
        raise TypeError(f"{symbol} is only defined for bool and integer tensors, not floating point ones: "
                        "compare first (x > 0) to get a bool tensor")


def _no_grad_binary(compute, a, b):
    """Comparisons, //, %, bitwise ops: computed on arrays, no graph."""
    if not isinstance(b, (TensorCore, numbers.Number, np.generic)) and not isinstance(b, (list, tuple)):
        return NotImplemented
    return tensor_core.wrap(compute(*_promoted_arrays(a, b)))


def _inplace_operand(tensor, other):
    """The operand of an in-place op, cast to the tensor's dtype (which an in-place op keeps)."""
    if isinstance(other, TensorCore):
        if other.dtype is not tensor.dtype:
            if dtypes.category(other.dtype) > dtypes.category(tensor.dtype):
                raise TypeError(
                    f"result type {other.dtype} can't be written into a {tensor.dtype} tensor in place"
                )
            other = other.to(tensor.dtype)
        return _fits_in_place(tensor, other)
    if not isinstance(other, numbers.Number):  # a list or NumPy array: refused as a tensor of its dtype would be
        if dtypes.category(_inferred_dtype(other)) > dtypes.category(tensor.dtype):
            raise TypeError(
                f"result type {_inferred_dtype(other)} can't be written into a {tensor.dtype} tensor in place"
            )
        return _fits_in_place(tensor, tensor_core.from_data(other, dtype=tensor.dtype, device=tensor.device))
    if dtypes.category(_python_dtype(other)) > dtypes.category(tensor.dtype):
        raise TypeError(f"a {type(other).__name__} can't be written into a {tensor.dtype} tensor in place")
    return other.item() if isinstance(other, np.generic) else other


def _fits_in_place(tensor, other):
    """An in-place operand must broadcast to the tensor's own shape (which the op keeps)."""
    if other.array.shape == tensor.array.shape:
        return other
    shape = ops.broadcast_shape(tensor.shape, other.shape)
    if shape != tuple(tensor.shape):
        problem = (f"doesn't match the broadcast shape {list(shape)}" if shape is not None
                   else f"cannot be broadcast with the operand's shape {list(other.shape)}")
        raise ShapeError(f"output with shape {list(tensor.shape)} {problem}: an in-place op needs an operand that "
                         "broadcasts to the tensor's shape; use the out-of-place op (a = a + b)")
    return other
