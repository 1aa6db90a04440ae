"""A small engine for the engine track: tinyattn's autograd in a few pages, on NumPy arrays, with
its parts swappable for a learner's.

It is built as tinyattn's engine is (see docs/internals.md, steps 2 to 5), with less of everything:

- `Var`: an array, the node that made it (`grad_fn`; None for a tensor you made, a *leaf*) and which
  of that node's outputs it is (`output_nr`), `requires_grad`, and `grad` (a leaf's gradient).
- `Node`: one recorded op. `function` (its Function class), `edges` (one per argument of forward:
  `(node, output_nr)` for an input an op made, `(var, 0)` for a leaf that requires grad, None for an
  input that needs no gradient), `needs_input_grad`, and `saved` (what forward kept for backward).
  `ctx.save_for_backward(...)` and `ctx.saved_tensors` are the ctx API of a Function, as in PyTorch.
- The ops: `Add`, `Sub`, `Mul`, `Tanh`, `Sum` (with keepdim=True), Functions whose forward and
  backward work on arrays.
- `backward(root)`: put the nodes in topological order, walk them, run each node's backward,
  accumulate the gradients it sends, free what it saved, and store the leaves' gradients.

The five parts a learner writes in the engine track are what `Parts` holds: `topological_order`,
`accumulate`, `unbroadcast`, `Saved` (the saving and freeing of tensors for backward) and `apply`.
`using(parts)` runs the engine with some of them replaced; the reference parts are the exercises'
solutions (`reference_parts()`).
"""

import contextlib
import dataclasses
from typing import Callable

import numpy as np

# ---------------------------------------------------------------------------------------------
# grad mode


class grad_mode:
    """Whether ops record a graph: `no_grad()` turns it off for a block."""

    enabled = True


@contextlib.contextmanager
def no_grad():
    """Record no graph inside the block, as tinyattn.no_grad() does."""
    previous, grad_mode.enabled = grad_mode.enabled, False
    try:
        yield
    finally:
        grad_mode.enabled = previous


class BackwardError(RuntimeError):
    """A backward that cannot run: its node's saved values were freed by an earlier backward."""


# ---------------------------------------------------------------------------------------------
# tensors and nodes

class Var:
    """A tensor of the small engine: an array with a place in the graph."""

    def __init__(self, array, requires_grad=False, name=None):
        self.array = np.asarray(array, dtype=np.float64)
        self.requires_grad = requires_grad
        self.grad_fn = None  # the Node that made it; None for a leaf
        self.output_nr = 0  # which output of grad_fn it is
        self.grad = None  # a leaf's gradient, after backward
        self.name = name

    @property
    def shape(self):
        return self.array.shape

    def backward(self, retain_graph=False):
        backward(self, retain_graph=retain_graph)

    def __add__(self, other):
        return Add.apply(self, other)

    def __sub__(self, other):
        return Sub.apply(self, other)

    def __mul__(self, other):
        return Mul.apply(self, other)

    def tanh(self):
        return Tanh.apply(self)

    def sum(self, dim):
        return Sum.apply(self, dim)

    def __repr__(self):
        what = self.name or "Var"
        return f"{what}{list(self.shape)}" + (f" <- {self.grad_fn.name}" if self.grad_fn is not None else "")


class Node:
    """One recorded op: the `ctx` of its forward and backward, and the `grad_fn` of its output."""

    def __init__(self, function):
        self.function = function
        self.edges = ()  # one per argument of forward: (node, output_nr), (leaf, 0), or None
        self.needs_input_grad = ()
        self.name = f"{function.__name__}Backward"  # as PyTorch names a grad_fn (the checks name theirs v1, v2...)
        self.saved = current().Saved(self.name)

    # the ctx API of PyTorch
    def save_for_backward(self, *values):
        self.saved.save(*values)

    @property
    def saved_tensors(self):
        return self.saved.get()

    def inputs(self):
        """The nodes this node's inputs came from (leaves and constants left out)."""
        return [edge[0] for edge in self.edges if edge is not None and isinstance(edge[0], Node)]

    def __repr__(self):
        return f"<{self.name}>"


class Function:
    """An op: forward and backward on arrays; `Function.apply` runs it through the engine."""

    @staticmethod
    def forward(ctx, *arrays):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs):
        return current().apply(cls, *inputs)


def unbroadcast(grad, shape):
    """The engine's unbroadcast: whichever the current parts hold (the ops call this one)."""
    return current().unbroadcast(grad, shape)


# ---------------------------------------------------------------------------------------------
# the ops


