"""Pooling layers over (N, C, H, W) images and (N, C, L) sequences, and channel dropout: MaxPool2d,
AvgPool2d, AdaptiveAvgPool2d, their 1-D forms and Dropout2d. Their math is F.max_pool2d, F.avg_pool2d,
F.adaptive_avg_pool2d (the 1-D forms run them over rows of height 1) and F.dropout2d; the layers hold
the arguments as PyTorch's do and have no parameters."""

from . import functional as F
from .module import Module


class MaxPool2d(Module):
    """The maximum of each kernel_size window, windows `stride` apart (default: kernel_size, side by
    side); see F.max_pool2d. MaxPool2d(2) halves the height and width."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(MaxPool2d):
    """The maximum of each kernel_size window along the last dim of (N, C, L) or (C, L); see F.max_pool1d."""

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class AvgPool2d(Module):
    """The mean of each kernel_size window, windows `stride` apart (default: kernel_size); see
    F.avg_pool2d for count_include_pad and divisor_override."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(Module):
    """The mean of each kernel_size window along the last dim of (N, C, L) or (C, L); see F.avg_pool1d.
    Its arguments are kept as 1-tuples, as PyTorch keeps them."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size = _one_tuple(kernel_size)
        self.stride = _one_tuple(stride if stride is not None else kernel_size)
        self.padding, self.ceil_mode, self.count_include_pad = _one_tuple(padding), ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _one_tuple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class AdaptiveAvgPool2d(Module):
    """Average each channel into an output_size image whatever the input's size (an int for a
    square, None to keep that size); AdaptiveAvgPool2d(1) is the global average pooling of ResNets.
    See F.adaptive_avg_pool2d."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(AdaptiveAvgPool2d):
    """Average the last dim of (N, C, L) or (C, L) into output_size positions whatever L is; see
    F.adaptive_avg_pool1d."""

    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class Dropout2d(Module):
    """Zero whole channels (each H x W map) with probability p while training, scaling the rest by
    1 / (1 - p); identity in eval(). See F.dropout2d."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        F.check_dropout_p(p)
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"
