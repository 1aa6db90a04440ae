"""Exercise 05: a @ b, batched and broadcast over the leading dims."""

import numpy as np

from tinyattn.autograd import Function

from .common import example_values
from .exercise import Exercise, Mistake


class MatMul(Function):
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
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        # --- solution ---
        grad_a = grad_out @ b.transpose(-2, -1)  # (..., m, n) @ (..., n, k) -> (..., m, k)
        grad_b = a.transpose(-2, -1) @ grad_out  # (..., k, m) @ (..., m, n) -> (..., k, n)
        # the leading (batch) dims broadcast: sum them away as in exercise 01
        return MatMul.sum_to(grad_a, a.shape), MatMul.sum_to(grad_b, b.shape)


# --- mistakes learners make -------------------------------------------------------------------


def grad_b_transposed(ctx, grad_out):
    a, b = ctx.saved_tensors
    grad_a = grad_out @ b.transpose(-2, -1)
    grad_b = grad_out.transpose(-2, -1) @ a  # (..., n, k): the transpose of the right one
    return MatMul.sum_to(grad_a, a.shape), MatMul.sum_to(grad_b, b.shape)


def batch_not_summed(ctx, grad_out):
    a, b = ctx.saved_tensors
    return grad_out @ b.transpose(-2, -1), a.transpose(-2, -1) @ grad_out


def b_not_transposed(ctx, grad_out):
    a, b = ctx.saved_tensors
    grad_a = grad_out @ b
    grad_b = a.transpose(-2, -1) @ grad_out
    return MatMul.sum_to(grad_a, a.shape), MatMul.sum_to(grad_b, b.shape)


# ----------------------------------------------------------------------------------------------


def example():
    return example_values(5, a=(2, 3, 4), b=(4, 5))


def random_case(draw, s):
    shapes = draw(s.broadcastable(2, max_dims=2, high=3, signature="(m,k),(k,n)->(m,n)"))
    return {"a": draw(s.floats(shapes.input_shapes[0])), "b": draw(s.floats(shapes.input_shapes[1]))}


def expanded(case):
    a, b = case["a"].shape, case["b"].shape
    batch = np.broadcast_shapes(a[:-2], b[:-2])
    return {"a": batch + a[-2:], "b": batch + b[-2:]}


def edge(case):
    a, b = case["a"].shape, case["b"].shape
    notes = []
    for name, shape, other in (("a", a, b), ("b", b, a)):
        if len(shape) < len(other):
            notes.append(f"{name} has fewer batch dims")
        elif any(size == 1 and len(other) - len(shape) + d >= 0 and other[len(other) - len(shape) + d] != 1
                 for d, size in enumerate(shape[:-2])):
            notes.append(f"{name} has a size-1 batch dim")
    if any(size == 1 for size in a[-2:] + b[-1:]):
        notes.append("a size-1 matrix dim")
    return ", ".join(notes)


EXERCISE = Exercise(
    number=5,
    name="matmul",
    title="a @ b, batched and broadcast",
    function=MatMul,
    statement=(
        "out = a @ b for a of shape (..., m, k) and b of shape (..., k, n): a matrix product for every "
        "index of the leading (batch) dims, which broadcast as in exercise 01, so a single matrix b "
        "(k, n) is shared by every item of a batch a (B, m, k)."
    ),
    shapes=(
        "a         (..., m, k), e.g. (2, 3, 4)\n"
        "b         (..., k, n), e.g. (4, 5)\n"
        "out       (..., m, n), e.g. (2, 3, 5)\n"
        "grad_out  like out  ->  return grad_a (like a), grad_b (like b)"
    ),
    hint=(
        "For one matrix product C = A @ B: grad_A = grad_C @ B^T and grad_B = A^T @ grad_C (check the "
        "shapes: (m, n) @ (n, k) is (m, k)). Transpose the last two dims with .transpose(-2, -1); the "
        "batch dims then need MatMul.sum_to."
    ),
    todo="return grad_a, grad_b (each the shape of its input)",
    args=("a", "b"),
    grads=("a", "b"),
    example=example,
    random_case=random_case,
    reference=lambda a, b: a @ b,
    expanded=expanded,
    edge=edge,
    mistakes=(
        Mistake(grad_b_transposed, "transposed"),
        Mistake(batch_not_summed, "missing-broadcast-sum"),
        Mistake(b_not_transposed, "error"),
    ),
)
