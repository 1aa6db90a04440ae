"""The checks every load goes through, whatever the format (PyTorch's zip, safetensors, a checkpoint
directory), so that a file cannot make tinyattn run code, take unbounded memory or load something else
than what it holds.

- A size limit. Every size a file declares (a zip member, a tensor's shape and strides, a JSON
  header) is checked against the bytes really there and against `get_max_load_bytes()` BEFORE any
  array is allocated. One load may read at most that many bytes of tensor data (4 GiB unless raised
  with `set_max_load_bytes(n)`, a `max_bytes=` argument or the TINYATTN_MAX_LOAD_BYTES environment
  variable), and at most a sixteenth of it as text to parse (a pickle, a JSON header): parsed text
  takes several times its size as Python objects.
- One table of element types (`STORED_TYPES`) for the three formats: float32, float64, int64, int32,
  int16, int8, uint8 and bool load as they are; float16 and bfloat16 are widened to float32 (which holds
  every value exactly), with a warning; anything else (complex, float8, ...) is refused.
- Zip archives: members stored uncompressed (as np.savez and torch.save write them, so no zip bomb can
  expand), each name once, sizes within the file; data is read in bounded chunks and its CRC checked.
- Tensor views: an offset and strides must stay inside their storage.
- JSON: bounded size, no duplicate keys, and small typed-field helpers for schemas.

Every refusal is a `CheckpointError` (tinyattn.errors) naming the file and what to do.
"""

import dataclasses
import io
import json
import math
import numbers
import os
import struct
import warnings
import zipfile
import zlib

import numpy as np

from .. import backend
from ..errors import CheckpointError, DeviceError

DEFAULT_MAX_LOAD_BYTES = 4 * 2**30
ENVIRONMENT_VARIABLE = "TINYATTN_MAX_LOAD_BYTES"
_max_load_bytes = None  # None: the environment variable, or the default
_CHUNK = 1 << 24  # bytes read at a time (a chunk is the only temporary copy a read makes)


def _check_limit(n, what):
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"{what} must be a positive number of bytes, got {n!r}")
    return int(n)


def get_max_load_bytes():
    """The bytes of tensor data one load may read (4 GiB unless set otherwise)."""
    if _max_load_bytes is not None:
        return _max_load_bytes
    text = os.environ.get(ENVIRONMENT_VARIABLE)
    if text is None:
        return DEFAULT_MAX_LOAD_BYTES
    try:
        return _check_limit(int(text), ENVIRONMENT_VARIABLE)
    except ValueError:
        raise ValueError(f"{ENVIRONMENT_VARIABLE} must be a positive number of bytes, got {text!r}") from None


def set_max_load_bytes(n):
    """Let one load read up to `n` bytes of tensor data (None: back to the default). Returns the old limit.

    Raise it to load a checkpoint larger than 4 GiB that you trust; lower it to refuse large files early.
    """
    global _max_load_bytes
    previous = get_max_load_bytes()
    _max_load_bytes = None if n is None else _check_limit(n, "the load limit")
    return previous


def format_bytes(n):
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


