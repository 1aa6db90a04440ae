"""`tinyattn.linalg`: only what a from-scratch course needs of torch.linalg, the vector norm.

Matrix norms, decompositions, solvers and inverses are left out (see docs/explanations/differences.md).
"""

from .tensor import vector_norm

__all__ = ["vector_norm"]

# a PyTorch name this module lacks says so (tinyattn/missing.py)
from . import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)  # its public names only
