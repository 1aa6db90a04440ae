"""The attention chapter's classes and scaled_dot_product_attention, proven by properties.

For every class (SelfAttention_v1, SelfAttention_v2, CausalAttention, MultiHeadAttentionWrapper,
MultiHeadAttention) and for F.scaled_dot_product_attention, over random small shapes:
- the attention weights are row-stochastic (non-negative, rows sum to 1, before dropout);
- causal attention never looks ahead: changing the inputs after position t leaves output t unchanged,
  and the weights above the diagonal are exactly 0;
- dropout is the identity in eval mode and at p=0, zeroes about p of the weights in training (a
  Hoeffding bound, written down below) and scales the kept ones by 1/(1-p); p=1 gives zero weights;
- the multi-head wrapper equals the weight-split class when the weights correspond
  (`tinyattn.nn.attention.multihead_from_wrapper`);
- non-causal self-attention is permutation-equivariant; batch items never influence each other;
- softmax is shift-invariant, and q.k / sqrt(d_k) has about unit variance for unit-variance q, k;
- gradients w.r.t. the input and every parameter pass gradcheck in float64, dropout active included.
The seeds' printed numbers are reproduced to 4 decimals, and where PyTorch is installed the book's
own PyTorch classes (copied below) exchange state_dicts with ours and give the same outputs and
gradients.
"""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tinyattn
import tinyattn.nn as nn
from tinyattn.nn import functional as F
from tinyattn.nn.attention import multihead_from_wrapper

seeds = st.integers(0, 2**31 - 1)
CLASSES = ["SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttentionWrapper",
           "MultiHeadAttention"]
CAUSAL = CLASSES[2:]

# the six-token "Your journey starts with one step" embeddings of the chapter
INPUTS = np.array([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                   [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]], np.float32)


def host(t):
    return t.detach().numpy()


def tensor64(seed, *shape, scale=1.0, requires_grad=False):
    data = np.random.default_rng(seed).standard_normal(shape) * scale
    return tinyattn.tensor(data, dtype=tinyattn.float64, requires_grad=requires_grad)


@st.composite
def cases(draw, classes=CLASSES):
    """A class and small shapes: batch <= 3, tokens <= 6, dims <= 8."""
    name = draw(st.sampled_from(classes))
    heads = draw(st.integers(1, 3))
    return dict(
        name=name,
        batch=draw(st.integers(1, 3)),
        tokens=draw(st.integers(1, 6)),
        extra_context=draw(st.integers(0, 2)),  # context_length may exceed the number of tokens
        d_in=draw(st.integers(1, 8)),
        heads=heads,
        head_dim=draw(st.integers(1, 8 // heads)),
        qkv_bias=draw(st.booleans()),
        seed=draw(seeds),
    )


@st.composite
def small_cases(draw, classes=CLASSES):
    case = draw(cases(classes))
    case.update(batch=min(case["batch"], 2), tokens=min(case["tokens"], 4), d_in=min(case["d_in"], 4),
                head_dim=min(case["head_dim"], 2))
    return case


def build(case, dropout=0.0):
    """The case's module in float64 (seeded), and a matching float64 input."""
    tinyattn.manual_seed(case["seed"])
    name, d_in, d_out = case["name"], case["d_in"], case["heads"] * case["head_dim"]
    context = case["tokens"] + case["extra_context"]
    if name == "SelfAttention_v1":
        module = nn.SelfAttention_v1(d_in, d_out)
    elif name == "SelfAttention_v2":
        module = nn.SelfAttention_v2(d_in, d_out, qkv_bias=case["qkv_bias"])
    elif name == "CausalAttention":
        module = nn.CausalAttention(d_in, d_out, context, dropout, qkv_bias=case["qkv_bias"])
    elif name == "MultiHeadAttentionWrapper":
        module = nn.MultiHeadAttentionWrapper(d_in, case["head_dim"], context, dropout, case["heads"],
                                              qkv_bias=case["qkv_bias"])
    else:
        module = nn.MultiHeadAttention(d_in, d_out, context, dropout, case["heads"], qkv_bias=case["qkv_bias"])
    x = tensor64(case["seed"] + 1, case["batch"], case["tokens"], d_in, scale=2.0)
    return module.double(), x


def weights_of(module):
    """The attention weights of the last forward as (batch, heads, tokens, tokens)."""
    w = host(module.attn_weights)
    return w[:, None] if w.ndim == 3 else w


def sdpa_weights(q, k, **kwargs):
    """F.scaled_dot_product_attention's weights: with the identity as values, the output is the weights."""
    eye = tinyattn.eye(k.shape[-2], dtype=q.dtype)
    return F.scaled_dot_product_attention(q, k, eye, **kwargs)


# ---------------------------------------------------------------------------------------------
# the weights are row-stochastic


@given(case=cases(), dropout=st.sampled_from([0.0, 0.5]))
def test_weights_are_row_stochastic(case, dropout):
    module, x = build(case, dropout=dropout)
    module.train()(x)  # .attn_weights are the weights before dropout
    w = weights_of(module)
    assert w.shape == (case["batch"], case["heads"] if "Multi" in case["name"] else 1, case["tokens"], case["tokens"])
    assert (w >= 0).all()
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
    assert not module.attn_weights.requires_grad  # kept for inspection, outside the graph


@given(seed=seeds, batch=st.integers(1, 3), heads=st.integers(1, 2), queries=st.integers(1, 6),
       keys=st.integers(1, 6), dim=st.integers(1, 8), causal=st.booleans())
def test_sdpa_weights_are_row_stochastic(seed, batch, heads, queries, keys, dim, causal):
    q = tensor64(seed, batch, heads, queries, dim)
    k = tensor64(seed + 1, batch, heads, keys, dim)
    w = host(sdpa_weights(q, k, is_causal=causal))
    assert (w >= 0).all()
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# causality


@given(case=cases(CAUSAL), data=st.data())
def test_causal_output_never_depends_on_later_tokens(case, data):
    module, x = build(case)
    t = data.draw(st.integers(0, case["tokens"] - 1), label="t")
    before = host(module(x))
    w = weights_of(module)
    assert (np.triu(w, k=1) == 0).all()  # exactly 0 above the diagonal
    changed = host(x).copy()
    changed[:, t + 1:] += np.random.default_rng(case["seed"]).standard_normal(changed[:, t + 1:].shape) * 5
    after = host(module(tinyattn.tensor(changed)))
    np.testing.assert_array_equal(after[:, : t + 1], before[:, : t + 1])


@given(seed=seeds, tokens=st.integers(1, 6), dim=st.integers(1, 8), data=st.data())
def test_sdpa_is_causal(seed, tokens, dim, data):
    t = data.draw(st.integers(0, tokens - 1), label="t")
    q, k, v = (tensor64(seed + i, 2, tokens, dim) for i in range(3))
    assert (np.triu(host(sdpa_weights(q, k, is_causal=True)), k=1) == 0).all()
    before = host(F.scaled_dot_product_attention(q, k, v, is_causal=True))
    moved = [host(a).copy() for a in (q, k, v)]
    for a in moved:
        a[:, t + 1:] += 3.0
    after = host(F.scaled_dot_product_attention(*map(tinyattn.tensor, moved), is_causal=True))
    np.testing.assert_array_equal(after[:, : t + 1], before[:, : t + 1])


def test_sdpa_masks_follow_pytorch_conventions():
    q, k, v = (tensor64(i, 1, 4, 3) for i in range(3))
    causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    allowed = tinyattn.ones(4, 4, dtype=tinyattn.bool).tril()  # True = may attend
    np.testing.assert_allclose(host(F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)), host(causal))
    additive = tinyattn.zeros(4, 4, dtype=tinyattn.float64).masked_fill(~allowed, -math.inf)
    np.testing.assert_allclose(host(F.scaled_dot_product_attention(q, k, v, attn_mask=additive)), host(causal))
    with pytest.raises(ValueError):
        F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, is_causal=True)


