"""L-BFGS: a quasi-Newton method that re-evaluates the loss itself, through a closure.

    optimizer = tinyattn.optim.LBFGS(model.parameters(), lr=1, line_search_fn="strong_wolfe")
    def closure():
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss
    optimizer.step(closure)      # up to max_iter iterations, each one or more calls of closure

One `step` runs up to `max_iter` iterations on all the parameters seen as one flat vector x:

1. the direction d = -H g, where H approximates the inverse Hessian from the last `history_size`
   pairs (s = the step taken, y = the change of the gradient) by the two-loop recursion, starting
   from the scaled identity H_diag = (y.s) / (y.y) of the newest pair; the first direction is -g;
2. the step length t: `lr` (the very first one: min(1, 1 / sum|g|) * lr), kept as it is, or
   (line_search_fn="strong_wolfe") searched for until the loss has fallen enough (Armijo) and the
   slope along d has flattened enough (curvature) by cubic interpolation between tried points;
3. x += t d, then stop early when the gradient, the step or the change of the loss is tiny.

The algorithm, its constants and the order of its arithmetic are PyTorch's (torch.optim.LBFGS,
after minFunc), so that the same closure gives the same iterates; the scalars (y.s, t, H_diag...)
are NumPy scalars of the parameters' dtype, computed as PyTorch's 0-d tensors are.
"""

import numpy as np

from .. import backend
from ..autograd import enable_grad, no_grad
from ..tensor import Tensor
from .optimizer import Optimizer, _number_lr


# ---------------------------------------------------------------------------------------------
# the line search (strong Wolfe conditions)


def _cubic_minimizer(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimum of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped to
    `bounds` (default: between the two points); their midpoint when the cubic has no minimum."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = _sqrt(d2_square)
    if x1 <= x2:
        minimum = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        minimum = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(minimum, low), high)


class _Point:
    """A tried step length t with the loss f, the gradient g and the slope gtd = g.d there."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Search a step length along d from the point (loss f, gradient g, slope gtd < 0).

    `evaluate(t)` gives (loss, flat gradient) at x + t d. Returns (loss, gradient, t, evaluations) of
    the best point found. Phase one steps forward (extrapolating with cubics) until it brackets a
    point that satisfies both conditions; phase two (zoom) shrinks the bracket around it.
    """
    xp = backend.namespace(d)
    d_norm = xp.max(xp.abs(d))
    start = _Point(0, f, xp.asarray(g, copy=True), gtd)

    def at(step):
        loss, grad = evaluate(step)
        return _Point(step, loss, grad, grad @ d)

    new = at(t)
    evaluations, ls_iter = 1, 0
    previous = start
    bracket, done = None, False
    while ls_iter < max_ls:
        armijo_fails = new.f > (f + c1 * new.t * gtd)
        if armijo_fails or (ls_iter > 1 and new.f >= previous.f):
            bracket = [previous, new]  # the minimum lies between the last two points
            break
        if abs(new.gtd) <= -c2 * gtd:
            bracket, done = [new], True  # both conditions hold: take it
            break
        if new.gtd >= 0:
            bracket = [previous, new]  # the slope turned: a minimum lies in between
            break
        # still going down: try further, between 1.01x and 10x the current step
        step = _cubic_minimizer(previous.t, previous.f, previous.gtd, new.t, new.f, new.gtd,
                                bounds=(new.t + 0.01 * (new.t - previous.t), new.t * 10))
        previous = new
        new = at(step)
        evaluations += 1
        ls_iter += 1
    if ls_iter == max_ls:  # out of evaluations: the bracket is [start, last point]
        bracket = [_Point(0, f, start.g, None), new]

    # zoom: bracket[low] is the best point so far, bracket[high] the other end
    insufficient_progress = False
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change:
            break  # the bracket is too small to make a difference
        step = _cubic_minimizer(bracket[0].t, bracket[0].f, bracket[0].gtd,
                                bracket[1].t, bracket[1].f, bracket[1].gtd)
        # a step next to an end of the bracket learns little: after two such steps in a row (or one
        # at or past an end) move it to a tenth of the bracket's width from the nearer end
        t_max, t_min = max(bracket[0].t, bracket[1].t), min(bracket[0].t, bracket[1].t)
        margin = 0.1 * (t_max - t_min)
        if min(t_max - step, step - t_min) < margin:
            if insufficient_progress or step >= t_max or step <= t_min:
                step = t_max - margin if abs(step - t_max) < abs(step - t_min) else t_min + margin
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        new = at(step)
        evaluations += 1
        ls_iter += 1
        if new.f > (f + c1 * new.t * gtd) or new.f >= bracket[low].f:
            bracket[high] = new  # not low enough: the new point closes the bracket on the high side
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(new.gtd) <= -c2 * gtd:
                done = True
            elif new.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]  # the minimum lies on the other side of the new point
            bracket[low] = new
    best = bracket[low]
    return best.f, best.g, best.t, evaluations


