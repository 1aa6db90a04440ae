"""Tensor methods: arithmetic with PyTorch's type promotion (operators, in place too), comparisons and
logic, and elementwise math. Each differentiable one runs an op of tinyattn.ops.elementwise.
"""

import numpy as np

from .. import backend, dtypes, numpy_names, ops, tensor_core
from ..errors import ShapeError
from ..tensor_core import TensorCore
from .arguments import _check_not_bool, _dims_or_none, _floating, _scalar
from .promotion import (_binary, _bitwise, _check_bitwise, _check_integer_divisor, _check_no_bool_negation,
                        _check_no_bool_subtraction, _floor_divide, _inplace_operand, _no_grad_binary,
                        _promoted_arrays, _remainder, result_dtype)
from .creation import tensor
from .indexing import _where


# torch.* functions that are Tensor methods too (x.asin() is tinyattn.asin(x)): the class below
# binds them, so each is written once

def asin(input):
    """arcsin, elementwise (NaN outside [-1, 1])."""
    return ops.Asin.apply(_floating(input))


def acos(input):
    """arccos, elementwise (NaN outside [-1, 1])."""
    return ops.Acos.apply(_floating(input))


def atan(input):
    """arctan, elementwise."""
    return ops.Atan.apply(_floating(input))


def atan2(input, other):
    """The angle of the point (other, input), elementwise: atan2(y, x) in (-pi, pi]; broadcasts."""
    y, x = _same_float_operands(input, other, "atan2")
    try:
        np.broadcast_shapes(tuple(y.shape), tuple(x.shape))
    except ValueError:
        raise ShapeError(f"atan2: shapes {list(y.shape)} and {list(x.shape)} cannot be broadcast together (each "
                         "dim, aligned from the right, must be equal or 1)") from None
    return ops.Atan2.apply(y, x)


def sinh(input):
    """The hyperbolic sine, elementwise."""
    return ops.Sinh.apply(_floating(input))


def cosh(input):
    """The hyperbolic cosine, elementwise."""
    return ops.Cosh.apply(_floating(input))


arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2  # NumPy's names, which PyTorch has too


def sin_(input):
    """sin in place."""
    return input._inplace_floating(ops.Sin, "sin_")


def lerp(input, end, weight):
    """The linear interpolation from input to end by weight (a number or a tensor), computed as
    PyTorch does: input + weight * (end - input) where |weight| < 0.5, else end - (end - input) *
    (1 - weight), which lands exactly on end at weight 1."""
    if not isinstance(end, TensorCore) or end.dtype is not input.dtype:
        raise TypeError(f"lerp: expected end of input's dtype {input.dtype}, got "
                        f"{end.dtype if isinstance(end, TensorCore) else type(end).__name__}: convert it with .to()")
    if not input.dtype.is_floating_point:
        raise TypeError(f"lerp needs floating point tensors, got {input.dtype}")
    if isinstance(weight, TensorCore):
        near_start = weight.abs() < 0.5
        return _where(near_start, input + weight * (end - input), end - (end - input) * (1 - weight))
    if abs(weight) < 0.5:
        return input + weight * (end - input)
    return end - (end - input) * (1 - weight)


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2."""
    return input + value * tensor1 * tensor2


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (for floating point tensors; PyTorch refuses integer division here)."""
    if not (tensor1.dtype.is_floating_point or tensor2.dtype.is_floating_point):
        raise TypeError("addcdiv of two integer tensors: PyTorch refuses it too; convert them with .float(), "
                        "or use (tensor1 // tensor2) for integer division")
    return input + value * tensor1 / tensor2


def addcmul_(input, tensor1, tensor2, *, value=1):
    """addcmul in place (optimizers' `exp_avg_sq.addcmul_(grad, grad, value=1 - beta2)`)."""
    return input.add_(value * tensor1 * tensor2)


