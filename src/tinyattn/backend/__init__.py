"""Where a tensor's numbers live: NumPy on `cpu`, CuPy on `cuda`.

Ops are written against the Python Array API standard: they call `xp.exp`, `xp.matmul`, ... on the
namespace `xp` of their inputs, so the same code runs on NumPy and on CuPy. This module is the only
place that knows which library is behind a device, how to move arrays between host and device, and
how to do the few things the standard lacks (scatter-add for index backward, `erf`, contiguity).

For testing without a GPU, the `cpu` device can be switched to `array_api_strict` on a non-default
device (`use_array_api_strict()`): any op that calls a NumPy-only function or converts to the host by
accident then fails, as it would on CuPy.
"""

import ctypes
import functools
import math
import os
import sys

import numpy as np
import array_api_compat.numpy as numpy_xp

from .. import dtypes
from ..errors import DeviceError
from . import parallel

class Device:
    """`tinyattn.device('cpu')` or `tinyattn.device('cuda', 0)`, like `torch.device`."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, Device):
            type, index = type.type, type.index
        elif ":" in type:
            type, _, number = type.partition(":")
            index = int(number)
        if type not in ("cpu", "cuda"):
            raise DeviceError(f"unknown device type {type!r}: use 'cpu' or 'cuda'")
        if type == "cuda" and index is None:
            index = 0
        self.type = type
        self.index = index

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = Device(other)
        return isinstance(other, Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


CPU = Device("cpu")


def reuse_freed_memory():
    """Ask the C library to serve large arrays from memory the process already holds.

    By default glibc gives every array above about 32 MB fresh pages from the kernel and hands them
    back when the array is freed; the kernel then zeroes each page again on first touch. For
    attention-sized arrays that costs more than the arithmetic: a (4, 12, 1024, 1024) attention
    forward + backward took 1.36 s with the default and 0.86 s with reuse. Raising glibc's mmap and
    trim thresholds keeps freed memory in the process for the next array (it is reused, not leaked;
    the peak does not grow). Linux with glibc only; TINYATTN_REUSE_MEMORY=0 keeps the default.
    """
    if not sys.platform.startswith("linux") or os.environ.get("TINYATTN_REUSE_MEMORY", "1") == "0":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3  # mallopt's parameter numbers in <malloc.h>
        return bool(libc.mallopt(m_mmap_threshold, 2**30) and libc.mallopt(m_trim_threshold, 2**31))
    except (OSError, AttributeError):  # not glibc (musl, ...): nothing to tune
        return False


reuse_freed_memory()


def device(spec=None):
    """A Device from a string, a Device or None (the CPU)."""
    if spec is None:
        return CPU
    if isinstance(spec, Device):
        return spec
    return Device(spec)


# ---------------------------------------------------------------------------------------------
# floating-point errors: silent, as in PyTorch

# NumPy warns (RuntimeWarning) where a float operation overflows, divides by zero or makes a NaN:
# log(0), the softmax of a row of -inf, every op of a diverging training run. PyTorch computes the
# same inf and NaN without a word, and so does tinyattn: ops run with NumPy's reports switched off.
# `np.errstate(all="ignore")` does that but costs about 1.5 us per use, a quarter of a small op, so
# the engine sets the context variable errstate sets (per thread, like errstate) to a value made
# once: 0.3 us, 3-4% of a 4x4 add. A NumPy without that variable gets np.errstate.
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _float_error_state
    with np.errstate(all="ignore"):
        _FLOAT_ERRORS_OFF = _float_error_state.get()
except (ImportError, AttributeError):
    _float_error_state = None


def _errstate_off():
    state = np.errstate(all="ignore")
    state.__enter__()
    return state


def _errstate_restore(state):
    state.__exit__(None, None, None)


# float_errors_off() switches NumPy's float warnings off in this thread and returns what
# float_errors_restore(token) needs to put the previous state back
if _float_error_state is not None:  # C calls, no Python frame: this runs for every op
    float_errors_off = functools.partial(_float_error_state.set, _FLOAT_ERRORS_OFF)
    float_errors_restore = _float_error_state.reset
else:
    float_errors_off, float_errors_restore = _errstate_off, _errstate_restore


def quiet_float_errors(function):
    """A decorator: `function` computes with NumPy's floating-point warnings off (see above)."""
    @functools.wraps(function)
    def quiet(*args, **kwargs):
        token = float_errors_off()
        try:
            return function(*args, **kwargs)
        finally:
            float_errors_restore(token)

    return quiet


# ---------------------------------------------------------------------------------------------
# namespaces


class _Namespaces:
    """Which array library serves each device (the CPU one can be switched for testing)."""

    def __init__(self):
        self.cpu = numpy_xp
        self.cpu_device = None  # array_api_strict's device object when strict mode is on
        self.cuda = None  # array_api_compat.cupy, imported on first use
        self.by_type = {np.ndarray: numpy_xp}
        for scalar in (np.float32, np.float64, np.int32, np.int64, np.bool_, np.uint8, np.int8, np.int16):
            self.by_type[scalar] = numpy_xp  # NumPy returns scalars from 0-d operations