# ---------------------------------------------------------------------------------------------
# a fully masked row gives zeros, never NaN


def test_sdpa_fully_masked_row_gives_zeros():
    q, k, v = (tensor64(i, 2, 3, 4, requires_grad=True) for i in range(3))
    allowed = tinyattn.tensor([[True, True, False], [False, False, False], [True, False, True]])
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    assert np.isfinite(host(out)).all()
    np.testing.assert_array_equal(host(out)[:, 1], 0.0)
    out.sum().backward()
    assert all(np.isfinite(host(t.grad)).all() for t in (q, k, v))


@pytest.mark.parametrize("name", CAUSAL)
def test_module_fully_masked_rows_give_zeros(name):
    module, x = build(dict(name=name, batch=2, tokens=4, extra_context=0, d_in=3, heads=2, head_dim=2,
                           qkv_bias=False, seed=5))
    for m in module.modules():  # mask everything: every row of every head is fully masked
        if "mask" in m._buffers:
            m.mask = tinyattn.ones_like(m.mask)
    x.requires_grad_()
    out = module(x)
    assert np.isfinite(host(out)).all()
    np.testing.assert_array_equal(weights_of(module), 0.0)
    out.sum().backward()
    assert np.isfinite(host(x.grad)).all()


# ---------------------------------------------------------------------------------------------
# dropout on the attention weights


@given(case=cases(CAUSAL), p=st.floats(0.05, 0.95))
def test_dropout_is_identity_in_eval_and_at_p0(case, p):
    with_dropout, x = build(case, dropout=p)
    without, _ = build(case, dropout=0.0)  # same seed: same weights
    want = host(without(x))
    np.testing.assert_array_equal(host(with_dropout.eval()(x)), want)
    np.testing.assert_array_equal(host(without.train()(x)), want)


