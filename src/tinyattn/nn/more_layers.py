"""More layers that introductory PyTorch code uses: lists and dicts of parameters, group
normalization, a Linear layer that learns its input size on the first call (LazyLinear), and the
cosine-similarity and pairwise-distance layers.
"""

import numbers

from .. import functions
from . import functional_more, init
from .layers import Linear, add_scale_and_shift
from .module import Module, Parameter


class ParameterList(Module):
    """A list of parameters that the module registers (named "0", "1", ...), so that
    `model.parameters()` and the optimizer see them. Plain tensors are wrapped in Parameter."""

    def __init__(self, values=None):
        super().__init__()
        for value in values or []:
            self.append(value)

    def append(self, value):
        self.register_parameter(str(len(self._parameters)), _as_parameter(value))
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self

    def __getitem__(self, index):
        items = list(self._parameters.values())
        return ParameterList(items[index]) if isinstance(index, slice) else items[index]

    def __setitem__(self, index, value):
        name = str(range(len(self))[index])
        self._parameters[name] = _as_parameter(value)
        object.__setattr__(self, name, self._parameters[name])

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def extra_repr(self):
        return "\n".join(f"({name}): Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
                         for name, p in self._parameters.items())


class ParameterDict(Module):
    """A dict of parameters that the module registers under their keys."""

    def __init__(self, parameters=None):
        super().__init__()
        for key, value in dict(parameters or {}).items():
            self[key] = value

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        if key in self._parameters:
            self._parameters[key] = _as_parameter(value)
            object.__setattr__(self, key, self._parameters[key])
        else:
            self.register_parameter(key, _as_parameter(value))

    def __contains__(self, key):
        return key in self._parameters

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters):
        for key, value in dict(parameters).items():
            self[key] = value

    def extra_repr(self):
        return "\n".join(f"({key}): Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
                         for key, p in self._parameters.items())


def _as_parameter(value):
    return value if isinstance(value, Parameter) else Parameter(value)


class GroupNorm(Module):
    """Normalize each sample's channels in `num_groups` groups: mean 0 and variance 1 over each group's
    channels and positions (the biased variance, with eps inside the root), then a per-channel scale
    and shift (ones and zeros at first) when affine. Input (N, C, *) with C = num_channels."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        add_scale_and_shift(self, num_channels, affine, bias, device, dtype)

    def forward(self, input):
        return functional_more.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


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


class CosineSimilarity(Module):
    """The cosine similarity of x1 and x2 along `dim` (see functional.cosine_similarity)."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return functional_more.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm of x1 - x2 + eps along the last dim (see functional.pairwise_distance)."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return functional_more.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
