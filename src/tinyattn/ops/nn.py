"""The fused ops of nn: each layer's math as one op whose backward is derived by hand, on raw arrays.

A linear layer is one matrix product over all leading dims; dropout multiplies by its scaled mask;
GELU keeps Phi(x) for its backward; attention is one op over the (queries x keys) scores, with the
chain's backward written out in reverse. `tinyattn.nn.functional` checks the arguments and runs
them (`ops.LinearOp.apply(...)`); layer norm is in `softmax.py` (normalization), the losses in
`losses.py`.
"""

import math

from .. import backend
from ..backend import parallel
from .base import Op, unbroadcast
from .elementwise import stable_sigmoid
from .softmax import softmax_backward, softmax_forward


# ---------------------------------------------------------------------------------------------
# linear and embedding


class LinearOp(Op):
    """y = x W^T + b, as one matrix product over all leading dims (W has PyTorch's (out, in) layout)."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        xp = ctx.xp
        # (batch * tokens, in): one big GEMM (the row count spelled out, not -1: in_features may be 0)
        shape = (math.prod(x.shape[:-1]), x.shape[-1])
        rows = backend.reshape_view(x, shape)
        copied = rows is None  # x's layout (a transposed batch) needs a copy: as PyTorch's, x is then not saved
        if copied:
            rows = xp.reshape(x, shape)
        y = rows @ backend.matrix_transpose(weight)
        if bias is not None:
            y += bias
        # as PyTorch's: x (as its rows) for the weight's gradient, the weight for x's; nothing for the bias
        needs_x, needs_weight = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        ctx.save_for_backward(rows if needs_weight else None, weight if needs_x else None,
                              computed_from=(x,) if needs_weight and not copied else ())
        ctx.in_shape, ctx.out_features = x.shape, weight.shape[0]
        return xp.reshape(y, x.shape[:-1] + (weight.shape[0],))

    @staticmethod
    def backward(ctx, grad):
        rows, weight = ctx.saved_tensors
        xp = ctx.xp
        grad_rows = xp.reshape(grad, (math.prod(ctx.in_shape[:-1]), ctx.out_features))
        gx = xp.reshape(grad_rows @ weight, ctx.in_shape) if ctx.needs_input_grad[0] else None
        gw = backend.matrix_transpose(grad_rows) @ rows if ctx.needs_input_grad[1] else None
        gb = backend.sum_along(grad_rows, (0,)) if ctx.needs_input_grad[2] else None
        return gx, gw, gb


class EmbeddingOp(Op):
    """Rows of `weight` picked by integer ids; the backward adds each gradient row back into its id
    (except into the padding row, when there is one: it gets no gradient)."""

    @staticmethod
    def forward(ctx, ids, weight, padding_idx=None):
        xp = ctx.xp
        flat = xp.reshape(ids, (-1,))
        ctx.save_for_backward(flat, computed_from=(ids,))  # PyTorch's: the ids
        ctx.weight_shape = weight.shape
        ctx.padding_idx = padding_idx
        return xp.reshape(xp.take(weight, flat, axis=0), ids.shape + (weight.shape[1],))

    @staticmethod
    def backward(ctx, grad):
        (flat,) = ctx.saved_tensors
        xp = ctx.xp
        full = xp.zeros(ctx.weight_shape, dtype=grad.dtype, **backend.creation_kwargs(xp))
        rows = xp.reshape(grad, (flat.shape[0], ctx.weight_shape[1]))  # (not -1: the rows may have 0 numbers)
        full = backend.index_add_rows(full, flat, rows)
        if ctx.padding_idx is not None:
            full[ctx.padding_idx, ...] = 0
        return None, full, None


# ---------------------------------------------------------------------------------------------
# dropout


class DropoutOp(Op):
    """x * mask, where the mask holds 0 (dropped) or 1/(1-p) (kept, scaled to keep the expectation)."""

    @staticmethod
    def forward(ctx, x, scaled_mask):
        ctx.save_for_backward(scaled_mask)
        return x * scaled_mask

    @staticmethod
    def backward(ctx, grad):
        (scaled_mask,) = ctx.saved_tensors
        return grad * scaled_mask, None


# ---------------------------------------------------------------------------------------------
# activations


class GeluOp(Op):
    """x * Phi(x), Phi the standard normal CDF ('none'), or GPT-2's tanh approximation ('tanh').

    The forward keeps Phi(x) for the backward, d/dx x Phi(x) = Phi(x) + x Phi'(x), and works in
    place on its own temporaries: this op runs on the largest activations of a GPT, spread over the
    cores (parallel.map_rows; the math is elementwise).
    """

    @staticmethod
    def forward(ctx, x, approximate):
        xp = ctx.xp
        flat = xp.reshape(x, (-1,))  # elementwise: any split of the elements will do
        y, cdf = parallel.map_blocks(lambda part: gelu_forward(xp, part, approximate), flat)
        ctx.save_for_backward(x, cdf)
        ctx.approximate = approximate
        return xp.reshape(y, x.shape)

    @staticmethod
    def backward(ctx, grad):
        x, cdf = ctx.saved_tensors
        xp = ctx.xp
        flat = [xp.reshape(a, (-1,)) for a in (grad, x, cdf)]
        slope = parallel.map_blocks(lambda *parts: gelu_backward(xp, *parts, ctx.approximate), *flat)
        return xp.reshape(slope, x.shape), None


def gelu_forward(xp, x, approximate):
    """(x Phi(x), Phi(x)) elementwise."""
    if approximate == "tanh":  # Phi(x) ~ (1 + tanh(k (x + c x^3))) / 2, k = sqrt(2/pi), c = 0.044715
        inner = x * x
        inner *= GELU_C * SQRT_2_OVER_PI
        inner += SQRT_2_OVER_PI
        inner *= x  # k (1 + c x^2) x
        cdf = xp.tanh(inner)
    else:
        cdf = backend.erf(x * (1 / math.sqrt(2)))
    cdf += 1.0
    cdf *= 0.5
    return x * cdf, cdf


def gelu_backward(xp, grad, x, cdf, approximate):
    """The gradient of gelu's input: grad (Phi(x) + x Phi'(x))."""
    if approximate == "tanh":
        # with t = tanh(...) = 2 Phi - 1: Phi' = (1 - t^2)/2 * k (1 + 3 c x^2) = 2 Phi (1 - Phi) k (1 + 3 c x^2)
        slope = x * x
        slope *= 3 * GELU_C * 2 * SQRT_2_OVER_PI
        slope += 2 * SQRT_2_OVER_PI  # 2 k (1 + 3 c x^2)
        slope *= cdf
        slope *= 1.0 - cdf
    else:  # Phi' is the standard normal density
        slope = x * x
        slope *= -0.5
        slope = xp.exp(slope)
        slope *= 1 / math.sqrt(2 * math.pi)
    slope *= x
    slope += cdf
    slope *= grad
    return slope


SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
GELU_C = 0.044715


class SiluOp(Op):
    """x * sigmoid(x) (also called swish); d/dx = s + x s (1 - s) with s = sigmoid(x)."""

    @staticmethod
    def forward(ctx, x):
        s = stable_sigmoid(ctx.xp, x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        return grad * s * (1 + x * (1 - s))


class SoftplusOp(Op):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (PyTorch's switch to the
    identity, where the two agree to float precision). Its slope is sigmoid(beta x)."""

    @staticmethod
    def forward(ctx, x, beta, threshold):
        xp = ctx.xp
        scaled = x * beta
        # log(1 + e^z) = max(z, 0) + log(1 + e^-|z|): no overflow for large z
        soft = (xp.maximum(scaled, xp.zeros_like(scaled)) + xp.log1p(xp.exp(-xp.abs(scaled)))) / beta
        linear = scaled > threshold
        ctx.save_for_backward(scaled, linear, computed_from=(x,))  # PyTorch saves x: they stand for it
        return xp.where(linear, x, soft)

    @staticmethod
    def backward(ctx, grad):
        scaled, linear = ctx.saved_tensors
        xp = ctx.xp
        return xp.where(linear, grad, grad * stable_sigmoid(xp, scaled)), None, None


