"""Grad mode: whether ops record the graph, per thread (`no_grad`, `enable_grad`, `set_grad_enabled`)."""

import functools
import threading


class GradMode(threading.local):
    """Whether ops record the graph, per thread (`no_grad()` and `enable_grad()` switch it)."""
    enabled = True


grad_mode = GradMode()


def is_grad_enabled():
    """Whether ops record the graph now (False inside `no_grad()`)."""
    return grad_mode.enabled


class _GradModeContext:
    """What no_grad, enable_grad, inference_mode and set_grad_enabled share: a context manager that sets
    the grad mode to `self.mode` (None leaves it as it is) and restores it on the way out, and a
    decorator that runs the function inside a fresh one (so that recursion and threads don't share
    `previous`)."""

    mode = None

    def __enter__(self):
        self.previous = grad_mode.enabled
        if self.mode is not None:
            grad_mode.enabled = self.mode
        return self

    def __exit__(self, *exc):
        grad_mode.enabled = self.previous
        return False

    def __call__(self, function):
        fresh = self._fresh

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with fresh():
                return function(*args, **kwargs)

        return wrapper

    def _fresh(self):
        return type(self)()


class set_grad_enabled(_GradModeContext):
    """Turn gradient recording on or off in this thread (a function, a context manager and a decorator)."""

    def __init__(self, mode=True):
        self.mode = bool(mode)
        self.previous = grad_mode.enabled
        grad_mode.enabled = self.mode  # like PyTorch, calling it as a function sets the mode at once

    def __enter__(self):  # `previous` is the mode before __init__ changed it
        grad_mode.enabled = self.mode
        return self

    def __call__(self, function):
        grad_mode.enabled = self.previous  # as a decorator it changes nothing until the function runs
        return super().__call__(function)

    def _fresh(self):
        return set_grad_enabled(self.mode)


class no_grad(_GradModeContext):
    """Record no graph inside: for evaluation, sampling and in-place parameter updates."""

    mode = False

    def __new__(cls, function=None):
        # `@no_grad` without parentheses decorates `function` directly, as in PyTorch
        self = super().__new__(cls)
        return self if function is None else self(function)


class enable_grad(no_grad):
    """Record the graph again inside a `no_grad` block."""

    mode = True


class inference_mode(_GradModeContext):
    """PyTorch's inference_mode, which here is no_grad (tinyattn has no inference-only tensors);
    inference_mode(False) changes nothing."""

    def __new__(cls, mode=True):
        if callable(mode):  # `@inference_mode` without parentheses
            return no_grad(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self.mode = False if mode else None

    def _fresh(self):
        return inference_mode(self.mode is False)

