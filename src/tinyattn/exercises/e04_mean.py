"""Exercise 04: the mean over one dim: a sum, and a constant."""

import math

from tinyattn.autograd import Function

from .common import example_values, reduction_edge
from .exercise import Exercise, Factor, Mistake


class Mean(Function):
    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.x_shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        return x.mean(dim=dim, keepdim=keepdim)

    @staticmethod
    def backward(ctx, grad_out):
        # --- solution ---
        if not ctx.keepdim:
            grad_out = grad_out.unsqueeze(ctx.dim)
        n = ctx.x_shape[ctx.dim]  # the mean divides the sum by n, so does its gradient
        return grad_out.expand(ctx.x_shape) / n, None, None


# --- mistakes learners make -------------------------------------------------------------------


def not_divided(ctx, grad_out):
    if not ctx.keepdim:
        grad_out = grad_out.unsqueeze(ctx.dim)
    return grad_out.expand(ctx.x_shape), None, None


def divided_by_numel(ctx, grad_out):
    if not ctx.keepdim:
        grad_out = grad_out.unsqueeze(ctx.dim)
    return grad_out.expand(ctx.x_shape) / math.prod(ctx.x_shape), None, None


# ----------------------------------------------------------------------------------------------


def example():
    return {**example_values(4, x=(2, 3, 4)), "dim": 1, "keepdim": False}


def random_case(draw, s):
    x = draw(s.floats(draw(s.shape(1, 3))))
    return {"x": x, "dim": draw(s.one_of(range(-x.ndim, x.ndim))), "keepdim": draw(s.booleans())}


def factors(case):
    n = case["x"].shape[case["dim"]]
    numel = case["x"].size
    return [
        Factor("n", n, explanation=f"The mean divides the sum by n = {n}, the size of dim {case['dim']}: "
               "so does its gradient."),
        Factor("n / x.numel()", n / numel, explanation=f"Divide by n = {n}, the size of the averaged dim, "
               f"not by the {numel} elements of x."),
    ]


EXERCISE = Exercise(
    number=4,
    name="mean",
    title="x.mean(dim, keepdim)",
    function=Mean,
    statement=(
        "out = x.mean(dim=dim, keepdim=keepdim): the sum of exercise 03 divided by n, the size of dim. "
        "The gradient is grad_out copied back along dim, and divided by n."
    ),
    shapes=(
        "x         any shape, e.g. (2, 3, 4)\n"
        "dim       an int, e.g. 1 or -1\n"
        "out       x's shape without dim (keepdim=False), or with it as 1 (keepdim=True)\n"
        "grad_out  like out  ->  return grad_x (like x), None, None"
    ),
    hint="Exercise 03's backward, divided by n = ctx.x_shape[ctx.dim] (n, not x.numel()).",
    todo="return grad_x (the shape of x), None, None",
    args=("x", "dim", "keepdim"),
    grads=("x",),
    example=example,
    random_case=random_case,
    reference=lambda x, dim, keepdim: x.mean(dim=dim, keepdim=keepdim),
    factors=factors,
    edge=reduction_edge,
    mistakes=(
        Mistake(not_divided, "constant-factor"),
        Mistake(divided_by_numel, "constant-factor"),
    ),
)
