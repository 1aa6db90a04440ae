"""Softmax and log-softmax: a fused, stable forward and a backward in one expression. The attention
op of nn.functional and the cross-entropy loss use `softmax_forward` and `softmax_backward` too.
"""

import math

from .. import backend, parallel
from .base import Op, normalize_dim


# ---------------------------------------------------------------------------------------------
# softmax: fused, stable forward; backward in one expression


def matrices_or_rows(xp, x):
    """(x as a stack of matrices (n, rows, columns), 1) for x of 3 dims or more, (x, ROW_ALIGN) for a
    matrix: how softmax splits a large x into blocks (parallel.map_blocks) and keeps its bits.

    Each row's sum is the same in any block (backend.row_sums); blocks of whole matrices, or of rows
    that start on multiples of ROW_ALIGN, keep the blocks' other work in whole SIMD-sized pieces.
    """
    if x.ndim == 2:
        return x, parallel.ROW_ALIGN
    return xp.reshape(x, (-1,) + x.shape[-2:]), 1


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
