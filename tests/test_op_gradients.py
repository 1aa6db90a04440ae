"""The gradient of every op against finite differences, with inputs drawn by Hypothesis.

Each test runs twice through the `xp_backend` fixture: on NumPy and on array_api_strict (which stands
in for CuPy). Inputs are float64 in [-3, 3] with small shapes; `assume` and element filters keep them
off the kinks (0 for relu and abs, the clamp bounds) and ties (max, min, maximum) where the
derivative is undefined. Every check also verifies that each gradient has its input's shape.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn
from tinyattn import backend, gradcheck
from tinyattn.app import selfcheck
from tinyattn.nn import functional as F

# xp_backend is function-scoped but only chooses the array library, the same for every example
property_test = settings(
    suppress_health_check=[*settings.default.suppress_health_check, HealthCheck.function_scoped_fixture,
                           HealthCheck.filter_too_much]
)


def floats(low=-3.0, high=3.0):
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


ANY = floats()
POSITIVE = floats(0.1, 3.0)
AWAY_FROM_ZERO = floats().filter(lambda v: abs(v) > 1e-3)
AWAY_FROM_ONES = floats().filter(lambda v: abs(abs(v) - 1) > 1e-3)
NOT_SMALL = floats().filter(lambda v: abs(v) > 0.1)


def shapes(min_dims=1, max_dims=3, max_side=3):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side)


def arrays(shape, elements=ANY, unique=False):
    return hnp.arrays(np.float64, shape, elements=elements, unique=unique)


def leaf(values):
    return tinyattn.tensor(np.asarray(values), dtype=tinyattn.float64, requires_grad=True)


def ids(values):
    return tinyattn.tensor(np.asarray(values, dtype=np.int64))


def mask(values):
    return tinyattn.tensor(np.asarray(values, dtype=bool))


def well_separated(values, gap=1e-3):
    """True when all values differ by more than `gap` (no ties for max/min to split)."""
    flat = np.sort(np.ravel(values))
    return flat.size < 2 or bool(np.min(np.diff(flat)) > gap)


def check(fn, *inputs):
    """gradcheck fn, then backward once: every input that requires grad gets a gradient of its shape."""
    assert gradcheck(fn, inputs)
    tinyattn.manual_seed(0)
    outputs = fn(*inputs)
    outputs = (outputs,) if isinstance(outputs, tinyattn.Tensor) else outputs
    total = sum((o * o).sum() for o in outputs if isinstance(o, tinyattn.Tensor) and o.requires_grad)
    if isinstance(total, tinyattn.Tensor):
        total.backward()
    for x in inputs:
        if isinstance(x, tinyattn.Tensor) and x.requires_grad and x.grad is not None:
            assert x.grad.shape == x.shape and x.grad.dtype == x.dtype


# ---------------------------------------------------------------------------------------------
# elementwise ops and whole-tensor reductions

UNARY = {
    # name: (fn, elements, needs distinct values)
    "neg": (lambda x: -x, ANY, False),
    "exp": (lambda x: x.exp(), ANY, False),
    "log": (lambda x: x.log(), POSITIVE, False),
    "sqrt": (lambda x: x.sqrt(), POSITIVE, False),
    "rsqrt": (lambda x: x.rsqrt(), POSITIVE, False),
    "tanh": (lambda x: x.tanh(), ANY, False),
    "sigmoid": (lambda x: x.sigmoid(), ANY, False),
    "relu": (lambda x: x.relu(), AWAY_FROM_ZERO, False),
    "abs": (lambda x: x.abs(), AWAY_FROM_ZERO, False),
    "clamp": (lambda x: x.clamp(-1.0, 1.0), AWAY_FROM_ONES, False),
    "pow scalar exponent": (lambda x: x**3, ANY, False),
    "pow fractional exponent": (lambda x: x**1.5, POSITIVE, False),
    "rpow": (lambda x: 2.0**x, ANY, False),
    "scalar arithmetic": (lambda x: (2.5 - x) * 3 / 4 + 1, ANY, False),
    "rdiv": (lambda x: 1 / x, NOT_SMALL, False),
    "gelu": (lambda x: F.gelu(x), ANY, False),
    "gelu tanh": (lambda x: F.gelu(x, approximate="tanh"), ANY, False),
    "dropout": (lambda x: F.dropout(x, 0.5), ANY, False),
    "clone": (lambda x: x.clone(), ANY, False),
    "T contiguous": (lambda x: x.T.contiguous(), ANY, False),
    "flatten": (lambda x: x.flatten(), ANY, False),
    "softmax": (lambda x: x.softmax(-1), ANY, False),
    "log_softmax": (lambda x: x.log_softmax(-1), ANY, False),
    "safe_softmax": (lambda x: F.safe_softmax(x, -1), ANY, False),
    "sum": (lambda x: x.sum(), ANY, False),
    "mean": (lambda x: x.mean(), ANY, False),
    "max": (lambda x: x.max(), ANY, True),
    "min": (lambda x: x.min(), ANY, True),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@property_test
@given(data=st.data())
def test_unary_gradient(xp_backend, name, data):
    fn, elements, distinct = UNARY[name]
    values = data.draw(arrays(shapes(), elements, unique=distinct), label="x")
    if distinct:
        assume(well_separated(values))
    check(fn, leaf(values))


@property_test
@given(data=st.data())
def test_dtype_round_trip(xp_backend, data):
    # through float32 and back: the rounding to 7 digits needs a larger step and tolerance
    x = leaf(data.draw(arrays(shapes()), label="x"))
    assert gradcheck(lambda x: x.float().double() * 2, x, eps=1e-3, atol=1e-3, rtol=1e-3)
    (x.float() * 2).sum().backward()
    assert x.grad.dtype == tinyattn.float64 and x.grad.shape == x.shape


# ---------------------------------------------------------------------------------------------
# binary ops, always with broadcasting shapes

BINARY = {
    # name: (fn, elements of a, elements of b, needs a != b everywhere)
    "add": (lambda a, b: a + b, ANY, ANY, False),
    "sub": (lambda a, b: a - b, ANY, ANY, False),
    "mul": (lambda a, b: a * b, ANY, ANY, False),
    "div": (lambda a, b: a / b, ANY, NOT_SMALL, False),
    "pow": (lambda a, b: a**b, POSITIVE, ANY, False),
    "maximum": (lambda a, b: a.maximum(b), ANY, ANY, True),
    "minimum": (lambda a, b: a.minimum(b), ANY, ANY, True),
    "clamp tensor min": (lambda a, b: a.clamp(min=b), ANY, ANY, True),
    "clamp tensor max": (lambda a, b: a.clamp(max=b), ANY, ANY, True),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@property_test
@given(data=st.data())
def test_binary_gradient_with_broadcasting(xp_backend, name, data):
    fn, elements_a, elements_b, distinct = BINARY[name]
    a_shape, b_shape = data.draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3), label="shapes"
    ).input_shapes
    a = data.draw(arrays(a_shape, elements_a), label="a")
    b = data.draw(arrays(b_shape, elements_b), label="b")
    if distinct:
        assume(np.all(np.abs(np.subtract(a, b)) > 1e-3))
    check(fn, leaf(a), leaf(b))
    # and with a Python number as the second operand
    number = float(np.ravel(b)[0])
    if distinct:
        assume(np.all(np.abs(a - number) > 1e-3))
    check(lambda a: fn(a, number), leaf(a))


@property_test
@given(data=st.data())
def test_clamp_between_tensor_bounds(xp_backend, data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=2, max_side=3),
                       label="shapes").input_shapes
    x, low, high = (data.draw(arrays(shape), label=name) for shape, name in zip(shapes, ("x", "low", "high")))
    low, high = np.minimum(low, high), np.maximum(low, high)
    # off the kinks: x away from both bounds, and the bounds apart (low == high is a kink in each bound)
    assume(np.all(np.abs(x - low) > 1e-3) and np.all(np.abs(x - high) > 1e-3) and np.all(high - low > 1e-3))
    check(lambda x, low, high: x.clamp(low, high), leaf(x), leaf(low), leaf(high))


@property_test
@given(data=st.data())
def test_where_with_broadcasting(xp_backend, data):
    c_shape, a_shape, b_shape = data.draw(
        hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=3)
    ).input_shapes
    condition = data.draw(hnp.arrays(bool, c_shape))
    a, b = data.draw(arrays(a_shape)), data.draw(arrays(b_shape))
    check(lambda a, b: tinyattn.where(mask(condition), a, b), leaf(a), leaf(b))


def suffix_shape(shape):
    """A shape that broadcasts *to* `shape`: some of its last dims, each possibly 1."""
    return st.integers(0, len(shape)).flatmap(
        lambda k: st.tuples(*(st.sampled_from([n, 1]) for n in shape[len(shape) - k:]))
    )


@property_test
@given(data=st.data())
def test_masked_fill_with_broadcast_mask(xp_backend, data):
    x = data.draw(arrays(shapes()))
    m = data.draw(hnp.arrays(bool, data.draw(suffix_shape(x.shape))))
    value = data.draw(ANY)
    check(lambda x: x.masked_fill(mask(m), value), leaf(x))


# ---------------------------------------------------------------------------------------------
# reductions along dims


def dims(ndim):
    """None, one dim (possibly negative) or a tuple of distinct dims."""
    return st.one_of(
        st.none(),
        st.integers(-ndim, ndim - 1),
        st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(tuple),
    )


def reduced_count(shape, dim):
    axes = range(len(shape)) if dim is None else [dim] if isinstance(dim, int) else dim
    return math.prod(shape[a] for a in axes)


@pytest.mark.parametrize("name", ["sum", "mean", "var", "var biased", "std"])
@property_test
@given(data=st.data())
def test_reduction_over_dims(xp_backend, name, data):
    values = data.draw(arrays(shapes()), label="x")
    dim = data.draw(dims(values.ndim), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    if name == "sum":
        fn = lambda x: x.sum(dim, keepdim=keepdim)  # noqa: E731
    elif name == "mean":
        fn = lambda x: x.mean(dim, keepdim=keepdim)  # noqa: E731
    elif name == "var":
        assume(reduced_count(values.shape, dim) >= 2)  # the unbiased estimate divides by n - 1
        fn = lambda x: x.var(dim, keepdim=keepdim)  # noqa: E731
    elif name == "var biased":
        fn = lambda x: x.var(dim, unbiased=False, keepdim=keepdim)  # noqa: E731
    else:
        assume(reduced_count(values.shape, dim) >= 2)
        axes = None if dim is None else dim
        assume(np.all(np.var(values, axis=axes, ddof=1) > 1e-3))  # sqrt has a kink at 0
        fn = lambda x: x.std(dim, keepdim=keepdim)  # noqa: E731
    check(fn, leaf(values))


@property_test
@given(data=st.data())
def test_cumsum(xp_backend, data):
    values = data.draw(arrays(shapes(min_dims=0)), label="x")
    dim = data.draw(st.integers(-max(values.ndim, 1), max(values.ndim, 1) - 1), label="dim")
    check(lambda x: x.cumsum(dim), leaf(values))


@property_test
@given(data=st.data())
def test_logsumexp(xp_backend, data):
    values = data.draw(arrays(shapes()), label="x")
    dim = data.draw(dims(values.ndim).filter(lambda d: d is not None), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    check(lambda x: x.logsumexp(dim, keepdim=keepdim), leaf(values))


@pytest.mark.parametrize("name", ["max", "min", "topk"])
@property_test
@given(data=st.data())
def test_max_min_along_dim(xp_backend, name, data):
    values = data.draw(arrays(shapes(), unique=True), label="x")
    assume(well_separated(values))
    dim = data.draw(st.integers(-values.ndim, values.ndim - 1), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    if name == "topk":
        k = data.draw(st.integers(1, values.shape[dim]), label="k")
        check(lambda x: x.topk(k, dim=dim), leaf(values))  # (values, indices): indices are not checked
    else:
        check(lambda x: getattr(x, name)(dim=dim, keepdim=keepdim), leaf(values))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "safe_softmax"])
@property_test
@given(data=st.data())
def test_softmax_along_dim(xp_backend, name, data):
    values = data.draw(arrays(shapes()), label="x")
    dim = data.draw(st.integers(-values.ndim, values.ndim - 1), label="dim")
    fn = getattr(F, name)
    check(lambda x: fn(x, dim=dim), leaf(values))


@property_test
@given(data=st.data())
def test_safe_softmax_with_masked_rows(xp_backend, data):
    values = data.draw(arrays(shapes(min_dims=2)), label="x")
    hidden = data.draw(hnp.arrays(bool, values.shape), label="mask")  # may hide whole rows
    check(lambda x: F.safe_softmax(x.masked_fill(mask(hidden), -math.inf), dim=-1), leaf(values))


# ---------------------------------------------------------------------------------------------
# matmul


@property_test
@given(data=st.data())
def test_matmul_batched_broadcast_and_vectors(xp_backend, data):
    n, k, m = (data.draw(st.integers(1, 3), label=s) for s in "nkm")
    batch_a, batch_b = data.draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, max_side=2), label="batch"
    ).input_shapes
    a_vector, b_vector = data.draw(st.booleans(), label="a 1-D"), data.draw(st.booleans(), label="b 1-D")
    a_shape = (k,) if a_vector else batch_a + (n, k)
    b_shape = (k,) if b_vector else batch_b + (k, m)
    check(lambda a, b: a @ b, leaf(data.draw(arrays(a_shape))), leaf(data.draw(arrays(b_shape))))


# ---------------------------------------------------------------------------------------------
# shapes and views


@pytest.mark.parametrize(
    "name", ["reshape", "view", "permute", "transpose", "expand", "unsqueeze", "squeeze", "flatten", "repeat",
             "tril", "triu", "T", "t"]
)
@property_test
@given(data=st.data())
def test_shape_op(xp_backend, name, data):
    values = data.draw(arrays(shapes(min_dims=2 if name in ("tril", "triu") else 1)), label="x")
    ndim = values.ndim
    if name == "reshape":
        fn = lambda x: x.reshape(tuple(reversed(x.shape))).reshape(-1)  # noqa: E731
    elif name == "view":
        fn = lambda x: x.view(-1, x.shape[-1])  # noqa: E731
    elif name == "permute":
        order = data.draw(st.permutations(range(ndim)), label="dims")
        fn = lambda x: x.permute(*order)  # noqa: E731
    elif name == "transpose":
        d0, d1 = data.draw(st.integers(-ndim, ndim - 1)), data.draw(st.integers(-ndim, ndim - 1))
        fn = lambda x: x.transpose(d0, d1)  # noqa: E731
    elif name == "expand":
        values = values[(slice(None),) * (ndim - 1) + (slice(0, 1),)]  # a size-1 dim to grow
        lead = data.draw(st.integers(0, 2), label="new dims")
        target = (2,) * lead + values.shape[:-1] + (data.draw(st.integers(1, 3), label="size"),)
        fn = lambda x: x.expand(*target)  # noqa: E731
    elif name == "unsqueeze":
        dim = data.draw(st.integers(-ndim - 1, ndim), label="dim")
        fn = lambda x: x.unsqueeze(dim)  # noqa: E731
    elif name == "squeeze":
        fn = lambda x: x.unsqueeze(0).squeeze()  # noqa: E731
    elif name == "flatten":
        start = data.draw(st.integers(0, ndim - 1), label="start")
        end = data.draw(st.integers(start, ndim - 1), label="end")
        fn = lambda x: x.flatten(start, end)  # noqa: E731
    elif name == "repeat":
        sizes = data.draw(st.lists(st.integers(1, 2), min_size=ndim, max_size=ndim + 1), label="sizes")
        fn = lambda x: x.repeat(*sizes)  # noqa: E731
    elif name == "t":
        values = values.reshape(values.shape[0], math.prod(values.shape[1:]))[:, :3]  # t() takes at most 2 dims
        fn = lambda x: x.t()  # noqa: E731
    elif name in ("tril", "triu"):
        diagonal = data.draw(st.integers(-2, 2), label="diagonal")
        fn = lambda x: getattr(x, name)(diagonal)  # noqa: E731
    else:
        fn = lambda x: x.T  # noqa: E731
    check(fn, leaf(values))


# ---------------------------------------------------------------------------------------------
# indexing, masking, joining


@st.composite
def basic_keys(draw, shape):
    """A key of ints, slices (positive steps), None and maybe a trailing `...`, for `shape`."""
    used = draw(st.integers(1, len(shape)))
    parts = []
    for n in shape[:used]:
        if draw(st.booleans()):
            parts.append(draw(st.integers(-n, n - 1)))
        else:
            start = draw(st.one_of(st.none(), st.integers(-n, n)))
            stop = draw(st.one_of(st.none(), st.integers(-n, n)))
            parts.append(slice(start, stop, draw(st.sampled_from([None, 1, 2]))))
        if draw(st.integers(0, 4)) == 0:
            parts.append(None)
    if used < len(shape) and draw(st.booleans()):
        parts.append(Ellipsis)
    return tuple(parts) if len(parts) > 1 or draw(st.booleans()) else parts[0]


@property_test
@given(data=st.data())
def test_index_basic(xp_backend, data):
    values = data.draw(arrays(shapes()), label="x")
    key = data.draw(basic_keys(values.shape), label="key")
    check(lambda x: x[key], leaf(values))


@property_test
@given(data=st.data())
def test_index_bool_mask(xp_backend, data):
    values = data.draw(arrays(shapes()), label="x")
    chosen = data.draw(hnp.arrays(bool, values.shape), label="mask")
    check(lambda x: x[mask(chosen)], leaf(values))


@property_test
@given(data=st.data())
def test_index_int_tensor_with_repeats(xp_backend, data):
    values = data.draw(arrays(shapes()), label="x")
    n = values.shape[0]
    rows = data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=4), label="rows")
    check(lambda x: x[ids(rows)], leaf(values))
    if values.ndim >= 2:
        check(lambda x: x[ids(rows), 1:], leaf(values))


@property_test
@given(data=st.data())
def test_index_put(xp_backend, data):
    values = data.draw(arrays(shapes()), label="x")
    kind = data.draw(st.sampled_from(["basic", "mask", "ints"]), label="kind")
    if kind == "basic":
        key = data.draw(basic_keys(values.shape), label="key")
    elif kind == "mask":
        key = mask(data.draw(hnp.arrays(bool, values.shape), label="mask"))
    else:
        n = values.shape[0]
        key = ids(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True), label="rows"))
    target_shape = values[key.numpy() if isinstance(key, tinyattn.Tensor) else key].shape
    # the value: full shape, or broadcast from its last dim
    value_shape = target_shape if not target_shape or data.draw(st.booleans()) else target_shape[-1:]
    value = data.draw(arrays(value_shape), label="value")

    def put(x, v):
        y = x.clone()
        y[key] = v
        return y

    check(put, leaf(values), leaf(value))
    # a scalar value: the gradient goes to x only, zero where it was overwritten
    check(lambda x: put(x, 0.5), leaf(values))


@property_test
@given(data=st.data())
def test_inplace_op_on_a_view(xp_backend, data):
    """An in-place op on a view of y is recorded on y (CopySlices): gradients reach y's inputs and the value."""
    values = data.draw(arrays(shapes()), label="x")
    transposed = data.draw(st.booleans(), label="transposed")  # a base not laid out in row order
    base_shape = values.shape[::-1] if transposed else values.shape
    key = data.draw(basic_keys(base_shape), label="key")
    view_shape = np.empty(base_shape)[key].shape
    op = data.draw(st.sampled_from(["mul_", "add_", "setitem", "zero_", "masked_fill_", "exp_", "tanh_"]),
                   label="op")
    value = data.draw(arrays(view_shape), label="value")
    chosen = data.draw(hnp.arrays(bool, view_shape), label="mask")  # for masked_fill_

    def change_a_view(x, v):
        y = x.t() if transposed and x.ndim == 2 else (x.permute(*reversed(range(x.ndim))) if transposed else x)
        y = y * 1.5  # a non-leaf, with the strides of x's transpose when transposed
        view = y[key]
        if op == "setitem":
            view[...] = v
        elif op == "zero_":
            view.zero_()
        elif op == "masked_fill_":
            view.masked_fill_(mask(chosen), 0.25)
        elif op in ("exp_", "tanh_"):
            view.mul_(v)  # so that the value has a gradient too (before: exp_ and tanh_ save their
            getattr(view, op)()  # output, and changing it afterwards makes backward raise, as in PyTorch)
        else:
            getattr(view, op)(v)
        return y * y + view.sum()

    check(change_a_view, leaf(values), leaf(value))


