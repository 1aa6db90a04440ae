"""`tinyattn.distributions`: the one distribution that teaching code about language models samples
from, `Categorical` (a choice among K classes, per row), as torch.distributions.Categorical has it.

Given `probs` (non-negative, normalised here along the last dim) or `logits` (log-probabilities up to
a constant, normalised here by log-sum-exp), it gives `sample()` (drawn with torch.multinomial, so the
same seed gives PyTorch's samples), `log_prob(value)` and `entropy()`, both differentiable with respect
to the parameter, and `probs`, `logits`, `mode`, `batch_shape`, `event_shape`.
"""

import numpy as np

from . import dtypes, functions
from .autograd import enable_grad, no_grad
from .nn import functional as F
from .tensor import Size, Tensor

# the smallest float with 1 + eps != 1, and the most negative float (numpy's finfo, by dtype)
_EPS = {dtypes.float32: float(np.finfo(np.float32).eps), dtypes.float64: float(np.finfo(np.float64).eps)}
_MIN = {dtypes.float32: float(np.finfo(np.float32).min), dtypes.float64: float(np.finfo(np.float64).min)}


class Categorical:
    """Categorical(probs=None, logits=None, validate_args=None): K classes along the last dim of the
    parameter; the dims before it are the batch_shape. Exactly one of probs and logits is given."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self._validate_args = True if validate_args is None else validate_args
        given = probs if probs is not None else logits
        if not isinstance(given, Tensor) or not given.dtype.is_floating_point:
            raise TypeError(f"Categorical: {'probs' if probs is not None else 'logits'} must be a float tensor, "
                            f"got {given!r}")
        if given.ndim < 1:
            raise ValueError(f"`{'probs' if probs is not None else 'logits'}` parameter must be at least "
                             f"one-dimensional, got shape {list(given.shape)}")
        if probs is not None:
            if self._validate_args and not bool(((probs >= 0) & functions.isfinite(probs)).all()):
                raise ValueError(f"Categorical: probs of shape {list(probs.shape)} must be finite and non-negative")
            self._probs, self._logits = probs / probs.sum(-1, keepdim=True), None
        else:
            if self._validate_args and bool(functions.isnan(logits).any()):
                raise ValueError(f"Categorical: logits of shape {list(logits.shape)} hold NaN")
            self._probs, self._logits = None, logits - logits.logsumexp(-1, keepdim=True)
        self._param = self._probs if probs is not None else self._logits
        self._param_name = "probs" if probs is not None else "logits"
        self._num_events = given.shape[-1]
        self.batch_shape = Size(given.shape[:-1])
        self.event_shape = Size(())

    @property
    def probs(self):
        """The class probabilities (softmax of the logits, when logits were given)."""
        if self._probs is None:
            with enable_grad():  # computed once, and differentiable even when first asked under no_grad (sample)
                self._probs = F.softmax(self._logits, dim=-1)
        return self._probs

    @property
    def logits(self):
        """The normalised log-probabilities (log of the probs, clamped to [eps, 1 - eps] first, as
        PyTorch does, when probs were given)."""
        if self._logits is None:
            eps = _EPS[self._probs.dtype]
            with enable_grad():
                self._logits = self._probs.clamp(min=eps, max=1 - eps).log()
        return self._logits

    @property
    def param_shape(self):
        """The shape of the probabilities (or logits) the distribution was made with."""
        return self._param.shape

    @property
    def mode(self):
        """The most likely class of each batch item."""
        return self.probs.argmax(dim=-1)

    def sample(self, sample_shape=()):
        """Class indices of shape sample_shape + batch_shape, drawn with torch.multinomial (with
        replacement): the same seed gives PyTorch's samples. No gradient flows through a draw."""
        sample_shape = Size(sample_shape)
        count = int(np.prod(sample_shape, dtype=np.int64))
        with no_grad():
            rows = self.probs.reshape(-1, self._num_events)
            drawn = functions.multinomial(rows, count, True).T
        return drawn.reshape(*sample_shape, *self.batch_shape)

    def log_prob(self, value):
        """log P(value) for class indices `value`, broadcast against the batch_shape."""
        if not isinstance(value, Tensor):
            value = functions.tensor(value)
        if self._validate_args:
            whole = value.dtype.is_floating_point is False or bool((value == value.floor()).all())
            if not whole or bool(((value < 0) | (value >= self._num_events)).any()):
                raise ValueError(f"Categorical.log_prob: the value argument must be within the support: class "
                                 f"indices 0 to {self._num_events - 1}, got {value.tolist()}")
        value = value.long().unsqueeze(-1)
        shape = np.broadcast_shapes(tuple(value.shape), tuple(self.logits.shape))
        log_pmf = self.logits.expand(*shape)
        index = value.expand(*shape[:-1], 1)
        return log_pmf.gather(-1, index).squeeze(-1)

    def entropy(self):
        """-sum p log p over the classes (a class of probability 0 adds 0)."""
        logits = self.logits.clamp(min=_MIN[self.logits.dtype])
        return -(logits * self.probs).sum(-1)

    def __repr__(self):
        return f"Categorical({self._param_name}: {self._param.shape})"

# a PyTorch name this module lacks says so, and dir() lists its public names only (tinyattn/missing.py)
from . import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)
