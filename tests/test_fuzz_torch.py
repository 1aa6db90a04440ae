"""Differential fuzzing against PyTorch: every public op and module of tinyattn, driven by one table.

Each entry of TABLE says how to call one public callable (`tinyattn.softmax`, `Tensor.add_`,
`F.gelu`, `nn.Linear`, `Tensor.__getitem__`) and what its arguments are. Hypothesis draws them:
tensors of random shapes (0-size dims, 0-d tensors, size-1 dims that broadcast) and dtypes (float32,
float64, int64, int32, bool, with inf and NaN among the floats now and then), and other arguments
valid and invalid (dims out of range or repeated, shapes that do not fit, wrong dtypes). The same
call runs on tinyattn and on PyTorch, and:

- where PyTorch returns, tinyattn returns the same: values (within a tolerance per dtype, NaN where
  PyTorch has NaN), shapes and dtypes, and for float inputs the same gradients of a random weighted
  sum of the outputs;
- where PyTorch raises, tinyattn raises a clear error (the rule is `assert_clear_error`: raised by a
  `raise` statement of tinyattn's own code), never one from inside NumPy or Python;
- where tinyattn deliberately differs (README, "Differences from PyTorch"), the entry says so in
  its `differs`: one library may then raise where the other returns (where both return, they still
  agree); where PyTorch contradicts itself (a check it skips for empty tensors, a backward that
  fails on a result its forward gave), the entry's `quirk` says so and only tinyattn's errors are
  checked. Every such predicate is a named function whose docstring gives the reason.

`test_every_public_callable_is_in_the_table` fails on any public callable that is neither in the
table nor in NOT_FUZZED with its reason: a new op gets its line here.

An entry's `call(L, *args, **kwargs)` is written once for both libraries: `L` is tinyattn or torch
(with tinyattn's own attention functions and the book's classes added to torch's F and nn, see
`torch_lib`). Arguments are specs: a Hypothesis strategy, or a function (data, drawn) of the
arguments drawn before it (a dim of the first tensor, a shape that broadcasts with it).

The cases the fuzz found are pinned at the end as plain tests (PINNED). CI runs the "ci" profile
(15 examples per entry, under a minute in all); HYPOTHESIS_PROFILE=dev runs 300 per entry.
"""

import dataclasses
import linecache
import math
import os
import types
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, note as hypothesis_note, strategies as st
from hypothesis.control import currently_in_test_context
from hypothesis.extra import numpy as hnp

import tinyattn
import tinyattn.nn as tnn
from tinyattn import backend
from tinyattn.nn import functional as tF

from test_attention import book_classes  # the attention chapter's PyTorch classes, as the book writes them

# ---------------------------------------------------------------------------------------------
# the rule for errors


ALLOWED_ERRORS = (RuntimeError, ValueError, TypeError, IndexError, KeyError, NotImplementedError, OverflowError,
                  ZeroDivisionError)
PACKAGE = os.path.dirname(os.path.abspath(tinyattn.__file__)) + os.sep


def assert_clear_error(error):
    """An error where PyTorch raises too must be one tinyattn raised on purpose:

    - a built-in exception or one of tinyattn's (ShapeError, BackwardError, ...) that PyTorch code can
      catch the same way (RuntimeError, ValueError, TypeError, IndexError, ...);
    - raised by a `raise` statement in tinyattn's own code (the last frame of its traceback is such a
      line), so with a message that names the problem: NumPy's AxisError or "zero-size array to
      reduction", "too many values to unpack", Python's own ZeroDivisionError of `//`, an
      AttributeError of None, ... all come from inside NumPy or Python and fail here;
    - with a message of a few words at least.
    """
    where = error.__traceback__
    while where is not None and where.tb_next is not None:
        where = where.tb_next
    file = os.path.abspath(where.tb_frame.f_code.co_filename) if where else "?"
    line = linecache.getline(file, where.tb_lineno).strip() if where else ""
    origin = (f"{type(error).__module__}.{type(error).__name__}: {error}\n"
              f"  raised at {file}:{where and where.tb_lineno}: {line}")
    assert isinstance(error, ALLOWED_ERRORS), f"not an error PyTorch code expects: {origin}"
    assert type(error).__module__ == "builtins" or type(error).__module__.startswith("tinyattn"), origin
    assert file.startswith(PACKAGE) and line.startswith("raise "), f"not raised by tinyattn's own check: {origin}"
    assert len(str(error)) >= 20, f"too short a message: {origin}"


# ---------------------------------------------------------------------------------------------
# the two libraries as the table sees them


def torch_lib(torch):
    """torch, with PyTorch spellings of what only tinyattn has: F.attention, F.causal_mask,
    F.safe_softmax (references written with torch's ops) and the book's attention classes in nn."""

    def safe_softmax(input, dim=-1):  # PyTorch's own, which its SDPA uses (integers become float32, as in tinyattn)
        return torch._safe_softmax(input if input.is_floating_point() else input.float(), dim)

    def attention(query, key, value, blocked=None, bias=None, scale=None, dropout_p=0.0, training=True):
        if not query.dtype == key.dtype == value.dtype == (query.dtype if bias is None else bias.dtype):
            raise TypeError("query, key, value and bias must have one dtype")
        scores = query @ key.transpose(-2, -1)
        for mask in (blocked, bias):  # a mask broadcasts to the scores, not the scores to it
            if mask is not None and torch.broadcast_shapes(mask.shape, scores.shape) != scores.shape:
                raise RuntimeError(f"the mask's shape {mask.shape} does not broadcast to the scores' {scores.shape}")
        scores = scores / math.sqrt(query.shape[-1]) if scale is None else scores * scale
        if bias is not None:
            scores = scores + bias
        if blocked is not None:
            scores = scores.masked_fill(blocked, -math.inf)
        weights = safe_softmax(scores, -1)
        return weights @ value, weights

    def causal_mask(num_queries, num_keys, device=None):
        return torch.ones(num_queries, num_keys, device=device).tril() == 0

    F = types.SimpleNamespace(**vars(torch.nn.functional))
    F.safe_softmax, F.attention, F.causal_mask = safe_softmax, attention, causal_mask
    nn = types.SimpleNamespace(**vars(torch.nn))
    nn.__dict__.update(book_classes(torch))
    return Lib(torch, F, nn)


class Lib:
    """One library: L.zeros, L.Tensor ... are the module's; L.F is nn.functional, L.nn is nn."""

    def __init__(self, module, F, nn):
        self.module, self.F, self.nn = module, F, nn

    def __getattr__(self, name):
        return getattr(self.module, name)

    def tensor_of(self, values):
        return self.module.tensor(values)

    def dtype(self, name):
        return getattr(self.module, name)


TINY = Lib(tinyattn, tF, tnn)


def note(text):
    """Hypothesis's note in a property; nothing in a plain test (the pinned cases)."""
    if currently_in_test_context():
        hypothesis_note(text)


def no_reference(pytorch_error):
    """PyTorch's own internal errors ("INTERNAL ASSERT FAILED ... please report a bug to PyTorch") are
    no reference to compare with: another example, or a skip."""
    if pytorch_error is not None and "INTERNAL ASSERT FAILED" in str(pytorch_error):
        if currently_in_test_context():
            assume(False)
        pytest.skip(f"PyTorch fails itself here: {pytorch_error}")


OMIT = object()  # an optional argument left out


# ---------------------------------------------------------------------------------------------
# what the specs draw


FLOATS = ("float32", "float64")
INTS = ("int64", "int32")
ALL_DTYPES = FLOATS + INTS + ("bool",)
SPECIAL_FLOATS = (0.0, -0.0, math.inf, -math.inf, math.nan, 1e4, -1e4)


@dataclasses.dataclass
class Arr:
    """An array drawn for a tensor argument: each library gets a tensor of these values."""

    values: np.ndarray
    grad: bool  # the tensor requires grad (float arrays only)

    @property
    def shape(self):
        return self.values.shape

    @property
    def ndim(self):
        return self.values.ndim

    @property
    def dtype(self):
        return self.values.dtype.name

    def __repr__(self):
        return f"Arr({self.dtype}, {list(self.shape)}, grad={self.grad}, {self.values.tolist()!r})"


@dataclasses.dataclass
class Raw:
    """A value passed as it is to both libraries (a NumPy array for from_numpy, a list of numbers)."""

    value: object


@dataclasses.dataclass
class Kw:
    """A keyword argument: `name=value`, left out when the spec draws OMIT."""

    name: str
    spec: object


def draw_values(data, dtype, shape, low=-4, high=4, specials=True, coarse=False):
    """An array of this dtype and shape: numbers in [low, high], and among floats (with `specials`) now
    and then 0, -0, inf, -inf, NaN or 1e4 in random places."""
    if dtype == "bool":
        elements = st.booleans()
    elif dtype in INTS:
        elements = st.integers(low, high)
    else:
        elements = st.floats(low, high, width=32 if dtype == "float32" else 64)
    values = data.draw(hnp.arrays(dtype, shape, elements=elements), label="values")
    if coarse and dtype in FLOATS:  # multiples of 1/8: no quotient lies within rounding of a step of // and %
        values = np.round(values * 8) / 8
    if dtype in FLOATS:  # no number below 1e-6 in size but 0: the libraries' 0 * inf (1/x^2 overflowing) differ
        values = np.where(np.abs(values) < 1e-6, values * 0, values)
    if dtype in FLOATS and specials and values.size and data.draw(st.integers(0, 5), label="specials") == 0:
        count = data.draw(st.integers(1, values.size), label="special count")
        positions = data.draw(st.lists(st.integers(0, values.size - 1), min_size=count, max_size=count))
        picks = data.draw(st.lists(st.sampled_from(SPECIAL_FLOATS), min_size=count, max_size=count))
        values.reshape(-1)[positions] = picks
    return values


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=3):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def related_shape(data, shape):
    """A shape that mostly broadcasts with `shape` (the same, fewer leading dims, size-1 dims, a new
    leading dim), and now and then any shape (which mostly does not)."""
    how = data.draw(st.sampled_from(["same", "same", "broadcast", "broadcast", "any"]), label="relation")
    if how == "same":
        return tuple(shape)
    if how == "any":
        return data.draw(shapes(), label="any shape")
    kept = list(shape[data.draw(st.integers(0, len(shape)), label="dropped leading"):])
    ones = data.draw(st.lists(st.booleans(), min_size=len(kept), max_size=len(kept)), label="ones")
    result = [1 if one else n for n, one in zip(kept, ones)]
    if data.draw(st.booleans(), label="new leading") and len(result) < 4:
        result.insert(0, data.draw(st.integers(1, 2)))
    return tuple(result)


def T(dtypes=ALL_DTYPES, shape=None, like=None, low=-4, high=4, specials=True, grad=True, min_dims=0, max_dims=3,
      coarse=False):
    """A tensor: dtype from `dtypes`; shape drawn, or `shape(data, drawn)`, or related to drawn[like]."""

    def spec(data, drawn):
        dtype = data.draw(st.sampled_from(dtypes), label="dtype")
        if shape is not None:
            s = shape(data, drawn) if callable(shape) else shape
        elif like is not None:
            s = related_shape(data, drawn[like].shape)
        else:
            s = data.draw(shapes(min_dims, max_dims), label="shape")
        values = draw_values(data, dtype, s, low, high, specials, coarse)
        wants_grad = grad and dtype in FLOATS and data.draw(st.integers(0, 3), label="requires_grad") > 0
        return Arr(values, wants_grad)

    return spec


def dim(of=0, extra=0):
    """A dim of drawn[of] (`extra` more dims: unsqueeze's), now and then one out of range."""

    def spec(data, drawn):
        n = max(drawn[of].ndim + extra, 1)
        return data.draw(st.integers(-n - 1, n), label="dim")

    return spec


def dims(of=0, none=True, empty=True):
    """None, one dim, or a tuple or list of dims (some repeated or out of range now and then)."""

    def spec(data, drawn):
        n = max(drawn[of].ndim, 1)
        one = st.integers(-n - 1, n)
        lists = st.lists(one, min_size=0 if empty else 1, max_size=n + 1)
        several = st.one_of(one, lists.map(tuple), lists)
        return data.draw(st.none() | several if none else several, label="dims")

    return spec


def size_list(of=None, low=-1, high=4):
    """Sizes for zeros(*sizes), view(*sizes), ...: mostly the element count of drawn[of] when given."""

    def spec(data, drawn):
        if of is not None and data.draw(st.integers(0, 3), label="fits") > 0:
            count = math.prod(drawn[of].shape)
            sizes = list(data.draw(st.permutations(_factors(count)), label="factors"))
            if sizes and data.draw(st.booleans(), label="infer one"):
                sizes[data.draw(st.integers(0, len(sizes) - 1))] = -1
            if data.draw(st.booleans(), label="extra ones"):
                sizes.insert(data.draw(st.integers(0, len(sizes))), 1)
            return tuple(sizes)
        return tuple(data.draw(st.lists(st.integers(low, high), max_size=4), label="sizes"))

    return spec


def _factors(n):
    """n as a product of a few numbers: 12 -> [2, 2, 3]; 0 -> [0, 2]; 1 -> []."""
    if n == 0:
        return [0, 2]
    out, p = [], 2
    while n > 1 and p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


def index_tensor(of=0, along=None, dtypes=("int64",)):
    """Integer indices into drawn[of] (along a dim drawn just before, at position `along`): mostly in
    range, now and then out of range or of another dtype."""

    def spec(data, drawn):
        x = drawn[of]
        axis = drawn[along] if along is not None else 0
        size = x.shape[axis % x.ndim] if x.ndim and isinstance(axis, int) and -x.ndim <= axis < x.ndim else 1
        shape = data.draw(shapes(max_dims=3), label="index shape")
        if along is not None and data.draw(st.integers(0, 3), label="like input") > 0:  # gather's: no larger
            shape = tuple(data.draw(st.integers(0, n), label="index side") for n in x.shape)
        dtype = data.draw(st.sampled_from(dtypes), label="index dtype")
        low, high = (-1, size) if data.draw(st.integers(0, 5), label="out of range") == 0 else (0, max(size - 1, 0))
        values = data.draw(hnp.arrays(dtype, shape, elements=st.integers(low, high)), label="indices")
        return Arr(values, False)

    return spec


def matmul_partner(of=0):
    """A tensor to multiply drawn[of] with: its first dim (or dim -2) mostly fits; leading dims broadcast."""

    def shape(data, drawn):
        a = drawn[of].shape
        inner = a[-1] if a else 2
        if data.draw(st.integers(0, 5), label="inner fits") == 0:
            inner = data.draw(st.integers(0, 3))
        ndim = data.draw(st.integers(0, 4), label="b dims")
        if ndim <= 1:
            return (inner,) * ndim
        lead = related_shape(data, a[:-2]) if len(a) > 2 else data.draw(shapes(max_dims=ndim - 2))
        return tuple(lead) + (inner, data.draw(st.integers(0, 3)))

    return shape


def number(kinds=("int", "float", "bool"), low=-3, high=3, specials=True, coarse=False):
    """A Python number of one of these kinds (inf and NaN among the floats now and then)."""
    # (no float below 1e-6 in size: PyTorch takes a number in float64 in some ops, and in float32 it is 0)
    floats = (st.integers(low * 8, high * 8).map(lambda n: n / 8) if coarse
              else st.floats(low, high).map(lambda v: v if abs(v) > 1e-6 else 0.0))
    options = {"int": st.integers(low, high), "bool": st.booleans(),
               "float": floats | (st.sampled_from(SPECIAL_FLOATS) if specials else floats)}
    return st.one_of([options[k] for k in kinds])


def maybe(spec):
    """The spec's value, or OMIT (the argument left out)."""

    def draw(data, drawn):
        if data.draw(st.booleans(), label="omit"):
            return OMIT
        return _draw(spec, data, drawn)

    return draw


def one_of(*specs):
    """The value of one of these specs, picked at random."""

    def draw(data, drawn):
        return _draw(data.draw(st.sampled_from(specs), label="which"), data, drawn)

    return draw


def dtype_name(names=ALL_DTYPES):
    return st.sampled_from(names).map(DType)


@dataclasses.dataclass
class DType:
    """A dtype argument: each library gets its own dtype object of this name."""

    name: str


def tensors(n_max=3, dtypes=ALL_DTYPES):
    """A list of tensors (for cat and stack): shapes mostly alike."""

    def spec(data, drawn):
        first = T(dtypes)(data, drawn)
        items = [first]
        for _ in range(data.draw(st.integers(0, n_max - 1), label="count")):
            items.append(T(dtypes, like=0)(data, [first]))
        return items

    return spec


def data_of(spec, form="list"):
    """Python data for tensor(...) and friends: the values of a drawn tensor as nested lists (or as the
    NumPy array itself)."""

    def draw(data, drawn):
        arr = spec(data, drawn)
        return Raw(arr.values.tolist() if form == "list" else arr.values)

    return draw


def index_key(of=0):
    """A key for x[key]: ints, slices (steps of 1 to 3, now and then 0 or -1), None, `...`, True, int
    lists, int tensors and bool masks, mostly in range for drawn[of]."""

    def spec(data, drawn):
        shape = drawn[of].shape
        parts, dim = [], 0
        for _ in range(data.draw(st.integers(0, len(shape) + 1), label="parts")):
            size = shape[dim] if dim < len(shape) else 1
            kind = data.draw(st.sampled_from(["int", "slice", "slice", "none", "ellipsis", "list", "tensor", "mask",
                                              "bool"]), label="part")
            near = st.integers(-size - 1, size)
            if kind == "int":
                parts.append(data.draw(near))
            elif kind == "slice":
                bound = st.none() | st.integers(-size - 1, size + 1)
                step = st.none() | st.integers(1, 3) | st.sampled_from([0, -1])
                parts.append(slice(data.draw(bound), data.draw(bound), data.draw(step)))
            elif kind == "none":
                parts.append(None)
                continue
            elif kind == "ellipsis":
                parts.append(Ellipsis)
                dim = max(dim, len(shape) - 1)
                continue
            elif kind == "list":
                parts.append(data.draw(st.lists(near, max_size=3)))
            elif kind == "tensor":
                index_shape = data.draw(shapes(max_dims=2), label="index shape")
                values = data.draw(hnp.arrays("int64", index_shape, elements=near), label="indices")
                parts.append(Arr(values, False))
            elif kind == "mask":
                width = data.draw(st.integers(1, max(1, min(2, len(shape) - dim))), label="mask dims")
                mask_shape = shape[dim:dim + width] if data.draw(st.integers(0, 4)) else data.draw(shapes(1, 2))
                parts.append(Arr(data.draw(hnp.arrays("bool", mask_shape), label="mask"), False))
                dim += width - 1
            else:
                parts.append(data.draw(st.booleans()))
                continue
            dim += 1
        if len(parts) == 1 and data.draw(st.booleans(), label="bare"):
            return parts[0]
        return tuple(parts)

    return spec


