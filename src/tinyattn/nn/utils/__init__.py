"""`tinyattn.nn.utils`: gradient clipping, as `torch.nn.utils` does it, and `rnn` (padded and packed sequences)."""

import warnings

from ... import backend
from ...autograd import no_grad
from ...tensor import Tensor
from . import rnn  # noqa: F401  (nn.utils.rnn, as in PyTorch)


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
@backend.quiet_float_errors  # the norm of inf or NaN gradients is inf or NaN, without NumPy's warnings
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale all gradients together so that their joint norm is at most `max_norm`.

    The joint norm is the norm of the vector of every gradient entry (computed as the norm of the
    per-tensor norms). The gradients are multiplied by min(1, max_norm / (norm + 1e-6)), in place.
    Returns the joint norm before clipping (a 0-d tensor), which is worth logging: spikes in it
    show an unstable training run.
    """
    grads = _grads(parameters)
    if not grads:
        return Tensor._from_data(0.0)
    xp = backend.namespace(grads[0].array)
    norm_type = float(norm_type)
    if norm_type == 2.0:  # the usual case, as each gradient's dot product with itself: 2x faster
        flats = [xp.reshape(g.array, (-1,)) for g in grads]
        norms = [xp.sqrt(backend.vecdot(flat, flat)) for flat in flats]
    else:
        norms = [xp.linalg.vector_norm(g.array, ord=norm_type) for g in grads]
    total = xp.linalg.vector_norm(xp.stack(norms), ord=norm_type)
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(
            f"the total norm of order {norm_type} of the gradients is non-finite, so it cannot be "
            "clipped: look for the op that overflowed (inf/nan), or pass error_if_nonfinite=False"
        )
    coefficient = backend.clip(max_norm / (total + 1e-6), high=1.0)  # stays a 0-d array: no host sync
    for g in grads:
        g.array *= coefficient
        g._bump_version()
    return Tensor._wrap(total)


@no_grad()
def clip_grad_value_(parameters, clip_value):
    """Clamp every gradient entry into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        g.array[...] = backend.clip(g.array, -clip_value, clip_value)
        g._bump_version()



def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """The old name of clip_grad_norm_, with PyTorch's deprecation warning."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)


def parameters_to_vector(parameters):
    """All the parameters' numbers in one 1-D tensor (each flattened, in order); differentiable."""
    from ...functions import cat

    return cat([p.reshape(-1) for p in parameters])


@no_grad()
def vector_to_parameters(vec, parameters):
    """Copy consecutive pieces of the 1-D tensor `vec` into the parameters (the inverse of
    parameters_to_vector)."""
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise TypeError(f"expected a 1-D tensor, but got: {type(vec).__name__}"
                        + (f" of shape {list(vec.shape)}" if isinstance(vec, Tensor) else ""))
    parameters = list(parameters)
    total = sum(p.numel() for p in parameters)
    if total != vec.numel():
        raise ValueError(f"vector_to_parameters: the vector has {vec.numel()} numbers, the parameters {total}")
    start = 0
    for p in parameters:
        p.copy_(vec[start:start + p.numel()].reshape(p.shape))
        start += p.numel()


# a PyTorch name this module lacks says so (tinyattn/missing.py)
from ... import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)  # its public names only