class LeakyReluOp(Op):
    """x where x > 0, negative_slope * x elsewhere (the slope at 0 is negative_slope, as in PyTorch)."""

    @staticmethod
    def forward(ctx, x, negative_slope):
        positive = x > 0
        ctx.save_for_backward(positive, computed_from=(x,))  # PyTorch saves x: the mask stands for it
        ctx.negative_slope = negative_slope
        return ctx.xp.where(positive, x, x * negative_slope)

    @staticmethod
    def backward(ctx, grad):
        (positive,) = ctx.saved_tensors
        return ctx.xp.where(positive, grad, grad * ctx.negative_slope), None


class EluOp(Op):
    """x where x > 0, alpha (exp(x) - 1) elsewhere; the slope there is alpha exp(x) (computed from x,
    not as y + alpha, which loses exp(x) to rounding once it is below float precision)."""

    @staticmethod
    def forward(ctx, x, alpha):
        xp = ctx.xp
        positive = x > 0
        negative_part = xp.minimum(x, xp.zeros_like(x))  # exp() of the negative part only: no overflow
        ctx.save_for_backward(positive, negative_part, computed_from=(x,))  # PyTorch saves x
        ctx.alpha = alpha
        return xp.where(positive, x, alpha * xp.expm1(negative_part))

    @staticmethod
    def backward(ctx, grad):
        positive, negative_part = ctx.saved_tensors
        xp = ctx.xp
        return xp.where(positive, grad, grad * (ctx.alpha * xp.exp(negative_part))), None


