"""Conv1d: a 1-D convolution layer over (N, C, L) sequences (character CNNs, TextCNN)."""

from .. import functions
from . import functional as F
from . import init
from .module import Module, Parameter


class Conv1d(Module):
    """F.conv1d with a weight (out_channels, in_channels / groups, kernel_size) and a bias, initialised
    as PyTorch does (Kaiming-uniform with a = sqrt(5), the bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)))."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Conv1d: {name} must be a positive integer, got {value!r}")
        if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
            raise ValueError(f"Conv1d: groups must be a positive integer, got {groups!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv1d: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                             f"divisible by groups ({groups})")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"Conv1d: padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', got "
                             f"{padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = (F._single(kernel_size, "kernel_size"),)
        self.stride = (F._single(stride, "stride"),)
        single_padding = F._single(padding, "padding")
        self.padding = single_padding if isinstance(single_padding, str) else (single_padding,)
        self.dilation = (F._single(dilation, "dilation"),)
        if self.padding == "same" and self.stride != (1,):
            raise ValueError("Conv1d: padding='same' is not supported for strided convolutions")
        self.groups, self.padding_mode = groups, padding_mode
        self.weight = Parameter(functions.empty(out_channels, in_channels // groups, self.kernel_size[0],
                                                device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(functions.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.layer_default_(self.weight, self.bias)  # as nn.Linear, with fan_in = in_channels / groups * kernel

    def forward(self, input):
        if self.padding_mode == "zeros":
            return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        if self.padding == "same":
            span = self.dilation[0] * (self.kernel_size[0] - 1)
            pads = (span // 2, span - span // 2)
        else:
            pads = (0, 0) if self.padding == "valid" else (self.padding[0], self.padding[0])
        return F.conv1d(F.pad(input, pads, mode=self.padding_mode), self.weight, self.bias, self.stride, 0,
                        self.dilation, self.groups)

    def extra_repr(self):
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,):
            text += f", padding={self.padding}"  # (a string without quotes, as PyTorch shows it)
        if self.dilation != (1,):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text
