"""Exercise 07: ReLU: the gradient passes where x > 0 and stops elsewhere."""

import numpy as np

from tinyattn.autograd import Function

from .exercise import Exercise, Mistake


class ReLU(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        # --- solution ---
        return grad_out * (x > 0)  # derivative 1 where x > 0, 0 elsewhere


# --- mistakes learners make -------------------------------------------------------------------


def mask_missing(ctx, grad_out):
    return grad_out


def mask_inverted(ctx, grad_out):
    (x,) = ctx.saved_tensors
    return grad_out * (x < 0)


# ----------------------------------------------------------------------------------------------


def example():
    x = np.random.default_rng(7).standard_normal((3, 4))
    return {"x": np.where(np.abs(x) < 0.05, 0.5, x)}  # off the kink at 0


def random_case(draw, s):
    return {"x": draw(s.nonzero(draw(s.shape(1, 3))))}


EXERCISE = Exercise(
    number=7,
    name="relu",
    title="ReLU",
    function=ReLU,
    statement=(
        "out = max(x, 0), elementwise. Its derivative is 1 where x > 0 and 0 where x < 0 (at 0 itself "
        "PyTorch takes 0; the checks keep x away from 0)."
    ),
    shapes="x         any shape, e.g. (3, 4)\nout       like x\ngrad_out  like x  ->  return grad_x (like x)",
    hint="Multiply grad_out by the mask (x > 0): a bool tensor times a float tensor is a float tensor.",
    todo="return grad_x (the shape of x)",
    args=("x",),
    grads=("x",),
    example=example,
    random_case=random_case,
    reference=lambda x: x.relu(),
    mistakes=(
        Mistake(mask_missing, "mask-missing"),
        Mistake(mask_inverted, "mask-inverted"),
    ),
)
