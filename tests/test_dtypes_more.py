"""uint8, int8 and int16 tensors, `Tensor.type`, the legacy typed constructors and `Variable`, against PyTorch."""

import warnings

import numpy as np
import pytest

import tinyattn
from tinyattn import dtypes

SMALL = ["uint8", "int8", "int16"]
ALL = ["float32", "float64", "int64", "int32", "bool"] + SMALL


def name_of(dtype):
    return str(dtype).rpartition(".")[2]


def same(ours, theirs):
    assert name_of(ours.dtype) == name_of(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_the_names_are_pytorchs(torch):
    for name in ["uint8", "int8", "int16", "short"]:
        assert name_of(getattr(tinyattn, name)) == name_of(getattr(torch, name))
    assert tinyattn.short is tinyattn.int16
    assert repr(tinyattn.uint8) == "tinyattn.uint8"
    assert not hasattr(tinyattn, "char") and not hasattr(torch, "char")  # the method is x.char(): int8


@pytest.mark.parametrize("a", ALL)
@pytest.mark.parametrize("b", ALL)
def test_promotion_is_pytorchs(torch, a, b):
    x, y = np.array([1, 0, 1]), np.array([1, 1, 0])
    ours = tinyattn.tensor(x, dtype=getattr(tinyattn, a)) + tinyattn.tensor(y, dtype=getattr(tinyattn, b))
    theirs = torch.tensor(x, dtype=getattr(torch, a)) + torch.tensor(y, dtype=getattr(torch, b))
    same(ours, theirs)


VALUES = {"uint8": [250, 3, 0, 128], "int8": [-100, 3, 127, -128], "int16": [30000, -3, 0, -32768]}
CALLS = [
    "X + X", "X * X", "X - 1", "X + 10", "X * 2", "X + 300", "X * 1000", "X - 300", "X == 300", "X < 300",
    "X % 7", "X // 3", "X / 2", "-X", "abs(X)", "~X", "X & 3", "X | 1", "X ^ X",
    "X.sum()", "X.sum(0)", "X.cumsum(0)", "X.prod()", "X.max()", "X.min()", "X.argmax()", "X.sort().values",
    "X.float()", "X.double()", "X.long()", "X.int()", "X.bool()", "X.byte()", "X.char()", "X.short()",
    "X.to(L.int8)", "X.to(L.uint8)", "X.to(L.int16)", "X.float().mean()", "X.clamp(0, 5)", "X.reshape(2, 2)",
    "X[[1, 0]]", "L.cat([X, X])", "L.stack([X, X.long()])", "L.where(X > 0, X, 0)", "X.masked_fill(X > 1, 1)",
    "X + L.tensor(1)", "X + 1.5", "X + L.tensor([1, 2, 3, 4], dtype=L.int8)", "X.unique()", "X.topk(2).values",
    "L.zeros_like(X)", "L.ones(2, dtype=X.dtype)", "L.full((2,), 7, dtype=X.dtype)", "L.arange(3, dtype=X.dtype)",
    "X.clone().add_(1)", "X.clone().mul_(3)", "X.clone().fill_(5)",
]


@pytest.mark.parametrize("dtype", SMALL)
@pytest.mark.parametrize("call", CALLS)
def test_small_integers_compute_as_pytorch(torch, dtype, call):
    """Values wrap around on overflow (uint8: 250 + 10 is 4), Python ints out of range too (300 as 44)."""
    results = []
    for L in (tinyattn, torch):
        X = L.tensor(VALUES[dtype], dtype=getattr(L, dtype))
        results.append(eval(call, {"L": L, "X": X}))
    same(*results)


@pytest.mark.parametrize("dtype", SMALL)
def test_from_numpy_data_keeps_the_dtype(torch, dtype):
    values = np.array(VALUES[dtype], dtype=dtype)
    same(tinyattn.tensor(values), torch.tensor(values))
    same(tinyattn.from_numpy(values), torch.from_numpy(values))


def test_data_that_does_not_fit_is_refused_clearly():
    with pytest.raises(OverflowError, match="300 does not fit in a tinyattn.uint8 tensor"):
        tinyattn.tensor([1, 300], dtype=tinyattn.uint8)


def test_printing_names_the_dtype(torch):
    x = tinyattn.tensor([1, 2], dtype=tinyattn.uint8)
    assert repr(x) == repr(torch.tensor([1, 2], dtype=torch.uint8)).replace("torch.", "tinyattn.")


def test_small_integers_record_no_gradient_and_refuse_one():
    x = tinyattn.tensor([1, 2], dtype=tinyattn.int8)
    with pytest.raises(TypeError, match="only tensors of floating point dtype can require gradients"):
        x.requires_grad_()


# --- Tensor.type ---


@pytest.mark.parametrize("dtype", ALL)
def test_type_names_the_tensor_as_pytorch(torch, dtype):
    assert tinyattn.zeros(2, dtype=getattr(tinyattn, dtype)).type() == torch.zeros(2, dtype=getattr(torch, dtype)).type()


@pytest.mark.parametrize("target", ["L.uint8", "L.int8", "L.int16", "L.int64", "L.float64", "L.LongTensor",
                                    "L.ByteTensor", "L.DoubleTensor", "'torch.ShortTensor'", "'torch.FloatTensor'"])
def test_type_converts_as_pytorch(torch, target):
    values = [1.5, -2.7, 200.0, 0.0]
    results = [L.tensor(values).type(eval(target, {"L": L})) for L in (tinyattn, torch)]
    same(*results)


def test_type_keeps_a_tensor_of_that_type_and_refuses_unknown_names(torch):
    x = tinyattn.ones(2)
    assert x.type(tinyattn.float32) is x
    assert x.type("tinyattn.LongTensor").dtype is tinyattn.int64
    with pytest.raises(ValueError, match="invalid type: 'torch.float32'"):
        x.type("torch.float32")
    with pytest.raises(ValueError):
        torch.ones(2).type("torch.float32")
    with pytest.raises(TypeError, match="type\\(\\) takes a dtype"):
        x.type(3)


def test_type_is_differentiable_like_to():
    x = tinyattn.tensor([1.0, 2.0], requires_grad=True)
    x.type(tinyattn.float64).sum().backward()
    assert x.grad.dtype is tinyattn.float32 and x.grad.tolist() == [1.0, 1.0]


# --- legacy constructors ---

LEGACY = ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor",
          "BoolTensor"]


