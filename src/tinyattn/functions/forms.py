"""The torch.* forms of Tensor methods: `tinyattn.exp(x)` is `x.exp()`, `tinyattn.cat(xs)`, `tinyattn.where(c, a, b)`,
and the functions PyTorch has beside them (std_mean, cdist, meshgrid, normal, logspace). Each form calls the
method or the op it names: the meaning lives in one place, in tinyattn/tensor/ and tinyattn/ops/.
"""

import builtins
import numbers
import warnings

import numpy as np

from .. import backend, dtypes, numpy_names, ops
from ..autograd import no_grad
from ..errors import ShapeError
from ..ops import Cat, Stack, normalize_dim
from ..tensor import Tensor
from ..tensor.arguments import _shape_arg
from ..tensor.creation import _float_dtype, _from_host, arange, generator_or_default, linspace
from ..tensor.indexing import _where
from ..tensor.promotion import result_dtype


# ---------------------------------------------------------------------------------------------
# function forms of tensor methods


def cat(tensors, dim=0, *, axis=None):
    """The tensors joined along an existing dim `dim` (their other sizes must match)."""
    if axis is not None:
        dim = numpy_names.dim_or_axis("cat", dim, axis, 0)
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat expects a non-empty list of tensors")
    target = tensors[0].dtype
    for position, t in enumerate(tensors):
        target = dtypes.promote(target, t.dtype)
        if t.ndim == 0:
            raise ShapeError(f"cat: the tensor at position {position} is 0-d (a single number) and cannot be "
                             "concatenated: use stack(), or make it 1-d first (t.reshape(1))")
    # as in PyTorch, 1-d empty tensors (shape [0]) join anything: they join as nothing of the others' shape
    shaped = next((t for t in tensors if t.shape != (0,)), None)
    if shaped is None:
        return Cat.apply(0, *(t.to(target) for t in tensors))
    nothing = list(shaped.shape)
    nothing[normalize_dim(dim, shaped.ndim)] = 0
    return Cat.apply(dim, *(t.to(target) if t.shape != (0,) else t.to(target).reshape(nothing) for t in tensors))


concat = cat


def stack(tensors, dim=0, *, axis=None):
    """The tensors (all of one shape) stacked along a new dim `dim`."""
    if axis is not None:
        dim = numpy_names.dim_or_axis("stack", dim, axis, 0)
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack expects a non-empty list of tensors")
    first = tensors[0].array.dtype
    for t in tensors:
        if t.array.dtype is not first:
            break
    else:  # one dtype (a DataLoader's rows): nothing to convert
        return Stack.apply(dim, *tensors)
    kinds = [t.dtype for t in tensors]
    target = kinds[0]
    for kind in kinds[1:]:
        if kind is not target:  # (a dtype promotes with itself to itself)
            target = dtypes.promote(target, kind)
    return Stack.apply(dim, *(t if kind is target else t.to(target) for t, kind in zip(tensors, kinds)))


def tril(input, diagonal=0):
    return input.tril(diagonal)


def triu(input, diagonal=0):
    return input.triu(diagonal)


def softmax(input, dim=None, dtype=None, *, axis=None):
    return (input if dtype is None else input.to(dtype)).softmax(dim, axis=axis)


def log_softmax(input, dim=None, dtype=None, *, axis=None):
    return (input if dtype is None else input.to(dtype)).log_softmax(dim, axis=axis)


def exp(input):
    return input.exp()


def log(input):
    return input.log()


def sqrt(input):
    return input.sqrt()


def rsqrt(input):
    return input.rsqrt()


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def relu(input):
    return input.relu()


def abs(input):
    return input.abs()


def clamp(input, min=None, max=None):
    return input.clamp(min, max)


clip = clamp


def fmod(input, other):
    return input.fmod(other)


def maximum(input, other):
    return input.maximum(other)


def minimum(input, other):
    return input.minimum(other)


def sum(input, dim=None, keepdim=False, dtype=None, *, axis=None, keepdims=None):
    return input.sum(dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)


