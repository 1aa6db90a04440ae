"""Name the mistake: compare a learner's Jacobian with transformations of the true one.

For one case, the checker holds, for every input that gets a gradient, two Jacobians shaped
(R, *shape): R rows, one per output element (all outputs one after another), and the input's shape
after that. `probe.true[name]` comes from central differences of the forward; `probe.yours[name]`
from the learner's backward, run once per output element with a one-hot grad_output (its shape is
whatever the learner returned, which may not be the input's).

A wrong gradient is then compared with what common mistakes would give: the true Jacobian
transposed, negated, scaled by a constant with a name (2, n, sqrt(d), 1 - p), summed over other
dims, reduced to its diagonal, with a mask taken off or turned around, or belonging to another
input. Each exercise adds its own suspects (dropout's mask drawn anew in backward, an embedding's
rows assigned instead of accumulated, ...), tried first. A candidate only counts when it differs from
the true Jacobian: on a tiny case (size-1 dims) many transformations change nothing, and they must
not be named for a mistake they cannot show.
"""

import dataclasses
import itertools
import math

import numpy as np

# id -> the title shown in the table (findings with a variable title build their own)
FINDINGS = {
    "not-done": "not done yet",
    "error": "raised an exception",
    "missing": "no file",
    "forward-changed": "the forward was changed",
    "bad-return": "backward returns the wrong things",
    "not-linear": "not proportional to grad_output",
    "changes-saved": "changes a saved tensor in place",
    "nan": "NaN or inf in the gradient",
    "no-gradient": "no gradient for an input",
    "not-zero": "non-zero where the gradient is 0",
    "missing-broadcast-sum": "missing the sum over broadcast dims",
    "wrong-axis-sum": "summed over the wrong dims",
    "output-shape": "not expanded back to the input's shape",
    "right-values-wrong-shape": "right numbers, wrong shape",
    "wrong-shape": "gradient of the wrong shape",
    "transposed": "transposed",
    "sign-flipped": "sign flipped",
    "constant-factor": "off by a constant factor",
    "swapped": "gradient for the wrong input (swapped)",
    "cross-terms-missing": "cross terms missing",
    "mask-missing": "mask missing",
    "mask-inverted": "mask inverted",
    "missing-output": "an output's gradient is missing",
    "unstable-float32": "unstable in float32",
    "no-pattern": "disagrees with finite differences",
}


@dataclasses.dataclass(frozen=True)
class Factor:
    """A constant the gradient can be off by, with a name learners recognise ("sqrt(d)")."""

    label: str
    value: float
    finding: str = "constant-factor"  # or a more specific finding, e.g. "scale-forgotten"
    title: str = ""  # for a specific finding: its title in the table
    explanation: str = ""  # what the factor means, said after the finding


# small constants a gradient is often off by; an exercise's named factors (n, sqrt(d)) come first
SMALL_FACTORS = [("2", 2.0), ("1/2", 0.5), ("3", 3.0), ("1/3", 1 / 3), ("4", 4.0), ("1/4", 0.25)]


@dataclasses.dataclass
class Finding:
    """What the checker says about a wrong gradient.

    id: a key of FINDINGS or an exercise's own (its Suspects and Factors define them).
    title: a few words for the table ("off by a factor of 2").
    note: what is wrong with this input's gradient, in a line ("off by a factor of sqrt(d) = 1.732").
    explanation: why, or what to do, for the whole exercise (may be empty).
    """

    id: str
    title: str
    note: str = ""
    explanation: str = ""


def finding(id, note="", explanation="", title=None):
    return Finding(id, title or FINDINGS[id], note, explanation)


