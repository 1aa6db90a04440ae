"""Finite-difference gradient checks: does a backward agree with its forward?

`gradcheck(fn, inputs)` compares two Jacobians of `fn` with respect to every input that requires grad:

- analytical: what the backward pass computes. A backward pass with a one-hot gradient at output
  element r gives row r of the Jacobian (`autograd.grad(out, inputs, grad_outputs=one_hot)`);
- numerical: central differences, (f(x + eps) - f(x - eps)) / (2 eps), one input element at a time,
  column by column. Their error is O(eps^2), against O(eps) for a one-sided difference.

The two must agree elementwise: |analytical - numerical| <= atol + rtol * |numerical|. Check in
float64: float32 keeps about 7 digits, and a difference over eps = 1e-6 throws away most of them.

Random ops (dropout) can be checked: `fn` is always evaluated right after seeding the default
generator with `seed`, so every evaluation draws the same mask. The caller's generator state is
restored afterwards.

For big inputs, `fast_mode=True` compares one number per (output, input) pair instead of whole
Jacobians: v^T J u for random u and v. One backward pass with grad_output v gives v^T J, dotted with
u; one central difference along u gives J u, dotted with v.

    >>> x = tinyattn.randn(3, 4, dtype=tinyattn.float64, requires_grad=True)
    >>> tinyattn.gradcheck(lambda x: (x * x).sum(), x)
    True

`numerical_jacobian` and `numerical_grad` return the finite differences themselves, to compare by
hand with what `backward()` left in `.grad`.

`python -m tinyattn gradcheck` runs the check over every differentiable op and layer (see `main`).
"""

import contextlib
import itertools
import math
import re
import sys
import time
import warnings

import numpy as np

from . import autograd, backend, dtypes, functions, linalg, nn, random
from .console import EXIT_INTERRUPTED, ArgumentParser, fill, fit, is_terminal, plural, terminal_width
from .errors import BackwardError, GradcheckError
from .nn import functional as F
from .tensor import Tensor


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, fast_mode=False, seed=0, raise_exception=True):
    """True when the backward of `fn` agrees with finite differences; GradcheckError otherwise.

    fn: called as fn(*inputs); returns a tensor or a tuple of tensors (outputs that are not floating
        point tensors, such as the indices of max(dim), are not checked).
    inputs: a tensor or a tuple; the tensors that require grad are checked, the rest are passed
        through. They are perturbed in place (and restored), so pass float64 leaves.
    eps: the finite-difference step. atol, rtol: the elementwise tolerance.
    fast_mode: compare a random projection v^T J u per (output, input) pair (cheap for big inputs;
        a failure cannot name the element, so rerun with fast_mode=False to find it).
    seed: the default generator is seeded with it before every evaluation of fn (dropout masks are
        then the same each time).
    raise_exception: False returns False on a mismatch instead of raising.
    """
    report = check_gradients(fn, inputs, eps=eps, atol=atol, rtol=rtol, fast_mode=fast_mode, seed=seed,
                             _stacklevel=4)
    if report.error is None:
        return True
    if raise_exception:
        raise report.error
    return False


def numerical_jacobian(fn, inputs, eps=1e-6, seed=0):
    """The central-difference Jacobian of fn: a float64 NumPy array (output.numel(), input.numel()).

    One array per input that requires grad (a tuple when `inputs` is a tuple), and that per output
    (an outer tuple when fn returns a tuple). Row r, column c: d output.flatten()[r] / d input.flatten()[c].
    seed=None leaves the default generator alone, for an fn that draws nothing random (reseeding
    before each of the 2n evaluations costs about 2 ms each).
    """
    single_input = isinstance(inputs, Tensor)
    inputs = _as_tuple(inputs)
    checked = _checked_positions(inputs, "numerical_jacobian")
    _check_settings(eps)
    _warn_unless_float64(inputs, checked, eps)
    with _frozen_randomness(seed) as reseed:
        outputs, single_output = _evaluate(fn, inputs, reseed, record=False)
        numerical = _numerical_jacobians(fn, inputs, checked, _shapes(outputs), eps, reseed)
    per_output = []
    for k, _ in outputs:
        per_input = tuple(numerical[k, j] for j in checked)
        per_output.append(per_input[0] if single_input else per_input)
    return per_output[0] if single_output else tuple(per_output)


def numerical_grad(fn, inputs, eps=1e-6, seed=0):
    """The gradient of a scalar-valued fn by central differences, shaped like each input.

    Returns a tensor (a tuple of tensors when `inputs` is a tuple, one per input that requires
    grad), with the input's dtype and device: what `fn(*inputs).backward()` should leave in `.grad`.
    """
    single_input = isinstance(inputs, Tensor)
    inputs = _as_tuple(inputs)
    checked = _checked_positions(inputs, "numerical_grad")
    _check_settings(eps)
    _warn_unless_float64(inputs, checked, eps)
    with _frozen_randomness(seed) as reseed:
        outputs, _ = _evaluate(fn, inputs, reseed, record=False)
        if len(outputs) != 1 or outputs[0][1].numel() != 1:
            shapes = [list(o.shape) for _, o in outputs]
            raise ValueError(
                f"numerical_grad needs fn to return one scalar (a loss), got outputs of shapes {shapes}: "
                "reduce it (e.g. .sum()), or use numerical_jacobian"
            )
        numerical = _numerical_jacobians(fn, inputs, checked, _shapes(outputs), eps, reseed)
    k = outputs[0][0]
    grads = []
    for j in checked:
        x = inputs[j]
        grads.append(Tensor._wrap(backend.from_host(numerical[k, j].reshape(x.shape), x.device, x.dtype)))
    return grads[0] if single_input else tuple(grads)


# ---------------------------------------------------------------------------------------------
# the check


class Report:
    """What a check found: the largest errors over all (output, input) pairs, and the first failure."""

    def __init__(self):
        self.max_abs_error = 0.0
        self.max_rel_error = 0.0
        self.error = None  # a GradcheckError, or None when everything agreed

    def add(self, abs_error, rel_error):
        # max() that lets a NaN through, so that a NaN gradient is never reported as a small error
        """Takes one comparison's errors into the maxima (a NaN is kept, never hidden)."""
        self.max_abs_error = _nan_max(self.max_abs_error, abs_error)
        self.max_rel_error = _nan_max(self.max_rel_error, rel_error)


