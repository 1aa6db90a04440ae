"""The checker of the manual-backprop track: a layer's forward written op by op, every
intermediate kept by name, and a learner's backward that returns the gradient of each one.

The forward is a function of tensors and `keep`: `h = keep("h", h_pre.tanh())`. The checker runs it
three ways:

- with autograd, `keep` retaining each intermediate's gradient: the true gradients;
- cut: `keep` hands the next ops a fresh leaf in place of each intermediate, so that each kept
  value is a function of the kept values it is computed from, one step deep. The gradient each
  consumer sends back to its inputs (what a path contributes) is then one `autograd.grad` away;
- under no_grad, `keep` only collecting the values: what the learner's backward is given.

The learner's gradients are compared with autograd's in the backward order (from the loss back);
the first wrong one is named, with what it looks like: transposed, missing the sum over the batch,
off by 1/n (or n, n - 1, the Bessel correction), sign flipped, a path through a consumer missing or
scaled, right numbers in the wrong shape.
"""

import types

import numpy as np

from .. import autograd, functions
from ..backend import to_host
from . import checker
from .task import split_judge, verdict_data, verdict_from, wrong

ATOL, RTOL = 1e-9, 1e-6


def run(forward, inputs, grads_for):
    """(values, true grads, contributions) for one case.

    inputs: {name: float64 array or int array}; grads_for: the input names that get a gradient.
    values: a namespace of the inputs and every kept value (tensors that need no gradient).
    true: {name: NumPy array}; contributions: {name: {consumer: NumPy array}}.
    """
    true, contributions = truth(forward, inputs, grads_for)
    return learners_values(forward, inputs), true, contributions


def truth(forward, inputs, grads_for):
    """(true grads, contributions) for one case: see `run`."""
    # 1. autograd, every kept value's gradient retained
    leaves = _leaves(inputs, grads_for)
    kept = {}

    def retain(name, value):
        value.retain_grad()
        kept[name] = value
        return value

    loss = forward(**leaves, keep=retain)
    loss.backward()
    true = {name: _host(t.grad) for name, t in kept.items()}
    true.update({name: _host(leaves[name].grad) for name in grads_for})

    # 2. cut at every kept value: what each consumer sends back to each of its inputs
    cut_leaves = _leaves(inputs, grads_for)
    stand_ins, outputs = dict(cut_leaves), {}

    def cut(name, value):
        outputs[name] = value
        stand_in = functions.tensor(_host(value), requires_grad=True)
        stand_ins[name] = stand_in
        return stand_in

    forward(**cut_leaves, keep=cut)
    contributions = {}
    for consumer, out in outputs.items():
        sources = [name for name in stand_ins if name != consumer and stand_ins[name].requires_grad]
        found = autograd.grad([out], [stand_ins[name] for name in sources],
                              [functions.tensor(true[consumer])], allow_unused=True)
        for name, g in zip(sources, found):
            if g is not None:
                contributions.setdefault(name, {})[consumer] = _host(g)
    return true, contributions


def learners_values(forward, inputs):
    """3. the values the learner's backward gets: a namespace of tensors that need no gradient."""
    values = _leaves(inputs, ())

    def collect(name, value):
        values[name] = value
        return value

    with autograd.no_grad():
        forward(**dict(values), keep=collect)
    return types.SimpleNamespace(**values)


def judge(forward, order, grads_for, factors):
    """A Task's judge: compare the learner's gradients with autograd's in `order` (the backward order,
    names of kept values and inputs), and raise Wrong at the first wrong one.

    grads_for: the inputs that get a gradient. factors: case -> [(label, value, what it means)], the
    constants a gradient is often off by, in the exercise's terms. The judge is made of `probe` and
    `verdict` (task.split_judge): the learner's backward and the comparison never need one process.
    """
    return split_judge(probe(forward, order), verdict(forward, order, grads_for, factors))


def probe(forward, order):
    """A Task's probe: run the learner's backward on the case's values; note its gradients as arrays,
    in `order`, up to the first missing one (or the type it returned, when not a dict)."""

    def probe_case(piece, case, steps):
        values = learners_values(forward, case)
        grads = steps.run("returned", lambda: piece(values))
        if grads is not None or "raised" not in steps.data:
            steps.data["returned"] = _as_data(grads, order, piece)

    return probe_case


