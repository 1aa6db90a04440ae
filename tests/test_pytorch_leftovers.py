"""Small PyTorch names that teaching code uses: narrow, fmod, split(split_size=), data_ptr,
tinyattn.cuda.set_device, nn.DataParallel — against PyTorch, and fmod's and narrow's gradients against
finite differences (float64, both backends)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn
import tinyattn.nn as nn
from tinyattn import gradcheck
from tinyattn.errors import DeviceError


# xp_backend is function-scoped but only chooses the array library, the same for every example
property_test = settings(suppress_health_check=[*settings.default.suppress_health_check,
                                                HealthCheck.function_scoped_fixture])


def floats(low=-3.0, high=3.0):
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


def leaf(values):
    return tinyattn.tensor(np.asarray(values), dtype=tinyattn.float64, requires_grad=True)


# --- narrow ------------------------------------------------------------------------------------


@property_test
@given(data=st.data(), values=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                                         elements=floats()))
def test_narrow_gradient_matches_finite_differences(xp_backend, data, values):
    dim = data.draw(st.integers(-values.ndim, values.ndim - 1))
    size = values.shape[dim]
    start = data.draw(st.integers(-size, size - 1))
    length = data.draw(st.integers(0, size - (start % size)))
    x = leaf(values)
    assert gradcheck(lambda t: t.narrow(dim, start, length), (x,))


def test_narrow_is_pytorchs_view(torch):
    values = np.arange(24.0).reshape(2, 3, 4)
    for dim, start, length in [(0, 1, 1), (1, -2, 2), (2, 0, 4), (-1, 4, 0), (2, -4, 1)]:
        expected = torch.tensor(values).narrow(dim, start, length).numpy()
        np.testing.assert_array_equal(tinyattn.tensor(values).narrow(dim, start, length).numpy(), expected)
        np.testing.assert_array_equal(tinyattn.narrow(tinyattn.tensor(values), dim, start, length).numpy(), expected)
    x = tinyattn.zeros(3, 4)
    x.narrow(1, 1, 2).fill_(1.0)  # a view: writing through it changes x, as in PyTorch
    np.testing.assert_array_equal(x.numpy(), [[0, 1, 1, 0]] * 3)


def test_narrow_bad_arguments_get_clear_errors():
    x = tinyattn.zeros(3, 4)
    with pytest.raises(IndexError, match=r"start \(3\) \+ length \(2\) exceeds dimension size \(4\) of dim 1"):
        x.narrow(1, 3, 2)
    with pytest.raises(IndexError, match="start 5 is out of range for dim 1 of size 4"):
        x.narrow(1, 5, 0)
    with pytest.raises(ValueError, match="length must be non-negative"):
        x.narrow(0, 0, -1)


def test_split_takes_the_split_size_keyword(torch):
    ours = tinyattn.arange(7).split(split_size=3)
    theirs = torch.arange(7).split(split_size=3)
    assert [p.tolist() for p in ours] == [p.tolist() for p in theirs]
    assert [p.tolist() for p in tinyattn.arange(6).reshape(2, 3).split(split_size=2, dim=1)] == [[[0, 1], [3, 4]],
                                                                                              [[2], [5]]]


# --- fmod --------------------------------------------------------------------------------------


@property_test
@given(quotients=hnp.arrays(np.float64, (2, 3), elements=st.tuples(st.integers(-3, 3), floats(0.01, 0.99)).map(sum)),
       b=hnp.arrays(np.float64, (3,), elements=floats(0.2, 3.0)), signs=hnp.arrays(bool, (2, 3)))
def test_fmod_gradients_match_finite_differences(xp_backend, quotients, b, signs):
    # a = q * b with q at least 0.01 from a whole number: off the jumps of fmod (and of trunc(a / b))
    b = np.where(signs[0], -b, b)
    a = np.where(signs, -quotients, quotients) * b
    assert gradcheck(lambda x, y: tinyattn.fmod(x, y), (leaf(a), leaf(b)))


def test_fmod_values_and_gradients_equal_pytorchs(torch):
    a = np.array([5.0, -5.0, 5.0, -5.0, 0.0, -0.0, 7.5, -6.0, 1.0, np.inf])
    b = np.array([3.0, 3.0, -3.0, -3.0, 2.0, 2.0, 2.0, 3.0, 0.0, 2.0])
    results = []
    for lib in (torch, tinyattn):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        out = lib.fmod(x, y)
        out.sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy(), y.grad.numpy()))
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))  # -0.0 where PyTorch has it
    ints = np.array([7, -7, 7, -7])
    np.testing.assert_array_equal(tinyattn.tensor(ints).fmod(3).numpy(), torch.tensor(ints).fmod(3).numpy())
    np.testing.assert_array_equal(tinyattn.tensor(ints).fmod(-2.5).numpy(), torch.tensor(ints).fmod(-2.5).numpy())


def test_fmod_on_both_backends(xp_backend):
    a = tinyattn.tensor([5.0, -5.0, 5.0, -5.0, -6.0, 0.5])
    b = tinyattn.tensor([3.0, 3.0, -3.0, -3.0, 3.0, 0.3])
    np.testing.assert_allclose(tinyattn.fmod(a, b).numpy(), np.fmod(a.numpy(), b.numpy()), rtol=0, atol=1e-7)
    assert np.signbit(tinyattn.fmod(a, b).numpy()[4])  # -6 fmod 3 is -0.0
    np.testing.assert_array_equal(tinyattn.tensor([7, -7]).fmod(3).numpy(), [1, -1])


def test_fmod_bad_input_gets_clear_errors():
    with pytest.raises(ZeroDivisionError, match="integer fmod by zero"):
        tinyattn.tensor([5, 6]).fmod(0)
    with pytest.raises(TypeError, match="fmod is not defined for two bool tensors"):
        tinyattn.tensor([True]).fmod(tinyattn.tensor([True]))
    assert tinyattn.tensor([5], dtype=tinyattn.int64)[:0].fmod(0).shape == (0,)  # nothing divided


# --- data_ptr, cuda.set_device, nn.DataParallel ------------------------------------------------


def test_data_ptr_is_equal_for_views_that_start_at_the_same_element(xp_backend):
    x = tinyattn.arange(6.0)
    assert isinstance(x.data_ptr(), int) and x.data_ptr() != 0
    assert x.view(2, 3).data_ptr() == x.data_ptr() == x[0:].data_ptr() == x.narrow(0, 0, 2).data_ptr()
    assert x[1:].data_ptr() == x.data_ptr() + x.element_size()
    assert x.clone().data_ptr() != x.data_ptr()


def test_data_ptr_compares_as_pytorchs(torch):
    for lib in (torch, tinyattn):
        x = lib.arange(12.0).reshape(3, 4)
        assert x.t().data_ptr() == x.data_ptr()
        assert x[1].data_ptr() - x.data_ptr() == 4 * x.element_size()
        assert x.contiguous().data_ptr() == x.data_ptr()


@pytest.mark.skipif(tinyattn.cuda.is_available(), reason="the answers without a GPU")
def test_set_device_without_a_gpu_answers_as_pytorchs_cpu_build():
    tinyattn.cuda.set_device(-1)  # a negative index does nothing, as in PyTorch
    for device in (0, "cuda:0", tinyattn.device("cuda", 0)):
        with pytest.raises(DeviceError, match=r"set_device\(\) needs a CUDA GPU"):
            tinyattn.cuda.set_device(device)
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        tinyattn.cuda.set_device("cpu")


def test_data_parallel_is_reached_from_nn():
    assert nn.DataParallel is nn.parallel.DataParallel
    tinyattn.manual_seed(0)
    inner = nn.Linear(2, 3)
    model = nn.DataParallel(inner)
    assert list(model.state_dict()) == ["module.weight", "module.bias"]
    x = tinyattn.randn(4, 2)
    np.testing.assert_array_equal(model(x).detach().numpy(), inner(x).detach().numpy())