@property_test
@given(data=st.data())
def test_gather(xp_backend, data):
    values = data.draw(arrays(shapes()), label="x")
    dim = data.draw(st.integers(0, values.ndim - 1), label="dim")
    # along dim: any length; elsewhere: at most x's size (PyTorch gathers from that corner of x)
    index_shape = tuple(
        data.draw(st.integers(1, 3 if d == dim else n)) for d, n in enumerate(values.shape)
    )
    positions = st.integers(0, values.shape[dim] - 1)
    index = data.draw(hnp.arrays(np.int64, index_shape, elements=positions), label="index")
    check(lambda x: x.gather(dim, ids(index)), leaf(values))


@pytest.mark.parametrize("name", ["cat", "stack", "split", "chunk", "unbind"])
@property_test
@given(data=st.data())
def test_join_and_split(xp_backend, name, data):
    shape = data.draw(shapes(), label="shape")
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    if name == "cat":
        count = data.draw(st.integers(1, 3), label="count")
        parts = []
        for _ in range(count):
            part_shape = list(shape)
            part_shape[dim] = data.draw(st.integers(1, 3))
            parts.append(leaf(data.draw(arrays(tuple(part_shape)))))
        check(lambda *xs: tinyattn.cat(list(xs), dim=dim), *parts)
    elif name == "stack":
        count = data.draw(st.integers(1, 3), label="count")
        parts = [leaf(data.draw(arrays(shape))) for _ in range(count)]
        stack_dim = data.draw(st.integers(-len(shape) - 1, len(shape)), label="stack dim")
        check(lambda *xs: tinyattn.stack(list(xs), dim=stack_dim), *parts)
    else:
        x = leaf(data.draw(arrays(shape)))
        if name == "split":
            size = data.draw(st.integers(1, 3), label="size")
            check(lambda x: x.split(size, dim=dim), x)
        elif name == "chunk":
            chunks = data.draw(st.integers(1, 3), label="chunks")
            check(lambda x: x.chunk(chunks, dim=dim), x)
        else:
            check(lambda x: x.unbind(dim), x)