@given(case=cases(CAUSAL), p=st.floats(0.05, 0.95))
def test_dropout_zeroes_or_scales_each_weight(case, p):
    """In training, the output is (dropped weights) @ values, each weight either 0 or w / (1 - p)."""
    module, x = build(case, dropout=p)
    module.train()
    tinyattn.manual_seed(case["seed"])
    out = host(module(x))
    w = weights_of(module)  # before dropout
    dropped = dropped_weights(module, case["seed"], p)
    kept = dropped != 0
    np.testing.assert_allclose(dropped[kept], w[kept] / (1 - p), rtol=1e-12)
    # the module's output is exactly what those dropped weights give
    if case["name"] == "CausalAttention":
        want = dropped[:, 0] @ host(module.W_value(x))
    elif case["name"] == "MultiHeadAttentionWrapper":
        want = np.concatenate([dropped[:, i] @ host(h.W_value(x)) for i, h in enumerate(module.heads)], -1)
    else:
        b, t = case["batch"], case["tokens"]
        values = host(module.W_value(x)).reshape(b, t, case["heads"], case["head_dim"]).transpose(0, 2, 1, 3)
        merged = (dropped @ values).transpose(0, 2, 1, 3).reshape(b, t, -1)
        want = merged @ host(module.out_proj.weight).T + host(module.out_proj.bias)
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", CAUSAL)
def test_dropout_p1_gives_zero_weights(name):
    module, x = build(dict(name=name, batch=2, tokens=5, extra_context=1, d_in=4, heads=2, head_dim=2,
                           qkv_bias=True, seed=3), dropout=1.0)
    out = host(module.train()(x))
    if name == "MultiHeadAttention":  # zero weights: zero context; what is left is out_proj's bias
        np.testing.assert_array_equal(out, np.broadcast_to(host(module.out_proj.bias), out.shape))
    else:
        np.testing.assert_array_equal(out, 0.0)
    q = tensor64(1, 2, 3, 4)
    np.testing.assert_array_equal(host(F.scaled_dot_product_attention(q, q, q, dropout_p=1.0)), 0.0)


# The statistical test. N weights, each dropped independently with probability p: the number dropped,
# Z, is Binomial(N, p). Hoeffding's inequality: P(|Z/N - p| >= eps) <= 2 exp(-2 N eps^2). With
# eps = sqrt(ln(2 / delta) / (2 N)) a correct dropout fails this test with probability at most delta;
# delta = 1e-9 per example (so at most ~1e-8 over a whole Hypothesis run). Every weight is > 0 before
# dropout (no masking, moderate scores), so a zero after dropout is a dropped weight.
FALSE_FAILURE = 1e-9


def hoeffding_eps(n, delta=FALSE_FAILURE):
    return math.sqrt(math.log(2 / delta) / (2 * n))


@given(seed=seeds, p=st.sampled_from([0.1, 0.25, 0.5, 0.8]))
def test_sdpa_dropout_rate_and_scale(seed, p):
    q = tensor64(seed, 4, 4, 32, 8, scale=0.5)
    k = tensor64(seed + 1, 4, 4, 32, 8, scale=0.5)
    w = host(sdpa_weights(q, k))
    assert (w > 0).all()
    tinyattn.manual_seed(seed)
    dropped = host(sdpa_weights(q, k, dropout_p=p))
    n = dropped.size  # 16384 weights: eps ~ 0.026
    rate = (dropped == 0).mean()
    assert abs(rate - p) < hoeffding_eps(n), (rate, p, hoeffding_eps(n))
    kept = dropped != 0
    np.testing.assert_allclose(dropped[kept], w[kept] / (1 - p), rtol=1e-12)


def dropped_weights(module, seed, p):
    """The weights after the dropout that module's last forward (run right after manual_seed(seed)) drew."""
    tinyattn.manual_seed(seed)  # the same draws again: the same masks, head after head
    heads = module.heads if isinstance(module, nn.MultiHeadAttentionWrapper) else [module]
    dropped = [host(F.dropout(head.attn_weights, p)) for head in heads]
    return np.stack(dropped, axis=1) if len(heads) > 1 else dropped[0].reshape(weights_of(module).shape)


@pytest.mark.parametrize("name", CAUSAL)
@given(seed=seeds, p=st.sampled_from([0.1, 0.5, 0.8]))
def test_module_dropout_rate(name, seed, p):
    module, x = build(dict(name=name, batch=3, tokens=32, extra_context=0, d_in=8, heads=2, head_dim=4,
                           qkv_bias=False, seed=seed), dropout=p)
    x = x * 0.2  # moderate scores: every causal weight is > 0 before dropout
    tinyattn.manual_seed(seed)
    module.train()(x)
    w = weights_of(module)
    dropped = dropped_weights(module, seed, p)
    allowed = np.broadcast_to(np.tril(np.ones((32, 32), bool)), w.shape)
    assert (w[allowed] > 0).all()
    n = int(allowed.sum())  # 528 causal weights per (item, head): n >= 1584, eps <= 0.083
    rate = (dropped[allowed] == 0).mean()
    assert abs(rate - p) < hoeffding_eps(n), (rate, p, hoeffding_eps(n))


# ---------------------------------------------------------------------------------------------
# the wrapper and the weight-split class