def addcdiv_(input, tensor1, tensor2, *, value=1):
    """addcdiv in place (optimizers' `param.addcdiv_(exp_avg, denom, value=-lr)`)."""
    return input.add_(addcdiv(input.new_zeros(()), tensor1, tensor2, value=value))


def _same_float_operands(a, b, name):
    """Two operands as tensors of one floating dtype (PyTorch's promotion; integers become float32)."""
    if not isinstance(a, TensorCore) and not isinstance(b, TensorCore):
        raise TypeError(f"{name} needs at least one tensor, got {type(a).__name__} and {type(b).__name__}")
    like = a if isinstance(a, TensorCore) else b
    dtype = result_dtype(a, b)  # PyTorch's promotion (a 0-d tensor or a number does not widen a tensor)
    if not dtype.is_floating_point:
        dtype = dtypes.default_float
    a = a if isinstance(a, TensorCore) else tensor(a, device=like.device)
    b = b if isinstance(b, TensorCore) else tensor(b, device=like.device)
    return a.to(dtype), b.to(dtype)


def logical_and(input, other):
    """True where both are nonzero."""
    return (input != 0) & (other != 0)


def logical_or(input, other):
    """True where either is nonzero."""
    return (input != 0) | (other != 0)


def logical_xor(input, other):
    """True where exactly one is nonzero."""
    return (input != 0) ^ (other != 0)


def bitwise_xor(input, other):
    """Bitwise exclusive or of integer or bool tensors (input ^ other)."""
    return input ^ other


def multiply(input, other):
    """PyTorch's alias of mul."""
    return input * other


def true_divide_(input, other):
    """In place: input /= other (input must be of a floating dtype to hold the quotient)."""
    return input.div_(other)


