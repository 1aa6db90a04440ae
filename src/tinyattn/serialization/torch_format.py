"""`tinyattn.save(obj, f)` and `tinyattn.load(f)`: PyTorch's own file format, so files go both ways.

What `torch.save` writes (and what this writes) is a zip archive, every member stored uncompressed
and its data aligned to 64 bytes:

    archive/data.pkl                 the object, pickled with protocol 2 (see pickling.py)
    archive/.format_version          "1"
    archive/.storage_alignment       "64"
    archive/byteorder                "little"
    archive/data/0, data/1, ...      the raw little-endian bytes of each storage
    archive/version                  "3"
    archive/.data/serialization_id   40 random digits

Tensors that share memory (views, tied weights) share one storage record, as PyTorch's do. Loading
checks everything (checks.py) before it allocates. By default it runs no code from the file (a
weights-only load); `weights_only=False` is the explicit opt-in, for a file you trust, to Python's
own unpickler, which can run anything the file names.
"""

import io
import os
import pathlib
import math
import pickle
import pickletools
import re
import struct
import zipfile

import numpy as np

from .. import backend
from ..errors import CheckpointError, UnpicklingError
from ..nn.module import Parameter
from ..tensor import Tensor
from . import checks
from .pickling import ALLOWED, DTYPES, Pickler, Storage, TrustedUnpickler, Unpickler

ARCHIVE = "archive"
ALIGNMENT = 64


# ---------------------------------------------------------------------------------------------
# saving


class _Storages:
    """The storages of the tensors being saved: one record per block of memory, so that views and
    tied weights share it, with each tensor's offset and strides into it (in elements)."""

    def __init__(self):
        self.records = {}  # identity of the memory block -> (key, 1-D host array, StoredType, location)

    def describe(self, tensor):
        array = tensor.array
        stored = checks.BY_NAME[tensor.dtype.name]
        location = str(tensor.device)
        found = self._shared_block(array) if type(array) is np.ndarray else None
        if found is None:  # a CuPy array, or an unusual NumPy layout: its own record, written contiguously
            identity, flat = ("array", id(array)), None
            offset, stride = 0, _contiguous_strides(array.shape)
        else:
            root, offset, stride = found
            identity, flat = ("block", id(root)), root
        if identity not in self.records:
            host = np.ascontiguousarray(backend.to_host(array) if flat is None else flat).reshape(-1)
            self.records[identity] = (str(len(self.records)), host, stored, location, array)  # array: kept alive
        key, host = self.records[identity][:2]
        return stored.torch_storage, key, location, host.size, offset, tuple(array.shape), stride

    @staticmethod
    def _shared_block(array):
        """(the C-contiguous array owning `array`'s memory, offset, strides in elements), or None."""
        root = array
        while isinstance(root.base, np.ndarray):
            root = root.base
        itemsize = array.itemsize
        if not root.flags.c_contiguous or root.dtype != array.dtype or any(s < 0 or s % itemsize for s in array.strides):
            return None
        start = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        if start < 0 or start % itemsize:
            return None
        return root, start // itemsize, tuple(s // itemsize for s in array.strides)


