"""The tensor API: creation, dtypes and promotion, properties, conversions, printing, Python protocols,
indexing and views, in-place ops, and the errors bad input gets.

Expected values are PyTorch's (checked against PyTorch 2.x); the tests themselves need no PyTorch,
except the Hypothesis test of mixed index keys, which compares with PyTorch (skipped without it).
"""

import sys
import threading
import types

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tinyattn
from tinyattn import backend
from tinyattn.errors import DeviceError, ShapeError


def host(t):
    return backend.to_host(t.detach().array)


def values(t):
    return host(t).tolist()


# ---------------------------------------------------------------------------------------------
# creation


def test_zeros_ones_empty_full_shapes_and_default_dtype():
    for make in (tinyattn.zeros, tinyattn.ones, tinyattn.empty):
        for args in [(2, 3), ((2, 3),), ([2, 3],), (tinyattn.Size([2, 3]),)]:
            t = make(*args)
            assert t.shape == (2, 3) and t.dtype is tinyattn.float32
            assert t.device == "cpu" and t.is_leaf and not t.requires_grad
    assert values(tinyattn.zeros(2)) == [0.0, 0.0]
    assert values(tinyattn.ones(2, dtype=tinyattn.long)) == [1, 1]
    assert tinyattn.zeros(()).shape == () and tinyattn.zeros(0, 3).shape == (0, 3)


def test_full_infers_the_dtype_from_the_fill_value():
    assert tinyattn.full((2, 2), 3).dtype is tinyattn.int64
    assert tinyattn.full((2, 2), 3.0).dtype is tinyattn.float32
    assert tinyattn.full((2,), True).dtype is tinyattn.bool
    assert tinyattn.full((2,), 7, dtype=tinyattn.float64).dtype is tinyattn.float64
    assert values(tinyattn.full((2,), -tinyattn.inf)) == [-np.inf, -np.inf]
    assert tinyattn.full((), 2.5).item() == 2.5


def test_arange():
    assert values(tinyattn.arange(5)) == [0, 1, 2, 3, 4]
    assert tinyattn.arange(5).dtype is tinyattn.int64
    assert values(tinyattn.arange(2, 8, 2)) == [2, 4, 6]
    assert tinyattn.arange(3.0).dtype is tinyattn.float32
    np.testing.assert_allclose(host(tinyattn.arange(0, 1, 0.25)), [0, 0.25, 0.5, 0.75])
    assert tinyattn.arange(3, dtype=tinyattn.float64).dtype is tinyattn.float64
    assert values(tinyattn.arange(tinyattn.tensor(3))) == [0, 1, 2]
    with pytest.raises(ValueError, match="step"):
        tinyattn.arange(0, 3, 0)


def test_eye_and_like_functions():
    assert values(tinyattn.eye(2)) == [[1.0, 0.0], [0.0, 1.0]]
    assert tinyattn.eye(2, 3).shape == (2, 3) and tinyattn.eye(2, dtype=tinyattn.long).dtype is tinyattn.int64
    base = tinyattn.tensor([[1, 2, 3]])
    assert tinyattn.zeros_like(base).dtype is tinyattn.int64 and values(tinyattn.zeros_like(base)) == [[0, 0, 0]]
    assert values(tinyattn.ones_like(base, dtype=tinyattn.float32)) == [[1.0, 1.0, 1.0]]
    like = tinyattn.ones_like(tinyattn.zeros(2), requires_grad=True)
    assert like.requires_grad and like.is_leaf


def test_random_creation_shapes_dtypes_and_seed():
    assert tinyattn.rand(2, 3).shape == (2, 3) and tinyattn.rand(2, 3).dtype is tinyattn.float32
    assert tinyattn.rand((4,)).shape == (4,)
    assert tinyattn.randn(5, dtype=tinyattn.float64).dtype is tinyattn.float64
    r = tinyattn.randint(0, 10, (50,))
    assert r.dtype is tinyattn.int64 and 0 <= int(r.min()) and int(r.max()) < 10
    assert tinyattn.randint(3, (2, 2)).shape == (2, 2)
    u = host(tinyattn.rand(1000))
    assert (u >= 0).all() and (u < 1).all()
    tinyattn.manual_seed(123)
    a = tinyattn.randn(3, 4)
    tinyattn.manual_seed(123)
    assert tinyattn.equal(a, tinyattn.randn(3, 4))
    tinyattn.manual_seed(123)
    assert values(tinyattn.rand(2)) == pytest.approx([0.2961, 0.5166], abs=1e-4)  # PyTorch's numbers
    with pytest.raises(TypeError, match="floating point"):
        tinyattn.rand(2, dtype=tinyattn.long)


