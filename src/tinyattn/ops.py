"""Every differentiable primitive: its forward and its backward, side by side, on raw arrays.

Each op is a `Function` with `takes_arrays = True`: `forward(ctx, ...)` receives NumPy/CuPy arrays
(and plain Python values such as `dim`), returns an array, and saves what the backward needs;
`backward(ctx, grad)` receives the gradient of the output and returns one gradient per forward
argument (None where there is none). `ctx.xp` is the array namespace (NumPy or CuPy), so the same
code runs on both devices.

Broadcasting: an op that broadcast an input (a (3, 1) tensor added to a (3, 4) one) must return a
gradient of the input's own shape: `unbroadcast` sums the gradient over the broadcast dimensions.
"""

import math

from . import backend, dtypes, parallel
from .autograd import Function
from .errors import ShapeError


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


def keepdims_shape(shape, axes):
    """`shape` with the reduced `axes` kept as size 1 (where a reduction's gradient is broadcast from)."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


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


def tie_shares(xp, grad, a, b, a_loses, b_loses):
    """The gradients of max(a, b) (or min): all to the winner, half each at a tie, and, as in PyTorch,
    all to both where a NaN makes neither win (the result is NaN there)."""
    half = xp.where(a == b, grad * 0.5, grad)
    return xp.where(a_loses, 0.0, half), xp.where(b_loses, 0.0, half)


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
# reductions


class Sum(Op):
    """The sum over dims. Backward: the gradient broadcast back to the input's shape."""

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        axes = normalize_dims(dim, x.ndim)
        ctx.in_shape, ctx.axes = x.shape, axes
        return backend.sum_along(x, axes, keepdim)

    @staticmethod
    def backward(ctx, grad):
        kept = ctx.xp.reshape(grad, keepdims_shape(ctx.in_shape, ctx.axes))
        return ctx.xp.broadcast_to(kept, ctx.in_shape), None, None


class Cumsum(Op):
    """Running sums along a dim. The gradient of element i is the sum of the gradients of outputs
    i, i+1, ...: the running sum again, taken from the end."""

    @staticmethod
    def forward(ctx, x, axis):
        ctx.axis = axis
        return running_sum(ctx.xp, x, axis)

    @staticmethod
    def backward(ctx, grad):
        xp, axis = ctx.xp, ctx.axis
        return xp.flip(running_sum(xp, xp.flip(grad, axis=axis), axis), axis=axis), None


def running_sum(xp, x, axis):
    """The cumulative sum along `axis` (float32 summed in float64, as PyTorch does)."""
    if x.dtype == xp.float32:  # summed in float64 and rounded once per element, as PyTorch does
        return xp.astype(xp.cumulative_sum(xp.astype(x, xp.float64), axis=axis), xp.float32)
    return xp.cumulative_sum(x, axis=axis, dtype=x.dtype)  # int32 stays int32 (NumPy would widen it)


class LogSumExp(Op):
    """log(sum(exp(x))) over dims, computed as m + log(sum(exp(x - m))) with m the max, so that
    exp cannot overflow. Its gradient is softmax(x) over those dims."""

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        xp = ctx.xp
        axes = normalize_dims(dim, x.ndim)
        if any(x.shape[a] == 0 for a in axes):  # the log of an empty sum: -inf, as in PyTorch
            out = xp.full(keepdims_shape(x.shape, axes), -math.inf, dtype=x.dtype, **backend.creation_kwargs(xp))
        else:
            shift = xp.max(x, axis=axes, keepdims=True)
            shift = xp.where(xp.isinf(shift), xp.zeros_like(shift), shift)  # all -inf (or an inf): no shift
            out = xp.log(xp.sum(xp.exp(x - shift), axis=axes, keepdims=True)) + shift
        result = out if keepdim else xp.reshape(out, tuple(n for i, n in enumerate(x.shape) if i not in axes))
        ctx.save_for_backward(x, out, computed_from=(result,))  # PyTorch's: the input and the output
        return result

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        kept = ctx.xp.reshape(grad, out.shape)
        return kept * ctx.xp.exp(x - out), None, None


class Mean(Op):
    """The mean over dims. Backward: the gradient / count, broadcast back to the input's shape."""

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        axes = normalize_dims(dim, x.ndim)
        ctx.in_shape, ctx.axes = x.shape, axes
        ctx.count = math.prod(x.shape[a] for a in axes)
        return backend.mean_along(x, axes, ctx.count, keepdim)

    @staticmethod
    def backward(ctx, grad):
        kept = ctx.xp.reshape(grad, keepdims_shape(ctx.in_shape, ctx.axes))
        return ctx.xp.broadcast_to(kept / ctx.count, ctx.in_shape), None, None