def _contiguous_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _write_record(archive, name, data):
    """One stored member, padded (as PyTorch's writer pads) so that its data starts at a multiple of 64."""
    info = zipfile.ZipInfo(f"{ARCHIVE}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
    info.file_size = len(data)
    zip64 = info.file_size * 1.05 > zipfile.ZIP64_LIMIT  # zipfile then adds a 20-byte extra field
    start = archive.start_dir + 30 + len(info.filename.encode("utf-8")) + 4 + (20 if zip64 else 0)
    padding = -start % ALIGNMENT
    info.extra = b"FB" + struct.pack("<H", padding) + b"Z" * padding
    with archive.open(info, "w", force_zip64=zip64) as member:
        member.write(data)


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True):
    """Save `obj` to `f` (a path or a binary file object) in PyTorch's format, as torch.save does.

    `obj` is anything Python can pickle. Tensors, numbers, strings, None, lists, tuples, dicts,
    OrderedDicts and sets (a state_dict, an optimizer's, a checkpoint dict of them) are what a
    weights-only load reads back: `torch.load(f)` and `tinyattn.load(f)` read such a file with their
    defaults. Anything else, a whole Module (`tinyattn.save(model, f)`) or a NumPy array, is pickled
    as Python pickles it, by class name, and needs `load(f, weights_only=False)`, which imports and
    runs what the file names (in PyTorch, a tinyattn module loads as tinyattn's class, holding torch
    tensors). To move a model between the two libraries, save its state_dict().
    """
    if pickle_module is not None or pickle_protocol != 2:
        raise ValueError("tinyattn.save writes pickle protocol 2 with its own writer, as torch.save does by "
                         "default: leave pickle_module and pickle_protocol out")
    if not _use_new_zipfile_serialization:
        raise ValueError("tinyattn.save writes PyTorch's zip format only (the legacy format is not supported)")
    storages = _Storages()
    data = Pickler(storages.describe).dump(obj)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as file:
            _write_archive(file, data, storages)
    elif hasattr(f, "write"):
        seekable = hasattr(f, "seekable") and f.seekable()
        target = f if seekable else io.BytesIO()
        _write_archive(target, data, storages)
        if not seekable:
            f.write(target.getvalue())
    else:
        raise TypeError(f"tinyattn.save expects a path or a binary file object, got {type(f).__name__}")


