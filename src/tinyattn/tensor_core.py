"""The tensor's core: its numbers, their dtype and device, and the version counter that in-place ops count.

`TensorCore` is what the engine below `tinyattn.tensor` knows of a tensor: autograd (tinyattn/autograd/)
records and walks the graph with only these slots and properties, and the ops never see a tensor at
all. The class users meet, `tinyattn.Tensor` (tinyattn/tensor/), adds the methods on top and registers
itself here (`register_tensor_class`): from then on the engine's new tensors are made as that class. It
is the one place where the loop that eager autograd needs (a Tensor method runs a Function; a
Function's apply makes Tensors) is closed.

After the class, how data becomes numbers (what `tinyattn.tensor(data)` runs): PyTorch's dtype
inference for nested lists, NumPy arrays and Python numbers, and its errors for data that is not a grid.
"""

import math

import numpy as np

from . import backend, dtypes
from .errors import BackwardError


class Size(tuple):
    """A tensor's shape: a tuple that prints like PyTorch's `torch.Size([6, 2])`."""

    __module__ = "tinyattn"

    def __repr__(self):
        return f"tinyattn.Size({list(self)})"

    __str__ = __repr__

    def __getitem__(self, key):  # x.shape[1:] is a Size too
        item = tuple.__getitem__(self, key)
        return Size(item) if isinstance(key, slice) else item

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def numel(self):
        return math.prod(self)


_NUMPY_SCALARS = {np.float32, np.float64, np.int32, np.int64, np.bool_, np.uint8, np.int8, np.int16}


class TensorCore:
    """A tensor's data and its place in the graph; `tinyattn.Tensor` builds every method on these."""

    # a dict, so that the public slots have docstrings (help(Tensor.grad), the reference)
    __slots__ = {"array": "The numbers: a NumPy array on the CPU, a CuPy array on a GPU.",
                 "_requires_grad": None,
                 "_grad": None,
                 "grad_fn": "The graph node of the op that made this tensor (None for a leaf).",
                 "output_nr": "Which output of its grad_fn this tensor is (0 for most ops).",
                 "_version": None, "_base": None, "_view_version": None, "_view_steps": None, "_hooks": None,
                 "__weakref__": None}

    @classmethod
    def _from_data(cls, data, dtype=None, device=None, requires_grad=False):
        """A new leaf holding a copy of `data`, with tinyattn.tensor()'s dtype inference (what the
        library uses inside; Tensor(data) keeps PyTorch's older float32 meaning)."""
        t = object.__new__(cls)
        t._fill_in(_host_values(data, dtype), device or _data_device(data))
        t.requires_grad = requires_grad
        return t

    def _fill_in(self, host_values, device):
        self.array = backend.from_host(host_values, device)
        self._grad = None
        self.grad_fn = None
        self.output_nr = 0
        self._version = [0]
        self._base = None
        self._hooks = None  # set, not left missing: a miss would go through __getattr__ in every backward
        self._requires_grad = False

    @classmethod
    def _wrap(cls, array, requires_grad=False, grad_fn=None, output_nr=0):
        """A tensor around an existing array (the engine's fast path: no copy, no checks)."""
        t = object.__new__(cls)
        if type(array) in _NUMPY_SCALARS:  # NumPy gives scalars from 0-d operations
            array = np.asarray(array)
        t.array = array
        t._requires_grad = requires_grad
        t._grad = None
        t.grad_fn = grad_fn
        t.output_nr = output_nr
        t._version = [0]
        t._base = None
        t._hooks = None
        return t

    @property
    def shape(self):
        """The size of each dimension, as a `tinyattn.Size`."""
        return Size(self.array.shape)

    @property
    def dtype(self):
        """The element type: `tinyattn.float32`, `tinyattn.int64`, ..."""
        return backend.dtype_of(self.array)

    @property
    def device(self):
        """Where the tensor's numbers are: `device(type='cpu')` or a CUDA device."""
        return backend.device_of(self.array)

    @property
    def requires_grad(self):
        """Whether autograd records the ops on this tensor and gives it a gradient."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if value and not self.dtype.is_floating_point:
            raise TypeError(
                f"only tensors of floating point dtype can require gradients, this one is {self.dtype}: "
                "convert it with .float() first"
            )
        if self.grad_fn is not None and not value:
            raise BackwardError(
                "you can only change requires_grad of leaf tensors; use .detach() to get a tensor "
                "without a graph"
            )
        self._requires_grad = bool(value)

    @property
    def is_leaf(self):
        """Whether the tensor is a leaf of the graph: made by you, not by a recorded op."""
        return self.grad_fn is None

    def _bump_version(self):
        """Count a change made in place to this tensor's memory: the version counter it shares with its root
        and views goes up, so that a backward that saved any of them refuses the changed numbers."""
        self._version[0] += 1


# The class the engine makes new tensors as: TensorCore until tinyattn/tensor/ registers tinyattn.Tensor
# (which it does as it is imported, before any op runs). autograd calls `wrap` and `from_data`.
wrap = TensorCore._wrap
from_data = TensorCore._from_data


def register_tensor_class(cls):
    """Make the engine's new tensors instances of `cls` (tinyattn.Tensor, a subclass of TensorCore)."""
    global wrap, from_data
    wrap, from_data = cls._wrap, cls._from_data


