"""Optimizers: SGD, Adam and AdamW, with PyTorch's arguments, defaults and update formulas.

An optimizer holds `param_groups` (a list of dicts: the parameters and their options, such as `lr`)
and a `state` per parameter (momentum buffers, moment estimates). `step()` reads each parameter's
`.grad` and changes the parameter's numbers in place, without recording a graph. The formulas follow
`torch.optim`'s single-tensor code line by line, so that the same gradients give the same weights.
"""

import math

import numpy as np

from .. import backend
from ..backend import parallel
from ..autograd import enable_grad, no_grad
from ..tensor import Tensor

_required = object()  # a default meaning "no default: every group must give this option"


class Optimizer:
    """The base class: parameter groups, `zero_grad`, `state_dict` and `load_state_dict`."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = {}  # parameter -> dict of its state (keyed by the Parameter object, like torch)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params must be an iterable of tensors (e.g. model.parameters()), not a tensor")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        """Add a dict {"params": [...], option: value, ...}; missing options take the defaults."""
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"an optimizer can only optimize tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf tensor (one made by an op): optimize the leaves")
            if not p.dtype.is_floating_point:
                raise TypeError(f"can only optimize floating point tensors, got {p.dtype}")
        for name, default in self.defaults.items():
            if default is _required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required option {name!r}")
            group.setdefault(name, default)
        if "lr" in group:
            group["lr"] = _number_lr(group["lr"])
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Forget the gradients (set_to_none=True, the default) or fill them with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad.array[...] = 0

    @backend.quiet_float_errors  # a step on inf or NaN gradients makes NaN weights without NumPy's warnings
    def step(self, closure=None):
        """One update of every parameter that has a gradient. `closure` re-evaluates the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            updates = [(p, self.state.setdefault(p, {}), group)
                       for group in self.param_groups for p in group["params"] if p.grad is not None]
            # each parameter's update is its own: pieces of the list run at once, on the cores
            parallel.for_each(lambda update: self._update(update[0], update[0].grad.array, *update[1:]),
                              updates, [p.numel() for p, _, _ in updates])
            for p, _, _ in updates:
                p._bump_version()
        return loss

    def _update(self, p, grad, state, group):
        raise NotImplementedError

    # --- saving and loading (the layout of torch.optim: parameters by index, not by object) ---

    def state_dict(self):
        """{"state": {index: {name: value}}, "param_groups": [{options..., "params": [index, ...]}]}.

        Arrays in the state are Tensors that share memory with the optimizer's own; `step` is a 0-d
        float32 tensor and each group lists every option PyTorch's does, so that the dict (saved with
        tinyattn.save) loads into torch.optim's optimizer of the same name, and back.
        """
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state:
                    state[index[id(p)]] = {
                        k: Tensor._wrap(v) if _is_array(v) else _step_tensor(v) if k == "step" else v
                        for k, v in self.state[p].items()
                    }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Take the state and options of `state_dict` (checked first: nothing changes on an error)."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError(
                f"loaded state dict has {len(groups)} parameter groups, this optimizer has "
                f"{len(self.param_groups)}: the model or its grouping differs"
            )
        by_index = {}
        for i, (saved, own) in enumerate(zip(groups, self.param_groups)):
            if len(saved["params"]) != len(own["params"]):
                raise ValueError(
                    f"loaded state dict's group {i} has {len(saved['params'])} parameters, this "
                    f"optimizer's has {len(own['params'])}: the model differs"
                )
            by_index.update(zip(saved["params"], own["params"]))
        new_state = {}
        for key, values in state_dict["state"].items():
            key = int(key)
            if key not in by_index:
                raise ValueError(f"loaded state dict has state for parameter {key}, which no group holds")
            p = by_index[key]
            converted = {}
            for name, value in values.items():
                if is_element_state(name, value):
                    host = backend.to_host(value.array) if isinstance(value, Tensor) else backend.host_values(value)
                    if tuple(host.shape) != tuple(p.shape):
                        raise ValueError(
                            f"loaded state {name!r} of parameter {key} has shape {list(host.shape)}, "
                            f"the parameter has shape {list(p.shape)}"
                        )
                    converted[name] = backend.from_host(host.copy(), p.device, p.dtype)
                else:
                    converted[name] = value.item() if hasattr(value, "item") else value
            new_state[p] = converted
        self.state = new_state
        for saved, own in zip(groups, self.param_groups):
            for k, v in saved.items():
                if k != "params":
                    own[k] = tuple(v) if isinstance(v, list) and k == "betas" else _number_lr(v) if k == "lr" else v

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(k for k in group if k != "params"):
                lines.append(f"    {k}: {group[k]}")
        return "\n".join(lines) + "\n)"


def is_element_state(name, value):
    """Whether state `name` holds a number per element of its parameter (a moment or a momentum buffer:
    an array of the parameter's shape, 0-d for a 0-d parameter), not a count such as "step" (which
    PyTorch keeps as a 0-d tensor)."""
    return name != "step" and hasattr(value, "shape")


