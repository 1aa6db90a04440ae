"""A teacher's own exercises: a folder of files in the exercises' one-file format, and the proof
that each of them works (`verify`).

A course folder holds one Python file per exercise, each defining `EXERCISE`: an `Exercise` (a
Function whose backward the learner writes, checked by its Jacobian) or a `Task` (a piece of code
run by a judge), exactly as tinyattn's own files `e01_add.py` ... do, importing what they need from
`tinyattn.exercises`. Files whose name starts with `_` hold shared code and are not loaded as exercises.

`verify(exercise)` proves an exercise: its skeleton is "not done yet", its solution (written out and
loaded as a learner's file is) passes with the random cases, every planted mistake is diagnosed with
the finding the teacher wrote for it, with and without the random cases, and the solution is never
blamed on many random cases.
"""

import dataclasses
import hashlib
import importlib.util
import pathlib
import random as pyrandom
import sys
import tempfile

from ..console import plural
from . import checker
from .exercise import Exercise
from .task import Task, analyse as analyse_task

CASES = 100  # random cases on which verify checks that the solution is never blamed


class CourseError(Exception):
    """A course folder that cannot be loaded: the message says which file and what to do."""


@dataclasses.dataclass(frozen=True)
class Course:
    """A teacher's exercises, from a folder (or tinyattn's own, `folder` None)."""

    exercises: tuple
    folder: pathlib.Path = None

    def get(self, key):
        """An exercise by name, number or file label."""
        text = str(key).strip().lower().removesuffix(".py")
        for exercise in self.exercises:
            if text in (exercise.name, exercise.label, str(exercise.number), f"{exercise.number:02d}"):
                return exercise
        names = ", ".join(e.name for e in self.exercises)
        where = f"in {self.folder}" if self.folder is not None else ""
        raise KeyError(f"no exercise {key!r}{' ' + where if where else ''}: the exercises are {names}")

    def tracks(self):
        """{track: [exercises]}, in the order of the exercises."""
        found = {}
        for exercise in self.exercises:
            found.setdefault(exercise.track, []).append(exercise)
        return found


def load(folder):
    """The Course in a teacher's folder; CourseError if a file does not load or defines no EXERCISE."""
    folder = pathlib.Path(folder)
    if not folder.is_dir():
        raise CourseError(f"there is no folder {str(folder)!r} of exercises: give the folder that holds the "
                          "exercise files (each defines EXERCISE)")
    files = sorted(path for path in folder.glob("*.py") if not path.name.startswith("_"))
    if not files:
        raise CourseError(f"{str(folder)!r} holds no exercise files (*.py, each defining EXERCISE)")
    exercises = []
    for path in files:
        exercise = _load_file(path)
        for other in exercises:
            if other.name == exercise.name or other.number == exercise.number:
                raise CourseError(f"{path.name} and the file of {other.label} both define exercise "
                                  f"{exercise.number} or {exercise.name!r}: give each its own number and name")
        exercises.append(exercise)
    return Course(tuple(sorted(exercises, key=lambda e: e.number)), folder)


def _load_file(path):
    # a module of its own in sys.modules, so that inspect finds the source of its classes (the skeleton
    # is cut from it); the name is unique to the file's absolute path
    key = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    name = f"tinyattn_course_{key}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # tinyattn's own exercise files import their helpers relatively (from .exercise import ...): one
    # copied into a course folder as a template finds them in tinyattn.exercises
    module.__package__ = __package__
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as error:
        del sys.modules[name]
        raise CourseError(f"{path.name} does not load: {path.name}:{error.lineno}: SyntaxError: {error.msg}") from None
    except Exception as error:  # the teacher's file: say which line, briefly
        del sys.modules[name]
        text, where = checker._describe(error, {str(path)})
        raise CourseError(f"{path.name} does not load: {checker._located(text, where)}") from None
    exercise = getattr(module, "EXERCISE", None)
    if not isinstance(exercise, (Exercise, Task)):
        raise CourseError(f"{path.name} defines no EXERCISE: end it with EXERCISE = Exercise(...) (or Task(...)); "
                          "see tinyattn's own exercise files for the format")
    return exercise


# ---------------------------------------------------------------------------------------------
# verify


@dataclasses.dataclass
class Proof:
    """What verify found for one exercise: a line per thing proved, and whether all were."""

    exercise: object
    lines: list = dataclasses.field(default_factory=list)
    proven: bool = True

    def say(self, what, text, ok=True):
        self.lines.append((what, text, ok))
        self.proven = self.proven and ok


