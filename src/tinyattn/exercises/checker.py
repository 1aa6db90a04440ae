"""The checker: run a learner's backward on an exercise's cases and say what is wrong with it.

`check(exercise, function)` goes through three stages and stops at the first failure:

1. the fixed cases (the example, then the exercise's edge cases: repeated ids, a stretched size-1
   dim, an ignored target, ...): the learner's Jacobian (their backward, once per output element, with a one-hot
   grad_output) against central differences of the forward, in float64, as `gradcheck` does; a
   mismatch is diagnosed (see diagnosis.py); these alone catch every planted mistake;
2. large inputs in float32, for the exercises where a backward can be right in float64 and overflow
   in float32 (softmax without the shift by the row max);
3. random cases drawn by Hypothesis (other shapes, size-1 dims, repeated ids, ignored targets),
   within a fixed budget: each compares one vector-Jacobian product with the library's own gradient
   of the same forward. A failing case is shrunk to the smallest one Hypothesis finds, then analysed
   as the example was.

The learner's code never crashes the checker: an exception becomes a one-line report (type, message,
file:line), and a `raise NotImplementedError` in their backward means "not done yet".

Wherever the checker runs the learner's Function it goes through `evaluate`, which runs it here (a
Function given to `check`, as in a notebook) or in a process of its own (a `Remote`: `tinyattn
exercises check` loads each learner's file in a worker process, see isolation.py); either way the
outputs and gradients come back as arrays, and everything else happens here.
"""

import contextlib
import dataclasses
import math
import os
import random as pyrandom
import traceback

import numpy as np

from .. import autograd, backend, dtypes, functions, random
from ..console import plural
from ..gradient_check import numerical_jacobian
from ..tensor import Tensor
from . import diagnosis
from .diagnosis import SMALL_FACTORS, Factor, Finding, finding

SEED = 0  # a random exercise's forward runs right after seeding with it (dropout's mask stays put)
EPS = 1e-6  # the finite-difference step
ATOL, RTOL = 1e-5, 1e-3  # gradcheck's tolerances
EXAMPLES = 20  # random cases per exercise
SEARCH_SEED = 0  # the seed Hypothesis draws the random cases from (--seed)
HYPOTHESIS_MISSING = "Hypothesis is not installed (pip install hypothesis)"
SHRINK_CALLS = 200  # how many more cases Hypothesis may try while shrinking a failing one


@dataclasses.dataclass
class Result:
    """What the checker found for one exercise.

    status: "pass", "FAIL", "not done yet", "error" (the file does not load) or "missing".
    finding: what is wrong (None for a pass).
    lines: the evidence, one paragraph each.
    phase: where it failed: "example", "edge case", "large inputs", "float32" or "random case".
    case: the case it failed on (the shrunk counterexample for "random case").
    checked: for a pass, what was checked.
    """

    exercise: object
    status: str
    finding: Finding = None
    lines: list = dataclasses.field(default_factory=list)
    phase: str = "example"
    case: dict = None
    checked: str = ""
    random_cases: int = 0  # how many random cases ran (0: the fixed cases only)
    seed: int = None  # the seed the random cases were drawn with
    case_text: str = None  # the case as text, where the case itself stayed in the process that checked it

    @property
    def passed(self):
        """Whether the exercise passed every check."""
        return self.status == "pass"

    def __repr__(self):
        title = f" - {self.finding.title}" if self.finding is not None and not self.passed else ""
        return f"<Result {self.exercise.label}: {self.status}{title}>"


class _Verdict(Exception):
    """Ends the analysis of a case early: an exception in the learner's code, a bad return value."""

    def __init__(self, status, found, lines=()):
        super().__init__(found.title)
        self.status, self.finding, self.lines = status, found, list(lines)


# ---------------------------------------------------------------------------------------------
# the whole check