def key_count(key, kind):
    parts = key if isinstance(key, tuple) else (key,)
    return sum(1 for p in parts if (p is Ellipsis if kind == "..." else isinstance(p, bool)))


def value_for_key(of=0, key=1):
    """A value to write into x[key]: a number, a 0-d tensor, or a tensor of about x[key]'s shape."""

    def spec(data, drawn):
        x, k = drawn[of], drawn[key]
        try:
            parts = k if isinstance(k, tuple) else (k,)
            numpy_key = tuple(p.values if isinstance(p, Arr) else p for p in parts)
            target = x.values[numpy_key].shape
        except (IndexError, TypeError, ValueError):
            target = data.draw(shapes(), label="any target")
        kind = data.draw(st.sampled_from(["number", "0-d", "like", "like"]), label="value kind")
        if kind == "number":
            return data.draw(NUMBER)
        return T(shape=() if kind == "0-d" else (lambda data, drawn: related_shape(data, target)))(data, drawn)

    return spec


def normalized(data, drawn):
    """A weight or bias for layer_norm: mostly of the normalized_shape drawn[1]."""
    return tuple(drawn[1]) if data.draw(st.integers(0, 5), label="fits") else data.draw(shapes(max_dims=2))


def last_dims(of=0):
    """A normalized_shape for layer_norm: mostly drawn[of]'s last dims."""

    def spec(data, drawn):
        shape = drawn[of].shape
        if data.draw(st.integers(0, 4), label="fits") and shape:
            return tuple(shape[len(shape) - data.draw(st.integers(1, len(shape))):])
        return tuple(data.draw(st.lists(st.integers(0, 3), max_size=2), label="normalized_shape"))

    return spec


def linear_weight(data, drawn):
    """(out_features, in_features), in_features mostly the input's last dim."""
    x = drawn[0].shape
    inner = x[-1] if x and data.draw(st.integers(0, 5)) else data.draw(st.integers(0, 3))
    return (data.draw(st.integers(0, 3), label="out_features"), inner)


def class_targets(of=0):
    """Class indices for drawn[of]'s logits (N, C, ...) or (C,): mostly in range, now and then -100 (ignored),
    out of range, of another shape or a float dtype."""

    def spec(data, drawn):
        logits = drawn[of].shape
        classes = logits[1] if len(logits) > 1 else (logits[0] if logits else 1)
        shape = (logits[:1] + logits[2:]) if len(logits) > 1 else ()
        if not data.draw(st.integers(0, 6)):
            shape = data.draw(shapes(max_dims=2), label="target shape")
        dtype = data.draw(st.sampled_from(["int64", "int64", "int64", "float32"]), label="target dtype")
        if dtype != "int64":
            return T(FLOATS, shape=shape)(data, drawn)
        targets = st.integers(0, max(classes - 1, 0)) | st.sampled_from([-100, -1, classes])
        return Arr(data.draw(hnp.arrays("int64", shape, elements=targets), label="targets"), False)

    return spec


def _draw(spec, data, drawn):
    if isinstance(spec, st.SearchStrategy):
        return data.draw(spec)
    return spec(data, drawn)


# ---------------------------------------------------------------------------------------------
# the table


@dataclasses.dataclass
class Entry:
    id: str  # unique: "tinyattn.max", "tinyattn.max(dim)"
    covers: str  # the public name: "tinyattn.max", "Tensor.add_", "F.gelu", "nn.Linear"
    call: object  # call(L, *args, **kwargs), the same code for both libraries
    specs: tuple  # one per argument (Kw for keyword arguments)
    grad: object = True  # compare requires_grad and the gradients of float inputs (or a predicate of the args)
    values: bool = True  # compare the values (False: uninitialised memory, as empty() gives in PyTorch)
    # differs(*args) -> why tinyattn deliberately differs here (README), or None: then one library may raise
    # where the other returns (where both return, the values still agree; gradients are not compared)
    differs: object = None
    # quirk(*args) -> where PyTorch's own answer is inconsistent: then only tinyattn's errors are checked
    quirk: object = None


def function(name, *specs, **options):
    """tinyattn.NAME(...) and torch.NAME(...)."""
    return Entry(f"tinyattn.{options.pop('id', name)}", f"tinyattn.{name}",
                 lambda L, *a, **k: getattr(L, name)(*a, **k), specs, **options)


def method(name, *specs, **options):
    """x.NAME(...), x the first argument."""
    return Entry(f"Tensor.{options.pop('id', name)}", f"Tensor.{name}",
                 lambda L, x, *a, **k: getattr(x, name)(*a, **k), specs, **options)


def inplace(name, *specs, **options):
    """x.NAME_(...) on a copy of x (a leaf that requires grad refuses in-place changes, as in PyTorch)."""
    return Entry(f"Tensor.{options.pop('id', name)}", f"Tensor.{name}",
                 lambda L, x, *a, **k: getattr(x.clone() if x.requires_grad else x, name)(*a, **k), specs, **options)


def both(name, *specs, **options):
    """tinyattn.NAME(x, ...) and x.NAME(...)."""
    return [function(name, *specs, **options), method(name, *specs, **options)]


def functional(name, *specs, **options):
    """F.NAME(...): tinyattn.nn.functional's and torch.nn.functional's."""
    return Entry(f"F.{options.pop('id', name)}", f"F.{name}", lambda L, *a, **k: getattr(L.F, name)(*a, **k), specs,
                 **options)


def module(name, args, *specs, **options):
    """nn.NAME(*constructor args)(*inputs): built at a seed, so both libraries draw the same weights."""

    def call(L, seed, constructor, *inputs):
        L.manual_seed(seed)
        kind = getattr(L.nn, name)
        layer = kind(**constructor) if isinstance(constructor, dict) else kind(*constructor)
        L.leaves.extend(p for _, p in layer.named_parameters())  # their gradients are compared too
        L.manual_seed(seed + 1)  # dropout's masks
        return layer(*inputs)

    return Entry(f"nn.{options.pop('id', name)}", f"nn.{name}", call, (SEEDS, args, *specs), **options)


def seeded(entry):
    """The entry's call at the same seed in both libraries (random numbers: PyTorch's streams)."""
    call = entry.call

    def at_seed(L, seed, *args, **kwargs):
        L.manual_seed(seed)
        return call(L, *args, **kwargs)

    return dataclasses.replace(entry, call=at_seed, specs=(SEEDS, *entry.specs))


def is_bool_tensor(value):
    return isinstance(value, Arr) and value.dtype == "bool"


def mixed_clamp_bounds(x, low=OMIT, high=OMIT):
    """PyTorch takes both bounds as numbers or both as tensors; tinyattn also takes one of each (README),
    and its dtype is then tinyattn's promotion of a tensor and a number (the mixes PyTorch does take,
    it promotes as if the number were a tensor)."""
    kinds = {isinstance(b, Arr) for b in (low, high) if b is not OMIT and b is not None}
    return "clamp with a number bound and a tensor bound" if len(kinds) == 2 else None


def empty_product_of_two_dtypes(a, b):
    """PyTorch skips its dtype check when there is nothing to multiply; tinyattn refuses two dtypes always."""
    empty = 0 in a.shape or 0 in b.shape
    return "matmul of two dtypes with nothing to multiply" if empty and a.dtype != b.dtype else None


def not_a_bool_exponent(x, exponent):
    """PyTorch's backward of a bool exponent fails (it subtracts 1 from a bool tensor) or gives NaN (x ** False
    at x = 0); tinyattn's gives the gradient."""
    return not (is_bool_tensor(exponent) or isinstance(exponent, bool))


def empty_index(x, dim, index, *src):
    """PyTorch skips gather's and scatter's checks (of the index's shape, of the value) when the index
    is empty."""
    return "gather or scatter with an empty index" if 0 in index.shape else None


def src_gradient_fits(x, dim, index, src=None):
    """PyTorch's scatter backward gives src a gradient of the index's shape, and fails where src's shape
    does not broadcast to it (a src larger than the index); compared where it does."""
    if not isinstance(src, Arr):
        return True
    try:
        return np.broadcast_shapes(src.shape, index.shape) == index.shape
    except ValueError:
        return False


def checked_even_when_empty(*args):
    """PyTorch skips some checks of dtypes and arguments where there are no elements to compute with (an
    integer softmax, a bool cumsum, ...); tinyattn checks always (where PyTorch returns, tinyattn may
    raise a clear error)."""
    return "an input without elements" if any(isinstance(a, Arr) and 0 in a.shape for a in args) else None


def no_elements(seed, sizes, *args):
    """As checked_even_when_empty, for a result of these sizes."""
    return "a result without elements" if 0 in sizes else None


def grad_value_into_integers(x, value):
    """PyTorch lets an integer tensor filled with a value that requires grad require grad (its backward
    then fails); an integer tensor of tinyattn never requires grad."""
    grad_value = isinstance(value, Arr) and value.grad and x.dtype not in FLOATS
    return "an integer tensor filled with a value that requires grad" if grad_value else None


def two_ellipses(x, key, *value):
    """An index with two `...` is refused (PyTorch reads x[..., 1, ...] as x[..., 1]: README)."""
    return "two ... in one index" if key_count(key, "...") > 1 else None


def longer_than_context(seed, constructor, x):
    """A sequence longer than context_length is refused (README: the book's code fails later, with a
    shape error, or not at all for an empty batch)."""
    return "more tokens than context_length" if x.ndim > 1 and x.shape[-2] > constructor[2] else None


def sdpa_quirks(query, key, value, *options):
    """Where an input has no elements, PyTorch's SDPA returns early: zeros of the query's batch shape
    (where the batch dims broadcast to another, tinyattn's result has that, as everywhere else), with no
    graph even where an input requires grad. And keys and values of different numbers of positions are
    an error in some of its kernels and read past the values in others (tinyattn refuses them)."""
    if any(0 in a.shape for a in (query, key, value)):
        return "attention of empty inputs"
    mismatch = value.ndim > 1 and key.ndim > 1 and value.shape[-2] != key.shape[-2]
    return "keys and values of different numbers of positions" if mismatch else None


def fractional_integer_arange(*bounds):
    """PyTorch's integer arange of fractional bounds depends on the dtype: int64 truncates the bounds
    first (tinyattn does so for both), int32 counts the numbers in floats; and both count with a float
    step but make the numbers with it truncated (a step of 0.5 gives copies of start)."""
    *bounds, dtype = bounds
    fractional = any(isinstance(b, float) and b != int(b) for b in bounds if math.isfinite(b))
    if dtype is not OMIT and dtype.name in INTS and fractional and (dtype.name == "int32" or len(bounds) == 3):
        return "an integer arange of fractional bounds"
    return None


def negative_expand(x, sizes):
    """PyTorch expands to a size of -1 in a new leading dim (a tensor of shape [0, -1]) where the result
    has no elements; tinyattn refuses -1 there always."""
    return "expand(-1) in a new dim of an empty result" if -1 in sizes[:len(sizes) - x.ndim] and 0 in sizes else None


def key_differs(x, key, *value):
    """As two_ellipses; a True or False in a key with ints or index arrays is refused; x[key] = value converts
    the value to x's dtype also where the key holds index arrays or a True or False (PyTorch refuses
    another dtype there): README."""
    parts = key if isinstance(key, tuple) else (key,)
    with_arrays = any(isinstance(p, (Arr, list)) for p in parts)
    with_ints = any(isinstance(p, int) and not isinstance(p, bool) for p in parts)
    if two_ellipses(x, key) or (with_arrays or with_ints) and key_count(key, "bool"):
        return "two ... or a True with ints or index arrays in a key"
    if value and (with_arrays or key_count(key, "bool")) and isinstance(value[0], Arr) and value[0].dtype != x.dtype:
        return "a value of another dtype written through index arrays"
    if isinstance(key, bool):
        return "a bare True or False key (PyTorch broadcasts a value there more loosely than for (False,))"
    if any(isinstance(p, Arr) and p.values.size == 0 or isinstance(p, list) and not p for p in parts):
        return "an index tensor without elements (PyTorch then checks no other index's bounds)"
    return (grad_value_into_integers(x, value[0]) if value else None) or checked_even_when_empty(x)


def weights_without_gradient(query, key, value, *options):
    """attention's weights (its second result) require grad whenever an input does: it is one op. In a
    chain of ops they do only where the query or the keys do (compared where they do)."""
    return query.grad or key.grad or not value.grad


def numbers_beyond_integers(data, dtype=OMIT):
    """tinyattn refuses numbers that do not fit an integer dtype (README: OverflowError); PyTorch
    converts a NumPy array's inf and NaN to whatever its C cast gives."""
    values = data.value
    integers = dtype is not OMIT and dtype.name in INTS
    non_finite = values.dtype.kind == "f" and not np.isfinite(values).all()
    return "NaN or inf into integers" if integers and non_finite else None


def clamp_bounds_within(x, low=OMIT, high=OMIT):
    """PyTorch's clamp backward fails where a tensor bound broadcasts x to a larger shape (compared
    where it does not)."""
    shapes = [b.shape for b in (low, high) if isinstance(b, Arr)]
    try:
        return np.broadcast_shapes(x.shape, *shapes) == x.shape
    except ValueError:
        return True


def probability_targets(input, target, *rest):
    """Float targets are class probabilities in PyTorch's cross_entropy; tinyattn takes class indices
    only (README)."""
    return "probability targets" if target.dtype in FLOATS else None


def no_classes_and_more_dims(input, *rest):
    """PyTorch's losses fail on logits (N, 0, d...) of no classes with more dims, whatever the target."""
    return "no classes, more dims" if input.ndim > 2 and input.shape[1] == 0 else None


def one_sample_and_a_target_of_shape_1(input, target, *rest):
    """For the logits (C,) of one sample, PyTorch's nll_loss and cross_entropy take a target of shape
    [1] in the forward and fail in the backward ("size mismatch (got input: [5], target: [1])");
    tinyattn refuses it in the forward (its target is 0-d)."""
    return "one sample, a target of shape [1]" if input.ndim == 1 and target.shape == (1,) else None


def loss_quirks(*args):
    return no_classes_and_more_dims(*args) or one_sample_and_a_target_of_shape_1(*args)


def non_finite_ends(start, end, *rest):
    """PyTorch's linspace between inf or NaN ends puts inf and NaN in places of its own arithmetic."""
    return "non-finite ends" if not math.isfinite(start + end) else None


def odd_bias(input, weight, bias=OMIT):
    """tinyattn's linear refuses a bias of another dtype than the input (no silent promotion) and one
    that does not broadcast to the output's shape; PyTorch adds such a bias in some of its paths (a
    1-d input, a 0-d bias, an empty result)."""
    if not isinstance(bias, Arr):
        return None
    if bias.dtype != input.dtype or input.ndim == 1 and bias.ndim > 1:
        return "a bias of another dtype, or of more dims than a 1-d input's output"
    return None


def spread_out(x, dim=OMIT, *rest):
    """std's gradient at numbers that are all equal is 0 where the computed std is exactly 0, and huge
    otherwise: which one depends on how the mean was summed (compared where the numbers differ)."""
    values = x.values.astype(np.float64)
    if values.size == 0 or values.ndim == 0:
        return True
    dims = () if dim is OMIT or dim is None else dim if isinstance(dim, (tuple, list)) else (dim,)
    axes = tuple(d % values.ndim for d in dims if -values.ndim <= d < values.ndim) if dims else None
    try:
        spread = np.ptp(values, axis=axes)
    except ValueError:  # repeated or empty dims: an error in both libraries
        return True
    return bool(np.all((spread > 0) | np.isnan(spread)))


def mask_of_another_dtype(query, key, value, attn_mask=OMIT, *options):
    """tinyattn's SDPA refuses a float mask of another dtype than the query (no silent promotion; README);
    and as checked_even_when_empty."""
    other = isinstance(attn_mask, Arr) and attn_mask.dtype in FLOATS and attn_mask.dtype != query.dtype
    return "a float mask of another dtype" if other else checked_even_when_empty(query, key, value)


def mT_of_a_number(x):
    """x.mT of a 0-d tensor is deprecated in PyTorch (the identity, with a warning); tinyattn refuses it."""
    return "mT of a 0-d tensor" if x.ndim == 0 else None


def set_item(L, x, key, value):
    target = x.clone() if x.requires_grad else x
    target[key] = value
    return target


def sequential(L, seed, depth, x):
    """nn.Sequential of Linear, ReLU, Linear ... layers."""
    L.manual_seed(seed)
    layers = [L.nn.Linear(3, 3) if i % 2 == 0 else L.nn.ReLU() for i in range(depth)]
    model = L.nn.Sequential(*layers)
    L.leaves.extend(p for _, p in model.named_parameters())
    return model(x)


def module_input(argument, whole=False):
    """An input for a module built with arguments drawn[1]: its last dim (or dims: whole) mostly what
    the module's argument `argument` says."""

    def shape(data, drawn):
        wanted = drawn[1][argument]
        last = tuple(wanted) if isinstance(wanted, tuple) else (wanted,)
        if not whole:
            last = last[:1]
        if not data.draw(st.integers(0, 5), label="fits"):
            return data.draw(shapes(), label="any input shape")
        return tuple(data.draw(shapes(max_dims=2), label="leading")) + tuple(max(n, 0) for n in last)

    return shape


def ids_for_module():
    """Token ids for an Embedding built with drawn[1] = (num_embeddings, dim): mostly in range."""

    def spec(data, drawn):
        rows = drawn[1][0]
        ids = st.integers(0, rows - 1) | st.sampled_from([-1, rows])
        dtype = data.draw(st.sampled_from(["int64", "int64", "int32"]), label="ids dtype")
        return Arr(data.draw(hnp.arrays(dtype, data.draw(shapes(), label="ids shape"), elements=ids)), False)

    return spec


