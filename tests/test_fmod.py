"""fmod (C's remainder, with the dividend's sign) against PyTorch, and its gradient against finite differences."""

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import tinyattn

from test_op_gradients import arrays, check, leaf, property_test, shapes

CALLS = ["L.fmod(L.tensor([5.5, -5.5, 3.0, -0.0]), 2)", "L.fmod(L.tensor([5.5, -5.5]), L.tensor([-2.0, 2.0]))",
         "L.tensor([7, -7]).fmod(3)", "L.tensor([7, -7]).fmod(L.tensor([2, -2]))", "L.tensor([7, -7]).fmod(2.5)",
         "L.fmod(L.tensor([1.0, 2.0]), 0)", "L.tensor([5.0, 1.0]).fmod(L.tensor([[2.0], [3.0]]))",
         "L.tensor([7], dtype=L.int32).fmod(3)", "L.tensor([7], dtype=L.uint8).fmod(3)",
         "L.tensor([1e4, float('inf')]).fmod(3)"]


@pytest.mark.parametrize("call", CALLS)
def test_fmod_is_pytorchs(torch, call):
    ours, theirs = (eval(call, {"L": L}) for L in (tinyattn, torch))
    assert str(ours.dtype).rpartition(".")[2] == str(theirs.dtype).rpartition(".")[2]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_fmod_gradients_are_pytorchs(torch):
    grads = []
    for L in (tinyattn, torch):
        a = L.tensor([5.5, -5.5, 3.2], dtype=L.float64, requires_grad=True)
        b = L.tensor([2.0, -2.0, 1.5], dtype=L.float64, requires_grad=True)
        (L.fmod(a, b) * L.tensor([1.0, 2.0, 3.0], dtype=L.float64)).sum().backward()
        grads.append((a.grad.tolist(), b.grad.tolist()))
    assert grads[0] == grads[1]


def test_integer_fmod_by_zero_is_refused(torch):
    with pytest.raises(ZeroDivisionError, match="integer fmod by zero"):
        tinyattn.fmod(tinyattn.tensor([1, 2]), tinyattn.tensor([1, 0]))
    with pytest.raises(RuntimeError):
        torch.fmod(torch.tensor([1, 2]), torch.tensor([1, 0]))
    with pytest.raises(TypeError, match="fmod is not defined for two bool tensors"):
        tinyattn.fmod(tinyattn.tensor([True]), tinyattn.tensor([True]))


@property_test
@given(data=st.data())
def test_fmod_gradient(xp_backend, data):
    a = data.draw(arrays(shapes()))
    b = data.draw(arrays(a.shape, elements=st.floats(0.5, 3.0) | st.floats(-3.0, -0.5)))
    ratio = a / b
    assume(np.all(np.abs(ratio - np.round(ratio)) > 1e-3))  # off the jumps, where a / b is a whole number
    check(lambda a, b: tinyattn.fmod(a, b), leaf(a), leaf(b))
    if np.all(np.abs(a / 1.25 - np.round(a / 1.25)) > 1e-3):  # a number as the divisor
        check(lambda a: a.fmod(1.25), leaf(a))
