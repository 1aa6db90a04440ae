"""The basic layers: Linear (and LazyLinear), Embedding, Dropout, LayerNorm, Flatten and the activations."""

import math
import numbers

from .. import functions
from ..autograd import no_grad
from ..errors import ShapeError
from . import functional as F
from . import init
from .module import Module, Parameter


class Linear(Module):
    """y = x W^T + b, with W of shape (out_features, in_features) and PyTorch's default init."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        _check_sizes(self, in_features=in_features, out_features=out_features)
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(functions.empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(functions.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.layer_default_(self.weight, self.bias)  # PyTorch's: U(-1/sqrt(in), 1/sqrt(in)), weight then bias

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class LazyLinear(Linear):
    """A Linear layer whose in_features is the last dim of the first input it sees: its weight and
    bias are made then, with Linear's initialisation drawn at that moment (as in PyTorch), and the
    layer becomes a plain Linear. Until then its parameters are empty placeholders; an optimizer made
    before the first call keeps working, since the same Parameter objects receive their numbers. Load a
    state dict after a first call (a dry run on one batch): before it, the weight's shape is
    (out_features, 0) and loading reports a size mismatch."""

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        Module.__init__(self)
        if not isinstance(out_features, numbers.Integral) or out_features < 0:
            raise ValueError(f"LazyLinear: out_features must be a non-negative int, got {out_features!r}")
        self.in_features, self.out_features = 0, out_features
        self.weight = Parameter(functions.empty(out_features, 0, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(functions.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def has_uninitialized_params(self):
        return True

    def reset_parameters(self):
        if self.in_features:
            super().reset_parameters()

    def forward(self, input):
        in_features = input.shape[-1] if input.ndim else 1
        weight = functions.empty(self.out_features, in_features, device=self.weight.device, dtype=self.weight.dtype)
        self.weight.data = weight  # the same Parameter object, now with its numbers' shape
        self.in_features = in_features
        init.layer_default_(self.weight, self.bias)  # Linear's init: the weight's draws, then the bias's
        self.__class__ = Linear
        return Linear.forward(self, input)


class Embedding(Module):
    """A lookup table: row i of `weight` is the vector of token id i. Initialised N(0, 1).

    padding_idx: the id of a padding token, whose row starts at zeros and gets no gradient (a negative
    one counts from the end, as in PyTorch).
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        _check_sizes(self, num_embeddings=num_embeddings, embedding_dim=embedding_dim)
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError("Embedding: max_norm, scale_grad_by_freq and sparse=True are not supported")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = None if padding_idx is None else F.check_padding_idx(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(functions.empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
            self.reset_parameters()
        else:  # from_pretrained: the given table itself (its padding row is left as it is, as in PyTorch)
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"Embedding: the weight's shape {list(_weight.shape)} does not match "
                                 f"num_embeddings, embedding_dim = {num_embeddings}, {embedding_dim}")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """An Embedding whose weight is `embeddings` (2-D, shared, not copied); frozen unless freeze=False."""
        F.tensor_argument(embeddings, "Embedding.from_pretrained", "embeddings")
        if embeddings.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: the embeddings are expected to be 2-dimensional "
                             f"(num_embeddings, embedding_dim), got shape {list(embeddings.shape)}")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}" + (
            f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class Dropout(Module):
    """Zero each element with probability p while training (scaling the rest); identity in eval()."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        F.check_dropout_p(p)
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


def add_scale_and_shift(module, shape, affine, bias, device, dtype):
    """A normalisation's learnt scale (`weight`, ones) and shift (`bias`, zeros) of `shape`, or None
    for each that is turned off (affine=False turns off both)."""
    module.register_parameter("weight", Parameter(functions.ones(shape, device=device, dtype=dtype))
                              if affine else None)
    module.register_parameter("bias", Parameter(functions.zeros(shape, device=device, dtype=dtype))
                              if affine and bias else None)


class LayerNorm(Module):
    """Normalises over the last dims (`normalized_shape`) to mean 0 and variance 1, then scales and shifts."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape = shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        add_scale_and_shift(self, shape, elementwise_affine, bias, device, dtype)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GELU(Module):
    """x * Φ(x), the Gaussian error linear unit (`approximate='tanh'`: its tanh approximation)."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate='{self.approximate}'"


class ReLU(Module):
    """max(x, 0), elementwise."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """The hyperbolic tangent, elementwise."""

    def forward(self, input):
        return input.tanh()


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise."""

    def forward(self, input):
        return input.sigmoid()


class SiLU(Module):
    """x * sigmoid(x), elementwise (also called swish)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x for x >= 0, negative_slope * x otherwise, elementwise."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x for x > 0, alpha * (exp(x) - 1) otherwise, elementwise."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, elementwise (linear above `threshold`)."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    """exp(x) / sum(exp(x)) along `dim`: positive weights that sum to 1."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class GLU(Module):
    """The gated linear unit: the input halved along `dim`, a * sigmoid(b)."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along `dim`, computed stably."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Flatten(Module):
    """Dims start_dim..end_dim merged into one; by default all but the batch dim: (N, *) -> (N, prod(*))."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Dim `dim` split into `unflattened_size` (its product must be that dim's size; one -1 is inferred)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, str):
            raise NotImplementedError("Unflatten: named dims are not supported: give dim as an integer")
        if not isinstance(unflattened_size, (tuple, list)) or not all(
                isinstance(n, int) and not isinstance(n, bool) for n in unflattened_size):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple of ints, got {unflattened_size!r}")
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input):
        ndim = input.ndim
        if ndim == 0:
            raise IndexError("Unflatten: the input is 0-d (one number), it has no dim to split")
        if not -max(ndim, 1) <= self.dim < max(ndim, 1):
            raise IndexError(f"Unflatten: dim {self.dim} is out of range for an input of shape {list(input.shape)} "
                             f"(expected to be in range of [{-max(ndim, 1)}, {max(ndim, 1) - 1}])")
        dim = self.dim % max(ndim, 1)
        sizes = self.unflattened_size
        n = input.shape[dim] if ndim else 1
        known = math.prod(s for s in sizes if s != -1)
        if not sizes or sizes.count(-1) > 1 or any(s < -1 for s in sizes) or (
                -1 not in sizes and known != n) or (-1 in sizes and (known == 0 or n % known)):
            raise ShapeError(f"Unflatten: sizes {list(sizes)} do not multiply to the size {n} of dim {self.dim} "
                             f"(input shape {list(input.shape)})")
        if -1 in sizes:  # inferred here (reshape cannot infer it where there are no elements)
            sizes = tuple(n // known if s == -1 else s for s in sizes)
        return input.reshape(tuple(input.shape[:dim]) + sizes + tuple(input.shape[dim + 1:]))

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


def _check_sizes(layer, **sizes):
    """A ValueError naming the argument unless every size is an integer >= 0 (0 is allowed, as in PyTorch)."""
    for name, value in sizes.items():
        if isinstance(value, bool) or not hasattr(value, "__index__") or value < 0:  # an int, NumPy's too
            raise ValueError(f"{type(layer).__name__}: {name} must be an integer >= 0, got {value!r}")
