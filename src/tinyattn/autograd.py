"""Reverse-mode automatic differentiation: the graph, `Function`, `backward()`, `no_grad`.

Every differentiable operation is a `Function` with a `forward` and a `backward` side by side. When a
Function is applied to tensors that require grad, a `Node` is recorded: it remembers which Function
ran, what the forward saved for the backward, and the edges to the nodes that produced its inputs.
`backward()` walks these nodes from the output back to the leaves, in the reverse order of creation,
calling each Function's backward with the gradient of its output and passing the gradients it returns
on to its inputs.

Built-in ops set `takes_arrays = True`: their forward and backward see raw arrays (NumPy or CuPy),
which keeps the engine's own cost per op small. A Function you write yourself sees Tensors, exactly as
in PyTorch:

    class Square(tinyattn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return 2 * x * grad_output

    y = Square.apply(x)
"""

import functools
import heapq
import itertools
import threading

from . import backend
from .errors import BackwardError


class GradMode(threading.local):
    """Whether ops record the graph, per thread (`no_grad()` and `enable_grad()` switch it)."""
    enabled = True


grad_mode = GradMode()


def is_grad_enabled():
    """Whether ops record the graph now (False inside `no_grad()`)."""
    return grad_mode.enabled


class _GradModeContext:
    """What no_grad, enable_grad, inference_mode and set_grad_enabled share: a context manager that sets
    the grad mode to `self.mode` (None leaves it as it is) and restores it on the way out, and a
    decorator that runs the function inside a fresh one (so that recursion and threads don't share
    `previous`)."""

    mode = None

    def __enter__(self):
        self.previous = grad_mode.enabled
        if self.mode is not None:
            grad_mode.enabled = self.mode
        return self

    def __exit__(self, *exc):
        grad_mode.enabled = self.previous
        return False

    def __call__(self, function):
        fresh = self._fresh

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with fresh():
                return function(*args, **kwargs)

        return wrapper

    def _fresh(self):
        return type(self)()


class set_grad_enabled(_GradModeContext):
    """Turn gradient recording on or off in this thread (a function, a context manager and a decorator)."""

    def __init__(self, mode=True):
        self.mode = bool(mode)
        self.previous = grad_mode.enabled
        grad_mode.enabled = self.mode  # like PyTorch, calling it as a function sets the mode at once

    def __enter__(self):  # `previous` is the mode before __init__ changed it
        grad_mode.enabled = self.mode
        return self

    def __call__(self, function):
        grad_mode.enabled = self.previous  # as a decorator it changes nothing until the function runs
        return super().__call__(function)

    def _fresh(self):
        return set_grad_enabled(self.mode)


class no_grad(_GradModeContext):
    """Record no graph inside: for evaluation, sampling and in-place parameter updates."""

    mode = False

    def __new__(cls, function=None):
        # `@no_grad` without parentheses decorates `function` directly, as in PyTorch
        self = super().__new__(cls)
        return self if function is None else self(function)


class enable_grad(no_grad):
    """Record the graph again inside a `no_grad` block."""

    mode = True


