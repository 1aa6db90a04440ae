"""histogram, histc and bincount against PyTorch, and index_fill: values, gradients, errors."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn
from tinyattn.errors import ShapeError

from test_op_gradients import arrays, check, leaf, property_test, shapes


def same(ours, theirs, exact=True):
    assert str(ours.dtype).rpartition(".")[2] == str(theirs.dtype).rpartition(".")[2]
    assert tuple(ours.shape) == tuple(theirs.shape)
    if exact:
        np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
    else:
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-6, atol=1e-7)


DATA = [1.0, 2.0, 1.0, 2.5, 4.0, -1.0, 0.25, 3.999]
HISTOGRAMS = [
    "L.histogram(X, 4)", "L.histogram(X, 1)", "L.histogram(X, 7, range=(0.0, 3.0))", "L.histogram(X, 3, density=True)",
    "L.histogram(X, L.tensor([0.0, 1.0, 3.0]), weight=L.arange(8.0))", "L.histogram(X, L.tensor([0.0, 1.0, 3.0]), "
    "density=True)", "L.histogram(X.double(), 5)", "L.histogram(L.tensor([1.0, 1.0]), 2)", "L.histogram(L.tensor([]), 2)",
    "L.histogram(X.reshape(2, 4), 2)", "X.histogram(2, weight=X * 2)", "L.histogram(X, 2, range=(1, 1))",
    "L.histogram(X, L.tensor([1.0, 0.0]))", "L.histogram(L.tensor([float('nan'), 1.0]), 2, range=(0.0, 2.0))",
    "L.histogram(X, bins=3, range=(-1.0, 4.0), density=True, weight=X.abs())",
    # PyTorch's defaults: 100 bins over the data's range, counts (not densities)
    "L.histogram(X)", "L.histogram(X, density=True)", "X.histogram()", "L.histogram(X, range=(0.0, 3.0))",
    "X.histogram(density=True, weight=X.abs())", "L.histogram(L.tensor([]))", "L.histogram(X.double(), density=True)",
    "L.histogram(L.tensor([2.0, 2.0]), density=True)",
]


@pytest.mark.parametrize("call", HISTOGRAMS)
def test_histogram_is_pytorchs(torch, call):
    ours, theirs = (eval(call, {"L": L, "X": L.tensor(DATA)}) for L in (tinyattn, torch))
    assert type(ours).__name__ == "histogram" and ours._fields == ("hist", "bin_edges")
    same(ours.hist, theirs.hist, exact="density" not in call)
    same(ours.bin_edges, theirs.bin_edges)


HISTCS = ["L.histc(X, 4)", "L.histc(X)", "L.histc(X, 4, 0, 3)", "L.histc(X, bins=3, min=1, max=1)",
          "L.histc(X.double(), 2)", "L.histc(L.tensor([]), 2)", "L.histc(L.tensor([1.0, 1.0]), 2)", "X.histc(3)",
          "L.histc(X.reshape(2, 4), 3)", "L.histc(X, 5, min=-0.5, max=2)", "X.histc()", "L.histc(X, min=0, max=3)",
          "X.histc(max=2)", "L.histc(L.tensor([2.0, 2.0]))"]


@pytest.mark.parametrize("call", HISTCS)
def test_histc_is_pytorchs(torch, call):
    same(*(eval(call, {"L": L, "X": L.tensor(DATA)}) for L in (tinyattn, torch)))


@given(values=hnp.arrays(np.float32, st.integers(0, 40), elements=st.floats(-10, 10, width=32)),
       bins=st.integers(1, 12))
def test_histograms_of_random_data_are_pytorchs(torch, values, bins):
    for name in ("histogram", "histc"):
        ours = getattr(tinyattn, name)(tinyattn.tensor(values), bins)
        theirs = getattr(torch, name)(torch.tensor(values), bins)
        same(ours[0] if name == "histogram" else ours, theirs[0] if name == "histogram" else theirs)


BINCOUNTS = ["L.bincount(L.tensor([0, 1, 1, 3]))", "L.bincount(L.tensor([0, 1, 1, 3]), minlength=6)",
             "L.bincount(L.tensor([0, 1, 1, 3]), weights=L.tensor([0.5, 1, 1, 2]))",
             "L.bincount(L.tensor([0, 1, 1, 3]), weights=L.tensor([0.5, 1, 1, 2]).double())",
             "L.bincount(L.tensor([0, 1, 1, 3]), weights=L.tensor([1, 1, 1, 2]))",
             "L.bincount(L.tensor([], dtype=L.long))", "L.bincount(L.tensor([], dtype=L.long), minlength=2)",
             "L.bincount(L.tensor([1, 2], dtype=L.int32))", "L.tensor([1, 2]).bincount()",
             "L.bincount(L.tensor([1, 2], dtype=L.uint8))", "L.bincount(L.tensor([1, 2]), L.tensor([True, False]))"]


@pytest.mark.parametrize("call", BINCOUNTS)
def test_bincount_is_pytorchs(torch, call):
    same(*(eval(call, {"L": L}) for L in (tinyattn, torch)))


@pytest.mark.parametrize("call, error, message", [
    ("L.histogram(X.long(), 2)", TypeError, "counts floating point values"),
    ("L.histogram(X, 0)", ValueError, "bins must be > 0"),
    ("L.histogram(X, 2, range=(3.0, 1.0))", ValueError, "min should not exceed max"),
    ("L.histogram(X, 2, weight=L.ones(5))", ShapeError, "weight must be a tinyattn.float32 tensor of the input's shape"),
    ("L.histogram(L.tensor([float('nan'), 1.0]), 2)", ValueError, "is not finite"),
    ("L.histogram(L.tensor([float('inf'), 1.0]), 2)", ValueError, "is not finite"),
    ("L.histogram(X, L.tensor([0.0, 1]).double())", TypeError, "bin edges must have the input's dtype"),
    ("L.histogram(X, L.tensor([[0.0, 1]]))", ShapeError, "one dimension"),
    ("L.histc(X.long(), 2)", TypeError, "counts floating point values"),
    ("L.histc(X, 0)", ValueError, "bins must be > 0"),
    ("L.histc(X, 2, 3, 1)", ValueError, "max must be larger than min"),
    ("L.bincount(L.tensor([-1, 2]))", ValueError, "non-negative"),
    ("L.bincount(L.tensor([1.0, 2]))", TypeError, "bincount counts integers"),
    ("L.bincount(L.tensor([True, False]))", TypeError, "bincount counts integers"),
    ("L.bincount(L.tensor([[1, 2]]))", ShapeError, "1-d"),
    ("L.bincount(L.tensor([1, 2]), weights=L.ones(3))", ShapeError, "same length as input"),
    ("L.bincount(L.tensor([1, 2]), minlength=-1)", ValueError, "minlength should be >= 0"),
])
def test_bad_input_is_refused_where_pytorch_refuses_it(torch, call, error, message):
    with pytest.raises(error, match=message):
        eval(call, {"L": tinyattn, "X": tinyattn.tensor(DATA)})
    with pytest.raises(Exception):
        eval(call.replace("L.long", "torch.long"), {"L": torch, "X": torch.tensor(DATA)})


def test_counts_record_no_graph():
    x = tinyattn.tensor(DATA, requires_grad=True)
    assert not tinyattn.histogram(x, 3).hist.requires_grad and not tinyattn.histc(x, 3).requires_grad
    assert not tinyattn.bincount(tinyattn.tensor([0, 1] * 4), weights=x).requires_grad


def test_counting_on_the_strict_array_backend(xp_backend):
    x = tinyattn.tensor(DATA)
    assert tinyattn.histogram(x, 4).hist.tolist() == [1.0, 3.0, 2.0, 2.0]  # edges -1, 0.25, 1.5, 2.75, 4
    assert tinyattn.histc(x, 4).tolist() == [1.0, 3.0, 2.0, 2.0]
    assert tinyattn.bincount(tinyattn.tensor([0, 1, 1, 3])).tolist() == [1, 2, 0, 1]


# --- index_fill ---

INDEX_FILLS = [
    "X.index_fill(1, L.tensor([0, 2]), -1.0)", "X.index_fill(0, L.tensor([1, 1]), L.tensor(5.0))",
    "X.index_fill(1, L.tensor([-1]), 7)", "L.index_fill(X, 1, L.tensor(0), 2.5)", "X.long().index_fill(1, L.tensor([0]), 2.5)",
    "X.index_fill(1, L.tensor([0]), True)", "L.tensor(3.0).index_fill(0, L.tensor([0]), 1)",
    "X.index_fill(1, L.tensor([], dtype=L.long), 1)", "X.index_fill(-1, L.tensor([-3]), 9)",
    "X.long().index_fill(1, L.tensor([0]), L.tensor(2.5))", "X.index_fill(dim=1, index=L.tensor([0]), value=3)",
    "X.clone().index_fill_(1, L.tensor([1]), 4)", "X.int().index_fill_(0, L.tensor([0]), -2)",
]


@pytest.mark.parametrize("call", INDEX_FILLS)
def test_index_fill_is_pytorchs(torch, call):
    same(*(eval(call, {"L": L, "X": L.arange(6.0).reshape(2, 3)}) for L in (tinyattn, torch)))


def test_index_fill_gradients_are_pytorchs(torch):
    grads = []
    for L in (tinyattn, torch):
        x = L.arange(6.0).reshape(2, 3).requires_grad_()
        v = L.tensor(2.0, requires_grad=True)
        (x.index_fill(1, L.tensor([0, 0, 2]), v) * L.arange(6.0).reshape(2, 3)).sum().backward()
        grads.append((x.grad.numpy().tolist(), v.grad.item()))
    assert grads[0] == grads[1] == ([[0.0, 1.0, 0.0], [0.0, 4.0, 0.0]], 10.0)


@pytest.mark.parametrize("call, error, message", [
    ("X.index_fill(1, L.tensor([0], dtype=L.int32), 1)", IndexError, "Expected dtype int64 for index"),
    ("X.index_fill(1, L.tensor([0.0]), 1)", IndexError, "Expected dtype int64 for index"),
    ("X.index_fill(1, L.tensor([[0]]), 1)", ShapeError, "vector or a single number"),
    ("X.index_fill(1, L.tensor([3]), 1)", IndexError, "index 3 is out of range for dim 1 with size 3"),
    ("X.index_fill(1, L.tensor([-4]), 1)", IndexError, "index -4 is out of range"),
    ("X.index_fill(2, L.tensor([0]), 1)", IndexError, "out of range"),
    ("X.index_fill(1, L.tensor([0]), L.tensor([1.0]))", ShapeError, "0-dimensional value tensor"),
    ("X.clone().index_fill_(1, L.tensor([5]), 1)", IndexError, "out of range"),
])
def test_index_fill_refuses_what_pytorch_refuses(torch, call, error, message):
    with pytest.raises(error, match=message):
        eval(call, {"L": tinyattn, "X": tinyattn.arange(6.0).reshape(2, 3)})
    with pytest.raises(Exception):
        eval(call, {"L": torch, "X": torch.arange(6.0).reshape(2, 3)})


@property_test
@given(data=st.data())
def test_index_fill_gradient(xp_backend, data):
    x = data.draw(arrays(shapes()))
    dim = data.draw(st.integers(-x.ndim, x.ndim - 1))
    size = x.shape[dim]
    index = data.draw(st.lists(st.integers(-size, size - 1), max_size=4))
    value = leaf(data.draw(st.floats(-3, 3)))
    positions = tinyattn.tensor(np.asarray(index, dtype=np.int64))
    check(lambda x, v: x.index_fill(dim, positions, v), leaf(x), value)
    check(lambda x: x.index_fill(dim, positions, 0.5), leaf(x))
    check(lambda x: x.clone().index_fill_(dim, positions, 0.5) * x, leaf(x))


# --- narrow and the deprecated range (rarely used names of the corpus) ---

NARROWS = ["X.narrow(1, 1, 2)", "X.narrow(0, -2, 2)", "L.narrow(X, 1, L.tensor(1), 2)", "X.narrow(1, 4, 0)",
           "X.narrow(dim=1, start=0, length=1)", "X.narrow(-1, 3, 1)"]


@pytest.mark.parametrize("call", NARROWS)
def test_narrow_is_pytorchs(torch, call):
    same(*(eval(call, {"L": L, "X": L.arange(12.0).reshape(3, 4)}) for L in (tinyattn, torch)))


def test_narrow_is_a_view_and_differentiable(torch):
    x = tinyattn.arange(12.0).reshape(3, 4)
    x.narrow(1, 1, 2)[0, 0] = 100.0
    assert x[0, 1].item() == 100.0
    check(lambda x: x.narrow(1, 1, 2) * 2, leaf(np.arange(12.0).reshape(3, 4)))


@pytest.mark.parametrize("call, error, message", [
    ("X.narrow(1, 3, 2)", IndexError, "exceeds dimension size"),
    ("X.narrow(1, 5, 0)", IndexError, "start 5 is out of range"),
    ("X.narrow(1, -5, 1)", IndexError, "start -5 is out of range"),
    ("X.narrow(1, 1, -1)", ValueError, "length must be non-negative"),
    ("L.tensor(3.0).narrow(0, 0, 1)", ShapeError, "0-dim"),
    ("X.narrow(1, 1.5, 1)", TypeError, "start must be an int"),
])
def test_narrow_refuses_what_pytorch_refuses(torch, call, error, message):
    with pytest.raises(error, match=message):
        eval(call, {"L": tinyattn, "X": tinyattn.arange(12.0).reshape(3, 4)})
    with pytest.raises(Exception):
        eval(call, {"L": torch, "X": torch.arange(12.0).reshape(3, 4)})


@pytest.mark.parametrize("args", ["(1, 4)", "(0, 1, 0.25)", "(1, 4, 1, L.long)", "(0, 1, 0.3)", "(4, 1, -1)",
                                  "(0.0, 0.9, 0.1)", "(-3, 5, 2, L.int32)", "(0, 1, 0.1, L.float64)"])
def test_range_is_pytorchs_with_its_warning(torch, args):
    results = []
    for L in (tinyattn, torch):
        *bounds, = eval(args, {"L": L})
        dtype = bounds.pop() if not isinstance(bounds[-1], (int, float)) else None
        with pytest.warns(UserWarning, match="range is deprecated"):
            results.append(L.range(*bounds, dtype=dtype))
    same(*results)


@pytest.mark.parametrize("args, message", [((4, 1), "inconsistent with step sign"), ((1, 4, 0), "step must be nonzero"),
                                           ((0, float("inf")), "bounds must be finite")])
def test_range_refuses_what_pytorch_refuses(torch, args, message):
    with pytest.warns(UserWarning), pytest.raises(ValueError, match=message):
        tinyattn.range(*args)
    with pytest.warns(UserWarning), pytest.raises(Exception):
        torch.range(*args)
