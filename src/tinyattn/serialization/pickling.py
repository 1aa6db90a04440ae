"""PyTorch's pickle dialect: a protocol-2 writer that names torch's functions without importing torch,
a weights-only reader that runs nothing, and (for a file you trust) Python's own reader.

A `torch.save` file's `data.pkl` is a small program for pickle's stack machine. Tensors in it are calls
of `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)` whose
`storage` is a *persistent id*, `('storage', torch.FloatStorage, key, location, numel)`, standing for
the raw bytes kept in the zip under `data/<key>`.

Python's own unpickler calls whatever function a pickle names, so a file can run `os.system`. The
`Unpickler` here is an interpreter for the opcodes PyTorch's weights-only loader accepts (nothing
else), and a GLOBAL may only name what `ALLOWED` lists: each entry is tinyattn's own code for that
name (building a Tensor, an OrderedDict, a set...). Every other global and opcode raises
`UnpicklingError` naming it, unless the user declared it safe with `add_safe_globals`. Mirrors
`torch/_weights_only_unpickler.py`, as far as tinyattn can represent what it allows (no quantized,
sparse or complex tensors). `TrustedUnpickler` is Python's unpickler, for weights_only=False only.
"""

import codecs
import collections
import io
import pickle
import pickletools
import struct

import numpy as np

from .. import backend, dtypes
from ..errors import CheckpointError, UnpicklingError
from ..nn.module import Parameter
from ..tensor import Size, Tensor
from . import checks

PROTO, STOP, MARK = b"\x80", b".", b"("
NONE, NEWTRUE, NEWFALSE = b"N", b"\x88", b"\x89"
BININT, BININT1, BININT2, LONG1, BINFLOAT, BINUNICODE = b"J", b"K", b"M", b"\x8a", b"G", b"X"
EMPTY_TUPLE, TUPLE, TUPLE1, TUPLE2, TUPLE3 = b")", b"t", b"\x85", b"\x86", b"\x87"
EMPTY_LIST, APPEND, APPENDS, EMPTY_DICT, SETITEM, SETITEMS, EMPTY_SET = b"]", b"a", b"e", b"}", b"s", b"u", b"\x8f"
GLOBAL, REDUCE, BUILD, NEWOBJ, BINPERSID = b"c", b"R", b"b", b"\x81", b"Q"
BINPUT, LONG_BINPUT, BINGET, LONG_BINGET, SHORT_BINSTRING = b"q", b"r", b"h", b"j", b"U"

# ---------------------------------------------------------------------------------------------
# writing


class TorchName:
    """A name of PyTorch's (`torch._utils._rebuild_tensor_v2`, `torch.FloatStorage`) that the pickle
    names as a GLOBAL, written without importing PyTorch (Python's pickler would look it up)."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle only writes callables as the function of a reduce
        raise TypeError(f"{self.module}.{self.name} is a name written into a file, not a function")

    def __repr__(self):
        return f"<{self.module}.{self.name}>"


_REBUILD_TENSOR = TorchName("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = TorchName("torch._utils", "_rebuild_parameter")
_SIZE, _DEVICE = TorchName("torch", "Size"), TorchName("torch", "device")


class _StorageRecord:
    """Stands for a tensor's storage in the pickle; written as its persistent id."""

    def __init__(self, storage_class, key, location, numel):
        self.persistent_id = ("storage", TorchName("torch", storage_class), key, location, numel)


