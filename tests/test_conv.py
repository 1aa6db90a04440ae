"""Convolutions and pooling in 2-D: Conv2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, Dropout2d and
their functional forms (tinyattn/ops/conv.py, tinyattn/nn/functional_conv.py).

- forward against a plain NumPy reference written from the definitions (loops over output pixels,
  PyTorch's window bounds), on NumPy and on array_api_strict, shapes and options drawn by Hypothesis;
- gradients against finite differences in float64 (Hypothesis, both backends);
- against PyTorch: forward and gradients for several stride / padding / dilation / groups /
  ceil_mode / count_include_pad combinations, seeded initialisation bit for bit, Dropout2d's masks
  from the same stream, reprs, and a few SGD steps of a small CNN;
- clear errors on bad input.
"""

import contextlib
import io
import math
import pathlib
import re
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import tinyattn
from tinyattn import nn
from tinyattn.errors import ShapeError
from tinyattn.nn import functional as F

from test_nn_more import assert_same, backward_both, host, pair
from test_op_gradients import arrays, check, leaf, property_test, well_separated

# ---------------------------------------------------------------------------------------------
# references, written from the definitions


def conv2d_reference(x, w, b, stride, padding, dilation, groups):
    """out[n, o, y, x] = b[o] + sum of w[o] * the window of the o's group's channels, one pixel at a time."""
    (sh, sw), (dh, dw) = stride, dilation
    (top, bottom), (left, right) = padding
    x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, channels, height, width = x.shape
    out_channels, group_channels, kh, kw = w.shape
    oh, ow = (height - dh * (kh - 1) - 1) // sh + 1, (width - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, out_channels, oh, ow))
    for o in range(out_channels):
        g = o // (out_channels // groups)
        for y in range(oh):
            for z in range(ow):
                window = x[:, g * group_channels:(g + 1) * group_channels,
                           y * sh:y * sh + dh * (kh - 1) + 1:dh, z * sw:z * sw + dw * (kw - 1) + 1:dw]
                out[:, o, y, z] = (window * w[o]).sum(axis=(1, 2, 3)) + (0 if b is None else b[o])
    return out


