"""The `torch.*` functions: creating tensors, random tensors, and function forms of tensor methods.

`tinyattn.zeros(2, 3)`, `tinyattn.rand(3, 2)`, `tinyattn.cat([a, b], dim=-1)`, `tinyattn.softmax(x, dim=-1)`
... with PyTorch's names, arguments and defaults. Random tensors come from `tinyattn.random`'s
PyTorch-compatible generator, so `manual_seed(123); rand(3, 2)` gives PyTorch's numbers.
"""

import builtins
import math
import numbers

import numpy as np

from . import backend, dtypes, numpy_names, ops, random
from .autograd import grad_mode
from .errors import ShapeError
from .ops import Cat, Stack
from .ops import normalize_dim as _normalize_dim
from .tensor import result_dtype as _result_dtype, where as _where
from .tensor import Size, Tensor, _shape_arg  # noqa: F401  (re-exported)
from .tensor import _check_fits


def generator_or_default(generator):
    """The generator given, or the default one (`tinyattn.random.default_generator`) for None."""
    return random.default_generator if generator is None else generator


def _layout_strides(tensor):
    """A tensor's strides in elements, read from its array: the layout PyTorch's random fills walk
    in memory order (see random.fill_order)."""
    array = tensor.array
    inner = getattr(array, "_array", array)  # array_api_strict keeps a NumPy array inside
    return tuple(stride // inner.itemsize for stride in inner.strides)


def _fill_strides(tensor):
    """The layout of a tensor about to be filled with random numbers in place, once it is known that
    it can be: PyTorch refuses an expanded tensor, or a leaf that requires grad, before it draws, so
    a refused fill leaves the generator where it was."""
    tensor._check_inplace(tensor.requires_grad and grad_mode.enabled)
    return _layout_strides(tensor)


def _leaf(array, requires_grad):
    t = Tensor._wrap(array)
    if requires_grad:
        t.requires_grad = True  # checks the dtype can require grad
    return t


_NUMPY_DTYPES = {name: np.dtype(name) for name in ("float32", "float64", "int64", "int32", "bool")}


def _from_host(values, dtype, device, requires_grad):
    if (device is None and type(values) is np.ndarray and values.dtype is _NUMPY_DTYPES.get(dtype.name)
            and backend.cpu_is_numpy()):
        return _leaf(values, requires_grad)  # (a NumPy array of the right dtype for the CPU, as it is)
    return _leaf(backend.from_host(values, backend.device(device), dtype), requires_grad)


# ---------------------------------------------------------------------------------------------
# creation


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new leaf tensor holding a copy of `data` (nested lists, numbers, NumPy arrays, tensors)."""
    return Tensor._from_data(data, dtype=dtype, device=device, requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None):
    """A tensor of `data`, sharing memory with a tensor or NumPy array of the same dtype and device."""
    if isinstance(data, Tensor) and dtype in (None, data.dtype) and device in (None, data.device):
        return data
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A CPU tensor sharing memory with a NumPy array (as in PyTorch).

    Subclasses of ndarray (np.memmap, the data files of nanoGPT) are held as plain arrays over the
    same memory: writes through the tensor still reach the file.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a NumPy array, got {type(array).__name__}: "
                        "use tinyattn.tensor(data) for lists and numbers")
    if backend.strict_mode():
        return Tensor._from_data(array)
    array = np.asarray(array)  # a view of a subclass as a plain ndarray; a plain one stays itself
    backend.dtype_of(array)  # a clear error for dtypes tinyattn lacks
    return Tensor._wrap(array)


def is_tensor(obj):
    """Whether `obj` is a tinyattn tensor."""
    return isinstance(obj, Tensor)


def _filled(size, value, dtype, device, requires_grad):
    shape = _shape_arg(size)
    dt = dtype or (dtypes.default_float if isinstance(value, float) else
                   dtypes.bool_ if isinstance(value, bool) else dtypes.int64 if isinstance(value, int) else
                   dtypes.default_float)
    _check_fits(np.asarray(value), dt)  # (NumPy would wrap an integer around)
    xp = backend.namespace_for(device)
    array = xp.full(shape, value, dtype=backend.array_dtype(xp, dt), **backend.creation_kwargs(xp))
    return _leaf(array, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of the given size filled with 0 (float32 unless `dtype` says otherwise)."""
    return _filled(size, 0.0, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of the given size filled with 1 (float32 unless `dtype` says otherwise)."""
    return _filled(size, 1.0, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of the given size (filled with 0 here; PyTorch leaves it unset)."""
    return _filled(size, 0.0, dtype, device, requires_grad)  # zeros: no uninitialised memory to study


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor of `size` filled with `fill_value` (its dtype inferred from the value)."""
    return _filled((size,), fill_value, dtype, device, requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros with `input`'s shape, dtype and device."""
    return zeros(input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False):
    """A tensor of ones with `input`'s shape, dtype and device."""
    return ones(input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False):
    """A tensor with `input`'s shape, dtype and device (filled with 0 here)."""
    return zeros_like(input, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor with `input`'s shape, dtype and device, filled with `fill_value`."""
    return full(input.shape, fill_value, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """The numbers from `start` up to (not including) `end` in steps of `step`, as a 1-D tensor."""
    if end is None:
        start, end = 0, start
    bounds = [_number(v) for v in (start, end, step)]
    if not (math.isfinite(bounds[0]) and math.isfinite(bounds[1])) or math.isnan(bounds[2]):
        raise ValueError(f"arange: start and end must be finite numbers, and step a number, got {start}, {end} "
                         f"and {step}")
    all_ints = builtins.all(isinstance(v, int) for v in bounds)  # (the module defines torch.all)
    dt = dtype or (dtypes.int64 if all_ints else dtypes.default_float)
    start, end, step = bounds
    if step > 0 and end < start or step < 0 and end > start:
        raise ValueError(f"arange: a step of {step} cannot go from {start} to {end}: the step's sign must "
                         "point from start to end")
    if not dt.is_floating_point:  # PyTorch makes the bounds integers first: arange(0, 4.5, dtype=long) stops at 3
        _check_fits(np.array(bounds), dt)
        start, end, step = (int(v) for v in bounds)
        all_ints = True
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    size = math.ceil((end - start) / step)  # PyTorch's count, in float64
    if all_ints:
        values = np.arange(start, end, step, dtype=np.int64)
    else:
        values = _arange_floats(float(start), float(step), size, dt)
    return _from_host(values, dt, device, requires_grad)


def _arange_floats(start, step, size, dt):
    """start + i * step, rounded as PyTorch's CPU kernel rounds it (x86, AVX2), to the last bit.

    The kernel fills blocks of two vectors (2 x 8 float32 or 2 x 4 float64 numbers): each vector
    starts at first = start + i0 * step and counts on, first + j * step; the numbers after the last
    whole block are start + i * step. Each is one fused multiply-add in float64.
    """
    width = 8 if dt is dtypes.float32 else 4
    index = np.arange(size, dtype=np.float64)
    whole = size - size % (2 * width)
    offset = index[:whole] % width
    first = random.fma64(index[:whole] - offset, step, start)
    if dt is dtypes.float32:
        first = first.astype(np.float32).astype(np.float64)  # the vector's first number is a float32
    return np.concatenate([random.fma64(offset, step, first), random.fma64(index[whole:], step, start)])


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """`steps` evenly spaced numbers from `start` to `end`, both included."""
    if steps < 0:
        raise ValueError(f"linspace: steps must be non-negative, got {steps}")
    dt = dtype or dtypes.default_float
    start, end = _number(start), _number(end)
    if not dt.is_floating_point:
        _check_fits(np.array([start, end]), dt)
    if dt.is_floating_point and steps > 1:
        values = _linspace_floats(float(start), float(end), steps, dt)
    elif steps > 1:  # as PyTorch: integer ends, a float64 step, each number truncated
        start, end = int(start), int(end)
        step = (end - start) / (steps - 1)
        index = np.arange(steps)
        half = steps // 2
        values = np.concatenate([start + step * index[:half], end - step * (steps - 1 - index[half:])])
        values = np.trunc(values)
    else:
        values = np.array([start] * steps)  # one number: the start (and none for 0 steps), as in PyTorch
    return _from_host(values, dt, device, requires_grad)


def _number(value):
    """A bound given as a number, a NumPy number or a 0-d tensor, as a Python int or float."""
    if isinstance(value, Tensor):
        value = value.item()
    if isinstance(value, numbers.Integral):  # a bool too, as in PyTorch
        return int(value)
    return float(value)


def _linspace_floats(start, end, steps, dt):
    """PyTorch's linspace to the last bit: in the dtype, step = (end - start) / (steps - 1); the first
    half counts up from start and the second down from end (so both ends are exact), each number one
    fused multiply-add."""
    real, fma = (np.float32, random.fma32) if dt is dtypes.float32 else (np.float64, random.fma64)
    start, end = real(start), real(end)
    step = (end - start) / real(steps - 1)
    index = np.arange(steps, dtype=real)
    half = steps // 2
    return np.concatenate([fma(index[:half], step, start), fma(index[half:] - real(steps - 1), step, end)])


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """The n x m identity matrix (m = n by default)."""
    if n < 0 or m is not None and m < 0:
        raise ShapeError(f"eye: n and m must be 0 or more, got n={n}" + ("" if m is None else f" and m={m}"))
    xp = backend.namespace_for(device)
    dt = dtype or dtypes.default_float
    array = xp.eye(n, m, dtype=backend.array_dtype(xp, dt), **backend.creation_kwargs(xp))
    return _leaf(array, requires_grad)


# ---------------------------------------------------------------------------------------------
# random tensors (PyTorch-compatible streams, see tinyattn.random)

manual_seed = random.manual_seed
seed = random.seed
initial_seed = random.initial_seed
get_rng_state = random.get_rng_state
set_rng_state = random.set_rng_state
Generator = random.Generator


def _bernoulli_of_probabilities(generator, shape, strides, p):
    """Tensor.bernoulli_(p) for a tensor p: one uniform per element in p's dtype (float32: one draw,
    float64: two), in the memory order of the tensor filled (of layout `strides`); True where it is
    below the element's probability, p broadcast to the tensor's shape."""
    if not p.dtype.is_floating_point:
        raise TypeError(f"bernoulli_ needs floating point probabilities, got a {p.dtype} tensor: use p.float()")
    probs = backend.to_host(p.detach().array)
    if len(probs.shape) > len(shape) or ops.broadcast_shape(probs.shape, shape) != tuple(shape):
        raise ShapeError(f"bernoulli_: probabilities of shape {list(probs.shape)} do not broadcast to the "
                         f"tensor's shape {list(shape)}")
    if probs.size and not ((probs >= 0) & (probs <= 1)).all():
        raise RuntimeError("bernoulli_ expects 0 <= p <= 1 for every element of p")
    return generator.uniform(shape, probs.dtype, strides=strides) < probs


def _check_random_bounds(low, high, dtype):
    """PyTorch's check of integers drawn into an integer or bool tensor (random_(from, to), randint_like):
    from and to - 1 must be numbers of its dtype."""
    if dtype.is_floating_point or low >= high:  # (an empty range is randint's own error)
        return
    smallest, largest = (0, 1) if dtype is dtypes.bool_ else (int(np.iinfo(dtype.name).min), int(np.iinfo(dtype.name).max))
    for name, value in (("from", low), ("to - 1", high - 1)):
        if not smallest <= value <= largest:
            raise RuntimeError(f"{name} is out of bounds for {dtype.name}: a {dtype.name} tensor holds numbers in "
                               f"[{smallest}, {largest}], so draw from a range within it (to is excluded)")


def _rng_state_tensor(array):
    """A generator's state bytes as the uint8 tensor get_rng_state() gives (as PyTorch's ByteTensor)."""
    return _leaf(array, False)


def _rng_state_host_bytes(state):
    """The bytes of a state given to set_rng_state / Generator.set_state, checked as PyTorch checks them."""
    if not isinstance(state, Tensor):
        raise TypeError(f"expected a torch.ByteTensor, but got {type(state).__name__}: pass the uint8 tensor "
                        f"that get_rng_state() gives ({random.STATE_SIZE} bytes)")
    if state.dtype is not dtypes.uint8 or state.device.type != "cpu":
        raise TypeError(f"RNG state must be a torch.ByteTensor (uint8, on the CPU), got {state.dtype} on "
                        f"{state.device}: pass the uint8 tensor that get_rng_state() gives ({random.STATE_SIZE} bytes)")
    if not backend.is_contiguous(state.array):
        raise RuntimeError("RNG state must be contiguous: pass state.contiguous()")
    return backend.to_host(state.array)


random.use_tensors(_rng_state_tensor, _rng_state_host_bytes)


def _float_dtype(dtype):
    dt = dtypes.computable(dtype or dtypes.default_float)
    if not dt.is_floating_point:
        raise TypeError(f"random floats need a floating point dtype, got {dt}")
    return dt


# The *_like creators fill a tensor laid out as `input` (PyTorch's empty_like: a transpose or permutation
# keeps its strides, anything else becomes contiguous) and fill it as PyTorch does, in memory order.


def rand_like(input, dtype=None, device=None, requires_grad=False, *, generator=None):
    """Uniform random numbers in [0, 1) with `input`'s shape, dtype, device and layout."""
    dt = _float_dtype(dtype or input.dtype)
    shape = tuple(input.shape)
    values = generator_or_default(generator).uniform(
        shape, _NUMPY_DTYPES[dt.name], strides=random.like_strides(shape, _layout_strides(input)))
    return _from_host(values, dt, device or input.device, requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False, *, generator=None):
    """Standard normal random numbers with `input`'s shape, dtype, device and layout."""
    dt = _float_dtype(dtype or input.dtype)
    shape = tuple(input.shape)
    values = generator_or_default(generator).normal(
        shape, _NUMPY_DTYPES[dt.name], strides=random.like_strides(shape, _layout_strides(input)))
    return _from_host(values, dt, device or input.device, requires_grad)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Integers in [low, high) with `input`'s shape, dtype (unless given), device and layout:
    randint_like(x, high) or randint_like(x, low, high)."""
    if high is None:
        low, high = 0, low
    _check_random_bounds(int(low), int(high), dtype or input.dtype)
    shape = tuple(input.shape)
    values = generator_or_default(generator).randint(
        int(low), int(high), shape, strides=random.like_strides(shape, _layout_strides(input)))
    return _from_host(values, dtype or input.dtype, device or input.device, requires_grad)


def randint(low=0, high=None, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Integers in [low, high): randint(high, size) or randint(low, high, size)."""
    if high is None:  # randint(high, size=...)
        low, high = 0, low
    elif size is None:  # randint(high, size)
        low, high, size = 0, low, high
    if not isinstance(size, (tuple, list)):  # PyTorch refuses randint(3, 10) too
        raise TypeError(
            f"randint needs its size as a tuple, got {size!r}: e.g. randint(10, (3,)), randint(0, 10, (3,)) "
            "or randint(10, size=(3,))"
        )
    values = generator_or_default(generator).randint(int(low), int(high), _shape_arg((size,)))
    return _from_host(values, dtype or dtypes.int64, device, requires_grad)


def randperm(n, generator=None, dtype=None, device=None):
    """A random permutation of 0 ... n-1 (PyTorch's numbers for the same seed)."""
    values = generator_or_default(generator).randperm(int(n))
    return _from_host(values, dtype or dtypes.int64, device, False)


def multinomial(input, num_samples, replacement=False, generator=None):
    """Draw category indices with probabilities proportional to the rows of `input`."""
    probs = backend.to_host(input.detach().array)
    values = generator_or_default(generator).multinomial(probs, num_samples, replacement)
    return _from_host(values, dtypes.int64, input.device, False)


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
    nothing[_normalize_dim(dim, shaped.ndim)] = 0
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
    return _result_dtype(tensor1, tensor2)


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


__all__ = [
    name for name, value in list(globals().items())
    if not name.startswith("_") and name not in {"np", "backend", "builtins", "dtypes", "ops", "random", "Cat", "Stack"}
]
