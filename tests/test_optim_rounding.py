"""optim.SGD rounds each `a + alpha * b` once, as PyTorch's add(b, alpha=...) does with its vectorised
kernels (a fused multiply-add): the same float32 weights as PyTorch's SGD, bit for bit, step after step.

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


def pytorch_fuses(torch):
    """Whether PyTorch's add(b, alpha=...) rounds once here: its vectorised CPU kernels (AVX2, AVX-512)
    use a fused multiply-add; its plain scalar kernel (ATEN_CPU_CAPABILITY=default) rounds twice."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(4096).astype(np.float32), rng.standard_normal(4096).astype(np.float32)
    theirs = torch.from_numpy(a).add(torch.from_numpy(b), alpha=-0.1).numpy()
    return theirs.tobytes() == backend.add_scaled(np.empty_like(a), a, b, -0.1).tobytes()


@pytest.mark.parametrize("options", [
    dict(lr=0.1), dict(lr=0.01, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.01),
    dict(lr=0.03, momentum=0.8, nesterov=True, maximize=True, weight_decay=1e-3), dict(lr=0.1, weight_decay=0.1),
])
def test_sgd_gives_pytorchs_float32_weights_bit_for_bit(torch, options):
    """Where PyTorch's kernels fuse (x86 with AVX2 or AVX-512): the same weights, bit for bit, over 50
    steps. Where they round twice: each step, from PyTorch's weights, as close to
    PyTorch's weights as two roundings allow (the single rounding itself is checked against exact
    arithmetic above)."""
    fuses = pytorch_fuses(torch)
    rng = np.random.default_rng(1)
    start = rng.standard_normal((300, 70)).astype(np.float32)
    ours = tinyattn.nn.Parameter(tinyattn.from_numpy(start.copy()))
    theirs = torch.nn.Parameter(torch.from_numpy(start.copy()))
    ours_sgd, their_sgd = tinyattn.optim.SGD([ours], **options), torch.optim.SGD([theirs], **options)
    for step in range(50):
        grad = rng.standard_normal(start.shape).astype(np.float32)
        ours.grad, theirs.grad = tinyattn.from_numpy(grad.copy()), torch.from_numpy(grad.copy())
        before = theirs.detach().numpy().copy()
        ours_sgd.step()
        their_sgd.step()
        got, expected = ours.detach().numpy(), theirs.detach().numpy()
        if fuses:
            differ = np.sum(got != expected)
            assert differ == 0, f"step {step + 1}: {differ} of {start.size} elements differ from PyTorch's"
        else:
            # each of the step's products and sums rounds twice there: a few float32 steps of the
            # update and of the weight (a wrong formula misses by far more)
            eps = np.finfo(np.float32).eps
            update = np.abs(expected - before) + options["lr"] * np.abs(grad)
            allowed = 2 * np.spacing(np.abs(expected)) + 8 * eps * update
            assert np.all(np.abs(got - expected) <= allowed), f"step {step + 1}"
            with tinyattn.no_grad():
                ours.copy_(tinyattn.from_numpy(expected.copy()))  # the next step from PyTorch's weights
            momentum = ours_sgd.state[ours].get("momentum_buffer")
            if momentum is not None:
                momentum[...] = their_sgd.state[theirs]["momentum_buffer"].numpy()
