"""More of the `torch.*` functions and `Tensor` methods that introductory PyTorch code reaches for.

Grouped by kind: elementwise math, reductions, shapes, diagonals and linear algebra, indexing,
logic, random numbers, and the library-wide defaults. Each function takes PyTorch's argument names;
where PyTorch also has it as a tensor method (`torch.median(x)` and `x.median()`), the same function
is installed on `Tensor` at the end of this file (`TENSOR_METHODS`), so the two forms cannot differ.
The differentiable primitives they use are in the ops package (forward and backward side by side); the
rest are built from existing differentiable ops, so their gradients come from those.
"""

import builtins
import math
import numbers
import warnings

import numpy as np

from . import backend, dtypes, numpy_names, ops, random, return_types, storage
from . import functions as _functions
from .autograd import grad_mode, no_grad
from .errors import ShapeError
from .functions import _from_host, _float_dtype, generator_or_default, linspace, tensor
from .tensor import Size, Tensor, _check_not_bool, _dim, _floating, _shape_arg
from .tensor import matmul as _matmul, result_dtype as _result_dtype



def _return_type(name, fields):
    """A named tuple that prints as PyTorch prints its return types: one field a line."""
    return return_types.named_result(name, fields)


MedianResult = _return_type("median", ["values", "indices"])
SvdResult = _return_type("svd", ["U", "S", "V"])


# ---------------------------------------------------------------------------------------------
# elementwise math (integers become float32 first, as in PyTorch)


def asin(input):
    """arcsin, elementwise (NaN outside [-1, 1])."""
    return ops.Asin.apply(_floating(input))


def acos(input):
    """arccos, elementwise (NaN outside [-1, 1])."""
    return ops.Acos.apply(_floating(input))


def atan(input):
    """arctan, elementwise."""
    return ops.Atan.apply(_floating(input))


def atan2(input, other):
    """The angle of the point (other, input), elementwise: atan2(y, x) in (-pi, pi]; broadcasts."""
    y, x = _same_float_operands(input, other, "atan2")
    try:
        np.broadcast_shapes(tuple(y.shape), tuple(x.shape))
    except ValueError:
        raise ShapeError(f"atan2: shapes {list(y.shape)} and {list(x.shape)} cannot be broadcast together (each "
                         "dim, aligned from the right, must be equal or 1)") from None
    return ops.Atan2.apply(y, x)


def sinh(input):
    """The hyperbolic sine, elementwise."""
    return ops.Sinh.apply(_floating(input))


def cosh(input):
    """The hyperbolic cosine, elementwise."""
    return ops.Cosh.apply(_floating(input))


arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2  # NumPy's names, which PyTorch has too


def sin_(input):
    """sin in place."""
    return input._inplace_floating(ops.Sin, "sin_")


def lerp(input, end, weight):
    """The linear interpolation from input to end by weight (a number or a tensor), computed as
    PyTorch does: input + weight * (end - input) where |weight| < 0.5, else end - (end - input) *
    (1 - weight), which lands exactly on end at weight 1."""
    if not isinstance(end, Tensor) or end.dtype is not input.dtype:
        raise TypeError(f"lerp: expected end of input's dtype {input.dtype}, got "
                        f"{end.dtype if isinstance(end, Tensor) else type(end).__name__}: convert it with .to()")
    if not input.dtype.is_floating_point:
        raise TypeError(f"lerp needs floating point tensors, got {input.dtype}")
    if isinstance(weight, Tensor):
        near_start = weight.abs() < 0.5
        return _functions.where(near_start, input + weight * (end - input), end - (end - input) * (1 - weight))
    if abs(weight) < 0.5:
        return input + weight * (end - input)
    return end - (end - input) * (1 - weight)


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2."""
    return input + value * tensor1 * tensor2


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (for floating point tensors; PyTorch refuses integer division here)."""
    if not (tensor1.dtype.is_floating_point or tensor2.dtype.is_floating_point):
        raise TypeError("addcdiv of two integer tensors: PyTorch refuses it too; convert them with .float(), "
                        "or use (tensor1 // tensor2) for integer division")
    return input + value * tensor1 / tensor2


