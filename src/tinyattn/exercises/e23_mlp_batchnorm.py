"""Exercise 23, the manual-backprop track: an MLP with batch norm, every intermediate's gradient by
hand."""

import numpy as np

import tinyattn as torch
from tinyattn.nn import functional as F

from . import manual
from .exercise import Mistake
from .task import Task

IMPORTS = """\
import tinyattn as torch
from tinyattn.nn import functional as F
"""


def forward(x, targets, W1, b1, gamma, beta, W2, b2, keep):
    """The MLP, one op per line: linear, batch norm, tanh, linear, cross-entropy. keep(name, value)
    names each intermediate; manual_backward gets them all as v.name."""
    n = x.shape[0]
    h_pre = keep("h_pre", x @ W1 + b1)  # (n, hidden)
    mean = keep("mean", h_pre.sum(0, keepdim=True) / n)  # (1, hidden): the batch's mean
    diff = keep("diff", h_pre - mean)
    sq = keep("sq", diff**2)
    var = keep("var", sq.sum(0, keepdim=True) / (n - 1))  # (1, hidden): the variance, Bessel-corrected
    inv_std = keep("inv_std", (var + 1e-5) ** -0.5)
    x_hat = keep("x_hat", diff * inv_std)
    h_bn = keep("h_bn", gamma * x_hat + beta)  # gamma, beta (1, hidden)
    h = keep("h", h_bn.tanh())
    logits = keep("logits", h @ W2 + b2)  # (n, classes)
    row_max = keep("row_max", logits.max(1, keepdim=True).values)  # (n, 1): for exp's range only
    shifted = keep("shifted", logits - row_max)
    counts = keep("counts", shifted.exp())
    total = keep("total", counts.sum(1, keepdim=True))  # (n, 1)
    inv_total = keep("inv_total", total**-1)
    probs = keep("probs", counts * inv_total)
    logprobs = keep("logprobs", probs.log())
    return keep("loss", -logprobs[torch.arange(n), targets].mean())


def manual_backward(v):
    """The gradient of the loss with respect to every intermediate, parameter and x: a dict
    {name: tensor of that value's shape}, e.g. grads["h_pre"]. v.h_pre, v.W1, v.targets, ... are
    the values of the forward (tensors that need no gradient)."""
    n = v.x.shape[0]
    g = {}
    # --- solution ---
    # loss = -mean over the rows of logprobs at the target: 1/n for each row's target entry
    g["logprobs"] = -F.one_hot(v.targets, v.logits.shape[1]).to(v.x.dtype) / n
    g["probs"] = g["logprobs"] / v.probs
    # probs = counts * inv_total, inv_total (n, 1) broadcast along the row: sum over dim 1
    g["inv_total"] = (g["probs"] * v.counts).sum(1, keepdim=True)
    g["total"] = g["inv_total"] * -v.total**-2
    # counts is used twice: by probs, and by total (the row's sum, which sends its gradient to every entry)
    g["counts"] = g["probs"] * v.inv_total + g["total"]
    g["shifted"] = g["counts"] * v.counts  # exp's derivative is exp itself
    g["row_max"] = -g["shifted"].sum(1, keepdim=True)  # 0 up to rounding: softmax ignores a shift
    # logits is used by shifted, and by row_max (only the max of each row)
    at_max = F.one_hot(v.logits.argmax(1), v.logits.shape[1]).to(v.x.dtype)
    g["logits"] = g["shifted"] + at_max * g["row_max"]
    g["h"] = g["logits"] @ v.W2.T
    g["W2"] = v.h.T @ g["logits"]
    g["b2"] = g["logits"].sum(0)  # b2 is added to every row
    g["h_bn"] = g["h"] * (1 - v.h**2)
    g["gamma"] = (g["h_bn"] * v.x_hat).sum(0, keepdim=True)
    g["beta"] = g["h_bn"].sum(0, keepdim=True)
    g["x_hat"] = g["h_bn"] * v.gamma
    g["inv_std"] = (g["x_hat"] * v.diff).sum(0, keepdim=True)
    g["var"] = g["inv_std"] * -0.5 * (v.var + 1e-5) ** -1.5
    g["sq"] = g["var"].expand(n, -1) / (n - 1)  # the sum sends its gradient to every row
    # diff is used by sq and by x_hat
    g["diff"] = g["sq"] * 2 * v.diff + g["x_hat"] * v.inv_std
    g["mean"] = -g["diff"].sum(0, keepdim=True)
    # h_pre is used by diff, and by mean (1/n of it, in every row)
    g["h_pre"] = g["diff"] + g["mean"].expand(n, -1) / n
    g["W1"] = v.x.T @ g["h_pre"]
    g["b1"] = g["h_pre"].sum(0)
    g["x"] = g["h_pre"] @ v.W1.T
    return g


ORDER = ("logprobs", "probs", "inv_total", "total", "counts", "shifted", "row_max", "logits", "h", "W2", "b2",
         "h_bn", "gamma", "beta", "x_hat", "inv_std", "var", "sq", "diff", "mean", "h_pre", "W1", "b1", "x")
PARAMETERS = ("x", "W1", "b1", "gamma", "beta", "W2", "b2")


# --- mistakes learners make (each changes one gradient of the solution; the checker names the
# first wrong one, as it would in a backward where the mistake spreads to everything after it) ----


def bias_not_summed(v):
    g = manual_backward(v)
    g["b2"] = g["logits"]  # one row per example, not their sum
    return g