class ElementwiseMethods:
    """The elementwise methods of tinyattn.Tensor: arithmetic, comparisons, math."""

    __slots__ = ()  # a mixin of Tensor, which keeps its numbers in TensorCore's slots

    # --- arithmetic (differentiable, with PyTorch's type promotion) ---

    def __add__(self, other):
        return _binary(ops.Add, self, other)

    def __radd__(self, other):  # 1 + x is x.add(1) in PyTorch: the tensor is the op's first input
        return _binary(ops.Add, self, other)

    def __sub__(self, other):  # _promote refuses a bool operand, as PyTorch does
        return _binary(ops.Sub, self, other)

    def __rsub__(self, other):
        return _binary(ops.Sub, other, self)

    def __mul__(self, other):
        """self * other, elementwise, with broadcasting."""
        return _binary(ops.Mul, self, other)

    def __rmul__(self, other):  # 2 * x is x.mul(2): grad_fn.next_functions lists x first, as in PyTorch
        return _binary(ops.Mul, self, other)

    def __truediv__(self, other):
        return _binary(ops.Div, self, other)

    def __rtruediv__(self, other):
        return _binary(ops.Div, other, self)

    def __pow__(self, other):
        """self ** other, elementwise, with broadcasting."""
        return _binary(ops.Pow, self, other)

    def __rpow__(self, other):
        return _binary(ops.Pow, other, self)


    def __neg__(self):
        _check_no_bool_negation(self)
        return ops.Neg.apply(self)

    def __pos__(self):
        _check_not_bool(self, "the `+` operator")
        return self

    def __abs__(self):
        return self.abs()

    def add(self, other, *, alpha=1):
        """self + alpha * other, elementwise, with broadcasting."""
        return self + (other if alpha == 1 else other * alpha)

    def sub(self, other, *, alpha=1):
        """self - alpha * other, elementwise, with broadcasting."""
        return self - (other if alpha == 1 else other * alpha)

    mul = __mul__
    pow = __pow__

    def div(self, other, *, rounding_mode=None):
        """self / other; rounding_mode "trunc" rounds the quotient toward zero, "floor" down."""
        if rounding_mode is None:
            return self / other
        if rounding_mode == "floor":
            return self // other
        if rounding_mode == "trunc":
            if result_dtype(self, other).is_floating_point:
                return (self / other).trunc()
            quotient = self.abs() // (other.abs() if isinstance(other, TensorCore) else abs(other))
            return quotient * (self.sign() * (other.sign() if isinstance(other, TensorCore) else (other > 0) - (other < 0)))
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"{rounding_mode!r}")

    def __floordiv__(self, other):
        return _no_grad_binary(_floor_divide, self, other)

    def __rfloordiv__(self, other):
        return _no_grad_binary(_floor_divide, other, self)

    def fmod(self, other):
        """The remainder of self / other truncated toward zero (C's fmod: the sign of self); differentiable.
        `%` is Python's remainder instead (the sign of other)."""
        if not self.dtype.is_floating_point and not (isinstance(other, TensorCore) and other.dtype.is_floating_point)\
                and not isinstance(other, float):
            _check_integer_divisor(*_promoted_arrays(self, other), "fmod")
        return _binary(ops.Fmod, self, other)

    def __mod__(self, other):
        return _no_grad_binary(_remainder, self, other)

    def __rmod__(self, other):
        return _no_grad_binary(_remainder, other, self)

    # in-place arithmetic: `x += y` changes x's memory, like PyTorch
    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __ipow__(self, other):
        return self.pow_(other)

    # without these, Python would run `x = x // y`: a new tensor, and x's other names would not see it
    def __ifloordiv__(self, other):
        return self._inplace_no_grad(type(self).__floordiv__, other)

    def __imod__(self, other):
        return self._inplace_no_grad(type(self).__mod__, other)

    def __iand__(self, other):
        return self._inplace_no_grad(type(self).__and__, other)

    def __ior__(self, other):
        return self._inplace_no_grad(type(self).__or__, other)

    def __ixor__(self, other):
        return self._inplace_no_grad(type(self).__xor__, other)

    def add_(self, other, alpha=1):
        """In place: self += alpha * other."""
        return self._inplace(ops.Add, _inplace_operand(self, other if alpha == 1 else other * alpha))

    def sub_(self, other, alpha=1):
        """In place: self -= alpha * other."""
        _check_no_bool_subtraction(self, other)
        return self._inplace(ops.Sub, _inplace_operand(self, other if alpha == 1 else other * alpha))

    def mul_(self, other):
        """In place: self *= other."""
        return self._inplace(ops.Mul, _inplace_operand(self, other))

    def div_(self, other):
        """In place: self /= other."""
        return self._inplace(ops.Div, _inplace_operand(self, other))

    def pow_(self, other):
        """In place: self **= other."""
        return self._inplace(ops.Pow, _inplace_operand(self, other))

    # --- comparisons and logic (no gradient) ---

    def __eq__(self, other):
        """Elementwise self == other: a bool tensor (with broadcasting)."""
        return _no_grad_binary(lambda a, b: a == b, self, other)

    def __ne__(self, other):
        """Elementwise self != other: a bool tensor (with broadcasting)."""
        return _no_grad_binary(lambda a, b: a != b, self, other)

    def __lt__(self, other):
        """Elementwise self < other: a bool tensor (with broadcasting)."""
        return _no_grad_binary(lambda a, b: a < b, self, other)

    def __le__(self, other):
        """Elementwise self <= other: a bool tensor (with broadcasting)."""
        return _no_grad_binary(lambda a, b: a <= b, self, other)

    def __gt__(self, other):
        """Elementwise self > other: a bool tensor (with broadcasting)."""
        return _no_grad_binary(lambda a, b: a > b, self, other)

    def __ge__(self, other):
        """Elementwise self >= other: a bool tensor (with broadcasting)."""
        return _no_grad_binary(lambda a, b: a >= b, self, other)

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__

    def __and__(self, other):
        return _no_grad_binary(_bitwise(lambda a, b: a & b, "&"), self, other)

    def __or__(self, other):
        return _no_grad_binary(_bitwise(lambda a, b: a | b, "|"), self, other)

    def __xor__(self, other):
        return _no_grad_binary(_bitwise(lambda a, b: a ^ b, "^"), self, other)

    def __invert__(self):
        xp = backend.namespace(self.array)
        _check_bitwise("~", self.array)
        return tensor_core.wrap(xp.logical_not(self.array) if self.dtype is dtypes.bool_ else ~self.array)

    def logical_not(self):
        """Elementwise NOT: True where the element is zero (False)."""
        return tensor_core.wrap(backend.namespace(self.array).logical_not(self.array))

    def isnan(self):
        """Elementwise: whether the element is NaN."""
        return tensor_core.wrap(backend.namespace(self.array).isnan(self.array))

    def isinf(self):
        """Elementwise: whether the element is +inf or -inf."""
        return tensor_core.wrap(backend.namespace(self.array).isinf(self.array))

    def isfinite(self):
        """Elementwise: whether the element is neither infinite nor NaN."""
        return tensor_core.wrap(backend.namespace(self.array).isfinite(self.array))

    def any(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Whether any element is true (nonzero), over all elements or along `dim`."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("any", dim, keepdim, axis, keepdims)
        xp = backend.namespace(self.array)
        return tensor_core.wrap(xp.any(self.array, axis=_dims_or_none(dim, self.ndim), keepdims=keepdim))

    def all(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Whether every element is true (nonzero), over all elements or along `dim`."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("all", dim, keepdim, axis, keepdims)
        xp = backend.namespace(self.array)
        return tensor_core.wrap(xp.all(self.array, axis=_dims_or_none(dim, self.ndim), keepdims=keepdim))

    def equal(self, other):
        """Whether the two tensors have the same shape and the same elements: a Python bool."""
        return self.shape == other.shape and bool((self == other).all())

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Whether every element is close to other's: |self - other| <= atol + rtol * |other|."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all())

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Elementwise: whether |self - other| <= atol + rtol * |other|."""
        if isinstance(other, TensorCore) and other.dtype is not self.dtype:  # PyTorch refuses to compare across dtypes
            raise TypeError(f"isclose and allclose compare tensors of one dtype, got {self.dtype} and {other.dtype}: "
                            "convert one first, e.g. x.isclose(y.to(x.dtype))")
        a, b = _promoted_arrays(self, other)
        xp = backend.namespace(a)
        if not backend.is_float(a):  # integers and bools: the difference exact, the tolerance in float64
            error = xp.astype(a != b if backend.dtype_of(a) is dtypes.bool_ else xp.abs(a - b), xp.float64)
            size = xp.abs(xp.astype(b, xp.float64)) if hasattr(b, "dtype") else abs(float(b))
            return tensor_core.wrap((a == b) | (error <= atol + rtol * size))
        # PyTorch's rule: equal, or a finite difference within the tolerance. So an infinity is close
        # only to the same infinity (inf - inf is nan and |1 - inf| <= inf would hold).
        finite = xp.isfinite(a) & xp.isfinite(b)
        a0, b0 = xp.where(finite, a, 0), xp.where(finite, b, 0)  # no inf - inf (and its warning)
        error = xp.abs(a0 - b0)
        close = (a == b) | (finite & xp.isfinite(error) & (error <= atol + rtol * xp.abs(b0)))
        if equal_nan:
            close = close | (xp.isnan(a) & xp.isnan(b))
        return tensor_core.wrap(close)

    # --- elementwise math ---

    def exp(self):
        """e to the power of each element."""
        return ops.Exp.apply(_floating(self))

    def log(self):
        """The natural logarithm of each element."""
        return ops.Log.apply(_floating(self))

    def sqrt(self):
        """The square root of each element."""
        return ops.Sqrt.apply(_floating(self))

    def rsqrt(self):
        """1 / sqrt(x) for each element."""
        return ops.Rsqrt.apply(_floating(self))

    def tanh(self):
        """The hyperbolic tangent of each element."""
        return ops.Tanh.apply(_floating(self))

    def sigmoid(self):
        """1 / (1 + exp(-x)) for each element, computed stably."""
        return ops.Sigmoid.apply(_floating(self))

    def relu(self):
        """max(x, 0) for each element."""
        _check_not_bool(self, "relu")
        return ops.Relu.apply(self)

    def relu_(self):
        """In place: negative elements set to 0."""
        _check_not_bool(self, "relu_")
        return self._inplace(ops.Relu)

    # in place: the out-of-place op's result written back into this tensor's memory
    def exp_(self):
        """In place: each element replaced by e to its power."""
        return self._inplace_floating(ops.Exp, "exp_")

    def log_(self):
        """In place: each element replaced by its natural logarithm."""
        return self._inplace_floating(ops.Log, "log_")

    def sqrt_(self):
        """In place: each element replaced by its square root."""
        return self._inplace_floating(ops.Sqrt, "sqrt_")

    def tanh_(self):
        """In place: each element replaced by its hyperbolic tangent."""
        return self._inplace_floating(ops.Tanh, "tanh_")

    def sigmoid_(self):
        """In place: each element replaced by its sigmoid."""
        return self._inplace_floating(ops.Sigmoid, "sigmoid_")

    def neg_(self):
        """In place: each element negated."""
        _check_no_bool_negation(self)
        return self._inplace(ops.Neg)

    def abs_(self):
        """In place: each element replaced by its absolute value."""
        _check_not_bool(self, "abs_")
        return self._inplace(ops.Abs)

    def _inplace_floating(self, function, name):
        if not self.dtype.is_floating_point:  # the float result could not be written into integers
            raise TypeError(f"{name} needs a floating point tensor, got {self.dtype}: use the out-of-place "
                            f"x = x.{name[:-1]}(), which gives float32")
        return self._inplace(function)

    def abs(self):
        """The absolute value of each element."""
        _check_not_bool(self, "abs")
        return ops.Abs.apply(self)

    def clamp(self, min=None, max=None):
        """Each element limited to [min, max] (either bound may be None); gradient 0 outside."""
        dtype, low, high = self._clamp_bounds(min, max)
        return ops.Clamp.apply(self.to(dtype), low, high)  # int.clamp(min=1.5) is float32, as in PyTorch

    def clamp_(self, min=None, max=None):
        """In place: each element limited to [min, max]."""
        dtype, low, high = self._clamp_bounds(min, max)
        if dtype is not self.dtype:
            raise TypeError(f"clamp_ of a {self.dtype} tensor with {dtype} bounds would change its dtype: use "
                            "the out-of-place x = x.clamp(...)")
        return self._inplace(ops.Clamp, low, high)

    def _clamp_bounds(self, min, max):
        """The result dtype and the bounds as Clamp takes them: numbers, or tensors for elementwise bounds."""
        if min is None and max is None:
            raise ValueError("clamp needs at least one of min and max")
        bounds = [b for b in (min, max) if b is not None]
        dtype = result_dtype(self, *bounds)
        if dtype is dtypes.bool_ and not all(isinstance(b, TensorCore) for b in bounds):
            raise TypeError("clamp of a bool tensor with bool bounds is not defined: convert with .long() first")
        shapes = [tuple(b.shape) for b in bounds if isinstance(b, TensorCore)]
        if shapes and ops.broadcast_shape(self.shape, *shapes) is None:
            raise ShapeError(f"clamp: the bounds' shapes {shapes} and the tensor's {list(self.shape)} cannot be "
                             "broadcast together")
        if any(isinstance(b, TensorCore) and (b.ndim or b.requires_grad) for b in bounds):
            return (dtype, *(b.to(dtype) if isinstance(b, TensorCore) else b for b in (min, max)))
        return dtype, _scalar(min, "clamp bound"), _scalar(max, "clamp bound")

    clip, clip_ = clamp, clamp_

    def maximum(self, other):
        """The larger of the two, elementwise (the gradient is shared on ties)."""
        return _binary(ops.Maximum, self, other)

    def minimum(self, other):
        """The smaller of the two, elementwise (the gradient is shared on ties)."""
        return _binary(ops.Minimum, self, other)

    # --- more elementwise math (integers become float32 first, as in PyTorch) ---

    def sin(self):
        """The sine of each element."""
        return ops.Sin.apply(_floating(self))

    def cos(self):
        """The cosine of each element."""
        return ops.Cos.apply(_floating(self))

    def log1p(self):
        """log(1 + x) for each element, exact for small x."""
        return ops.Log1P.apply(_floating(self))

    def expm1(self):
        """exp(x) - 1 for each element, exact for small x."""
        return ops.Expm1.apply(_floating(self))

    def log2(self):
        """The base-2 logarithm of each element."""
        return ops.Log2.apply(_floating(self))

    def log10(self):
        """The base-10 logarithm of each element."""
        return ops.Log10.apply(_floating(self))

    def exp2(self):
        """2 to the power of each element."""
        return ops.Exp2.apply(_floating(self))

    def reciprocal(self):
        """1 / x for each element."""
        return ops.Reciprocal.apply(_floating(self))

    def erf(self):
        """The error function of each element."""
        return ops.Erf.apply(_floating(self))

    def neg(self):
        """-x for each element."""
        return -self

    negative = neg

    def square(self):
        """x * x for each element."""
        return self**2  # PyTorch's square is pow(x, 2) too (PowBackward0); integers stay integers

    def sign(self):
        """-1, 0 or 1 by the sign of each element (gradient 0)."""
        if self.dtype is dtypes.bool_:  # True and False are their own signs
            return self.clone()
        return ops.Sign.apply(self)

    sgn = sign  # the same for real numbers

    def floor(self):
        """Each element rounded down to an integer value (gradient 0)."""
        _check_not_bool(self, "floor")
        return ops.Floor.apply(self)

    def ceil(self):
        """Each element rounded up to an integer value (gradient 0)."""
        _check_not_bool(self, "ceil")
        return ops.Ceil.apply(self)

    def trunc(self):
        """Each element rounded toward zero (gradient 0)."""
        _check_not_bool(self, "trunc")
        return ops.Trunc.apply(self)

    fix = trunc

    def round(self, *, decimals=0):
        """Each element rounded to `decimals` places, halves to even (gradient 0)."""
        _check_not_bool(self, "round")
        if decimals != 0 and not self.dtype.is_floating_point:
            raise TypeError(f"round with decimals needs a floating point tensor, got {self.dtype}: use .float()")
        return ops.Round.apply(self, decimals)

    def clamp_min(self, min):
        """Each element limited to at least `min`."""
        return self.clamp(min=min)

    def clamp_max(self, max):
        """Each element limited to at most `max`."""
        return self.clamp(max=max)

    # the torch.* functions above, as methods
    asin = asin
    acos = acos
    atan = atan
    atan2 = atan2
    arcsin = arcsin
    arccos = arccos
    arctan = arctan
    arctan2 = arctan2
    sinh = sinh
    cosh = cosh
    sin_ = sin_
    lerp = lerp
    addcmul = addcmul
    addcdiv = addcdiv
    addcmul_ = addcmul_
    addcdiv_ = addcdiv_
    logical_and = logical_and
    logical_or = logical_or
    logical_xor = logical_xor
    bitwise_xor = bitwise_xor
    multiply = multiply
    true_divide_ = true_divide_

    def true_divide(self, other):
        """self / other, always a true division (an integer tensor gives floats): div without rounding_mode."""
        return self.div(other)
