"""Exercise 16: one causal attention head, forward and backward as one op."""

import itertools
import math

import numpy as np

import tinyattn as torch
from tinyattn.autograd import Function
from tinyattn.nn import functional as F

from .exercise import Exercise, Factor, Mistake, Suspect


class AttentionHead(Function):
    @staticmethod
    def forward(ctx, x, W_query, W_key, W_value):
        q, k, v = x @ W_query, x @ W_key, x @ W_value  # (b, T, d_out)
        scale = 1.0 / math.sqrt(q.shape[-1])
        T = x.shape[-2]
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        s = (q @ k.transpose(-2, -1) * scale).masked_fill(future, -torch.inf)  # (b, T, T)
        a = torch.softmax(s, dim=-1)
        ctx.save_for_backward(x, W_query, W_key, W_value, q, k, v, a)
        ctx.scale = scale
        return a @ v

    @staticmethod
    def backward(ctx, grad_out):
        x, W_query, W_key, W_value, q, k, v, a = ctx.saved_tensors
        # --- solution ---
        # out = a @ v
        grad_a = grad_out @ v.transpose(-2, -1)
        grad_v = a.transpose(-2, -1) @ grad_out
        # a = softmax(s), exercise 09 (a masked entry has a = 0, so its gradient comes out 0)
        grad_s = a * (grad_a - (grad_a * a).sum(dim=-1, keepdim=True))
        # s = (q @ k^T) * scale
        grad_s = grad_s * ctx.scale
        grad_q = grad_s @ k
        grad_k = grad_s.transpose(-2, -1) @ q
        # q, k, v = x @ W: x is used three times, so its gradient is the sum of three
        grad_x = grad_q @ W_query.T + grad_k @ W_key.T + grad_v @ W_value.T
        rows = x.reshape(-1, x.shape[-1])  # (b * T, d_in): every token shares the weights

        def grad_w(grad):
            return rows.T @ grad.reshape(-1, grad.shape[-1])

        return grad_x, grad_w(grad_q), grad_w(grad_k), grad_w(grad_v)


# --- mistakes learners make -------------------------------------------------------------------


def _backward(ctx, grad_out, scaled=True, paths="qkv", summed=True):
    """The solution, with one of its steps left out: what the mistakes below share."""
    x, W_query, W_key, W_value, q, k, v, a = ctx.saved_tensors
    grad_a = grad_out @ v.transpose(-2, -1)
    grad_v = a.transpose(-2, -1) @ grad_out
    grad_s = a * (grad_a - (grad_a * a).sum(dim=-1, keepdim=True))
    grad_s = grad_s * ctx.scale if scaled else grad_s
    grad_q = grad_s @ k
    grad_k = grad_s.transpose(-2, -1) @ q
    terms = {"q": grad_q @ W_query.T, "k": grad_k @ W_key.T, "v": grad_v @ W_value.T}
    grad_x = sum(terms[p] for p in paths)
    if summed:
        rows = x.reshape(-1, x.shape[-1])
        return grad_x, *(rows.T @ g.reshape(-1, g.shape[-1]) for g in (grad_q, grad_k, grad_v))
    return grad_x, *(x.transpose(-2, -1) @ g for g in (grad_q, grad_k, grad_v))


def scale_forgotten(ctx, grad_out):
    return _backward(ctx, grad_out, scaled=False)


def value_path_only(ctx, grad_out):
    return _backward(ctx, grad_out, paths="v")


def weights_not_summed(ctx, grad_out):
    return _backward(ctx, grad_out, summed=False)


# ----------------------------------------------------------------------------------------------


def head(x, W_query, W_key, W_value, paths="qkv"):
    """The library's computation of the forward; x may reach it through only some of q, k, v."""
    inputs = {p: x if p in paths else x.detach() for p in "qkv"}
    q, k, v = inputs["q"] @ W_query, inputs["k"] @ W_key, inputs["v"] @ W_value
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def missing_paths(probe, reference):
    """A suspect test: the gradient of x has only some of its three paths (through q, k and v).

    The true gradient is the sum of the three; each alone is the gradient with x detached in the
    other two uses."""
    single = {p: probe.reference_jacobian(fn=lambda *args, p=p: reference(*args, paths=p))["x"] for p in "qkv"}
    for size in (1, 2):
        for paths in itertools.combinations("qkv", size):
            if probe.matches("x", sum(single[p] for p in paths)):
                return {"x": f"has only the path{'s' * (size > 1)} through {' and '.join(paths)}"}
    return {}


