"""`tinyattn.amp`: PyTorch's mixed-precision tools, `autocast` and `GradScaler`, for compatibility.

tinyattn computes in float32 and float64 only (see `dtypes.computable`), so it has no mixed precision:

- `autocast(device_type, dtype=None, enabled=True)` is accepted as a context manager and a decorator,
  and always disabled: the region computes in the tensors' own dtypes. Enabled, it says so with a
  warning, as PyTorch does when it disables autocast for a dtype or device it cannot serve. A
  float32 run with tinyattn gives what a float32 PyTorch run gives, not what an autocast run gives.
- `GradScaler` is PyTorch's, rule for rule, in float32: `scale(loss)` multiplies by the scale,
  `unscale_(optimizer)` divides the gradients by it and looks for inf/NaN, `step(optimizer)` skips the
  update when it found some, `update()` grows the scale after `growth_interval` clean steps and
  shrinks it after a skipped one. For device "cuda" without a GPU it disables itself with PyTorch's
  warning; disabled, `scale` returns its argument, `step` calls `optimizer.step()` and the rest do
  nothing. (Scaling protects float16 gradients from underflow; in float32 it changes nothing but the
  last bits of gradients whose scale is not a power of two.)

None of this reaches the engine: the scaler only multiplies tensors and gradients.
"""

import functools
import warnings

import numpy as np

from .. import backend, dtypes
from ..autograd import no_grad
from ..tensor import Tensor

_DEVICES = ("cpu", "cuda")


def is_autocast_available(device_type):
    """Whether autocast exists for the device type ('cpu' or 'cuda'); it never changes a dtype here."""
    return device_type in _DEVICES


def is_autocast_enabled(device_type=None):
    """False: tinyattn never computes in lower precision."""
    return False


class autocast:
    """Accepted and always disabled: the region computes in the tensors' own dtypes (see above)."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _DEVICES:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else (dtypes.float16 if device_type == "cuda" else dtypes.bfloat16)
        if enabled:
            if device_type == "cuda" and not backend.cuda_is_available():
                reason = "CUDA is not available."
            else:
                reason = f"tinyattn has no {self.fast_dtype.name} arithmetic (it computes in float32 and float64)."
            warnings.warn(f"{reason} Disabling autocast: the region computes in the tensors' own dtypes.",
                          stacklevel=2)
        self._enabled = False

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you "
                            "mean to use autocast as a context manager? (with tinyattn.autocast(...): ...)")

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorated


# the stages of one optimizer within an iteration, as in torch.amp.grad_scaler.OptState
_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


def _float32(x):
    """x rounded to float32, as a Python float (PyTorch keeps the scale in a float32 tensor)."""
    return float(np.float32(x))


class GradScaler:
    """Loss scaling for mixed-precision training, with PyTorch's arguments, rules and messages."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not backend.cuda_is_available():
            warnings.warn("tinyattn.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # set by the first scale(), as in PyTorch
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = {}  # id(optimizer) -> {"stage": ..., "found_inf": bool or None}

    def is_enabled(self):
        """Whether the scaler scales (False: every method passes through)."""
        return self._enabled

    def _checked_scale(self, funcname):
        if self._scale is None:
            raise RuntimeError(f"Attempted {funcname} but _scale is None.  This may indicate your script did "
                               "not use scaler.scale(loss or outputs) earlier in the iteration.")
        return self._scale

    def _optimizer_state(self, optimizer):
        return self._per_optimizer_states.setdefault(id(optimizer), {"stage": _READY, "found_inf": None})

    def scale(self, outputs):
        """outputs * scale (a tensor, or a list or tuple of them); `outputs` itself when disabled."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = _float32(self._init_scale)
            self._growth_tracker = self._init_growth_tracker
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(output) for output in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer):
        """Divide the gradients of `optimizer`'s parameters by the scale, in place (once per step)."""
        if not self._enabled:
            return
        scale = self._checked_scale("unscale_")
        state = self._optimizer_state(optimizer)
        if state["stage"] is _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = _float32(1.0 / scale)  # PyTorch: the reciprocal in float64, then float32
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = p.grad.array
                    xp = backend.namespace(grad)
                    found_inf = found_inf or not bool(xp.all(xp.isfinite(grad)))
                    grad *= inv_scale
                    p.grad._bump_version()
        state["found_inf"] = found_inf
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless unscale_ ran) and call optimizer.step(), skipped if a gradient was inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._checked_scale("step")
        state = self._optimizer_state(optimizer)
        if state["stage"] is _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is _READY:
            self.unscale_(optimizer)
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale=None):
        """Shrink the scale after a skipped step, grow it after `growth_interval` clean ones (or set it)."""
        if not self._enabled:
            return
        self._checked_scale("update")
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise ValueError("new_scale should be a float or a 1-element tensor with requires_grad=False.")
                new_scale = new_scale.item()
            self._scale = _float32(new_scale)
        else:
            found = [s["found_inf"] for s in self._per_optimizer_states.values() if s["found_inf"] is not None]
            if not found:
                raise RuntimeError("No inf checks were recorded prior to update.")
            if any(found):  # PyTorch's _amp_update_scale_, with the scale kept in float32
                self._scale = _float32(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            elif self._growth_tracker + 1 == self._growth_interval:
                grown = _float32(self._scale * self._growth_factor)
                if np.isfinite(grown):
                    self._scale = grown
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
        self._per_optimizer_states = {}

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return float(self._init_scale) if self._scale is None else self._scale

    def get_growth_factor(self):
        """The factor the scale grows by after `growth_interval` steps without inf or NaN."""
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        """Sets the growth factor."""
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        """The factor the scale shrinks by after a step with inf or NaN gradients."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        """Sets the backoff factor."""
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        """How many steps without inf or NaN before the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        """Sets the growth interval."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval, _growth_tracker ({} when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        """Restores a state from `state_dict`."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale = _float32(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker = state_dict["_growth_tracker"]

# a name this module lacks is named as programs reach it, tinyattn.amp (compat/__init__.py), and a PyTorch
# name says so (tinyattn/missing.py); dir() lists the module's public names only, not what it imports
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn.amp")
__dir__ = _missing.module_dir("tinyattn.amp")