def verify(exercise, examples=checker.EXAMPLES, cases=CASES, seed=checker.SEARCH_SEED, course=None):
    """Prove an exercise (see the module's docstring); a Proof."""
    proof = Proof(exercise)
    random_ok = checker.hypothesis_installed()
    with tempfile.TemporaryDirectory() as scratch:
        folder = pathlib.Path(scratch)
        skeleton = _write_and_load(exercise, folder / "skeleton", solution=False, course=course)
        if isinstance(skeleton, checker.Result):
            proof.say("skeleton", f"does not load: {skeleton.finding.title}", ok=False)
        else:
            result = exercise.check(skeleton, examples=0)
            proof.say("skeleton", "not done yet, as it should be" if result.status == "not done yet" else
                      f"{result.status} ({_title(result)}): a skeleton must raise NotImplementedError",
                      result.status == "not done yet")
        solution = _write_and_load(exercise, folder / "solution", solution=True, course=course)
        if isinstance(solution, checker.Result):
            proof.say("solution", f"does not load: {solution.finding.title}", ok=False)
            return proof
        result = exercise.check(solution, examples=examples, seed=seed)
        if not result.passed:
            proof.say("solution", f"{result.status} - {_title(result)} ({result.phase})", ok=False)
        elif examples and not result.random_cases:
            proof.say("solution", f"passes the fixed cases, but {checker.HYPOTHESIS_MISSING}: not proven", ok=False)
        else:
            proof.say("solution", f"pass ({result.checked})", ok=bool(examples))
    if not exercise.mistakes:
        proof.say("mistakes", "none planted: plant at least one wrong backward, with the finding it must get",
                  ok=False)
    for mistake in exercise.mistakes:
        wrong = exercise.make(mistake.backward)
        fixed = exercise.check(wrong, examples=0)
        random = exercise.check(wrong, examples=examples, seed=seed) if examples and random_ok else None
        named = fixed.status == "FAIL" and fixed.finding.id == mistake.finding
        where = fixed.phase == mistake.found_by
        again = random is None or (random.status == "FAIL" and random.finding.id == mistake.finding)
        if named and where and again:
            proof.say(f"mistake {mistake.name}", f'named "{fixed.finding.title}" ({fixed.phase})')
        elif named and not where:
            proof.say(f"mistake {mistake.name}", f'named "{fixed.finding.title}", but on the {fixed.phase}, '
                      f"not the {mistake.found_by} as its Mistake says", ok=False)
        elif fixed.passed:
            proof.say(f"mistake {mistake.name}", "passes the fixed cases: add a fixed case (edge_cases) that "
                      "shows it", ok=False)
        else:
            got = fixed.finding.id if fixed.finding is not None else fixed.status
            proof.say(f"mistake {mistake.name}", f'gets "{_title(fixed)}" ({got}), not {mistake.finding}',
                      ok=False)
    if not random_ok:
        proof.say("random cases", f"not run: {checker.HYPOTHESIS_MISSING}: not proven", ok=False)
    elif cases:
        blamed = never_blamed(exercise, cases, seed)
        if blamed is None:
            proof.say("random cases", f"the solution is never blamed on {plural(cases, 'random case')}")
        else:
            proof.say("random cases", f"the solution is blamed ({_title(blamed)}) on "
                      f"{exercise.describe_case(blamed.case)}", ok=False)
    return proof


def never_blamed(exercise, cases=CASES, seed=checker.SEARCH_SEED):
    """None when the reference solution passes the full analysis of `cases` random cases; else the
    Result of the first case it fails on."""
    from hypothesis import HealthCheck, find, settings
    from hypothesis import strategies as st
    from hypothesis.errors import NoSuchExample, Unsatisfiable

    from .strategies import Strategies

    strategies = Strategies()
    drawn = st.composite(lambda draw: exercise.random_case(draw, strategies))()
    piece = exercise.piece if isinstance(exercise, Task) else exercise.function

    def blamed(case):
        if isinstance(exercise, Task):
            return not analyse_task(exercise, piece, case).passed
        return (not checker.analyse(exercise, piece, case).passed
                or checker.quick_failure(exercise, piece, case) is not None)

    try:
        case = find(drawn, blamed, random=pyrandom.Random(seed), settings=settings(
            max_examples=cases, derandomize=False, database=None, deadline=None,
            suppress_health_check=list(HealthCheck), report_multiple_bugs=False))
    except (NoSuchExample, Unsatisfiable):
        return None
    if isinstance(exercise, Task):
        return analyse_task(exercise, piece, case)
    result = checker.analyse(exercise, piece, case)
    if result.passed:
        result = checker.Result(exercise, "FAIL", checker.finding(
            "no-pattern", explanation=checker.quick_failure(exercise, piece, case) or ""), case=case)
    return result


def _write_and_load(exercise, folder, solution, course):
    folder.mkdir()
    path = folder / exercise.file_name
    path.write_text(exercise.file_source(solution=solution, course=course), encoding="utf-8")
    return checker.load(exercise, path)


def _title(result):
    return result.finding.title if result.finding is not None else result.status