def verdict(forward, order, grads_for, factors):
    """A Task's verdict on what `probe` noted: autograd's gradients, compared in `order`."""

    def verdict_case(case, steps):
        returned = steps["returned"]
        if not isinstance(returned, dict) or not isinstance(returned.get("grads"), dict):
            raise wrong("bad-return", "returns the wrong thing",
                        f"Return a dict {{name: gradient}}; yours returns a {_text(returned)}.")
        true, contributions = truth(forward, case, grads_for)
        _compare(order, returned["grads"], true, contributions, factors(case))

    return verdict_case


def _as_data(grads, order, piece):
    """The learner's dict of gradients as {"grads": {name: float64 array}}, in `order`, up to the
    first one missing or not an array (that one noted as the verdict its conversion raised)."""
    if not isinstance(grads, dict):
        return {"type": type(grads).__name__}
    arrays = {}
    for name in order:
        if name not in grads or grads[name] is None:
            break
        mine = grads[name]
        try:
            with checker._learner_code(piece):
                arrays[name] = _host(mine) if hasattr(mine, "array") else np.asarray(mine, dtype=np.float64)
        except checker._Verdict as raised:
            arrays[name] = {"raised": verdict_data(raised)}
            break
    return {"grads": arrays}


def _text(returned):
    name = returned.get("type") if isinstance(returned, dict) else None
    return name if isinstance(name, str) else "something else"


def _compare(order, grads, true, contributions, factors):
    done = []
    for name in order:
        if name not in grads or grads[name] is None:
            raise wrong("not-computed", f"no gradient for {name}",
                        f"grads[{name!r}] is missing: give the gradient of every intermediate, in the order of "
                        "the statement (each uses the ones before it).", _done(done))
        mine = grads[name]
        if isinstance(mine, dict):  # its conversion to an array raised
            raise verdict_from(mine.get("raised"))
        if not isinstance(mine, np.ndarray):
            raise wrong("bad-return", "returns the wrong thing", f"The gradient of {name} is not an array.")
        mine = np.asarray(mine, dtype=np.float64)
        right = true[name]
        if mine.shape == right.shape and _close(mine, right):
            done.append(name)
            continue
        found = diagnose(name, mine, right, contributions.get(name, {}), factors)
        found.lines = [f"{name}: {found.finding.note}"] + _worst(name, mine, right) + _done(done)
        raise found


