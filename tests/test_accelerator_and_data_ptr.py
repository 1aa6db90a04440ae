"""tinyattn.accelerator answers as PyTorch's does without a GPU; Tensor.data_ptr tells shared memory apart."""

import sys
import types

import pytest

import tinyattn


@pytest.mark.skipif(tinyattn.cuda.is_available(), reason="tests the answers of a machine without a GPU")
def test_accelerator_answers_as_pytorch_without_one(torch):
    assert tinyattn.accelerator.is_available() is torch.accelerator.is_available() is False
    assert tinyattn.accelerator.current_accelerator() is torch.accelerator.current_accelerator() is None
    assert tinyattn.accelerator.device_count() == torch.accelerator.device_count() == 0


def test_accelerator_is_the_gpu_where_cupy_sees_one(monkeypatch):
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 2))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(tinyattn.backend, "cuda_is_available", lambda: True)
    assert tinyattn.accelerator.is_available() and tinyattn.accelerator.device_count() == 2
    assert tinyattn.accelerator.current_accelerator() == tinyattn.device("cuda")


def test_data_ptr_is_shared_by_views_as_in_pytorch(torch):
    for L in (tinyattn, torch):
        x = L.arange(6.0)
        assert x.view(2, 3).data_ptr() == x.data_ptr() == x.detach().data_ptr()
        assert x.clone().data_ptr() != x.data_ptr()
        assert x[2:].data_ptr() == x.data_ptr() + 2 * x.element_size()


def test_data_ptr_on_the_strict_array_backend(xp_backend):
    x = tinyattn.arange(6.0)
    assert x.reshape(2, 3).data_ptr() == x.data_ptr() != x.clone().data_ptr()
