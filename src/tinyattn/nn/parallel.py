"""`tinyattn.nn.parallel`: PyTorch's data-parallel wrappers, for compatibility only.

`DataParallel(module)` runs `module` as it is, on the one device tinyattn computes on (what PyTorch's
does without a GPU); its state_dict keys start with `module.`, as in PyTorch.
`DistributedDataParallel` can be imported (nanoGPT does, and uses it only under torchrun), but
building one raises: tinyattn trains in one process (see `tinyattn.distributed`).
"""

from ..compat.distributed import _ONE_PROCESS
from .module import Module


class DataParallel(Module):
    """PyTorch's single-process data parallelism: here it runs the wrapped module as it is."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    def __init__(self, module, *args, **kwargs):
        raise RuntimeError(f"DistributedDataParallel needs a process group: {_ONE_PROCESS}")
