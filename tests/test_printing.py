"""Tensor printing must match PyTorch's repr character for character.

The pinned examples need no torch; the property tests compare with `repr(torch.from_numpy(a))`
and are skipped when torch is not installed.
"""

import math
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from tinyattn.printing import (dtype_is_shown, format_tensor, get_printoptions, printoptions,
                               set_printoptions)

INF = math.inf
NAN = math.nan

DTYPES = [np.float32, np.float64, np.int64, np.int32, np.bool_]
FLOAT_DTYPES = [np.float32, np.float64]


def show(values, **suffixes):
    """Our text for `values`, with the dtype suffix decided as tinyattn's Tensor decides it."""
    values = np.asarray(values)
    return format_tensor(values, dtype_name=f"tinyattn.{values.dtype.name}",
                         show_dtype=dtype_is_shown(values.dtype), **suffixes)


@pytest.fixture(autouse=True)
def default_printoptions():
    """Every test starts and ends with PyTorch's default options (ours, and torch's if loaded)."""
    set_printoptions(profile="default")
    yield
    set_printoptions(profile="default")
    if "torch" in sys.modules:
        sys.modules["torch"].set_printoptions(profile="default")


@pytest.fixture(scope="module")
def torch():
    """Real PyTorch, or a skip. Module-scoped: Hypothesis rejects function-scoped fixtures in @given."""
    return pytest.importorskip("torch")


def torch_repr(torch, values, requires_grad=False, grad_fn=False):
    """PyTorch's repr of the same values, with its module name replaced by ours."""
    tensor = torch.from_numpy(values.copy())  # not ascontiguousarray: it makes 0-d 1-d
    if requires_grad or grad_fn:
        tensor = tensor.requires_grad_(True)
    if grad_fn:
        tensor = tensor * 1
    return repr(tensor).replace("torch.", "tinyattn.")


# ---------------------------------------------------------------- strategies

# Values that sit on the decisions the printer makes: zero signs, non-finite values, whole
# numbers, rounding halfway points, and the 1e-4 / 1e8 / ratio-1000 scientific-mode bounds.
SPECIAL_FLOATS = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 2.0, 0.5, 0.15, 0.00015, 1.23455, 9.99995,
                  1e-4, 9.9e-5, 1e8, 1.5e8, 1000.0, 123456.0, -0.2899]

FLOAT_STYLES = [
    st.integers(-1000, 1000).map(float),                                  # int mode: `3.`
    st.floats(-10, 10, allow_nan=False),                                  # plain: `3.1416`
    st.builds(lambda m, e: m * 10.0 ** e, st.floats(-10, 10), st.integers(-12, 12)),  # any scale
    st.floats(1e-8, 1e-3),                                                # tiny: scientific
    st.integers(-10**12, 10**12).map(float),                              # huge whole numbers
]


@st.composite
def arrays(draw, dtypes=DTYPES, shapes=None):
    """A NumPy array of one dtype; floats from one magnitude style, sometimes mixed with specials."""
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    if shapes is None:
        shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)
    shape = draw(shapes)
    if dtype == np.bool_:
        elements = st.booleans()
    elif dtype.kind == "i":
        limits = np.iinfo(dtype)
        elements = st.one_of(st.integers(-10, 10), st.integers(int(limits.min), int(limits.max)))
    else:
        elements = draw(st.sampled_from(FLOAT_STYLES))
        if draw(st.booleans()):
            elements = st.one_of(elements, st.sampled_from(SPECIAL_FLOATS))
    count = math.prod(shape)
    data = draw(st.lists(elements, min_size=count, max_size=count))
    with np.errstate(over="ignore"):  # a huge float64 value may become inf in float32: fine
        return np.array(data, dtype=dtype).reshape(shape)


