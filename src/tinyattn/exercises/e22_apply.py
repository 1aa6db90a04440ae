"""Exercise 22, the engine track: a tiny Function.apply, the bookkeeping of an op's node."""

import numpy as np

from . import engine
from .engine import Function, Node, Var, grad_mode, no_grad
from .engine_checks import IMPORTS, describe, example, leaf_differences, random_case
from .exercise import Mistake
from .task import Task, wrong


def apply(function, *inputs):
    """Run `function`'s forward on the inputs and record the op in the graph; return the output."""
    node = Node(function)
    # --- solution ---
    needs = tuple(isinstance(x, Var) and x.requires_grad for x in inputs)
    record = grad_mode.enabled and any(needs)
    node.needs_input_grad = needs if record else (False,) * len(inputs)  # known before forward runs
    arrays = [x.array if isinstance(x, Var) else x for x in inputs]  # forward works on arrays
    out = Var(function.forward(node, *arrays))
    if record:
        # where each input's gradient goes: the node that made it, or the leaf itself
        node.edges = tuple(None if not need else (x.grad_fn, x.output_nr) if x.grad_fn is not None else (x, 0)
                           for x, need in zip(inputs, needs))
        out.grad_fn, out.requires_grad = node, True
    return out


# --- mistakes learners make -------------------------------------------------------------------


def records_under_no_grad(function, *inputs):
    node = Node(function)
    needs = tuple(isinstance(x, Var) and x.requires_grad for x in inputs)
    record = any(needs)  # grad mode forgotten
    node.needs_input_grad = needs if record else (False,) * len(inputs)
    out = Var(function.forward(node, *[x.array if isinstance(x, Var) else x for x in inputs]))
    if record:
        node.edges = tuple(None if not need else (x.grad_fn, x.output_nr) if x.grad_fn is not None else (x, 0)
                           for x, need in zip(inputs, needs))
        out.grad_fn, out.requires_grad = node, True
    return out


def edges_for_constants(function, *inputs):
    node = Node(function)
    needs = tuple(isinstance(x, Var) and x.requires_grad for x in inputs)
    record = grad_mode.enabled and any(needs)
    node.needs_input_grad = tuple(isinstance(x, Var) for x in inputs) if record else (False,) * len(inputs)
    out = Var(function.forward(node, *[x.array if isinstance(x, Var) else x for x in inputs]))
    if record:  # an edge for every tensor, the ones that need no gradient too
        node.edges = tuple(None if not isinstance(x, Var) else (x.grad_fn, x.output_nr) if x.grad_fn is not None
                           else (x, 0) for x in inputs)
        out.grad_fn, out.requires_grad = node, True
    return out


def edge_to_the_tensor(function, *inputs):
    node = Node(function)
    needs = tuple(isinstance(x, Var) and x.requires_grad for x in inputs)
    record = grad_mode.enabled and any(needs)
    node.needs_input_grad = needs if record else (False,) * len(inputs)
    out = Var(function.forward(node, *[x.array if isinstance(x, Var) else x for x in inputs]))
    if record:  # (x, 0) for every input, the ones an op made too: their gradient stops there
        node.edges = tuple((x, 0) if need else None for x, need in zip(inputs, needs))
        out.grad_fn, out.requires_grad = node, True
    return out


def output_not_marked(function, *inputs):
    node = Node(function)
    needs = tuple(isinstance(x, Var) and x.requires_grad for x in inputs)
    record = grad_mode.enabled and any(needs)
    node.needs_input_grad = needs if record else (False,) * len(inputs)
    out = Var(function.forward(node, *[x.array if isinstance(x, Var) else x for x in inputs]))
    if record:
        node.edges = tuple(None if not need else (x.grad_fn, x.output_nr) if x.grad_fn is not None else (x, 0)
                           for x, need in zip(inputs, needs))
        out.grad_fn = node  # requires_grad left False: the next op sees no input that needs a gradient
    return out


