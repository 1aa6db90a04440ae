"""Exercises with a checker that says what the mistake is, in three tracks, and a teacher's own.

- the backward track (01-17): the backward of the ops attention is made of, each a
  `tinyattn.autograd.Function` with its forward given, from x + y to multi-head attention;
- the engine track (18-22): the parts of an autograd engine (`engine.py`, a small one on NumPy): the
  topological order of the backward walk, gradient accumulation, `unbroadcast`, saving and freeing
  tensors for backward, `apply`; each is plugged into the small engine and compared with tinyattn's
  own on random graphs;
- the manual-backprop track (23): an MLP with batch norm written op by op, the gradient of every
  intermediate by hand, compared with autograd's one by one.

From the command line:

    tinyattn exercises list                     # the exercises, track by track
    tinyattn exercises start DIR [--track T]    # copy the skeletons to DIR (never over your work)
    tinyattn exercises check DIR [NAME ...]     # pass/fail per exercise, and what the mistake is
    tinyattn exercises hint NAME
    tinyattn exercises check DIR --format gradescope --output results.json   # grades
    tinyattn exercises verify --course COURSE   # prove a teacher's exercises

From Python (a notebook), on a class or function you wrote:

    from tinyattn import exercises
    exercises.check(Softmax)              # prints the report; returns a Result

The checker of the backward track compares your Jacobian with central differences, names the usual
mistakes (transposed, sign flipped, off by a factor of 2 or 1/sqrt(d), a missing sum over broadcast
dims, softmax without its cross terms, a missing mask, ...), probes float32 with large inputs, and
tries random shapes with Hypothesis, reporting the smallest case that fails. The fixed cases alone
(the example and each exercise's edge cases: repeated ids, stretched size-1 dims, ignored targets)
catch every mistake the exercises plant; without Hypothesis the random cases do not run, and the
report says so. `tinyattn exercises start DIR --solutions` writes the reference solutions instead.
"""

from . import report
from .catalog import EXERCISES
from .checker import EXAMPLES, Result
from .command import main
from .course import Course, CourseError
from .course import load as load_course
from .course import verify
from .diagnosis import Finding
from .exercise import TRACKS, Exercise, Factor, Mistake, Suspect
from .task import Task, Wrong, wrong



def get(key):
    """An exercise by name ("softmax"), number (9, "9", "09") or file label ("09_softmax")."""
    return Course(EXERCISES).get(key)


def track(name):
    """The exercises of one track ("backward", "engine" or "layer"), in order."""
    if name not in TRACKS:
        raise KeyError(f"no track {name!r}: the tracks are {', '.join(TRACKS)}")
    return tuple(exercise for exercise in EXERCISES if exercise.track == name)


def solution(key):
    """The reference solution of an exercise: its Function class (the backward track), or its
    function or class (the others)."""
    exercise = get(key)
    return exercise.piece if isinstance(exercise, Task) else exercise.function


def check(function, exercise=None, examples=EXAMPLES, verbose=True):
    """Check a Function (or, for the engine and manual-backprop tracks, the function or class) you
    wrote for an exercise: print the report, return the Result.

    function: your class or function (its name says which exercise it is, or pass `exercise`).
    examples: how many random cases Hypothesis tries after the fixed cases (0: none).
    """
    found = get(exercise) if exercise is not None else _by_class_name(function)
    result = found.check(function, examples=examples)
    if verbose:
        print("\n".join(report.block(result)))
    return result


def hint(key):
    """Print the hint of an exercise (by name or number)."""
    exercise = get(key)
    print(f"Hint for {exercise.label}: {exercise.hint}")


def _by_class_name(function):
    for exercise in EXERCISES:
        if exercise.class_name == getattr(function, "__name__", None):
            return exercise
    names = ", ".join(e.class_name for e in EXERCISES)
    raise KeyError(f"no exercise has a class or function named {getattr(function, '__name__', function)!r} (they "
                   f"are {names}): pass exercise='softmax' (its name)")


__all__ = ["EXERCISES", "TRACKS", "Course", "CourseError", "Exercise", "Factor", "Finding", "Mistake", "Result",
           "Suspect", "Task", "Wrong", "check", "get", "hint", "load_course", "main", "solution", "track", "verify",
           "wrong"]
