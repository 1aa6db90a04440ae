"""Convolution and pooling as functions: the argument checks, then one op of
`tinyattn.ops.conv` (whose docstring explains the im2col formulation).

Import them from `tinyattn.nn.functional` (as F), which re-exports every public name here, with
PyTorch's argument names and defaults: F.conv1d, F.conv2d, F.max_pool1d, F.max_pool2d, F.avg_pool1d,
F.avg_pool2d, F.adaptive_avg_pool1d, F.adaptive_avg_pool2d.
"""

from ..errors import ShapeError
from ..ops.conv import (AdaptiveAvgPool2D, AvgPool2D, Convolution, ConvolutionTranspose, MaxPool2DWithIndices,
                         output_size)
from .tensor_arguments import tensor_argument

# ---------------------------------------------------------------------------------------------
# the arguments


def _ints(value, name, who, count, strings=()):
    """An int argument given as an int or a tuple of `count` ints (conv2d's stride=2 or stride=(2, 1)),
    as a tuple of `count` ints; one of `strings` (padding='same') as it is."""
    if isinstance(value, str) and value in strings:
        return value
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * count
    if len(values) != count or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        shape = "an int (or a 1-tuple)" if count == 1 else f"an int or a tuple of {count} ints"
        also = "".join(f" or {s!r}" for s in strings)
        raise TypeError(f"{who}: {name} must be {shape}{also}, got {value!r}")
    return values


def _floating(who, input, weight, bias):
    """A TypeError unless the input, weight and bias share one floating dtype."""
    if input.dtype is not weight.dtype or (bias is not None and bias.dtype is not input.dtype):
        bias_text = "" if bias is None else f" and bias ({bias.dtype})"
        raise TypeError(f"{who}: the input ({input.dtype}), weight ({weight.dtype}){bias_text} must have one dtype: "
                        f"convert the input (e.g. input.float()) or the layer (e.g. model.double())")
    if not input.dtype.is_floating_point:
        raise TypeError(f"{who} needs floating point tensors, got {input.dtype}: use input.float()")