class inference_mode(_GradModeContext):
    """PyTorch's inference_mode, which here is no_grad (tinyattn has no inference-only tensors);
    inference_mode(False) changes nothing."""

    def __new__(cls, mode=True):
        if callable(mode):  # `@inference_mode` without parentheses
            return no_grad(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self.mode = False if mode else None

    def _fresh(self):
        return inference_mode(self.mode is False)


# Observers see the ops as they run (the tracer and anomaly detection); empty means no cost. An
# observer with a `thread` attribute (the tracer's: the thread that entered it) sees only that
# thread's ops, so a trace does not record what other threads compute meanwhile.
observers = []


class _Quiet(threading.local):
    depth = 0  # > 0 while replay_view retakes a view in this thread: bookkeeping no observer sees


_quiet = _Quiet()


def observers_here():
    """The observers that watch the ops of the calling thread."""
    if _quiet.depth:
        return ()
    me = threading.get_ident()
    return [o for o in tuple(observers) if getattr(o, "thread", me) == me]  # a copy: other threads add and remove


_sequence = itertools.count()


class Node:
    """One recorded op: the `ctx` of its Function and the `grad_fn` of its outputs."""

    __slots__ = (
        "function", "edges", "needs_input_grad", "input_meta", "output_meta", "sequence", "xp",
        "__dict__", "__weakref__",
    )

    # What most nodes keep as it is, as class attributes: a node that changes one gets its own (one
    # node is made per op, so the fewer attributes it sets, the cheaper the op).
    saved = ()
    saved_versions = ()  # ((the version counter of the tensor a saved item belongs to, its version, shape), ...)
    computed_from = ()  # arrays the saved ones were computed from (see save_for_backward)
    dirty = non_differentiable = ()  # what a Function's forward marked (mark_dirty, mark_non_differentiable)
    released = False
    retained = None
    hooks = None  # [(output index, hook)] from register_hook on the outputs
    name_hint = None
    materialize_grads = True

    def __init__(self, function):
        self.function = function

    # --- the ctx API of PyTorch ---

    def set_materialize_grads(self, value):
        """False: backward gets None (not zeros) for an output nobody used (or a non-differentiable
        one), and can skip its work."""
        self.materialize_grads = bool(value)

    def save_for_backward(self, *items, computed_from=()):
        """Keep what backward needs: arrays (built-in ops) or tensors (your Functions).

        Each item saved is tied to the tensor it belongs to, whose version is recorded now and checked
        before backward runs: a tensor changed in place in between raises, as in PyTorch, instead of
        giving a wrong gradient. An input's or the output's array (or tensor) is told by itself (index
        tensors are arguments of the index ops for this). An array the forward computed from inputs or
        the output (a mask, a reshaped output, im2col's columns) names them in `computed_from`, so that
        their versions are checked too; `computed_from` alone records the versions of tensors whose
        numbers PyTorch's backward reads and this one does not need. Arrays computed from nothing the
        caller holds (a random mask) need no check.
        """
        self.saved = items
        if computed_from:
            self.computed_from = computed_from

    @property
    def saved_tensors(self):
        """What forward saved with `save_for_backward`, checked not to have been freed or changed in place."""
        if self.released:
            raise BackwardError(
                f"{self.name()}: trying to backward through the graph a second time (its saved "
                "values were freed). Pass retain_graph=True to the first backward() if you need to."
            )
        self.check_saved_versions()
        return self.saved

    def check_saved_versions(self):
        """Raises if a tensor whose numbers the backward needs was changed in place since the forward
        (backward checks every node's before calling it, as PyTorch does when it unpacks them)."""
        for counter, version, shape in self.saved_versions:
            if counter[0] != version:
                raise BackwardError(
                    f"one of the tensors needed by {self.name()} to compute gradients (shape "
                    f"{list(shape)}) has been modified by an inplace operation after it was used: it is "
                    f"at version {counter[0]}, expected {version}. Use the out-of-place op "
                    "(masked_fill instead of masked_fill_, x = x + y instead of x += y) or .clone() it "
                    "before changing it."
                )

    def mark_dirty(self, *tensors):
        """For your Functions: forward changed these inputs in place and returns them (as PyTorch's)."""
        self.dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """For your Functions: these outputs (indices, masks) get no gradient and do not require grad."""
        self.non_differentiable = tensors

    # --- what PyTorch shows of a grad_fn ---

    def name(self):
        # fused ops are classes named e.g. LinearOp (beside the nn.Linear module): show "LinearBackward0"
        # "0" as in PyTorch's names (MulBackward0), which printed tensors show as grad_fn=<...>; a hint
        # may give the whole name where PyTorch numbers an overload ("MaxBackward1": max of all elements)
        # (CopySlices, an in-place change of a view, is named without "Backward", as in PyTorch)
        """The node's name as PyTorch prints it in `grad_fn=<...>`: `MulBackward0`, `CopySlices`, ..."""
        hint = self.name_hint or self.function.__name__.removesuffix("Op")
        return hint if hint[-1].isdigit() or hint == "CopySlices" else f"{hint}Backward0"

    @property
    def next_functions(self):
        """For each input, (the node that made it, its output number); a leaf's edge or (None, 0)."""
        return tuple(
            (None, 0) if edge is None else edge for edge in self.edges
        )

    def __repr__(self):
        # as PyTorch prints a grad_fn: its name and where the object lives (a printed tensor shows
        # only the name: grad_fn=<MulBackward0>)
        return f"<{self.name()} object at {id(self):#x}>"


class Function:
    """An op with a hand-written backward. Subclass it, define `forward` and `backward`, call `apply`."""

    takes_arrays = False  # built-in ops work on raw arrays; user Functions on Tensors
    is_view = False  # True: the output shares the first argument's memory (unless forward sets ctx.copied)

    @staticmethod
    def forward(ctx, *args):
        """The op's result from its inputs (arrays for the built-in ops, tensors for yours)."""
        raise NotImplementedError("a Function must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """The gradients of the inputs from the gradient of the output, one per forward argument."""
        raise NotImplementedError("a Function must define backward(ctx, grad_output)")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Runs forward and, when a gradient is needed, records the node that backward will call.

        Keyword arguments go to forward as they are: as in PyTorch, they get no gradient."""
        if not cls.takes_arrays:
            return _apply_yours(cls, args, kwargs)
        # This runs for every op, so it walks the arguments once and keeps to plain loops; the common
        # case (a built-in op on NumPy arrays) takes no detour through helpers.
        node = _new_node(Node)  # Node(cls), without the call of __init__
        node.function = cls
        tensors, arrays, needs = [], [], []
        numpy_only, any_need = True, False
        for a in args:
            if isinstance(a, Tensor):
                array = a.array
                tensors.append(a)
                arrays.append(array)
                if a._requires_grad:
                    needs.append(True)
                    any_need = True
                else:
                    needs.append(False)
                if type(array) is not _ndarray:
                    numpy_only = False
            else:
                arrays.append(a)
                needs.append(False)
        if not tensors:
            xp = None
        elif numpy_only:
            xp = _numpy_xp
        else:
            xp = backend.same_device([t.array for t in tensors])
        node.xp = xp
        record = any_need and grad_mode.enabled
        # known before forward runs, so that forward saves only what the needed gradients use
        node.needs_input_grad = tuple(needs) if record else (False,) * len(args)

        quiet = float_errors_off()  # inf and NaN without NumPy's warnings, as in PyTorch
        try:
            result = cls.forward(node, *arrays, **kwargs)
        finally:
            float_errors_restore(quiet)
        single = type(result) is not tuple
        if single:
            if type(result) in _NUMPY_SCALARS:  # (a full reduction's NumPy scalar: as the 0-d array it stands for)
                result = _as_array(result)
            out_arrays = [result]
        else:
            out_arrays = list(result)
        if xp is None:
            xp = node.xp = backend.namespace(out_arrays[0])

        if record:
            node.sequence = next(_sequence)
            edges, metas = [], []
            for a, need, array in zip(args, needs, arrays):
                if need:
                    # where the gradient goes: the node that made the input, or the leaf itself (_edge_to)
                    if a._base is not None and a._view_version != a._version[0]:
                        refresh_view(a)
                    edges.append((a, 0) if a.grad_fn is None else (a.grad_fn, a.output_nr))
                else:
                    edges.append(None)
                metas.append((array.shape, array.dtype) if isinstance(a, Tensor) else None)
            node.edges = tuple(edges)
            node.input_meta = tuple(metas)
            if single:  # (most ops: one output, without the loops)
                out = out_arrays[0]
                node.output_meta = ((out.shape, out.dtype),)
                outputs = [Tensor._wrap(out, _is_float(out), node, 0)]
            else:
                node.output_meta = tuple([(a.shape, a.dtype) for a in out_arrays])
                outputs = [Tensor._wrap(a, _is_float(a), node, i) for i, a in enumerate(out_arrays)]
        else:  # no graph: nothing the forward saved is needed (a node that saved nothing is left as it is)
            if node.saved:
                node.saved = ()
            outputs = [Tensor._wrap(out_arrays[0])] if single else [Tensor._wrap(a) for a in out_arrays]
        if cls.is_view and not getattr(node, "copied", False):
            _mark_views(args[0], outputs, (cls, args[1:]))
        if record and (node.saved or node.computed_from):
            node.saved_versions = _saved_versions(node, tensors, outputs)

        if observers:
            for observer in observers_here():
                observer.on_forward(node, args, outputs)
        return outputs[0] if single else tuple(outputs)


def _apply_yours(cls, args, kwargs):
    """Function.apply for a Function you write (on tensors): the same steps as a built-in op's, and
    what PyTorch lets such a forward do besides: return Python numbers (given back as they are, with
    None for their gradient in backward), change inputs it marks dirty, mark outputs non-differentiable."""
    node = Node(cls)
    tensors = [a for a in args if isinstance(a, Tensor)]
    needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
    record = any(needs) and grad_mode.enabled
    node.needs_input_grad = needs if record else (False,) * len(args)
    node.xp = backend.same_device([t.array for t in tensors]) if tensors else None
    versions = [t._version[0] for t in tensors]
    with no_grad():
        result = cls.forward(node, *args, **kwargs)
    dirty = node.dirty
    changed = [i for i, (t, v) in enumerate(zip(tensors, versions))
               if t._version[0] != v and not any(t is d for d in dirty)]
    if record and changed:
        raise BackwardError(
            f"{cls.__name__}.forward changed its input tensor {changed[0]} in place: the graph would "
            "not know the values it was given, so its gradients would be wrong. Work on a copy "
            "inside forward (x = x.clone()), or call ctx.mark_dirty(x) and return x"
        )
    single = type(result) is not tuple
    results = [result] if single else list(result)
    positions = [i for i, r in enumerate(results) if isinstance(r, Tensor)]  # the rest: numbers, given back
    if len(positions) != len(results):
        node.result_positions = (tuple(positions), len(results))
    if node.xp is None and positions:
        node.xp = backend.namespace(results[positions[0]].array)
    outputs = list(results)
    for d in dirty:
        if not any(d is r for r in results):
            raise BackwardError(f"{cls.__name__}.forward marked a tensor dirty (changed in place) that it does "
                                "not return: return every tensor given to ctx.mark_dirty")
        if record and d.grad_fn is None and d._requires_grad:
            raise BackwardError("a leaf Variable that requires grad is being used in an in-place operation "
                                f"({cls.__name__}.forward marked it dirty): work on a .clone() of the leaf")
        if record and d._base is not None:  # (its base's graph would not see the change: refused, not wrong)
            raise BackwardError(f"{cls.__name__}.forward marked dirty a view of another tensor, which tinyattn "
                                "does not record: mark the tensor it is a view of, or work on a .clone()")
        d._bump_version()  # changed in place: its version moves on, as PyTorch's mark_dirty does
    if record and positions:
        node.sequence = next(_sequence)
        node.edges = tuple(_edge_to(a) if need else None for a, need in zip(args, needs))
        node.input_meta = tuple((a.array.shape, a.array.dtype) if isinstance(a, Tensor) else None for a in args)
        node.output_meta = tuple((results[i].array.shape, results[i].array.dtype) for i in positions)
        for nr, i in enumerate(positions):
            r = results[i]
            if any(r is n for n in node.non_differentiable):
                outputs[i] = Tensor._wrap(r.array)  # no grad_fn: backward gets zeros (or None) for it
            elif any(r is d for d in dirty):  # the input itself, now made by this node
                r.grad_fn, r.output_nr, r._requires_grad = node, nr, True
            else:
                outputs[i] = Tensor._wrap(r.array, _is_float(r.array), node, nr)
    else:
        node.saved = ()
        for i in positions:
            if not any(results[i] is d for d in dirty):
                outputs[i] = Tensor._wrap(results[i].array)
    if node.saved:
        node.saved_versions = _saved_versions(node, tensors, [outputs[i] for i in positions])
    if observers:
        for observer in observers_here():
            observer.on_forward(node, args, [outputs[i] for i in positions])
    return outputs[0] if single else tuple(outputs)


_ndarray = backend.np.ndarray
_new_node = object.__new__
_as_array = backend.np.asarray
_NUMPY_SCALARS = frozenset({backend.np.float32, backend.np.float64, backend.np.int64, backend.np.int32,
                            backend.np.bool_})
_numpy_xp = backend.numpy_xp
float_errors_off, float_errors_restore = backend.float_errors_off, backend.float_errors_restore


def _is_float(array):
    """Whether an op's output is of a floating dtype (its tensor then records a gradient)."""
    if type(array) is _ndarray:
        return array.dtype.kind == "f"
    return backend.is_float(array)


def _mark_views(base, outputs, step):
    """Views share their base's memory, so they share its version counter too (as in PyTorch).

    Each view also keeps the steps that take it from its root (the tensor that owns the memory):
    an in-place op on the view replays them to record the change on the root (see CopySlices).
    """
    if base._base is None:
        root, steps = base, (step,)
    else:
        root, steps = base._base, base._view_steps + (step,)
    for out in outputs:
        out._version, out._base, out._view_version, out._view_steps = base._version, root, base._version[0], steps


def replay_view(steps, root):
    """Take a view again from `root`: the view ops that made it, one after another.

    This is bookkeeping, not an op the user ran: the tracer and anomaly detection do not see it.
    """
    _quiet.depth += 1
    try:
        for function, args in steps:
            root = function.apply(root, *args)
    finally:
        _quiet.depth -= 1
    return root


def refresh_view(view):
    """A view whose root was changed in place after the view was taken: its grad_fn still describes
    the old memory, so take it again from the root, whose graph has the change (as PyTorch does)."""
    fresh = replay_view(view._view_steps, view._base)
    if fresh.grad_fn is not None:
        fresh.grad_fn.name_hint = "AsStrided"  # the name PyTorch shows: it takes such views again by their strides
    view.grad_fn, view.output_nr, view._requires_grad = fresh.grad_fn, fresh.output_nr, fresh._requires_grad
    view._view_version = view._version[0]


def _edge_to(tensor):
    """Where the gradient of an input goes: the node that made it, or the leaf tensor itself."""
    if not tensor.requires_grad:
        return None
    if tensor._base is not None and tensor._view_version != tensor._version[0]:
        refresh_view(tensor)
    if tensor.grad_fn is not None:
        return (tensor.grad_fn, tensor.output_nr)
    return (tensor, 0)


def _saved_versions(node, inputs, outputs):
    """For each item saved (and each array named in computed_from), the version counter of the tensor
    it belongs to, its version now and its shape: what saved_tensors checks (see save_for_backward)."""
    versions = []
    candidates = inputs + outputs  # (two short lists: one list is quicker to walk than a chain of them)
    saved = node.saved
    for item in saved + node.computed_from if node.computed_from else saved:
        if item is None:  # (what an op keeps in place of a gradient it need not compute)
            continue
        owner = None
        for t in candidates:
            if item is t.array or item is t:
                owner = t
                break
        if owner is None:
            if isinstance(item, Tensor):
                # your Function's: an output of its forward (apply gave back a tensor around its array),
                # or a tensor it computed (its own version counter, which nobody else holds)
                owner = next((t for t in outputs if t.array is item.array), item)
            elif any(item is c for c in node.computed_from):
                if type(item) in _NUMPY_SCALARS and len(outputs) == 1:
                    owner = outputs[0]  # a 0-d result NumPy gave as a scalar: apply made it the output's array
                else:
                    raise RuntimeError(f"internal error: {node.name()} says a saved array was computed from an "
                                       "array that is none of its inputs and outputs")
            else:
                continue  # an array the forward made from nothing the caller holds: no one can change it
        counter = owner._version
        versions.append((counter, counter[0], owner.array.shape))
    if node.computed_from:
        del node.computed_from  # only their versions are needed: let go of the arrays
    return tuple(versions)


# ---------------------------------------------------------------------------------------------
# the backward pass


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Accumulate d(tensors)/d(leaf) into the `.grad` of every leaf that requires grad."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grad_tensors is None or isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors] * len(tensors) if grad_tensors is None else [grad_tensors]
    roots = [(t, _initial_grad(t, g)) for t, g in zip(tensors, grad_tensors)]
    _run_backward(roots, retain_graph, capture=None)


def grad(outputs, inputs, grad_outputs=None, retain_graph=False, allow_unused=False):
    """The gradients of `outputs` with respect to `inputs`, returned instead of stored in `.grad`."""
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    roots = [(t, _initial_grad(t, g)) for t, g in zip(outputs, grad_outputs)]
    capture = {_edge_key(t): None for t in inputs}
    _run_backward(roots, retain_graph, capture)
    grads = []
    for t in inputs:
        g = capture[_edge_key(t)]
        if g is None and not allow_unused:
            raise BackwardError(
                f"one of the inputs (shape {list(t.shape)}) was not used to compute the outputs; "
                "pass allow_unused=True to get None for it"
            )
        grads.append(None if g is None else Tensor._wrap(g))
    return tuple(grads)  # a tuple even for one input, as in PyTorch: (g,) = autograd.grad(y, x)


def _edge_key(tensor):
    if not tensor.requires_grad:
        raise BackwardError("autograd.grad: every input must require grad")
    return _edge_to(tensor)


def _initial_grad(tensor, grad_tensor):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"backward() expects tensors, got {type(tensor).__name__}")
    if tensor.requires_grad and tensor._base is not None and tensor._view_version != tensor._version[0]:
        refresh_view(tensor)
    if not tensor.requires_grad:
        raise BackwardError(
            "this tensor does not require grad and has no grad_fn, so there is nothing to "
            "differentiate: create the leaves with requires_grad=True (and not under no_grad())"
        )
    if grad_tensor is None:
        if tensor.array.size != 1:
            raise BackwardError(
                f"grad can be implicitly created only for scalar outputs, but this tensor has shape "
                f"{list(tensor.shape)}: reduce it first (e.g. .sum()) or pass backward(gradient=...) "
                "of the same shape"
            )
        xp = backend.namespace(tensor.array)
        return xp.ones_like(tensor.array)
    if not isinstance(grad_tensor, Tensor):
        grad_tensor = Tensor._from_data(grad_tensor, dtype=tensor.dtype, device=tensor.device)
    elif grad_tensor.dtype is not tensor.dtype:  # the gradient takes the tensor's dtype, as in PyTorch
        grad_tensor = grad_tensor.detach().to(tensor.dtype)
    if tuple(grad_tensor.shape) != tuple(tensor.shape):
        raise BackwardError(
            f"gradient has shape {list(grad_tensor.shape)} but the tensor has shape "
            f"{list(tensor.shape)}: they must match"
        )
    backend.same_device([tensor.array, grad_tensor.array])
    return grad_tensor.array


@backend.quiet_float_errors  # the backward ops, as the forward ones, make inf and NaN silently
def _run_backward(roots, retain_graph, capture):
    """Kahn's algorithm over the recorded nodes, newest first, with per-node gradient buffers."""
    # 1. count, for every node reachable from the roots, how many edges point into it
    dependencies = {}
    stack = [t.grad_fn for t, _ in roots if t.grad_fn is not None]
    seen = set(stack)
    while stack:
        node = stack.pop()
        for edge in node.edges:
            if edge is not None and type(edge[0]) is Node:
                parent = edge[0]
                dependencies[parent] = dependencies.get(parent, 0) + 1
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)

    buffers = {}  # node -> list with the gradient of each of its outputs
    leaf_grads = {}  # leaf tensor -> accumulated gradient
    ready = []

    def send(edge, grad_array):
        target, index = edge
        if type(target) is Node:
            buffer = buffers.get(target)
            if buffer is None:
                buffer = buffers[target] = [None] * len(target.output_meta)
            buffer[index] = grad_array if buffer[index] is None else buffer[index] + grad_array
        else:
            previous = leaf_grads.get(target)
            leaf_grads[target] = grad_array if previous is None else previous + grad_array

    for tensor, grad_array in roots:
        if tensor.grad_fn is None:
            send((tensor, 0), grad_array)
        else:
            send((tensor.grad_fn, tensor.output_nr), grad_array)
    for node in {t.grad_fn for t, _ in roots if t.grad_fn is not None}:
        if dependencies.get(node, 0) == 0:
            heapq.heappush(ready, (-node.sequence, node))

    # 2. run each node once all the gradients of its outputs have arrived
    while ready:
        _, node = heapq.heappop(ready)
        grads = buffers.pop(node, None)  # None when every consumer returned None for it
        # autograd.grad takes a non-leaf's gradient before the tensor's hooks run, as PyTorch does
        if capture is not None and grads is not None:
            for index, g in enumerate(grads):
                key = (node, index)
                if key in capture and g is not None:
                    capture[key] = g
        if node.hooks and grads is not None:
            for index, hook in list(node.hooks):
                if grads[index] is not None:
                    grads[index] = _run_hook(hook, grads[index])
        if node.retained and grads is not None:
            for index, ref in node.retained:
                tensor = ref()
                if tensor is not None and grads[index] is not None:
                    _accumulate(tensor, grads[index])  # adds up over backward calls, as a leaf's does
        input_grads = [None] * len(node.edges) if grads is None else _call_backward(node, grads)
        if not retain_graph:
            node.saved = ()
            node.released = True
        for edge, g, meta in zip(node.edges, input_grads, node.input_meta):
            if edge is None:
                continue
            if g is not None:
                if g.shape != meta[0] or g.dtype != meta[1]:
                    g = _check_grad(node, g, meta)  # a clear error, or the input's dtype
                send(edge, g)
            parent = edge[0]  # counted down even without a gradient, or it would never run
            if type(parent) is Node:
                dependencies[parent] -= 1
                if dependencies[parent] == 0:
                    heapq.heappush(ready, (-parent.sequence, parent))

    # 3. leaves: store (or add to) .grad, or hand the gradients to autograd.grad()
    for leaf, g in leaf_grads.items():
        for hook in list(getattr(leaf, "_hooks", None) or ()):
            g = _run_hook(hook, g)
        if capture is not None:
            if (leaf, 0) in capture:
                capture[(leaf, 0)] = g
            continue
        _accumulate(leaf, g)