class Budget:
    """What one load may still read: tensor bytes up to `limit`, text up to `text_limit` per piece."""

    def __init__(self, where, max_bytes=None):
        self.where = where
        self.limit = get_max_load_bytes() if max_bytes is None else _check_limit(max_bytes, "max_bytes")
        self.text_limit = max(1 << 16, self.limit // 16)
        self.used = 0

    def _refuse(self, what, nbytes, limit):
        raise CheckpointError(
            f"{self.where}: {what} would take {format_bytes(nbytes)}, more than the load limit of "
            f"{format_bytes(limit)} allows. If you trust this file, raise the limit with "
            f"tinyattn.serialization.set_max_load_bytes(n) or {ENVIRONMENT_VARIABLE}=n"
        )

    def take(self, nbytes, what):
        """Count `nbytes` of tensor data about to be read, or refuse before anything is allocated."""
        self.check(nbytes, what)
        self.used += nbytes

    def check(self, nbytes, what):
        """Refuse `nbytes` that could not be taken, without counting them."""
        if nbytes > self.limit - self.used:
            self._refuse(what, self.used + nbytes, self.limit)

    def check_text(self, nbytes, what):
        if nbytes > self.text_limit:
            self._refuse(what, nbytes, self.text_limit)


def refuse(where, problem, advice="the file is corrupt or was not written by PyTorch or tinyattn"):
    raise CheckpointError(f"{where}: {problem}; {advice}")


# ---------------------------------------------------------------------------------------------
# element types


@dataclasses.dataclass(frozen=True)
class StoredType:
    name: str  # PyTorch's and NumPy's name
    numpy: str  # the little-endian NumPy type of the stored bytes (bfloat16's bits are read as uint16)
    torch_storage: str  # the storage class torch.save names
    safetensors: str  # the name in a safetensors header
    loads_as: str  # the tinyattn dtype it becomes: itself, or a wider type holding every value exactly

    @property
    def itemsize(self):
        return np.dtype(self.numpy).itemsize


STORED_TYPES = [
    StoredType("float32", "<f4", "FloatStorage", "F32", "float32"),
    StoredType("float64", "<f8", "DoubleStorage", "F64", "float64"),
    StoredType("int64", "<i8", "LongStorage", "I64", "int64"),
    StoredType("int32", "<i4", "IntStorage", "I32", "int32"),
    StoredType("bool", "|b1", "BoolStorage", "BOOL", "bool"),
    StoredType("float16", "<f2", "HalfStorage", "F16", "float32"),
    StoredType("bfloat16", "<u2", "BFloat16Storage", "BF16", "float32"),
    StoredType("int16", "<i2", "ShortStorage", "I16", "int16"),
    StoredType("int8", "|i1", "CharStorage", "I8", "int8"),
    StoredType("uint8", "|u1", "ByteStorage", "U8", "uint8"),
]
BY_NAME = {t.name: t for t in STORED_TYPES}
BY_TORCH_STORAGE = {t.torch_storage: t for t in STORED_TYPES}
BY_SAFETENSORS = {t.safetensors: t for t in STORED_TYPES}
NATIVE = ("float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool")  # the dtypes a tinyattn tensor can have

UNSUPPORTED_ADVICE = ("tinyattn holds float32, float64, int64, int32, int16, int8, uint8 and bool tensors: convert it in "
                      "PyTorch first (e.g. t.float()) and save it again")


def stored_type_of_array(array, where):
    """The StoredType of a NumPy array about to be saved (only tinyattn's own dtypes)."""
    name = array.dtype.name
    if name not in NATIVE:
        raise TypeError(f"{where}: cannot save an array of dtype {array.dtype}: {UNSUPPORTED_ADVICE}")
    return BY_NAME[name]


def decode(raw, stored, where, byteorder="little"):
    """The values of `raw` (a 1-D uint8 array of stored bytes) as a NumPy array of `stored.loads_as`
    (widening float16 -> float32, ... is exact); a bool byte other than 0 or 1 is refused."""
    numpy_type = np.dtype(stored.numpy)
    if byteorder == "big" and numpy_type.itemsize > 1:
        numpy_type = numpy_type.newbyteorder(">")
    if stored.name == "bool":
        if raw.size and raw.max() > 1:
            refuse(where, "a bool tensor holds bytes other than 0 and 1")
        return raw.view(np.bool_)
    values = raw.view(numpy_type)
    if stored.name == "bfloat16":  # the high half of a float32: shift the bits into place
        values = (values.astype(np.uint32) << 16).view(np.float32)
    return values.astype(stored.loads_as, copy=False)


def warn_widened(where, widened, stacklevel=3):
    """One warning per load for the types that were widened (`widened`: a set of StoredTypes)."""
    if widened:
        kinds = ", ".join(f"{t.name} as {t.loads_as}" for t in sorted(widened, key=lambda t: t.name))
        warnings.warn(f"{where}: loaded {kinds} (exactly: tinyattn has no such dtype)", UserWarning,
                      stacklevel=stacklevel)


# ---------------------------------------------------------------------------------------------
# shapes and views


def check_shape(shape, where, what="shape"):
    """A shape as a tuple of Python ints >= 0 (a list or tuple of ints, no bools)."""
    if not isinstance(shape, (list, tuple)) or len(shape) > 64:
        refuse(where, f"{what} must be a list of at most 64 sizes, got {short(shape)}")
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
            refuse(where, f"{what} {short(shape)} holds {short(n)}, not a size >= 0")
    return tuple(int(n) for n in shape)


def check_view(shape, stride, offset, storage_numel, where):
    """A view (shape, stride, offset in elements) that stays inside a storage of `storage_numel`."""
    shape = check_shape(shape, where, "size")
    stride = check_shape(stride, where, "stride")
    if len(stride) != len(shape):
        refuse(where, f"size {list(shape)} and stride {list(stride)} have different lengths")
    if isinstance(offset, bool) or not isinstance(offset, numbers.Integral) or offset < 0:
        refuse(where, f"storage offset {short(offset)} is not an integer >= 0")
    if math.prod(shape) == 0:
        last = offset - 1  # no element is read
    else:
        last = offset + sum((n - 1) * s for n, s in zip(shape, stride))
    if offset > storage_numel or last >= storage_numel:
        refuse(where, f"a tensor of size {list(shape)}, stride {list(stride)} at offset {offset} reads element "
                      f"{last}, past the end of its storage of {storage_numel} elements")
    return shape, stride, int(offset)


def is_non_overlapping(shape, stride):
    """Whether no two elements of the view share memory (a sufficient test: each stride, smallest
    first, steps past everything the smaller strides reach)."""
    reach = 0
    for n, s in sorted(((n, s) for n, s in zip(shape, stride) if n > 1), key=lambda d: d[1]):
        if s <= reach:
            return False
        reach += (n - 1) * s
    return True


def view_of(storage, shape, stride, offset, budget, what):
    """The view of a 1-D storage array: shares its memory, or is a copy when elements would overlap."""
    itemsize = storage.itemsize
    if math.prod(shape) == 0:
        return np.zeros(shape, storage.dtype)
    base = storage[offset:]
    view = np.lib.stride_tricks.as_strided(base, shape, [s * itemsize for s in stride], writeable=True)
    if is_non_overlapping(shape, stride):
        return view
    budget.take(math.prod(shape) * itemsize, what)  # an expanded view: its copy is new memory
    return np.array(view, order="C")


# ---------------------------------------------------------------------------------------------
# zip archives (PyTorch's format and .npz)


def _end_of_central_directory(fp, size, where):
    """(entries, central directory bytes) from the end of a zip file, read before zipfile parses it."""
    tail = min(size, 65536 + 22)
    fp.seek(size - tail)
    data = fp.read(tail)
    at = data.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(data):
        refuse(where, "it is not a zip archive (no end-of-archive record)")
    entries, directory_bytes = struct.unpack("<HI", data[at + 10:at + 16])
    if (entries == 0xFFFF or directory_bytes == 0xFFFFFFFF) and at >= 20 and data[at - 20:at - 16] == b"PK\x06\x07":
        (record_at,) = struct.unpack("<Q", data[at - 12:at - 4])
        if record_at + 56 > size:
            refuse(where, "its zip64 end record points outside the file")
        fp.seek(record_at)
        record = fp.read(56)
        if record[:4] != b"PK\x06\x06":
            refuse(where, "its zip64 end record is damaged")
        entries, directory_bytes = struct.unpack("<QQ", record[32:48])
    return entries, directory_bytes


def open_zip(fp, where, budget, check=True):
    """A zipfile.ZipFile over the binary file `fp`, its table of contents bounded by the text limit before
    it is parsed, and (unless check=False: then call check_members) every member checked."""
    fp.seek(0, io.SEEK_END)
    size = fp.tell()
    entries, directory_bytes = _end_of_central_directory(fp, size, where)
    budget.check_text(directory_bytes + 512 * entries, "the zip archive's table of contents")
    fp.seek(0)
    try:
        archive = zipfile.ZipFile(fp)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, struct.error) as error:
        refuse(where, f"it is not a readable zip archive ({error})")
    if check:
        check_members(archive, size, where)
    return archive