_ns = _Namespaces()


def use_array_api_strict(enabled=True):
    """Serve the `cpu` device from `array_api_strict` on a non-default device (for tests)."""
    if enabled:
        import array_api_strict as xs

        _ns.cpu = xs
        _ns.cpu_device = xs.Device("device1")
        _ns.by_type[xs._array_object.Array] = xs
    else:
        _ns.cpu = numpy_xp
        _ns.cpu_device = None


def strict_mode():
    return _ns.cpu is not numpy_xp


def cuda_namespace():
    if _ns.cuda is None:
        try:
            import cupy
            import array_api_compat.cupy as cupy_xp
        except ImportError as error:
            raise DeviceError(
                "device 'cuda' needs CuPy: pip install cupy-cuda12x (or cupy-cuda13x, for CUDA 13)"
            ) from error
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError as error:  # no driver, or one too old for this CuPy
            raise DeviceError(f"CuPy is installed but cannot reach a CUDA device: {error}") from error
        if count == 0:
            raise DeviceError("CuPy is installed but no CUDA device is visible")
        _ns.cuda = cupy_xp
        _ns.by_type[cupy.ndarray] = cupy_xp
    return _ns.cuda


def cuda_is_available():
    try:
        cuda_namespace()
    except Exception:
        return False
    return True


def namespace(array):
    """The array namespace (`xp`) of an array."""
    try:
        return _ns.by_type[type(array)]
    except KeyError:
        if is_cupy_array(array):  # made by CuPy before tinyattn used the GPU: set the GPU up now
            cuda_namespace()
            return _ns.cuda
        raise TypeError(f"not an array tinyattn can hold: {type(array).__name__}") from None


def is_cupy_array(obj):
    """Whether `obj` is a CuPy array (told by its type, without importing CuPy)."""
    return type(obj).__module__ == "cupy" and type(obj).__name__ == "ndarray"


def cpu_is_numpy():
    """Whether CPU tensors hold NumPy arrays (the tests also run them on array_api_strict)."""
    return _ns.cpu is numpy_xp


def namespace_for(dev):
    dev = device(dev)
    if dev.type == "cpu":
        return _ns.cpu
    xp = cuda_namespace()
    _check_current_gpu(dev)
    return xp


def _check_current_gpu(dev):
    """tinyattn computes on one GPU, CuPy's current one: another index is an error, not ignored.

    (CuPy creates arrays and runs kernels on its current device whatever index is asked for.)
    """
    import cupy

    current = cupy.cuda.Device().id
    if dev.index != current:
        raise DeviceError(
            f"device {dev} is not the GPU tinyattn computes on (cuda:{current}, CuPy's current device; "
            f"{cupy.cuda.runtime.getDeviceCount()} visible): use 'cuda' or 'cuda:{current}', or pick the "
            f"GPU before Python starts, e.g. CUDA_VISIBLE_DEVICES={dev.index} (it is then cuda:0)"
        )


def device_of(array):
    xp = namespace(array)
    if xp is _ns.cuda:
        return Device("cuda", array.device.id)
    return CPU


def creation_kwargs(xp):
    """Extra keyword arguments for array creation in namespace `xp` (the strict test device)."""
    if xp is _ns.cpu and _ns.cpu_device is not None:
        return {"device": _ns.cpu_device}
    return {}


def same_device(arrays):
    """The shared namespace of `arrays`; a clear error if they live on different devices."""
    xp = namespace(arrays[0])
    for other in arrays[1:]:
        if namespace(other) is not xp or (xp is _ns.cuda and other.device.id != arrays[0].device.id):
            raise DeviceError(
                f"expected all tensors to be on the same device, found {_where(arrays[0])} "
                f"and {_where(other)}: move them with .to(device) first"
            )
    return xp


def _where(array):
    """The device of `array` and its array library, e.g. 'cuda:0 (cupy)' or 'cpu (numpy)'."""
    return f"{device_of(array)} ({namespace(array).__name__.rsplit('.', 1)[-1]})"


# ---------------------------------------------------------------------------------------------
# dtypes

_array_dtypes = {}  # (type, dtype object) of the array library -> tinyattn dtype


def array_dtype(xp, dt):
    """The array library's dtype object for a tinyattn dtype."""
    return getattr(xp, dtypes.computable(dt).name)


def dtype_of(array):
    # keyed with the type first: array_api_strict's dtypes warn when compared with NumPy's
    key = (type(array.dtype), array.dtype)
    try:
        return _array_dtypes[key]
    except KeyError:
        pass
    name = str(array.dtype).rsplit(".", 1)[-1]
    if name not in dtypes.BY_NAME:
        raise TypeError(f"tinyattn has no dtype {name}: use float32, float64, int64 or bool")
    _array_dtypes[key] = dtypes.BY_NAME[name]
    return dtypes.BY_NAME[name]


