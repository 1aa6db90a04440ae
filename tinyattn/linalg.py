"""`tinyattn.linalg`: only what a from-scratch course needs of torch.linalg, the vector norm.

Matrix norms, decompositions, solvers and inverses are left out (see docs/explanations/differences.md).
"""

from .tensor import vector_norm

__all__ = ["vector_norm"]
