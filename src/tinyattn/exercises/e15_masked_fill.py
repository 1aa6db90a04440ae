"""Exercise 15: masked_fill, the step that hides the future from attention."""

import numpy as np

from tinyattn.autograd import Function

from .common import example_values
from .exercise import Exercise, Mistake


class MaskedFill(Function):
    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.save_for_backward(mask)
        return x.masked_fill(mask, value)

    @staticmethod
    def backward(ctx, grad_out):
        (mask,) = ctx.saved_tensors
        # --- solution ---
        # a filled element is a constant: no gradient gets through; the others pass unchanged
        return grad_out.masked_fill(mask, 0.0), None, None


# --- mistakes learners make -------------------------------------------------------------------


def mask_missing(ctx, grad_out):
    return grad_out, None, None


def mask_inverted(ctx, grad_out):
    (mask,) = ctx.saved_tensors
    return grad_out.masked_fill(~mask, 0.0), None, None


def value_filled_in(ctx, grad_out):
    (mask,) = ctx.saved_tensors
    return grad_out.masked_fill(mask, -100.0), None, None  # the forward's fill value: not a gradient


# ----------------------------------------------------------------------------------------------


def example():
    causal = np.triu(np.ones((3, 3), dtype=bool), k=1)  # True above the diagonal: the future
    return {**example_values(15, x=(2, 3, 3)), "mask": causal, "value": -100.0}


def random_case(draw, s):
    shape = draw(s.shape(1, 3))
    kept = draw(s.size(0, len(shape)))  # the mask has x's last dims, some of them 1 (broadcast)
    mask_shape = tuple(size if draw(s.booleans()) else 1 for size in shape[len(shape) - kept:])
    return {"x": draw(s.floats(shape)), "mask": draw(s.masks(mask_shape)), "value": -100.0}


def edge(case):
    mask = np.broadcast_to(case["mask"], case["x"].shape)
    notes = []
    if mask.ndim and np.any(mask.all(axis=-1)):
        notes.append("a fully masked row")
    if case["mask"].shape != case["x"].shape:
        notes.append(f"a mask of shape {case['mask'].shape}, broadcast")
    return ", ".join(notes)


EXERCISE = Exercise(
    number=15,
    name="masked_fill",
    title="masked_fill (a broadcast mask)",
    function=MaskedFill,
    statement=(
        "out = x.masked_fill(mask, value): value where the bool mask is True, x elsewhere. The mask "
        "broadcasts against x (attention's (T, T) causal mask over (batch, T, T) scores). Neither mask nor "
        "value gets a gradient."
    ),
    shapes=(
        "x         any shape, e.g. (2, 3, 3)\n"
        "mask      bool, broadcasts to x's shape, e.g. (3, 3)\n"
        "value     a number, e.g. -100.0 (attention uses -inf)\n"
        "grad_out  like x  ->  return grad_x (like x), None, None"
    ),
    hint="Where mask is True the output does not depend on x: grad_out.masked_fill(mask, 0.0).",
    todo="return grad_x (the shape of x), None, None",
    args=("x", "mask", "value"),
    grads=("x",),
    example=example,
    random_case=random_case,
    reference=lambda x, mask, value: x.masked_fill(mask, value),
    edge=edge,
    mistakes=(
        Mistake(mask_missing, "mask-missing"),
        Mistake(mask_inverted, "mask-inverted"),
        Mistake(value_filled_in, "not-linear"),
    ),
)