def example():
    rng = np.random.default_rng(16)
    return {"x": rng.standard_normal((2, 4, 4)), "W_query": rng.standard_normal((4, 3)),
            "W_key": rng.standard_normal((4, 3)), "W_value": rng.standard_normal((4, 3))}


def random_case(draw, s):
    b, T, d_in, d_out = draw(s.size(1, 2)), draw(s.size(1, 4)), draw(s.size(1, 3)), draw(s.size(1, 3))
    case = {"x": draw(s.floats((b, T, d_in)))}
    for name in ("W_query", "W_key", "W_value"):
        case[name] = draw(s.floats((d_in, d_out)))
    return case


def expanded(case):
    b = case["x"].shape[0]
    return {name: (b,) + case[name].shape for name in ("W_query", "W_key", "W_value")}


def factors(case):
    d = case["W_query"].shape[1]
    return [
        Factor("sqrt(d)", math.sqrt(d), finding="scale-forgotten", title="scale 1/sqrt(d) forgotten",
               explanation=f"Forward multiplies the scores by 1/sqrt(d) (d = {d}), so their gradient must be "
               "multiplied by it too, before it reaches q and k."),
        Factor("1/sqrt(d)", 1 / math.sqrt(d), explanation="The scale 1/sqrt(d) is applied twice."),
    ]


def edge(case):
    b, T, _ = case["x"].shape
    notes = ["one token" if T == 1 else "", "a batch of one" if b == 1 else ""]
    if 1 in case["W_query"].shape:
        notes.append("a size-1 dim in the weights")
    return ", ".join(n for n in notes if n)


EXERCISE = Exercise(
    number=16,
    name="causal_head",
    title="one causal attention head, as one op",
    function=AttentionHead,
    statement=(
        "The whole causal head of the attention chapter, without dropout: q, k, v = x @ W_query, x @ W_key, "
        "x @ W_value; s = (q @ k^T) / sqrt(d) with the future masked to -inf; a = softmax(s); out = a @ v. "
        "Go backwards one line at a time with two rules: for C = A @ B, grad_A = grad_C @ B^T and grad_B = "
        "A^T @ grad_C; and a tensor used several times (x feeds q, k and v) gets the sum of the gradients "
        "of its uses. The weights are shared by every batch item."
    ),
    shapes=(
        "x                         (b, T, d_in), e.g. (2, 4, 4)\n"
        "W_query, W_key, W_value   (d_in, d), e.g. (4, 3)\n"
        "q, k, v (saved)           (b, T, d);  a (saved): (b, T, T)\n"
        "grad_out                  (b, T, d)  ->  return grad_x, grad_W_query, grad_W_key, grad_W_value"
    ),
    hint=(
        "Backwards: grad_a and grad_v from out = a @ v; grad_s from exercise 09 (masked entries come out "
        "0 by themselves), times the scale; grad_q = grad_s @ k and grad_k = grad_s^T @ q. For the weights, "
        "flatten the tokens: x.reshape(-1, d_in).T @ grad_q.reshape(-1, d) sums over the batch."
    ),
    todo="return grad_x, grad_W_query, grad_W_key, grad_W_value",
    args=("x", "W_query", "W_key", "W_value"),
    grads=("x", "W_query", "W_key", "W_value"),
    example=example,
    random_case=random_case,
    reference=head,
    expanded=expanded,
    factors=factors,
    suspects=(
        Suspect("missing-path", "x misses a path (q, k or v)",
                "x is used three times (q, k and v): its gradient is the sum of the three paths.",
                lambda probe: missing_paths(probe, head)),
    ),
    edge=edge,
    mistakes=(
        Mistake(scale_forgotten, "scale-forgotten"),
        Mistake(value_path_only, "missing-path"),
        Mistake(weights_not_summed, "missing-broadcast-sum"),
    ),
)
