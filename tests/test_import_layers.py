"""The package's layout: each name of `tinyattn` defined in one place, `import tinyattn` loads the library
without the app built on it, no import circle beyond an allow-list that is to shrink, and one way to count an
in-place change (Tensor._bump_version)."""

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


# the packages whose modules define the torch.* functions the root offers (through tinyattn.functions)
FUNCTION_PACKAGES = ("tinyattn.functions", "tinyattn.tensor")


def _function_modules():
    """The modules of FUNCTION_PACKAGES, imported (the packages and each of their modules)."""
    found = []
    for package in FUNCTION_PACKAGES:
        root = importlib.import_module(package)
        found.append(root)
        for path in sorted(pathlib.Path(root.__file__).parent.glob("*.py")):
            if path.stem != "__init__":
                found.append(importlib.import_module(f"{package}.{path.stem}"))
    return found


def test_each_public_name_of_the_package_root_is_defined_in_one_module():
    # A function or class offered to the root by two modules is written twice, and which one `tinyattn.add`
    # is depends on the order of __init__.py's imports.
    offered = {}
    for module, names in _root_sources().items():
        for name in names:
            value = getattr(module, name, None)
            if inspect.isfunction(value) or inspect.isclass(value):
                offered.setdefault(name, {}).setdefault(value.__module__, value)
    twice = {name: sorted(homes) for name, homes in offered.items() if len(homes) > 1}
    assert not twice, f"offered to the package root by more than one module: {twice}"
    # nor does a second module of the function packages define one of the root's functions again, unseen
    # because the package gives the root one of the two
    definers = {}
    for module in _function_modules():
        for name in offered:
            value = vars(module).get(name)
            if inspect.isfunction(value) and value.__module__ == module.__name__:
                definers.setdefault(name, set()).add(module.__name__)
    twice = {name: sorted(modules) for name, modules in definers.items() if len(modules) > 1}
    assert not twice, f"defined in more than one module: {twice}"
    # and every public function of the root is the one its own module defines under that name
    for name, value in vars(tinyattn).items():
        if not name.startswith("_") and inspect.isfunction(value) and value.__module__.startswith("tinyattn"):
            home = importlib.import_module(value.__module__)
            assert getattr(home, value.__qualname__, None) is value, (name, value.__module__, value.__qualname__)


def test_the_duplicate_check_sees_a_name_defined_twice(monkeypatch):
    # the check above, fed a second module that defines its own `add` too, reports it
    import tinyattn.functions.forms as forms

    def add(input, other, *, alpha=1):
        return input.add(other, alpha=alpha)

    add.__module__ = forms.__name__
    monkeypatch.setattr(forms, "add", add, raising=False)
    try:
        test_each_public_name_of_the_package_root_is_defined_in_one_module()
    except AssertionError as error:
        assert "'add'" in str(error)
    else:
        raise AssertionError("a name defined in two modules went unnoticed")


# the app built on the library, with its command line, is the package tinyattn.app: `import tinyattn` must not
# need any of it
APP_PACKAGE = "tinyattn.app"
APP_MODULES = ("cli", "demo", "bench", "training", "train_config", "checkpoint", "models", "text_data", "run_log",
               "progress", "learner_loops", "torch_twins", "selfcheck")


def test_the_app_is_a_package_of_its_own():
    # every module of the app lives in tinyattn.app, none of them at the package root any more
    modules = _modules(PACKAGE)
    assert {f"{APP_PACKAGE}.{name}" for name in APP_MODULES} <= set(modules)
    assert not {f"tinyattn.{name}" for name in (*APP_MODULES, "data")} & set(modules)
    # `python -m tinyattn` and the console script run the app's command line
    assert _imported_modules("tinyattn.__main__", modules["tinyattn.__main__"], modules) == {f"{APP_PACKAGE}.cli"}


def test_importing_the_library_does_not_load_the_app():
    code = "import sys, tinyattn; print(' '.join(sorted(m for m in sys.modules if m.startswith('tinyattn'))))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PACKAGE.parent), *sys.path])}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    loaded = set(result.stdout.split())
    assert "tinyattn.nn.functional" in loaded and "tinyattn.gradient_check" in loaded  # the library is there
    app = sorted(m for m in loaded if m == APP_PACKAGE or m.startswith(APP_PACKAGE + "."))
    assert app == [], f"import tinyattn loaded the app's modules {app}"


