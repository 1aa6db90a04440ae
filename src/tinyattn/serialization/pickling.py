"""PyTorch's pickle dialect, written and read by hand: a protocol-2 writer that names torch's functions
without importing torch, and a reader that runs nothing.

A `torch.save` file's `data.pkl` is a small program for pickle's stack machine. Tensors in it are calls
of `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)` whose
`storage` is a *persistent id*, `('storage', torch.FloatStorage, key, location, numel)`, standing for
the raw bytes kept in the zip under `data/<key>`.

Python's own unpickler calls whatever function a pickle names, so a file can run `os.system`. The
`Unpickler` here is an interpreter for the opcodes PyTorch's weights-only loader accepts (nothing
else), and a GLOBAL may only name what `ALLOWED` lists: each entry is tinyattn's own code for that
name (building a Tensor, an OrderedDict, a set...). Every other global and opcode raises
`UnpicklingError` naming it. Mirrors `torch/_weights_only_unpickler.py`, as far as tinyattn can
represent what it allows (no quantized, sparse or complex tensors).
"""

import collections
import numbers
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

_BATCH = 1000  # items per APPENDS / SETITEMS, as pickle writes them


# ---------------------------------------------------------------------------------------------
# writing


class Pickler:
    """Writes `obj` as PyTorch's data.pkl. `describe(tensor)` gives a tensor's storage record:
    (storage class name, key, location, storage numel, offset, size, stride)."""

    def __init__(self, describe):
        self.describe = describe
        self.out = bytearray()
        self.memo = {}  # id(obj) -> (memo index, obj): objects met again are fetched, not rewritten

    def dump(self, obj):
        self.out += PROTO + b"\x02"
        try:
            self.save(obj)
        except RecursionError:
            raise ValueError("cannot save an object nested this deeply (or one that contains itself "
                             "through a tuple)") from None
        self.out += STOP
        return bytes(self.out)

    def save(self, obj):
        if id(obj) in self.memo:
            index = self.memo[id(obj)][0]
            self.out += BINGET + bytes([index]) if index < 256 else LONG_BINGET + struct.pack("<I", index)
            return
        if obj is None:
            self.out += NONE
        elif obj is True or obj is False:
            self.out += NEWTRUE if obj else NEWFALSE
        elif isinstance(obj, Tensor):
            self.save_tensor(obj)
        elif isinstance(obj, dtypes.dtype):
            self.save_global("torch", obj.name)
        elif isinstance(obj, backend.Device):
            self.save_global("torch", "device")
            self.save(tuple([obj.type] if obj.index is None else [obj.type, obj.index]))
            self.out += REDUCE
        elif isinstance(obj, np.bool_):  # NumPy scalars are written as the Python numbers they hold
            self.save(bool(obj))
        elif isinstance(obj, numbers.Integral):
            self.save_int(int(obj))
        elif isinstance(obj, numbers.Real):
            self.out += BINFLOAT + struct.pack(">d", float(obj))
        elif isinstance(obj, complex):
            self.save_global("__builtin__", "complex")
            self.save((obj.real, obj.imag))
            self.out += REDUCE
        elif isinstance(obj, str):
            self.save_str(obj)
        elif isinstance(obj, bytes):  # as pickle protocol 2 writes bytes
            self.save_global("_codecs", "encode")
            self.save((obj.decode("latin1"), "latin1"))
            self.out += REDUCE
        elif isinstance(obj, Size):
            self.save_global("torch", "Size")
            self.save((tuple(obj),))
            self.out += REDUCE
        elif type(obj) is tuple:
            self.save_tuple(obj)
        elif type(obj) is list:
            self.out += EMPTY_LIST
            self.memoize(obj)
            self.save_batches(obj, APPENDS, lambda item: self.save(item))
        elif type(obj) in (dict, collections.OrderedDict):
            if type(obj) is dict:
                self.out += EMPTY_DICT
            else:
                self.save_global("collections", "OrderedDict")
                self.out += EMPTY_TUPLE + REDUCE
            self.memoize(obj)
            self.save_batches(list(obj.items()), SETITEMS, lambda item: (self.save(item[0]), self.save(item[1])))
        elif type(obj) is set:
            self.save_global("__builtin__", "set")
            self.out += EMPTY_LIST
            self.save_batches(list(obj), APPENDS, lambda item: self.save(item))
            self.out += TUPLE1 + REDUCE
        else:
            raise TypeError(
                f"cannot save an object of type {type(obj).__module__}.{type(obj).__qualname__}: tinyattn.save "
                "writes tensors, numbers, strings, bytes, None, lists, tuples, sets, dicts and OrderedDicts "
                "(what torch.load(..., weights_only=True) reads); save a model's state_dict(), not the model"
            )

    def memoize(self, obj):
        index = len(self.memo)
        self.memo[id(obj)] = (index, obj)  # keeps obj alive, so its id stays its own
        self.out += BINPUT + bytes([index]) if index < 256 else LONG_BINPUT + struct.pack("<I", index)

    def save_global(self, module, name):
        self.out += GLOBAL + f"{module}\n{name}\n".encode("ascii")

    def save_int(self, value):
        if 0 <= value < 256:
            self.out += BININT1 + bytes([value])
        elif 0 <= value < 65536:
            self.out += BININT2 + struct.pack("<H", value)
        elif -(2**31) <= value < 2**31:
            self.out += BININT + struct.pack("<i", value)
        else:
            size = (value.bit_length() + 8) // 8  # two's complement, with room for the sign
            if size > 255:
                raise ValueError(f"cannot save an integer of {value.bit_length()} bits (at most 2039)")
            self.out += LONG1 + bytes([size]) + value.to_bytes(size, "little", signed=True)

    def save_str(self, text):
        data = text.encode("utf-8", "surrogatepass")
        self.out += BINUNICODE + struct.pack("<I", len(data)) + data

    def save_tuple(self, items):
        if not items:
            self.out += EMPTY_TUPLE
            return
        if len(items) > 3:
            self.out += MARK
        for item in items:
            self.save(item)
        self.out += {1: TUPLE1, 2: TUPLE2, 3: TUPLE3}.get(len(items), TUPLE)

    def save_batches(self, items, opcode, save_item):
        for start in range(0, len(items), _BATCH):
            self.out += MARK
            for item in items[start:start + _BATCH]:
                save_item(item)
            self.out += opcode

    def empty_ordered_dict(self):  # the backward hooks PyTorch saves beside every tensor
        self.save_global("collections", "OrderedDict")
        self.out += EMPTY_TUPLE + REDUCE

    def save_tensor(self, tensor):
        if tensor.requires_grad and tensor.grad_fn is not None:
            raise RuntimeError("cannot save a non-leaf tensor that requires grad (as PyTorch refuses): save "
                               "tensor.detach()")
        parameter = isinstance(tensor, Parameter)
        if parameter:
            self.save_global("torch._utils", "_rebuild_parameter")
        self.save_global("torch._utils", "_rebuild_tensor_v2")
        storage_class, key, location, numel, offset, size, stride = self.describe(tensor)
        self.out += MARK + MARK
        self.save_str("storage")
        self.save_global("torch", storage_class)
        self.save_str(key)
        self.save_str(location)
        self.save_int(numel)
        self.out += TUPLE + BINPERSID
        self.save_int(offset)
        self.save_tuple(tuple(size))
        self.save_tuple(tuple(stride))
        self.out += NEWFALSE if parameter or not tensor.requires_grad else NEWTRUE
        self.empty_ordered_dict()
        self.out += TUPLE + REDUCE
        if parameter:  # _rebuild_parameter(data, requires_grad, hooks)
            self.out += NEWTRUE if tensor.requires_grad else NEWFALSE
            self.empty_ordered_dict()
            self.out += TUPLE3 + REDUCE
        self.memoize(tensor)


