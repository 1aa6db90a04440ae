"""Making tensors: from data (`tensor`, `as_tensor`, `from_numpy`), from sizes (`zeros`, `ones`, `full`,
`arange`, `linspace`, `eye`, the `*_like` forms) and at random (`randint`, `randperm`, `multinomial`,
`rand_like`, ...), drawn from the generators of tinyattn.random in PyTorch's order.

These are torch.* functions, defined here, below the Tensor class, because its methods make tensors
with them too (new_zeros, multinomial, bernoulli_); tinyattn.functions gives them to the package root.
"""

import builtins
import math
import numbers

import numpy as np

from .. import backend, dtypes, ops, random, tensor_core
from ..errors import ShapeError
from ..tensor_core import TensorCore, _check_fits
from .arguments import _shape_arg
from ..autograd import grad_mode


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
    t = tensor_core.wrap(array)
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
    return tensor_core.from_data(data, dtype=dtype, device=device, requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None):
    """A tensor of `data`, sharing memory with a tensor or NumPy array of the same dtype and device."""
    if isinstance(data, TensorCore) and dtype in (None, data.dtype) and device in (None, data.device):
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
        return tensor_core.from_data(array)
    array = np.asarray(array)  # a view of a subclass as a plain ndarray; a plain one stays itself
    backend.dtype_of(array)  # a clear error for dtypes tinyattn lacks
    return tensor_core.wrap(array)


def is_tensor(obj):
    """Whether `obj` is a tinyattn tensor."""
    return isinstance(obj, TensorCore)


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
    if isinstance(value, TensorCore):
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
    if not isinstance(state, TensorCore):
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