def diagnose(probe):
    """(headline Finding, {input name: Finding or None}) for the inputs whose gradient is wrong."""
    wrong = [name for name in probe.names if not probe.correct(name)]
    per_input = {}
    for suspect in probe.exercise.suspects:  # the exercise's own mistakes first: the most specific
        explained = suspect.test(probe)
        notes = explained if isinstance(explained, dict) else dict.fromkeys(explained, "")
        for name, note in notes.items():
            if name in wrong and name not in per_input:
                per_input[name] = Finding(suspect.finding, suspect.title, note, suspect.explanation)
    for a, b in _swapped_pairs(probe, [n for n in wrong if n not in per_input]):
        for name, other in ((a, b), (b, a)):
            per_input[name] = finding("swapped", f"is the gradient that {other} should get",
                                      f"The gradients of {a} and {b} are exchanged: return them in the order "
                                      "of forward's arguments, each computed for its own input.")
    for name in wrong:
        if name not in per_input:
            per_input[name] = _generic(probe, name)
    return _headline(per_input, wrong), per_input


def _headline(per_input, wrong):
    found = [f for f in per_input.values() if f is not None]
    if not found:
        which = f"gradients of {_and(wrong)} disagree" if len(wrong) > 1 else f"gradient of {wrong[0]} disagrees"
        return finding("no-pattern", explanation=f"The {which} with finite differences, and match"
                       f"{'' if len(wrong) > 1 else 'es'} none of the usual mistakes: compare your formula with "
                       "the derivation.")
    # the finding that explains the most inputs; among equals, the first one found
    counts = {}
    for f in found:
        counts[f.id] = counts.get(f.id, 0) + 1
    return max(found, key=lambda f: counts[f.id])


# ---------------------------------------------------------------------------------------------
# one input at a time


def _generic(probe, name):
    yours, true = probe.yours[name], probe.true[name]
    shape = true.shape[1:]
    if yours is None:
        return finding("no-gradient", "backward returns None for it",
                       f"{name} needs a gradient: return one of its shape, {list(shape)}.")
    if not np.all(np.isfinite(yours)):
        return finding("nan", "has NaN or inf entries",
                       "Look for 0/0, log(0), inf - inf or an overflowing exp in the backward.")
    if yours.shape[1:] != shape:
        return _wrong_shape(probe, name)
    if np.all(np.abs(yours) <= probe.atol):
        return finding("no-gradient", "is all zeros", f"Some of {name}'s gradient should be non-zero.")
    if np.all(np.abs(true) <= probe.atol):
        return finding("not-zero", f"is non-zero, but here the output does not depend on {name} at all",
                       f"In this case nothing of {name} reaches the output (every element is masked, dropped or "
                       "cut off by a ReLU, or a softmax row has a single element): the gradient must be 0.")
    close = probe.matches
    if close(name, -true):
        return finding("sign-flipped", "has the opposite sign", "Check the sign of each term of your formula.")
    factor = _constant_factor(probe, name)
    if factor is not None:
        return factor
    if len(shape) >= 2 and shape[-1] == shape[-2] and close(name, np.swapaxes(true, -1, -2)):
        return finding("transposed", "is the transpose of the right one (last two dims swapped)",
                       "Transpose the matrix products: for C = A @ B, grad_A = grad_C @ B^T and "
                       "grad_B = A^T @ grad_C.")
    rows = true.shape[0]
    if rows == math.prod(shape) and rows > 1:
        square = true.reshape(rows, rows)
        if close(name, square.T.reshape(true.shape)):
            return finding("transposed", "is the right Jacobian transposed",
                           "You multiplied by the Jacobian instead of its transpose: transpose the matrix "
                           "your gradient is multiplied with (grad_C @ B^T, not grad_C @ B).")
    summed = _summed_over_other_dims(probe, name)
    if summed is not None:
        return summed
    missing_output = _missing_output(probe, name)
    if missing_output is not None:
        return missing_output
    if rows == math.prod(shape) and rows > 1 and len(probe.out_shapes) == 1:
        cross = _cross_terms(probe, name)
        if cross is not None:
            return cross
    return _mask(probe, name)


