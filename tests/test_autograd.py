"""The autograd engine: the graph, backward(), grad mode, custom Functions, autograd.grad, and the
in-place rules (version counters) — each compared with what PyTorch does.

Finite-difference checks of each op's gradient live in tests/test_op_gradients.py; here the
gradients are small hand-derived cases, or compared with PyTorch where it is installed.
"""

import threading

import numpy as np
import pytest

import tinyattn
from tinyattn import autograd, backend
from tinyattn.errors import BackwardError, ShapeError


def host(t):
    return backend.to_host(t.detach().array)


def leaf(values, dtype=None):
    return tinyattn.tensor(values, dtype=dtype, requires_grad=True)


# ---------------------------------------------------------------------------------------------
# the graph: leaves, grad_fn, requires_grad


def test_leaves_and_non_leaves():
    x = leaf([1.0, 2.0])
    c = tinyattn.ones(2)
    y = x * 2
    z = c * 2
    assert x.is_leaf and x.grad_fn is None and x.requires_grad
    assert not y.is_leaf and y.grad_fn is not None and y.requires_grad
    assert z.is_leaf and z.grad_fn is None and not z.requires_grad  # nothing to differentiate
    assert (x + c).requires_grad and (c + x).requires_grad
    assert y.detach().is_leaf and not y.detach().requires_grad


def test_grad_fn_names_like_pytorch():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    batch = tinyattn.ones(2, 3, 2, requires_grad=True)
    names = {
        "MulBackward0": x * 2,
        "AddBackward0": x + 1,
        "SubBackward0": x - x,
        "DivBackward0": x / 2,
        "PowBackward0": x**2,
        "NegBackward0": -x,
        "ExpBackward0": x.exp(),
        "MmBackward0": x @ x,
        "UnsafeViewBackward0": batch @ x,
        "DotBackward0": x[0].dot(x[1]),
        "SoftmaxBackward0": x.softmax(-1),
        "LogSoftmaxBackward0": x.log_softmax(-1),
        "MaskedFillBackward0": x.masked_fill(x > 2, 0.0),
        "SelectBackward0": x[0],
        "SliceBackward0": x[1:],
        "IndexBackward0": x[tinyattn.tensor([0, 0])],
        "ViewBackward0": x.view(4),
        "TransposeBackward0": x.transpose(0, 1),
        "PermuteBackward0": x.permute(1, 0),
        "CatBackward0": tinyattn.cat([x, x]),
        "StackBackward0": tinyattn.stack([x, x]),
        "SumBackward0": x.sum(),
        "MeanBackward0": x.mean(),
        "ToCopyBackward0": x.double(),
        "CloneBackward0": x.clone(),
    }
    overloads = [  # PyTorch's names where one function has several overloads or is a copy
        ("MaxBackward1", x.max()), ("MinBackward1", x.min()), ("MaxBackward0", x.max(0).values),
        ("ClampBackward1", x.clamp(0.0, 2.0)), ("CloneBackward0", x.T.contiguous()), ("StdBackward0", x.std()),
    ]
    for name, t in list(names.items()) + overloads:
        assert t.grad_fn.name() == name
        assert f"grad_fn=<{name}>" in repr(t)
    # the edges point at the producers of the inputs, None where no gradient flows
    y = x * 2
    (edge,) = [e for e in y.grad_fn.next_functions if e[0] is not None]
    assert edge[0] is x
    z = y.exp()
    assert z.grad_fn.next_functions[0][0] is y.grad_fn


def test_no_graph_for_comparisons_and_index_results():
    x = leaf([1.0, 5.0, 3.0])
    assert not (x > 2).requires_grad and (x > 2).grad_fn is None
    assert not x.argmax().requires_grad
    values, indices = x.max(dim=0)
    assert values.requires_grad and not indices.requires_grad and indices.dtype is tinyattn.int64