def test_tril_triu_with_diagonal():
    ones = tinyattn.ones(3, 3)
    assert values(tinyattn.tril(ones)) == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert values(tinyattn.tril(ones, diagonal=-1)) == [[0, 0, 0], [1, 0, 0], [1, 1, 0]]
    assert values(tinyattn.triu(ones, diagonal=1)) == [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    assert values(ones.triu()) == [[1, 1, 1], [0, 1, 1], [0, 0, 1]]
    assert values(tinyattn.arange(9).reshape(3, 3).tril()) == [[0, 0, 0], [3, 4, 0], [6, 7, 8]]
    batch = tinyattn.ones(2, 2, 3).tril(1)  # batches of matrices: the last two dims
    assert values(batch[1]) == [[1, 1, 0], [1, 1, 1]]
    with pytest.raises(ShapeError, match="2 dims"):
        tinyattn.tril(tinyattn.ones(3))


# ---------------------------------------------------------------------------------------------
# dtypes: inference and promotion


def test_dtype_inference_like_pytorch():
    assert tinyattn.tensor(1.5).dtype is tinyattn.float32
    assert tinyattn.tensor([1, 2.5]).dtype is tinyattn.float32
    assert tinyattn.tensor([1, 2]).dtype is tinyattn.int64
    assert tinyattn.tensor([True, False]).dtype is tinyattn.bool
    assert tinyattn.tensor(np.zeros(2)).dtype is tinyattn.float64  # NumPy float64 keeps float64
    assert tinyattn.tensor(np.zeros(2, np.float32)).dtype is tinyattn.float32
    assert tinyattn.tensor(np.zeros(2, np.int32)).dtype is tinyattn.int32
    assert tinyattn.tensor(np.arange(3)).dtype is tinyattn.int64
    assert tinyattn.tensor(np.float64(2.0)).dtype is tinyattn.float64
    assert tinyattn.tensor([1.5], dtype=tinyattn.float64).dtype is tinyattn.float64
    assert tinyattn.tensor([1.7, -1.7], dtype=tinyattn.long).tolist() == [1, -1]
    assert tinyattn.tensor([]).shape == (0,) and tinyattn.tensor([]).dtype is tinyattn.float32
    assert tinyattn.tensor([tinyattn.tensor(1.0), tinyattn.tensor(2.0)]).tolist() == [1.0, 2.0]
    with pytest.raises(TypeError):
        tinyattn.tensor("abc")


def test_the_tensor_class_is_pytorchs_older_float32_constructor():
    assert tinyattn.Tensor([1, 2]).dtype is tinyattn.float32  # torch.Tensor: always the default dtype
    assert tinyattn.Tensor([1, 2]).tolist() == [1.0, 2.0]
    assert tinyattn.Tensor(2, 3).shape == (2, 3) and tinyattn.Tensor(3).shape == (3,)  # sizes, not data
    assert tinyattn.Tensor(tinyattn.Size([2, 1])).shape == (2, 1)
    assert tinyattn.Tensor().shape == (0,) and tinyattn.Tensor().dtype is tinyattn.float32
    assert tinyattn.tensor([1, 2]).dtype is tinyattn.int64  # the function infers, as torch.tensor does
    with pytest.raises(TypeError, match="takes sizes"):
        tinyattn.Tensor([1], [2])


def test_dtype_names_and_aliases():
    assert repr(tinyattn.float32) == "tinyattn.float32"
    assert tinyattn.long is tinyattn.int64 and tinyattn.float is tinyattn.float32
    assert tinyattn.double is tinyattn.float64
    assert tinyattn.get_default_dtype() is tinyattn.float32


i64 = tinyattn.tensor([1, 2])
f32 = tinyattn.tensor([1.0, 2.0])
f64 = tinyattn.tensor([1.0, 2.0], dtype=tinyattn.float64)
i32 = tinyattn.tensor([1, 2], dtype=tinyattn.int32)
b = tinyattn.tensor([True, False])
f64_0d = tinyattn.tensor(2.0, dtype=tinyattn.float64)
f32_0d = tinyattn.tensor(2.0)
i64_0d = tinyattn.tensor(2)

PROMOTION = [  # (expression, PyTorch's result dtype)
    (lambda: i64 * 0.5, tinyattn.float32),
    (lambda: i64 / i64, tinyattn.float32),
    (lambda: i64 / 2, tinyattn.float32),
    (lambda: f32 + f64_0d, tinyattn.float32),  # a 0-d tensor of the same category does not upcast
    (lambda: i64 + f64_0d, tinyattn.float64),  # ... but one of a higher category decides
    (lambda: i64 * f32_0d, tinyattn.float32),
    (lambda: b + 1, tinyattn.int64),
    (lambda: b + True, tinyattn.bool),
    (lambda: b * 1.5, tinyattn.float32),
    (lambda: f32 * 2.0, tinyattn.float32),
    (lambda: f32 * 2, tinyattn.float32),
    (lambda: f32 * np.float64(2.0), tinyattn.float32),
    (lambda: np.float64(2.0) * f32, tinyattn.float32),
    (lambda: f32 + f64, tinyattn.float64),  # two dimensioned tensors: the wider dtype
    (lambda: i32 + i64_0d, tinyattn.int32),
    (lambda: i32 + i64, tinyattn.int64),
    (lambda: i64 + i64_0d, tinyattn.int64),
    (lambda: f32 + i64, tinyattn.float32),
    (lambda: i64**2, tinyattn.int64),
    (lambda: i64**0.5, tinyattn.float32),
    (lambda: 2**i64, tinyattn.int64),
    (lambda: 1 - i64, tinyattn.int64),
    (lambda: 1 / i64, tinyattn.float32),
    (lambda: i64 // 2, tinyattn.int64),
    (lambda: tinyattn.where(b, i64, 0.5), tinyattn.float32),
    (lambda: tinyattn.cat([f32, i64]), tinyattn.float32),
    (lambda: tinyattn.stack([f32, f64]), tinyattn.float64),
    (lambda: i64.sum(), tinyattn.int64),
    (lambda: b.sum(), tinyattn.int64),
    (lambda: i64.exp(), tinyattn.float32),
    (lambda: f32.mean(), tinyattn.float32),
    (lambda: i64.float().mean(), tinyattn.float32),
    (lambda: f32 > 1, tinyattn.bool),
]


@pytest.mark.parametrize("case", range(len(PROMOTION)))
def test_type_promotion_like_pytorch(case):
    expression, want = PROMOTION[case]
    assert expression().dtype is want


def test_promotion_values():
    assert values(i64 / i64) == [1.0, 1.0]
    assert values(i64 * 0.5) == [0.5, 1.0]
    assert values(tinyattn.tensor([5, -5]) // 2) == [2, -3]
    assert values(tinyattn.tensor([5, -5]) % 2) == [1, 1]


# ---------------------------------------------------------------------------------------------
# Size and the other properties


def test_size_prints_and_compares_like_a_tuple():
    s = tinyattn.zeros(2, 3, 4).shape
    assert isinstance(s, tuple) and isinstance(s, tinyattn.Size)
    assert s == (2, 3, 4) and s != [2, 3, 4] and hash(s) == hash((2, 3, 4))
    assert repr(s) == "tinyattn.Size([2, 3, 4])" and str(s) == repr(s)
    assert f"{s}" == "tinyattn.Size([2, 3, 4])"
    assert s[0] == 2 and s[-1] == 4 and isinstance(s[0], int)
    assert isinstance(s[1:], tinyattn.Size) and s[1:] == (3, 4)
    assert isinstance(s + (5,), tinyattn.Size) and s + (5,) == (2, 3, 4, 5)
    batch, tokens, dim = s
    assert (batch, tokens, dim) == (2, 3, 4)
    assert s.numel() == 24 and repr(tinyattn.tensor(1.0).shape) == "tinyattn.Size([])"


def test_properties():
    x = tinyattn.zeros(2, 3)
    assert x.size() == (2, 3) and x.size(1) == 3 and x.size(-1) == 3
    assert x.dim() == 2 and x.ndim == 2 and x.numel() == 6
    assert x.T.shape == (3, 2) and x.mT.shape == (3, 2)
    assert x.dtype is tinyattn.float32 and x.is_floating_point()
    assert x.device == tinyattn.device("cpu") and str(x.device) == "cpu" and not x.is_cuda
    assert repr(x.device) == "device(type='cpu')"
    assert x.grad is None and x.grad_fn is None and x.is_leaf and not x.requires_grad
    assert x.element_size() == 4 and tinyattn.zeros(1, dtype=tinyattn.float64).element_size() == 8
    with pytest.raises(IndexError, match="out of range"):
        x.size(2)


# ---------------------------------------------------------------------------------------------
# conversions


def test_item_tolist_numpy():
    assert tinyattn.tensor([2.5]).item() == 2.5 and isinstance(tinyattn.tensor([2.5]).item(), float)
    assert tinyattn.tensor(3).item() == 3 and isinstance(tinyattn.tensor(3).item(), int)
    assert tinyattn.tensor(True).item() is True
    assert tinyattn.tensor([[1, 2]]).tolist() == [[1, 2]] and tinyattn.tensor(1.5).tolist() == 1.5
    with pytest.raises((ValueError, RuntimeError), match="2 elements"):
        tinyattn.tensor([1, 2]).item()
    x = tinyattn.zeros(2)
    array = x.numpy()
    assert isinstance(array, np.ndarray) and array.dtype == np.float32
    array[0] = 9  # numpy() shares memory, as in PyTorch
    assert x.tolist() == [9.0, 0.0]
    assert np.asarray(tinyattn.tensor([1, 2])).dtype == np.int64


def test_numpy_on_a_tensor_that_requires_grad_raises():
    w = tinyattn.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"detach\(\)\.numpy\(\)"):
        w.numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        (w * 2).numpy()
    assert w.detach().numpy().tolist() == [1.0, 1.0]


def test_from_numpy_shares_memory():
    a = np.zeros(3)
    t = tinyattn.from_numpy(a)
    assert t.dtype is tinyattn.float64
    t[0] = 5.0
    assert a[0] == 5.0


def test_to_and_the_conversion_methods():
    x = tinyattn.tensor([1.7, -0.2, 0.0])
    assert x.to(tinyattn.float32) is x and x.to("cpu") is x and x.cpu() is x
    assert x.to(tinyattn.float64).dtype is tinyattn.float64
    assert x.to("cpu", tinyattn.float64).dtype is tinyattn.float64
    assert x.to(dtype=tinyattn.float64).dtype is tinyattn.float64
    assert x.to(device="cpu").device == "cpu"
    assert x.to(tinyattn.zeros(1, dtype=tinyattn.float64)).dtype is tinyattn.float64
    assert x.double().dtype is tinyattn.float64 and x.double().float().dtype is tinyattn.float32
    assert x.long().tolist() == [1, 0, 0] and x.long().dtype is tinyattn.int64
    assert x.bool().tolist() == [True, True, False]
    assert x.int().dtype is tinyattn.int32
    assert tinyattn.tensor([1, 2]).float().tolist() == [1.0, 2.0]
    assert x.type_as(tinyattn.tensor([1])).dtype is tinyattn.int64
    # to() is differentiable
    w = tinyattn.ones(2, requires_grad=True)
    (w.double() * 3).sum().backward()
    assert w.grad.dtype is tinyattn.float32 and w.grad.tolist() == [3.0, 3.0]


@pytest.mark.skipif(tinyattn.cuda.is_available(), reason="tests the error without a GPU")
def test_cuda_without_a_gpu_raises_a_device_error():
    assert tinyattn.cuda.is_available() is False
    with pytest.raises(DeviceError, match="cuda"):
        tinyattn.zeros(2).cuda()
    with pytest.raises(DeviceError):
        tinyattn.zeros(2, device="cuda")
    with pytest.raises(DeviceError, match="unknown device"):
        tinyattn.device("tpu")


class FakeCupyArray:
    """Holds NumPy values and gives them back with .get(), as a CuPy array does."""

    device = types.SimpleNamespace(id=0)

    def __init__(self, values):
        self.values = np.asarray(values)
        self.shape = self.values.shape

    def get(self):
        return self.values.copy()


FakeCupyArray.__module__, FakeCupyArray.__name__ = "cupy", "ndarray"


def fake_cupy(monkeypatch, device_count=1, current=0, driver_error=None):
    """Stand-ins for CuPy and array_api_compat.cupy, to test how tinyattn reads a GPU setup without one."""
    class CUDARuntimeError(RuntimeError):
        pass

    def get_device_count():
        if driver_error:
            raise CUDARuntimeError(driver_error)
        return device_count

    runtime = types.SimpleNamespace(getDeviceCount=get_device_count, CUDARuntimeError=CUDARuntimeError)
    cupy = types.ModuleType("cupy")
    cupy.ndarray = FakeCupyArray
    cupy.cuda = types.SimpleNamespace(runtime=runtime, Device=lambda: types.SimpleNamespace(id=current))
    compat = types.ModuleType("array_api_compat.cupy")
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "array_api_compat.cupy", compat)
    monkeypatch.setattr(backend._ns, "cuda", None)
    monkeypatch.setattr(backend._ns, "by_type", dict(backend._ns.by_type))
    return compat


@pytest.mark.skipif(tinyattn.cuda.is_available(), reason="fakes CuPy on a machine without a GPU")
def test_gpu_setups_that_cannot_work_are_device_errors(monkeypatch):
    fake_cupy(monkeypatch, driver_error="cudaErrorInsufficientDriver")
    with pytest.raises(DeviceError, match="cannot reach a CUDA device: cudaErrorInsufficientDriver"):
        tinyattn.zeros(2, device="cuda")
    assert tinyattn.cuda.is_available() is False

    fake_cupy(monkeypatch, device_count=0)
    with pytest.raises(DeviceError, match="no CUDA device is visible"):
        tinyattn.zeros(2, device="cuda")

    # CuPy would put "cuda:1" on its current device and report cuda:0: an error instead
    compat = fake_cupy(monkeypatch, device_count=2, current=0)
    assert backend.namespace_for("cuda") is compat and backend.namespace_for("cuda:0") is compat
    with pytest.raises(DeviceError, match=r"cuda:1 is not the GPU tinyattn computes on \(cuda:0.*2 visible\)"
                                          r".*CUDA_VISIBLE_DEVICES=1"):
        tinyattn.zeros(2, device="cuda:1")


@pytest.mark.skipif(tinyattn.cuda.is_available(), reason="fakes CuPy on a machine without a GPU")
def test_cupy_arrays_are_data_like_numpy_arrays(monkeypatch):
    fake_cupy(monkeypatch)
    t = tinyattn.tensor(FakeCupyArray([1.5, 2.0]), device="cpu")
    assert t.dtype is tinyattn.float64 and t.tolist() == [1.5, 2.0]  # as NumPy float64 data
    assert (tinyattn.ones(2, dtype=tinyattn.float64) + FakeCupyArray([1.0, 2.0])).tolist() == [2.0, 3.0]
    linear = tinyattn.nn.Linear(2, 1)
    linear.load_state_dict({"weight": FakeCupyArray([[3.0, 4.0]]), "bias": FakeCupyArray([5.0])})
    assert linear.weight.tolist() == [[3.0, 4.0]] and linear.bias.tolist() == [5.0]

    x = tinyattn.arange(6).reshape(2, 3)
    assert x.is_contiguous() and x.contiguous() is x
    t = x.T
    assert not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous() and c.tolist() == t.tolist()
    copy = x.clone()
    copy[0, 0] = 100
    assert x[0, 0].item() == 0  # a clone owns its memory


# ---------------------------------------------------------------------------------------------
# printing


def test_repr_like_pytorch():
    assert repr(tinyattn.tensor([[0.2961, 0.5166]])) == "tensor([[0.2961, 0.5166]])"
    assert repr(tinyattn.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"
    assert repr(tinyattn.tensor([1.0, 2.0], requires_grad=True) * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(tinyattn.tensor([1.0, 2.0], dtype=tinyattn.float64)) == "tensor([1., 2.], dtype=tinyattn.float64)"
    assert repr(tinyattn.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(tinyattn.tensor([True, False])) == "tensor([ True, False])"
    assert repr(tinyattn.tensor(3.5)) == "tensor(3.5000)" and str(tinyattn.tensor(2)) == "tensor(2)"
    assert repr(tinyattn.tensor([tinyattn.inf, -tinyattn.inf])) == "tensor([inf, -inf])"
    assert repr(tinyattn.eye(2)) == "tensor([[1., 0.],\n        [0., 1.]])"


def test_format_of_a_0d_tensor_gives_the_number():
    assert f"{tinyattn.tensor(2.5)}" == "2.5"
    assert f"{tinyattn.tensor(3)}" == "3"
    assert f"{tinyattn.tensor(2.5):.3f}" == "2.500"
    loss = (tinyattn.ones(2, requires_grad=True) * 1.25).sum()
    assert f"loss {loss:.2f}" == "loss 2.50"
    assert f"{tinyattn.tensor([1.0, 2.0])}" == "tensor([1., 2.])"


# ---------------------------------------------------------------------------------------------
# Python protocols


def test_iteration_len_bool_and_numbers():
    x = tinyattn.tensor([[1, 2], [3, 4]])
    rows = list(x)
    assert len(rows) == 2 and rows[1].tolist() == [3, 4] and len(x) == 2
    assert [int(v) for v in x[0]] == [1, 2]
    with pytest.raises(TypeError, match="0-d"):
        len(tinyattn.tensor(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(tinyattn.tensor(1.0))
    assert bool(tinyattn.tensor([1])) and not bool(tinyattn.tensor(0.0))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(tinyattn.tensor([1, 2]))
    assert float(tinyattn.tensor([2.5])) == 2.5 and int(tinyattn.tensor(3.7)) == 3
    assert [10, 20, 30][tinyattn.tensor(1)] == 20 and list(range(tinyattn.tensor(3))) == [0, 1, 2]
    with pytest.raises(TypeError):
        [10, 20][tinyattn.tensor(1.0)]


# ---------------------------------------------------------------------------------------------
# indexing: views, writes through views, masks, integer tensors


def test_basic_indexing_gives_views_that_share_memory():
    x = tinyattn.arange(12).reshape(3, 4)
    row = x[1]
    row[0] = 100
    assert x[1, 0].item() == 100
    col = x[:, 2]
    col += 1000
    assert x[:, 2].tolist() == [1002, 1006, 1010]
    element = x[0, 0]  # even a 0-d element is a view, as in PyTorch
    element += 7
    assert x[0, 0].item() == 7
    v = x.view(12)
    v[-1] = -1
    assert x[2, 3].item() == -1
    x.T[0, 1] = 55
    assert x[1, 0].item() == 55
    assert x[None].shape == (1, 3, 4) and x[..., None].shape == (3, 4, 1) and x[:, None, 1].shape == (3, 1)


def test_advanced_indexing_copies():
    x = tinyattn.arange(6)
    picked = x[tinyattn.tensor([0, 2])]
    picked[0] = 100
    assert x[0].item() == 0
    masked = x[x > 3]
    masked[0] = 100
    assert x.tolist() == [0, 1, 2, 3, 4, 5]


def test_setitem_writes_through():
    x = tinyattn.zeros(2, 3)
    x[0] = 5
    x[:, 1] = tinyattn.tensor([7.0, 8.0])
    x[1, 2] = 9
    x[-1, 0] = -1
    assert x.tolist() == [[5, 7, 5], [-1, 8, 9]]
    x[x > 6] = 0
    assert x.tolist() == [[5, 0, 5], [-1, 0, 0]]
    x[tinyattn.tensor([0, 1]), tinyattn.tensor([1, 2])] = 3.0
    assert x.tolist() == [[5, 3, 5], [-1, 0, 3]]
    x[[1]] = 4.0
    assert x[1].tolist() == [4, 4, 4]
    x[:] = tinyattn.tensor([1.0, 2.0, 3.0])  # broadcast
    assert x.tolist() == [[1, 2, 3], [1, 2, 3]]
    x[0] = tinyattn.tensor(7)  # an int tensor into a float tensor
    assert x[0].tolist() == [7.0, 7.0, 7.0]


def test_boolean_masks_and_integer_tensors():
    x = tinyattn.arange(6).reshape(2, 3)
    assert x[tinyattn.tensor([[True, False, True], [False, True, False]])].tolist() == [0, 2, 4]
    assert x[tinyattn.tensor([False, True])].tolist() == [[3, 4, 5]]
    assert tinyattn.arange(10)[tinyattn.tensor([1, 1, 3])].tolist() == [1, 1, 3]
    assert x[tinyattn.tensor([[0, 1], [1, 1]])].shape == (2, 2, 3)
    assert x[:, tinyattn.tensor([0, 2])].tolist() == [[0, 2], [3, 5]]
    assert x[[0, 1], [2, 0]].tolist() == [2, 3]
    assert tinyattn.arange(5)[tinyattn.tensor([-1])].tolist() == [4]
    assert tinyattn.arange(5)[np.array([1, 2])].tolist() == [1, 2]


def test_negative_indices_and_0d_tensors_as_bounds():
    data = tinyattn.arange(20)
    assert data[-1].item() == 19 and data[-3:].tolist() == [17, 18, 19]
    i = tinyattn.tensor(3)
    assert data[i : i + 8].tolist() == list(range(3, 11))  # as in get_batch of "Let's build GPT"
    assert data[i].item() == 3
    starts = tinyattn.tensor([0, 5])
    batch = tinyattn.stack([data[s : s + 4] for s in starts])
    assert batch.tolist() == [[0, 1, 2, 3], [5, 6, 7, 8]]
    assert data[np.int64(2)].item() == 2


def test_index_out_of_range_raises():
    x = tinyattn.arange(5)
    with pytest.raises(IndexError, match="out of bounds"):
        x[7]
    with pytest.raises(IndexError, match="out of bounds"):
        x[tinyattn.tensor([1, 7])]
    with pytest.raises(IndexError):
        x[tinyattn.tensor([True, False])]  # mask of the wrong length
    with pytest.raises(IndexError, match="long, int or bool"):
        x[tinyattn.tensor(1.0)]
    with pytest.raises(IndexError):
        x[1.0]


def test_gather_checks_its_index(xp_backend):
    x = tinyattn.arange(8.0).reshape(2, 4)
    assert x.gather(-1, tinyattn.tensor([[3, 1]])).tolist() == [[3.0, 1.0]]  # a corner of x, as in PyTorch
    # checked, not left to the array library: NumPy takes -1 as the last index, CuPy wraps 4 to 0
    for bad in (4, -1):
        with pytest.raises(IndexError, match=f"gather: index {bad} is out of bounds for dim 1 with size 4"):
            x.gather(1, tinyattn.tensor([[0, bad]]))
    with pytest.raises(ShapeError, match=r"index of shape \[2\] does not fit an input of shape \[2, 4\]"):
        x.gather(1, tinyattn.tensor([0, 1]))
    with pytest.raises(ShapeError, match=r"index of shape \[3, 2\]"):
        x.gather(1, tinyattn.zeros(3, 2, dtype=tinyattn.int64))


# ---------------------------------------------------------------------------------------------
# in-place ops


def test_inplace_ops_change_the_tensor_and_its_views():
    x = tinyattn.zeros(2, 3)
    row = x[1]
    row += 1
    alias = x
    alias += 2
    assert alias is x
    assert x.tolist() == [[2, 2, 2], [3, 3, 3]]
    assert x.add_(1) is x and x.mul_(2) is x and x.sub_(1) is x and x.div_(2) is x
    assert x.tolist() == [[2.5] * 3, [3.5] * 3]
    x.add_(tinyattn.ones(3), alpha=2)
    assert x[0].tolist() == [4.5] * 3
    x.zero_()
    assert x.tolist() == [[0] * 3] * 2
    x.fill_(7)
    assert x.tolist() == [[7] * 3] * 2
    x.copy_(tinyattn.arange(3))
    assert x.tolist() == [[0, 1, 2]] * 2 and x.dtype is tinyattn.float32
    f = tinyattn.ones(3)
    f *= tinyattn.tensor([1, 2, 3])  # int into float: fine
    assert f.tolist() == [1, 2, 3]


def test_inplace_writes_to_an_expanded_view_are_refused(xp_backend):
    wide = tinyattn.zeros(1, 3).expand(2, 3)  # both rows are the same memory
    for write in (lambda: wide.add_(1), lambda: wide.zero_(), lambda: wide.copy_(tinyattn.ones(2, 3)),
                  lambda: wide.__setitem__(0, 1.0), lambda: wide.normal_()):
        with pytest.raises(RuntimeError, match=r"shape \[2, 3\].*one place in memory.*\.clone\(\)"):
            write()
    assert wide.clone().add_(1).tolist() == [[1.0] * 3] * 2
    with pytest.raises(RuntimeError, match=r"shape \[3\].*read-only.*\.clone\(\)"):
        wide[0].add_(1)  # one row repeats nothing, but NumPy keeps the whole expand() read-only
    base = tinyattn.zeros(3)
    base.expand(1, 3).add_(1)  # nothing repeats: a writable view of base, as in PyTorch
    assert base.tolist() == [1.0, 1.0, 1.0]


def test_inplace_ops_keep_the_dtype():
    x = tinyattn.arange(3)
    with pytest.raises((TypeError, RuntimeError), match="float"):
        x += 1.5  # PyTorch: result type Float can't be cast to Long
    with pytest.raises((TypeError, RuntimeError)):
        x *= tinyattn.tensor([0.5, 0.5, 0.5])
    x += 1
    assert x.tolist() == [1, 2, 3] and x.dtype is tinyattn.int64


def test_version_counter_is_shared_by_views():
    x = tinyattn.zeros(3)
    v, w = x[1:], x.view(3)
    v.add_(1)
    assert x._version is v._version is w._version and x._version[0] == 1


def test_inplace_on_a_leaf_that_requires_grad():
    w = tinyattn.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        w.add_(1)
    with pytest.raises(RuntimeError, match="leaf"):
        w[0] = 3.0
    with pytest.raises(RuntimeError, match="no_grad"):
        w *= 2
    with tinyattn.no_grad():
        w.add_(1)  # how optimizers update parameters
        w[1] = 5.0
    assert w.tolist() == [2.0, 5.0] and w.requires_grad and w.is_leaf


# ---------------------------------------------------------------------------------------------
# comparisons and logic


def test_comparisons_and_logic_return_bool_tensors():
    x = tinyattn.tensor([1, 2, 3])
    for result, want in [
        (x > 1, [False, True, True]),
        (x >= 2, [False, True, True]),
        (x < 2, [True, False, False]),
        (x <= 1, [True, False, False]),
        (x == tinyattn.tensor([1, 0, 3]), [True, False, True]),
        (x != 2, [True, False, True]),
        (tinyattn.tensor([1.0, 2.5]) == 2.5, [False, True]),
        (2 < x, [False, False, True]),
    ]:
        assert result.dtype is tinyattn.bool and result.tolist() == want
    a, c = tinyattn.tensor([True, False, True]), tinyattn.tensor([True, True, False])
    assert (a & c).tolist() == [True, False, False]
    assert (a | c).tolist() == [True, True, True]
    assert (a ^ c).tolist() == [False, True, True]
    assert (~a).tolist() == [False, True, False] and a.logical_not().tolist() == [False, True, False]
    assert (x > 1).any().item() is True and (x > 1).all().item() is False
    assert (x > 0).all(dim=0).tolist() is True
    assert tinyattn.tensor([1.0, np.nan]).isnan().tolist() == [False, True]
    assert tinyattn.equal(x, tinyattn.tensor([1, 2, 3])) and not tinyattn.equal(x, tinyattn.tensor([1, 2]))
    assert tinyattn.allclose(tinyattn.tensor([1.0, 2.0]), tinyattn.tensor([1.0, 2.0 + 1e-7]))


# ---------------------------------------------------------------------------------------------
# split, chunk, cat, stack


def test_split_chunk_cat_stack():
    x = tinyattn.arange(7)
    assert [p.tolist() for p in x.split(3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [p.tolist() for p in x.split([2, 5])] == [[0, 1], [2, 3, 4, 5, 6]]
    assert [p.tolist() for p in x.chunk(3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [p.tolist() for p in tinyattn.arange(6).chunk(4)] == [[0, 1], [2, 3], [4, 5]]
    m = tinyattn.arange(12).reshape(3, 4)
    q, k, v = m.split(1, dim=0)
    assert q.shape == (1, 4) and v.tolist() == [[8, 9, 10, 11]]
    halves = tinyattn.split(m, 2, dim=-1)
    assert [h.shape for h in halves] == [(3, 2), (3, 2)]
    assert tinyattn.cat(halves, dim=-1).tolist() == m.tolist()
    assert tinyattn.cat([tinyattn.zeros(2, 1), tinyattn.ones(2, 2)], dim=1).tolist() == [[0, 1, 1], [0, 1, 1]]
    assert tinyattn.stack([tinyattn.zeros(2), tinyattn.ones(2)], dim=1).tolist() == [[0, 1], [0, 1]]
    assert tinyattn.stack([tinyattn.zeros(2, 3)] * 4, dim=-1).shape == (2, 3, 4)
    assert tinyattn.stack((m, m)).shape == (2, 3, 4)
    with pytest.raises(ShapeError, match="add up"):
        x.split([2, 2])


# ---------------------------------------------------------------------------------------------
# masked_fill and where


def test_masked_fill_returns_a_new_tensor_and_masked_fill__changes_in_place():
    x = tinyattn.ones(2, 2)
    mask = tinyattn.tensor([[True, False], [False, True]])
    y = x.masked_fill(mask, -tinyattn.inf)
    assert y is not x and x.tolist() == [[1, 1], [1, 1]]
    assert y.tolist() == [[-np.inf, 1], [1, -np.inf]]
    z = x.masked_fill_(mask, 0.0)
    assert z is x and x.tolist() == [[0, 1], [1, 0]]
    # the mask broadcasts
    assert tinyattn.ones(2, 3).masked_fill(tinyattn.tensor([True, False, True]), 0.0).tolist() == [[0, 1, 0]] * 2
    causal = tinyattn.tril(tinyattn.ones(3, 3))
    scores = tinyattn.zeros(2, 3, 3).masked_fill(causal == 0, float("-inf"))
    assert np.isinf(host(scores[1])).tolist() == [[False, True, True], [False, False, True], [False, False, False]]
    assert tinyattn.masked_fill(tinyattn.zeros(2), tinyattn.tensor([True, False]), tinyattn.tensor(3.0)).tolist() == [3, 0]
    with pytest.raises(TypeError, match="bool"):
        x.masked_fill(tinyattn.tensor([[1, 0], [0, 1]]), 0.0)
    with pytest.raises(ShapeError, match=r"\[3\].*\[2, 2\]"):
        x.masked_fill(tinyattn.tensor([True, False, True]), 0.0)


def test_where():
    c = tinyattn.tensor([True, False])
    assert tinyattn.where(c, tinyattn.tensor([1.0, 2.0]), 0.0).tolist() == [1.0, 0.0]
    assert tinyattn.tensor([1.0, 2.0]).where(c, -1.0).tolist() == [1.0, -1.0]
    with pytest.raises(TypeError, match="bool"):
        tinyattn.where(tinyattn.tensor([1, 0]), 1.0, 0.0)


# ---------------------------------------------------------------------------------------------
# errors: the exception type and the words that say what went wrong


def test_shape_mismatch_in_binary_ops_names_both_shapes():
    for op in (lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b, lambda a, b: a / b):
        with pytest.raises(ShapeError, match=r"\[2, 3\].*\[4\]"):
            op(tinyattn.ones(2, 3), tinyattn.ones(4))
    with pytest.raises(ValueError):  # ShapeError is also a ValueError and a RuntimeError
        tinyattn.ones(2, 3) * tinyattn.ones(3, 2)
    with pytest.raises(RuntimeError):
        tinyattn.ones(2, 3) * tinyattn.ones(3, 2)


def test_matmul_errors():
    with pytest.raises(ShapeError, match=r"\[2, 3\].*\[2, 3\]"):
        tinyattn.ones(2, 3) @ tinyattn.ones(2, 3)
    with pytest.raises(ShapeError, match=r"\[3\].*\[2\]"):
        tinyattn.dot(tinyattn.ones(3), tinyattn.ones(2))
    with pytest.raises(ShapeError, match="1-D"):
        tinyattn.dot(tinyattn.ones(2, 2), tinyattn.ones(2))
    with pytest.raises(ShapeError, match="at least 1 dim"):
        tinyattn.ones(2) @ tinyattn.tensor(1.0)
    with pytest.raises(TypeError, match="bool"):
        tinyattn.ones(2, 2).bool() @ tinyattn.ones(2, 2).bool()
    assert (tinyattn.ones(2, 2, dtype=tinyattn.long) @ tinyattn.ones(2, 2, dtype=tinyattn.long)).tolist() == [[2, 2], [2, 2]]


def test_shape_op_errors():
    with pytest.raises(ShapeError, match=r"\[2, 3\].*6 elements.*\[4\]"):
        tinyattn.ones(2, 3).reshape(4)
    with pytest.raises(ShapeError, match=r"\.contiguous\(\).*\.reshape"):
        tinyattn.ones(2, 3).T.view(6)  # as PyTorch: view needs a compatible memory layout
    assert tinyattn.ones(2, 3).T.reshape(6).shape == (6,)
    assert tinyattn.ones(2, 3).T.contiguous().view(6).shape == (6,)
    with pytest.raises(ShapeError, match="expand"):
        tinyattn.ones(2, 3).expand(4, 3)
    with pytest.raises(ShapeError, match="permutation"):
        tinyattn.ones(2, 3, 4).permute(0, 0, 1)
    with pytest.raises(ShapeError, match=r"\[2, 3\].*\[3, 2\]"):
        tinyattn.cat([tinyattn.ones(2, 3), tinyattn.ones(3, 2)])
    with pytest.raises(ShapeError, match=r"\[2, 3\].*\[3, 2\]"):
        tinyattn.stack([tinyattn.ones(2, 3), tinyattn.ones(3, 2)])
    with pytest.raises(IndexError, match=r"dimension 2 is out of range.*\[-2, 1\]"):
        tinyattn.ones(2, 3).sum(dim=2)
    with pytest.raises(IndexError, match="out of range"):
        tinyattn.ones(2, 3).softmax(dim=3)
    with pytest.raises(ValueError, match="empty"):
        tinyattn.cat([])


def test_dtype_errors():
    with pytest.raises(TypeError, match="floating point"):
        tinyattn.tensor([1, 2], requires_grad=True)
    with pytest.raises(TypeError, match="floating point"):
        tinyattn.zeros(2, dtype=tinyattn.long, requires_grad=True)
    with pytest.raises(TypeError, match="floating point"):
        tinyattn.tensor([1, 2]).requires_grad_()
    with pytest.raises(TypeError, match=r"mean.*float"):
        tinyattn.tensor([1, 2]).mean()
    assert tinyattn.tensor([1, 2]).mean(dtype=tinyattn.float32).item() == 1.5


def test_mixing_devices_raises_a_device_error():
    numpy_backed = tinyattn.ones(2)
    backend.use_array_api_strict(True)
    try:
        other = tinyattn.ones(2)
        for op in (
            lambda: numpy_backed + other,
            lambda: other * numpy_backed,
            lambda: numpy_backed @ other,
            lambda: tinyattn.cat([numpy_backed, other]),
            lambda: tinyattn.where(other > 0, numpy_backed, other),
            lambda: numpy_backed[tinyattn.tensor([0])],
            lambda: numpy_backed.masked_fill(other > 0, 0.0),
            lambda: numpy_backed.add_(other),
            lambda: numpy_backed.__setitem__(0, other[0]),
            lambda: (numpy_backed.clone().requires_grad_() * 2).backward(other),
        ):
            with pytest.raises(DeviceError, match=r"same device.*numpy.*array_api_strict|same device.*array_api_strict.*numpy"):
                op()
        with pytest.raises(DeviceError, match=r"\.to\(device\)"):
            numpy_backed - other
    finally:
        backend.use_array_api_strict(False)


def test_no_grad_is_thread_local_for_tensor_ops():
    seen = {}

    def worker():
        with tinyattn.no_grad():
            seen["worker"] = (tinyattn.ones(1, requires_grad=True) * 2).requires_grad

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen["worker"] is False
    assert (tinyattn.ones(1, requires_grad=True) * 2).requires_grad


# ---------------------------------------------------------------------------------------------
# fixed: each test below pins a bug that gave a wrong answer or no error (PyTorch's results)


def test_requested_dtype_applies_to_the_numbers_as_given(xp_backend):
    # they used to go through float32 first: 0.10000000149011612, 16777216, 0.0
    assert tinyattn.tensor([0.1], dtype=tinyattn.float64).item() == 0.1
    assert tinyattn.tensor([16777217.0], dtype=tinyattn.int64).tolist() == [16777217]
    assert tinyattn.tensor([1e-50], dtype=tinyattn.float64).item() == 1e-50
    assert tinyattn.tensor([1.7, -1.7], dtype=tinyattn.int32).tolist() == [1, -1]
    x = tinyattn.zeros(2, dtype=tinyattn.float64)
    assert x.copy_([0.1, 0.2]).tolist() == [0.1, 0.2]
    x += [0.1, 0.1]
    assert x.tolist() == [0.2, 0.30000000000000004]  # 0.1 + 0.1 and 0.2 + 0.1 in float64
    n = tinyattn.tensor([1, 2])
    with pytest.raises(TypeError, match="float32 can't be written into a tinyattn.int64"):
        n += [0.5]  # refused like n += 0.5, not truncated to 0


def test_dtype_of_numpy_scalars_in_lists_like_pytorch():
    assert tinyattn.tensor([np.float64(0.1)]).dtype is tinyattn.float64
    assert tinyattn.tensor([np.float64(0.1)]).item() == 0.1
    assert tinyattn.tensor([0.2, np.float64(0.1)]).dtype is tinyattn.float64
    assert tinyattn.tensor([np.float32(1), 0.5]).dtype is tinyattn.float32
    assert tinyattn.tensor([np.int32(3)]).dtype is tinyattn.int32
    assert tinyattn.tensor([np.int32(3), 4]).dtype is tinyattn.int64
    assert tinyattn.tensor([np.int32(3), 4.5]).dtype is tinyattn.float32
    assert tinyattn.tensor([[True, 2]]).dtype is tinyattn.int64
    assert tinyattn.tensor([tinyattn.tensor(1.0, dtype=tinyattn.float64)]).dtype is tinyattn.float64
    assert tinyattn.tensor(range(3)).tolist() == [0, 1, 2]


def test_integers_too_large_for_the_dtype_raise():
    assert tinyattn.tensor([2**63 - 1]).item() == 2**63 - 1
    for make in (lambda: tinyattn.tensor([2**63]), lambda: tinyattn.tensor(-(2**63) - 1),
                 lambda: tinyattn.tensor([3e9], dtype=tinyattn.int32),
                 lambda: tinyattn.tensor([float("nan")], dtype=tinyattn.int64)):
        with pytest.raises(OverflowError, match="does not fit in a tinyattn.int(64|32) tensor.*float dtype"):
            make()  # it used to wrap around: tensor([2**63]) was -2**63
    assert tinyattn.tensor([2**63], dtype=tinyattn.float32).item() == 2.0**63


# x = arange(24).reshape(2, 3, 4); PyTorch applies ints as selects before the index lists
MIXED_KEYS = [  # (key, PyTorch's x[key])
    ((0, slice(None), [0, 3]), [[0, 3], [4, 7], [8, 11]]),  # NumPy: [[0, 4, 8], [3, 7, 11]]
    ((0, Ellipsis, [0, 3]), [[0, 3], [4, 7], [8, 11]]),
    ((1, None, [0, 2]), [[[12, 13, 14, 15], [20, 21, 22, 23]]]),  # shape (1, 2, 4)
    ((slice(None), 0, [0, 1]), [[0, 1], [12, 13]]),  # NumPy agrees: the 0 and the list stand together
    (([0, 1], slice(None), 0), [[0, 4, 8], [12, 16, 20]]),
    ((1, slice(0, 2), [[0], [3]]), [[[12], [15]], [[16], [19]]]),  # a (2, 1) list: its dims after the slice's
    ((0, slice(None), [True, False, False, True]), [[0, 3], [4, 7], [8, 11]]),
    ((0, slice(None), (0, 3)), [[0, 3], [4, 7], [8, 11]]),  # a tuple inside a key is a list of indices
]


@pytest.mark.parametrize("case", range(len(MIXED_KEYS)))
def test_ints_with_index_lists_give_pytorchs_layout(xp_backend, case):
    key, want = MIXED_KEYS[case]
    x = tinyattn.arange(24.0).reshape(2, 3, 4).requires_grad_()
    got = x[key]
    assert got.tolist() == want
    # the write through the same key takes the value in the same layout
    y = tinyattn.zeros(2, 3, 4)
    value = tinyattn.arange(1.0, got.numel() + 1).reshape(got.shape)
    y[key] = value
    assert y[key].tolist() == value.tolist()
    # and the gradient goes back to the elements the key picked
    (got * value).sum().backward()
    assert x.grad.tolist() == y.tolist()


def test_a_written_value_may_carry_extra_leading_ones():
    x = tinyattn.zeros(2, 3)
    x[0] = tinyattn.tensor([[1.0, 2.0, 3.0]])  # (1, 3) into a (3,) row, as PyTorch allows
    x[1, 0] = tinyattn.tensor([5.0])
    assert x.tolist() == [[1.0, 2.0, 3.0], [5.0, 0.0, 0.0]]


def test_writing_a_number_beyond_float32_is_refused():
    x = tinyattn.zeros(2)
    for write in (lambda: x.__setitem__(0, 1e300), lambda: x.fill_(-1e300), lambda: x.masked_fill(x == 0, 1e39)):
        with pytest.raises(OverflowError, match="does not fit in a float32 tensor"):
            write()  # it became inf
    x[0] = float("inf")  # an infinity is a float32 number
    assert x.tolist() == [float("inf"), 0.0]


def test_subtracting_a_python_bool_is_refused_as_a_bool_tensor_is():
    for subtract in (lambda: tinyattn.tensor([1.0]) - True, lambda: True - tinyattn.tensor([1.0])):
        with pytest.raises(TypeError, match="Subtraction, the `-` operator, with a bool"):
            subtract()


def test_masked_fill_with_a_tensor_value_sends_it_its_gradient():
    x = tinyattn.tensor([1.0, 2.0, 3.0], requires_grad=True)
    value = tinyattn.tensor(5.0, requires_grad=True)
    filled = x.masked_fill(x > 1.5, value)
    (filled * tinyattn.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert filled.tolist() == [1.0, 5.0, 5.0]
    assert x.grad.tolist() == [1.0, 0.0, 0.0] and value.grad.item() == 5.0  # PyTorch's


def test_a_bool_among_index_lists_is_refused_not_misplaced():
    x = tinyattn.arange(120).reshape(2, 3, 4, 5)
    with pytest.raises(IndexError, match="True or False in an index with index lists"):
        x[0, :, True, [0, 1]]
    assert x[True].shape == (1, 2, 3, 4, 5)  # alone, it adds a dim, as in PyTorch


@st.composite
def index_keys(draw, shape):
    """A key of ints, slices, None, `...`, index lists and masks for a tensor of `shape`.

    Index lists hold distinct positions that broadcast to distinct tuples, so that a write through the
    key does not depend on which of two writes to one element comes last.
    """
    ndim = len(shape)
    used = draw(st.integers(1, ndim))  # how many dims the key indexes
    split = draw(st.integers(0, used)) if draw(st.booleans()) else used  # how many come before `...`
    length = draw(st.integers(1, 2))  # of every 1-D index list, so that they broadcast together
    column = False  # one (2, 1) list at most: it broadcasts against the 1-D lists
    parts = []
    for dim in list(range(split)) + list(range(ndim - (used - split), ndim)):
        size = shape[dim]
        positions = st.lists(st.integers(-size, size - 1), min_size=length, max_size=length,
                             unique_by=lambda i: i % size)
        kind = draw(st.sampled_from(["int", "slice", "list", "list", "mask", "column"]))
        if kind == "int":
            parts.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            bound = st.none() | st.integers(-size, size)
            parts.append(slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2]))))
        elif kind == "mask":
            chosen = [i % size for i in draw(positions)]
            parts.append([i in chosen for i in range(size)])
        elif kind == "column" and not column:
            column = True
            pair = st.lists(st.integers(-size, size - 1), min_size=2, max_size=2, unique_by=lambda i: i % size)
            parts.append([[i] for i in draw(pair)])
        else:
            parts.append(draw(positions))
    if split < used or draw(st.booleans()):
        parts.insert(split, Ellipsis)
    for _ in range(draw(st.integers(0, 2))):
        parts.insert(draw(st.integers(0, len(parts))), None)
    return parts


@settings(max_examples=150)
@given(parts=index_keys((2, 3, 4, 5)))
def test_indexing_and_writes_match_pytorch_for_mixed_keys(xp_backend, torch, parts):
    def key(lib):  # lists as index tensors of the library
        return tuple(lib.tensor(p) if isinstance(p, list) else p for p in parts)

    ours, theirs = tinyattn.arange(120).reshape(2, 3, 4, 5), torch.arange(120).reshape(2, 3, 4, 5)
    want = theirs[key(torch)]
    got = ours[key(tinyattn)]
    assert list(got.shape) == list(want.shape) and got.tolist() == want.tolist()
    value = torch.arange(1000, 1000 + want.numel()).reshape(want.shape)
    theirs[key(torch)] = value
    ours[key(tinyattn)] = tinyattn.tensor(value.numpy())
    assert ours.tolist() == theirs.tolist()


def test_clamp_promotes_like_pytorch(xp_backend):
    ints = tinyattn.tensor([0, 1, 2, 3])
    low = ints.clamp(min=1.5)  # was int64 [1, 1, 2, 3]
    assert low.dtype is tinyattn.float32 and low.tolist() == [1.5, 1.5, 2.0, 3.0]
    assert ints.clamp(max=1.5).tolist() == [0.0, 1.0, 1.5, 1.5]
    assert ints.clamp(1, 2).dtype is tinyattn.int64 and ints.clamp(1, 2).tolist() == [1, 1, 2, 2]
    assert ints.clamp(tinyattn.tensor(1.5)).tolist() == [1.5, 1.5, 2.0, 3.0]
    assert tinyattn.tensor([True, False]).clamp(min=0).dtype is tinyattn.int64


def test_clamp_with_tensor_bounds(xp_backend):
    x = tinyattn.tensor([0.0, 1.0, 2.0, 3.0], requires_grad=True)
    low = tinyattn.tensor([1.0, 1.0, 0.0, 0.0], requires_grad=True)
    high = tinyattn.tensor([3.0, 3.0, 3.0, 2.5], requires_grad=True)
    y = x.clamp(low, high)
    assert y.tolist() == [1.0, 1.0, 2.0, 2.5]
    y.sum().backward()  # each element's gradient goes to whichever of x, low, high it came from
    assert x.grad.tolist() == [0.0, 1.0, 1.0, 0.0]
    assert low.grad.tolist() == [1.0, 0.0, 0.0, 0.0] and high.grad.tolist() == [0.0, 0.0, 0.0, 1.0]
    assert tinyattn.tensor([0.0, 1.0, 2.0]).clamp(tinyattn.ones(2, 3)).tolist() == [[1.0, 1.0, 2.0]] * 2
    bounded = tinyattn.tensor([0.0, 1.0]).clamp(tinyattn.tensor([np.nan, 0.0]))
    assert np.isnan(bounded[0].item()) and bounded[1].item() == 1.0
    wide = tinyattn.ones(3).clamp(tinyattn.tensor([1.0], dtype=tinyattn.float64))
    assert wide.dtype is tinyattn.float64
    assert y.grad_fn.name() == "ClampBackward0"
    # NaN in x or in a bound: NaN out, and no gradient to either there (PyTorch's rule)
    x = tinyattn.tensor([np.nan, 1.0, -2.0], requires_grad=True)
    low = tinyattn.tensor([0.0, 0.0, np.nan], requires_grad=True)
    y = x.clamp(min=low)
    y.sum().backward()
    assert np.isnan(host(y)[[0, 2]]).all() and x.grad.tolist() == [0.0, 1.0, 0.0]
    assert low.grad.tolist() == [0.0, 0.0, 0.0]


def test_isclose_with_infinities(xp_backend):
    a = tinyattn.tensor([1.0, np.inf, np.inf, -np.inf, np.nan])
    b = tinyattn.tensor([np.inf, -np.inf, np.inf, -np.inf, np.nan])
    assert tinyattn.isclose(a, b).tolist() == [False, False, True, True, False]  # was all True but nan
    assert tinyattn.isclose(a, b, equal_nan=True).tolist() == [False, False, True, True, True]
    assert not tinyattn.allclose(tinyattn.tensor([1.0]), tinyattn.tensor([np.inf]))
    loose = tinyattn.isclose(tinyattn.tensor([1.0, np.inf]), tinyattn.tensor([2.0, 1.0]), atol=np.inf)
    assert loose.tolist() == [True, False]
    assert tinyattn.isclose(tinyattn.tensor([1, 2]), tinyattn.tensor([1, 3])).tolist() == [True, False]
    assert tinyattn.isclose(tinyattn.tensor([True, False]), tinyattn.tensor([True, True])).tolist() == [True, False]
    big = tinyattn.tensor([2**60 + 1])  # integers compare exactly: float64 would round both to 2**60
    assert not tinyattn.isclose(big, tinyattn.tensor([2**60]), rtol=0, atol=0).item()
    assert tinyattn.isclose(big, tinyattn.tensor([2**60]), rtol=0, atol=1).item()


def test_std_and_var_take_a_bool_first_argument_as_unbiased():
    x = tinyattn.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
    assert x.std(False).item() == pytest.approx(2.5819889)  # was the std along dim 0
    assert x.var(True).item() == pytest.approx(8.0)
    assert tinyattn.var(x, False).item() == pytest.approx(6.6666667)
    assert tinyattn.std(x, True).item() == pytest.approx(2.8284271)
    assert x.std(0, False).tolist() == pytest.approx([1.0, 1.5, 2.5])
    with pytest.raises(TypeError, match="unbiased once"):
        x.std(False, True)


def test_float32_variance_is_summed_in_float64_as_in_pytorch(torch):
    assert tinyattn.tensor([1e20, -1e20]).std().item() == torch.tensor([1e20, -1e20]).std().item()  # was inf
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = (rng.standard_normal((4, 37)) * rng.uniform(0.1, 100)).astype(np.float32)
        for method in ("var", "std"):
            ours, theirs = getattr(tinyattn.tensor(x), method)(1), getattr(torch.tensor(x), method)(1)
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())  # to the bit
            assert ours.dtype is tinyattn.float32


def test_std_gradient_is_zero_where_the_std_is_zero(xp_backend):
    x = tinyattn.tensor([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]], requires_grad=True)
    std = x.std(-1)
    assert std.tolist() == [0.0, 1.0]
    std.sum().backward()  # was NaN for the constant row
    assert x.grad.tolist() == [[0.0, 0.0, 0.0], [-0.5, 0.0, 0.5]]


def test_reducing_over_an_empty_dim_list_reduces_everything(xp_backend):
    x = tinyattn.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.sum(dim=()).item() == 10.0 and x.sum(dim=[]).item() == 10.0
    assert x.sum(dim=[], keepdim=True).tolist() == [[10.0]]
    assert x.mean(dim=()).item() == 2.5
    assert x.var(dim=()).item() == pytest.approx(1.6666666)
    assert x.std(dim=[]).item() == pytest.approx(1.2909944)


def test_float_remainder_gives_a_zero_the_dividends_sign(xp_backend):
    r = tinyattn.tensor([4.0, -4.0, 5.5, -5.5]) % tinyattn.tensor([-1.0, 1.0, 2.0, 2.0])
    values = host(r)
    assert values.tolist() == [0.0, 0.0, 1.5, 0.5]
    assert np.signbit(values).tolist() == [False, True, False, False]  # PyTorch prints [0., -0., ...]


def test_integer_division_by_zero_raises(xp_backend):
    for divide in (lambda: tinyattn.tensor([1, 2]) // 0, lambda: tinyattn.tensor([5, 2]) % tinyattn.tensor([0, 1]),
                   lambda: 7 // tinyattn.tensor([2, 0]), lambda: 7 % tinyattn.tensor([0]),
                   lambda: tinyattn.tensor([1, 2], dtype=tinyattn.int32) // tinyattn.tensor(0)):
        with pytest.raises(ZeroDivisionError, match=r"integer (//|%) by zero.*x\.float\(\)"):
            divide()  # NumPy's answer was 0
    assert (tinyattn.tensor([], dtype=tinyattn.int64) // 0).tolist() == []
    assert (tinyattn.tensor([1.0, -1.0]) // 0).tolist() == [np.inf, -np.inf]  # floats: inf, silently
    assert (tinyattn.tensor([1, 2]) // 0.0).tolist() == [np.inf, np.inf]
    assert (7 % tinyattn.tensor([2, 3])).tolist() == [1, 1]  # __rmod__ was missing
    assert (tinyattn.tensor([7, -7]) // tinyattn.tensor([True, True])).tolist() == [7, -7]
    with pytest.raises(TypeError, match="bool"):
        tinyattn.tensor([True]) // tinyattn.tensor([True])  # was an int8 array tinyattn has no dtype for


def test_augmented_assignments_write_in_place(xp_backend):
    for statement, want in [("a //= 2", [3, 4]), ("a %= 3", [1, 2]), ("a **= 2", [49, 64]),
                            ("a &= 6", [6, 0]), ("a |= 1", [7, 9]), ("a ^= 1", [6, 9])]:
        a = tinyattn.tensor([7, 8])
        alias = a
        exec(statement)
        assert a is alias and alias.tolist() == want, statement  # they rebound `a` to a new tensor
    mask = tinyattn.tensor([True, False])
    row = mask
    mask |= tinyattn.tensor([False, True])
    assert row.tolist() == [True, True]
    narrow = tinyattn.tensor([7, 9], dtype=tinyattn.int32)
    narrow //= tinyattn.tensor([2, 2])  # an int64 operand, as in x += y: the result stays int32
    assert narrow.tolist() == [3, 4] and narrow.dtype is tinyattn.int32
    a = tinyattn.tensor([1, 2])
    with pytest.raises(TypeError, match="int64"):
        a //= 1.5
    with pytest.raises(TypeError, match="int64"):
        a **= 0.5
    x = tinyattn.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y **= 2
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="no gradient"):
        y //= 2


def test_inplace_ops_cannot_grow_the_tensor(xp_backend):
    for grow in (lambda a: a.add_(tinyattn.ones(1, 3)), lambda a: a.mul_(tinyattn.ones(2, 3)),
                 lambda a: a.copy_(tinyattn.ones(1, 3))):
        a = tinyattn.zeros(3)
        with pytest.raises(ShapeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[(1|2), 3\]"):
            grow(a)
        assert a.tolist() == [0.0, 0.0, 0.0]
    assert tinyattn.zeros(2, 3).copy_(tinyattn.ones(3)).tolist() == [[1.0] * 3] * 2


def test_sum_honours_its_dtype(xp_backend):
    total = tinyattn.tensor([1, 2]).sum(dtype=tinyattn.int32)
    assert total.dtype is tinyattn.int32 and total.item() == 3  # was int64
    assert tinyattn.tensor([1, 2, 0]).sum(dtype=tinyattn.bool).item() is True  # was int64 3
    assert tinyattn.tensor([[1, 0], [0, 0]]).sum(0, dtype=tinyattn.bool).tolist() == [True, False]
    assert tinyattn.tensor([0.1, 0.2]).sum(dtype=tinyattn.float64).dtype is tinyattn.float64


def test_writes_convert_the_value_to_the_tensors_dtype(xp_backend):
    a = tinyattn.tensor([1, 2])
    a[0] = 2.7  # truncated, as PyTorch does (it was refused)
    assert a.tolist() == [2, 2]
    a[:] = tinyattn.tensor([1.5, -2.5])
    assert a.tolist() == [1, -2]
    assert tinyattn.tensor([1, 2]).masked_fill(tinyattn.tensor([True, False]), 2.7).tolist() == [2, 2]
    assert tinyattn.tensor([1, 2]).masked_fill_(tinyattn.tensor([True, False]), -2.7).tolist() == [-2, 2]
    assert tinyattn.tensor([1, 2]).fill_(2.7).tolist() == [2, 2]
    flags = tinyattn.tensor([False, False])
    flags[0] = 2.7
    assert flags.tolist() == [True, False]


def test_where_with_two_numbers(xp_backend):
    c = tinyattn.tensor([True, False])
    assert tinyattn.where(c, 1.0, 0.0).dtype is tinyattn.float32 and tinyattn.where(c, 1.0, 0.0).tolist() == [1.0, 0.0]
    assert tinyattn.where(c, 1, 0).dtype is tinyattn.int64
    assert tinyattn.where(c, 1, 0.5).tolist() == [1.0, 0.5]


def test_more_bad_input_raises_instead_of_computing():
    x = tinyattn.arange(24).reshape(2, 3, 4)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        tinyattn.arange(5)[::-1]  # NumPy would reverse
    with pytest.raises(IndexError, match="one ... "):
        x[..., 1, ...]
    with pytest.raises(TypeError, match=r"var\(\) and std\(\) need a floating point tensor"):
        tinyattn.tensor([1, 2, 3]).var()
    with pytest.raises(TypeError, match="floating point"):
        tinyattn.tensor([True, False]).std()
    with pytest.raises(ShapeError, match="-1 is not allowed in the new leading dims"):
        tinyattn.tensor([1.0, 2.0]).expand(-1, 2)
    assert tinyattn.tensor([[1.0, 2.0]]).expand(3, -1).shape == (3, 2)
    with pytest.raises(ValueError, match="start_dim 2 comes after end_dim 0"):
        x.flatten(2, 0)
    assert x.flatten(1, 1).shape == (2, 3, 4)
    mask = tinyattn.tensor([True, False])
    with pytest.raises(ShapeError, match=r"0-d tensor, got a tensor of shape \[1\]"):
        tinyattn.zeros(2).masked_fill(mask, tinyattn.tensor([5.0]))
    with pytest.raises(ShapeError, match=r"0-d tensor"):
        tinyattn.zeros(2).fill_(tinyattn.tensor([5.0]))


def test_bool_tensors_where_pytorch_refuses_them():
    b = tinyattn.tensor([True, False])
    for op in (lambda: b.relu(), lambda: b.abs(), lambda: b.topk(1)):
        with pytest.raises(TypeError, match="bool"):
            op()
    for subtract in (lambda: tinyattn.tensor([1, 2]) - b, lambda: 1 - b, lambda: b - 1,
                     lambda: tinyattn.tensor([1.0, 2.0]) - b, lambda: tinyattn.tensor([1, 2]).sub_(b)):
        with pytest.raises(TypeError, match=r"with a bool tensor is not supported.*`~` or `logical_not\(\)`"):
            subtract()
    with pytest.raises(TypeError, match=r"two bool tensors.*`\^` or `logical_xor\(\)`"):
        b - b


def test_matmul_needs_one_dtype_and_mm_bmm_their_ranks():
    for a, b in [(tinyattn.tensor([[1, 2]]), tinyattn.tensor([[1.0], [2.0]])),
                 (tinyattn.ones(2, 2), tinyattn.ones(2, 2, dtype=tinyattn.float64))]:
        with pytest.raises(TypeError, match=r"same dtype, got tinyattn\.\w+ and tinyattn\.\w+"):
            a @ b  # was promoted
    with pytest.raises(ShapeError, match=r"mm expects two 2-D matrices, got shapes \[2, 2, 2\] and \[2, 2\]"):
        tinyattn.ones(2, 2, 2).mm(tinyattn.ones(2, 2))
    with pytest.raises(ShapeError, match=r"mm expects.*\[2\]"):
        tinyattn.ones(2, 2).mm(tinyattn.ones(2))
    with pytest.raises(ShapeError, match=r"bmm expects.*same batch size.*\[2, 2, 2\] and \[3, 2, 2\]"):
        tinyattn.ones(2, 2, 2).bmm(tinyattn.ones(3, 2, 2))
    with pytest.raises(ShapeError, match="bmm expects"):
        tinyattn.ones(2, 2).bmm(tinyattn.ones(2, 2))
    assert tinyattn.ones(2, 2, 3).bmm(tinyattn.ones(2, 3, 2)).tolist() == [[[3.0, 3.0]] * 2] * 2
    with pytest.raises(ShapeError, match="mm expects two 2-D matrices"):  # the torch.* forms check too
        tinyattn.mm(tinyattn.ones(2, 2, 2), tinyattn.ones(2, 2))
    with pytest.raises(ShapeError, match="bmm expects"):
        tinyattn.bmm(tinyattn.ones(2, 2), tinyattn.ones(2, 2))


def _new_tensors(lib):
    x = lib.ones(2, dtype=lib.float64)
    made = [x.new_zeros(2, 3), x.new_ones((2,)), x.new_empty(1).zero_(), x.new_full((2, 2), 7),
            x.new_tensor([1, 2]), x.new_zeros(2, dtype=lib.int64), x.new_tensor([1.5], requires_grad=True)]
    return [(tuple(t.shape), str(t.dtype).split(".")[-1], t.tolist(), t.requires_grad) for t in made]


def test_new_tensors_take_the_dtype_and_device_of_self_as_in_pytorch(torch):
    assert _new_tensors(tinyattn) == _new_tensors(torch)