def pooled_size(size, kernel, stride, padding, dilation, ceil_mode):
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (math.ceil(span / stride) if ceil_mode else span // stride) + 1
    return out - 1 if ceil_mode and (out - 1) * stride >= size + padding else out


def pool_reference(x, kind, kernel, stride, padding, dilation=(1, 1), ceil_mode=False, count_include_pad=True,
                   divisor_override=None):
    """PyTorch's pooling loops: each window's positions inside the input (max), or its sum over the
    divisor PyTorch's kernel computes (avg)."""
    *lead, height, width = x.shape
    oh = pooled_size(height, kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    ow = pooled_size(width, kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    out = np.zeros((*lead, oh, ow))
    for y in range(oh):
        for z in range(ow):
            h0, w0 = y * stride[0] - padding[0], z * stride[1] - padding[1]
            if kind == "max":
                rows = [h for h in range(h0, h0 + dilation[0] * (kernel[0] - 1) + 1, dilation[0]) if 0 <= h < height]
                cols = [c for c in range(w0, w0 + dilation[1] * (kernel[1] - 1) + 1, dilation[1]) if 0 <= c < width]
                inside = x[..., rows, :][..., cols]  # a window may hold only padding: -inf, as PyTorch
                out[..., y, z] = inside.max(axis=(-2, -1)) if inside.size else -np.inf
            else:
                h1, w1 = min(h0 + kernel[0], height + padding[0]), min(w0 + kernel[1], width + padding[1])
                pool_size = (h1 - h0) * (w1 - w0)
                h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, height), min(w1, width)
                total = x[..., h0:h1, w0:w1].sum(axis=(-2, -1))
                divisor = divisor_override or (pool_size if count_include_pad else (h1 - h0) * (w1 - w0))
                out[..., y, z] = total / divisor
    return out


def adaptive_reference(x, out_size):
    *lead, height, width = x.shape
    out = np.zeros((*lead, *out_size))
    for y in range(out_size[0]):
        h0, h1 = (y * height) // out_size[0], -(-((y + 1) * height) // out_size[0])
        for z in range(out_size[1]):
            w0, w1 = (z * width) // out_size[1], -(-((z + 1) * width) // out_size[1])
            out[..., y, z] = x[..., h0:h1, w0:w1].mean(axis=(-2, -1))
    return out


# ---------------------------------------------------------------------------------------------
# drawn convolutions and pools


@st.composite
def convolutions(draw, max_side=6):
    """(x shape, weight shape, stride, padding as F takes it, padding as ((top, bottom), (left, right)),
    dilation, groups), with the padded input at least as large as the kernel's reach."""
    groups = draw(st.integers(1, 2), label="groups")
    in_channels, out_channels = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel = draw(st.tuples(st.integers(1, 3), st.integers(1, 3)), label="kernel")
    stride = draw(st.tuples(st.integers(1, 2), st.integers(1, 2)), label="stride")
    dilation = draw(st.tuples(st.integers(1, 2), st.integers(1, 2)), label="dilation")
    choices = ["int", "pair", "valid"] + (["same"] if stride == (1, 1) else [])
    how = draw(st.sampled_from(choices), label="padding kind")
    reach = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if how == "same":
        padding, pads = "same", tuple(((r - 1) // 2, r - 1 - (r - 1) // 2) for r in reach)
    elif how == "valid":
        padding, pads = "valid", ((0, 0), (0, 0))
    else:
        pair_ = draw(st.tuples(st.integers(0, 2), st.integers(0, 2)), label="padding")
        padding = pair_ if how == "pair" else pair_[0]
        pads = tuple((p, p) for p in (pair_ if how == "pair" else (pair_[0],) * 2))
    sizes = [draw(st.integers(max(1, r - sum(p)), max(r - sum(p), 1) + max_side - 3), label="size")
             for r, p in zip(reach, pads)]
    batch = draw(st.integers(1, 2), label="batch")
    return ((batch, in_channels, *sizes), (out_channels, in_channels // groups, *kernel), stride, padding, pads,
            dilation, groups)


@st.composite
def pools(draw, kind):
    """(x shape, kernel, stride, padding, dilation, ceil_mode): PyTorch's limits (padding at most half
    the kernel, at least one window)."""
    kernel = draw(st.tuples(st.integers(1, 3), st.integers(1, 3)), label="kernel")
    stride = draw(st.tuples(st.integers(1, 3), st.integers(1, 3)), label="stride")
    padding = tuple(draw(st.integers(0, k // 2), label="padding") for k in kernel)
    dilation = draw(st.tuples(st.integers(1, 2), st.integers(1, 2)), label="dilation") if kind == "max" else (1, 1)
    ceil_mode = draw(st.booleans(), label="ceil_mode")
    reach = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    sizes = [draw(st.integers(max(1, r - 2 * p), r + 3), label="size") for r, p in zip(reach, padding)]
    lead = draw(st.sampled_from([(1, 2), (2, 1), (2,)]), label="leading dims")  # (N, C) or (C,)
    return (*lead, *sizes), kernel, stride, padding, dilation, ceil_mode


def test_reference_pooled_sizes_are_pytorchs_formula():
    assert pooled_size(5, 2, 2, 0, 1, False) == 2
    assert pooled_size(5, 2, 2, 0, 1, True) == 3
    assert pooled_size(5, 2, 2, 1, 1, True) == 3  # a 4th window would start inside the right padding


# ---------------------------------------------------------------------------------------------
# forward against the references


@property_test
@given(data=st.data())
def test_conv2d_forward_matches_the_definition(xp_backend, data):
    x_shape, w_shape, stride, padding, pads, dilation, groups = data.draw(convolutions(), label="convolution")
    x, w = data.draw(arrays(x_shape), label="x"), data.draw(arrays(w_shape), label="weight")
    b = data.draw(arrays((w_shape[0],)) | st.none(), label="bias")
    out = F.conv2d(tinyattn.tensor(x), tinyattn.tensor(w), None if b is None else tinyattn.tensor(b), stride, padding,
                   dilation, groups)
    expected = conv2d_reference(x, w, b, stride, pads, dilation, groups)
    np.testing.assert_allclose(np.asarray(out.tolist()), expected, rtol=1e-10, atol=1e-10)


@property_test
@given(data=st.data())
def test_pools_forward_match_the_definitions(xp_backend, data):
    kind = data.draw(st.sampled_from(["max", "avg"]), label="kind")
    shape, kernel, stride, padding, dilation, ceil_mode = data.draw(pools(kind), label="pool")
    x = data.draw(arrays(shape), label="x")
    if kind == "max":
        out = F.max_pool2d(tinyattn.tensor(x), kernel, stride, padding, dilation, ceil_mode)
        expected = pool_reference(x, "max", kernel, stride, padding, dilation, ceil_mode)
    else:
        include = data.draw(st.booleans(), label="count_include_pad")
        override = data.draw(st.sampled_from([None, 3]), label="divisor_override")
        out = F.avg_pool2d(tinyattn.tensor(x), kernel, stride, padding, ceil_mode, include, override)
        expected = pool_reference(x, "avg", kernel, stride, padding, (1, 1), ceil_mode, include, override)
    np.testing.assert_allclose(np.asarray(out.tolist()), expected, rtol=1e-10, atol=1e-10)


@property_test
@given(data=st.data())
def test_adaptive_avg_pool2d_matches_the_definition(xp_backend, data):
    shape = data.draw(st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 7), st.integers(1, 7)))
    out_size = data.draw(st.tuples(st.integers(1, 8), st.integers(1, 8)), label="output_size")
    x = data.draw(arrays(shape), label="x")
    out = F.adaptive_avg_pool2d(tinyattn.tensor(x), out_size)
    np.testing.assert_allclose(np.asarray(out.tolist()), adaptive_reference(x, out_size), rtol=1e-10, atol=1e-12)


def test_max_pool2d_indices_point_at_the_maxima():
    x = tinyattn.tensor(np.random.default_rng(0).standard_normal((2, 3, 7, 6)))
    values, indices = F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True, return_indices=True)
    assert indices.dtype is tinyattn.int64 and indices.shape == values.shape
    flat = x.reshape(2, 3, 42)
    assert (flat.gather(2, indices.reshape(2, 3, -1)).reshape(values.shape) == values).all()


# ---------------------------------------------------------------------------------------------
# gradients against finite differences (float64, both backends)


@property_test
@given(data=st.data())
def test_conv2d_gradient(xp_backend, data):
    x_shape, w_shape, stride, padding, _, dilation, groups = data.draw(convolutions(max_side=4), label="convolution")
    x, w = data.draw(arrays(x_shape), label="x"), data.draw(arrays(w_shape), label="weight")
    b = data.draw(arrays((w_shape[0],)), label="bias")
    check(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups), leaf(x), leaf(w), leaf(b))


@property_test
@given(data=st.data())
def test_conv2d_gradient_without_bias_unbatched(xp_backend, data):
    x = data.draw(arrays((2, 4, 3)), label="x")
    w = data.draw(arrays((3, 2, 2, 2)), label="weight")
    check(lambda x, w: F.conv2d(x, w, None, 1, 1), leaf(x), leaf(w))


@property_test
@given(data=st.data())
def test_max_pool2d_gradient(xp_backend, data):
    shape, kernel, stride, padding, dilation, ceil_mode = data.draw(pools("max"), label="pool")
    x = data.draw(arrays(shape, unique=True), label="x")
    assume(well_separated(x))  # no ties inside a window, where the max has no derivative
    assume(np.isfinite(pool_reference(x, "max", kernel, stride, padding, dilation, ceil_mode)).all())
    check(lambda x: F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode), leaf(x))


@property_test
@given(data=st.data())
def test_avg_pool2d_gradient(xp_backend, data):
    shape, kernel, stride, padding, _, ceil_mode = data.draw(pools("avg"), label="pool")
    include, override = data.draw(st.booleans()), data.draw(st.sampled_from([None, 2]))
    x = data.draw(arrays(shape), label="x")
    check(lambda x: F.avg_pool2d(x, kernel, stride, padding, ceil_mode, include, override), leaf(x))


@property_test
@given(data=st.data())
def test_adaptive_avg_pool2d_gradient(xp_backend, data):
    shape = data.draw(st.tuples(st.integers(1, 2), st.integers(1, 5), st.integers(1, 5)), label="shape")
    out_size = data.draw(st.tuples(st.integers(1, 6), st.integers(1, 6)), label="output_size")
    x = data.draw(arrays(shape), label="x")
    check(lambda x: F.adaptive_avg_pool2d(x, out_size), leaf(x))


@property_test
@given(data=st.data())
def test_dropout2d_gradient(xp_backend, data):
    x = data.draw(arrays((2, 3, 2, 2)), label="x")
    p = data.draw(st.sampled_from([0.25, 0.5]), label="p")
    check(lambda x: F.dropout2d(x, p, training=True), leaf(x))  # the checker re-seeds: the mask is frozen


def test_a_small_cnn_gradient(xp_backend):
    tinyattn.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.Tanh(), nn.AvgPool2d(2), nn.Conv2d(2, 2, 2, groups=2),
                          nn.Dropout2d(0.5), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2, 3)).double()
    x = tinyattn.randn(2, 1, 5, 5, dtype=tinyattn.float64)
    params = list(model.parameters())
    assert tinyattn.gradcheck(lambda x, *params: model(x), (x.requires_grad_(), *params))


# ---------------------------------------------------------------------------------------------
# against PyTorch


CONV2D_CASES = [
    ((1, 6, 5), {}, (2, 1, 12, 12)),  # LeNet's first layer
    ((3, 4, 3), {"stride": 2, "padding": 1}, (2, 3, 9, 8)),
    ((4, 6, (3, 2)), {"stride": (2, 1), "padding": (2, 1), "dilation": (2, 1), "groups": 2}, (2, 4, 10, 9)),
    ((3, 2, 4), {"padding": "same"}, (3, 7, 6)),  # one image without a batch dim, an even kernel
    ((2, 4, 3), {"padding": "same", "dilation": 2, "bias": False}, (1, 2, 8, 8)),
    ((4, 4, 3), {"groups": 4, "padding": 1}, (2, 4, 5, 5)),  # depthwise
    ((2, 3, 1), {"padding": "valid", "stride": 3}, (1, 2, 7, 5)),
    ((3, 2, 3), {"padding": 2, "padding_mode": "reflect"}, (1, 3, 5, 6)),
    ((2, 2, 3), {"padding": (1, 2), "padding_mode": "circular"}, (1, 2, 4, 5)),
    ((2, 2, (2, 3)), {"padding": "same", "padding_mode": "replicate"}, (1, 2, 4, 5)),
]


@pytest.mark.parametrize("args, options, shape", CONV2D_CASES)
def test_conv2d_matches_pytorch(torch, args, options, shape):
    tinyattn.manual_seed(0)
    torch.manual_seed(0)
    ours, theirs = nn.Conv2d(*args, **options), torch.nn.Conv2d(*args, **options)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert_same(ours.weight, theirs.weight, rtol=0, atol=0)  # the same initial draws, bit for bit
    if ours.bias is not None:
        assert_same(ours.bias, theirs.bias, rtol=0, atol=0)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    xo, xt = pair(torch, x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's note on 'same' with an even kernel
        yo, yt = ours(xo), theirs(xt)
    assert yo.shape == tuple(yt.shape)
    assert_same(yo, yt, rtol=1e-5, atol=1e-5)
    backward_both(yo, yt)
    assert_same(xo.grad, xt.grad, rtol=1e-5, atol=1e-5)
    assert_same(ours.weight.grad, theirs.weight.grad, rtol=1e-4, atol=1e-4)
    if ours.bias is not None:
        assert_same(ours.bias.grad, theirs.bias.grad, rtol=1e-5, atol=1e-4)


CONV_TRANSPOSE_CASES = [
    ("ConvTranspose2d", (16, 8, 4), {"stride": 2, "padding": 1, "bias": False}, (2, 16, 4, 4), None),  # DCGAN's
    ("ConvTranspose2d", (4, 4, 2), {"stride": 2}, (2, 4, 3, 3), None),  # U-Net's up-convolution
    ("ConvTranspose2d", (3, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 3}, (2, 3, 5, 4), None),
    ("ConvTranspose2d", (3, 4, (2, 3)), {"stride": (2, 1), "dilation": 2}, (3, 5, 5), None),  # unbatched
    ("ConvTranspose2d", (3, 4, 3), {"stride": 2, "padding": 1}, (2, 3, 5, 5), (10, 10)),  # output_size picks
    ("ConvTranspose2d", (2, 3, 3), {"stride": 3, "output_padding": 2, "padding": 1}, (1, 2, 3, 3), None),
    ("ConvTranspose1d", (2, 4, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}, (2, 2, 6), None),
]


@pytest.mark.parametrize("name, args, options, shape, output_size", CONV_TRANSPOSE_CASES)
def test_conv_transpose_matches_pytorch(torch, name, args, options, shape, output_size):
    tinyattn.manual_seed(0)
    torch.manual_seed(0)
    ours, theirs = getattr(nn, name)(*args, **options), getattr(torch.nn, name)(*args, **options)
    assert repr(ours) == repr(theirs)
    assert_same(ours.weight, theirs.weight, rtol=0, atol=0)  # the same initial draws, bit for bit
    if ours.bias is not None:
        assert_same(ours.bias, theirs.bias, rtol=0, atol=0)
    x = np.random.default_rng(16).standard_normal(shape).astype(np.float32)
    xo, xt = pair(torch, x)
    yo, yt = ours(xo, output_size), theirs(xt, output_size)
    assert yo.shape == tuple(yt.shape)
    if len(shape) == 4:  # (PyTorch's 1-D and unbatched ones show the squeeze they are computed with)
        assert yo.grad_fn.name() == yt.grad_fn.name()
    assert_same(yo, yt, rtol=1e-5, atol=1e-5)
    backward_both(yo, yt)
    assert_same(xo.grad, xt.grad, rtol=1e-5, atol=1e-4)
    assert_same(ours.weight.grad, theirs.weight.grad, rtol=1e-4, atol=1e-4)
    if ours.bias is not None:
        assert_same(ours.bias.grad, theirs.bias.grad, rtol=1e-5, atol=1e-4)


@st.composite
def transposed_convolutions(draw):
    """(x shape, weight shape, stride, padding, output_padding, dilation, groups) with an output of at
    least one pixel."""
    groups = draw(st.integers(1, 2), label="groups")
    in_channels, out_channels = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel = draw(st.tuples(st.integers(1, 3), st.integers(1, 3)), label="kernel")
    stride = draw(st.tuples(st.integers(1, 3), st.integers(1, 3)), label="stride")
    dilation = draw(st.tuples(st.integers(1, 2), st.integers(1, 2)), label="dilation")
    output_padding = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
    sizes = draw(st.tuples(st.integers(1, 3), st.integers(1, 3)), label="sizes")
    padding = tuple(draw(st.integers(0, max(0, ((n - 1) * s + d * (k - 1) + o) // 2)), label="padding")
                    for n, s, d, k, o in zip(sizes, stride, dilation, kernel, output_padding))
    return ((draw(st.integers(1, 2)), in_channels, *sizes), (in_channels, out_channels // groups, *kernel), stride,
            padding, output_padding, dilation, groups)


@property_test
@given(data=st.data())
def test_conv_transpose2d_gradient(xp_backend, data):
    x_shape, w_shape, stride, padding, output_padding, dilation, groups = data.draw(transposed_convolutions())
    x, w = data.draw(arrays(x_shape), label="x"), data.draw(arrays(w_shape), label="weight")
    b = data.draw(arrays((w_shape[1] * groups,)), label="bias")
    check(lambda x, w, b: F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation),
          leaf(x), leaf(w), leaf(b))


@property_test
@given(data=st.data())
def test_conv_transpose2d_is_the_gradient_of_conv2d(xp_backend, data):
    """conv_transpose2d(g, w) is what conv2d's backward gives its input for the output gradient g."""
    x_shape, w_shape, stride, padding, output_padding, dilation, groups = data.draw(transposed_convolutions())
    assume(all(o < s for o, s in zip(output_padding, stride)))  # (a larger one makes an output conv2d never gives)
    g, w = data.draw(arrays(x_shape), label="g"), data.draw(arrays(w_shape), label="weight")
    out = F.conv_transpose2d(tinyattn.tensor(g), tinyattn.tensor(w), None, stride, padding, output_padding, groups,
                             dilation)
    z = tinyattn.zeros(out.shape, dtype=tinyattn.float64, requires_grad=True)
    F.conv2d(z, tinyattn.tensor(w), None, stride, padding, dilation, groups).backward(tinyattn.tensor(g))
    np.testing.assert_allclose(np.asarray(z.grad.tolist()), np.asarray(out.tolist()), rtol=1e-10, atol=1e-10)


def test_conv1d_and_conv2d_share_one_op(torch):
    x = np.random.default_rng(2).standard_normal((2, 4, 9))
    w = np.random.default_rng(3).standard_normal((6, 2, 3))
    (xo, xt), (wo, wt) = pair(torch, x), pair(torch, w)
    yo = F.conv1d(xo, wo, None, 2, 1, 2, 2)
    yt = torch.nn.functional.conv1d(xt, wt, None, 2, 1, 2, 2)
    assert type(yo.grad_fn).__name__ == type(yt.grad_fn).__name__ or yo.grad_fn.name() == yt.grad_fn.name()
    assert_same(yo, yt, rtol=1e-12, atol=1e-12)
    backward_both(yo, yt)
    assert_same(xo.grad, xt.grad, rtol=1e-12, atol=1e-12)
    assert_same(wo.grad, wt.grad, rtol=1e-12, atol=1e-12)


POOL_CASES = [
    ("MaxPool2d", (2,), {}, (2, 3, 8, 8)),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1}, (2, 3, 9, 7)),
    ("MaxPool2d", ((3, 2),), {"stride": (2, 1), "dilation": (2, 1), "ceil_mode": True}, (1, 2, 9, 6)),
    ("MaxPool2d", (3, 2, 1), {"ceil_mode": True}, (3, 8, 8)),  # without a batch dim
    ("AvgPool2d", (2,), {}, (2, 3, 8, 8)),
    ("AvgPool2d", (3, 2, 1), {}, (2, 3, 7, 7)),
    ("AvgPool2d", (3, 2, 1), {"count_include_pad": False, "ceil_mode": True}, (2, 3, 8, 6)),
    ("AvgPool2d", ((2, 3),), {"stride": 1, "divisor_override": 4}, (1, 2, 5, 5)),
    ("AdaptiveAvgPool2d", (1,), {}, (2, 3, 5, 7)),
    ("AdaptiveAvgPool2d", ((3, 4),), {}, (2, 3, 7, 5)),
    ("AdaptiveAvgPool2d", ((None, 2),), {}, (3, 5, 7)),
    ("AdaptiveAvgPool2d", (6,), {}, (1, 2, 4, 5)),  # larger than the input: windows repeat elements
]


@pytest.mark.parametrize("name, args, options, shape", POOL_CASES)
def test_pooling_layers_match_pytorch(torch, name, args, options, shape):
    ours, theirs = getattr(nn, name)(*args, **options), getattr(torch.nn, name)(*args, **options)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    xo, xt = pair(torch, x)
    yo, yt = ours(xo), theirs(xt)
    assert yo.shape == tuple(yt.shape)
    assert_same(yo, yt, rtol=1e-6, atol=1e-6)
    backward_both(yo, yt)
    assert_same(xo.grad, xt.grad, rtol=1e-6, atol=1e-6)
    assert yo.grad_fn.name() == yt.grad_fn.name()


POOL_1D_CASES = [
    ("MaxPool1d", (2,), {}, (2, 3, 9)),
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True}, (2, 3, 10)),
    ("MaxPool1d", (4,), {}, (3, 8)),  # without a batch dim
    ("AvgPool1d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False, "ceil_mode": True}, (2, 3, 8)),
    ("AvgPool1d", (2,), {}, (2, 3, 7)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 9)),
    ("AdaptiveAvgPool1d", (1,), {}, (3, 5)),
]


@pytest.mark.parametrize("name, args, options, shape", POOL_1D_CASES)
def test_1d_pooling_layers_match_pytorch(torch, name, args, options, shape):
    ours, theirs = getattr(nn, name)(*args, **options), getattr(torch.nn, name)(*args, **options)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(14).standard_normal(shape)
    xo, xt = pair(torch, x)
    yo, yt = ours(xo), theirs(xt)
    assert yo.shape == tuple(yt.shape)
    assert_same(yo, yt, rtol=1e-12, atol=1e-12)
    backward_both(yo, yt)
    assert_same(xo.grad, xt.grad, rtol=1e-12, atol=1e-12)


def test_an_inf_stays_in_its_adaptive_window(torch):
    """Each window is averaged on its own: an inf elsewhere does not turn a window into NaN."""
    x = np.zeros((1, 1, 4, 5))
    x[0, 0, 0, 0] = np.inf
    for L in (tinyattn, torch):
        out = L.nn.functional.adaptive_avg_pool2d(L.tensor(x), (2, 3)).numpy()
        assert np.isinf(out[0, 0, 0, 0]) and (out.ravel()[1:] == 0).all()
    out = F.adaptive_avg_pool1d(tinyattn.tensor(x[0]), 2).numpy()
    assert np.isinf(out[0, 0, 0]) and out[0, 0, 1] == 0 and (out[0, 1:] == 0).all()


def test_max_pool1d_over_time_and_its_indices(torch):
    """A text CNN's max over time: F.max_pool1d(x, x.shape[2]); the indices point into the row."""
    x = np.random.default_rng(15).standard_normal((2, 4, 7))
    (xo, xt) = pair(torch, x)
    (yo, io), (yt, it) = (L.nn.functional.max_pool1d(v, v.shape[2], return_indices=True)
                          for L, v in ((tinyattn, xo), (torch, xt)))
    assert yo.shape == (2, 4, 1)
    np.testing.assert_array_equal(io.numpy(), it.numpy())
    assert_same(yo, yt, rtol=0, atol=0)


@property_test
@given(data=st.data())
def test_1d_pools_gradient(xp_backend, data):
    kind = data.draw(st.sampled_from(["max", "avg", "adaptive"]), label="kind")
    order = data.draw(st.permutations(range(28)), label="order")  # distinct values: no ties in a window
    x = (np.reshape(order, (2, 2, 7)) - 14) * 0.2
    if kind == "max":
        check(lambda x: F.max_pool1d(x, 3, 2, 1, 2, True), leaf(x))
    elif kind == "avg":
        check(lambda x: F.avg_pool1d(x, 3, 2, 1, True, False), leaf(x))
    else:
        check(lambda x: F.adaptive_avg_pool1d(x, 3), leaf(x))


def test_max_pool2d_indices_and_ties_match_pytorch(torch):
    x = np.round(np.random.default_rng(5).standard_normal((2, 2, 7, 7)))  # many ties: the first one wins
    (xo, xt) = pair(torch, x)
    (yo, io), (yt, it) = (L.nn.functional.max_pool2d(v, 3, 2, 1, ceil_mode=True, return_indices=True)
                          for L, v in ((tinyattn, xo), (torch, xt)))
    np.testing.assert_array_equal(io.numpy(), it.numpy())
    backward_both(yo, yt)
    assert_same(xo.grad, xt.grad, rtol=1e-12, atol=1e-12)  # (overlapping windows add in another order)
    layer = nn.MaxPool2d(2, return_indices=True)
    assert isinstance(layer(tinyattn.ones(1, 4, 4)), tuple)


@pytest.mark.parametrize("p, shape", [(0.5, (4, 6, 3, 3)), (0.2, (8, 3, 2, 5)), (0.7, (2, 5, 4, 4)), (0.5, (5, 3, 4))])
def test_dropout2d_draws_pytorchs_masks(torch, p, shape):
    ours, theirs = nn.Dropout2d(p), torch.nn.Dropout2d(p)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    xo, xt = pair(torch, x)
    for seed in (0, 7):
        tinyattn.manual_seed(seed)
        torch.manual_seed(seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yo = ours(xo)
        with warnings.catch_warnings(record=True) as caught_torch:
            warnings.simplefilter("always")
            yt = theirs(xt)
        assert [str(w.message) for w in caught] == [str(w.message) for w in caught_torch]  # 3-D: (N, C, L)
        np.testing.assert_array_equal(host(yo), yt.detach().numpy())
        zeroed = host(yo).reshape(shape[0], shape[1], -1) == 0
        assert (zeroed.all(axis=-1) == zeroed.any(axis=-1)).all()  # whole channels, never parts
        np.testing.assert_array_equal(tinyattn.rand(3).numpy(), torch.rand(3).numpy())  # the stream goes on alike
    ours.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the note on 3-D inputs comes in eval mode too, as in PyTorch)
        assert ours(xo) is xo


def test_dropout2d_in_place_and_edge_probabilities(torch):
    x = tinyattn.ones(2, 3, 2, 2)
    assert F.dropout2d(x, 0.0) is x and F.dropout2d(x, 0.5, training=False) is x
    assert (F.dropout2d(x, 1.0) == 0).all()
    tinyattn.manual_seed(0)
    torch.manual_seed(0)
    y = tinyattn.ones(2, 3, 2, 2)
    assert F.dropout2d(y, 0.5, inplace=True) is y
    yt = torch.ones(2, 3, 2, 2)
    torch.nn.functional.dropout2d(yt, 0.5, inplace=True)
    np.testing.assert_array_equal(y.numpy(), yt.numpy())


def lenet(L):
    nn_ = L.nn
    return nn_.Sequential(nn_.Conv2d(1, 4, 3, padding=1), nn_.BatchNorm2d(4), nn_.ReLU(), nn_.MaxPool2d(2),
                          nn_.Conv2d(4, 8, 3), nn_.ReLU(), nn_.Dropout2d(0.25), nn_.AdaptiveAvgPool2d((2, 2)),
                          nn_.Flatten(), nn_.Linear(32, 10))


def test_a_small_cnn_trains_as_in_pytorch(torch):
    """The same seed, the same initial weights, masks and batches: the same losses, step after step."""
    losses = {}
    x = np.random.default_rng(7).standard_normal((16, 1, 8, 8)).astype(np.float32)
    y = np.random.default_rng(8).integers(0, 10, 16)
    for L in (tinyattn, torch):
        L.manual_seed(0)
        model = lenet(L)
        optimizer = L.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        losses[L.__name__] = []
        for _ in range(5):
            optimizer.zero_grad()
            loss = L.nn.functional.cross_entropy(model(L.tensor(x)), L.tensor(y))
            loss.backward()
            optimizer.step()
            losses[L.__name__].append(loss.item())
    np.testing.assert_allclose(losses["tinyattn"], losses["torch"], rtol=1e-4)
    assert losses["tinyattn"][-1] < losses["tinyattn"][0]


def test_functional_forms_take_pytorchs_defaults(torch):
    x = np.random.default_rng(9).standard_normal((1, 2, 6, 6)).astype(np.float32)
    xo, xt = pair(torch, x, grad=False)
    w = np.random.default_rng(10).standard_normal((3, 2, 3, 3)).astype(np.float32)
    assert_same(F.conv2d(xo, tinyattn.tensor(w)), torch.nn.functional.conv2d(xt, torch.tensor(w)), 1e-5, 1e-5)
    assert_same(F.max_pool2d(xo, 2), torch.nn.functional.max_pool2d(xt, 2))
    assert_same(F.avg_pool2d(xo, 3), torch.nn.functional.avg_pool2d(xt, 3))
    assert_same(F.adaptive_avg_pool2d(xo, 1), torch.nn.functional.adaptive_avg_pool2d(xt, 1))
    assert_same(F.max_pool2d(xo, 3, stride=[]), torch.nn.functional.max_pool2d(xt, 3, stride=[]))


def test_batch_norm_2d_matches_pytorch(torch):
    """BatchNorm2d after a convolution: the statistics over (N, H, W) per channel, as PyTorch."""
    tinyattn.manual_seed(0)
    torch.manual_seed(0)
    x = np.random.default_rng(11).standard_normal((4, 3, 5, 5)).astype(np.float32)
    ours, theirs = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    xo, xt = pair(torch, x)
    yo, yt = ours(xo), theirs(xt)
    assert_same(yo, yt, 1e-5, 1e-5)
    backward_both(yo, yt)
    assert_same(xo.grad, xt.grad, 1e-4, 1e-5)
    assert_same(ours.running_var, theirs.running_var, 1e-6, 1e-6)


TUTORIAL = pathlib.Path(__file__).parent.parent / "docs" / "tutorials" / "cnn-digits.md"


def test_the_cnn_tutorial_prints_what_its_page_shows_in_both_libraries(torch):
    """The page's program prints the lines its text block shows, with tinyattn and with PyTorch."""
    pytest.importorskip("sklearn")
    page = TUTORIAL.read_text()
    program, shown = re.search(r"## The program\n\n```python\n(.*?)```\n.*?```text\n(.*?)```", page, re.S).groups()
    assert program.startswith("import tinyattn as torch\nfrom tinyattn import nn\n")
    for source in (program, program.replace("import tinyattn as torch", "import torch").replace(
            "from tinyattn import nn", "from torch import nn")):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(source, str(TUTORIAL), "exec"), {"__name__": "__tutorial__"})
        assert printed.getvalue() == shown


