"""`tinyattn.autograd.functional`: the Jacobian of a function, and vector-Jacobian products, as
torch.autograd.functional computes them (by reverse mode: one backward pass per output element).

tinyattn's backward does not record a graph of its own, so there are no second derivatives here:
create_graph=True is refused with a message that says so, and there is no hessian.
"""

from ..functions import stack
from ..tensor import Tensor
from .engine import grad as _grad
from .mode import enable_grad


def _as_tuple(value, what):
    is_tuple = isinstance(value, (tuple, list))
    values = tuple(value) if is_tuple else (value,)
    for v in values:
        if not isinstance(v, Tensor):
            raise TypeError(f"The {what} given to the function must be either a Tensor or a tuple of Tensors but "
                            f"the value at index {values.index(v)} has type {type(v).__name__}.")
    return is_tuple, values


def _no_graph(create_graph):
    if create_graph:
        raise NotImplementedError("create_graph=True: tinyattn's backward does not record a graph, so second "
                                  "derivatives (Hessians, gradients of gradients) are not available")


def _call(func, inputs):
    """func's outputs on fresh leaves that require grad (copies of the inputs), so that the
    caller's tensors are untouched."""
    leaves = tuple(x.detach().requires_grad_(x.dtype.is_floating_point) for x in inputs)
    with enable_grad():
        outputs = func(*leaves)
    return leaves, outputs


def _zeros_if_unused(grads, leaves, strict):
    result = []
    for g, x in zip(grads, leaves):
        if g is None:
            if strict:
                raise RuntimeError("The output of the user-provided function is independent of an input. This is "
                                   "not allowed in strict mode.")
            g = x.detach() * 0
        result.append(g)
    return result


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: d output[i...] / d input[j...], of shape output.shape +
    input.shape, nested as tuples when func takes or returns tuples (as PyTorch nests them)."""
    _no_graph(create_graph)
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f'Expected strategy to be either "forward-mode" or "reverse-mode", got {strategy!r}')
    inputs_tuple, inputs = _as_tuple(inputs, "inputs")
    leaves, outputs = _call(func, inputs)
    outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function")
    rows = []  # rows[i][j]: d outputs[i] / d inputs[j]
    for out in outputs:
        flat = out.reshape(-1)
        per_input = [[] for _ in leaves]
        for k in range(flat.shape[0]):
            one_hot = flat.detach() * 0
            one_hot[k] = 1
            if out.requires_grad:
                grads = _grad(flat, leaves, grad_outputs=one_hot, retain_graph=True, allow_unused=True)
            else:
                grads = (None,) * len(leaves)
            for j, g in enumerate(_zeros_if_unused(grads, leaves, strict)):
                per_input[j].append(g)
        row = []
        for j, x in enumerate(leaves):
            if per_input[j]:
                row.append(stack(per_input[j]).reshape(*out.shape, *x.shape))
            else:
                row.append((x.detach() * 0).reshape(*out.shape, *x.shape))
        rows.append(tuple(row) if inputs_tuple else row[0])
    return tuple(rows) if outputs_tuple else rows[0]


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the outputs and the vector-Jacobian product, where v has the
    outputs' shape (it may be left out for a one-element output)."""
    _no_graph(create_graph)
    inputs_tuple, inputs = _as_tuple(inputs, "inputs")
    leaves, outputs = _call(func, inputs)
    outputs_tuple, outputs_seq = _as_tuple(outputs, "outputs of the user-provided function")
    if v is None:
        if any(o.numel() != 1 for o in outputs_seq):
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                               "Tensor with a single element.")
        vs = (None,) * len(outputs_seq)
    else:
        _, vs = _as_tuple(v, "v")
        for o, w in zip(outputs_seq, vs):
            if tuple(o.shape) != tuple(w.shape):
                raise RuntimeError(f"Mismatch in shape: v has shape {list(w.shape)} while the output has shape "
                                   f"{list(o.shape)}")
    used = [(o, w) for o, w in zip(outputs_seq, vs) if o.requires_grad]
    if used:
        grads = _grad([o for o, _ in used], leaves, grad_outputs=[w for _, w in used], allow_unused=True)
    else:
        grads = (None,) * len(leaves)
    grads = _zeros_if_unused(grads, leaves, strict)
    detached = tuple(o.detach() for o in outputs_seq)
    return (detached if outputs_tuple else detached[0]), (tuple(grads) if inputs_tuple else grads[0])


__all__ = ["jacobian", "vjp"]
