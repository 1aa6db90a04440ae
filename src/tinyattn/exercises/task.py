"""An exercise whose answer is a piece of code run by the checker: a part of the small engine (the
engine track), or a whole layer's backward written by hand (the manual-backprop track).

A `Task` holds the piece (a function or a class) with its solution below `# --- solution ---`
lines, as a gradient-check `Exercise` holds its Function, and a `judge`: `judge(piece, case)` runs
the learner's piece on one case, compares what it does with what tinyattn does, and returns None
when it is right, or raises `Wrong` with the finding and the evidence. The check goes as for the
gradient-check exercises: the fixed cases (the example and the edge cases, which alone catch every
planted mistake), then random cases drawn by Hypothesis, the smallest failing one reported.
"""

import dataclasses
import inspect
import random as pyrandom
import textwrap
from typing import Callable

from ..console import plural
from . import checker
from .checker import HYPOTHESIS_MISSING, Result, _Verdict
from .diagnosis import Finding
from .exercise import SKELETON_RAISE, file_text, piece_source


class Wrong(_Verdict):
    """What a judge raises on a wrong piece: `raise Wrong(finding, lines)`."""

    def __init__(self, found, lines=()):
        super().__init__("FAIL", found, lines)


def wrong(id, title, explanation="", lines=(), note=""):
    """A Wrong with a Finding made on the spot (a judge's findings are its own)."""
    return Wrong(Finding(id, title, note, explanation), lines)


@dataclasses.dataclass(frozen=True)
class Task:
    """An exercise whose answer is code the checker runs: see the module's docstring.

    piece: the reference function or class; its source holds the solution below one or more
        `# --- solution ---` lines (each block runs to the end of its function).
    signature: what goes in and what comes out, one line each (the file's "You write:").
    todo: what the skeleton's comment says to write, one per marker (or one for all).
    judge: (piece, case) -> None, or raises Wrong.
    describe: case -> the case as text for the report.
    imports: the import lines of the learner's file.
    """

    number: int
    name: str
    title: str
    piece: object
    statement: str
    signature: str
    hint: str
    todo: object
    judge: Callable
    example: Callable
    random_case: Callable
    describe: Callable
    imports: str
    track: str = "engine"
    edge_cases: Callable = None
    edge: Callable = None
    mistakes: tuple = ()
    points: float = 1.0
    given: tuple = ()  # functions or classes copied into the file above the piece, as they are

    @property
    def label(self):
        return f"{self.number:02d}_{self.name}"

    @property
    def file_name(self):
        return f"{self.label}.py"

    @property
    def class_name(self):
        return self.piece.__name__

    @property
    def args(self):
        return ()

    def class_source(self, solution):
        todos = (self.todo,) if isinstance(self.todo, str) else tuple(self.todo)
        return piece_source(self.piece, self.name, solution, todos, SKELETON_RAISE.replace("the backward", "this"))

    def file_source(self, solution=False, course=None):
        middle = ["", "You write:"] + ["    " + line for line in self.signature.splitlines()]
        return file_text(self, middle, self.imports, self.given_source() + self.class_source(solution), solution,
                         course, what="your code")

    def given_source(self):
        """The source of what the file gives above the piece (the functions in `given`), or ""."""
        return "".join(textwrap.dedent(inspect.getsource(item)) + "\n\n" for item in self.given)

    def markdown(self):
        """The statement as a notebook's markdown cell: what to write, and the code given with it."""
        given = f"Given:\n\n```python\n{self.given_source().rstrip()}\n```\n\n" if self.given else ""
        return (f"## Exercise {self.number:02d}: {self.title}\n\n{self.statement}\n\nYou write:\n\n"
                f"```\n{self.signature.rstrip()}\n```\n\n{given}"
                f"Stuck? `exercises.hint(\"{self.name}\")` prints a hint.")

    def check(self, piece, examples=None, seed=None):
        """Check a learner's piece: a checker.Result (see `check` below)."""
        return check(self, piece, checker.EXAMPLES if examples is None else examples,
                     seed=checker.SEARCH_SEED if seed is None else seed)

    def make(self, piece):
        """The piece to check in place of the reference (a planted mistake is a whole piece)."""
        return piece

    def accepts(self, value):
        """Whether what a learner's file defines under class_name can be this exercise's piece."""
        return isinstance(value, type) if isinstance(self.piece, type) else callable(value)

    def describe_case(self, case):
        return self.describe(case)

    def fixed_cases(self):
        return [self.example()] + (list(self.edge_cases()) if self.edge_cases else [])


# ---------------------------------------------------------------------------------------------
# the check


def check(task, piece, examples=checker.EXAMPLES, shrink_calls=checker.SHRINK_CALLS, seed=checker.SEARCH_SEED):
    """Check a learner's piece: the fixed cases, then `examples` random cases; return a Result."""
    cases = task.fixed_cases()
    for number, case in enumerate(cases):
        result = analyse(task, piece, case)
        if not result.passed:
            result.phase = "edge case" if number else "example"
            return result
    checked = ["the example" if len(cases) == 1 else f"the example and {plural(len(cases) - 1, 'edge case')}"]
    random_cases = 0
    if examples:
        try:
            counterexample = search(task, piece, examples, shrink_calls, seed)
        except ImportError:
            checked.append(f"no random cases: {HYPOTHESIS_MISSING}")
        else:
            if counterexample is not None:
                failed = analyse(task, piece, counterexample)
                failed.status, failed.phase, failed.case = "FAIL", "random case", counterexample
                failed.seed = seed
                return failed
            checked.append(f"{examples} random cases")
            random_cases = examples
    return Result(task, "pass", checked=", ".join(checked), random_cases=random_cases,
                  seed=seed if random_cases else None)


def analyse(task, piece, case):
    """One case: the judge's verdict on the piece, with the learner's exceptions reported briefly."""
    try:
        with checker._learner_code(piece):
            task.judge(piece, case)
    except _Verdict as verdict:
        return Result(task, verdict.status, verdict.finding, verdict.lines, case=case)
    return Result(task, "pass", case=case)


def search(task, piece, examples, shrink_calls, seed):
    """The smallest random case on which the piece fails, or None (see checker.search)."""
    from hypothesis import HealthCheck, find, settings
    from hypothesis import strategies as st
    from hypothesis.errors import NoSuchExample, Unsatisfiable

    from .strategies import Strategies

    strategies = Strategies()
    cases = st.composite(lambda draw: task.random_case(draw, strategies))()
    failing, tried = set(), [0]

    def fails(case):
        key = repr(case)
        if key in failing:
            return True
        if failing:
            if tried[0] >= shrink_calls:
                return False
            tried[0] += 1
        if analyse(task, piece, case).passed:
            return False
        failing.add(key)
        return True

    try:
        return find(cases, fails, random=pyrandom.Random(seed), settings=settings(
            max_examples=examples, derandomize=False, database=None, deadline=None,
            suppress_health_check=list(HealthCheck), report_multiple_bugs=False))
    except (NoSuchExample, Unsatisfiable):
        return None