# ---------------------------------------------------------------------------------------------
# errors


def test_conv2d_errors_name_the_shapes():
    layer = nn.Conv2d(3, 4, 3)
    with pytest.raises(ShapeError, match=r"expects 3 input channels, got 2 \(input shape \[1, 2, 5, 5\]\)"):
        layer(tinyattn.ones(1, 2, 5, 5))
    with pytest.raises(ShapeError, match=r"the \(padded\) input is 2 x 5, shorter than the kernel's reach 3 x 3"):
        layer(tinyattn.ones(1, 3, 2, 5))
    with pytest.raises(ShapeError, match=r"3-D \(C_in, H, W\) or 4-D \(N, C_in, H, W\) input, got shape \[3, 5\]"):
        layer(tinyattn.ones(3, 5))
    with pytest.raises(TypeError, match="needs floating point tensors, got tinyattn.int64"):
        F.conv2d(tinyattn.ones(1, 3, 5, 5, dtype=tinyattn.int64), tinyattn.ones(4, 3, 3, 3, dtype=tinyattn.int64))
    with pytest.raises(TypeError, match=r"the input \(tinyattn.float64\), weight \(tinyattn.float32\) and bias "
                                        r"\(tinyattn.float32\) must have one dtype"):
        layer(tinyattn.ones(1, 3, 5, 5, dtype=tinyattn.float64))
    with pytest.raises(ShapeError, match=r"the weight must be 4-D"):
        F.conv2d(tinyattn.ones(1, 3, 5, 5), tinyattn.ones(4, 3, 3))
    with pytest.raises(ShapeError, match=r"the bias must have shape \[4\]"):
        F.conv2d(tinyattn.ones(1, 3, 5, 5), tinyattn.ones(4, 3, 3, 3), tinyattn.ones(3))
    with pytest.raises(ValueError, match="not supported for strided convolutions"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match=r"in_channels \(3\) and out_channels \(4\) must be divisible by groups \(2\)"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ShapeError, match="out_channels 3 must be divisible by groups"):
        F.conv2d(tinyattn.ones(1, 4, 5, 5), tinyattn.ones(3, 2, 3, 3), groups=2)
    with pytest.raises(TypeError, match="padding must be an int or a tuple of 2 ints or 'same' or 'valid'"):
        nn.Conv2d(3, 4, 3, padding="full")
    with pytest.raises(TypeError, match=r"kernel_size must be an int or a tuple of 2 ints, got \(3, 3, 3\)"):
        nn.Conv2d(3, 4, (3, 3, 3))
    with pytest.raises(ValueError, match="padding must be >= 0"):
        F.conv2d(tinyattn.ones(1, 3, 5, 5), tinyattn.ones(4, 3, 3, 3), padding=-1)
    with pytest.raises(ValueError, match="stride and dilation must be positive"):
        F.conv2d(tinyattn.ones(1, 3, 5, 5), tinyattn.ones(4, 3, 3, 3), stride=0)
    with pytest.raises(TypeError, match="the input must be a tinyattn tensor"):
        F.conv2d(np.ones((1, 3, 5, 5)), tinyattn.ones(4, 3, 3, 3))