# ---------------------------------------------------------------------------------------------
# nn.functional


@property_test
@given(data=st.data())
def test_linear(xp_backend, data):
    batch = data.draw(shapes(min_dims=0, max_dims=2), label="batch")
    n_in, n_out = data.draw(st.integers(1, 3), label="in"), data.draw(st.integers(1, 3), label="out")
    x, w = leaf(data.draw(arrays(batch + (n_in,)))), leaf(data.draw(arrays((n_out, n_in))))
    if data.draw(st.booleans(), label="bias"):
        check(lambda x, w, b: F.linear(x, w, b), x, w, leaf(data.draw(arrays((n_out,)))))
    else:
        check(lambda x, w: F.linear(x, w), x, w)


@property_test
@given(data=st.data())
def test_embedding_weight(xp_backend, data):
    rows, width = data.draw(st.integers(1, 4), label="rows"), data.draw(st.integers(1, 3), label="width")
    tokens = data.draw(hnp.arrays(np.int64, data.draw(shapes(max_dims=2)), elements=st.integers(0, rows - 1)))
    weight = leaf(data.draw(arrays((rows, width))))
    check(lambda w: F.embedding(ids(tokens), w), weight)  # repeated ids add up


@property_test
@given(data=st.data())
def test_dropout(xp_backend, data):
    p = data.draw(st.sampled_from([0.1, 0.5, 0.9]), label="p")
    check(lambda x: F.dropout(x, p), leaf(data.draw(arrays(shapes()))))


