"""The direct paths for small ops (in place without a graph, simple index keys, the mean of a NumPy float array)
give the bits, the versions and the errors of the general path.

The in-place direct paths step aside while an observer (the tracer, anomaly detection) watches the
ops, so running the same program with a silent observer gives the general path to compare with.
"""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn
from tinyattn import autograd


class Silent:
    """An observer that sees every op and does nothing: it turns the direct paths off."""

    def on_forward(self, node, args, outputs):
        pass

    def on_backward(self, node, grads, result):
        pass


def general_path(program, *arrays):
    autograd.observers.append(observer := Silent())
    try:
        return program(*arrays)
    finally:
        autograd.observers.remove(observer)


floats = hnp.arrays(np.float32, (3, 4), elements=st.floats(-50, 50, width=32))
operands = st.one_of(st.floats(-3, 3, width=32), st.integers(-3, 3), floats, hnp.arrays(np.float32, (4,), elements=st.floats(-5, 5, width=32)))


def run_in_place(x_array, operand, op, view):
    x = tinyattn.tensor(x_array, requires_grad=True)
    other = tinyattn.tensor(operand) if isinstance(operand, np.ndarray) else operand
    with tinyattn.no_grad():
        target = x[1:] if view and not (isinstance(operand, np.ndarray) and operand.shape == (3, 4)) else x
        if op == "+=":
            target += other
        elif op == "-=":
            target -= other
        elif op == "*=":
            target *= other
        else:
            target /= other
    x.data += -0.1 * x  # the SGD step on .data, as lectures write it
    return x.detach().numpy().copy(), x._version[0]


@given(x=floats, operand=operands, op=st.sampled_from(["+=", "-=", "*=", "/="]), view=st.booleans())
def test_in_place_arithmetic_without_a_graph_is_the_general_path_bit_for_bit(x, operand, op, view):
    direct, version = run_in_place(x, operand, op, view)
    general, general_version = general_path(run_in_place, x, operand, op, view)
    np.testing.assert_array_equal(direct.view(np.int32), general.view(np.int32))  # the bits, NaN included
    assert version == general_version


def run_scatter(demb, ids, key_kind):
    dC = tinyattn.zeros(5, 4)
    demb, Xb = tinyattn.tensor(demb), tinyattn.tensor(ids)
    versions = []
    with tinyattn.no_grad():
        for k in range(Xb.shape[0]):
            for j in range(Xb.shape[1]):
                ix = Xb[k, j] if key_kind == "tensor" else int(Xb[k, j])
                dC[ix] += demb[k, j]
                versions.append(dC._version[0])
        dC[1:3] = 0.5
        dC[tinyattn.tensor([0, 0, 4])] = demb[0, :3]  # repeated ids: the last write wins, as in NumPy
    return dC.numpy().copy(), versions


@given(demb=hnp.arrays(np.float32, (6, 3, 4), elements=st.floats(-5, 5, width=32)),
       ids=hnp.arrays(np.int64, (6, 3), elements=st.integers(-5, 4)), key_kind=st.sampled_from(["tensor", "int"]))
def test_the_manual_embedding_backward_is_the_general_path_bit_for_bit(demb, ids, key_kind):
    direct, versions = run_scatter(demb, ids, key_kind)
    general, general_versions = general_path(run_scatter, demb, ids, key_kind)
    np.testing.assert_array_equal(direct, general)
    assert versions == general_versions


@pytest.mark.parametrize("key", [5, -6, (0, 4), (3, 0), (0, 0, 0)])
def test_a_simple_key_out_of_range_is_the_same_index_error(key):
    x = tinyattn.zeros(3, 4)
    with pytest.raises(IndexError):
        x[key]
    with pytest.raises(IndexError):
        x[key] = 1.0


def test_a_0d_tensor_key_is_its_int_and_a_float_0d_key_is_refused():
    x = tinyattn.arange(12.0).reshape(3, 4)
    assert x[tinyattn.tensor(2)].tolist() == x[2].tolist() == [8.0, 9.0, 10.0, 11.0]
    assert x[tinyattn.tensor(1), tinyattn.tensor(-1)].item() == 7.0
    with pytest.raises(IndexError, match="long, int or bool"):
        x[tinyattn.tensor(1.0)]


def test_an_int_key_is_a_view_that_shares_the_version_counter_and_records_select():
    x = tinyattn.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], requires_grad=True)
    row, one = x[1], x[1, 2]
    assert row.grad_fn.name() == one.grad_fn.name() == "SelectBackward0"
    assert row._version is x._version and row._base is x
    (row.sum() + one).backward()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 2.0]]


def test_in_place_without_a_graph_still_refuses_a_shape_it_would_change_and_expanded_memory():
    x = tinyattn.zeros(3)
    with pytest.raises(Exception, match="broadcast"):
        x += tinyattn.ones(2, 3)
    e = tinyattn.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="expand"):
        e += 1.0
    with pytest.raises(RuntimeError, match="expand"):
        e[0] = 1.0


def test_a_leaf_that_requires_grad_is_still_refused_in_place_outside_no_grad():
    p = tinyattn.zeros(3, requires_grad=True)
    with pytest.raises(tinyattn.errors.BackwardError, match="no_grad"):
        p += 1.0
    with pytest.raises(tinyattn.errors.BackwardError):
        p[0] = 1.0


@given(
    hnp.arrays(st.sampled_from([np.float32, np.float64]), hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=5),
               elements=st.floats(-1e4, 1e4, width=32)),
    st.data(), st.booleans(), st.booleans(),
)
def test_mean_is_numpys_mean_bit_for_bit(values, data, keepdim, transposed):
    """backend.mean_along takes np.mean's steps without its wrappers: the same type, dtype, shape and bits."""
    from tinyattn import backend

    x = values.T if transposed else values  # a non-contiguous layout too
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(x.ndim - 1, 0)), max_size=x.ndim)))) or tuple(range(x.ndim))
    count = int(np.prod([x.shape[a] for a in axes]))
    expected = np.mean(x, axis=axes, keepdims=keepdim)
    got = backend.mean_along(x, axes, count, keepdim)
    assert type(got) is type(expected) and got.dtype == expected.dtype and np.shape(got) == np.shape(expected)
    assert np.asarray(got).tobytes() == np.asarray(expected).tobytes()
    assert tinyattn.tensor(x).mean(axes or None, keepdim=keepdim).numpy().tobytes() == np.asarray(expected).tobytes()
