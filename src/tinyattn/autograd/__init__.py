"""Reverse-mode automatic differentiation: the graph, `Function`, `backward()`, `no_grad`.

Every differentiable operation is a `Function` with a `forward` and a `backward` side by side. When a
Function is applied to tensors that require grad, a `Node` is recorded: it remembers which Function
ran, what the forward saved for the backward, and the edges to the nodes that produced its inputs.
`backward()` walks these nodes from the output back to the leaves, in the reverse order of creation,
calling each Function's backward with the gradient of its output and passing the gradients it returns
on to its inputs.

Built-in ops set `takes_arrays = True`: their forward and backward see raw arrays (NumPy or CuPy),
which keeps the engine's own cost per op small. A Function you write yourself sees Tensors, exactly as
in PyTorch:

    class Square(tinyattn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return 2 * x * grad_output

    y = Square.apply(x)

The parts, in reading order: mode.py (grad mode), function.py (Function, apply, the recorded Node),
engine.py (the backward walk); functional.py (jacobian, vjp) builds on tinyattn.Tensor.
"""

# (re-exported: tinyattn.autograd.Function, .backward, .no_grad, ... as PyTorch spells them)
from .mode import GradMode, enable_grad, grad_mode, inference_mode, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from .function import Function, Node, _mark_views, observers, observers_here, refresh_view, replay_view  # noqa: F401
from .engine import RemovableHandle, backward, grad  # noqa: F401

# a PyTorch name this module lacks says so (tinyattn/missing.py)
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)  # its public names only
