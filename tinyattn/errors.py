"""The exceptions tinyattn raises, each with a message that says what to do.

They subclass the built-in exceptions that PyTorch code already catches (RuntimeError, ValueError).
"""


class ShapeError(RuntimeError, ValueError):
    """Shapes that do not fit together (binary op, matmul, view, cat, ...): the message names both."""


class DeviceError(RuntimeError):
    """Tensors on different devices met in one op, or a device is not available."""


class BackwardError(RuntimeError):
    """backward() cannot run: nothing requires grad, a released graph, a modified saved tensor..."""


class GradcheckError(RuntimeError):
    """An analytical gradient disagrees with finite differences (see tinyattn.gradcheck)."""
