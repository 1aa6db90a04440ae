"""Exercise 08: GELU, the book's tanh form: the product rule and the chain rule together."""

import math

import numpy as np

import tinyattn as torch
from tinyattn.autograd import Function
from tinyattn.nn import functional as F

from .common import example_values
from .exercise import Exercise, Mistake, Suspect

_C = math.sqrt(2.0 / math.pi)


class GELU(Function):
    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))
        ctx.save_for_backward(x, t)
        return 0.5 * x * (1 + t)

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        # --- solution ---
        # out = 0.5 x (1 + t) with t = tanh(u), u = c (x + 0.044715 x^3): the product rule gives two
        # terms; the second goes through tanh (dt/du = 1 - t^2) and u (du/dx = c (1 + 3 * 0.044715 x^2))
        du_dx = math.sqrt(2.0 / math.pi) * (1 + 3 * 0.044715 * x**2)
        return grad_out * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du_dx)


# --- mistakes learners make -------------------------------------------------------------------


def product_rule_forgotten(ctx, grad_out):
    x, t = ctx.saved_tensors
    return grad_out * 0.5 * (1 + t)


def inner_derivative_forgotten(ctx, grad_out):
    x, t = ctx.saved_tensors
    return grad_out * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * math.sqrt(2.0 / math.pi))


# ----------------------------------------------------------------------------------------------


def _terms(x):
    t = np.tanh(_C * (x + 0.044715 * x**3))
    return 0.5 * (1 + t), 0.5 * x * (1 - t * t)


def _product_rule(probe):
    first, _ = _terms(probe.case["x"])
    return ["x"] if probe.matches("x", probe.diagonal(first)) else []


def _chain_rule(probe):
    first, second = _terms(probe.case["x"])
    return ["x"] if probe.matches("x", probe.diagonal(first + second * _C)) else []


def example():
    return example_values(8, x=(3, 4))


def random_case(draw, s):
    return {"x": draw(s.floats(draw(s.shape(1, 3)), low=-3.0, high=3.0))}


EXERCISE = Exercise(
    number=8,
    name="gelu",
    title="GELU (the tanh form of the book and GPT-2)",
    function=GELU,
    statement=(
        "out = 0.5 x (1 + tanh(c (x + 0.044715 x^3))) with c = sqrt(2 / pi), elementwise: the book's GELU. "
        "forward saves t, the tanh. Differentiate with the product rule (x times (1 + t)) and the chain "
        "rule (tanh of a polynomial of x)."
    ),
    shapes="x         any shape, e.g. (3, 4)\nout       like x\ngrad_out  like x  ->  return grad_x (like x)",
    hint=(
        "d/dx [0.5 x (1 + t)] = 0.5 (1 + t) + 0.5 x dt/dx, and dt/dx = (1 - t^2) * c (1 + 3 * 0.044715 x^2). "
        "Multiply by grad_out."
    ),
    todo="return grad_x (the shape of x)",
    args=("x",),
    grads=("x",),
    example=example,
    random_case=random_case,
    reference=lambda x: F.gelu(x, approximate="tanh"),
    suspects=(
        Suspect("product-rule", "product rule: a term missing",
                "out = 0.5 x (1 + t) is a product of two factors that both depend on x: its derivative has "
                "two terms, 0.5 (1 + t) and 0.5 x dt/dx.", _product_rule),
        Suspect("chain-rule", "chain rule: inner derivative missing",
                "t = tanh(u) with u = c (x + 0.044715 x^3): dt/dx = (1 - t^2) du/dx, and du/dx = "
                "c (1 + 3 * 0.044715 x^2), not c.", _chain_rule),
    ),
    mistakes=(
        Mistake(product_rule_forgotten, "product-rule"),
        Mistake(inner_derivative_forgotten, "chain-rule"),
    ),
)
