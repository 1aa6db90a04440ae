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

from . import backend, dtypes, missing, numpy_names, printing, return_types
from .errors import BackwardError, DeviceError, ShapeError
from .tensor_core import (Size, TensorCore, _check_fits, _data_device, _host_values, _inferred_dtype,  # noqa: F401
                          register_tensor_class)



NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead."
)
SEQUENCE_KEY = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated: PyTorch will read it as a tensor "
    "index, x[torch.tensor(seq)], which will result either in an error or a different result; use x[tuple(seq)] "
    "instead of x[seq]"
)
MaxResult = return_types.named_result("max", ["values", "indices"])
MinResult = return_types.named_result("min", ["values", "indices"])
TopkResult = return_types.named_result("topk", ["values", "indices"])
SortResult = return_types.named_result("sort", ["values", "indices"])



class Tensor(TensorCore):
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
        return self._new(functions.zeros, size, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        """A new tensor of ones of the given size, with self's dtype and device."""
        return self._new(functions.ones, size, dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """A new tensor of the given size, with self's dtype and device (zeros here; unset in PyTorch)."""
        return self._new(functions.empty, size, dtype, device, requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        """A new tensor of `size` filled with `fill_value`, with self's dtype and device."""
        return self._new(functions.full, (size, fill_value), dtype, device, requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A new leaf tensor holding a copy of `data`, with self's dtype and device."""
        return self._new(functions.tensor, (data,), dtype, device, requires_grad)

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

    # --- how the numbers lie in memory: a window (offset, strides) onto a storage that views share ---

    def stride(self, dim=None, *, axis=None):
        """How many elements of the storage one step along each dim skips (a tuple), or along `dim`.

        A (3, 4) tensor made at once has strides (4, 1); its transpose (1, 4): the same storage read
        in another order. An expand()ed dim has stride 0: all its elements are one place in memory.
        """
        if axis is not None:
            dim = numpy_names.dim_or_axis("stride", dim, axis)
        array = self.array
        strides = list(_storage.storage_geometry(array)[2] if type(array) is not np.ndarray
                       else (s // array.itemsize for s in array.strides))
        empty = 0 in array.shape
        for d in reversed(range(len(strides))):
            if strides[d] == 0 and (array.shape[d] == 1 or empty):
                # a new dim of size 1 (x[None]): NumPy gives it stride 0, PyTorch the one unsqueeze gives;
                # NumPy gives the dims of an empty array stride 0 too, PyTorch those of a fresh tensor
                nxt = d + 1 < len(strides)
                strides[d] = (max(array.shape[d + 1], 1) if empty else array.shape[d + 1]) * strides[d + 1] if nxt else 1
        if dim is None:
            return tuple(strides)
        if self.ndim == 0:
            raise IndexError(f"stride({dim}) of a 0-d tensor: it has no dims (its stride() is ())")
        return strides[_dim(dim, self.ndim)]

    def storage_offset(self):
        """Where the tensor's first element is in its storage, in elements (x[1].storage_offset() is
        the length of a row of x)."""
        return _storage.storage_geometry(self.array)[1]

    def storage(self):
        """The elements of the memory this tensor views, in its dtype (a `TypedStorage`): the same
        storage for the tensor and its views; writing into it changes them. PyTorch warns once that
        TypedStorage is deprecated; `untyped_storage()` is the bytes, without the warning."""
        _storage.warn_typed_storage()
        return _storage.TypedStorage(_storage.storage_geometry(self.array)[0], self.dtype)

    def untyped_storage(self):
        """The bytes of the memory this tensor views (an `UntypedStorage`), shared with its views."""
        return _storage.UntypedStorage(_storage.storage_geometry(self.array)[0])

    @property
    def nbytes(self):
        """The bytes the tensor's elements take: numel() * element_size()."""
        return self.numel() * self.dtype.itemsize

    @property
    def itemsize(self):
        """The bytes one element takes (4 for float32)."""
        return self.dtype.itemsize

    def select(self, dim=None, index=None, *, axis=None):
        """The slice at `index` along `dim`, without that dim: a view (x.select(0, i) is x[i])."""
        dim = _dim(numpy_names.required_dim("select", dim, axis), self.ndim)
        if index is None:
            raise TypeError("select() missing 1 required argument: 'index'")
        return self[(slice(None),) * dim + (_int_index(index),)]

    def movedim(self, source, destination):
        """A view with dim(s) `source` moved to `destination`, the others in their order."""
        if isinstance(source, int) != isinstance(destination, int):
            raise TypeError(f"movedim() takes two ints or two tuples of ints, got {type(source).__name__} and "
                            f"{type(destination).__name__}")
        wrap = max(self.ndim, 1)  # a 0-d tensor takes dim 0 (and -1), as in PyTorch
        sources = [_dim(d, wrap) for d in ((source,) if isinstance(source, int) else source)]
        targets = [_dim(d, wrap) for d in ((destination,) if isinstance(destination, int) else destination)]
        if len(sources) != len(targets):
            raise ValueError(f"movedim: Invalid source or destination dims: source ({list(sources)} dims) should "
                             f"contain the same number of dims as destination ({list(targets)} dims)")
        if len(set(sources)) != len(sources) or len(set(targets)) != len(targets):
            raise ValueError("movedim: repeated dim in source or destination")
        if self.ndim == 0:
            return self.view(())
        order = [None] * self.ndim
        for s, t in zip(sources, targets):
            order[t] = s
        rest = iter(d for d in range(self.ndim) if d not in sources)
        return self.permute(*[d if d is not None else next(rest) for d in order])

    moveaxis = movedim

    def as_strided(self, size, stride, storage_offset=None):
        """A view of this tensor's storage with the sizes, strides and offset given (in elements; the
        offset is this tensor's own unless given). Every element must lie inside the storage."""
        size, stride = tuple(_int_index(n) for n in size), tuple(_int_index(s) for s in stride)
        _, own_offset, _ = _storage.storage_geometry(self.array)
        offset = own_offset if storage_offset is None else _int_index(storage_offset)
        block_size = _storage.storage_geometry(self.array)[0].shape[0] // self.dtype.itemsize
        _storage.check_fits(size, stride, offset, block_size, self.dtype.itemsize)
        root = self if self._base is None else self._base
        if autograd.grad_mode.enabled and self.requires_grad and not (
                backend.is_contiguous(root.array) and root.storage_offset() == 0 and root.numel() == block_size):
            raise RuntimeError("as_strided of a tensor that requires grad needs that tensor's root to own its whole "
                               "storage in order (a fresh tensor, not a slice, detach() or from_numpy view): take "
                               "it from a .clone() of the tensor")
        return _storage.AsStrided.apply(self, size, stride, offset - own_offset)

    def unfold(self, dimension, size, step):
        """A view of every slice of length `size` along `dimension`, `step` apart, as a new last dim
        (sliding windows: torch.arange(8.).unfold(0, 3, 2) has rows [0, 1, 2], [2, 3, 4], [4, 5, 6])."""
        dim = _dim(dimension, max(self.ndim, 1))
        length = self.array.shape[dim] if self.ndim else 1
        if size > length:
            raise RuntimeError(f"maximum size for tensor at dimension {dim} is {length} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        if self.ndim == 0:  # a 0-d tensor: its one element as a window of size 1
            return self.as_strided((size,), (1,))
        strides, shape = self.stride(), list(self.array.shape)
        shape[dim] = (length - size) // step + 1
        new_strides = list(strides)
        new_strides[dim] = strides[dim] * step
        return self.as_strided(shape + [size], new_strides + [strides[dim]])

    def __contains__(self, element):
        """`value in x`: whether some element of x equals `value` (a number, or a tensor compared with
        x by broadcasting, as `(value == x).any()`); `True in x.isnan()` asks whether x has a NaN."""
        if not isinstance(element, (Tensor, numbers.Number, np.generic)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element)}.")
        return bool((element == self).any())

    def clone(self):
        """A copy with its own memory, recorded in the graph (the gradient flows back to self)."""
        return ops.Clone.apply(self)

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

    # --- arithmetic (differentiable, with PyTorch's type promotion) ---

    def __add__(self, other):
        return _binary(ops.Add, self, other)

    def __radd__(self, other):  # 1 + x is x.add(1) in PyTorch: the tensor is the op's first input
        return _binary(ops.Add, self, other)

    def __sub__(self, other):  # _promote refuses a bool operand, as PyTorch does
        return _binary(ops.Sub, self, other)

    def __rsub__(self, other):
        return _binary(ops.Sub, other, self)

    def __mul__(self, other):
        """self * other, elementwise, with broadcasting."""
        return _binary(ops.Mul, self, other)

    def __rmul__(self, other):  # 2 * x is x.mul(2): grad_fn.next_functions lists x first, as in PyTorch
        return _binary(ops.Mul, self, other)

    def __truediv__(self, other):
        return _binary(ops.Div, self, other)

    def __rtruediv__(self, other):
        return _binary(ops.Div, other, self)

    def __pow__(self, other):
        """self ** other, elementwise, with broadcasting."""
        return _binary(ops.Pow, self, other)

    def __rpow__(self, other):
        return _binary(ops.Pow, other, self)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __neg__(self):
        _check_no_bool_negation(self)
        return ops.Neg.apply(self)

    def __pos__(self):
        _check_not_bool(self, "the `+` operator")
        return self

    def __abs__(self):
        return self.abs()

    def add(self, other, *, alpha=1):
        """self + alpha * other, elementwise, with broadcasting."""
        return self + (other if alpha == 1 else other * alpha)

    def sub(self, other, *, alpha=1):
        """self - alpha * other, elementwise, with broadcasting."""
        return self - (other if alpha == 1 else other * alpha)

    mul = __mul__
    pow = __pow__

    def div(self, other, *, rounding_mode=None):
        """self / other; rounding_mode "trunc" rounds the quotient toward zero, "floor" down."""
        if rounding_mode is None:
            return self / other
        if rounding_mode == "floor":
            return self // other
        if rounding_mode == "trunc":
            if result_dtype(self, other).is_floating_point:
                return (self / other).trunc()
            quotient = self.abs() // (other.abs() if isinstance(other, Tensor) else abs(other))
            return quotient * (self.sign() * (other.sign() if isinstance(other, Tensor) else (other > 0) - (other < 0)))
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"{rounding_mode!r}")

    def __floordiv__(self, other):
        return _no_grad_binary(_floor_divide, self, other)

    def __rfloordiv__(self, other):
        return _no_grad_binary(_floor_divide, other, self)

    def fmod(self, other):
        """The remainder of self / other truncated toward zero (C's fmod: the sign of self); differentiable.
        `%` is Python's remainder instead (the sign of other)."""
        if not self.dtype.is_floating_point and not (isinstance(other, Tensor) and other.dtype.is_floating_point) \
                and not isinstance(other, float):
            _check_integer_divisor(*_promoted_arrays(self, other), "fmod")
        return _binary(ops.Fmod, self, other)

    def __mod__(self, other):
        return _no_grad_binary(_remainder, self, other)

    def __rmod__(self, other):
        return _no_grad_binary(_remainder, other, self)

    # in-place arithmetic: `x += y` changes x's memory, like PyTorch
    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __ipow__(self, other):
        return self.pow_(other)

    # without these, Python would run `x = x // y`: a new tensor, and x's other names would not see it
    def __ifloordiv__(self, other):
        return self._inplace_no_grad(Tensor.__floordiv__, other)

    def __imod__(self, other):
        return self._inplace_no_grad(Tensor.__mod__, other)

    def __iand__(self, other):
        return self._inplace_no_grad(Tensor.__and__, other)

    def __ior__(self, other):
        return self._inplace_no_grad(Tensor.__or__, other)

    def __ixor__(self, other):
        return self._inplace_no_grad(Tensor.__xor__, other)

    def add_(self, other, alpha=1):
        """In place: self += alpha * other."""
        return self._inplace(ops.Add, _inplace_operand(self, other if alpha == 1 else other * alpha))

    def sub_(self, other, alpha=1):
        """In place: self -= alpha * other."""
        _check_no_bool_subtraction(self, other)
        return self._inplace(ops.Sub, _inplace_operand(self, other if alpha == 1 else other * alpha))

    def mul_(self, other):
        """In place: self *= other."""
        return self._inplace(ops.Mul, _inplace_operand(self, other))

    def div_(self, other):
        """In place: self /= other."""
        return self._inplace(ops.Div, _inplace_operand(self, other))

    def pow_(self, other):
        """In place: self **= other."""
        return self._inplace(ops.Pow, _inplace_operand(self, other))

    # --- comparisons and logic (no gradient) ---

    def __eq__(self, other):
        """Elementwise self == other: a bool tensor (with broadcasting)."""
        return _no_grad_binary(lambda a, b: a == b, self, other)

    def __ne__(self, other):
        """Elementwise self != other: a bool tensor (with broadcasting)."""
        return _no_grad_binary(lambda a, b: a != b, self, other)

    def __lt__(self, other):
        """Elementwise self < other: a bool tensor (with broadcasting)."""
        return _no_grad_binary(lambda a, b: a < b, self, other)

    def __le__(self, other):
        """Elementwise self <= other: a bool tensor (with broadcasting)."""
        return _no_grad_binary(lambda a, b: a <= b, self, other)

    def __gt__(self, other):
        """Elementwise self > other: a bool tensor (with broadcasting)."""
        return _no_grad_binary(lambda a, b: a > b, self, other)

    def __ge__(self, other):
        """Elementwise self >= other: a bool tensor (with broadcasting)."""
        return _no_grad_binary(lambda a, b: a >= b, self, other)

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__

    def __and__(self, other):
        return _no_grad_binary(_bitwise(lambda a, b: a & b, "&"), self, other)

    def __or__(self, other):
        return _no_grad_binary(_bitwise(lambda a, b: a | b, "|"), self, other)

    def __xor__(self, other):
        return _no_grad_binary(_bitwise(lambda a, b: a ^ b, "^"), self, other)

    def __invert__(self):
        xp = backend.namespace(self.array)
        _check_bitwise("~", self.array)
        return Tensor._wrap(xp.logical_not(self.array) if self.dtype is dtypes.bool_ else ~self.array)

    def logical_not(self):
        """Elementwise NOT: True where the element is zero (False)."""
        return Tensor._wrap(backend.namespace(self.array).logical_not(self.array))

    def isnan(self):
        """Elementwise: whether the element is NaN."""
        return Tensor._wrap(backend.namespace(self.array).isnan(self.array))

    def isinf(self):
        """Elementwise: whether the element is +inf or -inf."""
        return Tensor._wrap(backend.namespace(self.array).isinf(self.array))

    def isfinite(self):
        """Elementwise: whether the element is neither infinite nor NaN."""
        return Tensor._wrap(backend.namespace(self.array).isfinite(self.array))

    def any(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Whether any element is true (nonzero), over all elements or along `dim`."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("any", dim, keepdim, axis, keepdims)
        xp = backend.namespace(self.array)
        return Tensor._wrap(xp.any(self.array, axis=_dims_or_none(dim, self.ndim), keepdims=keepdim))

    def all(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Whether every element is true (nonzero), over all elements or along `dim`."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("all", dim, keepdim, axis, keepdims)
        xp = backend.namespace(self.array)
        return Tensor._wrap(xp.all(self.array, axis=_dims_or_none(dim, self.ndim), keepdims=keepdim))

    def equal(self, other):
        """Whether the two tensors have the same shape and the same elements: a Python bool."""
        return self.shape == other.shape and bool((self == other).all())

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Whether every element is close to other's: |self - other| <= atol + rtol * |other|."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all())

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Elementwise: whether |self - other| <= atol + rtol * |other|."""
        if isinstance(other, Tensor) and other.dtype is not self.dtype:  # PyTorch refuses to compare across dtypes
            raise TypeError(f"isclose and allclose compare tensors of one dtype, got {self.dtype} and {other.dtype}: "
                            "convert one first, e.g. x.isclose(y.to(x.dtype))")
        a, b = _promoted_arrays(self, other)
        xp = backend.namespace(a)
        if not backend.is_float(a):  # integers and bools: the difference exact, the tolerance in float64
            error = xp.astype(a != b if backend.dtype_of(a) is dtypes.bool_ else xp.abs(a - b), xp.float64)
            size = xp.abs(xp.astype(b, xp.float64)) if hasattr(b, "dtype") else abs(float(b))
            return Tensor._wrap((a == b) | (error <= atol + rtol * size))
        # PyTorch's rule: equal, or a finite difference within the tolerance. So an infinity is close
        # only to the same infinity (inf - inf is nan and |1 - inf| <= inf would hold).
        finite = xp.isfinite(a) & xp.isfinite(b)
        a0, b0 = xp.where(finite, a, 0), xp.where(finite, b, 0)  # no inf - inf (and its warning)
        error = xp.abs(a0 - b0)
        close = (a == b) | (finite & xp.isfinite(error) & (error <= atol + rtol * xp.abs(b0)))
        if equal_nan:
            close = close | (xp.isnan(a) & xp.isnan(b))
        return Tensor._wrap(close)

    # --- elementwise math ---

    def exp(self):
        """e to the power of each element."""
        return ops.Exp.apply(_floating(self))

    def log(self):
        """The natural logarithm of each element."""
        return ops.Log.apply(_floating(self))

    def sqrt(self):
        """The square root of each element."""
        return ops.Sqrt.apply(_floating(self))

    def rsqrt(self):
        """1 / sqrt(x) for each element."""
        return ops.Rsqrt.apply(_floating(self))

    def tanh(self):
        """The hyperbolic tangent of each element."""
        return ops.Tanh.apply(_floating(self))

    def sigmoid(self):
        """1 / (1 + exp(-x)) for each element, computed stably."""
        return ops.Sigmoid.apply(_floating(self))

    def relu(self):
        """max(x, 0) for each element."""
        _check_not_bool(self, "relu")
        return ops.Relu.apply(self)

    def relu_(self):
        """In place: negative elements set to 0."""
        _check_not_bool(self, "relu_")
        return self._inplace(ops.Relu)

    # in place: the out-of-place op's result written back into this tensor's memory
    def exp_(self):
        """In place: each element replaced by e to its power."""
        return self._inplace_floating(ops.Exp, "exp_")

    def log_(self):
        """In place: each element replaced by its natural logarithm."""
        return self._inplace_floating(ops.Log, "log_")

    def sqrt_(self):
        """In place: each element replaced by its square root."""
        return self._inplace_floating(ops.Sqrt, "sqrt_")

    def tanh_(self):
        """In place: each element replaced by its hyperbolic tangent."""
        return self._inplace_floating(ops.Tanh, "tanh_")

    def sigmoid_(self):
        """In place: each element replaced by its sigmoid."""
        return self._inplace_floating(ops.Sigmoid, "sigmoid_")

    def neg_(self):
        """In place: each element negated."""
        _check_no_bool_negation(self)
        return self._inplace(ops.Neg)

    def abs_(self):
        """In place: each element replaced by its absolute value."""
        _check_not_bool(self, "abs_")
        return self._inplace(ops.Abs)

    def _inplace_floating(self, function, name):
        if not self.dtype.is_floating_point:  # the float result could not be written into integers
            raise TypeError(f"{name} needs a floating point tensor, got {self.dtype}: use the out-of-place "
                            f"x = x.{name[:-1]}(), which gives float32")
        return self._inplace(function)

    def abs(self):
        """The absolute value of each element."""
        _check_not_bool(self, "abs")
        return ops.Abs.apply(self)

    def clamp(self, min=None, max=None):
        """Each element limited to [min, max] (either bound may be None); gradient 0 outside."""
        dtype, low, high = self._clamp_bounds(min, max)
        return ops.Clamp.apply(self.to(dtype), low, high)  # int.clamp(min=1.5) is float32, as in PyTorch

    def clamp_(self, min=None, max=None):
        """In place: each element limited to [min, max]."""
        dtype, low, high = self._clamp_bounds(min, max)
        if dtype is not self.dtype:
            raise TypeError(f"clamp_ of a {self.dtype} tensor with {dtype} bounds would change its dtype: use "
                            "the out-of-place x = x.clamp(...)")
        return self._inplace(ops.Clamp, low, high)

    def _clamp_bounds(self, min, max):
        """The result dtype and the bounds as Clamp takes them: numbers, or tensors for elementwise bounds."""
        if min is None and max is None:
            raise ValueError("clamp needs at least one of min and max")
        bounds = [b for b in (min, max) if b is not None]
        dtype = result_dtype(self, *bounds)
        if dtype is dtypes.bool_ and not all(isinstance(b, Tensor) for b in bounds):
            raise TypeError("clamp of a bool tensor with bool bounds is not defined: convert with .long() first")
        shapes = [tuple(b.shape) for b in bounds if isinstance(b, Tensor)]
        if shapes and ops.broadcast_shape(self.shape, *shapes) is None:
            raise ShapeError(f"clamp: the bounds' shapes {shapes} and the tensor's {list(self.shape)} cannot be "
                             "broadcast together")
        if any(isinstance(b, Tensor) and (b.ndim or b.requires_grad) for b in bounds):
            return (dtype, *(b.to(dtype) if isinstance(b, Tensor) else b for b in (min, max)))
        return dtype, _scalar(min, "clamp bound"), _scalar(max, "clamp bound")

    clip, clip_ = clamp, clamp_

    def maximum(self, other):
        """The larger of the two, elementwise (the gradient is shared on ties)."""
        return _binary(ops.Maximum, self, other)

    def minimum(self, other):
        """The smaller of the two, elementwise (the gradient is shared on ties)."""
        return _binary(ops.Minimum, self, other)

    # --- reductions ---

    def sum(self, dim=None, keepdim=False, dtype=None, *, axis=None, keepdims=None):
        """The sum of all elements, or along `dim`."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("sum", dim, keepdim, axis, keepdims)
        if dtype is None and _numpy_float(self):  # the common case, told without looking up the dtype
            return ops.Sum.apply(self, _all_dims_if_empty(dim), keepdim)
        _check_differentiable_dtype(self, dtype, "sum")
        x = self if dtype is None else self.to(dtype)
        if x.dtype is not dtypes.int64 and dtypes.sums_as_int64(x.dtype):
            x = x.long()  # PyTorch's sums of bools and integers are int64
        total = ops.Sum.apply(x, _all_dims_if_empty(dim), keepdim)
        if dtype is not None and total.dtype is not dtype:  # the array library sums int32 as int64
            total = total != 0 if dtype is dtypes.bool_ else total.to(dtype)
        return total

    def mean(self, dim=None, keepdim=False, dtype=None, *, axis=None, keepdims=None):
        """The mean over all elements, or along `dim`."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("mean", dim, keepdim, axis, keepdims)
        if dtype is None and _numpy_float(self):
            return ops.Mean.apply(self, _all_dims_if_empty(dim), keepdim)
        x = self if dtype is None else self.to(dtype)
        if not x.dtype.is_floating_point:
            raise TypeError(
                f"mean() needs a floating point tensor, got {x.dtype}: use .float().mean() "
                "or mean(dtype=tinyattn.float32)"
            )
        return ops.Mean.apply(x, _all_dims_if_empty(dim), keepdim)

    def cumsum(self, dim=None, dtype=None, *, axis=None):
        """The running sum along `dim`."""
        if dim is None or axis is not None:
            dim = numpy_names.required_dim("cumsum", dim, axis)
        _check_differentiable_dtype(self, dtype, "cumsum")
        x = self if dtype is None else self.to(dtype)
        if x.dtype is dtypes.bool_ and dtype is not None and x.ndim:
            raise TypeError("cumsum(dtype=tinyattn.bool) is not defined: running sums count, use dtype=tinyattn.int64")
        if dtype is None and dtypes.sums_as_int64(x.dtype):
            x = x.long()  # PyTorch's running sums of integers are int64
        if x.ndim == 0:
            _dim(dim, 0)
            return ops.Cumsum.apply(x.reshape(1), 0).reshape(())
        return ops.Cumsum.apply(x, _dim(dim, x.ndim))

    def logsumexp(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """log(sum(exp(x))) along `dim`, computed without overflow."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("logsumexp", dim, keepdim, axis, keepdims)
        if dim is None:
            dim = numpy_names.required_dim("logsumexp", dim, axis)
        return ops.LogSumExp.apply(_floating(self), _all_dims_if_empty(dim), keepdim)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
        """The variance over all elements or along `dim` (Bessel-corrected by default)."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("var", dim, keepdim, axis, keepdims)
        return self._spread(ops.Var, dim, unbiased, keepdim, correction)

    def _spread(self, op, dim, unbiased, keepdim, correction):
        """var or std: PyTorch's arguments, including the older var(unbiased) form."""
        if isinstance(dim, bool):  # x.var(False): PyTorch's older form var(unbiased)
            if unbiased is not None:
                raise TypeError("var(unbiased, ...) takes unbiased once: use var(dim, unbiased, keepdim)")
            dim, unbiased = None, dim
        if unbiased is not None and correction is not None:
            raise ValueError("give either unbiased or correction, not both")
        if correction is None:
            correction = 0 if unbiased is False else 1
        if not self.dtype.is_floating_point:
            raise TypeError(f"var() and std() need a floating point tensor, got {self.dtype}: use .float().var()")
        return op.apply(self, _all_dims_if_empty(dim), correction, keepdim)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
        """The standard deviation over all elements or along `dim` (Bessel-corrected by default)."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("std", dim, keepdim, axis, keepdims)
        return self._spread(ops.Std, dim, unbiased, keepdim, correction)

    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The largest element; with `dim`, (values, indices) along it."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("max", dim, keepdim, axis, keepdims)
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        return self._extreme(dim, keepdim, False, "max")

    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The smallest element; with `dim`, (values, indices) along it."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("min", dim, keepdim, axis, keepdims)
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        return self._extreme(dim, keepdim, True, "min")

    def _extreme(self, dim, keepdim, take_min, name):
        _check_not_empty(self, dim, name)
        if dim is None:
            return ops.MaxAll.apply(self, take_min)
        if self.ndim == 0:  # one number (dim 0 or -1): as a vector of one
            _dim(dim, 0)
            values, indices = self.reshape(1)._extreme(0, False, take_min, name)
            return (MinResult if take_min else MaxResult)(values, indices)
        return (MinResult if take_min else MaxResult)(*ops.MaxAlongDim.apply(self, dim, keepdim, take_min))

    def argmax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The index of the largest element, of the flattened tensor or along `dim`."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("argmax", dim, keepdim, axis, keepdims)
        return _argext(self, dim, keepdim, "argmax")

    def argmin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The index of the smallest element, of the flattened tensor or along `dim`."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("argmin", dim, keepdim, axis, keepdims)
        return _argext(self, dim, keepdim, "argmin")

    def topk(self, k, dim=-1, largest=True, sorted=True, *, axis=None):
        """The k largest (or smallest) entries along `dim` and their indices; differentiable."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("topk", dim, axis, -1)
        xp = backend.namespace(self.array)
        axis = _dim(dim, self.ndim)
        if self.ndim == 0:  # one number: k is 0 or 1 and both give it, as in PyTorch
            if k not in (0, 1):
                raise ValueError(f"topk: k={k} is out of range for a 0-d tensor (k can be 0 or 1)")
            values, indices = self.reshape(1).topk(1, 0, largest, sorted)
            return TopkResult(values.reshape(()), indices.reshape(()))
        if not 0 <= k <= self.array.shape[axis]:
            raise ValueError(f"topk: k={k} is out of range for dim {dim} of size {self.array.shape[axis]}")
        _check_not_bool(self, "topk")
        order = xp.argsort(self.array, axis=axis, descending=largest, stable=True)
        key = (slice(None),) * axis + (slice(0, k),)
        # the first k of the order, in their own memory (a slice of it would not be contiguous: .view() refuses)
        indices = Tensor._wrap(backend.contiguous(order[backend.index_key(xp, key, order.ndim)]))
        # (PyTorch's topk saves only the indices, not self as gather does)
        return TopkResult(ops.Gather.apply(self, axis, indices, False), indices)

    def softmax(self, dim=None, *, axis=None):
        """exp(x) / sum(exp(x)) along `dim`: positive weights that sum to 1."""
        if dim is None or axis is not None:
            dim = numpy_names.required_dim("softmax", dim, axis)
        _check_floating(self, "softmax")
        if self.ndim == 0:  # a single number (dim 0 or -1, as in PyTorch): as a vector of one
            return self.reshape(1).softmax(dim).reshape(())
        return ops.Softmax.apply(self, dim)

    def log_softmax(self, dim=None, *, axis=None):
        """log(softmax(x)) along `dim`, computed stably with log-sum-exp."""
        if dim is None or axis is not None:
            dim = numpy_names.required_dim("log_softmax", dim, axis)
        _check_floating(self, "log_softmax")
        if self.ndim == 0:
            return self.reshape(1).log_softmax(dim).reshape(())
        return ops.LogSoftmax.apply(self, dim)

    # --- matrix products ---

    def matmul(self, other):
        """The matrix product (self @ other), with batch dims broadcast and 1-D operands as vectors."""
        return matmul(self, other)

    def dot(self, other):
        """The dot product of two 1-D tensors: a 0-d tensor."""
        if self.ndim != 1 or other.ndim != 1:
            raise ShapeError(
                f"dot expects two 1-D tensors, got shapes {list(self.shape)} and {list(other.shape)}: "
                "use @ (matmul) for matrices"
            )
        return matmul(self, other)

    def mm(self, other):
        """The matrix product of two 2-D tensors."""
        if self.ndim != 2 or other.ndim != 2:
            raise ShapeError(
                f"mm expects two 2-D matrices, got shapes {list(self.shape)} and {list(other.shape)}: "
                "use @ (matmul) for vectors and batches"
            )
        return matmul(self, other)

    def bmm(self, other):
        """Batched matrix product of (b, n, m) and (b, m, p) tensors: a (b, n, p) tensor."""
        if self.ndim != 3 or other.ndim != 3 or self.shape[0] != other.shape[0]:
            raise ShapeError(
                f"bmm expects two 3-D batches of matrices with the same batch size, got shapes "
                f"{list(self.shape)} and {list(other.shape)}: use @ (matmul) to broadcast batches"
            )
        return matmul(self, other)

    # --- shapes ---

    def reshape(self, *shape):
        """The same elements in a new shape (-1 infers one size): a view when possible."""
        return ops.Reshape.apply(self, _reshape_arg(shape, self.numel()))

    def view(self, *shape):
        """A view of the same memory in a new shape (-1 infers one size); needs a contiguous tensor."""
        if len(shape) == 1 and isinstance(shape[0], dtypes.dtype):
            raise TypeError("view(dtype) is not supported: use .to(dtype)")
        return ops.View.apply(self, _reshape_arg(shape, self.numel()))

    def view_as(self, other):
        """A view in `other`'s shape."""
        return self.view(other.shape)

    def reshape_as(self, other):
        """The same elements in `other`'s shape."""
        return self.reshape(other.shape)

    def transpose(self, dim0, dim1):
        """A view with dims `dim0` and `dim1` swapped."""
        dims = list(range(self.ndim))
        a, b = _dim(dim0, self.ndim), _dim(dim1, self.ndim)
        if self.ndim == 0:  # dims 0 and -1 of one number: nothing to swap
            return ops.Transpose.apply(self, ())
        dims[a], dims[b] = dims[b], dims[a]
        return ops.Transpose.apply(self, tuple(dims))

    def permute(self, *dims):
        """A view with the dims in the order given."""
        dims = tuple(_dim(d, self.ndim) for d in _shape_arg(dims, lowest=None))
        if sorted(dims) != list(range(self.ndim)):
            raise ShapeError(f"permute: {list(dims)} is not a permutation of the {self.ndim} dims")
        return ops.Permute.apply(self, dims)

    def t(self):
        """The transpose of a matrix (dims 0 and 1 swapped); a 0-d or 1-D tensor as it is."""
        if self.ndim > 2:
            raise ShapeError(f"t() expects a tensor with at most 2 dims, got shape {list(self.shape)}: use "
                             ".transpose(dim0, dim1), or .mT for the last two dims")
        return ops.T.apply(self, tuple(reversed(range(self.ndim))))

    @property
    def T(self):
        """The tensor with its dims in reverse order (the transpose of a matrix): a view."""
        return ops.Permute.apply(self, tuple(reversed(range(self.ndim))))

    @property
    def mT(self):
        """The tensor with its last two dims swapped (a batch of transposed matrices): a view."""
        return self.transpose(-2, -1)

    def unsqueeze(self, dim=None, *, axis=None):
        """A view with a new dim of size 1 at `dim`."""
        if dim is None or axis is not None:
            dim = numpy_names.required_dim("unsqueeze", dim, axis)
        axis = _dim(dim, self.ndim + 1)
        return ops.Reshape.apply(self, self.array.shape[:axis] + (1,) + self.array.shape[axis:])

    def squeeze(self, dim=None, *, axis=None):
        """A view without the size-1 dims (or only `dim`, if it has size 1)."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("squeeze", dim, axis)
        shape = self.array.shape
        if dim is None:
            axes = [i for i, n in enumerate(shape) if n == 1]
        else:
            axes = [a for a in _dims_tuple(dim, self.ndim) if shape[a] == 1]
        return ops.Reshape.apply(self, tuple(n for i, n in enumerate(shape) if i not in axes))

    def flatten(self, start_dim=0, end_dim=-1):
        """The dims from `start_dim` to `end_dim` merged into one."""
        start, end = _dim(start_dim, self.ndim), _dim(end_dim, self.ndim)
        if self.ndim == 0:
            return self.reshape(1)
        if start > end:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}: swap them")
        shape = self.array.shape
        return ops.Reshape.apply(self, shape[:start] + (math.prod(shape[start : end + 1]),) + shape[end + 1 :])

    def expand(self, *sizes):
        """A view repeating size-1 dims to `sizes` (-1 keeps a size) without copying."""
        sizes = _shape_arg(sizes, lowest=-1)
        lead = len(sizes) - self.ndim
        if lead < 0:
            raise ShapeError(f"expand: the target {list(sizes)} has fewer dims than the tensor {list(self.shape)}")
        if -1 in sizes[:lead]:  # -1 keeps a dim's size: a new dim has none to keep
            raise ShapeError(
                f"expand: -1 is not allowed in the new leading dims of {list(sizes)} (the tensor has shape "
                f"{list(self.shape)}): give their sizes"
            )
        target = tuple(
            self.array.shape[i - lead] if n == -1 else n for i, n in enumerate(sizes)
        )
        for i, n in enumerate(self.array.shape):
            if n != 1 and n != target[lead + i]:
                raise ShapeError(
                    f"expand: the tensor's shape {list(self.shape)} cannot be expanded to {list(sizes)} "
                    "(only size-1 dims can grow)"
                )
        return ops.Expand.apply(self, target)

    def expand_as(self, other):
        """A view expanded to `other`'s shape."""
        return self.expand(other.shape)

    def repeat(self, *sizes):
        """The tensor tiled `sizes` times along each dim: a copy."""
        sizes = _shape_arg(sizes)
        if len(sizes) < self.ndim:
            raise ShapeError(f"repeat: {list(sizes)} gives fewer repeats than the tensor of shape {list(self.shape)} "
                             "has dims: give one per dim (1 for a dim to keep)")
        x = self.reshape((1,) * (len(sizes) - self.ndim) + tuple(self.shape))
        expanded = x.reshape(tuple(d for n in x.shape for d in (1, n))).expand(
            tuple(d for r, n in zip(sizes, x.shape) for d in (r, n))
        )
        tiled = expanded.reshape(tuple(r * n for r, n in zip(sizes, x.shape)))
        # a copy with its own memory, as PyTorch's: with every repeat 1 the reshape is a view of self,
        # and where only size-1 dims repeat it is a read-only view whose repeated dims have stride 0
        return tiled.clone() if math.prod(sizes) == 1 else tiled.contiguous()

    def split(self, split_size, dim=0):
        """Pieces of split_size along dim (the last one shorter), or of the sizes in a list; views.
        (The keyword is `split_size` here, as Tensor.split spells it; torch.split's is
        `split_size_or_sections`.)"""
        _check_not_0d(self, "split")
        axis = _dim(dim, self.ndim)
        length = self.array.shape[axis]
        split_size_or_sections = split_size
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            if size < 0 or size == 0 and length:
                raise ValueError(f"split_size must be a positive integer (or 0 for a dim of size 0), got {size}")
            sizes = [min(size, length - s) for s in range(0, length, size)] if length else [0]  # one empty piece
        else:
            sizes = list(split_size_or_sections)
            if any(size < 0 for size in sizes):
                raise ValueError(f"split sizes {sizes} must not be negative")
            if sum(sizes) != length:
                raise ShapeError(f"split sizes {sizes} do not add up to the size {length} of dim {dim}")
        pieces, start = [], 0
        for size in sizes:
            pieces.append(self[(slice(None),) * axis + (slice(start, start + size),)])
            start += size
        return tuple(pieces)

    def chunk(self, chunks, dim=0, *, axis=None):
        """Splits the tensor into `chunks` nearly equal views along `dim`."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("chunk", dim, axis, 0)
        if chunks <= 0:
            raise ValueError(f"chunk expects chunks to be greater than 0, got {chunks}")
        _check_not_0d(self, "chunk")
        length = self.array.shape[_dim(dim, self.ndim)]
        if length == 0:  # as in PyTorch: `chunks` empty pieces
            return self.split([0] * chunks, dim)
        return self.split(-(-length // chunks), dim)

    def narrow(self, dim, start, length):
        """The `length` slices from `start` along `dim` (a negative start counts from the end): a view."""
        if self.ndim == 0:
            raise ShapeError("narrow() cannot be applied to a 0-dim tensor (a single number)")
        axis = _dim(dim, self.ndim)
        start, size = _scalar(start, "start"), self.shape[axis]
        if not isinstance(start, (int, np.integer)) or isinstance(start, bool):
            raise TypeError(f"narrow: start must be an int (or a 0-d integer tensor), got {start!r}")
        if not -size <= start <= size:
            raise IndexError(f"narrow: start {start} is out of range for dim {axis} of size {size} "
                             f"(expected to be in [{-size}, {size}])")
        start = start % size if start < 0 else start
        if length < 0:
            raise ValueError(f"narrow: length must be non-negative, got {length}")
        if start + length > size:
            raise IndexError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({size}) of dim {axis}")
        return self[(slice(None),) * axis + (slice(start, start + length),)]

    def unbind(self, dim=0, *, axis=None):
        """The slices along `dim`, as a tuple of views without that dim."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("unbind", dim, axis, 0)
        if self.ndim == 0:
            raise IndexError("unbind: a 0-d tensor has no dim to unbind (it is a single number)")
        axis = _dim(dim, self.ndim)
        return tuple(self[(slice(None),) * axis + (i,)] for i in range(self.array.shape[axis]))

    def tril(self, diagonal=0):
        """The lower triangle (on and below diagonal `diagonal`), zeros above."""
        return ops.Tril.apply(self, diagonal)

    def triu(self, diagonal=0):
        """The upper triangle (on and above diagonal `diagonal`), zeros below."""
        return ops.Triu.apply(self, diagonal)

    def tril_(self, diagonal=0):
        """In place: the elements above diagonal `diagonal` set to 0."""
        return self._inplace(ops.Tril, diagonal)

    def triu_(self, diagonal=0):
        """In place: the elements below diagonal `diagonal` set to 0."""
        return self._inplace(ops.Triu, diagonal)

    # --- indexing and masking ---

    def __getitem__(self, key):
        if type(key) is list:
            key = _sequence_as_tuple(key)
        array = self.array
        if type(array) is np.ndarray:
            simple = _simple_key(key, array.shape)
            if simple is not None:  # x[3], x[k, j], C[ix]: a view, its dims in the order both libraries agree on
                if (type(simple) is not np.ndarray and not autograd.observers
                        and not (self._requires_grad and autograd.grad_mode.enabled)):
                    # nothing to record (Xb[k, j] under no_grad): the view Index.apply would make, directly
                    view = Tensor._wrap(array[(simple if type(simple) is tuple else (simple,)) + (Ellipsis,)])
                    autograd._mark_views(self, (view,), (ops.Index, (simple,)))
                    return view
                # C[ix]: the index tensor itself is the key (an argument: its version is checked)
                return ops.Index.apply(self, key if type(simple) is np.ndarray else simple)
        index_tensors = _index_tensors(key)
        key = _array_key(key, self)
        order = _pytorch_order(key, self.ndim)
        # basic keys give a view: it shares self's version counter; the index tensors go along, for
        # the check of their versions in backward
        result = ops.Index.apply(self, key, *index_tensors)
        return result if order is None else ops.Permute.apply(result, order)

    def __setitem__(self, key, value):
        if type(key) is list:
            key = _sequence_as_tuple(key)
        if self._setitem_simple(key, value):
            return
        index_tensors = _index_tensors(key)
        key = _array_key(key, self)
        value = _value_to_write(self, value)
        if isinstance(value, Tensor) and value.ndim and value.shape[0] == 1:
            # leading 1s are what broadcasting adds anyway: PyTorch drops them, so x[0] = t[None] works
            kept = list(value.shape)
            while kept and kept[0] == 1:
                kept.pop(0)
            value = value.reshape(tuple(kept))
        order = _pytorch_order(key, self.ndim)
        if order is not None and isinstance(value, Tensor) and 0 < value.ndim <= len(order):
            # the value is laid out as PyTorch's x[key] (its missing leading dims broadcast); the write
            # below takes NumPy's layout. A value of more dims fails there, naming both shapes.
            shape = (1,) * (len(order) - value.ndim) + tuple(value.shape)
            numpy_order = sorted(range(len(order)), key=order.__getitem__)
            value = ops.Permute.apply(value.reshape(shape), tuple(numpy_order))
        try:
            if not self._setitem_direct(key, value):
                self._inplace(ops.IndexPut, key, value, *index_tensors)
        except (ValueError, TypeError):  # NumPy's errors for a value that does not fit: name both shapes
            target = self.detach()[key].shape if order is None else None
            if isinstance(value, Tensor) and target is not None and ops.broadcast_shape(value.shape, target) != target:
                raise ShapeError(f"cannot write a value of shape {list(value.shape)} into x[key] of shape "
                                 f"{list(target)}: the value must broadcast to it") from None
            raise

    def _setitem_simple(self, key, value):
        """`dC[ix] = row` told at once: a simple key (ints, slices), a NumPy tensor of this dtype whose
        first dim is not a 1 to drop, nothing to record. What the full path below does for it, without
        its parsing; False where it does not apply (or where NumPy refuses: the full path says why)."""
        array = self.array
        if (type(array) is not np.ndarray or not isinstance(value, Tensor) or autograd.observers
                or autograd.grad_mode.enabled and (self._requires_grad or value._requires_grad)):
            return False
        source = value.array
        if type(source) is not np.ndarray or source.dtype is not array.dtype or source.ndim and source.shape[0] == 1:
            return False
        simple = _simple_key(key, array.shape)
        if simple is None or type(simple) is np.ndarray:
            return False
        self._check_inplace(recording=False)
        try:
            array[simple] = source
        except (ValueError, TypeError):
            return False
        self._bump_version()
        if self._base is not None:
            self._view_version = self._version[0]
        return True

    def _setitem_direct(self, key, value):
        """x[key] = value with no graph to record (as in `dC[ix] += demb[k, j]` under no_grad): NumPy
        writes the value into x's memory, where IndexPut would write it into a copy of x that is then
        copied back. The same numbers either way. Returns False where that does not apply."""
        array = self.array
        if type(array) is not np.ndarray or autograd.observers:
            return False
        if autograd.grad_mode.enabled and (self._requires_grad or isinstance(value, Tensor) and value._requires_grad):
            return False
        if isinstance(value, Tensor):
            value = value.array
            if type(value) is not np.ndarray:
                return False
        self._check_inplace(recording=False)
        array[key] = value
        self._bump_version()
        if self._base is not None:
            self._view_version = self._version[0]
        return True

    def gather(self, dim, index):
        """The elements picked along `dim` by `index`: `out[i][j] = self[i][index[i][j]]` for dim 1."""
        if index.dtype not in (dtypes.int64, dtypes.int32):
            raise TypeError(f"gather expects an int64 index, got {index.dtype}")
        index = index.long()
        backend.same_device([self.array, index.array])
        axis = _dim(dim, self.ndim)
        if max(self.ndim, index.ndim) <= 1 and min(self.ndim, index.ndim) == 0:  # PyTorch takes 0-d as 1-d here
            return self.reshape(-1).gather(0, index.reshape(-1)).reshape(index.shape)
        too_big = any(n > m for i, (n, m) in enumerate(zip(index.shape, self.shape)) if i != axis)
        if index.ndim != self.ndim or too_big:
            raise ShapeError(
                f"gather: an index of shape {list(index.shape)} does not fit an input of shape "
                f"{list(self.shape)}: it needs as many dims, and no more than the input's size in every "
                f"dim but dim {axis}"
            )
        if index.numel():  # checked here: CuPy would wrap an index out of range instead of raising
            xp, size = backend.namespace(index.array), self.shape[axis]
            low, high = int(xp.min(index.array)), int(xp.max(index.array))
            if low < 0 or high >= size:
                raise IndexError(f"gather: index {high if high >= size else low} is out of bounds for dim "
                                 f"{axis} with size {size} (valid indices are 0 to {size - 1})")
        return ops.Gather.apply(self, axis, index)

    def masked_fill(self, mask, value):
        """A copy with `value` where `mask` (bool, broadcast) is True; the gradient skips those."""
        shape = ops.broadcast_shape(self.shape, mask.shape) if isinstance(mask, Tensor) else None
        if shape is not None and shape != self.shape:  # the result has the broadcast shape, as in PyTorch
            return self.expand(shape).masked_fill(mask, value)
        if isinstance(value, Tensor) and value.requires_grad and autograd.grad_mode.enabled:
            _scalar(value)  # a 0-d tensor only, as below
            _check_differentiable_dtype(value, self.dtype, "masked_fill")
            return where(mask, value.to(self.dtype), self)  # so that the value receives its gradient too
        return ops.MaskedFill.apply(self, _mask_tensor(mask, self), _value_to_write(self, _scalar(value)))

    def masked_fill_(self, mask, value):
        """In place: `value` written where `mask` (bool, broadcast) is True."""
        if isinstance(value, Tensor) and value.requires_grad and autograd.grad_mode.enabled and self.is_floating_point():
            _scalar(value)
            _mask_tensor(mask, self)
            return self.copy_(where(mask, value.to(self.dtype), self))  # the value receives its gradient
        return self._inplace(ops.MaskedFill, _mask_tensor(mask, self), _value_to_write(self, _scalar(value)), True)

    def histogram(self, bins=100, *, range=None, weight=None, density=False):
        """(hist, bin_edges): how many elements fall in each of the bins."""
        return counting.histogram(self, bins, range=range, weight=weight, density=density)

    def histc(self, bins=100, min=0, max=0):
        """The counts of `bins` equal bins between min and max (the data's range when min == max)."""
        return counting.histc(self, bins, min, max)

    def bincount(self, weights=None, minlength=0):
        """How often each value 0, 1, 2, ... occurs in a 1-D tensor of non-negative integers."""
        return counting.bincount(self, weights, minlength)

    def index_fill(self, dim, index, value):
        """A copy with `value` written at positions `index` (int64, 1-D or 0-d) along `dim`; differentiable
        in the tensor (zero gradient where filled) and in a 0-d tensor value (the sum of those places')."""
        return self.masked_fill(_index_mask(self, dim, index, value), value)

    def index_fill_(self, dim, index, value):
        """In place: the slices at `index` along `dim` set to `value`."""
        return self.masked_fill_(_index_mask(self, dim, index, value), value)

    def where(self, condition, other):
        """self where `condition` is True, `other` elsewhere (differentiable in both)."""
        return where(condition, self, other)

    # --- filling in place (initialisation) ---

    def zero_(self):
        """In place: every element set to 0."""
        return self._inplace(ops.Overwrite, backend.namespace(self.array).zeros_like(self.array), "Zero")

    def fill_(self, value):
        """In place: every element set to `value`."""
        _scalar(value)  # a number or a 0-d tensor (which receives the gradient, if it requires one)
        return self._inplace(ops.IndexPut, Ellipsis, _value_to_write(self, value))

    def copy_(self, source):
        """In place: the elements of `source` (broadcast to self's shape) copied into self."""
        if not isinstance(source, Tensor):
            source = Tensor._from_data(source, dtype=self.dtype, device=self.device)
        if ops.broadcast_shape(source.shape, self.shape) != self.shape:  # NumPy would drop leading 1s
            raise ShapeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                f"{list(ops.broadcast_shape(source.shape, self.shape) or source.shape)}: copy_ needs a "
                "source that broadcasts to the tensor's shape"
            )
        return self._inplace(ops.IndexPut, Ellipsis, source.to(self.device, self.dtype))

    def uniform_(self, a=0.0, b=1.0, generator=None):
        """In place: every element drawn uniformly from [a, b) (PyTorch's stream for the same seed)."""
        if not (math.isfinite(a) and math.isfinite(b) and a <= b):
            raise ValueError(f"uniform_ draws from [a, b), finite with a <= b, got a={a} and b={b}")
        values = functions.generator_or_default(generator).uniform(  # in memory order, as PyTorch fills
            self.array.shape, np.dtype(self.dtype.name), a, b, strides=functions._fill_strides(self))
        return self._overwrite(values, "Uniform")

    def normal_(self, mean=0.0, std=1.0, generator=None):
        """In place: every element drawn from N(mean, std²) (PyTorch's stream for the same seed)."""
        values = functions.generator_or_default(generator).normal(  # in memory order, as PyTorch fills
            self.array.shape, np.dtype(self.dtype.name), mean, std, strides=functions._fill_strides(self))
        return self._overwrite(values, "Normal")

    def _overwrite(self, host_values, name):
        """Replace the numbers (initialisation): allowed on leaves under no_grad, like PyTorch."""
        return self._inplace(ops.Overwrite, backend.from_host(host_values, self.device), name)

    def _check_inplace(self, recording):
        array = self.array
        if type(array) is np.ndarray and array.flags.writeable and 0 not in array.strides:
            pass  # (the common case, told at once: no element shared, nothing read-only)
        elif backend.shares_elements(array):
            raise RuntimeError(
                f"cannot write in place to this tensor of shape {list(self.shape)}: several of its elements "
                "are one place in memory (it is an expand()ed or broadcast view); write to a .clone() of it"
            )
        elif backend.is_read_only(array):  # a part of an expand()ed view: NumPy keeps it read-only
            raise RuntimeError(
                f"cannot write in place to this tensor of shape {list(self.shape)}: its memory is read-only "
                "(a view into an expand()ed tensor, or read-only NumPy data); write to the tensor before "
                "expand(), or to a .clone()"
            )
        if not recording:
            return
        if self.grad_fn is None and self.requires_grad:
            raise BackwardError(
                "a leaf tensor that requires grad is being changed in place: wrap the update in "
                "`with tinyattn.no_grad():` (as optimizers do), or work on a .clone()"
            )
        root = self._base
        if root is not None and root.grad_fn is None and root.requires_grad:
            raise BackwardError(
                "a view of a leaf tensor that requires grad is being changed in place: wrap the update in "
                "`with tinyattn.no_grad():`, or work on a .clone() of the leaf"
            )

    def _inplace(self, function, *args):
        """Run `function` out of place, then write its result into this tensor's memory.

        Writing into the same memory keeps views of this tensor in sync, as PyTorch's in-place
        ops do; the graph is rebased so that this tensor's grad_fn is the new op.
        """
        recording = autograd.grad_mode.enabled and (
            self.requires_grad or any(isinstance(a, Tensor) and a.requires_grad for a in args)
        )
        self._check_inplace(recording)
        if not recording and self._inplace_direct(function, args):
            return self
        result = function.apply(self, *args)
        node = result.grad_fn
        if node is not None and any(item is self.array for item in node.saved):
            # the op kept our numbers for its backward: give it a copy of them before we overwrite
            original = backend.namespace(self.array).asarray(self.array, copy=True)
            node.saved = tuple(original if item is self.array else item for item in node.saved)
            node.saved_versions = tuple(v for v in node.saved_versions if v[0] is not self._version)
        self._check_fits_in_place(result)
        if node is not None and self._base is not None:
            self._inplace_on_view(result)
        else:
            self._store(result.array)
            if node is not None:
                self.grad_fn, self.output_nr, self._requires_grad = node, 0, True
        if node is not None and node.saved_versions:
            # what the op saved of its output, or computed from this tensor's old numbers (a mask), now
            # belongs to this tensor as written: a later change raises (y.exp_() then y.add_(1), as in PyTorch)
            mine = self._version
            node.saved_versions = tuple((mine, mine[0], shape) if counter is result._version or counter is mine
                                        else (counter, version, shape)
                                        for counter, version, shape in node.saved_versions)
        return self

    def _inplace_direct(self, function, args):
        """`p.data += -lr * p.grad`, `x *= 2` with no graph to record: the op's NumPy ufunc writes its
        result straight into this tensor's memory, the same numbers the op would compute, without the
        op's result tensor and the copy back. Returns False where that does not apply (then the op runs)."""
        ufunc = _INPLACE_UFUNCS.get(function)
        array = self.array
        if ufunc is None or type(array) is not np.ndarray or array.dtype.kind != "f" or autograd.observers:
            return False
        (other,) = args
        if isinstance(other, Tensor):
            other = other.array
            if type(other) is not np.ndarray or other.dtype is not array.dtype or other.ndim > array.ndim:
                return False  # (the operand was checked to broadcast to this tensor's shape)
        elif type(other) not in (int, float):
            return False
        quiet = backend.float_errors_off()
        try:
            ufunc(array, other, out=array)
        finally:
            backend.float_errors_restore(quiet)
        self._bump_version()
        if self._base is not None:
            self._view_version = self._version[0]
        return True

    def _inplace_on_view(self, result):
        """Write `result` into this view while recording: the change is recorded on the root (the
        tensor whose memory the view shares) as a CopySlices node, as PyTorch does, so that the
        root's gradients see it; the view becomes "this view of the new root"."""
        root, steps = self._base, self._view_steps

        def view_of(array):
            base = Tensor._wrap(array)
            view = autograd.replay_view(steps, base)
            if view._base is not base:  # a step copied: writing to it would not reach `array`
                raise RuntimeError("internal error: a view could not be taken again from its root's layout")
            return view.array

        changed = ops.CopySlices.apply(root, result, view_of)
        root.grad_fn, root.output_nr, root._requires_grad = changed.grad_fn, 0, True
        self._bump_version()  # the counter root and views share
        autograd.refresh_view(self)
        return self

    def _inplace_no_grad(self, operator, other):
        """x //= y, x %= y, x &= y ...: the out-of-place result written into x's memory (no gradient)."""
        result = operator(self, _inplace_operand(self, other))  # y in x's dtype, as for x += y
        if result is NotImplemented:
            return NotImplemented
        if autograd.grad_mode.enabled and self.requires_grad:
            raise BackwardError(
                "this in-place op has no gradient and the tensor requires grad: do it under "
                "`with tinyattn.no_grad():` or on x.detach()"
            )
        self._check_inplace(recording=False)
        self._check_fits_in_place(result)
        self._store(result.array)
        return self

    def _store(self, array):
        """Write an in-place op's result into this tensor's memory and count the change."""
        if array is not self.array:  # ops that wrote in place already did
            self.array[...] = array
        self._bump_version()
        if self._base is not None:
            self._view_version = self._version[0]  # not a stale view: it saw this change itself

    def _check_fits_in_place(self, result):
        """An in-place op keeps the tensor's shape and dtype: refuse a result that would change either."""
        if result.array.shape != self.array.shape:  # NumPy would quietly drop the new leading 1s
            raise ShapeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                f"{list(result.shape)}: an in-place op cannot change a tensor's shape; use the "
                "out-of-place op (a = a + b)"
            )
        if result.array.dtype != self.array.dtype:
            raise TypeError(
                f"an in-place op would change this {self.dtype} tensor into {result.dtype}: "
                "use the out-of-place op instead"
            )

    # --- random (in tinyattn.functions for the torch.* forms) ---

    def multinomial(self, num_samples, replacement=False, generator=None):
        """Category indices drawn with probabilities proportional to the rows (PyTorch's stream)."""
        return functions.multinomial(self, num_samples, replacement, generator=generator)

    def bernoulli_(self, p=0.5, generator=None):
        """In place: each element set to 1 with probability `p` (a number, or a tensor that broadcasts to
        self: one probability per element), else 0 (PyTorch's stream)."""
        strides, generator = functions._fill_strides(self), functions.generator_or_default(generator)
        if isinstance(p, Tensor):
            values = functions._bernoulli_of_probabilities(generator, self.array.shape, strides, p)
        else:  # in memory order, as PyTorch fills
            values = generator.bernoulli(self.array.shape, p, strides=strides)
        name = "BernoulliBackward1" if isinstance(p, Tensor) else "BernoulliBackward2"  # PyTorch's overloads
        return self._overwrite(values.astype(self.dtype.name), name)

    # --- more elementwise math (integers become float32 first, as in PyTorch) ---

    def sin(self):
        """The sine of each element."""
        return ops.Sin.apply(_floating(self))

    def cos(self):
        """The cosine of each element."""
        return ops.Cos.apply(_floating(self))

    def log1p(self):
        """log(1 + x) for each element, exact for small x."""
        return ops.Log1P.apply(_floating(self))

    def expm1(self):
        """exp(x) - 1 for each element, exact for small x."""
        return ops.Expm1.apply(_floating(self))

    def log2(self):
        """The base-2 logarithm of each element."""
        return ops.Log2.apply(_floating(self))

    def log10(self):
        """The base-10 logarithm of each element."""
        return ops.Log10.apply(_floating(self))

    def exp2(self):
        """2 to the power of each element."""
        return ops.Exp2.apply(_floating(self))

    def reciprocal(self):
        """1 / x for each element."""
        return ops.Reciprocal.apply(_floating(self))

    def erf(self):
        """The error function of each element."""
        return ops.Erf.apply(_floating(self))

    def neg(self):
        """-x for each element."""
        return -self

    negative = neg

    def square(self):
        """x * x for each element."""
        return self**2  # PyTorch's square is pow(x, 2) too (PowBackward0); integers stay integers

    def sign(self):
        """-1, 0 or 1 by the sign of each element (gradient 0)."""
        if self.dtype is dtypes.bool_:  # True and False are their own signs
            return self.clone()
        return ops.Sign.apply(self)

    sgn = sign  # the same for real numbers

    def floor(self):
        """Each element rounded down to an integer value (gradient 0)."""
        _check_not_bool(self, "floor")
        return ops.Floor.apply(self)

    def ceil(self):
        """Each element rounded up to an integer value (gradient 0)."""
        _check_not_bool(self, "ceil")
        return ops.Ceil.apply(self)

    def trunc(self):
        """Each element rounded toward zero (gradient 0)."""
        _check_not_bool(self, "trunc")
        return ops.Trunc.apply(self)

    fix = trunc

    def round(self, *, decimals=0):
        """Each element rounded to `decimals` places, halves to even (gradient 0)."""
        _check_not_bool(self, "round")
        if decimals != 0 and not self.dtype.is_floating_point:
            raise TypeError(f"round with decimals needs a floating point tensor, got {self.dtype}: use .float()")
        return ops.Round.apply(self, decimals)

    def clamp_min(self, min):
        """Each element limited to at least `min`."""
        return self.clamp(min=min)

    def clamp_max(self, max):
        """Each element limited to at most `max`."""
        return self.clamp(max=max)

    # --- more reductions ---

    def prod(self, dim=None, keepdim=False, dtype=None, *, axis=None, keepdims=None):
        """The product of all elements, or along `dim`."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("prod", dim, keepdim, axis, keepdims)
        if dim is not None and not isinstance(dim, (int, np.integer)):
            raise TypeError(f"prod takes one dim (an int), got {dim!r}: for several dims, call prod once per dim")
        _check_differentiable_dtype(self, dtype, "prod")
        x = self if dtype is None else self.to(dtype)
        if dtypes.sums_as_int64(x.dtype):
            x = x.long()  # PyTorch's products of integers are int64 (unless a dtype is asked for)
        product = ops.Prod.apply(x, None if dim is None else int(dim), keepdim)
        if dtype is not None and product.dtype is not dtype:
            product = product != 0 if dtype is dtypes.bool_ else product.to(dtype)
        return product

    def cumprod(self, dim=None, *, dtype=None, axis=None):
        """The running product along `dim`."""
        if dim is None or axis is not None:
            dim = numpy_names.required_dim("cumprod", dim, axis)
        _check_differentiable_dtype(self, dtype, "cumprod")
        if dtype is dtypes.bool_ and self.ndim:  # (a 0-d tensor is its own running product, as in PyTorch)
            raise TypeError("cumprod(dtype=tinyattn.bool) is not defined: use dtype=tinyattn.int64")
        x = self if dtype is None else self.to(dtype)
        if dtype is None and dtypes.sums_as_int64(x.dtype):
            x = x.long()  # PyTorch's running products of integers are int64 (unless a dtype is asked for)
        if x.ndim == 0:
            _dim(dim, 0)
            return ops.Cumprod.apply(x.reshape(1), 0).reshape(()).to(x.dtype)
        return ops.Cumprod.apply(x, _dim(dim, x.ndim))

    def amax(self, dim=(), keepdim=False, *, axis=None, keepdims=None):
        """The largest elements along `dim` (all dims by default); the gradient is shared among ties."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("amax", dim, keepdim, axis, keepdims, ())
        return _amax(self, dim, keepdim, False, "amax")

    def amin(self, dim=(), keepdim=False, *, axis=None, keepdims=None):
        """The smallest elements along `dim` (all dims by default); the gradient is shared among ties."""
        if axis is not None or keepdims is not None:
            dim, keepdim = numpy_names.dim_and_keepdim("amin", dim, keepdim, axis, keepdims, ())
        return _amax(self, dim, keepdim, True, "amin")

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """The vector p-norm over `dim` (all elements by default); 'fro' is the 2-norm."""
        if p == "fro" and isinstance(dim, (tuple, list)) and len(dim) > 2:  # PyTorch's "fro" is a matrix norm
            raise ValueError(f"norm: p='fro' takes at most 2 dims, got dim={dim}: give p=2 for the 2-norm over "
                             "more dims")
        if p is None or p == "fro":
            p = 2
        if isinstance(p, str):
            raise ValueError(f"norm: p={p!r} is a matrix norm, which tinyattn does not have: use a number "
                             "(2, 1, inf, ...) for a vector norm over dim")
        return vector_norm(self, p, dim, keepdim, dtype=dtype)

    def trace(self):
        """The sum of the main diagonal of a matrix (tinyattn.trace is the op tracer, not this)."""
        if self.ndim != 2:
            raise ShapeError(f"trace expects a matrix (2 dims), got shape {list(self.shape)}")
        _check_not_bool(self, "trace")
        x = self.long() if dtypes.sums_as_int64(self.dtype) else self  # PyTorch's sums of integers are int64
        n = min(x.shape)  # the diagonal of a non-square matrix: as long as its shorter side
        plan = ops.EinsumPlan((("i", "i"),), (), {"i": n}, name="Trace")
        return ops.Einsum.apply(plan, x[:n, :n])

    # --- more matrix products ---

    def outer(self, vec2):
        """The outer product of two 1-D tensors: `out[i][j] = self[i] * vec2[j]`."""
        if self.ndim != 1 or vec2.ndim != 1:
            raise ShapeError(f"outer expects two 1-D tensors, got shapes {list(self.shape)} and {list(vec2.shape)}")
        return self.reshape(-1, 1) * vec2

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        """beta * self + alpha * (mat1 @ mat2)."""
        return _scaled_sum(self, mat1.mm(mat2), mat1.shape[-1], beta, alpha, "addmm")

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        """beta * self + alpha * (batch1 @ batch2), batch by batch."""
        return _scaled_sum(self, batch1.bmm(batch2), batch1.shape[-1], beta, alpha, "baddbmm")

    # --- sorting, selecting, scattering ---

    def sort(self, dim=-1, descending=False, *, stable=False, axis=None):
        """(values, indices) along `dim`. Always stable (equal values keep their order), which
        stable=False allows; NaN sorts as the largest value, as in PyTorch."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("sort", dim, axis, -1)
        if self.ndim == 0:
            _dim(dim, 0)
            values, indices = self.reshape(1).sort(0, descending)
            return SortResult(values.reshape(()), indices.reshape(()))
        values, indices = ops.Sort.apply(self, _dim(dim, self.ndim), descending)
        return SortResult(values, indices.detach())  # indices are no part of the graph

    def argsort(self, dim=-1, descending=False, *, stable=False, axis=None):
        """The indices that sort the tensor along `dim` (ascending unless `descending=True`)."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("argsort", dim, axis, -1)
        if self.ndim == 0:
            _dim(dim, 0)
            return self.reshape(1).argsort(0, descending).reshape(())
        xp = backend.namespace(self.array)
        order = xp.argsort(self.array, axis=_dim(dim, self.ndim), descending=descending, stable=True)
        return Tensor._wrap(xp.astype(order, xp.int64))

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        """The distinct elements in ascending order (sorted=False allows that too), or with `dim` the
        distinct slices along it in lexicographic order; with return_inverse, where each element (or
        slice) of self sits among them, and with return_counts how often each occurs. NaNs stay
        distinct, as in PyTorch (slices holding NaNs may come in another order than PyTorch's).
        Not differentiable: the result is no part of the graph."""
        if dim is None:
            values, inverse, counts = backend.unique(self.array)
            inverse = backend.namespace(inverse).reshape(inverse, self.shape)
        else:
            if self.ndim == 0:
                raise IndexError(f"unique: dim={dim} was given for a 0-d tensor, which has no dimensions")
            axis = _dim(dim, self.ndim)
            if any(size == 0 for d, size in enumerate(self.shape) if d != axis):
                raise ShapeError(f"unique: shape {list(self.shape)} has a dimension of size 0 other than "
                                 f"dim={dim}, so it has no slices to compare")
            values, inverse, counts = backend.unique(self.array, axis)
        xp = backend.namespace(values)
        result = (Tensor._wrap(values),)
        if return_inverse:
            result += (Tensor._wrap(xp.astype(inverse, xp.int64)),)
        if return_counts:
            result += (Tensor._wrap(xp.astype(counts, xp.int64)),)
        return result[0] if len(result) == 1 else result

    def index_select(self, dim, index):
        """The slices at `index` (a 1-D integer tensor) along `dim`: a copy."""
        axis = _dim(dim, self.ndim)
        index = _index_vector(index, self, "index_select")
        size = self.shape[axis] if self.ndim else 1
        _check_index_range(index, size, f"index_select: index {{}} is out of range for dim {axis} with size {size}")
        if self.ndim == 0:
            return ops.IndexSelect.apply(self.reshape(1), 0, index).reshape(())
        return ops.IndexSelect.apply(self, axis, index)

    def masked_select(self, mask):
        """The elements where `mask` is True, as a 1-D tensor."""
        if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
            raise TypeError("masked_select expects a bool mask tensor: use mask.bool() or a comparison (x > 0)")
        backend.same_device([self.array, mask.array])
        if not _broadcastable(mask.shape, self.shape):
            raise ShapeError(f"masked_select: the mask's shape {list(mask.shape)} does not broadcast with the "
                             f"tensor's {list(self.shape)}")
        return ops.MaskedSelect.apply(self, mask)

    def repeat_interleave(self, repeats, dim=None, *, output_size=None, axis=None):
        """Each element (each slice along `dim`) repeated `repeats` times, or repeats[i] times for
        element i; with dim=None, of the flattened tensor."""
        if axis is not None:
            dim = numpy_names.dim_or_axis("repeat_interleave", dim, axis)
        if dim is not None and self.ndim == 0:
            raise IndexError(f"repeat_interleave: a 0-d tensor has no dim {dim} to repeat along: leave dim out "
                             "(it repeats the flattened tensor)")
        x = self.reshape(-1) if dim is None else self
        axis = 0 if dim is None else _dim(dim, x.ndim)
        n = x.shape[axis]
        if isinstance(repeats, Tensor) and repeats.ndim <= 1 and repeats.numel() == 1:
            repeats = _as_index_tensor(repeats, x, "repeat_interleave").item()  # one count for every element
        if isinstance(repeats, (int, np.integer)):
            if repeats < 0:
                raise ValueError(f"repeat_interleave: repeats must be 0 or more, got {repeats}")
            total = n * int(repeats)
            _check_output_size(output_size, total)
            # a view of the slices side by side, expanded and flattened: PyTorch's way (ViewBackward0)
            expanded = x.unsqueeze(axis + 1).expand(x.shape[:axis + 1] + (int(repeats),) + x.shape[axis + 1:])
            return expanded.reshape(x.shape[:axis] + (total,) + x.shape[axis + 1:])
        counts = _as_index_tensor(repeats, x, "repeat_interleave")
        if counts.ndim > 1:
            raise ShapeError(f"repeat_interleave: repeats must be a number or a 1-d tensor, got shape "
                             f"{list(counts.shape)}")
        counts = backend.to_host(counts.array).reshape(-1)
        if counts.shape[0] != n:
            raise ShapeError(f"repeat_interleave: {counts.shape[0]} repeats given for dim {axis} of size {n} "
                             f"(shape {list(x.shape)}): give one per element, or one number")
        if (counts < 0).any():
            raise ValueError(f"repeat_interleave: repeats must be 0 or more, got {counts.min()}")
        _check_output_size(output_size, int(counts.sum()))
        index = Tensor._wrap(backend.from_host(np.repeat(np.arange(n), counts), x.device))
        return x.index_select(axis, index)

    def roll(self, shifts, dims=None):
        """The elements shifted by `shifts` along `dims`, wrapping around."""
        shift_tuple = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
        if not shift_tuple:
            raise ValueError("roll: no shifts given: give a shift (and a dim) to roll by")
        if dims is None or isinstance(dims, (tuple, list)) and not dims:  # dims=() rolls the flattened tensor too
            if len(shift_tuple) != 1:
                raise ValueError(f"roll: {len(shift_tuple)} shifts need as many dims, got dims=None (which rolls "
                                 "the flattened tensor by one shift)")
            return ops.Roll.apply(self, int(shift_tuple[0]), None)
        dim_tuple = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
        if len(shift_tuple) != len(dim_tuple):
            raise ValueError(f"roll: shifts and dims must align, got {len(shift_tuple)} shifts and "
                             f"{len(dim_tuple)} dims")
        if self.ndim == 0:
            raise IndexError(f"roll: a 0-d tensor has no dim {dim_tuple[0]} to roll along: leave dims out")
        axes = tuple(_dim(d, self.ndim) for d in dim_tuple)
        return ops.Roll.apply(self, tuple(int(s) for s in shift_tuple), axes)

    def flip(self, *dims):
        """The elements in reverse order along the given dims: a copy."""
        dims = _shape_arg(dims, lowest=None)  # flip(0, 1) or flip((0, 1))
        axes = _dims_tuple(dims, self.ndim)
        if len(set(axes)) != len(axes):
            repeated = next(d for d in axes if axes.count(d) > 1)
            raise ValueError(f"flip: dim {repeated} appears more than once in {list(dims)}")
        return ops.Flip.apply(self, axes) if self.ndim else ops.Flip.apply(self, ())

    def fliplr(self):
        """The columns in reverse order (dim 1)."""
        if self.ndim < 2:
            raise ShapeError(f"fliplr expects at least 2 dims, got shape {list(self.shape)}")
        return self.flip(1)

    def flipud(self):
        """The rows in reverse order (dim 0)."""
        if self.ndim < 1:
            raise ShapeError("flipud expects at least 1 dim, got a 0-d tensor")
        return self.flip(0)

    def nonzero(self, *, as_tuple=False):
        """The indices of the nonzero (True) elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim."""
        xp = backend.namespace(self.array)
        array = xp.reshape(self.array, (1,)) if self.ndim == 0 else self.array
        places = [xp.astype(p, xp.int64) for p in xp.nonzero(array)]
        if as_tuple:
            return tuple(Tensor._wrap(p) for p in places)
        if self.ndim == 0:
            return Tensor._wrap(xp.zeros((places[0].shape[0], 0), dtype=xp.int64, **backend.creation_kwargs(xp)))
        return Tensor._wrap(xp.stack(places, axis=1))

    def argwhere(self):
        """The indices of the nonzero elements, one row per element: shape (count, ndim)."""
        return self.nonzero()

    def scatter(self, dim, index, src=None, value=None, *, reduce=None):
        """A copy with src's values (or one number) written at `index` along `dim`:
        `out[i][index[i][j]] = src[i][j]` for dim 1 (repeated indices: one of the writes wins)."""
        return ops.Scatter.apply(self, *self._scatter_args("scatter", dim, index, src, value, reduce), False)

    def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
        """In place: src (or value) written along `dim` at `index`: `self[i][index[i][j]] = src[i][j]`."""
        return self._inplace(ops.Scatter, *self._scatter_args("scatter_", dim, index, src, value, reduce), False)

    def scatter_add(self, dim, index, src):
        """A copy with src's values added at `index` along `dim`, repeated indices adding up."""
        return ops.Scatter.apply(self, *self._scatter_args("scatter_add", dim, index, src, None, None), True)

    def scatter_add_(self, dim, index, src):
        """In place: src added along `dim` at `index`; repeated indices add up."""
        return self._inplace(ops.Scatter, *self._scatter_args("scatter_add_", dim, index, src, None, None), True)

    def _scatter_args(self, name, dim, index, src, value, reduce):
        """(axis, index array, src tensor or number) for Scatter, after PyTorch's checks."""
        if reduce is not None:
            raise ValueError(f"{name}: reduce={reduce!r} is not supported: use scatter_add for 'add'")
        if (src is None) == (value is None):
            raise TypeError(f"{name} takes src (a tensor or a number) or value, e.g. x.{name}(1, index, src)")
        if src is None or not isinstance(src, Tensor):
            src = _value_to_write(self, _scalar(value if src is None else src))
        else:
            if src.dtype is not self.dtype:
                raise TypeError(f"{name}: src is {src.dtype} but the tensor is {self.dtype}: convert it "
                                f"(src.to({self.dtype}))")
            backend.same_device([self.array, src.array])
        if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
            raise TypeError(f"{name} expects an int64 index tensor, got "
                            f"{index.dtype if isinstance(index, Tensor) else type(index).__name__}")
        backend.same_device([self.array, index.array])
        axis = _dim(dim, self.ndim)
        # a 0-d tensor, index or src counts as a 1-d one of one element, as in PyTorch
        shape, ndim = self.shape or (1,), max(self.ndim, 1)
        index = index.reshape(1) if index.ndim == 0 else index
        src = src.reshape(1) if isinstance(src, Tensor) and src.ndim == 0 else src
        too_big = any(n > m for i, (n, m) in enumerate(zip(index.shape, shape)) if i != axis)
        too_big_src = isinstance(src, Tensor) and any(n > m for n, m in zip(index.shape, src.shape))
        if index.ndim != ndim or too_big or too_big_src or (isinstance(src, Tensor) and src.ndim != ndim):
            raise ShapeError(
                f"{name}: an index of shape {list(index.shape)} does not fit a tensor of shape {list(self.shape)}"
                + (f" and a src of shape {list(src.shape)}" if isinstance(src, Tensor) else "")
                + f": all need {ndim} dims, and the index no more than the tensor's size in every dim but "
                f"dim {axis} (and no more than src's in any)"
            )
        size = shape[axis]
        _check_index_range(index, size, f"{name}: index {{}} is out of range for dim {axis} with size {size}")
        return axis, index, src  # (the index tensor: the op checks its version in backward)


# ---------------------------------------------------------------------------------------------
# helpers: dims, shapes, type promotion


def parse_to_args(args, kwargs, options=("non_blocking",)):
    """The (device, dtype) of a call to(device), to(dtype), to(device, dtype) or to(tensor).

    Keyword arguments other than device, dtype and the caller's `options` are refused by name."""
    for name in kwargs:
        if name not in ("device", "dtype") and name not in options:
            raise TypeError(f"to() got an unexpected keyword argument {name!r}")
    dev, dt = kwargs.get("device"), kwargs.get("dtype")
    for arg in args:
        if isinstance(arg, dtypes.dtype):
            dt = arg
        elif isinstance(arg, Tensor):
            dev, dt = arg.device, arg.dtype
        elif arg is not None:
            dev = arg
    return dev, dt


def _dim(dim, ndim):
    return ops.normalize_dim(dim, ndim)


def _dims_tuple(dim, ndim):
    return ops.normalize_dims(dim, ndim)


def _dims_or_none(dim, ndim):
    return None if dim is None else _dims_tuple(dim, ndim)


def _shape_arg(shape, lowest=0):
    """Accept both x.view(2, 3) and x.view((2, 3)) (and a Size), as a tuple of ints, each >= `lowest`:
    0 for the sizes of a new tensor, -1 where -1 stands for a size to infer or keep (view, reshape,
    expand), None for dims (permute)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    if len(shape) == 1 and type(shape[0]) is int and (lowest is None or shape[0] >= lowest):
        return tuple(shape)  # (the common cases, decided without the loops below)
    if len(shape) == 2 and type(shape[0]) is int and type(shape[1]) is int and (
            lowest is None or (shape[0] >= lowest and shape[1] >= lowest)):
        return tuple(shape)
    if not all(hasattr(n, "__index__") and not isinstance(n, bool) for n in shape):
        raise TypeError(f"sizes must be integers, got {list(shape)}")
    shape = tuple(n.__index__() for n in shape)
    if lowest is not None and any(n < lowest for n in shape):
        raise ShapeError(f"invalid size {min(shape)} in {list(shape)}: sizes must be 0 or more"
                         + (", or -1 for a size to infer" if lowest == -1 else ""))
    return shape


def _reshape_arg(shape, numel):
    """The target of view/reshape: at most one -1, which a tensor with no elements cannot infer."""
    shape = _shape_arg(shape, lowest=-1)
    if shape.count(-1) > 1:
        raise ShapeError(f"only one size in {list(shape)} can be -1 (inferred from the others)")
    if -1 in shape and 0 in shape:  # (the product of the other sizes is 0)
        raise ShapeError(f"cannot reshape a tensor of {numel} elements into shape {list(shape)}: the -1 could "
                         "be any size there; give all the sizes")
    return shape


def _scalar(value, name="value"):
    """A Python number from a number or a 0-d tensor (for fill values and clamp bounds)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:  # PyTorch takes only 0-d tensors here: a [1]-shaped one would hide a mistake
            raise ShapeError(
                f"the {name} must be a number or a 0-d tensor, got a tensor of shape {list(value.shape)}: "
                "use value.item() or value.squeeze()"
            )
        return value.item()
    return value


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _value_to_write(tensor, value):
    """The value of x[key] = value, fill_ or masked_fill, converted to x's dtype as PyTorch's copy does.

    A write keeps x's dtype whatever the value's: 2.7 written into an int64 tensor is 2, as in PyTorch
    (arithmetic in place, x += 2.7, refuses instead: see _inplace_operand).
    """
    if isinstance(value, Tensor):
        return value if value.dtype is tensor.dtype else value.to(tensor.dtype)
    if isinstance(value, (numbers.Number, np.bool_)):
        if tensor.dtype is dtypes.bool_:
            return bool(value)
        if tensor.dtype is dtypes.float32 and math.isfinite(value) and abs(value) > _FLOAT32_MAX:
            raise OverflowError(f"{value} does not fit in a float32 tensor (it would become inf): use float64")
        if tensor.dtype.is_floating_point:
            return float(value)
        info = np.iinfo(tensor.dtype.name)
        if not (math.isfinite(value) and info.min <= int(value) <= info.max):
            raise OverflowError(f"{value} does not fit in a {tensor.dtype} tensor (from {info.min} to {info.max}): "
                                "use a float tensor, or a number in that range")
        return int(value)  # int() truncates, as PyTorch
    return Tensor._from_data(value, dtype=tensor.dtype, device=tensor.device)


def _all_dims_if_empty(dim):
    """sum(dim=()) reduces over every dim, as in PyTorch (NumPy's axis=() reduces over none)."""
    return None if isinstance(dim, (tuple, list)) and len(dim) == 0 else dim


def _check_differentiable_dtype(x, dtype, name):
    """An op of x into an integer dtype has no gradient: refused for an x that records one, as in PyTorch."""
    if dtype is not None and not dtype.is_floating_point and x.requires_grad and autograd.grad_mode.enabled:
        raise TypeError(f"{name} would give a {dtype} result from a tensor that requires grad, and an integer result "
                        "has no gradient: detach() the tensor first, or keep a floating point dtype")


def _check_not_0d(x, name):
    if x.ndim == 0:
        raise ShapeError(f"{name} expects a tensor with at least 1 dim, got a 0-d tensor (a single number): "
                         "reshape it to 1-d first (x.reshape(1))")


def _amax(x, dim, keepdim, take_min, name):
    """amax and amin: over every dim, or the dims given (none of size 0); of bools, any() and all()."""
    dims = _all_dims_if_empty(dim)
    for d in (None,) if dims is None else dims if isinstance(dims, (tuple, list)) else (dims,):
        _check_not_empty(x, d, name)
    if x.dtype is dtypes.bool_:
        return ops.Amax.apply(x.long(), dims, keepdim, take_min) != 0
    return ops.Amax.apply(x, dims, keepdim, take_min)


def _check_not_bool(x, name):
    if x.dtype is dtypes.bool_:
        raise TypeError(f"{name} is not defined for bool tensors: convert with .long() or .float() first")


def _check_floating(x, name):
    if not x.dtype.is_floating_point:  # PyTorch has no integer softmax either: it would round to 0 and 1
        raise TypeError(f"{name} needs a floating point tensor, got {x.dtype}: use x.float(), or "
                        f"{name}(x, dim, dtype=tinyattn.float32)")


def _floating(x):
    """Integer inputs of exp, log, softmax ... become float32 first, as in PyTorch."""
    return x if _numpy_float(x) or x.dtype.is_floating_point else x.to(dtypes.default_float)


def _numpy_float(x):
    """Whether x holds a NumPy array of a float dtype: the common case, told from the array itself
    (no lookup of the tinyattn dtype)."""
    array = x.array
    return type(array) is np.ndarray and array.dtype.kind == "f"


def _scaled_sum(input, product, inner, beta, alpha, name):
    """beta * input + alpha * product (addmm, baddbmm); input broadcasts to the product's shape, and
    with beta=0 it is not used at all (its NaN and inf do not reach the result, its gradient is 0), as
    in PyTorch. A product over `inner` = 0 numbers is 0 whatever alpha is (PyTorch's, too)."""
    if ops.broadcast_shape(input.shape, product.shape) != tuple(product.shape):
        raise ShapeError(f"{name}: the input's shape {list(input.shape)} does not broadcast to the product's "
                         f"{list(product.shape)}")
    if input.dtype is not product.dtype:  # no silent promotion, as in PyTorch
        raise TypeError(f"{name}: the input is {input.dtype} and the matrices are {product.dtype}: convert one "
                        f"(input.to({product.dtype}))")
    if alpha != 1 and inner:
        product = product * alpha
    input = input.expand(product.shape)  # (beta times every element: beta times no elements is no elements)
    if beta == 0:
        if not input.requires_grad:
            return product
        everywhere = functions.ones(product.shape, dtype=dtypes.bool_, device=input.device)
        return product + input.masked_fill(everywhere, 0)  # in the graph, with a gradient of 0
    return product + (input if beta == 1 else input * beta)


def _as_index_tensor(index, like, name):
    """An integer tensor of indices (from a tensor, a list or a number) on like's device."""
    if not isinstance(index, Tensor):
        index = Tensor._from_data(index, device=like.device)
    if index.dtype not in (dtypes.int64, dtypes.int32):
        raise TypeError(f"{name} expects integer indices (int64), got {index.dtype}")
    backend.same_device([like.array, index.array])
    return index


def _index_vector(index, like, name):
    """A 1-D int64 index (a 0-d index counts as one element), as index_select takes it."""
    index = _as_index_tensor(index, like, name)
    if index.ndim > 1:
        raise ShapeError(f"{name} expects a 1-D index, got shape {list(index.shape)}")
    return index.reshape(-1).long()


def _index_mask(x, dim, index, value):
    """index_fill's places as a bool mask that broadcasts with x: True at `index` along `dim`."""
    axis = _dim(dim, x.ndim)
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index (a tinyattn.long tensor of positions)")
    if index.ndim > 1:
        raise ShapeError(f"index_fill: the index has to be a vector or a single number, got shape {list(index.shape)}")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise ShapeError(f"index_fill only supports a 0-dimensional value tensor, but got tensor with {value.ndim} "
                         "dimension(s): use value.squeeze() or a number")
    backend.same_device([x.array, index.array])
    size = x.shape[axis] if x.ndim else 1
    positions = index.reshape(-1)
    xp = backend.namespace(x.array)
    if positions.numel():  # negative indices count from the end, as in PyTorch
        low, high = int(xp.min(positions.array)), int(xp.max(positions.array))
        if low < -size or high >= size:
            raise IndexError(f"index_fill: index {high if high >= size else low} is out of range for dim {axis} "
                             f"with size {size} (valid indices are {-size} to {size - 1})")
    places = xp.arange(size, **backend.creation_kwargs(xp))
    hit = xp.any(places[:, None] == (positions.array[None, :] % size), axis=1)  # (size,): filled or not
    return Tensor._wrap(xp.reshape(hit, tuple(size if d == axis else 1 for d in range(x.ndim))))


def _check_index_range(index, size, message):
    """Indices must lie in [0, size): checked here, as CuPy would wrap them around."""
    if index.numel():
        xp = backend.namespace(index.array)
        low, high = int(xp.min(index.array)), int(xp.max(index.array))
        if low < 0 or high >= size:
            raise IndexError(message.format(high if high >= size else low) + f" (valid indices are 0 to {size - 1})")


def _check_output_size(output_size, total):
    if output_size is not None and output_size != total:
        raise ValueError(f"repeat_interleave: output_size={output_size} but the repeats make {total} elements")


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """tinyattn.linalg.vector_norm: (sum |x|^ord)^(1/ord) over dim (every element by default)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"vector_norm expects a tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"vector_norm needs a floating point tensor, got {x.dtype}: use .float()")
    if dtype is not None:
        if not dtype.is_floating_point or dtype.itemsize < x.dtype.itemsize:
            raise TypeError(f"vector_norm: dtype={dtype} for a {x.dtype} tensor: give a floating point dtype at "
                            "least as wide as the tensor's")
        x = x.to(dtype)
    if isinstance(ord, (bool, str)) or not isinstance(ord, numbers.Real):
        raise ValueError(f"vector_norm: ord must be a number (2, 1, inf, -inf, 0, ...), got {ord!r}")
    dim = _all_dims_if_empty(dim)
    if ord < 0 or ord == math.inf:  # the min, max or a negative power of no numbers: undefined
        for d in (None,) if dim is None else dim if isinstance(dim, (tuple, list)) else (dim,):
            if (x.numel() == 0) if d is None else (x.ndim and x.shape[_dim(d, x.ndim)] == 0):
                raise RuntimeError(f"vector_norm: the {ord} norm of no numbers (shape {list(x.shape)}, dim={dim}) "
                                   "is undefined: reduce over dims whose size is not 0")
    return ops.LinalgVectorNorm.apply(x, float(ord), dim, keepdim)


def _python_dtype(value):
    if isinstance(value, bool):
        return dtypes.bool_
    if isinstance(value, numbers.Integral):
        return dtypes.int64
    if isinstance(value, numbers.Real):
        return dtypes.default_float
    raise TypeError(f"unsupported operand type for a tensor op: {type(value).__name__}")


def result_dtype(*operands):
    """PyTorch's type promotion: dimensioned tensors first, then 0-d tensors, then Python numbers.

    A 0-d tensor or a Python number only changes the result when it is of a higher category
    (bool < integer < float): `int_tensor * 0.5` is float32, `float32_tensor * 2.0` stays float32.
    """
    by_priority = [None, None, None]
    for value in operands:
        if isinstance(value, Tensor):
            d, level = value.dtype, 0 if value.ndim else 1
        else:
            d, level = _python_dtype(value), 2
        by_priority[level] = d if by_priority[level] is None else dtypes.promote(by_priority[level], d)
    result = None
    for d in by_priority:
        if d is not None and (result is None or dtypes.category(d) > dtypes.category(result)):
            result = d if result is None else dtypes.promote(result, d)
    return result


def _as_operand(value, like):
    """The other operand of a binary op: tensors and Python numbers as they are, the rest a tensor."""
    if isinstance(value, (Tensor, numbers.Number)):
        return value.item() if isinstance(value, np.generic) else value
    return Tensor._from_data(value, device=like.device)


def _to_one_device(a, b):
    """A 0-d CPU tensor meets a tensor on the GPU there, as a number would (PyTorch allows it too)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor) and type(a.array) is not type(b.array):
        if a.ndim == 0 and a.device.type == "cpu":
            return a.to(b.device), b
        if b.ndim == 0 and b.device.type == "cpu":
            return a, b.to(a.device)
    return a, b  # anything else on two devices is an error, raised by the op


def _float_tensor_and_number(t, number):
    return (isinstance(t, Tensor) and type(number) in (int, float)
            and backend.dtype_of(t.array).is_floating_point)


def _promote(a, b, true_division=False, subtraction=False):
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.array.dtype is b.array.dtype:
        target = a.dtype
        if subtraction and target is dtypes.bool_:
            _check_no_bool_subtraction(a, b)
        if target.is_floating_point or not true_division:
            return a, b  # the common case: nothing to convert
    elif _float_tensor_and_number(a, b) or _float_tensor_and_number(b, a):
        return a, b  # a float tensor keeps its dtype next to a Python number, as in PyTorch
    else:
        if subtraction:
            _check_no_bool_subtraction(a, b)
        target = result_dtype(a, b)
    if true_division and not target.is_floating_point:
        target = dtypes.default_float
    if isinstance(a, Tensor) and a.dtype is not target:
        a = a.to(target)
    if isinstance(b, Tensor) and b.dtype is not target:
        b = b.to(target)
    if target.itemsize < 8 and not target.is_floating_point and target is not dtypes.bool_:
        a, b = _wrapped_int(a, target), _wrapped_int(b, target)
    return a, b


def _wrapped_int(value, target):
    """A Python int outside the range of an integer dtype, wrapped around into it (uint8: 300 -> 44), as
    PyTorch converts it before computing; NumPy would refuse it."""
    if type(value) is not int:
        return value
    span = 1 << (8 * target.itemsize)
    low = 0 if target is dtypes.uint8 else -(span >> 1)
    return value if low <= value < low + span else (value - low) % span + low


def _binary(function, a, b):
    """Apply a binary op after PyTorch's type promotion; name both shapes if they don't broadcast."""
    if not _same_float(a, b):  # (two float tensors of one dtype, or one and a Python number: nothing to do)
        tensor = a if isinstance(a, Tensor) else b
        a, b = _to_one_device(_as_operand(a, tensor), _as_operand(b, tensor))
        a, b = _promote(a, b, true_division=function is ops.Div, subtraction=function is ops.Sub)
    try:
        return function.apply(a, b)
    except ValueError:
        shapes = [list(x.shape) for x in (a, b) if isinstance(x, Tensor)]
        if len(shapes) == 2 and not _broadcastable(*shapes):
            raise ShapeError(
                f"{function.__name__.lower()}: shapes {shapes[0]} and {shapes[1]} cannot be broadcast "
                "together (each dim, aligned from the right, must be equal or 1)"
            ) from None
        raise


def _same_float(a, b):
    """The common case of a binary op, told at once: NumPy float tensors of one dtype, or such a tensor
    and a Python int or float (which takes the tensor's dtype). No conversion or promotion is needed."""
    if isinstance(a, Tensor):
        x = a.array
        if isinstance(b, Tensor):
            y = b.array
            return type(x) is np.ndarray and type(y) is np.ndarray and x.dtype is y.dtype and x.dtype.kind == "f"
        return type(b) in (int, float) and type(x) is np.ndarray and x.dtype.kind == "f"
    if isinstance(b, Tensor) and type(a) in (int, float):
        y = b.array
        return type(y) is np.ndarray and y.dtype.kind == "f"
    return False


def _broadcastable(s, t):
    return all(m == n or m == 1 or n == 1 for m, n in zip(reversed(s), reversed(t)))


def _promoted_arrays(a, b):
    tensor = a if isinstance(a, Tensor) else b
    a, b = _promote(*_to_one_device(_as_operand(a, tensor), _as_operand(b, tensor)))
    arrays = [x.array if isinstance(x, Tensor) else x for x in (a, b)]
    tensors = [x.array for x in (a, b) if isinstance(x, Tensor)]
    backend.same_device(tensors)
    if len(tensors) == 2 and not _broadcastable(tensors[0].shape, tensors[1].shape):
        raise ShapeError(
            f"shapes {list(tensors[0].shape)} and {list(tensors[1].shape)} cannot be broadcast together"
        )
    return arrays


def _check_no_bool_subtraction(a, b):
    """a - b with a bool tensor is refused, as in PyTorch (NumPy refuses bool - bool, computes int - bool)."""
    bools = [isinstance(x, bool) or isinstance(x, Tensor) and x.dtype is dtypes.bool_ for x in (a, b)]
    if all(bools):
        raise TypeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                        "Use the `^` or `logical_xor()` operator instead.")
    if any(bools):  # one bool tensor, or a Python True/False (PyTorch takes it as a bool tensor)
        raise TypeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                        "to invert a mask, use the `~` or `logical_not()` operator instead.")


def _check_no_bool_negation(x):
    if x.dtype is dtypes.bool_:
        raise TypeError("negation, the `-` operator, is not defined for bool tensors: to invert a mask, use the "
                        "`~` or `logical_not()` operator instead")


def _check_integer_divisor(a, b, symbol):
    """Integer // and % by zero raise ZeroDivisionError, as in PyTorch: NumPy would quietly give 0.

    `a` and `b` are promoted arrays or numbers; float division by zero keeps its inf and nan.
    """
    dtype = backend.dtype_of(a if hasattr(a, "dtype") else b)
    if dtype is dtypes.bool_:
        raise TypeError(f"{symbol} is not defined for two bool tensors: convert one with .long() first")
    if dtype.is_floating_point:
        return
    has_zero = bool(backend.namespace(b).any(b == 0)) if hasattr(b, "dtype") else b == 0
    if has_zero and all(x.size for x in (a, b) if hasattr(x, "dtype")):  # an empty result divides nothing
        raise ZeroDivisionError(
            f"integer {symbol} by zero: the divisor holds a 0 (NumPy would give 0 there, PyTorch raises); "
            "mask the zeros out first, or use floats (x.float()) to get inf and nan"
        )


@backend.quiet_float_errors  # a float division by zero gives inf or NaN silently, as in PyTorch
def _floor_divide(a, b):
    _check_integer_divisor(a, b, "//")
    return a // b


@backend.quiet_float_errors
def _remainder(a, b):
    _check_integer_divisor(a, b, "%")
    result = a % b
    if backend.is_float(result):  # a zero takes the dividend's sign, as in PyTorch (NumPy gives the divisor's)
        xp = backend.namespace(result)
        result = xp.where(result == 0, xp.copysign(result, a), result)
    return result


def _bitwise(compute, symbol):
    """compute(a, b) for bool and integer operands; floats are refused, as in PyTorch."""

    def checked(a, b):
        _check_bitwise(symbol, a, b)
        return compute(a, b)

    return checked


def _check_bitwise(symbol, *operands):
    if any(backend.is_float(x) if hasattr(x, "dtype") else isinstance(x, float) for x in operands):
        raise TypeError(f"{symbol} is only defined for bool and integer tensors, not floating point ones: "
                        "compare first (x > 0) to get a bool tensor")


def _no_grad_binary(compute, a, b):
    """Comparisons, //, %, bitwise ops: computed on arrays, no graph."""
    if not isinstance(b, (Tensor, numbers.Number, np.generic)) and not isinstance(b, (list, tuple)):
        return NotImplemented
    return Tensor._wrap(compute(*_promoted_arrays(a, b)))


def _inplace_operand(tensor, other):
    """The operand of an in-place op, cast to the tensor's dtype (which an in-place op keeps)."""
    if isinstance(other, Tensor):
        if other.dtype is not tensor.dtype:
            if dtypes.category(other.dtype) > dtypes.category(tensor.dtype):
                raise TypeError(
                    f"result type {other.dtype} can't be written into a {tensor.dtype} tensor in place"
                )
            other = other.to(tensor.dtype)
        return _fits_in_place(tensor, other)
    if not isinstance(other, numbers.Number):  # a list or NumPy array: refused as a tensor of its dtype would be
        if dtypes.category(_inferred_dtype(other)) > dtypes.category(tensor.dtype):
            raise TypeError(
                f"result type {_inferred_dtype(other)} can't be written into a {tensor.dtype} tensor in place"
            )
        return _fits_in_place(tensor, Tensor._from_data(other, dtype=tensor.dtype, device=tensor.device))
    if dtypes.category(_python_dtype(other)) > dtypes.category(tensor.dtype):
        raise TypeError(f"a {type(other).__name__} can't be written into a {tensor.dtype} tensor in place")
    return other.item() if isinstance(other, np.generic) else other


def _check_not_empty(x, dim, name):
    """max, min, argmax and argmin of no numbers are undefined: refused, as in PyTorch."""
    if dim is None:
        if x.numel() == 0:
            error = IndexError if name.startswith("arg") else RuntimeError  # PyTorch's types
            raise error(f"{name}() of a tensor with no elements (shape {list(x.shape)}) is undefined: give a dim "
                        "whose size is not 0, or check numel() first")
    elif x.ndim and x.shape[_dim(dim, x.ndim)] == 0:
        raise IndexError(f"{name}(): dim {dim} of the tensor of shape {list(x.shape)} has size 0, and there is no "
                         f"{name.removeprefix('arg')} of no numbers: reduce over a dim whose size is not 0")


def _fits_in_place(tensor, other):
    """An in-place operand must broadcast to the tensor's own shape (which the op keeps)."""
    if other.array.shape == tensor.array.shape:
        return other
    shape = ops.broadcast_shape(tensor.shape, other.shape)
    if shape != tuple(tensor.shape):
        problem = (f"doesn't match the broadcast shape {list(shape)}" if shape is not None
                   else f"cannot be broadcast with the operand's shape {list(other.shape)}")
        raise ShapeError(f"output with shape {list(tensor.shape)} {problem}: an in-place op needs an operand that "
                         "broadcasts to the tensor's shape; use the out-of-place op (a = a + b)")
    return other


def _argext(x, dim, keepdim, name):
    xp = backend.namespace(x.array)
    _check_not_bool(x, name)
    _check_not_empty(x, dim, name)
    if dim is not None and x.ndim == 0:  # one number (dim 0 or -1): its index is 0
        _dim(dim, 0)
        return Tensor._wrap(xp.zeros((), dtype=xp.int64, **backend.creation_kwargs(xp)))
    if dim is None:
        flat = xp.reshape(x.array, (-1,))
        result = getattr(xp, name)(flat)
        if keepdim:
            result = xp.reshape(result, (1,) * x.ndim)
    else:
        result = getattr(xp, name)(x.array, axis=_dim(dim, x.ndim), keepdims=keepdim)
    return Tensor._wrap(xp.astype(result, xp.int64))


def _mask_tensor(mask, like):
    if not isinstance(mask, Tensor):
        mask = Tensor._from_data(mask, device=like.device)
    if mask.dtype is not dtypes.bool_:
        raise TypeError(f"masked_fill expects a bool mask, got {mask.dtype}: use mask.bool() or mask == 0")
    backend.same_device([like.array, mask.array])
    if ops.broadcast_shape(mask.shape, like.shape) != like.shape:
        raise ShapeError(f"the mask's shape {list(mask.shape)} does not broadcast to the tensor's {list(like.shape)}")
    return mask  # (a tensor: the op checks its version in backward)


def _index_tensors(key):
    """The index tensors (not 0-d integer ones, which index as ints) of a key: they go to the index
    ops as arguments, so that one changed in place after the forward makes backward raise."""
    if isinstance(key, Tensor):
        return (key,) if key.ndim or key.dtype is dtypes.bool_ else ()
    if type(key) is not tuple:
        return ()
    return tuple(p for p in key if isinstance(p, Tensor) and (p.ndim or p.dtype is dtypes.bool_))


def _array_key(key, tensor):
    """An index key with tensors and lists turned into arrays on the tensor's device."""
    if type(tensor.array) is np.ndarray:
        simple = _simple_key(key, tensor.array.shape)
        if simple is not None:
            return simple
    parts = key if isinstance(key, tuple) else (key,)
    if sum(part is Ellipsis for part in parts) > 1:
        raise IndexError("an index can only have one ... (Ellipsis): write the other dims as `:`")
    if any(isinstance(p, bool) for p in parts) and any(not isinstance(p, (bool, slice)) and p is not None
                                                       and p is not Ellipsis for p in parts):
        # NumPy takes True and False as index arrays, which move the dims of ints and index lists around
        raise IndexError("a True or False in an index with index lists or tensors, or with ints, is not supported: "
                         "use None to add the dim")
    converted = []
    for part in parts:
        if isinstance(part, Tensor):
            backend.same_device([tensor.array, part.array])
            if part.dtype.is_floating_point:
                raise IndexError("tensors used as indices must be long, int or bool tensors")
            if part.dtype is dtypes.uint8:  # PyTorch's old mask dtype: a mask still, with its warning
                warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
                              "instead.", UserWarning, stacklevel=3)
                part = part != 0
            if part.ndim == 0 and part.dtype is not dtypes.bool_:
                part = int(part.array)
            else:
                part = part.array
        elif isinstance(part, slice):
            part = slice(*(None if v is None else _int_index(v) for v in (part.start, part.stop, part.step)))
            if part.step is not None and part.step <= 0:  # PyTorch has no negative steps (NumPy has)
                raise ValueError(
                    f"step must be greater than zero, got {part.step}: to reverse a dim, index it with "
                    "reversed positions, e.g. x[tinyattn.arange(len(x) - 1, -1, -1)]"
                )
        elif isinstance(part, (list, tuple, np.ndarray)):  # a tuple inside a key is a list of indices
            values = np.asarray(part)
            if values.size == 0:  # x[[]]: no indices (NumPy would make the empty list float64)
                values = values.astype(np.int64)
            if values.dtype.kind not in "iub":
                raise IndexError("lists used as indices must hold ints or bools")
            part = backend.from_host(values.astype(np.int64) if values.dtype.kind != "b" else values, tensor.device)
        elif isinstance(part, np.integer):
            part = int(part)
        converted.append(part)
    _check_index_bounds(converted, tensor.array.shape)
    return tuple(converted) if isinstance(key, tuple) else converted[0]


def _simple_key(key, shape):
    """The commonest keys, checked at once: an int, a slice of ints, a tuple of those, a 0-d integer
    tensor, each in range (x[3], x[2:10], x[k, j], x[:, 0], C[ix] with ix 0-d), and a NumPy int64 index
    tensor whose ids are all in range (C[ix]). None for anything else, which _array_key parses in full."""
    if isinstance(key, Tensor):
        array = key.array
        if type(array) is not np.ndarray:
            return None
        if array.ndim:  # an index array: negative ids read as unsigned are above any length, so one
            if array.dtype != np.int64 or not shape or not array.size:  # reduction checks the range
                return None
            return array if int(_UNSIGNED_MAX(array.view(np.uint64), axis=None)) < shape[0] else None
        if array.dtype.kind != "i":
            return None
        key = int(array)
    if type(key) is int:
        return key if shape and -shape[0] <= key < shape[0] else None
    if type(key) is slice:
        return key if shape and _plain_slice(key) else None
    if type(key) is tuple and len(key) <= len(shape):
        for part, size in zip(key, shape):
            if type(part) is int:
                if not -size <= part < size:
                    return None
            elif type(part) is not slice or not _plain_slice(part):
                return None
        return key
    return None


_UNSIGNED_MAX = np.maximum.reduce  # (np.max without its Python wrappers)


def _plain_slice(part):
    """A slice of Python ints (or None) with a positive step: what _array_key would keep as it is."""
    start, stop, step = part.start, part.stop, part.step
    return ((start is None or type(start) is int) and (stop is None or type(stop) is int)
            and (step is None or type(step) is int and step > 0))


def _pytorch_order(key, ndim):
    """PyTorch's order of the dims of x[key], as a permutation of NumPy's; None where the two agree.

    Index arrays (tensors, lists, masks) in a key give the dims of their broadcast shape. Both libraries
    put those dims where the first index array is if the index arrays stand together in the key, and in
    front of all other dims if something stands between them. They differ in what stands between:
    NumPy counts plain ints as index arrays, and a `...` as something between even where it stands for
    no dims; PyTorch applies the ints first, as selects (views), and then looks only at the dims the
    arrays index. So for x of shape (2, 3, 4), x[0, :, [0, 3]] is (2, 3) in NumPy (the 0 and the list
    stand apart) but (3, 2) in PyTorch, which indexes x[0], of shape (3, 4), with [:, [0, 3]].
    """
    if type(key) is int:
        return None
    parts = key if isinstance(key, tuple) else (key,)
    if not any(hasattr(p, "dtype") for p in parts):
        return None  # no index arrays (the common case: ints, slices, None, ...): the two agree
    if not any(p is Ellipsis for p in parts):  # `is`: `in` would compare the key's arrays with ==
        parts = parts + (Ellipsis,)  # the dims after the key are kept
    slots = []  # for each dim that the key indexes or adds: "int", "array", or "dim" (kept in the result)
    for part in parts:
        if part is Ellipsis:  # NumPy sees a `...` between index arrays even where it stands for no dims
            slots += ["..."] + ["dim"] * (ndim - sum(_dims_indexed(p) for p in parts))
        elif isinstance(part, bool):  # x[True] adds a dim, as None does: too rare to reorder around
            raise IndexError("a True or False in an index with index lists or tensors is not supported: "
                             "use None to add the dim")
        elif isinstance(part, int):
            slots.append("int")
        elif hasattr(part, "dtype"):  # an index array, or a mask over one or more dims
            slots += ["array"] * _dims_indexed(part)
        else:  # a slice or None
            slots.append("dim")

    def together(kinds):
        positions = [i for i, kind in enumerate(kinds) if kind in ("int", "array")]
        return positions == list(range(positions[0], positions[-1] + 1))

    if "array" not in slots:
        return None
    if together(slots) or not together([kind for kind in slots if kind not in ("int", "...")]):
        return None  # both put the index dims in the same place
    # NumPy put the index dims in front; PyTorch puts them after the `before` dims that precede them
    index_dims = max(1 if backend.dtype_of(p) is dtypes.bool_ else p.ndim  # a mask gives one dim
                     for p in parts if hasattr(p, "dtype"))
    before = slots[:slots.index("array")].count("dim")
    others = slots.count("dim")
    return (tuple(range(index_dims, index_dims + before)) + tuple(range(index_dims))
            + tuple(range(index_dims + before, index_dims + others)))


def _check_index_bounds(parts, shape):
    """An index out of range is an IndexError here (CuPy would silently wrap an index array around), and
    so is a key with more indices than the tensor has dims."""
    if len(parts) == 1 and type(parts[0]) is np.ndarray and parts[0].dtype.kind == "i" and shape:
        ids = parts[0]  # the commonest advanced key, C[ids]: one NumPy array of ints, checked at once
        if not ids.size or -shape[0] <= ids.min() and ids.max() < shape[0]:
            return
    consumed = [_dims_indexed(part) for part in parts]
    arrays = [part for part in parts if hasattr(part, "dtype")]
    if len(arrays) > 1:  # index arrays (a mask counts as the list of its True places) broadcast together
        shapes = [tuple(p.shape) if _is_index_array(p) else (_count_true(p),) for p in arrays]
        if ops.broadcast_shape(*shapes) is None:
            raise IndexError(f"the index arrays' shapes {[list(s) for s in shapes]} cannot be broadcast together")
    if sum(consumed) > len(shape):
        raise IndexError(f"too many indices for a tensor of shape {list(shape)}: the key indexes {sum(consumed)} "
                         f"dims, the tensor has {len(shape)}")
    dim = 0
    for part, width in zip(parts, consumed):
        if part is Ellipsis:
            dim += len(shape) - sum(consumed)
        elif isinstance(part, int) and not isinstance(part, bool) and not -shape[dim] <= part < shape[dim]:
            raise IndexError(f"index {part} is out of bounds for dim {dim} with size {shape[dim]} (valid indices are "
                             f"{-shape[dim]} to {shape[dim] - 1})")
        elif hasattr(part, "dtype") and not _is_index_array(part) and tuple(part.shape) != shape[dim:dim + width]:
            raise IndexError(f"the mask's shape {list(part.shape)} does not match the shape "
                             f"{list(shape[dim:dim + width])} of the dims {dim} to {dim + width - 1} it indexes")
        elif _is_index_array(part) and part.size and dim < len(shape):
            xp, size = backend.namespace(part), shape[dim]
            low, high = int(xp.min(part)), int(xp.max(part))
            if low < -size or high >= size:
                bad = high if high >= size else low
                raise IndexError(f"index {bad} is out of bounds for dim {dim} with size {size}")
        dim += width


def _count_true(mask):
    xp = backend.namespace(mask)
    return int(xp.sum(xp.astype(mask, xp.int64)))


def _is_index_array(part):
    return hasattr(part, "dtype") and backend.dtype_of(part) is not dtypes.bool_


def _dims_indexed(part):
    """How many dims of the indexed tensor one part of a key uses up."""
    if part is None or part is Ellipsis or isinstance(part, bool):  # (True and False add a dim, as None does)
        return 0
    if hasattr(part, "dtype") and not _is_index_array(part):  # a boolean mask
        return part.ndim
    return 1


def _sequence_as_tuple(key):
    """A short list key that holds a list, a tensor, a slice, None or Ellipsis, as PyTorch reads it (and
    NumPy did before 1.23): a tuple of indices, one per dim, with PyTorch's deprecation warning.
    Any other list (x[[0, 2]]) is one index array for the first dim."""
    if len(key) < 32:
        for item in key:
            if (isinstance(item, (Tensor, np.ndarray, slice, list, tuple, range, str)) or item is None
                    or item is Ellipsis):
                warnings.warn(SEQUENCE_KEY, UserWarning, stacklevel=3)
                return tuple(key)
    return key


def _int_index(value):
    return int(value) if isinstance(value, Tensor) else value.__index__()


def matmul(a, b):
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError("matmul expects two tensors")
    if a.dtype is not b.dtype:  # PyTorch does not promote in matmul: a float64 result would surprise
        raise TypeError(
            f"matmul expects two tensors of the same dtype, got {a.dtype} and {b.dtype}: convert one, "
            "e.g. x.float() @ w or x @ w.to(x.dtype)"
        )
    if a.dtype is dtypes.bool_:
        raise TypeError("matmul is not defined for bool tensors: convert with .float()")
    return ops.Matmul.apply(a, b)


def where(condition, input, other):
    if not isinstance(condition, Tensor) or condition.dtype is not dtypes.bool_:
        raise TypeError("where expects a bool tensor as its condition")
    like = input if isinstance(input, Tensor) else other if isinstance(other, Tensor) else condition
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):  # where(c, 1.0, 0.0): float32
        input = Tensor._from_data(input, dtype=result_dtype(input, other), device=condition.device)
    a, b = _promote(_as_operand(input, like), _as_operand(other, like))
    backend.same_device([condition.array] + [x.array for x in (a, b) if isinstance(x, Tensor)])
    shapes = [tuple(x.shape) for x in (condition, a, b) if isinstance(x, Tensor)]
    if ops.broadcast_shape(*shapes) is None:
        raise ShapeError(f"where: the shapes of the condition {list(condition.shape)}, input {list(ops.shape_of(a))} "
                         f"and other {list(ops.shape_of(b))} cannot be broadcast together")
    return ops.Where.apply(condition, a, b)


from . import autograd, counting, functions, ops  # noqa: E402  (these modules use Tensor)
from . import storage as _storage  # noqa: E402  (as_strided is an op)

register_tensor_class(Tensor)  # the engine's ops now give back tinyattn.Tensor (see tensor_core.py)

# in-place arithmetic that `Tensor._inplace_direct` runs as one NumPy call when there is no graph
_INPLACE_UFUNCS = {ops.Add: np.add, ops.Sub: np.subtract, ops.Mul: np.multiply, ops.Div: np.true_divide}