def addcmul_(input, tensor1, tensor2, *, value=1):
    """addcmul in place (optimizers' `exp_avg_sq.addcmul_(grad, grad, value=1 - beta2)`)."""
    return input.add_(value * tensor1 * tensor2)


def addcdiv_(input, tensor1, tensor2, *, value=1):
    """addcdiv in place (optimizers' `param.addcdiv_(exp_avg, denom, value=-lr)`)."""
    return input.add_(addcdiv(input.new_zeros(()), tensor1, tensor2, value=value))


def _same_float_operands(a, b, name):
    """Two operands as tensors of one floating dtype (PyTorch's promotion; integers become float32)."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{name} needs at least one tensor, got {type(a).__name__} and {type(b).__name__}")
    like = a if isinstance(a, Tensor) else b
    dtype = _result_dtype(a, b)  # PyTorch's promotion (a 0-d tensor or a number does not widen a tensor)
    if not dtype.is_floating_point:
        dtype = dtypes.default_float
    a = a if isinstance(a, Tensor) else tensor(a, device=like.device)
    b = b if isinstance(b, Tensor) else tensor(b, device=like.device)
    return a.to(dtype), b.to(dtype)


# ---------------------------------------------------------------------------------------------
# reductions


def median(input, dim=None, keepdim=False, *, axis=None):
    """The lower median: of all elements (a 0-d tensor), or along `dim` (or NumPy's `axis`) as
    (values, indices).

    Of an even count it is the smaller of the two middle values, as in PyTorch (not their mean, as
    in NumPy). A NaN makes the median NaN (its index is the first NaN's). The gradient of the median
    of all elements is shared evenly among the elements equal to it, as PyTorch shares it; along a
    dim it goes to the element at the returned index.
    """
    _check_not_bool(input, "median")
    dim = numpy_names.dim_or_axis("median", dim, axis)
    if dim is None:  # (of no elements: NaN, or the smallest integer, as PyTorch gives)
        return ops.MedianAll.apply(input)
    axis = _dim(dim, builtins.max(input.ndim, 1))
    x = input.reshape(1) if input.ndim == 0 else input
    if x.shape[axis] == 0:
        raise ValueError(f"median(dim={dim}) of a dim of size 0: there is no middle element")
    host = backend.to_host(x.detach().array)
    order = np.argsort(host, axis=axis, kind="stable")  # NaN sorts last
    middle = (host.shape[axis] - 1) // 2
    index = np.take(order, [middle], axis=axis)
    has_nan = np.isnan(host).any(axis=axis, keepdims=True) if host.dtype.kind == "f" else None
    if has_nan is not None and has_nan.any():
        index = np.where(has_nan, np.argmax(np.isnan(host), axis=axis)[..., None].swapaxes(-1, axis), index)
    indices = _from_host(index.astype(np.int64), dtypes.int64, x.device, False)
    values = x.gather(axis, indices)
    if not keepdim:
        values, indices = values.squeeze(axis), indices.squeeze(axis)
    if input.ndim == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return MedianResult(values, indices)


def std_mean(input, dim=None, *, correction=1, keepdim=False):
    """(std, mean) over dim: both in one call, as PyTorch returns them."""
    return (input.std(dim, correction=correction, keepdim=keepdim),
            input.mean() if dim is None else input.mean(dim, keepdim=keepdim))


def var_mean(input, dim=None, *, correction=1, keepdim=False):
    """(var, mean) over dim."""
    return (input.var(dim, correction=correction, keepdim=keepdim),
            input.mean() if dim is None else input.mean(dim, keepdim=keepdim))


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), a 0-d tensor."""
    return (input - other).norm(p)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M): a
    (..., P, R) tensor. Computed from the differences (P x R x M numbers), so the numbers can differ
    from PyTorch's in the last bits where PyTorch takes its matrix-product route (P or R over 25)."""
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"cdist expects (..., P, M) and (..., R, M) tensors with the same M, got shapes "
                         f"{list(x1.shape)} and {list(x2.shape)}")
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"cdist: {compute_mode!r} is not a valid compute_mode")
    return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).norm(p, dim=-1)