def needs_known_too_late(function, *inputs):
    node = Node(function)
    needs = tuple(isinstance(x, Var) and x.requires_grad for x in inputs)
    record = grad_mode.enabled and any(needs)
    out = Var(function.forward(node, *[x.array if isinstance(x, Var) else x for x in inputs]))
    node.needs_input_grad = needs if record else (False,) * len(inputs)  # after forward: too late
    if record:
        node.edges = tuple(None if not need else (x.grad_fn, x.output_nr) if x.grad_fn is not None else (x, 0)
                           for x, need in zip(inputs, needs))
        out.grad_fn, out.requires_grad = node, True
    return out


def forward_on_tensors(function, *inputs):
    node = Node(function)
    needs = tuple(isinstance(x, Var) and x.requires_grad for x in inputs)
    record = grad_mode.enabled and any(needs)
    node.needs_input_grad = needs if record else (False,) * len(inputs)
    out = Var(function.forward(node, *inputs))  # Vars, not their arrays
    if record:
        node.edges = tuple(None if not need else (x.grad_fn, x.output_nr) if x.grad_fn is not None else (x, 0)
                           for x, need in zip(inputs, needs))
        out.grad_fn, out.requires_grad = node, True
    return out


# ----------------------------------------------------------------------------------------------


class _Probe(Function):
    """An op that notes what its forward was given."""

    got = []
    needs = None  # ctx.needs_input_grad as forward saw it

    @staticmethod
    def forward(ctx, a, b, dim):
        _Probe.got = [type(a), type(b), dim]
        _Probe.needs = tuple(getattr(ctx, "needs_input_grad", ()))
        return np.zeros((2, 2))

    @staticmethod
    def backward(ctx, grad):
        return grad, None, None


def judge(piece, recipe):
    x = Var(np.ones((2, 2)), requires_grad=True, name="x")
    c = Var(np.full((2, 2), 3.0), name="c")
    _Probe.got = []
    try:
        out = piece(_Probe, x, c, 1)
    except RecursionError:
        out = None
    if _Probe.got[:2] != [np.ndarray, np.ndarray] or _Probe.got[2:] != [1]:
        given = ", ".join(getattr(t, "__name__", repr(t)) for t in _Probe.got) or "nothing (it recursed)"
        raise wrong("forward-gets-tensors", "forward given Vars, not arrays",
                    "forward works on arrays: pass x.array for a Var, and other arguments (a dim) as they are.",
                    [f"apply(op, x, c, 1) called forward with: {given}"])
    if not isinstance(out, Var):
        raise wrong("bad-return", "returns the wrong thing",
                    f"apply returns the output as a Var; yours returns a {type(out).__name__}.")
    if len(_Probe.needs) == 3 and _Probe.needs[0] and _Probe.needs[1]:
        raise wrong("edges-for-constants", "a gradient sent to a constant",
                    "An input that does not require grad gets False in needs_input_grad and None for its edge: "
                    "no gradient is computed or sent for it.",
                    [f"apply(op, x, c, 1), c not requiring grad: forward saw needs_input_grad = {_Probe.needs}"])
    if _Probe.needs != (True, False, False):
        raise wrong("needs-input-grad", "needs_input_grad not known to forward",
                    "Set node.needs_input_grad before calling forward, one entry per input (True for a Var that "
                    "requires grad): forward reads it to save only what the wanted gradients need.",
                    [f"apply(op, x, c, 1), x requiring grad: forward saw needs_input_grad = {_Probe.needs}"])
    problems = []
    with no_grad():
        quiet = piece(engine.Mul, x, c)
    if quiet.grad_fn is not None or quiet.requires_grad:
        raise wrong("records-under-no-grad", "records a graph under no_grad()",
                    "Under no_grad() (grad_mode.enabled is False) nothing is recorded: the output has no "
                    "grad_fn and does not require grad.", ["with no_grad(): apply(Mul, x, c) has a grad_fn"])
    constants = piece(engine.Mul, c, c)
    if constants.grad_fn is not None or constants.requires_grad:
        raise wrong("records-for-constants", "records an op that no gradient needs",
                    "When no input requires grad, there is nothing to differentiate: record no node.",
                    ["apply(Mul, c, c), c not requiring grad, has a grad_fn"])
    with engine.using(apply=piece):
        leaves, values = engine.build(recipe)
    for k, (op, inputs, _) in enumerate(recipe.steps):
        value, args = values[len(recipe.leaves) + k], [values[i] for i in inputs]
        line = f"{value.name} = {recipe.lines()[k].split(' = ', 1)[1]}"
        if not any(a.requires_grad for a in args):
            continue
        node = value.grad_fn
        if node is None or not value.requires_grad:
            raise wrong("output-not-recorded", "the output is not part of the graph",
                        "When an input requires grad, the output gets the node as grad_fn and requires_grad = "
                        "True, or the next op sees nothing to differentiate and the graph stops there.",
                        [f"{line}: grad_fn {node!r}, requires_grad {value.requires_grad}"])
        for a, edge, need in zip(args, node.edges, node.needs_input_grad):
            if not a.requires_grad and (edge is not None or need):
                problems.append(f"{line}: {a.name} needs no gradient, yet has edge {_edge(edge)}"
                                f" and needs_input_grad {need}")
                raise wrong("edges-for-constants", "a gradient sent to a constant",
                            "An input that does not require grad gets None for its edge and False in "
                            "needs_input_grad: no gradient is computed or sent for it.", problems)
            if a.requires_grad and a.grad_fn is not None and edge != (a.grad_fn, a.output_nr):
                raise wrong("edge-to-the-tensor", "an edge to the tensor, not to the node that made it",
                            "For an input an op made, the edge is (x.grad_fn, x.output_nr): the gradient must "
                            "go on to that node; (x, 0) is for leaves only, and ends the walk there.",
                            [f"{line}: the edge for {a.name} is {_edge(edge)}"])
            if a.requires_grad and a.grad_fn is None and edge != (a, 0):
                raise wrong("edge-to-the-tensor", "a leaf's edge is wrong",
                            "For a leaf that requires grad, the edge is (x, 0): its gradient goes into x.grad.",
                            [f"{line}: the edge for {a.name} is {_edge(edge)}"])
    with engine.using(apply=piece):
        values[-1].backward()
    differences = leaf_differences(recipe, leaves)
    if differences:
        raise wrong("no-pattern", "disagrees with tinyattn's engine",
                    "The nodes look right, but backward gives other gradients through them.",
                    differences)


