"""The smaller PyTorch-named helpers behave like PyTorch's."""

import math

import numpy as np
import pytest

import tinyattn
from tinyattn import nn


def test_like_functions_and_as_tensor():
    x = tinyattn.ones(2, 3, dtype=tinyattn.float64)
    assert tinyattn.empty_like(x).shape == (2, 3) and tinyattn.empty_like(x).dtype is tinyattn.float64
    tinyattn.manual_seed(0)
    r = tinyattn.rand_like(x)
    assert r.dtype is tinyattn.float64 and bool(((r >= 0) & (r < 1)).all())
    assert tinyattn.randn_like(x).shape == x.shape
    assert tinyattn.as_tensor(x) is x
    assert tinyattn.as_tensor([1, 2]).dtype is tinyattn.int64
    assert tinyattn.is_tensor(x) and not tinyattn.is_tensor(np.ones(2))


def test_shape_helpers():
    x = tinyattn.arange(6.0)
    assert x.view_as(tinyattn.zeros(2, 3)).shape == (2, 3)
    assert x.reshape_as(tinyattn.zeros(3, 2)).shape == (3, 2)
    assert tinyattn.ones(1, 3).expand_as(tinyattn.zeros(4, 3)).shape == (4, 3)


def test_detach_in_place_makes_a_leaf():
    y = tinyattn.ones(2, requires_grad=True) * 2
    y.detach_()
    assert y.is_leaf and not y.requires_grad


def test_init_functions():
    w = nn.Parameter(tinyattn.empty(64, 32))
    nn.init.constant_(w, 0.5)
    assert bool((w == 0.5).all())
    nn.init.ones_(w)
    assert bool((w == 1).all())
    tinyattn.manual_seed(0)
    nn.init.xavier_uniform_(w)
    bound = math.sqrt(6 / (64 + 32))
    assert float(w.abs().max()) <= bound
    nn.init.xavier_normal_(w)
    assert abs(float(w.std()) - math.sqrt(2 / 96)) < 0.03


def test_get_submodule():
    mha = nn.MultiHeadAttentionWrapper(3, 2, 4, 0.0, num_heads=2)
    assert mha.get_submodule("heads.1.W_query") is mha.heads[1].W_query
    with pytest.raises(AttributeError, match="no submodule"):
        mha.get_submodule("heads.1.nope")


def test_tensor_copies_its_data_and_from_numpy_shares_it():
    values = np.zeros(3, dtype=np.float32)
    copied, shared = tinyattn.tensor(values), tinyattn.from_numpy(values)
    values[0] = 5
    assert copied.tolist() == [0.0, 0.0, 0.0]
    assert shared.tolist() == [5.0, 0.0, 0.0]
    source = tinyattn.ones(2)
    clone = tinyattn.tensor(source)
    source.array[0] = 7
    assert clone.tolist() == [1.0, 1.0]


def test_autograd_helpers_under_pytorchs_names():
    from tinyattn.autograd import detect_anomaly, gradcheck  # torch.autograd.gradcheck, as PyTorch code writes it

    assert gradcheck is tinyattn.gradcheck and detect_anomaly is tinyattn.detect_anomaly
    x = tinyattn.ones(2, dtype=tinyattn.float64, requires_grad=True)
    assert tinyattn.autograd.gradcheck(lambda t: (t * t).sum(), x)
    with tinyattn.autograd.detect_anomaly():
        (x * 2).sum().backward()