def tokens(ndim):
    """(num_tokens, d_in) or (batch, num_tokens, d_in) for an attention module built with drawn[1]:
    d_in mostly the module's, num_tokens from 0 to a little past its context length."""

    def shape(data, drawn):
        d_in = drawn[1][0] if data.draw(st.integers(0, 5), label="d_in fits") else data.draw(st.integers(1, 3))
        context = drawn[1][2] if len(drawn[1]) > 2 else 4
        num_tokens = data.draw(st.integers(0, context + 1), label="num_tokens")
        return ((data.draw(st.integers(0, 2), label="batch"),) if ndim == 3 else ()) + (num_tokens, d_in)

    return shape


def scores_shape(data, drawn):
    """A mask for attention: mostly (queries, keys), or broadcasting to the scores."""
    q, k = drawn[0].shape, drawn[1].shape
    base = (q[-2] if len(q) > 1 else 1, k[-2] if len(k) > 1 else 1)
    return related_shape(data, tuple(q[:-2]) + base) if data.draw(st.booleans()) else base


def attention_inputs(specials=True):
    """query (..., L, E), keys (..., S, E), values (..., S, Ev): mostly fitting, now and then not."""

    def query(data, drawn):
        return data.draw(shapes(min_dims=2, max_dims=4), label="query shape")

    def keys(data, drawn):
        q = drawn[0].shape
        e = q[-1] if data.draw(st.integers(0, 5)) else data.draw(st.integers(0, 3))
        return related_shape(data, q[:-2]) + (data.draw(st.integers(0, 3), label="keys"), e)

    def values(data, drawn):
        k = drawn[1].shape
        s = k[-2] if len(k) > 1 and data.draw(st.integers(0, 5)) else data.draw(st.integers(0, 3))
        return tuple(k[:-2]) + (s, data.draw(st.integers(0, 3), label="value dim"))

    return tuple(T(FLOATS, shape=shape, specials=specials) for shape in (query, keys, values))


def einsum_equation(data, drawn):
    """An einsum equation of 1 to 3 operands over the letters i, j, k, l (a letter twice in one operand:
    its diagonal), now and then with "..." in front of every term, mostly with an output after "->";
    now and then a letter in the output that no operand has, or one given twice."""
    terms = data.draw(st.lists(st.lists(st.sampled_from("ijkl"), max_size=3).map("".join), min_size=1, max_size=3),
                      label="terms")
    dots = "..." if data.draw(st.integers(0, 4), label="ellipsis") == 0 else ""
    equation = ",".join(dots + term for term in terms)
    how = data.draw(st.sampled_from(["implicit", "explicit", "explicit", "explicit", "odd"]), label="output")
    if how == "implicit":
        return equation
    used = sorted(set("".join(terms)))
    output = data.draw(st.lists(st.sampled_from(used), unique=True).map("".join) if used else st.just(""))
    if how == "odd":
        output += data.draw(st.sampled_from(["m", "i", "ii"]))
    return f"{equation}->{dots if data.draw(st.booleans()) else ''}{output}"


def einsum_operands(data, drawn):
    """Tensors for the terms of the equation drawn[0]: one size per letter (now and then one operand
    of other sizes), broadcasting leading dims for "...", mostly one dtype for all."""
    terms = drawn[0].split("->")[0].split(",")
    sizes = {letter: data.draw(st.integers(0, 3), label=f"size of {letter}") for letter in "ijkl"}
    lead = data.draw(shapes(max_dims=2), label="... dims")
    dtype = data.draw(st.sampled_from(FLOATS + INTS + ("bool",)), label="dtype")
    operands = []
    for term in terms:
        letters = term.removeprefix("...")
        shape = tuple(sizes[c] for c in letters)
        if data.draw(st.integers(0, 7), label="sizes fit") == 0:
            shape = data.draw(shapes(len(shape), len(shape)), label="other sizes")
        if term.startswith("..."):
            shape = related_shape(data, lead) + shape
        kind = dtype if data.draw(st.integers(0, 7), label="one dtype") else data.draw(st.sampled_from(ALL_DTYPES))
        # (finite: einsum contracts in an order of its own, and where inf meets an empty sum (0) the order
        # decides between NaN and 0)
        operands.append(T((kind,), shape=shape, specials=False)(data, drawn))
    return operands


def product_shape(data, drawn):
    """An input for addmm and baddbmm: mostly broadcasting to the product of drawn[0] and drawn[1]."""
    a, b = drawn[0].shape, drawn[1].shape
    product = tuple(a[:-1]) + tuple(b[-1:]) if len(b) > 1 else tuple(a[:-1])
    return related_shape(data, product)


def integers_to_decimals(x, decimals=OMIT):
    """PyTorch rounds integers with round() but refuses round(decimals=0), which tinyattn cannot tell
    apart (it rounds integers with decimals=0 and refuses other decimals)."""
    return "round(decimals=0) of integers" if x.dtype not in FLOATS and decimals == 0 else None


def einsum_of_bools(equation, operands):
    """tinyattn's einsum refuses bool operands and operands of two dtypes (no silent promotion); PyTorch's
    computes the equations that need no matrix product (promoting the dtypes, and giving bools or int64
    for bools) and refuses the others."""
    odd = any(a.dtype == "bool" for a in operands) or len({a.dtype for a in operands}) > 1
    return "einsum of bools or of two dtypes" if odd else None


def einsum_of_int32s(equation, operands):
    """PyTorch's einsum of int32 operands gives int64 where it only sums one operand, int32 where it
    multiplies, and fails its own product where it does both ("expected scalar type Int but found
    Long"); tinyattn's gives int32 always (README)."""
    return "einsum of int32s" if all(a.dtype == "int32" for a in operands) else None


def product_of_others(x, *options):
    """prod's gradient is the product of the other numbers; PyTorch divides the product by the number
    where none is 0, which is NaN at an inf, and inf where the product overflows (compared where the
    numbers are finite and small enough for their product to be)."""
    values = x.values.astype(np.float64)
    return bool(np.all(np.isfinite(values)) and np.all(np.abs(values) <= 8))


def unique_slices_with_nans(x, *options):
    """unique(dim=...) of slices holding NaNs: NaNs stay distinct in both libraries, but PyTorch's order
    among such slices follows no documented rule (README)."""
    dim = options[-1]
    nans = x.dtype in FLOATS and np.isnan(x.values).any()
    return "slices holding NaNs in unique(dim)" if nans and isinstance(dim, int) else None


def sort_ties(x, *options):
    """Where x holds equal numbers, their order among themselves (the indices, and where the gradient
    goes) is PyTorch's only with stable=True (tinyattn's sort is always stable: README); compared where
    the numbers differ or stable=True."""
    stable = any(isinstance(o, bool) for o in options[-1:]) and options[-1] is True
    values = x.values.reshape(-1)
    finite = values[~np.isnan(values)] if x.dtype in FLOATS else values
    ties = len(np.unique(finite)) < len(finite) or (x.dtype in FLOATS and np.isnan(values).sum() > 1)
    return "equal numbers in a sort that need not be stable" if ties and not stable else None


def repeated_scatter_indices(x, dim, index, *src):
    """Where two indices of scatter write to one place, which write wins is up to the library (PyTorch:
    "undefined"); compared where every index along dim is written once."""
    values = index.values
    if values.ndim == 0 or values.size == 0 or not x.ndim or not -x.ndim <= dim < x.ndim or values.ndim != x.ndim:
        return None
    axis = dim % values.ndim
    moved = np.moveaxis(values, axis, -1).reshape(-1, values.shape[axis])
    repeated = any(len(set(row.tolist())) < len(row) for row in moved)
    return "two writes to one place" if repeated else None


def matrix_norm(x, p=OMIT, *rest):
    """norm(p='nuc') is a matrix norm, which tinyattn leaves out (README)."""
    return "a matrix norm" if p == "nuc" else None


def half_precision(x):
    """tinyattn refuses half-precision tensors (README: TypeError)."""
    return "half precision"


def pin_nothing(x):
    """pin_memory pins nothing and returns the tensor (PyTorch without CUDA raises: README)."""
    return "pin_memory without a GPU"


def mha_shape(which):
    """query, key or value for nn.MultiheadAttention built with drawn[1]: (L, E), (L, N, E) or, with
    batch_first, (N, L, E); key and value of another length (S); now and then of another size."""

    def shape(data, drawn):
        options = drawn[1]
        if which == "query":
            batched = data.draw(st.integers(0, 3), label="batched") > 0
            length, batch = data.draw(st.integers(0, 3), label="L"), data.draw(st.integers(0, 2), label="N")
        else:
            query = drawn[2].shape
            batched = len(query) == 3
            batch = query[0 if options["batch_first"] else 1] if batched else 0
            length = drawn[3].shape[-2 if not batched or options["batch_first"] else 0] if which == "value" \
                else data.draw(st.integers(0, 3), label="S")
        size = options["embed_dim"] if data.draw(st.integers(0, 7), label="size fits") else data.draw(st.integers(1, 4))
        if not batched:
            return (length, size)
        return (batch, length, size) if options["batch_first"] else (length, batch, size)

    return T(("float32",), shape=shape, specials=False)


def key_padding_mask(data, drawn):
    """A bool key_padding_mask (N, S) (or (S,) unbatched) for nn.MultiheadAttention's inputs."""
    key, options = drawn[3].shape, drawn[1]
    if len(key) == 3:
        shape = (key[0], key[1]) if options["batch_first"] else (key[1], key[0])
    else:
        shape = key[:1]
    return Arr(data.draw(hnp.arrays("bool", shape), label="key_padding_mask"), False)


def multihead_attention_module(L, seed, options, query, key, value, **call):
    L.manual_seed(seed)
    layer = L.nn.MultiheadAttention(**options)
    L.leaves.extend(p for _, p in layer.named_parameters())
    return layer(query, key, value, **call)


def mha_quirks(seed, options, query, key, value, mask=OMIT, need_weights=OMIT):
    """A query whose keys are all masked gets zero weights in tinyattn (README); PyTorch gives NaN, or
    zeros on its scaled_dot_product_attention path. And PyTorch's layer fails on keys of no elements
    (no keys, or a batch of no items: it views them with a -1)."""
    if mask is not OMIT and mask.values.size and mask.values.all(axis=-1).any():
        return "a query whose keys are all masked"
    return "keys of no elements" if key.values.size == 0 else None


def channels_of(of=0, low=-4, high=4):
    """A float vector for batch_norm's running statistics, weight and bias: mostly one number per channel
    (dim 1) of drawn[of]."""

    def shape(data, drawn):
        x = drawn[of].shape
        if len(x) > 1 and data.draw(st.integers(0, 5), label="fits"):
            return (x[1],)
        return data.draw(shapes(max_dims=1), label="channels")

    return T(FLOATS, shape=shape, low=low, high=high, specials=False, grad=False)


def conv_weight(data, drawn):
    """(out_channels, in_channels / groups, kernel) for conv1d's input drawn[0], mostly fitting."""
    x = drawn[0].shape
    channels = x[-2] if len(x) >= 2 else data.draw(st.integers(1, 3))
    if not data.draw(st.integers(0, 5), label="fits"):
        return data.draw(shapes(max_dims=3), label="any weight shape")
    return (data.draw(st.integers(1, 3), label="out_channels"), max(channels, 1), data.draw(st.integers(1, 3)))


def probability_inputs(fits=True):
    """Values in [0, 1] for binary_cross_entropy, now and then outside (or NaN), which PyTorch refuses."""
    return T(FLOATS, low=0, high=1, specials=False) if fits else T(FLOATS, low=-1, high=2)


def module_batch(ndims, channels="num_features"):
    """An input for a module built with options drawn[1]: mostly (N, C, ...) with C its channels and
    a number of dims in `ndims`."""

    def shape(data, drawn):
        if not data.draw(st.integers(0, 5), label="fits"):
            return data.draw(shapes(max_dims=4), label="any input shape")
        n = data.draw(st.sampled_from(ndims), label="dims")
        rest = data.draw(st.lists(st.integers(1, 3), min_size=n - 2, max_size=n - 2), label="rest")
        return (data.draw(st.integers(1, 3), label="batch"), drawn[1][channels], *rest)

    return shape


def no_channel_dim(x, *args, **kwargs):
    """PyTorch's batch_norm gives a 0-d or 1-D input no meaning of its own: it returns an empty one as it is
    and fails on others inside its kernels; tinyattn asks for (N, C, ...). And it skips its checks of the
    statistics' shapes for an empty input."""
    if x.ndim < 2:
        return "an input without a channel dim"
    return "an empty input" if x.values.size == 0 else flat_channel(x)


def flat_channel(x):
    """A channel (dim 1) whose values are (nearly) all equal: batch norm divides their rounding errors in
    the mean by sqrt(var + eps) ~ sqrt(eps), so both libraries return rounding noise there, each its own
    (PyTorch accumulates in double, in another order)."""
    values = x.values
    if values.ndim < 2 or values.size == 0 or not np.isfinite(values).all():
        return None
    channels = np.moveaxis(values.astype(np.float64), 1, 0).reshape(values.shape[1], -1)
    scale = max(1.0, float(np.abs(values).max()))
    return "a channel of (nearly) equal values" if np.any(channels.std(axis=1) < 1e-2 * scale) else None


def one_value_per_channel(seed, options, x):
    """PyTorch checks 'more than 1 value per channel when training' only where it uses the batch's
    statistics; tinyattn too, but PyTorch lets a (1, C) input through in eval mode with
    track_running_stats=False (normalising with that one value's statistics to 0), which tinyattn refuses.
    And PyTorch returns an empty input without checking its number of channels."""
    if x.values.size == 0:
        return "an empty input, whose channels PyTorch does not check"
    channels = x.shape[1] if x.ndim > 1 else 1
    return "one value per channel" if channels and x.values.size // channels <= 1 else None


def kl_div_gradient_compared(x, target, *options):
    """At a target of exactly 0, PyTorch's gradient of target * log(target) is NaN (0 / 0 in its xlogy
    backward); tinyattn's is finite (log(1) + 0). And an infinite target (or one that exp makes infinite)
    broadcast over an empty input gets a NaN gradient in PyTorch, 0 (a sum over nothing) in tinyattn:
    gradients are compared elsewhere."""
    if not isinstance(target, Arr) or not isinstance(x, Arr):
        return True
    empty = x.values.size == 0 and target.values.size  # (exp(1e4) in the target is inf too, with log_target)
    return not (empty or np.any(target.values == 0) or not np.isfinite(target.values).all())


def infinite_logit(x, target, *options, **keywords):
    """An infinite logit: PyTorch's gradient of the target there is inf, by its own backward formula;
    tinyattn's, from the loss's terms, is inf - inf or 0 * inf there (NaN) when pos_weight is given."""
    return "an infinite logit" if isinstance(x, Arr) and np.isinf(x.values).any() else None


def huber_of_two_dtypes(x, target, *options):
    """PyTorch's huber_loss computes in the input's dtype, and its backward then fails ('Found dtype Float
    but expected Double') where the target's dtype differs; tinyattn's gives the gradients."""
    return "input and target of two dtypes" if x.dtype != target.dtype else None


def conv1d_quirks(x, weight, bias=None, *rest):
    """PyTorch's conv1d fails inside its kernels on some shapes (empty inputs, 0-size weights) with
    messages of its own, and takes a bias of another dtype for an input without a batch dim while it
    refuses one for a batched input; tinyattn's errors there are checked for clarity only."""
    sizes = [*x.shape, *weight.shape]
    if isinstance(bias, Arr) and bias.dtype != x.dtype and x.ndim == 2:
        return "an unbatched input with a bias of another dtype"
    return "empty input or weight" if 0 in sizes else None


def nan_difference(x, target, *options):
    """Where input - target is NaN, PyTorch's l1, smooth l1 and Huber losses give a NaN gradient (the sign
    of NaN); tinyattn's are built on abs(), whose gradient there is 0, as PyTorch's abs() gives."""
    values = [v.values for v in (x, target) if isinstance(v, Arr)]
    try:
        nan = np.isnan(values[0].astype(np.float64) - values[1].astype(np.float64)).any()
    except ValueError:  # shapes that do not broadcast: no gradient to compare
        nan = False
    return "input - target is NaN somewhere" if nan else None


def conv1d_module_quirks(seed, options, x):
    """As conv1d_quirks, for the layer."""
    return "empty input" if 0 in x.shape else None


def conv2d_quirks(x, weight, bias=None, *rest):
    """As conv1d_quirks; an unbatched input to conv2d is 3-D."""
    if isinstance(bias, Arr) and bias.dtype != x.dtype and x.ndim == 3:
        return "an unbatched input with a bias of another dtype"
    return "empty input or weight" if 0 in [*x.shape, *weight.shape] else None


def conv2d_weight(data, drawn):
    """(out_channels, in_channels / groups, kH, kW) for conv2d's input drawn[0], mostly fitting."""
    x = drawn[0].shape
    channels = x[-3] if len(x) >= 3 else data.draw(st.integers(1, 3))
    if not data.draw(st.integers(0, 5), label="fits"):
        return data.draw(shapes(max_dims=4), label="any weight shape")
    return (data.draw(st.integers(1, 3), label="out_channels"), max(channels, 1), data.draw(st.integers(1, 3)),
            data.draw(st.integers(1, 3)))


def conv_transpose_weight(dims):
    """(in_channels, out_channels / groups, *kernel) for conv_transpose's input drawn[0], mostly fitting."""

    def shape(data, drawn):
        x = drawn[0].shape
        channels = x[-dims - 1] if len(x) > dims else data.draw(st.integers(1, 3))
        if not data.draw(st.integers(0, 5), label="fits"):
            return data.draw(shapes(max_dims=dims + 2), label="any weight shape")
        kernel = [data.draw(st.integers(1, 3), label="kernel") for _ in range(dims)]
        return (max(channels, 1), data.draw(st.integers(1, 3), label="out_channels / groups"), *kernel)

    return shape


def conv_transpose_bias_dtype(x, weight, bias=None, *rest):
    """PyTorch's conv_transpose adds a bias of another dtype (conv1d and conv2d refuse one); tinyattn
    refuses it, never promoting silently."""
    return "a bias of another dtype" if isinstance(bias, Arr) and bias.dtype != x.dtype else None


