"""The compatibility modules live in tinyattn/compat/ and are reached by PyTorch's names.

Each import statement that PyTorch programs use (`import torch.cuda.amp`, `from torch.backends import cudnn`,
`import torch.multiprocessing as mp`, ...) runs, spelt with tinyattn, in a fresh Python process of its own,
where it is the first import; then the attributes they use (`torch.cuda.is_available`, `torch.autocast`,
`torch.backends.cudnn`, ...) are read after `import tinyattn as torch` in another. Each must reach the
module (or the name) in tinyattn/compat/, whichever import came first. Then what pickling needs: every class and
function of those modules is found again under the name it records (`__module__`), a pickle names them
where they live now and one written when they stood at the package root still loads, and a GradScaler's
state_dict is plain data that tinyattn.save writes as PyTorch does.
"""

import importlib
import io
import json
import pathlib
import pickle
import subprocess
import sys
import types
import warnings

import pytest

import tinyattn
from tinyattn import compat

PACKAGE = pathlib.Path(tinyattn.__file__).parent
COMPAT = PACKAGE / "compat"

# (the statement, as a program writes it, first thing; what it reached; the same in tinyattn/compat/)
IMPORT_STATEMENTS = [
    ("import tinyattn.amp", "tinyattn.amp", "tinyattn.compat.amp"),
    ("import tinyattn.cuda", "tinyattn.cuda", "tinyattn.compat.cuda"),
    ("import tinyattn.cuda.amp", "tinyattn.cuda.amp", "tinyattn.compat.cuda.amp"),
    ("import tinyattn.backends", "tinyattn.backends", "tinyattn.compat.backends"),
    ("import tinyattn.accelerator", "tinyattn.accelerator", "tinyattn.compat.accelerator"),
    ("import tinyattn.compiler", "tinyattn.compiler", "tinyattn.compat.compiler"),
    ("import tinyattn._dynamo", "tinyattn._dynamo", "tinyattn.compat._dynamo"),
    ("import tinyattn.distributed as dist", "dist", "tinyattn.compat.distributed"),
    ("import tinyattn.multiprocessing as mp", "mp", "tinyattn.compat.multiprocessing"),
    ("from tinyattn import amp", "amp", "tinyattn.compat.amp"),
    ("from tinyattn import cuda", "cuda", "tinyattn.compat.cuda"),
    ("from tinyattn import backends", "backends", "tinyattn.compat.backends"),
    ("from tinyattn import _dynamo", "_dynamo", "tinyattn.compat._dynamo"),
    ("from tinyattn.cuda import amp", "amp", "tinyattn.compat.cuda.amp"),
    ("from tinyattn.cuda.amp import GradScaler", "GradScaler", "tinyattn.compat.cuda.amp.GradScaler"),
    ("from tinyattn.cuda.amp import autocast", "autocast", "tinyattn.compat.cuda.amp.autocast"),
    ("from tinyattn.amp import GradScaler", "GradScaler", "tinyattn.compat.amp.GradScaler"),
    ("from tinyattn.amp import autocast", "autocast", "tinyattn.compat.amp.autocast"),
    ("from tinyattn.backends import cudnn", "cudnn", "tinyattn.compat.backends.cudnn"),
    ("from tinyattn.backends import mps", "mps", "tinyattn.compat.backends.mps"),
    ("from tinyattn.backends import cuda", "cuda", "tinyattn.compat.backends.cuda"),
    ("import tinyattn.backends.cudnn as cudnn", "cudnn", "tinyattn.compat.backends.cudnn"),
    ("import tinyattn.backends.cudnn", "tinyattn.backends.cudnn", "tinyattn.compat.backends.cudnn"),
    ("import tinyattn.backends.cuda", "tinyattn.backends.cuda", "tinyattn.compat.backends.cuda"),
    ("import tinyattn.backends.mps", "tinyattn.backends.mps", "tinyattn.compat.backends.mps"),
    ("from tinyattn.distributed import init_process_group, destroy_process_group", "init_process_group",
     "tinyattn.compat.distributed.init_process_group"),
    ("from tinyattn.multiprocessing import spawn", "spawn", "tinyattn.compat.multiprocessing.spawn"),
    ("from tinyattn._dynamo import config", "config", "tinyattn.compat._dynamo.config"),
    ("from tinyattn import autocast", "autocast", "tinyattn.compat.amp.autocast"),
    ("from tinyattn import compile", "compile", "tinyattn.compat.compiler.compile"),
    ("import importlib; m = importlib.import_module('tinyattn.cuda.amp')", "m", "tinyattn.compat.cuda.amp"),
]

