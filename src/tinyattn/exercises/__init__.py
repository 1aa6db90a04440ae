"""Gradient-check exercises: write the backward of the ops attention is made of, and get told what
is wrong with it.

Each exercise is a `tinyattn.autograd.Function` with its forward given; you write `backward`. They
climb from x + y to the weight-split multi-head attention layer. From the command line:

    tinyattn exercises list               # the exercises
    tinyattn exercises start DIR          # copy the skeletons to DIR (never over your work)
    tinyattn exercises check DIR [NAME]   # pass/fail per exercise, and what the mistake is
    tinyattn exercises hint NAME

From Python (a notebook), on a class you wrote:

    from tinyattn import exercises
    exercises.check(Softmax)              # prints the report; returns a Result

The checker compares your Jacobian with central differences, names the usual mistakes (transposed,
sign flipped, off by a factor of 2 or 1/sqrt(d), a missing sum over broadcast dims, softmax without
its cross terms, a missing mask, ...), probes float32 with large inputs, and tries random shapes with
Hypothesis, reporting the smallest case that fails. The fixed cases alone (the example and each
exercise's edge cases: repeated ids, stretched size-1 dims, ignored targets) catch every mistake the
exercises plant; without Hypothesis the random cases do not run, and the report says so.
`tinyattn exercises start DIR --solutions` writes the reference solutions instead.
"""

from . import (e01_add, e02_mul, e03_sum, e04_mean, e05_matmul, e06_exp_log, e07_relu, e08_gelu, e09_softmax,
               e10_log_softmax, e11_cross_entropy, e12_layer_norm, e13_embedding, e14_dropout, e15_masked_fill,
               e16_causal_head, e17_multi_head_attention, e18_topological_order, e19_accumulate, e20_unbroadcast,
               e21_saved, e22_apply, e23_mlp_batchnorm)
from . import report
from .checker import EXAMPLES, Result
from .command import main
from .exercise import Exercise, Mistake

EXERCISES = tuple(module.EXERCISE for module in (
    e01_add, e02_mul, e03_sum, e04_mean, e05_matmul, e06_exp_log, e07_relu, e08_gelu, e09_softmax, e10_log_softmax,
    e11_cross_entropy, e12_layer_norm, e13_embedding, e14_dropout, e15_masked_fill, e16_causal_head,
    e17_multi_head_attention, e18_topological_order, e19_accumulate, e20_unbroadcast, e21_saved, e22_apply, e23_mlp_batchnorm))


def get(key):
    """An exercise by name ("softmax"), number (9, "9", "09") or file label ("09_softmax")."""
    text = str(key).strip().lower().removesuffix(".py")
    for exercise in EXERCISES:
        if text in (exercise.name, exercise.label, str(exercise.number), f"{exercise.number:02d}"):
            return exercise
    names = ", ".join(e.name for e in EXERCISES)
    raise KeyError(f"no exercise {key!r}: the exercises are {names}")


def solution(key):
    """The reference solution of an exercise: its Function class."""
    return get(key).function


def check(function, exercise=None, examples=EXAMPLES, verbose=True):
    """Check a Function you wrote for an exercise: print the report, return the Result.

    function: your class (its name says which exercise it is, or pass `exercise`).
    examples: how many random cases Hypothesis tries after the fixed cases (0: none).
    """
    from . import checker

    found = get(exercise) if exercise is not None else _by_class_name(function)
    result = checker.check(found, function, examples=examples)
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
    raise KeyError(f"no exercise has a class named {getattr(function, '__name__', function)!r} (they are {names}): "
                   "pass exercise='softmax' (its name)")


__all__ = ["EXERCISES", "Exercise", "Mistake", "Result", "check", "get", "hint", "main", "solution"]
