"""Exercise 14: dropout: the same mask as the forward, and its scale."""

import numpy as np

import tinyattn as torch
from tinyattn.autograd import Function

from .common import example_values
from .exercise import Exercise, Factor, Mistake, Suspect


class Dropout(Function):
    @staticmethod
    def forward(ctx, x, p):
        keep = torch.rand_like(x) >= p  # keep each element with probability 1 - p
        ctx.save_for_backward(keep)
        ctx.p = p
        return x * keep / (1 - p)

    @staticmethod
    def backward(ctx, grad_out):
        (keep,) = ctx.saved_tensors
        # --- solution ---
        # out = x * keep / (1 - p): the same mask, the same scale
        return grad_out * keep / (1 - ctx.p), None


# --- mistakes learners make -------------------------------------------------------------------


def mask_missing(ctx, grad_out):
    return grad_out / (1 - ctx.p), None


def scale_missing(ctx, grad_out):
    (keep,) = ctx.saved_tensors
    return grad_out * keep, None


def new_mask(ctx, grad_out):
    keep = torch.rand_like(grad_out) >= ctx.p  # a fresh mask, not the one forward used
    return grad_out * keep / (1 - ctx.p), None


# ----------------------------------------------------------------------------------------------


def _new_mask(probe):
    yours, true = probe.yours["x"], probe.true["x"]
    rows = true.shape[0]
    mine, right = yours.reshape(rows, rows), np.diag(true.reshape(rows, rows))
    scale = 1 / (1 - probe.case["p"])
    if not np.allclose(mine, np.diag(np.diag(mine)), atol=probe.atol):
        return []
    values = np.diag(mine)
    kept_by_you = np.isclose(values, scale)
    if not np.all(kept_by_you | np.isclose(values, 0.0)):
        return []
    kept = np.isclose(right, scale)
    # not forward's mask, and not the mask-missing (all kept) or no-gradient (none kept) mistakes
    if np.array_equal(kept, kept_by_you) or kept_by_you.all() or not kept_by_you.any():
        return []
    return {"x": f"uses a mask that keeps {int(kept_by_you.sum())} of {rows} elements, not forward's "
                 f"{int(kept.sum())}"}


def example():
    return {**example_values(14, x=(4, 6)), "p": 0.25}


def random_case(draw, s):
    return {"x": draw(s.floats(draw(s.shape(1, 3)))), "p": draw(s.one_of([0.1, 0.25, 0.5, 0.75]))}


def factors(case):
    p = case["p"]
    return [
        Factor("1 - p", 1 - p, finding="scale-missing", title="the 1/(1 - p) scale missing",
               explanation=f"Forward multiplies the kept elements by 1/(1 - p) = {1 / (1 - p):.4g}: so must "
               "backward."),
        Factor("1/(1 - p)", 1 / (1 - p), explanation="Scale by 1/(1 - p) once."),
    ]


EXERCISE = Exercise(
    number=14,
    name="dropout",
    title="dropout, with its mask",
    function=Dropout,
    statement=(
        "out = x * keep / (1 - p): forward draws a random mask keep (True with probability 1 - p), zeroes "
        "the dropped elements and scales the kept ones by 1/(1 - p), so that the expectation stays x. "
        "forward saves the mask; backward must use that same mask (a new draw would be another one)."
    ),
    shapes=(
        "x         any shape, e.g. (4, 6)\n"
        "p         the probability of dropping, e.g. 0.25\n"
        "out       like x\n"
        "grad_out  like x  ->  return grad_x (like x), None"
    ),
    hint="out is x times a constant (keep / (1 - p)) that forward saved: multiply grad_out by the same.",
    todo="return grad_x (the shape of x), None",
    args=("x", "p"),
    grads=("x",),
    random=True,
    example=example,
    random_case=random_case,
    reference=lambda x, p: x * (torch.rand_like(x) >= p) / (1 - p),  # the same draw: the checker seeds both
    factors=factors,
    suspects=(
        Suspect("new-mask", "a new mask in backward",
                "Backward draws its own random mask: use the mask forward saved (ctx.saved_tensors).",
                _new_mask),
    ),
    mistakes=(
        Mistake(mask_missing, "mask-missing"),
        Mistake(scale_missing, "scale-missing"),
        Mistake(new_mask, "new-mask"),
    ),
)
