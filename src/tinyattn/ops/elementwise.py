"""Elementwise ops, each forward beside its backward: arithmetic (+, -, *, /, fmod, pow), the unary math
(exp, log, sqrt, tanh, sigmoid, relu, abs, the trigonometric and hyperbolic functions, erf, rounding),
clamp, maximum and minimum, and where.
"""

import math

from .. import backend, dtypes
from .base import Op, shape_of, unbroadcast


# ---------------------------------------------------------------------------------------------
# elementwise arithmetic


class Add(Op):
    """a + b. Backward: the gradient to both, each summed back to its input's shape."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = shape_of(a), shape_of(b)
        return a + b

    @staticmethod
    def backward(ctx, grad):
        a_shape, b_shape = ctx.shapes
        ga = unbroadcast(ctx.xp, grad, a_shape) if ctx.needs_input_grad[0] else None
        gb = unbroadcast(ctx.xp, grad, b_shape) if ctx.needs_input_grad[1] else None
        return ga, gb


class Sub(Op):
    """a - b. Backward: the gradient to a, its negative to b (each unbroadcast)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = shape_of(a), shape_of(b)
        return a - b

    @staticmethod
    def backward(ctx, grad):
        a_shape, b_shape = ctx.shapes
        ga = unbroadcast(ctx.xp, grad, a_shape) if ctx.needs_input_grad[0] else None
        gb = unbroadcast(ctx.xp, -grad, b_shape) if ctx.needs_input_grad[1] else None
        return ga, gb


