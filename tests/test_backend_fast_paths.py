"""The NumPy fast paths of tinyattn.backend give what the plain formulas give."""

import math
import pathlib
import re

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from tinyattn import backend


@given(
    vocab=st.integers(1, 20),
    width=st.integers(1, 5),
    data=st.data(),
)
def test_index_add_rows_adds_repeated_ids_like_add_at(vocab, width, data):
    n = data.draw(st.integers(0, 40), label="n")
    ids = data.draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, vocab - 1)), label="ids")
    rows = data.draw(hnp.arrays(np.float32, (n, width), elements=st.floats(-100, 100, width=32)), label="rows")
    start = np.arange(vocab * width, dtype=np.float32).reshape(vocab, width)
    expected = start.copy()
    np.add.at(expected, ids, rows)  # one row at a time; the fast path adds up each run first: other rounding
    np.testing.assert_allclose(backend.index_add_rows(start.copy(), ids, rows), expected, rtol=1e-6, atol=1e-4)


@st.composite
def big_float_arrays(draw):
    """Arrays big enough (>= 1024 elements) to take the fast paths, in float32 or float64."""
    ndim = draw(st.integers(2, 4))
    shape = draw(st.lists(st.integers(1, 12), min_size=ndim, max_size=ndim))
    shape[-1] = draw(st.integers(1024 // max(1, int(np.prod(shape[:-1]))) + 1, 1200))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    seed = draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@given(x=big_float_arrays(), keepdims=st.booleans())
def test_sum_along_the_last_axis_and_leading_axes(x, keepdims):
    tolerance = dict(rtol=1e-4, atol=1e-3) if x.dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    last = (x.ndim - 1,)
    for axes in (last, (0,), tuple(range(x.ndim - 1)), (0, x.ndim - 1)):
        result = backend.sum_along(x, axes, keepdims)
        expected = np.sum(x, axis=axes, keepdims=keepdims)
        assert result.shape == expected.shape and result.dtype == expected.dtype
        np.testing.assert_allclose(result, expected, **tolerance)
    # a non-contiguous view takes NumPy's own sum, with the same result
    view = x[..., ::2]
    np.testing.assert_allclose(backend.sum_along(view, last, keepdims), np.sum(view, axis=last, keepdims=keepdims), **tolerance)


def test_sum_along_keeps_integers_and_small_arrays_exact():
    ints = np.arange(4096, dtype=np.int64).reshape(64, 64)
    assert backend.sum_along(ints, (1,)).dtype == np.int64
    np.testing.assert_array_equal(backend.sum_along(ints, (1,)), ints.sum(axis=1))
    small = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(backend.sum_along(small, (0,), True), small.sum(axis=0, keepdims=True))


def test_max_for_shift_is_the_row_max_and_softmax_still_spreads_nan():
    x = np.random.default_rng(0).standard_normal((50, 64)).astype(np.float32)
    x[3, 5] = np.nan
    x[7, :] = -np.inf
    x[9, 2] = np.inf
    shift = backend.max_for_shift(x, 1)
    expected = np.max(np.where(np.isnan(x), -np.inf, x), axis=1, keepdims=True)
    np.testing.assert_array_equal(shift, expected)  # NaNs skipped, -inf and inf rows kept
    import tinyattn

    with np.errstate(invalid="ignore"):  # inf - inf in row 9
        weights = tinyattn.softmax(tinyattn.tensor(x), dim=1).numpy()
    assert np.isnan(weights[3]).all()  # a NaN anywhere in a row makes the whole row NaN, as in PyTorch
    assert np.isfinite(weights[[0, 1, 2, 4]]).all()


def test_masked_fill_copies_and_fills_like_where():
    x = np.random.default_rng(1).standard_normal((3, 4, 5)).astype(np.float32)
    mask = np.triu(np.ones((4, 5), dtype=bool), 1)
    result = backend.masked_fill(x, mask, -np.inf)
    np.testing.assert_array_equal(result, np.where(mask, -np.inf, x))
    assert result.dtype == x.dtype and not np.shares_memory(result, x)
    grad = np.full_like(x, np.inf)  # a filled place gets exactly 0, even next to an infinite gradient
    np.testing.assert_array_equal(backend.masked_fill(grad, mask, 0), np.where(mask, 0, grad))


@given(batch=st.lists(st.integers(1, 3), min_size=1, max_size=2), m=st.integers(1, 9), k=st.integers(1, 70),
       n=st.integers(1, 70), transposed=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_matmul_with_a_transposed_right_operand_is_the_plain_product(batch, m, k, n, transposed, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((*batch, m, k)).astype(np.float32)
    b = rng.standard_normal((*batch, n, k)).astype(np.float32).swapaxes(-1, -2) if transposed else \
        rng.standard_normal((*batch, k, n)).astype(np.float32)
    np.testing.assert_allclose(backend.matmul(a, b), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(backend.matmul(a, b[:1]), a @ b[:1], rtol=1e-5, atol=1e-5)  # broadcast batch


def test_exp_in_place_writes_into_numpy_arrays_and_copies_elsewhere(xp_backend):
    xp = backend.namespace_for("cpu")
    x = xp.asarray([[0.0, -np.inf, 1.5], [-2.0, 3.0, 40.0]], **backend.creation_kwargs(xp))
    expected = np.exp(backend.to_host(x))
    y = backend.exp_in_place(x)
    np.testing.assert_array_equal(backend.to_host(y), expected)
    if xp_backend == "numpy":
        assert y is x  # the same memory: nothing new allocated


@given(seed=st.integers(0, 2**32 - 1), dtype=st.sampled_from(["float32", "float64"]))
def test_erf_matches_pythons_to_the_dtypes_precision(xp_backend, seed, dtype):
    special = [0.0, -0.0, 1e-30, -1e-8, 1.999999, 2.0, -2.0, 2.000001, 5.999, 6.0, 7.0, -100.0, np.inf, -np.inf]
    values = np.concatenate([special, np.random.default_rng(seed).standard_normal(300) * 3]).astype(dtype)
    x = backend.from_host(values, "cpu")
    y = backend.to_host(backend.erf(x))
    assert y.dtype == values.dtype
    exact = np.array([math.erf(v) for v in values.astype(np.float64)])
    # float64: within about 1e-15 (20 ulps at most near 1); float32: within 4 ulps of the exact value
    ulps = np.abs(y.astype(np.float64) - exact) / np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)
    assert ulps.max() <= (32 if dtype == "float64" else 4)
    assert np.signbit(y[1]) and not np.signbit(y[0])  # erf(-0) = -0
    assert np.isnan(backend.to_host(backend.erf(backend.from_host(np.array([np.nan], dtype), "cpu"))))[0]


def test_ops_transpose_raw_arrays_through_the_backend():
    """CuPy arrays have no `.mT`: code that works on raw arrays must call backend.matrix_transpose."""
    package = pathlib.Path(backend.__file__).parent.parent  # tinyattn/ (backend is a package in it)
    offenders = []
    for path in package.rglob("*.py"):
        if path.relative_to(package).as_posix() in ("tensor/shapes.py", "backend/__init__.py"):
            continue  # (Tensor.mT is a tensor op; backend defines the helper)
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\.mT\b", line.split("#")[0]):
                offenders.append(f"{path.relative_to(package)}:{number}: {line.strip()}")
    assert offenders == []


def test_matrix_transpose_is_a_view_of_the_last_two_axes(xp_backend):
    xp = backend.namespace_for("cpu")
    x = xp.reshape(xp.arange(24, dtype=xp.float32, **backend.creation_kwargs(xp)), (2, 3, 4))
    np.testing.assert_array_equal(backend.to_host(backend.matrix_transpose(x)),
                                  np.arange(24, dtype=np.float32).reshape(2, 3, 4).swapaxes(-1, -2))


@pytest.mark.parametrize("seed", range(4))
def test_the_losses_helpers_give_the_plain_formulas(xp_backend, seed):
    # pick_columns, one_hot and sum_all take NumPy's own calls on NumPy arrays and the standard's elsewhere
    rng = np.random.default_rng(seed)
    rows, classes = rng.integers(1, 40), rng.integers(1, 9)
    values = rng.standard_normal((rows, classes)).astype(np.float32)
    labels = rng.integers(0, classes, rows)
    x, ids = backend.from_host(values, "cpu"), backend.from_host(labels, "cpu")
    np.testing.assert_array_equal(backend.to_host(backend.pick_columns(x, ids)), values[np.arange(rows), labels])
    hot = backend.to_host(backend.one_hot(ids, classes, x.dtype))
    assert hot.dtype == np.float32 and hot.shape == (rows, classes)
    np.testing.assert_array_equal(hot, np.eye(classes, dtype=np.float32)[labels])
    assert backend.to_host(backend.sum_all(x)).tobytes() == np.sum(values).tobytes()


def test_all_in_range_sees_every_id_out_of_range(xp_backend):
    for values, count, expected in (([0, 4, 2], 5, True), ([0, 5], 5, False), ([-1, 2], 5, False),
                                    ([], 5, True), ([3], 0, False), ([-2**63], 5, False)):
        for dtype in ("int64", "int32"):
            if dtype == "int32" and values == [-2**63]:
                continue
            ids = backend.from_host(np.array(values, dtype=dtype), "cpu")
            assert backend.all_in_range(ids, count) is expected, (values, count, dtype)


def test_numpy_class_rows_takes_only_the_plain_case():
    logits = np.zeros((3, 5), dtype=np.float32)
    assert backend.numpy_class_rows(logits, np.array([0, 4, 2]))
    refused = [
        (logits, np.array([0, 5, 2])),  # a class out of range
        (logits, np.array([0, -1, 2])),  # a negative one (read as unsigned: above any count)
        (logits, np.array([0, 4, 2], dtype=np.int32)),  # not int64
        (logits, np.array([0, 4])),  # not one target per row
        (logits.astype(np.int64), np.array([0, 4, 2])),  # integer logits
        (np.zeros((3, 0), dtype=np.float32), np.array([0, 0, 0])),  # no classes
        (np.zeros((0, 5), dtype=np.float32), np.zeros(0, dtype=np.int64)),  # no rows
        (np.zeros((3, 5, 2), dtype=np.float32), np.array([0, 4, 2])),  # not a matrix
        (logits.tolist(), np.array([0, 4, 2])),  # not NumPy arrays
    ]
    for logits_given, targets in refused:
        assert not backend.numpy_class_rows(logits_given, targets), (logits_given, targets)
