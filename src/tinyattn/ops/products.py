"""Products, each forward beside its backward: matmul (mm, mv, dot and the batched forms) and einsum.
"""

import math

from .. import backend
from ..errors import ShapeError
from .base import Op, broadcast_shape, unbroadcast


# ---------------------------------------------------------------------------------------------
# matrix products


def check_matmul_shapes(a_shape, b_shape):
    """Raises a ShapeError naming both shapes unless a @ b can be computed."""
    if not a_shape or not b_shape:
        raise ShapeError(f"matmul needs tensors with at least 1 dim, got shapes {list(a_shape)} and {list(b_shape)}")
    inner_b = b_shape[0] if len(b_shape) == 1 else b_shape[-2]
    if a_shape[-1] != inner_b:
        raise ShapeError(
            f"matmul: shapes {list(a_shape)} and {list(b_shape)} cannot be multiplied: the last dim of "
            f"the first ({a_shape[-1]}) must equal the "
            f"{'size' if len(b_shape) == 1 else 'second-to-last dim'} of the second ({inner_b})"
        )
    if (len(a_shape) > 2 or len(b_shape) > 2) and broadcast_shape(a_shape[:-2], b_shape[:-2]) is None:
        raise ShapeError(f"matmul: the batch dims of shapes {list(a_shape)} and {list(b_shape)} (all but the last "
                         "two) cannot be broadcast together")


_MATMUL_NAMES = {(2, 2): "Mm", (2, 1): "Mv", (1, 1): "Dot"}