def check_members(archive, size, where):
    """Each name once, stored uncompressed (so nothing expands), inside the file of `size` bytes."""
    seen = set()
    for info in archive.infolist():
        if info.filename in seen:
            refuse(where, f"the archive holds {info.filename!r} twice")
        seen.add(info.filename)
        if info.compress_type != zipfile.ZIP_STORED:
            refuse(where, f"member {info.filename!r} is compressed; tinyattn reads archives stored uncompressed, "
                          "as torch.save and np.savez write them", "save it again with torch.save or tinyattn")
        if info.file_size != info.compress_size or info.header_offset + info.file_size > size:
            refuse(where, f"member {info.filename!r} declares {info.file_size} bytes that the file does not hold")


def read_member(archive, name, where, budget=None, exact_size=None, what=None):
    """The bytes of member `name` as a 1-D uint8 array: its size checked first (and counted against
    `budget` as tensor data when given), read in bounded chunks, its CRC-32 checked at the end."""
    if name not in archive.NameToInfo:
        refuse(where, f"it has no record {name!r}")
    info = archive.getinfo(name)
    what = what or f"record {name!r}"
    if exact_size is not None and info.file_size != exact_size:
        refuse(where, f"{what} should hold {exact_size} bytes but holds {info.file_size}")
    if budget is not None:
        budget.take(info.file_size, what)
    out = np.empty(info.file_size, np.uint8)
    view, done = memoryview(out), 0
    try:
        with archive.open(info) as member:
            while done < info.file_size:
                chunk = member.read(min(_CHUNK, info.file_size - done))
                if not chunk:
                    break
                view[done:done + len(chunk)] = chunk
                done += len(chunk)
            complete = done == info.file_size and not member.read(1)  # reading to the end checks the CRC
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, struct.error) as error:
        refuse(where, f"{what} cannot be read ({error})")
    if not complete:
        refuse(where, f"{what} is truncated")
    return out


