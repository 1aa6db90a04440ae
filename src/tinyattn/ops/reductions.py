"""Reductions, each forward beside its backward: sum, mean, var, std, max, prod, amax/amin, vector norms,
the median, and the running ones (cumsum, cumprod, logsumexp). The backward of a reduction broadcasts the
gradient back over the reduced dims (`keepdims_shape`).
"""

import math

from .. import backend, dtypes
from .base import Op, keepdims_shape, normalize_dim, normalize_dims


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


def running_sum(xp, x, axis):
    """The cumulative sum along `axis` (float32 summed in float64, as PyTorch does)."""
    if x.dtype == xp.float32:  # summed in float64 and rounded once per element, as PyTorch does
        return xp.astype(xp.cumulative_sum(xp.astype(x, xp.float64), axis=axis), xp.float32)
    return xp.cumulative_sum(x, axis=axis, dtype=x.dtype)  # int32 stays int32 (NumPy would widen it)


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
# the median of all elements


class MedianAll(Op):
    """The lower median of all elements (the middle one of the sorted values; of an even count, the
    smaller of the two middle ones), NaN when any element is NaN. PyTorch shares the gradient evenly
    among the elements equal to the median, so ties each get grad / (their count)."""

    @staticmethod
    def forward(ctx, x):
        xp = ctx.xp
        flat = xp.reshape(x, (-1,))
        floating = xp.isdtype(x.dtype, "real floating")
        if flat.shape[0] == 0:  # no middle element: NaN (the smallest integer for integers), as PyTorch gives
            value = xp.asarray(xp.nan if floating else xp.iinfo(x.dtype).min, dtype=x.dtype)
        elif floating and bool(xp.any(xp.isnan(flat))):
            value = xp.asarray(xp.nan, dtype=x.dtype)
        else:
            value = xp.sort(flat)[(flat.shape[0] - 1) // 2]
        ctx.save_for_backward(x, value)
        return xp.asarray(value, dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, value = ctx.saved_tensors
        xp = ctx.xp
        chosen = (x == value) | (xp.isnan(x) & xp.isnan(value))
        count = xp.sum(xp.astype(chosen, grad.dtype))
        return xp.where(chosen, grad / xp.where(count > 0, count, 1), 0)
