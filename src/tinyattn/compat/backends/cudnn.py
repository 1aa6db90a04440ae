"""`tinyattn.backends.cudnn`: tinyattn has no cuDNN; the flags are kept and change nothing.

`torch.backends.cudnn.benchmark = True` and `import torch.backends.cudnn as cudnn; cudnn.deterministic = True`
both run as written: the flags start at PyTorch's defaults and give back what was set.
"""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    """Whether cuDNN is available: False (tinyattn does not use it)."""
    return False


def version():
    """The cuDNN version: None (tinyattn does not use it)."""
    return None


# a name this module lacks is named as programs reach it, tinyattn.backends.cudnn, and a PyTorch name says so
from ... import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn.backends.cudnn")
__dir__ = _missing.module_dir("tinyattn.backends.cudnn")