class Pickler(pickle._Pickler):
    """Writes `obj` as PyTorch's data.pkl: Python's own pickler at protocol 2 (its pure-Python form,
    whose `save` can be extended), with tinyattn's objects written under PyTorch's names:

    - a Tensor as `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
      hooks)` (a Parameter wraps that in `_rebuild_parameter`), its storage as a persistent id;
    - a dtype as the GLOBAL `torch.float32`, a device as `torch.device('cpu')`, a Size as `torch.Size`;
    - NumPy scalars as the Python numbers they hold (what a weights-only load reads).

    Anything else is pickled as Python pickles it (a Module: its class by name and its __dict__).
    `describe(tensor)` gives a tensor's storage record: (storage class name, key, location,
    storage numel, offset, size, stride).
    """

    def __init__(self, describe):
        self._out = io.BytesIO()
        super().__init__(self._out, protocol=2)
        self.describe = describe

    def dump(self, obj):
        try:
            super().dump(obj)
        except RecursionError:
            raise ValueError("cannot save an object nested this deeply (or one that contains itself "
                             "through a tuple)") from None
        return self._out.getvalue()

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, TorchName):
            self.write(GLOBAL + f"{obj.module}\n{obj.name}\n".encode("ascii"))
        elif isinstance(obj, dtypes.dtype):
            self.write(GLOBAL + f"torch\n{obj.name}\n".encode("ascii"))
        elif isinstance(obj, (np.bool_, np.integer, np.floating, np.complexfloating)):
            super().save(obj.item(), save_persistent_id)
        elif type(obj) is bytes and not obj:  # pickle writes b"" as builtins.bytes(), which torch refuses
            self.save_reduce(codecs.encode, ("", "latin1"), obj=obj)
        else:
            super().save(obj, save_persistent_id)

    def persistent_id(self, obj):
        return obj.persistent_id if type(obj) is _StorageRecord else None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self.reduce_tensor(obj)
        if isinstance(obj, backend.Device):
            return _DEVICE, (obj.type,) if obj.index is None else (obj.type, obj.index)
        if isinstance(obj, Size):
            return _SIZE, (tuple(obj),)
        return NotImplemented

    def reduce_tensor(self, tensor):
        if tensor.requires_grad and tensor.grad_fn is not None:
            raise RuntimeError("cannot save a non-leaf tensor that requires grad (as PyTorch refuses): save "
                               "tensor.detach()")
        hooks = collections.OrderedDict()  # the backward hooks PyTorch saves beside every tensor: none
        if isinstance(tensor, Parameter):  # _rebuild_parameter(data, requires_grad, hooks)
            return _REBUILD_PARAMETER, (Tensor._wrap(tensor.array), tensor.requires_grad, hooks)
        storage_class, key, location, numel, offset, size, stride = self.describe(tensor)
        storage = _StorageRecord(storage_class, key, location, numel)
        return _REBUILD_TENSOR, (storage, offset, tuple(size), tuple(stride), tensor.requires_grad, hooks)


# ---------------------------------------------------------------------------------------------
# reading


class Global:
    """What a GLOBAL the allowlist admits puts on the stack: inert, except that REDUCE (or NEWOBJ)
    may call its `call(unpickler, *args)`. Bound to an unpickler (`bind`), it is also a function,
    for Python's own unpickler (weights_only=False)."""

    def __init__(self, path, call=None, stored=None, unpickler=None):
        self.path = path
        self.call = call
        self.stored = stored  # for storage classes: the checks.StoredType of their elements
        self.unpickler = unpickler

    def bind(self, unpickler):
        return Global(self.path, self.call, self.stored, unpickler)

    def __call__(self, *args):
        if self.call is None or self.unpickler is None:
            raise UnpicklingError(f"the pickle calls {self.path}, which is not a function tinyattn runs")
        return self.call(self.unpickler, *args)

    def __repr__(self):
        return f"<{self.path}>"


class Storage:
    """A loaded storage: a 1-D array of its elements (already widened and on its device)."""

    def __init__(self, array, stored, key, numel):
        self.array, self.stored, self.key, self.numel = array, stored, key, numel


def _arguments(args, path, count, optional=0):
    if not isinstance(args, tuple) or not count <= len(args) <= count + optional:
        raise UnpicklingError(f"{path} called with {checks.short(args)}, not {count} argument(s)")
    return args + (None,) * (count + optional - len(args))


def _empty_hooks(hooks, path):
    if hooks is not None and (not isinstance(hooks, dict) or hooks):
        raise UnpicklingError(f"{path}: a tensor saved with backward hooks ({checks.short(hooks)}); "
                              "hooks are code, which tinyattn does not load")


def _rebuild_tensor(unpickler, *args, path="torch._utils._rebuild_tensor_v2"):
    storage, offset, size, stride, requires_grad, hooks, metadata = _arguments(args, path, 4, 3)
    if not isinstance(storage, Storage):
        raise UnpicklingError(f"{path}: the first argument is {checks.short(storage)}, not a storage")
    if requires_grad is None:
        requires_grad = False
    if not isinstance(requires_grad, bool):
        raise UnpicklingError(f"{path}: requires_grad is {checks.short(requires_grad)}, not a bool")
    _empty_hooks(hooks, path)
    if metadata is not None and (not isinstance(metadata, dict) or any(metadata.values())):
        raise UnpicklingError(f"{path}: tensor metadata {checks.short(metadata)} (a conjugate or negative "
                              "view) cannot be represented in tinyattn")
    return unpickler.make_tensor(storage, offset, size, stride, requires_grad)