def check(exercise, function, examples=EXAMPLES, shrink_calls=SHRINK_CALLS, seed=SEARCH_SEED):
    """Check `function` (the exercise's Function with the learner's backward); return a Result.

    seed: the random cases Hypothesis draws depend on it (the same seed, the same cases).
    """
    cases = exercise.fixed_cases()
    for number, case in enumerate(cases):
        result = analyse(exercise, function, case)
        if not result.passed:
            if number:
                result.phase = "edge case"
            return result
    checked = ["the example" if len(cases) == 1 else f"the example and {plural(len(cases) - 1, 'edge case')}"]
    if exercise.large_case is not None:
        failed = _float32_probe(exercise, function)
        if failed is not None:
            return failed
        checked.append(f"float32 at {exercise.large_case_text}")
    if examples:
        try:
            counterexample = search(exercise, function, examples, shrink_calls, seed)
        except ImportError:
            checked.append(f"no random cases: {HYPOTHESIS_MISSING}")
        else:
            if counterexample is not None:
                failed = analyse(exercise, function, counterexample)
                if failed.passed:  # one product disagreed, the whole Jacobian is within tolerance
                    failed = Result(exercise, "FAIL", finding(
                        "no-pattern", explanation=quick_failure(exercise, function, counterexample) or ""))
                if failed.status != "FAIL":  # an exception is a failure of the backward here
                    failed.status = "FAIL"
                failed.phase, failed.case, failed.seed = "random case", counterexample, seed
                return failed
            checked.append(f"{examples} random cases")
            return Result(exercise, "pass", checked=", ".join(checked), random_cases=examples, seed=seed)
    return Result(exercise, "pass", checked=", ".join(checked))


def load(exercise, path):
    """The learner's Function from their file, or a Result saying why it cannot be checked."""
    path = os.fspath(path)
    name = os.path.basename(path)
    if not os.path.exists(path):
        folder = os.path.dirname(path) or "."
        return Result(exercise, "missing", finding("missing", explanation=f"There is no {name} in {folder}: "
                      f"`tinyattn exercises start {folder}` writes it again (and leaves the other files alone)."))
    try:
        with open(path, encoding="utf-8") as file:
            code = compile(file.read(), path, "exec")
    except SyntaxError as error:
        return Result(exercise, "error", finding("error", error.msg, title=f"SyntaxError at {name}:{error.lineno}"),
                      [f"{name}:{error.lineno}: SyntaxError: {error.msg}"])
    except (OSError, ValueError) as error:  # unreadable, not UTF-8, or a null byte in it
        return Result(exercise, "error", finding("error", str(error), title=f"cannot read {name}"),
                      [f"{type(error).__name__}: {error}"])
    namespace = {"__name__": f"exercise_{exercise.label}", "__file__": path}
    try:
        exec(code, namespace)
    except Exception as error:  # the learner's module, run: any error is theirs to see, briefly
        text, where = _describe(error, {path})
        return Result(exercise, "error", finding("error", text, title=f"{type(error).__name__}{where}"),
                      [_located(text, where)])
    function = namespace.get(exercise.class_name)
    if not exercise.accepts(function):
        kind = "class" if isinstance(getattr(exercise, "piece", exercise.function), type) else "function"
        what = (f"class {exercise.class_name}(Function), with forward and backward" if hasattr(exercise, "function")
                else f"{kind} {exercise.class_name}")
        return Result(exercise, "error", finding("error", title=f"no {kind} {exercise.class_name}"),
                      [f"{name} must define {what} (start from a fresh copy: `tinyattn exercises start` in "
                       "another folder)."])
    return function


# ---------------------------------------------------------------------------------------------
# one case, in full: Jacobians


def analyse(exercise, function, case):
    """Check one case: the learner's Jacobian against central differences; diagnose a mismatch."""
    probe = Probe(exercise, function, case)
    try:
        probe.run()
    except _Verdict as verdict:
        return Result(exercise, verdict.status, verdict.finding, verdict.lines, case=case)
    if all(probe.correct(name) for name in probe.names):
        return Result(exercise, "pass", case=case)
    headline, per_input = diagnosis.diagnose(probe)
    return Result(exercise, "FAIL", headline, probe.evidence(per_input), case=case)