# ---------------------------------------------------------------------------------------------
# reading


class Global:
    """What a GLOBAL the allowlist admits puts on the stack: inert, except that REDUCE (or NEWOBJ)
    may call its `call(unpickler, *args)`."""

    def __init__(self, path, call=None, stored=None):
        self.path = path
        self.call = call
        self.stored = stored  # for storage classes: the checks.StoredType of their elements

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
        raise UnpicklingError(f"{self.where}: {problem}. tinyattn.load never runs code from a file; it reads "
                              "what torch.save writes for tensors, numbers, strings and containers")

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
        if not isinstance(func, Global) or func.call is None:
            self.refuse(f"the pickle calls {checks.short(func)}, which is not an allowed function")
        if not isinstance(args, tuple):
            self.refuse(f"{func.path} is called with {checks.short(args)}, not an argument tuple")
        self.stack[-1] = func.call(self, *args)

    def op_newobj(self):
        args = self.stack.pop()
        cls = self.stack[-1]
        if not isinstance(cls, Global) or cls.path != "torch.nn.parameter.Parameter" or not isinstance(args, tuple):
            self.refuse(f"NEWOBJ of {checks.short(cls)}: only torch.nn.Parameter may be created this way")
        self.stack[-1] = cls.call(self, *args)

    def op_build(self):
        state = self.stack.pop()
        target = self.stack[-1]
        if type(target) is collections.OrderedDict and isinstance(state, dict) and set(state) <= {"_metadata"}:
            target.__dict__.update(state)  # a PyTorch state_dict's version numbers per module
        else:
            self.refuse(f"BUILD sets the state of a {type(target).__name__} to {checks.short(state)}; only a "
                        "state_dict's _metadata may be set")

    def op_persistent_id(self):
        pid = self.stack.pop()
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            self.refuse(f"persistent id {checks.short(pid)} is not a storage record "
                        "('storage', type, key, location, numel)")
        _, storage_type, key, location, numel = pid
        if not isinstance(storage_type, Global) or storage_type.stored is None:
            self.refuse(f"storage record {checks.short(pid)} names no storage type")
        if not isinstance(key, str) or not isinstance(location, str):
            self.refuse(f"storage record {checks.short(pid)}: key and location must be strings")
        if isinstance(numel, bool) or not isinstance(numel, int) or numel < 0:
            raise CheckpointError(f"{self.where}: storage {key!r} declares {checks.short(numel)} elements, not a "
                                  "count >= 0; the file is corrupt")
        self.stack.append(self.load_storage(storage_type.stored, key, location, numel))

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
