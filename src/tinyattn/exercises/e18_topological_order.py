"""Exercise 18, the engine track: the order in which backward visits the nodes."""

from . import engine
from .engine import Recipe
from .engine_checks import IMPORTS, describe, example, graph_nodes, leaf_differences, names, random_case
from .exercise import Mistake
from .task import Task, split_judge, wrong


def topological_order(root):
    """The nodes of the graph that ends at `root`, in the order backward runs them: root first,
    and every node after all the nodes that use its output."""
    # --- solution ---
    order, seen = [], set()

    def visit(node):  # depth first: a node is listed after every node it depends on
        seen.add(node)
        for parent in node.inputs():
            if parent not in seen:
                visit(parent)
        order.append(node)

    visit(root)
    return order[::-1]  # reversed: every node before the nodes it depends on, after its consumers


# --- mistakes learners make -------------------------------------------------------------------


def not_reversed(root):
    order, seen = [], set()

    def visit(node):
        seen.add(node)
        for parent in node.inputs():
            if parent not in seen:
                visit(parent)
        order.append(node)

    visit(root)
    return order


def no_visited_set(root):
    order = []

    def visit(node):  # a node reached by two paths is listed twice
        for parent in node.inputs():
            visit(parent)
        order.append(node)

    visit(root)
    return order[::-1]


def breadth_first(root):
    order, queue, seen = [], [root], {root}
    while queue:  # the order of discovery: a node can come before one of its consumers
        node = queue.pop(0)
        order.append(node)
        for parent in node.inputs():
            if parent not in seen:
                seen.add(parent)
                queue.append(parent)
    return order


def depth_first_preorder(root):
    order, stack = [], [root]
    while stack:  # a node is listed when first reached: before the consumers reached later
        node = stack.pop()
        if node not in order:
            order.append(node)
        stack.extend(node.inputs())
    return order


def counts_consumers_not_edges(root):
    counts, stack, seen = {}, [root], {root}
    while stack:  # Kahn's algorithm: how many consumers each node has...
        node = stack.pop()
        for parent in set(node.inputs()):
            counts[parent] = counts.get(parent, 0) + 1
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    order, ready = [], [root]
    while ready:
        node = ready.pop()
        order.append(node)
        for parent in node.inputs():  # ... but one count off per edge: v1 * v1 counts twice
            counts[parent] -= 1
            if counts[parent] == 0:
                ready.append(parent)
    return order


def first_input_only(root):
    order, node = [], root
    while node is not None:
        order.append(node)
        inputs = node.inputs()
        node = inputs[0] if inputs else None
    return order


# ----------------------------------------------------------------------------------------------


# diamonds, with the consumer as the first input and as the second, a value used at two depths,
# and a value used twice by one op: a depth-first pre-order passes one orientation and fails the
# other, a breadth-first order passes the short diamond and fails the long one, and Kahn's
# algorithm that counts consumers instead of edges passes all but the last two
_X = (("x", (2, 2), True),)
DIAMONDS = (
    Recipe(_X, (("tanh", (0,), None), ("tanh", (1,), None), ("mul", (2, 1), None), ("add", (3, 0), None)), seed=1),
    Recipe(_X, (("tanh", (0,), None), ("tanh", (1,), None), ("mul", (1, 2), None), ("add", (3, 0), None)), seed=2),
    Recipe(_X, (("tanh", (0,), None), ("mul", (1, 0), None), ("tanh", (2,), None), ("sum", (3,), 1),
                ("mul", (4, 1), None)), seed=3),
    Recipe(_X, (("tanh", (0,), None), ("mul", (1, 0), None), ("tanh", (2,), None), ("sum", (3,), 1),
                ("mul", (1, 4), None)), seed=4),
    # v1 used twice by one op (v1 * v1) and once by another: two edges from one consumer
    Recipe(_X, (("tanh", (0,), None), ("mul", (1, 1), None), ("tanh", (1,), None), ("add", (3, 2), None)), seed=5),
    Recipe(_X, (("tanh", (0,), None), ("mul", (1, 1), None), ("tanh", (1,), None), ("add", (2, 3), None)), seed=6),
)


def edge_cases():
    return list(DIAMONDS)


def probe(piece, recipe, steps):
    """The learner's order on the recipe's graph, as the values' numbers (see `_as_data`)."""
    _, values = engine.build(recipe)
    steps.run("order", lambda: _as_data(piece(values[-1].grad_fn), values))


def _as_data(order, values):
    """{"order": [{"node": k} for the node that made values[k], {"other": its repr} for anything else]},
    or {"type": the type's name} when the order is not a list."""
    if not isinstance(order, (list, tuple)):
        return {"type": type(order).__name__}
    number = {id(value.grad_fn): k for k, value in enumerate(values) if value.grad_fn is not None}
    return {"order": [{"node": number[id(item)]} if isinstance(item, engine.Node) and id(item) in number
                      else {"other": repr(item)[:200], "name": _name(item)} for item in order]}


def _name(item):
    name = getattr(item, "name", None)
    return name[:200] if isinstance(name, str) else None


LONGEST = 10_000  # the most entries of an order the verdict reads


class _Other:
    """Something in the learner's order that is not a node of the graph (shown as it showed itself)."""

    def __init__(self, text, name):
        self.text = text if isinstance(text, str) else "?"
        if isinstance(name, str):
            self.name = name

    def __repr__(self):
        return self.text