def _rebuild_tensor_v1(unpickler, *args):
    return _rebuild_tensor(unpickler, *_arguments(args, "torch._utils._rebuild_tensor", 4),
                           path="torch._utils._rebuild_tensor")


def _rebuild_parameter(unpickler, *args, path="torch._utils._rebuild_parameter"):
    data, requires_grad, hooks, state = _arguments(args, path, 3, 1)
    if not isinstance(data, Tensor) or not isinstance(requires_grad, bool):
        raise UnpicklingError(f"{path} called with {checks.short(args)}: expected (tensor, bool, hooks)")
    _empty_hooks(hooks, path)
    if state not in (None, {}, (None, {}), ({}, {}), (None, None)):
        raise UnpicklingError(f"{path}: a Parameter with Python attributes ({checks.short(state)}); "
                              "tinyattn's Parameters have none")
    return unpickler.make_parameter(data, requires_grad)


def _rebuild_from_type_v2(unpickler, *args):
    path = "torch._tensor._rebuild_from_type_v2"
    func, new_type, inner, state = _arguments(args, path, 4)
    if not isinstance(func, Global) or func.call not in (_rebuild_tensor, _rebuild_parameter) or \
            not isinstance(new_type, Global) or new_type.path not in ("torch.Tensor", "torch.nn.parameter.Parameter"):
        raise UnpicklingError(f"{path} with {checks.short(args)}: only plain tensors and Parameters can be loaded")
    if state not in (None, {}, (None, {}), ({}, {})):
        raise UnpicklingError(f"{path}: a tensor with Python attributes ({checks.short(state)}) cannot be loaded")
    if not isinstance(inner, tuple):
        raise UnpicklingError(f"{path}: arguments {checks.short(inner)} are not a tuple")
    tensor = func.call(unpickler, *inner)
    if new_type.path == "torch.nn.parameter.Parameter" and not isinstance(tensor, Parameter):
        tensor = unpickler.make_parameter(tensor, tensor.requires_grad)
    return tensor


def _new_parameter(unpickler, *args):
    data, requires_grad = _arguments(args, "torch.nn.parameter.Parameter", 0, 2)
    if not isinstance(data, Tensor):
        raise UnpicklingError(f"torch.nn.Parameter of {checks.short(data)}, not of a tensor")
    return unpickler.make_parameter(data, True if requires_grad is None else requires_grad)


def _ordered_dict(unpickler, *args):
    (items,) = _arguments(args, "collections.OrderedDict", 0, 1)
    if items is not None and not isinstance(items, (list, dict)):
        raise UnpicklingError(f"collections.OrderedDict of {checks.short(items)}")
    return collections.OrderedDict(items or ())


def _counter(unpickler, *args):
    (items,) = _arguments(args, "collections.Counter", 0, 1)
    if items is not None and not isinstance(items, dict):
        raise UnpicklingError(f"collections.Counter of {checks.short(items)}")
    return collections.Counter(items or {})


def _set(unpickler, *args):
    (items,) = _arguments(args, "builtins.set", 0, 1)
    if items is not None and not isinstance(items, list):
        raise UnpicklingError(f"builtins.set of {checks.short(items)}, not of a list")
    return set(items or ())


def _complex(unpickler, *args):
    real, imag = _arguments(args, "builtins.complex", 0, 2)
    if not all(isinstance(x, (int, float)) or x is None for x in (real, imag)):
        raise UnpicklingError(f"builtins.complex of {checks.short(args)}, not of numbers")
    return complex(real or 0, imag or 0)


def _encode(unpickler, *args):
    text, encoding = _arguments(args, "_codecs.encode", 1, 1)
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise UnpicklingError(f"_codecs.encode{checks.short(args)}: only (str, 'latin1'), as pickle writes bytes")
    return text.encode("latin1")


def _bytearray(unpickler, *args):
    (data,) = _arguments(args, "builtins.bytearray", 0, 1)
    if data is not None and not isinstance(data, bytes):
        raise UnpicklingError(f"builtins.bytearray of {checks.short(data)}, not of bytes")
    return bytearray(data or b"")