def is_float(array):
    return dtype_of(array).is_floating_point


INT64 = np.dtype(np.int64)  # NumPy's int64 (arrays of it share this one object: told by `is`, at once)


def all_in_range(ids, count):
    """Whether every integer of `ids` lies in [0, count) (True where there are none).

    For NumPy int64 ids one reduction decides: a negative id read as unsigned is above any count.
    Other arrays: their minimum and maximum."""
    if type(ids) is np.ndarray and ids.dtype is INT64:
        return not ids.size or int(np.maximum.reduce(ids.view(np.uint64), None)) < count
    if not math.prod(ids.shape):
        return True
    xp = namespace(ids)
    return 0 <= int(xp.min(ids)) and int(xp.max(ids)) < count


# ---------------------------------------------------------------------------------------------
# host transfer


def from_host(values, dev, dt=None):
    """Copy a NumPy array (or nested lists) to device `dev`, with tinyattn dtype `dt` if given."""
    xp = namespace_for(dev)
    values = np.asarray(values)
    if dt is not None:
        values = values.astype(dtypes.computable(dt).name, copy=False)
    if xp is numpy_xp:
        return values
    return xp.asarray(values, **creation_kwargs(xp))


def to_host(array):
    """A NumPy array holding the values of `array` (no copy for NumPy arrays)."""
    xp = namespace(array)
    if xp is numpy_xp:
        return np.asarray(array)
    if xp is _ns.cuda:
        return array.get()
    return np.asarray(xp.asarray(array, device=xp.Device("CPU_DEVICE"), copy=True))


def host_values(data):
    """Numbers from NumPy arrays, lists and scalars as they are, CuPy arrays copied to the host."""
    return to_host(data) if is_cupy_array(data) else np.asarray(data)


def to_device(array, dev):
    """Move an array to device `dev` (returns the same array when it is already there)."""
    if device_of(array) == device(dev):
        return array
    return from_host(to_host(array), dev)


# ---------------------------------------------------------------------------------------------
# what the Array API standard lacks


def index_key(xp, key, ndim):
    """Make an index key acceptable to `xp` (the standard wants an explicit trailing `...`)."""
    if xp is numpy_xp or not isinstance(key, tuple):
        return key
    if not any(k is Ellipsis for k in key) and sum(k is not None for k in key) < ndim:  # `is`: keys hold arrays
        key = key + (Ellipsis,)
    return key


def scatter_add(target, key, values):
    """`target[key] += values`, adding repeated indices up (the backward of indexing)."""
    xp = namespace(target)
    if xp is numpy_xp:
        np.add.at(target, key, values)
        return target
    if xp is _ns.cuda:
        import cupyx

        cupyx.scatter_add(target, key, values)
        return target
    # array_api_strict: no scatter in the standard, so do it on the host
    host = to_host(target).copy()
    np.add.at(host, _host_key(key), to_host(values))
    return from_host(host, CPU)


def index_add_rows(target, ids, rows):
    """`target[ids[i]] += rows[i]` for every i, repeated ids adding up: an embedding's backward."""
    if namespace(target) is not numpy_xp or ids.shape[0] == 0:
        return scatter_add(target, ids, rows)
    # np.add.at handles one row at a time; instead sort the ids so that equal ones sit together and
    # add up each run of equal ids with one reduceat (about 5x faster for a character vocabulary)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    run_starts = np.flatnonzero(np.concatenate(([True], sorted_ids[1:] != sorted_ids[:-1])))
    target[sorted_ids[run_starts]] += np.add.reduceat(rows[order], run_starts, axis=0)
    return target


def unique(array, axis=None):
    """(values, inverse, counts): the sorted distinct values (or slices along `axis`), where each
    element (slice) of `array` sits among them, and how often each occurs. NaNs stay distinct."""
    xp = namespace(array)
    if xp is numpy_xp or xp is _ns.cuda:
        return xp.unique(array, return_inverse=True, return_counts=True, axis=axis, equal_nan=False)
    # array_api_strict: its unique_all has no axis, so do it on the host
    return tuple(from_host(part, CPU) for part in unique(to_host(array), axis))


def _host_key(key):
    if isinstance(key, tuple):
        return tuple(to_host(k) if hasattr(k, "shape") else k for k in key)
    return to_host(key) if hasattr(key, "shape") else key


def getitem(array, key):
    """`array[key]` with NumPy's indexing rules (index arrays and masks anywhere, as CuPy has them)."""
    if type(array) is np.ndarray:
        return array[key]
    xp = namespace(array)
    if xp is numpy_xp or xp is _ns.cuda:
        return array[key]
    try:
        return array[index_key(xp, key, array.ndim)]
    except IndexError:  # array_api_strict allows only part of NumPy's advanced indexing: use the host
        return from_host(np.asarray(to_host(array)[_host_key(key)]), CPU)


