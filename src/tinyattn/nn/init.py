"""Weight initialisation (`tinyattn.nn.init`), with PyTorch's formulas so seeded weights match.

Each function fills a tensor in place without recording a graph, from the PyTorch-compatible
generator (`tinyattn.manual_seed`).
"""

import math
import warnings

import numpy as np

from .. import backend, functions
from ..autograd import no_grad


def calculate_gain(nonlinearity, param=None):
    """The factor init scales a std by so that `nonlinearity` keeps the activations' scale (PyTorch's)."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                        "conv_transpose3d", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        negative_slope = 0.01 if param is None else param
        if isinstance(negative_slope, bool) or not isinstance(negative_slope, (int, float)):
            raise ValueError(f"negative_slope {negative_slope!r} is not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4  # PyTorch's choice, for self-normalising networks
    raise ValueError(f"unsupported nonlinearity {nonlinearity!r}")


def fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight: its input and output sizes times the kernel size."""
    if tensor.ndim < 2:
        raise ValueError("fan in and fan out need a tensor with at least 2 dims")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


_calculate_fan_in_and_fan_out = fan_in_and_fan_out  # PyTorch's private name, which model code calls


def fan_of(tensor, mode):
    """fan_in or fan_out of a weight, as `mode` asks."""
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode {mode!r} is not supported: use 'fan_in' or 'fan_out'")
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fills the tensor in place with numbers drawn uniformly from [a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fills the tensor in place with numbers drawn from N(mean, std²)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def zeros_(tensor):
    """Fills the tensor in place with 0."""
    with no_grad():
        return tensor.zero_()


def ones_(tensor):
    """Fills the tensor in place with 1."""
    with no_grad():
        return tensor.fill_(1.0)


def constant_(tensor, val):
    """Fills the tensor in place with `val`."""
    with no_grad():
        return tensor.fill_(val)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-bound, bound) with bound = gain * sqrt(3 / fan): nn.Linear's default with a = sqrt(5)."""
    if 0 in tensor.shape:  # e.g. nn.Linear(0, 3): nothing to fill, and the fan may be 0 (PyTorch warns too)
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan_of(tensor, mode))
    bound = math.sqrt(3.0) * std  # written as PyTorch writes it, so the float rounding is the same
    return uniform_(tensor, -bound, bound, generator=generator)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std^2) with std = gain / sqrt(fan) (He et al.): for layers followed by a ReLU, pass
    nonlinearity='relu'."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan_of(tensor, mode))
    return normal_(tensor, 0.0, std, generator=generator)


def layer_default_(weight, bias=None):
    """PyTorch's default for Linear and Conv layers: Kaiming-uniform with a = sqrt(5), i.e.
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn for the weight first, then the bias with the same bound,
    so that seeded layers get PyTorch's numbers."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot's uniform init: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator=generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot's normal init: N(0, std²) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std^2) cut to [a, b], drawn as PyTorch 2.x draws it (so seeded values match), by rejection:
    where [a, b] holds more than 30% of the normal, whole-tensor normal draws replace the values outside
    until none is left; otherwise uniform draws on [a, b], each kept with probability
    exp(-((x - mean) / std)^2 / 2) relative to the density's peak in [a, b]."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=2)

    def normal_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    with no_grad():
        if normal_cdf((b - mean) / std) - normal_cdf((a - mean) / std) > 0.3:
            low, high = (functions.tensor(bound, dtype=tensor.dtype).item() for bound in (a, b))  # as stored
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                outside = (result < low) | (result > high)
                if not outside.any():
                    break
                result = functions.where(outside, functions.empty_like(result).normal_(mean, std, generator=generator),
                                         result)
            return tensor.copy_(result) if result is not tensor else tensor

        log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2

        def log_acceptance(x):
            return ((x - mean) / std) ** 2 * -0.5 - log_peak

        def rejected(x):
            return functions.empty_like(tensor).uniform_(generator=generator).log() > log_acceptance(x)

        result = tensor.uniform_(a, b, generator=generator)
        pending = rejected(result)
        while pending.any():
            candidates = functions.empty_like(tensor).uniform_(a, b, generator=generator)
            result = functions.where(pending, candidates, result)
            pending = functions.where(pending, rejected(candidates), pending)
        return tensor.copy_(result) if result is not tensor else tensor


def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix (rows or columns orthonormal), from the QR decomposition of a
    normal draw, as PyTorch draws it; dims after the first are flattened."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flattened = functions.empty(rows, cols, dtype=tensor.dtype).normal_(0, 1, generator=generator)
    values = backend.to_host(flattened.array)
    if rows < cols:
        values = values.T
    q, r = np.linalg.qr(values)
    q = q * np.sign(np.diag(r))  # signs fixed so that the result is uniform over orthogonal matrices
    if rows < cols:
        q = q.T
    with no_grad():
        tensor.copy_(functions.tensor(np.ascontiguousarray(q).reshape(tensor.shape), dtype=tensor.dtype,
                                      device=tensor.device))
        return tensor.mul_(gain)


def eye_(tensor):
    """The identity matrix (ones on the diagonal) into a 2-D tensor."""
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported, got shape {list(tensor.shape)}")
    with no_grad():
        return tensor.copy_(functions.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def _deprecated(new):
    """PyTorch's old spelling without the trailing underscore: the same fill, with PyTorch's FutureWarning."""
    old = new.__name__.removesuffix("_")

    def fill(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.", FutureWarning,
                      stacklevel=2)
        return new(*args, **kwargs)

    fill.__name__ = old
    fill.__doc__ = f"Deprecated: nn.init.{new.__name__}."
    return fill


uniform, normal, constant, eye = _deprecated(uniform_), _deprecated(normal_), _deprecated(constant_), _deprecated(eye_)
xavier_uniform, xavier_normal = _deprecated(xavier_uniform_), _deprecated(xavier_normal_)
kaiming_uniform, kaiming_normal = _deprecated(kaiming_uniform_), _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)


# a PyTorch name this module lacks says so (tinyattn/missing.py)
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)  # its public names only
