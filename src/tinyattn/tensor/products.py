"""Tensor methods: matrix products (matmul, mm, bmm, dot, outer, addmm, baddbmm).
"""

import warnings

import numpy as np

from .. import backend, dtypes, numpy_names, ops, return_types
from ..errors import ShapeError
from ..tensor_core import TensorCore
from . import creation
from .arguments import _dim
from .creation import _from_host
from ..autograd import grad_mode


def _scaled_sum(input, product, inner, beta, alpha, name):
    """beta * input + alpha * product (addmm, baddbmm); input broadcasts to the product's shape, and
    with beta=0 it is not used at all (its NaN and inf do not reach the result, its gradient is 0), as
    in PyTorch. A product over `inner` = 0 numbers is 0 whatever alpha is (PyTorch's, too)."""
    if ops.broadcast_shape(input.shape, product.shape) != tuple(product.shape):
        raise ShapeError(f"{name}: the input's shape {list(input.shape)} does not broadcast to the product's "
                         f"{list(product.shape)}")
    if input.dtype is not product.dtype:  # no silent promotion, as in PyTorch
        raise TypeError(f"{name}: the input is {input.dtype} and the matrices are {product.dtype}: convert one "
                        f"(input.to({product.dtype}))")
    if alpha != 1 and inner:
        product = product * alpha
    input = input.expand(product.shape)  # (beta times every element: beta times no elements is no elements)
    if beta == 0:
        if not input.requires_grad:
            return product
        everywhere = creation.ones(product.shape, dtype=dtypes.bool_, device=input.device)
        return product + input.masked_fill(everywhere, 0)  # in the graph, with a gradient of 0
    return product + (input if beta == 1 else input * beta)


def _matmul(a, b):
    """a @ b, refusing mixed and bool dtypes as PyTorch does (Tensor.matmul, the @ operator, torch.matmul)."""
    if not isinstance(a, TensorCore) or not isinstance(b, TensorCore):
        raise TypeError("matmul expects two tensors")
    if a.dtype is not b.dtype:  # PyTorch does not promote in matmul: a float64 result would surprise
        raise TypeError(
            f"matmul expects two tensors of the same dtype, got {a.dtype} and {b.dtype}: convert one, "
            "e.g. x.float() @ w or x @ w.to(x.dtype)"
        )
    if a.dtype is dtypes.bool_:
        raise TypeError("matmul is not defined for bool tensors: convert with .float()")
    return ops.Matmul.apply(a, b)


# torch.* functions that are Tensor methods too (x.asin() is tinyattn.asin(x)): the class below
# binds them, so each is written once

SvdResult = return_types.named_result("svd", ["U", "S", "V"])


def _square_matrices(input, name):
    if input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise ShapeError(f"{name}: A must be batches of square matrices, but they are "
                         f"{input.shape[-2] if input.ndim >= 2 else '?'} by {input.shape[-1] if input.ndim else '?'} "
                         f"(shape {list(input.shape)})")
    if not input.dtype.is_floating_point:
        raise TypeError(f"{name}: expected a floating point tensor, got {input.dtype}: use .double() or .float()")
    return input


def inverse(input):
    """The inverse of each square matrix (of a batch); a singular one raises an error."""
    return ops.Inverse.apply(_square_matrices(input, "linalg.inv"))


def det(input):
    """The determinant of each square matrix (of a batch)."""
    return ops.Det.apply(_square_matrices(input, "linalg.det"))