# ---------------------------------------------------------------------------------------------
# shapes


def ravel(input):
    """The elements as a 1-D tensor (a view where the layout allows, as reshape(-1))."""
    return input.reshape(-1)


def swapaxes(input, axis0, axis1):
    """NumPy's name for transpose(input, axis0, axis1)."""
    return input.transpose(axis0, axis1)


def swapdims(input, dim0, dim1):
    """Another name of transpose(input, dim0, dim1)."""
    return input.transpose(dim0, dim1)


def movedim(input, source, destination):
    """A view with the dims `source` moved to the places `destination` (Tensor.movedim)."""
    return input.movedim(source, destination)


def moveaxis(input, source, destination):
    """NumPy's name for movedim(input, source, destination)."""
    return input.movedim(source, destination)


def select(input, dim, index):
    """The view input[..., index, ...] with `index` taken along `dim`, which goes away (Tensor.select)."""
    return input.select(dim, index)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors: with indexing="ij" the k-th result varies along dim k;
    with "xy" the first two dims are swapped (NumPy's and MATLAB's convention). Without indexing,
    "ij" with PyTorch's warning that a later release will need it."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
                      "argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in tensors:
        if not isinstance(t, Tensor) or t.ndim > 1:
            raise ShapeError("meshgrid expects 0-d or 1-D tensors, got "
                             + ", ".join(f"{list(t.shape)}" if isinstance(t, Tensor) else type(t).__name__
                                         for t in tensors))
    vectors = [t.reshape(-1) for t in tensors]
    if indexing == "xy" and len(vectors) >= 2:
        vectors[0], vectors[1] = vectors[1], vectors[0]
    shape = [v.shape[0] for v in vectors]
    grids = []
    for k, v in enumerate(vectors):
        view = [1] * len(vectors)
        view[k] = shape[k]
        grids.append(v.reshape(view).expand(*shape))
    if indexing == "xy" and len(grids) >= 2:  # the grids of (y, x, ...) in "ij" order, given back as (x, y, ...)
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _become(tensor, result, name):
    """Make `tensor` hold `result` (same elements, a new shape): squeeze_, unsqueeze_, resize_.
    Recorded like an in-place op; refused on a view while recording, where PyTorch would have to
    rewrite the view's base too."""
    recording = grad_mode.enabled and tensor.requires_grad
    tensor._check_inplace(recording)
    if recording and tensor._base is not None:
        raise RuntimeError(f"{name} of a view of another tensor while gradients are recorded: write "
                           f"x = x.{name[:-1]}(...) instead")
    tensor.array = result.array
    if recording:
        tensor.grad_fn, tensor.output_nr = result.grad_fn, result.output_nr
    tensor._bump_version()
    return tensor


def squeeze_(input, dim=None, *, axis=None):
    """squeeze in place: the tensor itself loses its size-1 dims (all, or `dim`)."""
    return _become(input, input.squeeze(numpy_names.dim_or_axis("squeeze_", dim, axis)), "squeeze_")


def unsqueeze_(input, dim=None, *, axis=None):
    """unsqueeze in place: the tensor itself gains a size-1 dim at `dim`."""
    return _become(input, input.unsqueeze(numpy_names.required_dim("unsqueeze_", dim, axis)), "unsqueeze_")


def resize_(input, *sizes):
    """Give the tensor a new shape in place. With as many elements as before this is reshape; with
    fewer, the first ones are kept; with more, the new ones are 0 (PyTorch leaves them uninitialised:
    do not count on their values). A tensor that requires grad cannot be resized, as in PyTorch."""
    shape = _shape_arg(sizes)
    if input.requires_grad:
        raise RuntimeError("cannot resize variables that require grad: resize x.detach(), or use reshape")
    n = math.prod(shape)
    if n == input.numel():
        return _become(input, input.reshape(shape), "resize_")
    xp = backend.namespace(input.array)
    flat = xp.reshape(input.array, (-1,))
    if n < flat.shape[0]:
        array = xp.reshape(flat[:n], shape)
    else:
        array = xp.concat([flat, xp.zeros(n - flat.shape[0], dtype=flat.dtype, **backend.creation_kwargs(xp))])
        array = xp.reshape(array, shape)
    return _become(input, Tensor._wrap(array), "resize_")