def _write_archive(file, data, storages):
    serialization_id = f"{int.from_bytes(os.urandom(17), 'big') % 10**40:040d}".encode()
    with zipfile.ZipFile(file, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        _write_record(archive, "data.pkl", data)
        _write_record(archive, ".format_version", b"1")
        _write_record(archive, ".storage_alignment", str(ALIGNMENT).encode())
        _write_record(archive, "byteorder", b"little")
        for key, host, stored, _, _ in storages.records.values():
            _write_record(archive, f"data/{key}", host.astype(stored.numpy, copy=False).view(np.uint8))
        _write_record(archive, "version", b"3\n")
        _write_record(archive, ".data/serialization_id", serialization_id)


# ---------------------------------------------------------------------------------------------
# loading


_KEY = re.compile(r"[A-Za-z0-9_]+")


class _Loader:
    """Reads the storages a pickle asks for and builds its tensors, every size checked first."""

    def __init__(self, archive, prefix, where, budget, map_location, byteorder, mapped):
        self.archive, self.prefix, self.where, self.budget = archive, prefix, where, budget
        self.map_location, self.byteorder, self.mapped = map_location, byteorder, mapped
        self.storages = {}
        self.widened = set()  # the StoredTypes loaded as a wider dtype (one warning at the end)

    def load_storage(self, stored, key, location, numel):
        if key in self.storages:
            seen = self.storages[key]
            if (seen.stored, seen.numel) != (stored, numel):
                checks.refuse(self.where, f"storage {key!r} is declared twice, as {seen.numel} {seen.stored.name} "
                                          f"and as {numel} {stored.name} elements")
            return seen
        if not _KEY.fullmatch(key):
            checks.refuse(self.where, f"storage key {key!r} is not a plain name")
        what = f"storage {key!r} ({numel} {stored.name} elements)"
        name, nbytes = f"{self.prefix}data/{key}", numel * stored.itemsize
        if name not in self.archive.NameToInfo:
            checks.refuse(self.where, f"{what} has no record {name!r} in the archive")
        if self.mapped is not None:
            raw = checks.mapped_member(self.mapped, self.archive, name, self.where, nbytes, what)
        else:
            raw = checks.read_member(self.archive, name, self.where, self.budget, exact_size=nbytes, what=what)
        if stored.loads_as != stored.name:  # widening makes a new array
            self.widened.add(stored)
            self.budget.take(numel * np.dtype(stored.loads_as).itemsize, f"{what}, widened to {stored.loads_as}")
        values = checks.decode(raw, stored, f"{self.where}, {what}", self.byteorder)
        storage = Storage(self.place(values, location, key), stored, key, numel)
        self.storages[key] = storage
        return storage

    def place(self, values, location, key):
        """The storage's array on the device that map_location (or its saved location) says."""
        target = self.map_location
        if target is None:
            target = location
        elif isinstance(target, dict):
            target = target.get(location, location)
        elif callable(target) and not isinstance(target, (str, backend.Device)):
            result = target(Tensor._wrap(values), location)
            if result is None:
                target = location
            elif isinstance(result, Tensor) and tuple(result.shape) == values.shape and result.dtype.name == values.dtype.name:
                return result.array
            else:
                raise TypeError(f"map_location returned {checks.short(result)} for storage {key!r}: return the "
                                "storage it was given (a 1-D tensor), moved with .to(device), or None")
        return backend.from_host(values, checks.load_device(target, location, asked=target is not location))

    def make_tensor(self, storage, offset, size, stride, requires_grad):
        what = f"a tensor of storage {storage.key!r}"
        shape, stride, offset = checks.check_view(size, stride, offset, storage.numel, f"{self.where}, {what}")
        array, numel = storage.array, math.prod(shape)
        if stride == _contiguous_strides(shape) or numel == 0:
            array = backend.namespace(array).reshape(array[offset:offset + numel], shape)
        elif isinstance(array, np.ndarray):
            array = checks.view_of(array, shape, stride, offset, self.budget, what)
        else:  # a strided view on a GPU: made on the host, then copied over
            host = checks.view_of(backend.to_host(array), shape, stride, offset, self.budget, what)
            array = backend.from_host(np.ascontiguousarray(host), backend.device_of(array))
        tensor = Tensor._wrap(array)
        if requires_grad:
            if not tensor.dtype.is_floating_point:
                raise UnpicklingError(f"{self.where}: a {tensor.dtype} tensor requires grad, which only floating "
                                      "point tensors can; the file is corrupt")
            tensor.requires_grad = True
        return tensor

    def make_parameter(self, tensor, requires_grad):
        if not isinstance(requires_grad, bool) or (requires_grad and not tensor.dtype.is_floating_point):
            raise UnpicklingError(f"{self.where}: a Parameter of dtype {tensor.dtype} with requires_grad="
                                  f"{checks.short(requires_grad)}")
        return Parameter(tensor, requires_grad)


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, max_bytes=None):
    """Load what `torch.save` (or `tinyattn.save`) wrote to `f` (a path or a binary file object).

    weights_only=True (the default; None means the same, as in PyTorch) runs no code from the file:
    only tensors, Parameters, numbers, strings, None, lists, tuples, dicts, OrderedDicts, sets,
    torch.Size, dtypes and devices are rebuilt, plus the classes and functions declared safe with
    `tinyattn.serialization.add_safe_globals` (a NumPy array, for one). weights_only=False is the
    explicit opt-in for a file you trust: Python's own unpickler then imports and calls whatever the
    file names, which can run any code, and rebuilds any object (a whole module saved with
    torch.save(model) comes back as the tinyattn module of the same name). map_location: None (where the
    tensors were saved), a device or string ('cpu', 'cuda'), a dict {saved: target}, or a function
    (storage, location) -> storage or None, as in PyTorch. mmap=True maps a file's storages instead of
    reading them. max_bytes: this load's size limit (default: tinyattn.serialization.get_max_load_bytes()).
    A `.safetensors` path is read by `load_file`.
    """
    if weights_only is None:
        weights_only = True
    if not isinstance(weights_only, bool):
        raise TypeError(f"weights_only must be True, False or None, got {weights_only!r}")
    if pickle_module is not None and (weights_only or pickle_module is not pickle):
        raise ValueError("tinyattn.load reads pickles with its own weights-only reader (or, with "
                         "weights_only=False, Python's pickle): leave pickle_module out")
    is_path = isinstance(f, (str, os.PathLike))
    where = repr(os.fspath(f)) if is_path else "the file object given to tinyattn.load"
    if map_location is not None and not isinstance(map_location, (str, dict, backend.Device)) and not callable(map_location):
        raise TypeError(f"map_location must be None, a device, a string, a dict or a function, got "
                        f"{type(map_location).__name__}")
    if is_path and os.fspath(f).endswith(".safetensors"):
        from .safetensors_format import load_file

        if isinstance(map_location, dict) or (callable(map_location) and not isinstance(map_location, backend.Device)):
            raise ValueError("a .safetensors file loads onto one device: give map_location as a device or string")
        return load_file(f, device=str(map_location or "cpu"), max_bytes=max_bytes)
    if mmap and not is_path:
        raise ValueError("mmap=True needs a file path, not a file object (as in PyTorch)")
    budget = checks.Budget(where, max_bytes)
    if is_path:
        try:
            file = open(f, "rb")
        except OSError as error:
            raise CheckpointError(f"{where} cannot be opened ({error.strerror or error}): check the path") from None
        with file:
            result, widened = _load(file, where, budget, map_location, pathlib.Path(f) if mmap else None,
                                    weights_only)
    else:
        if not hasattr(f, "read"):
            raise TypeError(f"tinyattn.load expects a path or a binary file object, got {type(f).__name__}")
        if not (hasattr(f, "seekable") and f.seekable()):  # zip needs seeking: read it into memory, bounded
            limit = budget.limit + budget.text_limit
            data = f.read(limit + 1)
            if len(data) > limit:
                budget.take(len(data), "the file")
            f = io.BytesIO(data)
        result, widened = _load(f, where, budget, map_location, None, weights_only)
    checks.warn_widened(where, widened)
    return result