def _nan_max(a, b):
    return a if math.isnan(a) else b if math.isnan(b) else max(a, b)


def check_gradients(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, fast_mode=False, seed=0, _stacklevel=3):
    """Run the check and return a Report (gradcheck raises or returns from it)."""
    inputs = _as_tuple(inputs)
    checked = _checked_positions(inputs, "gradcheck")
    _check_settings(eps, atol, rtol)
    _warn_unless_float64(inputs, checked, eps, _stacklevel)
    report = Report()
    try:
        with _frozen_randomness(seed) as reseed:
            outputs, _ = _evaluate(fn, inputs, reseed, record=True)
            shapes = _shapes(outputs)
            if fast_mode:
                _check_projection(report, fn, inputs, checked, outputs, eps, atol, rtol, seed, reseed)
            else:
                analytical = _analytical_jacobians(inputs, checked, outputs)
                del outputs  # free the graph before the many evaluations of the numerical side
                numerical = _numerical_jacobians(fn, inputs, checked, shapes, eps, reseed)
                for k, out_shape in shapes:
                    for j in checked:
                        _compare(report, analytical[k, j], numerical[k, j], k, j, inputs[j].shape,
                                 out_shape, eps, atol, rtol)
    except GradcheckError as error:
        report.error = error
    return report


def _compare(report, analytical, numerical, k, j, in_shape, out_shape, eps, atol, rtol):
    """Compare the (output k, input j) blocks elementwise; record the first mismatch in the report."""
    abs_error = np.abs(analytical - numerical)
    size = np.abs(numerical)
    # relative to the numerical value; an error where the numerical value is 0 is infinitely relative
    rel_error = np.divide(abs_error, size, out=np.where(abs_error == 0, 0.0, np.inf), where=size > 0)
    ok = (abs_error <= atol + rtol * size) | (analytical == numerical)
    if abs_error.size:
        report.add(float(np.max(abs_error)), float(np.max(rel_error)))
    if ok.all() or report.error is not None:
        return
    bad = ~ok
    worst = int(np.argmax(np.where(bad, np.nan_to_num(abs_error, nan=np.inf), -1.0)))
    row, column = divmod(worst, analytical.shape[1])
    report.error = GradcheckError(
        f"Jacobian mismatch for output {k} with respect to input {j} (shape {list(in_shape)}) at element "
        f"{_index(column, in_shape)} (output element {_index(row, out_shape)}): "
        f"{_numerical_and_analytical(numerical.flat[worst], analytical.flat[worst])}; "
        f"max abs error {np.max(abs_error):.1e}, max rel error {np.max(rel_error):.1e} "
        f"(atol={atol}, rtol={rtol}, eps={eps}); {int(bad.sum())} of {bad.size} Jacobian entries "
        "out of tolerance"
    )


def _numerical_and_analytical(numerical, analytical):
    """"numerical 0.5, analytical 0.5000012": six significant digits, or as many as it takes to tell
    the two apart (a check at a tight tolerance fails on differences in the 9th digit)."""
    for digits in range(6, 18):
        n, a = f"{float(numerical):.{digits}g}", f"{float(analytical):.{digits}g}"
        if n != a:
            break
    return f"numerical {n}, analytical {a}"


def _index(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, tuple(shape)))


# ---------------------------------------------------------------------------------------------
# the analytical side: backward passes


def _analytical_jacobians(inputs, checked, outputs):
    """{(k, j): array (output k numel, input j numel)}: row r from a backward with a one-hot at r."""
    jacobians = {}
    for k, out in outputs:
        rows = {j: np.zeros((out.numel(), inputs[j].numel())) for j in checked}
        if out.requires_grad:  # else nothing reaches the inputs: the rows stay zero
            for r in range(out.numel()):
                one_hot = np.zeros(out.numel())
                one_hot[r] = 1.0
                for j, g in zip(checked, _vector_jacobian(inputs, checked, k, out, one_hot)):
                    rows[j][r] = g
        for j in checked:
            jacobians[k, j] = rows[j]
    return jacobians


def _vector_jacobian(inputs, checked, k, out, vector):
    """v^T J for output k and each checked input (flat float64 arrays; zeros for unused inputs)."""
    grad_output = Tensor._wrap(backend.from_host(vector.reshape(out.shape), out.device, out.dtype))
    tensors = [inputs[j] for j in checked]
    try:
        grads = autograd.grad([out], tensors, [grad_output], retain_graph=True, allow_unused=True)
    except BackwardError as error:
        raise GradcheckError(f"the backward pass from output {k} failed: {error}") from error
    flat = []
    for j, x, g in zip(checked, tensors, grads):
        if g is None:  # the output does not depend on this input
            flat.append(np.zeros(x.numel()))
            continue
        if tuple(g.shape) != tuple(x.shape):
            raise GradcheckError(
                f"the gradient of output {k} with respect to input {j} has shape {list(g.shape)}, "
                f"but the input has shape {list(x.shape)}: a gradient must have its input's shape "
                "(sum over the dims that broadcasting added)"
            )
        flat.append(_host(g).ravel())
    return flat


# ---------------------------------------------------------------------------------------------
# the numerical side: central differences


def _numerical_jacobians(fn, inputs, checked, shapes, eps, reseed):
    """{(k, j): array (output k numel, input j numel)}, column c from perturbing element c of input j.

    `shapes`: [(k, shape)] of the outputs fn returned unperturbed.
    """
    jacobians = {}
    for j in checked:
        original = _host(inputs[j])
        columns = []
        for c in range(original.size):
            step = np.zeros(original.shape)
            step.flat[c] = eps
            columns.append(_central_difference(fn, inputs, j, original, step, eps, shapes, reseed))
        for index, (k, shape) in enumerate(shapes):
            block = np.zeros((math.prod(shape), original.size))
            for c, column in enumerate(columns):
                block[:, c] = column[index].ravel()
            jacobians[k, j] = block
    return jacobians


