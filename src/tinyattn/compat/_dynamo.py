"""`tinyattn._dynamo`: the tracer behind PyTorch's `compile`, accepted for compatibility only.

Scripts and notebooks written for PyTorch reach into it around `torch.compile`:
`torch._dynamo.config.suppress_errors = True` (fall back to eager code when compiling fails),
`torch._dynamo.reset()` (forget compiled code), `torch._dynamo.config.cache_size_limit = 64`.
tinyattn compiles nothing (`compile` returns the model itself, see `tinyattn.compiler`), so the
settings are kept and given back, starting from PyTorch's defaults, and change nothing; a misspelt
setting is an AttributeError, as in PyTorch. The engine never reads this module.
"""

from .backends.cuda import _Flags  # (named flags that refuse a name they do not know, as PyTorch's)
from .compiler import disable, is_compiling, reset  # noqa: F401  (torch._dynamo.disable, ...)


class _Config(_Flags):
    """PyTorch's dynamo settings; the older names are aliases of the newer ones, as in PyTorch."""

    _ALIASES = {"cache_size_limit": "recompile_limit", "accumulated_cache_size_limit": "accumulated_recompile_limit"}

    def __getattr__(self, name):
        return super().__getattr__(self._ALIASES.get(name, name))

    def __setattr__(self, name, value):
        super().__setattr__(self._ALIASES.get(name, name), value)


config = _Config(suppress_errors=False, verbose=False, recompile_limit=8, accumulated_recompile_limit=256,
                 capture_scalar_outputs=False, capture_dynamic_output_shape_ops=False,
                 automatic_dynamic_shapes=True, assume_static_by_default=True, optimize_ddp=True)


def mark_dynamic(t, index, **hints):
    """A hint that a dimension's size varies between calls; nothing to do without a compiler."""


def mark_static(t, index=None):
    """A hint that a dimension's size does not vary; nothing to do without a compiler."""


maybe_mark_dynamic = mark_dynamic

# a name this module lacks is named as programs reach it, tinyattn._dynamo (compat/__init__.py), and a PyTorch
# name says so (tinyattn/missing.py)
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn._dynamo")