def read_text_member(archive, name, where, budget):
    """The bytes of a small record (a pickle, a version string), bounded by the text limit."""
    if name not in archive.NameToInfo:
        refuse(where, f"it has no record {name!r}")
    budget.check_text(archive.getinfo(name).file_size, f"record {name!r}")
    return read_member(archive, name, where).tobytes()


def mapped_member(mapped, archive, name, where, exact_size, what):
    """The bytes of a stored member inside a memory map of the whole file (no copy), CRC checked."""
    info = archive.getinfo(name)
    if info.file_size != exact_size:
        refuse(where, f"{what} should hold {exact_size} bytes but holds {info.file_size}")
    header = bytes(mapped[info.header_offset:info.header_offset + 30])
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        refuse(where, f"the local header of {name!r} is damaged")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    start = info.header_offset + 30 + name_length + extra_length
    if start + info.file_size > len(mapped):
        refuse(where, f"{what} lies past the end of the file")
    data = mapped[start:start + info.file_size]
    if zlib.crc32(data) != info.CRC:
        refuse(where, f"{what} does not match its CRC-32")
    return np.asarray(data)  # a plain ndarray view of the map (tensors hold ndarrays)


# ---------------------------------------------------------------------------------------------
# .npy members of an .npz archive


def npy_header(archive, name, where):
    """(shape, dtype, fortran_order, data offset) of the .npy member `name`, from its header alone."""
    info = archive.getinfo(name)
    try:
        with archive.open(info) as member:
            version = np.lib.format.read_magic(member)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(member, max_header_size=10000)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(member, max_header_size=10000)
            else:
                refuse(where, f"{name} has .npy version {version}")
            offset = member.tell()
    except CheckpointError:
        raise
    except Exception as error:  # NumPy's header parser raises ValueError, SyntaxError, TypeError...
        refuse(where, f"{name} is not a valid .npy array ({type(error).__name__}: {error})")
    if dtype.hasobject or dtype.fields is not None or dtype.name not in NATIVE:
        refuse(where, f"{name} holds {dtype} data; a checkpoint holds float32, float64, int64, int32, "
                      "int16, int8, uint8 or bool arrays only")
    shape = check_shape(shape, where, f"{name}'s shape")
    nbytes = math.prod(shape) * dtype.itemsize
    if info.file_size != offset + nbytes:
        refuse(where, f"{name} declares shape {list(shape)} ({nbytes} bytes of {dtype}) but holds "
                      f"{info.file_size - offset} bytes of data")
    return shape, dtype, bool(fortran), offset