def _central_difference(fn, inputs, j, original, step, eps, shapes, reseed):
    """(f(x + step) - f(x - step)) / (2 eps) for every output in `shapes`, x = input j (float64)."""
    x = inputs[j]
    try:
        plus = _perturbed_outputs(fn, inputs, j, original + step, shapes, reseed)
        minus = _perturbed_outputs(fn, inputs, j, original - step, shapes, reseed)
    finally:
        _write(x, j, original)
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def _perturbed_outputs(fn, inputs, j, values, shapes, reseed):
    """fn's outputs (float64 host copies) with input j set to `values`."""
    _write(inputs[j], j, values)
    outputs = _evaluate(fn, inputs, reseed, record=False)[0]
    if _shapes(outputs) != shapes:
        raise GradcheckError(
            f"fn's outputs changed when input {j} moved by eps: {_shapes(outputs)} instead of {shapes} "
            "(as (output, shape) pairs)"
        )
    # copied right away: an output can be a view of the input, which the next write changes
    return [_host(o) for _, o in outputs]


def _write(x, j, values):
    """Overwrite the numbers of input j in place (no graph, no version bump: restored right after)."""
    problem = "an expand()ed view: its elements share memory" if backend.shares_elements(x.array) else None
    if problem is None:
        try:
            x.array[...] = backend.from_host(values, x.device, x.dtype)
        except ValueError as error:
            problem = str(error)
    if problem:
        raise GradcheckError(
            f"gradcheck perturbs each input in place, but input {j} cannot be written ({problem}): "
            "pass a .clone() of it"
        )


# ---------------------------------------------------------------------------------------------
# fast mode: v^T J u


def _check_projection(report, fn, inputs, checked, outputs, eps, atol, rtol, seed, reseed):
    """Compare v^T J u for one random u per input and v per output, instead of whole Jacobians."""
    # As in PyTorch: u and v have positive entries (uniform in [0, 1), scaled to length 1), so that
    # an error spread over many Jacobian entries adds up instead of cancelling in random signs
    directions = np.random.default_rng(seed)

    def unit_direction(shape):
        d = directions.uniform(0.0, 1.0, shape)
        return d / max(np.linalg.norm(d), np.finfo(np.float64).tiny)

    u = {j: unit_direction(tuple(inputs[j].shape)) for j in checked}
    v = {k: unit_direction(tuple(out.shape)) for k, out in outputs}

    analytical = {}  # (v^T J) . u
    for k, out in outputs:
        if out.requires_grad:
            vjp = _vector_jacobian(inputs, checked, k, out, v[k].ravel())
        else:
            vjp = [np.zeros(inputs[j].numel()) for j in checked]
        for j, g in zip(checked, vjp):
            analytical[k, j] = float(g @ u[j].ravel())
    shapes = _shapes(outputs)
    del outputs  # free the graph

    for j in checked:
        original = _host(inputs[j])
        jvp = _central_difference(fn, inputs, j, original, eps * u[j], eps, shapes, reseed)  # J u
        for (k, _), ju in zip(shapes, jvp):
            a, n = analytical[k, j], float(ju.ravel() @ v[k].ravel())
            # an error of atol in every Jacobian entry moves v^T J u by atol * sum(u) * sum(v)
            tolerance = atol * u[j].sum() * v[k].sum()
            abs_error = abs(a - n)
            rel_error = abs_error / abs(n) if n else (0.0 if a == n else math.inf)
            report.add(abs_error, rel_error)
            if not abs_error <= tolerance + rtol * abs(n) and report.error is None:
                report.error = GradcheckError(
                    f"Jacobian mismatch for output {k} with respect to input {j} (shape "
                    f"{list(inputs[j].shape)}) in fast mode, which compares a random projection "
                    f"v^T J u: {_numerical_and_analytical(n, a)}; abs error {abs_error:.1e}, rel "
                    f"error {rel_error:.1e} (atol={atol} scaled to {tolerance:.1e} for the "
                    f"projection, rtol={rtol}, eps={eps}). Run gradcheck with fast_mode=False to "
                    "locate the element."
                )


# ---------------------------------------------------------------------------------------------
# helpers


def _check_settings(eps, atol=0.0, rtol=0.0):
    """A step and tolerances that can work (eps = 0 divides by zero; a negative tolerance fails all)."""
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"eps must be a small positive step (1e-6 in float64), got {eps}")
    for name, value in (("atol", atol), ("rtol", rtol)):
        if not value >= 0:
            raise ValueError(f"{name} must be 0 or more, got {value}")


def _as_tuple(inputs):
    return (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)


