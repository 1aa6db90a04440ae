"""The finite-difference checker itself: it passes right backwards and catches wrong ones.

A checker that never fails is worthless, so most tests here write a `Function` with a deliberately
wrong backward (3x instead of 2x, a transposed gradient, a missing broadcast reduction, a gradient for
an unused input) and check that the report names the place and both values.
"""

import re
import warnings

import numpy as np
import pytest

import tinyattn
from tinyattn import GradcheckError, gradcheck, numerical_grad, numerical_jacobian
from tinyattn import gradient_check
from tinyattn.autograd import Function
from tinyattn.nn import functional as F


def leaf(values):
    return tinyattn.tensor(values, dtype=tinyattn.float64, requires_grad=True)


def random_leaf(*shape, seed=0, low=-2.0, high=2.0):
    return leaf(np.random.default_rng(seed).uniform(low, high, shape))


# ---------------------------------------------------------------------------------------------
# Functions with known wrong backwards


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class WrongSquare(Square):
    """d(x^2)/dx written as 3x: off by x/2 everywhere, worst where |x| is largest."""

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x * grad


class TransposedMatmul(Function):
    """y = x @ w with the gradient of x computed as g @ w instead of g @ w^T (w square)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad @ w, x.mT @ grad


class AddRowWrongShape(Function):
    """x (3, 4) + row (4,), with the row's gradient not summed over the broadcast dim."""

    @staticmethod
    def forward(ctx, x, row):
        return x + row

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class AddRowFirstOnly(Function):
    """x (3, 4) + row (4,), with the row's gradient taken from the first row only (not summed)."""

    @staticmethod
    def forward(ctx, x, row):
        return x + row

    @staticmethod
    def backward(ctx, grad):
        return grad, grad[0]


class IgnoresSecond(Function):
    """2x, but the backward also sends a gradient to y, which the output does not depend on."""

    @staticmethod
    def forward(ctx, x, y):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad, grad


def fmt(value):
    return f"{value:.6g}"


# ---------------------------------------------------------------------------------------------
# passing


def test_passes_on_correct_ops(xp_backend):
    x, w = random_leaf(3, 4, seed=1), random_leaf(4, 2, seed=2)
    assert gradcheck(lambda x: (x * x).sum(), x) is True
    assert gradcheck(Square.apply, x)
    assert gradcheck(lambda x, w: (x @ w).tanh().softmax(-1), (x, w))
    assert gradcheck(lambda x, w: (x @ w).tanh().softmax(-1), (x, w), fast_mode=True)


def test_non_tensor_and_non_grad_inputs_are_passed_through():
    x = random_leaf(3, 4)
    constant = tinyattn.tensor(np.ones((3, 4)), dtype=tinyattn.float64)  # no grad: not checked
    ids = tinyattn.tensor([1, 0, 3])
    assert gradcheck(lambda x, c, scale, ids, none: (x * c * scale)[:, ids], (x, constant, 2.5, ids, None))


def test_unused_input_gets_zero_gradient():
    x, unused = random_leaf(3), random_leaf(2, seed=1)
    assert gradcheck(lambda x, y: x * 2, (x, unused))
    constant = tinyattn.ones(2, dtype=tinyattn.float64)
    assert gradcheck(lambda x, y: (x * 2, constant), (x, unused))  # an output without a graph


def test_a_cut_graph_is_caught():
    x = random_leaf(3)
    with pytest.raises(GradcheckError, match="numerical 2, analytical 0"):
        gradcheck(lambda x: (x * 2).detach(), x)


def test_gradient_for_an_unused_input_is_caught():
    x, y = random_leaf(3), random_leaf(3, seed=1)
    with pytest.raises(GradcheckError, match=r"output 0 with respect to input 1 .*numerical 0, analytical 1"):
        gradcheck(IgnoresSecond.apply, (x, y))


def test_tuple_outputs_and_non_float_outputs():
    x, y = random_leaf(3, 4), random_leaf(4, seed=1)
    assert gradcheck(lambda x, y: (x * y, (x * x).sum(), x.max(dim=1)), (x, y))
    assert gradcheck(lambda x: x.split([1, 2]), x)
    with pytest.raises(GradcheckError, match="for output 1 with respect to input 0"):
        gradcheck(lambda x: (x * 2, WrongSquare.apply(x)), x)


