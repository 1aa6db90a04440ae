"""What the engine track's checks share: the graphs they run on, the comparison of the small
engine's gradients (with a learner's part in it) against tinyattn's own on the same graph, and the
plain data a probe notes of what the learner's part did (see task.py: the probe runs beside the
learner's code, the verdict in another process)."""

import types

import numpy as np

from . import engine
from .engine import Recipe

IMPORTS = """\
import numpy as np

from tinyattn.exercises.engine import BackwardError, Node, Var, grad_mode
"""

# the example every engine exercise starts with: x is used three times, v1 twice (a diamond), y is
# broadcast along the rows, and z needs no gradient
EXAMPLE = Recipe(
    leaves=(("x", (3, 3), True), ("y", (3,), True), ("z", (3, 1), False)),
    steps=(("mul", (0, 1), None),      # v1 = x * y
           ("tanh", (3,), None),       # v2 = v1.tanh()
           ("mul", (3, 4), None),      # v3 = v1 * v2
           ("sub", (5, 2), None),      # v4 = v3 - z
           ("sum", (6,), 0),           # v5 = v4.sum(0, keepdim=True)
           ("add", (7, 0), None)),     # v6 = v5 + x
    seed=18)

# a root that uses one value twice directly (x + x), and a chain: the smallest graphs with reuse
TWICE = Recipe(leaves=(("x", (2, 2), True),),
               steps=(("add", (0, 0), None), ("tanh", (1,), None), ("mul", (2, 0), None)), seed=3)


def example():
    return EXAMPLE


def describe(recipe):
    return recipe.describe()


def graph_nodes(root):
    """Every node reachable from `root`, and {node: the nodes that use its output}."""
    nodes, consumers, stack = [root], {root: []}, [root]
    while stack:
        node = stack.pop()
        for parent in node.inputs():
            if parent not in consumers:
                consumers[parent] = []
                nodes.append(parent)
                stack.append(parent)
            consumers[parent].append(node)
    return nodes, consumers


def names(nodes):
    return ", ".join(getattr(node, "name", repr(node)) for node in nodes)


def leaf_differences(recipe, leaves, times=1):
    """Lines that say which leaves' .grad differ from `times` tinyattn's gradient; [] if none."""
    expected = engine.tinyattn_grads(recipe)
    lines = []
    for leaf in leaves:
        right = expected[leaf.name]
        right = None if right is None else times * right
        mine = leaf.grad
        if right is None and mine is None:
            continue
        if right is None:
            lines.append(f"{leaf.name}.grad: tinyattn gives none ({leaf.name} needs no gradient), yours "
                         f"{_short(mine)}")
        elif mine is None:
            lines.append(f"{leaf.name}.grad: tinyattn gives {_short(right)}, yours none")
        elif np.shape(mine) != right.shape:
            lines.append(f"{leaf.name}.grad: shape {list(np.shape(mine))}, tinyattn's {list(right.shape)}")
        elif not np.allclose(mine, right, rtol=1e-7, atol=1e-9):
            lines.append(f"{leaf.name}.grad: tinyattn gives {_short(right)}, yours {_short(mine)}")
    return lines


def leaf_grads(leaves):
    """{leaf name: its .grad as a float64 array, or None}: what a probe sends back of a backward."""
    return {leaf.name: None if leaf.grad is None else plain(leaf.grad) for leaf in leaves}


def received_leaves(recipe, grads):
    """The leaves, as leaf_differences reads them, with the .grad a probe noted."""
    grads = grads if isinstance(grads, dict) else {}
    return [types.SimpleNamespace(name=name, grad=_array_or_text(grads.get(name))) for name, _, _ in recipe.leaves]


def plain(value):
    """A learner's value as data: None, a float64 array, or {"type": its type's name}."""
    if value is None:
        return None
    try:
        return np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        return {"type": type(value).__name__}


def _array_or_text(value):
    if isinstance(value, dict):
        return f"a {value.get('type')}"
    return value


def _short(array):
    array = np.asarray(array)
    text = np.array2string(array, separator=", ", threshold=6, edgeitems=2, max_line_width=10_000,
                           formatter={"float_kind": lambda v: f"{v:.4g}"})
    return " ".join(text.split()).replace("[ ", "[")


def random_case(draw, s):
    return engine.recipe_strategy(draw, s)
