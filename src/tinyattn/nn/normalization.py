"""Batch normalisation (BatchNorm1d and BatchNorm2d, with PyTorch's running statistics) and group
normalisation (GroupNorm). LayerNorm is among the basic layers (layers.py)."""

from .. import dtypes, functions
from ..errors import ShapeError
from . import functional as F
from . import init
from .layers import add_scale_and_shift
from .module import Module, Parameter


class _BatchNorm(Module):
    """Normalise each channel (dim 1) with the batch's statistics while training, and with running
    averages of them in eval(). momentum=None keeps a cumulative average (each batch counts 1/k at
    the k-th batch). The buffers and their state_dict keys are PyTorch's: running_mean, running_var,
    num_batches_tracked."""

    input_dims = ()  # the input's numbers of dims the subclass accepts

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if isinstance(num_features, bool) or not hasattr(num_features, "__index__") or num_features < 0:
            raise ValueError(f"{type(self).__name__}: num_features must be an integer >= 0, got {num_features!r}")
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(functions.ones(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(functions.zeros(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", functions.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", functions.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", functions.tensor(0, dtype=dtypes.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        F.tensor_argument(input, type(self).__name__)
        if input.ndim not in self.input_dims:
            wanted = " or ".join(f"{n}D" for n in self.input_dims)
            raise ValueError(f"{type(self).__name__}: expected {wanted} input (got {input.ndim}D input of shape "
                             f"{list(input.shape)})")
        if input.shape[1] != self.num_features:
            raise ShapeError(f"{type(self).__name__}({self.num_features}): the input has {input.shape[1]} channels "
                             f"in dim 1 (shape {list(input.shape)}), expected {self.num_features}")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # the cumulative average: the k-th batch weighs 1/k
                factor = 1.0 / float(self.num_batches_tracked.item())
        # eval() without running statistics normalises with the batch's own, as in PyTorch
        use_batch = self.training or self.running_mean is None
        keep_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep_stats else None,
                            self.running_var if keep_stats else None, self.weight, self.bias, use_batch, factor,
                            self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs, per channel C."""

    input_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs, per channel C."""

    input_dims = (4,)


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
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
