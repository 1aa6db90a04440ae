"""Library-wide defaults: the default dtype and device, the legacy default tensor type, deterministic algorithms."""

import warnings

from .. import backend, dtypes


def set_default_dtype(d):
    """The dtype of new float tensors (tensor([1.5]), zeros(3), layers' weights): float32 (the
    default) or float64. Python floats mixed with tensors follow it too, as in PyTorch."""
    if d not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"set_default_dtype takes tinyattn.float32 or tinyattn.float64, got {d!r} (tinyattn "
                        "computes in float32 and float64 only)")
    dtypes.default_float = d


_TENSOR_TYPES = {"torch.FloatTensor": dtypes.float32, "torch.DoubleTensor": dtypes.float64}


def set_default_tensor_type(t):
    """The old way to set the default dtype: torch.FloatTensor or torch.DoubleTensor (or their names),
    with PyTorch's deprecation warning. CUDA tensor types are refused: pass device= instead."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    name = t if isinstance(t, str) else getattr(t, "_torch_name", None) or f"torch.{getattr(t, '__name__', t)}"
    if name not in _TENSOR_TYPES:
        raise TypeError(f"set_default_tensor_type: tinyattn takes torch.FloatTensor or torch.DoubleTensor, got "
                        f"{t!r}; for a GPU, create tensors with device='cuda'")
    set_default_dtype(_TENSOR_TYPES[name])


def set_default_device(device):
    """The device of new tensors made without device=. tinyattn makes them on the CPU, so "cpu" (and
    None, which resets) is accepted; a GPU is refused with what to write instead, since tinyattn's
    factories do not read a default device."""
    if device is not None and backend.device(device).type != "cpu":
        raise RuntimeError(f"set_default_device({device!r}): tinyattn makes new tensors on the CPU unless told "
                           "otherwise; give the device to each factory (torch.zeros(3, device='cuda')) or move "
                           "tensors and models with .to('cuda')")


def get_default_device():
    """The device of new tensors made without device=: the CPU."""
    return backend.device("cpu")


_deterministic = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Ask for ops that give the same bits on every run. On the CPU (NumPy) every tinyattn op already
    does, so this only records the setting (are_deterministic_algorithms_enabled reads it back); on
    a GPU, CuPy's atomic scatter-adds (index backward) may add in a different order from run to run."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, got {type(mode).__name__}")
    _deterministic.update(mode=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled():
    """True after use_deterministic_algorithms(True)."""
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    """True after use_deterministic_algorithms(True, warn_only=True)."""
    return _deterministic["mode"] and _deterministic["warn_only"]