class Probe:
    """One case analysed in float64; what the diagnosis and the exercises' suspects look at.

    true[name], yours[name]: the Jacobians (R, *shape) of every output element (R in all) with
    respect to the input `name`: by central differences, and by the learner's backward (with the
    shape the learner returned; None where backward returned None).
    """

    def __init__(self, exercise, function, case):
        self.exercise, self.function, self.case = exercise, function, case
        self.names = [name for name in exercise.args if name in exercise.grads]
        self.atol, self.rtol = ATOL, RTOL
        self.true, self.yours = {}, {}
        self.outputs, self.out_shapes = [], []
        self._expanded = {}

    def run(self):
        exercise = self.exercise
        done = evaluate(exercise, self.function, self.case, dtypes.float64, "jacobian")
        self.outputs = done.outputs
        self.out_shapes = [tuple(o.shape) for o in done.outputs]
        _check_forward(exercise, self.case, done.outputs, dtypes.float64)
        rows = self.rows = sum(math.prod(s) for s in self.out_shapes)
        if done.grads:
            _check_linear(done.grads[0])
        if done.error is not None:
            raise done.error
        if len(done.grads) != rows + 1:
            raise _Verdict("FAIL", finding("error", title="no gradients came back"))
        if done.saved_changed:
            raise _Verdict("FAIL", finding(
                "changes-saved", explanation="Your backward changes a tensor that forward saved "
                "(y -= ..., y *= ...): work on a copy (y = y - ...); backward may run more than once."))
        per_row = done.grads[1:]
        for name in self.names:
            self.yours[name] = _stack(name, [row[name] for row in per_row])
        # the truth: central differences of the library's forward (the learner's was checked equal to it)
        seed = SEED if exercise.random else None  # reseeding costs time: only where forward draws
        with _generator_kept(exercise):
            inputs = exercise.inputs(self.case, dtypes.float64)
            numerical = numerical_jacobian(exercise.reference, inputs, eps=EPS, seed=seed)
        per_output = numerical if len(done.outputs) > 1 else (numerical,)
        for j, name in enumerate(self.names):
            shape = self.case[name].shape
            self.true[name] = np.concatenate([block[j] for block in per_output], axis=0).reshape(rows, *shape)

    # --- what diagnosis and suspects use ------------------------------------------------

    def close(self, a, b):
        """a and b agree within the checker's tolerance (gradcheck's), elementwise; NaN never agrees."""
        return a.shape == b.shape and bool(np.all(np.abs(a - b) <= self.atol + self.rtol * np.abs(b)))

    def correct(self, name):
        yours, true = self.yours[name], self.true[name]
        if yours is None:
            return bool(np.all(np.abs(true) <= self.atol))
        return self.close(yours, true)

    def matches(self, name, candidate):
        """The learner's Jacobian for `name` is `candidate`, and the candidate is not the true one."""
        yours, true = self.yours[name], self.true[name]
        if yours is None or candidate is None or not self.close(yours, candidate):
            return False
        return not self.close(candidate, true)

    def factors(self):
        named = list(self.exercise.factors(self.case)) if self.exercise.factors else []
        return named + [Factor(label, value) for label, value in SMALL_FACTORS]

    def split(self, flat):
        """A flat vector over all output elements, as one array per output."""
        arrays, start = [], 0
        for shape in self.out_shapes:
            size = math.prod(shape)
            arrays.append(flat[start:start + size].reshape(shape))
            start += size
        return arrays

    def output_rows(self):
        """The rows of the Jacobians that belong to each output, as slices."""
        slices, start = [], 0
        for shape in self.out_shapes:
            slices.append(slice(start, start + math.prod(shape)))
            start += math.prod(shape)
        return slices

    def one_hots(self):
        """Every one-hot grad_output of the (single) output: an array (R, *output shape)."""
        return np.eye(self.rows).reshape(self.rows, *self.out_shapes[0])

    def diagonal(self, values):
        """The Jacobian of an elementwise op whose derivative is `values` (shaped like the input)."""
        return np.diag(np.ravel(values)).reshape(self.rows, *np.shape(values))

    def expanded_shape(self, name):
        shapes = self.exercise.expanded(self.case) if self.exercise.expanded else {}
        shape = shapes.get(name)
        return tuple(shape) if shape is not None and tuple(shape) != self.case[name].shape else None

    def expanded_true(self, name):
        """The Jacobian with respect to the input broadcast to its expanded shape (before any sum)."""
        if name not in self._expanded:
            wide = np.broadcast_to(self.case[name], self.expanded_shape(name)).copy()
            self._expanded[name] = self.reference_jacobian(replace={name: wide})[name]
        return self._expanded[name]

    def moved_true(self, source, target):
        """The true Jacobian of input `source` summed to the shape of input `target`, if it fits."""
        full = self.expanded_true(source) if self.expanded_shape(source) else self.true[source]
        shape = self.true[target].shape[1:]
        return _sum_to(full, shape)

    def reference_jacobian(self, fn=None, replace=None):
        """{input: Jacobian (R, *shape)} of `fn` (default: the exercise's reference) by the library's
        autograd, at this case with some inputs replaced."""
        exercise = self.exercise
        case = {**self.case, **(replace or {})}
        with _generator_kept(exercise):
            inputs = exercise.inputs(case, dtypes.float64)
            _reseed(exercise)
            result = (fn or exercise.reference)(*inputs)
        outputs = result if isinstance(result, tuple) else (result,)
        leaves = [x for name, x in zip(exercise.args, inputs) if name in exercise.grads]
        blocks = {name: [] for name in self.names}
        for out in outputs:
            for r in range(out.numel()):
                one_hot = np.zeros(out.numel())
                one_hot[r] = 1.0
                grad = functions.tensor(one_hot.reshape(tuple(out.shape)), dtype=out.dtype)
                grads = autograd.grad([out], leaves, [grad], retain_graph=True, allow_unused=True)
                for name, x, g in zip(self.names, leaves, grads):
                    blocks[name].append(np.zeros(tuple(x.shape)) if g is None else _host(g))
        return {name: np.stack(rows) for name, rows in blocks.items()}

    # --- the report -----------------------------------------------------------------------

    def evidence(self, per_input):
        """Lines for the report: each wrong input's finding, with its worst element."""
        lines = []
        explained = any(found is not None for found in per_input.values())
        for name in [n for n in self.names if n in per_input]:  # in the order of forward's arguments
            found = per_input[name]
            if found is None:
                note = "is wrong too, with no pattern of its own" if explained else "matches no known mistake"
            else:
                note = found.note or found.title
            lines.append(f"{name}: {note}")
            worst = self.worst(name)
            if worst:
                lines.append("  " + worst)
        return lines

    def worst(self, name):
        yours, true = self.yours[name], self.true[name]
        if yours is None:
            yours = np.zeros_like(true)
        if yours.shape != true.shape:
            return ""
        error = np.abs(yours - true)
        bad = ~(error <= self.atol + self.rtol * np.abs(true))
        flat = int(np.argmax(np.where(bad, np.nan_to_num(error, nan=np.inf), -1.0).ravel()))
        row, column = divmod(flat, math.prod(true.shape[1:]))
        output = self._output_element(row)
        element = _index(column, true.shape[1:])
        return (f"d {output} / d {name}{element}: numerical {true.flat[flat]:.4g}, yours {yours.flat[flat]:.4g} "
                f"({int(bad.sum())} of {bad.size} entries off)")

    def _output_element(self, row):
        for k, rows in enumerate(self.output_rows()):
            if rows.start <= row < rows.stop:
                return f"{self.exercise.outputs[k]}{_index(row - rows.start, self.out_shapes[k])}"
        raise AssertionError(row)