class Matmul(Op):
    """a @ b with NumPy's rules: batched and broadcast over leading dims, 1-D operands promoted."""

    @staticmethod
    def forward(ctx, a, b):
        check_matmul_shapes(a.shape, b.shape)
        ctx.save_for_backward(a, b)
        # PyTorch's grad_fn names: MmBackward0 for matrices, UnsafeViewBackward0 for batches, ...
        ctx.name_hint = _MATMUL_NAMES.get((a.ndim, b.ndim), "UnsafeView" if a.ndim > 2 else None)
        return backend.matmul(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        xp = ctx.xp
        # treat vectors as matrices: a (k,) is a (1, k) row, b (k,) is a (k, 1) column
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        g2 = grad
        if b.ndim == 1:  # first: for vector @ vector the gradient is 0-d, () -> (1,) -> (1, 1)
            g2 = xp.expand_dims(g2, axis=-1)
        if a.ndim == 1:
            g2 = xp.expand_dims(g2, axis=-2)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = xp.reshape(unbroadcast(xp, backend.matmul(g2, backend.matrix_transpose(b2)), a2.shape), a.shape)
        if ctx.needs_input_grad[1]:
            gb = xp.reshape(unbroadcast(xp, backend.matmul(backend.matrix_transpose(a2), g2), b2.shape), b.shape)
        return ga, gb


# ---------------------------------------------------------------------------------------------
# einsum
#
# An equation such as "bhqd,bhkd->bhqk" names each dim of each operand with a letter (a label).
# Internally a label is a letter, or an int for each dim that "..." stands for (0, 1, ... counted
# from the left of the broadcast "..." dims, which align from the right as in broadcasting).
# Labels in the output are kept; the others are summed over. The forward contracts the operands two
# at a time with one batched matrix product each; the backward of operand k is an einsum again: the
# output's gradient contracted with the other operands, into operand k's labels.


class EinsumPlan:
    """A parsed equation: the labels of each operand and of the output, and each label's size."""

    def __init__(self, inputs, output, sizes, name=None):
        self.inputs, self.output, self.sizes, self.name = inputs, output, sizes, name


def _einsum_term(term, equation, what):
    """The letters of one term and where its '...' stands (None without one)."""
    letters, ellipsis_at, i = [], None, 0
    while i < len(term):
        if term.startswith("...", i):
            if ellipsis_at is not None:
                raise ValueError(f"einsum: {what} in {equation!r} has more than one '...'")
            ellipsis_at, i = len(letters), i + 3
        elif term[i] == ".":
            raise ValueError(f"einsum: {what} in {equation!r} has a '.' that is not part of '...'")
        elif term[i].isascii() and term[i].isalpha():
            letters.append(term[i])
            i += 1
        else:
            raise ValueError(
                f"einsum: invalid subscript {term[i]!r} for {what} in {equation!r}: subscripts are the "
                "letters a-z and A-Z, operands are separated by ',' and the output follows '->'"
            )
    return letters, ellipsis_at


def _einsum_size(sizes, label, n, k, labels, shape):
    """Record that `label` has size n in operand k. A label repeated within an operand (a diagonal)
    needs equal sizes; across operands a size of 1 broadcasts, as in PyTorch."""
    name = f"subscript {label!r}" if isinstance(label, str) else f"'...' dim {label}"
    same_operand = [m for lab, m in zip(labels, shape) if lab == label]
    if any(m != n for m in same_operand):
        raise ShapeError(f"einsum: {name} is repeated in operand {k} (shape {list(shape)}) with different "
                         f"sizes {same_operand}: a repeated subscript takes a diagonal, which needs equal sizes")
    seen = sizes.get(label, 1)
    if n != seen and 1 not in (n, seen):
        raise ShapeError(f"einsum: {name} has size {n} in operand {k} (shape {list(shape)}) but size "
                         f"{seen} in an earlier operand; sizes must be equal or 1 (which broadcasts)")
    sizes[label] = n if seen == 1 else seen


def parse_einsum(equation, shapes):
    """The EinsumPlan of `equation` for operands of these shapes; ValueError (ShapeError for sizes that
    disagree) naming what is wrong."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum expects the equation as a string first, got {type(equation).__name__}")
    spec = equation.replace(" ", "")
    if spec.count("->") > 1:
        raise ValueError(f"einsum: the equation {equation!r} has more than one '->'")
    left, arrow, right = spec.partition("->")
    terms = left.split(",")
    if len(terms) != len(shapes):
        raise ValueError(
            f"einsum: the equation {equation!r} has {len(terms)} operand term{'s' * (len(terms) != 1)} "
            f"({left!r}) but {len(shapes)} tensor{'s were' if len(shapes) != 1 else ' was'} given"
        )
    parsed = [_einsum_term(term, equation, f"operand {k}") for k, term in enumerate(terms)]
    ellipsis_dims = 0
    for k, ((letters, ellipsis_at), shape) in enumerate(zip(parsed, shapes)):
        if ellipsis_at is None and len(letters) != len(shape):
            raise ValueError(
                f"einsum: operand {k} has {len(shape)} dims (shape {list(shape)}) but its term "
                f"{terms[k]!r} names {len(letters)}: give one letter per dim, or '...' for the rest"
            )
        if ellipsis_at is not None and len(letters) > len(shape):
            raise ValueError(
                f"einsum: operand {k} has {len(shape)} dims (shape {list(shape)}) but its term "
                f"{terms[k]!r} names {len(letters)} besides '...'"
            )
        if ellipsis_at is not None:
            ellipsis_dims = max(ellipsis_dims, len(shape) - len(letters))
    inputs, sizes = [], {}
    for k, ((letters, ellipsis_at), shape) in enumerate(zip(parsed, shapes)):
        labels = list(letters)
        if ellipsis_at is not None:
            count = len(shape) - len(letters)
            labels[ellipsis_at:ellipsis_at] = range(ellipsis_dims - count, ellipsis_dims)
        for label, n in zip(labels, shape):
            _einsum_size(sizes, label, n, k, labels, shape)
        inputs.append(tuple(labels))
    used = [label for labels in inputs for label in labels]
    if arrow:
        letters, ellipsis_at = _einsum_term(right, equation, "the output")
        for letter in letters:
            if letters.count(letter) > 1:
                raise ValueError(f"einsum: the output subscript {letter!r} appears more than once in {equation!r}")
            if letter not in sizes:
                raise ValueError(f"einsum: the output subscript {letter!r} of {equation!r} appears in no operand")
        output = list(letters)
        if ellipsis_at is not None:
            output[ellipsis_at:ellipsis_at] = range(ellipsis_dims)
    else:  # the implicit output: the "..." dims, then the letters used once, in alphabetical (ASCII) order
        output = list(range(ellipsis_dims)) + sorted(
            label for label in sizes if isinstance(label, str) and used.count(label) == 1
        )
    return EinsumPlan(tuple(inputs), tuple(output), sizes)


def einsum_labels_present(shape, labels, sizes):
    """The labels of an operand without those it only broadcasts along (size 1 where others have more)."""
    return [label for label, n in zip(labels, shape) if n == sizes[label]]


def _take_diagonals(xp, array, labels):
    """Each label repeated in `labels` ("ii") becomes one dim: the diagonal. Returns (array, labels)."""
    labels = list(labels)
    for label in dict.fromkeys(labels):
        places = [i for i, lab in enumerate(labels) if lab == label]
        if len(places) == 1:
            continue
        rest = [i for i in range(len(labels)) if i not in places]
        n = array.shape[places[0]]
        # with the repeated dims last and flattened, the diagonal is every (1 + n + n^2 ...)th element
        array = xp.reshape(xp.permute_dims(array, tuple(rest + places)),
                           tuple(array.shape[i] for i in rest) + (n ** len(places),))
        array = array[..., ::sum(n**j for j in range(len(places)))]
        labels = [labels[i] for i in rest] + [label]
    return array, labels


def _sum_out(xp, array, labels, keep):
    """Sum over the labels not in `keep`."""
    axes = tuple(i for i, label in enumerate(labels) if label not in keep)
    if not axes:
        return array, labels
    return xp.sum(array, axis=axes), [label for label in labels if label in keep]


def _contract_pair(xp, a, a_labels, b, b_labels, needed):
    """Two operands into one, by one batched matrix product: (batch, left, summed) @ (batch, summed, right)."""
    a, a_labels = _sum_out(xp, a, a_labels, needed | set(b_labels))  # what only a has and nobody needs
    b, b_labels = _sum_out(xp, b, b_labels, needed | set(a_labels))
    batch = [label for label in a_labels if label in b_labels and label in needed]
    summed = [label for label in a_labels if label in b_labels and label not in needed]
    left = [label for label in a_labels if label not in b_labels]
    right = [label for label in b_labels if label not in a_labels]
    size = dict(zip(a_labels, a.shape)) | dict(zip(b_labels, b.shape))

    def arrange(array, array_labels, *groups):
        order = tuple(array_labels.index(label) for group in groups for label in group)
        return xp.reshape(xp.permute_dims(array, order), tuple(math.prod(size[lab] for lab in g) for g in groups))

    product = backend.matmul(arrange(a, a_labels, batch, left, summed), arrange(b, b_labels, batch, summed, right))
    return xp.reshape(product, tuple(size[label] for label in batch + left + right)), batch + left + right


def einsum_contract(xp, arrays, labels, output, sizes):
    """The einsum of arrays (each with its labels) into the `output` labels."""
    operands = []
    for array, array_labels in zip(arrays, labels):
        present = einsum_labels_present(array.shape, array_labels, sizes)
        array = xp.reshape(array, tuple(sizes[label] for label in present))  # drop the broadcast dims
        operands.append(_take_diagonals(xp, array, present))
    result, result_labels = operands[0]
    for k in range(1, len(operands)):
        needed = set(output).union(*(set(labs) for _, labs in operands[k + 1:]))
        result, result_labels = _contract_pair(xp, result, result_labels, *operands[k], needed)
    result, result_labels = _sum_out(xp, result, result_labels, set(output))
    return xp.permute_dims(result, tuple(result_labels.index(label) for label in output))


def _place_on_diagonals(xp, array, labels, target):
    """The inverse of taking diagonals: `array` (one dim per label of `labels`, all distinct) laid out
    as `target`, whose repeated labels get the values on their diagonal and zeros elsewhere."""
    labels = list(labels)
    for label in dict.fromkeys(target):
        repeats = target.count(label)
        if repeats == 1:
            continue
        at = labels.index(label)
        rest = [i for i in range(len(labels)) if i != at]
        n = array.shape[at]
        array = xp.permute_dims(array, tuple(rest + [at]))
        full = xp.zeros(array.shape[:-1] + (n**repeats,), dtype=array.dtype, **backend.creation_kwargs(xp))
        full[..., ::sum(n**j for j in range(repeats))] = array
        array = xp.reshape(full, array.shape[:-1] + (n,) * repeats)
        labels = [labels[i] for i in rest] + [label] * repeats
    order, taken = [], set()
    for label in target:  # the k-th occurrence of a label in target takes the k-th dim with that label
        position = next(i for i, lab in enumerate(labels) if lab == label and i not in taken)
        taken.add(position)
        order.append(position)
    return xp.permute_dims(array, tuple(order))


class Einsum(Op):
    """torch.einsum. The gradient of operand k is the einsum of the output's gradient with the other
    operands, into operand k's labels ("ij,jk->ik": dA = "ik,jk->ij" of (grad, B)), with three
    additions: a label that only operand k has and the output lacks was summed, so its gradient is
    the same all along it (broadcast); a repeated label ("ii") puts the gradient on the diagonal; a
    dim of size 1 that broadcast is summed back to size 1."""

    @staticmethod
    def forward(ctx, plan, *arrays):
        if plan.name:
            ctx.name_hint = plan.name
        ctx.plan = plan
        ctx.save_for_backward(*arrays)
        out = einsum_contract(ctx.xp, arrays, plan.inputs, plan.output, plan.sizes)
        if arrays and out.dtype != arrays[0].dtype:  # NumPy sums int32 into int64; PyTorch keeps int32
            out = ctx.xp.astype(out, arrays[0].dtype)
        return out

    @staticmethod
    def backward(ctx, grad):
        arrays = ctx.saved_tensors
        xp, plan = ctx.xp, ctx.plan
        grads = [None]
        for k, array in enumerate(arrays):
            if not ctx.needs_input_grad[k + 1]:
                grads.append(None)
                continue
            present = einsum_labels_present(array.shape, plan.inputs[k], plan.sizes)  # repeats included
            others = [j for j in range(len(arrays)) if j != k]
            reachable = set(plan.output).union(
                *(einsum_labels_present(arrays[j].shape, plan.inputs[j], plan.sizes) for j in others)
            )
            distinct = list(dict.fromkeys(present))
            target = [label for label in distinct if label in reachable]
            g = einsum_contract(xp, [grad] + [arrays[j] for j in others],
                                [plan.output] + [plan.inputs[j] for j in others], tuple(target), plan.sizes)
            # the labels only operand k had: summed in the forward, so the gradient is constant along them
            g = xp.broadcast_to(xp.reshape(g, tuple(plan.sizes[lab] if lab in target else 1 for lab in distinct)),
                                tuple(plan.sizes[lab] for lab in distinct))
            g = _place_on_diagonals(xp, g, distinct, present)
            grads.append(xp.reshape(g, array.shape))  # back to size 1 where operand k broadcast
        return tuple(grads)
