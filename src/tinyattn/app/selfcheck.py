"""`tinyattn gradcheck`: every differentiable op and layer against finite differences, one line each.

The catalog of checks, `op_checks()` (each op of tinyattn.ops and tinyattn.nn.functional) and
`module_checks()` (each layer, attention class and the app's models), each entry a `Check` with
small float64 inputs away from kinks and ties, and `main`, the command that runs them through the
library's check (tinyattn.gradient_check) and prints the table. It lives in the app because its
module checks include the app's GPT (models.py); `import tinyattn` loads none of it.
"""

import itertools
import math
import re
import sys
import time

import numpy as np

from .. import dtypes, functions, linalg, nn, random
from ..console import EXIT_INTERRUPTED, ArgumentParser, fill, fit, is_terminal, plural, terminal_width
from ..gradient_check import Report, _check_settings, check_gradients
from ..nn import functional as F
from ..tensor import Tensor
from . import models


class Check:
    """One entry of the table: a name, a function and its inputs (`label` replaces the shapes)."""

    def __init__(self, name, fn, inputs, label=None):
        self.name, self.fn, self.inputs = name, fn, tuple(inputs)
        self.label = label or ", ".join(str(list(x.shape)) for x in self.inputs if isinstance(x, Tensor))


class _Numbers:
    """Small float64 leaves for the checks, away from kinks (0 for relu/abs, ties for max)."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def leaf(self, values):
        return functions.tensor(values, dtype=dtypes.float64, requires_grad=True)

    def x(self, *shape):
        return self.leaf(self.rng.uniform(-2.0, 2.0, shape))

    def positive(self, *shape):
        return self.leaf(self.rng.uniform(0.5, 2.0, shape))

    def nonzero(self, *shape):
        """Values at least 0.2 away from 0 (and from the clamp bounds +-1)."""
        magnitude = self.rng.choice([0.3, 0.6, 1.3, 1.7], shape) + self.rng.uniform(-0.1, 0.1, shape)
        return self.leaf(magnitude * self.rng.choice([-1.0, 1.0], shape))

    def distinct(self, *shapes):
        """Leaves whose values are all different (0.25 apart at least), for max/min and their ties."""
        sizes = [math.prod(s) for s in shapes]
        values = (self.rng.permutation(sum(sizes)) - sum(sizes) / 2) * 0.25 + self.rng.uniform(0, 0.05)
        leaves, start = [], 0
        for shape, size in zip(shapes, sizes):
            leaves.append(self.leaf(values[start:start + size].reshape(shape)))
            start += size
        return leaves

    def ints(self, high, *shape):
        return functions.tensor(self.rng.integers(0, high, shape), dtype=dtypes.int64)

    def mask(self, *shape):
        return functions.tensor(self.rng.random(shape) < 0.4)


def op_checks(seed=0):
    """Every differentiable op of tinyattn.ops and tinyattn.nn.functional, with small float64 inputs."""
    T = functions
    r = _Numbers(seed)
    a, b = r.x(3, 4), r.x(3, 4)
    m1, m2 = r.distinct((3, 4), (4,))
    checks = [
        # elementwise arithmetic (each binary op also with broadcasting)
        Check("add", lambda a, b: a + b, (a, b)),
        Check("add broadcast", lambda a, b: a + b, (r.x(3, 1), r.x(4))),
        Check("add scalar", lambda a: 2.5 + a, (r.x(3),)),
        Check("sub", lambda a, b: a - b, (a, b)),
        Check("sub broadcast", lambda a, b: a - b, (r.x(2, 3, 1), r.x(3, 4))),
        Check("rsub scalar", lambda a: 1 - a, (r.x(3),)),
        Check("mul", lambda a, b: a * b, (a, b)),
        Check("mul broadcast", lambda a, b: a * b, (r.x(3, 4), r.x(4))),
        Check("div", lambda a, b: a / b, (a, r.nonzero(3, 4))),
        Check("div broadcast", lambda a, b: a / b, (r.x(3, 4), r.positive(3, 1))),
        Check("rdiv scalar", lambda a: 1 / a, (r.nonzero(3),)),
        Check("pow scalar exponent", lambda a: a**3, (r.x(3, 4),)),
        Check("pow fractional exponent", lambda a: a**2.5, (r.positive(3, 4),)),
        Check("pow tensor exponent", lambda a, b: a**b, (r.positive(3, 4), r.x(4))),
        Check("rpow scalar base", lambda a: 2.0**a, (r.x(3, 4),)),
        Check("neg", lambda a: -a, (r.x(3, 4),)),
        Check("exp", lambda a: a.exp(), (r.x(3, 4),)),
        Check("log", lambda a: a.log(), (r.positive(3, 4),)),
        Check("sqrt", lambda a: a.sqrt(), (r.positive(3, 4),)),
        Check("rsqrt", lambda a: a.rsqrt(), (r.positive(3, 4),)),
        Check("tanh", lambda a: a.tanh(), (r.x(3, 4),)),
        Check("sigmoid", lambda a: a.sigmoid(), (r.x(3, 4),)),
        Check("relu", lambda a: a.relu(), (r.nonzero(3, 4),)),
        Check("abs", lambda a: a.abs(), (r.nonzero(3, 4),)),
        Check("clamp", lambda a: a.clamp(-1.0, 1.0), (r.nonzero(3, 4),)),
        Check("clamp min only", lambda a: a.clamp(min=0.0), (r.nonzero(3, 4),)),
        Check("clamp tensor bounds", lambda a, low, high: a.clamp(low, high),
              (r.nonzero(3, 4), r.leaf(np.full((1, 4), -1.0)), r.leaf(np.full(4, 1.0)))),
        Check("maximum broadcast", lambda a, b: a.maximum(b), (m1, m2)),
        Check("minimum broadcast", lambda a, b: a.minimum(b), tuple(r.distinct((2, 3, 1), (3, 4)))),
        # reductions
        Check("sum", lambda a: a.sum(), (r.x(3, 4),)),
        Check("sum dim keepdim", lambda a: a.sum(1, keepdim=True), (r.x(3, 4),)),
        Check("sum dims", lambda a: a.sum((0, 2)), (r.x(2, 3, 4),)),
        Check("mean", lambda a: a.mean(), (r.x(3, 4),)),
        Check("mean dim keepdim", lambda a: a.mean(-1, keepdim=True), (r.x(3, 4),)),
        Check("var", lambda a: a.var(), (r.x(3, 4),)),
        Check("var dim keepdim biased", lambda a: a.var(1, unbiased=False, keepdim=True), (r.x(3, 4),)),
        Check("std dim", lambda a: a.std(0), (r.x(3, 4),)),
        Check("max", lambda a: a.max(), tuple(r.distinct((3, 4)))),
        Check("max dim", lambda a: a.max(dim=1), tuple(r.distinct((3, 4)))),
        Check("min dim keepdim", lambda a: a.min(dim=0, keepdim=True).values, tuple(r.distinct((3, 4)))),
        Check("topk", lambda a: a.topk(2, dim=-1).values, tuple(r.distinct((3, 4)))),
        # matrix products
        Check("matmul", lambda a, b: a @ b, (r.x(3, 4), r.x(4, 2))),
        Check("matmul batched", lambda a, b: a @ b, (r.x(2, 3, 4), r.x(2, 4, 2))),
        Check("matmul broadcast", lambda a, b: a @ b, (r.x(2, 1, 3, 4), r.x(3, 4, 2))),
        Check("matmul vector @ matrix", lambda a, b: a @ b, (r.x(4), r.x(4, 3))),
        Check("matmul matrix @ vector", lambda a, b: a @ b, (r.x(2, 3, 4), r.x(4))),
        Check("matmul vector @ vector", lambda a, b: a @ b, (r.x(4), r.x(4))),
        # shapes and views
        Check("reshape", lambda a: a.reshape(2, -1, 3), (r.x(3, 4),)),
        Check("view", lambda a: a.view(4, 3), (r.x(3, 4),)),
        Check("permute", lambda a: a.permute(2, 0, 1), (r.x(2, 3, 4),)),
        Check("transpose", lambda a: a.transpose(0, -1), (r.x(2, 3, 4),)),
        Check("t", lambda a: a.t(), (r.x(3, 4),)),
        Check("cumsum", lambda a: a.cumsum(-1), (r.x(3, 4),)),
        Check("logsumexp dims", lambda a: a.logsumexp((0, 2)), (r.x(2, 3, 4),)),
        Check("transpose contiguous view", lambda a: a.transpose(0, 1).contiguous().view(-1), (r.x(3, 4),)),
        Check("expand", lambda a: a.expand(2, 3, 4), (r.x(3, 1),)),
        Check("unsqueeze squeeze flatten", lambda a: a.unsqueeze(1).squeeze(1).flatten(), (r.x(3, 4),)),
        Check("repeat", lambda a: a.repeat(2, 1, 2), (r.x(3, 2),)),
        Check("clone", lambda a: a.clone(), (r.x(3, 4),)),
        Check("tril", lambda a: a.tril(), (r.x(4, 4),)),
        Check("triu diagonal 1", lambda a: a.triu(1), (r.x(3, 4),)),
        # indexing, masking, joining
        Check("index int", lambda a: a[1], (r.x(3, 4),)),
        Check("index slices", lambda a: a[::2, 1:3], (r.x(3, 4),)),
        Check("index None ellipsis", lambda a: a[None, ..., 0], (r.x(2, 3, 4),)),
        Check("index int tensor (repeats)", lambda a: a[T.tensor([0, 2, 0])], (r.x(3, 4),)),
        Check("index int tensor and slice", lambda a: a[T.tensor([2, 0]), 1:], (r.x(3, 4),)),
        Check("index bool mask", lambda a: a[a.detach() > 0], (r.x(3, 4),)),
        Check("index_put slices", _index_put(lambda: (slice(1, None), slice(None, 2))), (r.x(3, 4), r.x(2, 2))),
        Check("index_put int tensor broadcast", _index_put(lambda: T.tensor([2, 0])), (r.x(3, 4), r.x(4))),
        Check("index_put bool mask scalar", _fill_where_positive, (r.x(3, 4),)),
        Check("in-place ops on views (CopySlices)", _change_views_in_place, (r.x(3, 4), r.x(4))),
        Check("gather", lambda a, index: a.gather(1, index), (r.x(3, 4), r.ints(4, 3, 5))),
        Check("masked_fill broadcast mask", lambda a, mask: a.masked_fill(mask, -1.5), (r.x(3, 4), r.mask(4))),
        Check("where broadcast", lambda mask, a, b: T.where(mask, a, b), (r.mask(3, 4), r.x(3, 4), r.x(4))),
        Check("cat", lambda a, b, c: T.cat([a, b, c], dim=0), (r.x(1, 4), r.x(2, 4), r.x(3, 4))),
        Check("cat dim -1", lambda a, b: T.cat([a, b], dim=-1), (r.x(3, 2), r.x(3, 4))),
        Check("stack", lambda a, b: T.stack([a, b], dim=1), (r.x(3, 4), r.x(3, 4))),
        Check("split", lambda a: a.split([1, 2], dim=0), (r.x(3, 4),)),
        Check("chunk", lambda a: a.chunk(2, dim=1), (r.x(3, 4),)),
        Check("unbind", lambda a: a.unbind(1), (r.x(3, 4),)),
        # softmax and friends
        Check("softmax", lambda a: a.softmax(-1), (r.x(3, 4),)),
        Check("softmax dim 0", lambda a: T.softmax(a, dim=0), (r.x(3, 4),)),
        Check("log_softmax", lambda a: F.log_softmax(a, dim=-1), (r.x(3, 4),)),
        Check("safe_softmax", lambda a: F.safe_softmax(a, dim=-1), (r.x(3, 4),)),
        Check("safe_softmax fully masked row", _masked_safe_softmax, (r.x(3, 4),)),
        # nn.functional
        Check("linear", lambda x, w, b: F.linear(x, w, b), (r.x(2, 3, 4), r.x(5, 4), r.x(5))),
        Check("linear no bias", lambda x, w: F.linear(x, w), (r.x(3, 4), r.x(2, 4))),
        Check("embedding (weight)", lambda ids, w: F.embedding(ids, w),
              (T.tensor([[1, 3, 1], [0, 4, 4]]), r.x(5, 3))),
        Check("dropout p=0.5", lambda a: F.dropout(a, 0.5), (r.x(4, 5),)),
        Check("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), (r.x(2, 3, 4), r.x(4), r.x(4))),
        Check("layer_norm last two dims", lambda x: F.layer_norm(x, (3, 4)), (r.x(2, 3, 4),)),
        Check("gelu", lambda a: F.gelu(a), (r.x(3, 4),)),
        Check("gelu tanh", lambda a: F.gelu(a, approximate="tanh"), (r.x(3, 4),)),
        Check("cross_entropy", lambda logits, t: F.cross_entropy(logits, t), (r.x(4, 5), r.ints(5, 4))),
        Check("cross_entropy ignore_index", lambda logits, t: F.cross_entropy(logits, t, ignore_index=2),
              (r.x(5, 3), T.tensor([0, 2, 1, 2, 2]))),
        Check("cross_entropy sum", lambda logits, t: F.cross_entropy(logits, t, reduction="sum"),
              (r.x(4, 5), r.ints(5, 4))),
        Check("cross_entropy none (N, C, d)", lambda logits, t: F.cross_entropy(logits, t, reduction="none"),
              (r.x(2, 4, 3), r.ints(4, 2, 3))),
        Check("nll_loss", lambda logp, t: F.nll_loss(logp, t), (r.x(4, 5), r.ints(5, 4))),
        Check("mse_loss", lambda a, b: F.mse_loss(a, b), (r.x(3, 4), r.x(3, 4))),
        Check("scaled_dot_product_attention", lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
              (r.x(2, 3, 4), r.x(2, 5, 4), r.x(2, 5, 2))),
        Check("sdpa causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
              (r.x(2, 4, 3), r.x(2, 4, 3), r.x(2, 4, 3))),
        Check("sdpa bool mask", lambda q, k, v, mask: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
              (r.x(3, 2), r.x(4, 2), r.x(4, 3), r.mask(3, 4))),
        Check("sdpa causal dropout 0.5",
              lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, is_causal=True),
              (r.x(2, 4, 3), r.x(2, 4, 3), r.x(2, 4, 3))),
        Check("attention context and weights, bias, shared keys",
              lambda q, k, v, bias, blocked: F.attention(q, k, v, blocked=blocked, bias=bias),
              (r.x(2, 3, 2), r.x(4, 2), r.x(4, 3), r.x(3, 4), r.mask(3, 4))),
        # more elementwise math
        Check("sin", lambda a: a.sin(), (r.x(3, 4),)),
        Check("cos", lambda a: T.cos(a), (r.x(3, 4),)),
        Check("reciprocal", lambda a: a.reciprocal(), (r.nonzero(3, 4),)),
        Check("log1p", lambda a: a.log1p(), (r.positive(3, 4),)),
        Check("expm1", lambda a: T.expm1(a), (r.x(3, 4),)),
        Check("log2", lambda a: a.log2(), (r.positive(3, 4),)),
        Check("log10", lambda a: T.log10(a), (r.positive(3, 4),)),
        Check("exp2", lambda a: a.exp2(), (r.x(3, 4),)),
        Check("erf", lambda a: T.erf(a), (r.x(3, 4),)),
        Check("square", lambda a: T.square(a), (r.x(3, 4),)),
        Check("pow function, number base", lambda a: T.pow(2.0, a), (r.x(3, 4),)),
        Check("sign floor ceil round trunc (zero gradient)",
              lambda a: a * (a.sign() + a.floor() + a.ceil() + a.round() + a.trunc()),
              (r.leaf(np.array([[-1.7, -0.3, 0.2], [1.4, 2.6, -2.2]])),)),
        Check("clamp_min", lambda a: a.clamp_min(0.0), (r.nonzero(3, 4),)),
        # more reductions
        Check("prod", lambda a: a.prod(), (r.x(2, 3),)),
        Check("prod dim, with zeros", lambda a: a.prod(1), (r.leaf(np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]])),)),
        Check("cumprod", lambda a: a.cumprod(-1), (r.x(3, 4),)),
        Check("cumprod with zeros", lambda a: a.cumprod(0), (r.leaf(np.array([1.5, 0.0, -2.0, 0.0, 0.7])),)),
        Check("amax dims", lambda a: a.amax((0, 2)), tuple(r.distinct((2, 3, 4)))),
        Check("amin keepdim", lambda a: a.amin(-1, keepdim=True), tuple(r.distinct((3, 4)))),
        Check("norm", lambda a: a.norm(), (r.x(3, 4),)),
        Check("vector_norm ord 3 dim", lambda a: linalg.vector_norm(a, 3, dim=-1), (r.nonzero(3, 4),)),
        Check("vector_norm inf", lambda a: linalg.vector_norm(a, math.inf, dim=0), tuple(r.distinct((3, 4)))),
        Check("normalize", lambda a: F.normalize(a, dim=-1), (r.x(3, 4),)),
        # more matrix products
        Check("outer", lambda a, b: T.outer(a, b), (r.x(3), r.x(4))),
        Check("addmm", lambda c, a, b: T.addmm(c, a, b, beta=0.5, alpha=2.0), (r.x(4), r.x(3, 2), r.x(2, 4))),
        Check("baddbmm", lambda c, a, b: c.baddbmm(a, b), (r.x(2, 3, 4), r.x(2, 3, 2), r.x(2, 2, 4))),
        Check("trace", lambda a: a.trace(), (r.x(3, 4),)),
        # sorting, selecting, scattering, padding
        Check("sort", lambda a: T.sort(a, dim=-1, descending=True), tuple(r.distinct((3, 4)))),
        Check("index_select (repeats)", lambda a: a.index_select(1, T.tensor([3, 0, 3])), (r.x(3, 4),)),
        Check("masked_select broadcast mask", lambda a, mask: a.masked_select(mask), (r.x(3, 4), r.mask(4))),
        Check("repeat_interleave", lambda a: a.repeat_interleave(2, dim=0), (r.x(3, 4),)),
        Check("repeat_interleave tensor repeats", lambda a: T.repeat_interleave(a, T.tensor([2, 0, 1, 3]), dim=1),
              (r.x(3, 4),)),
        Check("roll", lambda a: a.roll((1, -1), (0, 1)), (r.x(3, 4),)),
        Check("flip", lambda a: T.flip(a, (0, 1)), (r.x(3, 4),)),
        Check("scatter", lambda a, src: a.scatter(1, T.tensor([[3, 0], [1, 2], [0, 1]]), src), (r.x(3, 4), r.x(3, 2))),
        Check("scatter value", lambda a: T.scatter(a, 0, T.tensor([[2, 0, 1, 2]]), 0.5), (r.x(3, 4),)),
        Check("scatter_add (repeats)", lambda a, src: a.scatter_add(1, T.tensor([[3, 3], [0, 2], [1, 1]]), src),
              (r.x(3, 4), r.x(3, 2))),
        Check("F.silu", lambda a: F.silu(a), (r.x(3, 4),)),
        Check("F.softplus", lambda a: F.softplus(a, beta=2.0), (r.x(3, 4),)),
        Check("F.leaky_relu", lambda a: F.leaky_relu(a, 0.1), (r.nonzero(3, 4),)),
        Check("F.elu", lambda a: F.elu(a), (r.nonzero(3, 4),)),
        Check("F.pad constant (crops too)", lambda a: F.pad(a, (2, -1, 1, 0), value=0.5), (r.x(2, 3, 4),)),
        Check("F.pad reflect", lambda a: F.pad(a, (2, 1), mode="reflect"), (r.x(2, 4),)),
        Check("F.pad replicate", lambda a: F.pad(a, (1, 2, 2, 0), mode="replicate"), (r.x(2, 3, 4),)),
        Check("F.pad circular", lambda a: F.pad(a, (3, 1), mode="circular"), (r.x(2, 4),)),
        # convolution and pooling
        Check("F.conv2d stride, padding, groups", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2),
              (r.x(1, 4, 4, 4), r.x(4, 2, 2, 2), r.x(4))),
        Check("F.conv2d 'same', dilation", lambda x, w: F.conv2d(x, w, padding="same", dilation=(2, 1)),
              (r.x(1, 2, 5, 4), r.x(3, 2, 2, 3))),
        Check("F.conv1d stride, dilation", lambda x, w, b: F.conv1d(x, w, b, stride=2, dilation=2),
              (r.x(2, 3, 7), r.x(2, 3, 2), r.x(2))),
        Check("F.conv_transpose2d stride, output_padding, groups",
              lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2),
              (r.x(1, 2, 3, 2), r.x(2, 1, 3, 3), r.x(2))),
        Check("F.max_pool2d overlapping, ceil_mode", lambda a: F.max_pool2d(a, 3, 2, 1, ceil_mode=True),
              tuple(r.distinct((1, 2, 6, 5)))),
        Check("F.avg_pool2d count_include_pad=False", lambda a: F.avg_pool2d(a, 3, 2, 1, count_include_pad=False),
              (r.x(1, 2, 5, 5),)),
        Check("F.adaptive_avg_pool2d", lambda a: F.adaptive_avg_pool2d(a, (3, 2)), (r.x(2, 2, 5, 4),)),
        # einsum
        Check("einsum attention scores", lambda q, k: T.einsum("bhqd,bhkd->bhqk", q, k),
              (r.x(2, 2, 3, 2), r.x(2, 2, 4, 2))),
        Check("einsum ... matmul", lambda a, b: T.einsum("...ij,...jk", a, b), (r.x(2, 1, 3, 2), r.x(3, 2, 2))),
        Check("einsum outer", lambda a, b: T.einsum("i,j->ij", a, b), (r.x(3), r.x(4))),
        Check("einsum diagonal", lambda a: T.einsum("ii->i", a), (r.x(3, 3),)),
        Check("einsum trace", lambda a: T.einsum("ii", a), (r.x(3, 3),)),
        Check("einsum sum over a dim", lambda a: T.einsum("ijk->ik", a), (r.x(2, 3, 4),)),
        Check("einsum three operands", lambda a, b, c: T.einsum("ij,jk,kl->il", a, b, c),
              (r.x(2, 3), r.x(3, 4), r.x(4, 2))),
        Check("einsum broadcast size-1 dim", lambda a, b: T.einsum("ij,ij->ij", a, b), (r.x(1, 3), r.x(2, 3))),
        Check("einsum same operand twice", lambda a: T.einsum("ij,kj->ik", a, a), (r.x(3, 4),)),
    ]
    return checks


def _index_put(make_key):
    def put(x, value):
        y = x.clone()
        y[make_key()] = value
        return y

    return put


def _fill_where_positive(x):
    y = x.clone()
    y[x.detach() > 0] = 0.5
    return y


def _change_views_in_place(x, w):
    y = x * 1.5
    y[1:].mul_(w)
    y.t()[0].zero_()
    row = y[0]
    row += w  # from here on, row is y[0] of the changed y
    return y * y + row


def _masked_safe_softmax(x):
    mask = functions.tensor([[False, True, False, False], [True, True, True, True], [False, False, False, True]])
    return F.safe_softmax(x.masked_fill(mask, -math.inf), dim=-1)


def module_checks(seed=0):
    """Every layer, attention class and model in float64: gradients w.r.t. the input and every parameter.

    Modules train (dropout active): the checker's seeding freezes their masks.
    """
    r = _Numbers(seed + 1)
    random.manual_seed(seed)  # the modules' initial weights
    ids = functions.tensor([[0, 3, 5, 3], [1, 1, 2, 4]])
    next_ids = functions.tensor([[3, 5, 3, 1], [1, 2, 4, 0]])
    # n_embd=2 with 2 heads: every part of a GPT, with few parameters (each costs two evaluations)
    tiny_gpt = models.GPTConfig(vocab_size=6, block_size=4, n_layer=1, n_head=2, n_embd=2, dropout=0.2)
    cases = [
        # (name, module, input, extra arguments, which output to check)
        ("Linear", nn.Linear(4, 3), r.x(2, 3, 4)),
        ("Embedding", nn.Embedding(6, 3), ids),
        ("LayerNorm", nn.LayerNorm(4), r.x(2, 3, 4)),
        ("GELU", nn.GELU(), r.x(3, 4)),
        ("GELU tanh", nn.GELU(approximate="tanh"), r.x(3, 4)),
        ("ReLU", nn.ReLU(), r.nonzero(3, 4)),
        ("Tanh", nn.Tanh(), r.x(3, 4)),
        ("Sigmoid", nn.Sigmoid(), r.x(3, 4)),
        ("Softmax", nn.Softmax(dim=-1), r.x(3, 4)),
        ("SiLU", nn.SiLU(), r.x(3, 4)),
        ("LeakyReLU", nn.LeakyReLU(0.2), r.nonzero(3, 4)),
        ("ELU", nn.ELU(alpha=0.5), r.nonzero(3, 4)),
        ("Softplus", nn.Softplus(beta=2.0, threshold=3.0), r.x(3, 4)),
        ("Dropout p=0.5", nn.Dropout(0.5), r.x(3, 4)),
        ("Conv2d", nn.Conv2d(2, 3, 2, padding=1), r.x(1, 2, 3, 3)),
        ("ConvTranspose2d", nn.ConvTranspose2d(2, 2, 2, stride=2), r.x(1, 2, 2, 2)),
        ("Dropout2d p=0.5", nn.Dropout2d(0.5), r.x(2, 3, 2, 2)),
        ("CNN: Conv2d, BatchNorm2d, MaxPool2d, AdaptiveAvgPool2d, Linear",
         nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Tanh(), nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1),
                       nn.Flatten(), nn.Linear(2, 3)), r.x(1, 1, 6, 6)),
        ("CrossEntropyLoss", nn.CrossEntropyLoss(), r.x(4, 5), (r.ints(5, 4),)),
        ("MSELoss", nn.MSELoss(), r.x(3, 4), (r.x(3, 4).detach(),)),
        ("Sequential MLP", nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.Linear(6, 4)), r.x(2, 4)),
        ("SelfAttention_v1", nn.SelfAttention_v1(4, 3), r.x(5, 4)),
        ("SelfAttention_v2", nn.SelfAttention_v2(4, 3, qkv_bias=True), r.x(5, 4)),
        ("CausalAttention dropout 0.5", nn.CausalAttention(4, 3, 5, 0.5), r.x(2, 4, 4)),
        ("MultiHeadAttentionWrapper dropout 0.5", nn.MultiHeadAttentionWrapper(4, 2, 5, 0.5, num_heads=2),
         r.x(2, 3, 4)),
        ("MultiHeadAttention dropout 0.5", nn.MultiHeadAttention(4, 4, 5, 0.5, num_heads=2), r.x(2, 3, 4)),
        ("FeedForward (GPT) dropout 0.2", models.FeedForward(tiny_gpt), r.x(3, 2)),
        ("Block (GPT) dropout 0.2", models.Block(tiny_gpt), r.x(2, 3, 2)),
        ("BigramLanguageModel loss", models.BigramLanguageModel(6), ids, (next_ids,), 1),
        ("GPT loss dropout 0.2", models.GPT(tiny_gpt), ids, (next_ids,), 1),
    ]
    checks = []
    for name, module, x, *rest in cases:
        args = rest[0] if rest else ()
        output = rest[1] if len(rest) > 1 else None
        module.double().train()
        params = list(module.parameters())
        label = f"{list(x.shape)} + {len(params)} param{'s' * (len(params) != 1)}" if params else None
        checks.append(Check(name, _call(module, args, output), (x, *params), label))
    return checks


def _call(module, args=(), output=None):
    def forward(x, *params):  # the parameters are inputs only so that the check perturbs them
        result = module(x, *args)
        return result if output is None else result[output]

    return forward


def main(argv=None):
    """`tinyattn gradcheck`: check every op and layer against finite differences; print a table.

    Returns 0 when every check passes, 1 otherwise.
    """
    parser = ArgumentParser(
        prog="tinyattn gradcheck",
        description="Compare every op's and layer's backward with central differences in float64.",
        epilog="Ctrl-C stops the run after the checks done so far, with their summary (exit status 130).",
    )
    parser.add_argument("-k", "--filter", default="", help="only the checks whose name contains this text")
    parser.add_argument("--fast", action="store_true", help="compare random projections v^T J u (fast_mode)")
    parser.add_argument("--eps", type=float, default=1e-6, help="finite-difference step (default 1e-6)")
    parser.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance (default 1e-5)")
    parser.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance (default 1e-3)")
    args = parser.parse_args(argv)
    try:
        _check_settings(args.eps, args.atol, args.rtol)
    except ValueError as error:
        parser.error(str(error))

    state = random.get_rng_state()
    try:
        checks = op_checks() + module_checks()
    finally:
        random.set_rng_state(state)
    checks = [c for c in checks if args.filter.lower() in c.name.lower()]
    if not checks:
        parser.error(f"no check matches {args.filter!r}: run without -k to see every check's name")

    name_width = max(len("check"), *(len(c.name) for c in checks))
    shape_width = max(len("inputs"), *(len(c.label) for c in checks))
    width = terminal_width()
    others = len("  ") * 3 + 13 + len("result")
    if width is not None and name_width + shape_width + others > width:  # wrap the two text columns
        room = max(width - 1 - others, 32)
        shape_width = min(shape_width, max(16, room * 2 // 5))
        name_width = room - shape_width
    header = f"{'check':<{name_width}}  {'inputs':<{shape_width}}  {'max abs error':>13}  result"
    print(header)
    print("-" * len(header))
    failures = []
    done = 0
    start = time.perf_counter()
    try:
        for check in checks:
            try:
                report = check_gradients(check.fn, check.inputs, eps=args.eps, atol=args.atol, rtol=args.rtol,
                                         fast_mode=args.fast)
                error = report.error
            except Exception as exc:  # an op that crashes is a failed check, not a crashed table
                report, error = Report(), exc
                report.max_abs_error = math.nan
            if error is not None:
                failures.append((check.name, error))
            done += 1
            names = fill(check.name.split(" "), name_width)
            labels = fill(re.split(r"(?<=\],) ", check.label), shape_width)  # break between shapes
            print(f"{names[0]:<{name_width}}  {labels[0]:<{shape_width}}  {report.max_abs_error:>13.1e}  "
                  f"{'PASS' if error is None else 'FAIL'}")
            for name, label in itertools.zip_longest(names[1:], labels[1:], fillvalue=""):
                print(f"{name:<{name_width}}  {label}".rstrip())
            sys.stdout.flush()
    except KeyboardInterrupt:
        interrupted = checks[done].name
    else:
        interrupted = None
    elapsed = time.perf_counter() - start
    if interrupted is not None and is_terminal(sys.stdout):
        print()  # the terminal echoed ^C where the next row would start: the separator gets its own line
    print("-" * len(header))
    settings = f"float64, eps={args.eps}, atol={args.atol}, rtol={args.rtol}{', fast mode' if args.fast else ''}"
    if failures:
        print(f"{len(failures)} of {plural(done, 'check')} FAILED ({settings}; {elapsed:.1f} s):")
        for name, error in failures:
            print(f"  {name}: {type(error).__name__}: {error}")
    elif interrupted is None:
        print(f"{'all ' if done > 1 else ''}{plural(done, 'check')} passed ({settings}; {elapsed:.1f} s)")
    elif done:
        print(f"{done} of {plural(len(checks), 'check')} passed ({settings}; {elapsed:.1f} s)")
    if interrupted is not None:
        sys.stdout.flush()
        print(fit(f"tinyattn gradcheck: interrupted during the check {interrupted!r}, after {done} of "
                  f"{plural(len(checks), 'check')}", sys.stderr), file=sys.stderr)
        return EXIT_INTERRUPTED
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
