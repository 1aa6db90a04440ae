"""Exercise 09: softmax along the last dim: every output depends on the whole row."""

import tinyattn as torch
from tinyattn.autograd import Function

from .common import example_values
from .exercise import Exercise, Mistake, Suspect


class Softmax(Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.softmax(x, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        # --- solution ---
        # dy_i/dx_j = y_i (delta_ij - y_j), so sum_i g_i y_i (delta_ij - y_j) = y_j (g_j - <g, y>)
        return y * (grad_y - (grad_y * y).sum(dim=-1, keepdim=True))


# --- mistakes learners make -------------------------------------------------------------------


def diagonal_only(ctx, grad_y):
    (y,) = ctx.saved_tensors
    return grad_y * y * (1 - y)


def like_exp(ctx, grad_y):
    (y,) = ctx.saved_tensors
    return grad_y * y


def row_sum_over_dim_0(ctx, grad_y):
    (y,) = ctx.saved_tensors
    return y * (grad_y - (grad_y * y).sum(dim=0, keepdim=True))


def sign_flipped(ctx, grad_y):
    (y,) = ctx.saved_tensors
    return y * ((grad_y * y).sum(dim=-1, keepdim=True) - grad_y)


# ----------------------------------------------------------------------------------------------


def _sum_over_other_dim(probe):
    y, g = probe.outputs[0], probe.one_hots()
    notes = {}
    for dim in range(y.ndim - 1):
        if y.shape[dim] == 1:  # a sum over it changes nothing: that is the diagonal alone
            continue
        candidate = y * (g - (g * y).sum(axis=dim + 1, keepdims=True))
        if probe.matches("x", candidate):
            notes["x"] = f"takes the sum <grad_y, y> over dim {dim}, not over the last dim"
    return notes


def example():
    return example_values(9, x=(3, 5))


def random_case(draw, s):
    return {"x": draw(s.floats(draw(s.shape(1, 3)), low=-3.0, high=3.0))}


EXERCISE = Exercise(
    number=9,
    name="softmax",
    title="softmax along the last dim",
    function=Softmax,
    statement=(
        "y = softmax(x) along the last dim: y_i = exp(x_i) / sum_k exp(x_k). Each y_i depends on every "
        "x_j of its row: dy_i/dx_j = y_i (delta_ij - y_j). Compute grad_x = J^T grad_y without building "
        "J: each row needs y, grad_y and one sum over the row."
    ),
    shapes="x         (..., n), e.g. (3, 5)\ny         like x (saved)\ngrad_y    like x  ->  return grad_x (like x)",
    hint=(
        "Work out grad_x_j = sum_i grad_y_i * y_i (delta_ij - y_j) by hand, the delta_ij term apart from the "
        "rest: the rest is y_j times one number per row, a sum over the last dim (keepdim=True, so that it "
        "broadcasts along the row)."
    ),
    todo="return grad_x (the shape of x)",
    args=("x",),
    grads=("x",),
    outputs=("y",),
    example=example,
    random_case=random_case,
    reference=lambda x: x.softmax(dim=-1),
    suspects=(
        Suspect("sum-wrong-dim", "the row sum over the wrong dim",
                "softmax normalises along the last dim, so <grad_y, y> is a sum over the last dim: "
                ".sum(dim=-1, keepdim=True).", _sum_over_other_dim),
    ),
    mistakes=(
        Mistake(diagonal_only, "cross-terms-missing"),
        Mistake(like_exp, "cross-terms-missing"),
        Mistake(row_sum_over_dim_0, "sum-wrong-dim"),
        Mistake(sign_flipped, "sign-flipped"),
    ),
)
