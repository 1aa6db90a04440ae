"""What a PyTorch name that tinyattn lacks says when a program reaches for it.

Each public namespace (`tinyattn`, `tinyattn.nn`, `tinyattn.nn.functional`, `tinyattn.optim`, ...) ends with

    __getattr__ = missing.module_getattr(__name__)

and `Tensor.__getattr__` calls `missing_tensor_attribute`. Python calls these only when the ordinary
lookup has failed, so they cost nothing on the names that exist. They raise `AttributeError` (so
`hasattr` and `getattr(x, name, default)` keep working). When the name is one of PyTorch's (the list
in tinyattn/data/pytorch_names.txt, written from PyTorch by tools/make_torch_names.py) the message
says that tinyattn does not implement it (or leaves it out on purpose, and why) and points to the
`tinyattn coverage NAME` command and the documentation's coverage page; any other name gets
Python's usual message. Names that start with `_` always get the usual message: `copy`, `pickle`
and friends probe `__deepcopy__`, `__getstate__`, ... and expect a plain miss. A name
tinyattn once had and withdrew says why, and what to write instead.

`module_dir` gives each public namespace a `__dir__` that lists its public names only, not the
modules and helpers it imports for its own use (`np`, `F`, `dtypes`).

The command `tinyattn coverage NAME...` (tinyattn/app/coverage.py) says, for each PyTorch name, whether tinyattn
has it, leaves it out on purpose (and why), or does not implement it yet.
"""

import functools
import pathlib
import sys
import types

NAMES_FILE = pathlib.Path(__file__).parent / "data" / "pytorch_names.txt"
COVERAGE_PAGE = "the PyTorch coverage page of tinyattn's documentation"

# Names tinyattn leaves out on purpose, by prefix, with the reason. Longest prefix wins. Names are
# written as the corpus scanner writes them: `torch.X`, `Tensor.x` (a method), `Module.x`.
LEFT_OUT = {
    "torch.distributed": "distributed training across processes: tinyattn runs in one process",
    "torch.nn.parallel.DistributedDataParallel": "distributed training across processes",
    "torch.cuda.amp.GradScaler": "mixed precision: tinyattn computes in float32/float64 only",
    "torch.jit": "TorchScript compiler",
    "torch.onnx": "ONNX export",
    "torch.hub": "downloads of pretrained models",
    "torch.backends.cudnn": "cuDNN settings: tinyattn does not use cuDNN",
    "Tensor.half": "half precision: tinyattn computes in float32/float64 only",
    "Tensor.pin_memory": "CUDA pinned host memory",
    "torch.utils.cpp_extension": "C++/CUDA extensions",
    "torch.nn.modules": "PyTorch's internal file layout; the same classes are reached as torch.nn.X",
    "torch.optim.lr_scheduler._LRScheduler": "a private base class",
    "torch.nn.modules.loss._Loss": "a private base class",
    "torch.nn.init._calculate_fan_in_and_fan_out": "a private helper",
    "torch.nn.parallel.scatter": "splitting a batch across several GPUs",
    "torch.autograd.profiler": "PyTorch's profiler of its own kernels' timings",
    # names that today's PyTorch lacks too: the code that uses them stops on PyTorch as well
    "torch.set_deterministic": "not in PyTorch either: removed in PyTorch 1.9, now torch.use_deterministic_algorithms",
    "torch.functional.relu": "not in PyTorch either: torch.functional has none of torch.nn.functional's layers",
    "torch.functional.max_pool2d": "not in PyTorch either: torch.functional has none of torch.nn.functional's layers",
    "torch.functional.log_softmax": "not in PyTorch either: torch.functional has none of torch.nn.functional's "
                                    "layers",
    "torch.sq": "not in PyTorch either: a notebook's tab-completion prompt (`torch.sq<Tab>`), not a call",
}


def left_out_reason(name):
    """Why tinyattn leaves `name` (`torch.X`, `Tensor.x` or `Module.x`) out on purpose, or None."""
    matches = [prefix for prefix in LEFT_OUT if name == prefix or name.startswith(prefix + ".")]
    return LEFT_OUT[max(matches, key=len)] if matches else None


# PyTorch modules the names file does not list (it lists a module's members, not every module)
MODULES_NOT_LISTED = frozenset({"torch.utils.checkpoint"})


def is_pytorch_name(torch_name):
    """Whether `torch_name` (spelled torch.X) is one of PyTorch's public names or modules."""
    return torch_name in pytorch_names() or torch_name in MODULES_NOT_LISTED