@pytest.mark.parametrize("name", LEGACY)
@pytest.mark.parametrize("args", ["([1, 0, 2],)", "([[1.7, -0.2]],)" , "()", "(2, 3)", "(L.Size([2, 1]),)",
                                  "(np.array([1, 2]),)", "(0,)"])
def test_legacy_constructors_make_pytorchs_tensors(torch, name, args):
    if name == "ByteTensor":  # (a negative float into uint8 is undefined in C++: PyTorch's result is the platform's)
        args = args.replace("-0.2", "0.2")
    results = [getattr(L, name)(*eval(args, {"L": L, "np": np})) for L in (tinyattn, torch)]
    assert name_of(results[0].dtype) == name_of(results[1].dtype)
    assert tuple(results[0].shape) == tuple(results[1].shape)
    if "(2, 3)" != args and "Size" not in args:  # PyTorch's sized ones are uninitialised; ours are zeros
        same(*results)
    else:
        assert not results[0].numpy().any()


@pytest.mark.parametrize("name", LEGACY)
def test_isinstance_answers_as_pytorch(torch, name):
    for dtype in ALL:
        ours = isinstance(tinyattn.zeros(2, dtype=getattr(tinyattn, dtype)), getattr(tinyattn, name))
        theirs = isinstance(torch.zeros(2, dtype=getattr(torch, dtype)), getattr(torch, name))
        assert ours == theirs, (name, dtype)
    assert not isinstance(3, getattr(tinyattn, name))
    assert isinstance(getattr(tinyattn, name)([1]), getattr(tinyattn, name))