def _run_hook(hook, grad_array):
    """A hook from register_hook sees the gradient (a copy: it may not change the engine's); what it
    returns, if anything, replaces the gradient."""
    grad = Tensor._wrap(backend.namespace(grad_array).asarray(grad_array, copy=True))
    with no_grad():
        result = hook(grad)
    if result is None:
        return grad_array
    if not isinstance(result, Tensor) or tuple(result.shape) != tuple(grad.shape):
        got = f"shape {list(result.shape)}" if isinstance(result, Tensor) else type(result).__name__
        raise BackwardError(f"a hook must return None or a tensor of the gradient's shape {list(grad.shape)}, "
                            f"got {got}")
    xp = backend.same_device([grad_array, result.array])
    return result.array if result.array.dtype == grad_array.dtype else xp.astype(result.array, grad_array.dtype)


class RemovableHandle:
    """What register_hook returns: `handle.remove()` takes the hook away again."""

    def __init__(self, hooks, entry):
        self._hooks, self._entry = hooks, entry

    def remove(self):
        """Takes the hook away (a second call does nothing)."""
        if self._entry in self._hooks:
            self._hooks.remove(self._entry)


def _accumulate(tensor, g):
    if tensor._grad is None:
        # a copy: the same array may be the gradient of several tensors (as after an add)
        tensor._grad = Tensor._wrap(backend.namespace(g).asarray(g, copy=True))
    elif type(tensor._grad.array) is _ndarray and tensor._grad.array.flags.writeable \
            and 0 not in tensor._grad.array.strides:
        tensor._grad.array += g  # (the common case, told at once)
    elif backend.shares_elements(tensor._grad.array):  # an expand()ed tensor assigned as .grad
        raise RuntimeError(
            f"backward() cannot add into this .grad of shape {list(tensor._grad.shape)}: more than one of its "
            "elements refers to a single memory location (an expand()ed tensor was assigned as .grad); "
            "assign a .clone() of it instead"
        )
    elif backend.is_read_only(tensor._grad.array):  # read-only NumPy memory: the sum in a new array
        tensor._grad.array = tensor._grad.array + g
    else:
        tensor._grad.array += g


