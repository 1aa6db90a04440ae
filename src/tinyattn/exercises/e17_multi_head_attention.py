"""Exercise 17: the weight-split multi-head attention layer of the book, as one op."""

import math

import numpy as np

import tinyattn as torch
from tinyattn.autograd import Function
from tinyattn.nn import functional as F

from .e16_causal_head import missing_paths
from .exercise import Exercise, Factor, Mistake, Suspect


class MultiHeadAttention(Function):
    @staticmethod
    def forward(ctx, x, W_query, W_key, W_value, W_out, b_out, num_heads):
        b, T, _ = x.shape
        d_out = W_query.shape[1]
        head_dim = d_out // num_heads

        def split(t):  # (b, T, d_out) -> (b, heads, T, head_dim): the weight split
            return t.view(b, T, num_heads, head_dim).transpose(1, 2)

        q, k, v = split(x @ W_query), split(x @ W_key), split(x @ W_value)
        scale = 1.0 / math.sqrt(head_dim)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        a = torch.softmax((q @ k.transpose(-2, -1) * scale).masked_fill(future, -torch.inf), dim=-1)
        context = (a @ v).transpose(1, 2).reshape(b, T, d_out)  # the heads side by side again
        ctx.save_for_backward(x, W_query, W_key, W_value, W_out, q, k, v, a, context)
        ctx.scale, ctx.num_heads = scale, num_heads
        return context @ W_out + b_out

    @staticmethod
    def backward(ctx, grad_out):
        x, W_query, W_key, W_value, W_out, q, k, v, a, context = ctx.saved_tensors
        # --- solution ---
        b, T, d_out = context.shape
        tokens = x.reshape(b * T, -1)  # (b * T, d_in): every token shares the weights
        grad_rows = grad_out.reshape(b * T, d_out)
        # out = context @ W_out + b_out
        grad_W_out = context.reshape(b * T, d_out).T @ grad_rows
        grad_b_out = grad_rows.sum(dim=0)
        grad_context = (grad_rows @ W_out.T).reshape(b, T, ctx.num_heads, -1).transpose(1, 2)  # split again
        # context = a @ v, head by head; a = softmax(s) (exercise 09); s = q @ k^T * scale
        grad_a = grad_context @ v.transpose(-2, -1)
        grad_v = a.transpose(-2, -1) @ grad_context
        grad_s = a * (grad_a - (grad_a * a).sum(dim=-1, keepdim=True)) * ctx.scale
        grad_q, grad_k = grad_s @ k, grad_s.transpose(-2, -1) @ q

        def merge(grad):  # (b, heads, T, head_dim) -> (b * T, d_out): undo the split
            return grad.transpose(1, 2).reshape(b * T, d_out)

        grads = [merge(grad_q), merge(grad_k), merge(grad_v)]
        # x feeds q, k and v: the sum of three paths
        grad_x = (grads[0] @ W_query.T + grads[1] @ W_key.T + grads[2] @ W_value.T).reshape(x.shape)
        return grad_x, tokens.T @ grads[0], tokens.T @ grads[1], tokens.T @ grads[2], grad_W_out, grad_b_out, None


# --- mistakes learners make -------------------------------------------------------------------


def _backward(ctx, grad_out, scale=None, out_transposed=False, bias_summed=True):
    """The solution with one step changed: what the mistakes below share."""
    x, W_query, W_key, W_value, W_out, q, k, v, a, context = ctx.saved_tensors
    b, T, d_out = context.shape
    tokens = x.reshape(b * T, -1)
    grad_rows = grad_out.reshape(b * T, d_out)
    rows = context.reshape(b * T, d_out)
    grad_W_out = grad_rows.T @ rows if out_transposed else rows.T @ grad_rows
    grad_b_out = grad_rows.sum(dim=0) if bias_summed else grad_out
    grad_context = (grad_rows @ W_out.T).reshape(b, T, ctx.num_heads, -1).transpose(1, 2)
    grad_a = grad_context @ v.transpose(-2, -1)
    grad_v = a.transpose(-2, -1) @ grad_context
    grad_s = a * (grad_a - (grad_a * a).sum(dim=-1, keepdim=True)) * (ctx.scale if scale is None else scale)
    grad_q, grad_k = grad_s @ k, grad_s.transpose(-2, -1) @ q
    grads = [g.transpose(1, 2).reshape(b * T, d_out) for g in (grad_q, grad_k, grad_v)]
    grad_x = (grads[0] @ W_query.T + grads[1] @ W_key.T + grads[2] @ W_value.T).reshape(x.shape)
    return grad_x, tokens.T @ grads[0], tokens.T @ grads[1], tokens.T @ grads[2], grad_W_out, grad_b_out, None


def scale_forgotten(ctx, grad_out):
    return _backward(ctx, grad_out, scale=1.0)


def scale_of_d_out(ctx, grad_out):
    x, W_query, *_ = ctx.saved_tensors
    return _backward(ctx, grad_out, scale=1.0 / math.sqrt(W_query.shape[1]))  # d_out, not head_dim


def out_weight_transposed(ctx, grad_out):
    return _backward(ctx, grad_out, out_transposed=True)


def bias_not_summed(ctx, grad_out):
    return _backward(ctx, grad_out, bias_summed=False)


# ----------------------------------------------------------------------------------------------


