"""Exercise 22, the engine track: a tiny Function.apply, the bookkeeping of an op's node."""

import numpy as np

from . import engine
from .engine import Function, Node, Var, grad_mode, no_grad
from .engine_checks import IMPORTS, describe, example, leaf_differences, leaf_grads, random_case, received_leaves
from .exercise import Mistake
from .task import Task, split_judge, wrong


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


def probe(piece, recipe, steps):
    """What the learner's apply does: with an op that notes what its forward gets; under no_grad();
    with constants only; on the recipe's graph (each value's node, edges and needs_input_grad, the
    nodes and leaves numbered as the recipe numbers its values); and the leaves' gradients."""
    x = Var(np.ones((2, 2)), requires_grad=True, name="x")
    c = Var(np.full((2, 2), 3.0), name="c")

    def probed():
        _Probe.got, _Probe.needs = [], None
        try:
            out = piece(_Probe, x, c, 1)
        except RecursionError:
            out = None
        got = list(_Probe.got)
        return {"types": [f"{getattr(t, '__module__', '')}.{getattr(t, '__qualname__', repr(t))}" for t in got[:2]],
                "given": ", ".join(getattr(t, "__name__", repr(t)) for t in got) or "nothing (it recursed)",
                "dim": [_plain(d) for d in got[2:]], "needs": [_plain(n) for n in (_Probe.needs or ())],
                "needs seen": _Probe.needs is not None, "out is a Var": isinstance(out, Var),
                "out type": type(out).__name__}

    def recorded(out):
        return {"grad_fn": out.grad_fn is not None, "requires_grad": bool(out.requires_grad)}

    def quiet():
        with no_grad():
            return recorded(piece(engine.Mul, x, c))

    graph = []

    def built():
        with engine.using(apply=piece):
            leaves, values = engine.build(recipe)
        graph.extend([leaves, values])
        return _graph_data(recipe, values)

    def backward():
        leaves, values = graph
        with engine.using(apply=piece):
            values[-1].backward()
        return leaf_grads(leaves)

    for name, step in (("probe", probed), ("no_grad", quiet), ("constants", lambda: recorded(piece(engine.Mul, c, c))),
                       ("graph", built), ("backward", backward)):
        steps.run(name, step)