# ---------------------------------------------------------------------------------------------
# padding


class ConstantPadNdOp(Op):
    """x with `value` added around it; a negative pad cuts elements off instead. `pads` is one
    (before, after) pair per dim. The gradient is the part of the output's gradient where x landed."""

    @staticmethod
    def forward(ctx, x, pads, value):
        xp = ctx.xp
        source, target, shape = [], [], []
        for n, (before, after) in zip(x.shape, pads):
            kept = n - max(-before, 0) - max(-after, 0)
            source.append(slice(max(-before, 0), max(-before, 0) + max(kept, 0)))
            target.append(slice(max(before, 0), max(before, 0) + max(kept, 0)))
            shape.append(n + before + after)
        ctx.source, ctx.target, ctx.in_shape = tuple(source), tuple(target), x.shape
        out = xp.full(tuple(shape), value, dtype=x.dtype, **backend.creation_kwargs(xp))
        out[ctx.target] = x[ctx.source]
        return out

    @staticmethod
    def backward(ctx, grad):
        xp = ctx.xp
        gx = xp.zeros(ctx.in_shape, dtype=grad.dtype, **backend.creation_kwargs(xp))
        gx[ctx.source] = grad[ctx.target]
        return gx, None, None


# ---------------------------------------------------------------------------------------------
# attention


class AttentionOp(Op):
    """Scaled dot-product attention as one op, returning (context, weights):

        scores  = q k^T / sqrt(E) (+ bias), -inf where `blocked` is True
                  (q k^T * scale instead, when a scale is given)
        weights = softmax(scores) along the keys  (a row with every key blocked gives zeros)
        context = (weights * keep) v              (keep: dropout's scaled mask, or None)

    As a chain of tensor ops this is a transpose, a matmul, a masked_fill, a division, a softmax and a
    second matmul, each making its own pass over the (queries x keys) scores and keeping its own copy
    for backward. One op makes fewer passes and saves only the weights. Its backward is the chain's,
    in reverse:

        grad_v       = (weights * keep)^T grad_context
        grad_weights = (grad_context v^T) * keep  (+ the gradient of the weights output, if used)
        grad_scores  = softmax's backward: weights * (grad_weights - <grad_weights, weights>);
                       0 at blocked places, because the weights are 0 there
        grad_bias    = grad_scores, summed to the bias's shape
        grad_q       = grad_scores k / sqrt(E),   grad_k = (q^T grad_scores)^T / sqrt(E)  (or * scale)

    The batch is spread over the cores: each piece of the first dim computes all of the above for its
    own items (parallel.map_batch), so the products of its slices and its softmax run side by side.
    """

    @staticmethod
    def forward(ctx, q, k, v, blocked, bias, scale, keep):
        xp = ctx.xp
        context, weights = parallel.map_batch(lambda *parts: attention_forward(xp, *parts, scale),
                                              q, k, v, blocked, bias, keep)
        # what PyTorch's attention on the CPU saves: v as it is (changed in place, backward raises) and
        # q and k as copies (it keeps them scaled), so that changing q or k in place later is fine
        needs_q, needs_k = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        q_copy = xp.asarray(q, copy=True) if needs_k or ctx.needs_input_grad[4] else q
        k_copy = xp.asarray(k, copy=True) if needs_q or ctx.needs_input_grad[4] else k
        ctx.save_for_backward(q_copy, k_copy, v, weights, keep)
        ctx.scale = scale
        ctx.bias_shape = None if bias is None else bias.shape
        ctx.set_materialize_grads(False)  # the weights output is mostly unused: get None, not zeros
        return context, weights

    @staticmethod
    def backward(ctx, grad_context, grad_weights):
        q, k, v, weights, keep = ctx.saved_tensors
        xp = ctx.xp
        needs = ctx.needs_input_grad[:3] + (ctx.needs_input_grad[4],)  # q, k, v, bias

        def grads(q, k, v, weights, keep, grad_context, grad_weights):
            return attention_backward(xp, q, k, v, weights, keep, grad_context, grad_weights, ctx.scale, needs)

        if needs[3]:  # the bias's gradient sums over the batch: computed whole
            grad_q, grad_k, grad_v, grad_bias = grads(q, k, v, weights, keep, grad_context, grad_weights)
            grad_bias = unbroadcast(xp, grad_bias, ctx.bias_shape)
        else:
            wanted = [i for i in range(3) if needs[i]]

            def wanted_grads(*parts):  # the pieces return arrays only (no None), computed once
                found = grads(*parts)
                return tuple(found[i] for i in wanted)

            found = parallel.map_batch(wanted_grads, q, k, v, weights, keep, grad_context, grad_weights)
            grad_q, grad_k, grad_v = (found[wanted.index(i)] if i in wanted else None for i in range(3))
            grad_bias = None
        grad_q, grad_k, grad_v = (None if g is None else unbroadcast(xp, g, t.shape)
                                  for g, t in ((grad_q, q), (grad_k, k), (grad_v, v)))
        return grad_q, grad_k, grad_v, None, grad_bias, None, None


