"""nn.Transformer and its layers against PyTorch's, and their own properties.

- The same seed gives PyTorch's weights bit for bit, under the same state_dict keys in the same order
  (the stacks' deep copies and nn.Transformer's xavier_uniform_ redraw included), and leaves the
  generator where PyTorch leaves it.
- Over Hypothesis-drawn options (post- and pre-norm, relu/gelu/callable activations, bias, batch_first,
  batched or not, bool and float masks and padding masks, is_causal, training with dropout at the same
  seed, eval mode) the outputs and the gradients of every input and parameter equal PyTorch's.
- Eval mode agrees with PyTorch's inference fast path; gradients pass gradcheck in float64; the causal
  mask and its detection are PyTorch's; bad input gets a clear error.
"""

import copy

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tinyattn
import tinyattn.nn as nn
from tinyattn.errors import ShapeError

TOLERANCE = dict(rtol=2e-4, atol=2e-5)  # float32


def host(t):
    return None if t is None else t.detach().numpy()


def assert_same_weights(ours, theirs):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for name, value in theirs.state_dict().items():
        np.testing.assert_array_equal(host(ours.state_dict()[name]), value.numpy(), err_msg=name)


@pytest.mark.parametrize("build", [
    lambda L: L.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16),
    lambda L: L.nn.TransformerEncoderLayer(6, 3, dim_feedforward=5, bias=False, norm_first=True),
    lambda L: L.nn.TransformerDecoderLayer(8, 4, dim_feedforward=16, activation="gelu"),
    lambda L: L.nn.TransformerEncoder(L.nn.TransformerEncoderLayer(8, 2, 16), 3, L.nn.LayerNorm(8),
                                      enable_nested_tensor=False),
    lambda L: L.nn.TransformerDecoder(L.nn.TransformerDecoderLayer(8, 2, 16), 2),
    lambda L: L.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=3, dim_feedforward=16),
    lambda L: L.nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32,
                               bias=False, norm_first=True, batch_first=True, dtype=L.float64),
])
def test_the_same_seed_gives_pytorchs_weights(torch, build):
    torch.manual_seed(5)
    theirs = build(torch)
    tinyattn.manual_seed(5)
    ours = build(tinyattn)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert_same_weights(ours, theirs)
    assert float(torch.rand(1)) == float(tinyattn.rand(1))  # the stream is left where PyTorch leaves it


def test_stacked_layers_are_independent_copies_that_start_equal():
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    first, second = encoder.layers
    assert first is not layer and second is not first
    for a, b in zip(first.parameters(), second.parameters()):
        np.testing.assert_array_equal(host(a), host(b))
        assert a is not b
    with tinyattn.no_grad():
        first.linear1.weight.fill_(1.0)
    assert not (host(second.linear1.weight) == 1.0).all()
    assert not (host(layer.linear1.weight) == 1.0).all()


@st.composite
def cases(draw):
    heads = draw(st.integers(1, 2))
    d_model = heads * draw(st.integers(1, 3))
    options = dict(d_model=d_model, nhead=heads, dim_feedforward=draw(st.integers(1, 6)),
                   dropout=draw(st.sampled_from([0.0, 0.3])), activation=draw(st.sampled_from(["relu", "gelu", "tanh"])),
                   batch_first=draw(st.booleans()), norm_first=draw(st.booleans()), bias=draw(st.booleans()))
    return dict(kind=draw(st.sampled_from(["encoder_layer", "decoder_layer", "encoder", "transformer"])),
                options=options, batched=draw(st.booleans()), batch=draw(st.integers(1, 3)),
                src_len=draw(st.integers(1, 4)), tgt_len=draw(st.integers(1, 4)),
                mask=draw(st.sampled_from([None, "bool", "float", "causal"])),
                padding=draw(st.sampled_from([None, "bool"])), training=draw(st.booleans()),
                seed=draw(st.integers(0, 2**31 - 1)))


def build(lib, case):
    options = dict(case["options"])
    if options["activation"] == "tanh":  # a callable that is neither relu nor gelu
        options["activation"] = lib.tanh
    kind = case["kind"]
    if kind == "encoder_layer":
        return lib.nn.TransformerEncoderLayer(**options)
    if kind == "decoder_layer":
        return lib.nn.TransformerDecoderLayer(**options)
    if kind == "encoder":
        return lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(**options), 2, lib.nn.LayerNorm(options["d_model"]),
                                         enable_nested_tensor=False)
    return lib.nn.Transformer(num_encoder_layers=1, num_decoder_layers=2, **options)


