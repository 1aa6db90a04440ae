"""Convolution layers: Conv1d over (N, C, L) sequences (character CNNs, TextCNN), Conv2d over
(N, C, H, W) images (LeNet, the CNN tutorials), and the transposed ConvTranspose1d and ConvTranspose2d
that upsample. Their math is F.conv1d, F.conv2d, F.conv_transpose1d and F.conv_transpose2d."""

from .. import functions
from . import functional as F
from . import init
from .functional_conv import _ints
from .module import Module, Parameter


class _ConvNd(Module):
    """What Conv1d and Conv2d share: the arguments, the weight (out_channels, in_channels / groups,
    *kernel_size) and bias, PyTorch's initialisation, padding modes and repr."""

    dims = 0  # 1 or 2: how many spatial dims

    transposed = False  # ConvTranspose: the weight is (in_channels, out_channels / groups, *kernel_size)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        self._build(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                    device, dtype)

    def _build(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
               device, dtype):
        who = type(self).__name__
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{who}: {name} must be a positive integer, got {value!r}")
        if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
            raise ValueError(f"{who}: groups must be a positive integer, got {groups!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{who}: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                             f"divisible by groups ({groups})")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"{who}: padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', got "
                             f"{padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ints(kernel_size, "kernel_size", who, self.dims)
        self.stride = _ints(stride, "stride", who, self.dims)
        self.padding = _ints(padding, "padding", who, self.dims, strings=() if self.transposed else ("same", "valid"))
        self.dilation = _ints(dilation, "dilation", who, self.dims)
        if min(self.kernel_size) < 1:
            raise ValueError(f"{who}: kernel_size must be positive, got {kernel_size!r}")
        if self.padding == "same" and self.stride != (1,) * self.dims:
            raise ValueError(f"{who}: padding='same' is not supported for strided convolutions")
        self.groups, self.padding_mode = groups, padding_mode
        if self.transposed:
            weight_shape = (in_channels, out_channels // groups)
        else:
            weight_shape = (out_channels, in_channels // groups)
        self.weight = Parameter(functions.empty(*weight_shape, *self.kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(functions.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.layer_default_(self.weight, self.bias)  # as nn.Linear, with fan_in = in_channels / groups * kernel

    def _conv(self, input, padding):
        raise NotImplementedError

    def forward(self, input):
        if self.padding_mode == "zeros":
            return self._conv(input, self.padding)
        # another mode: pad with F.pad first (the last dim's pair first, as F.pad takes them)
        if self.padding == "same":
            spans = [d * (k - 1) for k, d in zip(self.kernel_size, self.dilation)]
            pairs = [(span // 2, span - span // 2) for span in spans]
        else:
            pairs = [(0, 0) if self.padding == "valid" else (p, p) for p in self.padding]
        pads = [p for pair in reversed(pairs) for p in pair]
        return self._conv(F.pad(input, pads, mode=self.padding_mode), 0)

    def extra_repr(self):
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self.dims:
            text += f", padding={self.padding}"  # (a string without quotes, as PyTorch shows it)
        if self.dilation != (1,) * self.dims:
            text += f", dilation={self.dilation}"
        if self.transposed and self.output_padding != (0,) * self.dims:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """F.conv1d with a weight (out_channels, in_channels / groups, kernel_size) and a bias, initialised
    as PyTorch does (Kaiming-uniform with a = sqrt(5), the bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))).
    Input (N, C_in, L) or (C_in, L)."""

    dims = 1

    def _conv(self, input, padding):
        return F.conv1d(input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """F.conv2d with a weight (out_channels, in_channels / groups, kH, kW) and a bias, initialised as
    PyTorch does (Kaiming-uniform with a = sqrt(5), the bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)), with
    fan_in = in_channels / groups * kH * kW), so that seeded layers get PyTorch's numbers.
    Input (N, C_in, H, W) or (C_in, H, W); kernel_size, stride, padding and dilation: an int or a
    pair (rows, columns); padding may be 'same' or 'valid'; padding_mode: 'zeros', 'reflect',
    'replicate' or 'circular'."""

    dims = 2

    def _conv(self, input, padding):
        return F.conv2d(input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    """What ConvTranspose1d and ConvTranspose2d share: PyTorch's arguments (output_padding; dilation
    after groups and bias), a weight (in_channels, out_channels / groups, *kernel_size) initialised as
    Conv's (so fan_in = out_channels / groups * kernel, as PyTorch computes it), forward(input,
    output_size=None)."""

    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        Module.__init__(self)
        who = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(f'{who}: only "zeros" padding mode is supported, got {padding_mode!r}')
        self.output_padding = _ints(output_padding, "output_padding", who, self.dims)
        self._build(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                    device, dtype)

    def _conv_transpose(self, input, output_padding):
        raise NotImplementedError

    def forward(self, input, output_size=None):
        return self._conv_transpose(input, self._output_padding(input, output_size))

    def _output_padding(self, input, output_size):
        """output_padding, or what gives output_size (PyTorch's way to pick among the output sizes
        that one input size allows with a stride > 1)."""
        if output_size is None:
            return self.output_padding
        who = type(self).__name__
        sizes = list(output_size)
        if len(sizes) == self.dims + 2 or (len(sizes) == self.dims + 1 and input.ndim == self.dims + 1):
            sizes = sizes[-self.dims:]  # given with the batch and channel dims
        if len(sizes) != self.dims:
            raise ValueError(f"{who}: output_size must have {self.dims} or {self.dims + 2} elements, got {output_size}")
        padding = []
        for n, size, k, s, p, d in zip(input.shape[-self.dims:], sizes, self.kernel_size, self.stride, self.padding,
                                       self.dilation):
            smallest = (n - 1) * s - 2 * p + d * (k - 1) + 1
            if not smallest <= size < smallest + s:
                raise ValueError(f"{who}: output_size {list(output_size)} cannot come out of an input of shape "
                                 f"{list(input.shape)}: each size must be between {smallest} and {smallest + s - 1}")
            padding.append(size - smallest)
        return tuple(padding)


class ConvTranspose1d(_ConvTransposeNd):
    """F.conv_transpose1d with a weight (in_channels, out_channels / groups, kernel_size) and a bias,
    initialised as PyTorch does. Input (N, C_in, L) or (C_in, L)."""

    dims = 1

    def _conv_transpose(self, input, output_padding):
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                  self.groups, self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """F.conv_transpose2d with a weight (in_channels, out_channels / groups, kH, kW) and a bias,
    initialised as PyTorch does: the upsampling layer of DCGAN's generator and U-Net's decoder
    (ConvTranspose2d(C, C, 2, stride=2) doubles the height and width). Input (N, C_in, H, W) or
    (C_in, H, W)."""

    dims = 2

    def _conv_transpose(self, input, output_padding):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                  self.groups, self.dilation)