def _wrong_shape(probe, name):
    yours, true = probe.yours[name], probe.true[name]
    shape, got = true.shape[1:], yours.shape[1:]
    close = probe.matches
    expanded = probe.expanded_shape(name)
    out_shape = probe.out_shapes[0] if len(probe.out_shapes) == 1 else None
    if expanded is not None and got == expanded and close(name, probe.expanded_true(name)):
        dims = _broadcast_dims(shape, expanded)
        ones = " (keepdim=True where it has size 1)" if len(expanded) - len(shape) < len(dims) else ""
        return finding(
            "missing-broadcast-sum", f"has the shape {list(expanded)} it is broadcast to, not {list(shape)}",
            f"{name} is broadcast along dim{'s' * (len(dims) > 1)} {_and(dims)} of {list(expanded)}: "
            f"sum your gradient over {'them' if len(dims) > 1 else 'it'}{ones}.")
    if out_shape is not None and got == out_shape and math.prod(shape) > math.prod(out_shape):
        return finding("output-shape", f"has the output's shape {list(out_shape)}, not {list(shape)}",
                       f"Every element of {name} reaches the output: expand grad_output back to {name}'s shape "
                       "(unsqueeze the reduced dim if keepdim=False, then expand).")
    summed = _summed_over_other_dims(probe, name)
    if summed is not None:
        return summed
    if len(shape) >= 2 and got == shape[:-2] + (shape[-1], shape[-2]) and close(name, np.swapaxes(true, -1, -2)):
        return finding("transposed", f"is the transpose of the right one (shape {list(got)}, not {list(shape)})",
                       "Transpose the matrix products: for C = A @ B, grad_A = grad_C @ B^T and "
                       "grad_B = A^T @ grad_C.")
    if math.prod(got) == math.prod(shape) and probe.close(yours.reshape(true.shape), true):
        return finding("right-values-wrong-shape", f"has the right numbers in shape {list(got)}, not {list(shape)}",
                       f"Reshape it to {list(shape)} (a sum with keepdim=True keeps a size-1 dim).")
    return finding("wrong-shape", f"has shape {list(got)}, but {name} has shape {list(shape)}",
                   "A gradient has its input's shape.")


def _constant_factor(probe, name):
    yours, true = probe.yours[name], probe.true[name]
    scale = float(np.sum(true * true))
    if scale == 0:
        return None
    c = float(np.sum(yours * true)) / scale
    if abs(c - 1) < 1e-6 or abs(c) < 1e-12 or not probe.matches(name, c * true):
        return None
    for factor in probe.factors():
        if _same_number(c, factor.value):
            shown = factor.label if _is_number(factor.label) else f"{factor.label} = {factor.value:.4g}"
            title = factor.title or f"off by a factor of {factor.label}"
            return Finding(factor.finding, title, f"is off by a factor of {shown}", factor.explanation)
        if _same_number(c, -factor.value):
            return finding("sign-flipped", f"has the opposite sign and is off by a factor of {factor.label}",
                           "Check the sign of each term, and the constants.",
                           title=f"sign flipped, factor {factor.label}")
    return finding("constant-factor", f"is off by a factor of {c:.4g}",
                   "The formula is right up to a constant: check the constants in it.",
                   title=f"off by a factor of {c:.4g}")


def _same_number(a, b):
    return abs(a - b) <= 1e-4 * max(1.0, abs(b))


def _is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return "/" in text and all(part.strip().isdigit() for part in text.split("/"))


