"""`tinyattn.backends.cuda`: cuBLAS's precision switches (kept, never used)."""


class _Flags:
    """Named flags with defaults: a name it does not know is an AttributeError, as in PyTorch (so a
    typo such as `allow_tf23 = True` is not silently kept)."""

    def __init__(self, **defaults):
        object.__setattr__(self, "_values", defaults)

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Unknown attribute {name}") from None

    def __setattr__(self, name, value):
        if name not in self._values:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = value


matmul = _Flags(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                allow_bf16_reduced_precision_reduction=True)


# a name this module lacks is named as programs reach it, tinyattn.backends.cuda, and a PyTorch name says so
from ... import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn.backends.cuda")
__dir__ = _missing.module_dir("tinyattn.backends.cuda")