@property_test
@given(data=st.data())
def test_layer_norm(xp_backend, data):
    values = data.draw(arrays(shapes(min_dims=1)), label="x")
    last = data.draw(st.integers(1, values.ndim), label="normalized dims")
    normalized = values.shape[values.ndim - last:]
    if data.draw(st.booleans(), label="affine"):
        w, b = leaf(data.draw(arrays(normalized))), leaf(data.draw(arrays(normalized)))
        check(lambda x, w, b: F.layer_norm(x, normalized, w, b), leaf(values), w, b)
    else:
        check(lambda x: F.layer_norm(x, normalized), leaf(values))


@property_test
@given(data=st.data())
def test_cross_entropy_and_nll(xp_backend, data):
    n, c = data.draw(st.integers(1, 4), label="N"), data.draw(st.integers(1, 4), label="C")
    extra = data.draw(st.sampled_from([(), (2,)]), label="d")
    logits = data.draw(arrays((n, c) + extra), label="logits")
    targets = data.draw(hnp.arrays(np.int64, (n,) + extra, elements=st.integers(-1, c - 1)), label="targets")
    reduction = data.draw(st.sampled_from(["mean", "sum", "none"]), label="reduction")
    if reduction == "mean":
        assume(np.any(targets != -1))  # the mean over no valid target is 0 / 0
    check(lambda z: F.cross_entropy(z, ids(targets), ignore_index=-1, reduction=reduction), leaf(logits))
    if not extra:
        check(lambda z: F.nll_loss(z.log_softmax(-1), ids(targets), ignore_index=-1, reduction=reduction),
              leaf(logits))