def setitem(array, key, value):
    """`array[key] = value` with NumPy's indexing rules; returns the array (a new one on the host path)."""
    xp = namespace(array)
    if xp is numpy_xp or xp is _ns.cuda:
        array[key] = value
        return array
    try:
        array[index_key(xp, key, array.ndim)] = value
        return array
    except IndexError:  # as in getitem
        host = to_host(array).copy()
        host[_host_key(key)] = to_host(value) if hasattr(value, "shape") else value
        return from_host(host, CPU)


def masked_fill(x, mask, value):
    """A copy of x with `value` where `mask` is True (the mask broadcasts to x's shape).

    A copy, then the in-place masked write: on NumPy about 2x faster than np.where with a scalar.
    """
    result = namespace(x).asarray(x, copy=True)
    masked_assign(result, mask, value)
    return result


def masked_assign(target, mask, value):
    """`target[mask] = value` in place, the mask broadcast to the target's shape (masked_fill_)."""
    xp = namespace(target)
    if xp is numpy_xp:
        np.copyto(target, value, where=mask)
    elif xp is _ns.cuda:
        import cupy

        cupy.copyto(target, value, where=mask)
    else:
        target[...] = xp.where(mask, value, target)


def numpy_class_rows(logits, targets):
    """Whether a classification loss's arguments are the common case on the CPU: NumPy (N, C) float
    logits with C > 0 and (N,) int64 targets, 0 < N < 2**24, every target in [0, C) (one reduction:
    a negative target read as unsigned is above any C). Checked at once, where the general path's
    checks cost more than the loss of a small batch."""
    if not (type(logits) is np.ndarray and type(targets) is np.ndarray and logits.ndim == 2
            and logits.dtype.kind == "f" and targets.dtype == INT64 and targets.shape == logits.shape[:1]
            and 0 < targets.shape[0] < 2**24 and logits.shape[1]):
        return False
    return int(np.maximum.reduce(targets.view(np.uint64), None)) < logits.shape[1]


def pick_columns(x, columns):
    """x[i, columns[i]] for every row i of a matrix x: each row's entry at its own column (a loss's
    target class). NumPy's own indexing on NumPy arrays (the standard's take_along_axis costs more)."""
    if type(x) is np.ndarray:
        return x[np.arange(x.shape[0]), columns]
    return namespace(x).take_along_axis(x, columns[:, None], axis=1)[:, 0]


def one_hot(labels, classes, dtype):
    """A (len(labels), classes) matrix of `dtype` (the array library's): 1 at each row's label, 0 elsewhere."""
    if type(labels) is np.ndarray:
        return (np.arange(classes)[None, :] == labels[:, None]).astype(dtype)
    xp = namespace(labels)
    return xp.astype(xp.arange(classes, **creation_kwargs(xp))[None, :] == labels[:, None], dtype)


# ---------------------------------------------------------------------------------------------
# sums and maxima NumPy does slowly


BLAS_SUM_MIN_SIZE = 1024  # sum_along sums smaller arrays with NumPy (parallel's pieces are larger)


def sum_along(x, axis, keepdims=False):
    """`xp.sum(x, axis=axis, keepdims=keepdims)` for a tuple of non-negative axes, often faster.

    NumPy sums a short last axis (a GPT's 64-token attention rows, its 128 channels) one row at a time,
    and sums over leading axes (a bias's gradient) row after row. BLAS does both as a product with a
    vector of ones, 3-5x faster. Rows longer than 4096 keep NumPy's more accurate pairwise sum.
    """
    if type(x) is np.ndarray and x.size < BLAS_SUM_MIN_SIZE and x.dtype.kind == "f":  # a small array: at once
        return np.add.reduce(x, axis=axis, keepdims=keepdims)  # what np.sum calls, without its wrappers
    xp = namespace(x)
    fast = (xp is numpy_xp and x.size >= BLAS_SUM_MIN_SIZE and x.dtype in (np.float32, np.float64)
            and x.flags.c_contiguous)  # (the size first: a small array is told at once)
    if fast and axis == (x.ndim - 1,) and x.shape[-1] <= 4096:
        total = x @ np.ones(x.shape[-1], dtype=x.dtype)
        return total[..., None] if keepdims else total
    if fast and 0 < len(axis) < x.ndim and axis == tuple(range(len(axis))):
        rest = x.shape[len(axis):]
        rows = x.reshape(-1, math.prod(rest))
        total = (np.ones(rows.shape[0], dtype=x.dtype) @ rows).reshape(rest)
        return total.reshape((1,) * len(axis) + rest) if keepdims else total
    if type(x) is np.ndarray and x.dtype.kind == "f":
        return np.add.reduce(x, axis=axis, keepdims=keepdims)  # what np.sum calls, without its wrappers
    return xp.sum(x, axis=axis, keepdims=keepdims)