# ---------------------------------------------------------------------------------------------
# one case, quickly: a vector-Jacobian product against the library's


def quick_failure(exercise, function, case, dtype=dtypes.float64):
    """What goes wrong on `case` in a line, or None: the forward and one vector-Jacobian product
    (a random grad_output) compared with the library's own computation of the same forward."""
    try:
        done = evaluate(exercise, function, case, dtype, "normal")
        _check_forward(exercise, case, done.outputs, dtype)
        if done.error is not None:
            raise done.error
        yours = done.grads[0]
    except _Verdict as verdict:
        return verdict.finding.title
    grads = grad_outputs("normal", [o.shape for o in done.outputs], dtypes.float64)[0]
    right = reference_vjp(exercise, case, grads)
    for name, g in right.items():
        mine = yours[name] if yours[name] is not None else np.zeros_like(g)
        if mine.shape != g.shape:
            return f"the gradient of {name} has shape {list(mine.shape)}, not {list(g.shape)}"
        if not np.all(np.abs(mine - g) <= ATOL + RTOL * np.abs(g)):
            return f"the gradient of {name} disagrees with the library's (max error {np.max(np.abs(mine - g)):.3g})"
    return None


def reference_vjp(exercise, case, grads):
    """{input: the library's gradient} for grad_outputs `grads` (NumPy arrays), in float64."""
    with _generator_kept(exercise):
        inputs = exercise.inputs(case, dtypes.float64)
        _reseed(exercise)
        result = exercise.reference(*inputs)
    outputs = result if isinstance(result, tuple) else (result,)
    names = [name for name in exercise.args if name in exercise.grads]
    leaves = [x for name, x in zip(exercise.args, inputs) if name in exercise.grads]
    tensors = [functions.tensor(g, dtype=o.dtype) for g, o in zip(grads, outputs)]
    found = autograd.grad(list(outputs), leaves, tensors, allow_unused=True)
    return {name: np.zeros(tuple(x.shape)) if g is None else _host(g) for name, x, g in zip(names, leaves, found)}


