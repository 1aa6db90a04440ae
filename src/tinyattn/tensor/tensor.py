"""`Tensor`: an array (NumPy or CuPy) plus what autograd needs to differentiate through it.

A tensor holds its numbers in `.array`. A tensor made by an op that recorded a graph has a `grad_fn`
(the recorded node) and `requires_grad=True`; a tensor you create is a leaf (`grad_fn is None`) and
receives `.grad` when `backward()` reaches it. The methods below mirror PyTorch's; each
differentiable one runs an op from `tinyattn.ops`.
"""

import math
import numbers
import warnings
import weakref

import numpy as np

from .. import autograd, backend, dtypes, missing, numpy_names, ops, printing
from ..errors import BackwardError, DeviceError, ShapeError
from ..tensor_core import Size, TensorCore, _data_device, _host_values, register_tensor_class
from . import creation
from .arguments import _dim, _shape_arg, parse_to_args
from .products import ProductMethods
from .reductions import ReductionMethods
from .shapes import ShapeMethods
from .indexing import IndexingMethods
from .elementwise import ElementwiseMethods
from .inplace import InPlaceMethods


NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead."
)


class Tensor(TensorCore, ElementwiseMethods, ReductionMethods, ProductMethods, ShapeMethods,
             IndexingMethods, InPlaceMethods):
    """A tensor: its numbers (`array`) and its place in the autograd graph (`grad_fn`, `grad`)."""

    __slots__ = ()  # the data and graph slots are TensorCore's (tinyattn/tensor_core.py)

    def __init__(self, *args, device=None):
        """`tinyattn.Tensor(...)`, PyTorch's older constructor: Tensor(2, 3) is a (2, 3) float32 tensor
        (of zeros; PyTorch leaves it unset), Tensor(data) a float32 copy of data, whatever its numbers.
        `tinyattn.tensor(data)` infers the dtype from the data instead, as torch.tensor does."""
        sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
        if not args:
            values = np.zeros(0, dtype=dtypes.default_float.name)
        elif all(isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_)) for n in sizes):
            values = np.zeros(_shape_arg(sizes), dtype=dtypes.default_float.name)
        elif len(args) == 1:
            data = args[0]
            if isinstance(data, (numbers.Number, np.generic)):  # Tensor(2.5): PyTorch takes a number as a size only
                raise TypeError(f"Tensor(data) takes a sequence, got the number {data!r}: use tinyattn.tensor({data!r}) "
                                "for a 0-d tensor")
            values = _host_values(data, data.dtype if isinstance(data, Tensor) else dtypes.default_float)
        else:
            raise TypeError("Tensor(...) takes sizes, as in Tensor(2, 3), or one piece of data, as in "
                            "Tensor([1, 2]); for a dtype of your choice use tinyattn.tensor(data, dtype=...)")
        self._fill_in(values, device or _data_device(args[0] if len(args) == 1 else None))

    def __getattr__(self, name):
        # only reached when the normal lookup fails: a name Tensor lacks says whether PyTorch has it
        if hasattr(type(self), name):  # a slot not yet set, or a property that failed: Python's own miss
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}", name=name, obj=self)
        raise missing.missing_tensor_attribute(self, name)


    # --- what a tensor is ---

    def size(self, dim=None, *, axis=None):
        """The shape as a `tinyattn.Size`, or the size of dimension `dim`."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("size", dim, axis)
        if dim is None:
            return Size(self.array.shape)
        if self.ndim == 0:
            raise IndexError(f"size({dim}) of a 0-d tensor: it has no dims (its size is tinyattn.Size([]))")
        return self.array.shape[_dim(dim, self.ndim)]

    @property
    def ndim(self):
        """The number of dimensions."""
        return self.array.ndim

    def dim(self):
        """The number of dimensions."""
        return self.array.ndim

    ndimension = dim

    def numel(self):
        """The number of elements."""
        return math.prod(self.array.shape)

    nelement = numel

    @property
    def is_cuda(self):
        """Whether the tensor is on a CUDA device."""
        return self.device.type == "cuda"

    def is_floating_point(self):
        """Whether the dtype is a floating-point one (float32 or float64)."""
        return self.dtype.is_floating_point

    def element_size(self):
        """The bytes one element takes (4 for float32)."""
        return self.dtype.itemsize

    def data_ptr(self):
        """The address of the tensor's first element (an int): equal for tensors that start at the same
        memory, as views of one another do; x[1:].data_ptr() is x.data_ptr() + x.element_size()."""
        return backend.data_pointer(self.array)

    @property
    def grad(self):
        """The gradient that backward() accumulated into this leaf (None until then)."""
        if self.grad_fn is not None and not self.retains_grad:
            # backward() fills .grad of leaves only: a common slip, which PyTorch points out
            warnings.warn(NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        # checked here, as PyTorch checks it: a wrong value would only fail later, inside backward()
        if value is self:  # backward() would then add the gradient into the tensor itself
            raise RuntimeError("can't assign a tensor as its own grad: assign a separate tensor "
                               "(w.grad = w.detach().clone()), or None")
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"a tensor's .grad must be a tensor of its shape or None, got a "
                                f"{type(value).__name__}: to clear it, set .grad = None (or call .grad.zero_())")
            if value.array.shape != self.array.shape:
                raise ShapeError(f"the .grad assigned has shape {list(value.shape)}, the tensor {list(self.shape)}: "
                                 "a gradient has the shape of its tensor")
            if value.array.dtype != self.array.dtype:
                raise TypeError(f"the .grad assigned is {value.dtype}, the tensor {self.dtype}: convert it "
                                f"with .to({self.dtype})")
            both_numpy = type(value.array) is np.ndarray and type(self.array) is np.ndarray  # (told at once)
            if not both_numpy and value.device != self.device:
                raise DeviceError(f"the .grad assigned is on {value.device}, the tensor on {self.device}: "
                                  f"move it with .to({str(self.device)!r})")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None  # `del w.grad` clears it, as in PyTorch

    @property
    def retains_grad(self):
        """Whether retain_grad() was called on this non-leaf tensor (backward() then fills its .grad)."""
        node = self.grad_fn
        return node is not None and any(ref() is self for _, ref in node.retained or ())

    def requires_grad_(self, requires_grad=True):
        """In place: sets `requires_grad` (on a leaf) and returns the tensor."""
        self.requires_grad = requires_grad
        return self

    @property
    def data(self):
        """The same numbers without the graph (shares memory), like PyTorch's `.data`."""
        return self.detach()

    @data.setter
    def data(self, other):
        self.array = other.array if isinstance(other, Tensor) else other

    def retain_grad(self):
        """Keep `.grad` for this non-leaf tensor too (e.g. to look at d loss / d attention weights)."""
        if self.grad_fn is None:
            return
        node = self.grad_fn
        node.retained = (node.retained or ()) + ((self.output_nr, weakref.ref(self)),)

    # --- new tensors with this one's dtype and device (unless given), as library code makes them ---

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        """A new tensor of zeros of the given size, with self's dtype and device."""
        return self._new(creation.zeros, size, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        """A new tensor of ones of the given size, with self's dtype and device."""
        return self._new(creation.ones, size, dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """A new tensor of the given size, with self's dtype and device (zeros here; unset in PyTorch)."""
        return self._new(creation.empty, size, dtype, device, requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        """A new tensor of `size` filled with `fill_value`, with self's dtype and device."""
        return self._new(creation.full, (size, fill_value), dtype, device, requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A new leaf tensor holding a copy of `data`, with self's dtype and device."""
        return self._new(creation.tensor, (data,), dtype, device, requires_grad)

    def _new(self, make, args, dtype, device, requires_grad):
        return make(*args, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    def register_hook(self, hook):
        """Call hook(grad) with the gradient of this tensor each time backward computes it; a hook
        that returns a tensor replaces the gradient. Returns a handle: handle.remove() undoes it."""
        if not self.requires_grad:
            raise BackwardError("cannot register a hook on a tensor that does not require grad: "
                                "create it with requires_grad=True, or compute it from one that does")
        if self.grad_fn is None:  # a leaf: the hook runs on the total gradient, before it goes into .grad
            if getattr(self, "_hooks", None) is None:
                self._hooks = []
            hooks, entry = self._hooks, hook
        else:
            if self.grad_fn.hooks is None:
                self.grad_fn.hooks = []
            hooks, entry = self.grad_fn.hooks, (self.output_nr, hook)
        hooks.append(entry)
        return autograd.RemovableHandle(hooks, entry)

    # --- autograd ---

    def backward(self, gradient=None, retain_graph=False):
        """Accumulate the gradient of this tensor into `.grad` of every leaf it depends on."""
        autograd.backward(self, gradient, retain_graph=retain_graph)

    def detach(self):
        """The same numbers, cut from the graph: a tensor that shares memory and needs no grad."""
        t = Tensor._wrap(self.array)
        t._version = self._version  # same memory, same version counter
        return t

    def detach_(self):
        """In place: cuts the tensor from the graph, making it a leaf that needs no grad."""
        self.grad_fn = None
        self._requires_grad = False
        return self

    # --- conversions ---

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise ValueError(
                f"a tensor with {self.numel()} elements cannot be converted to a Python number; "
                "index one element first, or use .tolist()"
            )
        return backend.to_host(self.array).item()

    def tolist(self):
        """The numbers as (nested) Python lists, or a number for a 0-d tensor."""
        return backend.to_host(self.array).tolist()

    def numpy(self):
        """The numbers as a NumPy array sharing memory (CPU tensors that need no grad)."""
        if self.requires_grad:
            raise BackwardError("can't call numpy() on a tensor that requires grad: use tensor.detach().numpy()")
        if self.device.type != "cpu":
            raise TypeError("can't convert a cuda tensor to NumPy: use .cpu() to copy it to the host first")
        return backend.to_host(self.array)

    def __array__(self, dtype=None, copy=None):
        values = self.numpy()
        return values if dtype is None else values.astype(dtype)

    def to(self, *args, **kwargs):
        """to(device), to(dtype), to(device, dtype), to(other_tensor); differentiable.

        copy=True always gives a new tensor; non_blocking is accepted (copies here are synchronous).
        """
        dev, dt = parse_to_args(args, kwargs, ("non_blocking", "copy"))
        result = self
        if dt is not None and dt is not self.dtype:
            result = ops.ToDtype.apply(result, dt)
        if dev is not None and backend.device(dev) != self.device:
            result = ops.ToDevice.apply(result, backend.device(dev))
        if kwargs.get("copy") and result is self:
            result = self.clone()
        return result

    def pin_memory(self):
        """PyTorch pins host memory for faster copies to a GPU. tinyattn has no pinned memory (CuPy
        copies from ordinary memory, to the same values): with a GPU this returns the tensor itself;
        without one it raises, as PyTorch does."""
        if not backend.cuda_is_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        return self

    def is_pinned(self):
        """Whether the memory is pinned (page-locked): always False here."""
        return False

    def cpu(self):
        """The tensor on the CPU (a copy from a GPU)."""
        return self.to("cpu")

    def cuda(self, device=None):
        """The tensor on a CUDA device (needs CuPy; a copy from the CPU)."""
        return self.to("cuda" if device is None else backend.Device("cuda", device))

    def float(self):
        """The tensor as float32."""
        return self.to(dtypes.float32)

    def double(self):
        """The tensor as float64."""
        return self.to(dtypes.float64)

    def half(self):  # refused with a message that says what to do (see dtypes.computable)
        """Refused: tinyattn has no float16 tensors; the error says to use float32."""
        return self.to(dtypes.float16)

    def bfloat16(self):
        """Refused: tinyattn has no bfloat16 tensors; the error says to use float32."""
        return self.to(dtypes.bfloat16)

    def long(self):
        """The tensor as int64."""
        return self.to(dtypes.int64)

    def int(self):
        """The tensor as int32."""
        return self.to(dtypes.int32)

    def bool(self):
        """The tensor as bool: True where an element is nonzero."""
        return self.to(dtypes.bool_)

    def byte(self):
        """The tensor as uint8."""
        return self.to(dtypes.uint8)

    def char(self):
        """The tensor as int8."""
        return self.to(dtypes.int8)

    def short(self):
        """The tensor as int16."""
        return self.to(dtypes.int16)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """With no dtype, PyTorch's name of the tensor's type ("torch.FloatTensor", "torch.cuda.LongTensor"),
        spelled as PyTorch spells it so that programs comparing it with those strings keep working.
        With a dtype (tinyattn.int64), a legacy type (tinyattn.LongTensor) or such a name, the tensor
        converted to it (itself when it has that type already)."""
        if dtype is None:
            where = "torch.cuda." if self.device.type == "cuda" else "torch."
            return where + dtypes.LEGACY_NAMES[self.dtype]
        if isinstance(dtype, str):
            prefix, _, name = dtype.rpartition(".")
            if prefix not in ("torch", "tinyattn", "torch.cuda", "tinyattn.cuda") or name not in dtypes.BY_LEGACY_NAME:
                raise ValueError(f"invalid type: {dtype!r} (a type name is spelled 'torch.LongTensor')")
            device = "cuda" if prefix.endswith("cuda") else "cpu"
            return self.to(device, dtypes.BY_LEGACY_NAME[name])
        if not isinstance(dtype, dtypes.dtype):
            dtype = getattr(dtype, "dtype", None)  # a legacy type: tinyattn.LongTensor
            if not isinstance(dtype, dtypes.dtype):
                raise TypeError("type() takes a dtype (tinyattn.int64), a legacy type (tinyattn.LongTensor) or "
                                "its name ('torch.LongTensor')")
        return self.to(dtype)

    def type_as(self, other):
        """The tensor in `other`'s dtype."""
        return self.to(other.dtype)

    def contiguous(self):
        """The tensor with its elements in row-major order: self when already so, else a copy."""
        if backend.is_contiguous(self.array):
            return self
        return ops.Contiguous.apply(self)

    def is_contiguous(self):
        """Whether the elements lie in row-major order in memory."""
        return backend.is_contiguous(self.array)

    # --- printing ---

    def __repr__(self):
        return printing.format_tensor(
            backend.to_host(self.array),
            dtype_name=repr(self.dtype),
            show_dtype=printing.dtype_is_shown(np.dtype(self.dtype.name)),
            device=None if self.device.type == "cpu" else str(self.device),
            grad_fn=None if self.grad_fn is None else self.grad_fn.name(),
            requires_grad=self.requires_grad and self.grad_fn is None,
        )

    __str__ = __repr__

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"a format spec ({spec!r}) applies to a single number: format a 0-d tensor or x.item(), "
                            f"not a tensor of shape {list(self.shape)}")
        return repr(self)

    __hash__ = object.__hash__  # tensors are compared elementwise, hashed by identity
    __array_ufunc__ = None  # np.float64(2) * t: NumPy defers to Tensor.__rmul__ and a tensor comes back

    # --- Python protocols ---

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.array.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.array.shape[0]))

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self.numel()} elements is ambiguous: "
                "use .any() or .all()"
            )
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        value = self.item()
        if isinstance(value, float) and not math.isfinite(value):
            error = ValueError if math.isnan(value) else OverflowError  # Python's and PyTorch's types
            raise error(f"cannot convert {value} to an integer")
        return int(value)

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())


register_tensor_class(Tensor)  # the engine's ops now give back tinyattn.Tensor (see tensor_core.py)