def _summed_over_other_dims(probe, name):
    """The gradient of a broadcast input summed over other dims than the ones it was broadcast along."""
    expanded = probe.expanded_shape(name)
    if expanded is None:
        return None
    shape = probe.true[name].shape[1:]
    got = probe.yours[name].shape[1:]
    full = probe.expanded_true(name)
    right = set(_broadcast_dims(shape, expanded))
    for size in range(1, len(expanded) + 1):
        for dims in itertools.combinations(range(len(expanded)), size):
            if set(dims) == right:
                continue
            for keepdim in (False, True):
                candidate = full.sum(axis=tuple(d + 1 for d in dims), keepdims=keepdim)
                if candidate.shape[1:] != got or not probe.matches(name, candidate):
                    continue
                if set(dims) < right:
                    missed = sorted(right - set(dims))
                    return finding(
                        "missing-broadcast-sum", f"is summed over dim{'s' * (len(dims) > 1)} {_and(dims)} "
                        f"but not over {_and(missed)}",
                        f"{name} (shape {list(shape)}) is broadcast to {list(expanded)} along dims "
                        f"{_and(sorted(right))}, its size-1 dims included: sum over all of them.")
                return finding(
                    "wrong-axis-sum",
                    f"is summed over dim{'s' * (len(dims) > 1)} {_and(dims)}, not {_and(sorted(right))}",
                    f"{name} (shape {list(shape)}) is broadcast to {list(expanded)} along dim"
                    f"{'s' * (len(right) > 1)} {_and(sorted(right))}: sum over exactly "
                    f"{'those' if len(right) > 1 else 'that one'}.")
    return None


def _broadcast_dims(shape, expanded):
    """The dims of `expanded` along which an array of `shape` is broadcast."""
    lead = len(expanded) - len(shape)
    return [d for d in range(len(expanded)) if d < lead or (shape[d - lead] == 1 and expanded[d] != 1)]


def _missing_output(probe, name):
    if len(probe.out_shapes) < 2:
        return None
    yours, true = probe.yours[name], probe.true[name]
    missing = []
    for k, rows in enumerate(probe.output_rows()):
        block, right = yours[rows], true[rows]
        if np.all(np.abs(block) <= probe.atol) and not np.all(np.abs(right) <= probe.atol):
            missing.append(k)
        elif not probe.close(block, right):
            return None
    if not missing:
        return None
    names = _and([probe.exercise.outputs[k] for k in missing])
    return finding("missing-output", f"gets nothing from {names}",
                   f"{name} feeds several outputs: add up the gradients that come from each (grad_{names} "
                   "is the gradient of one of them).")


def _cross_terms(probe, name):
    yours, true = probe.yours[name], probe.true[name]
    rows = true.shape[0]
    mine, right = yours.reshape(rows, rows), true.reshape(rows, rows)
    off = ~np.eye(rows, dtype=bool)
    if not np.all(np.abs(mine[off]) <= probe.atol) or np.all(np.abs(right[off]) <= probe.atol):
        return None
    diagonal_right = probe.close(np.diag(mine), np.diag(right))
    note = "only has the diagonal of the Jacobian" + (" (right there)" if diagonal_right else ", and that is wrong too")
    return finding("cross-terms-missing", note,
                   "Each output depends on the other inputs of its row too: the terms d y_i / d x_j for "
                   "i != j are missing.")


def _mask(probe, name):
    yours, true = probe.yours[name], probe.true[name]
    flows = np.abs(true) > probe.atol
    if not flows.any() or flows.all():
        return None
    leaks = np.abs(yours[~flows]) > probe.atol
    if not leaks.any():
        return None
    if probe.close(yours[flows], 0 * true[flows]):
        return finding("mask-inverted", "flows exactly where it should be zero, and is zero elsewhere",
                       "Your mask is the wrong way round.")
    for label, value in [("", 1.0)] + [(f.label, f.value) for f in probe.factors()]:
        if probe.close(yours[flows], value * true[flows]):
            scale = f", and is off by a factor of {label} there" if label else ""
            return finding("mask-missing", f"is non-zero at {int(leaks.sum())} entries where it must be 0{scale}",
                           "The gradient must be zero where the forward blocked the input (a mask, a ReLU, a "
                           "dropped element): multiply by the mask.")
    return None


def _swapped_pairs(probe, names):
    pairs = []
    for a, b in itertools.combinations(names, 2):
        from_b, from_a = probe.moved_true(b, a), probe.moved_true(a, b)
        if from_b is not None and from_a is not None and probe.matches(a, from_b) and probe.matches(b, from_a):
            pairs.append((a, b))
    return pairs


def _and(items):
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
