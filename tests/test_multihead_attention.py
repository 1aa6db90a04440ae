"""nn.MultiheadAttention against PyTorch's, and its own properties.

- The same seed gives PyTorch's weights, bit for bit, under the same names and in the same order, for
  packed and separate (kdim/vdim) projections, with and without biases, bias_k and bias_v.
- Over Hypothesis-drawn options (batched or not, batch_first, self- or cross-attention, kdim/vdim,
  bias, add_bias_kv, add_zero_attn, bool and float attn_mask of 2 and 3 dims, bool and float
  key_padding_mask, is_causal, need_weights, average_attn_weights, dropout in training with the same
  seed, eval mode, float32 and float64) the outputs, the weights and the gradient of every input and
  parameter equal PyTorch's.
- Gradients pass gradcheck in float64; state_dicts move both ways; the book's bonus usage
  (batch_first=True, bias=add_bias_kv=qkv_bias, a bool causal attn_mask, need_weights=False) gives
  PyTorch's numbers; masks mean what PyTorch says; bad input gets a clear error.
"""

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import tinyattn
import tinyattn.nn as nn
from tinyattn.errors import ShapeError

seeds = st.integers(0, 2**31 - 1)
DTYPES = {"float32": (np.float32, dict(rtol=2e-4, atol=2e-5)), "float64": (np.float64, dict(rtol=1e-9, atol=1e-11))}


def host(t):
    return None if t is None else t.detach().numpy()


@st.composite
def options(draw):
    """A module configuration and a call: small sizes, masks that never hide every key of a query."""
    heads = draw(st.integers(1, 3))
    embed_dim = heads * draw(st.integers(1, 3))
    cross = draw(st.booleans())
    kdim = draw(st.sampled_from([None, 2, 5])) if cross else None
    vdim = draw(st.sampled_from([None, 3])) if cross else None
    batched = draw(st.booleans())
    queries = draw(st.integers(1, 5))
    keys = draw(st.integers(1, 6)) if cross else queries
    batch = draw(st.integers(1, 3)) if batched else 1
    module = dict(embed_dim=embed_dim, num_heads=heads, bias=draw(st.booleans()), add_bias_kv=draw(st.booleans()),
                  add_zero_attn=draw(st.booleans()), kdim=kdim, vdim=vdim, batch_first=draw(st.booleans()),
                  dropout=draw(st.sampled_from([0.0, 0.0, 0.3])))
    call = dict(need_weights=draw(st.booleans()), average_attn_weights=draw(st.booleans()))
    attn_kind = draw(st.sampled_from([None, "bool2", "bool3", "float2", "float3"]))
    kpm_kind = draw(st.sampled_from([None, None, "bool", "float"]))
    call["is_causal"] = attn_kind is not None and draw(st.booleans())
    return dict(module=module, call=call, attn_kind=attn_kind, kpm_kind=kpm_kind, cross=cross, batched=batched,
                batch=batch, queries=queries, keys=keys, training=draw(st.booleans()), seed=draw(seeds),
                dtype=draw(st.sampled_from(sorted(DTYPES))))


def make_inputs(case):
    """NumPy query, key, value and masks for `case` (key 0 is never masked: no query loses every key)."""
    rng = np.random.default_rng(case["seed"])
    real = DTYPES[case["dtype"]][0]
    m = case["module"]
    batch, queries, keys = case["batch"], case["queries"], case["keys"]

    def sequence(length, features):
        if not case["batched"]:
            return rng.standard_normal((length, features)).astype(real)
        shape = (batch, length, features) if m["batch_first"] else (length, batch, features)
        return rng.standard_normal(shape).astype(real)

    query = sequence(queries, m["embed_dim"])
    key = sequence(keys, m["kdim"] or m["embed_dim"]) if case["cross"] else None
    value = sequence(keys, m["vdim"] or m["embed_dim"]) if case["cross"] else None
    masks = {}
    kind = case["attn_kind"]
    if kind is not None:
        shape = (queries, keys) if kind.endswith("2") else (batch * m["num_heads"], queries, keys)
        if kind.startswith("bool"):
            mask = rng.random(shape) < 0.4
            mask[..., 0] = False
        else:
            mask = rng.standard_normal(shape).astype(real)
        masks["attn_mask"] = mask
    if case["kpm_kind"] is not None:
        shape = (batch, keys) if case["batched"] else (keys,)
        if case["kpm_kind"] == "bool":
            mask = rng.random(shape) < 0.4
            mask[..., 0] = False
        else:
            mask = rng.standard_normal(shape).astype(real)
        masks["key_padding_mask"] = mask
    return query, key, value, masks


