"""Exercise 10: log-softmax along the last dim."""

from tinyattn.autograd import Function
from tinyattn.nn import functional as F

from .common import example_values
from .exercise import Exercise, Mistake


class LogSoftmax(Function):
    @staticmethod
    def forward(ctx, x):
        y = F.log_softmax(x, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        # --- solution ---
        # y_i = x_i - logsumexp(x): dy_i/dx_j = delta_ij - softmax(x)_j, and softmax(x) = exp(y)
        return grad_y - y.exp() * grad_y.sum(dim=-1, keepdim=True)


# --- mistakes learners make -------------------------------------------------------------------


def sum_of_grad_forgotten(ctx, grad_y):
    (y,) = ctx.saved_tensors
    return grad_y - y.exp()


def diagonal_only(ctx, grad_y):
    (y,) = ctx.saved_tensors
    return grad_y * (1 - y.exp())


# ----------------------------------------------------------------------------------------------


def example():
    return example_values(10, x=(3, 5))


def random_case(draw, s):
    return {"x": draw(s.floats(draw(s.shape(1, 3)), low=-3.0, high=3.0))}


EXERCISE = Exercise(
    number=10,
    name="log_softmax",
    title="log-softmax along the last dim",
    function=LogSoftmax,
    statement=(
        "y = log_softmax(x) along the last dim: y_i = x_i - log sum_k exp(x_k). forward saves y; "
        "softmax(x) is exp(y). As in softmax, each y_i depends on the whole row."
    ),
    shapes="x         (..., n), e.g. (3, 5)\ny         like x (saved)\ngrad_y    like x  ->  return grad_x (like x)",
    hint=(
        "dy_i/dx_j = delta_ij - softmax_j, so grad_x_j = grad_y_j - softmax_j * sum_i grad_y_i: the sum of "
        "grad_y over the row, keepdim=True."
    ),
    todo="return grad_x (the shape of x)",
    args=("x",),
    grads=("x",),
    outputs=("y",),
    example=example,
    random_case=random_case,
    reference=lambda x: x.log_softmax(dim=-1),
    mistakes=(
        Mistake(sum_of_grad_forgotten, "not-linear"),
        Mistake(diagonal_only, "cross-terms-missing"),
    ),
)