def resize(input, *sizes):
    """The deprecated out-of-place resize: a reshape to as many elements, with PyTorch's warning."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    shape = _shape_arg(sizes)
    if math.prod(shape) != input.numel():
        raise RuntimeError(f"resize of a tensor of {input.numel()} elements to {list(shape)}: the out-of-place "
                           "resize keeps the number of elements; use resize_ on a tensor that needs no grad")
    return input.reshape(shape)


def new(input, *args, dtype=None, device=None):
    """The legacy `weight.new(2, 3)` (uninitialised numbers of input's dtype and device: zeros here,
    do not count on them), `weight.new([1, 2])` (those values) or `weight.new()` (empty)."""
    dtype, device = dtype or input.dtype, device or input.device
    if len(args) == 1 and not isinstance(args[0], (numbers.Integral, Size)):
        return tensor(args[0], dtype=dtype, device=device)
    return input.new_zeros(_shape_arg(args) if args else (0,), dtype=dtype, device=device)


# ---------------------------------------------------------------------------------------------
# diagonals and linear algebra


def diag(input, diagonal=0):
    """A vector: the square matrix with it on diagonal `diagonal` (0 the main one, > 0 above it, < 0
    below). A matrix: that diagonal of it, as a vector."""
    if input.ndim not in (1, 2):
        raise ShapeError(f"diag expects a vector or a matrix, got shape {list(input.shape)}: for batches of "
                         "matrices use torch.diagonal(x, dim1=-2, dim2=-1)")
    return ops.Diag.apply(input, int(diagonal))


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal `offset` of the matrices in dims dim1 and dim2, as the last dim of the result: a
    view, as in PyTorch (x.diagonal().zero_() clears x's diagonal)."""
    a, b = _dim(dim1, input.ndim), _dim(dim2, input.ndim)
    if a == b:
        raise ValueError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return storage.Diagonal.apply(input, int(offset), a, b)


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


# ---------------------------------------------------------------------------------------------
# indexing


def _index_add_arguments(input, dim, index, source):
    """The axis and the index array (negative indices wrapped) of index_add, checked."""
    axis = _dim(dim, builtins.max(input.ndim, 1))
    if not isinstance(index, Tensor) or index.dtype not in (dtypes.int64, dtypes.int32) or index.ndim > 1:
        raise TypeError(f"index_add: index must be a 1-D int64 tensor, got {index!r}")
    if not isinstance(source, Tensor) or source.dtype is not input.dtype:
        raise TypeError(f"index_add: source must be a tensor of input's dtype {input.dtype}, got {source!r}: "
                        "convert it with .to(input.dtype)")
    expected = tuple(input.shape[:axis]) + (index.numel(),) + tuple(input.shape[axis + 1:])
    if tuple(source.shape) != expected and not (input.ndim == 0 and source.numel() == index.numel()):
        raise ShapeError(f"index_add: source of shape {list(source.shape)} does not fit: with dim={dim} and "
                         f"{index.numel()} indices it must be {list(expected)}")
    size = input.shape[axis] if input.ndim else 1
    if index.numel() and bool(((index < -size) | (index >= size)).any()):
        raise IndexError(f"index_add: an index is out of range for dim {dim} of size {size}")
    xp = backend.namespace(index.array)
    return axis, xp.reshape(index.array, (-1,)) % size


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of input with alpha * source added at the positions `index` along `dim` (repeats add up)."""
    axis, index_array = _index_add_arguments(input, dim, index, source)
    return ops.IndexAdd.apply(input, axis, index_array, source, alpha, index)  # (index: for its version)


def index_add_(input, dim, index, source, *, alpha=1):
    """index_add in place: input[:, index[j]] += alpha * source[:, j] for dim 1."""
    axis, index_array = _index_add_arguments(input, dim, index, source)
    return input._inplace(ops.IndexAdd, axis, index_array, source, alpha)


# ---------------------------------------------------------------------------------------------
# logic


def logical_and(input, other):
    """True where both are nonzero."""
    return (input != 0) & (other != 0)


def logical_or(input, other):
    """True where either is nonzero."""
    return (input != 0) | (other != 0)


def logical_xor(input, other):
    """True where exactly one is nonzero."""
    return (input != 0) ^ (other != 0)


def bitwise_xor(input, other):
    """Bitwise exclusive or of integer or bool tensors (input ^ other)."""
    return input ^ other


def multiply(input, other):
    """PyTorch's alias of mul."""
    return input * other