def empty_transposed_output(x, kernel_size, stride=1, padding=0, output_padding=0, dilation=1):
    """Where conv_transpose's output comes to 0 pixels, PyTorch returns an empty result on some of its
    paths and refuses it on others ('Output size is too small'); tinyattn returns the empty result."""

    def each(v):
        return v if isinstance(v, tuple) else (v,) * len(kernel_size)

    try:
        stride, padding, output_padding, dilation = map(each, (stride, padding, output_padding, dilation))
        sizes = [(n - 1) * s - 2 * p + d * (k - 1) + o + 1 for n, k, s, p, o, d in
                 zip(x.shape[-len(kernel_size):], kernel_size, stride, padding, output_padding, dilation)]
    except (TypeError, IndexError):
        return None
    return "an output of 0 pixels" if 0 in sizes else None


def conv_transpose_differs(x, weight, bias=None, stride=OMIT, padding=OMIT, output_padding=OMIT, groups=OMIT,
                           dilation=OMIT):
    """conv_transpose_bias_dtype, and empty_transposed_output."""
    given = {"stride": stride, "padding": padding, "output_padding": output_padding, "dilation": dilation}
    options = {k: v for k, v in given.items() if v is not OMIT}
    kernel = tuple(weight.shape[2:])
    empty = empty_transposed_output(x, kernel, **options) if kernel and x.ndim > len(kernel) else None
    return conv_transpose_bias_dtype(x, weight, bias) or empty


def conv_transpose_bias(data, drawn):
    """One bias per output channel (weight.shape[1] * groups, mostly groups 1)."""
    return (drawn[1].shape[1] if len(drawn[1].shape) > 1 else 1,)


def pool_input():
    """(N, C, H, W) or (C, H, W) for the pools, now and then 2-D (which both refuse)."""
    return T(FLOATS, min_dims=2, max_dims=4)


def nan_input(x, *rest, **options):
    """NaN in the input of a max pool: both give NaN for a window that holds one, but PyTorch's gradient
    goes to the window's last NaN and tinyattn's to its first (NumPy's argmax)."""
    return "NaN in the input" if isinstance(x, Arr) and np.isnan(x.values).any() else None


