"""What an exercise is: a Function whose backward the learner writes, with the data to check it.

Each exercise file (`e01_add.py`, ...) defines one `tinyattn.autograd.Function` with the forward
given and the reference solution in its backward, below a line `# --- solution ---`. The learner's
skeleton is that same class with everything below the marker replaced by a `raise
NotImplementedError`, so skeleton and solution cannot drift apart. Beside the class the file holds
what the checker needs: the example it checks first, a Hypothesis strategy for random cases, the
library's own computation of the same forward (the reference), and the mistakes learners make.

A case is a dict {argument name: value}: NumPy arrays for tensor arguments (float arrays become
float64 leaves that require grad when the argument is differentiable; bool and integer arrays become
masks and ids), plain numbers for the rest.
"""

import dataclasses
import inspect
import pathlib
import shlex
import textwrap
from typing import Callable

import numpy as np

from .. import autograd, functions
from . import checker
from .diagnosis import Factor  # noqa: F401  (part of what an exercise file imports from here)

SOLUTION_MARKER = "# --- solution ---"
SKELETON_RAISE = 'raise NotImplementedError("write the backward here")'

# what every learner's file imports (the exercise files use these names and no others)
IMPORTS = """\
import math

import tinyattn as torch
from tinyattn.autograd import Function
from tinyattn.nn import functional as F
"""


@dataclasses.dataclass(frozen=True)
class Mistake:
    """A wrong backward that learners write, and what the checker must say about it.

    finding: the id of the finding the checker names (see diagnosis.FINDINGS).
    found_by: where the checker catches it: "example" (the first fixed example), "edge case" (one
        of the exercise's further fixed examples), or "float32" (the large-input probe in float32).
        Every planted mistake is caught by the fixed cases alone: a check without Hypothesis, or
        with --examples 0, never passes one.
    """

    backward: Callable
    finding: str
    found_by: str = "example"

    @property
    def name(self):
        """The mistake's name: the name of its wrong backward function."""
        return self.backward.__name__


@dataclasses.dataclass(frozen=True)
class Suspect:
    """A mistake particular to one exercise, recognised by a test on the Jacobians.

    test(probe) returns the names of the inputs whose gradient this mistake explains, or a dict
    {name: a note on that input} (see checker.Probe: `probe.matches(name, candidate)` compares the
    learner's Jacobian with a candidate).
    """

    finding: str
    title: str
    explanation: str
    test: Callable


@dataclasses.dataclass(frozen=True)
class Exercise:
    """An exercise of the backward track: a Function whose backward the learner writes, with what
    the checker needs (see the module's docstring, and the fields' comments). A teacher's exercise
    file ends with `EXERCISE = Exercise(...)`."""

    number: int
    name: str
    title: str  # one line: what the learner writes the backward of
    function: type  # the Function, with the solution below SOLUTION_MARKER in its backward
    statement: str  # a short paragraph
    shapes: str  # one line per tensor: "x  (..., n)"
    hint: str
    todo: str  # the skeleton's comment: "return grad_x (the shape of x)"
    args: tuple  # forward's arguments, in order
    grads: tuple  # the arguments that get a gradient
    example: Callable  # () -> case: the first case checked, the one the statement's shapes describe
    random_case: Callable  # (draw, strategies) -> case, for Hypothesis
    reference: Callable  # (*args as tensors) -> output(s): the library's computation of the forward
    outputs: tuple = ("out",)  # names of forward's outputs, for the reports
    random: bool = False  # forward draws random numbers (dropout): the checker reseeds before each
    expanded: Callable = None  # case -> {argument: the shape it is broadcast to inside the op}
    factors: Callable = None  # case -> [Factor]
    suspects: tuple = ()
    large_case: Callable = None  # () -> case with large inputs, for the float32 probe
    large_case_text: str = ""  # "logits of about 100"
    unstable_explanation: str = ""  # what usually makes this backward fail in float32
    edge: Callable = None  # case -> what is special about a failing random case ("repeated ids")
    mistakes: tuple = ()
    edge_cases: Callable = None  # () -> [case]: fixed cases with the edges the example lacks (repeated ids, ...)
    track: str = "backward"  # the track it belongs to (see TRACKS); a teacher's exercises may name their own
    points: float = 1.0  # its weight in a grade (--format json, gradescope)

    @property
    def label(self):
        """The exercise's number and name: `01_add`."""
        return f"{self.number:02d}_{self.name}"

    @property
    def file_name(self):
        """The file `exercises start` writes for it: `01_add.py`."""
        return f"{self.label}.py"

    @property
    def class_name(self):
        """The name of the Function class the learner completes."""
        return self.function.__name__

    # --- sources -------------------------------------------------------------------------

    def class_source(self, solution):
        """The Function's source: the solution, or the skeleton (backward raises NotImplementedError)."""
        return piece_source(self.function, self.name, solution, (self.todo,), SKELETON_RAISE)

    def file_source(self, solution=False, course=None):
        """A learner's file: the statement and shapes, the imports, the class.

        course: the folder of a teacher's exercises these come from (the commands in the file say it).
        """
        shapes = ["", "Shapes:"] + ["    " + line for line in self.shapes.splitlines()]
        return file_text(self, shapes, IMPORTS, self.class_source(solution), solution, course)

    def markdown(self):
        """The statement as a notebook's markdown cell."""
        return (f"## Exercise {self.number:02d}: {self.title}\n\n{self.statement}\n\n```\n{self.shapes}\n```\n\n"
                f"Stuck? `exercises.hint(\"{self.name}\")` prints a hint.")

    def accepts(self, value):
        """Whether what a learner's file defines under class_name can be this exercise's Function."""
        return isinstance(value, type) and issubclass(value, autograd.Function)

    def check(self, function, examples=None, seed=None):
        """Check a learner's Function: a checker.Result (see checker.check)."""
        return checker.check(self, function, checker.EXAMPLES if examples is None else examples,
                             seed=checker.SEARCH_SEED if seed is None else seed)

    def make(self, backward):
        """The Function with another backward (a learner's or a planted mistake)."""
        return type(self.class_name, (self.function,), {"backward": staticmethod(backward)})

    def describe_case(self, case):
        """A case as text, for the reports."""
        return checker.format_case(case, self.args)

    def fixed_cases(self):
        """The example, then the edge cases: what the checker tries before any random case."""
        return [self.example()] + (list(self.edge_cases()) if self.edge_cases else [])

    # --- inputs -----------------------------------------------------------------------------

    def inputs(self, case, dtype):
        """The arguments of forward for a case: differentiable arguments as fresh leaves of `dtype`."""
        values = []
        for name in self.args:
            value = case[name]
            if isinstance(value, np.ndarray):
                if name in self.grads:
                    value = functions.tensor(value, dtype=dtype, requires_grad=True)
                else:
                    value = functions.tensor(value)
            values.append(value)
        return tuple(values)