def _open_archive(file, where, budget):
    """The checked zip archive of a torch.save file, the folder its records sit in, and its data.pkl."""
    head = file.read(4)
    file.seek(0)
    if head[:1] == b"\x80":
        raise CheckpointError(f"{where} is in PyTorch's legacy format (torch.save before PyTorch 1.6, or "
                              "_use_new_zipfile_serialization=False), which tinyattn does not read: load it in "
                              "PyTorch and save it again with torch.save")
    if head != b"PK\x03\x04":
        raise CheckpointError(f"{where} is not a file written by torch.save (no zip archive)")
    archive = checks.open_zip(file, where, budget, check=False)
    names = archive.namelist()
    prefix = names[0].split("/", 1)[0] + "/" if names and "/" in names[0] else ""
    if not prefix or any(not name.startswith(prefix) for name in names):
        checks.refuse(where, "its records do not all sit in one folder, as torch.save writes them")
    if f"{prefix}constants.pkl" in archive.NameToInfo or any(n.startswith(f"{prefix}code/") for n in names):
        raise CheckpointError(f"{where} is a TorchScript archive (torch.jit.save), which holds code: tinyattn "
                              "loads what torch.save writes; save the model's state_dict() instead")
    checks.check_members(archive, file.seek(0, io.SEEK_END), where)
    return archive, prefix, checks.read_text_member(archive, f"{prefix}data.pkl", where, budget)


def _load(file, where, budget, map_location, mmap_path, weights_only=True):
    archive, prefix, data = _open_archive(file, where, budget)
    byteorder = "little"
    if f"{prefix}byteorder" in archive.NameToInfo:
        byteorder = checks.read_text_member(archive, f"{prefix}byteorder", where, budget).decode("latin1")
        if byteorder not in ("little", "big"):
            checks.refuse(where, f"its byteorder record says {byteorder!r}")
    mapped = None
    if mmap_path is not None:  # copy-on-write, as PyTorch maps it: writes stay in this process
        mapped = np.memmap(mmap_path, dtype=np.uint8, mode="c")
    loader = _Loader(archive, prefix, where, budget, map_location, byteorder, mapped)
    unpickler = Unpickler if weights_only else TrustedUnpickler
    result = unpickler(data, where, loader.load_storage, loader.make_tensor, loader.make_parameter).load()
    return result, loader.widened


def get_unsafe_globals_in_checkpoint(f):
    """The globals a torch.save file names that a weights-only load does not allow by default (sorted
    "module.name" strings): what add_safe_globals would need, or a sign to load with
    weights_only=False only if you trust the file. The pickle is read, never run."""
    is_path = isinstance(f, (str, os.PathLike))
    where = repr(os.fspath(f)) if is_path else "the file object given to get_unsafe_globals_in_checkpoint"
    budget = checks.Budget(where)
    file = open(f, "rb") if is_path else f
    try:
        _, _, data = _open_archive(file, where, budget)
    finally:
        if is_path:
            file.close()
    names = set()
    try:
        for opcode, argument, _ in pickletools.genops(data):
            if opcode.name == "GLOBAL":
                module, name = argument.split(" ", 1)
                names.add(f"{'builtins' if module == '__builtin__' else module}.{name}")
    except ValueError as error:
        raise UnpicklingError(f"{where}: the pickle is malformed ({error})") from None
    return sorted(n for n in names if n not in ALLOWED and n not in DTYPES)