class Var(Op):
    """Variance with `correction` (1: the unbiased estimate, PyTorch's default).

    float32 is summed in float64, as PyTorch does: its squares cannot overflow (1e20 squared can in
    float32), and the result is float32's nearest to the true variance.
    """

    @staticmethod
    def forward(ctx, x, dim, correction, keepdim):
        return ctx.xp.astype(Var.wide_variance(ctx, x, dim, correction, keepdim), x.dtype)

    @staticmethod
    def wide_variance(ctx, x, dim, correction, keepdim):
        """The variance in float64 for float32 input (in x's dtype otherwise); saves the centred x."""
        xp = ctx.xp
        wide = xp.astype(x, xp.float64) if backend.dtype_of(x) is dtypes.float32 else x
        axes = normalize_dims(dim, x.ndim)
        count = math.prod(x.shape[a] for a in axes)
        mean = xp.mean(wide, axis=axes, keepdims=True)
        centered = wide - mean
        ctx.axes, ctx.keepdim, ctx.denominator = axes, keepdim, max(count - correction, 0)
        ctx.dof = count - correction  # the backward's divisor, as PyTorch's (negative where correction > count)
        at_mean = wide == mean if (dim is None or x.ndim == 0) and ctx.dof <= 0 else None  # see slope
        # PyTorch saves x: the centred x stands for it (and x changed in place raises)
        ctx.save_for_backward(xp.astype(centered, x.dtype), at_mean, computed_from=(x,))
        return xp.sum(centered * centered, axis=axes, keepdims=keepdim) / ctx.denominator

    @staticmethod
    def backward(ctx, grad):
        centered, at_mean = ctx.saved_tensors
        kept = ctx.xp.reshape(grad, keepdims_shape(centered.shape, ctx.axes))
        return Var.slope(ctx, kept, centered, at_mean), None, None, None

    @staticmethod
    def slope(ctx, kept, centered, at_mean):
        """kept * d var / dx = kept * 2 (x - mean) / (n - correction), as PyTorch computes it: with no
        degrees of freedom left over all dims, inf (NaN where x is the mean)."""
        if at_mean is not None:
            return kept * ctx.xp.where(at_mean, math.nan, math.inf)
        return kept * (2 / ctx.dof if ctx.dof else math.inf) * centered


class Std(Op):
    """sqrt(Var). Its gradient is Var's divided by 2 std, and 0 where std is 0, as PyTorch gives it
    (sqrt's slope is infinite there)."""

    @staticmethod
    def forward(ctx, x, dim, correction, keepdim):
        xp = ctx.xp
        std = xp.astype(xp.sqrt(Var.wide_variance(ctx, x, dim, correction, keepdim)), x.dtype)
        ctx.save_for_backward(*ctx.saved, std, computed_from=(x,))  # PyTorch's: x and the output
        return std

    @staticmethod
    def backward(ctx, grad):
        centered, at_mean, std = ctx.saved_tensors
        xp = ctx.xp
        shape = keepdims_shape(centered.shape, ctx.axes)
        kept = xp.reshape(grad, shape) / xp.reshape(xp.where(std == 0, math.inf, 2 * std), shape)
        return Var.slope(ctx, kept, centered, at_mean), None, None, None


