"""Exercise 19, the engine track: a node used by several ops gets the sum of their gradients."""

import numpy as np

from . import engine
from .engine import Recipe
from .engine_checks import (IMPORTS, describe, example, leaf_differences, leaf_grads, plain, random_case,
                            received_leaves)
from .exercise import Mistake
from .task import Task, split_judge, wrong


def accumulate(slots, index, grad):
    """Add `grad` into slots[index], the gradient of output `index` of a node or a leaf so far
    (None until the first one arrives)."""
    # --- solution ---
    if slots[index] is None:
        slots[index] = grad
    else:
        # a new array, never `+=`: the arrays may be held elsewhere too (Add sends one array to both
        # its inputs), and changing one in place would change the other's gradient
        slots[index] = slots[index] + grad


# --- mistakes learners make -------------------------------------------------------------------


def assigned(slots, index, grad):
    slots[index] = grad  # the last consumer's gradient wins


def first_only(slots, index, grad):
    if slots[index] is None:
        slots[index] = grad


def in_place(slots, index, grad):
    if slots[index] is None:
        slots[index] = grad
    else:
        slots[index] += grad  # changes the array the slot holds, which another slot may hold too


# ----------------------------------------------------------------------------------------------

# x + y sends one array to both x and y; x's other use (tanh) adds into x's slot afterwards
SHARED = Recipe(leaves=(("x", (2, 2), True), ("y", (2, 2), True)),
                steps=(("tanh", (0,), None), ("add", (0, 1), None), ("mul", (2, 3), None)), seed=19)


def edge_cases():
    return [SHARED]


def probe(piece, recipe, steps):
    """The leaves' gradients with the learner's accumulate in the engine; then two gradients sent,
    one after the other, to slots[1] of [None, None]: the slots and the two arrays afterwards."""

    def whole_engine():
        with engine.using(accumulate=piece):
            leaves, values = engine.build(recipe)
            values[-1].backward()
        return leaf_grads(leaves)

    def two_gradients():
        # (a node with two outputs, tinyattn's exp_log say, has two slots: the gradient goes to slots[index])
        first, second = np.array([1.0, 2.0]), np.array([10.0, 20.0])
        slots = [None, None]
        piece(slots, 1, first)
        piece(slots, 1, second)
        return {"slots": [plain(slot) for slot in slots], "first": first.copy(), "second": second.copy()}

    steps.run("engine", whole_engine)
    steps.run("slots", two_gradients)


def verdict(recipe, steps):
    leaves = received_leaves(recipe, steps["engine"])
    differences = ["with your accumulate: " + line for line in leaf_differences(recipe, leaves)]
    graph = []
    # what it does to two gradients, one after the other
    noted = steps["slots"]
    other, done = [_array_or_text(slot) for slot in noted["slots"]]
    first, second = noted["first"], noted["second"]
    probe = [f"with slots = [None, None], accumulate(slots, 1, a) then accumulate(slots, 1, b), with a = [1, 2] "
             f"and b = [10, 20]: slots[1] = {_text(done)}, a = {_text(first)} afterwards"]
    if other is not None:
        raise wrong("wrong-slot", "the gradient put into the wrong slot",
                    "slots has one entry per output of the node: put grad into slots[index], the others stay.",
                    probe + [f"slots[0] = {_text(other)}"])
    if not np.array_equal(first, [1.0, 2.0]) or not np.array_equal(second, [10.0, 20.0]):
        raise wrong("in-place", "changes a gradient in place",
                    "The first gradient that arrived was changed in place (+=): it can be the same array as "
                    "another input's gradient (x + y sends one array to both), which then changes too. Make a "
                    "new array: slots[index] = slots[index] + grad.", probe + graph + differences)
    if done is not None and np.shape(done) == (2,) and np.array_equal(done, second):
        raise wrong("assigned", "= where += is needed",
                    "A node (or leaf) used by several ops gets the sum of their gradients; yours keeps the "
                    "last one that arrived: add the new gradient to what is there.", probe + graph + differences)
    if done is not None and np.shape(done) == (2,) and np.array_equal(done, [1.0, 2.0]):
        raise wrong("first-only", "keeps only the first gradient",
                    "A node (or leaf) used by several ops gets the sum of their gradients; yours keeps the "
                    "first one and drops the rest: add each new gradient to what is there.",
                    probe + graph + differences)
    if done is None or np.shape(done) != (2,) or not np.allclose(done, [11.0, 22.0]):
        raise wrong("no-pattern", "does not add the gradients up",
                    "After two gradients, the slot must hold their sum.", probe + graph + differences)
    if differences:
        raise wrong("no-pattern", "disagrees with tinyattn's engine",
                    "Two gradients add up, but the engine gives other gradients with your accumulate.",
                    graph + differences)


def _text(value):
    if isinstance(value, str):
        return value
    return "None" if value is None else np.array2string(np.asarray(value), separator=", ")


def _array_or_text(value):
    return f"a {value.get('type')}" if isinstance(value, dict) else value


EXERCISE = Task(
    number=19,
    name="accumulate",
    title="gradient accumulation (a node with several consumers)",
    track="engine",
    piece=accumulate,
    statement=(
        "During backward the engine keeps, for every node and leaf, a list `slots` with the gradient of its "
        "output so far (None until one arrives). Each time a consumer's backward sends a gradient along an "
        "edge, the engine calls accumulate(slots, index, grad). A value used by several ops (x in x * x + "
        "x) must get the sum of all their gradients. The arrays you get may be held elsewhere too: never "
        "change them in place."
    ),
    signature=(
        "accumulate(slots: list, index: int, grad: array) -> None\n"
        "  afterwards slots[index] holds the sum of every gradient sent to it"
    ),
    hint=(
        "The first gradient can go into the slot as it is; a later one is added, into a new array (a + b, "
        "not a += b: x + y's backward sends one array to both x and y). See docs/internals.md, step 4 "
        "(a tensor used twice)."
    ),
    todo="put grad into slots[index], or add it to what is there",
    judge=split_judge(probe, verdict),
    probe=probe,
    verdict=verdict,
    example=example,
    random_case=random_case,
    describe=describe,
    imports=IMPORTS,
    edge_cases=edge_cases,
    mistakes=(
        Mistake(assigned, "assigned"),
        Mistake(first_only, "first-only"),
        Mistake(in_place, "in-place"),
    ),
)