def run(lib, case, state, inputs, upstream):
    """Build the module in `lib`, load `state`, run forward and backward; return every number to compare."""
    m = case["module"]
    module = lib.nn.MultiheadAttention(**m, dtype=getattr(lib, case["dtype"]))
    module.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    module.train(case["training"])
    query, key, value, masks = inputs
    q = lib.tensor(query, requires_grad=True)
    k = q if key is None else lib.tensor(key, requires_grad=True)
    v = q if value is None else lib.tensor(value, requires_grad=True)
    lib.manual_seed(case["seed"] % 1000)
    output, weights = module(q, k, v, **{name: lib.tensor(mask) for name, mask in masks.items()}, **case["call"])
    loss = (output * lib.tensor(upstream[0][: output.numel()].reshape(tuple(output.shape)))).sum()
    if weights is not None:
        loss = loss + (weights * lib.tensor(upstream[1][: weights.numel()].reshape(tuple(weights.shape)))).sum()
    loss.backward()
    grads = {name: host(p.grad) for name, p in module.named_parameters()}
    inputs_grads = [host(t.grad) for t in ((q,) if key is None else (q, k, v))]
    return host(output), host(weights), grads, inputs_grads


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask and attn_mask")
@given(case=options())
def test_outputs_weights_and_gradients_equal_pytorchs(torch, case):
    inputs = make_inputs(case)
    real, tolerance = DTYPES[case["dtype"]]
    torch.manual_seed(case["seed"] % 1000)
    reference = torch.nn.MultiheadAttention(**case["module"], dtype=getattr(torch, case["dtype"]))
    state = {k: v.detach().numpy().copy() for k, v in reference.state_dict().items()}
    upstream = np.random.default_rng(case["seed"] + 1).standard_normal((2, 400)).astype(real)
    theirs = run(torch, case, state, inputs, upstream)
    ours = run(tinyattn, case, state, inputs, upstream)
    np.testing.assert_allclose(ours[0], theirs[0], **tolerance)
    assert (ours[1] is None) == (theirs[1] is None)
    if theirs[1] is not None:
        np.testing.assert_allclose(ours[1], theirs[1], **tolerance)
    assert list(ours[2]) == list(theirs[2])
    for name in theirs[2]:
        if theirs[2][name] is None:  # a bias that no output depends on (bias_v with zero weights...)
            assert ours[2][name] is None or not ours[2][name].any()
        else:
            np.testing.assert_allclose(ours[2][name], theirs[2][name], **tolerance, err_msg=name)
    for mine, reference_grad in zip(ours[3], theirs[3]):
        np.testing.assert_allclose(mine, reference_grad, **tolerance)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("options", [
    dict(embed_dim=8, num_heads=2),
    dict(embed_dim=6, num_heads=3, bias=False),
    dict(embed_dim=8, num_heads=2, add_bias_kv=True),  # bias_k of 8 elements: one-by-one normals
    dict(embed_dim=32, num_heads=4, add_bias_kv=True),  # 32 elements: PyTorch's vectorised normals
    dict(embed_dim=4, num_heads=2, kdim=3, vdim=5, add_zero_attn=True),
])
def test_the_same_seed_gives_pytorchs_weights(torch, options, dtype):
    torch.manual_seed(123)
    theirs = torch.nn.MultiheadAttention(**options, dtype=getattr(torch, dtype))
    tinyattn.manual_seed(123)
    ours = nn.MultiheadAttention(**options, dtype=getattr(tinyattn, dtype))
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for name, value in theirs.state_dict().items():
        np.testing.assert_array_equal(host(ours.state_dict()[name]), value.numpy(), err_msg=name)
    assert repr(ours) == repr(theirs)
    assert float(torch.rand(1)) == float(tinyattn.rand(1))  # the stream is left where PyTorch leaves it


