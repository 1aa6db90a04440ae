"""More differentiable primitives, each forward beside its backward, as in ops.py: the inverse and
hyperbolic trigonometric functions, the median, diagonals, index_add, and the small linear-algebra
set an introductory course reaches for (inverse, determinant, solve).

The conventions are ops.py's: `forward(ctx, ...)` receives arrays (NumPy or CuPy, `ctx.xp`) and plain
Python values, `backward(ctx, grad)` returns one gradient per forward argument (None for the
non-differentiable ones), and a broadcast input gets its gradient summed back to its own shape.
"""

import numpy as np

from . import backend
from .ops import Op, broadcast_shape, unbroadcast

# NumPy's error for a singular matrix (CuPy's inv and solve give inf and NaN instead, unchecked)
_LinAlgError = np.linalg.LinAlgError


# ---------------------------------------------------------------------------------------------
# elementwise: inverse trigonometry and the hyperbolic functions


class Asin(Op):
    """arcsin x; d/dx = 1 / sqrt(1 - x^2) (infinite at x = +-1, NaN outside [-1, 1], as in PyTorch)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.asin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / ctx.xp.sqrt(1 - x * x)


class Acos(Op):
    """arccos x; d/dx = -1 / sqrt(1 - x^2)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.acos(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad / ctx.xp.sqrt(1 - x * x)


class Atan(Op):
    """arctan x; d/dx = 1 / (1 + x^2)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.atan(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (1 + x * x)


class Atan2(Op):
    """The angle of the point (x, y), atan2(y, x), in (-pi, pi]; d/dy = x / r^2, d/dx = -y / r^2
    with r^2 = x^2 + y^2 (y and x broadcast). At the origin, where the angle has no derivative, the
    gradients are 0, as PyTorch makes them (1 / r^2 taken as 0 where it is infinite)."""

    @staticmethod
    def forward(ctx, y, x):
        ctx.save_for_backward(y, x)
        return ctx.xp.atan2(y, x)

    @staticmethod
    def backward(ctx, grad):
        y, x = ctx.saved_tensors
        xp = ctx.xp
        reciprocal = 1 / (x * x + y * y)
        reciprocal = xp.where(xp.isinf(reciprocal), 0, reciprocal)
        return unbroadcast(xp, grad * x * reciprocal, y.shape), unbroadcast(xp, grad * -y * reciprocal, x.shape)


class Sinh(Op):
    """sinh x; d/dx = cosh x. (NumPy's sinh, not (e^x - e^-x) / 2, which loses the digits of a small x.)"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.sinh(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.xp.cosh(x)


class Cosh(Op):
    """cosh x; d/dx = sinh x."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.cosh(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.xp.sinh(x)


# ---------------------------------------------------------------------------------------------
# the median of all elements


class MedianAll(Op):
    """The lower median of all elements (the middle one of the sorted values; of an even count, the
    smaller of the two middle ones), NaN when any element is NaN. PyTorch shares the gradient evenly
    among the elements equal to the median, so ties each get grad / (their count)."""

    @staticmethod
    def forward(ctx, x):
        xp = ctx.xp
        flat = xp.reshape(x, (-1,))
        floating = xp.isdtype(x.dtype, "real floating")
        if flat.shape[0] == 0:  # no middle element: NaN (the smallest integer for integers), as PyTorch gives
            value = xp.asarray(xp.nan if floating else xp.iinfo(x.dtype).min, dtype=x.dtype)
        elif floating and bool(xp.any(xp.isnan(flat))):
            value = xp.asarray(xp.nan, dtype=x.dtype)
        else:
            value = xp.sort(flat)[(flat.shape[0] - 1) // 2]
        ctx.save_for_backward(x, value)
        return xp.asarray(value, dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, value = ctx.saved_tensors
        xp = ctx.xp
        chosen = (x == value) | (xp.isnan(x) & xp.isnan(value))
        count = xp.sum(xp.astype(chosen, grad.dtype))
        return xp.where(chosen, grad / xp.where(count > 0, count, 1), 0)


# ---------------------------------------------------------------------------------------------
# diagonals


def _diagonal_places(xp, shape, offset):
    """The (rows, columns) of diagonal `offset` of a matrix of this shape (above the main one for
    offset > 0, below it for offset < 0)."""
    rows, cols = shape
    start_row, start_col = max(-offset, 0), max(offset, 0)
    n = max(min(rows - start_row, cols - start_col), 0)
    places = xp.arange(n, **backend.creation_kwargs(xp))
    return places + start_row, places + start_col


class Diag(Op):
    """torch.diag: a vector becomes a square matrix with the vector on diagonal `offset` (zeros
    elsewhere); a matrix gives its diagonal `offset` as a vector. Each backward takes the other way:
    the gradient's diagonal for a vector, the gradient placed on the diagonal for a matrix."""

    @staticmethod
    def forward(ctx, x, offset):
        xp = ctx.xp
        ctx.in_shape, ctx.offset = x.shape, offset
        if x.ndim == 1:
            n = x.shape[0] + abs(offset)
            out = xp.zeros((n, n), dtype=x.dtype, **backend.creation_kwargs(xp))
            return backend.setitem(out, _diagonal_places(xp, (n, n), offset), x)
        return backend.getitem(x, _diagonal_places(xp, x.shape, offset))

    @staticmethod
    def backward(ctx, grad):
        xp = ctx.xp
        if len(ctx.in_shape) == 1:
            return backend.getitem(grad, _diagonal_places(xp, grad.shape, ctx.offset)), None
        full = xp.zeros(ctx.in_shape, dtype=grad.dtype, **backend.creation_kwargs(xp))
        return backend.setitem(full, _diagonal_places(xp, ctx.in_shape, ctx.offset), grad), None


# ---------------------------------------------------------------------------------------------
# index_add


class IndexAdd(Op):
    """A copy of x with alpha * source added along `axis` at the positions `index` (1-D, repeats
    adding up): out[:, index[j]] += alpha * source[:, j] for axis 1. The gradient goes to x unchanged
    and to source as alpha times the gradient at the places it was added to."""

    @staticmethod
    def forward(ctx, x, axis, index, source, alpha, index_given=None):
        xp = ctx.xp
        # as PyTorch's: the index tensor given (of which `index` is a flattened copy) and the source
        ctx.save_for_backward(index, computed_from=(index_given, source))
        ctx.axis, ctx.alpha = axis, alpha
        key = (slice(None),) * axis + (index,)
        added = source if alpha == 1 else source * alpha  # (the caller checked source's dtype is x's)
        return backend.scatter_add(xp.asarray(x, copy=True), key, added)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gsource = None
        if ctx.needs_input_grad[3]:
            gsource = ctx.xp.take(grad, index, axis=ctx.axis)
            if ctx.alpha != 1:
                gsource = gsource * ctx.alpha
        return grad, None, None, gsource, None, None


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
