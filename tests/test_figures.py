"""The figures that README.md and the pages quote about tinyattn itself (its lines of code, its tests,
its checks and exercises, its pins) are checked here against the code, so that none goes stale."""

import configparser
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).parent.parent
PACKAGE = ROOT / "src" / "tinyattn"
README = (ROOT / "README.md").read_text(encoding="utf-8")
INTERNALS = (ROOT / "docs" / "internals.md").read_text(encoding="utf-8")
NUMBER_WORDS = {"four": 4, "seventeen": 17}


def number(text):
    """'28,000' -> 28000; 'seventeen' -> 17."""
    return NUMBER_WORDS[text] if text in NUMBER_WORDS else int(text.replace(",", ""))


def quoted(page, pattern):
    """The numbers that `pattern` (one group: the number) finds in a page; at least one."""
    found = [number(n) for n in re.findall(pattern, " ".join(page.split()))]
    assert found, f"the page no longer says {pattern!r}: update this test with it"
    return found


def lines_of(path):
    with open(path, encoding="utf-8") as file:
        return sum(1 for _ in file)


def about(quoted_figure, actual, within=0.05):
    """"about N" holds when N is within 5% of the real figure."""
    return abs(quoted_figure - actual) <= within * actual


def test_the_lines_of_python():
    actual = sum(lines_of(path) for path in PACKAGE.rglob("*.py"))
    for page in (README, INTERNALS):
        for figure in quoted(page, r"(?<!\()about ([\d,]+) lines"):  # "(about N lines)": one file
            assert about(figure, actual), f"the page says about {figure:,} lines; tinyattn has {actual:,}"


def test_the_lines_of_a_module():
    for name, figure in re.findall(r"`([\w/]+\.py)` \(about ([\d,]+) lines\)", " ".join(INTERNALS.split())):
        actual = lines_of(PACKAGE / name)
        assert about(number(figure), actual), f"internals.md says {name} is about {figure} lines; it has {actual:,}"
    assert re.search(r"`tensor/tensor\.py` \(about", INTERNALS)


def test_the_checks_of_tinyattn_gradcheck():
    from tinyattn.app import selfcheck

    actual = len(selfcheck.op_checks()) + len(selfcheck.module_checks())
    cli_page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    for page in (README, cli_page):
        assert quoted(page, r"\b(\d+) checks\b") == [actual] * len(quoted(page, r"\b(\d+) checks\b"))


def test_the_exercises_and_the_requirements():
    from tinyattn.exercises import EXERCISES

    assert quoted(README, r"\b(\d+) exercises in three tracks") == [len(EXERCISES)]
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    requirements = [line for line in setup["options"]["install_requires"].splitlines()
                    if line.strip() and not line.strip().startswith("#")]
    assert quoted(README, r"with its (\w+) dependencies") == [len(requirements)]


def test_the_pytorch_pin_of_the_test_extra():
    """The README's CPU-only PyTorch line installs the version the test extra pins."""
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    pins = re.findall(r"^torch==([\w.]+)$", setup["options.extras_require"]["test"], flags=re.M)
    assert len(pins) == 1
    assert re.findall(r"pip install torch==([\w.]+) --index-url https://download\.pytorch\.org/whl/cpu",
                      README) == pins


@pytest.mark.slow
def test_the_tests():
    """The README's "about N tests" is what `python -m pytest` collects (about 13 s)."""
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    counts = re.findall(r"^(\d+) tests? collected", result.stdout, flags=re.M)
    assert result.returncode == 0 and counts, result.stdout[-2000:] + result.stderr[-2000:]
    actual = int(counts[-1])
    for figure in quoted(README, r"about ([\d,]+) tests"):
        assert about(figure, actual), f"the README says about {figure:,} tests; pytest collects {actual:,}"