def svd(input, some=True, compute_uv=True):
    """The singular value decomposition input = U diag(S) V^T, as (U, S, V), S descending (V, not
    V^T, as torch.svd gives it). For looking at data (principal directions): tinyattn does not
    differentiate through it, and says so when the input requires grad."""
    if grad_mode.enabled and input.requires_grad:
        raise RuntimeError("svd of a tensor that requires grad: tinyattn has no gradient for svd; call it under "
                           "torch.no_grad() or on x.detach()")
    if input.ndim < 2 or not input.dtype.is_floating_point:
        raise ShapeError(f"svd expects floating point matrices (2 dims or more), got shape {list(input.shape)} "
                         f"and {input.dtype}")
    host = backend.to_host(input.array)
    u, s, vh = np.linalg.svd(host, full_matrices=not some)
    if not compute_uv:
        u, vh = np.zeros_like(u), np.zeros_like(vh)
    return SvdResult(*(_from_host(np.ascontiguousarray(a), input.dtype, input.device, False)
                       for a in (u, s, np.swapaxes(vh, -1, -2))))


def cross(input, other, dim=None, *, axis=None):
    """The cross product of 3-vectors along `dim` (the first dim of size 3 when not given, as
    torch.cross does today, with its warning): c_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1}."""
    dim = numpy_names.dim_or_axis("cross", dim, axis)
    if dim is None:
        sizes = [d for d, n in enumerate(input.shape) if n == 3]
        if not sizes:
            raise ShapeError(f"cross: no dimension of size 3 in input of shape {list(input.shape)}")
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass "
                      "the dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will "
                      "change to agree with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        dim = sizes[0]
    axis = _dim(dim, input.ndim)
    if input.shape[axis] != 3 or other.shape[_dim(dim, other.ndim)] != 3:
        raise ShapeError(f"cross: inputs dimension {dim} must have length 3, got shapes {list(input.shape)} and "
                         f"{list(other.shape)}")
    return input.roll(-1, axis) * other.roll(-2, axis) - input.roll(-2, axis) * other.roll(-1, axis)


class ProductMethods:
    """The matrix products of tinyattn.Tensor, and its linear algebra."""

    __slots__ = ()  # a mixin of Tensor, which keeps its numbers in TensorCore's slots

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)

    # --- matrix products ---

    def matmul(self, other):
        """The matrix product (self @ other), with batch dims broadcast and 1-D operands as vectors."""
        return _matmul(self, other)

    def dot(self, other):
        """The dot product of two 1-D tensors: a 0-d tensor."""
        if self.ndim != 1 or other.ndim != 1:
            raise ShapeError(
                f"dot expects two 1-D tensors, got shapes {list(self.shape)} and {list(other.shape)}: "
                "use @ (matmul) for matrices"
            )
        return _matmul(self, other)

    def mm(self, other):
        """The matrix product of two 2-D tensors."""
        if self.ndim != 2 or other.ndim != 2:
            raise ShapeError(
                f"mm expects two 2-D matrices, got shapes {list(self.shape)} and {list(other.shape)}: "
                "use @ (matmul) for vectors and batches"
            )
        return _matmul(self, other)

    def bmm(self, other):
        """Batched matrix product of (b, n, m) and (b, m, p) tensors: a (b, n, p) tensor."""
        if self.ndim != 3 or other.ndim != 3 or self.shape[0] != other.shape[0]:
            raise ShapeError(
                f"bmm expects two 3-D batches of matrices with the same batch size, got shapes "
                f"{list(self.shape)} and {list(other.shape)}: use @ (matmul) to broadcast batches"
            )
        return _matmul(self, other)

    # --- more matrix products ---

    def outer(self, vec2):
        """The outer product of two 1-D tensors: `out[i][j] = self[i] * vec2[j]`."""
        if self.ndim != 1 or vec2.ndim != 1:
            raise ShapeError(f"outer expects two 1-D tensors, got shapes {list(self.shape)} and {list(vec2.shape)}")
        return self.reshape(-1, 1) * vec2

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        """beta * self + alpha * (mat1 @ mat2)."""
        return _scaled_sum(self, mat1.mm(mat2), mat1.shape[-1], beta, alpha, "addmm")

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        """beta * self + alpha * (batch1 @ batch2), batch by batch."""
        return _scaled_sum(self, batch1.bmm(batch2), batch1.shape[-1], beta, alpha, "baddbmm")

    # the torch.* functions above, as methods
    inverse = inverse
    det = det
    svd = svd
    cross = cross