def mean(input, dim=None, keepdim=False, dtype=None, *, axis=None, keepdims=None):
    return input.mean(dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    return input.var(dim, unbiased, keepdim, correction=correction, axis=axis, keepdims=keepdims)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    return input.std(dim, unbiased, keepdim, correction=correction, axis=axis, keepdims=keepdims)


def argmax(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    return input.argmax(dim, keepdim, axis=axis, keepdims=keepdims)


def argmin(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    return input.argmin(dim, keepdim, axis=axis, keepdims=keepdims)


def topk(input, k, dim=-1, largest=True, sorted=True, *, axis=None):
    return input.topk(k, dim, largest, sorted, axis=axis)


def gather(input, dim, index):
    return input.gather(dim, index)


def dot(input, tensor):  # PyTorch's name for the second vector
    return input.dot(tensor)


def reshape(input, shape):
    return input.reshape(shape)


def transpose(input, dim0, dim1):
    return input.transpose(dim0, dim1)


def cumsum(input, dim=None, dtype=None, *, axis=None):
    return input.cumsum(dim, dtype=dtype, axis=axis)


def logsumexp(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    return input.logsumexp(dim, keepdim, axis=axis, keepdims=keepdims)


def t(input):
    return input.t()


def permute(input, dims):
    return input.permute(dims)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def unsqueeze(input, dim=None, *, axis=None):
    return input.unsqueeze(dim, axis=axis)


def squeeze(input, dim=None, *, axis=None):
    return input.squeeze(dim, axis=axis)


def split(tensor, split_size_or_sections, dim=0):
    return tensor.split(split_size_or_sections, dim)


def chunk(input, chunks, dim=0, *, axis=None):
    return input.chunk(chunks, dim, axis=axis)


def narrow(input, dim, start, length):
    return input.narrow(dim, start, length)


def unbind(input, dim=0, *, axis=None):
    return input.unbind(dim, axis=axis)


def masked_fill(input, mask, value):
    return input.masked_fill(mask, value)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return input.allclose(other, rtol, atol, equal_nan)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return input.isclose(other, rtol, atol, equal_nan)


def equal(input, other):
    return input.equal(other)


def isnan(input):
    return input.isnan()


def isinf(input):
    return input.isinf()


def isfinite(input):
    return input.isfinite()


def numel(input):
    return input.numel()


def pow(input, exponent):
    """input ** exponent; input may be a number (torch.pow(2, x)), which keeps x's dtype."""
    if isinstance(input, Tensor):
        return input.pow(exponent)
    return exponent.__rpow__(input)


def eq(input, other):
    return input.eq(other)


def ne(input, other):
    return input.ne(other)


def lt(input, other):
    return input.lt(other)


def le(input, other):
    return input.le(other)


def gt(input, other):
    return input.gt(other)


def ge(input, other):
    return input.ge(other)


def logical_not(input):
    return input.logical_not()


def all(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    return input.all(dim, keepdim, axis=axis, keepdims=keepdims)


def any(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    return input.any(dim, keepdim, axis=axis, keepdims=keepdims)


def clone(input):
    return input.clone()


def detach(input):
    return input.detach()


def detach_(input):
    return input.detach_()


def is_floating_point(input):
    return input.is_floating_point()


# in-place function forms, as PyTorch has them (torch.relu_(x) is x.relu_())

def abs_(input):
    return input.abs_()


def clamp_(input, min=None, max=None):
    return input.clamp_(min, max)


clip_ = clamp_


def exp_(input):
    return input.exp_()


def log_(input):
    return input.log_()


def sqrt_(input):
    return input.sqrt_()


def tanh_(input):
    return input.tanh_()


def sigmoid_(input):
    return input.sigmoid_()


def relu_(input):
    return input.relu_()


def neg_(input):
    return input.neg_()


def fill_(input, value):
    return input.fill_(value)


def zero_(input):
    return input.zero_()


# more elementwise math

def sin(input):
    return input.sin()


def cos(input):
    return input.cos()


def log1p(input):
    return input.log1p()


def expm1(input):
    return input.expm1()


def log2(input):
    return input.log2()


def log10(input):
    return input.log10()


def exp2(input):
    return input.exp2()


def reciprocal(input):
    return input.reciprocal()


def erf(input):
    return input.erf()


def neg(input):
    return input.neg()


negative = neg


def square(input):
    return input.square()


def sign(input):
    return input.sign()


def sgn(input):
    return input.sgn()


def floor(input):
    return input.floor()


def ceil(input):
    return input.ceil()


def trunc(input):
    return input.trunc()


fix = trunc


def round(input, *, decimals=0):
    return input.round(decimals=decimals)


def clamp_min(input, min):
    return input.clamp_min(min)


def clamp_max(input, max):
    return input.clamp_max(max)


# more reductions

def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    return input.prod(dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)


def cumprod(input, dim=None, *, dtype=None, axis=None):
    return input.cumprod(dim, dtype=dtype, axis=axis)


def amax(input, dim=(), keepdim=False, *, axis=None, keepdims=None):
    return input.amax(dim, keepdim, axis=axis, keepdims=keepdims)


def amin(input, dim=(), keepdim=False, *, axis=None, keepdims=None):
    return input.amin(dim, keepdim, axis=axis, keepdims=keepdims)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    if out is not None:
        raise TypeError("norm: out= is not supported: use the returned tensor")
    return input.norm(p, dim, keepdim, dtype=dtype)


# more matrix products

def outer(input, vec2):
    return input.outer(vec2)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    return input.addmm(mat1, mat2, beta=beta, alpha=alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return input.baddbmm(batch1, batch2, beta=beta, alpha=alpha)


def einsum(equation, *operands):
    """Sums of products over the dims named by `equation` ("bhqd,bhkd->bhqk"), as torch.einsum:
    letters name dims, a letter repeated in an operand takes its diagonal, "..." stands for the
    remaining (broadcast) dims, and without "->" the output is the letters used once, sorted.
    Also einsum(equation, [a, b]) and PyTorch's sublist form einsum(a, [0, 1], b, [1, 2], [0, 2])."""
    if isinstance(equation, Tensor):
        equation, operands = _sublist_equation((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for k, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum: operand {k} is a {type(x).__name__}, not a tensor")
    if operands:
        backend.same_device([x.array for x in operands])
        dt = operands[0].dtype
        if builtins.any(x.dtype is not dt for x in operands):
            raise TypeError(f"einsum expects operands of one dtype, got {[str(x.dtype) for x in operands]}: "
                            "convert them (e.g. x.to(y.dtype))")
        if dt is dtypes.bool_:
            raise TypeError("einsum is not defined for bool tensors: convert them with .float() or .long()")
    plan = ops.parse_einsum(equation, [tuple(x.shape) for x in operands])
    return ops.Einsum.apply(plan, *operands)


def _sublist_equation(args):
    """PyTorch's sublist form: operands each followed by a list of dim numbers (0-51, or ... as
    Ellipsis), then optionally the output's list. Returns (equation, operands)."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # in the order of the numbers

    def term(sublist):
        parts = []
        for d in sublist:
            if d is Ellipsis:
                parts.append("...")
            elif isinstance(d, (int, np.integer)) and 0 <= d < len(letters):
                parts.append(letters[d])
            else:
                raise ValueError(f"einsum: a sublist subscript must be an int in [0, 52) or ..., got {d!r}")
        return "".join(parts)

    operands, terms = args[0::2], [term(s) for s in args[1::2]]
    if len(args) % 2:  # an output sublist at the end
        operands, output = operands[:-1], "->" + term(args[-1])
    else:
        output = ""
    return ",".join(terms) + output, tuple(operands)


# sorting, selecting, scattering

def result_type(tensor1, tensor2):
    """The dtype of an arithmetic op between these two (tensors or Python numbers), by PyTorch's promotion."""
    for operand in (tensor1, tensor2):
        if not isinstance(operand, (Tensor, numbers.Number)):
            raise TypeError(f"result_type takes tensors and numbers, got {type(operand).__name__}")
    return result_dtype(tensor1, tensor2)


def promote_types(type1, type2):
    """The smallest dtype of the higher kind that holds both dtypes' values (uint8 and int8: int16)."""
    for d in (type1, type2):
        if not isinstance(d, dtypes.dtype):
            raise TypeError(f"promote_types takes two dtypes (tinyattn.float32, ...), got {type(d).__name__}")
    return dtypes.promote(type1, type2)


def index_fill(input, dim, index, value):
    return input.index_fill(dim, index, value)


def sort(input, dim=-1, descending=False, *, stable=False, axis=None):
    return input.sort(dim, descending, stable=stable, axis=axis)


def argsort(input, dim=-1, descending=False, *, stable=False, axis=None):
    return input.argsort(dim, descending, stable=stable, axis=axis)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    return input.unique(sorted, return_inverse, return_counts, dim)


def index_select(input, dim, index):
    return input.index_select(dim, index)


def masked_select(input, mask):
    return input.masked_select(mask)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None, axis=None):
    """input's elements repeated; repeat_interleave(counts) alone gives 0, 1, ... repeated counts times."""
    if repeats is None:  # torch.repeat_interleave(repeats)
        counts = input
        return arange(counts.numel(), device=counts.device).repeat_interleave(counts, output_size=output_size)
    return input.repeat_interleave(repeats, dim, output_size=output_size, axis=axis)


def roll(input, shifts, dims=None):
    return input.roll(shifts, dims)


def flip(input, dims):
    if not isinstance(dims, (tuple, list)):  # (x.flip(0) takes a bare dim, tinyattn.flip(x, 0) does not, as in PyTorch)
        raise TypeError(f"flip: dims must be a tuple or list of dims, got {dims!r}: flip(x, ({dims!r},))")
    return input.flip(dims)


def fliplr(input):
    return input.fliplr()


def flipud(input):
    return input.flipud()


def nonzero(input, *, as_tuple=False):
    return input.nonzero(as_tuple=as_tuple)


def argwhere(input):
    return input.argwhere()


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    return input.scatter(dim, index, src, value, reduce=reduce)


def scatter_add(input, dim, index, src):
    return input.scatter_add(dim, index, src)


def where(condition, input=None, other=None):
    """where(condition, input, other): input where condition is True, other elsewhere (differentiable);
    where(condition): the indices of the True elements, one tensor per dim (nonzero(as_tuple=True))."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    return _where(condition, input, other)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (row, column) indices of the upper triangle of a row x col matrix (from diagonal `offset`
    on), as a (2, n) tensor."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (row, column) indices of the lower triangle of a row x col matrix (up to diagonal `offset`),
    as a (2, n) tensor."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


def _triangle_indices(name, numpy_indices, row, col, offset, dtype, device):
    for what, n in (("row", row), ("col", col)):
        if n < 0:
            raise ValueError(f"{name}: {what} must be 0 or more, got {n}")
    dtype = dtype or dtypes.int64
    if dtype not in (dtypes.int64, dtypes.int32):
        raise TypeError(f"{name} gives int64 or int32 indices, not {dtype}")
    rows, cols = numpy_indices(row, offset, col)
    return _from_host(np.stack([rows, cols]), dtype, device, False)


def _share_docstrings():
    """A function form without a docstring of its own says what its Tensor method says (`abs(x)` is
    `x.abs()`), with `input` for `self`."""
    import re

    for name, function in list(globals().items()):
        method = getattr(Tensor, name, None)
        if (callable(function) and getattr(function, "__module__", None) == __name__ and function.__doc__ is None
                and getattr(method, "__doc__", None)):
            function.__doc__ = re.sub(r"\bself\b", "input", method.__doc__)


_share_docstrings()


# ---------------------------------------------------------------------------------------------
# reductions


def std_mean(input, dim=None, *, correction=1, keepdim=False):
    """(std, mean) over dim: both in one call, as PyTorch returns them."""
    return (input.std(dim, correction=correction, keepdim=keepdim),
            input.mean() if dim is None else input.mean(dim, keepdim=keepdim))


def var_mean(input, dim=None, *, correction=1, keepdim=False):
    """(var, mean) over dim."""
    return (input.var(dim, correction=correction, keepdim=keepdim),
            input.mean() if dim is None else input.mean(dim, keepdim=keepdim))


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


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """`steps` numbers from base**start to base**end, their exponents evenly spaced."""
    dt = dtype or dtypes.default_float
    exponents = linspace(start, end, steps, dtype=dtypes.float64)
    values = np.power(float(base), backend.to_host(exponents.array))
    return _from_host(values, dt, device, requires_grad)