def sum_all(x):
    """The sum of all of x's elements, as `xp.sum(x)` computes it; for a NumPy array the call np.sum
    makes (np.add.reduce), without its wrappers, which cost more than the sum of a small array."""
    if type(x) is np.ndarray:
        return np.add.reduce(x, None)
    return namespace(x).sum(x)


def mean_along(x, axis, count, keepdims=False):
    """`xp.mean(x, axis=axis, keepdims=keepdims)` for a tuple of axes over `count` elements.

    For a NumPy float32 or float64 array it takes the steps `np.mean` takes (a sum in the array's
    dtype, then a division by the count as an `intp`, rounded back to the dtype), without its
    wrappers, which cost more than the sum of a small array: the same bits, a few µs sooner.
    """
    if type(x) is np.ndarray and x.dtype.kind == "f" and x.dtype.itemsize >= 4 and count:
        total = np.add.reduce(x, axis=axis, keepdims=keepdims)
        if type(total) is np.ndarray:
            return np.true_divide(total, np.intp(count), out=total, casting="unsafe")
        return total.dtype.type(total / np.intp(count))
    return namespace(x).mean(x, axis=axis, keepdims=keepdims)


def matmul(a, b):
    """`a @ b`, with the right operand of a batch of small products laid out row by row first.

    In attention, q @ k^T and grad @ v^T multiply by a transposed view. OpenBLAS runs a small
    product (a 64x32 @ 32x64 slice) 1.2-1.4x faster when that operand is stored row by row, which
    pays for the copy; from 64x256 slices on the copy costs more than it saves (measured 1.35x
    slower), so larger operands are used as they are.
    """
    if a.ndim < 3 and b.ndim < 3:  # (no stack of products: the checks below do not apply)
        return a @ b
    if (namespace(b) is numpy_xp and b.ndim >= 3 and b.shape[-2] * b.shape[-1] <= 4096
            and b.strides[-2] < b.strides[-1]):  # a transposed view: its columns are contiguous
        b = np.ascontiguousarray(b)
    if (namespace(b) is numpy_xp and a.ndim >= 3 and a.shape[:-2] == b.shape[:-2] and namespace(a) is numpy_xp
            and a.shape[-2] * a.shape[-1] * b.shape[-1] > OPENBLAS_ONE_THREAD_SIZE):
        return _stacked_matmul(a, b)
    return a @ b


# OpenBLAS computes a product of up to this many multiply-adds (64 x 64 x 64) on one thread whatever
# its count (SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD): smaller stacks need no splitting
OPENBLAS_ONE_THREAD_SIZE = 65536 * 4


def _stacked_matmul(a, b):
    """a @ b for two stacks of matrices with the same batch dims (attention's products).

    NumPy multiplies the stack one matrix at a time, and OpenBLAS splits each small product over its
    threads, which costs more than it gains. Instead the stack is split over the cores
    (parallel.map_rows), each product on one BLAS thread, also when there is one piece: a product's
    bits then do not depend on the thread count.
    """
    batch = a.shape[:-2]
    count = math.prod(batch)  # spelled out, not -1: a matrix may have no elements
    stacked = parallel.map_rows(np.matmul, np.reshape(a, (count,) + a.shape[-2:]),
                                np.reshape(b, (count,) + b.shape[-2:]), align=1, one_blas_thread=True)
    return np.reshape(stacked, batch + stacked.shape[-2:])


def matrix_transpose(array):
    """A view with the last two axes swapped (`array.mT`, which CuPy arrays do not have)."""
    if namespace(array) is _ns.cuda:
        return _ns.cuda.matrix_transpose(array)  # the standard's function, from array_api_compat
    return array.mT


def exp_in_place(x):
    """exp(x) written into x's memory (NumPy and CuPy), or a new array where the library cannot."""
    xp = namespace(x)
    if xp is numpy_xp:
        return np.exp(x, out=x)
    if xp is _ns.cuda:
        import cupy

        return cupy.exp(x, out=x)
    return xp.exp(x)


def on_threads(ufunc, x):
    """ufunc(x) for a NumPy ufunc of one array (exp, tanh): a large NumPy array (parallel.in_blocks)
    in blocks on every thread (parallel.each_block), anything else as usual. Elementwise, so the
    same bits."""
    if not (parallel.in_blocks(x) and x.dtype.kind == "f" and parallel.threads_for_blocks() > 1):
        return ufunc(x)  # (on one thread, blocks of a single pass would only add calls)
    result = np.empty_like(x)
    parallel.each_block(lambda block, out: ufunc(block, out=out), np.reshape(x, (-1,)), np.reshape(result, (-1,)),
                        align=1)
    return result


