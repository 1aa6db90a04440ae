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

`tinyattn gradcheck` (the app's tinyattn.app.selfcheck) runs the check over every differentiable op
and layer.
"""

import contextlib
import math
import warnings

import numpy as np

from . import autograd, backend, dtypes, random
from .errors import BackwardError, GradcheckError
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
