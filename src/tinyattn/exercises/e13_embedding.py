"""Exercise 13: an embedding lookup: a row used several times gets the sum of its gradients."""

import numpy as np

import tinyattn as torch
from tinyattn.autograd import Function
from tinyattn.nn import functional as F

from .exercise import Exercise, Mistake, Suspect


class Embedding(Function):
    @staticmethod
    def forward(ctx, ids, weight):
        ctx.save_for_backward(ids)
        ctx.num_rows = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, grad_out):
        (ids,) = ctx.saved_tensors
        # --- solution ---
        # out[t] = weight[ids[t]]: row r gets the sum of grad_out[t] over every t with ids[t] == r.
        # A one-hot matrix (tokens, rows) does all the sums in one product.
        one_hot = F.one_hot(ids.reshape(-1), ctx.num_rows).to(grad_out.dtype)
        grad_weight = one_hot.T @ grad_out.reshape(-1, grad_out.shape[-1])
        return None, grad_weight


# --- mistakes learners make -------------------------------------------------------------------


def assigned(ctx, grad_out):
    (ids,) = ctx.saved_tensors
    grad_weight = torch.zeros(ctx.num_rows, grad_out.shape[-1], dtype=grad_out.dtype)
    grad_weight[ids.reshape(-1)] = grad_out.reshape(-1, grad_out.shape[-1])  # a repeated id: the last wins
    return None, grad_weight


def rows_by_position(ctx, grad_out):
    grad_weight = torch.zeros(ctx.num_rows, grad_out.shape[-1], dtype=grad_out.dtype)
    tokens = grad_out.reshape(-1, grad_out.shape[-1])
    grad_weight[: tokens.shape[0]] = tokens  # row t, not row ids[t]
    return None, grad_weight


# ----------------------------------------------------------------------------------------------


def _written(ids, rows, dim, keep):
    """The Jacobian of a backward that writes grad_out[t] into row ids[t] for the tokens in `keep`."""
    tokens = ids.size
    jacobian = np.zeros((tokens, dim, rows, dim))
    for t in keep:
        jacobian[t, :, ids.flat[t], :] = np.eye(dim)
    return jacobian.reshape(tokens * dim, rows, dim)


def _assigned(probe):
    ids, (rows, dim) = probe.case["ids"], probe.case["weight"].shape
    flat = list(ids.ravel())
    last = [t for t in range(len(flat)) if flat[t] not in flat[t + 1:]]
    first = [t for t in range(len(flat)) if flat[t] not in flat[:t]]
    for keep, which in ((last, "last"), (first, "first")):
        if probe.matches("weight", _written(ids, rows, dim, keep)):
            return {"weight": f"keeps only the {which} token's gradient in a row whose id repeats"}
    return {}


def _by_position(probe):
    ids, (rows, dim) = probe.case["ids"], probe.case["weight"].shape
    positions = np.arange(ids.size)
    if ids.size > rows:
        return []
    candidate = _written(positions, rows, dim, range(ids.size))
    return ["weight"] if probe.matches("weight", candidate) else []


def example():
    rng = np.random.default_rng(13)
    return {"ids": np.array([[0, 3, 6], [4, 1, 2]]), "weight": rng.standard_normal((7, 3))}


def edge_cases():
    # ids that repeat (row 2 three times, row 0 twice), as in any real text
    return [{"ids": np.array([[2, 0, 2], [1, 2, 0]]), "weight": np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]])}]


def random_case(draw, s):
    rows, dim = draw(s.size(1, 5)), draw(s.size(1, 3))
    ids = draw(s.ints(draw(s.shape(1, 2, high=3)), 0, rows - 1))
    return {"ids": ids, "weight": draw(s.floats((rows, dim)))}


def edge(case):
    ids = case["ids"].ravel()
    repeated = sorted({int(i) for i in ids if np.sum(ids == i) > 1})
    return f"repeated ids: {', '.join(map(str, repeated))}" if repeated else ""


EXERCISE = Exercise(
    number=13,
    name="embedding",
    title="embedding lookup (ids may repeat)",
    function=Embedding,
    statement=(
        "out = weight[ids]: row ids[t] of the (rows, dim) table for every token t. The ids are not "
        "differentiable. A row that several tokens use (a repeated id, as in any real text) reaches "
        "several outputs, so its gradient is the sum of theirs; rows nobody uses get 0."
    ),
    shapes=(
        "ids       integer ids, any shape, e.g. (2, 3), values in [0, rows)\n"
        "weight    (rows, dim), e.g. (7, 3)\n"
        "out       ids.shape + (dim,), e.g. (2, 3, 3)\n"
        "grad_out  like out  ->  return None, grad_weight (rows, dim)"
    ),
    hint=(
        "Think of a row that two tokens use: what must its gradient be? F.one_hot(ids.reshape(-1), rows) "
        "is a (tokens, rows) matrix of 0s and 1s: what does its transpose times grad_out.reshape(-1, dim) "
        "compute? (A loop with += works too.)"
    ),
    todo="return None, grad_weight (the shape of weight)",
    args=("ids", "weight"),
    grads=("weight",),
    example=example,
    random_case=random_case,
    reference=lambda ids, weight: F.embedding(ids, weight),
    suspects=(
        Suspect("assignment", "assignment instead of accumulation",
                "A row used by several tokens gets the sum of their gradients: accumulate (+=, or a "
                "one-hot matrix product), do not assign.", _assigned),
        Suspect("wrong-rows", "gradients written into the wrong rows",
                "Token t's gradient belongs to row ids[t], not to row t.", _by_position),
    ),
    edge=edge,
    edge_cases=edge_cases,
    mistakes=(
        Mistake(assigned, "assignment", found_by="edge case"),
        Mistake(rows_by_position, "wrong-rows"),
    ),
)