def _size(unpickler, *args):
    (sizes,) = _arguments(args, "torch.Size", 0, 1)
    sizes = () if sizes is None else sizes
    if not isinstance(sizes, (tuple, list)) or not all(isinstance(n, int) and not isinstance(n, bool) for n in sizes):
        raise UnpicklingError(f"torch.Size of {checks.short(sizes)}, not of integers")
    return Size(sizes)


def _device(unpickler, *args):
    kind, index = _arguments(args, "torch.device", 1, 1)
    if not isinstance(kind, str) or not (index is None or (isinstance(index, int) and not isinstance(index, bool))):
        raise UnpicklingError(f"torch.device{checks.short(args)}")
    try:
        return backend.Device(kind, index)
    except Exception as error:
        raise UnpicklingError(f"torch.device{checks.short(args)}: {error}") from None


def _allowed():
    table = {
        "collections.OrderedDict": _ordered_dict,
        "collections.Counter": _counter,
        "builtins.set": _set,
        "builtins.complex": _complex,
        "builtins.bytearray": _bytearray,
        "_codecs.encode": _encode,
        "torch.Size": _size,
        "torch.device": _device,
        "torch._utils._rebuild_tensor": _rebuild_tensor_v1,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch.nn.parameter.Parameter": _new_parameter,
        "torch.Tensor": None,
    }
    allowed = {path: Global(path, call) for path, call in table.items()}
    for stored in checks.STORED_TYPES:
        allowed[f"torch.{stored.torch_storage}"] = Global(f"torch.{stored.torch_storage}", stored=stored)
    return allowed


ALLOWED = _allowed()
DTYPES = {f"torch.{d.name}": d for d in dtypes.ALL}

# names PyTorch's weights-only loader allows but tinyattn cannot represent: refused with the reason
NOT_REPRESENTABLE = {
    "torch._utils._rebuild_qtensor": "a quantized tensor",
    "torch._utils._rebuild_sparse_tensor": "a sparse tensor",
    "torch._utils._rebuild_nested_tensor": "a nested tensor",
    "torch._utils._rebuild_meta_tensor_no_storage": "a tensor on the meta device (no data)",
    "torch._utils._rebuild_wrapper_subclass": "a tensor subclass",
    "torch._utils._rebuild_device_tensor_from_numpy": "a tensor of another device type",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor": "a tensor of another device type",
    "torch._utils._rebuild_tensor_v3": "a tensor of a dtype without a typed storage (uint16, float8, ...)",
    "torch.UntypedStorage": "an untyped storage (a dtype without a typed storage)",
    "torch.serialization._get_layout": "a sparse layout",
}
_TORCH_DTYPE_NAMES = ("float16", "half", "bfloat16", "complex32", "complex64", "complex128", "cfloat", "cdouble",
                      "short", "uint16", "uint32", "uint64", "float8_e4m3fn",
                      "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "qint8", "quint8", "qint32", "quint4x2")
_TORCH_STORAGES = ("ComplexFloatStorage", "ComplexDoubleStorage", "QInt8Storage", "QUInt8Storage", "QInt32Storage",
                   "QUInt4x2Storage", "QUInt2x4Storage")
_PYTHON2_MODULES = {"__builtin__": "builtins", "torch.tensor": "torch._tensor"}


# ---------------------------------------------------------------------------------------------
# the classes and functions a user declares safe (torch.serialization.add_safe_globals)

_user_safe_globals = set()


def add_safe_globals(safe_globals):
    """Let weights-only loads build these classes and call these functions (PyTorch's allow-list).

    `safe_globals` is a list of objects (named by their `__module__` and `__qualname__`) or of
    (object, "full.name") pairs. A weights-only load then treats them as PyTorch's does: a function is
    called with the arguments the file gives, a class is created with `cls.__new__` and its state set
    with `__setstate__` (or its `__dict__` updated). Declare only what you trust to do nothing else.
    A NumPy array, for instance, needs `np._core.multiarray._reconstruct` (numpy.core in NumPy 1),
    `np.ndarray`, `np.dtype` and the array's dtype class, e.g. `type(np.dtype(np.float64))`.
    """
    global _user_safe_globals
    for entry in safe_globals:
        if isinstance(entry, tuple) and (len(entry) != 2 or not isinstance(entry[1], str)):
            raise ValueError(f"a safe global is an object or an (object, 'full.name') pair, got {entry!r}")
    _user_safe_globals = _user_safe_globals | set(safe_globals)


def get_safe_globals():
    """The list given to add_safe_globals (and not cleared since)."""
    return list(_user_safe_globals)


def clear_safe_globals():
    """Forget every global added with add_safe_globals."""
    global _user_safe_globals
    _user_safe_globals = set()


class safe_globals:
    """`with tinyattn.serialization.safe_globals([...]):` the globals are allowed inside the block only."""

    def __init__(self, safe_globals):
        self.safe_globals = list(safe_globals)

    def __enter__(self):
        self.added = set(self.safe_globals) - _user_safe_globals
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc_info):
        global _user_safe_globals
        _user_safe_globals = _user_safe_globals - self.added


