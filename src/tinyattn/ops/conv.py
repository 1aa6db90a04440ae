"""Convolution and pooling over images: each op's forward and backward side by side, on arrays.

One idea serves them all: im2col ("image to columns"). A 2-D convolution slides a kh x kw window
over the (padded) image, and each position of the window makes one output pixel. Copy the
numbers under every window position into one column, and the whole convolution is ONE matrix
product of the weights with those columns:

    cols[(c, i, j), (n, y, x)] = padded[n, c, y * stride + i * dilation, x * stride + j * dilation]
    out[n, o, y, x] = bias[o] + sum over (c, i, j) of weight[o, c, i, j] * cols[(c, i, j), (n, y, x)]

How the columns are built (`windows`): for a fixed kernel offset (i, j), the (i, j) elements of
all windows form a strided slice of the image, `padded[..., i*d : : stride, j*d : : stride]` cut
to the output's size. So kh * kw slices, each a view (no copy), stacked along a new axis, give all
the windows at once. (NumPy's `sliding_window_view` makes the same windows as one view; the slices
are plain indexing, which CuPy and every array library has, and they show the backward at once.)

The backward of copying is adding back (`add_windows`, col2im): the gradient of each window element
goes to the pixel it was copied from, `grad_padded[..., slice_ij] += grad_windows[ij]` for each
offset; a pixel under several windows (stride < kernel) gets the sum of its shares.

A transposed convolution (`ConvolutionTranspose`, the upsampling layer of DCGAN and U-Net) is a
convolution's backward to its input run forward: col2im of the weight times the input. Its backward
is a convolution.

Pooling takes the same windows and reduces each instead of multiplying it with a weight: the max
(the gradient goes to the element that was largest) or the mean (each element gets an equal share).
The adaptive mean averages bands of rows, then bands of columns.

A 1-D convolution is the 2-D one over an image of height 1. Shapes are (N, C, H, W); pooling takes
(C, H, W) too (any leading dims).
"""

import math

from .. import backend
from .base import Op


def output_size(size, kernel, stride, padding, dilation=1, ceil_mode=False):
    """How many window positions fit along one axis: floor((size + 2 * padding - reach) / stride) + 1,
    with reach = dilation * (kernel - 1) + 1. ceil_mode rounds up instead, as PyTorch's pooling does,
    but never lets the last window start beyond the input and its left padding."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    count = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (count - 1) * stride >= size + padding:
        count -= 1
    return count


def window_slices(kernel, stride, dilation, out_size):
    """For each kernel offset (i, j), row by row: the (rows, cols) slices of the padded image that hold
    the (i, j) element of every window (out_size[0] x out_size[1] of them)."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dilation, out_size

    def every(step, count, start):  # count elements, step apart (none for count 0: no negative stop)
        return slice(start, start + step * (count - 1) + 1 if count else start, step)

    return [(every(sh, oh, i * dh), every(sw, ow, j * dw)) for i in range(kh) for j in range(kw)]


def windows(xp, padded, slices, axis):
    """im2col: every window of `padded` (..., H, W), stacked along a new axis `axis` by kernel offset."""
    return xp.stack([padded[..., rows, cols] for rows, cols in slices], axis=axis)


def add_windows(xp, pieces, padded_shape, slices):
    """The backward of `windows`: an array of `padded_shape` where each piece (the gradient of one
    kernel offset's elements) is added to the pixels it was copied from."""
    total = xp.zeros(padded_shape, dtype=pieces[0].dtype, **backend.creation_kwargs(xp))
    for piece, (rows, cols) in zip(pieces, slices):
        total[..., rows, cols] += piece
    return total


def pad_image(xp, x, pads, value):
    """x (..., H, W) with pads = ((top, bottom), (left, right)) rows and columns of `value` around it."""
    (top, bottom), (left, right) = pads
    if not (top or bottom or left or right):
        return x
    *lead, height, width = x.shape
    padded = xp.full((*lead, top + height + bottom, left + width + right), value, dtype=x.dtype,
                     **backend.creation_kwargs(xp))
    padded[..., top:top + height, left:left + width] = x
    return padded