def _step_tensor(step):
    """The step count as PyTorch keeps it: a 0-d float32 tensor (updates use it as a Python number)."""
    return Tensor._wrap(np.asarray(step, dtype=np.float32))


def _is_array(value):
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _zeros_like(array):
    xp = backend.namespace(array)
    return xp.zeros(array.shape, dtype=array.dtype, **backend.creation_kwargs(xp))


def _number_lr(lr):
    """A learning rate given as a one-element tensor, as PyTorch accepts it, becomes a Python float (the
    updates are NumPy arithmetic on the arrays); any other value is returned as it is."""
    if isinstance(lr, Tensor):
        if lr.numel() != 1:
            raise ValueError(f"Tensor lr must be 1-element, got shape {list(lr.shape)}: pass a number or a "
                             "0-d tensor such as tinyattn.tensor(0.01)")
        return float(lr.item())
    return lr


def _check(name, value, low=0.0):
    if not value >= low:
        raise ValueError(f"Invalid {name}: {value}")


def _implementation_options(foreach, fused, differentiable, **others):
    """PyTorch's choices of implementation, kept in the groups as PyTorch keeps them, so that a saved
    state_dict has PyTorch's keys. tinyattn has one implementation (the formulas of PyTorch's
    single-tensor one), whatever foreach, fused or capturable say; a differentiable step (autograd
    through the update) it does not have."""
    if foreach and fused:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported: tinyattn's optimizers update the "
                                  "parameters in place without recording a graph")
    return dict(foreach=foreach, **others, differentiable=differentiable, fused=fused)


def _elementwise_in_blocks(update, *arrays):
    """update(*arrays) for an update that works element by element, in place: for a large parameter
    on blocks of its elements, on every thread (parallel.each_block), which gives the same numbers
    with its temporaries in the cache; for any other, on the whole arrays at once."""
    flat = [backend.reshape_view(a, (-1,)) for a in arrays] if parallel.in_blocks(arrays[0]) else [None]
    if any(f is None or f.shape != flat[0].shape for f in flat):  # small, or not viewable as one row
        update(*arrays)
    else:
        parallel.each_block(update, *flat, align=1)


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum (heavy ball or Nesterov) and weight decay.

    With momentum m:  buf = m * buf + (1 - dampening) * grad  (buf = grad at the first step)
                      p  -= lr * buf          (or lr * (grad + m * buf) with nesterov=True)
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        lr = _number_lr(lr)
        _check("learning rate", lr)
        _check("momentum value", momentum)
        _check("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize,
                        **_implementation_options(foreach, fused, differentiable))
        super().__init__(params, defaults)

    def _update(self, p, grad, state, group):
        lr, momentum, weight_decay = group["lr"], group["momentum"], group["weight_decay"]
        first = momentum != 0 and state.get("momentum_buffer") is None
        if first:  # the buffer starts as the first step's d_p (written by update below)
            state["momentum_buffer"] = backend.namespace(p.array).empty_like(p.array)

        def update(param, grad, buf=None):  # whole arrays, or blocks of them
            # each `a + alpha * b` rounds once, as PyTorch's add(b, alpha=...) does (backend.add_scaled)
            d_p = -grad if group["maximize"] else grad
            if weight_decay != 0:
                d_p = backend.add_scaled(backend.namespace(d_p).empty_like(d_p), d_p, param, weight_decay)
            if buf is not None:
                if first:
                    buf[...] = d_p
                else:
                    buf *= momentum
                    backend.add_scaled(buf, buf, d_p, 1 - group["dampening"])
                if group["nesterov"]:
                    d_p = backend.add_scaled(backend.namespace(d_p).empty_like(d_p), d_p, buf, momentum)
                else:
                    d_p = buf
            backend.add_scaled(param, param, d_p, -lr)

        _elementwise_in_blocks(update, p.array, grad, *([state["momentum_buffer"]] if momentum != 0 else []))