# ---------------------------------------------------------------------------------------------
# random numbers (PyTorch's CPU streams: see docs/explanations/random-numbers.md)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Normal draws: normal(mean, std, size) with numbers, or with tensors of means and/or standard
    deviations (broadcast: one draw per element). The numbers are PyTorch's for the same seed: it
    draws standard normals for the output's shape and scales them (x * std + mean). No gradient flows
    to tensor means and stds (PyTorch's gradient there is zero)."""
    gen = generator_or_default(generator)
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    if not tensors:
        if size is None:
            raise TypeError("normal(mean, std) with two numbers needs a size: normal(0.0, 1.0, size=(3,))")
        dt = _float_dtype(dtype)
        values = gen.normal(_shape_arg(size), np.dtype(dt.name), float(mean), float(std))
        return _from_host(values, dt, device, requires_grad)
    if size is not None:
        raise TypeError("normal: give size only with a number mean and std; with tensors the shape is theirs")
    with no_grad():
        like = tensors[0]
        dt = dtype or like.dtype
        if not dt.is_floating_point:
            raise TypeError(f"normal: mean and std must be floating point tensors, got {dt}")
        if isinstance(std, Tensor) and bool((std < 0).any()):
            raise ValueError("normal expects all elements of std >= 0.0")
        shape = np.broadcast_shapes(*(tuple(t.shape) for t in tensors))
        if isinstance(mean, Tensor) and not isinstance(std, Tensor):  # normal(mean_tensor, 2.0): drawn with std
            draws = gen.normal(shape, np.dtype(dt.name), 0.0, float(std))
            out = _from_host(draws, dt, like.device, False) + mean.to(dt)
        else:  # standard normals, times std, plus mean
            draws = gen.normal(shape, np.dtype(dt.name))
            out = _from_host(draws, dt, like.device, False) * (std.to(dt) if isinstance(std, Tensor) else std)
            out = out + (mean.to(dt) if isinstance(mean, Tensor) else mean)
    return out.requires_grad_() if requires_grad else out


def bernoulli(input, p=None, *, generator=None):
    """0 or 1 for each element of input: 1 with probability input's element (or with probability p
    for every element, when p is given). Drawn from PyTorch's CPU stream: one float32 uniform per
    element, in the probabilities' dtype (1 where it is below the probability); float64 uniforms
    for a number p (as Tensor.bernoulli_)."""
    gen = generator_or_default(generator)
    if p is not None:
        return input.new_empty(input.shape).bernoulli_(p, generator=generator)
    if not input.dtype.is_floating_point:
        raise TypeError(f"bernoulli expects a floating point tensor of probabilities, got {input.dtype}")
    probs = backend.to_host(input.detach().array)
    if probs.size and not ((probs >= 0) & (probs <= 1)).all():
        raise ValueError("bernoulli expects 0 <= p <= 1 for every element of input")
    # float32 uniforms for float32 probabilities, float64 for float64, in index order whatever input's
    # layout (PyTorch draws into a contiguous tensor, whose memory order leads the fill)
    uniforms = gen.uniform(probs.shape, probs.dtype)
    return _from_host((uniforms < probs).astype(probs.dtype), input.dtype, input.device, False)


def random_(input, from_=0, to=None, *, generator=None):
    """Fill with random integers (as numbers of the tensor's dtype): random_(to) in [0, to),
    random_(from_, to) in [from_, to) (PyTorch's randint stream), random_() in [0, 2**mantissa] for
    floats and [0, 2**63) for int64. Written `from` in PyTorch; tinyattn takes it positionally."""
    gen = generator_or_default(generator)
    strides = _functions._fill_strides(input)  # (PyTorch fills in memory order)
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        if input.dtype is dtypes.float32:
            values = gen._draw32(input.numel()) % np.uint64((1 << 24) + 1)
        elif input.dtype is dtypes.float64:
            values = gen._draw64(input.numel()) % np.uint64((1 << 53) + 1)
        elif input.dtype is dtypes.int64:
            values = gen.randint(0, 1 << 63, (input.numel(),))
        else:
            raise TypeError(f"random_() without bounds is not available for {input.dtype} here: give random_(to)")
    else:
        _functions._check_random_bounds(int(from_), int(to), input.dtype)
        values = gen.randint(int(from_), int(to), (input.numel(),))
    values = random.in_fill_order(values, tuple(input.shape), strides)
    return input._overwrite(values.astype(input.dtype.name), "Random")


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """`steps` numbers from base**start to base**end, their exponents evenly spaced."""
    dt = dtype or dtypes.default_float
    exponents = linspace(start, end, steps, dtype=dtypes.float64)
    values = np.power(float(base), backend.to_host(exponents.array))
    return _from_host(values, dt, device, requires_grad)


# ---------------------------------------------------------------------------------------------
# library-wide defaults


def set_default_dtype(d):
    """The dtype of new float tensors (tensor([1.5]), zeros(3), layers' weights): float32 (the
    default) or float64. Python floats mixed with tensors follow it too, as in PyTorch."""
    if d not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"set_default_dtype takes tinyattn.float32 or tinyattn.float64, got {d!r} (tinyattn "
                        "computes in float32 and float64 only)")
    dtypes.default_float = d