# --- how data becomes numbers (TensorCore._from_data and tinyattn.tensor(data)) ---

def _data_device(data):
    """Where data lives: a tensor's or a CuPy array's device, otherwise the CPU."""
    if isinstance(data, TensorCore):
        return data.device
    return backend.device_of(data) if backend.is_cupy_array(data) else backend.CPU


def _numpy_dtype(numpy_dtype):
    """The dtype of a tensor made from NumPy data of this dtype (PyTorch's, among tinyattn's five)."""
    if numpy_dtype.kind == "b":
        return dtypes.bool_
    if numpy_dtype.kind == "f":  # float16 has no tinyattn dtype: float32 holds it exactly
        return dtypes.float64 if numpy_dtype.itemsize >= 8 else dtypes.float32
    if numpy_dtype.kind in "iu":  # uint16, uint32 and uint64 (which PyTorch barely computes with) as int64
        return _SMALL_INTEGERS.get(numpy_dtype.name, dtypes.int64)
    raise TypeError(f"cannot make a tensor from NumPy data of dtype {numpy_dtype}: tinyattn has "
                    "float32, float64, int64, int32, int16, int8, uint8 and bool")


_SMALL_INTEGERS = {"int32": dtypes.int32, "int16": dtypes.int16, "int8": dtypes.int8, "uint8": dtypes.uint8}


_PYTHON_NUMBER_DTYPES = {float: lambda: dtypes.default_float, int: lambda: dtypes.int64, bool: lambda: dtypes.bool_}


def _inferred_dtype(data):
    """PyTorch's dtype for data: the promotion of the dtypes of the numbers in it.

    A Python float counts as float32, an int as int64, a bool as bool; a NumPy scalar or array or a
    tensor counts as its own dtype. So [0.1] is float32 but [np.float64(0.1)] float64, as in PyTorch.
    """
    simple = _PYTHON_NUMBER_DTYPES.get(type(data))
    if simple is not None:  # a single Python number: the common case, answered at once
        return simple()
    if isinstance(data, TensorCore):
        return data.dtype
    if isinstance(data, (np.ndarray, np.generic)) or backend.is_cupy_array(data):
        return _numpy_dtype(np.dtype(data.dtype))
    found = set()
    pending = [data if isinstance(data, (list, tuple, range)) else [data]]
    while pending:
        items = pending.pop()
        for kind in set(map(type, items)):  # one look per kind of item, not one per number
            if issubclass(kind, (list, tuple, range)):
                pending.extend(item for item in items if type(item) is kind)
            elif issubclass(kind, (np.ndarray, TensorCore)):  # each has its own dtype
                found.update(_inferred_dtype(item) for item in items if type(item) is kind)
            elif issubclass(kind, np.generic):  # np.float64(0.1): the kind is the dtype
                found.add(_numpy_dtype(np.dtype(kind)))
            elif issubclass(kind, bool):
                found.add(dtypes.bool_)
            elif issubclass(kind, int):
                found.add(dtypes.int64)
            elif issubclass(kind, float):
                found.add(dtypes.default_float)
            else:
                raise TypeError(f"cannot make a tensor from {kind.__name__} data: use numbers, (nested) "
                                "lists of numbers, NumPy arrays or tensors")
    result = found.pop() if found else dtypes.default_float  # tensor([]) is float32
    for d in found:
        result = dtypes.promote(result, d)
    return result


