"""`tinyattn.backends`: PyTorch's switches for its CUDA, cuDNN and Apple-GPU kernels, accepted for
compatibility only.

Programs written for PyTorch set these before they train (`torch.backends.cuda.matmul.allow_tf32 =
True`, `torch.backends.cudnn.benchmark = True`) or ask them (`torch.backends.mps.is_available()`).
tinyattn has none of those kernels: it computes with NumPy or CuPy in the tensors' own dtype, and a
float32 matrix product is always a full float32 product (never TF32). So the flags keep what is set
and give it back, starting from PyTorch's defaults, and change nothing; the questions get the answers
of a machine without cuDNN or an Apple GPU. The engine never reads this package.
"""

_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = "highest"


def set_float32_matmul_precision(precision):
    """Accepted for compatibility: PyTorch may then use TF32 or bfloat16 products on some GPUs;
    tinyattn's float32 products stay full float32 ("highest") whatever is set."""
    global _matmul_precision
    if precision not in _PRECISIONS:
        raise ValueError(f"{precision!r} is not one of 'highest', 'high' or 'medium'")
    _matmul_precision = precision


def get_float32_matmul_precision():
    """What set_float32_matmul_precision last set ("highest" at the start, as in PyTorch)."""
    return _matmul_precision


# torch.backends.cuda, .cudnn and .mps are modules in PyTorch, which programs import by name
# (`import torch.backends.cudnn as cudnn`): so here too (compat/__init__.py binds them under those names)
from . import cuda, cudnn, mps  # noqa: E402,F401


# a name this module lacks is named as programs reach it, tinyattn.backends (compat/__init__.py), and a PyTorch
# name says so (tinyattn/missing.py); dir() lists the module's public names only, not what it imports
from ... import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn.backends")
__dir__ = _missing.module_dir("tinyattn.backends")
