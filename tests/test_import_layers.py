"""The package's layout: each name of `tinyattn` defined in one place, and `import tinyattn` loads the library
without the app built on it."""

import ast
import importlib
import inspect
import os
import pathlib
import subprocess
import sys

import tinyattn

PACKAGE = pathlib.Path(tinyattn.__file__).parent


def _root_sources():
    """{module: names it gives the package root}: the modules __init__.py imports names from, read from its
    source (`from .functions import *` gives the module's public names, `from .printing import x` gives x)."""
    sources = {}
    for node in ast.walk(ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            module = importlib.import_module(f"tinyattn.{node.module}")
            if any(alias.name == "*" for alias in node.names):
                names = getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")])
            else:
                names = [alias.name for alias in node.names]
            sources.setdefault(module, set()).update(names)
    return sources


def test_each_public_name_of_the_package_root_is_defined_in_one_module():
    # A function or class offered to the root by two modules is written twice, and which one `tinyattn.add`
    # is depends on the order of __init__.py's imports.
    definers = {}
    for module, names in _root_sources().items():
        for name in names:
            value = getattr(module, name, None)
            if (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__ == module.__name__:
                definers.setdefault(name, set()).add(module.__name__)
    twice = {name: sorted(modules) for name, modules in definers.items() if len(modules) > 1}
    assert not twice, f"defined in more than one module that the package root imports from: {twice}"
    # and every public function of the root is the one its own module defines under that name
    for name, value in vars(tinyattn).items():
        if not name.startswith("_") and inspect.isfunction(value) and value.__module__.startswith("tinyattn"):
            home = importlib.import_module(value.__module__)
            assert getattr(home, value.__qualname__, None) is value, (name, value.__module__, value.__qualname__)


def test_the_duplicate_check_sees_a_name_defined_twice(monkeypatch):
    # the check above, fed a module that defines its own `add` too, reports it
    import tinyattn.functions as functions

    def add(input, other, *, alpha=1):
        return input.add(other, alpha=alpha)

    add.__module__ = functions.__name__
    monkeypatch.setattr(functions, "add", add, raising=False)
    monkeypatch.setattr(functions, "__all__", [*functions.__all__, "add"])
    try:
        test_each_public_name_of_the_package_root_is_defined_in_one_module()
    except AssertionError as error:
        assert "'add'" in str(error)
    else:
        raise AssertionError("a name defined in two modules went unnoticed")


# the app built on the library, with its command line: `import tinyattn` must not need any of it
APP_MODULES = ("cli", "demo", "bench", "training", "checkpoint", "models", "data", "run_log", "progress",
               "learner_loops", "torch_twins")


def test_importing_the_library_does_not_load_the_app():
    code = "import sys, tinyattn; print(' '.join(sorted(m for m in sys.modules if m.startswith('tinyattn'))))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PACKAGE.parent), *sys.path])}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    loaded = set(result.stdout.split())
    assert "tinyattn.nn.functional" in loaded and "tinyattn.gradient_check" in loaded  # the library is there
    app = sorted(loaded & {f"tinyattn.{name}" for name in APP_MODULES})
    assert not app, f"import tinyattn loaded the app's modules {app}"
