"""The fused losses of nn: cross-entropy (its gradient is softmax - one_hot), nll, mse and binary
cross-entropy, each one op with its backward derived by hand, on raw arrays.
`tinyattn.nn.functional` checks the arguments, reads the reduction and runs them.
"""

import numpy as np

from .. import backend
from .base import Op


class CrossEntropyOp(Op):
    """Mean (or sum) of -log softmax(logits)[target] over rows; gradient: softmax - one_hot.

    ignore_index None: every target is a class (checked), so no row is masked out and the count of
    rows is their number; the same numbers as masking with an all-true mask, with fewer passes."""

    @staticmethod
    def forward(ctx, logits, target, ignore_index, reduction):
        xp = ctx.xp
        shifted = logits - backend.max_for_shift(logits, 1)
        log_total = xp.log(backend.sum_along(xp.exp(shifted), (1,), keepdims=True))
        if ignore_index is None:  # (NumPy only: see F._plain_class_batch)
            picked = backend.pick_columns(shifted, target) - log_total[:, 0]
            losses = -picked
            ctx.save_for_backward(shifted, log_total, target, None, None)
            ctx.reduction = reduction
            if reduction == "none":
                return losses
            total = backend.sum_all(losses)
            return total / logits.dtype.type(target.shape[0]) if reduction == "mean" else total  # (N ones summed)
        else:
            valid = target != ignore_index
            safe_target = xp.where(valid, target, 0)
            if logits.shape[1]:
                picked = backend.pick_columns(shifted, safe_target) - log_total[:, 0]
            else:  # no classes: every target was ignored (class_rows checked), nothing to pick
                picked = xp.zeros(target.shape, dtype=logits.dtype, **backend.creation_kwargs(xp))
            losses = xp.where(valid, -picked, 0.0)
            count = xp.sum(xp.astype(valid, logits.dtype))
        # (the softmax: in backward). As PyTorch's, the target is saved (changed in place, backward
        # raises), the logits are not (log_softmax keeps its own output, which no one else holds)
        ctx.save_for_backward(shifted, log_total, safe_target, valid, count, computed_from=(target,))
        ctx.reduction = reduction
        if reduction == "none":
            return losses
        total = xp.sum(losses)
        return total / count if reduction == "mean" else total

    @staticmethod
    def backward(ctx, grad):
        shifted, log_total, target, valid, count = ctx.saved_tensors
        xp = ctx.xp
        probs = xp.exp(shifted - log_total)
        one_hot = backend.one_hot(target, probs.shape[1], probs.dtype)
        if valid is None:  # every row counts, with a weight of 1 (which would change no bit); NumPy only
            if ctx.reduction == "none":
                return (probs - one_hot) * grad[:, None], None, None, None
            count = shifted.dtype.type(shifted.shape[0])  # (at least 1 row: see F._plain_class_batch)
            scale = grad / count if ctx.reduction == "mean" else grad
            return (probs - one_hot) * scale, None, None, None
        weight = xp.astype(valid, probs.dtype)[:, None]
        if ctx.reduction == "none":
            weight = weight * grad[:, None]
        elif ctx.reduction == "mean":  # no valid row: every weight is 0, and stays 0 (PyTorch's zeros, not NaN)
            weight = weight * (grad / xp.maximum(count, 1))
        else:
            weight = weight * grad
        return (probs - one_hot) * weight, None, None, None


class NllLossOp(Op):
    """-log_probs[row, target] for each row (0 where the target is ignore_index), reduced; the gradient
    is -1 at each row's target (over the count of counted rows for the mean), 0 elsewhere.

    As PyTorch's nll_loss, it saves the input and the target: changing either in place after the
    forward makes backward raise."""

    @staticmethod
    def forward(ctx, log_probs, target, ignore_index, reduction):
        xp = ctx.xp
        valid = target != ignore_index
        safe_target = xp.where(valid, target, 0)  # ignored places pick class 0, then count 0
        if log_probs.shape[1]:
            picked = xp.take_along_axis(log_probs, safe_target[:, None], axis=1)[:, 0]
        else:  # no classes: every target is ignored (class_rows checked); nothing to pick
            picked = xp.zeros(target.shape, dtype=log_probs.dtype, **backend.creation_kwargs(xp))
        losses = xp.where(valid, -picked, 0.0)
        count = xp.sum(xp.astype(valid, log_probs.dtype))
        ctx.save_for_backward(safe_target, valid, count, computed_from=(log_probs, target))
        ctx.reduction, ctx.in_shape = reduction, log_probs.shape
        if reduction == "none":
            return losses
        total = backend.sum_along(losses, (0,))
        return total / count if reduction == "mean" else total

    @staticmethod
    def backward(ctx, grad):
        safe_target, valid, count = ctx.saved_tensors
        xp = ctx.xp
        scale = grad / count if ctx.reduction == "mean" else grad  # (one per row for 'none')
        row_grad = xp.where(valid, -scale, 0.0)  # ignored rows get none (not inf * 0 where count is 0)
        classes = xp.arange(ctx.in_shape[1], **backend.creation_kwargs(xp))
        at_target = classes[None, :] == safe_target[:, None]  # each row's target class
        return xp.where(at_target, row_grad[:, None], 0.0), None, None, None


class MseLossOp(Op):
    """The mean (or sum) of (input - target)^2 over all elements; the gradient to the input is
    2 (input - target) grad (/ n for the mean), its negative to the target.

    As PyTorch's mse_loss, it saves the input and the target (changing either in place after the
    forward makes backward raise), and computes the difference again in backward."""

    @staticmethod
    def forward(ctx, input, target, reduction):
        diff = input - target
        squares = diff**2  # (as the chain (input - target) ** 2 computes it: the same bits)
        axes = tuple(range(squares.ndim))
        ctx.save_for_backward(input, target)
        ctx.reduction = reduction
        if reduction == "sum":
            return backend.sum_along(squares, axes)
        return backend.mean_along(squares, axes, squares.size, False)

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        # as the chain's backwards: the mean's (grad / n), then the square's (2 * diff), then the subtraction's
        share = grad / input.size if ctx.reduction == "mean" else grad
        g = share * (2 * (input - target))
        return (g if ctx.needs_input_grad[0] else None), (-g if ctx.needs_input_grad[1] else None), None


class BinaryCrossEntropyOp(Op):
    """-(y log x + (1 - y) log(1 - x)) elementwise, each log clamped at -100 (so x = 0 or 1 gives 100,
    not inf), with PyTorch's gradients: (x - y) / max(x (1 - x), 1e-12) for x (finite where x is
    0 or 1), and log(1 - x) - log(x) for y (not clamped: infinite where x is 0 or 1, as PyTorch's)."""

    @staticmethod
    def forward(ctx, x, y):
        xp = ctx.xp
        log_x = xp.maximum(xp.log(x), -100.0)
        log_1mx = xp.maximum(xp.log1p(-x), -100.0)
        ctx.save_for_backward(x, y)
        return -(y * log_x + (1 - y) * log_1mx)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        xp = ctx.xp
        gx = grad * (x - y) / xp.maximum(x * (1 - x), BCE_EPSILON) if ctx.needs_input_grad[0] else None
        gy = grad * (xp.log1p(-x) - xp.log(x)) if ctx.needs_input_grad[1] else None
        return gx, gy


BCE_EPSILON = float(np.float32(1e-12))  # PyTorch's bound, a float32 constant (so its bits in float64 too)