def test_output_that_is_a_view_of_the_input():
    x = random_leaf(3, 4)
    assert gradcheck(lambda x: x[1:, ::2], x)
    assert gradcheck(lambda x: x.transpose(0, 1), x)


def test_dropout_passes_because_the_seed_freezes_the_mask():
    x = random_leaf(5, 6)
    assert gradcheck(lambda x: F.dropout(x, 0.5) * x, x)
    assert gradcheck(lambda x: F.dropout(x, 0.5) * x, x, seed=7, fast_mode=True)


def test_a_new_mask_at_every_evaluation_is_caught():
    x = random_leaf(5, 6)
    calls = [0]

    def unfrozen(x):
        calls[0] += 1
        tinyattn.manual_seed(calls[0])  # defeats the checker's seeding: each evaluation differs
        return F.dropout(x, 0.5)

    with pytest.raises(GradcheckError):
        gradcheck(unfrozen, x)


def test_the_callers_random_state_is_restored():
    tinyattn.manual_seed(123)
    tinyattn.rand(3)
    expected = tinyattn.rand(4).tolist()
    tinyattn.manual_seed(123)
    tinyattn.rand(3)
    gradcheck(lambda x: F.dropout(x, 0.5), random_leaf(3, 4))
    assert tinyattn.rand(4).tolist() == expected


def test_seed_none_leaves_the_generator_alone():
    x = random_leaf(2, 3)
    tinyattn.manual_seed(4)
    drawn = []  # fn draws on the side: without reseeding, every evaluation draws a new number

    def fn(x):
        drawn.append(tinyattn.rand(1).item())
        return x.exp()

    j = numerical_jacobian(fn, x, seed=None)
    np.testing.assert_allclose(j, np.diag(np.exp(x.detach().numpy()).ravel()), rtol=1e-6)
    assert len(drawn) == 1 + 2 * 6 and len(set(drawn)) == len(drawn)  # with a seed, all would be equal


def test_inputs_are_restored_exactly():
    x = random_leaf(3, 4)
    before = x.detach().numpy().copy()
    gradcheck(lambda x: x.exp(), x)
    gradcheck(WrongSquare.apply, x, raise_exception=False)
    gradcheck(lambda x: x.exp(), x, fast_mode=True)
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x.grad is None  # the checker uses autograd.grad, not .grad


def test_no_input_requires_grad_is_an_error():
    with pytest.raises(ValueError, match="requires_grad=True"):
        gradcheck(lambda x: x * 2, tinyattn.ones(3, dtype=tinyattn.float64))



def test_an_input_that_cannot_be_perturbed_is_an_error():
    shared = tinyattn.zeros(1, 3, dtype=tinyattn.float64).expand(2, 3).requires_grad_()
    with pytest.raises(GradcheckError, match=r"input 0 cannot be written \(an expand\(\)ed view.*\.clone\(\)"):
        gradcheck(lambda x: x * 2, shared)


# ---------------------------------------------------------------------------------------------
# failing, with a report that locates the error


def test_wrong_backward_is_caught_with_index_and_both_values(xp_backend):
    values = np.array([[0.5, -1.0, 1.5], [0.25, -2.5, 1.0]])
    x = leaf(values)
    with pytest.raises(GradcheckError) as info:
        gradcheck(WrongSquare.apply, x)
    message = str(info.value)
    # the worst entry is on the diagonal where |x| is largest: x[1, 1] = -2.5
    assert "output 0 with respect to input 0 (shape [2, 3])" in message
    assert "at element (1, 1) (output element (1, 1))" in message
    assert f"numerical {fmt(2 * -2.5)}, analytical {fmt(3 * -2.5)}" in message
    assert "max abs error 2.5e+00" in message
    assert "max rel error 5.0e-01" in message
    assert "atol=1e-05, rtol=0.001, eps=1e-06" in message


