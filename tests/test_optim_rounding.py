"""optim.SGD rounds each `a + alpha * b` once, as PyTorch's add(b, alpha=...) does (a fused multiply-add):
the same float32 weights as PyTorch's SGD, bit for bit, step after step.

The fused result is defined by exact arithmetic (fractions here), not by one CPU's kernels, so the
helper's test holds on any CPU; PyTorch's SGD computes it with the CPU's fused multiply-add."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tinyattn
from tinyattn import backend


def fused(a, b, alpha):
    """a + alpha * b for float32 a, b with alpha rounded to float32, rounded once to float32 (exactly)."""
    exact = Fraction(float(a)) + Fraction(float(np.float32(alpha))) * Fraction(float(b))
    nearest = np.float32(float(exact))  # float() rounds the fraction to float64: 2 roundings, so check it
    below, above = np.nextafter(nearest, np.float32(-np.inf)), np.nextafter(nearest, np.float32(np.inf))
    return min((below, nearest, above), key=lambda v: (abs(Fraction(float(v)) - exact), int(v.view(np.int32)) & 1))


floats32 = st.floats(-1e3, 1e3, width=32, allow_subnormal=False)


@given(a=st.lists(floats32, min_size=1, max_size=20), data=st.data(),
       alpha=st.sampled_from([-0.1, -0.01, 0.9, 1 - 0.2, -3e-4, 0.5]))
def test_add_scaled_rounds_once_as_a_fused_multiply_add(a, data, alpha):
    b = data.draw(st.lists(floats32, min_size=len(a), max_size=len(a)))
    a32, b32 = np.array(a, np.float32), np.array(b, np.float32)
    got = backend.add_scaled(np.empty_like(a32), a32, b32, alpha)
    assert got.dtype == np.float32
    assert got.tolist() == [float(fused(x, y, alpha)) for x, y in zip(a32, b32)]
    in_place = a32.copy()
    backend.add_scaled(in_place, in_place, b32, alpha)
    assert in_place.tobytes() == got.tobytes()


def test_add_scaled_in_float64_is_the_plain_formula():
    a, b = np.array([1.0, 2.0]), np.array([3.0, -4.0])
    np.testing.assert_array_equal(backend.add_scaled(np.empty(2), a, b, 0.5), a + 0.5 * b)


@pytest.mark.parametrize("options", [
    dict(lr=0.1), dict(lr=0.01, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.01),
    dict(lr=0.03, momentum=0.8, nesterov=True, maximize=True, weight_decay=1e-3), dict(lr=0.1, weight_decay=0.1),
])
def test_sgd_gives_pytorchs_float32_weights_bit_for_bit(torch, options):
    rng = np.random.default_rng(1)
    start = rng.standard_normal((300, 70)).astype(np.float32)
    ours = tinyattn.nn.Parameter(tinyattn.from_numpy(start.copy()))
    theirs = torch.nn.Parameter(torch.from_numpy(start.copy()))
    ours_sgd, their_sgd = tinyattn.optim.SGD([ours], **options), torch.optim.SGD([theirs], **options)
    for step in range(50):
        grad = rng.standard_normal(start.shape).astype(np.float32)
        ours.grad, theirs.grad = tinyattn.from_numpy(grad.copy()), torch.from_numpy(grad.copy())
        ours_sgd.step()
        their_sgd.step()
        differ = np.sum(ours.detach().numpy() != theirs.detach().numpy())
        assert differ == 0, f"step {step + 1}: {differ} of {start.size} elements differ from PyTorch's"
