"""Exercise 21, the engine track: saving tensors for backward, and freeing them once it has run."""

import gc
import weakref

import numpy as np

from . import engine
from .engine import BackwardError
from .engine_checks import IMPORTS, describe, example, leaf_differences, leaf_grads, random_case, received_leaves
from .exercise import Mistake
from .task import Task, split_judge, wrong


class Saved:
    """What one node keeps for its backward: forward saves, backward gets, the engine frees."""

    def __init__(self, name):
        self.name = name  # the node's name, for the error message
        self.values = ()
        self.freed = False

    def save(self, *values):
        """Keep `values` (arrays, or None) for backward: ctx.save_for_backward(...) calls this."""
        # --- solution ---
        self.values = values

    def get(self):
        """The saved values, as a tuple: ctx.saved_tensors calls this. Once they have been freed,
        raise BackwardError with a message that says what happened and what to do."""
        # --- solution ---
        if self.freed:
            raise BackwardError(f"{self.name}: trying to backward through the graph a second time (its saved "
                                "values were freed). Pass retain_graph=True to the first backward() if you "
                                "need to.")
        return self.values

    def free(self, retain_graph):
        """The engine calls this once the node's backward has run: let the values go (their memory is
        given back), unless retain_graph is True (another backward will need them)."""
        # --- solution ---
        if not retain_graph:
            self.values = ()
            self.freed = True


# --- mistakes learners make -------------------------------------------------------------------


class NeverFrees(Saved):
    def free(self, retain_graph):
        pass  # the graph's arrays stay alive as long as the graph, and a second backward runs silently


class IgnoresRetainGraph(Saved):
    def free(self, retain_graph):
        self.values = ()
        self.freed = True


class SilentAfterFree(Saved):
    def get(self):
        return self.values  # () once freed: the op's backward fails with an unpacking error


class KeepsOneValue(Saved):
    def save(self, *values):
        self.values = values[:1]


# ----------------------------------------------------------------------------------------------


def probe(piece, recipe, steps):
    """What the learner's Saved does, step by step: get() after save(a, None, b); get() after
    free(retain_graph=True); whether a saved array is still held after free(retain_graph=False), and
    what get() does then; then the whole engine, backward three times and a fourth."""
    a, b = np.arange(3.0), np.ones(2)

    def saved_and_got():
        saved = piece("probe")
        saved.save(a, None, b)
        return _as_data(saved.get(), {"a": a, "b": b})

    def kept_with_retain_graph():
        saved = piece("probe")
        saved.save(np.arange(3.0))
        saved.free(True)
        try:
            return _as_data(saved.get())
        except BackwardError:
            return {"raised": "BackwardError"}

    freed = []

    def let_go():
        saved = piece("probe")
        array = np.arange(3.0)
        alive = weakref.ref(array)
        saved.save(array)
        del array
        saved.free(False)
        if alive() is not None:
            gc.collect()  # a reference cycle may hold it until the collector runs
        freed.append(saved)
        return {"held": alive() is not None}

    def get_after_free():
        try:
            return _as_data(freed[0].get())
        except BackwardError:
            return {"raised": "BackwardError"}
        except Exception as error:  # the learner's get() raised, but not the engine's error
            return {"raised": type(error).__name__}

    def whole_engine():  # twice with retain_graph=True, a third time without, then a fourth must fail
        with engine.using(Saved=piece):
            leaves, values = engine.build(recipe)
            for _ in range(2):
                values[-1].backward(retain_graph=True)
            values[-1].backward()
            try:
                values[-1].backward()
            except BackwardError:
                fourth = False
            else:
                fourth = True
        return {"fourth ran": fourth, "grads": leaf_grads(leaves)}

    for name, step in (("get", saved_and_got), ("retain", kept_with_retain_graph), ("free", let_go),
                       ("after free", get_after_free), ("engine", whole_engine)):
        steps.run(name, step)


def _as_data(value, named=None):
    """A value get() returned, as data: None, {"tuple": [None, or {"array", "shape", "is"}...]}
    ("is": which of `named` the item is), or {"type": ...}."""
    if value is None:
        return None
    if not isinstance(value, tuple):
        return {"type": type(value).__name__}
    items = []
    for item in value:
        if item is None:
            items.append(None)
            continue
        try:
            shape = [int(n) for n in np.shape(item)]
        except Exception:  # something np.shape cannot read: no shape
            shape = []
        same = next((name for name, array in (named or {}).items() if item is array), None)
        items.append({"array": isinstance(item, np.ndarray), "shape": shape, "is": same})
    return {"tuple": items}