def _check_fits(values, target):
    """Numbers too large for an integer dtype raise, as in PyTorch (NumPy would wrap them around)."""
    if not values.size or target.is_floating_point or target is dtypes.bool_ or values.dtype.kind == "b":
        return
    if values.dtype.kind in "iu" and np.can_cast(values.dtype, target.name):
        return  # an int8 ... int64 array into int64: always fits
    info = np.iinfo(target.name)
    if values.dtype.kind == "f":  # info.max + 1 (2**63, 2**31) is exact in floating point; max is not
        bad = np.isnan(values) | (values < info.min) | (values >= info.max + 1)
    else:
        bad = (values < info.min) | (values > info.max)
    if bad.any():
        raise OverflowError(
            f"{values[bad].flat[0]} does not fit in a {target} tensor (from {info.min} to {info.max}): "
            "use a float dtype, or smaller numbers"
        )


def _host_values(data, dtype=None):
    """Python/NumPy data as a new NumPy array of `dtype`, or of PyTorch's dtype for the data.

    The requested dtype is applied to the numbers as given (a Python float is a float64): going
    through float32 first would make tensor([0.1], dtype=float64) 0.10000000149011612.
    Always a copy: a tensor made from data owns its numbers (`from_numpy` is the sharing one).
    """
    if isinstance(data, TensorCore):
        values = np.array(backend.to_host(data.array))
        return values if dtype is None else values.astype(dtypes.computable(dtype).name)
    if backend.is_cupy_array(data):
        data = backend.to_host(data)  # its values, then treated as NumPy data (float64 stays float64)
    inferred = _inferred_dtype(data)  # also refuses data that is not numbers
    try:
        values = np.array(data)  # Python floats become float64 and Python ints int64: nothing rounded yet
    except ValueError:  # NumPy's "inhomogeneous shape": say where, as PyTorch does
        _check_grid(data, _grid_shape(data))
        raise
    target = dtypes.computable(dtype or inferred)
    _check_fits(values, target)
    return values.astype(target.name, copy=False)


def _is_sequence(item):
    return isinstance(item, (list, tuple)) or (isinstance(item, (np.ndarray, TensorCore)) and item.ndim > 0)


def _grid_shape(data):
    """The shape nested sequences claim, read along their first entries (PyTorch's way)."""
    shape = []
    while _is_sequence(data):
        shape.append(len(data))
        if not len(data):
            break
        data = data[0]
    return shape


def _check_grid(data, shape, dim=0):
    """PyTorch's errors for nested sequences that are not a grid: a number where the first entry has a
    sequence is a TypeError, a sequence of another length a ValueError; both say the dim."""
    if dim == len(shape):
        if _is_sequence(data):
            raise TypeError(f"tensor(data): the data is not a grid of numbers: at dim {dim} an entry is a sequence "
                            f"where the first ones are numbers (shape {shape} so far): give every entry the same shape")
        return
    if not _is_sequence(data):
        raise TypeError(f"tensor(data): the data is not a grid of numbers: at dim {dim} an entry is a number "
                        f"({data!r}) where the first ones are sequences of length {shape[dim]}: give every entry "
                        "the same shape")
    if len(data) != shape[dim]:
        raise ValueError(f"tensor(data): expected a sequence of length {shape[dim]} at dim {dim} (as the first one), "
                         f"got {len(data)}: give every entry the same shape")
    for item in data:
        _check_grid(item, shape, dim + 1)