def layer(x, W_query, W_key, W_value, W_out, b_out, num_heads, paths="qkv"):
    """The library's computation of the forward (x may reach it through only some of q, k, v)."""
    b, T, _ = x.shape
    d_out = W_query.shape[-1]
    inputs = {p: x if p in paths else x.detach() for p in "qkv"}

    def split(t):
        return t.reshape(b, T, num_heads, d_out // num_heads).transpose(1, 2)

    q, k, v = (split(inputs[p] @ W) for p, W in zip("qkv", (W_query, W_key, W_value)))
    context = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, T, d_out)
    return context @ W_out + b_out


def example():
    rng = np.random.default_rng(17)
    case = {"x": rng.standard_normal((2, 3, 2))}
    for name in ("W_query", "W_key", "W_value"):
        case[name] = rng.standard_normal((2, 6))
    case.update(W_out=0.5 * rng.standard_normal((6, 6)), b_out=rng.standard_normal(6), num_heads=2)
    return case


def random_case(draw, s):
    b, T, d_in = draw(s.size(1, 2)), draw(s.size(1, 3)), draw(s.size(1, 3))
    heads, head_dim = draw(s.size(1, 2)), draw(s.size(1, 2))
    d_out = heads * head_dim
    case = {"x": draw(s.floats((b, T, d_in)))}
    for name in ("W_query", "W_key", "W_value"):
        case[name] = draw(s.floats((d_in, d_out)))
    case.update(W_out=draw(s.floats((d_out, d_out))), b_out=draw(s.floats((d_out,))), num_heads=heads)
    return case


def expanded(case):
    b, T, _ = case["x"].shape
    shapes = {name: (b,) + case[name].shape for name in ("W_query", "W_key", "W_value", "W_out")}
    return {**shapes, "b_out": (b, T) + case["b_out"].shape}


def factors(case):
    d_out, heads = case["W_query"].shape[1], case["num_heads"]
    head_dim = d_out // heads
    return [
        Factor("sqrt(head_dim)", math.sqrt(head_dim), finding="scale-forgotten", title="scale 1/sqrt(d) forgotten",
               explanation=f"Forward multiplies the scores by 1/sqrt(head_dim) (head_dim = {head_dim}), so their "
               "gradient must be multiplied by it too, before it reaches q and k."),
        Factor("1/sqrt(num_heads)", 1 / math.sqrt(heads), finding="wrong-scale",
               title="scale 1/sqrt(d_out), not 1/sqrt(head_dim)",
               explanation=f"Each head's scores are scaled by 1/sqrt(head_dim) = 1/sqrt({head_dim}), not by "
               f"1/sqrt(d_out) = 1/sqrt({d_out}): use ctx.scale."),
        Factor("1/sqrt(head_dim)", 1 / math.sqrt(head_dim), explanation="The scale is applied twice."),
    ]


def edge(case):
    b, T, _ = case["x"].shape
    notes = ["one token" if T == 1 else "", "one head" if case["num_heads"] == 1 else "",
             "heads of size 1" if case["W_query"].shape[1] == case["num_heads"] else ""]
    return ", ".join(n for n in notes if n)


EXERCISE = Exercise(
    number=17,
    name="multi_head_attention",
    title="the book's weight-split MultiHeadAttention",
    function=MultiHeadAttention,
    statement=(
        "The chapter's MultiHeadAttention without dropout, as one op: q, k, v = x @ W each, split into "
        "num_heads heads of head_dim = d_out / num_heads by a view and a transpose; per head a causal "
        "attention as in exercise 16, scaled by 1/sqrt(head_dim); the heads merged back and projected: "
        "out = context @ W_out + b_out. Backward undoes each step in reverse: the merge becomes a split, "
        "the split a merge."
    ),
    shapes=(
        "x                         (b, T, d_in), e.g. (2, 3, 2)\n"
        "W_query, W_key, W_value   (d_in, d_out), e.g. (2, 6);  num_heads, e.g. 2\n"
        "W_out (d_out, d_out), b_out (d_out,)\n"
        "q, k, v (saved)           (b, heads, T, head_dim);  a (saved): (b, heads, T, T)\n"
        "context (saved)           (b, T, d_out)\n"
        "grad_out                  (b, T, d_out)\n"
        "  ->  return grad_x, grad_W_query, grad_W_key, grad_W_value, grad_W_out, grad_b_out, None"
    ),
    hint=(
        "Start with out = context @ W_out + b_out on tokens flattened to (b * T, d_out). grad_context, "
        "reshaped to (b, T, heads, head_dim) and transposed to (b, heads, T, head_dim), goes through "
        "exercise 16's steps per head; grad_q, grad_k, grad_v are then merged back to (b * T, d_out) "
        "(transpose(1, 2), reshape) before they meet the weights."
    ),
    todo="return grad_x, grad_W_query, grad_W_key, grad_W_value, grad_W_out, grad_b_out, None",
    args=("x", "W_query", "W_key", "W_value", "W_out", "b_out", "num_heads"),
    grads=("x", "W_query", "W_key", "W_value", "W_out", "b_out"),
    example=example,
    random_case=random_case,
    reference=layer,
    expanded=expanded,
    factors=factors,
    suspects=(
        Suspect("missing-path", "x misses a path (q, k or v)",
                "x is used three times (q, k and v): its gradient is the sum of the three paths.",
                lambda probe: missing_paths(probe, layer)),
    ),
    edge=edge,
    mistakes=(
        Mistake(scale_forgotten, "scale-forgotten"),
        Mistake(scale_of_d_out, "wrong-scale"),
        Mistake(out_weight_transposed, "transposed"),
        Mistake(bias_not_summed, "missing-broadcast-sum"),
    ),
)
