"""tinyattn.cuda.set_device: the current GPU through CuPy; a clear error without one, or for a CPU device."""

import sys
import types

import pytest

import tinyattn
from tinyattn.errors import DeviceError


@pytest.mark.skipif(tinyattn.cuda.is_available(), reason="tests the answer of a machine without a GPU")
def test_without_a_gpu_set_device_says_so():
    with pytest.raises(DeviceError, match=r"tinyattn.cuda.set_device\(\) needs a CUDA GPU"):
        tinyattn.cuda.set_device(0)


def test_a_cpu_device_is_refused_as_pytorch_refuses_it(torch):
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        tinyattn.cuda.set_device("cpu")
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        torch.cuda.set_device("cpu")


def test_set_device_uses_cupys_device(monkeypatch):
    """With a stand-in for CuPy (the machine need not have a GPU): the device is made current."""
    used = []

    class Device:
        def __init__(self, index=0):
            self.id = index

        def use(self):
            used.append(self.id)

    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(Device=Device)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(tinyattn.backend, "cuda_is_available", lambda: True)
    tinyattn.cuda.set_device(1)
    tinyattn.cuda.set_device("cuda:0")
    tinyattn.cuda.set_device(tinyattn.device("cuda", 2))
    assert used == [1, 0, 2]
