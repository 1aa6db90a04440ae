"""The forward pass of every op against a NumPy reference, and every op against PyTorch.

- Hypothesis draws float32 and float64 arrays (up to 4-D, broadcasting pairs included) and checks
  each op's forward against the same computation written in NumPy. These tests take the
  `xp_backend` fixture, so they also run on array_api_strict (the stand-in for CuPy).
- softmax and log_softmax: rows sum to 1, shift invariance, no overflow at logits of 1e4.
- Parity with PyTorch (skipped without it): same inputs give the same forward values and the same
  gradients, the gradients taken by `.backward()` of a random-weighted sum of the output.

Finite-difference gradient checks live in tests/test_op_gradients.py.
"""

import zlib

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn
from tinyattn import backend

FLOAT_DTYPES = [np.float32, np.float64]


def host(t):
    """A tensor's numbers as a NumPy array (detached, copied to the host)."""
    return backend.to_host(t.detach().array)


def tol(dtype):
    return dict(rtol=2e-5, atol=1e-6) if np.dtype(dtype) == np.float32 else dict(rtol=1e-10, atol=1e-12)


def close(actual, expected, dtype):
    actual = host(actual) if isinstance(actual, tinyattn.Tensor) else actual
    np.testing.assert_allclose(actual, expected, **tol(dtype))


# ---------------------------------------------------------------------------------------------
# strategies

dtypes = st.sampled_from(FLOAT_DTYPES)
shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4)
nonscalar_shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)
matrix_shapes = hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=4)


def arrays(dtype, shape, low=-10.0, high=10.0):
    width = 32 if np.dtype(dtype) == np.float32 else 64
    low, high = float(np.dtype(dtype).type(low)), float(np.dtype(dtype).type(high))  # representable bounds
    elements = st.floats(low, high, width=width, allow_nan=False, allow_infinity=False)
    return hnp.arrays(dtype, shape, elements=elements)


@st.composite
def one_array(draw, shape=shapes, low=-10.0, high=10.0):
    dtype = draw(dtypes)
    return draw(arrays(dtype, draw(shape), low, high))


@st.composite
def broadcast_pair(draw, low=-10.0, high=10.0):
    dtype = draw(dtypes)
    (sa, sb), _ = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4))
    return draw(arrays(dtype, sa, low, high)), draw(arrays(dtype, sb, low, high))


def check_dtype(result, a):
    assert result.dtype.name == a.dtype.name, (result.dtype, a.dtype)


# ---------------------------------------------------------------------------------------------
# elementwise