@property_test
@given(data=st.data())
def test_mse_loss(xp_backend, data):
    shape = data.draw(shapes(), label="shape")
    reduction = data.draw(st.sampled_from(["mean", "sum", "none"]), label="reduction")
    check(lambda a, b: F.mse_loss(a, b, reduction=reduction), leaf(data.draw(arrays(shape))),
          leaf(data.draw(arrays(shape))))


@property_test
@given(data=st.data())
def test_scaled_dot_product_attention(xp_backend, data):
    batch = data.draw(shapes(min_dims=0, max_dims=1, max_side=2), label="batch")
    tq, tk, d, dv = (data.draw(st.integers(1, 3), label=s) for s in ("Tq", "Tk", "d", "dv"))
    q = leaf(data.draw(arrays(batch + (tq, d))))
    k = leaf(data.draw(arrays(batch + (tk, d))))
    v = leaf(data.draw(arrays(batch + (tk, dv))))
    kind = data.draw(st.sampled_from(["plain", "causal", "bool mask", "float mask"]), label="mask")
    dropout_p = data.draw(st.sampled_from([0.0, 0.5]), label="dropout_p")
    options = {"dropout_p": dropout_p}
    if kind == "causal":
        options["is_causal"] = True
    elif kind == "bool mask":
        options["attn_mask"] = mask(data.draw(hnp.arrays(bool, (tq, tk))))  # rows may hide everything
    elif kind == "float mask":
        options["attn_mask"] = tinyattn.tensor(data.draw(arrays((tq, tk))), dtype=tinyattn.float64)
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **options), q, k, v)