def _float32_probe(exercise, function):
    """A Result when the backward fails on the large case: in float64 (diagnosed), or only in float32."""
    case = exercise.large_case()
    if quick_failure(exercise, function, case) is not None:
        failed = analyse(exercise, function, case)
        if not failed.passed:
            failed.phase = "large inputs"
            return failed
    rounded = {name: value.astype(np.float32).astype(np.float64) if name in exercise.grads else value
               for name, value in case.items()}
    try:
        done = evaluate(exercise, function, rounded, dtypes.float32, "normal")
        if done.error is not None:
            raise done.error
        yours = done.grads[0]
        grads = grad_outputs("normal", [o.shape for o in done.outputs], dtypes.float32)[0]
    except _Verdict as verdict:
        verdict.finding.explanation = f"In float32 at {exercise.large_case_text}: " + verdict.finding.explanation
        return Result(exercise, "FAIL", verdict.finding, verdict.lines, phase="float32", case=rounded)
    right = reference_vjp(exercise, rounded, [g.astype(np.float64) for g in grads])
    lines = []
    for name, g in right.items():
        mine = yours[name]
        if mine is None or mine.shape != g.shape:
            continue  # float64 passed, so this does not happen; the float64 check reports it
        error = np.max(np.abs(mine - g))
        if not np.all(np.isfinite(mine)):
            lines.append(f"{name}: {int(np.sum(~np.isfinite(mine)))} of {mine.size} entries are NaN or inf in "
                         "float32 (right in float64)")
        elif error > 1e-3 * (np.max(np.abs(g)) + 1e-30):
            lines.append(f"{name}: off by up to {error:.3g} in float32 (largest entry {np.max(np.abs(g)):.3g}; "
                         "right in float64)")
    if not lines:
        return None
    found = finding("unstable-float32", explanation=f"Right in float64, wrong in float32 at "
                    f"{exercise.large_case_text}. {exercise.unstable_explanation}".strip())
    return Result(exercise, "FAIL", found, lines, phase="float32", case=rounded)


# ---------------------------------------------------------------------------------------------
# random cases: Hypothesis


def hypothesis_installed():
    """Whether the random stage can run (Hypothesis is an install requirement, but may be removed)."""
    try:
        import hypothesis  # noqa: F401
        from hypothesis.extra import numpy  # noqa: F401
    except ImportError:
        return False
    return True