@functools.cache
def pytorch_names():
    """PyTorch's public names, in full (`torch.nn.Flatten`, `torch.Tensor.index_fill_`), read once."""
    lines = NAMES_FILE.read_text(encoding="utf-8").splitlines()
    return frozenset(line for line in lines if line and not line.startswith("#"))


_WHY_REPLAY_WENT = ("it could give other results than the step as written without a warning (see 'Why there "
                    "is no replay' on the learner loops page of tinyattn's documentation)")
WITHDRAWN = {  # name -> why it went and what to write instead
    "tinyattn.replayed": f"tinyattn.replayed was withdrawn: {_WHY_REPLAY_WENT}; call the step itself",
    "tinyattn.ReplayError": f"tinyattn.ReplayError was withdrawn with tinyattn.replayed: {_WHY_REPLAY_WENT}",
}


def _short_name(torch_name):
    """The scanner's spelling: torch.Tensor.x -> Tensor.x, torch.nn.Module.x -> Module.x."""
    for prefix, short in (("torch.Tensor.", "Tensor."), ("torch.nn.Module.", "Module.")):
        if torch_name.startswith(prefix):
            return short + torch_name[len(prefix):]
    return torch_name


def not_implemented_message(torch_name):
    reason = left_out_reason(_short_name(torch_name))
    if reason:
        return (f"tinyattn leaves {torch_name} out on purpose ({reason}); `tinyattn coverage {torch_name}` "
                f"and {COVERAGE_PAGE} say what is covered")
    return (f"tinyattn does not implement {torch_name} (yet); run `tinyattn coverage {torch_name}`, or see "
            f"{COVERAGE_PAGE}, for what is covered")


def missing_module_attribute(module_name, name):
    """The AttributeError for `module_name.name` (module_name is tinyattn's, e.g. 'tinyattn.nn')."""
    torch_name = "torch" + module_name[len("tinyattn"):] + "." + name
    if f"{module_name}.{name}" in WITHDRAWN:
        message = WITHDRAWN[f"{module_name}.{name}"]
    elif not name.startswith("_") and is_pytorch_name(torch_name):
        message = not_implemented_message(torch_name)
    else:
        message = f"module {module_name!r} has no attribute {name!r}"
    return AttributeError(message, name=name)


def module_dir(module_name):
    """A module-level `__dir__` for the namespace module_name: its public names only.

    Public: the names in its `__all__` when it has one; otherwise every name not starting with `_`
    except the modules it imports that are not its own submodules (numpy as np, nn.functional as F)
    and the classes and functions it imports from elsewhere for its own use (Tensor in
    tinyattn.distributions); a class or function defined elsewhere stays listed when PyTorch has it
    in the same namespace (tinyattn.autograd.Variable) or when the namespace is `tinyattn` itself.
    """

    def __dir__():
        module = sys.modules[module_name]
        names = vars(module)
        if "__all__" in names:
            public = set(names["__all__"])
        else:
            public = {name for name, value in names.items() if not name.startswith("_")
                      and _belongs_to(module_name, name, value)}
        return sorted(public | {name for name in names if name.startswith("__") and name.endswith("__")})

    return __dir__


def _belongs_to(module_name, name, value):
    if isinstance(value, types.ModuleType):
        # a submodule, importable as module_name.name (tinyattn.cuda: tinyattn/compat/cuda, bound under
        # PyTorch's name), not a helper imported as `np`
        return sys.modules.get(f"{module_name}.{name}") is value
    if not isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
        return True  # constants, dtypes, instances: made here
    defined_in = getattr(value, "__module__", None) or ""
    if module_name == "tinyattn":
        return defined_in.startswith("tinyattn")
    homes = {module_name, sys.modules[module_name].__name__}  # tinyattn.cuda's code is in tinyattn.compat.cuda
    if any(defined_in == home or defined_in.startswith(home + ".") for home in homes):
        return True
    return defined_in.startswith("tinyattn") and "torch" + module_name[len("tinyattn"):] + "." + name in pytorch_names()


def module_getattr(module_name):
    """A module-level `__getattr__` for the namespace module_name (called only for names it lacks)."""

    def __getattr__(name):
        raise missing_module_attribute(module_name, name)

    return __getattr__


def missing_tensor_attribute(tensor, name):
    """The AttributeError for `tensor.name`, a name the Tensor class does not have."""
    torch_name = f"torch.Tensor.{name}"
    if not name.startswith("_") and torch_name in pytorch_names():
        message = not_implemented_message(torch_name)
    else:
        message = f"{type(tensor).__name__!r} object has no attribute {name!r}"
    return AttributeError(message, name=name, obj=tensor)
