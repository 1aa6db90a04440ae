"""`tinyattn.backends`: PyTorch's switches for its CUDA, cuDNN and Apple-GPU kernels, accepted for
compatibility only.

Programs written for PyTorch set these before they train (`torch.backends.cuda.matmul.allow_tf32 =
True`, `torch.backends.cudnn.benchmark = True`) or ask them (`torch.backends.mps.is_available()`).
tinyattn has none of those kernels: it computes with NumPy or CuPy in the tensors' own dtype, and a
float32 matrix product is always a full float32 product (never TF32). So the flags keep what is set
and give it back, starting from PyTorch's defaults, and change nothing; the questions get the answers
of a machine without cuDNN or an Apple GPU. The engine never reads this module.
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


class _Flags:
    """Named flags with defaults: a name it does not know is an AttributeError, as in PyTorch (so a
    typo such as `allow_tf23 = True` is not silently kept)."""

    def __init__(self, **defaults):
        object.__setattr__(self, "_values", defaults)

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Unknown attribute {name}") from None

    def __setattr__(self, name, value):
        if name not in self._values:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = value


class cuda:
    """`torch.backends.cuda`: cuBLAS's precision switches (kept, never used)."""

    matmul = _Flags(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                    allow_bf16_reduced_precision_reduction=True)


class cudnn:
    """`torch.backends.cudnn`: tinyattn has no cuDNN; the flags are kept and change nothing."""

    enabled = True
    benchmark = False
    deterministic = False
    allow_tf32 = True

    @staticmethod
    def is_available():
        """Whether cuDNN is available: False (tinyattn does not use it)."""
        return False

    @staticmethod
    def version():
        """The cuDNN version: None (tinyattn does not use it)."""
        return None


class mps:
    """`torch.backends.mps`: Apple's GPU backend, which tinyattn does not have."""

    @staticmethod
    def is_available():
        """Whether Apple's MPS device is available: False (tinyattn has CPU and CUDA)."""
        return False

    @staticmethod
    def is_built():
        """Whether this build supports MPS: False."""
        return False

# a name this module lacks is named as programs reach it, tinyattn.backends (compat/__init__.py), and a PyTorch
# name says so (tinyattn/missing.py); dir() lists the module's public names only, not what it imports
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn.backends")
__dir__ = _missing.module_dir("tinyattn.backends")