class MaxAlongDim(Op):
    """max(x, dim) -> (values, indices); the gradient goes to the position of the max."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, take_min):
        xp = ctx.xp
        ctx.name_hint = "Min" if take_min else "Max"
        axis = normalize_dim(dim, x.ndim)
        pick = xp.argmin if take_min else xp.argmax
        kept = xp.astype(pick(x, axis=axis, keepdims=True), xp.int64)
        indices = kept if keepdim else xp.squeeze(kept, axis=axis)
        ctx.save_for_backward(indices)  # the indices output, as PyTorch's
        ctx.axis, ctx.keepdim, ctx.size = axis, keepdim, x.shape[axis]
        values = (xp.min if take_min else xp.max)(x, axis=axis, keepdims=keepdim)
        return values, indices

    @staticmethod
    def backward(ctx, grad, _indices_grad):
        (indices,) = ctx.saved_tensors
        xp = ctx.xp
        if not ctx.keepdim:
            grad, indices = xp.expand_dims(grad, axis=ctx.axis), xp.expand_dims(indices, axis=ctx.axis)
        positions = xp.reshape(xp.arange(ctx.size, **backend.creation_kwargs(xp)),
                               tuple(-1 if i == ctx.axis else 1 for i in range(grad.ndim)))
        return xp.where(positions == indices, grad, 0), None, None, None


class MaxAll(Op):
    """max(x) over all elements; ties share the gradient equally, like PyTorch."""

    @staticmethod
    def forward(ctx, x, take_min):
        xp = ctx.xp
        ctx.name_hint = "MinBackward1" if take_min else "MaxBackward1"  # PyTorch's overload for all elements
        y = xp.asarray(xp.min(x) if take_min else xp.max(x))  # (an array, not a NumPy scalar: it is saved)
        ctx.save_for_backward(x, y)  # PyTorch's: the input and the output
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        xp = ctx.xp
        chosen = xp.isnan(x) if xp.isnan(y) else x == y  # a NaN result: its gradient to the NaNs
        return xp.where(chosen, grad / xp.sum(xp.astype(chosen, grad.dtype)), 0), None


# ---------------------------------------------------------------------------------------------
# matrix products


def check_matmul_shapes(a_shape, b_shape):
    """Raises a ShapeError naming both shapes unless a @ b can be computed."""
    if not a_shape or not b_shape:
        raise ShapeError(f"matmul needs tensors with at least 1 dim, got shapes {list(a_shape)} and {list(b_shape)}")
    inner_b = b_shape[0] if len(b_shape) == 1 else b_shape[-2]
    if a_shape[-1] != inner_b:
        raise ShapeError(
            f"matmul: shapes {list(a_shape)} and {list(b_shape)} cannot be multiplied: the last dim of "
            f"the first ({a_shape[-1]}) must equal the "
            f"{'size' if len(b_shape) == 1 else 'second-to-last dim'} of the second ({inner_b})"
        )
    if (len(a_shape) > 2 or len(b_shape) > 2) and broadcast_shape(a_shape[:-2], b_shape[:-2]) is None:
        raise ShapeError(f"matmul: the batch dims of shapes {list(a_shape)} and {list(b_shape)} (all but the last "
                         "two) cannot be broadcast together")


_MATMUL_NAMES = {(2, 2): "Mm", (2, 1): "Mv", (1, 1): "Dot"}


class Matmul(Op):
    """a @ b with NumPy's rules: batched and broadcast over leading dims, 1-D operands promoted."""

    @staticmethod
    def forward(ctx, a, b):
        check_matmul_shapes(a.shape, b.shape)
        ctx.save_for_backward(a, b)
        # PyTorch's grad_fn names: MmBackward0 for matrices, UnsafeViewBackward0 for batches, ...
        ctx.name_hint = _MATMUL_NAMES.get((a.ndim, b.ndim), "UnsafeView" if a.ndim > 2 else None)
        return backend.matmul(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        xp = ctx.xp
        # treat vectors as matrices: a (k,) is a (1, k) row, b (k,) is a (k, 1) column
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        g2 = grad
        if b.ndim == 1:  # first: for vector @ vector the gradient is 0-d, () -> (1,) -> (1, 1)
            g2 = xp.expand_dims(g2, axis=-1)
        if a.ndim == 1:
            g2 = xp.expand_dims(g2, axis=-2)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = xp.reshape(unbroadcast(xp, backend.matmul(g2, backend.matrix_transpose(b2)), a2.shape), a.shape)
        if ctx.needs_input_grad[1]:
            gb = xp.reshape(unbroadcast(xp, backend.matmul(backend.matrix_transpose(a2), g2), b2.shape), b.shape)
        return ga, gb


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
# softmax: fused, stable forward; backward in one expression


def softmax_forward(xp, x, axis, safe=False, overwrite=False):
    """exp(x) / sum(exp(x)) along `axis`, numerically stable (Softmax's forward, also used by attention).

    With safe=True, a row that is entirely -inf (a query that may attend to nothing) gives zeros
    instead of NaN. overwrite=True works in x's memory (for an x nobody else holds): one array, not three.
    A large array of rows along its last axis goes through in blocks of rows that stay in the cache.
    """
    if axis == x.ndim - 1 and x.ndim > 1 and parallel.in_blocks(x):  # (a small x is told at once)
        stack, align = matrices_or_rows(xp, x)
        if parallel.in_blocks(stack, math.prod(stack.shape[1:]), align):
            def block(part):
                return softmax_forward(xp, part, part.ndim - 1, safe, overwrite)

            if overwrite:  # each block in its own memory, as the whole array would be
                parallel.each_block(block, stack, align=align)
                return x
            return xp.reshape(parallel.map_blocks(block, stack, align=align), x.shape)
    # subtracting the row max keeps exp() from overflowing; the result is the same
    row_max = backend.max_for_shift(x, axis)
    if safe:  # an all -inf row: shift by 0 instead, so that exp() gives zeros, not NaN (a +inf stays: NaN)
        row_max = xp.where(row_max == -math.inf, 0.0, row_max)
    if overwrite:
        x -= row_max
        y = backend.exp_in_place(x)
    else:
        y = xp.exp(x - row_max)
    total = backend.row_sums(y, axis, keepdims=True)  # (each row in the same order, in blocks or not)
    y /= xp.where(total == 0, 1.0, total) if safe else total
    return y


def softmax_backward(xp, y, grad, axis, overwrite=False):
    """The gradient of softmax's input, given its output y and the gradient of y (overwritten if asked)."""
    if (axis == y.ndim - 1 and y.ndim > 1 and grad.shape == y.shape and parallel.in_blocks(y)
            and parallel.in_blocks(grad)):
        (stack, align), (grad_stack, _) = matrices_or_rows(xp, y), matrices_or_rows(xp, grad)
        if parallel.in_blocks(stack, math.prod(stack.shape[1:]), align):
            def block(y_part, grad_part):
                return softmax_backward(xp, y_part, grad_part, y_part.ndim - 1, overwrite)

            if overwrite:  # each block in grad's memory, as the whole array would be
                parallel.each_block(block, stack, grad_stack, align=align)
                return grad
            return xp.reshape(parallel.map_blocks(block, stack, grad_stack, align=align), y.shape)
    # J^T g for J = diag(y) - y y^T, without building J: y * (g - <g, y>) along the row
    axis -= y.ndim  # the standard's vecdot wants a negative axis
    row_dot = xp.expand_dims(backend.vecdot(grad, y, axis=axis), axis=axis)
    if overwrite:
        grad -= row_dot
        g = grad
    else:
        g = grad - row_dot
    g *= y
    return g


def matrices_or_rows(xp, x):
    """(x as a stack of matrices (n, rows, columns), 1) for x of 3 dims or more, (x, ROW_ALIGN) for a
    matrix: how softmax splits a large x into blocks (parallel.map_blocks) and keeps its bits.

    Each row's sum is the same in any block (backend.row_sums); blocks of whole matrices, or of rows
    that start on multiples of ROW_ALIGN, keep the blocks' other work in whole SIMD-sized pieces.
    """
    if x.ndim == 2:
        return x, parallel.ROW_ALIGN
    return xp.reshape(x, (-1,) + x.shape[-2:]), 1


class Softmax(Op):
    """exp(x) / sum(exp(x)) along `dim`, numerically stable.

    With safe=True, a row that is entirely -inf (a query that may attend to nothing) gives zeros
    instead of PyTorch's NaN: what the attention modules and scaled_dot_product_attention use.
    """

    @staticmethod
    def forward(ctx, x, dim, safe=False):
        axis = normalize_dim(dim, x.ndim)
        y = softmax_forward(ctx.xp, x, axis, safe)
        ctx.save_for_backward(y)
        ctx.axis = axis
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return softmax_backward(ctx.xp, y, grad, ctx.axis), None, None


class LogSoftmax(Op):
    """log(softmax(x)) along a dim. Backward: grad - softmax(x) * sum(grad)."""

    @staticmethod
    def forward(ctx, x, dim):
        xp = ctx.xp
        axis = normalize_dim(dim, x.ndim)
        shifted = x - backend.max_for_shift(x, axis)
        if x.shape[axis] == 0:  # nothing to normalise (and no log of an empty sum)
            y = shifted
        else:
            y = shifted - xp.log(backend.row_sums(xp.exp(shifted), axis, keepdims=True))
        ctx.save_for_backward(y)
        ctx.axis = axis
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        xp = ctx.xp
        return grad - xp.exp(y) * backend.row_sums(grad, ctx.axis, keepdims=True), None


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
# more reductions: prod, amax/amin, vector norms, cumprod


class Prod(Op):
    """The product over one dim (or all). The gradient of x_i is the product of the others: the
    product of those before it times the product of those after it (two running products), so that
    nothing is divided by x_i and zeros need no special case (PyTorch divides where it can)."""

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.name_hint = "ProdBackward0" if dim is None else "ProdBackward1"  # PyTorch's overloads
        ctx.axes = normalize_dims(dim, x.ndim)
        y = ctx.xp.asarray(ctx.xp.prod(x, axis=ctx.axes, keepdims=keepdim))  # (an array, not a NumPy scalar)
        # PyTorch saves the input and the output (its backward divides by x where it can); this
        # backward needs only x, but changing y in place raises as it does in PyTorch
        ctx.save_for_backward(x, computed_from=(y,))
        return y

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        xp, axes = ctx.xp, ctx.axes
        kept = xp.reshape(grad, keepdims_shape(x.shape, axes))
        if not axes:  # a 0-d x: the product is x itself
            return kept, None, None
        # the reduced dim last (all dims flattened into one for the product of all)
        rows = xp.reshape(x, (-1,)) if len(axes) > 1 or x.ndim == 1 else xp.moveaxis(x, axes[0], -1)
        before = xp.cumulative_prod(rows, axis=-1, include_initial=True)[..., :-1]
        after = xp.flip(xp.cumulative_prod(xp.flip(rows, axis=-1), axis=-1, include_initial=True)[..., :-1], axis=-1)
        others = before * after
        others = xp.reshape(others, x.shape) if len(axes) > 1 or x.ndim == 1 else xp.moveaxis(others, -1, axes[0])
        return kept * others, None, None


class Amax(Op):
    """The max (or min) over dims, PyTorch's amax/amin: ties share the gradient equally (max(dim)
    gives it all to one index instead)."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, take_min):
        xp = ctx.xp
        ctx.name_hint = "Amin" if take_min else "Amax"
        axes = normalize_dims(dim, x.ndim)
        y = (xp.min if take_min else xp.max)(x, axis=axes, keepdims=True)
        ctx.axes = axes
        result = y if keepdim else xp.reshape(y, tuple(n for i, n in enumerate(x.shape) if i not in axes))
        ctx.save_for_backward(x, y, computed_from=(result,))  # PyTorch's: the input and the output
        return result

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        xp = ctx.xp
        kept = xp.reshape(grad, keepdims_shape(x.shape, ctx.axes))
        chosen = xp.astype(x == y, grad.dtype)
        count = xp.sum(chosen, axis=ctx.axes, keepdims=True)
        # PyTorch's formula: a max that is NaN equals none of its numbers (count 0), and its row gets NaN
        return kept / count * chosen, None, None, None


class LinalgVectorNorm(Op):
    """(sum |x|^ord)^(1/ord) over dims; ord may be 2 (the length), 1, inf, -inf, 0 (the count of
    nonzeros) or any other number. At a zero vector the gradient is 0, as in PyTorch (the norm has
    no slope there, and |x|/norm would be 0/0)."""

    @staticmethod
    def forward(ctx, x, ord, dim, keepdim):
        xp = ctx.xp
        axes = normalize_dims(dim, x.ndim)
        size = xp.abs(x)
        if ord == 2:
            norm = xp.sqrt(xp.sum(x * x, axis=axes, keepdims=True))
        elif ord == 1:
            norm = xp.sum(size, axis=axes, keepdims=True)
        elif ord == math.inf:
            norm = xp.max(size, axis=axes, keepdims=True)
        elif ord == -math.inf:
            norm = xp.min(size, axis=axes, keepdims=True)
        elif ord == 0:
            norm = xp.sum(xp.astype(x != 0, x.dtype), axis=axes, keepdims=True)
        else:
            norm = xp.sum(size**ord, axis=axes, keepdims=True) ** (1 / ord)
        ctx.ord, ctx.axes = ord, axes
        result = norm if keepdim else xp.reshape(norm, tuple(n for i, n in enumerate(x.shape) if i not in axes))
        ctx.save_for_backward(x, norm, computed_from=(result,))  # PyTorch's: the input and the output
        return result

    @staticmethod
    def backward(ctx, grad):
        x, norm = ctx.saved_tensors
        xp, ord = ctx.xp, ctx.ord
        g = xp.reshape(grad, norm.shape)
        zero = xp.zeros_like(x)
        if ord == 0:
            return zero, None, None, None
        if ord == 1:
            return g * xp.sign(x), None, None, None
        if ord in (math.inf, -math.inf):  # to the largest (smallest) |x_i|, ties sharing
            chosen = xp.abs(x) == norm
            count = xp.sum(xp.astype(chosen, x.dtype), axis=ctx.axes, keepdims=True)
            return xp.where(chosen, g * xp.sign(x) / count, zero), None, None, None
        safe_norm = xp.where(norm == 0, xp.ones_like(norm), norm)
        if ord == 2:
            slope = x / safe_norm
        else:  # d/dx_i = sign(x_i) |x_i|^(ord-1) / norm^(ord-1)
            size = xp.abs(x)
            slope = xp.where(size == 0, zero, xp.sign(x) * (size / safe_norm) ** (ord - 1))
        return xp.where(norm == 0, zero, g * slope), None, None, None


class Cumprod(Op):
    """Running products along a dim, float32 multiplied in float64 as PyTorch does.

    The gradient of x_i is sum over j >= i of g_j * (product of x_0..x_j without x_i). Without zeros
    that is (the running sum from the end of g * y) / x_i; with zeros it is computed without
    dividing: P_i R_i, with P_i = x_0 ... x_(i-1) and R_i = g_i + x_(i+1) R_(i+1).
    """

    @staticmethod
    def forward(ctx, x, axis):
        xp = ctx.xp
        ctx.axis = axis
        if x.dtype == xp.float32:
            y = xp.astype(xp.cumulative_prod(xp.astype(x, xp.float64), axis=axis), xp.float32)
        else:
            y = xp.cumulative_prod(x, axis=axis, dtype=None if x.dtype == xp.bool else x.dtype)  # int32 stays int32
        ctx.save_for_backward(x, computed_from=(y,))  # PyTorch saves the output too: y changed in place raises
        return y

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        xp = ctx.xp
        x, g = xp.moveaxis(x, ctx.axis, -1), xp.moveaxis(grad, ctx.axis, -1)
        n = x.shape[-1]
        if n <= 1:  # each running product is the number itself: its gradient is 1, also at inf (PyTorch's too)
            return grad, None
        if not xp.any(x == 0):
            y = xp.cumulative_prod(x, axis=-1)
            result = xp.flip(xp.cumulative_sum(xp.flip(g * y, axis=-1), axis=-1), axis=-1) / x
        else:
            before = xp.cumulative_prod(x, axis=-1, include_initial=True)[..., :n]  # P_i
            after = [g[..., n - 1]] if n else []  # R_i, built from the end
            for i in range(n - 2, -1, -1):
                after.append(g[..., i] + x[..., i + 1] * after[-1])
            result = before * xp.stack(after[::-1], axis=-1) if n else g
        return xp.moveaxis(result, -1, ctx.axis), None


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
# einsum
#
# An equation such as "bhqd,bhkd->bhqk" names each dim of each operand with a letter (a label).
# Internally a label is a letter, or an int for each dim that "..." stands for (0, 1, ... counted
# from the left of the broadcast "..." dims, which align from the right as in broadcasting).
# Labels in the output are kept; the others are summed over. The forward contracts the operands two
# at a time with one batched matrix product each; the backward of operand k is an einsum again: the
# output's gradient contracted with the other operands, into operand k's labels.


class EinsumPlan:
    """A parsed equation: the labels of each operand and of the output, and each label's size."""

    def __init__(self, inputs, output, sizes, name=None):
        self.inputs, self.output, self.sizes, self.name = inputs, output, sizes, name


def parse_einsum(equation, shapes):
    """The EinsumPlan of `equation` for operands of these shapes; ValueError (ShapeError for sizes that
    disagree) naming what is wrong."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum expects the equation as a string first, got {type(equation).__name__}")
    spec = equation.replace(" ", "")
    if spec.count("->") > 1:
        raise ValueError(f"einsum: the equation {equation!r} has more than one '->'")
    left, arrow, right = spec.partition("->")
    terms = left.split(",")
    if len(terms) != len(shapes):
        raise ValueError(
            f"einsum: the equation {equation!r} has {len(terms)} operand term{'s' * (len(terms) != 1)} "
            f"({left!r}) but {len(shapes)} tensor{'s were' if len(shapes) != 1 else ' was'} given"
        )
    parsed = [_einsum_term(term, equation, f"operand {k}") for k, term in enumerate(terms)]
    ellipsis_dims = 0
    for k, ((letters, ellipsis_at), shape) in enumerate(zip(parsed, shapes)):
        if ellipsis_at is None and len(letters) != len(shape):
            raise ValueError(
                f"einsum: operand {k} has {len(shape)} dims (shape {list(shape)}) but its term "
                f"{terms[k]!r} names {len(letters)}: give one letter per dim, or '...' for the rest"
            )
        if ellipsis_at is not None and len(letters) > len(shape):
            raise ValueError(
                f"einsum: operand {k} has {len(shape)} dims (shape {list(shape)}) but its term "
                f"{terms[k]!r} names {len(letters)} besides '...'"
            )
        if ellipsis_at is not None:
            ellipsis_dims = max(ellipsis_dims, len(shape) - len(letters))
    inputs, sizes = [], {}
    for k, ((letters, ellipsis_at), shape) in enumerate(zip(parsed, shapes)):
        labels = list(letters)
        if ellipsis_at is not None:
            count = len(shape) - len(letters)
            labels[ellipsis_at:ellipsis_at] = range(ellipsis_dims - count, ellipsis_dims)
        for label, n in zip(labels, shape):
            _einsum_size(sizes, label, n, k, labels, shape)
        inputs.append(tuple(labels))
    used = [label for labels in inputs for label in labels]
    if arrow:
        letters, ellipsis_at = _einsum_term(right, equation, "the output")
        for letter in letters:
            if letters.count(letter) > 1:
                raise ValueError(f"einsum: the output subscript {letter!r} appears more than once in {equation!r}")
            if letter not in sizes:
                raise ValueError(f"einsum: the output subscript {letter!r} of {equation!r} appears in no operand")
        output = list(letters)
        if ellipsis_at is not None:
            output[ellipsis_at:ellipsis_at] = range(ellipsis_dims)
    else:  # the implicit output: the "..." dims, then the letters used once, in alphabetical (ASCII) order
        output = list(range(ellipsis_dims)) + sorted(
            label for label in sizes if isinstance(label, str) and used.count(label) == 1
        )
    return EinsumPlan(tuple(inputs), tuple(output), sizes)


def _einsum_term(term, equation, what):
    """The letters of one term and where its '...' stands (None without one)."""
    letters, ellipsis_at, i = [], None, 0
    while i < len(term):
        if term.startswith("...", i):
            if ellipsis_at is not None:
                raise ValueError(f"einsum: {what} in {equation!r} has more than one '...'")
            ellipsis_at, i = len(letters), i + 3
        elif term[i] == ".":
            raise ValueError(f"einsum: {what} in {equation!r} has a '.' that is not part of '...'")
        elif term[i].isascii() and term[i].isalpha():
            letters.append(term[i])
            i += 1
        else:
            raise ValueError(
                f"einsum: invalid subscript {term[i]!r} for {what} in {equation!r}: subscripts are the "
                "letters a-z and A-Z, operands are separated by ',' and the output follows '->'"
            )
    return letters, ellipsis_at


def _einsum_size(sizes, label, n, k, labels, shape):
    """Record that `label` has size n in operand k. A label repeated within an operand (a diagonal)
    needs equal sizes; across operands a size of 1 broadcasts, as in PyTorch."""
    name = f"subscript {label!r}" if isinstance(label, str) else f"'...' dim {label}"
    same_operand = [m for lab, m in zip(labels, shape) if lab == label]
    if any(m != n for m in same_operand):
        raise ShapeError(f"einsum: {name} is repeated in operand {k} (shape {list(shape)}) with different "
                         f"sizes {same_operand}: a repeated subscript takes a diagonal, which needs equal sizes")
    seen = sizes.get(label, 1)
    if n != seen and 1 not in (n, seen):
        raise ShapeError(f"einsum: {name} has size {n} in operand {k} (shape {list(shape)}) but size "
                         f"{seen} in an earlier operand; sizes must be equal or 1 (which broadcasts)")
    sizes[label] = n if seen == 1 else seen


def einsum_labels_present(shape, labels, sizes):
    """The labels of an operand without those it only broadcasts along (size 1 where others have more)."""
    return [label for label, n in zip(labels, shape) if n == sizes[label]]


def einsum_contract(xp, arrays, labels, output, sizes):
    """The einsum of arrays (each with its labels) into the `output` labels."""
    operands = []
    for array, array_labels in zip(arrays, labels):
        present = einsum_labels_present(array.shape, array_labels, sizes)
        array = xp.reshape(array, tuple(sizes[label] for label in present))  # drop the broadcast dims
        operands.append(_take_diagonals(xp, array, present))
    result, result_labels = operands[0]
    for k in range(1, len(operands)):
        needed = set(output).union(*(set(labs) for _, labs in operands[k + 1:]))
        result, result_labels = _contract_pair(xp, result, result_labels, *operands[k], needed)
    result, result_labels = _sum_out(xp, result, result_labels, set(output))
    return xp.permute_dims(result, tuple(result_labels.index(label) for label in output))


def _take_diagonals(xp, array, labels):
    """Each label repeated in `labels` ("ii") becomes one dim: the diagonal. Returns (array, labels)."""
    labels = list(labels)
    for label in dict.fromkeys(labels):
        places = [i for i, lab in enumerate(labels) if lab == label]
        if len(places) == 1:
            continue
        rest = [i for i in range(len(labels)) if i not in places]
        n = array.shape[places[0]]
        # with the repeated dims last and flattened, the diagonal is every (1 + n + n^2 ...)th element
        array = xp.reshape(xp.permute_dims(array, tuple(rest + places)),
                           tuple(array.shape[i] for i in rest) + (n ** len(places),))
        array = array[..., ::sum(n**j for j in range(len(places)))]
        labels = [labels[i] for i in rest] + [label]
    return array, labels


def _sum_out(xp, array, labels, keep):
    """Sum over the labels not in `keep`."""
    axes = tuple(i for i, label in enumerate(labels) if label not in keep)
    if not axes:
        return array, labels
    return xp.sum(array, axis=axes), [label for label in labels if label in keep]


def _contract_pair(xp, a, a_labels, b, b_labels, needed):
    """Two operands into one, by one batched matrix product: (batch, left, summed) @ (batch, summed, right)."""
    a, a_labels = _sum_out(xp, a, a_labels, needed | set(b_labels))  # what only a has and nobody needs
    b, b_labels = _sum_out(xp, b, b_labels, needed | set(a_labels))
    batch = [label for label in a_labels if label in b_labels and label in needed]
    summed = [label for label in a_labels if label in b_labels and label not in needed]
    left = [label for label in a_labels if label not in b_labels]
    right = [label for label in b_labels if label not in a_labels]
    size = dict(zip(a_labels, a.shape)) | dict(zip(b_labels, b.shape))

    def arrange(array, array_labels, *groups):
        order = tuple(array_labels.index(label) for group in groups for label in group)
        return xp.reshape(xp.permute_dims(array, order), tuple(math.prod(size[lab] for lab in g) for g in groups))

    product = backend.matmul(arrange(a, a_labels, batch, left, summed), arrange(b, b_labels, batch, summed, right))
    return xp.reshape(product, tuple(size[label] for label in batch + left + right)), batch + left + right


def _place_on_diagonals(xp, array, labels, target):
    """The inverse of taking diagonals: `array` (one dim per label of `labels`, all distinct) laid out
    as `target`, whose repeated labels get the values on their diagonal and zeros elsewhere."""
    labels = list(labels)
    for label in dict.fromkeys(target):
        repeats = target.count(label)
        if repeats == 1:
            continue
        at = labels.index(label)
        rest = [i for i in range(len(labels)) if i != at]
        n = array.shape[at]
        array = xp.permute_dims(array, tuple(rest + [at]))
        full = xp.zeros(array.shape[:-1] + (n**repeats,), dtype=array.dtype, **backend.creation_kwargs(xp))
        full[..., ::sum(n**j for j in range(repeats))] = array
        array = xp.reshape(full, array.shape[:-1] + (n,) * repeats)
        labels = [labels[i] for i in rest] + [label] * repeats
    order, taken = [], set()
    for label in target:  # the k-th occurrence of a label in target takes the k-th dim with that label
        position = next(i for i, lab in enumerate(labels) if lab == label and i not in taken)
        taken.add(position)
        order.append(position)
    return xp.permute_dims(array, tuple(order))


class Einsum(Op):
    """torch.einsum. The gradient of operand k is the einsum of the output's gradient with the other
    operands, into operand k's labels ("ij,jk->ik": dA = "ik,jk->ij" of (grad, B)), with three
    additions: a label that only operand k has and the output lacks was summed, so its gradient is
    the same all along it (broadcast); a repeated label ("ii") puts the gradient on the diagonal; a
    dim of size 1 that broadcast is summed back to size 1."""

    @staticmethod
    def forward(ctx, plan, *arrays):
        if plan.name:
            ctx.name_hint = plan.name
        ctx.plan = plan
        ctx.save_for_backward(*arrays)
        out = einsum_contract(ctx.xp, arrays, plan.inputs, plan.output, plan.sizes)
        if arrays and out.dtype != arrays[0].dtype:  # NumPy sums int32 into int64; PyTorch keeps int32
            out = ctx.xp.astype(out, arrays[0].dtype)
        return out

    @staticmethod
    def backward(ctx, grad):
        arrays = ctx.saved_tensors
        xp, plan = ctx.xp, ctx.plan
        grads = [None]
        for k, array in enumerate(arrays):
            if not ctx.needs_input_grad[k + 1]:
                grads.append(None)
                continue
            present = einsum_labels_present(array.shape, plan.inputs[k], plan.sizes)  # repeats included
            others = [j for j in range(len(arrays)) if j != k]
            reachable = set(plan.output).union(
                *(einsum_labels_present(arrays[j].shape, plan.inputs[j], plan.sizes) for j in others)
            )
            distinct = list(dict.fromkeys(present))
            target = [label for label in distinct if label in reachable]
            g = einsum_contract(xp, [grad] + [arrays[j] for j in others],
                                [plan.output] + [plan.inputs[j] for j in others], tuple(target), plan.sizes)
            # the labels only operand k had: summed in the forward, so the gradient is constant along them
            g = xp.broadcast_to(xp.reshape(g, tuple(plan.sizes[lab] if lab in target else 1 for lab in distinct)),
                                tuple(plan.sizes[lab] for lab in distinct))
            g = _place_on_diagonals(xp, g, distinct, present)
            grads.append(xp.reshape(g, array.shape))  # back to size 1 where operand k broadcast
        return tuple(grads)