class Adam(Optimizer):
    """Adam: per-parameter steps from running averages of the gradient (m) and its square (v).

    m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g^2
    p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)     (t = the step count)
    weight_decay adds weight_decay * p to the gradient (L2 regularisation, coupled to the moments);
    with decoupled_weight_decay=True it shrinks p instead, as AdamW does.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        lr = _number_lr(lr)
        _check("learning rate", lr)
        _check("epsilon value", eps)
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"Invalid beta parameters: {betas} (each must be in [0, 1))")
        _check("weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize,
                        **_implementation_options(foreach, fused, differentiable, capturable=capturable),
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _update(self, p, grad, state, group):
        xp = backend.namespace(grad)
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        if not state:
            state["step"] = 0
            state["exp_avg"] = _zeros_like(p.array)
            state["exp_avg_sq"] = _zeros_like(p.array)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = _zeros_like(p.array)
        state["step"] += 1
        step = state["step"]
        bias_correction1 = 1 - beta1**step  # the averages start at 0: divide that bias out
        bias_correction2 = 1 - beta2**step
        step_size = lr / bias_correction1

        def update(param, grad, exp_avg, exp_avg_sq, max_sq=None):  # whole arrays, or blocks of them
            if group["maximize"]:
                grad = -grad
            if weight_decay != 0:
                if group["decoupled_weight_decay"]:
                    param *= 1 - lr * weight_decay  # AdamW: shrink the weights, apart from the gradient
                else:
                    grad = grad + weight_decay * param  # Adam: L2 penalty folded into the gradient

            # Each formula is written as a few in-place steps on one temporary array: the same arithmetic
            # in the same order as the one-line form, without an array for every intermediate value.
            step_m = grad - exp_avg  # torch's lerp: m += (1 - b1) * (g - m)
            step_m *= 1 - beta1
            exp_avg += step_m
            exp_avg_sq *= beta2  # v = b2 * v + (1 - b2) * g * g
            step_v = (1 - beta2) * grad
            step_v *= grad
            exp_avg_sq += step_v
            if max_sq is not None:  # amsgrad
                max_sq[...] = xp.maximum(max_sq, exp_avg_sq)
                exp_avg_sq = max_sq
            denom = xp.sqrt(exp_avg_sq)  # sqrt(v) / sqrt(1 - b2^t) + eps
            denom /= math.sqrt(bias_correction2)
            denom += eps
            step_p = -step_size * exp_avg  # p += (-step_size * m) / denom, torch's order (addcdiv)
            step_p /= denom
            param += step_p

        moments = [state["exp_avg"], state["exp_avg_sq"]] + ([state["max_exp_avg_sq"]] if group["amsgrad"] else [])
        _elementwise_in_blocks(update, p.array, grad, *moments)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): p *= 1 - lr * weight_decay each step,
    outside the moment estimates. PyTorch's default weight_decay for AdamW is 1e-2."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class RMSprop(Optimizer):
    """RMSprop: each step divided by a running root-mean-square of the gradient.

    v = alpha * v + (1 - alpha) * g^2;  centered=True subtracts the running mean's square: v - m^2
    p -= lr * g / (sqrt(v) + eps)    (with momentum: buf = momentum * buf + g / (sqrt(v) + eps); p -= lr * buf)
    weight_decay adds weight_decay * p to the gradient.
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        lr = _number_lr(lr)
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("momentum value", momentum)
        _check("weight_decay value", weight_decay)
        _check("alpha value", alpha)
        if differentiable:
            raise NotImplementedError("differentiable=True is not supported: tinyattn's optimizers update the "
                                      "parameters in place without recording a graph")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, p, grad, state, group):
        xp = backend.namespace(grad)
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        momentum, weight_decay = group["momentum"], group["weight_decay"]
        if not state:
            state["step"] = 0
            state["square_avg"] = _zeros_like(p.array)
            if momentum > 0:
                state["momentum_buffer"] = _zeros_like(p.array)
            if group["centered"]:
                state["grad_avg"] = _zeros_like(p.array)
        state["step"] += 1
        if group["maximize"]:
            grad = -grad
        if weight_decay != 0:
            grad = grad + weight_decay * p.array
        square_avg = state["square_avg"]
        square_avg *= alpha  # v = alpha * v + (1 - alpha) * g * g
        square_avg += (1 - alpha) * grad * grad
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg += (1 - alpha) * (grad - grad_avg)  # torch's lerp towards g
            avg = xp.sqrt(square_avg - grad_avg * grad_avg)
        else:
            avg = xp.sqrt(square_avg)
        avg += eps
        if momentum > 0:
            buf = state["momentum_buffer"]
            buf *= momentum
            buf += grad / avg
            p.array -= lr * buf
        else:
            p.array += (-lr) * grad / avg


class Adagrad(Optimizer):
    """Adagrad: each step divided by the root of the sum of all past squared gradients.

    s += g^2;  p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)     (t = the step count)
    The sums start at `initial_accumulator_value`; weight_decay adds weight_decay * p to the gradient.
    As in PyTorch, every parameter has its state (step 0, the sums) from the start.
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        lr = _number_lr(lr)
        _check("learning rate", lr)
        _check("lr_decay value", lr_decay)
        _check("weight_decay value", weight_decay)
        _check("initial_accumulator_value value", initial_accumulator_value)
        _check("epsilon value", eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value,
                        **_implementation_options(foreach, fused, differentiable, maximize=maximize))
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                xp = backend.namespace(p.array)
                self.state[p] = {"step": 0, "sum": xp.full(p.array.shape, group["initial_accumulator_value"],
                                                           dtype=p.array.dtype, **backend.creation_kwargs(xp))}

    def _update(self, p, grad, state, group):
        xp = backend.namespace(grad)
        state["step"] += 1
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * p.array
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state["sum"] += grad * grad
        std = xp.sqrt(state["sum"])
        std += group["eps"]
        p.array += (-clr) * grad / std
