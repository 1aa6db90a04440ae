"""`tinyattn.utils`: `data` (Dataset, DataLoader, samplers), as `torch.utils`."""

from . import data

# dir() lists this module's public names only, not the modules it imports (tinyattn/missing.py)
from .. import missing as _missing  # noqa: E402

__dir__ = _missing.module_dir(__name__)
__getattr__ = _missing.module_getattr(__name__)