def test_state_dicts_move_both_ways(torch):
    for options in (dict(embed_dim=6, num_heads=2, add_bias_kv=True), dict(embed_dim=6, num_heads=2, kdim=4, vdim=4)):
        torch.manual_seed(1)
        theirs = torch.nn.MultiheadAttention(**options)
        tinyattn.manual_seed(2)
        ours = nn.MultiheadAttention(**options)
        ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
        x = np.random.default_rng(0).standard_normal((3, 2, 6)).astype(np.float32)
        kv = np.random.default_rng(1).standard_normal((4, 2, ours.kdim)).astype(np.float32)
        expected = theirs(torch.tensor(x), torch.tensor(kv), torch.tensor(kv))[0].detach().numpy()
        np.testing.assert_allclose(host(ours(tinyattn.tensor(x), tinyattn.tensor(kv), tinyattn.tensor(kv))[0]),
                                   expected, rtol=1e-5, atol=1e-6)
        tinyattn.manual_seed(3)
        ours = nn.MultiheadAttention(**options)
        theirs.load_state_dict({k: torch.from_numpy(host(v).copy()) for k, v in ours.state_dict().items()})
        np.testing.assert_allclose(theirs(torch.tensor(x), torch.tensor(kv), torch.tensor(kv))[0].detach().numpy(),
                                   host(ours(tinyattn.tensor(x), tinyattn.tensor(kv), tinyattn.tensor(kv))[0]),
                                   rtol=1e-5, atol=1e-6)


def test_eval_mode_equals_pytorchs_inference_fast_path(torch):
    """In eval mode under no_grad PyTorch takes its fused inference kernel; the numbers agree."""
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True, dropout=0.5).eval()
    tinyattn.manual_seed(0)
    ours = nn.MultiheadAttention(8, 2, batch_first=True, dropout=0.5).eval()
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    mask = np.triu(np.ones((5, 5), bool), 1)
    with torch.no_grad():
        expected = theirs(*[torch.tensor(x)] * 3, attn_mask=torch.tensor(mask))
    with tinyattn.no_grad():
        t = tinyattn.tensor(x)
        got = ours(t, t, t, attn_mask=tinyattn.tensor(mask))
    for mine, reference in zip(got, expected):
        np.testing.assert_allclose(host(mine), reference.numpy(), rtol=1e-5, atol=1e-6)


def bonus_class(lib):
    """A module using nn.MultiheadAttention as the book's ch03 bonus notebook does."""
    class CausalMHA(lib.nn.Module):
        def __init__(self, d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False, need_weights=True):
            super().__init__()
            self.context_length = context_length
            self.multihead_attn = lib.nn.MultiheadAttention(embed_dim=d_out, num_heads=num_heads, dropout=dropout,
                                                            bias=qkv_bias, add_bias_kv=qkv_bias, batch_first=True)
            self.need_weights = need_weights
            self.proj = lib.nn.Linear(d_out, d_out)
            self.register_buffer("mask", lib.triu(lib.ones(context_length, context_length), diagonal=1).bool())

        def forward(self, x):
            num_tokens = x.shape[1]
            attn_mask = self.mask[:num_tokens, :num_tokens]
            attn_output, _ = self.multihead_attn(x, x, x, attn_mask=attn_mask, need_weights=self.need_weights)
            return self.proj(attn_output)

    return CausalMHA


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
def test_the_books_bonus_usage_gives_pytorchs_numbers(torch, qkv_bias, need_weights):
    results = []
    for lib in (torch, tinyattn):
        lib.manual_seed(123)
        embeddings = lib.randn((2, 6, 16))
        module = bonus_class(lib)(16, 16, num_heads=4, context_length=8, dropout=0.1, qkv_bias=qkv_bias,
                                  need_weights=need_weights)
        out = module(embeddings)  # in training mode: dropout, drawn from the same stream
        (out * out).sum().backward()
        results.append([host(out)] + [host(p.grad) for p in module.parameters()])
    for theirs, ours in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)


