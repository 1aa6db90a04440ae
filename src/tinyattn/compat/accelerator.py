"""`tinyattn.accelerator`: PyTorch's device-neutral questions about the accelerator (PyTorch 2.6 and later).

tinyattn's one accelerator is a CUDA GPU reached through CuPy. Where CuPy sees one, the current
accelerator is `tinyattn.device("cuda")`; where not, the answers are PyTorch's on a machine without
one: `is_available()` is False, `current_accelerator()` None and `device_count()` 0.
"""

from .. import backend
from . import cuda


def is_available():
    """Whether a CUDA GPU (with CuPy) is available."""
    return cuda.is_available()


def current_accelerator(check_available=False):
    """tinyattn.device("cuda") where a GPU is reachable, else None (check_available changes nothing:
    the only accelerator tinyattn knows is checked anyway)."""
    return backend.Device("cuda") if cuda.is_available() else None


def device_count():
    """How many CUDA GPUs CuPy sees (0 without one)."""
    return cuda.device_count()


def synchronize(device=None):
    """Wait for the GPU's queued work (a DeviceError without one)."""
    cuda.synchronize(device)

# a name this module lacks is named as programs reach it, tinyattn.accelerator (compat/__init__.py), and a PyTorch
# name says so (tinyattn/missing.py); dir() lists the module's public names only, not what it imports
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn.accelerator")
__dir__ = _missing.module_dir("tinyattn.accelerator")