@property_test
@given(data=st.data())
def test_fused_attention_both_outputs(xp_backend, data):
    """F.attention's context and weights, with broadcast leading dims, a learned bias and a mask."""
    batch = data.draw(shapes(min_dims=1, max_dims=2, max_side=2), label="batch")
    tq, tk, d, dv = (data.draw(st.integers(1, 3), label=s) for s in ("Tq", "Tk", "d", "dv"))
    # keys and values may be shared by the leading dims (size 1 or missing), as one head's over heads
    kv_batch = data.draw(st.sampled_from([batch, (1,) * len(batch), batch[1:]]), label="kv batch")
    q = leaf(data.draw(arrays(batch + (tq, d))))
    k = leaf(data.draw(arrays(kv_batch + (tk, d))))
    v = leaf(data.draw(arrays(kv_batch + (tk, dv))))
    inputs = [q, k, v]
    options = {"dropout_p": data.draw(st.sampled_from([0.0, 0.5]), label="dropout_p"),
               "scale": data.draw(st.sampled_from([None, 0.7]), label="scale")}
    if data.draw(st.booleans(), label="blocked"):
        options["blocked"] = mask(data.draw(hnp.arrays(bool, (tq, tk))))  # rows may hide everything
    with_bias = data.draw(st.booleans(), label="bias")
    if with_bias:
        inputs.append(leaf(data.draw(arrays((tq, tk)), label="bias values")))
    outputs = data.draw(st.sampled_from(["context", "weights", "both"]), label="outputs")

    def fn(q, k, v, bias=None):
        context, weights = F.attention(q, k, v, bias=bias, **options)
        return {"context": context, "weights": weights, "both": (context, weights)}[outputs]

    check(fn, *inputs)


