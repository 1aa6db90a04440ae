"""The exceptions tinyattn raises, each with a message that says what to do.

They subclass the built-in exceptions that PyTorch code already catches (RuntimeError, ValueError).
"""

import pickle


class ShapeError(RuntimeError, ValueError):
    """Shapes that do not fit together (binary op, matmul, view, cat, ...): the message names both."""


class DeviceError(RuntimeError):
    """Tensors on different devices met in one op, or a device is not available."""


class BackwardError(RuntimeError):
    """backward() cannot run: nothing requires grad, a released graph, a modified saved tensor..."""


class GradcheckError(RuntimeError):
    """An analytical gradient disagrees with finite differences (see tinyattn.gradcheck)."""


class CheckpointError(ValueError):
    """A saved file that cannot be loaded safely: missing, corrupt, too large for the load limit, or
    not what it claims to be (a checkpoint directory, a torch.save file, a safetensors file). The
    message names the file, what is wrong and what to do."""


class UnpicklingError(CheckpointError, pickle.UnpicklingError):
    """A pickle that asks for something a weights-only load never does (a global outside the allowlist,
    an opcode that builds arbitrary objects): tinyattn never runs code from a file."""
