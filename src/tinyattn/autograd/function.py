"""The graph as the forward pass records it: `Function`, its `apply`, and the `Node` each call leaves.

`Function.apply` runs an op's forward and, when a gradient is needed, records a `Node`: which Function
ran, what its forward saved for the backward (with the versions of the tensors it belongs to), and the
edges to the nodes that made its inputs. The backward walk over these nodes is in engine.py.
"""

import itertools
import threading

from .. import backend, tensor_core
from ..errors import BackwardError
from ..tensor_core import TensorCore
from .mode import grad_mode, no_grad


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
            if isinstance(a, TensorCore):
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
                metas.append((array.shape, array.dtype) if isinstance(a, TensorCore) else None)
            node.edges = tuple(edges)
            node.input_meta = tuple(metas)
            if single:  # (most ops: one output, without the loops)
                out = out_arrays[0]
                node.output_meta = ((out.shape, out.dtype),)
                outputs = [tensor_core.wrap(out, _is_float(out), node, 0)]
            else:
                node.output_meta = tuple([(a.shape, a.dtype) for a in out_arrays])
                outputs = [tensor_core.wrap(a, _is_float(a), node, i) for i, a in enumerate(out_arrays)]
        else:  # no graph: nothing the forward saved is needed (a node that saved nothing is left as it is)
            if node.saved:
                node.saved = ()
            outputs = [tensor_core.wrap(out_arrays[0])] if single else [tensor_core.wrap(a) for a in out_arrays]
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
    tensors = [a for a in args if isinstance(a, TensorCore)]
    needs = tuple(isinstance(a, TensorCore) and a._requires_grad for a in args)
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
    positions = [i for i, r in enumerate(results) if isinstance(r, TensorCore)]  # the rest: numbers, given back
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
        node.input_meta = tuple((a.array.shape, a.array.dtype) if isinstance(a, TensorCore) else None for a in args)
        node.output_meta = tuple((results[i].array.shape, results[i].array.dtype) for i in positions)
        for nr, i in enumerate(positions):
            r = results[i]
            if any(r is n for n in node.non_differentiable):
                outputs[i] = tensor_core.wrap(r.array)  # no grad_fn: backward gets zeros (or None) for it
            elif any(r is d for d in dirty):  # the input itself, now made by this node
                r.grad_fn, r.output_nr, r._requires_grad = node, nr, True
            else:
                outputs[i] = tensor_core.wrap(r.array, _is_float(r.array), node, nr)
    else:
        node.saved = ()
        for i in positions:
            if not any(results[i] is d for d in dirty):
                outputs[i] = tensor_core.wrap(results[i].array)
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
            if isinstance(item, TensorCore):
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