def test_transposed_gradient_is_caught():
    x, w = random_leaf(2, 3), random_leaf(3, 3, seed=1)
    assert gradcheck(lambda x, w: x @ w, (x, w))
    with pytest.raises(GradcheckError) as info:
        gradcheck(TransposedMatmul.apply, (x, w))
    message = str(info.value)
    assert "with respect to input 0 (shape [2, 3])" in message
    row, column, out_row, out_column, numerical, analytical = re.search(
        r"at element \((\d), (\d)\) \(output element \((\d), (\d)\)\): numerical (\S+), analytical (\S+);",
        message,
    ).groups()
    # d y[i, k] / d x[i, j] = w[j, k]; the wrong backward gives w[k, j]
    w_values = w.detach().numpy()
    assert row == out_row
    assert float(numerical) == pytest.approx(w_values[int(column), int(out_column)], abs=1e-5)
    assert float(analytical) == pytest.approx(w_values[int(out_column), int(column)], abs=1e-5)


def test_missing_broadcast_reduction_is_caught():
    x, row = random_leaf(3, 4), random_leaf(4, seed=1)
    # a gradient of the wrong shape: the engine refuses it, the checker says so
    with pytest.raises(GradcheckError, match=r"shape \[3, 4\] for an input of shape \[4\]"):
        gradcheck(AddRowWrongShape.apply, (x, row))
    # the right shape but not summed over the broadcast rows: d out[i, j] / d row[j] = 1 for every i
    with pytest.raises(GradcheckError) as info:
        gradcheck(AddRowFirstOnly.apply, (x, row))
    message = str(info.value)
    assert "with respect to input 1 (shape [4])" in message
    assert "numerical 1, analytical 0" in message
    assert re.search(r"at element \(\d,\) \(output element \([12], \d\)\)", message)


def test_fast_mode_catches_the_same_wrong_backwards():
    x = random_leaf(3, 4)
    with pytest.raises(GradcheckError, match="fast_mode=False") as info:
        gradcheck(WrongSquare.apply, x, fast_mode=True)
    assert "random projection" in str(info.value)
    assert re.search(r"numerical \S+, analytical \S+", str(info.value))
    with pytest.raises(GradcheckError):
        gradcheck(TransposedMatmul.apply, (random_leaf(2, 3), random_leaf(3, 3, seed=1)), fast_mode=True)
    with pytest.raises(GradcheckError):
        gradcheck(AddRowFirstOnly.apply, (x, random_leaf(4, seed=1)), fast_mode=True)
    with pytest.raises(GradcheckError, match="shape"):
        gradcheck(AddRowWrongShape.apply, (x, random_leaf(4, seed=1)), fast_mode=True)



