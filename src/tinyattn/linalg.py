"""`tinyattn.linalg`: what an introductory course needs of torch.linalg.

Norms of vectors and matrices, the inverse, the determinant and solving A X = B (all differentiable),
the cross product, and the singular value decomposition (for looking at data: no gradient). The
eigen-decompositions, QR, least squares and pseudo-inverses are left out.
"""

import math

import numpy as np

from . import backend, functions, return_types
from .tensor.products import _square_matrices
from .autograd import grad_mode
from .errors import ShapeError
from .tensor.creation import _from_host
from .tensor import Tensor, _dim, vector_norm

__all__ = ["vector_norm", "matrix_norm", "norm", "inv", "det", "solve", "cross", "svd", "svdvals"]

SvdResult = return_types.named_result("linalg_svd", ["U", "S", "Vh"])


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """A norm of the matrices in dims `dim`: "fro" (the square root of the sum of squares), 1 and -1
    (the largest / smallest column sum of absolute values), inf and -inf (the same of rows), and
    "nuc", 2, -2 (from the singular values: no gradient)."""
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise ValueError(f"linalg.matrix_norm: dim must be a 2-tuple, got {dim!r}")
    if A.ndim < 2:
        raise ShapeError(f"linalg.matrix_norm: the input tensor A must have at least 2 dimensions, got shape "
                         f"{list(A.shape)}")
    x = A if dtype is None else A.to(dtype)
    rows, cols = (_dim(d, x.ndim) for d in dim)
    if rows == cols:
        raise ValueError(f"linalg.matrix_norm: dims must be different, got {dim!r}")
    if ord == "fro":
        return vector_norm(x, 2, (rows, cols), keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        summed, reduced = (rows, cols) if ord in (1, -1) else (cols, rows)
        sums = x.abs().sum(summed, keepdim=True)
        result = sums.amax(reduced, keepdim=True) if ord > 0 else sums.amin(reduced, keepdim=True)
        return result if keepdim else result.squeeze((rows, cols))
    if ord in ("nuc", 2, -2):
        if grad_mode.enabled and x.requires_grad:
            raise RuntimeError(f"linalg.matrix_norm(ord={ord!r}) of a tensor that requires grad: it comes from the "
                               "singular values, which tinyattn does not differentiate; use ord='fro', or call "
                               "it under torch.no_grad()")
        moved = x.permute(*[d for d in range(x.ndim) if d not in (rows, cols)], rows, cols)
        s = np.linalg.svd(backend.to_host(moved.array), compute_uv=False)
        values = s.sum(-1) if ord == "nuc" else s.max(-1) if ord == 2 else s.min(-1)
        result = _from_host(np.asarray(values, dtype=s.dtype), x.dtype, x.device, False)
        if keepdim:
            for d in sorted((rows, cols)):
                result = result.unsqueeze(d)
        return result
    raise ValueError(f"linalg.matrix_norm: order {ord!r} not supported: use 'fro', 'nuc', 1, -1, 2, -2, inf or -inf")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: a vector norm (dim an int, or a 1-D input) or a matrix norm (dim a pair, or
    a 2-D input with an ord); with neither ord nor dim, the 2-norm of all elements flattened."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or dim is None and ord is not None and A.ndim == 2:
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else tuple(dim), keepdim,
                           dtype=dtype)
    if dim is None and ord is not None and A.ndim != 1:
        raise ValueError(f"linalg.norm: input must be 1-D or 2-D when ord is given and dim is not, got shape "
                         f"{list(A.shape)}")
    if isinstance(ord, str):
        raise ValueError(f"linalg.norm: ord={ord!r} is a matrix norm: give a 2-D input or dim as a pair")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def inv(A):
    """The inverse of each square matrix (of a batch): A @ inv(A) is the identity."""
    return functions.inverse(A)


def det(A):
    """The determinant of each square matrix (of a batch)."""
    return functions.det(A)


def solve(A, B, *, left=True):
    """X with A X = B, for square A (a batch broadcasts): B a vector (..., n) or matrices (..., n, k).
    Faster and more accurate than inv(A) @ B. `left=False` solves X A = B."""
    from . import ops

    if not left:
        return solve(A.transpose(-2, -1), B.transpose(-2, -1)).transpose(-2, -1)
    _square_matrices(A, "linalg.solve")
    if not isinstance(B, Tensor) or B.dtype is not A.dtype:
        raise TypeError(f"linalg.solve: B must be a tensor of A's dtype {A.dtype}, got {B!r}")
    n = A.shape[-1]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if (B.shape[-1] if vector else B.shape[-2] if B.ndim >= 2 else None) != n:
        raise ShapeError(f"linalg.solve: A of shape {list(A.shape)} and B of shape {list(B.shape)} do not fit: B "
                         f"needs {n} rows")
    return ops.Solve.apply(A, B, vector)


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along `dim` (the last by default)."""
    return functions.cross(input, other, dim)


def svd(A, full_matrices=True):
    """A = U diag(S) Vh, as (U, S, Vh), S descending. No gradient (refused for a tensor that requires it)."""
    U, S, V = functions.svd(A, some=not full_matrices)
    return SvdResult(U, S, V.transpose(-2, -1))


def svdvals(A):
    """The singular values of A, descending."""
    return functions.svd(A).S


# a PyTorch name this module lacks says so (tinyattn/missing.py)
from . import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)  # its public names only
