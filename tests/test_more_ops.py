"""The wider op set (sin ... erf, rounding, prod, cumprod, amax, norms, sort, index_select, scatter, pad,
the extra activations ...): gradients, forward values, PyTorch parity, edge cases and errors.

- Gradients against finite differences in float64, inputs drawn by Hypothesis, on both backends
  (the `xp_backend` fixture), with tests/test_op_gradients.py's helpers and conventions: inputs off
  the kinks (sign, rounding, leaky_relu at 0, max ties ...), gradient shapes checked.
- Forward values against NumPy in float32 and float64, on both backends.
- Parity with PyTorch: the same inputs give the same forward values and gradients (float32 and
  float64); the edge cases PyTorch defines (products with zeros, ties of amax, the norm of zero, NaN
  in sort, round half to even) give PyTorch's numbers; the top-p and RoPE code of the usual tutorials
  runs unchanged and prints PyTorch's numbers.

einsum has its own file, tests/test_einsum.py.
"""

import math
import zlib

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp
from test_op_gradients import (  # the property helpers of the gradient checks
    ANY, AWAY_FROM_ZERO, NOT_SMALL, POSITIVE, arrays, check, floats, ids, leaf, mask, property_test, shapes,
    well_separated,
)

import tinyattn
from tinyattn import backend, gradcheck
from tinyattn.errors import ShapeError
from tinyattn.nn import functional as F


def host(t):
    return backend.to_host(t.detach().array)


def away_from_integers(values, gap=1e-3):
    """Off the jumps of floor, ceil, trunc and round (integers, and halves for round)."""
    doubled = np.asarray(values) * 2
    return bool(np.all(np.abs(doubled - np.round(doubled)) > gap))


# ---------------------------------------------------------------------------------------------
# gradients: elementwise


UNARY = {
    # name: (fn, elements)
    "sin": (lambda x: x.sin(), ANY),
    "cos": (lambda x: tinyattn.cos(x), ANY),
    "rsqrt op": (lambda x: tinyattn.rsqrt(x), POSITIVE),
    "reciprocal": (lambda x: x.reciprocal(), NOT_SMALL),
    "log1p": (lambda x: x.log1p(), floats(-0.9, 3.0)),
    "expm1": (lambda x: tinyattn.expm1(x), ANY),
    "log2": (lambda x: x.log2(), POSITIVE),
    "log10": (lambda x: tinyattn.log10(x), POSITIVE),
    "exp2": (lambda x: x.exp2(), ANY),
    "erf": (lambda x: tinyattn.erf(x), ANY),
    "square": (lambda x: tinyattn.square(x), ANY),
    "neg": (lambda x: x.neg(), ANY),
    "negative": (lambda x: tinyattn.negative(x), ANY),
    "pow function": (lambda x: tinyattn.pow(x, 3), ANY),
    "pow function, number base": (lambda x: tinyattn.pow(2.0, x), ANY),
    "pow function, tensor exponent": (lambda x: tinyattn.pow(x.abs() + 0.5, x), ANY),
    "sign (zero gradient)": (lambda x: x.sign() * x, AWAY_FROM_ZERO),
    "floor": (lambda x: x.floor() + x, ANY),
    "ceil": (lambda x: tinyattn.ceil(x) * x, ANY),
    "round": (lambda x: x.round() * x, ANY),
    "round decimals": (lambda x: tinyattn.round(x, decimals=1) + x, ANY),
    "trunc": (lambda x: x.trunc() - x, ANY),
    "clamp_min": (lambda x: x.clamp_min(0.5), floats().filter(lambda v: abs(v - 0.5) > 1e-3)),
    "silu": (lambda x: F.silu(x), ANY),
    "softplus": (lambda x: F.softplus(x), ANY),
    "softplus beta threshold": (lambda x: F.softplus(x, beta=2.0, threshold=3.0),
                                floats().filter(lambda v: abs(2 * v - 3) > 1e-3)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), AWAY_FROM_ZERO),
    "elu": (lambda x: F.elu(x, alpha=0.7), AWAY_FROM_ZERO),
    "F.tanh": (lambda x: F.tanh(x), ANY),
    "F.sigmoid": (lambda x: F.sigmoid(x), ANY),
    "prod": (lambda x: x.prod(), ANY),
    "norm": (lambda x: x.norm(), AWAY_FROM_ZERO),  # |x| has a kink at 0 for a single element
    "amax": (lambda x: tinyattn.amax(x), ANY),  # distinct values: see test_unary_gradient
    "amin": (lambda x: x.amin(), ANY),
    "outer": (lambda x: tinyattn.outer(x.flatten(), x.flatten().exp()), ANY),
    "flip": (lambda x: x.flip(0), ANY),
    "fliplr flipud": (lambda x: x.reshape(1, -1).fliplr().flipud(), ANY),
    "roll flattened": (lambda x: x.roll(2), ANY),
}
NEEDS_DISTINCT = {"amax", "amin"}
STEPS = {"floor", "ceil", "round", "round decimals", "trunc"}


@pytest.mark.parametrize("name", sorted(UNARY))
@property_test
@given(data=st.data())
def test_unary_gradient(xp_backend, name, data):
    fn, elements = UNARY[name]
    values = data.draw(arrays(shapes(), elements, unique=name in NEEDS_DISTINCT), label="x")
    if name in NEEDS_DISTINCT:
        assume(well_separated(values))
    if name in STEPS:  # off the jumps (for decimals=1, of 10 x)
        assume(away_from_integers(values * (10 if "decimals" in name else 1)))
    check(fn, leaf(values))


def test_steps_have_a_zero_gradient(xp_backend):
    x = tinyattn.tensor([-1.5, -0.2, 0.0, 0.7, 2.5], dtype=tinyattn.float64, requires_grad=True)
    for fn in (tinyattn.sign, tinyattn.floor, tinyattn.ceil, tinyattn.round, tinyattn.trunc):
        x.grad = None
        y = fn(x)
        assert y.requires_grad
        y.sum().backward()
        assert host(x.grad).tolist() == [0.0] * 5