# attribute accesses after `import tinyattn as torch` (the names as programs write them, torch.X)
ATTRIBUTES = [
    ("torch.cuda.is_available", "tinyattn.compat.cuda.is_available"),
    ("torch.cuda.amp.GradScaler", "tinyattn.compat.cuda.amp.GradScaler"),
    ("torch.cuda.amp.autocast", "tinyattn.compat.cuda.amp.autocast"),
    ("torch.amp.GradScaler", "tinyattn.compat.amp.GradScaler"),
    ("torch.amp.autocast", "tinyattn.compat.amp.autocast"),
    ("torch.autocast", "tinyattn.compat.amp.autocast"),
    ("torch.is_autocast_enabled", "tinyattn.compat.amp.is_autocast_enabled"),
    ("torch.compile", "tinyattn.compat.compiler.compile"),
    ("torch.compiler.reset", "tinyattn.compat.compiler.reset"),
    ("torch._dynamo.config", "tinyattn.compat._dynamo.config"),
    ("torch.get_float32_matmul_precision", "tinyattn.compat.backends.get_float32_matmul_precision"),
    ("torch.set_float32_matmul_precision", "tinyattn.compat.backends.set_float32_matmul_precision"),
    ("torch.backends.cuda.matmul", "tinyattn.compat.backends.cuda.matmul"),
    ("torch.backends.cudnn", "tinyattn.compat.backends.cudnn"),
    ("torch.backends.mps.is_available", "tinyattn.compat.backends.mps.is_available"),
    ("torch.accelerator.is_available", "tinyattn.compat.accelerator.is_available"),
    ("torch.distributed.is_available", "tinyattn.compat.distributed.is_available"),
    ("torch.multiprocessing.spawn", "tinyattn.compat.multiprocessing.spawn"),
    ("torch.multiprocessing.cpu_count", "multiprocessing.cpu_count"),  # Python's own, re-exported
]

# run in a fresh process: the statement first, then where each expression led, checked against tinyattn/compat/
CHILD = """
import importlib, json, sys
statement, cases, compat_dir = json.loads(sys.argv[1])
namespace = {}
exec(statement, namespace)

def resolve(path):  # the object a dotted path names: its longest importable module, then attributes
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part)
        return obj

for reached, expected in cases:
    reached = eval(reached, namespace)
    assert reached is resolve(expected), (reached, expected)
    module = reached if type(reached).__name__ == "module" else sys.modules[reached.__module__]
    assert module.__file__.startswith(compat_dir) or not module.__name__.startswith("tinyattn"), module.__file__
    print("reached", expected)
"""


def run_fresh(statement, cases):
    """Run `statement` first thing in a new Python process, then check each (expression, expected) of cases."""
    result = subprocess.run([sys.executable, "-c", CHILD, json.dumps([statement, cases, str(COMPAT)])],
                            capture_output=True, text=True, timeout=120,
                            cwd=PACKAGE.parent, env=_env_with_this_tinyattn())
    assert result.returncode == 0, f"{statement}: {result.stderr}"
    assert result.stdout.splitlines() == [f"reached {expected}" for _, expected in cases]


def _env_with_this_tinyattn():
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(PACKAGE.parent), *sys.path])}


@pytest.mark.parametrize("statement, reached, expected", IMPORT_STATEMENTS, ids=[s for s, _, _ in IMPORT_STATEMENTS])
def test_an_import_statement_reaches_the_compat_module(statement, reached, expected):
    run_fresh(statement, [(reached, expected)])


def test_the_attributes_of_tinyattn_reach_the_compat_modules():
    # one fresh process for them all: an attribute access imports nothing, so one cannot help the next
    run_fresh("import tinyattn as torch", ATTRIBUTES)


