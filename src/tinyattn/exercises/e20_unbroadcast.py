"""Exercise 20, the engine track: unbroadcast, the sum that undoes broadcasting in every backward."""

import itertools

import numpy as np

from . import engine
from .engine_checks import IMPORTS, describe, example, leaf_differences, leaf_grads, random_case, received_leaves
from .exercise import Mistake
from .task import Task, split_judge, wrong


def unbroadcast(grad, shape):
    """Sum `grad` (shaped like an op's output) down to `shape` (the shape of one of its inputs)."""
    # --- solution ---
    lead = grad.ndim - len(shape)  # the dims broadcasting added in front
    dims = tuple(range(lead)) + tuple(lead + i for i, size in enumerate(shape)
                                      if size == 1 and grad.shape[lead + i] != 1)  # and the stretched size-1 dims
    return grad.sum(axis=dims, keepdims=True).reshape(shape)


# --- mistakes learners make -------------------------------------------------------------------


def leading_dims_only(grad, shape):
    lead = grad.ndim - len(shape)
    return grad.sum(axis=tuple(range(lead)))  # the size-1 dims are not summed


def from_the_left(grad, shape):
    extra = tuple(range(len(shape), grad.ndim))  # the added dims taken at the end, not in front
    grad = grad.sum(axis=extra) if extra else grad
    dims = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    return grad.sum(axis=dims, keepdims=True).reshape(shape)


def mean_not_sum(grad, shape):
    lead = grad.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, size in enumerate(shape)
                                      if size == 1 and grad.shape[lead + i] != 1)
    return grad.mean(axis=dims, keepdims=True).reshape(shape)


def keepdims_forgotten(grad, shape):
    lead = grad.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, size in enumerate(shape)
                                      if size == 1 and grad.shape[lead + i] != 1)
    return grad.sum(axis=dims)  # a size-1 dim of shape is gone


# ----------------------------------------------------------------------------------------------

# shapes the small engine's graphs do not have (it is 2-D): more dims, added and stretched at once
DIRECT = (((2, 3, 4), (3, 1)), ((2, 3, 4), (1, 4)), ((2, 3, 4), ()), ((5, 1, 3), (1, 1, 3)), ((2, 3), (2, 3)),
          ((4, 2, 1, 3), (2, 1, 1)))


MOST_CALLS, MOST_DIMS = 1000, 6  # far more than a graph of the engine makes: the verdict reads no more


def probe(piece, recipe, steps):
    """Every call the engine makes of the learner's unbroadcast on the recipe's graph (grad, shape,
    result), up to one whose result is not an array; the leaves' gradients; then the results of
    the calls in DIRECT."""
    calls = steps.data["calls"] = []

    def call(grad, shape):
        result = piece(grad.copy(), shape)  # a copy: the engine's arrays are never the learner's to change
        calls.append({"grad": grad, "shape": [int(n) for n in shape], "result": _result(result)})
        if isinstance(calls[-1]["result"], dict):
            raise wrong("bad-return", "returns the wrong thing")  # the verdict says more, from `calls`
        return np.asarray(result)

    def whole_engine():
        with engine.using(unbroadcast=call):
            leaves, values = engine.build(recipe)
            values[-1].backward()
        return leaf_grads(leaves)

    def more_dims():  # then more dims than the engine has
        results = []
        for grad_shape, shape in DIRECT:
            results.append(_result(piece(_direct_grad(grad_shape), shape)))
            if isinstance(results[-1], dict):
                break
        return results

    steps.run("engine", whole_engine)
    steps.run("direct", more_dims)


def _result(result):
    """A result as data: a float64 array, or {"type": ...} for what is neither an array nor a number."""
    if not isinstance(result, np.ndarray) and not np.isscalar(result):
        return {"type": type(result).__name__}
    return np.asarray(result, dtype=np.float64)


def _direct_grad(grad_shape):
    return np.arange(1.0, 1.0 + np.prod(grad_shape)).reshape(grad_shape) / 7


def verdict(recipe, steps):
    calls = steps["calls"]
    if len(calls) > MOST_CALLS or any(np.ndim(call["grad"]) > MOST_DIMS for call in calls):
        raise wrong("garbled", "answered with something else",
                    "The process that ran your code sent back more calls, or gradients of more dims, than the "
                    "engine makes.")
    for call in calls:
        _check_call(np.asarray(call["grad"], dtype=np.float64), tuple(call["shape"]), call["result"])
    leaves = received_leaves(recipe, steps["engine"])
    results = steps["direct"]
    if len(results) < len(DIRECT) and not (results and isinstance(results[-1], dict)):
        raise wrong("garbled", "answered with something else", "Fewer results than calls came back.")
    for (grad_shape, shape), result in zip(DIRECT, results):
        _check_call(_direct_grad(grad_shape), shape, result)
    differences = leaf_differences(recipe, leaves)
    if differences:
        raise wrong("no-pattern", "disagrees with tinyattn's engine",
                    "Each unbroadcast gave the right sum, but the engine gives other gradients with it.",
                    ["with your unbroadcast: " + d for d in differences])


