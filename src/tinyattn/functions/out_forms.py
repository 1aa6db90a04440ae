"""Function forms with `out=`: the result written into a given tensor (`torch.add(a, b, out=c)`,
`torch.rand(2, 2, out=c)`). Without out= each returns a new tensor, as the method does.
"""

from ..autograd import grad_mode, no_grad
from ..tensor import Tensor
from ..tensor.arguments import _shape_arg
from ..tensor.creation import _NUMPY_DTYPES, _float_dtype, _from_host, generator_or_default, tensor
from ..tensor.inplace import _DTYPE_WORDS, _into
from ..tensor.products import _matmul
from .forms import maximum, minimum


def _tensor_operand(input, other):
    """The first operand of a binary function form as a tensor: torch.add(2, x) takes 2 as a 0-d tensor."""
    if isinstance(input, Tensor):
        return input
    like = other if isinstance(other, Tensor) else None
    return tensor(input, device=None if like is None else like.device)


def add(input, other, *, alpha=1, out=None):
    """input + alpha * other."""
    result = _tensor_operand(input, other).add(other, alpha=alpha)
    return result if out is None else _into(out, result, "add")


def sub(input, other, *, alpha=1, out=None):
    """input - alpha * other."""
    result = _tensor_operand(input, other).sub(other, alpha=alpha)
    return result if out is None else _into(out, result, "sub")


def mul(input, other, *, out=None):
    """input * other."""
    result = _tensor_operand(input, other).mul(other)
    return result if out is None else _into(out, result, "mul")


def div(input, other, *, rounding_mode=None, out=None):
    """input / other (rounding_mode "trunc" or "floor" for integer-like division)."""
    result = _tensor_operand(input, other).div(other, rounding_mode=rounding_mode)
    return result if out is None else _into(out, result, "div")


def as_strided(input, size, stride, storage_offset=None):
    """A view of input's storage with these sizes, strides and offset, in elements (Tensor.as_strided)."""
    return input.as_strided(size, stride, storage_offset)


def true_divide(dividend, divisor, *, out=None):
    """dividend / divisor, always a true division (an integer tensor gives floats): div without rounding_mode."""
    return div(dividend, divisor, out=out)


def matmul(input, other, *, out=None):
    """The matrix product, with broadcasting batches (as the @ operator)."""
    result = _matmul(input, other)
    return result if out is None else _into(out, result, "matmul")


def mm(input, mat2, *, out=None):
    """The product of two matrices."""
    result = input.mm(mat2)
    return result if out is None else _into(out, result, "mm")


def bmm(input, mat2, *, out=None):
    """The products of two batches of matrices."""
    result = input.bmm(mat2)
    return result if out is None else _into(out, result, "bmm")


def max(input, dim=None, keepdim=False, *, other=None, axis=None, keepdims=None):
    """The largest element; along dim, (values, indices); max(input, other): the elementwise maximum."""
    if other is not None:
        return maximum(input, other)
    return input.max(dim, keepdim, axis=axis, keepdims=keepdims)


def min(input, dim=None, keepdim=False, *, other=None, axis=None, keepdims=None):
    """The smallest element; along dim, (values, indices); min(input, other): the elementwise minimum."""
    if other is not None:
        return minimum(input, other)
    return input.min(dim, keepdim, axis=axis, keepdims=keepdims)


def rand(*size, generator=None, out=None, dtype=None, device=None, requires_grad=False):
    """Uniform numbers in [0, 1) (into out: of out's dtype unless dtype is given)."""
    if out is not None and _fills_out(out, size, dtype):  # out.uniform_(), in out's memory order
        return _fill_out(out, lambda: out.uniform_(generator=generator), "rand", requires_grad)
    if out is not None:
        dtype, device = dtype or out.dtype, device or out.device
    dt = _float_dtype(dtype)
    values = generator_or_default(generator).uniform(_shape_arg(size), _NUMPY_DTYPES[dt.name])
    result = _from_host(values, dt, device, requires_grad)
    return result if out is None else _into(out, result, "rand")


def randn(*size, generator=None, out=None, dtype=None, device=None, requires_grad=False):
    """Standard normal numbers (into out: of out's dtype unless dtype is given)."""
    if out is not None and _fills_out(out, size, dtype):  # out.normal_(), in out's memory order
        return _fill_out(out, lambda: out.normal_(generator=generator), "randn", requires_grad)
    if out is not None:
        dtype, device = dtype or out.dtype, device or out.device
    dt = _float_dtype(dtype)
    values = generator_or_default(generator).normal(_shape_arg(size), _NUMPY_DTYPES[dt.name])
    result = _from_host(values, dt, device, requires_grad)
    return result if out is None else _into(out, result, "randn")


def _fills_out(out, size, dtype):
    """Whether rand/randn(size, out=out) fill `out` where it is, as PyTorch does when out already has
    the size: its numbers then go in out's memory order (a transposed out gets them transposed).
    Otherwise out is resized and filled from a new tensor (_into)."""
    if isinstance(out, Tensor) and dtype is not None and dtype is not out.dtype:
        raise RuntimeError(f"dtype {_DTYPE_WORDS.get(dtype, dtype)} does not match dtype of out parameter "
                           f"({_DTYPE_WORDS.get(out.dtype, out.dtype)}): leave dtype out, or give an out of that dtype")
    return isinstance(out, Tensor) and tuple(out.shape) == tuple(_shape_arg(size)) and out.dtype.is_floating_point


def _fill_out(out, fill, name, requires_grad):
    if grad_mode.enabled and (requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    with no_grad():
        fill()
    return out
