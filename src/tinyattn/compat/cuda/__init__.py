"""`tinyattn.cuda`: what programs written for PyTorch ask about the GPU.

tinyattn reaches a GPU through CuPy (`device="cuda"`). Where CuPy sees one, these answer from CuPy;
where not, they answer as PyTorch does on a machine without CUDA: `is_available()` is False,
`device_count()` is 0, the memory counters are 0, `empty_cache()` does nothing, and `synchronize()`,
`current_device()`, `set_device()`, `get_device_name()` and `Event()` raise. `is_bf16_supported()` is False on every device:
tinyattn computes in float32 and float64 only (so nanoGPT picks float16, whose autocast tinyattn then
disables with a warning, and trains in float32).
"""

from ... import backend, random
from ...errors import DeviceError
from . import amp  # noqa: F401  (tinyattn.cuda.amp.GradScaler, as PyTorch spells it)


def is_available():
    return backend.cuda_is_available()


def is_bf16_supported(including_emulation=True):
    """False: tinyattn has no bfloat16 arithmetic, on the CPU or on a GPU."""
    return False


def _cupy(what):
    """CuPy, when it can reach a GPU; otherwise a DeviceError saying that `what` needs one."""
    if not is_available():
        raise DeviceError(f"{what} needs a CUDA GPU and none is available (tinyattn uses one through "
                          "CuPy: pip install cupy-cuda12x); check tinyattn.cuda.is_available() first")
    import cupy

    return cupy


def _index(device):
    """The GPU index meant by None (the current one), an int, 'cuda:1' or a tinyattn.device."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    return backend.Device(device).index


def device_count():
    """How many CUDA GPUs CuPy sees (0 without CuPy or a GPU)."""
    return _cupy("device_count").cuda.runtime.getDeviceCount() if is_available() else 0


def current_device():
    """The index of the current CUDA device."""
    return _cupy("tinyattn.cuda.current_device()").cuda.Device().id


def set_device(device):
    """Make `device` (an int, 'cuda:1' or a tinyattn.device) the current GPU. A negative index does
    nothing, as in PyTorch; without a GPU any other raises a DeviceError (PyTorch's CPU build raises too)."""
    if isinstance(device, str) or hasattr(device, "type"):
        kind = device.split(":")[0] if isinstance(device, str) else device.type
        if kind != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
    index = device if isinstance(device, int) else backend.Device(device).index
    if index is None or index >= 0:
        _cupy("tinyattn.cuda.set_device()").cuda.Device(index or 0).use()


def synchronize(device=None):
    """Wait until the GPU has finished the work queued on it (what GPU timings need)."""
    _cupy("tinyattn.cuda.synchronize()").cuda.Device(_index(device)).synchronize()


def get_device_name(device=None):
    """The name of a CUDA device (the current one by default)."""
    cupy = _cupy("tinyattn.cuda.get_device_name()")
    return cupy.cuda.runtime.getDeviceProperties(_index(device))["name"].decode()


def get_device_capability(device=None):
    """(major, minor), e.g. (9, 0) for an H100."""
    capability = _cupy("tinyattn.cuda.get_device_capability()").cuda.Device(_index(device)).compute_capability
    return int(capability[:-1]), int(capability[-1])


class Event:
    """A marker in the GPU's work queue, for timing GPU code (CuPy's event), as torch.cuda.Event:
    `start.record(); ...; end.record(); synchronize(); start.elapsed_time(end)` gives milliseconds.
    Without a GPU it cannot be made (DeviceError; PyTorch's CPU build raises too)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        cupy = _cupy("tinyattn.cuda.Event()")
        self._event = cupy.cuda.Event(block=blocking, disable_timing=not enable_timing, interprocess=interprocess)

    def record(self, stream=None):
        """Records the event on the current stream (its time, for `elapsed_time`)."""
        self._event.record(stream)

    def synchronize(self):
        """Waits until the work before the event has finished."""
        self._event.synchronize()

    def query(self):
        """True when the work recorded before this event has finished."""
        return self._event.done

    def elapsed_time(self, end_event):
        """Milliseconds between this event and `end_event` (both recorded, made with enable_timing=True)."""
        return _cupy("Event.elapsed_time").cuda.get_elapsed_time(self._event, end_event._event)


def manual_seed(seed):
    """Seed the GPU's random stream only (dropout masks on the GPU), as torch.cuda.manual_seed does."""
    random.default_generator.seed_device(seed)


manual_seed_all = manual_seed


def empty_cache():
    """Give the memory CuPy's pool keeps for reuse back to the GPU (nothing to do without one)."""
    if is_available():
        _cupy("empty_cache").get_default_memory_pool().free_all_blocks()


def memory_allocated(device=None):
    """Bytes held by live GPU arrays (CuPy's pool), 0 without a GPU."""
    return _cupy("memory_allocated").get_default_memory_pool().used_bytes() if is_available() else 0


def memory_reserved(device=None):
    """Bytes CuPy's pool holds, live arrays and cached blocks together; 0 without a GPU."""
    return _cupy("memory_reserved").get_default_memory_pool().total_bytes() if is_available() else 0


def max_memory_allocated(device=None):
    """0 without a GPU, as in PyTorch. CuPy keeps no peak, so with a GPU this raises: use
    memory_reserved(), which only grows until empty_cache(), as a bound."""
    if not is_available():
        return 0
    raise NotImplementedError("CuPy keeps no peak of allocated memory: use tinyattn.cuda.memory_reserved() "
                              "(what CuPy's pool holds, which only grows until empty_cache()) as a bound")


def reset_peak_memory_stats(device=None):
    """Nothing to reset without a GPU; with one, see max_memory_allocated."""
    if is_available():
        max_memory_allocated(device)

# a PyTorch name this module lacks says so (tinyattn/missing.py), as a name of tinyattn.cuda, the name
# programs reach it by (compat/__init__.py)
from ... import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn.cuda")
__dir__ = _missing.module_dir("tinyattn.cuda")  # its public names only