def _check_call(grad, shape, result):
    right = unbroadcast(grad, shape)
    call = f"unbroadcast(grad of shape {list(grad.shape)}, {tuple(shape)})"
    if not isinstance(result, np.ndarray):  # what the probe noted: {"type": ...} for neither array nor number
        name = result.get("type") if isinstance(result, dict) else type(result).__name__
        raise wrong("bad-return", "returns the wrong thing", f"{call} returned a {name}: return a NumPy array.")
    result = np.asarray(result, dtype=np.float64)
    if result.shape == right.shape and np.allclose(result, right, rtol=1e-9, atol=1e-12):
        return
    lead = grad.ndim - len(shape)
    needed = set(range(lead)) | {lead + i for i, size in enumerate(shape) if size == 1 and grad.shape[lead + i] != 1}
    lines = [f"{call}: yours has shape {list(result.shape)}, it must be {list(shape)}"
             if result.shape != right.shape else f"{call}: right shape, wrong numbers"]
    if result.shape != right.shape and result.size == right.size and np.allclose(result.reshape(right.shape), right):
        raise wrong("right-values-wrong-shape", "right numbers, wrong shape",
                    f"Sum with keepdims=True and reshape to {list(shape)}: a size-1 dim of the input must stay.",
                    lines)
    if result.shape == right.shape and np.allclose(result * _count(grad.shape, needed), right):
        raise wrong("mean-not-sum", "a mean, not a sum",
                    "Every element of the broadcast input reaches several outputs, and its gradient is the "
                    "sum of theirs: sum, do not average.", lines)
    scale = float(np.sum(right * right))
    factor = float(np.sum(result * right)) / scale if scale and result.shape == right.shape else None
    if factor is not None and np.allclose(result, factor * right, rtol=1e-9, atol=1e-12):
        raise wrong("constant-factor", f"off by a factor of {factor:.4g}",
                    "The right sum, times a constant: the gradient of a broadcast input is the plain sum of "
                    "grad over the broadcast dims.", lines)
    summed = _summed_over(grad, result)
    if summed is not None and summed < needed:
        missed = sorted(needed - summed)
        raise wrong("missing-broadcast-sum", "missing the sum over broadcast dims",
                    f"Broadcasting grew {list(shape)} to {list(grad.shape)} along dim{'s' * (len(needed) > 1)} "
                    f"{_and(sorted(needed))}: the dims it added in front, and the size-1 dims it stretched. Yours "
                    f"misses dim{'s' * (len(missed) > 1)} {_and(missed)}.", lines)
    if summed is not None:
        raise wrong("wrong-axis-sum", "summed over the wrong dims",
                    f"Broadcasting lines shapes up from the right: {list(shape)} against {list(grad.shape)} is "
                    f"broadcast along dim{'s' * (len(needed) > 1)} {_and(sorted(needed))} of grad, and yours "
                    f"sums over {_and(sorted(summed))}.", lines)
    raise wrong("no-pattern", "disagrees with the sum over the broadcast dims",
                "The gradient of a broadcast input is grad summed over the dims broadcasting added or stretched.",
                lines)


def _count(shape, dims):
    return float(np.prod([shape[d] for d in dims])) if dims else 1.0


def _summed_over(grad, result):
    """The set of grad's dims whose sum gives `result` (with or without keepdims), or None."""
    for size in range(0, grad.ndim + 1):
        for dims in itertools.combinations(range(grad.ndim), size):
            for keepdims in (True, False):
                candidate = grad.sum(axis=dims, keepdims=keepdims)
                if candidate.size == result.size and np.allclose(candidate.reshape(result.shape), result):
                    return set(dims)
    return None


def _and(items):
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


EXERCISE = Task(
    number=20,
    name="unbroadcast",
    title="unbroadcast: sum a gradient back to its input's shape",
    track="engine",
    piece=unbroadcast,
    statement=(
        "When an op broadcasts (x + b with x (2, 3) and b (3,)), every element of b is used by several "
        "outputs, so b's gradient is the output's gradient summed over the dims broadcasting added in front "
        "and over the size-1 dims it stretched, and has b's shape. The engine's Add, Sub and Mul call "
        "unbroadcast(grad, shape) for each input. grad and the result are NumPy arrays."
    ),
    signature=(
        "unbroadcast(grad: array, shape: tuple) -> array of that shape\n"
        "  e.g. grad (2, 3) to (3,): the sum over dim 0; to (2, 1): over dim 1, keeping it; to (): all"
    ),
    hint=(
        "Line the shapes up from the right: the first grad.ndim - len(shape) dims of grad were added, so "
        "sum over them; then sum over each dim where shape has 1 and grad does not. grad.sum(axis=dims, "
        "keepdims=True).reshape(shape) does both. See docs/internals.md, step 5 (broadcasting: "
        "unbroadcast)."
    ),
    todo="return grad summed down to shape",
    judge=split_judge(probe, verdict),
    probe=probe,
    verdict=verdict,
    example=example,
    random_case=random_case,
    describe=describe,
    imports=IMPORTS,
    mistakes=(
        Mistake(leading_dims_only, "missing-broadcast-sum"),
        Mistake(from_the_left, "wrong-axis-sum"),
        Mistake(mean_not_sum, "mean-not-sum"),
        Mistake(keepdims_forgotten, "right-values-wrong-shape"),
    ),
)
