"""Exercise 12: layer norm over the last dim, with weight and bias shared by every token."""

import numpy as np

from tinyattn.autograd import Function

from .exercise import Exercise, Mistake, Suspect

EPS = 1e-5


class LayerNorm(Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)
        rstd = 1.0 / (var + 1e-5).sqrt()
        xhat = (x - mean) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_y):
        xhat, rstd, weight = ctx.saved_tensors
        # --- solution ---
        n = grad_y.shape[-1]
        # every row shares weight and bias: sum over all rows (the leading dims, flattened)
        grad_weight = (grad_y * xhat).reshape(-1, n).sum(dim=0)
        grad_bias = grad_y.reshape(-1, n).sum(dim=0)
        g = grad_y * weight  # the gradient with respect to xhat
        # xhat_i depends on x_i directly, and on every x_j through the mean and through rstd
        grad_x = rstd * (g - g.mean(dim=-1, keepdim=True) - xhat * (g * xhat).mean(dim=-1, keepdim=True))
        return grad_x, grad_weight, grad_bias


# --- mistakes learners make -------------------------------------------------------------------


def mean_and_variance_paths_missing(ctx, grad_y):
    grad_x, grad_weight, grad_bias = LayerNorm.backward(ctx, grad_y)
    xhat, rstd, weight = ctx.saved_tensors
    return rstd * grad_y * weight, grad_weight, grad_bias


def variance_path_missing(ctx, grad_y):
    grad_x, grad_weight, grad_bias = LayerNorm.backward(ctx, grad_y)
    xhat, rstd, weight = ctx.saved_tensors
    g = grad_y * weight
    return rstd * (g - g.mean(dim=-1, keepdim=True)), grad_weight, grad_bias


def weight_not_summed(ctx, grad_y):
    grad_x, _, grad_bias = LayerNorm.backward(ctx, grad_y)
    xhat, rstd, weight = ctx.saved_tensors
    return grad_x, grad_y * xhat, grad_bias


def weight_and_bias_swapped(ctx, grad_y):
    grad_x, grad_weight, grad_bias = LayerNorm.backward(ctx, grad_y)
    return grad_x, grad_bias, grad_weight


# ----------------------------------------------------------------------------------------------


def _layer_norm(x, weight, bias, detach=()):
    """The forward by the library's ops (weight and bias may be broadcast), with the mean or the
    variance held constant (detached) to leave out a path."""
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, unbiased=False, keepdim=True)
    mean = mean.detach() if "mean" in detach else mean
    var = var.detach() if "variance" in detach else var
    return (x - mean) / (var + EPS).sqrt() * weight + bias


def _paths(probe):
    for missing in (("variance",), ("mean",)):
        candidate = probe.reference_jacobian(fn=lambda *args: _layer_norm(*args, detach=missing))["x"]
        if probe.matches("x", candidate):
            return {"x": f"leaves out the path through the {missing[0]}"}
    return {}


def example():
    rng = np.random.default_rng(12)
    return {"x": rng.standard_normal((2, 3, 4)), "weight": 1 + 0.5 * rng.standard_normal(4),
            "bias": rng.standard_normal(4)}


def random_case(draw, s):
    shape = draw(s.shape(1, 3))
    n = shape[-1]
    return {"x": draw(s.floats(shape)), "weight": draw(s.floats((n,))), "bias": draw(s.floats((n,)))}


def expanded(case):
    return {"weight": case["x"].shape, "bias": case["x"].shape}


def edge(case):
    x = case["x"]
    if x.shape[-1] == 1:
        return "rows of one element"
    if np.any(np.ptp(x, axis=-1) == 0):
        return "a constant row"
    return ""


EXERCISE = Exercise(
    number=12,
    name="layer_norm",
    title="layer norm over the last dim",
    function=LayerNorm,
    statement=(
        "Each row (the last dim, n values) is normalised: xhat = (x - mean) * rstd with rstd = 1 / "
        "sqrt(var + 1e-5) (var divides by n), then y = xhat * weight + bias. weight and bias are shared by "
        "every row, so their gradients sum over all the leading dims. x reaches y directly and through "
        "the row's mean and variance."
    ),
    shapes=(
        "x             (..., n), e.g. (2, 3, 4)\n"
        "weight, bias  (n,)\n"
        "y             like x\n"
        "grad_y        like x  ->  return grad_x (like x), grad_weight (n,), grad_bias (n,)"
    ),
    hint=(
        "grad_bias = grad_y summed over the leading dims, grad_weight = (grad_y * xhat) summed the same "
        "way. With g = grad_y * weight: grad_x = rstd * (g - mean(g) - xhat * mean(g * xhat)), the means "
        "over the last dim (keepdim=True). The two means are the paths through the mean and the variance."
    ),
    todo="return grad_x, grad_weight, grad_bias (each the shape of its input)",
    args=("x", "weight", "bias"),
    grads=("x", "weight", "bias"),
    outputs=("y",),
    example=example,
    random_case=random_case,
    reference=_layer_norm,
    expanded=expanded,
    suspects=(
        Suspect("missing-path", "a path through the row's statistics missing",
                "xhat_i = (x_i - mean) * rstd depends on every x_j of its row through the mean and through "
                "rstd: differentiate both (the terms - mean(g) and - xhat * mean(g * xhat)).", _paths),
    ),
    edge=edge,
    mistakes=(
        Mistake(mean_and_variance_paths_missing, "cross-terms-missing"),
        Mistake(variance_path_missing, "missing-path"),
        Mistake(weight_not_summed, "missing-broadcast-sum"),
        Mistake(weight_and_bias_swapped, "swapped"),
    ),
)