def inputs(case):
    """NumPy src, tgt and masks (position 0 is never masked: no query loses every key)."""
    rng = np.random.default_rng(case["seed"])
    d_model, batch_first = case["options"]["d_model"], case["options"]["batch_first"]

    def sequence(length):
        shape = (length, d_model)
        if case["batched"]:
            shape = (case["batch"], length, d_model) if batch_first else (length, case["batch"], d_model)
        return rng.standard_normal(shape).astype(np.float32)

    def attention_mask(queries, keys):
        if case["mask"] in ("bool", None):
            blocked = rng.random((queries, keys)) < 0.4
            blocked[:, 0] = False
            return blocked if case["mask"] else None
        if case["mask"] == "float":
            return rng.standard_normal((queries, keys)).astype(np.float32)
        return np.triu(np.full((queries, keys), -np.inf, np.float32), 1)

    def padding(keys):
        if case["padding"] is None:
            return None
        blocked = rng.random((case["batch"], keys) if case["batched"] else (keys,)) < 0.4
        blocked[..., 0] = False
        return blocked

    src_len, tgt_len = case["src_len"], case["tgt_len"]
    return dict(src=sequence(src_len), tgt=sequence(tgt_len), src_mask=attention_mask(src_len, src_len),
                tgt_mask=attention_mask(tgt_len, tgt_len), memory_mask=attention_mask(tgt_len, src_len),
                src_padding=padding(src_len), tgt_padding=padding(tgt_len),
                causal=case["mask"] == "causal")


def run(lib, case, state, data, upstream):
    lib.manual_seed(1)
    module = build(lib, case)
    module.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    module.train(case["training"])
    t = {k: None if v is None or isinstance(v, bool) else lib.tensor(v) for k, v in data.items()}
    src = lib.tensor(data["src"], requires_grad=True)
    tgt = lib.tensor(data["tgt"], requires_grad=True)
    lib.manual_seed(case["seed"] % 1000)  # dropout's masks
    kind = case["kind"]
    causal = True if data["causal"] else None
    if kind == "encoder_layer":
        out = module(src, src_mask=t["src_mask"], src_key_padding_mask=t["src_padding"], is_causal=bool(causal))
    elif kind == "encoder":
        out = module(src, mask=t["src_mask"], src_key_padding_mask=t["src_padding"], is_causal=causal)
    elif kind == "decoder_layer":
        out = module(tgt, src, tgt_mask=t["tgt_mask"], memory_mask=t["memory_mask"],
                     tgt_key_padding_mask=t["tgt_padding"], memory_key_padding_mask=t["src_padding"],
                     tgt_is_causal=bool(causal))
    else:
        out = module(src, tgt, src_mask=t["src_mask"], tgt_mask=t["tgt_mask"], memory_mask=t["memory_mask"],
                     src_key_padding_mask=t["src_padding"], tgt_key_padding_mask=t["tgt_padding"],
                     memory_key_padding_mask=t["src_padding"], src_is_causal=causal, tgt_is_causal=causal)
    (out * lib.tensor(upstream[: out.numel()].reshape(tuple(out.shape)))).sum().backward()
    grads = {name: host(p.grad) for name, p in module.named_parameters()}
    return host(out), grads, host(src.grad), host(tgt.grad)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.filterwarnings("ignore:Support for mismatched")