def test_conv_transpose_errors():
    x = tinyattn.ones(1, 4, 3, 3)
    with pytest.raises(ShapeError, match=r"expects 3 input channels \(its dim 0\), got 4"):
        nn.ConvTranspose2d(3, 2, 3)(x)
    with pytest.raises(ValueError, match="output_padding must be >= 0 and smaller than either stride or dilation"):
        F.conv_transpose2d(x, tinyattn.ones(4, 2, 3, 3), output_padding=1)
    with pytest.raises(ShapeError, match=r"the output would be -1 x -1 \(input shape \[1, 4, 1, 1\]"):
        F.conv_transpose2d(tinyattn.ones(1, 4, 1, 1), tinyattn.ones(4, 2, 1, 1), padding=1)
    assert F.conv_transpose2d(tinyattn.ones(1, 4, 1, 1), tinyattn.ones(4, 2, 2, 2), padding=1).shape == (1, 2, 0, 0)
    with pytest.raises(ValueError, match=r'only "zeros" padding mode is supported'):
        nn.ConvTranspose2d(3, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match=r"output_size \[9, 9\] cannot come out of an input of shape \[1, 4, 3, 3\]: "
                                         r"each size must be between 7 and 8"):
        nn.ConvTranspose2d(4, 2, 3, stride=2, padding=0)(x, (9, 9))
    with pytest.raises(TypeError, match="padding must be an int or a tuple of 2 ints, got 'same'"):
        nn.ConvTranspose2d(4, 2, 3, padding="same")


