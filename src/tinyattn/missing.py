"""What a PyTorch name that tinyattn lacks says when a program reaches for it.

Each public namespace (`tinyattn`, `tinyattn.nn`, `tinyattn.nn.functional`, `tinyattn.optim`, ...) ends with

    __getattr__ = missing.module_getattr(__name__)

and `Tensor.__getattr__` calls `missing_tensor_attribute`. Python calls these only when the ordinary
lookup has failed, so they cost nothing on the names that exist. They raise `AttributeError` (so
`hasattr` and `getattr(x, name, default)` keep working). When the name is one of PyTorch's (the list
in tinyattn/data/pytorch_names.txt, written from PyTorch by tools/make_torch_names.py) the message
says that tinyattn does not implement it and where the list of what is covered is; any other name
gets Python's usual message. Names that start with `_` always get the usual message: `copy`,
`pickle` and friends probe `__deepcopy__`, `__getstate__`, ... and expect a plain miss. A name
tinyattn once had and withdrew says why, and what to write instead.
"""

import functools
import pathlib

NAMES_FILE = pathlib.Path(__file__).parent / "data" / "pytorch_names.txt"
COVERAGE_PAGE = "docs/coverage.md (the PyTorch coverage page of tinyattn's documentation)"


@functools.cache
def pytorch_names():
    """PyTorch's public names, in full (`torch.nn.Flatten`, `torch.Tensor.index_fill_`), read once."""
    lines = NAMES_FILE.read_text(encoding="utf-8").splitlines()
    return frozenset(line for line in lines if line and not line.startswith("#"))


_WHY_REPLAY_WENT = ("it could give other results than the step as written without a warning (see 'Why there "
                    "is no replay' in docs/explanations/learner-loops.md)")
WITHDRAWN = {  # name -> why it went and what to write instead
    "tinyattn.replayed": f"tinyattn.replayed was withdrawn: {_WHY_REPLAY_WENT}; call the step itself",
    "tinyattn.ReplayError": f"tinyattn.ReplayError was withdrawn with tinyattn.replayed: {_WHY_REPLAY_WENT}",
}


def not_implemented_message(torch_name):
    return f"tinyattn does not implement {torch_name} (yet); see {COVERAGE_PAGE} for what is covered"


def missing_module_attribute(module_name, name):
    """The AttributeError for `module_name.name` (module_name is tinyattn's, e.g. 'tinyattn.nn')."""
    torch_name = "torch" + module_name[len("tinyattn"):] + "." + name
    if f"{module_name}.{name}" in WITHDRAWN:
        message = WITHDRAWN[f"{module_name}.{name}"]
    elif not name.startswith("_") and torch_name in pytorch_names():
        message = not_implemented_message(torch_name)
    else:
        message = f"module {module_name!r} has no attribute {name!r}"
    return AttributeError(message, name=name)


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
