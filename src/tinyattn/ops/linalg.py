"""Linear algebra on (batches of) square matrices, each forward beside its backward: the inverse, the
determinant, and solve; the small set an introductory course reaches for.
"""

import numpy as np

from .. import backend
from .base import Op, broadcast_shape, unbroadcast


# NumPy's error for a singular matrix (CuPy's inv and solve give inf and NaN instead, unchecked)
_LinAlgError = np.linalg.LinAlgError


# ---------------------------------------------------------------------------------------------
# linear algebra on (batches of) square matrices


def _mT(xp, a):
    return backend.matrix_transpose(a)


def _singular_error(name):
    return RuntimeError(
        f"{name}: the input matrix is singular (its determinant is 0), so it has no inverse: check for a "
        "row or column that is a multiple of another, or use torch.linalg.pinv-style least squares instead")


class Inverse(Op):
    """The inverse A^-1 of each square matrix; d(A^-1) = -A^-1 dA A^-1, so the gradient is
    -A^-T grad A^-T."""

    @staticmethod
    def forward(ctx, a):
        xp = ctx.xp
        try:
            inverse = xp.linalg.inv(a)
        except _LinAlgError:
            raise _singular_error("linalg.inv") from None
        ctx.save_for_backward(inverse)
        return inverse

    @staticmethod
    def backward(ctx, grad):
        (inverse,) = ctx.saved_tensors
        xp = ctx.xp
        inverse_t = _mT(xp, inverse)
        return -backend.matmul(backend.matmul(inverse_t, grad), inverse_t)


def _cofactors(a):
    """The cofactor matrix C of each square matrix of a NumPy array: C[i, j] = (-1)^(i+j) det(A without
    row i and column j). It is d det(A) / dA, for singular matrices too."""
    n = a.shape[-1]
    out = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=-2), j, axis=-1)
            out[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor) if n > 1 else 1
    return out


class Det(Op):
    """The determinant of each square matrix; d det(A) / dA = det(A) A^-T (Jacobi's formula) where A is
    invertible, and the cofactor matrix of A (the same thing, written without the inverse) where it
    is singular. (PyTorch's backward gives zeros at some singular matrices, [[1, 2], [2, 4]] among
    them, where the cofactors are not zero.)"""

    @staticmethod
    def forward(ctx, a):
        xp = ctx.xp
        det = xp.linalg.det(a)
        # LAPACK stops at an exact zero pivot and NumPy then says 0, even where an inf or NaN in the
        # matrix makes the product of the pivots 0 * inf: PyTorch's (and the arithmetic's) NaN
        zero_with_non_finite = (det == 0) & ~xp.all(xp.isfinite(a), axis=(-2, -1))
        if bool(xp.any(zero_with_non_finite)):
            det = xp.where(zero_with_non_finite, xp.asarray(xp.nan, dtype=det.dtype), det)
        ctx.save_for_backward(a, det)
        return det

    @staticmethod
    def backward(ctx, grad):
        a, det = ctx.saved_tensors
        xp = ctx.xp
        if a.shape[-1] == 0:
            return xp.zeros(a.shape, dtype=a.dtype, **backend.creation_kwargs(xp))
        if bool(xp.all(det != 0)):
            try:
                return (grad * det)[..., None, None] * _mT(xp, xp.linalg.inv(a))
            except _LinAlgError:
                pass
        # a singular matrix (rare, and small in teaching code): the cofactors, on the host
        cofactors = backend.from_host(_cofactors(backend.to_host(a)), backend.device_of(a))
        return grad[..., None, None] * cofactors


class Solve(Op):
    """X with A X = B (B a vector when `vector`, else a matrix; batches broadcast). With G the
    gradient of X: dB = A^-T G, and dA = -dB X^T."""

    @staticmethod
    def forward(ctx, a, b, vector):
        xp = ctx.xp
        rhs = b[..., None] if vector else b
        batch = broadcast_shape(a.shape[:-2], rhs.shape[:-2])
        try:
            x = xp.linalg.solve(xp.broadcast_to(a, batch + a.shape[-2:]), xp.broadcast_to(rhs, batch + rhs.shape[-2:]))
        except _LinAlgError:
            raise _singular_error("linalg.solve") from None
        ctx.save_for_backward(a, x)
        ctx.vector, ctx.a_shape, ctx.b_shape = vector, a.shape, b.shape
        return x[..., 0] if vector else x

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        xp = ctx.xp
        g = grad[..., None] if ctx.vector else grad
        batch = g.shape[:-2]
        gb = xp.linalg.solve(xp.broadcast_to(_mT(xp, a), batch + a.shape[-2:]), g)
        ga = -backend.matmul(gb, _mT(xp, x))
        gb = gb[..., 0] if ctx.vector else gb
        return unbroadcast(xp, ga, ctx.a_shape), unbroadcast(xp, gb, ctx.b_shape), None
