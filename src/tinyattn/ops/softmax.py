"""Softmax and log-softmax: a fused, stable forward and a backward in one expression. The attention
op (nn.py) uses `softmax_forward` and `softmax_backward` too. Then layer norm, the normalization
over the last dims, whose backward is a closed form.
"""

import math

from .. import backend
from ..backend import parallel
from .base import Op, normalize_dim


# ---------------------------------------------------------------------------------------------
# softmax: fused, stable forward; backward in one expression


def softmax_forward(xp, x, axis, safe=False, overwrite=False):
    """exp(x) / sum(exp(x)) along `axis`, numerically stable (Softmax's forward, also used by attention).

    With safe=True, a row that is entirely -inf (a query that may attend to nothing) gives zeros
    instead of NaN. overwrite=True works in x's memory (for an x nobody else holds): one array, not three.
    A large array of rows along its last axis goes through in blocks of rows that stay in the cache.
    """
    if axis == x.ndim - 1 and parallel.in_blocks(x):  # a large x: in cache-sized blocks, the same bits
        return parallel.map_last_axis(lambda rows: softmax_forward(xp, rows, rows.ndim - 1, safe, overwrite), x,
                                      out=x if overwrite else None)
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
    if axis == y.ndim - 1 and parallel.in_blocks(y):  # a large y: in cache-sized blocks, the same bits
        return parallel.map_last_axis(lambda y, g: softmax_backward(xp, y, g, y.ndim - 1, overwrite), y, grad,
                                      out=grad if overwrite else None)
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
# layer norm: normalization over the last dims, with a closed-form backward


class LayerNormOp(Op):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dims, with a closed-form backward.

    The input is seen as rows, one per normalised group. Row means are row-wise dot products
    (vecdot) with a vector of 1/n, and means of products are row-wise dot products: on short rows (a
    GPT's 128 channels) they run several times faster than NumPy's sum over the last axis, and each
    row's dot is computed on its own, so a row's bits do not depend on how many rows are computed with
    it (a matrix-vector product's would: OpenBLAS sums a call's last rows in another order). The rows are
    spread over the cores (parallel.map_rows), a large array's in blocks where several threads
    compute them (parallel.map_blocks; on one thread its few passes do not pay for the blocks).
    """

    @staticmethod
    def forward(ctx, x, weight, bias, axes, eps):
        xp = ctx.xp
        normalized_shape = tuple(x.shape[a] for a in axes)
        n = math.prod(normalized_shape)
        rows = xp.reshape(x, (math.prod(x.shape) // n if n else 0, n))  # (not -1: there may be no numbers)
        averager = xp.full((n,), 1.0 / max(n, 1), dtype=x.dtype, **backend.creation_kwargs(xp))
        flat_weight = None if weight is None else xp.reshape(weight, (n,))
        flat_bias = None if bias is None else xp.reshape(bias, (n,))
        y, normalized, inv_std = parallel.map_blocks(
            lambda part: layer_norm_rows(xp, part, flat_weight, flat_bias, averager, eps), rows,
            whole_on_one_thread=True)
        # PyTorch saves the input, weight and bias: changing any of them in place makes backward raise
        ctx.save_for_backward(normalized, inv_std, flat_weight, averager, computed_from=(x, weight, bias))
        ctx.in_shape, ctx.normalized_shape = x.shape, normalized_shape
        return xp.reshape(y, x.shape)

    @staticmethod
    def backward(ctx, grad):
        normalized, inv_std, weight, averager = ctx.saved_tensors
        xp = ctx.xp
        n = normalized.shape[1]
        grad_rows = xp.reshape(grad, normalized.shape)
        gw = gb = None
        if ctx.needs_input_grad[1]:
            gw = xp.reshape(backend.sum_along(grad_rows * normalized, (0,)), ctx.normalized_shape)
        if ctx.needs_input_grad[2]:
            gb = xp.reshape(backend.sum_along(grad_rows, (0,)), ctx.normalized_shape)
        gx = parallel.map_blocks(lambda *parts: layer_norm_rows_backward(xp, *parts, weight, averager),
                                 grad_rows, normalized, inv_std, whole_on_one_thread=True)
        return xp.reshape(gx, ctx.in_shape), gw, gb, None, None


def layer_norm_rows(xp, rows, weight, bias, averager, eps):
    """(y, the normalized rows, 1 / their std) of rows (N, n); averager is n values of 1/n."""
    n = rows.shape[1]
    normalized = rows - backend.vecdot(rows, averager)[:, None]  # centred
    inv_std = 1.0 / xp.sqrt(backend.vecdot(normalized, normalized)[:, None] / n + eps)
    normalized *= inv_std
    y = normalized * weight if weight is not None else xp.asarray(normalized, copy=True)
    if bias is not None:
        y += bias
    return y, normalized, inv_std


def layer_norm_rows_backward(xp, grad_rows, normalized, inv_std, weight, averager):
    """The gradient of layer_norm_rows' input rows."""
    n = normalized.shape[1]
    g = grad_rows * weight if weight is not None else grad_rows
    # d/dx of (x - mu) * inv_std, with mu and inv_std depending on x too:
    # inv_std * (g - mean(g) - normalized * mean(g * normalized)), means along each row
    gx = g - backend.vecdot(g, averager)[:, None]
    gx -= normalized * (backend.vecdot(g, normalized)[:, None] / n)
    gx *= inv_std
    return gx
