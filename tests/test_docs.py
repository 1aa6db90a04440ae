"""The documentation: its code blocks are checked the way the root conftest.py says, and the site builds.

The blocks of README.md and docs/**/*.md are collected by Sybil from the root conftest.py (the
`test` extra installs it); these tests check that checker itself, and that `mkdocs build --strict`
passes and its reference lists every public name.
"""

import html
import importlib.util
import inspect
import pathlib
import re
import subprocess
import sys
import types

import pytest

import tinyattn

ROOT = pathlib.Path(__file__).parent.parent
# the checker lives in the root conftest.py (pytest imports it as `conftest` too, beside tests/conftest.py)
_spec = importlib.util.spec_from_file_location("docs_checker", ROOT / "conftest.py")
docs_checker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs_checker)


def test_the_pages_are_collected():
    if importlib.util.find_spec("sybil") is None:
        pytest.skip("Sybil is not installed, so the code blocks of README.md and docs/ are not run: "
                    "pip install -e '.[test]'")
    assert hasattr(docs_checker, "pytest_collect_file")


def fake_example(tmp_path, source):
    """What Sybil hands an evaluator for a ```python block whose code starts on line 1 (its fence on line 0)."""
    page = tmp_path / "page.md"
    page.write_text("```python\n" + source + "```\n")
    return types.SimpleNamespace(path=str(page), line=0, parsed=_Text(source, 0))


class _Text(str):
    def __new__(cls, text, line_offset):
        self = super().__new__(cls, text)
        self.line_offset = line_offset
        return self


def test_a_print_comment_is_compared_with_what_it_prints(tmp_path):
    docs_checker.evaluate_python(fake_example(tmp_path, "print([1,   2])  # [1, 2]\n"))
    docs_checker.evaluate_python(fake_example(tmp_path, "x = 3\nprint(x, x + 1)  # 3 4 — a remark\n"))
    docs_checker.evaluate_python(fake_example(tmp_path, "print(list(range(20)))  # [0, 1, ..., 19]\n"))
    docs_checker.evaluate_python(fake_example(tmp_path, "for i in range(3):\n    print(i)  # 0 1 2\n"))
    with pytest.raises(AssertionError, match=r"the comment says '\[1, 3\]'"):
        docs_checker.evaluate_python(fake_example(tmp_path, "print([1, 2])  # [1, 3]\n"))
    with pytest.raises(AssertionError, match="printed nothing"):
        docs_checker.evaluate_python(fake_example(tmp_path, "if False:\n    print(1)  # 1\n"))
    with pytest.raises(AssertionError, match="line 2: the comment says .2."):  # the line of the page where print( is
        docs_checker.evaluate_python(fake_example(tmp_path, "y = 1\nprint(\n    y)  # 2\n"))


def test_the_comment_lines_below_a_print_are_its_output(tmp_path):
    docs_checker.evaluate_python(fake_example(tmp_path, "print([1, 2])\n# [1, 2]\n"))
    docs_checker.evaluate_python(fake_example(tmp_path, "print([[1], [2]])\n# [[1],\n#  [2]] — a remark\n"))
    with pytest.raises(AssertionError, match=r"the comment says '\[1, 3\]'"):
        docs_checker.evaluate_python(fake_example(tmp_path, "print([1, 2])\n# [1, 3]\nx = 1\n# prose\n"))
    # a print with a comment of its own keeps it; the comment lines below it are prose
    docs_checker.evaluate_python(fake_example(tmp_path, "print(1)  # 1\n# not output\n"))


def test_a_page_can_share_one_namespace_between_its_blocks(tmp_path):
    shared = {}
    first, second = fake_example(tmp_path, "x = 41\n"), fake_example(tmp_path, "print(x + 1)  # 42\n")
    for example in (first, second):
        example.document = types.SimpleNamespace(text="text\n" + docs_checker.SHARED_NAMESPACE + "\n")
        example.namespace = shared
    docs_checker.evaluate_python(first)
    docs_checker.evaluate_python(second)
    second.document.text = "a page without the line"  # each block alone: x is not defined
    with pytest.raises(NameError):
        docs_checker.evaluate_python(second)