def max_for_shift(x, axis):
    """The maximum along `axis` (kept) that softmax subtracts before exp() so that it cannot overflow.

    For NumPy it is np.fmax.reduce, which skips NaNs and runs about 1.4x faster than max(); a NaN in a
    row still spreads through exp() and the row's sum, so the softmax is the same.
    """
    if type(x) is np.ndarray and x.dtype.char in "fd" and x.shape[axis]:  # (the common case, told at once)
        return np.fmax.reduce(x, axis=axis, keepdims=True)
    xp = namespace(x)
    if x.shape[axis] == 0:  # an empty row has no max: no shift is needed either
        return xp.zeros(x.shape[:axis] + (1,) + x.shape[axis + 1:], dtype=x.dtype, **creation_kwargs(xp))
    if xp is numpy_xp and x.dtype in (np.float32, np.float64):
        return np.fmax.reduce(x, axis=axis, keepdims=True)
    return xp.max(x, axis=axis, keepdims=True)


def add_scaled(out, a, b, alpha):
    """out[...] = a + alpha * b, rounded as PyTorch's `a.add(b, alpha=alpha)` rounds it on the CPU.

    PyTorch rounds alpha to the arrays' dtype and computes a + alpha * b as a fused multiply-add: one
    rounding, where NumPy's `a + alpha * b` rounds the product and then the sum (in float32, 9% of the
    elements of an SGD step then differ in their last bit). For float32 NumPy arrays the product of two
    float32 numbers is exact in float64, so the sum is the only rounding that matters: rounded to
    float64, then to float32, it is the fused result except where the float64 sum lands exactly on a
    float32 halfway point (none in 10 million random SGD updates; docs/explanations/differences.md).
    About 3x the cost of the two-rounding update. Other dtypes (float64 has no wider type here) round
    twice. `out` may be `a` (an update in place).
    """
    if type(out) is np.ndarray and out.dtype == np.float32 and a.dtype == np.float32 and b.dtype == np.float32:
        wide = b.astype(np.float64)
        wide *= np.float64(np.float32(alpha))  # exact: 24 + 24 bits of a 53-bit significand
        wide += a  # rounded to float64 here; rounding that to float32 is the fused result (see above)
        np.copyto(out, wide, casting="same_kind")
        return out
    out[...] = a + alpha * b
    return out


def row_sums(x, axis=-1, keepdims=False):
    """The sums of x along `axis`, each row summed in an order that depends only on its length: a row
    sums to the same bits alone, among a thousand others, in a block of parallel.map_blocks or on
    another thread. Softmax's and layer norm's row sums go through here, so that their blocks give the
    whole array's bits for any row length and any number of rows.

    For NumPy float arrays along the last axis: a dot product of each row with a vector of ones
    (np.vecdot, the BLAS's dot on each row on its own), about as fast as the matrix-vector product
    `x @ ones`, which OpenBLAS computes in another order for a call's last few rows and, for rows of 8,
    past 16,384 rows; NumPy's own sum over the last axis, the other sum of that kind, is 3-9x slower on
    short rows. Other arrays and axes: sum_along.
    """
    axis = axis % x.ndim
    if type(x) is np.ndarray and axis == x.ndim - 1 and x.dtype.char in "fd":
        total = np.vecdot(x, _ones(x.shape[-1], x.dtype.char))
        return total[..., None] if keepdims else total
    return sum_along(x, (axis,), keepdims)


@functools.lru_cache(maxsize=64)
def _ones(length, dtype_char):
    """A read-only vector of `length` ones (row_sums' other factor), made once per length and dtype."""
    ones = np.ones(length, dtype=dtype_char)
    ones.flags.writeable = False
    return ones


def vecdot(a, b, axis=-1):
    """The dot product of real arrays a and b along `axis` (the standard's vecdot).

    CuPy has no vecdot, and array_api_compat's general one conjugates a copy of `a` and runs a batch
    of (1 x n) @ (n x 1) products; a product and a sum are one pass each.
    """
    xp = namespace(a)
    if xp is _ns.cuda:
        return xp.sum(a * b, axis=axis)
    return xp.vecdot(a, b, axis=axis)


def clip(x, low=None, high=None):
    """min(max(x, low), high), elementwise; a bound of None leaves that side open.

    On CuPy as maximum and minimum: array_api_compat's clip picks values with boolean masks, and each
    of those waits for the GPU and reads a count back to the host.
    """
    xp = namespace(x)
    if xp is not _ns.cuda:
        return xp.clip(x, low, high)
    if low is not None:
        x = xp.maximum(x, low)
    return x if high is None else xp.minimum(x, high)


def shares_elements(array):
    """Whether several elements of `array` are one place in memory (a view made by expand()).

    NumPy marks such views read-only; CuPy has no such flag and would let a write race through them.
    """
    xp = namespace(array)
    inner = array if xp is numpy_xp or xp is _ns.cuda else array._array  # array_api_strict's NumPy array
    if inner.size == 0:  # no elements at all (NumPy gives such arrays strides of 0)
        return False
    return any(stride == 0 and n > 1 for stride, n in zip(inner.strides, inner.shape))