def diagnose(name, mine, right, paths, factors):
    """The Wrong that says what the gradient of `name` looks like."""
    shape, got = list(right.shape), list(mine.shape)
    if mine.shape != right.shape:
        if mine.ndim == 2 and right.ndim == 2 and mine.shape == right.shape[::-1] and _close(mine.T, right):
            return _wrong("transposed", "transposed", f"is the transpose of the right one (shape {got}, not {shape})",
                          "Transpose it: for C = A @ B, dA = dC @ B.T and dB = A.T @ dC.")
        if mine.size == right.size and _close(mine.reshape(right.shape), right):
            return _wrong("right-values-wrong-shape", "right numbers, wrong shape",
                          f"has the right numbers in shape {got}, not {shape}",
                          "A gradient has the shape of its value: keepdim=True keeps a summed dim as 1, "
                          "keepdim=False drops it.")
        if (mine.ndim == right.ndim and mine.ndim and mine.shape[0] == 1 and mine.shape[1:] == right.shape[1:]
                and _close(np.broadcast_to(mine, right.shape).copy(), right)):
            return _wrong("not-expanded", "not expanded back over the batch",
                          f"has one row, shape {got}, where {name} has {shape}; every row of it gets that row",
                          f"A sum over the batch sends its gradient to every row it summed: expand yours to "
                          f"{shape} (.expand({right.shape[0]}, -1), or a product with a tensor of that shape).")
        batch = _summed_over_batch(mine, right)
        if batch is not None:
            return _wrong("missing-batch-sum", "missing the sum over the batch",
                          f"has the batch's shape {got}, not {shape}; summed over dim 0 it would be right",
                          f"{name} is used by every row of the batch (broadcast along dim 0): its gradient is the "
                          f"sum over the batch of what each row sends back: .sum(0{batch}).")
        return _wrong("wrong-shape", "gradient of the wrong shape", f"has shape {got}, but {name} has shape {shape}",
                      "A gradient has the shape of its value.")
    if _close(-mine, right):
        return _wrong("sign-flipped", "sign flipped", "has the opposite sign", "Check the sign of each term.")
    scale = float(np.sum(right * right))
    if scale > 0:
        c = float(np.sum(mine * right)) / scale
        if abs(c - 1) > 1e-6 and _close(mine, c * right):
            for label, value, meaning in factors:
                if _same(c, value):
                    return _wrong("constant-factor", f"off by a factor of {label}",
                                  f"is off by a factor of {label} = {value:.4g}", meaning)
            return _wrong("constant-factor", f"off by a factor of {c:.4g}", f"is off by a factor of {c:.4g}",
                          "The formula is right up to a constant: check the constants in it.")
    if mine.ndim == 2 and mine.shape[0] == mine.shape[1] and _close(mine, right.T) and not _close(right, right.T):
        return _wrong("transposed", "transposed", "is the transpose of the right one",
                      "Transpose it: for C = A @ B, dA = dC @ B.T and dB = A.T @ dC.")
    if len(paths) > 1:
        users = " and ".join(sorted(paths))
        for consumer, part in paths.items():
            if not _close(part, 0 * part) and _close(mine, right - part):
                return _wrong("path-missing", f"the path through {consumer} missing",
                              f"misses what {consumer} sends back",
                              f"{name} is used by {users}: its gradient is the sum of what each of them sends "
                              f"back, and yours lacks the part through {consumer}.")
        for consumer, part in paths.items():
            for label, value, _ in factors:
                if not _close(part, 0 * part) and _close(mine, right + (value - 1) * part):
                    return _wrong("path-factor", f"the path through {consumer} off by {label}",
                                  f"has the part through {consumer} off by a factor of {label} = {value:.4g}",
                                  f"{name} is used by {users}: the part of its gradient that comes back through "
                                  f"{consumer} is off by a factor of {label}; the rest is right.")
    return _wrong("no-pattern", "disagrees with autograd", "matches no known mistake",
                  "Compare your formula with the derivation of this step.")


def _wrong(id, title, note, explanation):
    return wrong(id, title, explanation, note=note)


def _summed_over_batch(mine, right):
    """', keepdim=True' or '' when mine summed over dim 0 is right (else None)."""
    if mine.ndim == right.ndim and mine.ndim and right.shape[0] == 1 and mine.shape[1:] == right.shape[1:]:
        return ", keepdim=True" if _close(mine.sum(0, keepdims=True), right) else None
    if mine.ndim == right.ndim + 1 and mine.shape[1:] == right.shape:
        return "" if _close(mine.sum(0), right) else None
    return None


def _close(a, b):
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= ATOL + RTOL * np.abs(b)))


def _same(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def _worst(name, mine, right):
    if mine.shape != right.shape:
        return []
    error = np.abs(mine - right)
    bad = ~(error <= ATOL + RTOL * np.abs(right))
    flat = int(np.argmax(np.where(bad, error, -1.0)))
    index = ", ".join(str(int(i)) for i in np.unravel_index(flat, right.shape)) if right.shape else ""
    where = f"[{index}]" if index else ""
    return [f"  {name}{where}: autograd {right.flat[flat]:.4g}, yours {mine.flat[flat]:.4g} ({int(bad.sum())} of "
            f"{bad.size} entries off)"]


def _done(done):
    if not done:
        return []
    shown = ", ".join(done) if len(done) <= 6 else ", ".join(done[:2]) + ", ..., " + ", ".join(done[-2:])
    return [f"right before it: {shown} ({len(done)} of them)"]


def _leaves(inputs, grads_for):
    tensors = {}
    for name, value in inputs.items():
        if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
            tensors[name] = functions.tensor(value, requires_grad=name in grads_for)
        elif isinstance(value, np.ndarray):
            tensors[name] = functions.tensor(value)
        else:
            tensors[name] = value
    return tensors


def _host(tensor):
    return np.array(to_host(tensor.array), dtype=np.float64)