def test_legacy_constructor_from_a_tensor_shares_its_numbers_and_refuses_another_dtype(torch):
    a = tinyattn.ones(2)
    b = tinyattn.FloatTensor(a)
    assert b is not a and not b.requires_grad
    b[0] = 5.0
    assert a[0].item() == 5.0
    with pytest.raises(TypeError, match="LongTensor expected a tinyattn.int64 tensor, got a tinyattn.float32"):
        tinyattn.LongTensor(a)
    with pytest.raises(TypeError):
        torch.LongTensor(torch.ones(2))


@pytest.mark.parametrize("args, error, message", [
    ((2.5,), TypeError, "data must be a sequence"),
    ((-1,), ValueError, "negative dimension"),
    ((2, [1]), TypeError, "takes sizes"),
])
def test_legacy_constructors_refuse_bad_arguments(torch, args, error, message):
    with pytest.raises(error, match=message):
        tinyattn.FloatTensor(*args)
    with pytest.raises(Exception):
        torch.FloatTensor(*args)


def test_legacy_type_names_and_their_use_as_dtypes():
    assert repr(tinyattn.LongTensor) == "<class 'tinyattn.LongTensor'>"
    assert tinyattn.LongTensor.dtype is tinyattn.int64
    assert tinyattn.ones(2).type(tinyattn.LongTensor).type() == "torch.LongTensor"
    assert set(dtypes.LEGACY_NAMES) == set(dtypes.ALL)


# --- Variable ---


def test_variable_is_a_new_leaf_on_the_same_numbers(torch):
    for L in (tinyattn, torch):
        x = L.tensor([1.0, 2.0])
        v = L.autograd.Variable(x, requires_grad=True)
        assert v is not x and v.requires_grad and v.is_leaf and not x.requires_grad
        (v * v).sum().backward()
        assert v.grad.tolist() == [2.0, 4.0]
        assert isinstance(x, L.autograd.Variable) and not isinstance(3, L.autograd.Variable)
        made = L.autograd.Variable(x * 2)
        assert made.is_leaf and not made.requires_grad


def test_variable_volatile_warns_and_bad_data_is_refused(torch):
    for L in (tinyattn, torch):
        with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
            L.autograd.Variable(L.ones(2), volatile=True)
        with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
            L.autograd.Variable([1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tinyattn.autograd.Variable(tinyattn.ones(2))


@pytest.mark.parametrize("a", ALL)
def test_promote_types_and_result_type_are_pytorchs(torch, a):
    for b in ALL:
        assert name_of(tinyattn.promote_types(getattr(tinyattn, a), getattr(tinyattn, b))) == name_of(
            torch.promote_types(getattr(torch, a), getattr(torch, b)))
        for other in (3, 2.5, True, "0-d", "1-d"):
            def operand(L, dtype=b):
                if other == "0-d":
                    return L.tensor(1, dtype=getattr(L, dtype))
                return L.tensor([1], dtype=getattr(L, dtype)) if other == "1-d" else other
            ours = tinyattn.result_type(tinyattn.tensor([1], dtype=getattr(tinyattn, a)), operand(tinyattn))
            theirs = torch.result_type(torch.tensor([1], dtype=getattr(torch, a)), operand(torch))
            assert name_of(ours) == name_of(theirs), (a, b, other)
    with pytest.raises(TypeError, match="promote_types takes two dtypes"):
        tinyattn.promote_types(tinyattn.int8, "int8")
    with pytest.raises(TypeError, match="result_type takes tensors and numbers"):
        tinyattn.result_type(tinyattn.ones(1), [1])


def test_a_uint8_index_is_a_mask_with_pytorchs_warning(torch):
    results = []
    for L in (tinyattn, torch):
        x = L.arange(4.0)
        with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
            results.append((x[L.tensor([1, 0, 2, 0], dtype=L.uint8)], x[L.tensor(1, dtype=L.uint8)]))
    for ours, theirs in zip(*results):
        same(ours, theirs)