class SoftmaxMissingTerm(tinyattn.autograd.Function):
    """Softmax whose backward forgets the - y * sum(g * y) term: wrong in every entry, by a little."""

    @staticmethod
    def forward(ctx, x):
        y = x.softmax(-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return y * grad


@pytest.mark.parametrize("seed", range(3))
def test_fast_mode_catches_an_error_spread_thinly_over_a_large_jacobian(seed):
    x = tinyattn.tensor(np.random.default_rng(seed).uniform(-2, 2, (16, 64)), requires_grad=True)
    with pytest.raises(GradcheckError, match="random projection"):
        gradcheck(SoftmaxMissingTerm.apply, x, fast_mode=True, seed=seed)
    assert gradcheck(lambda t: t.softmax(-1), x, fast_mode=True, seed=seed)


def test_raise_exception_false_returns_false():
    x = random_leaf(3)
    assert gradcheck(WrongSquare.apply, x, raise_exception=False) is False
    assert gradcheck(Square.apply, x, raise_exception=False) is True


def test_nan_gradient_fails():
    class NanBackward(Square):
        @staticmethod
        def backward(ctx, grad):
            return grad * float("nan")

    with pytest.raises(GradcheckError, match="analytical nan"):
        gradcheck(NanBackward.apply, random_leaf(3))


def test_float32_input_warns():
    x = tinyattn.rand(3, requires_grad=True)
    with pytest.warns(UserWarning, match="float64") as record:
        gradcheck(lambda x: x * 2, x, eps=1e-3, atol=1e-2, rtol=1e-2)
    assert "too coarse" in str(record[0].message)
    with pytest.warns(UserWarning, match="float64"):
        numerical_grad(lambda x: (x * 2).sum(), x, eps=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradcheck(lambda x: x * 2, random_leaf(3))  # float64: no warning


# ---------------------------------------------------------------------------------------------
# numerical_grad and numerical_jacobian


def test_numerical_grad_matches_the_known_gradient(xp_backend):
    x, y = random_leaf(3, 2), random_leaf(3, 2, seed=1)
    gx, gy = numerical_grad(lambda x, y: (x**3).sum() + (x * y).sum(), (x, y))
    assert gx.shape == x.shape and gy.shape == y.shape and gx.dtype == tinyattn.float64
    xs, ys = x.detach().tolist(), y.detach().tolist()
    np.testing.assert_allclose(gx.tolist(), 3 * np.array(xs) ** 2 + np.array(ys), atol=1e-6)
    np.testing.assert_allclose(gy.tolist(), xs, atol=1e-6)

    # what a student does: compare with .grad after backward()
    loss = (x.tanh() * y).sum()
    loss.backward()
    gx, gy = numerical_grad(lambda x, y: (x.tanh() * y).sum(), (x, y))
    assert gx.allclose(x.grad, atol=1e-6) and gy.allclose(y.grad, atol=1e-6)


def test_numerical_grad_single_input_and_scalar_check():
    x = random_leaf(4)
    g = numerical_grad(lambda x: (x * x).sum(), x)
    assert isinstance(g, tinyattn.Tensor) and g.shape == (4,)
    np.testing.assert_allclose(g.tolist(), 2 * np.array(x.tolist()), atol=1e-6)
    with pytest.raises(ValueError, match="scalar"):
        numerical_grad(lambda x: x * 2, x)


def test_numerical_jacobian_shapes_and_values():
    x, w = random_leaf(2, 3), random_leaf(3, 4, seed=1)
    jx, jw = numerical_jacobian(lambda x, w: x @ w, (x, w))
    assert jx.shape == (8, 6) and jw.shape == (8, 12)
    # y[i, k] = sum_j x[i, j] w[j, k]: d y[i, k] / d x[i, j] = w[j, k]
    expected = np.kron(np.eye(2), w.detach().numpy().T)
    np.testing.assert_allclose(jx, expected, atol=1e-8)

    j = numerical_jacobian(lambda x: 3 * x, x)  # a single input: the array itself
    np.testing.assert_allclose(j, 3 * np.eye(6), atol=1e-8)

    (j_first, j_second) = numerical_jacobian(lambda x: (x.sum(), x[0]), x)  # per output
    assert j_first.shape == (1, 6) and j_second.shape == (3, 6)


def test_impossible_settings_are_refused():
    x = random_leaf(3)
    for settings, message in (({"eps": 0}, "eps must be a small positive step"), ({"atol": -1}, "atol must be"),
                              ({"rtol": float("nan")}, "rtol must be")):
        with pytest.raises(ValueError, match=message):
            gradcheck(Square.apply, x, **settings)
    with pytest.raises(ValueError, match="eps must be"):
        numerical_grad(lambda t: (t * t).sum(), x, eps=-1e-6)


class AlmostSquare(Square):
    """d(x^2)/dx = 2x, off in the 9th significant digit."""

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad * (1 + 3e-9)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_a_failure_at_a_tight_tolerance_prints_digits_enough_to_see_the_difference(fast_mode):
    with pytest.raises(GradcheckError) as info:
        gradcheck(AlmostSquare.apply, random_leaf(3), atol=0.0, rtol=1e-12, fast_mode=fast_mode)
    numerical, analytical = re.search(r"numerical (\S+), analytical (\S+);", str(info.value)).groups()
    assert numerical != analytical and len(numerical.lstrip("-").replace(".", "")) >= 9, str(info.value)
    assert gradient_check._numerical_and_analytical(0.25, 0.5) == "numerical 0.25, analytical 0.5"  # short if it can