_TENSOR_TYPES = {"torch.FloatTensor": dtypes.float32, "torch.DoubleTensor": dtypes.float64}


def set_default_tensor_type(t):
    """The old way to set the default dtype: torch.FloatTensor or torch.DoubleTensor (or their names),
    with PyTorch's deprecation warning. CUDA tensor types are refused: pass device= instead."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    name = t if isinstance(t, str) else getattr(t, "_torch_name", None) or f"torch.{getattr(t, '__name__', t)}"
    if name not in _TENSOR_TYPES:
        raise TypeError(f"set_default_tensor_type: tinyattn takes torch.FloatTensor or torch.DoubleTensor, got "
                        f"{t!r}; for a GPU, create tensors with device='cuda'")
    set_default_dtype(_TENSOR_TYPES[name])


def set_default_device(device):
    """The device of new tensors made without device=. tinyattn makes them on the CPU, so "cpu" (and
    None, which resets) is accepted; a GPU is refused with what to write instead, since tinyattn's
    factories do not read a default device."""
    if device is not None and backend.device(device).type != "cpu":
        raise RuntimeError(f"set_default_device({device!r}): tinyattn makes new tensors on the CPU unless told "
                           "otherwise; give the device to each factory (torch.zeros(3, device='cuda')) or move "
                           "tensors and models with .to('cuda')")


def get_default_device():
    """The device of new tensors made without device=: the CPU."""
    return backend.device("cpu")


_deterministic = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Ask for ops that give the same bits on every run. On the CPU (NumPy) every tinyattn op already
    does, so this only records the setting (are_deterministic_algorithms_enabled reads it back); on
    a GPU, CuPy's atomic scatter-adds (index backward) may add in a different order from run to run."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, got {type(mode).__name__}")
    _deterministic.update(mode=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled():
    """True after use_deterministic_algorithms(True)."""
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    """True after use_deterministic_algorithms(True, warn_only=True)."""
    return _deterministic["mode"] and _deterministic["warn_only"]


# ---------------------------------------------------------------------------------------------
# out=: the result written into a given tensor (`torch.add(a, b, out=c)`, `torch.rand(2, 2, out=c)`).
# These are `tinyattn.add`, `tinyattn.rand`, ...: without out= each returns a new tensor.

_DTYPE_WORDS = {dtypes.float32: "Float", dtypes.float64: "Double", dtypes.int64: "Long", dtypes.int32: "Int",
                dtypes.int16: "Short", dtypes.int8: "Char", dtypes.uint8: "Byte", dtypes.bool_: "Bool"}


def _into(out, result, name):
    """Write result into out as PyTorch does: no gradients, no narrowing of the kind of number, and
    an `out` of another shape resized (with PyTorch's warning unless it was empty). Returns out."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if grad_mode.enabled and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    narrowing = (result.dtype.is_floating_point and not out.dtype.is_floating_point
                 or out.dtype is dtypes.bool_ and result.dtype is not dtypes.bool_)
    if narrowing:
        raise RuntimeError(f"result type {_DTYPE_WORDS.get(result.dtype, result.dtype)} can't be cast to the desired "
                           f"output type {_DTYPE_WORDS.get(out.dtype, out.dtype)}")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel():
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, stacklevel=3)
        resize_(out, *result.shape)
    return out.copy_(result)