def is_read_only(array):
    """Whether NumPy refuses writes to `array`: a view into an expand()ed array is read-only there."""
    xp = namespace(array)
    if xp is numpy_xp:
        return not array.flags.writeable
    if xp is _ns.cuda:
        return False
    return not array._array.flags.writeable  # array_api_strict keeps a NumPy array inside


def is_contiguous(array):
    xp = namespace(array)
    if xp is numpy_xp or xp is _ns.cuda:
        return array.flags.c_contiguous
    return array._array.flags.c_contiguous  # array_api_strict keeps a NumPy array inside


def contiguous(array):
    """A C-contiguous copy of `array` (or the array itself when it is one)."""
    if is_contiguous(array):
        return array
    xp = namespace(array)
    if xp is numpy_xp:
        return np.ascontiguousarray(array)
    if xp is _ns.cuda:
        return xp.ascontiguousarray(array)
    return xp.reshape(xp.reshape(array, (-1,), copy=True), array.shape)


def reshape_view(array, shape):
    """`array` reshaped without copying, or None when its memory layout does not allow it."""
    if type(array) is np.ndarray:  # (the method: NumPy's function adds a dispatch layer)
        try:
            return array.reshape(shape, copy=False)
        except ValueError:
            return None
    xp = namespace(array)
    try:
        return xp.reshape(array, shape, copy=False)
    except (ValueError, AttributeError):
        return None


def data_pointer(array):
    """The address of the array's first element: CuPy's device pointer, or NumPy's (under
    array_api_strict, that of the NumPy array it wraps)."""
    if is_cupy_array(array):
        return int(array.data.ptr)
    array = getattr(array, "_array", array)
    return int(array.__array_interface__["data"][0])


def fmod(xp, a, b):
    """C's fmod: a - trunc(a / b) * b, exactly, the result with a's sign. The Array API standard has only
    `remainder` (the result with b's sign), from which fmod follows by one correction."""
    if hasattr(xp, "fmod"):
        return xp.fmod(a, b)
    result = xp.remainder(a, b)
    wrong_sign = (result != 0) & ((result < 0) != (a < 0))
    result = xp.where(wrong_sign, result - b, result)
    if is_float(result):  # a zero takes the dividend's sign
        result = xp.where(result == 0, xp.copysign(result, xp.asarray(a, dtype=result.dtype)), result)
    return result


def _polynomial_fit(f, lo, hi, degree):
    """Coefficients (lowest power first) of a polynomial in t that is `f` at lo + (hi - lo) (t + 1) / 2.

    The fit interpolates `f` (Python's exact `math` functions) at Chebyshev nodes of t in [-1, 1]. The
    Chebyshev series is converted to powers of t once, here: for the smooth functions below the power
    coefficients stay below 1 in size, so Horner's rule loses nothing to cancellation.
    """
    nodes = np.cos(np.pi * (np.arange(degree + 1) + 0.5) / (degree + 1))
    values = np.array([f(lo + (hi - lo) * (t + 1) / 2) for t in nodes])
    return [float(c) for c in np.polynomial.chebyshev.cheb2poly(np.polynomial.chebyshev.chebfit(nodes, values, degree))]


def _horner(coefficients, t):
    """sum(c_i t^i) as p = p t + c, two in-place passes per term (any array namespace)."""
    p = t * coefficients[-1]
    p += coefficients[-2]
    for c in coefficients[-3::-1]:
        p *= t
        p += c
    return p


# erf(x) = x A(x^2) for |x| < 2 and 1 - exp(-x^2) B(|x|) for 2 <= |x| < 6; erf(x) = 1 beyond 6, where
# erfc(6) is below half a float64 ulp of 1. A and B are fits in x^2 on [0, 4] and in x on [2, 6], cut
# where their Chebyshev terms drop below the dtype's precision: 18 and 24 terms for float64 (errors
# about 1e-15), 11 and 13 for float32.
_ERF_TERMS = {"float64": (18, 24), "float32": (11, 13)}
_ERF_NEAR = {dtype: _polynomial_fit(lambda u: math.erf(math.sqrt(u)) / math.sqrt(u) if u else 2 / math.sqrt(math.pi),
                                    0.0, 4.0, near - 1) for dtype, (near, _) in _ERF_TERMS.items()}
_ERF_FAR = {dtype: _polynomial_fit(lambda x: math.erfc(x) * math.exp(x * x), 2.0, 6.0, far - 1)
            for dtype, (_, far) in _ERF_TERMS.items()}