def window_of_padding_only(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, *rest):
    """A max_pool2d window that holds padding only (a dilated kernel beside the padding): both return
    -inf there, and PyTorch points its index (and the gradient) at a pixel outside the window, where
    tinyattn's gradient goes nowhere. Also PyTorch's errors on empty inputs are its kernels' own."""
    if not isinstance(x, Arr) or x.ndim not in (3, 4) or 0 in x.shape:
        return "an empty input or one of another rank" if isinstance(x, Arr) and 0 in x.shape else None

    def pairs(v):
        return tuple(v) if isinstance(v, (tuple, list)) else (v, v)

    try:
        kernel, padding, dilation = pairs(kernel_size), pairs(padding), pairs(dilation)
        stride = kernel if stride is None or stride is OMIT else pairs(stride)
        for size, k, s, p, d in zip(x.shape[-2:], kernel, stride, padding, dilation):
            span = size + 2 * p - d * (k - 1) - 1
            count = (-(-span // s) if ceil_mode is True else span // s) + 1
            if ceil_mode is True and (count - 1) * s >= size + p:
                count -= 1
            for start in range(-p, (count - 1) * s - p + 1, s):
                if not any(0 <= start + j * d < size for j in range(k)):
                    return "a window of padding only"
    except (TypeError, ZeroDivisionError, ValueError):
        return None  # arguments that both refuse
    return None


def max_pool_quirks(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    """window_of_padding_only, with the arguments the entry left out at their defaults."""
    given = {"stride": stride, "padding": padding, "dilation": dilation, "ceil_mode": ceil_mode}
    return window_of_padding_only(x, kernel_size, **{k: v for k, v in given.items() if v is not OMIT})


def adaptive_pool_quirks(x, output_size):
    """PyTorch computes output_size 1 as a mean over the last two dims before it checks the input's
    rank, so that size takes a 2-D input which the others refuse (as tinyattn refuses it always);
    and its errors on empty inputs are its kernels' own."""
    if x.ndim == 2 and output_size in (1, (1, 1)):
        return "a 2-D input with output_size 1"
    if output_size == 0 or (isinstance(output_size, tuple) and 0 in output_size):
        return "output_size 0: PyTorch returns an empty result, and its backward refuses it"
    return "an empty input" if 0 in x.shape else None


def max_pool1d_quirks(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    """max_pool_quirks, for a row of height 1 (as both libraries compute max_pool1d)."""
    if x.ndim not in (2, 3):
        return None

    def as_pair(value, height):
        return (height, value) if isinstance(value, int) and not isinstance(value, bool) else value

    return max_pool_quirks(Arr(x.values[..., None, :], x.grad), as_pair(kernel_size, 1), as_pair(stride, 1),
                           as_pair(padding, 0), as_pair(dilation, 1), ceil_mode, return_indices)


def adaptive_pool1d_quirks(x, output_size):
    """As adaptive_pool_quirks: PyTorch's output_size 1 takes a 1-D input as its mean."""
    if x.ndim == 1 and output_size == 1:
        return "a 1-D input with output_size 1"
    return adaptive_pool_quirks(x, output_size) if output_size == 0 else ("an empty input" if 0 in x.shape else None)


def pool_module_quirks(seed, options, x):
    """As window_of_padding_only, for the layer."""
    return window_of_padding_only(x, **{k: v for k, v in options.items() if k in (
        "kernel_size", "stride", "padding", "dilation", "ceil_mode")}) if isinstance(options, dict) else None


def transformer_sequence(of=None):
    """src or tgt for the nn.Transformer entries, d_model 4: (L, N, 4), N the batch of drawn[of] if given
    (dim 1, or dim 0 with batch_first; the layers' options are drawn[1])."""

    def shape(data, drawn):
        batch_first = drawn[1]["batch_first"]
        length = data.draw(st.integers(1, 3), label="length")
        if of is None:
            batch = data.draw(st.integers(1, 2), label="batch")
        else:
            batch = drawn[of].shape[0 if batch_first else 1]
        return (batch, length, 4) if batch_first else (length, batch, 4)

    return T(("float32",), shape=shape, specials=False)


def transformer_module(kind):
    """nn.KIND built at a seed (a stack of two layers, or a Transformer of one and two), run at another
    seed (dropout's masks) on the drawn sequences."""

    def call(L, seed, options, *inputs):
        L.manual_seed(seed)
        if kind == "Transformer":
            layer = L.nn.Transformer(d_model=4, num_encoder_layers=1, num_decoder_layers=2, **options)
        elif kind in ("TransformerEncoder", "TransformerDecoder"):
            block = getattr(L.nn, kind + "Layer")(4, **options)
            layer = getattr(L.nn, kind)(block, 2, L.nn.LayerNorm(4))
        else:
            layer = getattr(L.nn, kind)(4, **options)
        L.leaves.extend(p for _, p in layer.named_parameters())
        L.manual_seed(seed + 1)
        return layer(*inputs)

    return call


def rows_of_equal_features(seed, options, *sequences):
    """A position whose features (nearly) all equal: a LayerNorm there divides rounding noise by
    sqrt(eps), so PyTorch's answer is noise too (it sums the mean in another order)."""
    if any(np.ptp(s.values, axis=-1).min(initial=1.0) < 1e-2 for s in sequences):
        return "a position whose features are all equal, which LayerNorm turns into rounding noise"
    return None


TRANSFORMER_OPTIONS = st.fixed_dictionaries({
    "nhead": st.sampled_from([1, 2]), "dim_feedforward": st.integers(1, 3), "dropout": st.sampled_from([0.0, 0.5]),
    "activation": st.sampled_from(["relu", "gelu"]), "batch_first": st.booleans(), "norm_first": st.booleans(),
    "bias": st.booleans()})


SEEDS = st.integers(0, 2**32 - 1)
BETA = number(("int", "float"))
def square_matrices(data, drawn):
    """(..., n, n) with n from 0 to 3, sometimes a batch of them."""
    n = data.draw(st.integers(0, 3), label="n")
    return tuple(data.draw(st.lists(st.integers(1, 2), max_size=1), label="batch")) + (n, n)


def distinct_along_dim(x, dim, *rest):
    """The median's gradient goes to one of the elements equal to it: which one is PyTorch's choice, so
    gradients are compared where the numbers along the dim differ."""
    values = np.atleast_1d(x.values)
    if not -values.ndim <= dim < values.ndim or values.shape[dim] == 0:
        return True
    rows = np.moveaxis(values, dim, -1).reshape(-1, values.shape[dim])
    return all(len(set(row.tolist())) == len(row) for row in rows)


def bool_beside_a_float_with_grad(y, x):
    """atan2 of a bool and a float that requires grad: PyTorch's forward returns, its backward then
    fails (it negates the bool tensor)."""
    return "bool" in (y.values.dtype.name, x.values.dtype.name) and (y.grad or x.grad)


def a_bool_0d(x, *rest):
    """median of a 0-d or empty bool tensor: PyTorch returns a value, while it refuses the other bool
    tensors ("median_cpu" not implemented for 'Bool')."""
    return x.values.dtype == np.bool_ and (x.values.ndim == 0 or x.values.size == 0)


def empty_strides(x, *rest):
    """The strides of a tensor without elements: PyTorch's depend on how it was made (torch.tensor of an
    empty NumPy array keeps stride 0, torch.empty(0, 3) gives (3, 1)); tinyattn gives a fresh tensor's."""
    return "the strides of an empty tensor" if x.values.size == 0 else None


def near_singular(x):
    """An inverse of a (nearly) singular matrix: PyTorch's LU and NumPy's differ in what they find singular,
    and the inverse's numbers there are too large to compare. det's gradient there: tinyattn gives the
    cofactor matrix, PyTorch zeros at some singular matrices."""
    values = x.values.astype(np.float64)
    if values.size == 0:
        return False
    if not np.all(np.isfinite(values)):
        return True
    return bool(np.any(np.abs(np.linalg.det(values)) < 1e-3) or np.linalg.cond(values).max() > 1e4)


X = T()  # any dtype, any shape (0-d and 0-size included)
XF = T(FLOATS)
Y = T(like=0)  # broadcasts with the first argument, mostly
YF = T(FLOATS, like=0)
def after_dim(spec, of=1):
    """The spec's value when the dim (argument `of`) was given, else OMIT: PyTorch's signatures take
    keepdim only with a dim."""

    def draw(data, drawn):
        return OMIT if drawn[of] is OMIT else _draw(spec, data, drawn)

    return draw


DIM = dim()
SORT_OPTIONS = (X, Kw("dim", maybe(dim())), Kw("descending", maybe(st.booleans())), Kw("stable", maybe(st.booleans())))
DIMS = dims()
KEEPDIM = Kw("keepdim", after_dim(maybe(st.booleans())))
NUMBER = number()
UNARY_FLOAT_METHODS = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid"]
SIZES = size_list()
ARANGE_BOUND = number(("int", "float"), -5, 5, coarse=True)
REDUCTION = st.sampled_from(["mean", "sum", "none", "average"])
DROPOUT = st.sampled_from([0.0, 0.5])
# (finite: PyTorch's SDPA adds -inf to a masked score, tinyattn and the book fill it with -inf, so a
# masked score that is NaN, from an inf in the inputs, is NaN in PyTorch's weights only; and the fused
# attention's backward spreads a NaN to other places than a chain of ops does)
FINITE_QUERY, FINITE_KEYS, FINITE_VALUES = attention_inputs(specials=False)


def TOKENS(ndim):  # noqa: N802  (a spec, as X and T)
    return T(("float32",), shape=tokens(ndim), specials=False)

TABLE = [
    # --- elementwise math ---
    *[e for name in UNARY_FLOAT_METHODS for e in both(name, X)],
    *both("relu", X),
    *both("abs", X),
    *both("clamp", X, Kw("min", maybe(one_of(NUMBER, T(like=0)))), Kw("max", maybe(one_of(NUMBER, T(like=0)))),
          quirk=mixed_clamp_bounds, grad=clamp_bounds_within),
    function("clip", X, Kw("min", maybe(NUMBER)), Kw("max", maybe(NUMBER))),
    method("clip", X, Kw("min", maybe(NUMBER)), Kw("max", maybe(NUMBER))),
    *both("maximum", X, Y),
    *both("minimum", X, Y),
    *both("isnan", X), *both("isinf", X), *both("isfinite", X),
    method("logical_not", X),
    *[method(f"__{op}__", X, one_of(Y, NUMBER)) for op in ("add", "sub", "mul", "truediv", "eq", "ne", "lt", "le",
                                                            "gt", "ge", "and", "or", "xor")],
    *[method(f"__r{op}__", X, NUMBER) for op in ("add", "sub", "mul", "truediv", "pow")],
    *[method(name, X, one_of(Y, NUMBER)) for name in ("add", "sub", "mul", "div", "eq", "ne", "lt", "le", "gt", "ge")],
    method("__pow__", X, one_of(Y, NUMBER), grad=not_a_bool_exponent),
    method("pow", X, one_of(Y, NUMBER), grad=not_a_bool_exponent),
    # `//` and `%` record no gradient in tinyattn (README: Differences from PyTorch)
    *[method(f"__{op}__", T(coarse=True), one_of(T(like=0, coarse=True), number(coarse=True)), grad=False)
      for op in ("floordiv", "mod", "rfloordiv", "rmod")],
    # fmod, unlike `%`, is differentiable: 1 for the dividend, -trunc(a / b) for the divisor, as in PyTorch
    *both("fmod", T(coarse=True), one_of(T(like=0, coarse=True), number(coarse=True))),
    method("__neg__", X), method("__pos__", X), method("__abs__", X), method("__invert__", X),
    # --- in place ---
    *[inplace(f"__i{op}__", X, one_of(Y, NUMBER)) for op in ("add", "sub", "mul", "truediv", "and", "or", "xor")],
    *[inplace(f"{op}_", X, one_of(Y, NUMBER)) for op in ("add", "sub", "mul", "div")],
    *both("true_divide", X, one_of(Y, NUMBER)),
    inplace("true_divide_", X, one_of(Y, NUMBER)),
    method("__contains__", X, one_of(Y, NUMBER)),
    inplace("__ipow__", X, one_of(Y, NUMBER), grad=not_a_bool_exponent),
    inplace("pow_", X, one_of(Y, NUMBER), grad=not_a_bool_exponent),
    # on a tensor that requires grad, tinyattn refuses `//=` and `%=` (they record no gradient)
    *[inplace(f"__i{op}__", T(coarse=True, grad=False), one_of(T(like=0, coarse=True), number(coarse=True)),
              grad=False) for op in ("floordiv", "mod")],
    *[inplace(f"{name}_", X) for name in ("exp", "log", "sqrt", "tanh", "sigmoid", "neg", "abs", "relu", "zero")],
    inplace("clamp_", X, Kw("min", maybe(NUMBER)), Kw("max", maybe(NUMBER))),
    inplace("clip_", X, Kw("min", maybe(NUMBER)), Kw("max", maybe(NUMBER))),
    inplace("fill_", X, one_of(NUMBER, T(shape=())), differs=grad_value_into_integers),
    inplace("copy_", X, Y),
    inplace("tril_", X, Kw("diagonal", maybe(st.integers(-3, 3)))),
    inplace("triu_", X, Kw("diagonal", maybe(st.integers(-3, 3)))),
    inplace("masked_fill_", X, T(("bool",), like=0), one_of(NUMBER, T(shape=())),
            differs=lambda x, mask, value: grad_value_into_integers(x, value)),
    # --- reductions ---
    *both("sum", X, Kw("dim", maybe(DIMS)), KEEPDIM, Kw("dtype", maybe(dtype_name()))),
    *both("mean", X, Kw("dim", maybe(DIMS)), KEEPDIM, Kw("dtype", maybe(dtype_name()))),
    # (no dim=() for var and std: PyTorch reduces over all dims there, but its backward over none)
    *both("var", X, Kw("dim", maybe(dims(empty=False))), Kw("correction", maybe(st.integers(0, 2))), KEEPDIM),
    *both("std", X, Kw("dim", maybe(dims(empty=False))), Kw("unbiased", maybe(st.booleans())), KEEPDIM,
          grad=spread_out),
    *both("logsumexp", X, dims(none=False, empty=False), KEEPDIM),
    *both("cumsum", X, DIM, Kw("dtype", maybe(dtype_name())), differs=checked_even_when_empty),
    *both("max", X),
    *both("min", X),
    *both("max", X, DIM, KEEPDIM, id="max(dim)"),
    *both("min", X, DIM, KEEPDIM, id="min(dim)"),
    *both("max", X, Y, id="max(other)"),
    *both("argmax", X, Kw("dim", maybe(DIM)), KEEPDIM),
    *both("argmin", X, Kw("dim", maybe(DIM)), KEEPDIM),
    method("any", X, Kw("dim", maybe(DIMS)), KEEPDIM),
    method("all", X, Kw("dim", maybe(DIMS)), KEEPDIM),
    *both("softmax", X, DIM, differs=checked_even_when_empty),
    *both("log_softmax", X, DIM, differs=checked_even_when_empty),
    *both("topk", X, st.integers(-1, 4), Kw("dim", maybe(DIM)), Kw("largest", maybe(st.booleans()))),
    # --- comparisons of whole tensors ---
    *both("allclose", XF, YF),
    *both("isclose", XF, YF, Kw("equal_nan", maybe(st.booleans()))),
    *both("equal", X, Y),
    # --- shapes and views ---
    *both("reshape", X, size_list(of=0)),
    method("view", X, size_list(of=0)),
    method("view_as", X, T(like=0)),
    method("reshape_as", X, T(like=0)),
    *both("transpose", X, DIM, dim()),
    *both("permute", X, st.permutations(range(3)).map(tuple) | st.lists(st.integers(-3, 3), max_size=4).map(tuple)),
    *both("t", X),
    *both("unsqueeze", X, dim(extra=1)),
    *both("squeeze", X, Kw("dim", maybe(dims(none=False)))),
    *both("flatten", X, Kw("start_dim", maybe(DIM)), Kw("end_dim", maybe(dim()))),
    method("expand", X, size_list(high=3), differs=checked_even_when_empty, quirk=negative_expand),
    method("expand_as", X, T(like=0)),
    method("repeat", X, size_list(low=0, high=2)),
    *both("split", X, one_of(st.integers(-1, 3), st.lists(st.integers(0, 3), max_size=3)), Kw("dim", maybe(DIM))),
    *both("chunk", X, st.integers(-1, 4), Kw("dim", maybe(DIM))),
    *both("narrow", X, DIM, one_of(st.integers(-4, 4), T(("int64",), shape=())), st.integers(-1, 4)),
    method("split", X, Kw("split_size", st.integers(1, 3)), Kw("dim", maybe(DIM)), id="split(split_size=)"),
    *both("unbind", X, Kw("dim", maybe(DIM))),
    *both("tril", X, Kw("diagonal", maybe(st.integers(-3, 3)))),
    *both("triu", X, Kw("diagonal", maybe(st.integers(-3, 3)))),
    function("cat", tensors(), Kw("dim", maybe(st.integers(-3, 2)))),
    function("concat", tensors(), Kw("dim", maybe(st.integers(-3, 2)))),
    function("stack", tensors(), Kw("dim", maybe(st.integers(-4, 3)))),
    method("contiguous", X), method("clone", X), method("detach", X),
    *both("select", X, DIM, st.integers(-4, 4)),
    *both("movedim", X, one_of(DIM, st.lists(st.integers(-3, 3), max_size=3).map(tuple)),
          one_of(dim(), st.lists(st.integers(-3, 3), max_size=3).map(tuple))),
    *both("moveaxis", X, DIM, dim()),
    method("unfold", X, DIM, st.integers(0, 4), st.integers(-1, 3)),
    *both("as_strided", X, st.lists(st.integers(0, 3), max_size=3), st.lists(st.integers(0, 3), max_size=3),
          Kw("storage_offset", maybe(st.integers(0, 3)))),
    method("stride", X, quirk=empty_strides), method("storage_offset", X),
    # --- matrix products ---
    *both("matmul", T(FLOATS + INTS), T(FLOATS + INTS, shape=matmul_partner()), differs=empty_product_of_two_dtypes),
    method("__matmul__", T(FLOATS + INTS), T(FLOATS + INTS, shape=matmul_partner()),
           differs=empty_product_of_two_dtypes),
    *both("mm", XF, T(FLOATS, shape=matmul_partner()), differs=empty_product_of_two_dtypes),
    *both("bmm", XF, T(FLOATS, shape=matmul_partner()), differs=empty_product_of_two_dtypes),
    *both("dot", XF, T(FLOATS, shape=matmul_partner()), differs=empty_product_of_two_dtypes),
    function("trace", X),
    # --- indexing and masking ---
    *both("gather", X, DIM, index_tensor(along=1, dtypes=("int64", "int64", "int32")), differs=empty_index),
    *both("masked_fill", X, T(("bool",), like=0), one_of(NUMBER, T(shape=()))),
    function("where", T(("bool",)), T(like=0), T(like=0)),
    method("where", X, T(("bool",), like=0), Y),
    Entry("Tensor.__getitem__", "Tensor.__getitem__", lambda L, x, key: x[key], (X, index_key()), differs=key_differs),
    Entry("Tensor.__setitem__", "Tensor.__setitem__", set_item, (X, index_key(), value_for_key()),
          differs=key_differs),
    # --- creation ---
    *[function(name, SIZES, Kw("dtype", maybe(dtype_name())), values=name != "empty") for name in ("zeros", "ones",
                                                                                                    "empty")],
    function("full", SIZES, NUMBER, Kw("dtype", maybe(dtype_name()))),
    *[function(f"{name}_like", X, Kw("dtype", maybe(dtype_name())), values=name != "empty")
      for name in ("zeros", "ones", "empty")],
    function("full_like", X, NUMBER, Kw("dtype", maybe(dtype_name()))),
    function("arange", ARANGE_BOUND, Kw("dtype", maybe(dtype_name(FLOATS + INTS))), quirk=fractional_integer_arange),
    function("arange", ARANGE_BOUND, ARANGE_BOUND, Kw("dtype", maybe(dtype_name(FLOATS + INTS))),
             id="arange(start, end)", quirk=fractional_integer_arange),
    function("arange", ARANGE_BOUND, ARANGE_BOUND, number(("int", "float"), -2, 2, coarse=True),
             Kw("dtype", maybe(dtype_name(FLOATS + INTS))), id="arange(start, end, step)",
             quirk=fractional_integer_arange),
    function("linspace", ARANGE_BOUND, ARANGE_BOUND, st.integers(-1, 6), Kw("dtype", maybe(dtype_name(FLOATS + INTS))),
             quirk=non_finite_ends),
    function("eye", st.integers(-1, 4), Kw("m", maybe(st.integers(-1, 4))), Kw("dtype", maybe(dtype_name()))),
    function("tensor", data_of(X), Kw("dtype", maybe(dtype_name()))),
    function("tensor", data_of(X, "numpy"), Kw("dtype", maybe(dtype_name())), id="tensor(numpy)",
             differs=numbers_beyond_integers),
    function("as_tensor", data_of(X), Kw("dtype", maybe(dtype_name()))),
    function("from_numpy", data_of(X, "numpy")),
    function("Tensor", data_of(T(min_dims=1)), id="Tensor(data)"),  # (a number is a size)
    Entry("tinyattn.Tensor(*sizes)", "tinyattn.Tensor", lambda L, sizes: L.Tensor(*sizes), (SIZES,), values=False),
    # (deprecated in PyTorch, with a warning in both: `end` included, float32 even for integer bounds; float
    # dtypes only: PyTorch's integer range of a fractional step divides by zero and kills the process)
    function("range", ARANGE_BOUND, ARANGE_BOUND, maybe(number(("int", "float"), -2, 2, coarse=True)),
             Kw("dtype", maybe(dtype_name(FLOATS)))),
    function("is_tensor", one_of(X, NUMBER)),
    # (dtypes compared by name: each library has its own dtype objects)
    Entry("tinyattn.result_type", "tinyattn.result_type",
          lambda L, a, b: str(L.result_type(a, b)).rpartition(".")[2], (one_of(X, NUMBER), one_of(X, NUMBER))),
    Entry("tinyattn.promote_types", "tinyattn.promote_types",
          lambda L, a, b: str(L.promote_types(a, b)).rpartition(".")[2], (dtype_name(), dtype_name())),
    function("numel", X),
    *[method(f"new_{name}", X, SIZES, Kw("dtype", maybe(dtype_name())), values=name != "empty")
      for name in ("zeros", "ones", "empty")],
    method("new_full", X, SIZES, NUMBER),
    method("new_tensor", X, data_of(X)),
    # --- random numbers: PyTorch's streams at the same seed ---
    seeded(function("rand", SIZES, Kw("dtype", maybe(dtype_name(FLOATS + INTS))), differs=no_elements)),
    seeded(function("randn", SIZES, Kw("dtype", maybe(dtype_name(FLOATS + INTS))), differs=no_elements)),
    seeded(function("rand_like", X, differs=checked_even_when_empty)),
    seeded(function("randn_like", X, differs=checked_even_when_empty)),
    seeded(function("randint_like", X, st.integers(-3, 3), st.integers(-3, 6), differs=checked_even_when_empty)),
    seeded(function("randint", st.integers(-3, 3), st.integers(-3, 6), SIZES)),
    seeded(function("randperm", st.integers(-1, 20))),
    *[seeded(e) for e in both("multinomial", T(FLOATS, low=0, high=3, max_dims=2), st.integers(-1, 4),
                              Kw("replacement", maybe(st.booleans())))],
    seeded(inplace("bernoulli_", X, Kw("p", maybe(st.floats(-0.5, 1.5))), differs=checked_even_when_empty)),
    seeded(inplace("normal_", X, Kw("mean", maybe(number(("float",)))), Kw("std", maybe(st.floats(-1, 3))),
                   differs=checked_even_when_empty)),
    seeded(inplace("uniform_", X, number(("float",)), number(("float",)), differs=checked_even_when_empty)),
    # --- conversions and what a tensor is ---
    *[method(name, X) for name in ("float", "double", "long", "int", "bool", "cpu", "numpy", "tolist", "item",
                                   "dim", "ndimension", "numel", "nelement", "element_size", "is_floating_point",
                                   "is_contiguous", "__len__", "__bool__", "__float__", "__int__", "__index__")],
    method("size", X, Kw("dim", maybe(DIM))),
    method("to", X, dtype_name()),
    # (floats into the small integers without inf, NaN and, for uint8, negative numbers: C++ leaves those undefined)
    method("byte", T(low=0, specials=False)), method("char", T(specials=False)), method("short", T(specials=False)),
    method("type", T(specials=False), maybe(one_of(dtype_name(), st.sampled_from(
        ["torch.FloatTensor", "torch.LongTensor", "torch.ShortTensor", "torch.BoolTensor", "torch.float32"])))),
    method("type_as", X, Y),
    method("__array__", T(grad=False)),
    Entry("Tensor.__iter__", "Tensor.__iter__", lambda L, x: list(x), (X,)),
    Entry("Tensor.__format__", "Tensor.__format__", lambda L, x, spec: format(x, spec),
          (X, st.sampled_from([".2f", "8.3e", "+.1f"]))),
    Entry("Tensor.T", "Tensor.T", lambda L, x: x.T, (X,)),
    Entry("Tensor.mT", "Tensor.mT", lambda L, x: x.mT, (X,), differs=mT_of_a_number),
    Entry("Tensor.data", "Tensor.data", lambda L, x: x.data, (X,)),
    method("requires_grad_", X, maybe(st.booleans())),
    Entry("Tensor.detach_", "Tensor.detach_", lambda L, x: (x * 2).detach_(), (X,)),
    # --- more elementwise math, reductions, products, sorting and scattering ---
    *[e for name in ("sin", "cos", "log1p", "expm1", "log2", "log10", "exp2", "reciprocal", "erf", "neg", "negative",
                     "square", "sign", "sgn", "floor", "ceil", "trunc", "fix") for e in both(name, X)],
    *both("round", X, Kw("decimals", maybe(st.integers(-1, 2))), quirk=integers_to_decimals),
    *both("clamp_min", X, one_of(NUMBER, T(like=0)), grad=clamp_bounds_within),
    *both("clamp_max", X, one_of(NUMBER, T(like=0)), grad=clamp_bounds_within),
    *[function(name, X, one_of(Y, NUMBER))
      for name in ("add", "sub", "mul", "div", "eq", "ne", "lt", "le", "gt", "ge")],
    function("pow", X, one_of(Y, NUMBER), grad=not_a_bool_exponent),
    *[function(name, X, Kw("dim", maybe(DIMS)), KEEPDIM) for name in ("all", "any")],
    *[function(name, X) for name in ("logical_not", "clone", "detach", "is_floating_point")],
    Entry("tinyattn.detach_", "tinyattn.detach_", lambda L, x: L.detach_(x * 2), (X,)),
    *both("prod", X, Kw("dim", maybe(DIM)), KEEPDIM, Kw("dtype", maybe(dtype_name())), grad=product_of_others),
    *both("cumprod", X, DIM, Kw("dtype", maybe(dtype_name())), differs=checked_even_when_empty),
    *both("amax", X, Kw("dim", maybe(DIMS)), KEEPDIM),
    *both("amin", X, Kw("dim", maybe(DIMS)), KEEPDIM),
    *both("norm", X, Kw("p", maybe(st.sampled_from([2, 1, 3, 0, 0.5, math.inf, -math.inf, "fro", "nuc"]))),
          Kw("dim", maybe(DIMS)), Kw("keepdim", after_dim(maybe(st.booleans()), of=2)), differs=matrix_norm),
    Entry("linalg.vector_norm", "linalg.vector_norm", lambda L, *a, **k: L.linalg.vector_norm(*a, **k),
          (X, Kw("ord", maybe(st.sampled_from([2, 1, 3, 0, 0.5, math.inf, -math.inf]))), Kw("dim", maybe(DIMS)),
           Kw("keepdim", after_dim(maybe(st.booleans()), of=2)), Kw("dtype", maybe(dtype_name())))),
    method("trace", X),
    *both("outer", X, T(shape=lambda data, drawn: data.draw(shapes(max_dims=2)))),
    # (addmm's and baddbmm's input is drawn last, to fit the product of the two matrices drawn first)
    *[Entry(f"{where}.{name}", f"{where}.{name}", call,
            (T(FLOATS, min_dims=ndim, max_dims=ndim), T(FLOATS, shape=matmul_partner()), T(FLOATS, shape=product_shape),
             Kw("beta", maybe(BETA)), Kw("alpha", maybe(BETA))),
            differs=lambda a, b, *rest: empty_product_of_two_dtypes(a, b))
      for name, ndim in (("addmm", 2), ("baddbmm", 3))
      for where, call in (("tinyattn", lambda L, a, b, x, name=name, **k: getattr(L, name)(x, a, b, **k)),
                          ("Tensor", lambda L, a, b, x, name=name, **k: getattr(x, name)(a, b, **k)))],
    function("einsum", einsum_equation, einsum_operands, differs=einsum_of_bools, quirk=einsum_of_int32s),
    *both("sort", *SORT_OPTIONS, quirk=sort_ties),
    *both("argsort", *SORT_OPTIONS, quirk=sort_ties),
    *both("unique", T(coarse=True), Kw("sorted", maybe(st.booleans())), Kw("return_inverse", maybe(st.booleans())),
          Kw("return_counts", maybe(st.booleans())), Kw("dim", maybe(dim())), quirk=unique_slices_with_nans,
          grad=False),  # PyTorch marks the result as requiring grad, then has no backward for it
    Entry("Tensor.sort(values)", "Tensor.sort", lambda L, x, **k: x.sort(**k).values, SORT_OPTIONS,
          grad=lambda *args: not sort_ties(*args)),
    *both("index_select", X, DIM, index_tensor(along=1, dtypes=("int64", "int64", "int32"))),
    *both("masked_select", X, T(("bool",), like=0)),
    *both("index_fill", X, DIM, index_tensor(along=1, dtypes=("int64", "int64", "int32")), one_of(NUMBER, T(shape=())),
          differs=lambda x, dim, index, value: grad_value_into_integers(x, value) or checked_even_when_empty(x)),
    inplace("index_fill_", X, DIM, index_tensor(along=1, dtypes=("int64", "int64", "int32")),
            one_of(NUMBER, T(shape=())),
            differs=lambda x, dim, index, value: grad_value_into_integers(x, value) or checked_even_when_empty(x)),
    # counting: PyTorch marks the counts as requiring grad, then has no backward for them (tinyattn records none)
    *both("histogram", X, st.integers(-1, 5), Kw("range", maybe(st.tuples(NUMBER, NUMBER))),
          Kw("density", maybe(st.booleans())), grad=False),
    *both("histc", X, Kw("bins", maybe(st.integers(-1, 5))), Kw("min", maybe(number(("int", "float")))),
          Kw("max", maybe(number(("int", "float")))), grad=False),
    *both("bincount", T(INTS + ("float32", "bool"), low=-1, max_dims=2), Kw("weights", maybe(T(like=0))),
          Kw("minlength", maybe(st.integers(-1, 5))), grad=False,
          differs=lambda x, *rest: checked_even_when_empty(x)),
    *both("repeat_interleave", X, one_of(st.integers(-1, 3), index_tensor()), Kw("dim", maybe(DIM))),
    *both("roll", X, one_of(st.integers(-4, 4), st.lists(st.integers(-4, 4), max_size=3).map(tuple)),
          Kw("dims", maybe(dims(none=False))), differs=checked_even_when_empty),
    *both("flip", X, dims(none=False)),
    *both("fliplr", X), *both("flipud", X),
    *both("nonzero", X, Kw("as_tuple", maybe(st.booleans()))),
    *both("argwhere", X),
    *both("scatter", X, DIM, index_tensor(along=1), one_of(T(like=0), NUMBER), quirk=repeated_scatter_indices,
          differs=empty_index, grad=src_gradient_fits),
    inplace("scatter_", X, DIM, index_tensor(along=1), one_of(T(like=0), NUMBER), quirk=repeated_scatter_indices,
            differs=empty_index, grad=src_gradient_fits),
    *both("scatter_add", X, DIM, index_tensor(along=1), T(like=0), differs=empty_index,
          grad=src_gradient_fits),
    inplace("scatter_add_", X, DIM, index_tensor(along=1), T(like=0), differs=empty_index,
            grad=src_gradient_fits),
    *[function(name, st.integers(-1, 4), st.integers(-1, 4), maybe(st.integers(-3, 3)),
               Kw("dtype", maybe(dtype_name()))) for name in ("tril_indices", "triu_indices")],
    # the function forms of in-place ops
    *[Entry(f"tinyattn.{name}_", f"tinyattn.{name}_",
            lambda L, x, name=name: getattr(L, f"{name}_")(x.clone() if x.requires_grad else x), (X,))
      for name in ("abs", "exp", "log", "sqrt", "tanh", "sigmoid", "neg", "relu", "zero")],
    *[Entry(f"tinyattn.{name}_", f"tinyattn.{name}_",
            lambda L, x, name=name, **k: getattr(L, f"{name}_")(x.clone() if x.requires_grad else x, **k),
            (X, Kw("min", maybe(NUMBER)), Kw("max", maybe(NUMBER)))) for name in ("clamp", "clip")],
    Entry("tinyattn.fill_", "tinyattn.fill_", lambda L, x, value: L.fill_(x.clone() if x.requires_grad else x, value),
          (X, one_of(NUMBER, T(shape=()))), differs=grad_value_into_integers),
    method("half", X, differs=half_precision), method("bfloat16", X, differs=half_precision),
    method("pin_memory", X, differs=pin_nothing), method("is_pinned", X),
    # --- nn.functional ---
    *[functional(name, X) for name in ("tanh", "sigmoid")],
    functional("relu", X, Kw("inplace", maybe(st.just(False)))),
    functional("gelu", X, Kw("approximate", maybe(st.sampled_from(["none", "tanh", "exact"])))),
    functional("softmax", X, Kw("dim", DIM), Kw("dtype", maybe(dtype_name(FLOATS))), differs=checked_even_when_empty),
    functional("log_softmax", X, Kw("dim", DIM), Kw("dtype", maybe(dtype_name(FLOATS))),
               differs=checked_even_when_empty),
    functional("safe_softmax", X, Kw("dim", maybe(DIM))),
    functional("linear", XF, T(FLOATS, shape=linear_weight), maybe(T(FLOATS, shape=lambda data, drawn: related_shape(
        data, drawn[1].shape[:1]))), differs=odd_bias),
    Entry("F.embedding", "F.embedding", lambda L, weight, ids: L.F.embedding(ids, weight),
          (T(FLOATS, min_dims=2, max_dims=2), index_tensor(dtypes=("int64", "int64", "int32", "float32")))),
    seeded(functional("dropout", X, Kw("p", maybe(st.sampled_from([0.0, 0.5, 1.0, -0.1, 1.5]) | st.floats(0, 1))),
                      Kw("training", maybe(st.booleans())), differs=checked_even_when_empty)),
    # (finite weights and biases: their inf meets the closed-form backward's sums in another order than PyTorch's)
    functional("layer_norm", XF, last_dims(), maybe(T(FLOATS, shape=normalized, specials=False)),
               maybe(T(FLOATS, shape=normalized, specials=False)),
               Kw("eps", maybe(st.sampled_from([1e-5, 0.1, 0.0])))),
    functional("cross_entropy", XF, class_targets(), Kw("reduction", maybe(REDUCTION)), Kw("ignore_index", maybe(
        st.sampled_from([-100, 0, -1]))), quirk=loss_quirks, differs=probability_targets),
    functional("nll_loss", XF, class_targets(), Kw("reduction", maybe(REDUCTION)), Kw("ignore_index", maybe(
        st.sampled_from([-100, 0, -1]))), quirk=loss_quirks),
    functional("mse_loss", XF, T(FLOATS, like=0), Kw("reduction", maybe(REDUCTION))),
    functional("one_hot", T(("int64", "int64", "int32"), low=-1, high=4), Kw("num_classes", maybe(st.integers(-1, 4)))),
    functional("scaled_dot_product_attention", FINITE_QUERY, FINITE_KEYS, FINITE_VALUES, Kw("attn_mask", maybe(one_of(
        T(("bool",), shape=scores_shape), T(FLOATS, shape=scores_shape)))), Kw("is_causal", maybe(st.booleans())),
        Kw("scale", maybe(st.floats(0, 2))), quirk=sdpa_quirks, differs=mask_of_another_dtype),
    functional("attention", FINITE_QUERY, FINITE_KEYS, FINITE_VALUES, Kw("blocked", maybe(T(("bool",),
               shape=scores_shape))), Kw("bias", maybe(T(FLOATS, shape=scores_shape, specials=False))),
               Kw("scale", maybe(st.floats(0, 2))), grad=weights_without_gradient),
    functional("causal_mask", st.integers(0, 4), st.integers(0, 4)),
    functional("silu", X, Kw("inplace", maybe(st.just(False)))),
    functional("glu", XF, Kw("dim", maybe(DIM))),
    functional("softplus", X, Kw("beta", maybe(st.sampled_from([1.0, 2.0, 0.5, -1.0]))),
               Kw("threshold", maybe(st.sampled_from([20.0, 1.0, 0.0])))),
    functional("leaky_relu", X, Kw("negative_slope", maybe(st.sampled_from([0.01, 0.2, -0.5, 0.0])))),
    functional("elu", X, Kw("alpha", maybe(st.sampled_from([1.0, 0.5, 2.0])))),
    functional("normalize", X, Kw("p", maybe(st.sampled_from([2.0, 1.0, 3.0, math.inf]))), Kw("dim", maybe(DIM)),
               Kw("eps", maybe(st.sampled_from([1e-12, 0.1])))),
    functional("pad", X, st.lists(st.integers(-2, 3), max_size=6).map(tuple),
               Kw("mode", maybe(st.sampled_from(["constant", "constant", "reflect", "replicate", "circular", "odd"]))),
               Kw("value", maybe(NUMBER))),
    functional("cross_entropy", XF, class_targets(), T(FLOATS, shape=lambda data, drawn: drawn[0].shape[1:2] if len(
        drawn[0].shape) > 1 else drawn[0].shape[:1], low=0.25, high=2, specials=False, grad=False),
        Kw("reduction", maybe(REDUCTION)), Kw("label_smoothing", maybe(st.sampled_from([0.0, 0.1, 1.0, 1.5]))),
        id="cross_entropy(weight, label_smoothing)", quirk=no_classes_and_more_dims, differs=probability_targets),
    functional("nll_loss", XF, class_targets(), T(FLOATS, shape=lambda data, drawn: drawn[0].shape[1:2] if len(
        drawn[0].shape) > 1 else drawn[0].shape[:1], low=0.25, high=2, specials=False, grad=False),
        Kw("reduction", maybe(REDUCTION)), id="nll_loss(weight)", quirk=no_classes_and_more_dims),
    functional("batch_norm", XF, one_of(st.none(), channels_of()), one_of(st.none(), channels_of(low=0.25)),
               Kw("weight", maybe(channels_of())), Kw("bias", maybe(channels_of())), Kw("training", maybe(st.booleans())),
               Kw("momentum", maybe(st.sampled_from([0.1, 0.5, 1.0]))), Kw("eps", maybe(st.sampled_from([1e-5, 0.1]))),
               quirk=no_channel_dim),
    functional("binary_cross_entropy", probability_inputs(), T(FLOATS, like=0, low=0, high=1, specials=False),
               maybe(T(FLOATS, like=0, specials=False, grad=False)), Kw("reduction", maybe(REDUCTION))),
    functional("binary_cross_entropy", probability_inputs(fits=False), T(FLOATS, like=0, low=0, high=1),
               id="binary_cross_entropy(out of range)"),
    functional("binary_cross_entropy_with_logits", XF, T(FLOATS, like=0, low=0, high=1),
               maybe(T(FLOATS, like=0, specials=False, grad=False)), Kw("reduction", maybe(REDUCTION)),
               Kw("pos_weight", maybe(T(FLOATS, shape=lambda data, drawn: drawn[0].shape[-1:], low=0, high=3,
                                        specials=False, grad=False))), differs=infinite_logit),
    *[functional(name, XF, T(FLOATS, like=0), Kw("reduction", maybe(REDUCTION)),
                 Kw("weight", maybe(T(FLOATS, like=0, low=0, high=2, specials=False, grad=False))), id=id,
                 differs=nan_difference if name == "l1_loss" else None)
      for name, id in (("l1_loss", "l1_loss"), ("mse_loss", "mse_loss(weight)"))],
    functional("smooth_l1_loss", XF, T(FLOATS, like=0), Kw("reduction", maybe(REDUCTION)),
               Kw("beta", maybe(st.sampled_from([1.0, 0.5, 0.0, -1.0]))), differs=nan_difference),
    functional("huber_loss", XF, T(FLOATS, like=0), Kw("reduction", maybe(REDUCTION)),
               Kw("delta", maybe(st.sampled_from([1.0, 0.5, 0.0]))),
               Kw("weight", maybe(T(FLOATS, like=0, low=0, high=2, specials=False, grad=False))), quirk=huber_of_two_dtypes,
               differs=nan_difference),
    functional("kl_div", XF, T(FLOATS, like=0), Kw("reduction", maybe(st.sampled_from(["sum", "none", "batchmean",
                                                                                        "average"]))),
               Kw("log_target", maybe(st.booleans())), grad=kl_div_gradient_compared),
    functional("conv1d", T(FLOATS, min_dims=2, max_dims=3, specials=False), T(FLOATS, shape=conv_weight,
               specials=False), maybe(T(FLOATS, shape=lambda data, drawn: drawn[1].shape[:1], specials=False)),
               Kw("stride", maybe(st.sampled_from([1, 2, 0]))), Kw("padding", maybe(st.sampled_from([0, 1, "same",
                                                                                                    "valid", -1]))),
               Kw("dilation", maybe(st.sampled_from([1, 2]))), Kw("groups", maybe(st.sampled_from([1, 2]))),
               quirk=conv1d_quirks),
    functional("conv2d", T(FLOATS, min_dims=3, max_dims=4, specials=False), T(FLOATS, shape=conv2d_weight,
               specials=False), maybe(T(FLOATS, shape=lambda data, drawn: drawn[1].shape[:1], specials=False)),
               Kw("stride", maybe(st.sampled_from([1, 2, 0, (1, 2)]))),
               Kw("padding", maybe(st.sampled_from([0, 1, (1, 0), "same", "valid", -1]))),
               Kw("dilation", maybe(st.sampled_from([1, 2, (2, 1)]))), Kw("groups", maybe(st.sampled_from([1, 2]))),
               quirk=conv2d_quirks),
    *[functional(f"conv_transpose{dims}d", T(FLOATS, min_dims=dims + 1, max_dims=dims + 2, specials=False),
                 T(FLOATS, shape=conv_transpose_weight(dims), specials=False),
                 maybe(T(FLOATS, shape=conv_transpose_bias, specials=False)),
                 Kw("stride", maybe(st.sampled_from([1, 2, 0]))), Kw("padding", maybe(st.sampled_from([0, 1, -1]))),
                 Kw("output_padding", maybe(st.sampled_from([0, 1]))), Kw("groups", maybe(st.sampled_from([1, 2]))),
                 Kw("dilation", maybe(st.sampled_from([1, 2]))), quirk=conv1d_quirks if dims == 1 else conv2d_quirks,
                 differs=conv_transpose_differs)
      for dims in (1, 2)],
    functional("max_pool2d", pool_input(), st.sampled_from([1, 2, 3, (2, 1), 0]),
               Kw("stride", maybe(st.sampled_from([None, 1, 2, (1, 2)]))),
               Kw("padding", maybe(st.sampled_from([0, 1, (1, 0)]))), Kw("dilation", maybe(st.sampled_from([1, 2]))),
               Kw("ceil_mode", maybe(st.booleans())), Kw("return_indices", maybe(st.booleans())),
               quirk=max_pool_quirks, differs=nan_input),
    functional("avg_pool2d", pool_input(), st.sampled_from([1, 2, 3, (2, 1)]),
               Kw("stride", maybe(st.sampled_from([None, 1, 2, (1, 2)]))),
               Kw("padding", maybe(st.sampled_from([0, 1, (1, 0)]))), Kw("ceil_mode", maybe(st.booleans())),
               Kw("count_include_pad", maybe(st.booleans())), Kw("divisor_override", maybe(st.sampled_from([None, 2]))),
               quirk=lambda x, *rest, **options: "an empty input" if 0 in x.shape else None),
    functional("adaptive_avg_pool2d", pool_input(), st.sampled_from([1, 2, 3, (2, 3), (None, 2), 0, (0, 2)]),
               quirk=adaptive_pool_quirks),
    functional("max_pool1d", T(FLOATS, min_dims=1, max_dims=3), st.sampled_from([1, 2, 3, 0]),
               Kw("stride", maybe(st.sampled_from([None, 1, 2]))), Kw("padding", maybe(st.sampled_from([0, 1]))),
               Kw("dilation", maybe(st.sampled_from([1, 2]))), Kw("ceil_mode", maybe(st.booleans())),
               Kw("return_indices", maybe(st.booleans())), quirk=max_pool1d_quirks, differs=nan_input),
    functional("avg_pool1d", T(FLOATS, min_dims=1, max_dims=3), st.sampled_from([1, 2, 3]),
               Kw("stride", maybe(st.sampled_from([None, 1, 2]))), Kw("padding", maybe(st.sampled_from([0, 1]))),
               Kw("ceil_mode", maybe(st.booleans())), Kw("count_include_pad", maybe(st.booleans())),
               quirk=lambda x, *rest, **options: "an empty input" if 0 in x.shape else None),
    functional("adaptive_avg_pool1d", T(FLOATS, min_dims=1, max_dims=3), st.sampled_from([1, 2, 3, 0]),
               quirk=adaptive_pool1d_quirks),
    seeded(functional("dropout2d", X, Kw("p", maybe(st.sampled_from([0.0, 0.5, 1.0, -0.1]) | st.floats(0, 1))),
                      Kw("training", maybe(st.booleans())), differs=checked_even_when_empty)),
    # --- nn modules, built at a seed in both libraries ---
    module("Linear", st.tuples(st.integers(-1, 3), st.integers(0, 3), st.booleans()), T(FLOATS, shape=module_input(0))),
    module("Embedding", st.tuples(st.integers(1, 4), st.integers(0, 3)), ids_for_module()),
    module("Dropout", st.tuples(st.sampled_from([0.0, 0.5, 1.0]) | st.floats(0, 1)), X,
           differs=lambda seed, p, x: checked_even_when_empty(x)),
    module("LayerNorm", st.tuples(st.integers(1, 3) | st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple),
                                  st.sampled_from([1e-5, 0.1])), T(FLOATS, shape=module_input(0, whole=True))),
    module("GELU", st.tuples(st.sampled_from(["none", "tanh"])), XF),
    *[module(name, st.tuples(), X) for name in ("ReLU", "Tanh", "Sigmoid", "Identity")],
    module("Softmax", st.tuples(st.integers(-2, 1)), XF),
    module("CrossEntropyLoss", st.fixed_dictionaries({"ignore_index": st.sampled_from([-100, 0]),
                                                      "reduction": REDUCTION}), XF, class_targets(of=2),
           quirk=lambda seed, options, *inputs: no_classes_and_more_dims(*inputs),
           differs=lambda seed, options, *inputs: probability_targets(*inputs)),
    module("MSELoss", st.fixed_dictionaries({"reduction": REDUCTION}), XF, T(FLOATS, like=2)),
    module("SiLU", st.tuples(), X),
    module("Softplus", st.tuples(st.sampled_from([1.0, 2.0]), st.sampled_from([20.0, 1.0])), X),
    module("LeakyReLU", st.tuples(st.sampled_from([0.01, 0.2])), X),
    module("ELU", st.tuples(st.sampled_from([1.0, 0.5])), X),
    module("Flatten", st.tuples(st.integers(-3, 2), st.integers(-3, 2)), X),
    module("Unflatten", st.tuples(st.integers(-3, 2), st.sampled_from([(2, -1), (1, 3), (-1,), (3, 1, 1), (2, 2)])),
           X),
    module("LogSoftmax", st.tuples(st.integers(-2, 1)), XF),
    module("GLU", st.tuples(st.integers(-2, 1)), XF),
    *[module(name, st.fixed_dictionaries({"num_features": st.integers(1, 3), "momentum": st.sampled_from([0.1, None]),
                                          "affine": st.booleans(), "track_running_stats": st.booleans()}),
             T(FLOATS, shape=module_batch(dims), specials=False), differs=one_value_per_channel,
             quirk=lambda seed, options, x: flat_channel(x))
      for name, dims in (("BatchNorm1d", (2, 3)), ("BatchNorm2d", (4,)))],
    module("NLLLoss", st.fixed_dictionaries({"ignore_index": st.sampled_from([-100, 0]), "reduction": REDUCTION}),
           XF, class_targets(of=2), quirk=lambda seed, options, *inputs: no_classes_and_more_dims(*inputs)),
    module("BCELoss", st.fixed_dictionaries({"reduction": REDUCTION}), probability_inputs(),
           T(FLOATS, like=2, low=0, high=1, specials=False)),
    module("BCEWithLogitsLoss", st.fixed_dictionaries({"reduction": REDUCTION}), XF, T(FLOATS, like=2, low=0, high=1)),
    *[module(name, st.fixed_dictionaries({"reduction": REDUCTION}), XF, T(FLOATS, like=2),
             differs=lambda seed, options, x, target: nan_difference(x, target))
      for name in ("L1Loss", "SmoothL1Loss")],
    module("HuberLoss", st.fixed_dictionaries({"reduction": REDUCTION}), XF, T(FLOATS, like=2),
           quirk=lambda seed, options, x, target: huber_of_two_dtypes(x, target),
           differs=lambda seed, options, x, target: nan_difference(x, target)),
    module("KLDivLoss", st.fixed_dictionaries({"reduction": st.sampled_from(["batchmean", "sum", "none"]),
                                               "log_target": st.booleans()}), XF, T(FLOATS, like=2),
           grad=lambda seed, options, x, target: kl_div_gradient_compared(x, target)),
    module("Conv1d", st.fixed_dictionaries({"in_channels": st.integers(1, 3), "out_channels": st.integers(1, 3),
                                            "kernel_size": st.integers(1, 3), "padding": st.sampled_from([0, 1, "same"]),
                                            "bias": st.booleans()}),
           T(FLOATS, shape=module_batch((2, 3), channels="in_channels"), specials=False), quirk=conv1d_module_quirks),
    module("Conv2d", st.fixed_dictionaries({"in_channels": st.integers(1, 3), "out_channels": st.integers(1, 3),
                                            "kernel_size": st.sampled_from([1, 2, 3, (2, 1)]),
                                            "padding": st.sampled_from([0, 1, "same"]), "bias": st.booleans(),
                                            "padding_mode": st.sampled_from(["zeros", "zeros", "reflect"])}),
           T(FLOATS, shape=module_batch((3, 4), channels="in_channels"), specials=False), quirk=conv1d_module_quirks),
    *[module(name, st.fixed_dictionaries({"in_channels": st.integers(1, 3), "out_channels": st.integers(1, 3),
                                          "kernel_size": st.sampled_from([1, 2, 3]), "stride": st.sampled_from([1, 2]),
                                          "padding": st.sampled_from([0, 1]), "bias": st.booleans()}),
             T(FLOATS, shape=module_batch(dims, channels="in_channels"), specials=False),
             quirk=lambda seed, options, x, dims=dims[0] - 1: conv1d_module_quirks(seed, options, x) or (
                 empty_transposed_output(x, (options["kernel_size"],) * dims, options["stride"], options["padding"])
                 if x.ndim >= dims else None))
      for name, dims in (("ConvTranspose1d", (2, 3)), ("ConvTranspose2d", (3, 4)))],
    module("MaxPool2d", st.fixed_dictionaries({"kernel_size": st.sampled_from([1, 2, 3]),
                                               "stride": st.sampled_from([None, 1, 2]),
                                               "ceil_mode": st.booleans()}), pool_input(), quirk=pool_module_quirks,
           differs=lambda seed, options, x: nan_input(x)),
    module("AvgPool2d", st.fixed_dictionaries({"kernel_size": st.sampled_from([1, 2, 3]),
                                               "padding": st.sampled_from([0, 1]),
                                               "count_include_pad": st.booleans()}), pool_input(),
           quirk=lambda seed, options, x: "an empty input" if 0 in x.shape else None),
    module("AdaptiveAvgPool2d", st.tuples(st.sampled_from([1, 2, (3, 1)])), pool_input(),
           quirk=lambda seed, options, x: adaptive_pool_quirks(x, *options)),
    module("MaxPool1d", st.fixed_dictionaries({"kernel_size": st.sampled_from([1, 2, 3]),
                                               "stride": st.sampled_from([None, 1, 2]),
                                               "ceil_mode": st.booleans()}), T(FLOATS, min_dims=1, max_dims=3),
           quirk=lambda seed, options, x: "an empty input" if 0 in x.shape else None,
           differs=lambda seed, options, x: nan_input(x)),
    module("AvgPool1d", st.fixed_dictionaries({"kernel_size": st.sampled_from([1, 2, 3]),
                                               "padding": st.sampled_from([0, 1]),
                                               "count_include_pad": st.booleans()}), T(FLOATS, min_dims=1, max_dims=3),
           quirk=lambda seed, options, x: "an empty input" if 0 in x.shape else None),
    module("AdaptiveAvgPool1d", st.tuples(st.sampled_from([1, 2, 3])), T(FLOATS, min_dims=1, max_dims=3),
           quirk=lambda seed, options, x: adaptive_pool1d_quirks(x, *options)),
    module("Dropout2d", st.tuples(st.sampled_from([0.0, 0.5, 1.0]) | st.floats(0, 1)), X,
           differs=lambda seed, p, x: checked_even_when_empty(x)),
    Entry("nn.MultiheadAttention", "nn.MultiheadAttention", multihead_attention_module,
          (SEEDS, st.integers(1, 2).flatmap(lambda heads: st.fixed_dictionaries({
              "embed_dim": st.integers(1, 2).map(lambda n: n * heads), "num_heads": st.just(heads),
              "bias": st.booleans(), "add_bias_kv": st.booleans(), "add_zero_attn": st.booleans(),
              "batch_first": st.booleans()})),
           mha_shape("query"), mha_shape("key"), mha_shape("value"),
           Kw("key_padding_mask", maybe(key_padding_mask)), Kw("need_weights", maybe(st.booleans()))),
          quirk=mha_quirks),
    # the recurrent layers and cells: (T, B, input_size), (B, T, input_size) or unbatched, any input now and then
    *[module(name, st.fixed_dictionaries({
        "input_size": st.integers(1, 3), "hidden_size": st.integers(1, 3), "num_layers": st.integers(1, 2),
        "bias": st.booleans(), "batch_first": st.booleans(), "bidirectional": st.booleans(), "dropout": DROPOUT,
        **extra}), T(FLOATS, shape=module_input("input_size")))
      for name, extra in (("RNN", {"nonlinearity": st.sampled_from(["tanh", "relu"])}), ("GRU", {}),
                          ("LSTM", {"proj_size": st.sampled_from([0, 0, 1])}))],
    *[module(name, st.fixed_dictionaries({"input_size": st.integers(0, 3), "hidden_size": st.integers(1, 3),
                                          "bias": st.booleans(), **extra}),
             T(FLOATS, shape=module_input("input_size")))
      for name, extra in (("RNNCell", {"nonlinearity": st.sampled_from(["tanh", "relu"])}), ("GRUCell", {}),
                          ("LSTMCell", {}))],
    *[Entry(f"nn.{kind}", f"nn.{kind}", transformer_module(kind),
            (SEEDS, TRANSFORMER_OPTIONS, transformer_sequence(), *([transformer_sequence(of=2)] if two else [])),
            quirk=rows_of_equal_features)
      for kind, two in (("TransformerEncoderLayer", False), ("TransformerEncoder", False),
                        ("TransformerDecoderLayer", True), ("TransformerDecoder", True), ("Transformer", True))],
    Entry("nn.Sequential", "nn.Sequential", sequential, (SEEDS, st.integers(1, 3), T(FLOATS, shape=(2, 3)))),
    # (no inf and NaN in the attention modules' inputs: the fused attention and the book's chain of ops
    # spread a NaN to different places of the gradients)
    module("SelfAttention_v1", st.tuples(st.integers(1, 3), st.integers(1, 3)), TOKENS(2)),
    module("SelfAttention_v2", st.tuples(st.integers(1, 3), st.integers(1, 3), st.booleans()), TOKENS(2)),
    # --- the general names of introductory code (tinyattn/functions_more.py) ---
    *[e for name in ("asin", "acos", "atan", "sinh", "cosh", "arcsin", "arccos", "arctan") for e in both(name, X)],
    *both("atan2", X, Y, quirk=bool_beside_a_float_with_grad), *both("arctan2", X, Y, quirk=bool_beside_a_float_with_grad),
    *[e for name in ("logical_and", "logical_or", "logical_xor") for e in both(name, X, Y)],
    *both("bitwise_xor", X, Y),
    *both("multiply", X, one_of(Y, NUMBER)),
    *both("ravel", X),
    *both("swapaxes", X, dim(), dim()), *both("swapdims", X, dim(), dim()),
    *both("median", X, quirk=a_bool_0d),
    *both("median", X, DIM, KEEPDIM, id="median(dim)", grad=distinct_along_dim, quirk=a_bool_0d),
    *both("diag", X, Kw("diagonal", maybe(st.integers(-3, 3)))),
    *both("dist", XF, YF, Kw("p", maybe(st.sampled_from([1, 2, 3]))), grad=False),
    *both("lerp", XF, YF, st.floats(0.0, 1.0)),
    *both("det", T(FLOATS, shape=square_matrices), grad=lambda x: not near_singular(x)),
    *both("inverse", T(FLOATS, shape=square_matrices), quirk=near_singular),
    module("CausalAttention", st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 4), DROPOUT,
                                        st.booleans()), TOKENS(3), differs=longer_than_context),
    module("MultiHeadAttentionWrapper", st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 4), DROPOUT,
                                                  st.integers(1, 2), st.booleans()), TOKENS(3),
           differs=longer_than_context),
    module("MultiHeadAttention", st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), DROPOUT,
                                           st.integers(1, 2), st.booleans()), TOKENS(3), differs=longer_than_context),
]