def test_pooling_errors_say_what_to_do():
    x = tinyattn.ones(1, 2, 4, 4)
    with pytest.raises(ValueError, match=r"padding must be >= 0 and at most half the kernel size"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ShapeError, match=r"the input's 4 x 4 image \(with padding \(0, 0\)\) is smaller than one "):
        F.max_pool2d(x, 5)
    with pytest.raises(ShapeError, match=r"3-D \(C, H, W\) or 4-D \(N, C, H, W\) input, got shape \[4, 4\]"):
        nn.AvgPool2d(2)(tinyattn.ones(4, 4))
    with pytest.raises(TypeError, match="needs a floating point input, got tinyattn.int64"):
        F.max_pool2d(tinyattn.ones(1, 2, 4, 4, dtype=tinyattn.int64), 2)
    with pytest.raises(ValueError, match="kernel_size, stride and dilation must be positive"):
        F.max_pool2d(x, 2, stride=0)
    with pytest.raises(ValueError, match="divisor_override must be a nonzero int"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(TypeError, match="output_size must be an int or a pair"):
        F.adaptive_avg_pool2d(x, (1, 2, 3))
    with pytest.raises(ShapeError, match=r"expected channels, height and width of size 1 or more"):
        F.max_pool2d(tinyattn.ones(1, 2, 0, 4), 1)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout2d(1.5)
    with pytest.raises(ShapeError, match=r"max_pool1d: expected a 2-D \(C, L\) or 3-D \(N, C, L\) input"):
        F.max_pool1d(x, 2)
    with pytest.raises(ShapeError, match=r"avg_pool1d: the input's 3-long row \(with padding \(0,\)\) is smaller"):
        F.avg_pool1d(tinyattn.ones(1, 2, 3), 4)
    with pytest.raises(TypeError, match=r"kernel_size must be an int \(or a 1-tuple\), got \(2, 2\)"):
        nn.MaxPool1d((2, 2))(tinyattn.ones(1, 2, 3))
    with pytest.raises(TypeError, match="adaptive_avg_pool1d: output_size must be an int >= 0, got None"):
        F.adaptive_avg_pool1d(tinyattn.ones(1, 2, 3), None)
