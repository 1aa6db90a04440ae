"""`tinyattn.nn.functional` (import it as F): the layers' math as functions.

Several functions here run one fused op each, whose backward is derived by hand (a linear layer is
one matrix product over all leading dims; cross-entropy's gradient is `softmax - one_hot`; layer
norm's backward is a closed form), instead of a chain of small ops: the ops live with the others, on
arrays, in `tinyattn/ops/nn.py`, `ops/losses.py` and `ops/softmax.py` (layer norm); the functions
here check the arguments and run them (`ops.LinearOp.apply(...)`). Everything else is built from
tensor ops, so autograd differentiates it for free.
"""

import math
import warnings

import numpy as np

from .. import backend, dtypes, ops, random
from ..autograd import no_grad
from ..errors import ShapeError
from ..functions import generator_or_default, tril, ones, tensor, where, zeros_like
from ..tensor.creation import _layout_strides
from ..ops import Softmax, broadcast_shape
from ..tensor import Tensor, _value_to_write, vector_norm
from .tensor_arguments import tensor_argument  # (the layers call it as F.tensor_argument)


# ---------------------------------------------------------------------------------------------
# linear and embedding


def linear(input, weight, bias=None):
    """input @ weight.T + bias: the affine map of `nn.Linear`."""
    tensor_argument(input, "linear")
    tensor_argument(weight, "linear", "weight")
    if input.ndim == 0:
        raise ShapeError(f"linear: the input is a 0-d tensor (one number) but the weight expects {weight.shape[-1]} "
                         f"features in the input's last dim: give the input shape (..., {weight.shape[-1]})")
    if weight.ndim == 1:  # PyTorch's vector weight: input @ weight, the last dim summed away
        if bias is not None:
            raise ShapeError(f"linear: a 1-D weight (shape {list(weight.shape)}) takes no bias: give the "
                             "weight shape (1, in_features) to add a bias")
        return linear(input, weight.unsqueeze(0)).squeeze(-1)
    if weight.ndim != 2:
        raise ShapeError(f"linear: the weight must be 2-D (out_features, in_features) or 1-D, got shape "
                         f"{list(weight.shape)}")
    if input.dtype is not weight.dtype:  # as matmul: no silent promotion to float64
        raise TypeError(f"linear: the input is {input.dtype} but the weight is {weight.dtype}: convert one "
                        f"(e.g. input.to({weight.dtype}))")
    if input.shape[-1:] != weight.shape[1:]:
        raise ShapeError(
            f"linear: the input's last dim is {input.shape[-1]} (shape "
            f"{list(input.shape)}) but the weight expects {weight.shape[1]} features (weight shape "
            f"{list(weight.shape)}, laid out as (out_features, in_features))"
        )
    if bias is not None and bias.dtype is not input.dtype:
        raise TypeError(f"linear: the bias is {bias.dtype} but the input is {input.dtype}: convert one")
    if bias is not None and tuple(bias.shape) != weight.shape[:1]:  # PyTorch broadcasts it to the output
        out_shape = tuple(input.shape[:-1]) + weight.shape[:1]
        if broadcast_shape(bias.shape, out_shape) != out_shape:
            raise ShapeError(f"linear: a bias of shape {list(bias.shape)} does not broadcast to the output's shape "
                             f"{list(out_shape)}: give it shape ({weight.shape[0]},), one number per output feature")
        return ops.LinearOp.apply(input, weight, None) + bias
    return ops.LinearOp.apply(input, weight, bias)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of `weight` at the ids in `input`. padding_idx: a row that gets no gradient (negative counts
    from the end)."""
    tensor_argument(input, "embedding", "ids")
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse=True are not supported")
    if input.dtype not in (dtypes.int64, dtypes.int32):
        raise TypeError(f"embedding expects integer ids (int64), got {input.dtype}: use ids.long()")
    if padding_idx is not None:
        padding_idx = check_padding_idx(padding_idx, weight.shape[0])
    backend.same_device([input.array, weight.array])
    if not backend.all_in_range(input.array, weight.shape[0]):
        xp = backend.namespace(input.array)
        low, high = int(xp.min(input.array)), int(xp.max(input.array))
        bad = low if low < 0 else high
        raise IndexError(
            f"embedding: id {bad} is out of range for an embedding with {weight.shape[0]} rows "
            f"(valid ids are 0 to {weight.shape[0] - 1})"
        )
    return ops.EmbeddingOp.apply(input, weight, padding_idx)


def check_padding_idx(padding_idx, num_embeddings):
    """padding_idx as a row number from 0 (a negative one counts from the end), or a ValueError."""
    if isinstance(padding_idx, bool) or not hasattr(padding_idx, "__index__"):
        raise TypeError(f"padding_idx must be an integer row number, got {padding_idx!r}")
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"padding_idx must be within num_embeddings: {padding_idx} is not in "
                         f"[{-num_embeddings}, {num_embeddings - 1}]")
    return int(padding_idx) % num_embeddings


# ---------------------------------------------------------------------------------------------
# dropout


def check_dropout_p(p):
    """Raises a ValueError unless p is a probability in [0, 1]."""
    if not (isinstance(p, (int, float)) and 0.0 <= p <= 1.0):
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout_mask(shape, p, like, strides=None):
    """The scaled mask of inverted dropout for 0 < p <= 1: 0 where dropped, 1/(1-p) where kept.

    Drawn on the CPU from the PyTorch-compatible stream (so seeded results match PyTorch), on CUDA
    from CuPy's generator; on `like`'s device, in its dtype. At p = 1 all zeros, with no draw (as
    PyTorch draws nothing then). With `strides`, drawn in the memory order of a tensor of that layout.
    """
    xp = backend.namespace(like.array)
    if p == 1:
        return xp.zeros(shape, dtype=like.array.dtype, **backend.creation_kwargs(xp))
    keep = generator_or_default(None).device_bernoulli(shape, 1 - p, xp, strides)
    if backend.namespace(keep) is not xp:  # drawn on the host: copy to the tensor's device
        keep = backend.from_host(keep, like.device)
    return xp.astype(keep, like.array.dtype) / (1 - p)


def dropout(input, p=0.5, training=True, inplace=False):
    """Inverted dropout: zero each element with probability p, scale the rest by 1/(1-p).

    On the CPU the mask comes from the PyTorch-compatible stream (so seeded results match PyTorch);
    on CUDA from CuPy's generator. In eval mode, or at p=0, the input is returned unchanged.
    """
    check_dropout_p(p)
    tensor_argument(input, "dropout")
    if not training or p == 0:
        return input
    if p == 1:  # everything dropped (a product, so that a NaN stays NaN and a bool stays bool, as in PyTorch)
        return input.mul_(zeros_like(input)) if inplace else input * zeros_like(input)
    if not input.dtype.is_floating_point:  # the kept numbers are scaled by 1 / (1 - p)
        raise TypeError(f"dropout needs a floating point tensor, got {input.dtype}: use input.float()")
    # PyTorch draws the mask into empty_like(input): laid out as a transposed or permuted input is
    shape = tuple(input.shape)
    mask = dropout_mask(shape, p, input, random.like_strides(shape, _layout_strides(input)))
    if inplace:  # written into input's memory and recorded in its graph, as in-place tensor ops are
        return input._inplace(ops.DropoutOp, mask)
    return ops.DropoutOp.apply(input, mask)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels: each input[n, c] (an H x W map) with probability p while training, and
    scale the kept ones by 1 / (1 - p). The mask (N, C, 1, 1) is drawn as PyTorch draws it (one
    bernoulli per channel, from the PyTorch-compatible stream on the CPU). As in PyTorch, a 3-D input
    is taken as (N, C, L), with a warning."""
    check_dropout_p(p)
    tensor_argument(input, "dropout2d")
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence this warning, "
                      "please use dropout instead. Note that dropout2d exists to provide channel-wise dropout "
                      "on inputs with 2 spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
                      "dim. This behavior will change in a future release to interpret the input as one without "
                      "a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", stacklevel=2)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:  # everything dropped, with no draw (as PyTorch)
        return input.mul_(zeros_like(input)) if inplace else input * zeros_like(input)
    if input.ndim < 2:
        raise ShapeError(f"dropout2d: feature dropout needs an input with a channel dim (N, C, ...), got shape "
                         f"{list(input.shape)}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"dropout2d needs a floating point tensor, got {input.dtype}: use input.float()")
    mask = dropout_mask(tuple(input.shape[:2]) + (1,) * (input.ndim - 2), p, input)  # one draw per channel
    if inplace:
        return input._inplace(ops.DropoutOp, mask)
    return ops.DropoutOp.apply(input, mask)


# ---------------------------------------------------------------------------------------------
# normalisation and activations


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalises over the last dims to mean 0 and variance 1, then applies weight and bias."""
    tensor_argument(input, "layer_norm")
    if not input.dtype.is_floating_point:  # (NumPy would fail deep inside, casting the mean into integers)
        raise NotImplementedError(f"layer_norm is not implemented for {input.dtype} input (nor is PyTorch's): "
                                  "normalise floating-point numbers, e.g. input.float()")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:
        raise ShapeError("layer_norm needs a normalized_shape of at least one dim (the last dims to normalise "
                         "over), got []")
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise ShapeError(
            f"layer_norm over shape {list(shape)}: the input's last dims are "
            f"{list(input.shape[input.ndim - len(shape):])} (input shape {list(input.shape)})"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise ShapeError(f"layer_norm over shape {list(shape)}: the {name} must have that shape, got "
                             f"{list(t.shape)}")
        if t is not None and t.dtype is not input.dtype:
            raise TypeError(f"layer_norm: the input is {input.dtype} but the {name} is {t.dtype}: convert one "
                            f"(e.g. input.to({t.dtype}))")
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    return ops.LayerNormOp.apply(input, weight, bias, axes, eps)


def gelu(input, approximate="none"):
    """x * Φ(x), the Gaussian error linear unit (`approximate='tanh'`: its tanh approximation)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    tensor_argument(input, "gelu")
    if not input.dtype.is_floating_point:  # as in PyTorch
        raise TypeError(f"gelu needs a floating point tensor, got {input.dtype}: use input.float()")
    return ops.GeluOp.apply(input, approximate)


def relu(input, inplace=False):
    """max(x, 0), elementwise."""
    return input.relu_() if inplace else input.relu()


def tanh(input):
    """The hyperbolic tangent, elementwise."""
    return input.tanh()


def sigmoid(input):
    """1 / (1 + exp(-x)), elementwise."""
    return input.sigmoid()


def _implicit_softmax_dim(name, ndim):
    """The dim PyTorch's deprecated `softmax(x)` without dim= picks, with its warning: 0 for 0-, 1- and
    3-dim inputs, else 1 (older code, such as some seq2seq tutorials, still relies on it)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                  "dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`: positive weights that sum to 1."""
    if dim is None:
        dim = _implicit_softmax_dim("softmax", input.ndim)
    return (input if dtype is None else input.to(dtype)).softmax(dim)


def log_softmax(input, dim=None, dtype=None):
    """log(softmax(input)) along `dim`, computed stably with log-sum-exp."""
    if dim is None:
        dim = _implicit_softmax_dim("log_softmax", input.ndim)
    return (input if dtype is None else input.to(dtype)).log_softmax(dim)


def safe_softmax(input, dim=-1):
    """Softmax that maps fully masked rows to zeros (what the attention modules use)."""
    x = input if input.dtype.is_floating_point else input.float()
    if x.ndim == 0:  # one number (dim 0 or -1): as a vector of one
        return safe_softmax(x.reshape(1), dim).reshape(())
    return Softmax.apply(x, dim, True)


def _activation(op, input, inplace, *args):
    """Apply an elementwise activation op, in place (recorded in the graph) when asked."""
    if not input.dtype.is_floating_point:
        raise TypeError(f"{op.__name__.removesuffix('Op').lower()} needs a floating point tensor, got "
                        f"{input.dtype}: use .float()")
    return input._inplace(op, *args) if inplace else op.apply(input, *args)


def glu(input, dim=-1):
    """The gated linear unit: the first half of `dim` times the sigmoid of the second half."""
    tensor_argument(input, "glu")
    if input.ndim == 0:
        raise ShapeError("glu does not support 0-d (scalar) tensors: it halves a dim")
    if not -input.ndim <= dim < input.ndim:
        raise IndexError(f"glu: dim {dim} is out of range for a tensor of {input.ndim} dims")
    size = input.shape[dim]
    if size % 2:
        raise ShapeError(f"glu: halving dimension must be even, but dimension {dim % input.ndim} is size {size}")
    before = (slice(None),) * (dim % input.ndim)  # the dims before `dim`, whole
    first, second = input[before + (slice(0, size // 2),)], input[before + (slice(size // 2, size),)]
    return first * second.sigmoid()


def silu(input, inplace=False):
    """x * sigmoid(x), elementwise."""
    return _activation(ops.SiluOp, input, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, elementwise (linear above `threshold`)."""
    return _activation(ops.SoftplusOp, input, False, beta, threshold)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x for x >= 0, negative_slope * x otherwise, elementwise."""
    return _activation(ops.LeakyReluOp, input, inplace, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, alpha * (exp(x) - 1) otherwise, elementwise."""
    return _activation(ops.EluOp, input, inplace, alpha)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(norm of input along dim, eps): unit vectors along dim (PyTorch's formula)."""
    if out is not None:
        raise TypeError("normalize: out= is not supported: use the returned tensor")
    return input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)


# ---------------------------------------------------------------------------------------------
# padding


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad) // 2 dims: pad = (left, right) for the last dim, then (top, bottom) for the
    one before, ... Modes: 'constant' (value, default 0; negative pads crop), 'reflect' (mirrored
    without the edge), 'replicate' (the edge repeated), 'circular' (wrapped around)."""
    pad = [int(p) for p in pad]
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"pad: {list(pad)} must hold a (before, after) pair for each of the last dims, at most "
                         f"{input.ndim} pairs for a tensor of shape {list(input.shape)}")
    pairs = [(0, 0)] * (input.ndim - len(pad) // 2) + [(pad[i], pad[i + 1]) for i in range(len(pad) - 2, -1, -2)]
    if mode == "constant":
        for n, (before, after) in zip(input.shape, pairs):
            if n + min(before, 0) + min(after, 0) < 0 or n + before + after < 0:
                raise ShapeError(f"pad: a dim of size {n} cannot take pads ({before}, {after}): negative pads would "
                                 f"cut off more than it has (input shape {list(input.shape)})")
        used = value is not None and any(before > 0 or after > 0 for before, after in pairs)
        # the value in the tensor's dtype, as fill_ writes it (1.5 is 1 in integers); checked only where used
        fill = _value_to_write(input, value) if used else 0
        return ops.ConstantPadNdOp.apply(input, tuple(pairs), fill)
    if mode not in ("reflect", "replicate", "circular"):
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    if value is not None and value != 0:
        raise ValueError(f"pad: a value ({value}) only goes with mode='constant', not {mode!r}")
    padded_dims = len(pad) // 2
    if not 1 <= padded_dims <= 3 or input.ndim not in (padded_dims + 1, padded_dims + 2):
        raise ShapeError(f"pad: mode={mode!r} pads the last 1, 2 or 3 dims of a tensor with 1 or 2 more dims "
                         f"(channels, batch); got {padded_dims} padded dims for shape {list(input.shape)}")
    if mode != "circular" and 0 in input.shape[input.ndim - padded_dims - 1:]:  # (the batch may be empty)
        raise ShapeError(f"pad: mode={mode!r} needs channels and padded dims of size 1 or more, got shape "
                         f"{list(input.shape)}")
    result = input
    for axis, (n, (before, after)) in enumerate(zip(input.shape, pairs)):
        if before or after:
            result = result.index_select(axis, _pad_positions(mode, n, before, after, input.device))
    return result


def _pad_positions(mode, n, before, after, device):
    """Which input position each output position along one dim takes, for the reflect, replicate and
    circular modes (padding by picking elements: the gradient adds up where one is picked twice)."""
    limit = n - 1 if mode == "reflect" else n
    if min(before, after) < 0 or max(before, after) > limit:
        raise ValueError(f"pad: with mode={mode!r}, pads must be between 0 and {limit} for a dim of size {n}, "
                         f"got ({before}, {after})")
    positions = np.arange(-before, n + after)
    if mode == "reflect":
        positions = np.abs(positions)
        positions = np.where(positions > n - 1, 2 * (n - 1) - positions, positions)
    elif mode == "replicate":
        positions = np.clip(positions, 0, n - 1)
    else:
        positions = positions % n
    return tensor(positions, device=device)


# ---------------------------------------------------------------------------------------------
# losses


def _plain_class_batch(input, target, ignore_index):
    """Whether cross_entropy's arguments are the common case, which class_rows would pass as they
    are: NumPy (N, C) float logits, (N,) int64 targets all in [0, C), ignore_index not among them."""
    logits = input.array
    return backend.numpy_class_rows(logits, target.array) and not 0 <= ignore_index < logits.shape[1]


def check_reduction(reduction):
    """Raises a ValueError unless reduction is 'mean', 'sum' or 'none'."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction!r} is not a valid value for reduction: use 'mean', 'sum' or 'none'")


def class_rows(name, input, target, ignore_index):
    """PyTorch's checks of a classification loss's arguments, shared by cross_entropy and nll_loss.

    `input` is (C,), (N, C) or (N, C, d...) with the classes in dim 1, `target` the class indices:
    (), (N,) or (N, d...). Returns the input as rows (rows, C), the targets as (rows,), and
    the shape of the per-element losses (what reduction='none' gives).
    """
    if not input.dtype.is_floating_point:
        raise TypeError(f"{name} expects a floating-point input, got {input.dtype}: use input.float()")
    if target.dtype.is_floating_point or target.dtype is dtypes.bool_:
        raise TypeError(
            f"{name} expects class indices (int64) as target, got {target.dtype}: use target.long() "
            "(probability targets are not supported)"
        )
    if input.ndim == 0:
        raise ShapeError(f"{name}: the input is a 0-d tensor, it needs a dim of classes: shape (C,) or (N, C)")
    if name == "cross_entropy" and target.shape == input.shape:  # PyTorch's form for class probabilities
        raise TypeError(f"cross_entropy: a target of the input's shape {list(input.shape)} holds class "
                        "probabilities, which are not supported: give class indices, of the input's shape without "
                        "the class dim")
    if input.ndim == 1:  # one sample: its target is a single class, a 0-d tensor
        expected = ()
        if tuple(target.shape) == (1,):  # PyTorch's forward takes it, its backward fails ("size mismatch")
            raise ShapeError(f"{name}: an input of shape {list(input.shape)} (one sample) needs a 0-d target "
                             "(one class index), got shape [1]: pass target[0], or input.unsqueeze(0) for a batch "
                             "of one")
        if tuple(target.shape) != ():
            raise ShapeError(f"{name}: an input of shape {list(input.shape)} (one sample) needs a 0-d target "
                             f"(one class index), got shape {list(target.shape)}")
    else:
        expected = tuple(input.shape[:1]) + tuple(input.shape[2:])
        if tuple(target.shape) != expected:
            raise ShapeError(
                f"{name}: an input of shape {list(input.shape)} needs a target of shape {list(expected)} "
                f"(the input's shape without the class dim 1), got {list(target.shape)}"
                + (f": the batch sizes differ ({input.shape[0]} vs {target.shape[0]})"
                   if target.ndim and target.shape[0] != input.shape[0] else "")
            )
    classes = input.shape[-1] if input.ndim == 1 else input.shape[1]
    backend.same_device([input.array, target.array])
    xp = backend.namespace(target.array)
    out_of_range = (target.array != ignore_index) & ((target.array < 0) | (target.array >= classes))
    if target.numel() and bool(xp.any(out_of_range)):  # (the ignored targets may be anything)
        bad = int(xp.max(xp.where(out_of_range, target.array, -(2**62))))  # one of them
        raise IndexError(
            f"{name}: target {bad} is out of range for {classes} classes "
            f"(valid targets are 0 to {classes - 1}, or ignore_index={ignore_index})"
        )
    if input.ndim > 2:  # (N, C, d...) -> (N * d..., C)
        input = input.permute(0, *range(2, input.ndim), 1)
    return input.reshape(target.numel(), classes), target.reshape(-1), expected


def legacy_reduction(size_average, reduce, reduction):
    """The reduction that PyTorch's deprecated size_average and reduce arguments stand for, with
    PyTorch's warning (reduce=False: 'none'; else size_average=False: 'sum'; else 'mean'); `reduction`
    itself when neither is given."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  stacklevel=3)
    return reduction


def class_weight(name, weight, input, classes):
    """The per-class weight of a classification loss, checked: C numbers in the input's dtype."""
    tensor_argument(weight, name, "weight")
    if tuple(weight.shape) != (classes,):
        raise ShapeError(f"{name}: the weight should hold one number for each of the {classes} classes (input "
                         f"shape {list(input.shape)}), got shape {list(weight.shape)}")
    if weight.dtype is not input.dtype:
        raise TypeError(f"{name}: the weight is {weight.dtype} but the input is {input.dtype}: convert one")
    return weight


def weighted_nll_rows(log_probs, targets, weight, ignore_index):
    """(-weight[t] * log_probs[t] per row, 0 where ignored; the valid rows; the sum of their weights,
    or their count without a weight): the parts of a weighted nll_loss over rows (rows, C)."""
    valid = targets != ignore_index
    safe_target = targets.long().masked_fill(~valid, 0)
    if log_probs.shape[1]:
        picked = -log_probs.gather(1, safe_target.unsqueeze(1)).squeeze(1)
    else:  # no classes: every target is ignored (class_rows checked)
        picked = -log_probs.sum(1)
    if weight is None:
        return picked.masked_fill(~valid, 0.0), valid, valid.sum()
    row_weight = (weight[safe_target] if log_probs.shape[1] else picked.detach() * 0).masked_fill(~valid, 0.0)
    return (picked * row_weight).masked_fill(~valid, 0.0), valid, row_weight.sum()


def reduce_class_loss(losses, total_weight, reduction, shape):
    """Per-element losses reduced as `reduction` says: none, sum, or the weighted mean."""
    if reduction == "none":
        return losses.reshape(shape)
    return losses.sum() / total_weight if reduction == "mean" else losses.sum()


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """Cross-entropy of logits `input` (C,), (N, C) or (N, C, d...) against class indices `target`.

    weight: one number per class, scaling each target's loss (the mean divides by the sum of the
    targets' weights). label_smoothing = e: the target is (1 - e) on its class plus e / C on every
    class, i.e. (1 - e) * the loss + e / C * the sum over the classes of -weight * log p (PyTorch's).
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    if weight is None and not label_smoothing and _plain_class_batch(input, target, ignore_index):
        return ops.CrossEntropyOp.apply(input, target, None, reduction)  # (as below, checked at once)
    rows, targets, shape = class_rows("cross_entropy", input, target, ignore_index)
    if weight is not None or label_smoothing:
        weight = None if weight is None else class_weight("cross_entropy", weight, input, rows.shape[1])
        log_probs = rows.log_softmax(1)
        losses, valid, total_weight = weighted_nll_rows(log_probs, targets, weight, ignore_index)
        loss = reduce_class_loss(losses, total_weight, reduction, shape)
        if not label_smoothing:
            return loss
        spread = -(log_probs if weight is None else log_probs * weight).sum(1).masked_fill(~valid, 0.0)
        classes = rows.shape[1]  # (no classes: e / 0 is inf, as PyTorch's double division, and 0 * inf NaN)
        return (1 - label_smoothing) * loss + reduce_class_loss(spread, total_weight, reduction, shape) * (
            label_smoothing / classes if classes else math.inf)
    loss = ops.CrossEntropyOp.apply(rows, targets.long(), ignore_index, reduction)
    return loss.reshape(shape) if reduction == "none" else loss


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of log-probabilities `input` (C,), (N, C) or (N, C, d...) at the classes
    in `target`; weight: one number per class (the mean divides by the sum of the targets' weights)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    rows, targets, shape = class_rows("nll_loss", input, target, ignore_index)
    if weight is not None:
        weight = class_weight("nll_loss", weight, input, rows.shape[1])
        losses, _, total_weight = weighted_nll_rows(rows, targets, weight, ignore_index)
        return reduce_class_loss(losses, total_weight, reduction, shape)
    loss = ops.NllLossOp.apply(rows, targets.long(), ignore_index, reduction)
    return loss.reshape(shape) if reduction == "none" else loss


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input - target)^2, optionally times an elementwise weight (the mean is then sum(weight * loss) /
    sum(weight)), reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    shape = input.shape
    if isinstance(target, Tensor):  # as in PyTorch, a 0-d target counts as a tensor in the dtype here
        dtype = dtypes.promote(input.dtype, target.dtype)
        input, target = input.to(dtype), target.to(dtype)
        if (weight is None and reduction != "none" and tuple(input.shape) == tuple(target.shape)
                and input.dtype.is_floating_point):
            return ops.MseLossOp.apply(input, target, reduction)
    return weighted_loss("mse_loss", (input - target) ** 2, weight, shape, reduction)


def reduce_loss(loss, reduction):
    """The elementwise losses as `reduction` asks: 'none' as they are, 'mean' or 'sum' of them all."""
    if reduction == "none":
        return loss
    return loss.mean() if reduction == "mean" else loss.sum()


def pointwise_pair(name, input, target, warn_sizes=True, dtype=None):
    """input and target of a regression loss, in their common dtype (as mse_loss); a ShapeError where
    they do not broadcast, and PyTorch's warning where they broadcast but differ (a (N, 1) output
    against a (N,) target gives an (N, N) loss: rarely what was meant)."""
    tensor_argument(input, name)
    tensor_argument(target, name, "target")
    if broadcast_shape(input.shape, target.shape) is None:
        raise ShapeError(f"{name}: the input's shape {list(input.shape)} and the target's shape "
                         f"{list(target.shape)} do not broadcast together")
    if warn_sizes and tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", stacklevel=3)
    shape = broadcast_shape(input.shape, target.shape)  # both expanded first, as PyTorch's broadcast_tensors
    if dtype is False:  # the arithmetic's rule (kl_div, as PyTorch): a 0-d operand does not set the dtype
        dtype = (target.dtype if input.ndim == 0 and target.ndim else input.dtype if target.ndim == 0 and input.ndim
                 else dtypes.promote(input.dtype, target.dtype))
    dtype = dtype or dtypes.promote(input.dtype, target.dtype)  # (huber_loss: the input's, as PyTorch)
    return input.to(dtype).expand(shape), target.to(dtype).expand(shape)


def weighted_loss(name, loss, weight, input_shape, reduction, mean_by_weight=True):
    """Elementwise losses times `weight` (of the input's shape), reduced; the mean divides by the sum of
    the weights (mse_loss, l1_loss) or by the number of elements (huber_loss), as in PyTorch."""
    if weight is None:
        return reduce_loss(loss, reduction)
    tensor_argument(weight, name, "weight")
    if tuple(weight.shape) != tuple(input_shape):
        raise ValueError(f"{name}: the weight's shape {list(weight.shape)} must be the input's shape "
                         f"{list(input_shape)}")
    loss = loss * weight
    if reduction == "mean" and mean_by_weight:
        return loss.sum() / weight.sum()
    return reduce_loss(loss, reduction)


def same_shape_pair(name, input, target):
    """input and target of a binary classification loss: tensors of one shape (PyTorch refuses others)."""
    tensor_argument(input, name)
    tensor_argument(target, name, "target")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"{name}: the target's shape {list(target.shape)} must be the same as the input's shape "
                         f"{list(input.shape)}")
    if not input.dtype.is_floating_point or not target.dtype.is_floating_point:
        raise TypeError(f"{name} needs floating point input and target, got {input.dtype} and {target.dtype}: "
                        "use .float()")


def check_broadcasts_to(name, what, t, input):
    """A ShapeError unless the tensor `t` (a loss's weight) is None or broadcasts to the input's shape
    (it scales the elementwise losses, so it must not make more of them)."""
    if t is None:
        return
    tensor_argument(t, name, what)
    if broadcast_shape(t.shape, input.shape) != tuple(input.shape):
        raise ShapeError(f"{name}: the {what}'s shape {list(t.shape)} does not broadcast to the input's shape "
                         f"{list(input.shape)}")


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|input - target|, optionally times an elementwise weight (the mean is then sum(weight * loss) /
    sum(weight)), reduced. Its slope at 0 is 0."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    shape = input.shape
    input, target = pointwise_pair("l1_loss", input, target)
    return weighted_loss("l1_loss", (input - target).abs(), weight, shape, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (d = input - target); l1 at beta = 0."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss does not support negative values for beta, got {beta}")
    input, target = pointwise_pair("smooth_l1_loss", input, target)
    diff = input - target
    size = diff.abs()
    if beta == 0:  # (the quadratic part would divide by 0)
        return reduce_loss(size, reduction)
    near = diff.clamp(-beta, beta)  # the quadratic part on clamped numbers: no inf * 0 in its unused gradient
    return reduce_loss(where(size < beta, 0.5 * near * near / beta, size - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere (d = input - target)."""
    check_reduction(reduction)
    if delta <= 0:
        raise ValueError(f"huber_loss does not support non-positive values for delta, got {delta}")
    shape = input.shape
    input, target = pointwise_pair("huber_loss", input, target, dtype=input.dtype)
    diff = input - target
    size = diff.abs()
    near = diff.clamp(-delta, delta)  # (as in smooth_l1_loss)
    loss = where(size < delta, 0.5 * near * near, delta * (size - 0.5 * delta))
    return weighted_loss("huber_loss", loss, weight, shape, reduction, mean_by_weight=False)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-weight (target log(input) + (1 - target) log(1 - input)) of probabilities `input` in [0, 1]."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    same_shape_pair("binary_cross_entropy", input, target)
    if input.dtype is not target.dtype:
        raise TypeError(f"binary_cross_entropy: the input is {input.dtype} but the target is {target.dtype}: "
                        "convert one")
    xp = backend.namespace(input.array)
    if input.numel() and not bool(xp.all((input.array >= 0) & (input.array <= 1))):
        raise ValueError("binary_cross_entropy: all elements of input should be between 0 and 1 (probabilities: "
                         "apply sigmoid first, or use binary_cross_entropy_with_logits on the logits)")
    if target.numel() and not bool(xp.all((target.array >= 0) & (target.array <= 1))):
        raise ValueError("binary_cross_entropy: all elements of target should be between 0 and 1")
    loss = ops.BinaryCrossEntropyOp.apply(input, target)
    check_broadcasts_to("binary_cross_entropy", "weight", weight, input)
    return reduce_loss(loss if weight is None else loss * weight.to(input.dtype), reduction)  # (input's dtype)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target) computed from the logits without overflow:
    (1 - t) x + (1 + (pos_weight - 1) t) log(1 + e^-x), times weight. pos_weight (one number per
    class, the last dim) scales the positive targets' part."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    same_shape_pair("binary_cross_entropy_with_logits", input, target)
    check_broadcasts_to("binary_cross_entropy_with_logits", "weight", weight, input)
    check_broadcasts_to("binary_cross_entropy_with_logits", "pos_weight", pos_weight, input)
    # computed in the target's dtype, as PyTorch does (whatever the input's and the weights' are)
    input, weight, pos_weight = (None if t is None else t.to(target.dtype) for t in (input, weight, pos_weight))
    minus_log_sigmoid = softplus(-input, 1.0, math.inf)  # log(1 + e^-x), stable for every x
    if pos_weight is not None:
        minus_log_sigmoid = minus_log_sigmoid * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input + minus_log_sigmoid
    return reduce_loss(loss if weight is None else loss * weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || prediction) pointwise, with `input` the prediction's log-probabilities:
    target (log(target) - input), 0 where target is 0 (or exp(target) (target - input) when the target
    is given as log-probabilities, log_target=True). reduction='batchmean' divides the sum by the
    batch size (dim 0): the true KL divergence per sample; 'mean' divides by the number of elements."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none", "batchmean"):
        raise ValueError(f"{reduction!r} is not a valid value for reduction: use 'mean', 'batchmean', 'sum' or "
                         "'none'")
    batch = input.shape[0] if input.ndim else None  # (before the broadcast)
    input, target = pointwise_pair("kl_div", input, target, warn_sizes=False, dtype=False)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size. "
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition. "
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:  # target log(target) is 0 at target = 0 (log of 1 there keeps its gradient finite too)
        loss = target * target.masked_fill(target == 0, 1.0).log() - target * input
    if reduction == "batchmean":
        return loss.sum() if batch is None else loss.sum() / batch
    return reduce_loss(loss, reduction)


def one_hot(tensor, num_classes=-1):
    """Each class index as a row of zeros with a 1 at that index (int64, num_classes wide)."""
    if tensor.dtype is not dtypes.int64:
        raise TypeError(f"one_hot expects class indices (int64), got {tensor.dtype}: use .long()")
    if tensor.numel() == 0 and num_classes == -1:
        raise ValueError("one_hot of an empty tensor needs num_classes")
    if num_classes == 0 or num_classes < -1:
        raise ValueError(f"one_hot: num_classes must be positive (or -1, to count them), got {num_classes}")
    low = int(tensor.min().item()) if tensor.numel() else 0
    high = int(tensor.max().item()) if tensor.numel() else -1
    classes = high + 1 if num_classes == -1 else num_classes
    if low < 0 or high >= classes:  # each index would get a row of zeros
        raise IndexError(f"one_hot: class {low if low < 0 else high} is out of range for {classes} "
                         f"classes (valid classes are 0 to {classes - 1})")
    xp = backend.namespace(tensor.array)
    positions = xp.arange(classes, **backend.creation_kwargs(xp))
    return Tensor._wrap(xp.astype(tensor.array[..., None] == positions, xp.int64))


# ---------------------------------------------------------------------------------------------
# attention


def causal_mask(num_queries, num_keys, device=None):
    """True above the diagonal: the future positions a query must not attend to."""
    return tril(ones(num_queries, num_keys, device=device)) == 0


def attention(query, key, value, blocked=None, bias=None, scale=None, dropout_p=0.0, training=True, *,
              dropout_keep=None):
    """softmax(query key^T * scale + bias) value, the `blocked` places masked out: (context, weights).

    query (..., L, E), key (..., S, E), value (..., S, Ev), leading dims broadcast; context is
    (..., L, Ev) and weights (..., L, S), before dropout (what the attention modules keep as
    attn_weights). blocked: a bool mask, True where a query may NOT attend (masked_fill's convention,
    the book's `mask_bool`). bias: a float tensor added to the scores. scale: 1/sqrt(E) by default,
    applied as a division by sqrt(E), as the book writes it; a scale given explicitly multiplies the
    scores, as in PyTorch (scale=0 gives equal weights). Dropout on the weights while training.
    A query that may attend to nothing gets zeros, not NaN.

    dropout_keep: dropout's scaled mask (an array of the scores' shape, 0 where dropped and
    1/(1-p) where kept, from `dropout_mask()`), to use instead of drawing one: for a caller that
    needs the same mask too (nn.MultiheadAttention returns the weights after dropout).
    """
    check_dropout_p(dropout_p)
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.ndim < 2 or not t.dtype.is_floating_point:
            raise TypeError(f"attention: {name} must be a floating-point tensor with at least 2 dims, "
                            f"got {t.dtype} of shape {list(t.shape)}")
    if not query.dtype == key.dtype == value.dtype:
        raise TypeError(f"attention: query, key and value must have the same dtype, got {query.dtype}, "
                        f"{key.dtype} and {value.dtype}")
    if query.shape[-1] != key.shape[-1]:
        raise ShapeError(f"attention: queries of shape {list(query.shape)} and keys of shape "
                         f"{list(key.shape)} must have the same last dim")
    if key.shape[-2] != value.shape[-2]:
        raise ShapeError(f"attention: keys of shape {list(key.shape)} and values of shape "
                         f"{list(value.shape)} must have the same number of positions (dim -2)")
    batch = broadcast_shape(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    if batch is None:
        raise ShapeError(f"attention: the leading dims of query {list(query.shape)}, key {list(key.shape)} "
                         f"and value {list(value.shape)} do not broadcast together")
    scores_shape = (*batch, query.shape[-2], key.shape[-2])
    for name, mask in (("blocked", blocked), ("bias", bias)):
        if mask is not None and broadcast_shape(mask.shape, scores_shape) != scores_shape:
            raise ShapeError(f"attention: the {name} mask's shape {list(mask.shape)} does not broadcast to "
                             f"the scores' shape {list(scores_shape)} (..., queries, keys)")
    if blocked is not None and blocked.dtype is not dtypes.bool_:
        raise TypeError(f"attention: blocked must be a bool tensor (True where a query may not attend), "
                        f"got {blocked.dtype}")
    if bias is not None and bias.dtype != query.dtype:
        raise TypeError(f"attention: a float mask must have the query's dtype {query.dtype}, got {bias.dtype}")

    keep = dropout_keep
    if keep is None and training and dropout_p > 0:
        keep = dropout_mask(scores_shape, dropout_p, query)
    elif keep is not None and tuple(keep.shape) != scores_shape:
        raise ShapeError(f"attention: a dropout mask of shape {list(keep.shape)} given for scores of shape "
                         f"{list(scores_shape)}")
    return ops.AttentionOp.apply(query, key, value, blocked, bias, scale, keep)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None):
    """softmax(q k^T * scale + mask) v, PyTorch's semantics, as one op (see ops.AttentionOp).

    attn_mask: a bool mask where True means "may attend" (PyTorch's convention, the opposite of
    masked_fill's), or a float mask added to the scores. A query that may attend to nothing gets
    zeros, not NaN. Dropout (dropout_p > 0) is applied to the weights whenever it is asked for.
    """
    if is_causal and attn_mask is not None:
        raise ValueError("give either attn_mask or is_causal=True, not both")
    if attn_mask is not None and attn_mask.ndim < 2:  # PyTorch's SDPA takes (..., queries, keys) masks only
        raise ShapeError(f"scaled_dot_product_attention: attn_mask needs at least 2 dims (queries, keys), got shape "
                         f"{list(attn_mask.shape)}")
    blocked = bias = None
    if scale is None and query.shape[-1] == 0:  # empty dot products: scores of 0, which 1/sqrt(0) would make NaN
        scale = 1.0
    if is_causal:
        blocked = causal_mask(query.shape[-2], key.shape[-2], query.device)
    elif attn_mask is not None and attn_mask.dtype is dtypes.bool_:
        blocked = ~attn_mask
    elif attn_mask is not None:
        bias = attn_mask
    context, _ = attention(query, key, value, blocked, bias, scale, dropout_p)
    return context


# ---------------------------------------------------------------------------------------------
# batch and group normalisation


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) of `input` (N, C, ...) over the batch and the other dims.

    training=True: with the batch's mean and (biased) variance, and the running statistics, if given,
    moved towards the batch's: running = (1 - momentum) * running + momentum * batch, with the
    unbiased variance, as PyTorch. training=False: with the running statistics.
    Built from tensor ops, so autograd derives the backward (through the batch statistics too).
    """
    tensor_argument(input, "batch_norm")
    if not input.dtype.is_floating_point:
        raise TypeError(f"batch_norm needs a floating point input, got {input.dtype}: use input.float()")
    if input.ndim < 2:
        raise ShapeError(f"batch_norm: the input needs a batch dim and a channel dim (N, C, ...), got shape "
                         f"{list(input.shape)}")
    channels = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and tuple(t.shape) != (channels,):
            raise ShapeError(f"batch_norm: {name} should contain {channels} elements (one per channel of the "
                             f"input's dim 1, input shape {list(input.shape)}), got shape {list(t.shape)}")
        if t is not None and t.dtype is not input.dtype:
            raise TypeError(f"batch_norm: the input is {input.dtype} but the {name} is {t.dtype}: all must share "
                            f"one dtype (e.g. model.to({input.dtype}))")
    stats_shape = (1, channels) + (1,) * (input.ndim - 2)  # broadcasts along dim 1
    if training:
        count = input.numel() // channels if channels else 0
        if count <= 1:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
        dims = (0,) + tuple(range(2, input.ndim))
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, unbiased=False, keepdim=True)
        if running_mean is not None or running_var is not None:
            with no_grad():
                if running_mean is not None:
                    running_mean.copy_(momentum * mean.reshape(channels) + (1 - momentum) * running_mean)
                if running_var is not None:
                    unbiased = var.reshape(channels) * (count / (count - 1))
                    running_var.copy_(momentum * unbiased + (1 - momentum) * running_var)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var are needed when training=False "
                             "(or normalise with the batch's statistics: training=True)")
        mean, var = running_mean.reshape(stats_shape), running_var.reshape(stats_shape)
    out = (input - mean) / (var + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(stats_shape)
    if bias is not None:
        out = out + bias.reshape(stats_shape)
    return out


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


# ---------------------------------------------------------------------------------------------
# similarity and distance


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


# convolution and pooling: in a module of their own
from .functional_conv import (  # noqa: E402
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    conv1d,
    conv2d,
    conv_transpose1d,
    conv_transpose2d,
    max_pool1d,
    max_pool2d,
)

# a PyTorch name this module lacks says so (tinyattn/missing.py)
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)  # its public names only
