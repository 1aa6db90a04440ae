"""`tinyattn.cuda.amp`: PyTorch's older spelling of `tinyattn.amp` (deprecated there, with a warning).

`tinyattn.cuda.amp.GradScaler(...)` is `tinyattn.amp.GradScaler("cuda", ...)` and
`tinyattn.cuda.amp.autocast(...)` is `tinyattn.amp.autocast("cuda", ...)`; see `tinyattn.amp`.
"""

import warnings

from ... import dtypes
from .. import amp


class GradScaler(amp.GradScaler):
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`tinyattn.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`tinyattn.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


class autocast(amp.autocast):
    def __init__(self, enabled=True, dtype=dtypes.float16, cache_enabled=True):
        warnings.warn("`tinyattn.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`tinyattn.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

# a name this module lacks is named as programs reach it, tinyattn.cuda.amp (compat/__init__.py), and a PyTorch
# name says so (tinyattn/missing.py)
from ... import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn.cuda.amp")