@pytest.mark.filterwarnings("ignore:Converting mask without torch.bool dtype to bool")
@settings(max_examples=40)
@given(case=cases())
def test_outputs_and_gradients_equal_pytorchs(torch, case):
    torch.manual_seed(case["seed"] % 1000)
    reference = build(torch, case)
    state = {k: v.detach().numpy().copy() for k, v in reference.state_dict().items()}
    data = inputs(case)
    upstream = np.random.default_rng(case["seed"] + 1).standard_normal(400).astype(np.float32)
    theirs = run(torch, case, state, data, upstream)
    ours = run(tinyattn, case, state, data, upstream)
    np.testing.assert_allclose(ours[0], theirs[0], **TOLERANCE)
    assert list(ours[1]) == list(theirs[1])
    for name, reference_grad in theirs[1].items():
        if reference_grad is None:
            assert ours[1][name] is None or not ours[1][name].any(), name
        else:
            np.testing.assert_allclose(ours[1][name], reference_grad, **TOLERANCE, err_msg=name)
    for mine, reference_grad in zip(ours[2:], theirs[2:]):
        if reference_grad is None:  # tgt of an encoder: unused
            assert mine is None
        else:
            np.testing.assert_allclose(mine, reference_grad, **TOLERANCE)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("kind", ["encoder_layer", "decoder_layer", "transformer"])
def test_dropout_draws_pytorchs_masks(torch, kind, norm_first, batch_first):
    """Training with dropout at the same seed: PyTorch draws each mask in its tensor's memory order (a
    batch-first attention output is a transposed view), and in the order of the layer's calls."""
    case = dict(kind=kind, options=dict(d_model=8, nhead=2, dim_feedforward=6, dropout=0.5, activation="relu",
                                        batch_first=batch_first, norm_first=norm_first, bias=True),
                batched=True, batch=3, src_len=5, tgt_len=4, mask="bool", padding="bool", training=True, seed=11)
    torch.manual_seed(0)
    state = {k: v.detach().numpy().copy() for k, v in build(torch, case).state_dict().items()}
    data = inputs(case)
    upstream = np.random.default_rng(2).standard_normal(400).astype(np.float32)
    theirs = run(torch, case, state, data, upstream)
    ours = run(tinyattn, case, state, data, upstream)
    np.testing.assert_allclose(ours[0], theirs[0], **TOLERANCE)
    for name, reference_grad in theirs[1].items():
        np.testing.assert_allclose(ours[1][name], reference_grad, **TOLERANCE, err_msg=name)


@pytest.mark.parametrize("padding", [False, True])
def test_eval_mode_equals_pytorchs_inference_fast_path(torch, padding):
    """In eval mode under no_grad with batch_first PyTorch runs its fused encoder kernel (and nested
    tensors for a padding mask); tinyattn computes the plain layers: the numbers agree."""
    results = []
    x = np.random.default_rng(0).standard_normal((3, 5, 8)).astype(np.float32)
    pad = np.zeros((3, 5), bool)
    pad[1, 3:] = pad[2, 4:] = True  # left-aligned, as PyTorch's nested tensors need
    for lib in (torch, tinyattn):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
        encoder = lib.nn.TransformerEncoder(layer, 2).eval()
        with lib.no_grad():
            out = encoder(lib.tensor(x), src_key_padding_mask=lib.tensor(pad) if padding else None)
        results.append(host(out))
    if padding:  # PyTorch's nested tensors give zeros at padded positions; the plain layers compute them
        results = [np.where(pad[..., None], 0.0, r) for r in results]
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-5)


@settings(max_examples=10)
@given(seed=st.integers(0, 2**31 - 1), norm_first=st.booleans(), dropout=st.sampled_from([0.0, 0.3]),
       decoder=st.booleans())
def test_gradients_pass_gradcheck_in_float64(seed, norm_first, dropout, decoder):
    tinyattn.manual_seed(seed)
    kind = nn.TransformerDecoderLayer if decoder else nn.TransformerEncoderLayer
    layer = kind(4, 2, dim_feedforward=3, dropout=dropout, activation="gelu", norm_first=norm_first,
                 dtype=tinyattn.float64)
    rng = np.random.default_rng(seed)

    def leaf(*shape):
        return tinyattn.tensor(rng.standard_normal(shape), dtype=tinyattn.float64, requires_grad=True)

    x, memory = leaf(3, 2, 4), leaf(2, 2, 4)
    mask = leaf(3, 3)
    if decoder:
        inputs = (x, memory, mask, *layer.parameters())
        assert tinyattn.gradcheck(lambda *_: layer(x, memory, tgt_mask=mask), inputs)
    else:
        inputs = (x, mask, *layer.parameters())
        assert tinyattn.gradcheck(lambda *_: layer(x, src_mask=mask), inputs)


