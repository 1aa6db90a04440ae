"""`tinyattn.testing.assert_close`: are two tensors (or numbers, or lists and dicts of them) close,
with PyTorch's default tolerances per dtype and PyTorch's report when they are not.

    tinyattn.testing.assert_close(actual, expected)      # raises AssertionError, or returns None

Two values are close where |actual - expected| <= atol + rtol * |expected| (NaN equal to NaN only
with equal_nan=True; infinities of the same sign equal). Shapes, dtypes and devices must match
first (check_dtype=False and check_device=False relax the last two).
"""

import numbers

import numpy as np

from . import backend, dtypes
from .tensor import Tensor

# PyTorch's default (rtol, atol) for each dtype; integers and bools must be equal
DEFAULT_TOLERANCES = {dtypes.float16: (1e-3, 1e-5), dtypes.bfloat16: (1.6e-2, 1e-5), dtypes.float32: (1.3e-6, 1e-5),
                      dtypes.float64: (1e-7, 1e-7)}


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise AssertionError (with PyTorch's report) unless actual and expected are close."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    _compare(actual, expected, [], dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                                        check_dtype=check_dtype, msg=msg))


def _fail(text, path, options):
    if path:
        text += "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in path)
    msg = options["msg"]
    raise AssertionError(msg(text) if callable(msg) else msg if msg is not None else text)


def _compare(actual, expected, path, options):
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            _fail(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path, options)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, path + [i], options)
        return
    if isinstance(actual, dict) and isinstance(expected, dict):
        if set(actual) != set(expected):
            _fail(f"The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                  f"{sorted(set(expected) - set(actual), key=repr)}\nExtra keys in the actual mapping: "
                  f"{sorted(set(actual) - set(expected), key=repr)}", path, options)
        for key in expected:
            _compare(actual[key], expected[key], path + [key], options)
        return
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        return _compare_tensors(actual, expected, path, options)
    if _is_number(actual) and _is_number(expected) and type(actual) is type(expected):
        return _compare_numbers(actual, expected, path, options)
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")


def _is_number(value):
    return isinstance(value, (numbers.Number, np.number, np.bool_))


def _tolerances(dtype, options):
    if options["rtol"] is not None:
        return options["rtol"], options["atol"]
    return DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))


def _compare_tensors(actual, expected, path, options):
    for attribute in ("shape", "device", "dtype"):
        if attribute == "device" and not options["check_device"] or attribute == "dtype" and not options["check_dtype"]:
            continue
        mine, theirs = getattr(actual, attribute), getattr(expected, attribute)
        if mine != theirs:
            _fail(f"The values for attribute '{attribute}' do not match: {mine} != {theirs}.", path, options)
    dtype = actual.dtype if actual.dtype is expected.dtype else dtypes.promote(actual.dtype, expected.dtype)
    a = backend.to_host(actual.detach().array).astype(dtype.name)
    e = backend.to_host(expected.detach().array).astype(dtype.name)
    rtol, atol = _tolerances(dtype, options)
    close = _close(a, e, rtol, atol, options["equal_nan"])
    if close.all():
        return
    exact = not dtype.is_floating_point and rtol == 0 and atol == 0
    wide = a.dtype if dtype.is_floating_point else np.dtype(np.float32)  # PyTorch's dtype for the differences
    with np.errstate(all="ignore"):
        absolute = np.abs(a - e) if dtype.is_floating_point else np.abs(a.astype(np.int64) - e.astype(np.int64))
        relative = absolute.astype(wide) / np.abs(e).astype(wide)
    if a.ndim == 0:
        _fail(_scalar_report(a.item(), e.item(), rtol, atol, exact, absolute.item(), relative.item()), path, options)
    mismatched = int((~close).sum())
    lines = [f"Tensor-likes are not {'equal' if exact else 'close'}!", "",
             f"Mismatched elements: {mismatched} / {a.size} ({100 * mismatched / a.size:.1f}%)"]
    for word, values, allowed in (("absolute", absolute, atol), ("relative", relative, rtol)):
        place = _greatest(values)
        value = values[place].item()
        lines.append(f"Greatest {word} difference: {value} at index {place}"
                     + ("" if exact else f" (up to {allowed} allowed)"))
    _fail("\n".join(lines), path, options)


def _greatest(values):
    """The index (a tuple) of the greatest value, NaN counting as the greatest, as PyTorch reports it."""
    flat = values.reshape(-1)
    nan = np.isnan(flat) if flat.dtype.kind == "f" else np.zeros(flat.shape, bool)
    k = int(np.argmax(nan)) if nan.any() else int(np.argmax(flat))
    return tuple(int(i) for i in np.unravel_index(k, values.shape))


def _close(a, e, rtol, atol, equal_nan):
    if a.dtype.kind not in "fc":
        return a == e
    with np.errstate(all="ignore"):
        close = (a == e) | (np.abs(a - e) <= atol + rtol * np.abs(e))
    if equal_nan:
        close |= np.isnan(a) & np.isnan(e)
    return close


def _compare_numbers(actual, expected, path, options):
    floating = isinstance(actual, (float, complex, np.floating))
    rtol, atol = (options["rtol"], options["atol"]) if options["rtol"] is not None else (
        (1e-7, 1e-7) if floating else (0.0, 0.0))
    as_array = (lambda v: np.asarray(v, np.float64)) if floating else np.asarray
    if bool(_close(as_array(actual), as_array(expected), rtol, atol, options["equal_nan"])):
        return
    _fail(_scalar_report(actual, expected, rtol, atol, not floating and rtol == 0 and atol == 0), path, options)


def _scalar_report(actual, expected, rtol, atol, exact, absolute=None, relative=None):
    if absolute is None:  # two Python numbers: the differences in Python's arithmetic
        absolute = abs(actual - expected)
        relative = absolute / abs(expected) if expected != 0 else float("inf") if absolute else float("nan")
    if exact:
        return f"Scalars are not equal!\n\nExpected {expected} but got {actual}.\nAbsolute difference: {absolute}\n" \
               f"Relative difference: {relative}"
    return (f"Scalars are not close!\n\nExpected {expected} but got {actual}.\nAbsolute difference: {absolute} "
            f"(up to {atol} allowed)\nRelative difference: {relative} (up to {rtol} allowed)")


__all__ = ["assert_close"]

# a PyTorch name this module lacks says so (tinyattn/missing.py)
from . import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