UNARY = {
    "neg": (lambda t: -t, lambda a: -a, (-10, 10)),
    "exp": (lambda t: t.exp(), np.exp, (-10, 10)),
    "log": (lambda t: t.log(), np.log, (0.125, 10)),
    "sqrt": (lambda t: t.sqrt(), np.sqrt, (0, 10)),
    "tanh": (lambda t: t.tanh(), np.tanh, (-10, 10)),
    "relu": (lambda t: t.relu(), lambda a: np.maximum(a, 0), (-10, 10)),
    "abs": (lambda t: t.abs(), np.abs, (-10, 10)),
    "sigmoid": (lambda t: t.sigmoid(), lambda a: 1 / (1 + np.exp(-a)), (-10, 10)),
    "pow2": (lambda t: t**2, lambda a: a**2, (-10, 10)),
    "pow_half": (lambda t: t**0.5, np.sqrt, (0, 10)),
    "rsub": (lambda t: 1.5 - t, lambda a: 1.5 - a, (-10, 10)),
    "rdiv": (lambda t: 2.0 / t, lambda a: 2.0 / a, (0.1, 10)),
    "clamp": (lambda t: t.clamp(-1.0, 2.0), lambda a: np.clip(a, -1.0, 2.0), (-10, 10)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
def test_unary_forward_matches_numpy(xp_backend, name, data):
    op, reference, (low, high) = UNARY[name]
    a = data.draw(one_array(low=low, high=high))
    result = op(tinyattn.tensor(a))
    assert result.shape == a.shape
    check_dtype(result, a)
    close(result, reference(a), a.dtype)


@pytest.mark.parametrize("dtype, limit", [(np.float32, 87.0), (np.float64, 700.0)])
def test_sigmoid_is_accurate_to_the_last_bits_down_to_tiny_values(xp_backend, dtype, limit):
    x = np.linspace(-limit, limit, 20001).astype(dtype)
    want = 1 / (1 + np.exp(-x.astype(np.float64)))  # float64: exact enough for float32; 1 ulp for float64
    got = host(tinyattn.tensor(x).sigmoid())
    np.testing.assert_allclose(got, want, rtol=8 * np.finfo(dtype).eps, atol=0)  # relative, also near 0


def test_relu_keeps_nan_and_negative_zero_as_pytorch_does(xp_backend):
    x = tinyattn.tensor([float("nan"), -1.0, 0.0, 2.0, -0.0], requires_grad=True)
    y = x.relu()
    y.backward(tinyattn.ones(5))
    values = host(y)
    assert np.isnan(values[0]) and values[1:].tolist() == [0.0, 0.0, 2.0, 0.0]
    assert np.signbit(values[4])  # -0.0, as max(-0.0, 0) gives in PyTorch
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 1.0, 0.0]  # PyTorch's threshold backward: zero where x <= 0


BINARY = {
    "add": (lambda x, y: x + y, np.add),
    "sub": (lambda x, y: x - y, np.subtract),
    "mul": (lambda x, y: x * y, np.multiply),
    "div": (lambda x, y: x / y, np.divide),
    "maximum": (lambda x, y: tinyattn.maximum(x, y), np.maximum),
    "minimum": (lambda x, y: tinyattn.minimum(x, y), np.minimum),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@given(pair=broadcast_pair())
def test_binary_forward_broadcasts_like_numpy(xp_backend, name, pair):
    a, b = pair
    op, reference = BINARY[name]
    if name == "div":
        b = np.where(np.abs(b) < 0.1, 1.0, b).astype(b.dtype)
    result = op(tinyattn.tensor(a), tinyattn.tensor(b))
    expected = reference(a, b)
    assert result.shape == expected.shape
    check_dtype(result, a)
    close(result, expected, a.dtype)


@given(pair=broadcast_pair(low=0.1, high=3.0))
def test_pow_of_two_tensors(xp_backend, pair):
    a, b = pair
    close(tinyattn.tensor(a) ** tinyattn.tensor(b), a**b, a.dtype)



def test_integers_to_negative_integer_powers(xp_backend):
    """A negative integer number as the exponent of integers is an error, as in PyTorch; negative
    exponents in an integer tensor give PyTorch's integer results (1 and -1 keep their size, the
    rest rounds to 0), where NumPy would raise."""
    ints = tinyattn.tensor([2, 4])
    assert (ints**2).tolist() == [4, 16] and (ints**-1.0).tolist() == [0.5, 0.25]  # a float exponent: floats
    with pytest.raises(ValueError, match=r"negative integer powers.*x\.float\(\) \*\* -1"):
        ints**-1
    assert (ints ** tinyattn.tensor([1, -1])).tolist() == [2, 0]
    assert (2 ** tinyattn.tensor([-1, 3])).tolist() == [0, 8]
    bases = tinyattn.tensor([1, -1, -1, 0, -2], dtype=tinyattn.int32)
    powers = bases ** tinyattn.tensor([-1, -2, -3, -1, -2], dtype=tinyattn.int32)
    assert powers.tolist() == [1, 1, -1, 0, 0] and powers.dtype is tinyattn.int32


@given(pair=broadcast_pair())
def test_where_and_comparisons(xp_backend, pair):
    a, b = pair
    ta, tb = tinyattn.tensor(a), tinyattn.tensor(b)
    condition = ta > tb
    assert condition.dtype is tinyattn.bool
    np.testing.assert_array_equal(host(condition), a > b)
    np.testing.assert_array_equal(host(ta <= tb), a <= b)
    np.testing.assert_array_equal(host(ta == tb), a == b)
    close(tinyattn.where(condition, ta, tb), np.where(a > b, a, b), a.dtype)


# ---------------------------------------------------------------------------------------------
# reductions


@st.composite
def array_and_dim(draw, shape=nonscalar_shapes):
    a = draw(one_array(shape=shape))
    dim = draw(st.integers(-a.ndim, a.ndim - 1))
    return a, dim, draw(st.booleans())


@given(case=array_and_dim())
def test_sum_and_mean_along_a_dim(xp_backend, case):
    a, dim, keepdim = case
    t = tinyattn.tensor(a)
    close(t.sum(dim=dim, keepdim=keepdim), a.sum(axis=dim, keepdims=keepdim), a.dtype)
    close(t.mean(dim=dim, keepdim=keepdim), a.mean(axis=dim, keepdims=keepdim), a.dtype)
    close(t.sum(), a.sum(), a.dtype)
    close(t.mean(), a.mean(), a.dtype)
    assert t.sum(dim=dim, keepdim=keepdim).dtype is t.dtype


@given(a=one_array(shape=hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=4)))
def test_sum_over_several_dims(xp_backend, a):
    t = tinyattn.tensor(a)
    close(t.sum(dim=(0, -1)), a.sum(axis=(0, a.ndim - 1)), a.dtype)
    close(t.mean(dim=(0, 1), keepdim=True), a.mean(axis=(0, 1), keepdims=True), a.dtype)


@given(case=array_and_dim(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=2, max_side=4)))
def test_var_unbiased_and_biased(xp_backend, case):
    a, dim, keepdim = case
    t = tinyattn.tensor(a)
    loose = dict(rtol=1e-4, atol=1e-5) if a.dtype == np.float32 else tol(a.dtype)
    np.testing.assert_allclose(host(t.var(dim=dim, keepdim=keepdim)), a.var(axis=dim, ddof=1, keepdims=keepdim), **loose)
    np.testing.assert_allclose(host(t.var(dim=dim, unbiased=False)), a.var(axis=dim), **loose)
    np.testing.assert_allclose(host(t.var()), a.var(ddof=1), **loose)
    check_dtype(t.var(dim=dim), a)
    check_dtype(t.std(dim=dim), a)