def weight_transposed(v):
    g = manual_backward(v)
    g["W2"] = g["logits"].T @ v.h
    return g


def loss_not_averaged(v):
    g = manual_backward(v)
    g["logprobs"] = g["logprobs"] * v.x.shape[0]  # the 1/n of the mean left out
    return g


def counts_through_total_missing(v):
    g = manual_backward(v)
    g["counts"] = g["probs"] * v.inv_total  # counts also reaches the loss through total
    return g


def variance_without_bessel(v):
    g = manual_backward(v)
    n = v.x.shape[0]
    g["sq"] = g["var"].expand(n, -1) / n  # the forward divides by n - 1
    return g


def mean_path_forgotten(v):
    g = manual_backward(v)
    g["h_pre"] = g["diff"]  # h_pre also reaches the loss through the mean
    return g


# ----------------------------------------------------------------------------------------------


def _case(seed, n, inputs, hidden, classes, targets=None):
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((n, inputs)),
        "targets": np.array(targets) if targets is not None else rng.integers(0, classes, n),
        "W1": rng.standard_normal((inputs, hidden)) / np.sqrt(inputs),
        "b1": 0.1 * rng.standard_normal(hidden),
        "gamma": 1 + 0.1 * rng.standard_normal((1, hidden)),
        "beta": 0.1 * rng.standard_normal((1, hidden)),
        "W2": rng.standard_normal((hidden, classes)) / np.sqrt(hidden),
        "b2": 0.1 * rng.standard_normal(classes),
    }


def example():
    return _case(23, n=5, inputs=3, hidden=4, classes=3, targets=[0, 2, 1, 1, 2])


def random_case(draw, s):
    n, inputs, hidden, classes = draw(s.size(2, 6)), draw(s.size(1, 4)), draw(s.size(1, 4)), draw(s.size(2, 4))
    return _case(draw(s.size(0, 10_000)), n, inputs, hidden, classes)


def describe(case):
    n, inputs = case["x"].shape
    hidden, classes = case["W2"].shape
    return (f"a batch of {n}, {inputs} inputs, {hidden} hidden units, {classes} classes, "
            f"targets {case['targets'].tolist()}")


def factors(case):
    n = case["x"].shape[0]
    return [("n", n, "A mean over the batch divides by n: a 1/n is missing."),
            ("1/n", 1 / n, "An extra 1/n: the sum over the batch is a sum here, not a mean."),
            ("(n - 1)/n", (n - 1) / n, "1/n where the forward has 1/(n - 1): the variance is Bessel-corrected."),
            ("n/(n - 1)", n / (n - 1), "1/(n - 1) where the forward has 1/n."),
            ("n - 1", n - 1, "The 1/(n - 1) of the variance is missing."),
            ("1/(n - 1)", 1 / (n - 1), "An extra 1/(n - 1)."),
            ("2", 2.0, ""), ("1/2", 0.5, ""), ("-1", -1.0, "")]


EXERCISE = Task(
    number=23,
    name="mlp_batchnorm",
    title="an MLP with batch norm, every intermediate by hand",
    track="layer",
    piece=manual_backward,
    statement=(
        "forward(...) is a two-layer MLP with batch norm and a cross-entropy loss, one op per line, each "
        "intermediate named with keep(). Write manual_backward(v): the gradient of the loss with respect to "
        "every one of them, and to the parameters and x, by hand, from the loss back (no autograd, no "
        ".backward()). The checker compares each with autograd's, in the order listed below, and names the "
        "first wrong one and what it looks like: transposed, missing the sum over the batch, off by 1/n..."
    ),
    signature=(
        "manual_backward(v) -> dict {name: gradient of that value's shape}\n"
        "  v: the forward's values, tensors: v.x (n, inputs), v.targets (n,) ids, v.W1 (inputs, hidden),\n"
        "  v.b1 (hidden,), v.gamma and v.beta (1, hidden), v.W2 (hidden, classes), v.b2 (classes,),\n"
        "  v.h_pre, v.mean, ..., v.loss (the intermediates of forward)\n"
        "  the names, in the order they are checked:\n"
        + "".join("    " + ", ".join(ORDER[k:k + 8]) + "\n" for k in range(0, len(ORDER), 8))
    ),
    hint=(
        "Go from the loss back, one line of the forward at a time: the gradient of a line's inputs is the "
        "gradient of its output times the local derivative. Three things catch everyone: a value used by "
        "two lines (counts, logits, diff, h_pre) gets the sum of both gradients; a value broadcast along the "
        "batch (b1, b2, gamma, beta, mean, var) gets the sum over the batch; and for a matrix product the "
        "shapes say where the transposes go."
    ),
    todo="fill g with the gradient of every name listed in the statement, and return g",
    judge=manual.judge(forward, ORDER, PARAMETERS, factors),
    probe=manual.probe(forward, ORDER),
    verdict=manual.verdict(forward, ORDER, PARAMETERS, factors),
    example=example,
    random_case=random_case,
    describe=describe,
    imports=IMPORTS,
    given=(forward,),
    mistakes=(
        Mistake(loss_not_averaged, "constant-factor"),
        Mistake(counts_through_total_missing, "path-missing"),
        Mistake(bias_not_summed, "missing-batch-sum"),
        Mistake(weight_transposed, "transposed"),
        Mistake(variance_without_bessel, "constant-factor"),
        Mistake(mean_path_forgotten, "path-missing"),
    ),
)
