"""The bigram model and the GPT: shapes, causality, generation, learning, and parity with PyTorch."""

import dataclasses
import math

import numpy as np
import pytest

import tinyattn
from tinyattn import nn
from tinyattn.errors import ShapeError
from tinyattn.app.text_data import CharTokenizer, get_batch
from tinyattn.app.models import GPT, BigramLanguageModel, GPTConfig, build_model, parameter_groups
from tinyattn.optim import AdamW

TINY = dict(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)
CORPUS = "the cat sat on the mat. the dog sat on the log. " * 20


def tiny_gpt(seed=0, **changes):
    tinyattn.manual_seed(seed)
    return GPT(GPTConfig(**{**TINY, **changes}))


def ids(*rows):
    return tinyattn.tensor(list(rows), dtype=tinyattn.int64)


def test_bigram_is_seed_002s():
    tinyattn.manual_seed(1337)
    model = BigramLanguageModel(65)
    x = tinyattn.randint(65, (4, 8))
    logits, loss = model(x)
    assert logits.shape == (4, 8, 65) and loss is None
    logits, loss = model(x, x)
    assert logits.shape == (32, 65) and loss.ndim == 0
    assert list(dict(model.named_parameters())) == ["token_embedding_table.weight"]


def test_gpt_shapes_and_initial_loss():
    model = tiny_gpt()
    x = tinyattn.randint(11, (3, 8))
    logits, loss = model(x)
    assert logits.shape == (3, 8, 11) and loss is None
    logits, loss = model(x, tinyattn.randint(11, (3, 8)))
    assert logits.shape == (24, 11)
    assert abs(loss.item() - math.log(11)) < 0.1  # small initial weights: nearly uniform predictions


def test_gpt_ties_the_head_to_the_token_embedding():
    model = tiny_gpt()
    assert model.lm_head.weight is model.token_embedding.weight
    names = [name for name, _ in model.named_parameters()]
    assert "lm_head.weight" not in names and "token_embedding.weight" in names
    assert model.num_parameters() == sum(p.numel() for p in model.parameters())


def test_gpt_init_is_gpt2s():
    model = tiny_gpt(n_embd=64, n_layer=4)
    fc = model.blocks[0].mlp.fc.weight.detach().numpy()
    proj = model.blocks[0].mlp.proj.weight.detach().numpy()
    assert abs(fc.std() - 0.02) < 0.002
    assert abs(proj.std() - 0.02 / math.sqrt(8)) < 0.001
    assert model.blocks[0].mlp.fc.bias.detach().numpy().tolist() == [0.0] * 256


def test_gpt_is_causal():
    model = tiny_gpt().eval()
    a = ids([1, 2, 3, 4, 5, 6, 7, 8])
    b = ids([1, 2, 3, 4, 9, 9, 9, 9])
    la, _ = model(a)
    lb, _ = model(b)
    np.testing.assert_array_equal(la.detach().numpy()[:, :4], lb.detach().numpy()[:, :4])
    assert not np.allclose(la.detach().numpy()[:, 4:], lb.detach().numpy()[:, 4:])


def test_gpt_refuses_more_tokens_than_its_block_and_bad_configs():
    with pytest.raises(ValueError, match="block_size is 8"):
        tiny_gpt()(tinyattn.zeros(1, 9, dtype=tinyattn.int64))
    with pytest.raises(ValueError, match="divisible"):
        GPTConfig(vocab_size=5, n_embd=10, n_head=3)
    with pytest.raises(ValueError, match="dropout"):
        GPTConfig(vocab_size=5, dropout=1.0)
    with pytest.raises(ValueError):
        build_model("rnn", vocab_size=5)
    with pytest.raises(ValueError, match="vocab_size must be a positive int, got 0"):
        BigramLanguageModel(0)
    assert GPTConfig(vocab_size=np.int64(5)).vocab_size == 5 and type(GPTConfig(vocab_size=np.int64(5)).vocab_size) is int


@pytest.mark.parametrize("make", [lambda: tiny_gpt(), lambda: BigramLanguageModel(11)])
def test_ids_and_targets_of_the_wrong_shape_are_named(make):
    model = make()
    x = tinyattn.randint(0, 11, (2, 5))
    with pytest.raises(ShapeError, match=r"targets of shape \[2, 4\] for ids of shape \[2, 5\]"):
        model(x, x[:, 1:])
    with pytest.raises(ShapeError, match="at least one token"):
        model(x[:, :0])
    with pytest.raises(ShapeError, match="at least one token"):
        model.generate(x[:, :0], 3)
    sequence = tinyattn.randint(0, 11, (2, 6))
    _, loss = model(sequence[:, :-1], sequence[:, 1:])  # strided slices of one batch, as inputs and targets
    assert loss.shape == ()