# Public callables that the table leaves out, and why. Everything public is in the table or here.
NOT_FUZZED = {
    **dict.fromkeys(["tinyattn.ShapeError", "tinyattn.BackwardError", "tinyattn.DeviceError",
                     "tinyattn.GradcheckError", "tinyattn.AnomalyError", "tinyattn.CheckpointError"],
                    "exception classes"),
    **dict.fromkeys(["tinyattn.Size", "tinyattn.dtype", "tinyattn.device"],
                    "types of what every entry's results are compared on (shape, dtype)"),
    **dict.fromkeys(["tinyattn.Generator", "tinyattn.manual_seed", "tinyattn.seed", "tinyattn.initial_seed",
                     "tinyattn.get_rng_state", "tinyattn.set_rng_state"],
                    "the generator and its state: tests/test_random.py (the seeded entries use manual_seed)"),
    "tinyattn.generator_or_default": "an internal helper that tinyattn.functions exports with its functions",
    **dict.fromkeys(["tinyattn.no_grad", "tinyattn.enable_grad", "tinyattn.inference_mode",
                     "tinyattn.set_grad_enabled", "tinyattn.is_grad_enabled"],
                    "grad mode, no op: tests/test_autograd.py"),
    **dict.fromkeys(["tinyattn.get_default_dtype", "tinyattn.get_printoptions", "tinyattn.set_printoptions"],
                    "settings: tests/test_printing.py and tests/test_tensor.py"),
    **dict.fromkeys(["tinyattn.gradcheck", "tinyattn.numerical_grad", "tinyattn.numerical_jacobian"],
                    "finite differences of other ops: tests/test_gradient_check.py"),
    **dict.fromkeys(["tinyattn.detect_anomaly", "tinyattn.draw_graph"], "observers of ops: tests/test_tracing.py"),
    **dict.fromkeys(["Tensor.cuda", "Tensor.is_cuda"], "needs a GPU: tests/test_gpu.py"),
    **dict.fromkeys(["Tensor.shape", "Tensor.dtype", "Tensor.ndim", "Tensor.device", "Tensor.requires_grad",
                     "Tensor.grad", "Tensor.is_leaf"], "attributes compared on every entry's results and inputs"),
    **dict.fromkeys(["Tensor.array", "Tensor.grad_fn", "Tensor.output_nr"],
                    "tinyattn's internals or graph nodes, which PyTorch's are not comparable with"),
    **dict.fromkeys(["Tensor.backward", "Tensor.register_hook", "Tensor.retain_grad"],
                    "autograd itself: every entry runs backward; hooks are in tests/test_autograd.py"),
    **dict.fromkeys(["Tensor.__repr__", "Tensor.__str__"], "printing: tests/test_printing.py against PyTorch's"),
    "Tensor.__getattr__": "only reached for a name Tensor lacks; its error message: tests/test_missing_names.py",
    "Tensor.__hash__": "identity, as in PyTorch",
    "Tensor.data_ptr": "a memory address, not comparable across libraries: tests/test_accelerator_and_data_ptr.py",
    **dict.fromkeys(["Tensor.storage", "Tensor.untyped_storage", "tinyattn.TypedStorage", "tinyattn.UntypedStorage",
                     "Tensor.nbytes", "Tensor.itemsize"],
                    "storages and sizes in bytes: tests/test_storage.py against PyTorch's, over views"),
    "Tensor.retains_grad": "autograd itself: tests/test_storage.py reads it beside .grad's warning, against PyTorch",
    "nn.DataParallel": "nn.parallel.DataParallel, which runs its module as it is: tests/test_pytorch_leftovers.py",
    "Tensor.__array_ufunc__": "None: it makes NumPy hand `np.float64(2) * t` to the tensor",
    "Tensor.__rmatmul__": "reached only from a non-tensor left operand, which matmul refuses; `@` is __matmul__",
    **dict.fromkeys(["F.check_dropout_p", "F.check_reduction", "F.class_rows", "F.dropout_mask"],
                    "checks and helpers that the layers share (run by the F and nn entries)"),
    **dict.fromkeys(["F.legacy_reduction", "F.class_weight", "F.weighted_nll_rows", "F.reduce_class_loss",
                     "F.reduce_loss", "F.pointwise_pair", "F.weighted_loss", "F.same_shape_pair",
                     "F.check_padding_idx", "F.check_broadcasts_to"],
                    "checks and helpers that the losses and Embedding share (run by the F and nn entries)"),
    **dict.fromkeys(["nn.Module", "nn.ModuleList", "nn.ModuleDict", "nn.Parameter"],
                    "containers and the base class: tests/test_nn.py (every nn entry runs through Module)"),
    **dict.fromkeys(["nn.RNNBase", "nn.RNNCellBase"],
                    "base classes of the recurrent layers and cells, fuzzed through nn.RNN, nn.LSTM, nn.GRU and "
                    "the cells; tests/test_recurrent.py"),
    "nn.multihead_from_wrapper": "tinyattn's own: tests/test_attention.py checks it against the wrapper",
    **dict.fromkeys(["tinyattn.set_num_threads", "tinyattn.get_num_threads"],
                    "a process setting, no op: tests/test_threads.py"),
    **dict.fromkeys(["tinyattn.save", "tinyattn.load"],
                    "files, not ops: tests/test_serialization.py reads and writes PyTorch's format both ways"),
    **dict.fromkeys([f"tinyattn.{name}" for name in ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor",
                                                      "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor")],
                    "legacy constructors (sizes or data, not tensors): tests/test_dtypes_more.py against PyTorch's"),
    **dict.fromkeys(["tinyattn.normal", "tinyattn.bernoulli", "Tensor.bernoulli", "Tensor.random_"],
                    "random draws: tests/test_intro_names.py compares them with PyTorch's for the same seed"),
    **dict.fromkeys(["tinyattn.set_default_dtype", "tinyattn.set_default_tensor_type", "tinyattn.set_default_device",
                     "tinyattn.get_default_device", "tinyattn.use_deterministic_algorithms",
                     "tinyattn.are_deterministic_algorithms_enabled",
                     "tinyattn.is_deterministic_algorithms_warn_only_enabled"],
                    "settings, no ops: tests/test_intro_names.py"),
    **dict.fromkeys(["Tensor.squeeze_", "Tensor.unsqueeze_", "Tensor.resize_", "Tensor.resize", "Tensor.new"],
                    "shape changes in place and the legacy constructor: tests/test_intro_names.py"),
    **dict.fromkeys(["tinyattn.addcmul", "Tensor.addcmul", "tinyattn.addcdiv", "Tensor.addcdiv", "Tensor.addcmul_",
                     "Tensor.addcdiv_", "tinyattn.cross", "Tensor.cross", "tinyattn.diagonal", "Tensor.diagonal",
                     "tinyattn.index_add", "Tensor.index_add", "Tensor.index_add_", "tinyattn.sin_", "Tensor.sin_",
                     "tinyattn.svd", "Tensor.svd", "tinyattn.cdist", "tinyattn.logspace", "tinyattn.meshgrid",
                     "tinyattn.std_mean", "tinyattn.var_mean", "linalg.cross", "linalg.det", "linalg.inv",
                     "linalg.matrix_norm", "linalg.norm", "linalg.solve", "linalg.svd", "linalg.svdvals",
                     "nn.CosineSimilarity", "nn.GroupNorm", "nn.LazyLinear", "nn.PairwiseDistance",
                     "nn.ParameterDict", "nn.ParameterList", "F.cosine_similarity", "F.group_norm",
                     "F.pairwise_distance"],
                    "compared with PyTorch (values and gradients) and gradient-checked by Hypothesis in "
                    "tests/test_intro_names.py"),
    **dict.fromkeys(["tinyattn.autocast", "tinyattn.is_autocast_enabled", "tinyattn.compile",
                     "tinyattn.get_float32_matmul_precision", "tinyattn.set_float32_matmul_precision"],
                    "names accepted for compatibility, no ops: tests/test_compat.py against PyTorch's"),
}


