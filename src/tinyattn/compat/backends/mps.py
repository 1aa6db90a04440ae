"""`tinyattn.backends.mps`: Apple's GPU backend, which tinyattn does not have."""


def is_available():
    """Whether Apple's MPS device is available: False (tinyattn has CPU and CUDA)."""
    return False


def is_built():
    """Whether this build supports MPS: False."""
    return False
