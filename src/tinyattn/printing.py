"""Print tensors exactly as PyTorch 2.x does, so output can be checked against the textbook's.

PyTorch's algorithm (torch/_tensor_str.py), reduced to the dense float/int/bool tensors we have:

1. Choose one style for all elements, from the values that will be shown:
   - integer dtypes and bool print as Python does (`5`, `True`);
   - floats print as `1.` when every finite nonzero value is a whole number ("int mode"),
     in scientific notation `1.0000e+05` when the finite nonzero magnitudes span more than
     a factor of 1000, exceed 1e8 or go below 1e-4, and otherwise as `0.1235`;
   - every element is right-aligned to the width of the widest finite nonzero value, so
     columns line up (`inf`, `nan` and zeros do not count towards that width).
2. Nest brackets: one more space of indent per level, and between blocks of a k-D tensor
   k-1 line breaks (so 3-D tensors get a blank line between their matrices).
3. Wrap rows of a vector to fit `linewidth`; when the tensor has more than `threshold`
   elements, show only `edgeitems` items at each end of every dimension with `...` between.
4. Append suffixes (`device=`, `size=`, `dtype=`, `grad_fn=`/`requires_grad=`), each on a new
   line when it would not fit on the current one.

This module uses only NumPy and the standard library; tinyattn never imports torch.
"""

import contextlib
import math

import numpy as np

# PyTorch's named sets of options (`set_printoptions(profile=...)`).
_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}

_options = dict(_PROFILES["default"], sci_mode=None)

_PREFIX = "tensor("


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Change how tensors print, like `torch.set_printoptions`.

    A profile ("default", "short" or "full") is applied first, then any explicit option. As in
    PyTorch, `sci_mode` is always overwritten, so a call without it goes back to automatic choice.
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"unknown print profile {profile!r}: use 'default', 'short' or 'full'")
        _options.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            _options[name] = value
    _options["sci_mode"] = sci_mode


def get_printoptions():
    """The current options as a dict that can be passed back to `set_printoptions(**options)`."""
    return dict(_options)


@contextlib.contextmanager
def printoptions(**options):
    """Change the print options inside a `with` block only."""
    saved = get_printoptions()
    set_printoptions(**options)
    try:
        yield
    finally:
        set_printoptions(**saved)


_DTYPES_NOT_SHOWN = (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_))


def dtype_is_shown(numpy_dtype):
    """Whether a non-empty tensor of this dtype prints a `dtype=` suffix.

    PyTorch leaves out the dtypes a literal gets without asking: the default float dtype
    (float32), int64 (from `tensor([1, 2])`) and bool.
    """
    return np.dtype(numpy_dtype) not in _DTYPES_NOT_SHOWN


class _ElementFormatter:
    """Turns one element into text, in the style and width chosen for the whole tensor."""

    def __init__(self, values, precision, sci_mode_option):
        self.precision = precision
        self.is_float = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1

        if not self.is_float:
            self.width = max([self.width] + [len(str(v)) for v in values.ravel().tolist()])
            return

        flat = values.ravel()
        measured = flat[np.isfinite(flat) & (flat != 0)]
        if measured.size == 0:
            # Only zeros, infinities and nans: `0.`, `inf`, `nan`, whatever the options say.
            return

        # Compare in float64, as PyTorch does, so float32 ratios do not round differently.
        magnitudes = np.abs(measured).astype(np.float64)
        smallest, largest = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(measured == np.ceil(measured)))
        if sci_mode_option is None:
            with np.errstate(over="ignore"):  # a ratio beyond float64's range is inf: still > 1000
                ratio = largest / smallest
            self.sci_mode = bool(ratio > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4)
        else:
            self.sci_mode = bool(sci_mode_option)
        # `.tolist()` gives Python floats (exact for float32), which is what PyTorch formats.
        self.width = max(len(self._text(v)) for v in measured.tolist())

    def _text(self, value):
        if not self.is_float:
            return str(value)
        if self.sci_mode:
            return f"{value:.{self.precision}e}"
        if self.int_mode:
            text = f"{value:.0f}"
            # The trailing dot says "float"; `inf` and `nan` already do not look like integers.
            return text if math.isinf(value) or math.isnan(value) else text + "."
        return f"{value:.{self.precision}f}"

    def format(self, value):
        return self._text(value).rjust(self.width)


def _summarized(values, edgeitems):
    """The elements a summarized print shows: the first and last `edgeitems` along every axis.

    The element style is chosen from these only, so hidden values cannot widen the columns.
    """
    for axis, size in enumerate(values.shape):
        if size > 2 * edgeitems:
            kept = list(range(edgeitems)) + list(range(size - edgeitems, size))
            values = np.take(values, kept, axis=axis)
    return values