def search(exercise, function, examples=EXAMPLES, shrink_calls=SHRINK_CALLS, seed=SEARCH_SEED):
    """The smallest random case Hypothesis finds on which the backward fails, or None.

    Deterministic (drawn from `seed`, no example database), so the same code gets the same answer.
    Shrinking stops after `shrink_calls` more cases have been tried (a count, not a time, so that
    a busy machine gets the same answer): from then on only the cases already seen failing fail
    again, so Hypothesis ends with the smallest of them.
    """
    from hypothesis import HealthCheck, find, settings
    from hypothesis import strategies as st
    from hypothesis.errors import NoSuchExample, Unsatisfiable

    from .strategies import Strategies

    strategies = Strategies()
    cases = st.composite(lambda draw: exercise.random_case(draw, strategies))()
    failing = set()
    tried_since_failure = [0]

    def fails(case):
        key = _key(case)
        if key in failing:
            return True
        if failing:
            if tried_since_failure[0] >= shrink_calls:
                return False
            tried_since_failure[0] += 1
        if quick_failure(exercise, function, case) is None:
            return False
        failing.add(key)
        return True

    try:
        return find(cases, fails, random=pyrandom.Random(seed), settings=settings(
            max_examples=examples, derandomize=False, database=None, deadline=None,
            suppress_health_check=list(HealthCheck), report_multiple_bugs=False))
    except (NoSuchExample, Unsatisfiable):
        return None


def _key(case):
    return tuple((name, value.dtype.str, value.shape, value.tobytes()) if isinstance(value, np.ndarray)
                 else (name, repr(value)) for name, value in sorted(case.items()))


# ---------------------------------------------------------------------------------------------
# running the learner's code: here, or in a process of its own (isolation.py)


class Remote:
    """A learner's Function that runs in another process: `evaluate` sends it the case and gets
    back its outputs and gradients as arrays (see isolation.Child)."""

    def evaluate(self, case, dtype, kind):
        raise NotImplementedError


@dataclasses.dataclass
class Evaluation:
    """What the learner's Function did on one case: its forward's outputs (float64 arrays), then
    one {input: gradient or None} per set of grad_outputs (see grad_outputs), up to `error`, the
    verdict on the call of backward that failed; whether backward changed a tensor forward saved."""

    outputs: list
    grads: list = dataclasses.field(default_factory=list)
    error: _Verdict = None
    saved_changed: bool = False


def grad_outputs(kind, shapes, dtype):
    """The sets of grad_outputs backward is called with: for "jacobian", zeros then a one-hot per
    output element (the Jacobian's rows); for "normal", one set drawn from a fixed seed."""
    shapes = [tuple(s) for s in shapes]
    if kind == "normal":
        numpy_dtype = np.float32 if dtype == dtypes.float32 else np.float64
        return [[np.random.default_rng(0).standard_normal(s).astype(numpy_dtype) for s in shapes]]
    if kind != "jacobian":
        raise ValueError(f"no grad_outputs {kind!r}")
    rows = sum(math.prod(s) for s in shapes)
    sets = [[np.zeros(s) for s in shapes]]
    for r in range(rows):
        one_hot = np.zeros(rows)
        one_hot[r] = 1.0
        parts, start = [], 0
        for s in shapes:
            parts.append(one_hot[start:start + math.prod(s)].reshape(s))
            start += math.prod(s)
        sets.append(parts)
    return sets


def evaluate(exercise, function, case, dtype, kind):
    """Run the learner's Function on `case` (forward, then backward on each set of grad_outputs
    of `kind`): an Evaluation, or a _Verdict raised when forward fails."""
    if isinstance(function, Remote):
        return function.evaluate(case, dtype, kind)
    return evaluate_here(exercise, function, case, dtype, kind)


def evaluate_here(exercise, function, case, dtype, kind):
    """evaluate, in this process."""
    with _generator_kept(exercise):
        _, outputs, node = _forward(exercise, function, case, dtype)
        done = Evaluation([_host(o) for o in outputs])
        saved = [(t, _host(t)) for t in node.saved if isinstance(t, Tensor)]
        try:
            for grads in grad_outputs(kind, [o.shape for o in done.outputs], dtype):
                done.grads.append(_backward(exercise, function, node, outputs, grads))
        except _Verdict as verdict:
            done.error = verdict
        done.saved_changed = any(not np.array_equal(_host(t), before, equal_nan=True) for t, before in saved)
    return done