def test_the_causal_mask_and_its_detection_are_pytorchs(torch):
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(host(mask), torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
    assert mask.dtype is tinyattn.float32
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=tinyattn.float64).dtype is tinyattn.float64
    from tinyattn.nn.transformer import _is_causal_mask
    assert _is_causal_mask(mask, None, 4)
    assert _is_causal_mask(tinyattn.triu(tinyattn.ones(4, 4), diagonal=1).bool(), None, 4)
    assert not _is_causal_mask(mask, None, 3)
    assert not _is_causal_mask(mask.T, None, 4)
    assert _is_causal_mask(None, True, 4) and not _is_causal_mask(mask, False, 4)


def test_activations_by_name_or_callable():
    assert nn.TransformerEncoderLayer(4, 2, activation="gelu").activation is nn.functional.gelu
    assert nn.TransformerEncoderLayer(4, 2).activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(4, 2, activation=nn.GELU()).activation_relu_or_gelu == 2
    layer = nn.TransformerEncoderLayer(4, 2, activation=nn.Tanh())
    assert layer.activation_relu_or_gelu == 0 and isinstance(layer.activation, nn.Tanh)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not swish"):
        nn.TransformerEncoderLayer(4, 2, activation="swish")


def test_a_model_that_subclasses_transformer_as_pytorch_examples_does(torch):
    """word_language_model's TransformerModel: nn.Transformer with its decoder replaced by a Linear,
    and only its encoder called with a causal mask."""
    results = []
    for lib in (torch, tinyattn):
        class Model(lib.nn.Transformer):
            def __init__(self):
                super().__init__(d_model=8, nhead=2, dim_feedforward=16, num_encoder_layers=2)
                self.decoder = lib.nn.Linear(8, 11)

            def forward(self, x):
                mask = lib.nn.Transformer.generate_square_subsequent_mask(x.shape[0])
                return self.decoder(self.encoder(x, mask=mask))

        lib.manual_seed(3)
        model = Model()
        x = lib.randn(6, 2, 8)
        out = model(x)  # training mode: dropout 0.1 from the same stream
        out.square().sum().backward()
        results.append([host(out)] + [host(p.grad) for p in model.parameters()])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, **TOLERANCE)


def test_deepcopy_and_state_dict_round_trip():
    model = nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=5)
    twin = copy.deepcopy(model)
    twin.load_state_dict(model.state_dict())
    model.eval(), twin.eval()
    src, tgt = tinyattn.randn(3, 1, 4), tinyattn.randn(2, 1, 4)
    np.testing.assert_array_equal(host(model(src, tgt)), host(twin(src, tgt)))


def test_bad_input_gets_a_clear_error():
    with pytest.raises(ValueError, match="d_model must be divisible by nhead, got d_model=6 and nhead=4"):
        nn.TransformerEncoderLayer(6, 4)
    with pytest.raises(ValueError, match="d_model must be divisible by nhead"):
        nn.Transformer(d_model=10, nhead=3)
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=3)
    with pytest.raises(ShapeError, match=r"src of shape \[3, 2, 5\] should have d_model=4"):
        layer(tinyattn.randn(3, 2, 5))
    with pytest.raises(ShapeError, match=r"attn_mask of shape \[2, 2\] should be \(queries, keys\) = \[3, 3\]"):
        layer(tinyattn.randn(3, 2, 4), src_mask=tinyattn.zeros(2, 2))
    with pytest.raises(ShapeError, match=r"key_padding_mask of shape \[3, 3\] should be \(batch, keys\) = \[2, 3\]"):
        layer(tinyattn.randn(3, 2, 4), src_key_padding_mask=tinyattn.zeros(3, 3, dtype=tinyattn.bool))
    model = nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=5)
    with pytest.raises(RuntimeError, match=r"batch number of src and tgt must be equal: src of shape \[3, 2, 4\]"):
        model(tinyattn.randn(3, 2, 4), tinyattn.randn(3, 1, 4))
    with pytest.raises(RuntimeError, match="feature number of src and tgt must be equal to d_model=4"):
        model(tinyattn.randn(3, 2, 4), tinyattn.randn(3, 2, 3))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        layer(tinyattn.randn(3, 2, 4), is_causal=True)
    with pytest.raises(ValueError, match="num_layers must be a non-negative int"):
        nn.TransformerEncoder(layer, -1)