def _tensor_operand(input, other):
    """The first operand of a binary function form as a tensor: torch.add(2, x) takes 2 as a 0-d tensor."""
    if isinstance(input, Tensor):
        return input
    like = other if isinstance(other, Tensor) else None
    return tensor(input, device=None if like is None else like.device)


def add(input, other, *, alpha=1, out=None):
    """input + alpha * other."""
    result = _tensor_operand(input, other).add(other, alpha=alpha)
    return result if out is None else _into(out, result, "add")


def sub(input, other, *, alpha=1, out=None):
    """input - alpha * other."""
    result = _tensor_operand(input, other).sub(other, alpha=alpha)
    return result if out is None else _into(out, result, "sub")


def mul(input, other, *, out=None):
    """input * other."""
    result = _tensor_operand(input, other).mul(other)
    return result if out is None else _into(out, result, "mul")


def div(input, other, *, rounding_mode=None, out=None):
    """input / other (rounding_mode "trunc" or "floor" for integer-like division)."""
    result = _tensor_operand(input, other).div(other, rounding_mode=rounding_mode)
    return result if out is None else _into(out, result, "div")


def as_strided(input, size, stride, storage_offset=None):
    """A view of input's storage with these sizes, strides and offset, in elements (Tensor.as_strided)."""
    return input.as_strided(size, stride, storage_offset)


def true_divide(dividend, divisor, *, out=None):
    """dividend / divisor, always a true division (an integer tensor gives floats): div without rounding_mode."""
    return div(dividend, divisor, out=out)


def true_divide_(input, other):
    """In place: input /= other (input must be of a floating dtype to hold the quotient)."""
    return input.div_(other)


def matmul(input, other, *, out=None):
    """The matrix product, with broadcasting batches (as the @ operator)."""
    result = _matmul(input, other)
    return result if out is None else _into(out, result, "matmul")


def mm(input, mat2, *, out=None):
    """The product of two matrices."""
    result = input.mm(mat2)
    return result if out is None else _into(out, result, "mm")


def bmm(input, mat2, *, out=None):
    """The products of two batches of matrices."""
    result = input.bmm(mat2)
    return result if out is None else _into(out, result, "bmm")


def max(input, dim=None, keepdim=False, *, other=None, axis=None, keepdims=None):
    """The largest element; along dim, (values, indices); max(input, other): the elementwise maximum."""
    if other is not None:
        return _functions.maximum(input, other)
    return input.max(dim, keepdim, axis=axis, keepdims=keepdims)


def min(input, dim=None, keepdim=False, *, other=None, axis=None, keepdims=None):
    """The smallest element; along dim, (values, indices); min(input, other): the elementwise minimum."""
    if other is not None:
        return _functions.minimum(input, other)
    return input.min(dim, keepdim, axis=axis, keepdims=keepdims)