def _forward(exercise, function, case, dtype):
    inputs = exercise.inputs(case, dtype)
    _reseed(exercise)
    with _learner_code(function):
        result = function.apply(*inputs)
    outputs = result if isinstance(result, tuple) else (result,)
    node = next((o.grad_fn for o in outputs if isinstance(o, Tensor) and o.grad_fn is not None), None)
    if node is None:
        raise _Verdict("FAIL", finding("forward-changed", explanation="The forward returned no tensor that "
                                       "depends on the inputs: keep the forward as given."))
    return inputs, outputs, node


def _check_forward(exercise, case, outputs, dtype):
    """The learner's forward (given in the skeleton) still computes what the library computes
    (outputs: the learner's, as float64 arrays)."""
    with _generator_kept(exercise):
        inputs = exercise.inputs(case, dtype)
        _reseed(exercise)
        result = exercise.reference(*inputs)
    expected = result if isinstance(result, tuple) else (result,)
    problem = None
    if len(expected) != len(outputs):
        problem = f"it returns {len(outputs)} outputs instead of {len(expected)}"
    else:
        for name, mine, right in zip(exercise.outputs, outputs, expected):
            a, b = np.asarray(mine, dtype=np.float64), _host(right)
            if a.shape != b.shape:
                problem = f"{name} has shape {list(a.shape)} instead of {list(b.shape)}"
            elif not np.allclose(a, b, rtol=1e-5, atol=1e-7, equal_nan=True):
                problem = f"{name} differs from the library's by up to {np.nanmax(np.abs(a - b)):.3g}"
            if problem:
                break
    if problem:
        raise _Verdict("FAIL", finding("forward-changed", problem, f"The forward was changed: {problem}. The "
                                       "exercise is the backward: keep the forward as given."))


def _backward(exercise, function, node, outputs, grads):
    """{input: the learner's gradient as a float64 NumPy array, or None} for grad_outputs `grads`."""
    tensors = [functions.tensor(np.asarray(g), dtype=o.dtype) for g, o in zip(grads, outputs)]
    with _learner_code(function), autograd.no_grad():
        result = function.backward(node, *tensors)
    result = result if isinstance(result, tuple) else (result,)
    args, count = exercise.args, len(exercise.args)
    extra = result[count:]
    if len(result) < count or any(r is not None for r in extra):
        got = f"{len(result)} value{'s' * (len(result) != 1)}"
        raise _Verdict("FAIL", finding(
            "bad-return", f"returns {got}",
            f"backward returns {got}, but forward takes {count} argument{'s' * (count != 1)} ({', '.join(args)}): "
            "return one per argument, None for those that need no gradient, in that order."))
    grads_by_name = {}
    for name, value in zip(args, result):
        if name not in exercise.grads:
            continue
        if value is not None and not isinstance(value, Tensor):
            raise _Verdict("FAIL", finding("bad-return", f"the gradient of {name} is a {type(value).__name__}",
                                           f"Return a tensor for {name} (of its shape), not a "
                                           f"{type(value).__name__}."))
        grads_by_name[name] = None if value is None else _host(value)
    return grads_by_name


def _check_linear(grads):
    """Backward with grad_output = 0 must return zeros: the gradient is linear in grad_output."""
    for name, g in grads.items():
        if g is not None and not np.all(np.isfinite(g)):
            note = "has NaN or inf entries (already with grad_output = 0)"
            raise _Verdict("FAIL", finding("nan", note, "Look for 0/0, log(0), inf - inf or an overflowing exp in "
                                           "the backward."), [f"{name}: {note}"])
        if g is not None and not np.all(np.abs(g) <= 1e-12):
            note = f"is not 0 when grad_output is 0 (up to {np.max(np.abs(g)):.4g})"
            raise _Verdict("FAIL", finding(
                "not-linear", note,
                "A backward multiplies grad_output by the Jacobian, so a zero grad_output must give zero "
                "gradients: some term of yours does not carry the factor grad_output (or its sum)."),
                [f"{name}: {note}"])