def public_callables():
    """The public names whose behaviour PyTorch code relies on: tinyattn.*, the Tensor's methods,
    properties and operators, linalg's and nn.functional's functions, and nn's layers and functions."""
    import inspect

    names = {f"tinyattn.{n}" for n in dir(tinyattn)
             if not n.startswith("_") and callable(getattr(tinyattn, n)) and not inspect.ismodule(getattr(tinyattn, n))}
    names |= {f"Tensor.{n}" for n in dir(tinyattn.Tensor) if not n.startswith("_")}
    # the operators Tensor defines, in its class or in the classes it is made of (tinyattn/tensor/, tensor_core.py)
    own_classes = [cls for cls in tinyattn.Tensor.__mro__ if cls.__module__.startswith("tinyattn")]
    names |= {f"Tensor.{n}" for cls in own_classes for n in vars(cls)
              if n.startswith("__") and n not in ("__init__", "__module__", "__doc__", "__slots__", "__weakref__",
                                                   "__slotnames__",  # (copyreg's cache, once a tensor is pickled)
                                                   "__qualname__", "__firstlineno__", "__static_attributes__")}
    names |= {f"F.{n}" for n, v in vars(tF).items()
              if not n.startswith("_") and inspect.isfunction(v) and v.__module__.startswith(tF.__name__)}
    names |= {f"linalg.{n}" for n in tinyattn.linalg.__all__}
    names |= {f"nn.{n}" for n in dir(tnn)
              if not n.startswith("_") and callable(getattr(tnn, n)) and not inspect.ismodule(getattr(tnn, n))}
    return names


def _flat(items):
    out = []
    for item in items:
        out.extend(item if isinstance(item, list) else [item])
    return out


TABLE = _flat(TABLE)
BY_ID = {entry.id: entry for entry in TABLE}
assert len(BY_ID) == len(TABLE), "two entries with one id"


# ---------------------------------------------------------------------------------------------
# running an entry in one library


def convert(value, L, leaves):
    """Arr -> tensor (a leaf; kept in `leaves` for its gradient), DType -> dtype, lists recursively."""
    if isinstance(value, Arr):
        t = L.tensor_of(value.values.copy())
        if value.grad:
            t.requires_grad_(True)
        leaves.append(t)
        return t
    if isinstance(value, DType):
        return L.dtype(value.name)
    if isinstance(value, Raw):
        return value.value
    if isinstance(value, (list, tuple)):
        return type(value)(convert(v, L, leaves) for v in value)
    return value


@dataclasses.dataclass
class Outcome:
    result: object = None
    error: BaseException = None
    leaves: list = None
    grads: list = None
    grad_error: BaseException = None


def run(entry, L, drawn):
    leaves = []
    args, kwargs = [], {}
    for spec, value in zip(entry.specs, drawn):
        if isinstance(spec, Kw):
            if value is not OMIT:
                kwargs[spec.name] = convert(value, L, leaves)
        elif value is not OMIT:
            args.append(convert(value, L, leaves))
    outcome = Outcome(leaves=leaves)
    L.leaves = leaves  # a module's call adds its parameters
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            outcome.result = entry.call(L, *args, **kwargs)
        except Exception as error:  # noqa: BLE001  (compared with the other library's outcome)
            outcome.error = error
    return outcome


def tensors_in(result):
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in tensors_in(item)]
    return [result] if hasattr(result, "requires_grad") and hasattr(result, "backward") else []


def backward(outcome, L, weights):
    """Backward of sum(out * w) over the float outputs that require grad; the leaves' gradients."""
    outs = [t for t in tensors_in(outcome.result) if t.requires_grad]
    if not outs:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            loss = sum((out * L.tensor_of(w)).sum() for out, w in zip(outs, weights))
            loss.backward()
        except Exception as error:  # noqa: BLE001
            outcome.grad_error = error
            return
    # (an input changed in place by the op is no leaf any more: it has no .grad)
    outcome.grads = [t.grad if t.requires_grad and t.is_leaf else None for t in outcome.leaves]


# ---------------------------------------------------------------------------------------------
# comparing the outcomes


def to_numpy(t):
    if isinstance(t, tinyattn.Tensor):
        return backend.to_host(t.detach().array)
    if t._is_zerotensor():  # PyTorch's gradient of zeros that it never fills in (sgn's)
        return np.zeros(tuple(t.shape), dtype=dtype_of(t))
    return t.detach().numpy()


def dtype_of(t):
    return t.dtype.name if isinstance(t, tinyattn.Tensor) else str(t.dtype).removeprefix("torch.")


TOLERANCE = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-11)}  # rtol, atol at inputs of size 1


@dataclasses.dataclass
class Scale:
    """What the tolerance of a comparison depends on: the size of the inputs' finite numbers (at least
    1; atol grows with its square: products and sums of them) and whether float32 numbers went in
    (then float64 results are only as exact as float32 ones)."""

    size: float = 1.0
    float32_inputs: bool = False

    def tolerance(self, dtype):
        rtol, atol = TOLERANCE["float32" if self.float32_inputs else dtype]
        return rtol, atol * self.size**2


