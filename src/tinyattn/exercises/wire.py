"""The messages between the grader and the process that runs a learner's code (see isolation.py).

A message is a length (8 bytes, big-endian) and that many bytes of JSON. NumPy arrays travel as
{"__array__": dtype, "shape": [...], "data": base64 of the raw bytes}, of a few plain numeric dtypes
only, and tuples as {"__tuple__": [...]}. Nothing is unpickled: what the learner's process sends is
read as data, so it can say wrong things about its own exercise but cannot run code in the grader.
"""

import base64
import json
import math
import struct

import numpy as np

MAX_BYTES = 64 * 2**20  # a longer message is refused (the checker's cases are small)
_DTYPES = {"<f8", "<f4", "<i8", "<i4", "|b1", "<f2", "|u1", "|i1"}
_LENGTH = struct.Struct(">Q")


class WireError(Exception):
    """A message that is not one: too long, not JSON, or holding something other than data."""


def _encode(value):
    if isinstance(value, np.ndarray):
        array = np.array(value, order="C", copy=True)  # (ascontiguousarray makes a 0-d array 1-d)
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        if array.dtype.str not in _DTYPES:
            raise WireError(f"an array of dtype {array.dtype} cannot be sent")
        return {"__array__": array.dtype.str, "shape": list(array.shape),
                "data": base64.b64encode(array.tobytes()).decode("ascii")}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise WireError(f"a {type(value).__name__} cannot be sent")


def _decode(value):
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if "__array__" in value:
            dtype, shape, data = value["__array__"], value.get("shape"), value.get("data")
            if dtype not in _DTYPES or not isinstance(shape, list) or not isinstance(data, str):
                raise WireError("a malformed array")
            if not all(isinstance(n, int) and 0 <= n for n in shape):
                raise WireError("a malformed array shape")
            raw = base64.b64decode(data.encode("ascii"), validate=True)
            dtype = np.dtype(dtype)
            if len(raw) != math.prod(shape) * dtype.itemsize:
                raise WireError("an array whose data does not fit its shape")
            return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        if "__tuple__" in value:
            return tuple(_decode(v) for v in value["__tuple__"])
        return {k: _decode(v) for k, v in value.items()}
    return value


def pack(message):
    """The bytes of a message (a dict of data)."""
    body = json.dumps(_encode(message), allow_nan=True).encode("utf-8")
    if len(body) > MAX_BYTES:
        raise WireError(f"a message of {len(body)} bytes is longer than {MAX_BYTES}")
    return _LENGTH.pack(len(body)) + body


def send(stream, message):
    stream.write(pack(message))
    stream.flush()


def receive(stream):
    """The next message from a binary stream, or None at its end; WireError if it is not a message."""
    head = _read(stream, _LENGTH.size)
    if head is None:
        return None
    (length,) = _LENGTH.unpack(head)
    if length > MAX_BYTES:
        raise WireError(f"a message of {length} bytes (at most {MAX_BYTES} are read)")
    body = _read(stream, length)
    if body is None:
        raise WireError("a message cut short")
    try:
        message = json.loads(body.decode("utf-8"))
        if not isinstance(message, dict):
            raise WireError("a message that is not an object")
        return _decode(message)
    except (UnicodeDecodeError, ValueError, TypeError, RecursionError) as error:  # nested too deep, bad base64
        raise WireError(f"not a message: {type(error).__name__}") from None


def _read(stream, size):
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