class Add(Function):
    """a + b, broadcasting."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (np.shape(a), np.shape(b))
        return a + b

    @staticmethod
    def backward(ctx, grad):
        # the same array goes to both inputs when no broadcasting happened: never change it in place
        return unbroadcast(grad, ctx.shapes[0]), unbroadcast(grad, ctx.shapes[1])


class Sub(Function):
    """a - b, broadcasting."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (np.shape(a), np.shape(b))
        return a - b

    @staticmethod
    def backward(ctx, grad):
        return unbroadcast(grad, ctx.shapes[0]), unbroadcast(-grad, ctx.shapes[1])


class Mul(Function):
    """a * b, broadcasting."""

    @staticmethod
    def forward(ctx, a, b):
        # save only what the wanted gradients need: a's gradient needs b, and b's needs a
        ctx.save_for_backward(b if ctx.needs_input_grad[0] else None, a if ctx.needs_input_grad[1] else None)
        ctx.shapes = (np.shape(a), np.shape(b))
        return a * b

    @staticmethod
    def backward(ctx, grad):
        b, a = ctx.saved_tensors
        grad_a = unbroadcast(grad * b, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        grad_b = unbroadcast(grad * a, ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class Tanh(Function):
    """tanh(a), elementwise."""

    @staticmethod
    def forward(ctx, a):
        y = np.tanh(a)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return (grad * (1 - y * y),)


class Sum(Function):
    """a.sum(dim, keepdim=True): the shape keeps a 1 where dim was."""

    @staticmethod
    def forward(ctx, a, dim):
        ctx.shape = np.shape(a)
        return np.sum(a, axis=dim, keepdims=True)

    @staticmethod
    def backward(ctx, grad):
        return np.broadcast_to(grad, ctx.shape).copy(), None


OPS = {"add": Add, "sub": Sub, "mul": Mul, "tanh": Tanh, "sum": Sum}


# ---------------------------------------------------------------------------------------------
# backward: the walk


def backward(root, retain_graph=False):
    """Backpropagate from `root` (its gradient: ones of its shape) into the leaves' .grad."""
    parts = current()
    if root.grad_fn is None:
        raise BackwardError("the root was not made by a recorded op: nothing to backpropagate through")
    order = parts.topological_order(root.grad_fn)
    slots = {}  # node or leaf -> [its gradient so far] (one output each, in this engine)

    def slots_of(target):
        return slots.setdefault(target, [None])

    parts.accumulate(slots_of(root.grad_fn), root.output_nr, np.ones(root.shape))
    for node in order:
        (grad,) = slots_of(node)
        # None: every consumer sent None (it needed no gradient from here): nothing to pass on
        input_grads = (None,) * len(node.edges) if grad is None else node.function.backward(node, grad)
        node.saved.free(retain_graph)
        for edge, g in zip(node.edges, input_grads):
            if edge is not None and g is not None:
                target, index = edge
                parts.accumulate(slots_of(target), index, g)
    for target, (grad,) in slots.items():
        if isinstance(target, Var) and grad is not None:  # a leaf: .grad adds up over backward calls
            target.grad = grad if target.grad is None else target.grad + grad


# ---------------------------------------------------------------------------------------------
# the parts


@dataclasses.dataclass(frozen=True)
class Parts:
    """The five parts of the engine that the engine track has learners write."""

    topological_order: Callable  # (root node) -> [nodes], root first, each after all its consumers
    accumulate: Callable  # (slots, index, grad): add grad into slots[index]
    unbroadcast: Callable  # (grad, shape) -> grad summed down to shape
    Saved: type  # Saved(name): .save(*values), .get(), .free(retain_graph)
    apply: Callable  # (function, *inputs) -> Var: run forward, record a node


_current = []


def reference_parts():
    """The engine with every part as the exercises' solutions have it."""
    from . import e18_topological_order, e19_accumulate, e20_unbroadcast, e21_saved, e22_apply

    return Parts(e18_topological_order.topological_order, e19_accumulate.accumulate,
                 e20_unbroadcast.unbroadcast, e21_saved.Saved, e22_apply.apply)


def current():
    """The parts the engine runs with now (the reference parts, unless `using` replaced some)."""
    return _current[-1] if _current else reference_parts()


@contextlib.contextmanager
def using(**replaced):
    """Run the engine with some parts replaced: `with using(unbroadcast=mine): ...`."""
    _current.append(dataclasses.replace(current(), **replaced))
    try:
        yield
    finally:
        _current.pop()


# ---------------------------------------------------------------------------------------------
# graphs from a recipe: the same graph in the small engine and in tinyattn


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A graph: leaves (name, shape, requires_grad) and steps (op, input indices, dim for sum).

    Values are numbered: the leaves first, then one per step. The last value is the root.
    """

    leaves: tuple
    steps: tuple
    seed: int = 0

    def leaf_values(self):
        rng = np.random.default_rng(self.seed)
        return [rng.uniform(-1.5, 1.5, shape) for _, shape, _ in self.leaves]

    def names(self):
        return [name for name, _, _ in self.leaves] + [f"v{k}" for k in range(1, len(self.steps) + 1)]

    def lines(self):
        """The graph as code: 'v1 = x * y', ..."""
        names = self.names()
        text = []
        for k, (op, inputs, dim) in enumerate(self.steps, 1):
            args = [names[i] for i in inputs]
            if op in ("add", "sub", "mul"):
                expression = f" {dict(add='+', sub='-', mul='*')[op]} ".join(args)
            elif op == "sum":
                expression = f"{args[0]}.sum({dim}, keepdim=True)"
            else:
                expression = f"{args[0]}.{op}()"
            text.append(f"v{k} = {expression}")
        return text

    def describe(self):
        leaves = ", ".join(f"{name} {list(shape)}" + ("" if grad else " (no grad)")
                           for name, shape, grad in self.leaves)
        return f"leaves {leaves}; " + "; ".join(self.lines())


def build(recipe):
    """(leaves, values) of the recipe's graph in the small engine (with the current parts)."""
    values = []
    for (name, _, requires_grad), array in zip(recipe.leaves, recipe.leaf_values()):
        values.append(Var(array, requires_grad=requires_grad, name=name))
    for k, (op, inputs, dim) in enumerate(recipe.steps, 1):
        args = [values[i] for i in inputs] + ([dim] if op == "sum" else [])
        out = OPS[op].apply(*args)
        out.name = f"v{k}"
        if out.grad_fn is not None:
            out.grad_fn.name = f"v{k}"
        values.append(out)
    return values[: len(recipe.leaves)], values


def tinyattn_grads(recipe):
    """{leaf name: its gradient} by tinyattn's own engine (None where no gradient reaches it)."""
    from .. import functions
    from ..backend import to_host

    values = []
    for (name, _, requires_grad), array in zip(recipe.leaves, recipe.leaf_values()):
        values.append(functions.tensor(array, requires_grad=requires_grad))
    for op, inputs, dim in recipe.steps:
        args = [values[i] for i in inputs]
        if op == "add":
            out = args[0] + args[1]
        elif op == "sub":
            out = args[0] - args[1]
        elif op == "mul":
            out = args[0] * args[1]
        elif op == "tanh":
            out = args[0].tanh()
        else:
            out = args[0].sum(dim, keepdim=True)
        values.append(out)
    root = values[-1]
    root.backward(functions.ones_like(root))
    return {name: None if x.grad is None else np.array(to_host(x.grad.array))
            for (name, _, _), x in zip(recipe.leaves, values)}


def recipe_strategy(draw, s, min_steps=2, max_steps=7):
    """A random recipe for Hypothesis: shapes that broadcast together, values used more than once."""
    n, m = draw(s.size(1, 3)), draw(s.size(1, 3))
    shapes = [(n, m), (m,), (1, m), (n, 1), ()]
    count = draw(s.size(1, 3))
    leaves = [("x", (n, m), True)]
    for k in range(1, count):
        leaves.append((["y", "z"][k - 1], draw(s.one_of(shapes)), draw(s.booleans())))
    steps, ndims = [], [len(shape) for _, shape, _ in leaves]
    for _ in range(draw(s.size(min_steps, max_steps))):
        op = draw(s.one_of(["add", "sub", "mul", "mul", "tanh", "sum"]))
        # most ops use the newest value: chains, whose values are reused further on (diamonds)
        first = len(ndims) - 1 if draw(s.booleans()) else draw(s.size(0, len(ndims) - 1))
        if op in ("add", "sub", "mul"):
            second = draw(s.size(0, len(ndims) - 1))
            steps.append((op, (first, second), None))
            ndims.append(max(ndims[first], ndims[second]))
        elif op == "sum" and ndims[first] > 0:
            steps.append((op, (first,), draw(s.size(0, ndims[first] - 1))))
            ndims.append(ndims[first])
        else:
            steps.append(("tanh", (first,), None))
            ndims.append(ndims[first])
    # the root uses the last value and x, so that the leaf that needs a gradient is always reached
    steps.append(("mul", (len(ndims) - 1, 0), None))
    return Recipe(tuple(leaves), tuple(steps), seed=draw(s.size(0, 1000)))