def test_the_fresh_process_check_sees_a_wrong_target():
    # the check above fails when a statement reaches something else than what it names
    with pytest.raises(AssertionError, match="import tinyattn.amp"):
        run_fresh("import tinyattn.amp", [("tinyattn.amp", "tinyattn.compat.backends")])


def test_the_pytorch_names_in_sys_modules_are_the_compat_modules():
    for name in compat.PYTORCH_MODULES:
        module = importlib.import_module(f"tinyattn.compat.{name}")
        assert sys.modules[f"tinyattn.{name}"] is module
        parent, _, attribute = f"tinyattn.{name}".rpartition(".")
        assert getattr(sys.modules[parent], attribute) is module  # tinyattn.cuda, tinyattn.cuda.amp


def test_every_module_of_compat_is_bound_under_its_pytorch_name():
    # a module added to compat/ and left out of PYTORCH_MODULES would not be importable as tinyattn.X
    found = {".".join(path.relative_to(COMPAT).with_suffix("").parts).removesuffix(".__init__")
             for path in COMPAT.rglob("*.py") if path.name != "__init__.py" or path.parent != COMPAT}
    assert found == set(compat.PYTORCH_MODULES)


def test_the_package_root_holds_the_engine_not_the_compatibility_modules():
    # the compatibility modules stand together in compat/; at the root, backend/ (the array backend) is not
    # beside a backends.py (torch.backends) any more
    at_root = {path.stem for path in PACKAGE.glob("*.py")} | {path.name for path in PACKAGE.iterdir() if path.is_dir()}
    assert not {name.split(".")[0] for name in compat.PYTORCH_MODULES} & at_root
    assert "backend" in at_root and (COMPAT / "backends" / "__init__.py").is_file()


def test_a_missing_name_is_named_as_pytorch_names_it():
    # the message of a PyTorch name tinyattn lacks says torch.cuda.X, not torch.compat.cuda.X
    with pytest.raises(AttributeError, match=r"torch\.cuda\.mem_get_info") as caught:
        tinyattn.cuda.mem_get_info
    assert "compat" not in str(caught.value)
    with pytest.raises(AttributeError, match=r"torch\.distributed\.all_gather out on purpose"):
        tinyattn.distributed.all_gather
    for name in compat.PYTORCH_MODULES:  # any other name: Python's message, with the name the program wrote
        with pytest.raises(AttributeError, match=rf"^module 'tinyattn\.{name}' has no attribute 'no_such_name'$"):
            getattr(sys.modules[f"tinyattn.{name}"], "no_such_name")
    assert "amp" in dir(tinyattn.cuda) and "is_available" in dir(tinyattn.cuda)
    assert {"cuda", "amp", "backends", "distributed", "compiler", "accelerator"} <= set(dir(tinyattn))


# ---------------------------------------------------------------------------------------------
# pickling


def _public_classes_and_functions():
    for name in compat.PYTORCH_MODULES:
        module = importlib.import_module(f"tinyattn.compat.{name}")
        for value in vars(module).values():
            if isinstance(value, (type, types.FunctionType)) and value.__module__ == module.__name__:
                yield value


def test_each_class_and_function_is_found_again_under_the_name_it_records():
    # pickle writes a class or function as `__module__` and `__qualname__` and looks it up so when loading
    found = list(_public_classes_and_functions())
    assert {"GradScaler", "autocast", "is_built", "compile", "spawn", "init_process_group", "Event"} <= {
        value.__name__ for value in found}
    for value in found:
        assert getattr(importlib.import_module(value.__module__), value.__qualname__) is value, value
        assert value.__module__.startswith("tinyattn.compat.")
        assert pickle.loads(pickle.dumps(value)) is value


def _load_in_a_fresh_process(data):
    """What `pickle.loads(data)` gives in a new process that imported nothing before: the repr of its
    type (or of itself, for a class; where it lives, for a function) and, for a GradScaler, its state_dict."""
    code = ("import pickle, sys, types, warnings; warnings.simplefilter('ignore')\n"
            "obj = pickle.loads(sys.stdin.buffer.read())\n"
            "print(obj if isinstance(obj, type) else f'<function {obj.__module__}.{obj.__qualname__}>'\n"
            "      if isinstance(obj, types.FunctionType) else type(obj))\n"
            "print(obj.state_dict() if hasattr(obj, 'state_dict') and not isinstance(obj, type) else {})")
    result = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, timeout=120,
                            env=_env_with_this_tinyattn())
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode().splitlines()