def rand(*size, generator=None, out=None, dtype=None, device=None, requires_grad=False):
    """Uniform numbers in [0, 1) (into out: of out's dtype unless dtype is given)."""
    if out is not None and _fills_out(out, size, dtype):  # out.uniform_(), in out's memory order
        return _fill_out(out, lambda: out.uniform_(generator=generator), "rand", requires_grad)
    if out is not None:
        dtype, device = dtype or out.dtype, device or out.device
    dt = _float_dtype(dtype)
    values = generator_or_default(generator).uniform(_shape_arg(size), _functions._NUMPY_DTYPES[dt.name])
    result = _from_host(values, dt, device, requires_grad)
    return result if out is None else _into(out, result, "rand")


def randn(*size, generator=None, out=None, dtype=None, device=None, requires_grad=False):
    """Standard normal numbers (into out: of out's dtype unless dtype is given)."""
    if out is not None and _fills_out(out, size, dtype):  # out.normal_(), in out's memory order
        return _fill_out(out, lambda: out.normal_(generator=generator), "randn", requires_grad)
    if out is not None:
        dtype, device = dtype or out.dtype, device or out.device
    dt = _float_dtype(dtype)
    values = generator_or_default(generator).normal(_shape_arg(size), _functions._NUMPY_DTYPES[dt.name])
    result = _from_host(values, dt, device, requires_grad)
    return result if out is None else _into(out, result, "randn")


def _fills_out(out, size, dtype):
    """Whether rand/randn(size, out=out) fill `out` where it is, as PyTorch does when out already has
    the size: its numbers then go in out's memory order (a transposed out gets them transposed).
    Otherwise out is resized and filled from a new tensor (_into)."""
    if isinstance(out, Tensor) and dtype is not None and dtype is not out.dtype:
        raise RuntimeError(f"dtype {_DTYPE_WORDS.get(dtype, dtype)} does not match dtype of out parameter "
                           f"({_DTYPE_WORDS.get(out.dtype, out.dtype)}): leave dtype out, or give an out of that dtype")
    return isinstance(out, Tensor) and tuple(out.shape) == tuple(_shape_arg(size)) and out.dtype.is_floating_point


def _fill_out(out, fill, name, requires_grad):
    if grad_mode.enabled and (requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    with no_grad():
        fill()
    return out


# ---------------------------------------------------------------------------------------------
# the tensor methods: the same functions, with the tensor as `input`

TENSOR_METHODS = [
    "asin", "acos", "atan", "atan2", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "sin_", "lerp",
    "addcmul", "addcdiv", "addcmul_", "addcdiv_", "median", "dist", "ravel", "swapaxes", "swapdims",
    "squeeze_", "unsqueeze_", "resize_", "resize", "new", "diag", "diagonal", "inverse", "det", "svd", "cross",
    "index_add", "index_add_", "logical_and", "logical_or", "logical_xor", "bitwise_xor", "multiply",
    "bernoulli", "random_", "true_divide", "true_divide_",
]
for _name in TENSOR_METHODS:
    setattr(Tensor, _name, globals()[_name])

# the torch.* functions (Tensor-only methods and helpers stay out of `tinyattn`'s namespace)
__all__ = [
    "asin", "acos", "atan", "atan2", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "sin_", "lerp",
    "addcmul", "addcdiv", "median", "std_mean", "var_mean", "dist", "cdist", "ravel", "swapaxes", "swapdims",
    "meshgrid", "movedim", "moveaxis", "select", "diag", "diagonal", "inverse", "det", "svd", "cross", "index_add", "logical_and", "logical_or",
    "logical_xor", "bitwise_xor", "multiply", "normal", "bernoulli", "logspace", "set_default_dtype",
    "set_default_tensor_type", "set_default_device", "get_default_device", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
    "add", "sub", "mul", "div", "true_divide", "as_strided", "matmul", "mm", "bmm", "rand", "randn", "max", "min",
]
