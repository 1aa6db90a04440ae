"""Settings for the whole test run (tests/, the notebooks that nbmake executes, and the Markdown pages).

The code blocks of README.md and docs/**/*.md are tests, collected by Sybil (the `docs` and `test`
extras install it):

- a ```python block runs as it is, in a fresh namespace, in a temporary directory. A comment after a
  `print(...)` call is what that call prints: `print(x)  # tensor([1., 2.])`; where it does not fit
  in 80 columns, the comment lines right below a print with no comment of its own are (`print(x)`,
  then `# tensor([1., 2.])` on the next line). The printed text and the
  comment are compared with runs of whitespace taken as one space; `...` in the comment stands for
  any text, and ` — ` ends the output and starts a remark (`# tensor([1.]) — the book's numbers`).
  A block that starts with `>>>` is a doctest instead. A block that imports torch is skipped where
  PyTorch is not installed (one that imports from sklearn, where scikit-learn is not). A page that
  holds the line of SHARED_NAMESPACE below runs its python blocks in one namespace, each seeing the
  names of those above it (a tutorial's steps);
- a ```console block is a shell session: each `$ command` runs in one temporary directory per block
  (`tinyattn` is this Python's `python -m tinyattn`), and the lines after it are what it prints
  (stdout and stderr), compared line by line, trailing spaces ignored; a line `...` stands for any
  lines, and `...` inside a line for any text;
- ```bash, ```text and unmarked blocks are not run; `<!-- skip: next -->` before a block skips it.
"""

import contextlib
import doctest
import io
import os
import re
import subprocess
import sys
import tempfile
import tokenize

import pytest

# notebooks run their short versions under the test suite (the notebook kernels inherit this);
# open them in Jupyter for the full-size runs
os.environ.setdefault("TINYATTN_NOTEBOOK_QUICK", "1")

REMARK = " — "  # in a print's comment, what follows this is prose, not output
# on a page that holds this line, the python blocks run in one namespace, in order (a tutorial's steps)
SHARED_NAMESPACE = "<!-- the python blocks of this page run one after another, in one namespace -->"


def _print_comments(source):
    """{line of the print call: what it prints} for the source's print calls: the comment at the end
    of the print's statement or, where the statement has none, the comment lines right below it."""
    comments, statement, print_line = {}, [], None
    lines = source.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME and token.string == "print" and print_line is None:
            print_line = token.start[0]
        statement.append(token)
        if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            comment = [t for t in statement if t.type == tokenize.COMMENT]
            end = statement[-1].start[0]
            if print_line is not None and comment and comment[-1].start[0] == end:
                comments[print_line] = comment[-1].string[1:].strip()
            elif print_line is not None:
                below = []
                while end + len(below) < len(lines) and lines[end + len(below)].lstrip().startswith("#"):
                    below.append(lines[end + len(below)].lstrip()[1:].strip())
                if below:
                    comments[print_line] = " ".join(below)
            statement, print_line = [], None
    return comments


def _same_output(expected, printed):
    expected = " ".join(expected.split(REMARK)[0].split())
    printed = " ".join(printed.split())
    return doctest.OutputChecker().check_output(expected, printed, doctest.ELLIPSIS)


@contextlib.contextmanager
def _in_temporary_directory():
    before = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="tinyattn-docs-") as where:
        os.chdir(where)
        try:
            yield where
        finally:
            os.chdir(before)


def _needs_torch(source):
    if re.search(r"^\s*(>>> )?import torch\b", source, flags=re.M):
        pytest.importorskip("torch", reason="this example runs PyTorch itself")
    if re.search(r"^\s*(>>> )?from sklearn\b", source, flags=re.M):
        pytest.importorskip("sklearn", reason="this example's data ships with scikit-learn")