@given(seed=seeds, options=st.sampled_from([
    dict(),
    dict(add_bias_kv=True, add_zero_attn=True),
    dict(kdim=3, vdim=2, bias=False),
]), masks=st.sampled_from(["none", "bool", "float"]), dropout=st.sampled_from([0.0, 0.4]))
def test_gradients_pass_gradcheck_in_float64(seed, options, masks, dropout):
    tinyattn.manual_seed(seed)
    module = nn.MultiheadAttention(4, 2, dropout=dropout, dtype=tinyattn.float64, **options)
    rng = np.random.default_rng(seed)

    def leaf(*shape):
        return tinyattn.tensor(rng.standard_normal(shape), dtype=tinyattn.float64, requires_grad=True)

    query, key, value = leaf(3, 2, 4), leaf(5, 2, module.kdim), leaf(5, 2, module.vdim)
    call = {}
    if masks == "bool":
        blocked = rng.random((3, 5)) < 0.5
        blocked[:, 0] = False
        call = dict(attn_mask=tinyattn.tensor(blocked), key_padding_mask=tinyattn.tensor([[False] * 5, [False] * 4 + [True]]))
    elif masks == "float":
        call = dict(attn_mask=leaf(2 * 2, 3, 5))
    float_masks = tuple(call.values()) if masks == "float" else ()
    # gradcheck perturbs these very tensors in place, so the module sees each change
    inputs = (query, key, value, *module.parameters(), *float_masks)
    assert tinyattn.gradcheck(lambda *_: module(query, key, value, **call), inputs)


def test_masks_follow_pytorchs_conventions():
    tinyattn.manual_seed(0)
    module = nn.MultiheadAttention(4, 2)
    x = tinyattn.randn(3, 1, 4)
    blocked = tinyattn.tensor([[False, True, True], [False, False, True], [False, False, False]])
    _, weights = module(x, x, x, attn_mask=blocked)  # bool True: may NOT attend
    assert bool((weights[0][blocked] == 0).all())
    assert np.allclose(host(weights).sum(-1), 1)
    additive = tinyattn.zeros(3, 3).masked_fill(blocked, -float("inf"))  # a float mask is added
    np.testing.assert_allclose(host(module(x, x, x, attn_mask=additive)[1]), host(weights), rtol=1e-6)
    padding = tinyattn.tensor([[False, False, True]])  # key 2 is padding for batch item 0
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):  # as PyTorch warns
        module(x, x, x, key_padding_mask=padding, attn_mask=additive)
    _, padded = module(x, x, x, key_padding_mask=padding, average_attn_weights=False)
    assert tuple(padded.shape) == (1, 2, 3, 3) and bool((padded[..., 2] == 0).all())
    per_head = blocked.unsqueeze(0).expand(2, 3, 3).clone()
    per_head[1] = False  # head 1 attends everywhere, head 0 causally
    _, heads = module(x, x, x, attn_mask=per_head, average_attn_weights=False)
    assert bool((heads[0, 0][blocked] == 0).all()) and bool((heads[0, 1] > 0).all())


def test_a_query_with_every_key_masked_gets_zero_weights():
    """PyTorch gives NaN here (outside its SDPA path); tinyattn gives zero weights, and the output is
    out_proj's bias, so one padded row cannot turn a whole batch's loss into NaN."""
    tinyattn.manual_seed(0)
    module = nn.MultiheadAttention(4, 2)
    x = tinyattn.randn(2, 1, 4, requires_grad=True)
    blocked = tinyattn.tensor([[True, True], [False, True]])
    output, weights = module(x, x, x, attn_mask=blocked)
    assert host(weights)[0, 0].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(host(output)[0, 0], host(module.out_proj.bias))
    output.sum().backward()
    assert np.isfinite(host(x.grad)).all()