def user_allowed_globals():
    """{"module.qualname": object} of the globals the user declared safe."""
    allowed = {}
    for entry in _user_safe_globals:
        if isinstance(entry, tuple):
            allowed[entry[1]] = entry[0]
        else:
            allowed[f"{entry.__module__}.{entry.__qualname__}"] = entry
    return allowed


def is_user_allowed(obj):
    return any(obj is allowed for allowed in user_allowed_globals().values())


# ---------------------------------------------------------------------------------------------
# storages, for both unpicklers


def _storage(unpickler, pid):
    """The Storage a persistent id ('storage', storage type, key, location, numel) stands for."""
    if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
        unpickler.refuse(f"persistent id {checks.short(pid)} is not a storage record "
                         "('storage', type, key, location, numel)")
    _, storage_type, key, location, numel = pid
    if not isinstance(storage_type, Global) or storage_type.stored is None:
        unpickler.refuse(f"storage record {checks.short(pid)} names no storage type")
    if not isinstance(key, str) or not isinstance(location, str):
        unpickler.refuse(f"storage record {checks.short(pid)}: key and location must be strings")
    if isinstance(numel, bool) or not isinstance(numel, int) or numel < 0:
        raise CheckpointError(f"{unpickler.where}: storage {key!r} declares {checks.short(numel)} elements, "
                              "not a count >= 0; the file is corrupt")
    return unpickler.load_storage(storage_type.stored, key, location, numel)


class _FromLoader(Exception):
    """Carries an exception of the loader's own code (a DeviceError, an error in map_location) through
    the handler below that turns a malformed program's IndexError and such into UnpicklingError."""


def _loader_call(function, *args):
    try:
        return function(*args)
    except CheckpointError:
        raise
    except Exception as error:
        raise _FromLoader() from error


