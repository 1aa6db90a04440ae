"""Adadelta (Zeiler, 2012): steps scaled by the ratio of two running root-mean-squares, of past
updates and of past gradients, so that lr = 1.0 (PyTorch's default) works without tuning.

    v = rho * v + (1 - rho) * g^2
    delta = sqrt(u + eps) / sqrt(v + eps) * g
    u = rho * u + (1 - rho) * delta^2
    p -= lr * delta

weight_decay adds weight_decay * p to the gradient first; maximize steps up the gradient. The
arithmetic is PyTorch's, in its order, so the parameters match PyTorch's step for step.
"""

from .. import backend
from .optimizer import Optimizer, _check, _number_lr, _zeros_like


class Adadelta(Optimizer):
    """Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0): see the module's docstring."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        lr = _number_lr(lr)
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if differentiable:
            raise NotImplementedError("differentiable=True is not supported: tinyattn's optimizers update the "
                                      "parameters in place without recording a graph")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, foreach=foreach, capturable=capturable,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, p, grad, state, group):
        xp = backend.namespace(grad)
        lr, rho, eps, weight_decay = group["lr"], group["rho"], group["eps"], group["weight_decay"]
        if not state:
            state["step"] = 0
            state["square_avg"] = _zeros_like(p.array)
            state["acc_delta"] = _zeros_like(p.array)
        state["step"] += 1
        if group["maximize"]:
            grad = -grad
        if weight_decay != 0:
            grad = grad + weight_decay * p.array
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg *= rho  # v = rho * v + ((1 - rho) * g) * g, PyTorch's addcmul order
        square_avg += (1 - rho) * grad * grad
        std = xp.sqrt(square_avg + eps)
        delta = xp.sqrt(acc_delta + eps) / std * grad
        acc_delta *= rho
        acc_delta += (1 - rho) * delta * delta
        p.array += (-lr) * delta