@given(case=array_and_dim())
def test_max_and_min_along_a_dim(xp_backend, case):
    a, dim, keepdim = case
    t = tinyattn.tensor(a)
    values, indices = t.max(dim=dim, keepdim=keepdim)
    close(values, a.max(axis=dim, keepdims=keepdim), a.dtype)
    assert indices.dtype is tinyattn.int64
    np.testing.assert_array_equal(host(indices), np.argmax(a, axis=dim, keepdims=keepdim))
    result = t.min(dim, keepdim)
    close(result.values, a.min(axis=dim, keepdims=keepdim), a.dtype)
    np.testing.assert_array_equal(host(result.indices), np.argmin(a, axis=dim, keepdims=keepdim))
    close(t.max(), a.max(), a.dtype)
    close(t.min(), a.min(), a.dtype)
    np.testing.assert_array_equal(host(t.argmax(dim=dim)), np.argmax(a, axis=dim))


# ---------------------------------------------------------------------------------------------
# matrix products


@st.composite
def matmul_pair(draw):
    """Two shapes that matmul accepts: vectors, matrices, batches with broadcast leading dims."""
    dtype = draw(dtypes)
    n, k, m = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch_a, batch_b = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3)).input_shapes
    kind = draw(st.sampled_from(["vv", "mv", "vm", "mm"]))
    sa = (k,) if kind[0] == "v" else batch_a + (n, k)
    sb = (k,) if kind[1] == "v" else batch_b + (k, m)
    return draw(arrays(dtype, sa)), draw(arrays(dtype, sb))


@given(pair=matmul_pair())
def test_matmul_batched_and_broadcast(xp_backend, pair):
    a, b = pair
    result = tinyattn.tensor(a) @ tinyattn.tensor(b)
    expected = np.matmul(a, b)
    assert result.shape == expected.shape
    check_dtype(result, a)
    loose = dict(rtol=1e-4, atol=1e-4) if a.dtype == np.float32 else tol(a.dtype)
    np.testing.assert_allclose(host(result), expected, **loose)
    np.testing.assert_allclose(host(tinyattn.matmul(tinyattn.tensor(a), tinyattn.tensor(b))), expected, **loose)


