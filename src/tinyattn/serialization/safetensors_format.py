"""safetensors files: `save_file(tensors, filename, metadata=None)` and `load_file(filename, device="cpu")`.

The format (huggingface/safetensors) holds no code, only numbers:

    8 bytes        N, the header's length (little-endian unsigned)
    N bytes        a JSON header: {"__metadata__": {"key": "text"},
                                   "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
    the rest       the tensors' little-endian bytes, one after another, offsets counted from here

Loading checks the header through checks.py before reading any tensor: sizes within the file and the
load limit, known dtypes, shapes that match their byte ranges, and ranges that tile the data exactly
(no gaps, no overlaps), as the reference implementation requires.
"""

import json
import math
import os
import struct

import numpy as np

from .. import backend
from ..errors import CheckpointError
from ..tensor import Tensor
from . import checks

MAX_HEADER_BYTES = 100_000_000  # the reference implementation's limit
_REFUSED = {"C64": "complex64", "C128": "complex128", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
            "U16": "uint16", "U32": "uint32", "U64": "uint64"}


def save_file(tensors, filename, metadata=None):
    """Write `tensors` (a dict of name -> Tensor or NumPy array) to `filename` as safetensors.

    `metadata`: an optional dict of strings. Tensors that share memory (tied weights) are written once
    each, as the NumPy API of safetensors does.
    """
    if not isinstance(tensors, dict):
        raise TypeError(f"save_file expects a dict of name -> tensor, got {type(tensors).__name__}")
    if metadata is not None and (not isinstance(metadata, dict) or
                                 not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError("metadata must be a dict of strings to strings (as safetensors requires)")
    arrays = {}
    for name, value in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise TypeError(f"tensor names must be strings other than '__metadata__', got {name!r}")
        if isinstance(value, Tensor):
            value = backend.to_host(value.detach().array)
        if not isinstance(value, np.ndarray):
            raise TypeError(f"save_file: {name!r} is a {type(value).__name__}, not a tensor or NumPy array")
        stored = checks.stored_type_of_array(value, f"save_file: {name!r}")
        arrays[name] = (stored, np.asarray(value, dtype=stored.numpy, order="C"))  # (ascontiguousarray makes 0-d 1-d)
    header = {"__metadata__": metadata} if metadata else {}
    order = sorted(arrays, key=lambda name: (-arrays[name][0].itemsize, name))  # the reference's order
    offset = 0
    for name in order:
        stored, array = arrays[name]
        header[name] = {"dtype": stored.safetensors, "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the reference pads it
    with open(filename, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name in order:
            f.write(arrays[name][1].reshape(-1).view(np.uint8).data)


def load_file(filename, device="cpu", *, max_bytes=None):
    """The tensors of a safetensors file, as a dict of name -> Tensor on `device`, in the file's order.

    max_bytes: this load's size limit (default tinyattn.serialization.get_max_load_bytes()).
    `load_metadata(filename)` gives the header's `__metadata__`."""
    tensors, _, widened = _read(filename, max_bytes, device)
    checks.warn_widened(repr(os.fspath(filename)), widened)
    return tensors


def load_metadata(filename, *, max_bytes=None):
    """The `__metadata__` dict of a safetensors file (None when it has none), without reading tensors."""
    return _read(filename, max_bytes, None)[1]


def _read(filename, max_bytes, device):
    where = repr(os.fspath(filename))
    budget = checks.Budget(where, max_bytes)
    target = None if device is None else checks.load_device(device, device)
    try:
        f = open(filename, "rb")
    except OSError as error:
        raise CheckpointError(f"{where} cannot be opened ({error.strerror or error}): check the path") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            checks.refuse(where, f"it holds {size} bytes, too few for a safetensors header")
        (header_bytes,) = struct.unpack("<Q", f.read(8))
        if header_bytes > size - 8:
            checks.refuse(where, f"its header claims {header_bytes} bytes but the file holds {size - 8} after the "
                                 "length")
        if header_bytes > MAX_HEADER_BYTES:
            checks.refuse(where, f"its header claims {header_bytes} bytes, more than safetensors allows")
        budget.check_text(header_bytes, "the safetensors header")
        text = f.read(header_bytes)
        if not text.startswith(b"{"):
            checks.refuse(where, "its header is not a JSON object")
        header = checks.parse_json(text, where)
        entries, metadata = _check_header(header, size - 8 - header_bytes, where)
        if device is None:
            return None, metadata, set()
        out, widened = {}, set()
        for name, (stored, shape, begin, end) in entries.items():
            what = f"tensor {name!r} ({stored.name}, shape {list(shape)})"
            budget.take(end - begin, what)
            if stored.loads_as != stored.name:
                budget.take(math.prod(shape) * np.dtype(stored.loads_as).itemsize, f"{what}, widened")
                widened.add(stored)
            raw = np.empty(end - begin, np.uint8)
            f.seek(8 + header_bytes + begin)
            if f.readinto(memoryview(raw)) != raw.size:
                checks.refuse(where, f"{what} is truncated")
            values = checks.decode(raw, stored, f"{where}, {what}").reshape(shape)
            out[name] = Tensor._wrap(backend.from_host(values, target))
        return out, metadata, widened


def _check_header(header, data_bytes, where):
    """{name: (StoredType, shape, begin, end)} and the metadata, every field checked."""
    if not isinstance(header, dict):
        checks.refuse(where, "its header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and (not isinstance(metadata, dict) or
                                 not all(isinstance(v, str) for v in metadata.values())):
        checks.refuse(where, f"its __metadata__ is {checks.short(metadata)}, not an object of strings")
    entries = {}
    for name, entry in header.items():
        what = f"tensor {name!r}"
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            checks.refuse(where, f"{what} is described by {checks.short(entry)}, not by dtype, shape and data_offsets")
        code = entry["dtype"]
        if not isinstance(code, str) or code not in checks.BY_SAFETENSORS:
            if code in _REFUSED:
                raise CheckpointError(f"{where}: {what} holds {_REFUSED[code]} values; {checks.UNSUPPORTED_ADVICE}")
            checks.refuse(where, f"{what} has an unknown dtype {checks.short(code)}")
        stored = checks.BY_SAFETENSORS[code]
        shape = checks.check_shape(entry["shape"], where, f"{what}'s shape")
        offsets = entry["data_offsets"]
        if not (isinstance(offsets, list) and len(offsets) == 2 and
                all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x for x in offsets) and
                offsets[0] <= offsets[1]):
            checks.refuse(where, f"{what} has data_offsets {checks.short(offsets)}, not [begin, end] with "
                                 "0 <= begin <= end")
        begin, end = offsets
        if end - begin != math.prod(shape) * stored.itemsize:
            checks.refuse(where, f"{what} has shape {list(shape)} ({math.prod(shape) * stored.itemsize} bytes of "
                                 f"{stored.name}) but covers {end - begin} bytes")
        entries[name] = (stored, shape, begin, end)
    reached = 0
    for name, (_, _, begin, end) in sorted(entries.items(), key=lambda item: (item[1][2], item[1][3])):
        if begin != reached:
            checks.refuse(where, f"tensor {name!r} starts at byte {begin} of the data, but the tensors before it "
                                 f"end at {reached} (gaps and overlaps are not allowed)")
        reached = end
    if reached != data_bytes:
        checks.refuse(where, f"its tensors cover {reached} bytes of data but the file holds {data_bytes}")
    return entries, metadata