def verdict(recipe, steps):
    got = steps["get"]
    items = got.get("tuple") if isinstance(got, dict) else None
    if not (isinstance(items, list) and len(items) == 3 and _is(items[0], "a") and items[1] is None
            and _is(items[2], "b")):
        raise wrong("saved-wrong", "get() does not give back what was saved",
                    "get() returns what save(...) was given, as a tuple, the same arrays in the same order "
                    "(None included): Mul saves two arrays and unpacks both.",
                    [f"save(a, None, b) then get(): {_text(got)}"])
    kept = steps["retain"]
    items = kept.get("tuple") if isinstance(kept, dict) else None
    if not (isinstance(items, list) and len(items) == 1 and isinstance(items[0], dict) and items[0].get("array")):
        raise wrong("freed-despite-retain-graph", "frees with retain_graph=True",
                    "With retain_graph=True the saved values must stay, for the next backward: free only when "
                    "retain_graph is False.", [f"save(a), free(retain_graph=True), then get(): {_text(kept)}"])
    if steps["free"].get("held") is not False:
        raise wrong("never-freed", "the saved values are never freed",
                    "After backward (retain_graph=False) a node must let its saved arrays go: otherwise every "
                    "graph keeps all of them alive, and a second backward runs silently where it must fail.",
                    ["save(a), free(retain_graph=False): a is still held"])
    again = steps["after free"]
    raised = again.get("raised") if isinstance(again, dict) else None
    if raised is not None and raised != "BackwardError":
        raise wrong("no-clear-error", "no clear error after freeing",
                    "get() after free must raise BackwardError (the engine's error for a graph walked a second "
                    "time, which says that retain_graph=True keeps it), not another exception.",
                    [f"save(a), free(retain_graph=False), then get(): raises {raised}"])
    if raised is None:
        raise wrong("no-clear-error", "no clear error after freeing",
                    "get() after free must raise BackwardError, saying that the graph is walked a second time "
                    "and that retain_graph=True keeps it: otherwise the op's backward fails with an error that "
                    "says nothing of it.", [f"save(a), free(retain_graph=False), then get(): {_text(again)}"])
    ran = steps["engine"]
    fourth = ("a fourth backward, after one without retain_graph, ran instead of raising BackwardError"
              if ran["fourth ran"] is not False else None)
    lines = ["three backwards: " + line
             for line in leaf_differences(recipe, received_leaves(recipe, ran["grads"]), times=3)]
    if fourth or lines:
        raise wrong("no-pattern", "disagrees with tinyattn's engine",
                    "Your Saved passes the checks of its own, but the engine misbehaves with it.",
                    ([fourth] if fourth else []) + lines)


def _is(item, name):
    return isinstance(item, dict) and item.get("is") == name


def _text(value):
    """What get() gave, as the probe noted it (see _as_data)."""
    if value is None:
        return "None"
    if isinstance(value, dict) and isinstance(value.get("tuple"), list):
        items = value["tuple"]
        return "(" + ", ".join("None" if v is None else f"array {v.get('shape') if isinstance(v, dict) else '?'}"
                               for v in items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, dict) and isinstance(value.get("raised"), str):
        return f"raises {value['raised']}"
    return f"a {value.get('type') if isinstance(value, dict) else '?'}"


EXERCISE = Task(
    number=21,
    name="saved",
    title="saving tensors for backward, and freeing them",
    track="engine",
    piece=Saved,
    statement=(
        "Every node has a Saved: forward keeps what backward needs (ctx.save_for_backward(a, b) calls "
        "save(a, b)), backward takes it back (ctx.saved_tensors calls get()), and once the node's backward "
        "has run the engine calls free(retain_graph). Freeing gives the memory back as soon as possible; "
        "retain_graph=True keeps the values for another backward; and a backward through freed values "
        "must fail with a BackwardError that says so, as tinyattn's and PyTorch's do."
    ),
    signature=(
        "class Saved: save(*values) -> None; get() -> tuple; free(retain_graph: bool) -> None\n"
        "  get() after a free(False) raises BackwardError"
    ),
    hint=(
        "Keep the values and a flag: free(False) drops the values and sets the flag; get() raises "
        "BackwardError when the flag is set. See docs/internals.md, step 2 (save_for_backward and "
        "saved_tensors) and step 4 (the saved arrays are dropped once a node has run)."
    ),
    todo=("keep the values", "return the values, or raise BackwardError once freed",
          "drop the values, unless retain_graph"),
    judge=split_judge(probe, verdict),
    probe=probe,
    verdict=verdict,
    example=example,
    random_case=random_case,
    describe=describe,
    imports=IMPORTS,
    mistakes=(
        Mistake(NeverFrees, "never-freed"),
        Mistake(IgnoresRetainGraph, "freed-despite-retain-graph"),
        Mistake(SilentAfterFree, "no-clear-error"),
        Mistake(KeepsOneValue, "saved-wrong"),
    ),
)