@given(data=st.data())
def test_dot(xp_backend, data):
    dtype = data.draw(dtypes)
    n = data.draw(st.integers(1, 6))
    a, b = data.draw(arrays(dtype, (n,))), data.draw(arrays(dtype, (n,)))
    result = tinyattn.dot(tinyattn.tensor(a), tinyattn.tensor(b))
    assert result.shape == ()
    np.testing.assert_allclose(host(result), np.dot(a, b), rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# shapes and views


@given(a=one_array(shape=nonscalar_shapes), data=st.data())
def test_reshape_view_flatten(xp_backend, a, data):
    t = tinyattn.tensor(a)
    np.testing.assert_array_equal(host(t.reshape(-1)), a.reshape(-1))
    np.testing.assert_array_equal(host(t.view(a.size)), a.reshape(a.size))
    np.testing.assert_array_equal(host(t.flatten()), a.reshape(-1))
    start = data.draw(st.integers(0, a.ndim - 1))
    flat = t.flatten(start)
    assert flat.shape == a.shape[:start] + (int(np.prod(a.shape[start:])),)
    np.testing.assert_array_equal(host(flat), a.reshape(flat.shape))
    shape = a.shape[::-1]
    np.testing.assert_array_equal(host(t.reshape(shape)), a.reshape(shape))


@given(a=one_array(shape=matrix_shapes), data=st.data())
def test_transpose_permute_T(xp_backend, a, data):
    t = tinyattn.tensor(a)
    d0, d1 = data.draw(st.integers(-a.ndim, a.ndim - 1)), data.draw(st.integers(-a.ndim, a.ndim - 1))
    np.testing.assert_array_equal(host(t.transpose(d0, d1)), np.swapaxes(a, d0, d1))
    order = data.draw(st.permutations(range(a.ndim)))
    np.testing.assert_array_equal(host(t.permute(*order)), np.transpose(a, order))
    np.testing.assert_array_equal(host(t.permute(order)), np.transpose(a, order))
    np.testing.assert_array_equal(host(t.T), a.T)
    np.testing.assert_array_equal(host(t.mT), np.swapaxes(a, -1, -2))
    # a transposed tensor is not contiguous; reshape copies, contiguous().view() works
    swapped = t.transpose(0, -1)
    np.testing.assert_array_equal(host(swapped.reshape(-1)), np.swapaxes(a, 0, -1).reshape(-1))
    np.testing.assert_array_equal(host(swapped.contiguous().view(-1)), np.swapaxes(a, 0, -1).reshape(-1))


@given(a=one_array(), data=st.data())
def test_unsqueeze_squeeze_expand(xp_backend, a, data):
    t = tinyattn.tensor(a)
    dim = data.draw(st.integers(-a.ndim - 1, a.ndim))
    u = t.unsqueeze(dim)
    np.testing.assert_array_equal(host(u), np.expand_dims(a, dim))
    np.testing.assert_array_equal(host(u.squeeze(dim)), a)
    np.testing.assert_array_equal(host(u.squeeze()), np.squeeze(a))
    target = data.draw(st.integers(1, 3))
    expanded = u.expand(*[target if n == 1 else -1 for n in u.shape])
    np.testing.assert_array_equal(host(expanded), np.broadcast_to(u_host := host(u), [target if n == 1 else n for n in u_host.shape]))
    np.testing.assert_array_equal(host(t.expand(2, *a.shape)), np.broadcast_to(a, (2,) + a.shape))


@given(a=one_array(shape=matrix_shapes), k=st.integers(-3, 3))
def test_tril_triu(xp_backend, a, k):
    t = tinyattn.tensor(a)
    np.testing.assert_array_equal(host(t.tril(k)), np.tril(a, k))
    np.testing.assert_array_equal(host(tinyattn.triu(t, diagonal=k)), np.triu(a, k))


# ---------------------------------------------------------------------------------------------
# indexing, masking, joining


@given(a=one_array(shape=nonscalar_shapes), data=st.data())
def test_basic_indexing(xp_backend, a, data):
    t = tinyattn.tensor(a)
    i = data.draw(st.integers(-a.shape[0], a.shape[0] - 1))
    np.testing.assert_array_equal(host(t[i]), a[i])
    start = data.draw(st.integers(0, a.shape[0]))
    stop = data.draw(st.integers(start, a.shape[0]))
    step = data.draw(st.integers(1, 3))
    np.testing.assert_array_equal(host(t[start:stop:step]), a[start:stop:step])
    np.testing.assert_array_equal(host(t[None, ..., None]), a[None, ..., None])
    np.testing.assert_array_equal(host(t[..., -1]), a[..., -1])
    if a.ndim >= 2:
        np.testing.assert_array_equal(host(t[:, 0]), a[:, 0])
        np.testing.assert_array_equal(host(t[i, 1:]), a[i, 1:])


@given(a=one_array(shape=nonscalar_shapes), data=st.data())
def test_integer_tensor_and_mask_indexing(xp_backend, a, data):
    t = tinyattn.tensor(a)
    index = np.array(data.draw(st.lists(st.integers(-a.shape[0], a.shape[0] - 1), min_size=1, max_size=5)))
    np.testing.assert_array_equal(host(t[tinyattn.tensor(index)]), a[index])
    np.testing.assert_array_equal(host(t[index.tolist()]), a[index])
    mask = a > 0
    np.testing.assert_array_equal(host(t[tinyattn.tensor(mask)]), a[mask])
    np.testing.assert_array_equal(host(t[t > 0]), a[mask])
    if a.ndim >= 2:
        cols = np.array([0, a.shape[1] - 1, 0])
        np.testing.assert_array_equal(host(t[:, tinyattn.tensor(cols)]), a[:, cols])


@given(pair=broadcast_pair(), value=st.floats(-5, 5) | st.just(-np.inf))
def test_masked_fill(xp_backend, pair, value):
    a, b = pair
    mask = b > 0
    assume(mask.ndim <= a.ndim and np.broadcast_shapes(mask.shape, a.shape) == a.shape)
    t = tinyattn.tensor(a)
    result = t.masked_fill(tinyattn.tensor(mask), value)
    expected = np.where(mask, np.asarray(value, a.dtype), a)
    np.testing.assert_array_equal(host(result), expected)
    np.testing.assert_array_equal(host(t), a)  # masked_fill leaves its input as it was
    t.masked_fill_(tinyattn.tensor(mask), value)
    np.testing.assert_array_equal(host(t), expected)


@given(data=st.data())
def test_cat_stack_split_chunk(xp_backend, data):
    dtype = data.draw(dtypes)
    shape = data.draw(nonscalar_shapes)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    parts = []
    for n in sizes:
        s = list(shape)
        s[dim] = n
        parts.append(data.draw(arrays(dtype, tuple(s))))
    joined = tinyattn.cat([tinyattn.tensor(p) for p in parts], dim=dim)
    expected = np.concatenate(parts, axis=dim)
    np.testing.assert_array_equal(host(joined), expected)
    for piece, want in zip(joined.split(sizes, dim=dim), parts):
        np.testing.assert_array_equal(host(piece), want)
    size = data.draw(st.integers(1, 4))
    pieces = joined.split(size, dim=dim)
    np.testing.assert_array_equal(host(tinyattn.cat(pieces, dim=dim)), expected)
    assert all(p.shape[dim] == size for p in pieces[:-1]) and 1 <= pieces[-1].shape[dim] <= size
    chunks = data.draw(st.integers(1, 4))
    np.testing.assert_array_equal(host(tinyattn.cat(joined.chunk(chunks, dim), dim)), expected)
    assert len(joined.chunk(chunks, dim)) <= chunks
    same = [data.draw(arrays(dtype, shape)) for _ in range(len(sizes))]
    stack_dim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    np.testing.assert_array_equal(
        host(tinyattn.stack([tinyattn.tensor(p) for p in same], dim=stack_dim)), np.stack(same, axis=stack_dim)
    )


# ---------------------------------------------------------------------------------------------
# softmax and log_softmax


def np_softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@given(case=array_and_dim())
def test_softmax_and_log_softmax_match_numpy(xp_backend, case):
    a, dim, _ = case
    t = tinyattn.tensor(a)
    p = t.softmax(dim)
    check_dtype(p, a)
    check_dtype(t.log_softmax(dim), a)
    close(p, np_softmax(a, dim), a.dtype)
    close(tinyattn.softmax(t, dim=dim), np_softmax(a, dim), a.dtype)
    close(t.log_softmax(dim), np.log(np_softmax(a, dim)), a.dtype)
    np.testing.assert_allclose(host(p.sum(dim)), 1.0, rtol=1e-5 if a.dtype == np.float32 else 1e-12)
    assert (host(p) >= 0).all()


@given(case=array_and_dim(), shift=st.floats(-1e3, 1e3))
def test_softmax_is_shift_invariant(xp_backend, case, shift):
    a, dim, _ = case
    t = tinyattn.tensor(a)
    loose = dict(rtol=1e-4, atol=1e-5) if a.dtype == np.float32 else dict(rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(host((t + shift).softmax(dim)), host(t.softmax(dim)), **loose)


@pytest.mark.parametrize("dtype", [tinyattn.float32, tinyattn.float64])
def test_softmax_stable_at_huge_logits(xp_backend, dtype):
    x = tinyattn.tensor([[1e4, 0.0, -1e4], [1e4, 1e4, 1e4], [-1e4, -1e4, 0.0]], dtype=dtype)
    p = host(x.softmax(-1))
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3], [0, 0, 1]], atol=1e-7)
    log_p = host(x.log_softmax(-1))
    assert np.isfinite(log_p).all()
    np.testing.assert_allclose(log_p[0], [0.0, -1e4, -2e4], rtol=1e-6)
    np.testing.assert_allclose(log_p[1], [-np.log(3)] * 3, rtol=1e-6)