def _plain(value):
    """A bool, int or float as it is; anything else as its repr."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return value.item() if isinstance(value, np.generic) else value
    return repr(value)[:100]


def _graph_data(recipe, values):
    """Each value as data: requires_grad, whether it has a grad_fn, its output_nr, its name; and for each
    step's value, its node: repr, edges ({"node": k} for the node that made values[k], {"leaf": k} for
    values[k] itself, {"other": ...}; with the index, and as text) and needs_input_grad."""
    number = {id(value.grad_fn): k for k, value in enumerate(values) if value.grad_fn is not None}
    var_number = {id(value): k for k, value in enumerate(values)}

    def edge_data(edge):
        pair = isinstance(edge, tuple) and len(edge) == 2
        text = _edge(edge) if edge is None or pair else repr(edge)[:200]
        target, index = edge if pair else (None, None)
        if edge is None or not pair:
            where = None
        elif isinstance(target, Node) and id(target) in number:
            where = {"node": number[id(target)]}
        elif isinstance(target, Var) and id(target) in var_number:
            where = {"leaf": var_number[id(target)]}
        else:
            where = {"other": True}
        return {"none": edge is None, "tuple": pair, "to": where,
                "index": _plain(index), "text": text}

    data = {"values": [{"requires_grad": bool(v.requires_grad), "requires_grad text": repr(v.requires_grad)[:100],
                        "has grad_fn": v.grad_fn is not None, "grad_fn": repr(v.grad_fn)[:200],
                        "output_nr": _plain(v.output_nr), "name": str(v.name)[:100]} for v in values],
            "nodes": []}
    for value in values[len(recipe.leaves):]:
        node = value.grad_fn
        data["nodes"].append(None if node is None else {
            "edges": [edge_data(edge) for edge in node.edges],
            "needs": [{"bool": bool(need), "text": repr(need)[:100]} for need in node.needs_input_grad]})
    return data


def verdict(recipe, steps):
    probed = steps["probe"]
    if probed["types"] != ["numpy.ndarray", "numpy.ndarray"] or probed["dim"] != [1]:
        raise wrong("forward-gets-tensors", "forward given Vars, not arrays",
                    "forward works on arrays: pass x.array for a Var, and other arguments (a dim) as they are.",
                    [f"apply(op, x, c, 1) called forward with: {probed['given']}"])
    if not probed["out is a Var"]:
        raise wrong("bad-return", "returns the wrong thing",
                    f"apply returns the output as a Var; yours returns a {probed['out type']}.")
    needs = tuple(probed["needs"])
    if len(needs) == 3 and needs[0] and needs[1]:
        raise wrong("edges-for-constants", "a gradient sent to a constant",
                    "An input that does not require grad gets False in needs_input_grad and None for its edge: "
                    "no gradient is computed or sent for it.",
                    [f"apply(op, x, c, 1), c not requiring grad: forward saw needs_input_grad = {_tuple(needs)}"])
    if needs != (True, False, False):
        raise wrong("needs-input-grad", "needs_input_grad not known to forward",
                    "Set node.needs_input_grad before calling forward, one entry per input (True for a Var that "
                    "requires grad): forward reads it to save only what the wanted gradients need.",
                    [f"apply(op, x, c, 1), x requiring grad: forward saw needs_input_grad = "
                     f"{_tuple(needs) if probed['needs seen'] else None}"])
    problems = []
    quiet = steps["no_grad"]
    if quiet["grad_fn"] or quiet["requires_grad"]:
        raise wrong("records-under-no-grad", "records a graph under no_grad()",
                    "Under no_grad() (grad_mode.enabled is False) nothing is recorded: the output has no "
                    "grad_fn and does not require grad.", ["with no_grad(): apply(Mul, x, c) has a grad_fn"])
    constants = steps["constants"]
    if constants["grad_fn"] or constants["requires_grad"]:
        raise wrong("records-for-constants", "records an op that no gradient needs",
                    "When no input requires grad, there is nothing to differentiate: record no node.",
                    ["apply(Mul, c, c), c not requiring grad, has a grad_fn"])
    graph = steps["graph"]
    values, nodes = graph["values"], graph["nodes"]
    for k, (op, inputs, _) in enumerate(recipe.steps):
        value, args = values[len(recipe.leaves) + k], [values[i] for i in inputs]
        line = f"{value['name']} = {recipe.lines()[k].split(' = ', 1)[1]}"
        if not any(a["requires_grad"] for a in args):
            continue
        node = nodes[k]
        if node is None or not value["requires_grad"]:
            raise wrong("output-not-recorded", "the output is not part of the graph",
                        "When an input requires grad, the output gets the node as grad_fn and requires_grad = "
                        "True, or the next op sees nothing to differentiate and the graph stops there.",
                        [f"{line}: grad_fn {value['grad_fn']}, requires_grad {value['requires_grad text']}"])
        for i, a, edge, need in zip(inputs, args, node["edges"], node["needs"]):
            if not a["requires_grad"] and (not edge["none"] or need["bool"]):
                problems.append(f"{line}: {a['name']} needs no gradient, yet has edge {edge['text']}"
                                f" and needs_input_grad {need['text']}")
                raise wrong("edges-for-constants", "a gradient sent to a constant",
                            "An input that does not require grad gets None for its edge and False in "
                            "needs_input_grad: no gradient is computed or sent for it.", problems)
            to_its_node = edge["tuple"] and edge["to"] == {"node": i} and edge["index"] == a["output_nr"]
            if a["requires_grad"] and a["has grad_fn"] and not to_its_node:
                raise wrong("edge-to-the-tensor", "an edge to the tensor, not to the node that made it",
                            "For an input an op made, the edge is (x.grad_fn, x.output_nr): the gradient must "
                            "go on to that node; (x, 0) is for leaves only, and ends the walk there.",
                            [f"{line}: the edge for {a['name']} is {edge['text']}"])
            to_the_leaf = edge["tuple"] and edge["to"] == {"leaf": i} and edge["index"] == 0
            if a["requires_grad"] and not a["has grad_fn"] and not to_the_leaf:
                raise wrong("edge-to-the-tensor", "a leaf's edge is wrong",
                            "For a leaf that requires grad, the edge is (x, 0): its gradient goes into x.grad.",
                            [f"{line}: the edge for {a['name']} is {edge['text']}"])
    differences = leaf_differences(recipe, received_leaves(recipe, steps["backward"]))
    if differences:
        raise wrong("no-pattern", "disagrees with tinyattn's engine",
                    "The nodes look right, but backward gives other gradients through them.",
                    differences)


def _tuple(items):
    return repr(tuple(items))


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
    judge=split_judge(probe, verdict),
    probe=probe,
    verdict=verdict,
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