def test_the_gradient_checker_is_library_only():
    # the finite-difference check needs the engine, not the layers, the app or the console of the commands;
    # the catalog of checks that runs it over every op and layer, with the app's GPT, is the app's selfcheck
    modules = _modules(PACKAGE)
    imported = _imported_modules("tinyattn.gradient_check", modules["tinyattn.gradient_check"], modules)
    assert not {m for m in imported if m.startswith(("tinyattn.nn", APP_PACKAGE, "tinyattn.console"))}, imported
    assert "tinyattn.gradient_check" in _imported_modules(f"{APP_PACKAGE}.selfcheck",
                                                          modules[f"{APP_PACKAGE}.selfcheck"], modules)


def test_the_library_does_not_import_the_app():
    # the app imports the library, never the other way round (the entry point of `python -m tinyattn` aside),
    # wherever the import stands: a late import inside a function counts too
    modules = _modules(PACKAGE)
    found = {}
    for name, path in modules.items():
        if name.startswith(APP_PACKAGE) or name == "tinyattn.__main__":
            continue
        app = {m for m in _imported_modules(name, path, modules) if m.startswith(APP_PACKAGE)}
        if app:
            found[name] = app
    assert found == {}, f"library modules that import the app: {found}"


# --- import circles: modules that import each other, directly or round about ---
# Every import counts, wherever it stands (the top of a file, its bottom, inside a function): a late import
# hides a circle from Python, not from a reader. The circles still allowed; each is to shrink or go, never grow:
ALLOWED_CIRCLES = [
    # the exercises' own small engine, built from the exercises' solutions, and its checks
    {"tinyattn.exercises.engine", "tinyattn.exercises.engine_checks", "tinyattn.exercises.e18_topological_order",
     "tinyattn.exercises.e19_accumulate", "tinyattn.exercises.e20_unbroadcast", "tinyattn.exercises.e21_saved",
     "tinyattn.exercises.e22_apply"},
]


def _modules(package_dir):
    """{dotted name: path} of every module of the package (a package is named by its __init__.py)."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported_modules(name, path, modules, packages=False):
    """The package's modules that `name` imports. `from . import x` imports the module x when there is one,
    else the package's __init__; imports of a package's __init__ are left out unless `packages` (a package's
    __init__ that imports its modules is in a circle with any of them that imports it back)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            candidates = [f"{base}.{alias.name}" for alias in node.names] + [base]
            candidates = [c for c in candidates[:-1] if c in modules] or [base]
        else:
            continue
        for target in candidates:
            while target and target not in modules:  # `import a.b.c` where c is a name: its module a.b
                target = target.rpartition(".")[0]
            if target and target != name and (packages or modules[target].name != "__init__.py"):
                found.add(target)
    return found


def import_circles(package_dir, packages=False):
    """The strongly connected components of the import graph with more than one module (Tarjan's algorithm)."""
    modules = _modules(package_dir)
    graph = {name: _imported_modules(name, path, modules, packages) for name, path in modules.items()}
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_no_import_circle_outside_the_allowed_ones():
    new = [sorted(c) for c in import_circles(PACKAGE) if not any(c <= allowed for allowed in ALLOWED_CIRCLES)]
    assert not new, f"import circles: {new}; break each (a lower module for what both need), never allow it"


def test_no_import_circle_through_a_package_either():
    # counting the imports of a package's __init__ too (`from . import x` where x is a name the package's
    # __init__ defines, `import tinyattn`): a package whose __init__ holds code is a module like the others
    new = [sorted(c) for c in import_circles(PACKAGE, packages=True)
           if not any(c <= allowed for allowed in ALLOWED_CIRCLES)]
    assert not new, f"import circles through a package's __init__: {new}"


def test_the_circle_check_finds_a_circle(tmp_path):
    # a package of four modules: a and b import each other (one of them late, inside a function), c imports
    # the package's __init__ (left out), d stands alone
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from . import a\n")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("def f():\n    from ..a import g\n")
    (package / "sub" / "c.py").write_text("from .. import a\nimport pkg\n")
    (package / "d.py").write_text("import os\n")
    assert import_circles(package) == [{"pkg.a", "pkg.sub.b"}]
    (package / "sub" / "b.py").write_text("from .c import x\n")  # b -> c -> a -> b
    assert import_circles(package) == [{"pkg.a", "pkg.sub.b", "pkg.sub.c"}]


