"""Learning-rate schedules: change each group's `lr` as training goes on.

Call `scheduler.step()` once after each `optimizer.step()`, as in PyTorch. `warmup_cosine` is the
schedule of nanoGPT (and of many GPT training scripts) as a plain function of the step number:

    lr
    max_lr |    ______
           |   /      `-._
           |  /           `-.__
    min_lr | /                  `------
           +--------------------------- step
             warmup   cosine decay   min_lr after decay_steps
"""

import math


def warmup_cosine(step, max_lr, min_lr, warmup_steps, decay_steps):
    """The learning rate at `step` (counting from 0): a linear warmup, then cosine decay to min_lr."""
    if step < warmup_steps:
        return max_lr * (step + 1) / (warmup_steps + 1)
    if step >= decay_steps:
        return min_lr
    progress = (step - warmup_steps) / max(1, decay_steps - warmup_steps)  # 0 -> 1
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (max_lr - min_lr)


class LRScheduler:
    """Base class: `get_lr()` gives one rate per group for the current `last_epoch` (the step count)."""

    def __init__(self, optimizer, last_epoch=-1):
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError("param 'initial_lr' is not specified in param_groups when resuming an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()  # like PyTorch: the constructor sets the rates of step 0

    def get_lr(self):
        raise NotImplementedError

    def step(self):
        self.last_epoch += 1
        self._last_lr = list(self.get_lr())
        for group, lr in zip(self.optimizer.param_groups, self._last_lr):
            group["lr"] = lr

    def get_last_lr(self):
        return list(self._last_lr)

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(step), with one function for all groups or one per group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        groups = optimizer.param_groups
        if callable(lr_lambda):
            self.lr_lambdas = [lr_lambda] * len(groups)
        else:
            if len(lr_lambda) != len(groups):
                raise ValueError(f"expected {len(groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * f(self.last_epoch) for base, f in zip(self.base_lrs, self.lr_lambdas)]


class WarmupCosineLR(LRScheduler):
    """`warmup_cosine` as a scheduler: from each group's lr down to `min_lr` at `total_steps`."""

    def __init__(self, optimizer, warmup_steps, total_steps, min_lr=0.0, last_epoch=-1):
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.min_lr = min_lr
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [warmup_cosine(self.last_epoch, base, self.min_lr, self.warmup_steps, self.total_steps)
                for base in self.base_lrs]

# a PyTorch name this module lacks says so (tinyattn/missing.py)
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
