"""Exercise 01: x + y with broadcasting, the first backward."""

import numpy as np

from tinyattn.autograd import Function

from .common import broadcast_edge, example_values
from .exercise import Exercise, Mistake


class Add(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.x_shape, ctx.y_shape = x.shape, y.shape
        return x + y

    @staticmethod
    def backward(ctx, grad_out):
        # --- solution ---
        def sum_to(grad, shape):
            # broadcasting added leading dims and stretched size-1 dims: sum over both
            while grad.ndim > len(shape):
                grad = grad.sum(dim=0)
            for dim, size in enumerate(shape):
                if size == 1 and grad.shape[dim] != 1:
                    grad = grad.sum(dim=dim, keepdim=True)
            return grad

        return sum_to(grad_out, ctx.x_shape), sum_to(grad_out, ctx.y_shape)


# --- mistakes learners make -------------------------------------------------------------------


def no_sum(ctx, grad_out):
    return grad_out, grad_out


def leading_dims_only(ctx, grad_out):
    def sum_to(grad, shape):
        while grad.ndim > len(shape):
            grad = grad.sum(dim=0)
        return grad  # the size-1 dims that broadcasting stretched are not summed

    return sum_to(grad_out, ctx.x_shape), sum_to(grad_out, ctx.y_shape)


def last_dim_summed(ctx, grad_out):
    def sum_to(grad, shape):
        while grad.ndim > len(shape):
            grad = grad.sum(dim=-1)  # the new dims are on the left, not the right
        return grad

    return sum_to(grad_out, ctx.x_shape), sum_to(grad_out, ctx.y_shape)


# ----------------------------------------------------------------------------------------------


def example():
    return example_values(1, x=(2, 3, 4), y=(3, 4))


def edge_cases():
    # a size-1 dim that broadcasting stretches, in y and then in x (not only missing leading dims)
    return [example_values(2, x=(2, 3), y=(1, 3)), example_values(3, x=(2, 1), y=(3,))]


def random_case(draw, s):
    shapes = draw(s.broadcastable(2))
    return {"x": draw(s.floats(shapes.input_shapes[0])), "y": draw(s.floats(shapes.input_shapes[1]))}


def expanded(case):
    shape = np.broadcast_shapes(case["x"].shape, case["y"].shape)
    return {"x": shape, "y": shape}


EXERCISE = Exercise(
    number=1,
    name="add",
    title="x + y, with broadcasting",
    function=Add,
    statement=(
        "out = x + y, where x and y broadcast against each other as in NumPy and PyTorch: the shorter "
        "shape gets 1s on the left, and a dim of size 1 is stretched to the other's size. An element "
        "that broadcasting repeats reaches several elements of out, so its gradient is the sum of "
        "theirs."
    ),
    shapes=(
        "x         any shape, e.g. (2, 3, 4)\n"
        "y         a shape that broadcasts with x's, e.g. (3, 4), (4,) or (3, 1)\n"
        "out       the broadcast shape, e.g. (2, 3, 4)\n"
        "grad_out  like out  ->  return grad_x (like x), grad_y (like y)"
    ),
    hint=(
        "Write a helper sum_to(grad, shape): first sum over dim 0 while grad has more dims than shape, "
        "then sum with keepdim=True over every dim where shape has size 1 and grad does not. The "
        "derivative of x + y is 1 for both inputs, so sum_to(grad_out, ...) is all there is to it."
    ),
    todo="return grad_x, grad_y (each the shape of its input)",
    args=("x", "y"),
    grads=("x", "y"),
    example=example,
    random_case=random_case,
    reference=lambda x, y: x + y,
    expanded=expanded,
    edge=broadcast_edge,
    edge_cases=edge_cases,
    mistakes=(
        Mistake(no_sum, "missing-broadcast-sum"),
        Mistake(leading_dims_only, "missing-broadcast-sum", found_by="edge case"),
        Mistake(last_dim_summed, "wrong-axis-sum"),
    ),
)