def evaluate_python(example):
    source = str(example.parsed)
    _needs_torch(source)
    before = example.line + example.parsed.line_offset  # the lines of the page above the code
    if source.lstrip().startswith(">>>"):
        return _evaluate_doctest(example, source, before)
    padded = "\n" * before + source  # so that errors and prints name the Markdown file's lines
    expected = _print_comments(padded)
    printed = {}

    def recording_print(*args, **kwargs):
        caller = sys._getframe(1)
        if kwargs.get("file") is None and caller.f_code.co_filename == example.path:
            text = io.StringIO()
            print(*args, **kwargs, file=text)
            printed.setdefault(caller.f_lineno, []).append(text.getvalue())
        print(*args, **kwargs)

    document = getattr(example, "document", None)
    if document is not None and SHARED_NAMESPACE in document.text:
        namespace = example.namespace  # the page's, kept from block to block
        namespace.setdefault("__name__", "__docs__")
    else:
        namespace = {"__name__": "__docs__"}
    namespace["print"] = recording_print
    out = io.StringIO()
    with _in_temporary_directory(), contextlib.redirect_stdout(out):
        exec(compile(padded, example.path, "exec"), namespace)
    problems = []
    for line, comment in sorted(expected.items()):
        got = "".join(printed.get(line, []))
        if not printed.get(line):
            problems.append(f"line {line}: the print with the comment {comment!r} printed nothing")
        elif not _same_output(comment, got):
            problems.append(f"line {line}: the comment says {comment!r}\n  but it printed {got.rstrip()!r}")
    if problems:
        raise AssertionError(f"{example.path}:\n" + "\n".join(problems))


def _evaluate_doctest(example, source, before):
    test = doctest.DocTestParser().get_doctest(source, {"__name__": "__docs__"}, example.path, example.path, before)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    with _in_temporary_directory():
        runner.run(test, out=report.write)
    if runner.failures:
        raise AssertionError(report.getvalue())


def _shell_lines(source):
    """[(command, [expected lines])] of a console block."""
    session = []
    for line in source.splitlines():
        if line.startswith("$ "):
            session.append((line[2:], []))
        elif session:
            session[-1][1].append(line.rstrip())
        elif line.strip():
            raise ValueError(f"a console block starts with a command ('$ ...'), not {line!r}")
    return session


def _lines_match(expected, got):
    """Line by line; a line '...' stands for any number of lines, '...' in a line for any text."""
    if not expected:
        return not got
    if expected[0] == "...":
        return any(_lines_match(expected[1:], got[i:]) for i in range(len(got) + 1))
    return bool(got) and doctest.OutputChecker().check_output(expected[0] + "\n", got[0] + "\n", doctest.ELLIPSIS) \
        and _lines_match(expected[1:], got[1:])


def evaluate_console(example):
    python = f'"{sys.executable}" -m tinyattn'
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    env.pop("COLUMNS", None)
    with _in_temporary_directory():
        for command, expected in _shell_lines(str(example.parsed)):
            if "torch" in command.split("tinyattn")[0]:
                pytest.importorskip("torch")
            run = re.sub(r"(^|[;&|]\s*)tinyattn\b", lambda m: m.group(1) + python, command)
            result = subprocess.run(run, shell=True, capture_output=True, text=True, env=env,
                                    stdin=subprocess.DEVNULL, timeout=600)
            got = [line.rstrip() for line in (result.stdout + result.stderr).splitlines()]
            while expected and not expected[-1]:
                expected.pop()
            while got and not got[-1]:
                got.pop()
            if not _lines_match(expected, got):
                raise AssertionError(
                    f"{example.path}, line {example.line}: `$ {command}` (exit status {result.returncode}) "
                    "printed\n" + "\n".join(got) + "\n\nwhere the page shows\n" + "\n".join(expected))


try:
    from sybil import Sybil
    from sybil.parsers.markdown import CodeBlockParser, SkipParser
except ImportError:  # without Sybil the pages are not collected; tests/test_docs.py says so
    pass
else:
    pytest_collect_file = Sybil(
        parsers=[SkipParser(), CodeBlockParser("python", evaluate_python),
                 CodeBlockParser("console", evaluate_console)],
        patterns=["*.md"],
        excludes=["notebooks/*"],
    ).pytest()