def _call_backward(node, grads):
    if node.saved_versions and not node.released:
        node.check_saved_versions()
    for index, g in enumerate(grads):
        if g is None and node.materialize_grads:  # an output nobody used: its gradient is zero
            shape, dt = node.output_meta[index]
            grads[index] = node.xp.zeros(shape, dtype=dt, **backend.creation_kwargs(node.xp))
    function = node.function
    if function.takes_arrays:
        result = function.backward(node, *grads)
    else:
        grads = [None if g is None else Tensor._wrap(g) for g in grads]
        layout = getattr(node, "result_positions", None)
        if layout is not None:  # forward also returned numbers: None is their gradient, as in PyTorch
            positions, count = layout
            spread = [None] * count
            for g, i in zip(grads, positions):
                spread[i] = g
            grads = spread
        with no_grad():
            result = function.backward(node, *grads)
    if not isinstance(result, tuple):
        result = (result,)
    if len(result) > len(node.edges) and all(r is None for r in result[len(node.edges):]):
        result = result[: len(node.edges)]  # trailing Nones for optional arguments not given: fine
    if len(result) != len(node.edges):
        raise BackwardError(
            f"{node.name()}: backward returned {len(result)} gradients but forward took "
            f"{len(node.edges)} arguments (return None for the ones that need no gradient)"
        )
    if not function.takes_arrays:
        for index, r in enumerate(result):
            if r is not None and not isinstance(r, Tensor):
                raise BackwardError(
                    f"{node.name()}: backward returned a {type(r).__name__} as the gradient of input "
                    f"{index}: return a tensor of that input's shape, or None where it needs no gradient"
                )
    if observers:
        for observer in observers_here():
            observer.on_backward(node, grads, result)
    if function.takes_arrays:
        return result
    return [r.array if isinstance(r, Tensor) else r for r in result]


def _check_grad(node, g, meta):
    shape, dt = meta
    if g.shape != shape:
        raise BackwardError(
            f"{node.name()} returned a gradient of shape {list(g.shape)} for an input of shape "
            f"{list(shape)}: the gradient of an input must have the input's shape"
        )
    if g.dtype != dt:
        g = backend.namespace(g).astype(g, dt)
    return g


from .tensor import Tensor  # noqa: E402  (Tensor needs this module; this module needs Tensor)

# a PyTorch name this module lacks says so (tinyattn/missing.py)
from . import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)  # its public names only
