"""Exercise 03: the sum over one dim, with keepdim: the gradient goes back to every summed element."""

from tinyattn.autograd import Function

from .common import example_values, reduction_edge
from .exercise import Exercise, Mistake


class Sum(Function):
    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.x_shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        return x.sum(dim=dim, keepdim=keepdim)

    @staticmethod
    def backward(ctx, grad_out):
        # --- solution ---
        if not ctx.keepdim:
            grad_out = grad_out.unsqueeze(ctx.dim)  # put the summed dim back, with size 1
        # every element of x along dim adds to the same output element, with derivative 1
        return grad_out.expand(ctx.x_shape), None, None


# --- mistakes learners make -------------------------------------------------------------------


def not_expanded(ctx, grad_out):
    return grad_out, None, None


def keepdim_ignored(ctx, grad_out):
    return grad_out.unsqueeze(ctx.dim).expand(ctx.x_shape), None, None


# ----------------------------------------------------------------------------------------------


def example():
    return {**example_values(3, x=(2, 3, 4)), "dim": 1, "keepdim": False}


def edge_cases():
    # keepdim=True (the summed dim is still in grad_out), with a negative dim
    return [{**example_values(4, x=(2, 3)), "dim": -1, "keepdim": True}]


def random_case(draw, s):
    x = draw(s.floats(draw(s.shape(1, 3))))
    return {"x": x, "dim": draw(s.one_of(range(-x.ndim, x.ndim))), "keepdim": draw(s.booleans())}


EXERCISE = Exercise(
    number=3,
    name="sum",
    title="x.sum(dim, keepdim)",
    function=Sum,
    statement=(
        "out = x.sum(dim=dim, keepdim=keepdim). Every element of x along dim adds into one element of out, "
        "with derivative 1, so each gets that element's gradient: the gradient is grad_out copied back "
        "along dim. With keepdim=False the summed dim is gone from grad_out; dim may be negative."
    ),
    shapes=(
        "x         any shape, e.g. (2, 3, 4)\n"
        "dim       an int, e.g. 1 or -1\n"
        "out       x's shape without dim (keepdim=False), e.g. (2, 4), or with it as 1: (2, 1, 4)\n"
        "grad_out  like out  ->  return grad_x (like x), None, None"
    ),
    hint=(
        "grad_out.unsqueeze(dim) puts the summed dim back with size 1 (only when keepdim is False: with "
        "keepdim=True it is still there); .expand(x_shape) then repeats it without copying."
    ),
    todo="return grad_x (the shape of x), None, None",
    args=("x", "dim", "keepdim"),
    grads=("x",),
    example=example,
    random_case=random_case,
    reference=lambda x, dim, keepdim: x.sum(dim=dim, keepdim=keepdim),
    edge=reduction_edge,
    edge_cases=edge_cases,
    mistakes=(
        Mistake(not_expanded, "output-shape"),
        Mistake(keepdim_ignored, "error", found_by="edge case"),
    ),
)