class Unpickler:
    """Runs a weights-only pickle. `load_storage(stored, key, location, numel)` gives a Storage;
    `make_tensor(storage, offset, size, stride, requires_grad)` and `make_parameter(tensor,
    requires_grad)` build the tensors (the loader supplies them: it knows devices and limits)."""

    def __init__(self, data, where, load_storage, make_tensor, make_parameter):
        self.data, self.where = data, where
        self.load_storage = lambda *args: _loader_call(load_storage, *args)
        self.make_tensor = lambda *args: _loader_call(make_tensor, *args)
        self.make_parameter = lambda *args: _loader_call(make_parameter, *args)
        self.pos = 0
        self.stack, self.metastack, self.memo = [], [], {}

    def refuse(self, problem):
        raise UnpicklingError(f"{self.where}: {problem}. A weights-only load (the default) runs no code from "
                              "the file; it reads what torch.save writes for tensors, numbers, strings and "
                              "containers. If you trust the file, load it with weights_only=False (which runs "
                              "what the file names), or allow a class or function you trust with "
                              "tinyattn.serialization.add_safe_globals([...])")

    def read(self, n):
        if self.pos + n > len(self.data):
            raise UnpicklingError(f"{self.where}: the pickle is truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def readline(self):
        end = self.data.find(b"\n", self.pos, self.pos + 256)
        if end < 0:
            raise UnpicklingError(f"{self.where}: a GLOBAL name is not terminated")
        line = self.data[self.pos:end]
        self.pos = end + 1
        try:
            return line.decode("ascii")
        except UnicodeDecodeError:
            raise UnpicklingError(f"{self.where}: a GLOBAL name is not ASCII text") from None

    def load(self):
        handlers = self.HANDLERS
        try:
            while True:
                op = self.read(1)
                handler = handlers.get(op)
                if handler is None:
                    info = pickletools.code2op.get(op.decode("latin1"))
                    name = info.name if info else f"byte {op[0]:#04x}"
                    self.refuse(f"the pickle uses opcode {name}, which a weights-only load does not allow")
                if handler(self) is STOP:
                    if len(self.stack) != 1 or self.metastack:
                        raise UnpicklingError(f"{self.where}: the pickle ends with {len(self.stack)} values on its stack")
                    result = self.stack.pop()
                    if isinstance(result, Global):
                        self.refuse(f"the pickle's result is the global {result.path}")
                    return result
        except CheckpointError:
            raise
        except _FromLoader as wrapped:
            raise wrapped.__cause__ from None
        except (IndexError, KeyError, TypeError, ValueError, AttributeError, OverflowError, RecursionError,
                MemoryError) as error:  # a malformed stack program: an empty stack, a bad memo index...
            raise UnpicklingError(f"{self.where}: the pickle is malformed near byte {self.pos} "
                                  f"({type(error).__name__}: {checks.short(str(error), 120)})") from None

    # --- opcodes: values ---

    def op_proto(self):
        if self.read(1)[0] > 5:
            self.refuse("the pickle has an unknown protocol number")

    def op_stop(self):
        return STOP

    def op_int(self, size, fmt):
        self.stack.append(struct.unpack(fmt, self.read(size))[0])

    def op_long1(self):
        n = self.read(1)[0]
        self.stack.append(int.from_bytes(self.read(n), "little", signed=True))

    def op_unicode(self):
        (n,) = struct.unpack("<I", self.read(4))
        try:
            self.stack.append(self.read(n).decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError:
            raise UnpicklingError(f"{self.where}: a string in the pickle is not UTF-8") from None

    def op_short_binstring(self):  # Python 2 strings: decoded as PyTorch does (encoding='utf-8')
        data = self.read(self.read(1)[0])
        try:
            self.stack.append(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise UnpicklingError(f"{self.where}: a string in the pickle is not UTF-8") from None

    # --- opcodes: containers ---

    def op_mark(self):
        self.metastack.append(self.stack)
        self.stack = []

    def pop_mark(self):
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def op_tuple(self, n=None):
        if n is None:
            items = tuple(self.pop_mark())  # before self.stack is read: pop_mark replaces it
            self.stack.append(items)
        elif n == 0:
            self.stack.append(())
        else:
            if len(self.stack) < n:
                raise IndexError("stack underflow")
            items = tuple(self.stack[-n:])
            del self.stack[-n:]
            self.stack.append(items)

    def check_value(self, value):
        if isinstance(value, Global):
            self.refuse(f"the global {value.path} is used as a value")
        return value

    def op_append(self, many):
        items = self.pop_mark() if many else [self.stack.pop()]
        target = self.stack[-1]
        if type(target) is not list:
            self.refuse(f"APPEND to a {type(target).__name__}, not a list")
        target.extend(self.check_value(item) for item in items)

    def op_setitem(self, many):
        items = self.pop_mark() if many else self.stack[-2:]
        if not many:
            del self.stack[-2:]
        target = self.stack[-1]
        if type(target) not in (dict, collections.OrderedDict, collections.Counter) or len(items) % 2:
            self.refuse(f"SETITEM on a {type(target).__name__}, not a dict")
        for key, value in zip(items[0::2], items[1::2]):
            target[self.check_value(key)] = self.check_value(value)

    def op_memo_put(self, size, fmt):
        if not self.stack:
            raise IndexError("BINPUT with an empty stack")
        self.memo[struct.unpack(fmt, self.read(size))[0]] = self.stack[-1]

    def op_memo_get(self, size, fmt):
        self.stack.append(self.memo[struct.unpack(fmt, self.read(size))[0]])

    # --- opcodes that could run code elsewhere: here only the allowlist's own functions ---

    def op_global(self):
        module, name = self.readline(), self.readline()
        path = f"{_PYTHON2_MODULES.get(module, module)}.{name}"
        if path in ALLOWED:
            self.stack.append(ALLOWED[path])
        elif path in DTYPES:
            self.stack.append(DTYPES[path])
        elif path in user_allowed_globals():
            self.stack.append(user_allowed_globals()[path])
        elif path in NOT_REPRESENTABLE:
            raise CheckpointError(f"{self.where}: the file holds {NOT_REPRESENTABLE[path]} ({path}), which "
                                  f"tinyattn cannot represent; {checks.UNSUPPORTED_ADVICE}")
        elif module == "torch" and (name in _TORCH_DTYPE_NAMES or name in _TORCH_STORAGES):
            raise CheckpointError(f"{self.where}: the file holds {path} values; {checks.UNSUPPORTED_ADVICE}")
        else:
            self.refuse(f"the pickle asks for GLOBAL {path}, which is not on the weights-only allowlist")

    def op_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        ours = isinstance(func, Global) and func.call is not None
        if not ours and not is_user_allowed(func):
            self.refuse(f"the pickle calls {checks.short(func)}, which is not an allowed function")
        if not isinstance(args, tuple):
            self.refuse(f"{checks.short(func)} is called with {checks.short(args)}, not an argument tuple")
        # tinyattn's code for an allowlisted name, or a function the user declared safe (called as is)
        self.stack[-1] = func.call(self, *args) if ours else func(*args)

    def op_newobj(self):
        args = self.stack.pop()
        cls = self.stack[-1]
        if not isinstance(args, tuple):
            self.refuse(f"NEWOBJ of {checks.short(cls)} with {checks.short(args)}, not an argument tuple")
        if isinstance(cls, Global) and cls.path == "torch.nn.parameter.Parameter":
            self.stack[-1] = cls.call(self, *args)
        elif isinstance(cls, type) and is_user_allowed(cls):
            self.stack[-1] = cls.__new__(cls, *args)
        else:
            self.refuse(f"NEWOBJ of {checks.short(cls)}: only torch.nn.Parameter and the classes allowed with "
                        "add_safe_globals may be created this way")

    def op_build(self):
        state = self.stack.pop()
        target = self.stack[-1]
        if type(target) is collections.OrderedDict and isinstance(state, dict) and set(state) <= {"_metadata"}:
            target.__dict__.update(state)  # a PyTorch state_dict's version numbers per module
        elif is_user_allowed(type(target)):  # as pickle's BUILD does, for a class the user declared safe
            setstate = getattr(target, "__setstate__", None)
            if setstate is not None:
                setstate(state)
            else:
                slots = None
                if isinstance(state, tuple) and len(state) == 2:
                    state, slots = state
                if state:
                    target.__dict__.update(state)
                for name, value in (slots or {}).items():
                    setattr(target, name, value)
        else:
            self.refuse(f"BUILD sets the state of a {type(target).__name__} to {checks.short(state)}; only a "
                        "state_dict's _metadata may be set")

    def op_persistent_id(self):
        self.stack.append(_storage(self, self.stack.pop()))

    HANDLERS = {
        PROTO: op_proto, STOP: op_stop, MARK: op_mark,
        NONE: lambda self: self.stack.append(None),
        NEWTRUE: lambda self: self.stack.append(True),
        NEWFALSE: lambda self: self.stack.append(False),
        BININT: lambda self: self.op_int(4, "<i"),
        BININT1: lambda self: self.op_int(1, "<B"),
        BININT2: lambda self: self.op_int(2, "<H"),
        LONG1: op_long1,
        BINFLOAT: lambda self: self.op_int(8, ">d"),
        BINUNICODE: op_unicode,
        SHORT_BINSTRING: op_short_binstring,
        EMPTY_TUPLE: lambda self: self.op_tuple(0),
        TUPLE: lambda self: self.op_tuple(),
        TUPLE1: lambda self: self.op_tuple(1),
        TUPLE2: lambda self: self.op_tuple(2),
        TUPLE3: lambda self: self.op_tuple(3),
        EMPTY_LIST: lambda self: self.stack.append([]),
        EMPTY_DICT: lambda self: self.stack.append({}),
        EMPTY_SET: lambda self: self.stack.append(set()),
        APPEND: lambda self: self.op_append(False),
        APPENDS: lambda self: self.op_append(True),
        SETITEM: lambda self: self.op_setitem(False),
        SETITEMS: lambda self: self.op_setitem(True),
        BINPUT: lambda self: self.op_memo_put(1, "<B"),
        LONG_BINPUT: lambda self: self.op_memo_put(4, "<I"),
        BINGET: lambda self: self.op_memo_get(1, "<B"),
        LONG_BINGET: lambda self: self.op_memo_get(4, "<I"),
        GLOBAL: op_global, REDUCE: op_reduce, NEWOBJ: op_newobj, BUILD: op_build,
        BINPERSID: op_persistent_id,
    }


# ---------------------------------------------------------------------------------------------
# weights_only=False: Python's own unpickler, for a file you trust


class TrustedUnpickler(pickle.Unpickler):
    """Python's unpickler, which imports and calls whatever the file names (so a file can run any
    code): only for `tinyattn.load(f, weights_only=False)`, the explicit opt-in for a trusted file.

    PyTorch's names become tinyattn's: tensors, storages, dtypes, sizes and devices as in a
    weights-only load (storages read through the same checks), and a class or function of PyTorch's
    (`torch.nn.modules.linear.Linear`, from `torch.save(model)`) as tinyattn's of the same name
    (`tinyattn.nn.Linear`). Everything else (a program's own classes, NumPy arrays) is imported as
    Python's unpickler imports it.
    """

    def __init__(self, data, where, load_storage, make_tensor, make_parameter):
        super().__init__(io.BytesIO(data))
        self.where = where
        self.load_storage, self.make_tensor, self.make_parameter = load_storage, make_tensor, make_parameter

    def refuse(self, problem):
        raise UnpicklingError(f"{self.where}: {problem}; the file is corrupt")

    def persistent_load(self, pid):
        return _storage(self, pid)

    def find_class(self, module, name):
        module = _PYTHON2_MODULES.get(module, module)
        path = f"{module}.{name}"
        if module.startswith("tinyattn."):
            return _moved_tinyattn_name(module, name, self.where, super().find_class)
        if module != "torch" and not module.startswith("torch."):
            return super().find_class(module, name)
        if path in DTYPES:
            return DTYPES[path]
        if path in ALLOWED:
            return ALLOWED[path].bind(self)
        if path in NOT_REPRESENTABLE:
            raise CheckpointError(f"{self.where}: the file holds {NOT_REPRESENTABLE[path]} ({path}), which "
                                  f"tinyattn cannot represent; {checks.UNSUPPORTED_ADVICE}")
        if module == "torch" and (name in _TORCH_DTYPE_NAMES or name in _TORCH_STORAGES):
            raise CheckpointError(f"{self.where}: the file holds {path} values; {checks.UNSUPPORTED_ADVICE}")
        return _tinyattn_twin(module, name, self.where)


def _nearest_namespace(module, name):
    """`name` from the tinyattn module of `module`'s path (its first part read as tinyattn), or from the
    nearest namespace above it that has it; None where none has it (or the name is private)."""
    import importlib

    parts = ["tinyattn"] + module.split(".")[1:]
    while parts:
        try:
            namespace = importlib.import_module(".".join(parts))
        except ImportError:
            namespace = None
        if namespace is not None and not name.startswith("_") and hasattr(namespace, name):
            return getattr(namespace, name)
        parts.pop()
    return None


def _moved_tinyattn_name(module, name, where, find_class):
    """tinyattn's own `module.name`, as Python's unpickler finds it; for a file saved before the class
    moved to another file of tinyattn (tinyattn.nn.more_layers.GroupNorm), the public name in the nearest
    namespace above the path it was saved under (tinyattn.nn.GroupNorm)."""
    try:
        return find_class(module, name)
    except (ImportError, AttributeError) as error:
        found = _nearest_namespace(module, name)
        if found is None:
            raise UnpicklingError(f"{where}: the file names {module}.{name}, which this version of tinyattn does "
                                  "not have (nor a namespace above it): load the file with the version that "
                                  "saved it and save its state_dict() instead") from error
        return found


def _tinyattn_twin(module, name, where):
    """tinyattn's object for PyTorch's `module.name`: found in the same module path under tinyattn, or
    the nearest namespace above it (torch.nn.modules.rnn.LSTMCell -> tinyattn.nn.LSTMCell)."""
    found = _nearest_namespace(module, name)
    if found is not None:
        return found
    raise UnpicklingError(f"{where}: the file names {module}.{name}, which tinyattn does not have (`tinyattn "
                          f"coverage {name}` says more); save the state_dict() in PyTorch and load it into a "
                          "tinyattn model instead")