def _vector_text(values, indent, summarize, formatter):
    edgeitems = _options["edgeitems"]
    if summarize and edgeitems == 0:
        items = ["..."]
    elif summarize and values.shape[0] > 2 * edgeitems:
        # The " ..." item keeps its leading space: PyTorch's row then reads `1, 2, 3,  ..., 7`.
        items = ([formatter.format(v) for v in values[:edgeitems].tolist()] + [" ..."]
                 + [formatter.format(v) for v in values[-edgeitems:].tolist()])
    else:
        items = [formatter.format(v) for v in values.tolist()]

    # Every item takes its width plus ", "; the closing bracket does not count.
    per_line = max(1, math.floor((_options["linewidth"] - indent) / (formatter.width + 2)))
    lines = [", ".join(items[start:start + per_line]) for start in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_text(values, indent, summarize, formatter):
    """The bracketed text of `values`, whose first line starts at column `indent`."""
    if values.ndim == 0:
        return formatter.format(values.item())
    if values.ndim == 1:
        return _vector_text(values, indent, summarize, formatter)

    edgeitems = _options["edgeitems"]
    size = values.shape[0]
    if summarize and size > 2 * edgeitems:
        rows = list(range(edgeitems)) + ["..."] + list(range(size - edgeitems, size))
    else:
        rows = list(range(size))
    blocks = [row if row == "..." else _nested_text(values[row], indent + 1, summarize, formatter)
              for row in rows]
    # A k-D tensor separates its (k-1)-D blocks by k-1 line breaks: blank lines from 3-D up.
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(blocks) + "]"


def _data_text(values, indent):
    """The bracketed elements of a non-empty tensor, summarized when it is too big to show whole."""
    summarize = values.size > _options["threshold"]
    shown = _summarized(values, _options["edgeitems"]) if summarize else values
    formatter = _ElementFormatter(shown, _options["precision"], _options["sci_mode"])
    return _nested_text(values, indent, summarize, formatter)


def _length_in_pytorch(suffix):
    """The length of PyTorch's spelling of a suffix: `dtype=torch.float64` rather than ours.

    Lines are broken where PyTorch breaks them, so a printout has the same lines as in the
    textbook, only with our module name (which may run a few characters past `linewidth`).
    """
    if suffix.startswith("dtype="):
        return len("dtype=torch.") + len(suffix.rpartition(".")[2])
    return len(suffix)


def _append_suffixes(text, suffixes, indent):
    """Add `, suffix` to the last line, or `,\\n` + indent + suffix where it would not fit."""
    linewidth = _options["linewidth"]
    # PyTorch counts the last line as 2 characters longer than it is (room for the ", ").
    line_length = len(text) - (text.rfind("\n") + 1) + 2
    parts = [text]
    for suffix in suffixes:
        length = _length_in_pytorch(suffix)
        if line_length + length + 2 > linewidth:
            parts.append(",\n" + " " * indent + suffix)
            line_length = indent + length
        else:
            parts.append(", " + suffix)
            line_length += length + 2
    return "".join(parts) + ")"


def format_tensor(values, *, dtype_name, show_dtype, device=None, grad_fn=None,
                  requires_grad=False):
    """The text PyTorch prints for a tensor holding `values`, e.g. 'tensor([1.5000, 2.0000])'.

    values: a host NumPy array (float32/float64/int64/int32/bool, any shape, 0-d and empty too).
    dtype_name: what follows `dtype=`, e.g. 'tinyattn.float64'.
    show_dtype: whether a non-empty tensor shows its dtype (see `dtype_is_shown`). An empty
        tensor has no elements that reveal an integer or bool dtype, so PyTorch then shows every
        dtype but float32, whatever this flag says.
    device: e.g. 'cuda:0'; None or 'cpu' print nothing.
    grad_fn: the name of the function that made the tensor, e.g. 'MulBackward0'; when given,
        `requires_grad=True` is implied and not printed.
    """
    values = np.asarray(values)
    indent = len(_PREFIX)
    suffixes = []
    if device is not None and device != "cpu":
        suffixes.append(f"device='{device}'")

    if values.size == 0:
        text = "[]"
        if values.ndim != 1:  # `[]` alone would read as shape (0,)
            suffixes.append(f"size={tuple(values.shape)}")
        if show_dtype or values.dtype != np.float32:
            suffixes.append(f"dtype={dtype_name}")
    else:
        text = _data_text(values, indent)
        if _options["edgeitems"] == 0:  # the data prints as `[...]`, so show the shape instead
            suffixes.append(f"size={tuple(values.shape)}")
        if show_dtype:
            suffixes.append(f"dtype={dtype_name}")

    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _append_suffixes(_PREFIX + text, suffixes, indent)
