"""`tinyattn.distributions`: `Categorical` (a choice among K classes, per row), `Normal`, `Bernoulli`
and `Uniform`, as torch.distributions has them. Samples are drawn from tinyattn's PyTorch-compatible
generator in PyTorch's way, so the same seed gives PyTorch's samples; `rsample` (Normal, Uniform) is
differentiable with respect to the parameters (the reparameterization trick); `log_prob` and
`entropy` are differentiable.

Categorical:

Given `probs` (non-negative, normalised here along the last dim) or `logits` (log-probabilities up to
a constant, normalised here by log-sum-exp), it gives `sample()` (drawn with torch.multinomial, so the
same seed gives PyTorch's samples), `log_prob(value)` and `entropy()`, both differentiable with respect
to the parameter, and `probs`, `logits`, `mode`, `batch_shape`, `event_shape`.
"""

import math

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


def _broadcast_parameters(*values):
    """The parameters as tensors of one shape (numbers become tensors of the default float dtype)."""
    like = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = like.dtype if like is not None else dtypes.default_float
    tensors = [v if isinstance(v, Tensor) else functions.tensor(float(v), dtype=dtype,
                                                                  device=like.device if like is not None else None)
               for v in values]
    for t in tensors:
        if not t.dtype.is_floating_point:
            raise TypeError(f"distribution parameters must be floating point tensors or numbers, got {t.dtype}")
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return [t.expand(*shape) for t in tensors]


def _extended_shape(batch_shape, sample_shape):
    return Size(tuple(Size(sample_shape)) + tuple(batch_shape))


class _Distribution:
    """What every distribution here shares: shapes, sample() as rsample() without a gradient, repr."""

    event_shape = Size(())
    _parameter_names = ()

    def sample(self, sample_shape=()):
        with no_grad():
            return self.rsample(sample_shape)

    def _check_value(self, value, support, valid):
        if not isinstance(value, Tensor):
            raise ValueError(f"The value argument to log_prob must be a Tensor, got {type(value).__name__}")
        if self._validate_args and not bool(valid(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def __repr__(self):
        parts = []
        for name in self._parameter_names:
            value = getattr(self, name)
            parts.append(f"{name}: {value.item() if value.numel() == 1 and value.ndim == 0 else value.shape}")
        return f"{type(self).__name__}({', '.join(parts)})"


class Normal(_Distribution):
    """Normal(loc, scale, validate_args=None): the Gaussian with mean loc and standard deviation
    scale (numbers or tensors, broadcast; scale > 0)."""

    _parameter_names = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _broadcast_parameters(loc, scale)
        self._validate_args = True if validate_args is None else validate_args
        if self._validate_args and not bool((self.scale > 0).all()):
            raise ValueError(f"Expected parameter scale ({type(scale).__name__} of shape {tuple(self.scale.shape)}) "
                             f"of distribution Normal to satisfy the constraint GreaterThan(lower_bound=0.0), but "
                             f"found invalid values:\n{scale}")
        self.batch_shape = Size(self.loc.shape)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def rsample(self, sample_shape=()):
        """loc + eps * scale with eps standard normal draws (PyTorch's draws for the same seed):
        differentiable with respect to loc and scale."""
        shape = _extended_shape(self.batch_shape, sample_shape)
        eps = functions.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def sample(self, sample_shape=()):
        """Draws without a gradient (torch.normal of the broadcast parameters)."""
        shape = _extended_shape(self.batch_shape, sample_shape)
        with no_grad():
            return functions.normal(self.loc.expand(*shape), self.scale.expand(*shape))

    def log_prob(self, value):
        self._check_value(value, "Real()", lambda v: v == v)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        return 0.5 * (1 + ((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)).erf())

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()


class Bernoulli(_Distribution):
    """Bernoulli(probs=None, logits=None, validate_args=None): 1 with probability probs (or
    sigmoid(logits)), else 0. Exactly one of probs and logits is given."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self._validate_args = True if validate_args is None else validate_args
        if probs is not None:
            (self._probs,) = _broadcast_parameters(probs)
            if self._validate_args and not bool(((self._probs >= 0) & (self._probs <= 1)).all()):
                raise ValueError(f"Bernoulli: probs must be in [0, 1], got {probs}")
            self._logits = None
        else:
            (self._logits,) = _broadcast_parameters(logits)
            self._probs = None
        self.batch_shape = Size((self._probs if probs is not None else self._logits).shape)

    @property
    def _parameter_names(self):
        """The parameters given or computed so far, as PyTorch's repr lists them."""
        return tuple(name for name in ("probs", "logits") if getattr(self, f"_{name}") is not None)

    @property
    def probs(self):
        if self._probs is None:
            with enable_grad():
                self._probs = self._logits.sigmoid()
        return self._probs

    @property
    def logits(self):
        """log(p / (1 - p)), with p clamped to [eps, 1 - eps] first, as PyTorch does."""
        if self._logits is None:
            eps = _EPS[self._probs.dtype]
            with enable_grad():
                p = self._probs.clamp(min=eps, max=1 - eps)
                self._logits = p.log() - (-p).log1p()
        return self._logits

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """0s and 1s (torch.bernoulli of the broadcast probabilities: PyTorch's draws for the same seed)."""
        shape = _extended_shape(self.batch_shape, sample_shape)
        with no_grad():
            return functions.bernoulli(self.probs.expand(*shape))

    def rsample(self, sample_shape=()):
        raise NotImplementedError("Bernoulli has no rsample: its samples are 0 or 1, with no gradient to the "
                                  "probability (use log_prob for a score-function estimate)")

    def log_prob(self, value):
        self._check_value(value, "Boolean()", lambda v: (v == 0) | (v == 1))
        logits = self.logits
        shape = np.broadcast_shapes(tuple(logits.shape), tuple(value.shape))
        return -F.binary_cross_entropy_with_logits(logits.expand(*shape), value.to(logits.dtype).expand(*shape),
                                                   reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")


class Uniform(_Distribution):
    """Uniform(low, high, validate_args=None): uniform on [low, high) (numbers or tensors, broadcast)."""

    _parameter_names = ("low", "high")

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = _broadcast_parameters(low, high)
        self._validate_args = True if validate_args is None else validate_args
        if self._validate_args and not bool((self.low < self.high).all()):
            raise ValueError(f"Uniform: low must be below high, got low={low} and high={high}")
        self.batch_shape = Size(self.low.shape)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        """low + u * (high - low) with u = torch.rand (PyTorch's draws for the same seed)."""
        shape = _extended_shape(self.batch_shape, sample_shape)
        u = functions.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        self._check_value(value, f"Interval(lower_bound={self.low}, upper_bound={self.high})",
                          lambda v: (self.low <= v) & (v < self.high))
        inside = (self.low <= value).to(self.low.dtype) * (self.high > value).to(self.low.dtype)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value):
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def entropy(self):
        return (self.high - self.low).log()


__all__ = ["Categorical", "Normal", "Bernoulli", "Uniform"]

# a PyTorch name this module lacks says so, and dir() lists its public names only (tinyattn/missing.py)
from . import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)