# ---------------------------------------------------------------------------------------------
# the optimizer


class LBFGS(Optimizer):
    """L-BFGS with PyTorch's arguments and defaults; `step(closure)` needs the closure.

    lr: the step length (the line search's first guess with line_search_fn="strong_wolfe");
    max_iter: iterations per `step`; max_eval: closure calls per `step` (default max_iter * 5 // 4);
    tolerance_grad: stop when max|g| is below it; tolerance_change: stop when the step or the change
    of the loss is below it; history_size: the (s, y) pairs kept; line_search_fn: None or
    "strong_wolfe". One parameter group only. Memory: history_size + a few flat copies of all the
    parameters.
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= _number_lr(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size,
                        line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups): give it one "
                             "list of parameters")
        self._params = self.param_groups[0]["params"]

    # --- the parameters as one flat vector ---

    def _flat_grad(self):
        """All the gradients as one new flat array (zeros for a parameter without a gradient)."""
        xp = backend.namespace(self._params[0].array)
        pieces = [xp.zeros(p.numel(), dtype=p.array.dtype, **backend.creation_kwargs(xp)) if p.grad is None
                  else xp.reshape(p.grad.array, (-1,)) for p in self._params]
        return xp.concat(pieces) if hasattr(xp, "concat") else xp.concatenate(pieces)

    def _move(self, step, direction):
        """x += step * direction, each parameter in place."""
        offset = 0
        for p in self._params:
            n = p.numel()
            p.array += step * backend.namespace(direction).reshape(direction[offset:offset + n], p.array.shape)
            p._bump_version()
            offset += n

    def _copy_params(self):
        return [backend.namespace(p.array).asarray(p.array, copy=True) for p in self._params]

    def _restore_params(self, saved):
        for p, values in zip(self._params, saved):
            p.array[...] = values
            p._bump_version()

    @backend.quiet_float_errors
    def step(self, closure):
        """Up to max_iter iterations; returns the loss of the closure's first call (at the start)."""
        if closure is None or not callable(closure):
            raise TypeError("LBFGS.step needs a closure: a function that zeroes the gradients, computes the "
                            "loss, calls loss.backward() and returns the loss (see the LBFGS docstring)")
        with no_grad():
            return self._step(closure)

    def _evaluate(self, closure):
        with enable_grad():
            loss = closure()
        return loss, float(loss)

    def _step(self, closure):
        group = self.param_groups[0]
        lr = _number_lr(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        # all the state is global; it is kept under the first parameter, as PyTorch keeps it
        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        first_loss, loss = self._evaluate(closure)
        evaluations = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        xp = backend.namespace(flat_grad)
        if xp.max(xp.abs(flat_grad)) <= tolerance_grad:
            return first_loss  # already at a stationary point

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")

        iteration = 0
        while iteration < max_iter:
            iteration += 1
            state["n_iter"] += 1

            # 1. the direction
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, H_diag = [], [], [], 1
            else:
                y = flat_grad - prev_flat_grad  # the change of the gradient over the last step
                s = d * t  # the last step
                ys = y @ s
                if ys > 1e-10:  # keep the pair only where the curvature is positive
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / (y @ y)
                if "al" not in state:
                    state["al"] = [None] * history_size
                d = _two_loop_direction(flat_grad, old_dirs, old_stps, ro, H_diag, state["al"])

            if prev_flat_grad is None:
                prev_flat_grad = xp.asarray(flat_grad, copy=True)
            else:
                prev_flat_grad[...] = flat_grad
            prev_loss = loss

            # 2. the step length
            t = min(1.0, 1.0 / xp.sum(xp.abs(flat_grad))) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad @ d  # the slope along d
            if gtd > -tolerance_change:
                break  # d does not go down (enough)

            calls = 0
            if group["line_search_fn"] == "strong_wolfe":
                start = self._copy_params()

                def loss_and_grad_at(step):
                    self._move(step, d)
                    value = self._evaluate(closure)[1]
                    grad = self._flat_grad()
                    self._restore_params(start)
                    return value, grad

                loss, flat_grad, t, calls = _strong_wolfe(loss_and_grad_at, t, d, loss, flat_grad, gtd,
                                                          max_ls=max_eval - evaluations)
                self._move(t, d)
                at_optimum = xp.max(xp.abs(flat_grad)) <= tolerance_grad
            else:
                self._move(t, d)
                at_optimum = False
                if iteration != max_iter:  # the last iteration's loss would be thrown away: not computed
                    loss = self._evaluate(closure)[1]
                    flat_grad = self._flat_grad()
                    at_optimum = xp.max(xp.abs(flat_grad)) <= tolerance_grad
                    calls = 1
            evaluations += calls
            state["func_evals"] += calls

            # 3. stop?
            if iteration == max_iter or evaluations >= max_eval or at_optimum:
                break
            if xp.max(xp.abs(d * t)) <= tolerance_change:
                break  # the step is tiny
            if abs(loss - prev_loss) < tolerance_change:
                break  # the loss no longer changes

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return first_loss

    # --- saving and loading: the state is flat vectors and lists of them, not per-element arrays ---

    def state_dict(self):
        """PyTorch's layout: the state under parameter 0, arrays (and the scalars PyTorch keeps as 0-d
        tensors) as Tensors, so that the dict loads into torch.optim.LBFGS and back."""
        packed = super().state_dict()  # the groups; the state is converted here instead
        packed["state"] = {0: {k: _to_tensors(v) for k, v in self.state[self._params[0]].items()}} \
            if self._params[0] in self.state else {}
        return packed

    def load_state_dict(self, state_dict):
        """Take the state and options of `state_dict` (from LBFGS.state_dict, or torch.optim.LBFGS's)."""
        saved = dict(state_dict)
        state = saved.pop("state")
        if set(state) - {0, "0"}:
            raise ValueError(f"an LBFGS state dict keeps its state under parameter 0, this one under "
                             f"{sorted(state, key=str)}: it was written by another optimizer")
        super().load_state_dict({**saved, "state": {}})  # checks the groups and takes their options
        values = state.get(0, state.get("0"))
        if values is not None:
            p = self._params[0]
            self.state[p] = {k: _from_tensors(v, p) for k, v in values.items()}


def _sqrt(x):
    """The square root of a scalar in its own dtype (correctly rounded, as PyTorch's)."""
    return np.sqrt(x) if isinstance(x, (float, np.generic)) else backend.namespace(x).sqrt(x)


def _two_loop_direction(flat_grad, old_dirs, old_stps, ro, H_diag, al):
    """-H g by the two-loop recursion over the stored pairs (newest first, then oldest first), in one
    buffer; `al` is the list the first loop's coefficients are kept in (as PyTorch keeps them)."""
    q = -flat_grad
    for i in range(len(old_dirs) - 1, -1, -1):
        al[i] = (old_stps[i] @ q) * ro[i]
        q -= al[i] * old_dirs[i]
    r = q * H_diag  # the initial inverse Hessian is H_diag times the identity
    for i in range(len(old_dirs)):
        be_i = (old_dirs[i] @ r) * ro[i]
        r += (al[i] - be_i) * old_stps[i]
    return r


def _to_tensors(value):
    if isinstance(value, list):
        return [_to_tensors(v) for v in value]
    if isinstance(value, np.generic):  # a scalar such as t: a 0-d tensor, as PyTorch keeps it
        return Tensor._wrap(np.asarray(value))
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return Tensor._wrap(value)
    return value


def _from_tensors(value, p):
    if isinstance(value, list):
        return [_from_tensors(v, p) for v in value]
    if isinstance(value, Tensor):
        array = backend.from_host(backend.to_host(value.array).astype(p.array.dtype), p.device)
        return array[()] if array.ndim == 0 else array  # 0-d: a scalar, as the step computes them
    return value
