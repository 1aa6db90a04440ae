"""Exercise 02: x * y with broadcasting: each input's gradient needs the other input."""

import numpy as np

from tinyattn.autograd import Function

from .common import broadcast_edge, example_values
from .exercise import Exercise, Mistake


class Mul(Function):
    @staticmethod
    def sum_to(grad, shape):
        """Exercise 01's helper: sum a gradient over the dims that broadcasting added or stretched."""
        while grad.ndim > len(shape):
            grad = grad.sum(dim=0)
        for dim, size in enumerate(shape):
            if size == 1 and grad.shape[dim] != 1:
                grad = grad.sum(dim=dim, keepdim=True)
        return grad

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        # --- solution ---
        # d(x * y)/dx = y and d(x * y)/dy = x, element by element; then undo the broadcasting
        return Mul.sum_to(grad_out * y, x.shape), Mul.sum_to(grad_out * x, y.shape)


# --- mistakes learners make -------------------------------------------------------------------


def swapped(ctx, grad_out):
    x, y = ctx.saved_tensors
    return Mul.sum_to(grad_out * x, x.shape), Mul.sum_to(grad_out * y, y.shape)


def grad_out_forgotten(ctx, grad_out):
    x, y = ctx.saved_tensors
    return Mul.sum_to(y.expand(grad_out.shape), x.shape), Mul.sum_to(x.expand(grad_out.shape), y.shape)


# ----------------------------------------------------------------------------------------------


def example():
    return example_values(2, x=(2, 3, 4), y=(3, 4))


def random_case(draw, s):
    shapes = draw(s.broadcastable(2))
    return {"x": draw(s.floats(shapes.input_shapes[0])), "y": draw(s.floats(shapes.input_shapes[1]))}


def expanded(case):
    shape = np.broadcast_shapes(case["x"].shape, case["y"].shape)
    return {"x": shape, "y": shape}


EXERCISE = Exercise(
    number=2,
    name="mul",
    title="x * y, with broadcasting",
    function=Mul,
    statement=(
        "out = x * y, elementwise, with broadcasting as in exercise 01. Now each input's gradient depends "
        "on the other input, which forward saves. The helper sum_to from exercise 01 is given."
    ),
    shapes=(
        "x, y      shapes that broadcast together, e.g. (2, 3, 4) and (3, 4)\n"
        "out       the broadcast shape\n"
        "grad_out  like out  ->  return grad_x (like x), grad_y (like y)"
    ),
    hint=(
        "Work elementwise first: out_i = x_i * y_i, so d out_i / d x_i = y_i and the gradient that reaches "
        "x is grad_out * y, in the broadcast shape. Then Mul.sum_to(..., x.shape). The same for y, with x."
    ),
    todo="return grad_x, grad_y (each the shape of its input)",
    args=("x", "y"),
    grads=("x", "y"),
    example=example,
    random_case=random_case,
    reference=lambda x, y: x * y,
    expanded=expanded,
    edge=broadcast_edge,
    mistakes=(
        Mistake(swapped, "swapped"),
        Mistake(grad_out_forgotten, "not-linear"),
    ),
)