# ---------------------------------------------------------------------------------------------
# gradients: reductions along dims


def one_dim(ndim):
    return st.integers(-ndim, ndim - 1)


def some_dims(ndim):
    """None, one dim or a tuple of distinct dims (amax, amin and norms take several)."""
    return st.one_of(st.none(), one_dim(ndim),
                     st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(tuple))


WITH_ZEROS = st.one_of(st.just(0.0), ANY)  # products are multilinear: zeros are no kink
# cumprod's gradient divides by x where x has no zero (as PyTorch's does): keep nonzeros off underflow
ZEROS_OR_NOT_TINY = st.one_of(st.just(0.0), AWAY_FROM_ZERO)


@property_test
@given(data=st.data())
def test_prod_with_zeros(xp_backend, data):
    values = data.draw(arrays(shapes(), WITH_ZEROS), label="x")
    dim = data.draw(st.one_of(st.none(), one_dim(values.ndim)), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    check(lambda x: x.prod(dim, keepdim=keepdim) if dim is not None else x.prod(), leaf(values))


@property_test
@given(data=st.data())
def test_cumprod_with_zeros(xp_backend, data):
    values = data.draw(arrays(shapes(min_dims=0), ZEROS_OR_NOT_TINY), label="x")
    dim = data.draw(st.integers(-max(values.ndim, 1), max(values.ndim, 1) - 1), label="dim")
    check(lambda x: x.cumprod(dim), leaf(values))


@pytest.mark.parametrize("name", ["amax", "amin"])
@property_test
@given(data=st.data())
def test_amax_amin_over_dims(xp_backend, name, data):
    values = data.draw(arrays(shapes(), unique=True), label="x")
    assume(well_separated(values))
    dim = data.draw(some_dims(values.ndim), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    check(lambda x: getattr(x, name)(() if dim is None else dim, keepdim=keepdim), leaf(values))


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, math.inf, -math.inf, 0])
@property_test
@given(data=st.data())
def test_vector_norm(xp_backend, ord, data):
    # off the kinks: |x| at 0 (and a norm at the zero vector); ties of the largest |x| for inf
    values = data.draw(arrays(shapes(), AWAY_FROM_ZERO, unique=ord in (math.inf, -math.inf)), label="x")
    if ord in (math.inf, -math.inf):
        assume(well_separated(np.abs(values)))
    dim = data.draw(some_dims(values.ndim), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    check(lambda x: tinyattn.linalg.vector_norm(x, ord, dim, keepdim), leaf(values))


@property_test
@given(data=st.data())
def test_normalize(xp_backend, data):
    values = data.draw(arrays(shapes()), label="x")
    dim = data.draw(one_dim(values.ndim), label="dim")
    assume(np.all(np.linalg.norm(values, axis=dim) > 0.1))  # off the eps clamp
    check(lambda x: F.normalize(x, dim=dim), leaf(values))


# ---------------------------------------------------------------------------------------------
# gradients: sorting, selecting, scattering, padding


@property_test
@given(data=st.data())
def test_sort(xp_backend, data):
    values = data.draw(arrays(shapes(), unique=True), label="x")
    assume(well_separated(values))
    dim = data.draw(one_dim(values.ndim), label="dim")
    descending = data.draw(st.booleans(), label="descending")
    check(lambda x: tinyattn.sort(x, dim, descending=descending), leaf(values))


@property_test
@given(data=st.data())
def test_index_select_with_repeats(xp_backend, data):
    values = data.draw(arrays(shapes()), label="x")
    dim = data.draw(one_dim(values.ndim), label="dim")
    n = values.shape[dim]
    index = data.draw(st.lists(st.integers(0, n - 1), min_size=0, max_size=4), label="index")
    check(lambda x: x.index_select(dim, ids(index)), leaf(values))


@property_test
@given(data=st.data())
def test_masked_select_broadcast(xp_backend, data):
    x_shape, m_shape = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
                                 label="shapes").input_shapes
    chosen = data.draw(hnp.arrays(bool, m_shape), label="mask")
    check(lambda x: x.masked_select(mask(chosen)), leaf(data.draw(arrays(x_shape), label="x")))


@property_test
@given(data=st.data())
def test_repeat_interleave(xp_backend, data):
    values = data.draw(arrays(shapes()), label="x")
    dim = data.draw(st.one_of(st.none(), one_dim(values.ndim)), label="dim")
    n = values.size if dim is None else values.shape[dim]
    if data.draw(st.booleans(), label="per element"):
        repeats = ids(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n), label="repeats"))
    else:
        repeats = data.draw(st.integers(0, 3), label="repeats")
    check(lambda x: x.repeat_interleave(repeats, dim=dim), leaf(values))


@property_test
@given(data=st.data())
def test_roll_and_flip(xp_backend, data):
    values = data.draw(arrays(shapes()), label="x")
    dims = tuple(data.draw(st.lists(st.integers(0, values.ndim - 1), min_size=1, max_size=values.ndim, unique=True),
                           label="dims"))
    shifts = tuple(data.draw(st.lists(st.integers(-4, 4), min_size=len(dims), max_size=len(dims)), label="shifts"))
    check(lambda x: x.roll(shifts, dims) * x.flip(dims).exp(), leaf(values))