def _edge(edge):
    if edge is None:
        return "None"
    target, index = edge
    return f"({target.name if isinstance(target, Node) else getattr(target, 'name', None) or 'a Var'}, {index})"


EXERCISE = Task(
    number=22,
    name="apply",
    title="a tiny Function.apply: recording an op",
    track="engine",
    piece=apply,
    statement=(
        "Every op runs through apply(function, *inputs): it makes the node (given), decides whether to "
        "record (grad mode on, and some input requires grad), sets node.needs_input_grad before forward runs "
        "(forward saves only what the wanted gradients need), runs function.forward(node, *arrays) on the "
        "inputs' arrays (other arguments, a dim, as they are), and, when recording, sets node.edges (one per "
        "input: (x.grad_fn, x.output_nr) for an input an op made, (x, 0) for a leaf that requires grad, None "
        "for the rest) and makes the node the output's grad_fn, with requires_grad = True."
    ),
    signature=(
        "apply(function, *inputs) -> Var\n"
        "  Var(array, requires_grad=False); x.array, x.grad_fn, x.output_nr, x.requires_grad;\n"
        "  node.needs_input_grad, node.edges; grad_mode.enabled"
    ),
    hint=(
        "Four steps: needs = which inputs are Vars that require grad; record = grad_mode.enabled and any of "
        "them; call forward with the arrays; when recording, set the edges and the output's grad_fn and "
        "requires_grad. See docs/internals.md, step 3 (Function.apply and the node)."
    ),
    todo="return the output Var (recorded in the graph when a gradient is wanted)",
    judge=judge,
    example=example,
    random_case=random_case,
    describe=describe,
    imports=IMPORTS,
    mistakes=(
        Mistake(records_under_no_grad, "records-under-no-grad"),
        Mistake(edges_for_constants, "edges-for-constants"),
        Mistake(edge_to_the_tensor, "edge-to-the-tensor"),
        Mistake(output_not_marked, "output-not-recorded"),
        Mistake(forward_on_tensors, "forward-gets-tensors"),
        Mistake(needs_known_too_late, "needs-input-grad"),
    ),
)
