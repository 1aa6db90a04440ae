"""`tinyattn.compile` and `tinyattn.compiler`: PyTorch's graph compiler, accepted for compatibility only.

`torch.compile(model)` traces a model into fused kernels. tinyattn runs every op eagerly, as written
(its attention, linear, layer norm and cross-entropy are already fused ops), so `compile` returns the
model or function it is given, unchanged: the same object, computing the same numbers. One visible
difference: PyTorch returns a wrapper whose `state_dict()` keys start with `_orig_mod.`; here the keys
stay the model's own (nanoGPT strips that prefix when it loads, so its checkpoints load either way).
"""

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """Return `model` unchanged (or, called without one, a decorator that does so)."""
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode!r}, should be one of: {', '.join(_MODES[1:])}")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise RuntimeError(f"compile expects a Module or a function, got {type(model).__name__}")
    return model


def disable(fn=None, recursive=True, *, reason=None):
    """Run `fn` eagerly (it always is): returns `fn` itself, or, called without one, a decorator that does so."""
    if fn is None:
        return lambda fn: fn
    return fn


def reset():
    """Forget compiled code: there is none."""


def is_compiling():
    """False: tinyattn never traces (PyTorch answers True inside code it is compiling)."""
    return False

# a name this module lacks is named as programs reach it, tinyattn.compiler (compat/__init__.py), and a PyTorch
# name says so (tinyattn/missing.py); dir() lists the module's public names only, not what it imports
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn.compiler")
__dir__ = _missing.module_dir("tinyattn.compiler")