def test_softmax_of_a_masked_row_keeps_zeros(xp_backend):
    x = tinyattn.tensor([[0.5, 1.0, 2.0]]).masked_fill(tinyattn.tensor([[False, True, True]]), -tinyattn.inf)
    np.testing.assert_allclose(host(x.softmax(-1)), [[1.0, 0.0, 0.0]])


# ---------------------------------------------------------------------------------------------
# parity with PyTorch: same inputs, same forward, same gradients


def _mask(lib, shape):
    return lib.tensor(np.arange(int(np.prod(shape))).reshape(shape) % 3 == 0)


PARITY = {
    # name: (function of (lib, *tensors), input shapes, input range)
    "add_broadcast": (lambda lib, x, y: x + y, [(2, 3, 4), (3, 1)], None),
    "sub_broadcast": (lambda lib, x, y: x - y, [(4,), (2, 3, 4)], None),
    "mul_broadcast": (lambda lib, x, y: x * y, [(2, 1, 4), (3, 1)], None),
    "div_broadcast": (lambda lib, x, y: x / y, [(2, 3, 4), (1, 4)], (0.5, 2.0)),
    "pow_scalar": (lambda lib, x: x**3, [(3, 4)], None),
    "pow_tensor": (lambda lib, x, y: x**y, [(3, 4), (4,)], (0.5, 2.0)),
    "rpow": (lambda lib, x: 2.0**x, [(3, 4)], None),
    "neg": (lambda lib, x: -x, [(3, 4)], None),
    "exp": (lambda lib, x: x.exp(), [(2, 3, 4)], None),
    "log": (lambda lib, x: x.log(), [(2, 3, 4)], (0.5, 3.0)),
    "sqrt": (lambda lib, x: x.sqrt(), [(2, 3, 4)], (0.5, 3.0)),
    "tanh": (lambda lib, x: x.tanh(), [(2, 3, 4)], None),
    "sigmoid": (lambda lib, x: x.sigmoid(), [(2, 3, 4)], None),
    "relu": (lambda lib, x: x.relu(), [(2, 3, 4)], None),
    "abs": (lambda lib, x: x.abs(), [(2, 3, 4)], None),
    "clamp": (lambda lib, x: x.clamp(-0.5, 0.5), [(2, 3, 4)], None),
    "maximum": (lambda lib, x, y: lib.maximum(x, y), [(3, 4), (4,)], None),
    "sum_all": (lambda lib, x: x.sum(), [(2, 3, 4)], None),
    "sum_dim": (lambda lib, x: x.sum(dim=1), [(2, 3, 4)], None),
    "sum_dims_keepdim": (lambda lib, x: x.sum(dim=(0, 2), keepdim=True), [(2, 3, 4)], None),
    "mean_all": (lambda lib, x: x.mean(), [(2, 3, 4)], None),
    "mean_dim_keepdim": (lambda lib, x: x.mean(dim=-1, keepdim=True), [(2, 3, 4)], None),
    "var_all": (lambda lib, x: x.var(), [(2, 3, 4)], None),
    "var_dim": (lambda lib, x: x.var(dim=1), [(2, 3, 4)], None),
    "var_biased_keepdim": (lambda lib, x: x.var(dim=-1, keepdim=True, unbiased=False), [(2, 3, 4)], None),
    "cumsum": (lambda lib, x: x.cumsum(1), [(2, 3, 4)], None),
    "cumsum_function_last_dim": (lambda lib, x: lib.cumsum(x, dim=-1), [(2, 3, 40)], None),
    "logsumexp": (lambda lib, x: x.logsumexp(-1), [(2, 3, 4)], None),
    "logsumexp_dims_keepdim": (lambda lib, x: lib.logsumexp(x * 30, (0, 2), keepdim=True), [(2, 3, 4)], None),
    "max_all": (lambda lib, x: x.max(), [(2, 3, 4)], None),
    "max_dim": (lambda lib, x: x.max(dim=1).values, [(2, 3, 4)], None),
    "min_dim_keepdim": (lambda lib, x: x.min(dim=-1, keepdim=True)[0], [(2, 3, 4)], None),
    "mm": (lambda lib, x, y: x @ y, [(3, 4), (4, 5)], None),
    "bmm": (lambda lib, x, y: x @ y, [(2, 3, 4), (2, 4, 5)], None),
    "matmul_broadcast": (lambda lib, x, y: lib.matmul(x, y), [(2, 1, 3, 4), (3, 4, 2)], None),
    "matmul_batch_by_matrix": (lambda lib, x, y: x @ y, [(2, 3, 4), (4, 5)], None),
    "matmul_vector_matrix": (lambda lib, x, y: x @ y, [(4,), (2, 4, 5)], None),
    "matmul_matrix_vector": (lambda lib, x, y: x @ y, [(2, 3, 4), (4,)], None),
    "dot": (lambda lib, x, y: lib.dot(x, y), [(5,), (5,)], None),
    "attention_scores": (lambda lib, q, k: (q @ k.transpose(-2, -1) / 2.0).softmax(-1), [(2, 3, 4), (2, 3, 4)], None),
    "reshape": (lambda lib, x: x.reshape(4, 6) * 1, [(2, 3, 4)], None),
    "view": (lambda lib, x: x.view(6, -1), [(2, 3, 4)], None),
    "reshape_noncontiguous": (lambda lib, x: x.transpose(0, 2).reshape(-1), [(2, 3, 4)], None),
    "transpose": (lambda lib, x: x.transpose(0, 2), [(2, 3, 4)], None),
    "permute": (lambda lib, x: x.permute(2, 0, 1), [(2, 3, 4)], None),
    "T": (lambda lib, x: x.T, [(3, 4)], None),
    "unsqueeze_squeeze": (lambda lib, x: x.unsqueeze(1).squeeze(), [(2, 1, 4)], None),
    "flatten": (lambda lib, x: x.flatten(1), [(2, 3, 4)], None),
    "expand": (lambda lib, x: x.expand(2, 3, 4), [(3, 1)], None),
    "index_int": (lambda lib, x: x[1], [(2, 3, 4)], None),
    "index_slices": (lambda lib, x: x[:, 1:, ::2], [(2, 3, 4)], None),
    "index_none_ellipsis": (lambda lib, x: x[None, ..., -1], [(2, 3, 4)], None),
    "index_repeated_tensor": (lambda lib, x: x[lib.tensor([0, 2, 0, 1])], [(3, 4)], None),
    "index_tensor_in_dim1": (lambda lib, x: x[:, lib.tensor([[0, 0], [2, 1]])], [(2, 3, 4)], None),
    "index_bool_mask": (lambda lib, x: x[_mask(lib, (3, 4))], [(3, 4)], None),
    "masked_fill": (lambda lib, x: x.masked_fill(_mask(lib, (3, 4)), -2.0), [(2, 3, 4)], None),
    "masked_fill_inplace": (lambda lib, x: (x * 1).masked_fill_(_mask(lib, (3, 4)), 0.0), [(2, 3, 4)], None),
    "causal_mask_inplace": (
        lambda lib, q, k: (lambda s: s.masked_fill_(lib.triu(lib.ones(3, 3), diagonal=1).bool(), -float("inf")))(
            q @ k.transpose(-2, -1)
        ).softmax(-1),
        [(2, 3, 4), (2, 3, 4)], None,
    ),
    "setitem_nonleaf": (lambda lib, x, y: _setitem(x * 2, y), [(3, 4), (4,)], None),
    "where": (lambda lib, x, y: lib.where(x > 0, x, y), [(2, 3, 4), (4,)], None),
    "cat": (lambda lib, x, y: lib.cat([x, y, x], dim=1), [(2, 3, 4), (2, 1, 4)], None),
    "stack": (lambda lib, x, y: lib.stack([x, y], dim=-1), [(3, 4), (3, 4)], None),
    "split": (lambda lib, x: x.split(2, dim=-1)[1] * x.split([1, 3], dim=-1)[0], [(3, 4)], None),
    "chunk": (lambda lib, x: x.chunk(3, dim=0)[2], [(5, 2)], None),
    "softmax": (lambda lib, x: x.softmax(dim=1), [(2, 3, 4)], None),
    "log_softmax": (lambda lib, x: x.log_softmax(dim=-1), [(2, 3, 4)], None),
    "softmax_function": (lambda lib, x: lib.softmax(x, dim=0), [(2, 3, 4)], None),
    "tril": (lambda lib, x: lib.tril(x, diagonal=-1), [(2, 4, 4)], None),
    "triu": (lambda lib, x: x.triu(1), [(4, 3)], None),
    "clone": (lambda lib, x: x.clone() * x, [(3, 4)], None),
    "double": (lambda lib, x: x.double() * 2, [(3, 4)], None),
    "diamond": (lambda lib, x: (lambda a: a.exp() + a * a)(x * 2), [(3, 4)], None),
    "inplace_mul_on_copy": (lambda lib, x: (lambda y: y.mul_(2) * y)(x * 1), [(3, 4)], None),
    "iadd_nonleaf": (lambda lib, x, y: _iadd(x * 1, y), [(3, 4), (4,)], None),
}


