"""What a Function you write may do with its ctx and apply, as in PyTorch: mark_dirty,
mark_non_differentiable, set_materialize_grads, keyword arguments, a forward that returns a number.
Each is run in both libraries and compared."""

import numpy as np
import pytest

import tinyattn
from tinyattn.errors import BackwardError
from test_inplace_after_forward import exp_function  # the Exp of PyTorch's docs, which saves its output

torch = pytest.importorskip("torch")

LIBRARIES = [pytest.param(tinyattn, id="tinyattn"), pytest.param(torch, id="torch")]


def add_one_in_place(L):
    class AddOneInPlace(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 3  # (not the true gradient: shows that this backward ran)

    return AddOneInPlace


def version(t):
    """The version counter's value (PyTorch's _version is an int; tinyattn's counter is a shared list)."""
    return t._version if isinstance(t._version, int) else t._version[0]


def run_mark_dirty(L):
    leaf = L.tensor([1.0, 2.0], requires_grad=True)
    x = leaf * 2
    before = version(x)
    y = add_one_in_place(L).apply(x)
    (y * y).sum().backward()
    return y is x, version(x) - before, x.tolist(), leaf.grad.tolist()


def test_mark_dirty_returns_the_input_changed_and_records_it():
    assert run_mark_dirty(tinyattn) == run_mark_dirty(torch)


def test_mark_dirty_on_a_leaf_that_requires_grad_raises_as_in_pytorch():
    for L, error in ((tinyattn, BackwardError), (torch, RuntimeError)):
        with pytest.raises(error, match="leaf Variable that requires grad"):
            add_one_in_place(L).apply(L.tensor([1.0], requires_grad=True))


def test_changing_an_input_in_place_without_mark_dirty_is_refused():
    class Sneaky(tinyattn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(BackwardError, match="mark_dirty"):
        Sneaky.apply(tinyattn.tensor([1.0], requires_grad=True) * 1)


def sort_function(L, materialize):
    seen = []

    class SortWithIndices(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            values, indices = x.sort()
            ctx.mark_non_differentiable(indices)
            ctx.save_for_backward(indices)
            return values, indices

        @staticmethod
        def backward(ctx, grad_values, grad_indices):
            seen.append(None if grad_indices is None else grad_indices.tolist())
            (indices,) = ctx.saved_tensors
            grad = L.zeros_like(grad_values)
            grad[indices] = grad_values
            return grad

    return SortWithIndices, seen


@pytest.mark.parametrize("materialize", [True, False])
def test_mark_non_differentiable_and_set_materialize_grads(materialize):
    results = []
    for L in (tinyattn, torch):
        function, seen = sort_function(L, materialize)
        x = L.tensor([3.0, 1.0, 2.0], requires_grad=True)
        values, indices = function.apply(x)
        (values * L.tensor([1.0, 10.0, 100.0])).sum().backward()
        results.append((values.requires_grad, indices.requires_grad, indices.grad_fn is None, seen,
                        x.grad.tolist(), indices.dtype == L.int64))
    assert results[0] == results[1]
    assert results[0][3] == [[0, 0, 0]] if materialize else [None]


def scaled_function(L):
    class Scaled(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale=2.0, *, shift=0.0):
            ctx.scale = scale
            return x * scale + shift

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.scale, None

    return Scaled


@pytest.mark.parametrize("L", LIBRARIES)
def test_keyword_arguments_to_apply(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = scaled_function(L).apply(x, scale=3.0)
    y.sum().backward()
    assert y.tolist() == [3.0, 6.0] and x.grad.tolist() == [3.0, 3.0]


def counting_function(L, seen):
    class SumAndCount(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x.numel()

        @staticmethod
        def backward(ctx, grad, grad_count):
            seen.append(grad_count)
            return grad * 2

    class OnlyANumber(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return float(x.sum())

        @staticmethod
        def backward(ctx, grad):
            return grad

    return SumAndCount, OnlyANumber


def test_a_forward_that_returns_numbers():
    results = []
    for L in (tinyattn, torch):
        seen = []
        both, only = counting_function(L, seen)
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y, count = both.apply(x)
        y.sum().backward()
        number = only.apply(x)
        results.append((type(count), count, seen, x.grad.tolist(), type(number), number))
    assert results[0] == results[1]
    assert results[0][2] == [None]  # backward gets None as the number's gradient


def test_a_saved_output_changed_in_place_raises_as_in_pytorch():
    for L, error in ((tinyattn, BackwardError), (torch, RuntimeError)):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = exp_function(L).apply(x)
        y.add_(1)
        with pytest.raises(error, match="modified by an inplace operation"):
            y.sum().backward()
    # unchanged, the gradient is exp(x)
    x = tinyattn.tensor([1.0, 2.0], dtype=tinyattn.float64, requires_grad=True)
    exp_function(tinyattn).apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]))
