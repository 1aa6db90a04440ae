"""An exercise whose answer is a piece of code run by the checker: a part of the small engine (the
engine track), or a whole layer's backward written by hand (the manual-backprop track).

A `Task` holds the piece (a function or a class) with its solution below `# --- solution ---`
lines, as a gradient-check `Exercise` holds its Function, and a `judge`: `judge(piece, case)` runs
the learner's piece on one case, compares what it does with what tinyattn does, and returns None
when it is right, or raises `Wrong` with the finding and the evidence. The check goes as for the
gradient-check exercises: the fixed cases (the example and the edge cases, which alone catch every
planted mistake), then random cases drawn by Hypothesis, the smallest failing one reported.

A judge can come in two halves, so that the learner's piece and the judging never share a process
(`tinyattn exercises check` runs each exercise's piece in a process of its own, isolation.py):
`probe(piece, case, steps)` runs the piece on the case and notes what it did as plain data (ids,
numbers, arrays: what wire.py carries), step by step; `verdict(case, steps)` compares that with the
reference and raises Wrong. `split_judge(probe, verdict)` makes the judge of the two: in one process
it runs both, the data passed through the same encoding as between processes.
"""

import dataclasses
import inspect
import json
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
    probe: Callable = None  # (piece, case, steps): runs the piece (see the module's docstring)
    verdict: Callable = None  # (case, steps): judges what the probe noted

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
    """One case: the judge's verdict on the piece, with the learner's exceptions reported briefly.
    A `checker.Remote` piece runs in another process: its probe's data comes back and is judged here."""
    try:
        if isinstance(piece, checker.Remote):
            found = piece.probe(case)  # raises the verdict on an exception outside the probe's steps
            with checker._learner_code(None):
                task.verdict(case, Steps.received(found))
        else:
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


# ---------------------------------------------------------------------------------------------
# a judge in two halves: the probe (beside the learner's piece) and the verdict (without it)


class Steps:
    """What a probe noted, step by step: `steps.run(name, fn)` keeps fn()'s plain data under name;
    the first step whose code raises ends the probe (later steps run nothing and return None), and
    the verdict meets that exception, as a verdict, where it reads that step (`steps[name]`)."""

    def __init__(self, piece=None, data=None):
        self.piece, self.data = piece, {} if data is None else data

    def run(self, name, fn):
        if "raised" in self.data:
            return None
        try:
            with checker._learner_code(self.piece):
                value = fn()
        except _Verdict as verdict:
            self.data["raised"] = {"at": name, "verdict": verdict_data(verdict)}
            return None
        self.data[name] = value
        return value

    def __getitem__(self, name):
        raised = self.data.get("raised")
        if isinstance(raised, dict) and raised.get("at") == name:
            raise verdict_from(raised.get("verdict"))
        if name not in self.data:
            raise wrong("garbled", "answered with something else",
                        f"The process that ran your code sent back no {name!r} among its answers.") from None
        return self.data[name]

    @classmethod
    def received(cls, data):
        if not isinstance(data, dict):
            raise wrong("garbled", "answered with something else",
                        "The process that ran your code sent back something other than its answers.")
        return cls(data=data)


def split_judge(probe, verdict):
    """The judge made of a probe and a verdict (see the module's docstring), for one process."""

    def judge(piece, case):
        steps = Steps(piece)
        probe(piece, case, steps)
        verdict(case, Steps.received(_through_the_wire(steps.data)))

    return judge


def run_probe(task, piece, case):
    """The probe's data for one case (what the process that runs the learner's piece sends back)."""
    steps = Steps(piece)
    with checker._learner_code(piece):
        task.probe(piece, case, steps)
    return steps.data


def _through_the_wire(data):
    """`data` as the other process would read it (the same encoding, in one process)."""
    from . import wire

    return wire._decode(json.loads(json.dumps(wire._encode(data))))


def case_data(case):
    """A case as plain data (a Recipe of the engine track as a dict; the worker's case_from reads it back)."""
    if dataclasses.is_dataclass(case):
        return {"__recipe__": {field.name: getattr(case, field.name) for field in dataclasses.fields(case)}}
    return case


def verdict_data(verdict):
    found = verdict.finding
    return {"status": verdict.status, "lines": [str(line) for line in verdict.lines],
            "finding": None if found is None else {"id": found.id, "title": found.title, "note": found.note,
                                                   "explanation": found.explanation}}


def verdict_from(data):
    """The verdict a probe noted, rebuilt (text only, of bounded length)."""
    data = data if isinstance(data, dict) else {}
    found = data.get("finding") if isinstance(data.get("finding"), dict) else {}
    status = data.get("status") if data.get("status") in ("FAIL", "not done yet") else "FAIL"
    lines = data.get("lines") if isinstance(data.get("lines"), list) else []
    return _Verdict(status, Finding(*(_text(found.get(key)) for key in ("id", "title", "note", "explanation"))),
                    [_text(line) for line in lines[:40]])


def _text(value, longest=500):
    text = value if isinstance(value, str) else ""
    return text if len(text) <= longest else text[: longest - 3] + "..."