@st.composite
def large_arrays(draw):
    """More than 1000 elements, so PyTorch summarizes with `...`."""
    shape = draw(st.sampled_from([(1001,), (2000,), (40, 30), (3, 400), (2, 600), (12, 10, 10),
                                  (7, 8, 9, 3), (1, 1, 1100), (1100, 1)]))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        low = max(-10 ** draw(st.integers(1, 12)), int(np.iinfo(dtype).min))
        return rng.integers(low, 10**6, shape, dtype=dtype)
    values = rng.standard_normal(shape) * 10.0 ** draw(st.integers(-6, 9))
    if draw(st.booleans()):
        values = np.round(values)
    return values.astype(dtype)


# ---------------------------------------------------------------- pinned examples (no torch)

@pytest.mark.parametrize("values, expected", [
    (np.array([[0.2961, 0.5166], [0.2517, 0.6886], [0.0740, 0.8665]], np.float32),
     "tensor([[0.2961, 0.5166],\n        [0.2517, 0.6886],\n        [0.0740, 0.8665]])"),
    (np.array(1.8524, np.float32), "tensor(1.8524)"),
    (np.array(3), "tensor(3)"),
    (np.array(-0.0, np.float32), "tensor(-0.)"),
    (np.array([[1, 0, 0], [1, 1, 0]], np.float32), "tensor([[1., 0., 0.],\n        [1., 1., 0.]])"),
    (np.array([[0.2899, -INF, -INF], [0.1, 0.5, -INF], [0.3, 0.2, 0.1]], np.float32),
     "tensor([[0.2899,   -inf,   -inf],\n        [0.1000, 0.5000,   -inf],\n"
     "        [0.3000, 0.2000, 0.1000]])"),
    (np.array([[0, -INF, -INF], [0, 0, -INF], [0, 0, 0]], np.float32),
     "tensor([[0., -inf, -inf],\n        [0., 0., -inf],\n        [0., 0., 0.]])"),
    (np.array([[[[0, 0, 0], [0, 3.2e-5, 0]]], [[[0, 0, 0], [0, 0, 0.14012]]]], np.float32),
     "tensor([[[[0.0000e+00, 0.0000e+00, 0.0000e+00],\n          [0.0000e+00, 3.2000e-05, 0.0000e+00]]],"
     "\n\n\n        [[[0.0000e+00, 0.0000e+00, 0.0000e+00],\n"
     "          [0.0000e+00, 0.0000e+00, 1.4012e-01]]]])"),
    (np.array([[False, True, True], [False, False, True]]),
     "tensor([[False,  True,  True],\n        [False, False,  True]])"),
    (np.arange(24, dtype=np.float32).reshape(2, 3, 4),
     "tensor([[[ 0.,  1.,  2.,  3.],\n         [ 4.,  5.,  6.,  7.],\n         [ 8.,  9., 10., 11.]],\n\n"
     "        [[12., 13., 14., 15.],\n         [16., 17., 18., 19.],\n         [20., 21., 22., 23.]]])"),
    (np.array([-0.0, 1.0, 2.5], np.float32), "tensor([-0.0000, 1.0000, 2.5000])"),
    (np.array([0.15], np.float32), "tensor([0.1500])"),  # float32 0.15 is 0.15000000596...
    (np.array([1e10, 1.0], np.float32), "tensor([1.0000e+10, 1.0000e+00])"),
    (np.array([NAN, 1.0, -INF], np.float32), "tensor([nan, 1., -inf])"),
    (np.array([1.2345678, 100.5], np.float32), "tensor([  1.2346, 100.5000])"),
    (np.array([1.0, 2.0]), "tensor([1., 2.], dtype=tinyattn.float64)"),
    (np.arange(2000), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"),
    (np.zeros((0, 3), np.float32), "tensor([], size=(0, 3))"),
    (np.zeros((0,), np.int64), "tensor([], dtype=tinyattn.int64)"),  # empty: int64 is shown
    (np.zeros((2, 0), np.bool_), "tensor([], size=(2, 0), dtype=tinyattn.bool)"),
])
def test_pinned_examples(values, expected):
    assert show(values) == expected


def test_long_int_row_wraps_like_pytorch():
    lines = show(np.arange(300)).split("\n")
    # Width 3 + ", " fits 14 items in 80 - len("tensor(") columns.
    assert lines[0] == "tensor([  0,   1,   2,   3,   4,   5,   6,   7,   8,   9,  10,  11,  12,  13,"
    assert lines[1] == "         14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  26,  27,"
    assert lines[-1] == "        294, 295, 296, 297, 298, 299])"
    assert len(lines) == 22
    # Two-digit values fit 18 a line.
    assert show(np.arange(100)).split("\n")[0].count(",") == 18


def test_summarized_matrix():
    values = np.tile(np.array([0.5, 0.25], np.float32), (50, 25))
    assert show(values) == (
        "tensor([[0.5000, 0.2500, 0.5000,  ..., 0.2500, 0.5000, 0.2500],\n"
        "        [0.5000, 0.2500, 0.5000,  ..., 0.2500, 0.5000, 0.2500],\n"
        "        [0.5000, 0.2500, 0.5000,  ..., 0.2500, 0.5000, 0.2500],\n"
        "        ...,\n"
        "        [0.5000, 0.2500, 0.5000,  ..., 0.2500, 0.5000, 0.2500],\n"
        "        [0.5000, 0.2500, 0.5000,  ..., 0.2500, 0.5000, 0.2500],\n"
        "        [0.5000, 0.2500, 0.5000,  ..., 0.2500, 0.5000, 0.2500]])")


def test_suffixes_in_pytorch_order():
    values = np.array([1.0, 2.0])
    assert show(values, device="cuda:0", requires_grad=True) == (
        "tensor([1., 2.], device='cuda:0', dtype=tinyattn.float64, requires_grad=True)")
    assert show(values.astype(np.float32), device="cpu", grad_fn="MulBackward0",
                requires_grad=True) == "tensor([1., 2.], grad_fn=<MulBackward0>)"
    assert show(np.array([[1.5, 2.0]], np.float32), grad_fn="MulBackward0") == (
        "tensor([[1.5000, 2.0000]], grad_fn=<MulBackward0>)")


def test_suffix_moves_to_next_line_when_too_long():
    text = show(np.arange(12, dtype=np.float64) + 0.5, grad_fn="AddBackward0")
    assert text == (
        "tensor([ 0.5000,  1.5000,  2.5000,  3.5000,  4.5000,  5.5000,  6.5000,  7.5000,\n"
        "         8.5000,  9.5000, 10.5000, 11.5000], dtype=tinyattn.float64,\n"
        "       grad_fn=<AddBackward0>)")


def test_lines_break_where_pytorch_breaks_them():
    # PyTorch's `dtype=torch.float64` fits on the first line; ours is 3 characters longer but
    # stays there too, so the printout has the textbook's lines (this one is 81 characters).
    values = np.array([0.0, 0.0, 1.0, 2.66016386e-04])
    assert show(values) == (
        "tensor([0.0000e+00, 0.0000e+00, 1.0000e+00, 2.6602e-04], dtype=tinyattn.float64)")


def test_dtype_is_shown():
    assert not dtype_is_shown(np.float32)
    assert not dtype_is_shown(np.dtype("int64"))
    assert not dtype_is_shown(np.bool_)
    assert dtype_is_shown(np.float64)
    assert dtype_is_shown(np.int32)


def test_printoptions_defaults_profiles_and_overrides():
    assert get_printoptions() == dict(precision=4, threshold=1000, edgeitems=3, linewidth=80,
                                      sci_mode=None)
    set_printoptions(profile="short")
    assert get_printoptions() == dict(precision=2, threshold=1000, edgeitems=2, linewidth=80,
                                      sci_mode=None)
    set_printoptions(profile="full", precision=6, sci_mode=True)
    assert get_printoptions() == dict(precision=6, threshold=math.inf, edgeitems=3, linewidth=80,
                                      sci_mode=True)
    set_printoptions(linewidth=100)  # as in PyTorch, leaving out sci_mode resets it
    assert get_printoptions()["sci_mode"] is None
    set_printoptions(profile="default")
    assert get_printoptions() == dict(precision=4, threshold=1000, edgeitems=3, linewidth=80,
                                      sci_mode=None)
    with pytest.raises(ValueError):
        set_printoptions(profile="long")


def test_printoptions_change_the_output():
    values = np.array([1.12345, 2.5], np.float32)
    with printoptions(precision=2):
        assert show(values) == "tensor([1.12, 2.50])"
    assert show(values) == "tensor([1.1235, 2.5000])"
    with printoptions(threshold=5):
        assert show(np.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    with printoptions(sci_mode=True):
        assert show(values) == "tensor([1.1235e+00, 2.5000e+00])"
    assert get_printoptions()["threshold"] == 1000


# ---------------------------------------------------------------- comparisons with PyTorch

@given(values=arrays())
def test_matches_torch(torch, values):
    assert show(values) == torch_repr(torch, values)


@given(values=arrays(dtypes=FLOAT_DTYPES), grad_fn=st.booleans())
def test_matches_torch_with_autograd_suffixes(torch, values, grad_fn):
    expected = torch_repr(torch, values, requires_grad=True, grad_fn=grad_fn)
    if grad_fn:
        assert show(values, grad_fn="MulBackward0") == expected
    else:
        assert show(values, requires_grad=True) == expected


@given(values=arrays(dtypes=FLOAT_DTYPES + [np.int64], shapes=st.tuples(st.integers(20, 120))),
       grad_fn=st.booleans())
def test_matches_torch_long_rows_and_suffix_wrapping(torch, values, grad_fn):
    if values.dtype == np.int64:
        assert show(values) == torch_repr(torch, values)
    else:
        expected = torch_repr(torch, values, grad_fn=grad_fn, requires_grad=True)
        assert show(values, grad_fn="MulBackward0" if grad_fn else None, requires_grad=True) == expected


@given(values=large_arrays())
def test_matches_torch_summarized(torch, values):
    assert show(values) == torch_repr(torch, values)


@given(values=arrays(), precision=st.integers(0, 8), threshold=st.integers(0, 70),
       edgeitems=st.integers(0, 4), linewidth=st.integers(10, 120),
       sci_mode=st.sampled_from([None, True, False]),
       profile=st.sampled_from([None, "default", "short", "full"]))
def test_matches_torch_under_printoptions(torch, values, precision, threshold, edgeitems, linewidth,
                                          sci_mode, profile):
    options = dict(precision=precision, threshold=threshold, edgeitems=edgeitems,
                   linewidth=linewidth, sci_mode=sci_mode, profile=profile)
    try:
        torch.set_printoptions(**options)
        set_printoptions(**options)
        assert show(values) == torch_repr(torch, values)
    finally:
        torch.set_printoptions(profile="default")
        set_printoptions(profile="default")


# --- objects PyTorch prints with their address: a grad_fn and a generator ---


def test_a_grad_fn_prints_as_pytorchs_with_its_address(torch):
    import re

    import tinyattn

    pattern = re.compile(r"<(\w+) object at 0x[0-9a-f]+>")
    x, t = tinyattn.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    for make in (lambda a: a + 1, lambda a: a * a, lambda a: a.sum(), lambda a: a[0], lambda a: a.exp()):
        ours, theirs = repr(make(x).grad_fn), repr(make(t).grad_fn)
        assert pattern.fullmatch(ours) and pattern.fullmatch(theirs), (ours, theirs)
        assert pattern.fullmatch(ours).group(1) == pattern.fullmatch(theirs).group(1)
    y = x * 2
    assert repr(y.grad_fn) == f"<MulBackward0 object at {id(y.grad_fn):#x}>"
    assert repr(y).endswith("grad_fn=<MulBackward0>)")  # a printed tensor shows the name only, as PyTorch's


def test_the_generator_manual_seed_returns_prints_in_pytorchs_form(torch):
    import re

    import tinyattn

    assert re.fullmatch(r"<torch\._C\.Generator object at 0x[0-9a-f]+>", repr(torch.manual_seed(0)))
    generator = tinyattn.manual_seed(0)
    assert repr(generator) == f"<tinyattn.Generator object at {id(generator):#x}>"
    assert isinstance(generator, tinyattn.Generator)