def _stack(name, rows):
    shapes = {None if r is None else r.shape for r in rows}
    if shapes == {None}:
        return None
    shapes.discard(None)
    if len(shapes) > 1:
        raise _Verdict("FAIL", finding("wrong-shape", f"the shape of {name}'s gradient changes from call to call",
                                       "A gradient has its input's shape, whatever grad_output is."))
    (shape,) = shapes
    return np.stack([np.zeros(shape) if r is None else r for r in rows])


@contextlib.contextmanager
def _learner_code(function):
    """Turn an exception in the learner's code into a one-line report (NumPy's overflow warnings are
    silenced: a NaN or inf that results is reported as such)."""
    try:
        with np.errstate(all="ignore"):
            yield
    except _Verdict:
        raise
    except Exception as error:  # whatever the learner's code raises is reported, not propagated
        files = _files_of(function)
        text, where = _describe(error, files)
        frames = traceback.extract_tb(error.__traceback__)
        if isinstance(error, NotImplementedError) and frames and frames[-1].filename in files:
            raise _Verdict("not done yet", finding("not-done", explanation="backward still raises "
                                                   "NotImplementedError: write it.")) from None
        raise _Verdict("FAIL", finding("error", text, title=f"{type(error).__name__}{where}"),
                       [_located(text, where)]) from None


def _file_of(fn):
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return code.co_filename if code is not None else None


def _files_of(piece):
    """The files a learner's piece (a Function, a class, a function) was written in."""
    if not isinstance(piece, type):
        return {_file_of(piece)}
    return {_file_of(value) for value in vars(piece).values()} - {None} or {None}


def _located(text, where):
    """'file.py:12: ShapeError: ...', as compilers say it."""
    return f"{where.removeprefix(' at ')}: {text}" if where else text


def _describe(error, files):
    """('ShapeError: message', ' at file.py:12'): the line of the learner's file it came from."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename in files]
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if len(message) > 300:
        message = message[:297] + "..."
    return f"{type(error).__name__}: {message}" if message else type(error).__name__, where


def _reseed(exercise):
    if exercise.random:
        random.manual_seed(SEED)


@contextlib.contextmanager
def _generator_kept(exercise):
    """For a random exercise, the caller's random state comes back afterwards (the checker reseeds
    before every forward); the others leave the generator alone."""
    if not exercise.random:
        yield
        return
    state = random.get_rng_state()
    try:
        yield
    finally:
        random.set_rng_state(state)


def _host(tensor):
    return np.array(backend.to_host(tensor.array), dtype=np.float64)


def _index(flat, shape):
    if not shape:
        return ""
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, tuple(shape))) + "]"


def _sum_to(array, shape):
    """Sum (R, *wide) over the dims that broadcasting a `shape` array to `wide` adds; None if it can't."""
    wide = array.shape[1:]
    if len(shape) > len(wide):
        return None
    lead = len(wide) - len(shape)
    dims = list(range(lead))
    for d, size in enumerate(shape):
        if size == 1 and wide[lead + d] != 1:
            dims.append(lead + d)
        elif size != wide[lead + d]:
            return None
    summed = array.sum(axis=tuple(d + 1 for d in dims), keepdims=True) if dims else array
    return summed.reshape(array.shape[0], *shape)


def format_case(case, args):
    """A case as text: 'x (2, 1) = [[0.5], [0.0]], p = 0.25'."""
    parts = []
    for name in args:
        value = case[name]
        if isinstance(value, np.ndarray):
            text = np.array2string(value, separator=", ", threshold=24, edgeitems=2, max_line_width=10_000,
                                   formatter={"float_kind": lambda v: f"{v:.4g}"})
            text = " ".join(text.split()).replace("[ ", "[")
            parts.append(f"{name} {tuple(value.shape)} = {text}")
        else:
            parts.append(f"{name} = {value!r}")
    return ", ".join(parts)