@pytest.mark.parametrize("make", [lambda: tiny_gpt(), lambda: (tinyattn.manual_seed(0), BigramLanguageModel(11))[1]])
def test_generate_crops_the_context_and_is_deterministic_for_a_seed(make):
    model = make().eval()
    start = ids([1, 2, 3])
    out = model.generate(start, 20, generator=tinyattn.Generator().manual_seed(5))
    again = model.generate(start, 20, generator=tinyattn.Generator().manual_seed(5))
    other = model.generate(start, 20, generator=tinyattn.Generator().manual_seed(6))
    assert out.shape == (1, 23) and out[:, :3].equal(start)
    assert out.equal(again) and not out.equal(other)
    assert out.grad_fn is None


def test_generate_with_top_k_1_is_greedy_and_temperature_is_checked():
    model = tiny_gpt().eval()
    out = model.generate(ids([1]), 10, top_k=1)
    idx = ids([1])
    for _ in range(10):
        logits, _ = model(idx[:, -8:])
        idx = tinyattn.cat([idx, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert out.equal(idx)
    with pytest.raises(ValueError, match="temperature"):
        model.generate(ids([1]), 1, temperature=0)
    with pytest.raises(ValueError, match="top_k"):
        model.generate(ids([1]), 1, top_k=0)
    with pytest.raises(ValueError, match="top_k"):
        model.generate(ids([1]), 1, top_k=True)
    assert model.generate(ids([1]), 10, top_k=np.int64(1)).equal(out)  # a NumPy int is an int


def test_generate_matches_seed_002s_bigram_loop():
    """The bigram's generate draws like seed 002's (multinomial after softmax of the last logits)."""
    tinyattn.manual_seed(1337)
    model = BigramLanguageModel(65)
    tinyattn.manual_seed(3)
    ours = model.generate(tinyattn.zeros((1, 1), dtype=tinyattn.int64), 30)
    tinyattn.manual_seed(3)
    idx = tinyattn.zeros((1, 1), dtype=tinyattn.int64)
    for _ in range(30):
        logits, _ = model(idx)
        probs = nn.functional.softmax(logits[:, -1, :], dim=-1)
        idx = tinyattn.cat((idx, tinyattn.multinomial(probs, num_samples=1)), dim=1)
    assert ours.equal(idx)


@pytest.mark.parametrize("kind", ["bigram", "gpt"])
def test_loss_falls_on_a_tiny_corpus(kind):
    tokenizer = CharTokenizer.from_text(CORPUS)
    data = tokenizer.encode_array(CORPUS)
    tinyattn.manual_seed(0)
    config = {"vocab_size": tokenizer.vocab_size}
    if kind == "gpt":
        config.update(block_size=16, n_layer=2, n_head=2, n_embd=32)
    model = build_model(kind, **config)
    optimizer = AdamW(parameter_groups(model, 0.1), lr=1e-2 if kind == "gpt" else 5e-2)
    g = tinyattn.Generator().manual_seed(0)
    losses = []
    for _ in range(40):
        xb, yb = get_batch(data, 8, 16, generator=g)
        _, loss = model(xb, yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert np.mean(losses[-5:]) < 0.6 * np.mean(losses[:5])


def test_dropout_is_only_active_in_training():
    model = tiny_gpt(dropout=0.5)
    x = tinyattn.randint(11, (2, 8))
    model.eval()
    a, _ = model(x)
    b, _ = model(x)
    assert a.equal(b)
    model.train()
    c, _ = model(x)
    assert not c.equal(a)


def test_parameter_groups_decay_matrices_only():
    model = tiny_gpt()
    decay, no_decay = parameter_groups(model, 0.1)
    assert all(p.ndim >= 2 for p in decay["params"]) and all(p.ndim == 1 for p in no_decay["params"])
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))


def test_gpt_matches_its_pytorch_twin(torch):
    """Same weights: the same logits, loss and gradients as the PyTorch GPT of the benchmark."""
    from tinyattn.app.torch_twins import torch_gpt_class

    model = tiny_gpt(seed=3)
    twin = torch_gpt_class(torch)(dataclasses.asdict(model.config))
    twin.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})
    x = np.random.default_rng(0).integers(0, 11, (4, 8))
    y = np.random.default_rng(1).integers(0, 11, (4, 8))
    logits, loss = model(tinyattn.tensor(x), tinyattn.tensor(y))
    torch_logits, torch_loss = twin(torch.from_numpy(x), torch.from_numpy(y))
    np.testing.assert_allclose(logits.detach().numpy(), torch_logits.detach().numpy().reshape(32, 11), rtol=1e-5, atol=1e-5)
    assert loss.item() == pytest.approx(torch_loss.item(), rel=1e-6)
    loss.backward()
    torch_loss.backward()
    theirs = dict(twin.named_parameters())
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), theirs[name].grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