def test_a_doctest_block_is_compared_too(tmp_path):
    docs_checker.evaluate_python(fake_example(tmp_path, ">>> print(1 + 1)\n2\n"))
    with pytest.raises(AssertionError, match="Expected"):
        docs_checker.evaluate_python(fake_example(tmp_path, ">>> print(1 + 1)\n3\n"))


def test_a_console_block_is_run_and_compared(tmp_path):
    run = docs_checker.evaluate_console
    run(fake_example(tmp_path, "$ tinyattn --version\ntinyattn ... (Python ..., NumPy ...)\n"))
    run(fake_example(tmp_path, "$ printf 'a\\nb\\nc\\n'\na\n...\n$ echo done\ndone\n"))
    with pytest.raises(AssertionError, match="where the page shows"):
        run(fake_example(tmp_path, "$ echo one\ntwo\n"))


def _extra_closure(extra):
    """The installed distributions that `pip install -e ".[extra]"` brings: tinyattn's requirements and
    the extra's, and theirs in turn (names normalised as pip does)."""
    import configparser
    import importlib.metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    lines = setup["options"]["install_requires"].splitlines() + setup["options.extras_require"][extra].splitlines()
    todo = [(Requirement(line), "") for line in lines if line.strip() and not line.strip().startswith("#")]
    closure = set()
    while todo:
        requirement, wanted_extra = todo.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": wanted_extra}):
            continue
        name = canonicalize_name(requirement.name)
        if name in closure:
            continue
        try:
            requires = importlib.metadata.requires(requirement.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here: the build cannot import it either
        closure.add(name)
        for wanted in list(requirement.extras) + [""]:
            todo += [(Requirement(r), wanted) for r in requires]
    return closure


# run as `python -c`: mkdocs, with every installed package that the docs extra does not bring refused
# at import, as in a fresh venv made with `pip install -e ".[docs]"`
_BUILD_WITH_ONLY = """
import importlib.abc, importlib.metadata, sys
from packaging.utils import canonicalize_name
allowed = set(sys.argv[1].split(",")) | {"tinyattn"}
refused = {top for top, dists in importlib.metadata.packages_distributions().items()
           if top not in sys.stdlib_module_names
           and not any(canonicalize_name(d) in allowed for d in dists)}

class NotInTheExtra(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in refused:
            raise ImportError(f"{name} is not installed by the docs extra", name=name)

sys.meta_path.insert(0, NotInTheExtra())
from mkdocs.__main__ import cli
sys.argv = ["mkdocs"] + sys.argv[2:]
cli()
"""


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    """(the `mkdocs build --strict` run, the site folder): built once for the tests below. The build
    sees only the packages that the docs extra installs (the others refuse to import), as in a fresh
    venv made with `pip install -e ".[docs]"`."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"{module} is not installed (pip install -e '.[docs]' or '.[test]'), so the site is not built")
    site = tmp_path_factory.mktemp("docs") / "site"
    docs_extra = _extra_closure("docs")
    result = subprocess.run([sys.executable, "-c", _BUILD_WITH_ONLY, ",".join(sorted(docs_extra)),
                             "build", "--strict", "--site-dir", str(site)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    return result, site


def test_mkdocs_build_strict(built_site):
    """The site builds with broken links, anchors and docstring references as errors, with only the
    docs extra's packages, and its reference pages name every public name of the namespaces they
    document."""
    result, site = built_site
    assert result.returncode == 0, result.stdout + result.stderr
    documented = set()
    for page in (site / "reference").rglob("*.html"):
        documented |= {html.unescape(i) for i in re.findall(r'id="([\w.]+)"', page.read_text(encoding="utf-8"))}

    def public(module):
        """A module's `__all__`; else, for a package, every name it holds, for a module the names it defines."""
        if hasattr(module, "__all__"):
            return module.__all__
        names = [n for n in dir(module)
                 if not n.startswith("_") and not isinstance(getattr(module, n), types.ModuleType)]
        if hasattr(module, "__path__") or isinstance(module, type):
            return names
        return [n for n in names if getattr(getattr(module, n), "__module__", None) == module.__name__]

    namespaces = {
        "tinyattn": tinyattn, "tinyattn.Tensor": tinyattn.Tensor, "tinyattn.nn": tinyattn.nn,
        "tinyattn.nn.functional": tinyattn.nn.functional, "tinyattn.optim": tinyattn.optim,
        "tinyattn.utils.data": tinyattn.utils.data, "tinyattn.gradient_check": tinyattn.gradient_check,
        "tinyattn.serialization": tinyattn.serialization, "tinyattn.linalg": tinyattn.linalg,
    }
    missing = [f"{prefix}.{name}" for prefix, module in namespaces.items() for name in public(module)
               if f"{prefix}.{name}" not in documented
               and not (prefix == "tinyattn" and name == "tensor" and "tinyattn.tensor.creation.tensor" in documented)]
    assert not missing, f"public names with no entry in docs/reference: {missing}"
    # the Tensor reference links each op-running method to its op's forward and backward, and shows
    # the slot attributes without Python's "<member 'grad' of 'Tensor' objects>"
    tensor_page = (site / "reference" / "tensor" / "index.html").read_text(encoding="utf-8")
    ops_page = (site / "reference" / "ops" / "index.html").read_text(encoding="utf-8")
    ops_text = html.unescape(re.sub(r"<[^>]+>", "", ops_page))  # the highlighted source as text
    for op in ("Gather", "Exp", "MaskedFill", "Softmax", "Matmul"):
        assert f'href="../ops/#tinyattn.ops.{op}"' in tensor_page, op
        assert f'id="tinyattn.ops.{op}"' in ops_page and f"class {op}(Op):" in ops_text, op
    assert ops_text.count("def forward(ctx") > 50 and ops_text.count("def backward(ctx") > 50
    functional_page = (site / "reference" / "nn-functional" / "index.html").read_text(encoding="utf-8")
    for op in ("CrossEntropyOp", "AttentionOp", "LinearOp"):  # the fused ops, linked to the ops page
        assert f'href="../ops/#tinyattn.ops.{op}"' in functional_page, op
        assert f'id="tinyattn.ops.{op}"' in ops_page and f"class {op}(Op):" in ops_text, op
    assert "&lt;member" not in tensor_page and "The gradient that backward() accumulated" in tensor_page


# the first words of the docstrings of Python's own types, which inspection finds on an attribute's value
BUILTIN_DOCSTRINGS = [inspect.getdoc(t).splitlines()[0] for t in (int, float, str, tuple, list, dict, bool, object)]


def test_the_reference_shows_constructors_and_no_docstring_of_a_builtin(built_site):
    """Each class of tinyattn.nn is headed by its constructor's signature (nn.Linear(in_features,
    out_features, bias=True, ...)), and no reference page describes an attribute (`Conv2d.dims = 2`)
    with the docstring of its value's type ("int([x]) -> integer")."""
    _, site = built_site
    assert "int([x]) -> integer" in BUILTIN_DOCSTRINGS and "Built-in immutable sequence." in BUILTIN_DOCSTRINGS
    for page in (site / "reference").rglob("*.html"):
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))
        shown = [doc for doc in BUILTIN_DOCSTRINGS if doc in text]
        assert not shown, f"{page.relative_to(site)} shows the docstrings of Python's own types: {shown}"
    nn_page = (site / "reference" / "nn" / "index.html").read_text(encoding="utf-8")
    classes = [name for name, value in vars(tinyattn.nn).items() if not name.startswith("_") and inspect.isclass(value)]
    assert {"Linear", "Conv2d", "MultiheadAttention", "LayerNorm"} <= set(classes)
    for name in classes:
        heading = re.search(rf'<h(\d) id="tinyattn\.nn\.{name}".*?</h\1>', nn_page, re.S)
        assert heading, name
        heading = html.unescape(re.sub(r"<[^>]+>", "", heading.group(0)))
        parameters = inspect.signature(getattr(tinyattn.nn, name)).parameters
        assert f"{name}(" in heading and all(p in heading for p in parameters), (name, heading, list(parameters))