def _setitem(target, value):
    target[1] = value
    target[:, 0] = 7.0
    return target


def _iadd(target, value):
    target += value
    return target


def _run(lib, fn, arrays, weights_seed):
    inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *inputs)
    weights = np.random.default_rng(weights_seed).standard_normal(tuple(out.shape)).astype(arrays[0].dtype)
    (out * lib.tensor(weights)).sum().backward()
    return out.detach().numpy(), [x.grad.numpy() if x.grad is not None else None for x in inputs]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", list(PARITY))
def test_forward_and_gradients_match_pytorch(torch, name, dtype):
    fn, shapes_, bounds = PARITY[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    low, high = bounds or (-2.0, 2.0)
    arrays_ = [rng.uniform(low, high, shape).astype(dtype) for shape in shapes_]
    ours, our_grads = _run(tinyattn, fn, arrays_, 1)
    theirs, their_grads = _run(torch, fn, arrays_, 1)
    loose = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, **loose, err_msg=f"{name}: forward")
    for i, (g, want) in enumerate(zip(our_grads, their_grads)):
        assert (g is None) == (want is None), f"{name}: grad of input {i}"
        if want is not None:
            assert g.shape == want.shape and g.dtype == want.dtype
            np.testing.assert_allclose(g, want, **loose, err_msg=f"{name}: gradient of input {i}")


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "var"])
def test_reductions_with_dim_match_pytorch_on_every_dim(torch, op):
    a = np.random.default_rng(3).standard_normal((2, 3, 4))
    for dim in range(-3, 3):
        for keepdim in (False, True):
            ours, theirs = getattr(tinyattn.tensor(a), op)(dim=dim, keepdim=keepdim), getattr(torch.tensor(a), op)(dim=dim, keepdim=keepdim)
            if op in ("max", "min"):
                np.testing.assert_array_equal(host(ours.indices), theirs.indices.numpy())
                ours, theirs = ours.values, theirs.values
            np.testing.assert_allclose(host(ours), theirs.numpy(), rtol=1e-12)