def assert_close(ours, theirs, dtype, scale, what):
    """Equal NaN and inf positions; finite values within the tolerance (see Scale); integers and bools
    exactly."""
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, PyTorch's {theirs.shape}"
    if dtype not in TOLERANCE:
        assert np.array_equal(ours, theirs), f"{what}:\n ours   {ours!r}\n theirs {theirs!r}"
        return
    rtol, atol = scale.tolerance(dtype)
    ours, theirs = ours.astype(np.float64), theirs.astype(np.float64)
    same_special = np.array_equal(np.isnan(ours), np.isnan(theirs)) and np.array_equal(
        np.where(np.isinf(ours), ours, 0), np.where(np.isinf(theirs), theirs, 0))
    finite = np.isfinite(ours) & np.isfinite(theirs)
    ok = same_special and np.all(np.abs(ours[finite] - theirs[finite]) <= atol + rtol * np.abs(theirs[finite]))
    assert ok, f"{what}:\n ours   {ours!r}\n theirs {theirs!r}"


def compare_results(ours, theirs, scale, grads, what="result"):
    if isinstance(theirs, (tuple, list)) and not hasattr(theirs, "shape"):
        assert isinstance(ours, (tuple, list)), f"{what}: {type(ours).__name__}, PyTorch's {type(theirs).__name__}"
        assert len(ours) == len(theirs), f"{what}: {len(ours)} items, PyTorch's {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            compare_results(a, b, scale, grads, f"{what}[{i}]")
        return
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray) and ours.dtype == theirs.dtype, f"{what}: {ours!r}, PyTorch's {theirs!r}"
        assert_close(ours, theirs, theirs.dtype.name, scale, what)
        return
    if hasattr(theirs, "requires_grad"):  # a tensor
        assert isinstance(ours, tinyattn.Tensor), f"{what}: {type(ours).__name__}, PyTorch's tensor"
        assert dtype_of(ours) == dtype_of(theirs), f"{what}: dtype {dtype_of(ours)}, PyTorch's {dtype_of(theirs)}"
        if grads and dtype_of(theirs) in FLOATS:  # (PyTorch lets some integer results require grad)
            assert ours.requires_grad == theirs.requires_grad, (
                f"{what}: requires_grad {ours.requires_grad}, PyTorch's {theirs.requires_grad}")
        assert_close(to_numpy(ours), to_numpy(theirs), dtype_of(theirs), scale, what)
        return
    assert ours == theirs or (ours != ours and theirs != theirs), f"{what}: {ours!r}, PyTorch's {theirs!r}"


def input_scale(drawn):
    scale = Scale()
    for value in drawn:
        scale.float32_inputs |= isinstance(value, DType) and value.name == "float32"  # computed in float32
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, Arr) and item.dtype in FLOATS:
                scale.float32_inputs |= item.dtype == "float32"
                finite = item.values[np.isfinite(item.values)]
                if finite.size:
                    scale.size = max(scale.size, float(np.abs(finite).max()))
    return scale


def compares_grads(entry, drawn):
    return entry.grad(*drawn) if callable(entry.grad) else entry.grad


def assert_same_outcome(entry, drawn, ours, theirs):
    quirk = entry.quirk(*drawn) if entry.quirk else None
    if quirk:
        note(f"PyTorch is inconsistent here: {quirk}")
        if ours.error is not None:
            assert_clear_error(ours.error)
        return
    reason = entry.differs(*drawn) if entry.differs else None
    if reason:  # one library may raise where the other returns; where both return they agree
        note(f"tinyattn differs on purpose here: {reason}")
        if ours.error is not None:
            assert_clear_error(ours.error)
            return
        if theirs.error is not None:
            return
    if theirs.error is not None:
        note(f"PyTorch raises {type(theirs.error).__name__}: {theirs.error}")
        if ours.error is None:
            raise AssertionError(f"PyTorch raises {type(theirs.error).__name__}: {theirs.error}\n"
                                 f"but tinyattn returns {ours.result!r}")
        assert_clear_error(ours.error)
        return
    if ours.error is not None:
        raise AssertionError(f"PyTorch returns {theirs.result!r}\nbut tinyattn raises "
                             f"{type(ours.error).__name__}: {ours.error}") from ours.error
    scale = input_scale(drawn)
    if entry.values:
        compare_results(ours.result, theirs.result, scale, compares_grads(entry, drawn))
    else:  # shapes and dtypes only
        for a, b in zip(tensors_in(ours.result), tensors_in(theirs.result), strict=True):
            assert tuple(a.shape) == tuple(b.shape) and dtype_of(a) == dtype_of(b)


def assert_same_gradients(entry, drawn, ours, theirs):
    if theirs.grad_error is not None:
        if ours.grad_error is None:
            raise AssertionError(f"PyTorch's backward raises {theirs.grad_error!r}, tinyattn's does not")
        assert_clear_error(ours.grad_error)
        return
    if ours.grad_error is not None:
        raise AssertionError(f"tinyattn's backward raises {ours.grad_error!r}") from ours.grad_error
    if theirs.grads is None:
        return
    scale = input_scale(drawn)
    for i, (leaf, a, b) in enumerate(zip(theirs.leaves, ours.grads, theirs.grads)):
        zeros = np.zeros(tuple(leaf.shape), dtype=dtype_of(leaf))
        a = zeros if a is None else to_numpy(a)
        b = zeros if b is None else to_numpy(b)
        assert_close(a, b, dtype_of(leaf), dataclasses.replace(scale, size=scale.size * 2), f"gradient of input {i}")


@pytest.mark.parametrize("entry", TABLE, ids=[e.id for e in TABLE])
@given(data=st.data())
def test_tinyattn_matches_pytorch(torch, entry, data):
    drawn = []
    for spec in entry.specs:
        drawn.append(_draw(spec.spec if isinstance(spec, Kw) else spec, data, drawn))
    check_against_pytorch(torch, entry, drawn)


def check_against_pytorch(torch, entry, drawn):
    """Run the entry with these arguments in both libraries; compare outcomes, then gradients."""
    theirs = run(entry, torch_lib_cached(torch), drawn)
    ours = run(entry, TINY, drawn)
    no_reference(theirs.error)
    assert_same_outcome(entry, drawn, ours, theirs)
    if (not compares_grads(entry, drawn) or theirs.error is not None or ours.error is not None
            or (entry.differs and entry.differs(*drawn)) or (entry.quirk and entry.quirk(*drawn))):
        return
    rng = np.random.default_rng(0)
    weights = [rng.uniform(-1, 1, tuple(t.shape)).astype(dtype_of(t)) for t in tensors_in(theirs.result)
               if t.requires_grad]
    backward(theirs, torch_lib_cached(torch), weights)
    backward(ours, TINY, weights)
    no_reference(theirs.grad_error)
    assert_same_gradients(entry, drawn, ours, theirs)


_TORCH_LIB = []


def torch_lib_cached(torch):
    if not _TORCH_LIB:
        _TORCH_LIB.append(torch_lib(torch))
    return _TORCH_LIB[0]


def test_every_public_callable_is_in_the_table():
    """A public op that is neither fuzzed nor listed in NOT_FUZZED (with the reason) fails here: add
    its line to TABLE. Names in the table or the list that are no longer public fail too."""
    public = public_callables()
    covered = {entry.covers for entry in TABLE}
    missing = sorted(public - covered - set(NOT_FUZZED))
    assert not missing, f"public callables in neither TABLE nor NOT_FUZZED: {missing}"
    stale = sorted((covered | set(NOT_FUZZED)) - public)
    assert not stale, f"TABLE or NOT_FUZZED names what is not public (any more): {stale}"
    assert not covered & set(NOT_FUZZED), f"both fuzzed and not: {sorted(covered & set(NOT_FUZZED))}"


# ---------------------------------------------------------------------------------------------
# edges the fuzz found, pinned: each runs in both libraries as a table entry does


def pinned(name, call, *args, quirk=None):
    """A case that failed before: `call(L, *tensors)` with these fixed arguments."""
    return pytest.param(Entry(name, "", call, (None,) * len(args), quirk=quirk), list(args), id=name)


def array(*shape, dtype="float32", grad=True, fill=None):
    values = np.arange(math.prod(shape)).reshape(shape) / 3 if fill is None else np.full(shape, fill)
    return Arr(values.astype(dtype), grad and dtype in FLOATS)


def multihead_attention(L, x):
    L.manual_seed(1)
    layer = L.nn.MultiHeadAttention(3, 4, 5, 0.0, 2)
    L.leaves.extend(p for _, p in layer.named_parameters())
    return layer(x)


PINNED = [
    # dims of size 0: PyTorch's empty results and gradients
    pinned("softmax over a dim of size 0", lambda L, x: x.softmax(-1), array(3, 0)),
    pinned("log_softmax over a dim of size 0", lambda L, x: x.log_softmax(-1), array(3, 0)),
    pinned("logsumexp over a dim of size 0 is -inf", lambda L, x: x.logsumexp(-1), array(3, 0)),
    pinned("max over a dim of size 0 is an IndexError", lambda L, x: x.max(0), array(0, 3)),
    pinned("max of no numbers is an error", lambda L, x: x.max(), array(0, 3)),
    pinned("argmax over a dim of size 0 is an IndexError", lambda L, x: x.argmax(0), array(0, 3)),
    pinned("attention with no keys gives zeros", lambda L, q, k, v: L.F.scaled_dot_product_attention(q, k, v),
           array(2, 3, 4), array(2, 0, 4), array(2, 0, 5)),
    pinned("MultiHeadAttention of 0 tokens", multihead_attention, array(2, 0, 3)),
    pinned("add_ on a (0, 2)", lambda L, x: x.clone().add_(1), array(0, 2)),
    pinned("zero_ on a (0, 2)", lambda L, x: x.clone().zero_(), array(0, 2)),
    pinned("fill_ on a (0, 2)", lambda L, x: x.clone().fill_(2.5), array(0, 2)),
    pinned("x[...] = v on a (0, 2)", lambda L, x: set_item(L, x, Ellipsis, 1.0), array(0, 2)),
    pinned("split along a dim of size 0", lambda L, x: x.split(2), array(0, 2)),
    pinned("chunk along a dim of size 0", lambda L, x: x.chunk(3, 1), array(2, 0)),
    pinned("cat of a legacy (0,) tensor", lambda L, a, b: L.cat([a, b]), array(0), array(2, 3)),
    # 0-d tensors
    pinned("transpose of a 0-d tensor", lambda L, x: x.transpose(0, -1), array()),
    pinned("squeeze(0) of a 0-d tensor", lambda L, x: x.squeeze(0), array()),
    pinned("any(0) of a 0-d tensor", lambda L, x: x.any(0), array()),
    pinned("max(0) of a 0-d tensor", lambda L, x: x.max(0), array(fill=2.0)),
    pinned("cat of 0-d tensors is an error", lambda L, a, b: L.cat([a, b]), array(), array()),
    pinned("size(0) of a 0-d tensor is an IndexError", lambda L, x: x.size(0), array()),
    # invalid arguments
    pinned("view(-2, 3) is an error", lambda L, x: x.view(-2, 3), array(6)),
    pinned("chunk(-1) is an error", lambda L, x: x.chunk(-1), array(6)),
    pinned("chunk(0) is an error", lambda L, x: x.chunk(0), array(6)),
    pinned("cumsum(5) of a 0-d tensor is an IndexError", lambda L, x: x.cumsum(5), array(fill=2.0)),
    pinned("a repeated dim is an error", lambda L, x: x.mean((0, -1)), array(fill=2.0)),
    pinned("layer_norm over [] is an error", lambda L, x: L.F.layer_norm(x, []), array(2, 3)),
    pinned("add_ of a shape that does not broadcast", lambda L, x, y: x.clone().add_(y), array(2, 3), array(4)),
    pinned("where of shapes that do not broadcast", lambda L, c, x, y: L.where(c, x, y), array(2, 3, dtype="bool"),
           array(4), array(2, 3)),
    pinned("a linear bias of the wrong size", lambda L, x, w, b: L.F.linear(x, w, b), array(2, 3), array(4, 3),
           array(5)),
    pinned("zeros(-1) is an error", lambda L: L.zeros(-1)),
    pinned("bool | float is an error", lambda L, a, b: a | b, array(2, dtype="bool"), array(2, grad=False)),
    pinned("integer // 0 is an error", lambda L, a: a // 0, array(2, dtype="int64")),
    # the wider op set
    pinned("x -= 0 on a (0, 2)", lambda L, x: x.clone().__isub__(0), array(0, 2)),
    pinned("cumprod of one number at inf has gradient 1", lambda L, x: x.cumprod(0), array(fill=math.inf)),
    pinned("prod(dtype=int32) is int32", lambda L, x: x.prod(dtype=L.int32), array(3, dtype="int64", fill=2)),
    pinned("cumprod(dtype=int32) is int32", lambda L, x: x.cumprod(0, dtype=L.int32), array(3, dtype="int64", fill=2)),
    pinned("prod into integers of a tensor that requires grad is an error",
           lambda L, x: x.prod(dtype=L.int64), array(3)),
    pinned("amax of bools", lambda L, x: x.amax(0), array(2, 3, dtype="bool")),
    pinned("amax() of no numbers is an error", lambda L, x: x.amax(), array(0, 3)),
    pinned("amin over a dim of size 0 is an IndexError", lambda L, x: x.amin(0), array(0, 3)),
    pinned("scatter into a 0-d tensor", lambda L, x, i, v: x.scatter(0, i, v), array(fill=1.0),
           array(dtype="int64", fill=0), array(fill=5.0)),
    pinned("scatter_add of a 0-d index into a vector", lambda L, x, i, v: x.scatter_add(0, i, v), array(3),
           array(dtype="int64", fill=2), array(fill=4.0)),
    pinned("roll of a 0-d tensor along dim 0 is an IndexError", lambda L, x: x.roll(1, 0), array(fill=2.0)),
    pinned("roll with dims=() rolls the flattened tensor", lambda L, x: x.roll(1, ()), array(2, 3)),
    pinned("flip(-1) of a 0-d tensor", lambda L, x: x.flip(-1), array(fill=2.0)),
    pinned("repeat_interleave of a 0-d tensor along dim 0 is an IndexError",
           lambda L, x: x.repeat_interleave(2, dim=0), array(fill=2.0)),
    pinned("repeat_interleave with 2-d repeats is an error", lambda L, x, r: x.repeat_interleave(r),
           array(2), array(1, 2, dtype="int64", fill=1)),
    pinned("addmm with an input of another dtype is an error", lambda L, x, a, b: L.addmm(x, a, b),
           array(2, 2, dtype="float64"), array(2, 3), array(3, 2)),
    pinned("vector_norm of integers is an error", lambda L, x: L.linalg.vector_norm(x, dtype=L.float32),
           array(3, dtype="int64")),
    pinned("tril_indices(2, -1) is an error", lambda L: L.tril_indices(2, -1)),
    pinned("einsum of int32 stays int32", lambda L, a, b: L.einsum("ij,jk->ik", a, b), array(2, 3, dtype="int32"),
           array(3, 2, dtype="int32")),
    pinned("F.pad in reflect mode with no pads is an error", lambda L, x: L.F.pad(x, (), mode="reflect"), array(3)),
    pinned("F.pad of integers writes 1.5 as 1", lambda L, x: L.F.pad(x, (1, 1), value=1.5), array(3, dtype="int64")),
    # the last findings: a clear error of tinyattn's own, never NumPy's
    pinned("nll_loss of one sample with a target of shape [1] is refused",
           lambda L, x, t: L.F.nll_loss(x, t, reduction="none"), array(5), array(1, dtype="int64", fill=1),
           quirk=one_sample_and_a_target_of_shape_1),
    pinned("cross_entropy of one sample with a target of shape [1] is refused",
           lambda L, x, t: L.F.cross_entropy(x, t), array(5), array(1, dtype="int64", fill=1),
           quirk=one_sample_and_a_target_of_shape_1),
    pinned("nll_loss of one sample with a 0-d target", lambda L, x, t: L.F.nll_loss(x, t, reduction="none"),
           array(5), array(dtype="int64", fill=1)),
    pinned("tensor of a number beside a list is a TypeError", lambda L: L.tensor([[1], 2])),
    pinned("tensor of rows of other lengths is a ValueError", lambda L: L.tensor([[1, 2], [3]])),
    pinned("layer_norm of int64 is not implemented", lambda L, x: L.F.layer_norm(x, [3]),
           array(2, 3, dtype="int64")),
    pinned("layer_norm of bools is not implemented", lambda L, x: L.F.layer_norm(x, [3]), array(2, 3, dtype="bool")),
]


def test_the_last_findings_raise_what_pytorch_raises(torch):
    """The exception types PyTorch code catches: the same as torch's, with tinyattn's own messages."""
    for data, kind in (([[1], 2], TypeError), ([[1, 2], [3]], ValueError), ([[[1]], [2]], TypeError)):
        with pytest.raises(kind):
            torch.tensor(data)
        with pytest.raises(kind, match=r"tensor\(data\): .* at dim \d"):
            tinyattn.tensor(data)
    for dtype in ("int64", "int32", "bool"):
        with pytest.raises(NotImplementedError):
            torch.nn.functional.layer_norm(torch.ones(2, 3, dtype=getattr(torch, dtype)), [3])
        with pytest.raises(NotImplementedError, match=f"layer_norm is not implemented for tinyattn.{dtype}"):
            tF.layer_norm(tinyattn.ones(2, 3, dtype=getattr(tinyattn, dtype)), [3])
    logits = torch.randn(5, requires_grad=True)
    loss = torch.nn.functional.nll_loss(logits, torch.tensor([1]), reduction="none")
    with pytest.raises(RuntimeError, match="size mismatch"):  # PyTorch refuses it, in the backward
        loss.backward()
    with pytest.raises(RuntimeError, match=r"needs a 0-d target \(one class index\), got shape \[1\]: pass t"):
        tF.nll_loss(tinyattn.randn(5, requires_grad=True), tinyattn.tensor([1]), reduction="none")


@pytest.mark.parametrize("entry, drawn", PINNED)
def test_pinned_edges_match_pytorch(torch, entry, drawn):
    check_against_pytorch(torch, entry, drawn)