@st.composite
def scatter_case(draw, unique):
    """(x shape, dim, index, src shape): an index at most x's size (and src's) in the other dims."""
    shape = draw(shapes(), label="x shape")
    dim = draw(st.integers(0, len(shape) - 1), label="dim")
    index_shape = tuple(draw(st.integers(1, n)) for n in shape)
    src_shape = tuple(n + draw(st.integers(0, 1)) for n in index_shape)  # src may be larger than the index
    positions = st.integers(0, shape[dim] - 1)
    if unique:  # each place written once: which duplicate wins is unspecified, as in PyTorch
        count = index_shape[dim]
        assume(count <= shape[dim])
        rows = [draw(st.permutations(range(shape[dim])))[:count] for _ in range(math.prod(index_shape) // count)]
        index = np.moveaxis(np.array(rows).reshape(index_shape[:dim] + index_shape[dim + 1:] + (count,)), -1, dim)
    else:
        index = draw(hnp.arrays(np.int64, index_shape, elements=positions), label="index")
    return shape, dim, index, src_shape


@property_test
@given(data=st.data())
def test_scatter(xp_backend, data):
    shape, dim, index, src_shape = data.draw(scatter_case(unique=True))
    x, src = leaf(data.draw(arrays(shape))), leaf(data.draw(arrays(src_shape)))
    check(lambda x, src: x.scatter(dim, ids(index), src), x, src)
    check(lambda x: tinyattn.scatter(x, dim, ids(index), 0.5), x)
    check(lambda x, src: x.clone().scatter_(dim, ids(index), src) * x, x, src)


@property_test
@given(data=st.data())
def test_scatter_add_with_repeats(xp_backend, data):
    shape, dim, index, src_shape = data.draw(scatter_case(unique=False))
    x, src = leaf(data.draw(arrays(shape))), leaf(data.draw(arrays(src_shape)))
    check(lambda x, src: tinyattn.scatter_add(x, dim, ids(index), src), x, src)
    check(lambda x, src: (x * 2).scatter_add_(dim, ids(index), src), x, src)


@property_test
@given(data=st.data())
def test_matrix_products_with_scales(xp_backend, data):
    n, k, m, b = (data.draw(st.integers(1, 3), label=s) for s in "nkmb")
    beta = data.draw(st.sampled_from([1, 0.5, 0]), label="beta")
    alpha = data.draw(st.sampled_from([1, -2.0]), label="alpha")
    bias_shape = data.draw(st.sampled_from([(n, m), (m,), (1, m), ()]), label="input shape")
    check(lambda c, a, w: tinyattn.addmm(c, a, w, beta=beta, alpha=alpha),
          leaf(data.draw(arrays(bias_shape))), leaf(data.draw(arrays((n, k)))), leaf(data.draw(arrays((k, m)))))
    check(lambda c, a, w: c.baddbmm(a, w, beta=beta, alpha=alpha),
          leaf(data.draw(arrays((b, 1, m)))), leaf(data.draw(arrays((b, n, k)))), leaf(data.draw(arrays((b, k, m)))))


@property_test
@given(data=st.data())
def test_trace(xp_backend, data):
    check(lambda x: x.trace(), leaf(data.draw(arrays(shapes(min_dims=2, max_dims=2)), label="x")))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@property_test
@given(data=st.data())
def test_pad(xp_backend, mode, data):
    if mode == "constant":
        values = data.draw(arrays(shapes(min_dims=0)), label="x")
        padded = data.draw(st.integers(0, values.ndim), label="padded dims")
        pad = [data.draw(st.integers(-n, 2)) for n in values.shape[values.ndim - padded:][::-1] for _ in range(2)]
        assume(all(n + pad[2 * i] + pad[2 * i + 1] >= 0 for i, n in enumerate(values.shape[::-1][:padded])))
        value = data.draw(floats(), label="value")
        check(lambda x: F.pad(x, pad, value=value), leaf(values))
    else:
        padded = data.draw(st.integers(1, 3), label="padded dims")
        shape = data.draw(shapes(min_dims=padded + 1, max_dims=padded + 2, max_side=3), label="shape")
        limit = (lambda n: n - 1) if mode == "reflect" else (lambda n: n)
        pad = [data.draw(st.integers(0, limit(n))) for n in shape[::-1][:padded] for _ in range(2)]
        check(lambda x: F.pad(x, pad, mode=mode), leaf(data.draw(arrays(shape), label="x")))


# ---------------------------------------------------------------------------------------------
# forward values against NumPy, float32 and float64, both backends


def real_arrays(shape=shapes(min_dims=0, max_dims=3), low=-10.0, high=10.0):
    def of_dtype(d):
        bounds = float(np.dtype(d).type(low)), float(np.dtype(d).type(high))  # representable in the dtype
        width = 32 if d == np.float32 else 64
        return hnp.arrays(d, shape, elements=st.floats(*bounds, width=width, allow_nan=False, allow_infinity=False))

    return st.sampled_from([np.float32, np.float64]).flatmap(of_dtype)


def erf_reference(a):
    return np.vectorize(math.erf)(a.astype(np.float64))


FORWARD = {
    # name: (tinyattn fn, NumPy reference, input range)
    "sin": (tinyattn.sin, np.sin, (-10, 10)),
    "cos": (tinyattn.cos, np.cos, (-10, 10)),
    "rsqrt": (tinyattn.rsqrt, lambda a: 1 / np.sqrt(a), (0.1, 10)),
    "reciprocal": (tinyattn.reciprocal, lambda a: 1 / a, (0.1, 10)),
    "log1p": (tinyattn.log1p, np.log1p, (-0.9, 10)),
    "expm1": (tinyattn.expm1, np.expm1, (-10, 10)),
    "log2": (tinyattn.log2, np.log2, (0.1, 10)),
    "log10": (tinyattn.log10, np.log10, (0.1, 10)),
    "exp2": (tinyattn.exp2, np.exp2, (-10, 10)),
    "erf": (tinyattn.erf, erf_reference, (-10, 10)),
    "square": (tinyattn.square, np.square, (-10, 10)),
    "sign": (tinyattn.sign, np.sign, (-10, 10)),
    "floor": (tinyattn.floor, np.floor, (-10, 10)),
    "ceil": (tinyattn.ceil, np.ceil, (-10, 10)),
    "round": (tinyattn.round, np.round, (-10, 10)),
    "trunc": (tinyattn.trunc, np.trunc, (-10, 10)),
    "silu": (F.silu, lambda a: a / (1 + np.exp(-a.astype(np.float64))), (-10, 10)),
    "softplus": (F.softplus, lambda a: np.where(a > 20, a, np.logaddexp(0, a.astype(np.float64))), (-10, 30)),
    "leaky_relu": (F.leaky_relu, lambda a: np.where(a > 0, a, 0.01 * a), (-10, 10)),
    "elu": (F.elu, lambda a: np.where(a > 0, a, np.expm1(a.astype(np.float64))), (-10, 10)),
}


@pytest.mark.parametrize("name", sorted(FORWARD))
@given(data=st.data())
def test_elementwise_forward_matches_numpy(xp_backend, name, data):
    fn, reference, (low, high) = FORWARD[name]
    a = data.draw(real_arrays(low=low, high=high), label="x")
    result = fn(tinyattn.tensor(a))
    assert result.shape == a.shape and result.dtype.name == a.dtype.name
    loose = dict(rtol=2e-6, atol=1e-6) if a.dtype == np.float32 else dict(rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(host(result), reference(a).astype(a.dtype), **loose)


@given(data=st.data())
def test_reductions_forward_match_numpy(xp_backend, data):
    a = data.draw(real_arrays(shapes(min_dims=1), low=-2, high=2), label="x")
    dim = data.draw(one_dim(a.ndim), label="dim")
    t = tinyattn.tensor(a)
    loose = dict(rtol=1e-5, atol=1e-6) if a.dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(host(t.prod(dim)), np.prod(a, axis=dim), **loose)
    np.testing.assert_allclose(host(t.cumprod(dim)), np.cumprod(a, axis=dim), **loose)
    np.testing.assert_allclose(host(t.amax(dim)), np.max(a, axis=dim), **loose)
    both = tuple(sorted({0, dim % a.ndim}))
    np.testing.assert_allclose(host(t.amin(both, keepdim=True)), np.min(a, axis=both, keepdims=True))
    for ord in (2, 1, 3, math.inf, -math.inf, 0):
        np.testing.assert_allclose(host(t.norm(ord, dim)), np.linalg.norm(a, ord, axis=dim), **loose)
    np.testing.assert_allclose(host(t.norm()), np.linalg.norm(a.ravel()), **loose)
    values, indices = t.sort(dim, descending=True)
    np.testing.assert_array_equal(host(indices), host(t.argsort(dim, descending=True)))
    np.testing.assert_array_equal(host(values), np.take_along_axis(a, host(indices), dim))
    np.testing.assert_array_equal(host(values), -np.sort(-a, axis=dim))


@given(data=st.data())
def test_selection_forward_matches_numpy(xp_backend, data):
    a = data.draw(real_arrays(shapes(min_dims=1)), label="x")
    dim = data.draw(one_dim(a.ndim), label="dim")
    t = tinyattn.tensor(a)
    index = data.draw(st.lists(st.integers(0, a.shape[dim] - 1), max_size=4), label="index")
    np.testing.assert_array_equal(host(t.index_select(dim, tinyattn.tensor(index, dtype=tinyattn.long))),
                                  np.take(a, index, axis=dim))
    np.testing.assert_array_equal(host(t.roll(3, dim)), np.roll(a, 3, axis=dim))
    np.testing.assert_array_equal(host(t.roll(-1)), np.roll(a, -1))
    np.testing.assert_array_equal(host(t.flip(dim)), np.flip(a, dim))
    np.testing.assert_array_equal(host(t.repeat_interleave(2, dim)), np.repeat(a, 2, axis=dim))
    np.testing.assert_array_equal(host(t.masked_select(t > 0)), a[a > 0])
    np.testing.assert_array_equal(host((t > 0).nonzero()), np.argwhere(a > 0))
    for ours, theirs in zip(tinyattn.where(t > 0), np.nonzero(a > 0)):
        np.testing.assert_array_equal(host(ours), theirs)


# ---------------------------------------------------------------------------------------------
# parity with PyTorch: forward values and gradients


def _bool_mask(lib, shape):
    return lib.tensor(np.arange(math.prod(shape)).reshape(shape) % 3 == 1)


PARITY = {
    # name: (function of (lib, *tensors), input shapes, input range)
    "sin": (lambda lib, x: lib.sin(x), [(2, 3)], None),
    "cos": (lambda lib, x: x.cos(), [(2, 3)], None),
    "rsqrt": (lambda lib, x: lib.rsqrt(x), [(2, 3)], (0.5, 2.0)),
    "reciprocal": (lambda lib, x: x.reciprocal(), [(2, 3)], (0.5, 2.0)),
    "log1p": (lambda lib, x: lib.log1p(x), [(2, 3)], (-0.9, 2.0)),
    "expm1": (lambda lib, x: x.expm1(), [(2, 3)], None),
    "log2": (lambda lib, x: lib.log2(x), [(2, 3)], (0.5, 2.0)),
    "log10": (lambda lib, x: x.log10(), [(2, 3)], (0.5, 2.0)),
    "exp2": (lambda lib, x: lib.exp2(x), [(2, 3)], None),
    "erf": (lambda lib, x: lib.erf(x * 2), [(2, 3)], None),
    "square": (lambda lib, x: lib.square(x), [(2, 3)], None),
    "neg": (lambda lib, x: lib.neg(x) + x.negative(), [(2, 3)], None),
    "pow function": (lambda lib, x, y: lib.pow(x, y) + lib.pow(2, y) + lib.pow(x, 3), [(2, 3), (3,)], (0.5, 2.0)),
    "sign floor ceil round trunc": (
        lambda lib, x: x * (lib.sign(x) + x.floor() + lib.ceil(x) + x.round() + lib.trunc(x)
                            + lib.round(x, decimals=1)),
        [(2, 3)], (-3.0, 3.0)),
    "prod": (lambda lib, x: lib.prod(x), [(2, 3)], None),
    "prod dim": (lambda lib, x: x.prod(1, keepdim=True), [(2, 3)], None),
    "cumprod": (lambda lib, x: lib.cumprod(x, dim=-1), [(2, 4)], None),
    "amax": (lambda lib, x: lib.amax(x, dim=(0, 2)), [(2, 3, 4)], None),
    "amin keepdim": (lambda lib, x: x.amin(-1, keepdim=True), [(2, 3, 4)], None),
    "norm": (lambda lib, x: x.norm(), [(2, 3)], None),
    "norm p dim": (lambda lib, x: lib.norm(x, p=3, dim=1), [(2, 3)], None),
    "vector_norm inf": (lambda lib, x: lib.linalg.vector_norm(x, ord=float("inf"), dim=-1), [(2, 3)], None),
    "vector_norm 1 keepdim": (lambda lib, x: lib.linalg.vector_norm(x, 1, dim=(0, 1), keepdim=True), [(2, 3)], None),
    "normalize": (lambda lib, x: lib.nn.functional.normalize(x, dim=-1), [(2, 3)], None),
    "outer": (lambda lib, x, y: lib.outer(x, y), [(3,), (4,)], None),
    "addmm": (lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=2.0), [(4,), (3, 2), (2, 4)], None),
    "baddbmm": (lambda lib, c, a, b: lib.baddbmm(c, a, b), [(2, 3, 4), (2, 3, 5), (2, 5, 4)], None),
    "sort": (lambda lib, x: lib.sort(x, dim=0, descending=True).values, [(3, 4)], None),
    "index_select": (lambda lib, x: x.index_select(1, lib.tensor([2, 0, 2])), [(2, 3)], None),
    "masked_select": (lambda lib, x: lib.masked_select(x, _bool_mask(lib, (3,))), [(2, 3)], None),
    "repeat_interleave": (lambda lib, x: x.repeat_interleave(2, dim=1)
                          * lib.repeat_interleave(x, lib.tensor([1, 0, 2]), dim=1).sum(), [(2, 3)], None),
    "roll": (lambda lib, x: lib.roll(x, (1, -2), (0, 1)), [(2, 3)], None),
    "flip": (lambda lib, x: lib.flip(x, (0, 1)), [(2, 3)], None),
    "scatter": (lambda lib, x, s: x.scatter(1, lib.tensor([[2, 0], [1, 2]]), s), [(2, 3), (2, 2)], None),
    "scatter value": (lambda lib, x: lib.scatter(x, 0, lib.tensor([[1, 0, 1]]), 0.5), [(2, 3)], None),
    "scatter_add": (lambda lib, x, s: x.scatter_add(1, lib.tensor([[2, 2], [0, 2]]), s), [(2, 3), (2, 2)], None),
    "trace": (lambda lib, x: x.trace(), [(3, 4)], None),
    "silu": (lambda lib, x: lib.nn.functional.silu(x), [(2, 3)], (-5.0, 5.0)),
    "softplus": (lambda lib, x: lib.nn.functional.softplus(x * 10, beta=2.0, threshold=15.0), [(2, 3)], None),
    "leaky_relu": (lambda lib, x: lib.nn.functional.leaky_relu(x, 0.1), [(2, 3)], None),
    "elu": (lambda lib, x: lib.nn.functional.elu(x, alpha=0.5), [(2, 3)], None),
    "pad constant": (lambda lib, x: lib.nn.functional.pad(x, (1, 2, -1, 0), value=0.5), [(2, 3, 4)], None),
    "pad reflect": (lambda lib, x: lib.nn.functional.pad(x, (2, 1, 1, 1), mode="reflect"), [(2, 3, 4)], None),
    "pad replicate": (lambda lib, x: lib.nn.functional.pad(x, (2, 1), mode="replicate"), [(2, 3, 4)], None),
    "pad circular": (lambda lib, x: lib.nn.functional.pad(x, (1, 2, 3, 0), mode="circular"), [(2, 3, 4)], None),
    "modules": (lambda lib, x: lib.nn.SiLU()(x) + lib.nn.LeakyReLU(0.3)(x) + lib.nn.ELU()(x) + lib.nn.Softplus(2.0)(x),
                [(2, 3)], None),
}


def _run(lib, fn, arrays_):
    inputs = [lib.tensor(a, requires_grad=True) for a in arrays_]
    out = fn(lib, *inputs)
    weights = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(arrays_[0].dtype)
    (out * lib.tensor(weights)).sum().backward()
    return out, [x.grad for x in inputs]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", list(PARITY))
def test_forward_and_gradients_match_pytorch(torch, name, dtype):
    fn, shapes_, bounds = PARITY[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    low, high = bounds or (-2.0, 2.0)
    arrays_ = [rng.uniform(low, high, shape).astype(dtype) for shape in shapes_]
    ours, our_grads = _run(tinyattn, fn, arrays_)
    theirs, their_grads = _run(torch, fn, arrays_)
    loose = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    assert host(ours).dtype == theirs.detach().numpy().dtype
    np.testing.assert_allclose(host(ours), theirs.detach().numpy(), **loose, err_msg=f"{name}: forward")
    assert ours.grad_fn.name() == type(theirs.grad_fn).__name__ or name in DIFFERENT_GRAD_FN, ours.grad_fn.name()
    for i, (g, want) in enumerate(zip(our_grads, their_grads)):
        np.testing.assert_allclose(host(g), want.numpy(), **loose, err_msg=f"{name}: gradient of input {i}")


# composites whose last op PyTorch names otherwise (a sum of several, PyTorch's fused kernels)
DIFFERENT_GRAD_FN = {"neg", "pow function", "sign floor ceil round trunc", "repeat_interleave", "modules", "addmm",
                     "baddbmm", "pad reflect", "pad replicate", "pad circular"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pytorchs_edge_cases(torch, dtype):
    """Where the math leaves a choice, PyTorch's choice: values and gradients."""
    cases = [
        (lambda lib, x: x.prod(), [0.0, 2.0, 3.0]),  # one zero: only its place gets a gradient
        (lambda lib, x: x.prod(), [0.0, 2.0, 0.0]),  # two zeros: no gradient at all
        (lambda lib, x: x.reshape(2, 2).prod(0), [0.0, 2.0, 3.0, 0.0]),
        (lambda lib, x: x.cumprod(0), [2.0, 0.0, 3.0, 0.0, 5.0]),
        (lambda lib, x: x.amax(), [1.0, 3.0, 3.0, -1.0]),  # ties share the gradient
        (lambda lib, x: x.reshape(2, 2).amin(1), [1.0, 1.0, 2.0, 0.5]),
        (lambda lib, x: x.norm(), [0.0, 0.0, 0.0]),  # the norm of zero: gradient 0
        (lambda lib, x: lib.linalg.vector_norm(x, ord=3), [0.0, 0.0]),
        (lambda lib, x: lib.linalg.vector_norm(x, ord=float("inf")), [-2.0, 2.0, 1.0]),
        (lambda lib, x: lib.linalg.vector_norm(x, ord=1), [0.0, -2.0, 1.0]),
        (lambda lib, x: x.sort(descending=True).values, [1.0, float("nan"), 0.0, 1.0]),  # NaN is the largest
        (lambda lib, x: x.sort().values, [1.0, float("nan"), 0.0, 1.0]),
        (lambda lib, x: x.round(), [0.5, 1.5, 2.5, -0.5, -1.5]),  # half to even
        (lambda lib, x: x.round(decimals=2), [0.125, 1.005, -2.675, 1234.5678]),
        (lambda lib, x: x.round(decimals=-2), [1250.0, 1350.0, -49.9]),
        (lambda lib, x: x.sign(), [float("nan"), -0.0, 0.0, -3.0, 2.0]),  # sign(NaN) is 0
        (lambda lib, x: lib.nn.functional.softplus(x), [-100.0, 0.0, 19.9, 20.0, 25.0, 100.0]),
        (lambda lib, x: lib.nn.functional.elu(x), [-100.0, 0.0, 100.0]),
        (lambda lib, x: lib.nn.functional.leaky_relu(x), [-1.0, 0.0, 1.0]),
        (lambda lib, x: lib.nn.functional.normalize(x, dim=0), [0.0, 0.0]),
        (lambda lib, x: lib.addmm(x.reshape(2, 1), x.reshape(2, 1), x.reshape(1, 2), beta=0), [1.0, float("nan")]),
    ]
    for k, (fn, values) in enumerate(cases):
        results = []
        for lib in (tinyattn, torch):
            x = lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True)
            y = fn(lib, x)
            y.backward(lib.ones_like(y))
            results.append((host(y), host(x.grad)) if lib is tinyattn else (y.detach().numpy(), x.grad.numpy()))
        (ours, our_grad), (theirs, their_grad) = results
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, equal_nan=True, err_msg=f"case {k}: value")
        if not np.isnan(values).any() or k in (10, 11, 15):
            np.testing.assert_allclose(our_grad, their_grad, rtol=1e-6, equal_nan=True, err_msg=f"case {k}: grad")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy warns at 1 / 0; PyTorch gives inf silently
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_dtypes_are_pytorchs(torch, dtype):
    data = [[1, 0, 2], [3, 1, 0]] if dtype != "float32" else [[1.5, 0.0, -2.0], [3.0, 1.0, 0.5]]
    ops = {
        "sin": lambda lib, x: lib.sin(x), "reciprocal": lambda lib, x: x.reciprocal(), "erf": lambda lib, x: x.erf(),
        "exp2": lambda lib, x: lib.exp2(x), "square": lambda lib, x: x.square(), "sign": lambda lib, x: x.sign(),
        "prod": lambda lib, x: x.prod(), "prod dim": lambda lib, x: lib.prod(x, 1),
        "cumprod": lambda lib, x: x.cumprod(0),
        "sort": lambda lib, x: x.sort().values, "argsort": lambda lib, x: x.argsort(),
        "nonzero": lambda lib, x: x.nonzero(), "index_select": lambda lib, x: x.index_select(1, lib.tensor([1])),
        "roll": lambda lib, x: x.roll(1, 1), "flip": lambda lib, x: x.flip(0),
        "repeat_interleave": lambda lib, x: x.repeat_interleave(2),
        "scatter": lambda lib, x: x.scatter(1, lib.tensor([[0]]), x),
        "masked_select": lambda lib, x: x.masked_select(lib.tensor([True, False, True])),
        "outer": lambda lib, x: lib.outer(x[0], x[1]), "trace": lambda lib, x: x.trace(),
    }
    if dtype == "bool":  # what PyTorch refuses for bools
        ops = {k: v for k, v in ops.items() if k not in ("square", "prod dim", "trace", "outer", "sort", "argsort")}
    if dtype == "int64":
        ops.update({"floor": lambda lib, x: x.floor(), "round": lambda lib, x: x.round(),
                    "amax": lambda lib, x: x.amax(0)})
    for name, fn in ops.items():
        ours = fn(tinyattn, tinyattn.tensor(data, dtype=getattr(tinyattn, dtype)))
        theirs = fn(torch, torch.tensor(data, dtype=getattr(torch, dtype)))
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], name
        np.testing.assert_allclose(host(ours), theirs.numpy(), rtol=1e-6, err_msg=name)


def unique_of(lib, x, dim):
    """Every output unique has for x (values, inverse, counts; and the values alone), as plain arrays."""
    values, inverse, counts = lib.unique(x, return_inverse=True, return_counts=True, dim=dim)
    parts = (values, inverse, counts, x.unique(dim=dim), lib.unique(x, sorted=False, return_counts=True, dim=dim)[1])
    return [host(p) if lib is tinyattn else p.numpy() for p in parts]


@property_test
@given(data=st.data())
def test_unique_is_pytorchs(xp_backend, torch, data):
    """Values, inverse and counts as PyTorch gives them, with and without dim; NaNs stay distinct."""
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4), label="shape")
    dtype = data.draw(st.sampled_from(["int64", "float32", "bool"]), label="dtype")
    values = data.draw(hnp.arrays(np.int64, shape, elements=st.integers(0, 2)), label="values").astype(dtype)
    dim = data.draw(st.sampled_from([None] + list(range(-values.ndim, values.ndim))), label="dim")
    if dtype == "float32" and dim is None:  # (slices with NaNs come in an order of PyTorch's sort's own)
        values.flat[data.draw(st.integers(0, values.size - 1), label="nan at")] = np.nan
    ours = unique_of(tinyattn, tinyattn.tensor(values), dim)
    theirs = unique_of(torch, torch.tensor(values), dim)
    for name, a, b in zip(("values", "inverse", "counts", "method", "unsorted counts"), ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_unique_edge_cases_and_errors(torch):
    for lib in (tinyattn, torch):
        assert lib.unique(lib.tensor(5), return_inverse=True)[1].shape == ()
        assert lib.unique(lib.zeros(0, 3), dim=0).shape == (0, 3)
        assert lib.unique(lib.tensor([2.0, 1.0], requires_grad=True)).requires_grad is (lib is torch)
    with pytest.raises(IndexError, match="dim=0 was given for a 0-d tensor"):
        tinyattn.tensor(5).unique(dim=0)
    with pytest.raises(IndexError, match="dimension 2 is out of range"):
        tinyattn.ones(2, 2).unique(dim=2)
    with pytest.raises(ShapeError, match=r"shape \[2, 0\] has a dimension of size 0 other than dim=0"):
        tinyattn.zeros(2, 0).unique(dim=0)


# ---------------------------------------------------------------------------------------------
# the usual tutorial code, unchanged


def top_p_filter(torch, logits, top_p):
    """nanoGPT-style nucleus sampling's filter (as the Hugging Face and minGPT-derived code writes it)."""
    sorted_logits, sorted_indices = torch.sort(logits, descending=True)
    cumulative_probs = torch.cumsum(torch.nn.functional.softmax(sorted_logits, dim=-1), dim=-1)
    sorted_indices_to_remove = cumulative_probs > top_p
    sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
    sorted_indices_to_remove[..., 0] = 0
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
    return logits.masked_fill(indices_to_remove, float("-inf"))


def rope(torch, x, theta_base=10_000):
    """Rotary position embeddings as the book's Llama chapter computes them."""
    batch, heads, length, head_dim = x.shape
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2)[: (head_dim // 2)].float() / head_dim))
    positions = torch.arange(length)
    angles = positions[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=1)
    cos, sin = torch.cos(angles), torch.sin(angles)
    x1, x2 = x[..., : head_dim // 2], x[..., head_dim // 2:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return (x * cos) + (rotated * sin)


def rms_norm_and_swiglu(torch, x, w1, w2):
    """Llama's RMSNorm and SwiGLU feed-forward."""
    normed = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return torch.nn.functional.silu(normed @ w1) * (normed @ w2)


def test_top_p_rope_and_llama_blocks_give_pytorchs_numbers(torch):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((3, 10)).astype(np.float32) * 3
    np.testing.assert_array_equal(host(top_p_filter(tinyattn, tinyattn.tensor(logits), 0.8)),
                                  top_p_filter(torch, torch.tensor(logits), 0.8).numpy())
    x = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    ours, theirs = tinyattn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    for lib, t in ((tinyattn, ours), (torch, theirs)):
        rope(lib, t).pow(2).sum().backward()
    np.testing.assert_allclose(host(rope(tinyattn, ours)), rope(torch, theirs).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(ours.grad), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)
    w1, w2 = (rng.standard_normal((8, 6)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(
        host(rms_norm_and_swiglu(tinyattn, tinyattn.tensor(x), tinyattn.tensor(w1), tinyattn.tensor(w2))),
        rms_norm_and_swiglu(torch, torch.tensor(x), torch.tensor(w1), torch.tensor(w2)).numpy(), rtol=1e-5, atol=1e-5)


def test_book_gelu_with_torch_pow():
    import tinyattn as torch  # the book's ch04 GELU, as written there

    x = torch.linspace(-3, 3, 7)
    gelu = 0.5 * x * (1 + torch.tanh(torch.sqrt(torch.tensor(2.0 / torch.pi)) * (x + 0.044715 * torch.pow(x, 3))))
    np.testing.assert_allclose(host(gelu), host(F.gelu(x, approximate="tanh")), atol=1e-6)


def test_small_helpers():
    assert tinyattn.triu_indices(3, 4, 1).tolist() == [[0, 0, 0, 1, 1, 2], [1, 2, 3, 2, 3, 3]]
    assert tinyattn.tril_indices(3, 3, -1).tolist() == [[1, 2, 2], [0, 0, 1]]
    assert tinyattn.tril_indices(2, 2).dtype is tinyattn.int64
    assert tinyattn.repeat_interleave(tinyattn.tensor([2, 1])).tolist() == [0, 0, 1]
    assert tinyattn.add(tinyattn.tensor([1, 2]), 2, alpha=3).tolist() == [7, 8]
    assert tinyattn.add(2, tinyattn.tensor([1.0, 2.0])).tolist() == [3.0, 4.0]
    assert tinyattn.sub(tinyattn.tensor([1.0]), tinyattn.tensor([2.0]), alpha=2).tolist() == [-3.0]
    assert tinyattn.div(tinyattn.tensor([-7, 7]), 2, rounding_mode="trunc").tolist() == [-3, 3]
    assert tinyattn.div(tinyattn.tensor([-7.0, 7.0]), 2, rounding_mode="floor").tolist() == [-4.0, 3.0]
    assert tinyattn.pow(2, tinyattn.tensor([1, 2])).tolist() == [2, 4]
    assert tinyattn.nonzero(tinyattn.tensor(3.0)).shape == (1, 0)
    assert [t.tolist() for t in tinyattn.nonzero(tinyattn.tensor(3.0), as_tuple=True)] == [[0]]
    assert tinyattn.all(tinyattn.tensor([True, False])).item() is False
    assert tinyattn.any(tinyattn.tensor([[True, False]]), dim=1).tolist() == [True]
    x = tinyattn.ones(2, 3)
    assert x.type_as(tinyattn.zeros(1, dtype=tinyattn.float64)).dtype is tinyattn.float64
    assert tinyattn.full_like(x, 7).tolist() == [[7.0] * 3] * 2 and tinyattn.zeros_like(x).shape == (2, 3)
    assert tinyattn.argwhere(tinyattn.tensor([0, 3, 0, 1])).tolist() == [[1], [3]]
    s = tinyattn.sort(tinyattn.tensor([3, 1, 2]))
    assert s.values.tolist() == [1, 2, 3] and s.indices.tolist() == [1, 2, 0] and s.indices.grad_fn is None
    assert tinyattn.tensor(3.0).sort().values.item() == 3.0
    in_place = tinyattn.zeros(2, 3)
    assert in_place.scatter_(1, tinyattn.tensor([[2], [0]]), 1.5) is in_place
    assert in_place.tolist() == [[0.0, 0.0, 1.5], [1.5, 0.0, 0.0]]
    assert tinyattn.clamp_min(tinyattn.tensor([-1.0, 2.0]), 0.0).tolist() == [0.0, 2.0]
    assert tinyattn.clamp_max(tinyattn.tensor([-1.0, 2.0]), 0.0).tolist() == [-1.0, 0.0]
    # a 0-d input beyond erf's near range (NumPy's 0-d arithmetic gives scalars, not arrays)
    assert abs(tinyattn.erf(tinyattn.tensor(2.5)).item() - math.erf(2.5)) < 1e-6
    assert abs(F.gelu(tinyattn.tensor(3.0)).item() - 3.0 * (1 + math.erf(3.0 / math.sqrt(2))) / 2) < 1e-6


# ---------------------------------------------------------------------------------------------
# errors


def test_bad_input_gets_clear_errors():
    x = tinyattn.arange(6.0).reshape(2, 3)
    with pytest.raises(IndexError, match="out of range for dim 1 with size 3"):
        x.index_select(1, tinyattn.tensor([3]))
    with pytest.raises(IndexError, match="index -1 is out of range"):
        x.index_select(0, tinyattn.tensor([-1]))
    with pytest.raises(TypeError, match="integer indices"):
        x.index_select(0, tinyattn.tensor([0.0]))
    with pytest.raises(ShapeError, match="1-D index"):
        x.index_select(0, tinyattn.tensor([[0]]))
    with pytest.raises(ShapeError, match="does not fit"):
        x.scatter(1, tinyattn.tensor([[0, 1, 2, 0]]), x)
    with pytest.raises(IndexError, match="scatter: index 5 is out of range"):
        x.scatter(1, tinyattn.tensor([[5]]), 1.0)
    with pytest.raises(TypeError, match="int64 index"):
        x.scatter(1, tinyattn.tensor([[0]], dtype=tinyattn.int32), 1.0)
    with pytest.raises(TypeError, match="src is tinyattn.float64"):
        x.scatter(1, tinyattn.tensor([[0]]), x.double())
    with pytest.raises(ValueError, match="reduce='multiply' is not supported"):
        x.scatter(1, tinyattn.tensor([[0]]), 1.0, reduce="multiply")
    with pytest.raises(TypeError, match="one dim"):
        x.prod((0, 1))
    with pytest.raises(TypeError, match="floating point"):
        tinyattn.tensor([1, 2]).norm()
    with pytest.raises(ValueError, match="matrix norm"):
        x.norm("nuc")
    with pytest.raises(ValueError, match="shifts and dims must align"):
        x.roll((1, 2), 0)
    with pytest.raises(ValueError, match="dim 0 appears more than once"):
        x.flip(0, 0)
    with pytest.raises(ShapeError, match="2 repeats given for dim 1 of size 3"):
        x.repeat_interleave(tinyattn.tensor([1, 2]), dim=1)
    with pytest.raises(ValueError, match="output_size=5"):
        x.repeat_interleave(2, output_size=5)
    with pytest.raises(ShapeError, match="does not broadcast"):
        x.masked_select(tinyattn.tensor([True, False]))
    with pytest.raises(ShapeError, match="outer expects two 1-D"):
        x.outer(x)
    with pytest.raises(ShapeError, match="does not broadcast to the product"):
        tinyattn.addmm(tinyattn.zeros(3, 3), x, x.T)
    with pytest.raises(ShapeError, match="mm expects two 2-D"):
        tinyattn.addmm(x, x[0], x.T)
    with pytest.raises(ShapeError, match="trace expects a matrix"):
        x[0].trace()
    with pytest.raises(TypeError, match="round with decimals"):
        tinyattn.tensor([15]).round(decimals=-1)
    with pytest.raises(TypeError, match="not defined for bool"):
        tinyattn.tensor([True]).floor()
    with pytest.raises(ValueError, match="rounding_mode"):
        x.div(2, rounding_mode="up")
    with pytest.raises(ValueError, match="pairs"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match="between 0 and 2"):
        F.pad(x[None], (3, 0), mode="reflect")
    with pytest.raises(ShapeError, match="cut off more than it has"):
        F.pad(x, (-2, -2))
    with pytest.raises(ValueError, match="mode must be"):
        F.pad(x, (1, 1), mode="wrap")
    with pytest.raises(ShapeError, match="pads the last 1, 2 or 3 dims"):
        F.pad(x[0], (1, 1), mode="reflect")
    with pytest.raises(TypeError, match="floating point"):
        F.silu(tinyattn.tensor([1, 2]))


def test_in_place_activations_are_recorded(xp_backend):
    x = tinyattn.tensor([[-1.0, 0.5, 2.0]], dtype=tinyattn.float64, requires_grad=True)
    for fn in (lambda y: F.silu(y, inplace=True), lambda y: F.leaky_relu(y, 0.1, inplace=True),
               lambda y: F.elu(y, inplace=True)):
        assert gradcheck(lambda x: (lambda y: (fn(y), y)[1])(x * 1.0), x)
    y = x * 1.0
    assert F.leaky_relu(y, 0.1, inplace=True) is y and y.tolist() == [[-0.1, 0.5, 2.0]]