class Mul(Op):
    """a * b. Backward: grad * b to a, grad * a to b (each unbroadcast); saves only what those need."""

    @staticmethod
    def forward(ctx, a, b):
        # d(ab)/da = b and d(ab)/db = a: keep only what the needed gradients use
        ctx.shapes = shape_of(a), shape_of(b)
        ctx.save_for_backward(b if ctx.needs_input_grad[0] else None, a if ctx.needs_input_grad[1] else None)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        b, a = ctx.saved_tensors
        ga = unbroadcast(ctx.xp, grad * b, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        gb = unbroadcast(ctx.xp, grad * a, ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return ga, gb


class Div(Op):
    """a / b. Backward: grad / b to a, -grad * a / b² to b (each unbroadcast)."""

    @staticmethod
    def forward(ctx, a, b):
        # d(a/b)/da = 1/b needs only b; d(a/b)/db = -a/b^2 needs a too
        ctx.shapes = shape_of(a), shape_of(b)
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
        return a / b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = unbroadcast(ctx.xp, grad / b, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        # -a / b^2 as (a / b) / b, as PyTorch computes it: b * b would underflow to 0 for a tiny b
        gb = unbroadcast(ctx.xp, -grad * (a / b / b), ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return ga, gb


class Fmod(Op):
    """a - trunc(a / b) * b, the remainder with the dividend's sign (C's fmod; `%` is Python's, the
    divisor's sign). d/da = 1; d/db = -trunc(a / b), as PyTorch has it (both are piecewise constant)."""

    @staticmethod
    def forward(ctx, a, b):
        # (bools and an integer divisor of 0 are refused before, by Tensor.fmod, as for // and %)
        ctx.shapes = shape_of(a), shape_of(b)
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[1] else None)
        return backend.fmod(ctx.xp, a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = unbroadcast(ctx.xp, grad, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        gb = unbroadcast(ctx.xp, -grad * ctx.xp.trunc(a / b), ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return ga, gb


def _is_integer(x):
    """An integer (or bool) array or Python number."""
    return not backend.is_float(x) if hasattr(x, "dtype") else not isinstance(x, float)


def power(a, b):
    """a ** b, with PyTorch's two special cases of a float tensor to a number: a * a * a for b == 3 and
    1 / (a * a) for b == -2, each rounded twice where pow() rounds once (so a last bit can differ)."""
    if not hasattr(b, "shape") and hasattr(a, "shape") and backend.is_float(a):
        if b == 3:
            return a * a * a
        if b == -2:
            return 1 / (a * a)
    return a**b


def integer_power(xp, a, b):
    """a ** b in integers with negative exponents in the tensor b, as PyTorch computes it: 1 ** -n is 1,
    (-1) ** -n is 1 or -1, anything else to a negative power rounds to 0 (NumPy would raise)."""
    if not hasattr(a, "shape"):  # a number base (2 ** t): as an array, for the comparisons below
        a = xp.full(b.shape, a, dtype=b.dtype, **backend.creation_kwargs(xp))
    negative = b < 0
    y = a ** xp.where(negative, 0, b)
    minus_one_to_b = 1 - 2 * xp.astype((b % 2) != 0, y.dtype)
    return xp.where(negative, xp.where(a == 1, 1, xp.where(a == -1, minus_one_to_b, 0)), y)


def _is_bool(x):
    return backend.dtype_of(x) is dtypes.bool_ if hasattr(x, "dtype") else isinstance(x, bool)


def _is_zero(value):
    return not hasattr(value, "shape") and value == 0


class Pow(Op):
    """a ** b for a tensor base or exponent (or both)."""

    @staticmethod
    def forward(ctx, a, b):
        if _is_integer(a) and _is_integer(b) and not hasattr(b, "shape") and b < 0:  # PyTorch raises too
            raise ValueError("integers to negative integer powers are not allowed: use a float base, "
                             "e.g. x.float() ** -1")
        if _is_integer(a) and _is_integer(b) and hasattr(b, "shape") and bool(ctx.xp.any(b < 0)):
            y = integer_power(ctx.xp, a, b)
        elif _is_bool(a) and _is_bool(b):  # PyTorch: a bool tensor to a bool number stays bool
            if hasattr(b, "shape"):
                raise TypeError("pow is not defined for a bool tensor exponent with a bool base: convert one "
                                "with .long() first")
            y = ctx.xp.astype(a**b, ctx.xp.bool)  # NumPy would give int8
        else:
            y = power(a, b)
        # as PyTorch: the base and exponent; the result only for the exponent's gradient (a ** 3 then
        # y.add_(1) is fine, the base changed in place is not)
        ctx.save_for_backward(a, b, y if ctx.needs_input_grad[1] else None)
        return y

    @staticmethod
    def backward(ctx, grad):
        a, b, y = ctx.saved_tensors
        xp = ctx.xp
        ga = gb = None
        if ctx.needs_input_grad[0]:
            # d(a^b)/da = b a^(b-1), taken as 0 where b == 0, as PyTorch does (0 * 0^-1 would be NaN)
            if _is_zero(b):
                ga = grad * 0
            else:
                ga = grad * (b * power(a, b - 1))  # PyTorch's order of the products, for its bits
                if hasattr(b, "shape"):
                    ga = xp.where(b == 0, 0, ga)
            ga = unbroadcast(xp, ga, shape_of(a))
        if ctx.needs_input_grad[1]:
            # d(a^b)/db = a^b log a, taken as 0 where a == 0 and b >= 0 (PyTorch's rule: the limit
            # for b > 0); a negative base gives NaN, as in PyTorch
            if hasattr(a, "shape"):
                gb = grad * xp.where((a == 0) & (b >= 0), 0, y * xp.log(a))
            else:
                log_a = math.log(a) if a > 0 else -math.inf if a == 0 else math.nan
                gb = grad * (xp.where(b >= 0, 0, y * log_a) if a == 0 else y * log_a)
            gb = unbroadcast(xp, gb, shape_of(b))
        return ga, gb


class Neg(Op):
    """-x. Backward: -grad."""

    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Exp(Op):
    """exp(x). Backward: grad * exp(x), from the saved output."""

    @staticmethod
    def forward(ctx, x):
        y = backend.on_threads(ctx.xp.exp, x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


class Log(Op):
    """log(x). Backward: grad / x."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.log(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / x


class Sqrt(Op):
    """sqrt(x). Backward: grad / (2 sqrt(x)), from the saved output."""

    @staticmethod
    def forward(ctx, x):
        y = ctx.xp.sqrt(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad / (2 * y)


class Tanh(Op):
    """tanh(x). Backward: grad * (1 - tanh(x)²), from the saved output."""

    @staticmethod
    def forward(ctx, x):
        y = backend.on_threads(ctx.xp.tanh, x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (1 - y * y)


def stable_sigmoid(xp, x):
    # 1 / (1 + e^-x), with e^-|x| <= 1 so that nothing overflows: for x < 0 it is e^x / (1 + e^x),
    # which keeps tiny results accurate (0.5 * (tanh(x/2) + 1) loses them to cancellation)
    """1 / (1 + exp(-x)) without overflow: exp(x) / (1 + exp(x)) for negative x."""
    e = xp.exp(-xp.abs(x))
    total = 1 + e  # (once, for both branches)
    return xp.where(x >= 0, 1 / total, e / total)


class Sigmoid(Op):
    """sigmoid(x). Backward: grad * s * (1 - s), with s the saved output."""

    @staticmethod
    def forward(ctx, x):
        y = stable_sigmoid(ctx.xp, x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * (1 - y)


class Relu(Op):
    """max(x, 0) as PyTorch computes it: NaN stays NaN (and passes its gradient), -0.0 stays -0.0."""

    @staticmethod
    def forward(ctx, x):
        y = ctx.xp.where(x < 0, 0, x)
        ctx.save_for_backward(y)  # the output, as PyTorch's (y <= 0 exactly where x <= 0)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return ctx.xp.where(y <= 0, 0, grad)  # where the gradient stops


class Abs(Op):
    """|x|. Backward: grad * sign(x) (0 at x = 0)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.abs(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        xp = ctx.xp
        return xp.where(xp.isnan(x), 0.0, grad * xp.sign(x))  # PyTorch's sign of NaN is 0


class Clamp(Op):
    """min(max(x, low), high), each bound a number, an array (broadcast) or None; NaN wherever x or a
    bound is NaN. PyTorch's gradients: to x where low <= x <= high, to an array bound where it
    replaced x (none at NaN); where high < low the result is high, and so is the gradient's place."""

    @staticmethod
    def forward(ctx, x, low, high):
        xp = ctx.xp
        # PyTorch's names: ClampBackward1 for number bounds, ClampBackward0 for tensor bounds
        ctx.name_hint = "ClampBackward0" if hasattr(low, "shape") or hasattr(high, "shape") else "ClampBackward1"
        y = x if low is None else xp.maximum(x, low)
        y = y if high is None else xp.minimum(y, high)
        ctx.save_for_backward(x, low, high)  # as PyTorch: the input (and tensor bounds), not the output
        return y

    @staticmethod
    def backward(ctx, grad):
        x, low, high = ctx.saved_tensors
        xp = ctx.xp
        inside = x >= low if low is not None else True  # (a bound broadcasts x: not in place)
        if high is not None:
            inside = inside & (x <= high)
        gx = unbroadcast(xp, xp.where(inside, grad, 0), x.shape)
        glow = ghigh = None
        if ctx.needs_input_grad[1]:
            raised = x < low if high is None else (x < low) & (low < high)
            glow = unbroadcast(xp, xp.where(raised, grad, 0), shape_of(low))
        if ctx.needs_input_grad[2]:
            lowered = x > high if low is None else (x > high) | (high < low)
            ghigh = unbroadcast(xp, xp.where(lowered, grad, 0), shape_of(high))
        return gx, glow, ghigh


def tie_shares(xp, grad, a, b, a_loses, b_loses):
    """The gradients of max(a, b) (or min): all to the winner, half each at a tie, and, as in PyTorch,
    all to both where a NaN makes neither win (the result is NaN there)."""
    half = xp.where(a == b, grad * 0.5, grad)
    return xp.where(a_loses, 0.0, half), xp.where(b_loses, 0.0, half)


class Maximum(Op):
    """Elementwise max of two tensors; at ties the gradient is split in half, like PyTorch."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return ctx.xp.maximum(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        xp = ctx.xp
        ga, gb = tie_shares(xp, grad, a, b, a < b, a > b)
        ga = unbroadcast(xp, ga, shape_of(a)) if ctx.needs_input_grad[0] else None
        gb = unbroadcast(xp, gb, shape_of(b)) if ctx.needs_input_grad[1] else None
        return ga, gb


class Minimum(Op):
    """The smaller of a and b. Backward: the gradient to the smaller one, shared half and half on ties."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return ctx.xp.minimum(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        xp = ctx.xp
        ga, gb = tie_shares(xp, grad, a, b, a > b, a < b)
        ga = unbroadcast(xp, ga, shape_of(a)) if ctx.needs_input_grad[0] else None
        gb = unbroadcast(xp, gb, shape_of(b)) if ctx.needs_input_grad[1] else None
        return ga, gb


# ---------------------------------------------------------------------------------------------
# where: a choice by a condition


class Where(Op):
    """a where the condition holds, b elsewhere. Backward: the gradient split by the condition."""

    @staticmethod
    def forward(ctx, condition, a, b):
        ctx.save_for_backward(condition)
        ctx.shapes = shape_of(a), shape_of(b)
        return ctx.xp.where(condition, a, b)

    @staticmethod
    def backward(ctx, grad):
        (condition,) = ctx.saved_tensors
        xp = ctx.xp
        ga = unbroadcast(xp, xp.where(condition, grad, 0), ctx.shapes[0]) if ctx.needs_input_grad[1] else None
        gb = unbroadcast(xp, xp.where(condition, 0, grad), ctx.shapes[1]) if ctx.needs_input_grad[2] else None
        return None, ga, gb


# ---------------------------------------------------------------------------------------------
# more elementwise math: trigonometry, logarithms and exponentials in other bases, erf


class Sin(Op):
    """sin(x). Backward: grad * cos(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.xp.cos(x)


class Cos(Op):
    """cos(x). Backward: -grad * sin(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.cos(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad * ctx.xp.sin(x)


class Rsqrt(Op):
    """1 / sqrt(x); d/dx x^(-1/2) = -x^(-3/2) / 2 = -y^3 / 2."""

    @staticmethod
    def forward(ctx, x):
        y = 1 / ctx.xp.sqrt(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (-0.5 * y * y * y)


class Reciprocal(Op):
    """1 / x. Backward: -grad / x², from the saved output."""

    @staticmethod
    def forward(ctx, x):
        y = 1 / x
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return -grad * y * y


class Log1P(Op):
    """log(1 + x), accurate for tiny x (where 1 + x would round to 1); PyTorch's name is Log1PBackward0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.log1p(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (1 + x)


class Expm1(Op):
    """exp(x) - 1, accurate for tiny x."""

    @staticmethod
    def forward(ctx, x):
        ctx.name_hint = "Expm1Backward0"  # spelled out: a name ending in a digit is taken whole
        y = ctx.xp.expm1(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y + 1)


class Log2(Op):
    """log2(x). Backward: grad / (x ln 2)."""

    @staticmethod
    def forward(ctx, x):
        ctx.name_hint = "Log2Backward0"
        ctx.save_for_backward(x)
        return ctx.xp.log2(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (x * math.log(2))


class Log10(Op):
    """log10(x). Backward: grad / (x ln 10)."""

    @staticmethod
    def forward(ctx, x):
        ctx.name_hint = "Log10Backward0"
        ctx.save_for_backward(x)
        return ctx.xp.log10(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (x * math.log(10))


class Exp2(Op):
    """2 ** x. Backward: grad * 2 ** x * ln 2, from the saved output."""

    @staticmethod
    def forward(ctx, x):
        ctx.name_hint = "Exp2Backward0"
        y = 2.0**x
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * math.log(2)


class Erf(Op):
    """The error function; d/dx erf(x) = 2/sqrt(pi) exp(-x^2)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return backend.erf(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (2 / math.sqrt(math.pi)) * ctx.xp.exp(-(x * x))


class StepFunction(Op):
    """An op that is flat wherever it is differentiable (sign, floor, ...): its gradient is 0, as in
    PyTorch (not undefined: a loss through round() trains nothing, silently)."""

    @staticmethod
    def backward(ctx, grad):
        return ctx.xp.zeros_like(grad)


class Sign(StepFunction):
    """-1, 0 or 1 by the sign of x (0 at NaN, as in PyTorch). Backward: 0."""

    @staticmethod
    def forward(ctx, x):
        # (x > 0) - (x < 0): PyTorch's sign, which is 0 at NaN (NumPy's sign gives NaN there)
        return ctx.xp.astype(x > 0, x.dtype) - ctx.xp.astype(x < 0, x.dtype)


class Floor(StepFunction):
    """x rounded down. Backward: 0."""

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.floor(x)


class Ceil(StepFunction):
    """x rounded up. Backward: 0."""

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.ceil(x)


class Trunc(StepFunction):
    """x rounded toward zero. Backward: 0."""

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.trunc(x)


class Round(StepFunction):
    """Round half to even, as PyTorch (and NumPy) do; with `decimals`, as PyTorch computes it: x scaled
    by 10**decimals (divided by 10**-decimals when decimals < 0), rounded, scaled back."""

    @staticmethod
    def forward(ctx, x, decimals):
        xp = ctx.xp
        if decimals == 0:
            return xp.round(x)
        ctx.name_hint = "RoundBackward1"  # PyTorch's overload with decimals
        if decimals > 0:
            scale = 10.0**decimals
            return xp.round(x * scale) / scale
        scale = 10.0**-decimals
        return xp.round(x / scale) * scale

    @staticmethod
    def backward(ctx, grad):
        return ctx.xp.zeros_like(grad), None


# ---------------------------------------------------------------------------------------------
# elementwise: inverse trigonometry and the hyperbolic functions


class Asin(Op):
    """arcsin x; d/dx = 1 / sqrt(1 - x^2) (infinite at x = +-1, NaN outside [-1, 1], as in PyTorch)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.asin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / ctx.xp.sqrt(1 - x * x)


class Acos(Op):
    """arccos x; d/dx = -1 / sqrt(1 - x^2)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.acos(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad / ctx.xp.sqrt(1 - x * x)


class Atan(Op):
    """arctan x; d/dx = 1 / (1 + x^2)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.atan(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (1 + x * x)


class Atan2(Op):
    """The angle of the point (x, y), atan2(y, x), in (-pi, pi]; d/dy = x / r^2, d/dx = -y / r^2
    with r^2 = x^2 + y^2 (y and x broadcast). At the origin, where the angle has no derivative, the
    gradients are 0, as PyTorch makes them (1 / r^2 taken as 0 where it is infinite)."""

    @staticmethod
    def forward(ctx, y, x):
        ctx.save_for_backward(y, x)
        return ctx.xp.atan2(y, x)

    @staticmethod
    def backward(ctx, grad):
        y, x = ctx.saved_tensors
        xp = ctx.xp
        reciprocal = 1 / (x * x + y * y)
        reciprocal = xp.where(xp.isinf(reciprocal), 0, reciprocal)
        return unbroadcast(xp, grad * x * reciprocal, y.shape), unbroadcast(xp, grad * -y * reciprocal, x.shape)


class Sinh(Op):
    """sinh x; d/dx = cosh x. (NumPy's sinh, not (e^x - e^-x) / 2, which loses the digits of a small x.)"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.sinh(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.xp.cosh(x)


class Cosh(Op):
    """cosh x; d/dx = sinh x."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.cosh(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.xp.sinh(x)
