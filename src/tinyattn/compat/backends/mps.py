"""`tinyattn.backends.mps`: Apple's GPU backend, which tinyattn does not have."""


def is_available():
    """Whether Apple's MPS device is available: False (tinyattn has CPU and CUDA)."""
    return False


def is_built():
    """Whether this build supports MPS: False."""
    return False


# a name this module lacks is named as programs reach it, tinyattn.backends.mps, and a PyTorch name says so
from ... import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn.backends.mps")
__dir__ = _missing.module_dir("tinyattn.backends.mps")