def erf(x):
    """The error function, elementwise (the standard has none; exact GELU needs it).

    A large NumPy array is computed in blocks that stay in the cache (parallel.map_blocks): the same
    passes on each block, so the same numbers as in whole-array passes (erf_in_passes).
    """
    xp = namespace(x)
    if xp is _ns.cuda:
        import cupyx.scipy.special

        return cupyx.scipy.special.erf(x)
    if x.ndim == 0:  # NumPy's 0-d arithmetic gives scalars, which the masked write below cannot take
        return xp.reshape(erf(xp.reshape(x, (1,))), ())
    if parallel.in_blocks(x):
        return np.reshape(parallel.map_blocks(erf_in_passes, np.reshape(x, (-1,))), x.shape)
    return erf_in_passes(x)


def erf_in_passes(x):
    """erf(x) of an array of at least one dim, in passes over the whole array (any namespace)."""
    xp = namespace(x)
    precision = "float32" if x.dtype == xp.float32 else "float64"
    u = x * x
    far = u >= 4.0  # |x| >= 2 (x * x rounds to below 4 for every x below 2 in size)
    if xp is numpy_xp:
        np.clip(u, 0.0, 4.0, out=u)  # (array_api_compat's clip costs 2-4x NumPy's on a block)
    else:
        u = xp.clip(u, 0.0, 4.0)  # a NaN stays NaN through clip and the polynomial
    u *= 0.5
    u -= 1.0  # [0, 4] -> [-1, 1]
    result = _horner(_ERF_NEAR[precision], u)
    result *= x  # erf is odd: x A(x^2) has x's sign
    if xp.any(far):  # rare in activations: evaluated on those elements only
        result[far] = _erf_far(xp, x[far], precision)
    return result


def _erf_far(xp, x, precision):
    """erf(x) for 2 <= |x|: 1 - exp(-x^2) B(|x|) with x's sign, and 1 in size beyond 6."""
    a = xp.minimum(xp.abs(x), 6.0)  # (clip's lower bound has nothing to do here)
    t = (a - 4.0) / 2.0  # [2, 6] -> [-1, 1]
    tail = _horner(_ERF_FAR[precision], t)
    tail *= xp.exp(-(a * a))
    return xp.copysign(1.0 - tail, x)


def memory_block(array):
    """The one block of memory that `array` is a view into: (a 1-D uint8 array over the whole block,
    the byte offset of `array`'s first element in it).

    The block is that of the array that owns the memory, at the end of the chain of `.base`: every
    view of it (a transpose, a slice, an expand) finds the same block, as PyTorch's views find the
    same storage. The owner's strides may be negative (a view of foreign memory), so the block starts
    at the owner's lowest byte, not at its first element.
    """
    if is_cupy_array(array):
        kind = type(array)
    else:
        array = getattr(array, "_array", array)  # array_api_strict keeps a NumPy array inside
        kind = np.ndarray
    owner = array
    while True:
        base = owner.base
        if isinstance(base, kind):
            owner = base
        elif isinstance(getattr(base, "base", None), kind):  # NumPy's as_strided: a wrapper around its source
            owner = base.base
        else:
            break
    if owner.size == 0:
        nbytes, lowest = 0, data_pointer(owner)
    else:
        reach = [(n - 1) * s for n, s in zip(owner.shape, owner.strides)]
        lowest = data_pointer(owner) + sum(r for r in reach if r < 0)
        nbytes = sum(abs(r) for r in reach) + owner.itemsize
    # the owner with each dim in increasing addresses: its first element is the block's first byte
    forward = owner[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in owner.strides)]
    if owner.ndim == 0:
        forward = owner.reshape(1)
    whole = _as_strided(forward, (nbytes // owner.itemsize,), (owner.itemsize,))
    return whole.view("uint8"), data_pointer(array) - lowest


def _as_strided(array, shape, strides):
    """A view of `array`'s memory with this shape and these strides (in bytes), NumPy's or CuPy's."""
    if is_cupy_array(array):
        import cupy  # (array_api_compat's cupy namespace has no `lib`)

        return cupy.lib.stride_tricks.as_strided(array, shape=shape, strides=strides)
    return np.lib.stride_tricks.as_strided(array, shape=shape, strides=strides)


def strided_view(array, shape, strides, offset):
    """A view of the memory block `array` lies in (see memory_block): `shape` elements, `strides` and
    `offset` counted in elements of `array`'s dtype from the block's start. The caller checks that
    the view stays inside the block."""
    block, _ = memory_block(array)
    inner = getattr(array, "_array", array)  # array_api_strict keeps a NumPy array inside
    itemsize = inner.dtype.itemsize
    tail = block[offset * itemsize:]
    start = tail[:tail.shape[0] - tail.shape[0] % itemsize].view(inner.dtype)  # whole elements from `offset` on
    view = _as_strided(start, tuple(shape), tuple(s * itemsize for s in strides))
    if inner is not array:
        return type(array)._new(view, device=array.device)
    return view