def piece_source(piece, name, solution, todos, skeleton_raise):
    """The source of a class or function whose solution sits below `# --- solution ---` lines.

    Each marker's block runs to the end of the function it is in. The solution drops the markers;
    the skeleton replaces each block with a comment saying what to write (todos, one per marker,
    the last one repeated) and a `raise NotImplementedError`, so that skeleton and solution cannot
    drift apart.
    """
    lines = textwrap.dedent(inspect.getsource(piece)).rstrip("\n").splitlines()
    marks = [i for i, line in enumerate(lines) if line.strip() == SOLUTION_MARKER]
    if not marks:
        raise RuntimeError(f"exercise {name}: its code needs a {SOLUTION_MARKER!r} line above the solution")
    if solution:
        return "\n".join(line for i, line in enumerate(lines) if i not in marks) + "\n"
    out, start = [], 0
    for k, mark in enumerate(marks):
        indent = lines[mark][: len(lines[mark]) - len(lines[mark].lstrip())]
        end = mark + 1
        while end < len(lines) and (not lines[end].strip() or lines[end].startswith(indent)):
            end += 1
        while end > mark + 1 and not lines[end - 1].strip():  # the blank lines after the block stay
            end -= 1
        todo = todos[min(k, len(todos) - 1)]
        out += lines[start:mark] + [f"{indent}# your code: {todo}", f"{indent}{skeleton_raise}"]
        start = end
    return "\n".join(out + lines[start:]) + "\n"


def file_text(exercise, middle, imports, code, solution, course=None, what="the backward"):
    """A learner's file: a docstring (title, statement, what else the exercise says, how to check
    it), the imports, the code."""
    # the course's folder in full, so that the commands work from wherever the learner runs them
    folder = shlex.quote(str(pathlib.Path(course).resolve())) if course else None
    where = f" --course {folder}" if course else ""
    of = f"the course in {folder}" if course else f"tinyattn's {TRACK_TITLES.get(exercise.track, 'exercises')}"
    header = [f"Exercise {exercise.number:02d} of {of}: {exercise.title}", ""]
    header += textwrap.wrap(exercise.statement, 96)
    header += middle
    if solution:
        header += ["", "This is the reference solution."]
    else:
        header += ["", f"Write {what} below, then check it, from this file's folder:",
                   f"    tinyattn exercises check . {exercise.name}{where}",
                   f"A hint, if you want one: tinyattn exercises hint {exercise.name}{where}"]
    docstring = '"""' + "\n".join(header) + '\n"""\n'
    return docstring + "\n" + imports + "\n\n" + code


# the tracks of tinyattn's own exercises, in order: name -> what they are
TRACKS = {
    "backward": "the backward of each op of attention, as a Function",
    "engine": "the parts of an autograd engine, on a small engine",
    "layer": "manual backprop: a whole layer's backward, every intermediate by hand",
}
# name -> what the file headers call them
TRACK_TITLES = {
    "backward": "gradient-check exercises",
    "engine": "engine exercises",
    "layer": "manual-backprop exercises",
}


def shapes_of(case):
    return {name: tuple(value.shape) for name, value in case.items() if isinstance(value, np.ndarray)}