@given(case=cases(["MultiHeadAttentionWrapper"]), training=st.booleans())
def test_wrapper_equals_multihead_when_weights_correspond(case, training):
    wrapper, x = build(case)
    wrapper.train(training)
    mha = multihead_from_wrapper(wrapper)
    assert isinstance(mha, nn.MultiHeadAttention) and mha.training == training
    assert mha.num_heads == case["heads"] and mha.head_dim == case["head_dim"]
    d = case["head_dim"]
    for i, head in enumerate(wrapper.heads):  # head i's projections are rows i*d .. (i+1)*d
        for name in ("W_query", "W_key", "W_value"):
            np.testing.assert_array_equal(host(getattr(mha, name).weight)[i * d:(i + 1) * d],
                                          host(getattr(head, name).weight))
    np.testing.assert_array_equal(host(mha.out_proj.weight), np.eye(case["heads"] * d))
    np.testing.assert_array_equal(host(mha.out_proj.bias), 0.0)
    np.testing.assert_allclose(host(mha(x)), host(wrapper(x)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(host(mha.attn_weights), host(wrapper.attn_weights), rtol=1e-12, atol=1e-15)


@given(case=small_cases(["MultiHeadAttention"]), data=st.data())
def test_multihead_properties_on_both_backends(xp_backend, case, data):
    """Row-stochastic weights, causality and independent batch items, on NumPy and array_api_strict."""
    module, x = build(case)
    out = host(module(x))
    w = weights_of(module)
    assert (w >= 0).all() and (np.triu(w, k=1) == 0).all()
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
    t = data.draw(st.integers(0, case["tokens"] - 1), label="t")
    changed = host(x).copy()
    changed[:, t + 1:] += 5.0
    changed[1:] *= -1  # other batch items change too
    after = host(module(tinyattn.tensor(changed)))
    np.testing.assert_array_equal(after[0, : t + 1], out[0, : t + 1])


# ---------------------------------------------------------------------------------------------
# MultiHeadAttention's fused core (F.attention) against the book's steps


def book_multihead_forward(self, x):
    """MultiHeadAttention.forward as the book writes it: one tensor op per step."""
    b, num_tokens, _ = x.shape
    keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
    queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
    values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
    attn_scores = queries @ keys.transpose(2, 3)
    attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -math.inf)
    attn_weights = F.safe_softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
    context_vec = (self.dropout(attn_weights) @ values).transpose(1, 2)
    return self.out_proj(context_vec.contiguous().view(b, num_tokens, self.d_out)), attn_weights


@given(case=cases(["MultiHeadAttention"]), dropout=st.sampled_from([0.0, 0.3]),
       dtype=st.sampled_from(["float32", "float64"]))
def test_fused_multihead_computes_the_books_numbers_bit_for_bit(xp_backend, case, dropout, dtype):
    module, x = build(case, dropout=dropout)
    module.to(getattr(tinyattn, dtype))
    x = x.to(getattr(tinyattn, dtype)).requires_grad_()
    results = []
    for forward in (lambda: (module(x), module.attn_weights), lambda: book_multihead_forward(module, x)):
        module.zero_grad()
        x.grad = None
        tinyattn.manual_seed(case["seed"])  # the same dropout mask for both
        out, weights = forward()
        (out * out).sum().backward()
        results.append([host(out), host(weights), host(x.grad)] + [host(p.grad) for p in module.parameters()])
    for fused, book in zip(*results):
        np.testing.assert_array_equal(fused, book)


def test_attention_returns_the_weights_and_differentiates_through_them():
    q, k, v = (tensor64(i, 2, 3, n, d, requires_grad=True) for i, n, d in ((0, 4, 5), (1, 6, 5), (2, 6, 2)))
    blocked = F.causal_mask(4, 6)
    context, weights = F.attention(q, k, v, blocked=blocked)
    scores = (q @ k.transpose(-2, -1) / 5 ** 0.5).masked_fill(blocked, -math.inf)
    np.testing.assert_allclose(host(weights), host(scores.softmax(-1)), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(host(context), host(scores.softmax(-1) @ v), rtol=1e-12, atol=1e-15)
    (weights * weights).sum().backward()  # only the weights: v gets no gradient
    expected = tinyattn.autograd.grad((scores.softmax(-1) ** 2).sum(), [q, k])
    for ours, theirs in zip((q.grad, k.grad), expected):
        np.testing.assert_allclose(host(ours), host(theirs), rtol=1e-10, atol=1e-12)
    assert v.grad is None


def test_attention_errors_say_what_is_wrong():
    q, k, v = tinyattn.randn(2, 3, 4), tinyattn.randn(2, 5, 4), tinyattn.randn(2, 5, 6)
    with pytest.raises(tinyattn.ShapeError, match=r"queries of shape \[2, 3, 4\] and keys of shape \[2, 5, 3\]"):
        F.attention(q, tinyattn.randn(2, 5, 3), v)
    with pytest.raises(tinyattn.ShapeError, match=r"keys of shape \[2, 5, 4\] and values of shape \[2, 4, 6\]"):
        F.attention(q, k, tinyattn.randn(2, 4, 6))
    with pytest.raises(tinyattn.ShapeError, match=r"leading dims .* do not broadcast"):
        F.attention(q, tinyattn.randn(3, 5, 4), tinyattn.randn(3, 5, 6))
    with pytest.raises(tinyattn.ShapeError, match=r"mask's shape \[3, 4\] does not broadcast to the scores' shape \[2, 3, 5\]"):
        F.attention(q, k, v, blocked=tinyattn.zeros(3, 4, dtype=tinyattn.bool))
    with pytest.raises(TypeError, match="blocked must be a bool tensor"):
        F.attention(q, k, v, blocked=tinyattn.zeros(3, 5))
    with pytest.raises(TypeError, match="float mask must have the query's dtype"):
        F.attention(q, k, v, bias=tinyattn.zeros(3, 5, dtype=tinyattn.float64))
    with pytest.raises(TypeError, match="same dtype"):
        F.attention(q, k.double(), v)
    with pytest.raises(TypeError, match="query must be a floating-point tensor"):
        F.attention(tinyattn.ones(2, 3, 4, dtype=tinyattn.int64), k, v)
    with pytest.raises(ValueError, match="dropout probability"):
        F.attention(q, k, v, dropout_p=1.5)


def test_wrapper_equals_multihead_on_the_strict_backend(xp_backend):
    tinyattn.manual_seed(7)
    wrapper = nn.MultiHeadAttentionWrapper(5, 3, 6, 0.0, num_heads=2, qkv_bias=True)
    x = tinyattn.randn(2, 6, 5)
    np.testing.assert_allclose(host(multihead_from_wrapper(wrapper)(x)), host(wrapper(x)), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# symmetries: permutations and batch items


@given(case=cases(["SelfAttention_v1", "SelfAttention_v2"]), data=st.data())
def test_non_causal_self_attention_is_permutation_equivariant(case, data):
    module, x = build(case)
    perm = np.array(data.draw(st.permutations(range(case["tokens"])), label="perm"))
    out = host(module(x))
    np.testing.assert_allclose(host(module(x[:, perm])), out[:, perm], rtol=1e-10, atol=1e-12)


@given(seed=seeds, tokens=st.integers(1, 6), dim=st.integers(1, 8), data=st.data())
def test_non_causal_sdpa_is_permutation_equivariant(seed, tokens, dim, data):
    perm = np.array(data.draw(st.permutations(range(tokens)), label="perm"))
    x = tensor64(seed, 2, tokens, dim)  # self-attention: q = k = v = x
    out = host(F.scaled_dot_product_attention(x, x, x))
    np.testing.assert_allclose(host(F.scaled_dot_product_attention(x[:, perm], x[:, perm], x[:, perm])),
                               out[:, perm], rtol=1e-10, atol=1e-12)


@given(case=cases(), data=st.data())
def test_batch_items_are_independent(case, data):
    module, x = build(case)
    out = host(module(x))
    i = data.draw(st.integers(0, case["batch"] - 1), label="item")
    np.testing.assert_allclose(host(module(x[i:i + 1]))[0], out[i], rtol=1e-10, atol=1e-12)
    changed = host(x).copy()
    others = np.arange(case["batch"]) != i
    changed[others] = -changed[others] + 1.0
    np.testing.assert_array_equal(host(module(tinyattn.tensor(changed)))[i], out[i])


# ---------------------------------------------------------------------------------------------
# softmax and the scaling by sqrt(d_k)


@given(seed=seeds, rows=st.integers(1, 4), cols=st.integers(1, 8), shift=st.floats(-1e3, 1e3))
def test_softmax_is_shift_invariant(seed, rows, cols, shift):
    x = tensor64(seed, rows, cols, scale=3.0)
    per_row = tensor64(seed + 1, rows, 1, scale=100.0)
    want = host(F.softmax(x, dim=-1))
    np.testing.assert_allclose(host(F.softmax(x + shift, dim=-1)), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(host(F.softmax(x + per_row, dim=-1)), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(host(F.safe_softmax(x + per_row, dim=-1)), want, rtol=1e-9, atol=1e-12)


def test_scaled_scores_have_unit_variance():
    """The seeds' argument for dividing by sqrt(d_k): for q, k with unit-variance entries, q.k has
    variance d_k, and q.k / sqrt(d_k) variance 1.

    Z = q.k / sqrt(d) has E[Z^2] = 1 and Var(Z^2) = 2 + 6/d (<= 8). The mean of n = 4096 samples of
    Z^2 has standard error <= sqrt(8 / 4096) = 0.044, so the tolerance 0.25 is more than 5 standard
    errors (CLT: false failure ~1e-7); the generator is seeded, so the test is deterministic anyway.
    """
    tinyattn.manual_seed(0)
    n = 4096
    for d in (4, 16, 64):
        q, k = tinyattn.randn(n, d), tinyattn.randn(n, d)
        scores = (q * k).sum(-1)
        scaled = scores / d**0.5
        second_moment = float((scaled * scaled).mean())
        assert abs(second_moment - 1) < 0.25, (d, second_moment)
        assert abs(float((scores * scores).mean()) / d - 1) < 0.25  # unscaled: variance d_k


# ---------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("name", CAUSAL)
def test_too_long_sequence_is_a_clear_error(name):
    module, _ = build(dict(name=name, batch=1, tokens=4, extra_context=0, d_in=3, heads=1, head_dim=2,
                           qkv_bias=False, seed=0))
    with pytest.raises(ValueError, match=r"(?s)\b6\b.*context_length=4"):
        module(tensor64(0, 1, 6, 3))


def test_heads_must_divide_d_out():
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiHeadAttention(3, 5, 4, 0.0, num_heads=2)


def test_shapes_and_names_follow_the_book():
    mha = nn.MultiHeadAttention(3, 4, 6, 0.1, num_heads=2)
    assert list(mha.state_dict()) == ["mask", "W_query.weight", "W_key.weight", "W_value.weight",
                                      "out_proj.weight", "out_proj.bias"]
    assert mha.W_query.weight.shape == (4, 3) and mha.mask.shape == (6, 6)
    v1 = nn.SelfAttention_v1(3, 2)
    assert list(v1.state_dict()) == ["W_query", "W_key", "W_value"] and v1.W_query.shape == (3, 2)
    wrapper = nn.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2, qkv_bias=True)
    assert list(wrapper.state_dict())[:5] == ["heads.0.mask", "heads.0.W_query.weight", "heads.0.W_query.bias",
                                              "heads.0.W_key.weight", "heads.0.W_key.bias"]
    assert wrapper(tinyattn.randn(1, 6, 3)).shape == (1, 6, 4)


# ---------------------------------------------------------------------------------------------
# gradients against finite differences


def module_gradcheck(module, x, **kwargs):
    """gradcheck w.r.t. the input and every parameter (the checker perturbs parameters in place)."""
    params = list(module.parameters())
    assert params
    assert tinyattn.gradcheck(lambda x, *ps: module(x), (x, *params), **kwargs)


@given(case=small_cases(), dropout=st.sampled_from([0.0, 0.3]))
def test_module_gradients_pass_gradcheck(case, dropout):
    module, x = build(case, dropout=dropout)
    module.train()  # dropout active (where the class has it): the checker's seed freezes the mask
    module_gradcheck(module, x.requires_grad_(), seed=case["seed"])


@given(seed=seeds, dropout=st.sampled_from([0.0, 0.4]))
def test_multihead_gradcheck_on_both_backends(xp_backend, seed, dropout):
    tinyattn.manual_seed(seed)
    mha = nn.MultiHeadAttention(2, 2, 4, dropout, num_heads=2, qkv_bias=True).double()
    module_gradcheck(mha, tensor64(seed, 2, 3, 2, requires_grad=True), seed=seed)


@given(seed=seeds, causal=st.booleans(), dropout=st.sampled_from([0.0, 0.3]), scale=st.sampled_from([None, 0.7]))
def test_sdpa_gradcheck(seed, causal, dropout, scale):
    q, k, v = (tensor64(seed + i, 2, 3, 2, requires_grad=True) for i in range(3))
    assert tinyattn.gradcheck(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=causal, scale=scale),
        (q, k, v), seed=seed)


# ---------------------------------------------------------------------------------------------
# the seeds' printed numbers (4 decimals)


def test_seed_numbers_without_weights():
    x = tinyattn.tensor(INPUTS)
    scores = x @ x.T
    np.testing.assert_allclose(host(scores)[0], [0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310], atol=5e-5)
    np.testing.assert_allclose(host(scores)[4], [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935], atol=5e-5)
    weights = tinyattn.softmax(scores, dim=-1)
    np.testing.assert_allclose(host(weights)[1], [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581], atol=5e-5)
    np.testing.assert_allclose(host(weights @ x), [
        [0.4421, 0.5931, 0.5790], [0.4419, 0.6515, 0.5683], [0.4431, 0.6496, 0.5671],
        [0.4304, 0.6298, 0.5510], [0.4671, 0.5910, 0.5266], [0.4177, 0.6503, 0.5645]], atol=5e-5)


def test_seed_numbers_self_attention_v1_at_seed_123():
    tinyattn.manual_seed(123)
    sa = nn.SelfAttention_v1(3, 2)
    np.testing.assert_allclose(host(sa.W_query), [[0.2961, 0.5166], [0.2517, 0.6886], [0.0740, 0.8665]], atol=5e-5)
    np.testing.assert_allclose(host(sa(tinyattn.tensor(INPUTS))), [
        [0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203],
        [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]], atol=5e-5)
    np.testing.assert_allclose(host(sa.attn_weights)[1], [0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820], atol=5e-5)


def test_seed_numbers_self_attention_v2():
    x = tinyattn.tensor(INPUTS)
    tinyattn.manual_seed(789)
    sa = nn.SelfAttention_v2(3, 2)
    np.testing.assert_allclose(host(sa(x)), [
        [-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702],
        [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693]], atol=5e-5)
    np.testing.assert_allclose(host(sa.attn_weights)[0], [0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510], atol=5e-5)
    tinyattn.manual_seed(123)
    np.testing.assert_allclose(host(nn.SelfAttention_v2(3, 2)(x))[[0, 5]], [[-0.5337, -0.1051], [-0.5299, -0.1081]],
                               atol=5e-5)


def test_seed_numbers_causal_and_multihead():
    batch = tinyattn.stack((tinyattn.tensor(INPUTS), tinyattn.tensor(INPUTS)))
    # the book's CausalAttention at seed 123 (seed 000's copy forgot to mask, so only its last row,
    # where the mask hides nothing, is printed there: -0.5299, -0.1081)
    tinyattn.manual_seed(123)
    ca = nn.CausalAttention(3, 2, 6, 0.0)
    want = [[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632],
            [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]]
    np.testing.assert_allclose(host(ca(batch)), [want, want], atol=5e-5)
    np.testing.assert_allclose(host(ca.attn_weights)[0, 1], [0.4833, 0.5167, 0, 0, 0, 0], atol=5e-5)
    tinyattn.manual_seed(123)
    wrapper = nn.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    out = host(wrapper(batch))
    assert out.shape == (2, 6, 4)
    np.testing.assert_allclose(out[0, 0], [-0.4519, 0.2216, 0.4772, 0.1063], atol=5e-5)
    np.testing.assert_allclose(out[1, 5], [-0.5299, -0.1081, 0.5077, 0.3493], atol=5e-5)  # seed 000 In [33]
    tinyattn.manual_seed(123)
    mha = nn.MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)
    np.testing.assert_allclose(host(mha(batch))[0, [0, 5]], [[0.3190, 0.4858], [0.2575, 0.4028]], atol=5e-5)
    # seed 000 In [62]: six-dimensional inputs, three tokens, two heads
    x = tinyattn.tensor([[0.43, 0.15, 0.89, 0.55, 0.87, 0.66], [0.57, 0.85, 0.64, 0.22, 0.58, 0.33],
                         [0.77, 0.25, 0.10, 0.05, 0.80, 0.55]])
    tinyattn.manual_seed(123)
    mha = nn.MultiHeadAttention(6, 6, 3, 0.0, num_heads=2)
    want = [[0.1569, -0.0873, 0.0210, 0.0215, -0.3243, -0.2518],
            [0.1117, -0.0547, 0.0406, -0.0213, -0.3251, -0.2993],
            [0.1196, -0.0491, 0.0318, -0.0635, -0.2788, -0.2578]]
    np.testing.assert_allclose(host(mha(tinyattn.stack((x, x)))), [want, want], atol=5e-5)


# ---------------------------------------------------------------------------------------------
# the book's PyTorch classes: state_dicts both ways, same outputs, same gradients


def book_classes(torch):
    """The attention chapter's PyTorch classes, as the book writes them."""
    nn_ = torch.nn

    class SelfAttention_v1(nn_.Module):
        def __init__(self, d_in, d_out):
            super().__init__()
            self.W_query = nn_.Parameter(torch.rand(d_in, d_out))
            self.W_key = nn_.Parameter(torch.rand(d_in, d_out))
            self.W_value = nn_.Parameter(torch.rand(d_in, d_out))

        def forward(self, x):
            keys = x @ self.W_key
            queries = x @ self.W_query
            values = x @ self.W_value
            attn_scores = queries @ keys.T  # omega
            attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
            context_vec = attn_weights @ values
            return context_vec

    class SelfAttention_v2(nn_.Module):
        def __init__(self, d_in, d_out, qkv_bias=False):
            super().__init__()
            self.W_query = nn_.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key = nn_.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = nn_.Linear(d_in, d_out, bias=qkv_bias)

        def forward(self, x):
            keys = self.W_key(x)
            queries = self.W_query(x)
            values = self.W_value(x)
            attn_scores = queries @ keys.T
            attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
            context_vec = attn_weights @ values
            return context_vec

    class CausalAttention(nn_.Module):
        def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
            super().__init__()
            self.d_out = d_out
            self.W_query = nn_.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key = nn_.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = nn_.Linear(d_in, d_out, bias=qkv_bias)
            self.dropout = nn_.Dropout(dropout)
            self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

        def forward(self, x):
            b, num_tokens, d_in = x.shape
            keys = self.W_key(x)
            queries = self.W_query(x)
            values = self.W_value(x)
            attn_scores = queries @ keys.transpose(1, 2)
            attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
            attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
            attn_weights = self.dropout(attn_weights)
            context_vec = attn_weights @ values
            return context_vec

    class MultiHeadAttentionWrapper(nn_.Module):
        def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
            super().__init__()
            self.heads = nn_.ModuleList(
                [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
            )

        def forward(self, x):
            return torch.cat([head(x) for head in self.heads], dim=-1)

    class MultiHeadAttention(nn_.Module):
        def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
            super().__init__()
            assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
            self.d_out = d_out
            self.num_heads = num_heads
            self.head_dim = d_out // num_heads
            self.W_query = nn_.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key = nn_.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = nn_.Linear(d_in, d_out, bias=qkv_bias)
            self.out_proj = nn_.Linear(d_out, d_out)
            self.dropout = nn_.Dropout(dropout)
            self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

        def forward(self, x):
            b, num_tokens, d_in = x.shape
            keys = self.W_key(x)
            queries = self.W_query(x)
            values = self.W_value(x)
            keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
            values = values.view(b, num_tokens, self.num_heads, self.head_dim)
            queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
            keys = keys.transpose(1, 2)
            queries = queries.transpose(1, 2)
            values = values.transpose(1, 2)
            attn_scores = queries @ keys.transpose(2, 3)
            mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
            attn_scores.masked_fill_(mask_bool, -torch.inf)
            attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
            attn_weights = self.dropout(attn_weights)
            context_vec = (attn_weights @ values).transpose(1, 2)
            context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
            context_vec = self.out_proj(context_vec)
            return context_vec

    return dict(SelfAttention_v1=SelfAttention_v1, SelfAttention_v2=SelfAttention_v2, CausalAttention=CausalAttention,
                MultiHeadAttentionWrapper=MultiHeadAttentionWrapper, MultiHeadAttention=MultiHeadAttention)


def constructor_args(case, dropout):
    d_in, d_out, context = case["d_in"], case["heads"] * case["head_dim"], case["tokens"] + case["extra_context"]
    name = case["name"]
    if name == "SelfAttention_v1":
        return (d_in, d_out), {}
    if name == "SelfAttention_v2":
        return (d_in, d_out), dict(qkv_bias=case["qkv_bias"])
    if name == "CausalAttention":
        return (d_in, d_out, context, dropout), dict(qkv_bias=case["qkv_bias"])
    if name == "MultiHeadAttentionWrapper":
        return (d_in, case["head_dim"], context, dropout, case["heads"]), dict(qkv_bias=case["qkv_bias"])
    return (d_in, d_out, context, dropout, case["heads"]), dict(qkv_bias=case["qkv_bias"])


@given(case=cases(), dropout=st.sampled_from([0.0, 0.5]))
def test_book_pytorch_classes_interchange_with_ours(torch, case, dropout):
    """A state_dict from the book's PyTorch class loads into ours (and back), with the same outputs and
    gradients, dropout included (same seed, same masks)."""
    args, kwargs = constructor_args(case, dropout)
    name = case["name"]
    torch.manual_seed(case["seed"])
    theirs = book_classes(torch)[name](*args, **kwargs)
    ours = getattr(nn, name)(*args, **kwargs)
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    assert list(ours.state_dict()) == list(state)
    ours.load_state_dict(state)  # strict: same keys, same shapes
    assert repr(ours) == repr(theirs)

    data = np.random.default_rng(case["seed"]).standard_normal((case["batch"], case["tokens"], case["d_in"]))
    data = data.astype(np.float32)
    if name in ("SelfAttention_v1", "SelfAttention_v2"):
        data = data[0]  # the book's first two classes take one sequence (they use keys.T)
    xt = torch.tensor(data, requires_grad=True)
    xo = tinyattn.tensor(data, requires_grad=True)
    torch.manual_seed(case["seed"] + 1)
    yt = theirs(xt)
    tinyattn.manual_seed(case["seed"] + 1)
    yo = ours(xo)
    np.testing.assert_allclose(host(yo), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = np.random.default_rng(case["seed"] + 2).standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(g))
    yo.backward(tinyattn.tensor(g))
    np.testing.assert_allclose(host(xo.grad), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    grads = dict(theirs.named_parameters())
    for pname, p in ours.named_parameters():
        np.testing.assert_allclose(host(p.grad), grads[pname].grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=pname)

    # ours exports the other way: a fresh PyTorch module takes our state_dict (strict) and agrees
    again = book_classes(torch)[name](*args, **kwargs).eval()
    again.load_state_dict({k: torch.tensor(host(v)) for k, v in ours.state_dict().items()})
    ours.eval()
    np.testing.assert_allclose(host(ours(xo)), again(xt).detach().numpy(), rtol=1e-5, atol=1e-6)


def sdpa_parity(torch, rng, arrays, ours_kwargs, theirs_kwargs):
    """scaled_dot_product_attention of q, k, v made from `arrays` in both libraries: outputs and
    gradients agree. Returns our q, k, v leaves."""
    qt = [torch.tensor(a, requires_grad=True) for a in arrays]
    qo = [tinyattn.tensor(a, requires_grad=True) for a in arrays]
    yt = torch.nn.functional.scaled_dot_product_attention(*qt, **theirs_kwargs)
    yo = F.scaled_dot_product_attention(*qo, **ours_kwargs)
    np.testing.assert_allclose(host(yo), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = rng.standard_normal(tuple(yt.shape))
    yt.backward(torch.tensor(g))
    yo.backward(tinyattn.tensor(g))
    for a, b in zip(qo, qt):
        np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-9, atol=1e-12)
    return qo


def test_sdpa_with_scale_zero_gives_equal_weights_like_pytorch(torch):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3, n, 4)) for n in (5, 6, 6)]
    for scale in (0.0, 0.3):
        qo = sdpa_parity(torch, rng, arrays, dict(scale=scale), dict(scale=scale))
    # scale 0: every key weighs the same, so each query gets the mean of the values
    mean = np.broadcast_to(arrays[2].mean(axis=-2, keepdims=True), (2, 3, 5, 4))
    np.testing.assert_allclose(host(F.scaled_dot_product_attention(*qo, scale=0.0)), mean, rtol=1e-12, atol=1e-12)


@given(seed=seeds, batch=st.integers(1, 3), heads=st.integers(1, 2), queries=st.integers(1, 6),
       keys=st.integers(1, 6), dim=st.integers(1, 8), mask=st.sampled_from(["none", "causal", "bool", "float"]),
       scale=st.sampled_from([None, 0.5]), dropout=st.sampled_from([0.0, 0.3]))
def test_sdpa_parity_with_pytorch(torch, seed, batch, heads, queries, keys, dim, mask, scale, dropout):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((batch, heads, n, dim)) for n in (queries, keys, keys)]
    kwargs = dict(scale=scale)
    ours_kwargs, theirs_kwargs = dict(kwargs), dict(kwargs)
    if mask == "causal":
        ours_kwargs["is_causal"] = theirs_kwargs["is_causal"] = True
    elif mask == "bool":
        allowed = rng.random((queries, keys)) < 0.7
        allowed[:, 0] = True  # PyTorch's math backend gives NaN for a fully masked row; ours gives zeros
        ours_kwargs["attn_mask"], theirs_kwargs["attn_mask"] = tinyattn.tensor(allowed), torch.tensor(allowed)
    elif mask == "float":
        additive = rng.standard_normal((queries, keys))
        ours_kwargs["attn_mask"], theirs_kwargs["attn_mask"] = tinyattn.tensor(additive), torch.tensor(additive)
    qo = sdpa_parity(torch, rng, arrays, ours_kwargs, theirs_kwargs)
    if dropout:  # PyTorch's dropout inside its fused SDPA draws differently: compare our own pieces
        tinyattn.manual_seed(seed)
        dropped = F.scaled_dot_product_attention(*qo, dropout_p=dropout, **ours_kwargs)
        tinyattn.manual_seed(seed)
        weights = F.dropout(sdpa_weights(qo[0], qo[1], **ours_kwargs), dropout)
        np.testing.assert_allclose(host(dropped), host(weights @ qo[2]), rtol=1e-10, atol=1e-12)
