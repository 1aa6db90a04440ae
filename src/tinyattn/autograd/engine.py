"""The backward pass: from the roots back to the leaves, each node once all its output gradients are in.

`backward()` and `grad()` start it; `_run_backward` is the walk (Kahn's algorithm on the recorded
nodes, newest first, as PyTorch orders them); `_call_backward` calls one node's backward and checks
what it returns; `_accumulate` adds a leaf's gradient into `.grad`.
"""

import heapq

from .. import backend, tensor_core
from ..errors import BackwardError
from ..tensor_core import TensorCore
from .function import Node, _edge_to, _ndarray, observers, observers_here, refresh_view
from .mode import no_grad


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Accumulate d(tensors)/d(leaf) into the `.grad` of every leaf that requires grad."""
    tensors = [tensors] if isinstance(tensors, TensorCore) else list(tensors)
    if grad_tensors is None or isinstance(grad_tensors, TensorCore):
        grad_tensors = [grad_tensors] * len(tensors) if grad_tensors is None else [grad_tensors]
    roots = [(t, _initial_grad(t, g)) for t, g in zip(tensors, grad_tensors)]
    _run_backward(roots, retain_graph, capture=None)


def grad(outputs, inputs, grad_outputs=None, retain_graph=False, allow_unused=False):
    """The gradients of `outputs` with respect to `inputs`, returned instead of stored in `.grad`."""
    outputs = [outputs] if isinstance(outputs, TensorCore) else list(outputs)
    inputs = [inputs] if isinstance(inputs, TensorCore) else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, TensorCore):
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
        grads.append(None if g is None else tensor_core.wrap(g))
    return tuple(grads)  # a tuple even for one input, as in PyTorch: (g,) = autograd.grad(y, x)


def _edge_key(tensor):
    if not tensor.requires_grad:
        raise BackwardError("autograd.grad: every input must require grad")
    return _edge_to(tensor)


def _initial_grad(tensor, grad_tensor):
    if not isinstance(tensor, TensorCore):
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
    if not isinstance(grad_tensor, TensorCore):
        grad_tensor = tensor_core.from_data(grad_tensor, dtype=tensor.dtype, device=tensor.device)
    elif grad_tensor.dtype is not tensor.dtype:  # the gradient takes the tensor's dtype, as in PyTorch
        xp = backend.namespace(grad_tensor.array)
        grad_tensor = tensor_core.wrap(xp.astype(grad_tensor.array, tensor.array.dtype))
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
    grad = tensor_core.wrap(backend.namespace(grad_array).asarray(grad_array, copy=True))
    with no_grad():
        result = hook(grad)
    if result is None:
        return grad_array
    if not isinstance(result, TensorCore) or tuple(result.shape) != tuple(grad.shape):
        got = f"shape {list(result.shape)}" if isinstance(result, TensorCore) else type(result).__name__
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
        tensor._grad = tensor_core.wrap(backend.namespace(g).asarray(g, copy=True))
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
        grads = [None if g is None else tensor_core.wrap(g) for g in grads]
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
            if r is not None and not isinstance(r, TensorCore):
                raise BackwardError(
                    f"{node.name()}: backward returned a {type(r).__name__} as the gradient of input "
                    f"{index}: return a tensor of that input's shape, or None where it needs no gradient"
                )
    if observers:
        for observer in observers_here():
            observer.on_backward(node, grads, result)
    if function.takes_arrays:
        return result
    return [r.array if isinstance(r, TensorCore) else r for r in result]


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