def crop(padded, pads, size):
    """The inverse of pad_image: the inner (H, W) = size part of `padded`."""
    (top, _), (left, _) = pads
    return padded[..., top:top + size[0], left:left + size[1]]


# ---------------------------------------------------------------------------------------------
# convolution


def im2col(xp, x, pads, slices, groups):
    """x (N, C, H, W) as the columns of its windows, (groups, C / groups * kh * kw, N * out_h * out_w):
    one row per (channel, kernel offset), one column per output pixel (n, y, x). Channels go first,
    (C, N, H, W), so that the stacked windows (C, kh * kw, N, out_h, out_w) are the columns already."""
    images = pad_image(xp, xp.permute_dims(x, (1, 0, 2, 3)), pads, 0)
    stacked = windows(xp, images, slices, axis=1)
    channels, n, out_h, out_w = stacked.shape[0], *stacked.shape[2:]
    return xp.reshape(stacked, (groups, channels // groups * len(slices), n * out_h * out_w))


def col2im(xp, cols, image_shape, pads, slices, out_size):
    """The backward of im2col: an image of image_shape (N, C, H, W) where each element of the columns
    is added to the pixel it was copied from (a pixel in several windows gets the sum)."""
    n, channels, height, width = image_shape
    (top, bottom), (left, right) = pads
    stacked = xp.reshape(cols, (channels, len(slices), n) + tuple(out_size))
    padded_shape = (channels, n, top + height + bottom, left + width + right)
    images = add_windows(xp, [stacked[:, k, ...] for k in range(len(slices))], padded_shape, slices)
    return backend.contiguous(xp.permute_dims(crop(images, pads, (height, width)), (1, 0, 2, 3)))


def as_rows(xp, y, groups):
    """y (N, O, h, w) laid out as the result of the product: (groups, O / groups, N * h * w)."""
    n, channels, height, width = y.shape
    rows = xp.permute_dims(xp.reshape(y, (n, channels, height * width)), (1, 0, 2))
    return xp.reshape(rows, (groups, channels // groups, n * height * width))


def from_rows(xp, rows, n, size):
    """The inverse of as_rows: (groups, O / groups, N * h * w) as (N, O, h, w)."""
    out = xp.reshape(rows, (rows.shape[0] * rows.shape[1], n) + tuple(size))
    return backend.contiguous(xp.permute_dims(out, (1, 0, 2, 3)))


class Convolution(Op):
    """conv2d (x (N, C, H, W), weight (O, C / groups, kh, kw)) and conv1d (x (N, C, L), weight
    (O, C / groups, k)): the weight, flattened to (O, C * kh * kw), times im2col's columns, one matrix
    product per group (see the module's docstring). Backward: the output's gradient times the
    columns is the weight's; the weight times it gives the columns' gradient, which col2im adds up.

    pads: ((top, bottom), (left, right)); stride, dilation: (rows, cols). groups splits the channels
    into `groups` independent convolutions: output channels of group g see input channels of group g.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, stride, pads, dilation, groups):
        xp = ctx.xp
        ctx.in_shape, ctx.weight_shape = x.shape, weight.shape
        inputs = (x, weight)  # what PyTorch saves: the columns and filters stand for them
        if x.ndim == 3:  # conv1d: a row of pixels is an image of height 1
            x, weight = x[:, :, None, :], weight[:, :, None, :]
        (n, _, height, width), (out_channels, group_channels, kh, kw) = x.shape, weight.shape
        (top, bottom), (left, right) = pads
        out_size = (output_size(top + height + bottom, kh, stride[0], 0, dilation[0]),
                    output_size(left + width + right, kw, stride[1], 0, dilation[1]))
        slices = window_slices((kh, kw), stride, dilation, out_size)
        cols = im2col(xp, x, pads, slices, groups)
        filters = xp.reshape(weight, (groups, out_channels // groups, group_channels * kh * kw))
        out = from_rows(xp, backend.matmul(filters, cols), n, out_size)  # the one product
        if bias is not None:
            out = out + xp.reshape(bias, (1, out_channels, 1, 1))
        needs_x, needs_weight = ctx.needs_input_grad[:2]
        ctx.save_for_backward(filters if needs_x else None, cols if needs_weight else None, computed_from=inputs)
        ctx.slices, ctx.pads, ctx.groups, ctx.x_shape, ctx.out_size = slices, pads, groups, x.shape, out_size
        return xp.reshape(out, (n, out_channels, out_size[1])) if len(ctx.in_shape) == 3 else out

    @staticmethod
    def backward(ctx, grad):
        filters, cols = ctx.saved_tensors
        xp = ctx.xp
        n, out_channels = grad.shape[:2]
        grad_rows = as_rows(xp, xp.reshape(grad, (n, out_channels) + ctx.out_size), ctx.groups)
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:  # back through the product, then col2im
            grad_cols = backend.matmul(backend.matrix_transpose(filters), grad_rows)
            gx = xp.reshape(col2im(xp, grad_cols, ctx.x_shape, ctx.pads, ctx.slices, ctx.out_size), ctx.in_shape)
        if ctx.needs_input_grad[1]:
            gw = xp.reshape(backend.matmul(grad_rows, backend.matrix_transpose(cols)), ctx.weight_shape)
        if ctx.needs_input_grad[2]:
            gb = backend.sum_along(xp.reshape(grad_rows, (out_channels, n * math.prod(ctx.out_size))), (1,))
        return gx, gw, gb, None, None, None, None


class ConvolutionTranspose(Op):
    """conv_transpose2d (x (N, C_in, h, w), weight (C_in, C_out / groups, kh, kw)) and conv_transpose1d:
    Convolution's backward to its input, run forward. Each input pixel spreads its channels, times the
    weight, over a window of the output: the weight (transposed) times the input gives columns, which
    col2im adds into the output image. Backward: a convolution. The output's gradient, cut into
    im2col's columns, times the input is the weight's gradient; the weight times them is the input's.

    out_size: the output's (H, W) (output_padding included); pads: ((top, bottom), (left, right)), the
    rows and columns cut off the full output (the windows' reach); stride, dilation: (rows, cols).
    """

    @staticmethod
    def forward(ctx, x, weight, bias, stride, pads, dilation, groups, out_size):
        xp = ctx.xp
        ctx.in_shape, ctx.weight_shape = x.shape, weight.shape
        inputs = (x, weight)  # what PyTorch saves: the rows and filters stand for them
        ctx.name_hint = "Convolution"  # PyTorch's one name for both
        if x.ndim == 3:  # conv_transpose1d: rows of height 1
            x, weight = x[:, :, None, :], weight[:, :, None, :]
        (n, in_channels, height, width), (_, group_out, kh, kw) = x.shape, weight.shape
        slices = window_slices((kh, kw), stride, dilation, (height, width))  # one window per input pixel
        filters = xp.reshape(weight, (groups, in_channels // groups, group_out * kh * kw))
        x_rows = as_rows(xp, x, groups)
        cols = backend.matmul(backend.matrix_transpose(filters), x_rows)
        out = col2im(xp, cols, (n, group_out * groups) + tuple(out_size), pads, slices, (height, width))
        if bias is not None:
            out = out + xp.reshape(bias, (1, group_out * groups, 1, 1))
        needs_x, needs_weight = ctx.needs_input_grad[:2]
        ctx.save_for_backward(filters if needs_x else None, x_rows if needs_weight else None, computed_from=inputs)
        ctx.slices, ctx.pads, ctx.groups, ctx.in_size = slices, pads, groups, (height, width)
        return xp.reshape(out, out.shape[:2] + (out.shape[3],)) if len(ctx.in_shape) == 3 else out

    @staticmethod
    def backward(ctx, grad):
        filters, x_rows = ctx.saved_tensors
        xp = ctx.xp
        if grad.ndim == 3:
            grad = grad[:, :, None, :]
        needs_x, needs_weight, needs_bias = ctx.needs_input_grad[:3]
        grad_cols = im2col(xp, grad, ctx.pads, ctx.slices, ctx.groups) if needs_x or needs_weight else None
        gx = gw = gb = None
        if needs_x:
            gx = xp.reshape(from_rows(xp, backend.matmul(filters, grad_cols), grad.shape[0], ctx.in_size),
                            ctx.in_shape)
        if needs_weight:
            gw = xp.reshape(backend.matmul(x_rows, backend.matrix_transpose(grad_cols)), ctx.weight_shape)
        if needs_bias:
            gb = backend.sum_along(grad, (0, 2, 3))
        return gx, gw, gb, None, None, None, None, None


# ---------------------------------------------------------------------------------------------
# pooling


class MaxPool2DWithIndices(Op):
    """The largest element of each window of x (..., H, W); the gradient goes to that element (the
    first one, row by row, where several tie, as in PyTorch). Padding is -inf, so it never wins.

    pads: ((top, bottom), (left, right)), the bottom and right ones grown where ceil_mode lets the last
    window hang over the edge. return_indices: also return where each maximum is, as a flat index
    into the unpadded H x W image (PyTorch's indices, which MaxUnpool2d reads).
    """

    @staticmethod
    def forward(ctx, x, kernel, stride, pads, dilation, out_size, return_indices):
        xp = ctx.xp
        padded = pad_image(xp, x, pads, -math.inf)
        slices = window_slices(kernel, stride, dilation, out_size)
        stacked = windows(xp, padded, slices, axis=-3)  # (..., kh * kw, out_h, out_w)
        best = xp.argmax(stacked, axis=-3)  # the kernel offset of each window's maximum
        ctx.slices, ctx.pads, ctx.padded_shape, ctx.image_size = slices, pads, padded.shape, x.shape[-2:]
        out = xp.max(stacked, axis=-3)
        if not return_indices:
            ctx.save_for_backward(best, computed_from=(x,))  # PyTorch saves x (and its indices)
            return out
        # offset k is kernel row k // kw and column k % kw; its pixel in the unpadded image:
        (top, _), (left, _) = pads
        first_row = xp.reshape(xp.arange(out_size[0], **backend.creation_kwargs(xp)), (-1, 1)) * stride[0] - top
        first_col = xp.arange(out_size[1], **backend.creation_kwargs(xp)) * stride[1] - left
        rows = first_row + (best // kernel[1]) * dilation[0]
        cols = first_col + (best % kernel[1]) * dilation[1]
        indices = xp.astype(rows * x.shape[-1] + cols, xp.int64)
        ctx.save_for_backward(best, computed_from=(x, indices))  # x and the indices output, as PyTorch's
        return out, indices

    @staticmethod
    def backward(ctx, grad, *_indices_grad):
        (best,) = ctx.saved_tensors
        xp = ctx.xp
        pieces = [xp.where(best == k, grad, 0) for k in range(len(ctx.slices))]
        grad_padded = add_windows(xp, pieces, ctx.padded_shape, ctx.slices)
        return crop(grad_padded, ctx.pads, ctx.image_size), None, None, None, None, None, None


def pool_counts(xp, size, kernel, stride, padding, out_size, include_padding):
    """For each window along one axis, how many positions avg_pool2d divides by: the window's part
    inside the padded input (count_include_pad=True), or inside the input itself; as PyTorch counts."""
    starts = xp.arange(out_size, **backend.creation_kwargs(xp)) * stride - padding
    ends = xp.minimum(starts + kernel, xp.full_like(starts, size + padding))
    if include_padding:
        return ends - starts
    return xp.minimum(ends, xp.full_like(ends, size)) - xp.maximum(starts, xp.zeros_like(starts))


class AvgPool2D(Op):
    """The mean of each window of x (..., H, W): the window's sum over a divisor, which counts the
    padding (count_include_pad=True) or not, or is divisor_override. Backward: each element of a window
    gets the window's gradient / divisor (added up where windows overlap).

    padding: (rows, cols), PyTorch's symmetric padding; extra: the rows and columns of zeros added
    at the bottom and right where ceil_mode lets the last window hang over the edge.
    """

    @staticmethod
    def forward(ctx, x, kernel, stride, padding, extra, out_size, count_include_pad, divisor_override):
        xp = ctx.xp
        pads = ((padding[0], padding[0] + extra[0]), (padding[1], padding[1] + extra[1]))
        padded = pad_image(xp, x, pads, 0)
        slices = window_slices(kernel, stride, (1, 1), out_size)
        total = padded[..., slices[0][0], slices[0][1]]
        for rows, cols in slices[1:]:  # a window's sum: the sum of its elements, offset by offset
            total = total + padded[..., rows, cols]
        if divisor_override:
            divisor = divisor_override
        else:
            rows, cols = (pool_counts(xp, x.shape[axis], kernel[i], stride[i], padding[i], out_size[i],
                                      count_include_pad) for i, axis in enumerate((-2, -1)))
            divisor = xp.astype(xp.reshape(rows, (-1, 1)) * cols, x.dtype)
        ctx.save_for_backward(divisor, computed_from=(x,))  # PyTorch saves x (for its shape)
        ctx.slices, ctx.pads = slices, pads
        ctx.padded_shape, ctx.image_size = padded.shape, x.shape[-2:]
        return total / divisor

    @staticmethod
    def backward(ctx, grad):
        (divisor,) = ctx.saved_tensors
        share = grad / divisor
        grad_padded = add_windows(ctx.xp, [share] * len(ctx.slices), ctx.padded_shape, ctx.slices)
        return crop(grad_padded, ctx.pads, ctx.image_size), None, None, None, None, None, None, None


def adaptive_windows(size, out_size):
    """PyTorch's adaptive windows along one axis: output i covers input positions floor(i * size /
    out_size) to ceil((i + 1) * size / out_size) - 1 (neighbours may overlap)."""
    return [((i * size) // out_size, -(-((i + 1) * size) // out_size)) for i in range(out_size)]


class AdaptiveAvgPool2D(Op):
    """x (..., H, W) averaged into out_size = (out_h, out_w) windows of adaptive_windows' bounds: first
    each band of rows is averaged, then each band of columns of the result. (A product with averaging
    matrices would be shorter, but it multiplies the elements outside a window by 0, and an inf there
    would make NaN.) Backward: each band's gradient / its size, added back over the band, columns first."""

    @staticmethod
    def forward(ctx, x, out_size):
        xp = ctx.xp
        ctx.rows, ctx.cols = adaptive_windows(x.shape[-2], out_size[0]), adaptive_windows(x.shape[-1], out_size[1])
        ctx.in_shape = x.shape
        ctx.save_for_backward(computed_from=(x,))  # PyTorch saves x (for its shape): x changed in place raises
        if out_size == (1, 1):
            ctx.name_hint = "MeanBackward1"  # PyTorch computes the global average as a mean, and says so
        if 0 in out_size:  # nothing to average
            return xp.zeros(x.shape[:-2] + tuple(out_size), dtype=x.dtype, **backend.creation_kwargs(xp))
        by_rows = xp.concat([xp.mean(x[..., start:end, :], axis=-2, keepdims=True) for start, end in ctx.rows],
                            axis=-2)
        return xp.concat([xp.mean(by_rows[..., start:end], axis=-1, keepdims=True) for start, end in ctx.cols],
                         axis=-1)

    @staticmethod
    def backward(ctx, grad):
        xp = ctx.xp
        kwargs = backend.creation_kwargs(xp)
        grad_by_rows = xp.zeros(ctx.in_shape[:-2] + (len(ctx.rows), ctx.in_shape[-1]), dtype=grad.dtype, **kwargs)
        for j, (start, end) in enumerate(ctx.cols):
            grad_by_rows[..., start:end] += grad[..., j:j + 1] / (end - start)
        gx = xp.zeros(ctx.in_shape, dtype=grad.dtype, **kwargs)
        for i, (start, end) in enumerate(ctx.rows):
            gx[..., start:end, :] += grad_by_rows[..., i:i + 1, :] / (end - start)
        return gx, None