def _checked_positions(inputs, name):
    checked = [j for j, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        raise ValueError(
            f"{name}: no input requires grad, so there is nothing to check: create the inputs with "
            "requires_grad=True (e.g. tinyattn.randn(3, dtype=tinyattn.float64, requires_grad=True))"
        )
    return checked


def _warn_unless_float64(inputs, checked, eps, stacklevel=3):
    for j in checked:
        if inputs[j].dtype is not dtypes.float64:
            warnings.warn(
                f"input {j} is {inputs[j].dtype}, not float64: finite differences in single precision "
                "are too coarse (float32 keeps about 7 digits, and dividing a difference by "
                f"2 * eps={2 * eps:g} multiplies its rounding error by {1 / (2 * eps):g}), so expect "
                "spurious mismatches. Check in float64: x.double(), module.double()",
                UserWarning,
                stacklevel=stacklevel,  # points at the caller's line
            )


@contextlib.contextmanager
def _frozen_randomness(seed):
    """Yield reseed(): seeds the default generator with `seed`; the caller's state comes back after.
    seed=None: reseed() does nothing and the generator is not touched."""
    if seed is None:
        yield lambda: None
        return
    state = random.get_rng_state()

    def reseed():
        random.manual_seed(seed)

    try:
        yield reseed
    finally:
        random.set_rng_state(state)


def _evaluate(fn, inputs, reseed, record):
    """fn(*inputs) after reseeding: ([(position, tensor) of each floating point output], single)."""
    reseed()
    with autograd.set_grad_enabled(record):
        result = fn(*inputs)
    single = isinstance(result, Tensor)
    results = (result,) if single else result
    if not isinstance(results, (tuple, list)):
        raise TypeError(f"gradcheck: fn must return a tensor or a tuple of tensors, got {type(result).__name__}")
    outputs = [(k, o) for k, o in enumerate(results) if isinstance(o, Tensor) and o.dtype.is_floating_point]
    if not outputs:
        raise TypeError("gradcheck: fn returned no floating point tensor, so there is nothing to differentiate")
    return outputs, single


def _shapes(outputs):
    return [(k, tuple(o.shape)) for k, o in outputs]


def _host(tensor):
    """A float64 NumPy copy of a tensor's numbers (a copy: an output may be a view of an input)."""
    return np.array(backend.to_host(tensor.array), dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# `tinyattn gradcheck`: every op and layer, one line each


class Check:
    """One entry of the table: a name, a function and its inputs (`label` replaces the shapes)."""

    def __init__(self, name, fn, inputs, label=None):
        self.name, self.fn, self.inputs = name, fn, tuple(inputs)
        self.label = label or ", ".join(str(list(x.shape)) for x in self.inputs if isinstance(x, Tensor))


class _Numbers:
    """Small float64 leaves for the checks, away from kinks (0 for relu/abs, ties for max)."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def leaf(self, values):
        return functions.tensor(values, dtype=dtypes.float64, requires_grad=True)

    def x(self, *shape):
        return self.leaf(self.rng.uniform(-2.0, 2.0, shape))

    def positive(self, *shape):
        return self.leaf(self.rng.uniform(0.5, 2.0, shape))

    def nonzero(self, *shape):
        """Values at least 0.2 away from 0 (and from the clamp bounds +-1)."""
        magnitude = self.rng.choice([0.3, 0.6, 1.3, 1.7], shape) + self.rng.uniform(-0.1, 0.1, shape)
        return self.leaf(magnitude * self.rng.choice([-1.0, 1.0], shape))

    def distinct(self, *shapes):
        """Leaves whose values are all different (0.25 apart at least), for max/min and their ties."""
        sizes = [math.prod(s) for s in shapes]
        values = (self.rng.permutation(sum(sizes)) - sum(sizes) / 2) * 0.25 + self.rng.uniform(0, 0.05)
        leaves, start = [], 0
        for shape, size in zip(shapes, sizes):
            leaves.append(self.leaf(values[start:start + size].reshape(shape)))
            start += size
        return leaves

    def ints(self, high, *shape):
        return functions.tensor(self.rng.integers(0, high, shape), dtype=dtypes.int64)

    def mask(self, *shape):
        return functions.tensor(self.rng.random(shape) < 0.4)


def op_checks(seed=0):
    """Every differentiable op of tinyattn.ops and tinyattn.nn.functional, with small float64 inputs."""
    T = functions
    r = _Numbers(seed)
    a, b = r.x(3, 4), r.x(3, 4)
    m1, m2 = r.distinct((3, 4), (4,))
    checks = [
        # elementwise arithmetic (each binary op also with broadcasting)
        Check("add", lambda a, b: a + b, (a, b)),
        Check("add broadcast", lambda a, b: a + b, (r.x(3, 1), r.x(4))),
        Check("add scalar", lambda a: 2.5 + a, (r.x(3),)),
        Check("sub", lambda a, b: a - b, (a, b)),
        Check("sub broadcast", lambda a, b: a - b, (r.x(2, 3, 1), r.x(3, 4))),
        Check("rsub scalar", lambda a: 1 - a, (r.x(3),)),
        Check("mul", lambda a, b: a * b, (a, b)),
        Check("mul broadcast", lambda a, b: a * b, (r.x(3, 4), r.x(4))),
        Check("div", lambda a, b: a / b, (a, r.nonzero(3, 4))),
        Check("div broadcast", lambda a, b: a / b, (r.x(3, 4), r.positive(3, 1))),
        Check("rdiv scalar", lambda a: 1 / a, (r.nonzero(3),)),
        Check("pow scalar exponent", lambda a: a**3, (r.x(3, 4),)),
        Check("pow fractional exponent", lambda a: a**2.5, (r.positive(3, 4),)),
        Check("pow tensor exponent", lambda a, b: a**b, (r.positive(3, 4), r.x(4))),
        Check("rpow scalar base", lambda a: 2.0**a, (r.x(3, 4),)),
        Check("neg", lambda a: -a, (r.x(3, 4),)),
        Check("exp", lambda a: a.exp(), (r.x(3, 4),)),
        Check("log", lambda a: a.log(), (r.positive(3, 4),)),
        Check("sqrt", lambda a: a.sqrt(), (r.positive(3, 4),)),
        Check("rsqrt", lambda a: a.rsqrt(), (r.positive(3, 4),)),
        Check("tanh", lambda a: a.tanh(), (r.x(3, 4),)),
        Check("sigmoid", lambda a: a.sigmoid(), (r.x(3, 4),)),
        Check("relu", lambda a: a.relu(), (r.nonzero(3, 4),)),
        Check("abs", lambda a: a.abs(), (r.nonzero(3, 4),)),
        Check("clamp", lambda a: a.clamp(-1.0, 1.0), (r.nonzero(3, 4),)),
        Check("clamp min only", lambda a: a.clamp(min=0.0), (r.nonzero(3, 4),)),
        Check("clamp tensor bounds", lambda a, low, high: a.clamp(low, high),
              (r.nonzero(3, 4), r.leaf(np.full((1, 4), -1.0)), r.leaf(np.full(4, 1.0)))),
        Check("maximum broadcast", lambda a, b: a.maximum(b), (m1, m2)),
        Check("minimum broadcast", lambda a, b: a.minimum(b), tuple(r.distinct((2, 3, 1), (3, 4)))),
        # reductions
        Check("sum", lambda a: a.sum(), (r.x(3, 4),)),
        Check("sum dim keepdim", lambda a: a.sum(1, keepdim=True), (r.x(3, 4),)),
        Check("sum dims", lambda a: a.sum((0, 2)), (r.x(2, 3, 4),)),
        Check("mean", lambda a: a.mean(), (r.x(3, 4),)),
        Check("mean dim keepdim", lambda a: a.mean(-1, keepdim=True), (r.x(3, 4),)),
        Check("var", lambda a: a.var(), (r.x(3, 4),)),
        Check("var dim keepdim biased", lambda a: a.var(1, unbiased=False, keepdim=True), (r.x(3, 4),)),
        Check("std dim", lambda a: a.std(0), (r.x(3, 4),)),
        Check("max", lambda a: a.max(), tuple(r.distinct((3, 4)))),
        Check("max dim", lambda a: a.max(dim=1), tuple(r.distinct((3, 4)))),
        Check("min dim keepdim", lambda a: a.min(dim=0, keepdim=True).values, tuple(r.distinct((3, 4)))),
        Check("topk", lambda a: a.topk(2, dim=-1).values, tuple(r.distinct((3, 4)))),
        # matrix products
        Check("matmul", lambda a, b: a @ b, (r.x(3, 4), r.x(4, 2))),
        Check("matmul batched", lambda a, b: a @ b, (r.x(2, 3, 4), r.x(2, 4, 2))),
        Check("matmul broadcast", lambda a, b: a @ b, (r.x(2, 1, 3, 4), r.x(3, 4, 2))),
        Check("matmul vector @ matrix", lambda a, b: a @ b, (r.x(4), r.x(4, 3))),
        Check("matmul matrix @ vector", lambda a, b: a @ b, (r.x(2, 3, 4), r.x(4))),
        Check("matmul vector @ vector", lambda a, b: a @ b, (r.x(4), r.x(4))),
        # shapes and views
        Check("reshape", lambda a: a.reshape(2, -1, 3), (r.x(3, 4),)),
        Check("view", lambda a: a.view(4, 3), (r.x(3, 4),)),
        Check("permute", lambda a: a.permute(2, 0, 1), (r.x(2, 3, 4),)),
        Check("transpose", lambda a: a.transpose(0, -1), (r.x(2, 3, 4),)),
        Check("t", lambda a: a.t(), (r.x(3, 4),)),
        Check("cumsum", lambda a: a.cumsum(-1), (r.x(3, 4),)),
        Check("logsumexp dims", lambda a: a.logsumexp((0, 2)), (r.x(2, 3, 4),)),
        Check("transpose contiguous view", lambda a: a.transpose(0, 1).contiguous().view(-1), (r.x(3, 4),)),
        Check("expand", lambda a: a.expand(2, 3, 4), (r.x(3, 1),)),
        Check("unsqueeze squeeze flatten", lambda a: a.unsqueeze(1).squeeze(1).flatten(), (r.x(3, 4),)),
        Check("repeat", lambda a: a.repeat(2, 1, 2), (r.x(3, 2),)),
        Check("clone", lambda a: a.clone(), (r.x(3, 4),)),
        Check("tril", lambda a: a.tril(), (r.x(4, 4),)),
        Check("triu diagonal 1", lambda a: a.triu(1), (r.x(3, 4),)),
        # indexing, masking, joining
        Check("index int", lambda a: a[1], (r.x(3, 4),)),
        Check("index slices", lambda a: a[::2, 1:3], (r.x(3, 4),)),
        Check("index None ellipsis", lambda a: a[None, ..., 0], (r.x(2, 3, 4),)),
        Check("index int tensor (repeats)", lambda a: a[T.tensor([0, 2, 0])], (r.x(3, 4),)),
        Check("index int tensor and slice", lambda a: a[T.tensor([2, 0]), 1:], (r.x(3, 4),)),
        Check("index bool mask", lambda a: a[a.detach() > 0], (r.x(3, 4),)),
        Check("index_put slices", _index_put(lambda: (slice(1, None), slice(None, 2))), (r.x(3, 4), r.x(2, 2))),
        Check("index_put int tensor broadcast", _index_put(lambda: T.tensor([2, 0])), (r.x(3, 4), r.x(4))),
        Check("index_put bool mask scalar", _fill_where_positive, (r.x(3, 4),)),
        Check("in-place ops on views (CopySlices)", _change_views_in_place, (r.x(3, 4), r.x(4))),
        Check("gather", lambda a, index: a.gather(1, index), (r.x(3, 4), r.ints(4, 3, 5))),
        Check("masked_fill broadcast mask", lambda a, mask: a.masked_fill(mask, -1.5), (r.x(3, 4), r.mask(4))),
        Check("where broadcast", lambda mask, a, b: T.where(mask, a, b), (r.mask(3, 4), r.x(3, 4), r.x(4))),
        Check("cat", lambda a, b, c: T.cat([a, b, c], dim=0), (r.x(1, 4), r.x(2, 4), r.x(3, 4))),
        Check("cat dim -1", lambda a, b: T.cat([a, b], dim=-1), (r.x(3, 2), r.x(3, 4))),
        Check("stack", lambda a, b: T.stack([a, b], dim=1), (r.x(3, 4), r.x(3, 4))),
        Check("split", lambda a: a.split([1, 2], dim=0), (r.x(3, 4),)),
        Check("chunk", lambda a: a.chunk(2, dim=1), (r.x(3, 4),)),
        Check("unbind", lambda a: a.unbind(1), (r.x(3, 4),)),
        # softmax and friends
        Check("softmax", lambda a: a.softmax(-1), (r.x(3, 4),)),
        Check("softmax dim 0", lambda a: T.softmax(a, dim=0), (r.x(3, 4),)),
        Check("log_softmax", lambda a: F.log_softmax(a, dim=-1), (r.x(3, 4),)),
        Check("safe_softmax", lambda a: F.safe_softmax(a, dim=-1), (r.x(3, 4),)),
        Check("safe_softmax fully masked row", _masked_safe_softmax, (r.x(3, 4),)),
        # nn.functional
        Check("linear", lambda x, w, b: F.linear(x, w, b), (r.x(2, 3, 4), r.x(5, 4), r.x(5))),
        Check("linear no bias", lambda x, w: F.linear(x, w), (r.x(3, 4), r.x(2, 4))),
        Check("embedding (weight)", lambda ids, w: F.embedding(ids, w),
              (T.tensor([[1, 3, 1], [0, 4, 4]]), r.x(5, 3))),
        Check("dropout p=0.5", lambda a: F.dropout(a, 0.5), (r.x(4, 5),)),
        Check("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), (r.x(2, 3, 4), r.x(4), r.x(4))),
        Check("layer_norm last two dims", lambda x: F.layer_norm(x, (3, 4)), (r.x(2, 3, 4),)),
        Check("gelu", lambda a: F.gelu(a), (r.x(3, 4),)),
        Check("gelu tanh", lambda a: F.gelu(a, approximate="tanh"), (r.x(3, 4),)),
        Check("cross_entropy", lambda logits, t: F.cross_entropy(logits, t), (r.x(4, 5), r.ints(5, 4))),
        Check("cross_entropy ignore_index", lambda logits, t: F.cross_entropy(logits, t, ignore_index=2),
              (r.x(5, 3), T.tensor([0, 2, 1, 2, 2]))),
        Check("cross_entropy sum", lambda logits, t: F.cross_entropy(logits, t, reduction="sum"),
              (r.x(4, 5), r.ints(5, 4))),
        Check("cross_entropy none (N, C, d)", lambda logits, t: F.cross_entropy(logits, t, reduction="none"),
              (r.x(2, 4, 3), r.ints(4, 2, 3))),
        Check("nll_loss", lambda logp, t: F.nll_loss(logp, t), (r.x(4, 5), r.ints(5, 4))),
        Check("mse_loss", lambda a, b: F.mse_loss(a, b), (r.x(3, 4), r.x(3, 4))),
        Check("scaled_dot_product_attention", lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
              (r.x(2, 3, 4), r.x(2, 5, 4), r.x(2, 5, 2))),
        Check("sdpa causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
              (r.x(2, 4, 3), r.x(2, 4, 3), r.x(2, 4, 3))),
        Check("sdpa bool mask", lambda q, k, v, mask: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
              (r.x(3, 2), r.x(4, 2), r.x(4, 3), r.mask(3, 4))),
        Check("sdpa causal dropout 0.5",
              lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, is_causal=True),
              (r.x(2, 4, 3), r.x(2, 4, 3), r.x(2, 4, 3))),
        Check("attention context and weights, bias, shared keys",
              lambda q, k, v, bias, blocked: F.attention(q, k, v, blocked=blocked, bias=bias),
              (r.x(2, 3, 2), r.x(4, 2), r.x(4, 3), r.x(3, 4), r.mask(3, 4))),
        # more elementwise math
        Check("sin", lambda a: a.sin(), (r.x(3, 4),)),
        Check("cos", lambda a: T.cos(a), (r.x(3, 4),)),
        Check("reciprocal", lambda a: a.reciprocal(), (r.nonzero(3, 4),)),
        Check("log1p", lambda a: a.log1p(), (r.positive(3, 4),)),
        Check("expm1", lambda a: T.expm1(a), (r.x(3, 4),)),
        Check("log2", lambda a: a.log2(), (r.positive(3, 4),)),
        Check("log10", lambda a: T.log10(a), (r.positive(3, 4),)),
        Check("exp2", lambda a: a.exp2(), (r.x(3, 4),)),
        Check("erf", lambda a: T.erf(a), (r.x(3, 4),)),
        Check("square", lambda a: T.square(a), (r.x(3, 4),)),
        Check("pow function, number base", lambda a: T.pow(2.0, a), (r.x(3, 4),)),
        Check("sign floor ceil round trunc (zero gradient)",
              lambda a: a * (a.sign() + a.floor() + a.ceil() + a.round() + a.trunc()),
              (r.leaf(np.array([[-1.7, -0.3, 0.2], [1.4, 2.6, -2.2]])),)),
        Check("clamp_min", lambda a: a.clamp_min(0.0), (r.nonzero(3, 4),)),
        # more reductions
        Check("prod", lambda a: a.prod(), (r.x(2, 3),)),
        Check("prod dim, with zeros", lambda a: a.prod(1), (r.leaf(np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]])),)),
        Check("cumprod", lambda a: a.cumprod(-1), (r.x(3, 4),)),
        Check("cumprod with zeros", lambda a: a.cumprod(0), (r.leaf(np.array([1.5, 0.0, -2.0, 0.0, 0.7])),)),
        Check("amax dims", lambda a: a.amax((0, 2)), tuple(r.distinct((2, 3, 4)))),
        Check("amin keepdim", lambda a: a.amin(-1, keepdim=True), tuple(r.distinct((3, 4)))),
        Check("norm", lambda a: a.norm(), (r.x(3, 4),)),
        Check("vector_norm ord 3 dim", lambda a: linalg.vector_norm(a, 3, dim=-1), (r.nonzero(3, 4),)),
        Check("vector_norm inf", lambda a: linalg.vector_norm(a, math.inf, dim=0), tuple(r.distinct((3, 4)))),
        Check("normalize", lambda a: F.normalize(a, dim=-1), (r.x(3, 4),)),
        # more matrix products
        Check("outer", lambda a, b: T.outer(a, b), (r.x(3), r.x(4))),
        Check("addmm", lambda c, a, b: T.addmm(c, a, b, beta=0.5, alpha=2.0), (r.x(4), r.x(3, 2), r.x(2, 4))),
        Check("baddbmm", lambda c, a, b: c.baddbmm(a, b), (r.x(2, 3, 4), r.x(2, 3, 2), r.x(2, 2, 4))),
        Check("trace", lambda a: a.trace(), (r.x(3, 4),)),
        # sorting, selecting, scattering, padding
        Check("sort", lambda a: T.sort(a, dim=-1, descending=True), tuple(r.distinct((3, 4)))),
        Check("index_select (repeats)", lambda a: a.index_select(1, T.tensor([3, 0, 3])), (r.x(3, 4),)),
        Check("masked_select broadcast mask", lambda a, mask: a.masked_select(mask), (r.x(3, 4), r.mask(4))),
        Check("repeat_interleave", lambda a: a.repeat_interleave(2, dim=0), (r.x(3, 4),)),
        Check("repeat_interleave tensor repeats", lambda a: T.repeat_interleave(a, T.tensor([2, 0, 1, 3]), dim=1),
              (r.x(3, 4),)),
        Check("roll", lambda a: a.roll((1, -1), (0, 1)), (r.x(3, 4),)),
        Check("flip", lambda a: T.flip(a, (0, 1)), (r.x(3, 4),)),
        Check("scatter", lambda a, src: a.scatter(1, T.tensor([[3, 0], [1, 2], [0, 1]]), src), (r.x(3, 4), r.x(3, 2))),
        Check("scatter value", lambda a: T.scatter(a, 0, T.tensor([[2, 0, 1, 2]]), 0.5), (r.x(3, 4),)),
        Check("scatter_add (repeats)", lambda a, src: a.scatter_add(1, T.tensor([[3, 3], [0, 2], [1, 1]]), src),
              (r.x(3, 4), r.x(3, 2))),
        Check("F.silu", lambda a: F.silu(a), (r.x(3, 4),)),
        Check("F.softplus", lambda a: F.softplus(a, beta=2.0), (r.x(3, 4),)),
        Check("F.leaky_relu", lambda a: F.leaky_relu(a, 0.1), (r.nonzero(3, 4),)),
        Check("F.elu", lambda a: F.elu(a), (r.nonzero(3, 4),)),
        Check("F.pad constant (crops too)", lambda a: F.pad(a, (2, -1, 1, 0), value=0.5), (r.x(2, 3, 4),)),
        Check("F.pad reflect", lambda a: F.pad(a, (2, 1), mode="reflect"), (r.x(2, 4),)),
        Check("F.pad replicate", lambda a: F.pad(a, (1, 2, 2, 0), mode="replicate"), (r.x(2, 3, 4),)),
        Check("F.pad circular", lambda a: F.pad(a, (3, 1), mode="circular"), (r.x(2, 4),)),
        # convolution and pooling
        Check("F.conv2d stride, padding, groups", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2),
              (r.x(1, 4, 4, 4), r.x(4, 2, 2, 2), r.x(4))),
        Check("F.conv2d 'same', dilation", lambda x, w: F.conv2d(x, w, padding="same", dilation=(2, 1)),
              (r.x(1, 2, 5, 4), r.x(3, 2, 2, 3))),
        Check("F.conv1d stride, dilation", lambda x, w, b: F.conv1d(x, w, b, stride=2, dilation=2),
              (r.x(2, 3, 7), r.x(2, 3, 2), r.x(2))),
        Check("F.conv_transpose2d stride, output_padding, groups",
              lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2),
              (r.x(1, 2, 3, 2), r.x(2, 1, 3, 3), r.x(2))),
        Check("F.max_pool2d overlapping, ceil_mode", lambda a: F.max_pool2d(a, 3, 2, 1, ceil_mode=True),
              tuple(r.distinct((1, 2, 6, 5)))),
        Check("F.avg_pool2d count_include_pad=False", lambda a: F.avg_pool2d(a, 3, 2, 1, count_include_pad=False),
              (r.x(1, 2, 5, 5),)),
        Check("F.adaptive_avg_pool2d", lambda a: F.adaptive_avg_pool2d(a, (3, 2)), (r.x(2, 2, 5, 4),)),
        # einsum
        Check("einsum attention scores", lambda q, k: T.einsum("bhqd,bhkd->bhqk", q, k),
              (r.x(2, 2, 3, 2), r.x(2, 2, 4, 2))),
        Check("einsum ... matmul", lambda a, b: T.einsum("...ij,...jk", a, b), (r.x(2, 1, 3, 2), r.x(3, 2, 2))),
        Check("einsum outer", lambda a, b: T.einsum("i,j->ij", a, b), (r.x(3), r.x(4))),
        Check("einsum diagonal", lambda a: T.einsum("ii->i", a), (r.x(3, 3),)),
        Check("einsum trace", lambda a: T.einsum("ii", a), (r.x(3, 3),)),
        Check("einsum sum over a dim", lambda a: T.einsum("ijk->ik", a), (r.x(2, 3, 4),)),
        Check("einsum three operands", lambda a, b, c: T.einsum("ij,jk,kl->il", a, b, c),
              (r.x(2, 3), r.x(3, 4), r.x(4, 2))),
        Check("einsum broadcast size-1 dim", lambda a, b: T.einsum("ij,ij->ij", a, b), (r.x(1, 3), r.x(2, 3))),
        Check("einsum same operand twice", lambda a: T.einsum("ij,kj->ik", a, a), (r.x(3, 4),)),
    ]
    return checks


def _index_put(make_key):
    def put(x, value):
        y = x.clone()
        y[make_key()] = value
        return y

    return put


def _fill_where_positive(x):
    y = x.clone()
    y[x.detach() > 0] = 0.5
    return y


def _change_views_in_place(x, w):
    y = x * 1.5
    y[1:].mul_(w)
    y.t()[0].zero_()
    row = y[0]
    row += w  # from here on, row is y[0] of the changed y
    return y * y + row


def _masked_safe_softmax(x):
    mask = functions.tensor([[False, True, False, False], [True, True, True, True], [False, False, False, True]])
    return F.safe_softmax(x.masked_fill(mask, -math.inf), dim=-1)


def module_checks(seed=0):
    """Every layer, attention class and model in float64: gradients w.r.t. the input and every parameter.

    Modules train (dropout active): the checker's seeding freezes their masks.
    """
    from .app import models  # the GPT app's models: imported here, so `import tinyattn` does not load the app
    r = _Numbers(seed + 1)
    random.manual_seed(seed)  # the modules' initial weights
    ids = functions.tensor([[0, 3, 5, 3], [1, 1, 2, 4]])
    next_ids = functions.tensor([[3, 5, 3, 1], [1, 2, 4, 0]])
    # n_embd=2 with 2 heads: every part of a GPT, with few parameters (each costs two evaluations)
    tiny_gpt = models.GPTConfig(vocab_size=6, block_size=4, n_layer=1, n_head=2, n_embd=2, dropout=0.2)
    cases = [
        # (name, module, input, extra arguments, which output to check)
        ("Linear", nn.Linear(4, 3), r.x(2, 3, 4)),
        ("Embedding", nn.Embedding(6, 3), ids),
        ("LayerNorm", nn.LayerNorm(4), r.x(2, 3, 4)),
        ("GELU", nn.GELU(), r.x(3, 4)),
        ("GELU tanh", nn.GELU(approximate="tanh"), r.x(3, 4)),
        ("ReLU", nn.ReLU(), r.nonzero(3, 4)),
        ("Tanh", nn.Tanh(), r.x(3, 4)),
        ("Sigmoid", nn.Sigmoid(), r.x(3, 4)),
        ("Softmax", nn.Softmax(dim=-1), r.x(3, 4)),
        ("SiLU", nn.SiLU(), r.x(3, 4)),
        ("LeakyReLU", nn.LeakyReLU(0.2), r.nonzero(3, 4)),
        ("ELU", nn.ELU(alpha=0.5), r.nonzero(3, 4)),
        ("Softplus", nn.Softplus(beta=2.0, threshold=3.0), r.x(3, 4)),
        ("Dropout p=0.5", nn.Dropout(0.5), r.x(3, 4)),
        ("Conv2d", nn.Conv2d(2, 3, 2, padding=1), r.x(1, 2, 3, 3)),
        ("ConvTranspose2d", nn.ConvTranspose2d(2, 2, 2, stride=2), r.x(1, 2, 2, 2)),
        ("Dropout2d p=0.5", nn.Dropout2d(0.5), r.x(2, 3, 2, 2)),
        ("CNN: Conv2d, BatchNorm2d, MaxPool2d, AdaptiveAvgPool2d, Linear",
         nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Tanh(), nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1),
                       nn.Flatten(), nn.Linear(2, 3)), r.x(1, 1, 6, 6)),
        ("CrossEntropyLoss", nn.CrossEntropyLoss(), r.x(4, 5), (r.ints(5, 4),)),
        ("MSELoss", nn.MSELoss(), r.x(3, 4), (r.x(3, 4).detach(),)),
        ("Sequential MLP", nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.Linear(6, 4)), r.x(2, 4)),
        ("SelfAttention_v1", nn.SelfAttention_v1(4, 3), r.x(5, 4)),
        ("SelfAttention_v2", nn.SelfAttention_v2(4, 3, qkv_bias=True), r.x(5, 4)),
        ("CausalAttention dropout 0.5", nn.CausalAttention(4, 3, 5, 0.5), r.x(2, 4, 4)),
        ("MultiHeadAttentionWrapper dropout 0.5", nn.MultiHeadAttentionWrapper(4, 2, 5, 0.5, num_heads=2),
         r.x(2, 3, 4)),
        ("MultiHeadAttention dropout 0.5", nn.MultiHeadAttention(4, 4, 5, 0.5, num_heads=2), r.x(2, 3, 4)),
        ("FeedForward (GPT) dropout 0.2", models.FeedForward(tiny_gpt), r.x(3, 2)),
        ("Block (GPT) dropout 0.2", models.Block(tiny_gpt), r.x(2, 3, 2)),
        ("BigramLanguageModel loss", models.BigramLanguageModel(6), ids, (next_ids,), 1),
        ("GPT loss dropout 0.2", models.GPT(tiny_gpt), ids, (next_ids,), 1),
    ]
    checks = []
    for name, module, x, *rest in cases:
        args = rest[0] if rest else ()
        output = rest[1] if len(rest) > 1 else None
        module.double().train()
        params = list(module.parameters())
        label = f"{list(x.shape)} + {len(params)} param{'s' * (len(params) != 1)}" if params else None
        checks.append(Check(name, _call(module, args, output), (x, *params), label))
    return checks


def _call(module, args=(), output=None):
    def forward(x, *params):  # the parameters are inputs only so that the check perturbs them
        result = module(x, *args)
        return result if output is None else result[output]

    return forward


def main(argv=None):
    """`tinyattn gradcheck`: check every op and layer against finite differences; print a table.

    Returns 0 when every check passes, 1 otherwise.
    """
    parser = ArgumentParser(
        prog="tinyattn gradcheck",
        description="Compare every op's and layer's backward with central differences in float64.",
        epilog="Ctrl-C stops the run after the checks done so far, with their summary (exit status 130).",
    )
    parser.add_argument("-k", "--filter", default="", help="only the checks whose name contains this text")
    parser.add_argument("--fast", action="store_true", help="compare random projections v^T J u (fast_mode)")
    parser.add_argument("--eps", type=float, default=1e-6, help="finite-difference step (default 1e-6)")
    parser.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance (default 1e-5)")
    parser.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance (default 1e-3)")
    args = parser.parse_args(argv)
    try:
        _check_settings(args.eps, args.atol, args.rtol)
    except ValueError as error:
        parser.error(str(error))

    state = random.get_rng_state()
    try:
        checks = op_checks() + module_checks()
    finally:
        random.set_rng_state(state)
    checks = [c for c in checks if args.filter.lower() in c.name.lower()]
    if not checks:
        parser.error(f"no check matches {args.filter!r}: run without -k to see every check's name")

    name_width = max(len("check"), *(len(c.name) for c in checks))
    shape_width = max(len("inputs"), *(len(c.label) for c in checks))
    width = terminal_width()
    others = len("  ") * 3 + 13 + len("result")
    if width is not None and name_width + shape_width + others > width:  # wrap the two text columns
        room = max(width - 1 - others, 32)
        shape_width = min(shape_width, max(16, room * 2 // 5))
        name_width = room - shape_width
    header = f"{'check':<{name_width}}  {'inputs':<{shape_width}}  {'max abs error':>13}  result"
    print(header)
    print("-" * len(header))
    failures = []
    done = 0
    start = time.perf_counter()
    try:
        for check in checks:
            try:
                report = check_gradients(check.fn, check.inputs, eps=args.eps, atol=args.atol, rtol=args.rtol,
                                         fast_mode=args.fast)
                error = report.error
            except Exception as exc:  # an op that crashes is a failed check, not a crashed table
                report, error = Report(), exc
                report.max_abs_error = math.nan
            if error is not None:
                failures.append((check.name, error))
            done += 1
            names = fill(check.name.split(" "), name_width)
            labels = fill(re.split(r"(?<=\],) ", check.label), shape_width)  # break between shapes
            print(f"{names[0]:<{name_width}}  {labels[0]:<{shape_width}}  {report.max_abs_error:>13.1e}  "
                  f"{'PASS' if error is None else 'FAIL'}")
            for name, label in itertools.zip_longest(names[1:], labels[1:], fillvalue=""):
                print(f"{name:<{name_width}}  {label}".rstrip())
            sys.stdout.flush()
    except KeyboardInterrupt:
        interrupted = checks[done].name
    else:
        interrupted = None
    elapsed = time.perf_counter() - start
    if interrupted is not None and is_terminal(sys.stdout):
        print()  # the terminal echoed ^C where the next row would start: the separator gets its own line
    print("-" * len(header))
    settings = f"float64, eps={args.eps}, atol={args.atol}, rtol={args.rtol}{', fast mode' if args.fast else ''}"
    if failures:
        print(f"{len(failures)} of {plural(done, 'check')} FAILED ({settings}; {elapsed:.1f} s):")
        for name, error in failures:
            print(f"  {name}: {type(error).__name__}: {error}")
    elif interrupted is None:
        print(f"{'all ' if done > 1 else ''}{plural(done, 'check')} passed ({settings}; {elapsed:.1f} s)")
    elif done:
        print(f"{done} of {plural(len(checks), 'check')} passed ({settings}; {elapsed:.1f} s)")
    if interrupted is not None:
        sys.stdout.flush()
        print(fit(f"tinyattn gradcheck: interrupted during the check {interrupted!r}, after {done} of "
                  f"{plural(len(checks), 'check')}", sys.stderr), file=sys.stderr)
        return EXIT_INTERRUPTED
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