@pytest.mark.slow
def test_the_site_in_a_browser(built_site):
    """At 1280 px in headless Chromium, no code block of the home page, the attention tutorial, the
    Tensor and ops references or the reading guide needs horizontal scrolling (their folded source
    blocks opened), and the site search finds cross_entropy."""
    spec = importlib.util.spec_from_file_location("site_browser", ROOT / "tests" / "site_browser.py")
    site_browser = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site_browser)
    if not site_browser.available():
        pytest.skip("no Chromium with chromedriver here (Debian: apt-get install chromium chromium-driver)")
    result, site = built_site
    assert result.returncode == 0, result.stdout + result.stderr
    overflowing, results, widths = site_browser.check_site(site)
    assert set(widths.values()) == {site_browser.WIDTH}, widths
    assert not any(overflowing.values()), f"code lines wider than their block at 1280 px: {overflowing}"
    assert any(title.startswith("tinyattn.nn.functionalcross_entropy(") for title in results), results


def _public_callables(namespace):
    """(name, object) of a namespace's public classes and functions: its `__all__`, else what it defines."""
    names = getattr(namespace, "__all__", None) or [
        n for n in dir(namespace) if not n.startswith("_")
        and getattr(getattr(namespace, n), "__module__", "").startswith(namespace.__name__)]
    return [(n, getattr(namespace, n)) for n in names if callable(getattr(namespace, n, None))]