def test_a_version_is_bumped_one_way():
    # an in-place change is counted by Tensor._bump_version alone (so a change to how versions are kept is
    # made in one place): no module writes `x._version[0] += 1` itself
    written = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
        allowed = {id(n) for f in functions if f.name == "_bump_version" and path.name == "tensor_core.py"
                   for n in ast.walk(f)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript)
                    and isinstance(node.target.value, ast.Attribute) and node.target.value.attr == "_version"
                    and id(node) not in allowed):
                written.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not written, f"versions bumped by hand (call the tensor's _bump_version()): {written}"
    assert any(f.name == "_bump_version" for f in ast.walk(ast.parse((PACKAGE / "tensor_core.py").read_text()))
               if isinstance(f, ast.FunctionDef))


# --- the engine's reading order: each module imports only what comes before it ---
# docs/internals.md leads a reader through these in this order; an entry that names a package covers its modules
# (their own order is the circle check's business above).
ENGINE_READING_ORDER = [
    "tinyattn.errors", "tinyattn.dtypes", "tinyattn.numpy_names", "tinyattn.return_types", "tinyattn.console",
    "tinyattn.missing",
    "tinyattn.backend",  # the array backend (NumPy or CuPy), with its threads and its parallel blocks
    "tinyattn.random", "tinyattn.printing",
    "tinyattn.tensor_core",  # a tensor's data, dtype, device and version counter
    "tinyattn.autograd.mode", "tinyattn.autograd.function", "tinyattn.autograd.engine",
    "tinyattn.ops",  # forward and backward on arrays, one file per family
    "tinyattn.storage",
    "tinyattn.tensor.arguments", "tinyattn.tensor.promotion", "tinyattn.tensor.index_keys",
    "tinyattn.tensor.creation", "tinyattn.tensor.counting",
    "tinyattn.tensor.products", "tinyattn.tensor.reductions", "tinyattn.tensor.shapes", "tinyattn.tensor.indexing",
    "tinyattn.tensor.elementwise", "tinyattn.tensor.inplace", "tinyattn.tensor.tensor",
    "tinyattn.functions",  # the torch.* functions
]


def reading_order_breaches(modules, order):
    """[(module, what it imports that comes later in `order` or is not in it)] for the modules `order` covers."""
    def entries_of(module):  # the positions of the entries that cover a module, or that a package holds
        return [i for i, entry in enumerate(order)
                if module == entry or module.startswith(entry + ".") or entry.startswith(module + ".")]

    breaches = []
    for name, path in sorted(modules.items()):
        own = [i for i, entry in enumerate(order) if name == entry or name.startswith(entry + ".")]
        if not own:
            continue  # not an engine module (a package that merely holds engine modules is checked through them)
        mine = own[0]
        for target in sorted(_imported_modules(name, path, modules, packages=True)):
            if target == "tinyattn":
                breaches.append((name, target))
                continue
            theirs = entries_of(target)
            same_entry = target == order[mine] or target.startswith(order[mine] + ".")  # (within one package)
            if not theirs or (max(theirs) >= mine and not same_entry):
                breaches.append((name, target))
    return breaches


def test_the_engine_imports_in_its_reading_order():
    modules = _modules(PACKAGE)
    missing_entries = [entry for entry in ENGINE_READING_ORDER if entry not in modules]
    assert not missing_entries, f"the reading order names modules that do not exist: {missing_entries}"
    breaches = reading_order_breaches(modules, ENGINE_READING_ORDER)
    assert not breaches, ("engine modules that import a module after them in the reading order, or outside the "
                          f"engine: {breaches}")


def test_the_reading_order_check_sees_a_late_import(tmp_path):
    # base <- core <- top, and then core imports top (late, inside a function): reported
    package = tmp_path / "pkg"
    (package / "core").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text("import os\n")
    (package / "core" / "__init__.py").write_text("from .. import base\n")
    (package / "core" / "part.py").write_text("from ..base import x\n")
    (package / "top.py").write_text("from .core import part\n")
    order = ["pkg.base", "pkg.core", "pkg.top"]
    assert reading_order_breaches(_modules(package), order) == []
    (package / "core" / "part.py").write_text("from ..base import x\n\ndef f():\n    from .. import top\n")
    assert reading_order_breaches(_modules(package), order) == [("pkg.core.part", "pkg.top")]
    (package / "base.py").write_text("import pkg\n")  # the package root loads everything: not below anything
    assert ("pkg.base", "pkg") in reading_order_breaches(_modules(package), order)
