"""The names PyTorch programs use that a CPU engine only accepts: `torch.cuda`, `torch.amp`, `torch.backends`,
`torch.compile`, `torch.distributed`, ...

A program written for PyTorch asks whether there is a GPU, turns on TF32 or cuDNN's autotuner, wraps its
steps in `autocast` and a `GradScaler`, compiles its model, imports `init_process_group`. tinyattn accepts
each of these names, so that the program runs unchanged, or refuses it with a message that says what to do
instead; each module's docstring says which, and the documentation's page "Run real PyTorch programs" lists
them all. The engine never reads these modules.

Their code lives together here, one module each. Programs reach them by PyTorch's names, which are
top-level (`torch.cuda`, not `torch.compat.cuda`): `bind_pytorch_names`, called once by tinyattn/__init__.py,
makes `tinyattn.cuda` this package's `cuda` (and so on), both as an attribute of tinyattn and as an entry of
`sys.modules`, so that `tinyattn.cuda.is_available()`, `import tinyattn.cuda.amp` and
`from tinyattn.backends import cudnn` all reach the module here.
"""

import importlib
import sys

# the modules of this package, each named as PyTorch names it below `torch` (torch.cuda.amp: cuda.amp)
PYTORCH_MODULES = ("_dynamo", "accelerator", "amp", "backends", "backends.cuda", "backends.cudnn", "backends.mps",
                   "compiler", "cuda", "cuda.amp", "distributed", "multiprocessing")

ROOT = __name__.rpartition(".")[0]  # tinyattn


def bind_pytorch_names():
    """Make each module of PYTORCH_MODULES `tinyattn.<name>` too: an attribute of its parent (tinyattn, or
    tinyattn.cuda for cuda.amp), and an entry of sys.modules, where an import statement looks it up."""
    for name in PYTORCH_MODULES:  # a parent (cuda) before its submodule (cuda.amp)
        module = importlib.import_module(f"{__name__}.{name}")
        pytorch_name = f"{ROOT}.{name}"
        parent, _, attribute = pytorch_name.rpartition(".")
        setattr(sys.modules[parent], attribute, module)
        sys.modules[pytorch_name] = module
