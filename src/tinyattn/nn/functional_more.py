"""More of torch.nn.functional, built from differentiable tensor ops (their gradients come from
those): cosine_similarity, pairwise_distance and group_norm. `tinyattn.nn.functional` exports them."""

from ..autograd import no_grad
from ..errors import ShapeError
from ..tensor import Tensor, vector_norm


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 . x2 / (max(|x1|, eps) max(|x2|, eps)) along `dim` (x1 and x2 broadcast).

    As in PyTorch, each input is divided by its own norm before the product (which keeps large
    values from overflowing), and the clamp to eps changes the value only: the gradient is that of
    x1 / |x1|, as PyTorch's clamp under no_grad gives it.
    """
    if not isinstance(x1, Tensor) or not isinstance(x2, Tensor):
        raise TypeError(f"cosine_similarity expects two tensors, got {type(x1).__name__} and {type(x2).__name__}")
    if x1.ndim != x2.ndim and min(x1.ndim, x2.ndim) == 0:
        raise ShapeError("cosine_similarity: a 0-d input has no dim to compare along")
    x1, x2 = (x if x.dtype.is_floating_point else x.float() for x in (x1, x2))
    x1_norm = vector_norm(x1, 2, dim, keepdim=True)
    x2_norm = vector_norm(x2, 2, dim, keepdim=True)
    with no_grad():  # the clamped norms' values, with the unclamped norms' gradients
        x1_lift = x1_norm.clamp_min(eps) - x1_norm
        x2_lift = x2_norm.clamp_min(eps) - x2_norm
    return ((x1 / (x1_norm + x1_lift)) * (x2 / (x2_norm + x2_lift))).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps along the last dim (eps keeps the norm's gradient finite where
    x1 == x2)."""
    difference = x1 - x2 + eps
    return vector_norm(difference, p, -1 if difference.ndim else None, keepdim)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize (N, C, *) input over each group of C / num_groups channels (and all positions),
    then scale and shift each channel by weight and bias (when given)."""
    if input.ndim < 2 or input.shape[1] % num_groups:
        raise ShapeError(f"group_norm expects input (N, C, *) with C divisible by num_groups={num_groups}, got "
                         f"shape {list(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    grouped = input.reshape(n, num_groups, -1)
    mean = grouped.mean(-1, keepdim=True)
    var = grouped.var(-1, correction=0, keepdim=True)
    normalized = ((grouped - mean) / (var + eps).sqrt()).reshape(input.shape)
    channel_shape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        normalized = normalized * weight.reshape(channel_shape)
    if bias is not None:
        normalized = normalized + bias.reshape(channel_shape)
    return normalized