def read_npy(archive, name, where, budget, header=None):
    """The array of .npy member `name`, its header checked (and its bytes counted) before reading."""
    shape, dtype, fortran, offset = header or npy_header(archive, name, where)
    raw = read_member(archive, name, where, budget, what=f"array {name}")
    values = raw[offset:].view(dtype)
    if dtype.byteorder == ">":  # written on a big-endian machine: to this one's order
        values = values.astype(dtype.newbyteorder("="))
    if dtype == np.bool_ and values.size and raw[offset:].max() > 1:
        refuse(where, f"{name}: a bool array holds bytes other than 0 and 1")
    return values.reshape(shape, order="F" if fortran else "C")


# ---------------------------------------------------------------------------------------------
# JSON


def _no_duplicate_keys(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice")
        out[key] = value
    return out


def parse_json(data, where):
    """JSON text (bytes) as Python objects; duplicate keys, bad UTF-8 and absurd nesting refused."""
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicate_keys)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        refuse(where, f"it is not valid JSON ({type(error).__name__}: {str(error)[:200]})")


def read_json_file(path, where, budget, size=None):
    """A JSON file read after checking its size (against `size` when known, and the text limit)."""
    try:
        actual = os.stat(path).st_size
        if size is not None and actual != size:
            refuse(where, f"it holds {actual} bytes, not the {size} bytes recorded for it")
        budget.check_text(actual, "the JSON text")
        with open(path, "rb") as f:
            data = f.read(actual + 1)
    except OSError as error:
        refuse(where, f"it cannot be read ({error.strerror or error})")
    if len(data) != actual:
        refuse(where, "it changed while it was read")
    return parse_json(data, where)


def short(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


_KINDS = {
    "int": "an integer",
    "number": "a finite number",
    "str": "a string",
    "bool": "true or false",
    "dict": "an object",
    "list": "a list",
}


def expect(value, kind, where, field, low=None, high=None, below=None):
    """`value` if it is of `kind` (one of _KINDS) and within [low, high] (or [low, below)); refused otherwise."""
    ok = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
        "str": lambda v: isinstance(v, str),
        "bool": lambda v: isinstance(v, bool),
        "dict": lambda v: isinstance(v, dict),
        "list": lambda v: isinstance(v, list),
    }[kind](value)
    if ok and low is not None and value < low:
        ok = False
    if ok and high is not None and value > high:
        ok = False
    if ok and below is not None and value >= below:
        ok = False
    if not ok:
        bounds = "".join([f" >= {low}" if low is not None else "", f" <= {high}" if high is not None else "",
                          f" < {below}" if below is not None else ""])
        refuse(where, f"{field} must be {_KINDS[kind]}{bounds}, got {short(value)}",
               "the file was changed by hand or damaged: restore it, or train again")
    return value


def load_device(target, location, asked=False):
    """The Device for a map_location value (asked: True) or a saved location, with PyTorch's message
    for CUDA."""
    try:
        device = backend.device(target if isinstance(target, backend.Device) else str(target))
    except (DeviceError, ValueError) as error:
        raise DeviceError(f"the file's tensors were saved on {location!r}, which tinyattn cannot place ({error}): "
                          "load them with map_location='cpu'") from None
    if device.type == "cuda" and not backend.cuda_is_available():
        if asked:
            raise DeviceError(f"map_location={str(target)!r} puts the file's tensors (saved on {location!r}) on a "
                              "CUDA device, but CUDA is not available here (CuPy and a GPU): load them with "
                              "map_location='cpu'")
        raise DeviceError(f"the file's tensors were saved on {location!r} (a CUDA device), but CUDA is not "
                          "available here (CuPy and a GPU): load them with map_location='cpu'")
    return device