# ---------------------------------------------------------------------------------------------
# convolution


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation, as PyTorch's conv2d: input (N, C_in, H, W) or (C_in, H, W), weight
    (C_out, C_in / groups, kH, kW), bias (C_out,):

        out[n, o, y, x] = bias[o] + sum over c, i, j of weight[o, c, i, j] * input[n, c, y*sH + i*dH, x*sW + j*dW]

    (with input zero-padded first). stride, padding, dilation: an int or a pair (rows, columns);
    padding may be 'valid' (none) or 'same' (the output as large as the input; stride 1 only).
    groups: split the channels into independent convolutions. Computed as im2col and one matrix
    product (tinyattn.ops.Convolution).
    """
    return _convolution("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation, as PyTorch's conv1d: input (N, C_in, L) or (C_in, L), weight
    (C_out, C_in / groups, k), out[n, o, l] = bias[o] + sum over c, j of weight[o, c, j] *
    input[n, c, l * stride + j * dilation]. The arguments are conv2d's, each one int (or a
    1-tuple); computed as conv2d over an image of height 1.
    """
    return _convolution("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


_SPATIAL = {1: "L", 2: "H, W"}
_KERNEL = {1: "kernel_size", 2: "kH, kW"}


def _convolution(who, dims, input, weight, bias, stride, padding, dilation, groups):
    """conv1d and conv2d: check everything, then Convolution (1-D as rows of height 1)."""
    tensor_argument(input, who)
    tensor_argument(weight, who, "weight")
    if bias is not None:
        tensor_argument(bias, who, "bias")
    stride, dilation = _ints(stride, "stride", who, dims), _ints(dilation, "dilation", who, dims)
    padding = _ints(padding, "padding", who, dims, strings=("same", "valid"))
    if weight.ndim != dims + 2:
        raise ShapeError(f"{who}: the weight must be {dims + 2}-D (out_channels, in_channels / groups, "
                         f"{_KERNEL[dims]}), got shape {list(weight.shape)}")
    if input.ndim == dims + 1:  # one sample without a batch dim
        return _convolution(who, dims, input.unsqueeze(0), weight, bias, stride, padding, dilation,
                            groups).squeeze(0)
    if input.ndim != dims + 2:
        raise ShapeError(f"{who}: expected a {dims + 1}-D (C_in, {_SPATIAL[dims]}) or {dims + 2}-D "
                         f"(N, C_in, {_SPATIAL[dims]}) input, got shape {list(input.shape)}")
    _floating(who, input, weight, bias)
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{who}: groups must be a positive integer, got {groups!r}")
    if min(stride) < 1 or min(dilation) < 1:
        raise ValueError(f"{who}: stride and dilation must be positive, got stride={stride}, dilation={dilation}")
    channels, sizes = input.shape[1], tuple(input.shape[2:])
    out_channels, group_channels, *kernel = weight.shape
    if channels != group_channels * groups or out_channels % groups:
        raise ShapeError(f"{who}: a weight of shape {list(weight.shape)} with groups={groups} expects "
                         f"{group_channels * groups} input channels, got {channels} (input shape {list(input.shape)})"
                         + (f", and out_channels {out_channels} must be divisible by groups" if out_channels % groups
                            else ""))
    if min(kernel) < 1:
        raise ShapeError(f"{who}: the weight's kernel dims must be 1 or more, got weight shape {list(weight.shape)}")
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise ShapeError(f"{who}: the bias must have shape [{out_channels}] (one per output channel), got "
                         f"{list(bias.shape)}")
    reach = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))  # how far one window spans
    if padding == "same":
        if stride != (1,) * dims:
            raise ValueError(f"{who}: padding='same' is not supported for strided convolutions")
        pads = tuple(((r - 1) // 2, r - 1 - (r - 1) // 2) for r in reach)  # the odd one at the end, as PyTorch
    elif padding == "valid":
        pads = ((0, 0),) * dims
    elif min(padding) < 0:
        raise ValueError(f"{who}: padding must be >= 0, got {padding}")
    else:
        pads = tuple((p, p) for p in padding)
    padded = tuple(n + before + after for n, (before, after) in zip(sizes, pads))
    if any(n < r for n, r in zip(padded, reach)):
        def show(values):
            return " x ".join(map(str, values))
        raise ShapeError(f"{who}: the (padded) input is {show(padded)}, shorter than the kernel's reach "
                         f"{show(reach)} (kernel_size {tuple(kernel)}, dilation {dilation}, input shape "
                         f"{list(input.shape)}): pad it or use a smaller kernel")
    if dims == 1:  # the op's rows and columns: one row
        stride, dilation, pads = (1,) + stride, (1,) + dilation, ((0, 0),) + pads
    return Convolution.apply(input, weight, bias, stride, pads, dilation, groups)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transposed convolution of PyTorch's conv_transpose2d (the gradient of conv2d with respect
    to its input, used to upsample: DCGAN's generator, U-Net's decoder): input (N, C_in, H, W) or
    (C_in, H, W), weight (C_in, C_out / groups, kH, kW), bias (C_out,). Each input pixel adds its
    channels times the weight into a kH x kW window of the output, windows `stride` apart. The output
    is (H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1 high (likewise wide):
    padding is cut off its border, output_padding (less than stride or dilation) added at the bottom
    and right. Computed as col2im of the weight times the input (tinyattn.ops.ConvolutionTranspose).
    """
    return _convolution_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding,
                                  groups, dilation)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """conv_transpose2d along one dim: input (N, C_in, L) or (C_in, L), weight (C_in, C_out / groups, k);
    each argument one int (or a 1-tuple)."""
    return _convolution_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding,
                                  groups, dilation)


def _convolution_transpose(who, dims, input, weight, bias, stride, padding, output_padding, groups, dilation):
    tensor_argument(input, who)
    tensor_argument(weight, who, "weight")
    if bias is not None:
        tensor_argument(bias, who, "bias")
    stride, padding = _ints(stride, "stride", who, dims), _ints(padding, "padding", who, dims)
    output_padding = _ints(output_padding, "output_padding", who, dims)
    dilation = _ints(dilation, "dilation", who, dims)
    if weight.ndim != dims + 2:
        raise ShapeError(f"{who}: the weight must be {dims + 2}-D (in_channels, out_channels / groups, "
                         f"{_KERNEL[dims]}), got shape {list(weight.shape)}")
    if input.ndim == dims + 1:  # one sample without a batch dim
        return _convolution_transpose(who, dims, input.unsqueeze(0), weight, bias, stride, padding, output_padding,
                                      groups, dilation).squeeze(0)
    if input.ndim != dims + 2:
        raise ShapeError(f"{who}: expected a {dims + 1}-D (C_in, {_SPATIAL[dims]}) or {dims + 2}-D "
                         f"(N, C_in, {_SPATIAL[dims]}) input, got shape {list(input.shape)}")
    _floating(who, input, weight, bias)
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{who}: groups must be a positive integer, got {groups!r}")
    if min(stride) < 1 or min(dilation) < 1:
        raise ValueError(f"{who}: stride and dilation must be positive, got stride={stride}, dilation={dilation}")
    if min(padding) < 0:
        raise ValueError(f"{who}: padding must be >= 0, got {padding}")
    if any(o < 0 or o >= max(s, d) for o, s, d in zip(output_padding, stride, dilation)):
        raise ValueError(f"{who}: output_padding must be >= 0 and smaller than either stride or dilation, got "
                         f"output_padding={output_padding}, stride={stride}, dilation={dilation}")
    in_channels, group_out, *kernel = weight.shape
    if input.shape[1] != in_channels or in_channels % groups:
        raise ShapeError(f"{who}: a weight of shape {list(weight.shape)} expects {in_channels} input channels "
                         f"(its dim 0), got {input.shape[1]} (input shape {list(input.shape)})"
                         + (f", and in_channels {in_channels} must be divisible by groups ({groups})"
                            if in_channels % groups else ""))
    if min(kernel) < 1:
        raise ShapeError(f"{who}: the weight's kernel dims must be 1 or more, got weight shape {list(weight.shape)}")
    if bias is not None and tuple(bias.shape) != (group_out * groups,):
        raise ShapeError(f"{who}: the bias must have shape [{group_out * groups}] (one per output channel: "
                         f"weight.shape[1] * groups), got {list(bias.shape)}")
    out_size = tuple((n - 1) * s - 2 * p + d * (k - 1) + o + 1 for n, s, p, d, k, o in
                     zip(input.shape[2:], stride, padding, dilation, kernel, output_padding))
    if min(out_size) < 0:
        raise ShapeError(f"{who}: the output would be {' x '.join(map(str, out_size))} (input shape "
                         f"{list(input.shape)}, kernel_size {tuple(kernel)}, stride {stride}, padding {padding}): "
                         f"use less padding")
    # cut off the full output: padding at the top, and at the bottom what output_padding does not take back
    pads = tuple((p, max(p - o, 0)) for p, o in zip(padding, output_padding))
    if dims == 1:
        stride, dilation, pads, out_size = (1,) + stride, (1,) + dilation, ((0, 0),) + pads, (1,) + out_size
    return ConvolutionTranspose.apply(input, weight, bias, stride, pads, dilation, groups, out_size)


# ---------------------------------------------------------------------------------------------
# pooling


_POOL_INPUT = {1: "a 2-D (C, L) or 3-D (N, C, L)", 2: "a 3-D (C, H, W) or 4-D (N, C, H, W)"}


def _pool_arguments(who, dims, input, kernel_size, stride, padding, dilation, ceil_mode):
    """The checked kernel, stride, padding and dilation as (rows, columns) pairs, the output's
    (out_h, out_w) and the extra rows and columns where ceil_mode lets the last window hang over the
    edge. A 1-D pool's input is a row of height 1 (dims=1)."""
    tensor_argument(input, who)
    kernel = _ints(kernel_size, "kernel_size", who, dims)
    # stride=None (or an empty list, PyTorch's other spelling) means stride = kernel_size
    stride = kernel if stride is None or (isinstance(stride, (tuple, list)) and not stride) else \
        _ints(stride, "stride", who, dims)
    padding, dilation = _ints(padding, "padding", who, dims), _ints(dilation, "dilation", who, dims)
    if input.ndim not in (dims + 1, dims + 2):
        raise ShapeError(f"{who}: expected {_POOL_INPUT[dims]} input, got shape {list(input.shape)}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"{who} needs a floating point input, got {input.dtype}: use input.float()")
    if min(kernel) < 1 or min(stride) < 1 or min(dilation) < 1:
        raise ValueError(f"{who}: kernel_size, stride and dilation must be positive, got kernel_size={kernel}, "
                         f"stride={stride}, dilation={dilation}")
    if any(p < 0 or p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(f"{who}: padding must be >= 0 and at most half the kernel size, got padding={padding} "
                         f"for kernel_size={kernel}")
    if 0 in input.shape[-dims - 1:]:
        raise ShapeError(f"{who}: expected channels{' and a length' if dims == 1 else ', height and width'} of "
                         f"size 1 or more, got shape {list(input.shape)}")
    sizes = tuple(input.shape[-dims:])
    out_size = tuple(output_size(n, k, s, p, d, ceil_mode)
                     for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation))
    if min(out_size) < 1:
        what = f"{sizes[0]}-long row" if dims == 1 else f"{sizes[0]} x {sizes[1]} image"
        raise ShapeError(f"{who}: the input's {what} (with padding {padding}) is smaller than one window "
                         f"(kernel_size {kernel}, dilation {dilation}): use a smaller kernel or pad the input")
    extra = tuple(max(0, (o - 1) * s + d * (k - 1) + 1 - (n + 2 * p))
                  for n, k, s, p, d, o in zip(sizes, kernel, stride, padding, dilation, out_size))
    if dims == 1:
        return (1,) + kernel, (1,) + stride, (0,) + padding, (1,) + dilation, (1,) + out_size, (0,) + extra
    return kernel, stride, padding, dilation, out_size, extra


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum of each kernel_size window of input (N, C, H, W) or (C, H, W), windows `stride`
    apart (default: kernel_size, windows side by side), padding with -inf (at most half the kernel).
    ceil_mode: round the output size up (the last window may hang over the edge). return_indices:
    also return where each maximum is, as a flat index into the H x W image."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """max_pool2d's windows along the last dim of input (N, C, L) or (C, L): computed, as PyTorch does,
    as max_pool2d over rows of height 1 (its grad_fn is SqueezeBackward1). F.max_pool1d(x, x.shape[2])
    is the max over time of a text CNN."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _max_pool(who, dims, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    kernel, stride, padding, dilation, out_size, extra = _pool_arguments(
        who, dims, input, kernel_size, stride, padding, dilation, ceil_mode)
    pads = ((padding[0], padding[0] + extra[0]), (padding[1], padding[1] + extra[1]))
    if dims == 2:
        return MaxPool2DWithIndices.apply(input, kernel, stride, pads, dilation, out_size, bool(return_indices))
    result = MaxPool2DWithIndices.apply(input.unsqueeze(-2), kernel, stride, pads, dilation, out_size,
                                        bool(return_indices))
    return tuple(r.squeeze(-2) for r in result) if return_indices else result.squeeze(-2)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean of each kernel_size window of input (N, C, H, W) or (C, H, W), windows `stride`
    apart (default: kernel_size), zero-padded (at most half the kernel). count_include_pad: divide
    by the window's size with the padding (True) or by its part inside the input; divisor_override:
    divide every window's sum by this number instead. ceil_mode: round the output size up."""
    kernel, stride, padding, _, out_size, extra = _pool_arguments(
        "avg_pool2d", 2, input, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and (isinstance(divisor_override, bool) or not isinstance(divisor_override, int)
                                         or divisor_override == 0):
        raise ValueError(f"avg_pool2d: divisor_override must be a nonzero int or None, got {divisor_override!r}")
    return AvgPool2D.apply(input, kernel, stride, padding, extra, out_size, bool(count_include_pad),
                           divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """avg_pool2d's windows along the last dim of input (N, C, L) or (C, L), computed as avg_pool2d
    over rows of height 1 (as PyTorch)."""
    kernel, stride, padding, _, out_size, extra = _pool_arguments(
        "avg_pool1d", 1, input, kernel_size, stride, padding, 1, ceil_mode)
    return AvgPool2D.apply(input.unsqueeze(-2), kernel, stride, padding, extra, out_size, bool(count_include_pad),
                           None).squeeze(-2)


def adaptive_avg_pool2d(input, output_size):
    """Average input (N, C, H, W) or (C, H, W) into an output_size = (out_h, out_w) image (an int for
    a square; None keeps that size of the input): output row i averages input rows floor(i * H / out_h)
    to ceil((i + 1) * H / out_h) - 1, and likewise for columns. output_size=1 is the global mean."""
    return _adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool1d(input, output_size):
    """Average the last dim of input (N, C, L) or (C, L) into output_size positions (an int), with
    adaptive_avg_pool2d's windows, over rows of height 1 (as PyTorch)."""
    return _adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size)


def _adaptive_avg_pool(who, dims, input, output_size):
    tensor_argument(input, who)
    if input.ndim not in (dims + 1, dims + 2):
        raise ShapeError(f"{who}: expected {_POOL_INPUT[dims]} input, got shape {list(input.shape)}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"{who} needs a floating point input, got {input.dtype}: use input.float()")
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * dims
    if len(sizes) != dims or any(s is not None and (isinstance(s, bool) or not isinstance(s, int) or s < 0)
                                 for s in sizes) or (dims == 1 and sizes[0] is None):
        shape = "an int >= 0" if dims == 1 else "an int or a pair of ints >= 0 (or None)"
        raise TypeError(f"{who}: output_size must be {shape}, got {output_size!r}")
    if 0 in input.shape[-dims:]:
        raise ShapeError(f"{who}: expected {'a length' if dims == 1 else 'height and width'} of size 1 or more, "
                         f"got shape {list(input.shape)}")
    out_size = tuple(n if s is None else s for s, n in zip(sizes, input.shape[-dims:]))
    if dims == 2:
        return AdaptiveAvgPool2D.apply(input, out_size)
    return AdaptiveAvgPool2D.apply(input.unsqueeze(-2), (1,) + out_size).squeeze(-2)