# ---------------------------------------------------------------------------------------------
# gradients accumulate in .grad


ACCUMULATING = {
    "square": lambda x: x * x + x,  # x used twice in one graph
    "softmax": lambda x: x.softmax(-1) * x,
    "index": lambda x: x[0] * 2,
    "matmul": lambda x: x @ x.T,
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
}


@pytest.mark.parametrize("name", sorted(ACCUMULATING))
@property_test
@given(data=st.data())
def test_grad_accumulates_over_two_backward_calls(xp_backend, name, data):
    fn = ACCUMULATING[name]
    values = data.draw(arrays(shapes(min_dims=2, max_dims=2)), label="x")
    x = leaf(values)
    out = fn(x)
    seed = leaf(data.draw(arrays(tuple(out.shape)), label="grad")).detach()
    out.backward(seed, retain_graph=True)
    once = np.array(x.grad.tolist())
    out.backward(seed)  # the same graph again: .grad adds up
    np.testing.assert_allclose(x.grad.tolist(), 2 * once, rtol=1e-12, atol=1e-12)
    fn(x).backward(seed)  # a fresh graph: adds up too
    np.testing.assert_allclose(x.grad.tolist(), 3 * once, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# every entry of the `tinyattn gradcheck` table (ops and layers), on both backends

ENTRIES = [c.name for c in selfcheck.op_checks() + selfcheck.module_checks()]
_table = {}  # backend name -> {entry name: Check}, built once per backend (tensors live on it)


@pytest.mark.parametrize("name", ENTRIES)
def test_table_entry(xp_backend, name):
    if xp_backend not in _table:
        state = tinyattn.get_rng_state()
        try:
            _table[xp_backend] = {c.name: c for c in selfcheck.op_checks() + selfcheck.module_checks()}
        finally:
            tinyattn.set_rng_state(state)
    entry = _table[xp_backend][name]
    assert backend.strict_mode() == (xp_backend == "array_api_strict")
    assert gradcheck(entry.fn, entry.inputs)


@pytest.mark.parametrize("base, exponent", [
    ([0.0, 2.0, 0.0, -2.0], [0.0, 0.0, -1.0, 0.5]),  # b == 0 gives 0, a == 0 with b >= 0 gives 0
    (-2.0, [0.0, 1.0, -1.0]),  # a negative Python base: NaN for the exponent, no error
    (0.0, [0.0, 1.0, -1.0]),
    (2.0, [0.0, 1.0, -1.0]),
])
def test_pow_gradients_at_the_edges_are_pytorchs(torch, base, exponent):
    grads = []
    for lib in (tinyattn, torch):
        a = lib.tensor(base, requires_grad=True) if isinstance(base, list) else base
        b = lib.tensor(exponent, requires_grad=True)
        (a**b).sum().backward()
        grads.append([b.grad.tolist()] + ([a.grad.tolist()] if isinstance(base, list) else []))
    np.testing.assert_array_equal(np.array(grads[0], dtype=float), np.array(grads[1], dtype=float))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("exponent", [2, 3, -2, 3.0, -2.0, 2.5, -1])
def test_a_tensor_to_a_number_has_pytorchs_bits(torch, dtype, exponent):
    """x ** 3 is x * x * x in PyTorch and x ** -2 is 1 / (x * x), rounded twice, and the gradient is
    grad * (b * x ** (b - 1)): the same bits here, so that a training loop follows the same path.
    (Other exponents go to pow(), whose last bit PyTorch's vectorised pow can round otherwise.)"""
    values = np.random.default_rng(3).normal(scale=3, size=4096).astype(dtype)
    pytorch_x = torch.tensor(values, requires_grad=True)
    our_x = tinyattn.tensor(values, requires_grad=True)
    pytorch_y, our_y = pytorch_x**exponent, our_x**exponent
    upstream = np.random.default_rng(4).normal(size=4096).astype(dtype)
    pytorch_y.backward(torch.tensor(upstream))
    our_y.backward(tinyattn.tensor(upstream))
    if exponent in (2, 3, 3.0, -1):  # the gradient's x ** (b - 1) is then x, x * x or 1 / (x * x) as well
        np.testing.assert_array_equal(our_x.grad.numpy(), pytorch_x.grad.numpy())
    if exponent != 2.5:
        np.testing.assert_array_equal(our_y.detach().numpy(), pytorch_y.detach().numpy())
    np.testing.assert_allclose(our_x.grad.numpy(), pytorch_x.grad.numpy(), rtol=1e-5 if dtype == "float32" else 1e-12)