def verdict(recipe, steps):
    """The judgement of the order the probe noted, on this process's own copy of the graph."""
    _, values = engine.build(recipe)
    root = values[-1].grad_fn
    nodes, consumers = graph_nodes(root)
    noted = steps["order"]
    if not isinstance(noted, dict) or not isinstance(noted.get("order"), list):
        name = noted.get("type") if isinstance(noted, dict) and isinstance(noted.get("type"), str) else "?"
        raise wrong("bad-return", "returns the wrong thing",
                    f"topological_order returns a {name}: return a list of nodes.")
    order = []
    # a graph here has a few dozen nodes: an order ten thousand long lists some of them again and
    # again (walked without a visited set), which its first ten thousand show as well as the rest
    for item in noted["order"][:LONGEST]:
        k = item.get("node") if isinstance(item, dict) else None
        if isinstance(k, int) and 0 <= k < len(values) and values[k].grad_fn is not None:
            order.append(values[k].grad_fn)
        else:
            item = item if isinstance(item, dict) else {}
            order.append(_Other(item.get("other"), item.get("name")))
    graph = [f"your order: {names(order)}"]
    strangers = [item for item in order if item not in consumers]
    if strangers:
        raise wrong("bad-return", "lists things that are not nodes of the graph",
                    f"Only the graph's nodes go in the order (node.inputs() gives a node's parents; leaves "
                    f"are not nodes): {strangers[0]!r} is not one.", graph)
    seen, twice = set(), []
    for node in order:
        if node in seen:
            twice.append(node)
        seen.add(node)
    if twice:
        raise wrong("walked-twice", "a node visited twice (the graph walked twice)",
                    f"{twice[0].name} is in the order more than once, so its backward would run again and send "
                    "its gradient to its inputs twice: keep a set of the nodes already visited.",
                    graph + _consequence(recipe, order))
    missing = [node for node in nodes if node not in order]
    if missing:
        raise wrong("nodes-missing", "nodes missing from the order",
                    f"{names(missing)} {'is' if len(missing) == 1 else 'are'} not in the order, so no gradient "
                    "flows through them: follow every input of a node (node.inputs()), not only the first.",
                    graph + _consequence(recipe, order))
    position = {node: k for k, node in enumerate(order)}
    early = [(node, user) for node in order for user in consumers[node] if position[user] > position[node]]
    if early and all(position[user] > position[node] for node in order for user in consumers[node]):
        raise wrong("reversed", "the order is reversed",
                    "The root must come first and the leaves' side last: your list has every node before its "
                    "consumers. A depth-first search lists a node after its inputs: reverse that list.",
                    graph + _consequence(recipe, order))
    if early:
        node, user = early[0]
        raise wrong("consumer-not-done", "a node visited before all its consumers are done",
                    f"{node.name} comes before {user.name}, which uses its output: when {node.name}'s backward "
                    f"runs, the gradient from {user.name} has not arrived yet. Every node must come after all "
                    "its consumers: list a node after its inputs, depth first, then reverse the list.",
                    graph + _consequence(recipe, order))
    differences = _consequence(recipe, order)
    if differences:  # a valid order, and yet other gradients: never a pass
        raise wrong("no-pattern", "disagrees with tinyattn's engine",
                    "The order looks valid, but the engine gives other gradients with it.", graph + differences)


def _consequence(recipe, order):
    """What the engine computes when it walks a fresh copy of the graph in the learner's order."""
    wanted = [node.name for node in order]
    leaves, values = engine.build(recipe)
    by_name = {value.grad_fn.name: value.grad_fn for value in values if value.grad_fn is not None}
    mapped = [by_name[name] for name in wanted if name in by_name]
    with engine.using(topological_order=lambda root: mapped):
        values[-1].backward(retain_graph=True)  # a node listed twice runs twice, as it would
    return ["with your order: " + line for line in leaf_differences(recipe, leaves)]


EXERCISE = Task(
    number=18,
    name="topological_order",
    title="the order of the backward walk",
    track="engine",
    piece=topological_order,
    statement=(
        "backward(root) runs every node's backward once, and a node may run only when the gradients from all "
        "the nodes that use its output (its consumers) have arrived. Write topological_order(root): the "
        "nodes of the graph that ends at root, root first, every node after all its consumers. "
        "node.inputs() gives the nodes a node's inputs came from (leaves and constants are not nodes; v1 * v1 "
        "gives v1 twice). A node can be reached by several paths; list it once."
    ),
    signature=(
        "topological_order(root: Node) -> list of Node\n"
        "  root first; each node after every node that uses its output; each node once"
    ),
    hint=(
        "Visit the graph depth first from root, with a set of the nodes already seen; append a node to "
        "the list after visiting its inputs. That lists each node after everything it depends on: the "
        "reverse of that list is the order backward needs. See docs/internals.md, step 4 (backward(): "
        "walking the graph back)."
    ),
    todo="return the list of nodes, root first",
    judge=split_judge(probe, verdict),
    probe=probe,
    verdict=verdict,
    example=example,
    random_case=random_case,
    describe=describe,
    imports=IMPORTS,
    edge_cases=edge_cases,
    mistakes=(
        Mistake(not_reversed, "reversed"),
        Mistake(no_visited_set, "walked-twice"),
        Mistake(breadth_first, "consumer-not-done"),
        Mistake(depth_first_preorder, "consumer-not-done", found_by="edge case"),
        Mistake(counts_consumers_not_edges, "consumer-not-done", found_by="edge case"),
        Mistake(first_input_only, "nodes-missing"),
    ),
)