def _run_on_host(fn, arrays):
    inputs = [tinyattn.tensor(a, requires_grad=True) for a in arrays]
    out = fn(tinyattn, *inputs)
    weights = np.random.default_rng(1).standard_normal(tuple(out.shape))
    out.backward(tinyattn.tensor(weights, dtype=out.dtype))
    return host(out), [host(x.grad) for x in inputs]


@pytest.mark.parametrize("name", list(PARITY))
def test_array_api_strict_gives_the_numpy_results(name):
    """The same ops, forward and backward, on the stand-in for CuPy: the same numbers as on NumPy."""
    fn, shapes_, bounds = PARITY[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    low, high = bounds or (-2.0, 2.0)
    arrays_ = [rng.uniform(low, high, shape) for shape in shapes_]
    want, want_grads = _run_on_host(fn, arrays_)
    backend.use_array_api_strict(True)
    try:
        got, got_grads = _run_on_host(fn, arrays_)
    finally:
        backend.use_array_api_strict(False)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


@given(start=st.floats(-100, 100), step=st.floats(0.001, 3).map(float) | st.sampled_from([0.1, 0.7, 1 / 3, -0.25]),
       count=st.integers(0, 300), dtype=st.sampled_from(["float32", "float64"]))
def test_arange_with_a_float_step_gives_pytorchs_numbers(torch, start, step, count, dtype):
    end = start + step * (count + 0.5)
    ours = host(tinyattn.arange(start, end, step, dtype=getattr(tinyattn, dtype)))
    np.testing.assert_array_equal(ours, torch.arange(start, end, step, dtype=getattr(torch, dtype)).numpy())


@pytest.mark.parametrize("make, want", [  # (call, PyTorch's result)
    (lambda lib: lib.arange(np.int64(3)), [0, 1, 2]),  # NumPy ints are ints: int64
    (lambda lib: lib.arange(True, 4), [1, 2, 3]),
    (lambda lib: lib.arange(0, 5, 1.5, dtype=lib.int64), [0, 1, 2, 3, 4]),  # the bounds made ints first
    (lambda lib: lib.arange(0, 4.5, dtype=lib.int64), [0, 1, 2, 3]),
    (lambda lib: lib.linspace(0, 1.5, 4, dtype=lib.int64), [0, 0, 0, 1]),
    (lambda lib: lib.linspace(-2.7, 10.2, 7, dtype=lib.int64), [-2, 0, 2, 4, 6, 8, 10]),
    (lambda lib: lib.linspace(0, 10, 5, dtype=lib.int32), [0, 2, 5, 7, 10]),
])
def test_integer_arange_and_linspace_are_pytorchs(make, want):
    result = make(tinyattn)
    assert result.tolist() == want and not result.dtype.is_floating_point


def test_arange_refuses_a_step_pointing_away_from_the_end():
    for start, end, step in ((0, 10, -1), (5.0, 0.0, 0.5)):
        with pytest.raises(ValueError, match="sign must point from start to end"):
            tinyattn.arange(start, end, step)
    with pytest.raises(ValueError, match="sign must point"):  # checked on the bounds as given
        tinyattn.arange(-0.5, 0, -1, dtype=tinyattn.int64)
    with pytest.raises(ValueError, match="step must be nonzero"):  # 0.5 made an int is 0
        tinyattn.arange(0, 0, 0.5, dtype=tinyattn.int64)
    assert tinyattn.arange(5, 5).shape == (0,)


@given(start=st.floats(-1000, 1000), end=st.floats(-1000, 1000), steps=st.integers(0, 300),
       dtype=st.sampled_from(["float32", "float64"]))
def test_linspace_gives_pytorchs_numbers(torch, start, end, steps, dtype):
    ours = host(tinyattn.linspace(start, end, steps, dtype=getattr(tinyattn, dtype)))
    np.testing.assert_array_equal(ours, torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).numpy())


def test_cumsum_of_float32_is_pytorchs_to_the_bit(torch):
    """PyTorch sums float32 in float64 and rounds each running sum once; a float32 running sum drifts."""
    values = np.random.default_rng(0).standard_normal((4, 5000)).astype(np.float32)
    ours = tinyattn.tensor(values).cumsum(-1).numpy()
    assert np.array_equal(ours, torch.tensor(values).cumsum(-1).numpy())
    assert not np.array_equal(ours, np.cumsum(values, axis=-1))  # the float32 sum would not be