def _stepped_scaler():
    """A CPU GradScaler after one step (its scale and growth tracker set)."""
    scaler = tinyattn.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=3)
    weight = tinyattn.nn.Parameter(tinyattn.ones(3))
    optimizer = tinyattn.optim.SGD([weight], lr=0.1)
    scaler.scale((weight * 2).sum()).backward()
    scaler.step(optimizer)
    scaler.update()
    return scaler


def test_a_pickled_gradscaler_loads_in_a_new_process():
    scaler = _stepped_scaler()
    data = pickle.dumps(scaler)
    assert b"tinyattn.compat.amp" in data
    assert _load_in_a_fresh_process(data) == ["<class 'tinyattn.compat.amp.GradScaler'>", str(scaler.state_dict())]


@pytest.mark.parametrize("old, new", [("tinyattn.amp", "tinyattn.compat.amp"),
                                      ("tinyattn.cuda.amp", "tinyattn.compat.cuda.amp"),
                                      ("tinyattn.backends", "tinyattn.compat.backends")])
def test_a_pickle_written_when_the_modules_stood_at_the_root_still_loads(old, new):
    # a file saved before the move names tinyattn.amp.GradScaler: it is the same class now
    name = "get_float32_matmul_precision" if old.endswith("backends") else "GradScaler"
    data = pickle.dumps(getattr(importlib.import_module(new), name), protocol=0)
    assert f"c{new}\n{name}\n".encode() in data
    old_data = data.replace(f"c{new}\n".encode(), f"c{old}\n".encode())
    kind = "function" if old.endswith("backends") else "class"
    shown = f"<function {new}.{name}>" if kind == "function" else f"<class '{new}.{name}'>"
    assert _load_in_a_fresh_process(old_data)[0] == shown
    if old == "tinyattn.amp":  # and a (CPU) scaler, pickled as its class and its __dict__
        scaler = _stepped_scaler()
        data = pickle.dumps(scaler, protocol=2).replace(new.encode(), old.encode())
        assert old.encode() in data and new.encode() not in data
        assert _load_in_a_fresh_process(data) == [f"<class '{new}.GradScaler'>", str(scaler.state_dict())]


def test_a_gradscaler_state_dict_is_plain_data_that_save_writes_as_pytorch_does():
    state = _stepped_scaler().state_dict()
    assert state == {"scale": 1024.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3,
                     "_growth_tracker": 1}
    assert all(type(value) in (float, int) for value in state.values())
    buffer = io.BytesIO()
    tinyattn.save({"scaler": state}, buffer)
    assert b"compat" not in buffer.getvalue()  # nothing of tinyattn's modules is named in the file
    buffer.seek(0)
    assert tinyattn.load(buffer) == {"scaler": state}  # weights-only, the default
    torch = pytest.importorskip("torch")
    buffer.seek(0)
    assert torch.load(buffer) == {"scaler": state}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's: CUDA is not available, the scaler disables itself
        theirs = torch.amp.GradScaler("cpu")
    theirs.load_state_dict(state)
    assert theirs.get_scale() == state["scale"] and theirs._get_growth_tracker() == state["_growth_tracker"]


def test_a_saved_gradscaler_object_loads_where_its_class_is_allowed():
    scaler = _stepped_scaler()
    buffer = io.BytesIO()
    tinyattn.save(scaler, buffer)
    buffer.seek(0)
    with pytest.raises(tinyattn.serialization.UnpicklingError, match=r"tinyattn\.compat\.amp\.GradScaler"):
        tinyattn.load(buffer)  # weights-only: a class is code, not data
    for allowed in ([tinyattn.amp.GradScaler], [(tinyattn.amp.GradScaler, "tinyattn.compat.amp.GradScaler")]):
        buffer.seek(0)
        with tinyattn.serialization.safe_globals(allowed):
            assert tinyattn.load(buffer).state_dict() == scaler.state_dict()
    buffer.seek(0)
    assert tinyattn.load(buffer, weights_only=False).state_dict() == scaler.state_dict()