def test_requires_grad_can_only_be_turned_off_on_leaves():
    x = leaf([1.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False
    x.requires_grad_(False)
    assert not x.requires_grad and not (x * 2).requires_grad


# ---------------------------------------------------------------------------------------------
# backward: gradients, accumulation, retain_graph, released graphs


def test_gradient_of_a_small_expression():
    x = leaf([1.0, 2.0, 3.0])
    w = leaf([[1.0], [2.0], [3.0]])
    y = ((x @ w) ** 2).sum()  # (x.w)^2 = 14^2
    y.backward()
    assert y.item() == 196.0
    assert x.grad.tolist() == [28.0, 56.0, 84.0]
    assert w.grad.tolist() == [[28.0], [56.0], [84.0]]
    assert x.grad.dtype is tinyattn.float32 and x.grad.shape == x.shape


def test_gradients_accumulate_across_backward_calls():
    x = leaf([1.0, 2.0])
    (x * x).sum().backward()
    first = x.grad
    assert first.tolist() == [2.0, 4.0]
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    assert x.grad is first  # accumulated in place, as in PyTorch
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_gradient_of_a_leaf_used_by_several_ops():
    x = leaf([1.0, 2.0])
    (x + x).sum().backward()  # the same array reaches x twice: the stored grad must be a copy
    assert x.grad.tolist() == [2.0, 2.0]


def test_diamond_graph():
    x = leaf([1.0, 2.0])
    a = x * 2
    ((a.exp()) + a * a).sum().backward()
    want = 2 * np.exp(2 * np.array([1.0, 2.0])) + 8 * np.array([1.0, 2.0])
    np.testing.assert_allclose(host(x.grad), want, rtol=1e-6)


def test_backward_with_a_gradient_for_a_non_scalar():
    x = leaf([1.0, 2.0])
    y = x * x
    y.backward(gradient=tinyattn.tensor([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 40.0]
    x.grad = None
    (x * 3).backward(tinyattn.tensor([1.0, 2.0], dtype=tinyattn.float64))  # cast to the tensor's dtype
    assert x.grad.tolist() == [3.0, 6.0] and x.grad.dtype is tinyattn.float32


def test_retain_graph_and_second_backward():
    x = leaf([1.0, 2.0])
    z = (x * x).sum()
    z.backward(retain_graph=True)
    z.backward()
    assert x.grad.tolist() == [4.0, 8.0]
    with pytest.raises(BackwardError, match=r"second time.*retain_graph=True"):
        z.backward()


def test_saved_arrays_are_freed_after_backward():
    x = leaf([1.0, 2.0])
    y = x * x
    s = y.exp().sum()
    nodes = [y.grad_fn, s.grad_fn.next_functions[0][0]]
    assert all(node.saved for node in nodes)
    s.backward(retain_graph=True)
    assert all(node.saved for node in nodes)
    s.backward()
    assert all(node.saved == () for node in nodes)
    assert all(node.released for node in nodes)


def test_backward_errors():
    x = leaf([1.0, 2.0])
    with pytest.raises(BackwardError, match=r"scalar outputs.*\[2\].*gradient="):
        (x * 2).backward()
    with pytest.raises(BackwardError, match="does not require grad"):
        tinyattn.ones(2).sum().backward()
    with pytest.raises(BackwardError, match=r"\[3\].*\[2\]"):
        (x * 2).backward(tinyattn.ones(3))
    with tinyattn.no_grad():
        y = (x * 2).sum()
    with pytest.raises(BackwardError, match="no_grad"):
        y.backward()


# ---------------------------------------------------------------------------------------------
# retain_grad, detach, autograd.grad


def test_retain_grad_on_a_non_leaf():
    x = leaf([1.0, 2.0])
    y = x * x
    y.retain_grad()
    (y * 3).sum().backward()
    assert y.grad.tolist() == [3.0, 3.0]
    assert x.grad.tolist() == [6.0, 12.0]
    z = x * 2
    (z * 3).sum().backward()
    with pytest.warns(UserWarning, match="not a leaf"):  # PyTorch points out the slip, and so does tinyattn
        assert z.grad is None  # not retained: non-leaves keep no grad


def test_retained_grads_accumulate_like_leaf_grads():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    z = (y * y).sum()
    z.backward(retain_graph=True)
    assert y.grad.tolist() == [4.0, 8.0]
    z.backward()
    assert y.grad.tolist() == [8.0, 16.0] and x.grad.tolist() == [16.0, 32.0]


def test_detach_shares_memory_and_stops_the_graph():
    x = leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    d[0] = 7.0
    assert y.tolist() == [7.0, 4.0]  # same memory, as in PyTorch
    (x * y.detach()).sum().backward()
    assert x.grad.tolist() == [7.0, 4.0]  # no gradient through the detached factor
    assert not x.data.requires_grad and x.data.tolist() == [1.0, 2.0]


def test_autograd_grad_for_leaf_and_non_leaf_inputs():
    x = leaf([1.0, 2.0])
    y = x * x
    z = (y * 3).sum()
    gy, gx = tinyattn.autograd.grad(z, [y, x], retain_graph=True)
    assert gy.tolist() == [3.0, 3.0] and gx.tolist() == [6.0, 12.0]
    result = tinyattn.autograd.grad(z, x)  # a tuple even for one input, as in PyTorch
    assert isinstance(result, tuple) and len(result) == 1 and result[0].tolist() == [6.0, 12.0]
    assert x.grad is None  # autograd.grad leaves .grad alone


def test_autograd_grad_allow_unused():
    x, unused = leaf([1.0, 2.0]), leaf([1.0])
    z = (x * 3).sum()
    with pytest.raises(BackwardError, match="allow_unused=True"):
        tinyattn.autograd.grad(z, [x, unused], retain_graph=True)
    gx, gu = tinyattn.autograd.grad(z, [x, unused], allow_unused=True)
    assert gx.tolist() == [3.0, 3.0] and gu is None
    with pytest.raises(BackwardError, match="require grad"):
        tinyattn.autograd.grad((x * 2).sum(), tinyattn.ones(2))


# ---------------------------------------------------------------------------------------------
# grad mode: no_grad, enable_grad, set_grad_enabled


def test_no_grad_context_manager_records_no_graph():
    x = leaf([1.0])
    with tinyattn.no_grad():
        y = x * 2
        assert not tinyattn.is_grad_enabled()
    assert tinyattn.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None


def test_no_grad_restores_the_mode_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with tinyattn.no_grad():
            1 / 0
    assert tinyattn.is_grad_enabled()


def test_no_grad_as_decorator_with_and_without_parentheses():
    @tinyattn.no_grad()
    def twice(t):
        return t * 2

    @tinyattn.no_grad
    def thrice(t):
        return t * 3

    x = leaf([1.0])
    assert not twice(x).requires_grad and not thrice(x).requires_grad
    assert thrice.__name__ == "thrice"
    assert tinyattn.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = leaf([1.0])
    with tinyattn.no_grad():
        with tinyattn.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad

        @tinyattn.enable_grad()
        def inner():
            return x * 2

        assert inner().requires_grad


def test_set_grad_enabled():
    with tinyattn.set_grad_enabled(False):
        assert not tinyattn.is_grad_enabled()
    assert tinyattn.is_grad_enabled()
    tinyattn.set_grad_enabled(False)  # as a function call, like PyTorch
    try:
        assert not (leaf([1.0]) * 2).requires_grad
    finally:
        tinyattn.set_grad_enabled(True)
    assert tinyattn.is_grad_enabled()



def test_set_grad_enabled_and_inference_mode_as_decorators():
    x = leaf([1.0])

    @tinyattn.set_grad_enabled(False)
    def doubled(t):
        return t * 2

    assert tinyattn.is_grad_enabled()  # decorating changes nothing until the function runs
    assert not doubled(x).requires_grad
    with tinyattn.no_grad():
        assert not doubled(x).requires_grad and not tinyattn.is_grad_enabled()

    @tinyattn.set_grad_enabled(True)
    def recorded(t):
        return t * 2

    with tinyattn.no_grad():
        assert recorded(x).requires_grad and not tinyattn.is_grad_enabled()

    @tinyattn.inference_mode(False)  # as in PyTorch: changes nothing
    def unchanged(t):
        return t * 2

    assert unchanged(x).requires_grad
    with tinyattn.inference_mode():
        assert not (x * 2).requires_grad
    with tinyattn.inference_mode(False):
        assert (x * 2).requires_grad


def test_grad_mode_is_thread_local():
    inside, outside = threading.Event(), threading.Event()
    seen = {}

    def worker():
        with tinyattn.no_grad():
            inside.set()
            outside.wait(10)
            seen["worker"] = tinyattn.is_grad_enabled()

    thread = threading.Thread(target=worker)
    thread.start()
    assert inside.wait(10)
    try:
        # the worker is inside no_grad right now: this thread still records
        assert tinyattn.is_grad_enabled() and (leaf([1.0]) * 2).requires_grad
    finally:
        outside.set()
        thread.join()
    assert seen["worker"] is False

    @tinyattn.no_grad()
    def in_thread():
        seen["decorated"] = tinyattn.is_grad_enabled()

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()
    assert seen["decorated"] is False and tinyattn.is_grad_enabled()


# ---------------------------------------------------------------------------------------------
# custom Functions in PyTorch's form


class Square(tinyattn.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_output


class ScaledProduct(tinyattn.autograd.Function):
    """a * b * scale, with a non-tensor argument; records which inputs need a gradient."""

    seen_needs = None

    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        return a * b * scale

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        ScaledProduct.seen_needs = ctx.needs_input_grad
        assert isinstance(grad_output, tinyattn.Tensor) and not tinyattn.is_grad_enabled()
        ga = grad_output * b * ctx.scale if ctx.needs_input_grad[0] else None
        gb = grad_output * a * ctx.scale if ctx.needs_input_grad[1] else None
        return ga, gb, None


def test_custom_function_forward_and_backward():
    x = leaf([1.0, 2.0, 3.0])
    y = Square.apply(x)
    assert y.tolist() == [1.0, 4.0, 9.0] and y.requires_grad
    assert y.grad_fn.name() == "SquareBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    assert not Square.apply(tinyattn.ones(2)).requires_grad


def test_custom_function_needs_input_grad_and_non_tensor_arguments():
    a, b = leaf([1.0, 2.0]), tinyattn.tensor([3.0, 4.0])
    ScaledProduct.apply(a, b, 0.5).sum().backward()
    assert ScaledProduct.seen_needs == (True, False, False)
    assert a.grad.tolist() == [1.5, 2.0] and b.grad is None


def test_custom_function_returning_none_does_not_block_other_paths():
    class Blocked(tinyattn.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 3

        @staticmethod
        def backward(ctx, grad_output):
            return None  # no gradient for `a`, although it requires one

    x = leaf([1.0, 2.0])
    y = x * 2
    (Blocked.apply(y).sum() + y.sum()).backward()
    assert x.grad.tolist() == [2.0, 2.0]  # the gradient through y.sum() still arrives
    x.grad = None
    Blocked.apply(x * 2).sum().backward()
    assert x.grad is None  # nothing reached x, as in PyTorch


class SumAndProduct(tinyattn.autograd.Function):
    """Two outputs; backward records the gradients it was given."""

    materialize = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.set_materialize_grads(SumAndProduct.materialize)
        return a + b, a * b

    @staticmethod
    def backward(ctx, grad_sum, grad_product):
        a, b = ctx.saved_tensors
        SumAndProduct.seen = (grad_sum, grad_product)
        ga = gb = 0.0 if grad_sum is None else grad_sum
        if grad_product is not None:
            ga, gb = ga + grad_product * b, gb + grad_product * a
        return ga, gb


@pytest.mark.parametrize("materialize", [True, False])
def test_an_unused_output_gets_zeros_or_none_with_set_materialize_grads(materialize, monkeypatch):
    monkeypatch.setattr(SumAndProduct, "materialize", materialize)
    a, b = leaf([1.0, 2.0]), leaf([3.0, 5.0])
    total, _ = SumAndProduct.apply(a, b)
    total.sum().backward()  # the product is not used
    grad_sum, grad_product = SumAndProduct.seen
    assert grad_sum.tolist() == [1.0, 1.0]
    assert grad_product is None if not materialize else grad_product.tolist() == [0.0, 0.0]
    assert a.grad.tolist() == b.grad.tolist() == [1.0, 1.0]
    a.grad = b.grad = None
    SumAndProduct.apply(a, b)[1].sum().backward()  # now only the product is used
    assert (SumAndProduct.seen[0] is None) == (not materialize)
    assert a.grad.tolist() == [3.0, 5.0] and b.grad.tolist() == [1.0, 2.0]


def test_custom_function_with_a_wrong_gradient_gets_a_clear_error():
    class WrongShape(tinyattn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, grad_output):
            return tinyattn.ones(3)

    class WrongCount(tinyattn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output

    with pytest.raises(BackwardError, match=r"WrongShapeBackward0.*\[3\].*\[2\]"):
        WrongShape.apply(leaf([1.0, 2.0])).backward()
    with pytest.raises(BackwardError, match="returned 2 gradients"):
        WrongCount.apply(leaf([1.0, 2.0])).sum().backward()

    class NumberGradient(tinyattn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return 2.0  # a student's slip: a number, not grad_output * 2

    with pytest.raises(BackwardError, match="returned a float as the gradient of input 0: return a tensor"):
        NumberGradient.apply(leaf([1.0, 2.0])).sum().backward()

    class DoublesInPlace(tinyattn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.mul_(2)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2

    with pytest.raises(BackwardError, match=r"forward changed its input tensor 0 in place.*x\.clone\(\)"):
        DoublesInPlace.apply(leaf([1.0, 2.0]) * 1)
    with tinyattn.no_grad():  # nothing is recorded: nothing can go wrong
        assert DoublesInPlace.apply(leaf([1.0, 2.0])).tolist() == [2.0, 4.0]


def test_custom_function_saved_tensor_modified_in_place():
    x = leaf([1.0, 2.0])
    y = x * 1
    z = Square.apply(y)
    y.add_(1)
    with pytest.raises(BackwardError, match="modified by an inplace operation"):
        z.sum().backward()


# ---------------------------------------------------------------------------------------------
# in-place ops and the version counter


def test_inplace_change_of_a_saved_tensor_raises():
    x = leaf([1.0, 2.0])
    y = x * 2
    z = y * y
    y.add_(1)
    with pytest.raises(BackwardError, match=r"modified by an inplace operation.*version 1, expected 0"):
        z.sum().backward()
    e = x.exp()  # exp saves its output
    e.mul_(2)
    with pytest.raises(BackwardError, match="ExpBackward0"):
        e.sum().backward()


def test_masked_fill_inplace_on_attention_scores_is_allowed():
    torch_like = tinyattn
    q = leaf(np.arange(12.0).reshape(3, 4) / 10)
    k = leaf(np.ones((3, 4)) / 4)
    s = q @ k.T
    mask = torch_like.triu(torch_like.ones(3, 3), diagonal=1).bool()
    s.masked_fill_(mask, -torch_like.inf)
    w = s.softmax(-1)
    w.sum().backward()
    assert q.grad is not None and k.grad is not None
    np.testing.assert_allclose(host(w[0]), [1.0, 0.0, 0.0])


def test_inplace_mul_on_a_copy_is_allowed_and_correct():
    x = leaf([1.0, 2.0])
    y = x * 1
    y.mul_(2)
    assert y.grad_fn.name() == "MulBackward0"
    (y * y).sum().backward()  # (2x)^2 -> 8x
    assert x.grad.tolist() == [8.0, 16.0]
    x.grad = None
    y = x * 1
    y += x  # 2x
    (y * y).sum().backward()
    assert x.grad.tolist() == [8.0, 16.0]


def test_inplace_change_of_a_view_is_recorded_on_its_base():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    tail = y[1:]
    tail.mul_(3)
    assert y.tolist() == [2.0, 12.0, 18.0]
    assert y.grad_fn.name() == "CopySlices" and tail.grad_fn.name() == "AsStridedBackward0"  # PyTorch's names
    (y * y).sum().backward()
    assert x.grad.tolist() == [8.0, 144.0, 216.0]  # d(2x)^2 = 8x; d(6x)^2 = 72x

    buffer = tinyattn.zeros(3)
    w = leaf([5.0, 7.0])
    buffer[1:].add_(w)  # a base that needed no grad now gets it through the view
    assert buffer.requires_grad and buffer.grad_fn.name() == "CopySlices"
    (buffer * tinyattn.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert w.grad.tolist() == [10.0, 100.0]


def test_inplace_change_of_a_view_of_a_leaf_that_requires_grad_raises():
    x = leaf([1.0, 2.0, 3.0])
    with pytest.raises(BackwardError, match="view of a leaf.*no_grad"):
        x[1:].mul_(3)
    with pytest.raises(BackwardError, match="view of a leaf"):
        x.view(3)[0] = 1.0
    with tinyattn.no_grad():
        x[1:].mul_(3)  # nothing recorded: allowed, as an optimizer step would
    assert x.tolist() == [1.0, 6.0, 9.0]


def test_a_view_changed_in_place_can_be_used_again():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = x * 1
    row = y[0]
    row += 10  # row is y[0] of the new y from here on
    (row * row).sum().backward()
    assert x.grad.tolist() == [[22.0, 24.0], [0.0, 0.0]]


def test_random_fills_and_zero__on_a_non_leaf_cut_the_gradient():
    for fill, name in [(lambda t: t.normal_(), "NormalBackward0"), (lambda t: t.uniform_(), "UniformBackward0"),
                       (lambda t: t.bernoulli_(), "BernoulliBackward2"), (lambda t: t.zero_(), "ZeroBackward0")]:
        x = leaf([1.0, 2.0, 3.0])
        y = x * 2
        fill(y)
        assert y.grad_fn.name() == name
        y.sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0], name  # the old numbers are gone: no gradient reaches them
        y = x * 2
        fill(y[1:])
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 0.0, 0.0], name


def test_view_taken_before_an_inplace_change_of_its_base_follows_the_change():
    x = leaf([1.0, 2.0])
    y = x * 2
    v = y[0]
    y.mul_(3)
    assert v.item() == 6.0  # the view sees the new numbers ...
    (v * 1).backward()  # ... and its gradient goes through the change too, as in PyTorch
    assert x.grad.tolist() == [6.0, 0.0]
    assert v.grad_fn.name() == "AsStridedBackward0"


def test_setitem_on_a_non_leaf_gives_correct_gradients():
    x = leaf([1.0, 2.0, 3.0])
    w = leaf([5.0])
    y = x * 2
    y[1] = w[0] * 3
    assert y.grad_fn.name() == "CopySlices"  # PyTorch writes x[1] = v through a view of x
    (y * tinyattn.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 200.0]  # the overwritten element gets no gradient
    assert w.grad.tolist() == [30.0]


def test_building_a_tensor_row_by_row_records_the_writes():
    w = leaf([1.0, 2.0])
    buffer = tinyattn.zeros(3, 2)
    for t in range(3):
        buffer[t] = w * (t + 1)
    assert buffer.requires_grad and not buffer.is_leaf
    (buffer * buffer).sum().backward()
    assert w.grad.tolist() == [28.0, 56.0]  # 2 w (1 + 4 + 9)


def test_masked_fill_inplace_gradient():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = x * 2
    y.masked_fill_(tinyattn.tensor([[True, False], [False, False]]), 0.0)
    (y * y).sum().backward()
    assert x.grad.tolist() == [[0.0, 16.0], [24.0, 32.0]]


def _setitem_and_mask(lib, x, w):
    y = x * 2
    y[1] = w * 3
    y[:, 0] = 7.0
    y[y > 5] = 0.5
    z = y * 1.5 + 1
    mask = lib.tensor([[False, True, False], [True, False, False], [False, False, True]])
    z.masked_fill_(mask, 0.5)
    s = z @ y.T
    s.masked_fill_(lib.triu(lib.ones(3, 3), diagonal=1).bool(), float("-inf"))
    return s.softmax(-1)


def _inplace_on_views(lib, x, w):
    y = x * 2
    y[1:].mul_(3)  # a slice
    y.t()[0].masked_fill_(w[:3] > 0, 0.5)  # a column, through a transpose
    y.view(-1)[::5].add_(w[0])  # a strided slice of a flattened view
    row = y[2]
    row += w  # an augmented assignment to a row ...
    y[0, 1:3] *= w[:2]  # ... and to a slice of one (a view, an in-place op, a write back)
    y.unsqueeze(0)[0, :, 3].zero_()
    transposed = (x * 1).t()  # not laid out in row order: the gradient follows its strides
    transposed.reshape(-1)[1::2].sub_(w.sum())
    return (y * y).sum(0) + row * 3 + transposed.sum(0).sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("program, x_shape, w_shape", [
    (_setitem_and_mask, (3, 3), (3,)),
    (_inplace_on_views, (3, 4), (4,)),
], ids=["setitem and masked_fill_", "in-place ops on views"])
def test_inplace_programs_match_pytorch(torch, program, x_shape, w_shape, dtype):
    rng = np.random.default_rng(0)
    x0, w0 = rng.uniform(-1, 1, x_shape).astype(dtype), rng.uniform(-1, 1, w_shape).astype(dtype)
    results = []
    for lib in (tinyattn, torch):
        x, w = lib.tensor(x0, requires_grad=True), lib.tensor(w0, requires_grad=True)
        out = program(lib, x, w)
        out.backward(lib.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(dtype)))
        results.append((out.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol)


def test_inplace_ops_on_views_pass_gradcheck():
    rng = np.random.default_rng(2)
    x = tinyattn.tensor(rng.uniform(-1, 1, (3, 4)), requires_grad=True)
    w = tinyattn.tensor([0.5, -0.7, 0.3, 0.9], dtype=tinyattn.float64, requires_grad=True)  # off w > 0's edge
    assert tinyattn.gradcheck(lambda x, w: _inplace_on_views(tinyattn, x, w), (x, w))


INPLACE_METHODS = {  # name: call, on values where the op is smooth (positive for log and sqrt)
    "exp_": lambda t: t.exp_(), "log_": lambda t: t.log_(), "sqrt_": lambda t: t.sqrt_(),
    "tanh_": lambda t: t.tanh_(), "sigmoid_": lambda t: t.sigmoid_(), "neg_": lambda t: t.neg_(),
    "abs_": lambda t: t.abs_(), "relu_": lambda t: t.relu_(), "clamp_": lambda t: t.clamp_(0.6, 1.4),
    "clamp_ min": lambda t: t.clamp_(min=0.9), "clip_": lambda t: t.clip_(max=1.1),
    "tril_": lambda t: t.tril_(), "triu_": lambda t: t.triu_(1),
}


@pytest.mark.parametrize("name", sorted(INPLACE_METHODS))
def test_inplace_methods_match_pytorch_on_a_result_and_on_a_view(torch, name):
    method = INPLACE_METHODS[name]
    x0 = np.array([[0.5, 1.2, 0.3], [1.7, 0.8, 1.05], [0.2, 1.3, 0.7]])  # away from clamp's bounds
    g = np.arange(9.0).reshape(3, 3)
    results = []
    for lib in (tinyattn, torch):
        x = lib.tensor(x0, requires_grad=True)
        y = x * 1
        same = method(y)
        assert same is y  # in place: the tensor itself comes back
        z = x * 2
        method(z.t()[1:])  # on a transposed slice, written into z
        (y * lib.tensor(g) + z).sum().backward()
        results.append((y.detach().numpy(), z.detach().numpy(), x.grad.numpy(), y.grad_fn.name()))
    for ours, theirs in zip(results[0][:3], results[1][:3]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    assert results[0][3] == results[1][3]  # the grad_fn PyTorch shows


def test_inplace_methods_refuse_what_would_change_the_dtype():
    ints = tinyattn.tensor([1, 2])
    with pytest.raises(TypeError, match="exp_ needs a floating point tensor.*x.exp()"):
        ints.exp_()
    with pytest.raises(TypeError, match="clamp_ of a tinyattn.int64 tensor with tinyattn.float32 bounds"):
        ints.clamp_(min=0.5)
    assert ints.clamp_(min=2).tolist() == [2, 2]


def _hooked(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    seen = []
    y = x * 2
    y.register_hook(lambda g: seen.append(("y", g.tolist())))  # sees d z / d y
    y.register_hook(lambda g: g * 10)  # replaces it: everything before y gets 10x
    x.register_hook(lambda g: seen.append(("x", g.tolist())))  # a leaf: the total, before .grad
    removed = x.register_hook(lambda g: g * 0)
    removed.remove()
    y.retain_grad()
    (y * y).sum().backward(retain_graph=True)
    captured = lib.autograd.grad((y * y).sum(), [y, x])  # y's own gradient is taken before its hooks
    return seen, x.grad.tolist(), y.grad.tolist(), [c.tolist() for c in captured]


def test_register_hook_matches_pytorch(torch):
    assert _hooked(tinyattn) == _hooked(torch)
    assert _hooked(tinyattn)[1] == [80.0, 160.0, 240.0]


def test_register_hook_errors():
    with pytest.raises(BackwardError, match="does not require grad"):
        tinyattn.ones(2).register_hook(print)
    x = leaf([1.0, 2.0])
    (x * 1).register_hook(lambda g: g.sum())
    y = x * 1
    y.register_hook(lambda g: g[:1])
    with pytest.raises(BackwardError, match=r"hook must return None or a tensor of the gradient's shape \[2\]"):
        y.sum().backward()


def test_grad_mode_and_version_errors_match_pytorch(torch):
    """The same misuse raises in both libraries (our messages are our own)."""
    for lib in (tinyattn, torch):
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError):
            x.add_(1)
        y = x * 2
        z = y * y
        y.add_(1)
        with pytest.raises(RuntimeError):
            z.sum().backward()
        q = (x * x).sum()
        q.backward()
        with pytest.raises(RuntimeError):
            q.backward()


def test_engine_internals_are_reachable_for_teaching():
    x = leaf([1.0])
    y = x * 3
    node = y.grad_fn
    assert isinstance(node, autograd.Node) and node.needs_input_grad == (True, False)
    assert node.saved and len(node.edges) == 2


@pytest.mark.parametrize("value, error, words", [
    (0.0, TypeError, "got a float: to clear it, set .grad = None"),
    ("0", TypeError, "got a str"),
    (lambda: tinyattn.zeros(4), ShapeError, "has shape [4], the tensor [3]"),
    (lambda: tinyattn.zeros(3, dtype=tinyattn.float64), TypeError, "is tinyattn.float64, the tensor tinyattn.float32"),
])
def test_a_wrong_grad_is_refused_when_it_is_assigned(value, error, words):
    """`a.grad = 0.` (a tutorial's way to zero it) fails where it is written, as in PyTorch, not later
    inside backward() with an error about floats having no array."""
    a = tinyattn.randn(3, requires_grad=True)
    with pytest.raises(error) as caught:
        a.grad = value() if callable(value) else value
    assert words in str(caught.value)
    assert a.grad is None  # nothing was assigned
    a.grad = tinyattn.ones(3)  # a tensor of its shape and dtype, and None, are taken
    (a * 2).sum().backward()
    assert a.grad.tolist() == [3.0, 3.0, 3.0]
    a.grad = None
    assert a.grad is None


def test_pytorch_refuses_the_same_grads(torch):
    a = torch.randn(3, requires_grad=True)
    for value in (0.0, torch.zeros(4), torch.zeros(3, dtype=torch.float64)):
        with pytest.raises((TypeError, RuntimeError)):
            a.grad = value
