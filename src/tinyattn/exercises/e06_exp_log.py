"""Exercise 06: exp and log, as one Function with two outputs."""

from tinyattn.autograd import Function

from .common import example_values
from .exercise import Exercise, Mistake


class ExpLog(Function):
    @staticmethod
    def forward(ctx, x):
        e = x.exp()
        ctx.save_for_backward(x, e)
        return e, x.log()

    @staticmethod
    def backward(ctx, grad_exp, grad_log):
        x, e = ctx.saved_tensors
        # --- solution ---
        # d exp(x)/dx = exp(x), d log(x)/dx = 1/x; x feeds both outputs, so the two gradients add up
        return grad_exp * e + grad_log / x


# --- mistakes learners make -------------------------------------------------------------------


def exp_only(ctx, grad_exp, grad_log):
    x, e = ctx.saved_tensors
    return grad_exp * e


def log_derivative_wrong(ctx, grad_exp, grad_log):
    x, e = ctx.saved_tensors
    return grad_exp * e + grad_log * x


# ----------------------------------------------------------------------------------------------


def example():
    return example_values(6, low=0.3, x=(2, 3))


def random_case(draw, s):
    return {"x": draw(s.floats(draw(s.shape(1, 2)), low=0.25, high=3.0))}


EXERCISE = Exercise(
    number=6,
    name="exp_log",
    title="exp(x) and log(x): two outputs",
    function=ExpLog,
    statement=(
        "forward returns two tensors, exp(x) and log(x) (x > 0), so backward gets two gradients, "
        "grad_exp and grad_log, one per output. x feeds both outputs: its gradient is the sum of what "
        "comes back through each."
    ),
    shapes=(
        "x                   any shape, positive, e.g. (2, 3)\n"
        "exp, log            like x\n"
        "grad_exp, grad_log  like x  ->  return grad_x (like x)"
    ),
    hint="d exp(x)/dx = exp(x) (saved as e) and d log(x)/dx = 1/x: grad_exp * e + grad_log / x.",
    todo="return grad_x (the shape of x)",
    args=("x",),
    grads=("x",),
    outputs=("exp", "log"),
    example=example,
    random_case=random_case,
    reference=lambda x: (x.exp(), x.log()),
    mistakes=(
        Mistake(exp_only, "missing-output"),
        Mistake(log_derivative_wrong, "no-pattern"),
    ),
)