@given(seed=seeds, heads=st.integers(1, 3), tokens=st.integers(1, 6), batch_first=st.booleans())
def test_weights_are_row_stochastic_and_self_attention_permutation_equivariant(seed, heads, tokens, batch_first):
    tinyattn.manual_seed(seed)
    module = nn.MultiheadAttention(2 * heads, heads, batch_first=batch_first)
    x = tinyattn.randn(2, tokens, 2 * heads) if batch_first else tinyattn.randn(tokens, 2, 2 * heads)
    output, weights = module(x, x, x, average_attn_weights=False)
    assert tuple(weights.shape) == (2, heads, tokens, tokens)
    assert bool((weights >= 0).all()) and np.allclose(host(weights).sum(-1), 1, atol=1e-6)
    order = tinyattn.tensor(np.random.default_rng(seed).permutation(tokens))
    dim = 1 if batch_first else 0
    shuffled = x[:, order] if batch_first else x[order]
    permuted, _ = module(shuffled, shuffled, shuffled)
    expected = host(output[:, order] if batch_first else output[order])
    np.testing.assert_allclose(host(permuted), expected, rtol=1e-5, atol=1e-6)
    assert permuted.shape[dim] == tokens


def test_unbatched_input_and_need_weights_false():
    tinyattn.manual_seed(0)
    module = nn.MultiheadAttention(6, 3, kdim=2, vdim=4)
    query, key, value = tinyattn.randn(5, 6), tinyattn.randn(7, 2), tinyattn.randn(7, 4)
    output, weights = module(query, key, value, key_padding_mask=tinyattn.zeros(7, dtype=tinyattn.bool))
    assert tuple(output.shape) == (5, 6) and tuple(weights.shape) == (5, 7)
    batched, _ = module(query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1))
    np.testing.assert_allclose(host(batched)[:, 0], host(output), rtol=1e-6)
    assert module(query, key, value, need_weights=False)[1] is None
    assert tuple(module(query, key, value, average_attn_weights=False)[1].shape) == (3, 5, 7)


def test_on_both_backends(xp_backend):
    """The module calls only what the array API standard has (array_api_strict stands in for CuPy)."""
    tinyattn.manual_seed(0)
    module = nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True, dropout=0.5, batch_first=True)
    x = tinyattn.randn(2, 3, 4, requires_grad=True)
    padding = tinyattn.tensor([[False, False, True], [False, False, False]])
    output, weights = module(x, x, x, attn_mask=tinyattn.tensor(np.triu(np.ones((3, 3), bool), 1)),
                             key_padding_mask=padding)
    (output.sum() + weights.sum()).backward()
    assert tuple(x.grad.shape) == (2, 3, 4) and tuple(weights.shape) == (2, 3, 5)


def test_bad_input_gets_a_clear_error():
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.MultiheadAttention(5, 2)
    with pytest.raises(ValueError, match="greater than 0"):
        nn.MultiheadAttention(0, 1)
    with pytest.raises(ValueError, match="dropout probability"):
        nn.MultiheadAttention(4, 2, dropout=1.5)
    module = nn.MultiheadAttention(4, 2, kdim=3)
    x = tinyattn.randn(3, 2, 4)
    kv = tinyattn.randn(5, 2, 3)
    with pytest.raises(ShapeError, match=r"key of shape \[5, 2, 4\] should have 3 features"):
        module(x, tinyattn.randn(5, 2, 4), kv)
    with pytest.raises(ShapeError, match="same batch size"):
        module(x, tinyattn.randn(5, 3, 3), tinyattn.randn(5, 3, 4))
    with pytest.raises(ShapeError, match="unbatched 2D or batched 3D"):
        module(tinyattn.randn(4), kv, kv)
    with pytest.raises(ShapeError, match=r"attn_mask of shape \[5, 3\] should be \(queries, keys\) = \[3, 5\]"):
        module(x, kv, tinyattn.randn(5, 2, 4), attn_mask=tinyattn.zeros(5, 3, dtype=tinyattn.bool))
    with pytest.raises(ShapeError, match=r"key_padding_mask of shape \[5, 2\]"):
        module(x, kv, tinyattn.randn(5, 2, 4), key_padding_mask=tinyattn.zeros(5, 2, dtype=tinyattn.bool))
    with pytest.raises(TypeError, match="only bool and floating types of attn_mask"):
        module(x, kv, tinyattn.randn(5, 2, 4), attn_mask=tinyattn.zeros(3, 5, dtype=tinyattn.long))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        module(x, kv, tinyattn.randn(5, 2, 4), is_causal=True)