def attention_forward(xp, q, k, v, blocked, bias, keep, scale):
    """(context, weights) of AttentionOp for arrays that broadcast together."""
    scores = backend.matmul(q, backend.matrix_transpose(k))  # (..., queries, keys)
    if scale is None:
        scores /= math.sqrt(q.shape[-1])  # as the book writes it
    else:
        scores *= scale  # as PyTorch applies a given scale
    if bias is not None:
        scores += bias  # attention() checked that it has the scores' dtype and broadcasts to them
    if blocked is not None:
        backend.masked_assign(scores, blocked, -math.inf)
    weights = softmax_forward(xp, scores, scores.ndim - 1, safe=True, overwrite=True)
    context = backend.matmul(weights if keep is None else weights * keep, v)
    return context, weights


def attention_backward(xp, q, k, v, weights, keep, grad_context, grad_weights, scale, needs):
    """(grad_q, grad_k, grad_v, grad_bias) of AttentionOp, each None where `needs` (q, k, v, bias)
    does not ask for it; the gradients have the broadcast shapes (the caller sums them down)."""
    needs_q, needs_k, needs_v, needs_bias = needs
    grad_q = grad_k = grad_v = grad_bias = None
    if grad_context is None:
        grad_w = grad_weights
    else:
        if needs_v:
            dropped = weights if keep is None else weights * keep
            grad_v = backend.matmul(backend.matrix_transpose(dropped), grad_context)
        grad_w = backend.matmul(grad_context, backend.matrix_transpose(v))
        if keep is not None:
            grad_w *= keep
        if grad_weights is not None:
            grad_w += grad_weights
    if needs_q or needs_k or needs_bias:
        # grad_w is ours to overwrite unless it is the incoming gradient of the weights itself
        grad_scores = softmax_backward(xp, weights, grad_w, weights.ndim - 1, overwrite=grad_w is not grad_weights)
        if needs_bias:  # the bias's gradient is grad_scores itself: scale a new array
            grad_bias = grad_scores
            grad_scores = grad_scores / math.sqrt(q.shape[-1]) if scale is None else grad_scores * scale
        elif scale is None:
            grad_scores /= math.sqrt(q.shape[-1])
        else:
            grad_scores *= scale
        if needs_q:
            grad_q = backend.matmul(grad_scores, k)
        if needs_k:  # (q^T grad_scores)^T: the product the chain's matmul backward computes, to the bit
            grad_k = backend.matrix_transpose(backend.matmul(backend.matrix_transpose(q), grad_scores))
    return grad_q, grad_k, grad_v, grad_bias
