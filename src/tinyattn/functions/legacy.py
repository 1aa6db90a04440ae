"""PyTorch's legacy tensor types and `Variable`, kept for the older teaching code that still uses them.

    tinyattn.LongTensor([1, 2, 3])        # tinyattn.tensor([1, 2, 3], dtype=tinyattn.int64)
    tinyattn.FloatTensor(2, 3)            # a float32 tensor of shape (2, 3) (zeros: PyTorch's is uninitialised)
    isinstance(x, tinyattn.LongTensor)    # True for an int64 tensor on the CPU, as in PyTorch
    tinyattn.autograd.Variable(x, requires_grad=True)   # x itself, as a new leaf (Variables are tensors now)

Nothing here is on the engine's path: each name is a small door onto `tinyattn.tensor` and `empty`.
"""

import math
import warnings

import numpy as np

from .. import dtypes
from ..tensor import Size, Tensor
from ..tensor.creation import _from_host, empty, tensor


class TensorType(type):
    """The type of tinyattn.FloatTensor and its kin: calling one makes a CPU tensor of its dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __call__(cls, *args, device=None):
        """FloatTensor() is empty; FloatTensor(2, 3) or FloatTensor(Size([2, 3])) has that shape;
        FloatTensor(data) holds the data (a list, a NumPy array, a tensor of this dtype)."""
        if not args:
            return empty(0, dtype=cls.dtype, device=device)
        if (len(args) == 1 and isinstance(args[0], Size)) or all(type(a) is int for a in args):
            sizes = tuple(args[0]) if isinstance(args[0], Size) else args
            if any(n < 0 for n in sizes):
                raise ValueError(f"{cls.__name__}: negative dimension in size {list(sizes)}")
            return empty(*sizes, dtype=cls.dtype, device=device)
        if len(args) > 1:
            raise TypeError(f"{cls.__name__} takes sizes (ints) or one sequence of data, got {args!r}")
        data = args[0]
        if isinstance(data, Tensor):
            if data.dtype is not cls.dtype:
                raise TypeError(f"{cls.__name__} expected a {cls.dtype} tensor, got a {data.dtype} one: "
                                f"convert it with .type(tinyattn.{cls.__name__}) or .to({cls.dtype})")
            return data.detach()  # the same numbers, as PyTorch's shares them
        if isinstance(data, (int, float, bool)):
            raise TypeError(f"{cls.__name__}: data must be a sequence (got {type(data).__name__}); "
                            f"for a shape use {cls.__name__}(n), for one number {cls.__name__}([x])")
        return tensor(data, dtype=cls.dtype, device=device)

    def __repr__(cls):
        return f"<class 'tinyattn.{cls.__name__}'>"


def _legacy_type(d):
    return TensorType(dtypes.LEGACY_NAMES[d], (), {"dtype": d, "__module__": "tinyattn",
                                                   "__doc__": f"The legacy name of a {d} tensor (CPU)."})


FloatTensor = _legacy_type(dtypes.float32)
DoubleTensor = _legacy_type(dtypes.float64)
LongTensor = _legacy_type(dtypes.int64)
IntTensor = _legacy_type(dtypes.int32)
ShortTensor = _legacy_type(dtypes.int16)
CharTensor = _legacy_type(dtypes.int8)
ByteTensor = _legacy_type(dtypes.uint8)
BoolTensor = _legacy_type(dtypes.bool_)


class _VariableType(type):
    def __instancecheck__(cls, obj):  # every tensor is a Variable, as in PyTorch
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableType):
    """`Variable(x, requires_grad=False)`: PyTorch before 0.4 wrapped tensors in Variables to record
    gradients; now a tensor does that itself, and Variable(x) gives x's numbers as a new leaf."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with tinyattn.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        return data.detach().requires_grad_(requires_grad)


def range(start, end, step=1, dtype=None, device=None, requires_grad=False):  # noqa: A001  (PyTorch's name)
    """Deprecated in PyTorch: start, start + step, ... up to `end` *included*, float32 by default (even for
    integer bounds). Use tinyattn.arange, which leaves `end` out, as Python's range does."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if dtype is dtypes.bool_:
        raise TypeError("range makes numbers, not bools: use a number dtype")
    if not (math.isfinite(start) and math.isfinite(end)) or math.isnan(step):
        raise ValueError(f"range: unsupported range from {start} to {end} by {step}: the bounds must be finite")
    if step == 0:
        raise ValueError("range: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"range: upper bound and lower bound inconsistent with step sign (from {start} to {end} "
                         f"by {step})")
    count = math.floor((end - start) / step) + 1
    values = start + np.arange(count, dtype=np.float64) * step  # in float64, then the dtype (as PyTorch)
    return _from_host(values, dtype or dtypes.default_float, device, requires_grad)
