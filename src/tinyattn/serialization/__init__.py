"""Saving and loading, with one set of checks for every format.

    tinyattn.save(obj, f) / tinyattn.load(f, map_location=None, weights_only=True, mmap=None)
        PyTorch's own file format: files go both ways between tinyattn and PyTorch
    add_safe_globals / safe_globals / get_safe_globals / clear_safe_globals
        the classes and functions a weights-only load may also build (PyTorch's allow-list)
    tinyattn.serialization.save_file(tensors, path, metadata=None) / load_file(path, device="cpu")
        safetensors
    tinyattn.app.checkpoint
        the `tinyattn train` checkpoint directory (model.npz, optimizer.npz, meta.json, manifest.json)

All of them load through `checks.py`: nothing in a file can run code (unless you load a file you
trust with `load(f, weights_only=False)`, the explicit opt-in), every declared size is bounded
(`set_max_load_bytes(n)` raises the limit of 4 GiB per load) before anything is allocated, and every
refusal is a `tinyattn.CheckpointError` naming the file and what to do.
"""

from ..errors import CheckpointError, UnpicklingError
from .checks import DEFAULT_MAX_LOAD_BYTES, get_max_load_bytes, set_max_load_bytes
from .safetensors_format import load_file, load_metadata, save_file
from .pickling import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from .torch_format import get_unsafe_globals_in_checkpoint, load, save

__all__ = ["save", "load", "save_file", "load_file", "load_metadata", "set_max_load_bytes", "get_max_load_bytes",
           "DEFAULT_MAX_LOAD_BYTES", "CheckpointError", "UnpicklingError", "add_safe_globals", "safe_globals",
           "get_safe_globals", "clear_safe_globals", "get_unsafe_globals_in_checkpoint"]

# dir() lists this module's public names only, not the modules it imports (tinyattn/missing.py)
from .. import missing as _missing  # noqa: E402

__dir__ = _missing.module_dir(__name__)