def test_every_public_name_says_what_it_does():
    """The reference is made from docstrings: each public Tensor method, property and slot, each
    function and class of the namespaces a learner looks up, and each op class has one."""
    import inspect

    from tinyattn import autograd, ops

    def own_docstring(value):  # not one inherited from object (Tensor.eq is __eq__: "Return self==value.")
        value = value.fget if isinstance(value, property) else value
        if isinstance(value, types.MemberDescriptorType):
            return inspect.getdoc(value)  # from the __slots__ dict
        return value.__doc__

    tensor_names = [n for n in dir(tinyattn.Tensor) if not n.startswith("_")]
    missing = [f"Tensor.{n}" for n in tensor_names
               if not own_docstring(inspect.getattr_static(tinyattn.Tensor, n))]
    assert len(tensor_names) > 150
    for namespace in (tinyattn, tinyattn.nn, tinyattn.nn.functional, tinyattn.optim, tinyattn.utils.data):
        for name, value in _public_callables(namespace):
            own = value.__doc__ if isinstance(value, type) else inspect.getdoc(value)  # a class's own, not its base's
            if not own:
                missing.append(f"{namespace.__name__}.{name}")
    for name, value in vars(ops).items():
        if isinstance(value, type) and issubclass(value, autograd.Function) and not value.__doc__:
            missing.append(f"tinyattn.ops.{name}")
    assert not missing, f"public names without a docstring: {missing}"


WIDEST_CODE_LINE = 80  # columns of a code block that the site shows at 1280 px without scrolling


def _code_lines(page):
    """(line number, line) of each line inside a fenced code block of a Markdown page."""
    fence = None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        opening = re.match(r"\s*(`{3,}|~{3,})", line)
        if opening and (fence is None or opening.group(1).startswith(fence)):
            fence = opening.group(1) if fence is None else None
        elif fence is not None:
            yield number, line


def test_no_code_line_is_wider_than_the_page():
    """A code block wider than the page hides its end (where the comment says what a line prints)
    behind a scroll bar: long output goes on comment lines of its own below the print."""
    pages = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    wide = [f"{page.relative_to(ROOT)}:{number} ({len(line)} columns)"
            for page in pages for number, line in _code_lines(page) if len(line) > WIDEST_CODE_LINE]
    assert len(pages) > 30 and not wide, f"code lines over {WIDEST_CODE_LINE} columns: {wide}"
