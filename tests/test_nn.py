"""tinyattn.nn: Module and its containers, the layers, and the functional forms (losses included).

- Module: registration, traversal, state_dict / load_state_dict (with its errors), train/eval,
  zero_grad, to(device), repr (compared with PyTorch's where PyTorch is installed).
- Layers and functions: forward against a NumPy reference, PyTorch's initialisation at a seed, and
  parity with PyTorch (same weights: same forward, same gradients) where PyTorch is installed.
- Gradients of every layer and loss pass the finite-difference check in float64 (dropout included,
  its mask frozen by the checker's seed).
"""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tinyattn
import tinyattn.nn as nn
from tinyattn.errors import BackwardError, DeviceError, ShapeError
from tinyattn.nn import functional as F

seeds = st.integers(0, 2**31 - 1)
dims = st.integers(1, 8)


def host(t):
    """A tensor's numbers as a NumPy array (detached, copied to the host)."""
    return t.detach().numpy()


def rng_tensor(seed, *shape, scale=1.0, dtype=np.float32, requires_grad=False):
    data = (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)
    return tinyattn.tensor(data, requires_grad=requires_grad)


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(host(a) if isinstance(a, tinyattn.Tensor) else a,
                               host(b) if isinstance(b, tinyattn.Tensor) else b, rtol=rtol, atol=atol)


class Net(nn.Module):
    """A small model with every kind of member: Parameter, layers, containers, buffers."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(tinyattn.ones(3))
        self.embed = nn.Embedding(5, 3)
        self.blocks = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3, bias=False)])
        self.head = nn.Sequential(nn.LayerNorm(3), nn.GELU(), nn.Dropout(0.25), nn.Linear(3, 2))
        self.register_buffer("mask", tinyattn.ones(3, 3).tril())
        self.register_buffer("cache", tinyattn.zeros(2), persistent=False)

    def forward(self, ids):
        x = self.embed(ids) * self.scale
        for block in self.blocks:
            x = block(x).relu()
        return self.head(x @ self.mask)


def torch_net(torch):
    """The same model in PyTorch (for keys, order and repr)."""

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(3))
            self.embed = torch.nn.Embedding(5, 3)
            self.blocks = torch.nn.ModuleList([torch.nn.Linear(3, 3), torch.nn.Linear(3, 3, bias=False)])
            self.head = torch.nn.Sequential(torch.nn.LayerNorm(3), torch.nn.GELU(), torch.nn.Dropout(0.25),
                                            torch.nn.Linear(3, 2))
            self.register_buffer("mask", torch.ones(3, 3).tril())
            self.register_buffer("cache", torch.zeros(2), persistent=False)

    return Net()


# ---------------------------------------------------------------------------------------------
# Module: registration and traversal


def test_parameters_children_modules_buffers():
    net = Net()
    names = [name for name, _ in net.named_parameters()]
    assert names == ["scale", "embed.weight", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight",
                     "head.0.weight", "head.0.bias", "head.3.weight", "head.3.bias"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in net.parameters())
    assert len(list(net.parameters())) == len(names)
    assert [type(m).__name__ for m in net.children()] == ["Embedding", "ModuleList", "Sequential"]
    assert [type(m).__name__ for m in net.modules()] == [
        "Net", "Embedding", "ModuleList", "Linear", "Linear", "Sequential", "LayerNorm", "GELU", "Dropout", "Linear"]
    assert [name for name, _ in net.named_buffers()] == ["mask", "cache"]
    assert net.blocks[1].bias is None and len(net.blocks) == 2 and len(net.head) == 4


def test_a_shared_parameter_is_listed_once():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    model[1].weight = model[0].weight
    assert len(list(model.parameters())) == 3


def test_registration_refuses_what_pytorch_refuses(torch):
    """Names and values PyTorch refuses: the same exception type, and nothing changes."""
    cases = [
        (lambda lib: lib.nn.Linear(2, 2).register_buffer("weight", lib.zeros(2)), KeyError,
         "attribute 'weight' already exists"),
        (lambda lib: lib.nn.Linear(2, 2).register_buffer("in_features", lib.zeros(2)), KeyError, "already exists"),
        (lambda lib: lib.nn.Linear(2, 2).register_buffer("forward", lib.zeros(2)), KeyError, "already exists"),
        (lambda lib: lib.nn.Linear(2, 2).register_buffer("a.b", lib.zeros(2)), KeyError, "contain"),
        (lambda lib: lib.nn.Linear(2, 2).register_buffer("", lib.zeros(2)), KeyError, "empty string"),
        (lambda lib: lib.nn.Linear(2, 2).register_parameter("in_features", None), KeyError, "already exists"),
        (lambda lib: lib.nn.Module().add_module("a.b", lib.nn.ReLU()), KeyError, "contain"),
        (lambda lib: lib.nn.Module().add_module("a", lib.zeros(2)), TypeError, "Module"),
        (lambda lib: setattr(lib.nn.Linear(2, 2), "weight", lib.nn.ReLU()), TypeError,
         "cannot assign 'ReLU' as parameter 'weight'"),
        (lambda lib: setattr(lib.nn.Linear(2, 2), "weight", lib.zeros(2, 2)), TypeError, "nn.Parameter"),
        (lambda lib: setattr(lib.nn.Sequential(lib.nn.ReLU()), "0", lib.zeros(2)), TypeError,
         "cannot assign 'Tensor' as child module '0'"),
    ]
    for make, error, message in cases:
        with pytest.raises(error):
            make(torch)
        with pytest.raises(error, match=message):
            make(tinyattn)
    lin = nn.Linear(2, 2)
    with pytest.raises(KeyError):
        lin.register_buffer("weight", tinyattn.zeros(2))
    assert isinstance(lin.weight, nn.Parameter) and list(lin.state_dict()) == ["weight", "bias"]
    assert [n for n, _ in lin.named_buffers()] == []


def test_reassigning_a_member_keeps_its_place_like_pytorch(torch):
    def build(lib):
        m = lib.nn.Module()
        m.a, m.b, m.c = (lib.nn.Linear(1, 2) for _ in range(3))
        m.a = lib.nn.Linear(1, 2)  # a new layer in a's place
        m.emb, m.head = lib.nn.Embedding(3, 2), lib.nn.Linear(2, 3)
        m.head.weight = m.emb.weight  # weight tying
        m.register_buffer("x", lib.ones(1))
        m.register_buffer("y", lib.ones(1))
        m.x = lib.zeros(1)
        m.register_buffer("y", lib.ones(1), persistent=False)  # re-registered: no longer saved
        return m

    ours, theirs = build(tinyattn), build(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(ours.state_dict())[:6] == ["x", "a.weight", "a.bias", "b.weight", "b.bias", "c.weight"]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_children()] == ["a", "b", "c", "emb", "head"]


def test_a_shared_submodule_is_saved_under_every_name_like_pytorch(torch):
    def build(lib):
        class Shared(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.seq = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
                self.shared = self.seq[0]
                self.twice = lib.nn.ModuleList([lib.nn.Linear(2, 1)] * 2)
                self.register_buffer("b", lib.ones(1))
                self.register_buffer("b2", self.b)

        return Shared()

    ours, theirs = build(tinyattn), build(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "shared.weight" in ours.state_dict() and "twice.1.bias" in ours.state_dict()
    for remove_duplicate in (True, False):
        for method in ("named_modules", "named_parameters", "named_buffers"):
            names = [n for n, _ in getattr(ours, method)(remove_duplicate=remove_duplicate)]
            assert names == [n for n, _ in getattr(theirs, method)(remove_duplicate=remove_duplicate)], method
    assert len(list(ours.parameters())) == 4  # each shared parameter once, for the optimizer
    result = ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})  # strict: same keys
    assert result.missing_keys == [] and result.unexpected_keys == []
    close(ours.shared.weight, theirs.seq[0].weight.detach().numpy(), rtol=0, atol=0)


def test_sequential_slices_keep_their_names_like_pytorch(torch):
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(1, 2), lib.nn.ReLU(), lib.nn.Linear(2, 1))

    ours, theirs = build(tinyattn), build(torch)
    for index in (slice(1, None), slice(None, None, 2), slice(None, 2)):
        assert repr(ours[index]) == repr(theirs[index])
        assert list(ours[index].state_dict()) == list(theirs[index].state_dict())
    assert list(ours[1:].state_dict()) == ["2.weight", "2.bias"] and ours[1:][1] is ours[2]


def test_assigning_a_layer_before_init_is_a_clear_error():
    class Broken(nn.Module):
        def __init__(self):
            self.layer = nn.Linear(2, 2)  # forgot super().__init__()

    with pytest.raises(AttributeError, match="super"):
        Broken()


def test_forward_call_and_missing_forward():
    lin = nn.Linear(3, 2)
    x = tinyattn.randn(4, 3)
    close(lin(x), lin.forward(x))
    with pytest.raises(NotImplementedError):
        nn.Module()(x)


def test_sequential_and_modulelist():
    layers = [nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)]
    model = nn.Sequential(*layers)
    x = tinyattn.randn(5, 3)
    close(model(x), layers[2](layers[1](layers[0](x))))
    assert list(model) == layers and model[-1] is layers[2]
    assert isinstance(model[:2], nn.Sequential) and len(model[:2]) == 2
    heads = nn.ModuleList()
    heads.append(nn.Linear(2, 2)).extend([nn.Linear(2, 2), nn.Linear(2, 2)])
    assert len(heads) == 3 and [n for n, _ in heads.named_parameters()][:2] == ["0.weight", "0.bias"]


def test_parameter_prints_like_pytorch():
    p = nn.Parameter(tinyattn.tensor([[1.0, 2.0]]), requires_grad=False)
    assert repr(p) == str(p) == "Parameter containing:\ntensor([[1., 2.]])"
    assert nn.Parameter(tinyattn.zeros(2)).requires_grad


# ---------------------------------------------------------------------------------------------
# Module: state_dict and load_state_dict


def test_state_dict_keys_and_values():
    net = Net()
    state = net.state_dict()
    assert list(state) == ["scale", "mask", "embed.weight", "blocks.0.weight", "blocks.0.bias",
                           "blocks.1.weight", "head.0.weight", "head.0.bias", "head.3.weight", "head.3.bias"]
    assert "cache" not in state  # non-persistent buffers are not saved
    assert not any(t.requires_grad for t in state.values())
    close(state["blocks.0.weight"], net.blocks[0].weight)


def test_state_dict_keys_match_pytorch(torch):
    assert list(Net().state_dict()) == list(torch_net(torch).state_dict())


def test_load_state_dict_round_trip_from_tensors_and_numpy():
    a, b = Net(), Net()
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        close(pa, pb, rtol=0, atol=0)
    c = Net()
    c.load_state_dict({k: host(v) for k, v in a.state_dict().items()})  # NumPy arrays load too
    ids = tinyattn.tensor([[0, 4, 2]])
    a.eval(), c.eval()
    close(a(ids), c(ids), rtol=0, atol=0)


def test_load_state_dict_keeps_parameter_objects():
    net = Net()
    weight = net.blocks[0].weight
    net.load_state_dict(Net().state_dict())
    assert net.blocks[0].weight is weight and weight.requires_grad


def test_load_state_dict_errors_name_the_keys_and_change_nothing():
    net = Net()
    before = {k: host(v).copy() for k, v in net.state_dict().items()}
    good = {k: v + 1 for k, v in before.items()}

    unexpected = dict(good, **{"blocks.2.weight": np.zeros((3, 3), np.float32)})
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "blocks.2.weight"'):
        net.load_state_dict(unexpected)

    missing = {k: v for k, v in good.items() if k != "head.3.bias"}
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "head.3.bias"'):
        net.load_state_dict(missing)

    wrong = dict(good, **{"blocks.0.weight": np.zeros((2, 3), np.float32)})
    with pytest.raises(RuntimeError, match=r"size mismatch for blocks.0.weight: .*\[2, 3\].*\[3, 3\]"):
        net.load_state_dict(wrong)
    with pytest.raises(RuntimeError, match="size mismatch"):
        net.load_state_dict(wrong, strict=False)  # a wrong shape is an error even when not strict

    for key, value in net.state_dict().items():  # every failed load left the module as it was
        np.testing.assert_array_equal(host(value), before[key])


def test_load_state_dict_not_strict_reports_and_loads_the_rest():
    net = Net()
    state = {k: host(v) + 1 for k, v in net.state_dict().items() if k != "mask"}
    state["extra"] = np.zeros(1, np.float32)
    result = net.load_state_dict(state, strict=False)
    assert result.missing_keys == ["mask"] and result.unexpected_keys == ["extra"]
    close(net.blocks[0].bias, state["blocks.0.bias"], rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# Module: modes, gradients, devices, printing


def test_train_eval_reach_every_module():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.head.train(False)
    assert net.training and not net.head[2].training


def test_eval_turns_dropout_off():
    net = Net()
    ids = tinyattn.tensor([[1, 2, 3, 4]])
    net.eval()
    first, second = net(ids), net(ids)
    close(first, second, rtol=0, atol=0)


def test_zero_grad():
    lin = nn.Linear(3, 2)
    lin(tinyattn.randn(4, 3)).sum().backward()
    assert lin.weight.grad is not None
    lin.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(host(lin.weight.grad), np.zeros((2, 3)))
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None


def test_double_casts_floats_and_keeps_objects():
    net = Net()
    net.register_buffer("ids", tinyattn.tensor([1, 2]))
    weight = net.blocks[0].weight
    assert net.double() is net
    assert net.blocks[0].weight is weight and weight.dtype == tinyattn.float64
    assert net.mask.dtype == tinyattn.float64 and net.state_dict()["mask"].dtype == tinyattn.float64
    assert net.ids.dtype == tinyattn.int64  # integer buffers keep their dtype
    assert net.float().blocks[0].weight.dtype == tinyattn.float32


def test_to_device_moves_parameters_and_buffers(xp_backend):
    net = Net()
    assert net.to("cpu") is net and net.to(tinyattn.device("cpu")) is net
    for t in list(net.parameters()) + list(net.buffers()):
        assert t.device == "cpu"
    if not tinyattn.cuda.is_available():
        with pytest.raises(DeviceError):
            net.to("cuda")


@pytest.mark.gpu
def test_to_cuda_moves_parameters_and_buffers():
    if not tinyattn.cuda.is_available():
        pytest.skip("no CUDA GPU")
    mha = nn.MultiHeadAttention(4, 4, 5, 0.0, 2)
    x = tinyattn.randn(2, 5, 4)
    want = host(mha(x))
    mha.to("cuda")
    for t in list(mha.parameters()) + list(mha.buffers()):
        assert t.device == "cuda:0"
    np.testing.assert_allclose(host(mha(x.to("cuda"))), want, rtol=1e-5, atol=1e-6)
    mha.cpu()
    assert all(p.device == "cpu" for p in mha.parameters())


def test_repr_matches_pytorch(torch):
    assert repr(Net()) == repr(torch_net(torch))
    assert repr(nn.Linear(3, 2, bias=False)) == repr(torch.nn.Linear(3, 2, bias=False))
    assert repr(nn.LayerNorm(4, eps=1e-6)) == repr(torch.nn.LayerNorm(4, eps=1e-6))
    assert repr(nn.LayerNorm(4, bias=False)) == repr(torch.nn.LayerNorm(4, bias=False))
    assert repr(nn.LayerNorm(4, elementwise_affine=False)) == repr(torch.nn.LayerNorm(4, elementwise_affine=False))
    assert repr(nn.GELU(approximate="tanh")) == repr(torch.nn.GELU(approximate="tanh"))
    assert repr(nn.ReLU()) == repr(torch.nn.ReLU())
    assert repr(nn.Embedding(10, 4)) == repr(torch.nn.Embedding(10, 4))
    assert repr(nn.Dropout(0.1)) == repr(torch.nn.Dropout(0.1))


def test_module_list_repr_groups_runs_of_identical_modules_like_pytorch(torch):
    def layers(lib):
        return [lib.ModuleList([]), lib.ModuleList([lib.Linear(1, 1)]),
                lib.ModuleList([lib.Linear(1, 1) for _ in range(3)] + [lib.ReLU(), lib.Linear(1, 1)]),
                lib.ModuleList([lib.ReLU(), lib.Linear(1, 2), lib.Linear(1, 2), lib.ReLU()])]

    for ours, theirs in zip(layers(nn), layers(torch.nn)):
        assert repr(ours) == repr(theirs)
    assert "(0-2): 3 x Linear(" in repr(layers(nn)[2])


def test_repr_without_pytorch():
    assert repr(nn.Sequential(nn.Linear(3, 2), nn.ReLU())) == (
        "Sequential(\n  (0): Linear(in_features=3, out_features=2, bias=True)\n  (1): ReLU()\n)")


# ---------------------------------------------------------------------------------------------
# Linear


def test_linear_layout_and_pytorch_init_at_seed_789():
    tinyattn.manual_seed(789)
    lin = nn.Linear(3, 2)
    assert lin.weight.shape == (2, 3) and lin.bias.shape == (2,)
    # what PyTorch prints for torch.manual_seed(789); torch.nn.Linear(3, 2)
    np.testing.assert_allclose(host(lin.weight), [[0.3161, 0.4568, 0.5118], [-0.1683, -0.3379, -0.0918]],
                               atol=5e-5)
    np.testing.assert_allclose(host(lin.bias), [0.4058, -0.4704], atol=5e-5)
    assert nn.Linear(3, 2, bias=False).bias is None
    assert list(nn.Linear(3, 2, bias=False).state_dict()) == ["weight"]


@given(seed=seeds, n_in=dims, n_out=dims, bias=st.booleans())
def test_linear_init_matches_pytorch(torch, seed, n_in, n_out, bias):
    tinyattn.manual_seed(seed)
    ours = nn.Linear(n_in, n_out, bias=bias)
    torch.manual_seed(seed)
    theirs = torch.nn.Linear(n_in, n_out, bias=bias)
    np.testing.assert_array_equal(host(ours.weight), theirs.weight.detach().numpy())
    if bias:
        np.testing.assert_array_equal(host(ours.bias), theirs.bias.detach().numpy())


@given(seed=seeds, batch=st.integers(1, 3), tokens=st.integers(1, 6), n_in=dims, n_out=dims)
def test_linear_forward_matches_numpy(xp_backend, seed, batch, tokens, n_in, n_out):
    lin = nn.Linear(n_in, n_out)
    x = rng_tensor(seed, batch, tokens, n_in)
    w, b = host(lin.weight), host(lin.bias)
    close(lin(x), host(x) @ w.T + b)


def test_linear_shape_error_names_the_shapes():
    with pytest.raises(ShapeError, match=r"\[2, 5\].*\[3, 4\]"):
        nn.Linear(4, 3)(tinyattn.randn(2, 5))


# ---------------------------------------------------------------------------------------------
# Embedding


def test_embedding_init_matches_pytorch(torch):
    for seed, num, dim in [(123, 5, 3), (1337, 65, 32), (0, 7, 5)]:
        tinyattn.manual_seed(seed)
        ours = nn.Embedding(num, dim)
        torch.manual_seed(seed)
        theirs = torch.nn.Embedding(num, dim)
        np.testing.assert_allclose(host(ours.weight), theirs.weight.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_embedding_lookup_and_bad_ids(xp_backend):
    emb = nn.Embedding(5, 3)
    ids = tinyattn.tensor([[0, 4, 4], [1, 2, 0]])
    out = emb(ids)
    assert out.shape == (2, 3, 3)
    close(out, host(emb.weight)[host(ids)], rtol=0, atol=0)
    out.sum().backward()  # repeated ids add up: row 4 and row 0 are used twice
    close(emb.weight.grad, np.array([2, 1, 1, 0, 2], np.float32)[:, None] * np.ones((1, 3)))
    with pytest.raises(IndexError, match="5"):
        emb(tinyattn.tensor([5]))


# ---------------------------------------------------------------------------------------------
# Dropout


def test_dropout_rejects_bad_p():
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            nn.Dropout(p)
        with pytest.raises(ValueError):
            F.dropout(tinyattn.ones(3), p)


@given(seed=seeds, p=st.floats(0.05, 0.95))
def test_dropout_identity_in_eval_and_at_p0_zeros_at_p1(xp_backend, seed, p):
    x = rng_tensor(seed, 3, 4)
    drop = nn.Dropout(p).eval()
    close(drop(x), x, rtol=0, atol=0)
    close(F.dropout(x, p, training=False), x, rtol=0, atol=0)
    close(nn.Dropout(0.0)(x), x, rtol=0, atol=0)
    np.testing.assert_array_equal(host(nn.Dropout(1.0)(x)), np.zeros((3, 4)))


@given(seed=seeds, p=st.floats(0.05, 0.95))
def test_dropout_keeps_or_zeroes_and_scales(xp_backend, seed, p):
    x = rng_tensor(seed, 4, 6) + 3.0  # no zeros in the input: a zero out means dropped
    y = host(F.dropout(x, p, training=True))
    kept = y != 0
    np.testing.assert_allclose(y[kept], host(x)[kept] / (1 - p), rtol=1e-6)


@given(seed=seeds, p=st.floats(0.0, 1.0), shape=st.lists(st.integers(1, 6), min_size=1, max_size=3))
def test_dropout_mask_matches_pytorch(torch, seed, p, shape):
    x = np.random.default_rng(seed).random(shape).astype(np.float32) + 0.5
    tinyattn.manual_seed(seed)
    ours = host(F.dropout(tinyattn.tensor(x), p, training=True))
    torch.manual_seed(seed)
    theirs = torch.nn.functional.dropout(torch.tensor(x), p, training=True).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=0)


def test_dropout_textbook_mask():
    # the attention chapter's example: torch.manual_seed(123); Dropout(0.5)(torch.ones(6, 6))
    tinyattn.manual_seed(123)
    out = nn.Dropout(0.5)(tinyattn.ones(6, 6))
    np.testing.assert_array_equal(host(out), 2 * np.array([
        [1, 1, 0, 1, 1, 0], [0, 0, 0, 1, 0, 1], [1, 1, 1, 1, 0, 1],
        [0, 1, 1, 0, 0, 1], [0, 1, 0, 1, 0, 1], [0, 1, 1, 1, 1, 0]]))


# ---------------------------------------------------------------------------------------------
# LayerNorm, GELU, ReLU


def numpy_layer_norm(x, weight, bias, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def numpy_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


@given(seed=seeds, batch=st.integers(1, 3), tokens=st.integers(1, 6), dim=st.integers(2, 8))
def test_layer_norm_matches_numpy(xp_backend, seed, batch, tokens, dim):
    ln = nn.LayerNorm(dim).double()
    ln.load_state_dict({"weight": np.random.default_rng(seed).random(dim) + 0.5,
                        "bias": np.random.default_rng(seed + 1).random(dim)})
    x = rng_tensor(seed, batch, tokens, dim, scale=3.0, dtype=np.float64)
    close(ln(x), numpy_layer_norm(host(x), host(ln.weight), host(ln.bias)), rtol=1e-10, atol=1e-10)
    close(F.layer_norm(x, (dim,)), numpy_layer_norm(host(x), 1.0, 0.0), rtol=1e-10, atol=1e-10)


def test_linear_refuses_two_dtypes_as_pytorch_does():
    with pytest.raises(TypeError, match=r"input is tinyattn.float64 but the weight is tinyattn.float32"):
        nn.Linear(3, 2)(tinyattn.ones(2, 3, dtype=tinyattn.float64))  # no silent float64 result
    assert nn.Linear(3, 2).double()(tinyattn.ones(2, 3, dtype=tinyattn.float64)).dtype is tinyattn.float64


def test_named_children_lists_a_shared_submodule_once():
    parent = nn.Module()
    parent.a = nn.Linear(1, 1)
    parent.b = parent.a
    assert [name for name, _ in parent.named_children()] == ["a"]  # PyTorch's; state_dict has both names
    assert list(parent.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias"]


def test_layer_norm_shape_error():
    with pytest.raises(ShapeError):
        nn.LayerNorm(4)(tinyattn.randn(2, 3))
    with pytest.raises(ShapeError, match=r"the weight must have that shape, got \[3\]"):
        F.layer_norm(tinyattn.randn(2, 4), (4,), weight=tinyattn.ones(3))
    with pytest.raises(ShapeError, match=r"the bias must have that shape, got \[4, 1\]"):
        F.layer_norm(tinyattn.randn(2, 4), 4, bias=tinyattn.ones(4, 1))


@given(seed=seeds, approximate=st.sampled_from(["none", "tanh"]))
def test_gelu_and_relu_match_numpy(xp_backend, seed, approximate):
    x = rng_tensor(seed, 3, 5, scale=3.0, dtype=np.float64)
    close(nn.GELU(approximate)(x), numpy_gelu(host(x), approximate), rtol=1e-12, atol=1e-12)
    close(F.gelu(x, approximate=approximate), numpy_gelu(host(x), approximate), rtol=1e-12, atol=1e-12)
    close(nn.ReLU()(x), np.maximum(host(x), 0), rtol=0, atol=0)
    close(F.relu(x), np.maximum(host(x), 0), rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# softmax, log_softmax and the losses


@given(seed=seeds, rows=st.integers(1, 4), cols=st.integers(1, 8), dim=st.sampled_from([0, 1, -1]))
def test_softmax_and_log_softmax_match_numpy(xp_backend, seed, rows, cols, dim):
    x = rng_tensor(seed, rows, cols, scale=4.0, dtype=np.float64)
    a = host(x)
    e = np.exp(a - a.max(dim, keepdims=True))
    want = e / e.sum(dim, keepdims=True)
    close(F.softmax(x, dim=dim), want, rtol=1e-12, atol=1e-15)
    close(tinyattn.softmax(x, dim=dim), want, rtol=1e-12, atol=1e-15)
    close(F.log_softmax(x, dim=dim), np.log(want), rtol=1e-12, atol=1e-12)


def test_softmax_and_cross_entropy_are_stable_at_large_logits():
    x = tinyattn.tensor([[1e4, 0.0, -1e4], [-1e4, -1e4, -1e4]])
    close(F.softmax(x, dim=-1), [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]])
    close(F.log_softmax(x, dim=-1), [[0, -1e4, -2e4], [-math.log(3)] * 3], rtol=1e-6, atol=1e-3)
    loss = F.cross_entropy(x, tinyattn.tensor([1, 0]))
    assert math.isfinite(loss.item())
    np.testing.assert_allclose(loss.item(), (1e4 + math.log(3)) / 2, rtol=1e-6)


def test_softmax_without_dim_warns_and_takes_pytorchs_implicit_dim():
    with pytest.warns(UserWarning, match="dim=X"):
        out = F.softmax(tinyattn.ones(3))
    np.testing.assert_allclose(out.numpy(), np.full(3, 1 / 3), rtol=1e-6)


def numpy_cross_entropy(logits, target, ignore_index=-100):
    shifted = logits - logits.max(1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    valid = target != ignore_index
    picked = -log_probs[np.arange(len(target)), np.where(valid, target, 0)]
    return picked[valid].mean()


@given(seed=seeds, rows=st.integers(1, 6), classes=st.integers(1, 8), ignore=st.booleans())
def test_cross_entropy_matches_numpy(xp_backend, seed, rows, classes, ignore):
    rng = np.random.default_rng(seed)
    logits = rng_tensor(seed, rows, classes, scale=3.0, dtype=np.float64)
    target = rng.integers(0, classes, rows)
    if ignore and rows > 1:
        target[rng.integers(0, rows)] = -100  # at least one row stays counted
        if (target == -100).all():
            target[0] = 0
    loss = F.cross_entropy(logits, tinyattn.tensor(target))
    np.testing.assert_allclose(loss.item(), numpy_cross_entropy(host(logits), target), rtol=1e-12)
    assert loss.shape == ()


def test_cross_entropy_errors_and_other_shapes():
    logits = tinyattn.randn(4, 3)
    with pytest.raises(IndexError, match="3"):
        F.cross_entropy(logits, tinyattn.tensor([0, 1, 2, 3]))
    with pytest.raises(ShapeError):
        F.cross_entropy(logits, tinyattn.tensor([0, 1]))
    with pytest.raises(TypeError):
        F.cross_entropy(logits, tinyattn.randn(4, 3))
    # (N, C, T) logits, the layout PyTorch expects for sequences
    seq = tinyattn.randn(2, 3, 5)
    target = tinyattn.randint(0, 3, (2, 5))
    flat = F.cross_entropy(seq.permute(0, 2, 1).reshape(-1, 3), target.reshape(-1))
    close(F.cross_entropy(seq, target), flat)
    assert F.cross_entropy(logits, tinyattn.tensor([0, 1, 2, 0]), reduction="none").shape == (4,)
    close(nn.CrossEntropyLoss()(logits, tinyattn.tensor([0, 1, 2, 0])),
          F.cross_entropy(logits, tinyattn.tensor([0, 1, 2, 0])))


def test_one_hot(xp_backend):
    ids = tinyattn.tensor([[0, 2], [1, 0]])
    assert F.one_hot(ids).tolist() == [[[1, 0, 0], [0, 0, 1]], [[0, 1, 0], [1, 0, 0]]]  # PyTorch's
    assert F.one_hot(ids, 4).shape == (2, 2, 4) and F.one_hot(ids).dtype is tinyattn.int64
    assert F.one_hot(tinyattn.tensor([], dtype=tinyattn.int64), 3).shape == (0, 3)
    for bad, classes in (([0, 3], 3), ([-1, 0], -1)):  # would be rows of zeros
        with pytest.raises(IndexError, match=f"class {bad[0] if bad[0] < 0 else bad[1]} is out of range"):
            F.one_hot(tinyattn.tensor(bad), classes)
    with pytest.raises(TypeError, match="int64"):
        F.one_hot(tinyattn.tensor([1.0]))
    with pytest.raises(ValueError, match="num_classes"):
        F.one_hot(tinyattn.tensor([], dtype=tinyattn.int64))


def test_a_batch_of_ignored_targets_gives_a_nan_loss_and_zero_gradients():
    logits = tinyattn.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    loss = F.cross_entropy(logits, tinyattn.tensor([-100, -100]))
    loss.backward()
    assert np.isnan(loss.item()) and np.abs(host(logits.grad)).max() == 0  # PyTorch's: NaN, then zeros


def test_cross_entropy_gradient_is_softmax_minus_one_hot_over_counted_rows():
    logits = tinyattn.randn(4, 3, dtype=tinyattn.float64, requires_grad=True)
    target = tinyattn.tensor([2, -100, 0, 1])
    F.cross_entropy(logits, target).backward()
    probs = host(F.softmax(logits, dim=-1))
    want = probs.copy()
    want[[0, 2, 3], [2, 0, 1]] -= 1
    want[1] = 0  # the ignored row gets no gradient
    close(logits.grad, want / 3, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# parity with PyTorch: same weights, same forward, same gradients


def copy_weights(ours, theirs):
    """Give our layer the PyTorch layer's weights (through the state_dict, as NumPy arrays)."""
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def forward_backward_parity(torch, ours, theirs, x, *, target=None, rtol=1e-5, atol=1e-6, seed=0):
    """Run both on the same input, backpropagate the same upstream gradient, compare everything."""
    xt = torch.tensor(x, requires_grad=x.dtype.kind == "f")
    xo = tinyattn.tensor(x, requires_grad=x.dtype.kind == "f")
    args_t, args_o = (xt,), (xo,)
    if target is not None:
        args_t, args_o = (xt, torch.tensor(target)), (xo, tinyattn.tensor(target))
    yt, yo = theirs(*args_t), ours(*args_o)
    np.testing.assert_allclose(host(yo), yt.detach().numpy(), rtol=rtol, atol=atol)
    float_type = x.dtype if x.dtype.kind == "f" else np.float32
    g = np.random.default_rng(seed).standard_normal(tuple(yt.shape)).astype(float_type)
    yt.backward(torch.tensor(g))
    yo.backward(tinyattn.tensor(g))
    if x.dtype.kind == "f":
        np.testing.assert_allclose(host(xo.grad), xt.grad.numpy(), rtol=rtol, atol=atol)
    if isinstance(theirs, torch.nn.Module):
        grads_t = {n: p.grad for n, p in theirs.named_parameters()}
        for name, p in ours.named_parameters():
            np.testing.assert_allclose(host(p.grad), grads_t[name].numpy(), rtol=rtol, atol=atol, err_msg=name)


@given(seed=seeds, batch=st.integers(1, 3), tokens=st.integers(1, 6), n_in=dims, n_out=dims,
       bias=st.booleans())
def test_linear_parity(torch, seed, batch, tokens, n_in, n_out, bias):
    torch.manual_seed(seed)
    theirs = torch.nn.Linear(n_in, n_out, bias=bias)
    ours = nn.Linear(n_in, n_out, bias=bias)
    copy_weights(ours, theirs)
    x = np.random.default_rng(seed).standard_normal((batch, tokens, n_in)).astype(np.float32)
    forward_backward_parity(torch, ours, theirs, x, seed=seed)


@given(seed=seeds, batch=st.integers(1, 3), tokens=st.integers(1, 6), num=st.integers(1, 8), dim=dims)
def test_embedding_parity(torch, seed, batch, tokens, num, dim):
    torch.manual_seed(seed)
    theirs = torch.nn.Embedding(num, dim)
    ours = nn.Embedding(num, dim)
    copy_weights(ours, theirs)
    ids = np.random.default_rng(seed).integers(0, num, (batch, tokens))
    forward_backward_parity(torch, ours, theirs, ids, seed=seed)


@given(seed=seeds, batch=st.integers(1, 3), tokens=st.integers(1, 6), dim=st.integers(2, 8))
def test_layer_norm_parity(torch, seed, batch, tokens, dim):
    theirs = torch.nn.LayerNorm(dim)
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(seed))
        theirs.bias.uniform_(-1, 1, generator=torch.Generator().manual_seed(seed + 1))
    ours = nn.LayerNorm(dim)
    copy_weights(ours, theirs)
    x = np.random.default_rng(seed).standard_normal((batch, tokens, dim)) * 2
    # float64: the same formulas, to rounding
    forward_backward_parity(torch, ours.double(), theirs.double(), x, seed=seed, rtol=1e-9, atol=1e-12)

    # float32: the gradient of a row of nearly equal values cancels (with 2 channels it is almost 0),
    # and there the two libraries round differently; ours must be about as close to the float64
    # gradient as PyTorch's float32 gradient is (over 400 random cases: at most 2.2x its error beyond
    # 1e-5; one case found by a longer search: 3.2x)
    g = np.random.default_rng(seed).standard_normal(x.shape)

    def input_grad(module, library, dtype):
        xs = library.tensor(x.astype(dtype), requires_grad=True)
        module(xs).backward(library.tensor(g.astype(dtype)))
        return host(xs.grad).astype(np.float64)

    exact = input_grad(theirs.double(), torch, np.float64)
    theirs32 = input_grad(theirs.float(), torch, np.float32)
    ours32 = input_grad(ours.float(), tinyattn, np.float32)
    np.testing.assert_allclose(ours32, exact, rtol=1e-4, atol=1e-5 + 4 * np.abs(theirs32 - exact).max())


@given(seed=seeds, approximate=st.sampled_from(["none", "tanh"]))
def test_activation_parity(torch, seed, approximate):
    x = (np.random.default_rng(seed).standard_normal((2, 3, 4)) * 3).astype(np.float32)
    # float32 GELU gradients of large negative inputs cancel (1 + tanh ~ 0): both libraries are off by ~1e-6
    forward_backward_parity(torch, nn.GELU(approximate), torch.nn.GELU(approximate=approximate), x, seed=seed,
                            atol=1e-5)
    forward_backward_parity(torch, nn.ReLU(), torch.nn.ReLU(), x, seed=seed)
    forward_backward_parity(torch, lambda t: F.softmax(t, dim=-1), lambda t: torch.softmax(t, dim=-1), x, seed=seed)
    forward_backward_parity(torch, lambda t: F.log_softmax(t, dim=1), lambda t: torch.log_softmax(t, dim=1), x,
                            seed=seed)


@given(seed=seeds, p=st.floats(0.0, 1.0), inplace=st.booleans())
def test_dropout_parity_with_gradients(torch, seed, p, inplace):
    x = np.random.default_rng(seed).standard_normal((3, 5)).astype(np.float32)

    def ours(t):
        tinyattn.manual_seed(seed)
        return F.dropout(t * 1, p, training=True, inplace=inplace)  # in place on a non-leaf, as torch allows

    def theirs(t):
        torch.manual_seed(seed)
        return torch.nn.functional.dropout(t * 1, p, training=True, inplace=inplace)

    forward_backward_parity(torch, ours, theirs, x, seed=seed)


def test_inplace_dropout_and_relu_write_into_their_input_and_its_graph(torch):
    for lib in (tinyattn, torch):
        x = lib.tensor([1.0, -2.0, 3.0, -4.0], requires_grad=True)
        hidden = x * 2
        lib.manual_seed(0)
        out = lib.nn.ReLU(inplace=True)(lib.nn.Dropout(0.5, inplace=True)(hidden))
        assert out is hidden
        (out * out).sum().backward()
        if lib is tinyattn:
            ours = out.tolist(), x.grad.tolist()
    assert ours == (out.tolist(), x.grad.tolist())
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)" and repr(nn.ReLU()) == "ReLU()"
    ones = tinyattn.ones(3)
    F.dropout(ones, 1.0, inplace=True)
    assert ones.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(BackwardError, match="leaf tensor that requires grad"):
        F.dropout(tinyattn.ones(3, requires_grad=True), 0.5, inplace=True)


@given(seed=seeds, rows=st.integers(1, 6), classes=st.integers(2, 8), ignore=st.booleans())
def test_cross_entropy_parity(torch, seed, rows, classes, ignore):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((rows, classes)) * 3).astype(np.float32)
    target = rng.integers(0, classes, rows)
    if ignore:
        target[rng.integers(0, rows)] = -1  # a custom ignore_index
    if (target == -1).all():
        return  # PyTorch gives nan for a mean over no rows; nothing to compare the gradient with
    forward_backward_parity(torch, lambda x, t: F.cross_entropy(x, t, ignore_index=-1),
                            lambda x, t: torch.nn.functional.cross_entropy(x, t, ignore_index=-1),
                            logits, target=target, seed=seed)


@given(seed=seeds, rows=st.integers(2, 6), classes=st.integers(2, 8), reduction=st.sampled_from(["mean", "sum", "none"]))
def test_nll_loss_parity_with_the_default_ignore_index(torch, seed, rows, classes, reduction):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((rows, classes)) * 3).astype(np.float32)
    target = rng.integers(0, classes, rows)
    target[0] = -100  # PyTorch's default ignore_index: skipped, never used as an index
    forward_backward_parity(torch, lambda x, t: F.nll_loss(x.log_softmax(-1), t, reduction=reduction),
                            lambda x, t: torch.nn.functional.nll_loss(x.log_softmax(-1), t, reduction=reduction),
                            logits, target=target, seed=seed)


@given(seed=seeds, shape=st.sampled_from([(5,), (3, 5), (2, 5, 4), (2, 5, 3, 2)]),
       reduction=st.sampled_from(["mean", "sum", "none"]), ignore=st.booleans())
def test_classification_losses_match_pytorch_on_every_input_shape(torch, seed, shape, reduction, ignore):
    """(C,), (N, C) and (N, C, d...) inputs: the same losses (0-d for one sample) and gradients."""
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal(shape) * 2).astype(np.float32)
    class_dim = 0 if len(shape) == 1 else 1
    target = rng.integers(0, shape[class_dim], shape[:class_dim] + shape[class_dim + 1:])
    if ignore and target.size > 1:
        target.flat[0] = -1  # a custom ignore_index, with other places still counted
    forward_backward_parity(
        torch, lambda x, t: F.nll_loss(F.log_softmax(x, dim=class_dim), t, ignore_index=-1, reduction=reduction),
        lambda x, t: torch.nn.functional.nll_loss(x.log_softmax(class_dim), t, ignore_index=-1, reduction=reduction),
        logits, target=target, seed=seed)
    forward_backward_parity(
        torch, lambda x, t: F.cross_entropy(x, t, ignore_index=-1, reduction=reduction),
        lambda x, t: torch.nn.functional.cross_entropy(x, t, ignore_index=-1, reduction=reduction),
        logits, target=target, seed=seed)
    if len(shape) == 1:
        assert F.cross_entropy(tinyattn.tensor(logits), tinyattn.tensor(target), reduction="none").shape == ()


def test_losses_refuse_what_pytorch_refuses(torch):
    log_probs = F.log_softmax(tinyattn.randn(4, 3), dim=1)
    sequence = tinyattn.randn(2, 3, 5)
    for loss in (F.nll_loss, F.cross_entropy):
        with pytest.raises(ShapeError, match=r"target of shape \[4\].*got \[3\]: the batch sizes differ \(4 vs 3\)"):
            loss(log_probs, tinyattn.tensor([0, 1, 2]))  # not the first 3 rows
        with pytest.raises(ShapeError, match=r"\[2, 3, 5\] needs a target of shape \[2, 5\].*got \[2, 4\]"):
            loss(sequence, tinyattn.zeros(2, 4, dtype=tinyattn.int64))
        with pytest.raises(ShapeError, match=r"\[4, 3\] needs a target of shape \[4\].*got \[4, 1\]"):
            loss(log_probs, tinyattn.zeros(4, 1, dtype=tinyattn.int64))
        with pytest.raises(TypeError, match="class indices .* got tinyattn.float32: use target.long"):
            loss(log_probs, tinyattn.tensor([0.0, 1.0, 2.0, 1.0]))  # not truncated
        with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
            loss(log_probs, tinyattn.tensor([0, 1, 2, 1]), reduction="avg")
        with pytest.raises(ShapeError, match="0-d"):
            loss(tinyattn.tensor(1.0), tinyattn.tensor(0))
        with pytest.raises(IndexError, match="target 3 is out of range for 3 classes"):
            loss(log_probs, tinyattn.tensor([0, 1, 3, 1]))
        with pytest.raises(TypeError, match="floating-point input"):
            loss(tinyattn.zeros(4, 3, dtype=tinyattn.int64), tinyattn.tensor([0, 1, 2, 1]))
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
        F.mse_loss(log_probs, log_probs, reduction="avg")
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")(log_probs, log_probs)
    with pytest.raises(ValueError):  # PyTorch refuses these too
        torch.nn.functional.mse_loss(torch.ones(2), torch.ones(2), reduction="avg")
    with pytest.raises(ValueError):
        torch.nn.functional.nll_loss(torch.ones(4, 3), torch.tensor([0, 1, 2]))


@given(seed=seeds, reduction=st.sampled_from(["mean", "sum", "none"]))
def test_mse_loss_parity(torch, seed, reduction):
    x = np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)
    y = np.random.default_rng(seed + 1).standard_normal((3, 4)).astype(np.float32)
    forward_backward_parity(torch, lambda t: F.mse_loss(t, tinyattn.tensor(y), reduction=reduction),
                            lambda t: torch.nn.functional.mse_loss(t, torch.tensor(y), reduction=reduction), x, seed=seed)


def test_softmax_of_a_single_number_matches_pytorch(torch):
    x = np.array(2.0, dtype=np.float32)
    for dim in (0, -1):
        forward_backward_parity(torch, lambda t: F.softmax(t, dim=dim), lambda t: torch.softmax(t, dim=dim), x)
        forward_backward_parity(torch, lambda t: F.log_softmax(t, dim=dim), lambda t: torch.log_softmax(t, dim=dim), x)
    assert F.softmax(tinyattn.tensor(2.0), dim=0).shape == () and tinyattn.tensor(2.0).softmax(0).item() == 1.0
    with pytest.raises(IndexError, match="out of range"):
        F.softmax(tinyattn.tensor(2.0), dim=1)


def test_linear_with_a_vector_weight_matches_pytorch(torch):
    rng = np.random.default_rng(0)
    w = rng.standard_normal(5).astype(np.float32)
    for x in (rng.standard_normal((3, 4, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)):
        wt, wo = torch.tensor(w, requires_grad=True), tinyattn.tensor(w, requires_grad=True)
        forward_backward_parity(torch, lambda t: F.linear(t, wo), lambda t: torch.nn.functional.linear(t, wt), x)
        close(wo.grad, wt.grad.numpy())
        assert F.linear(tinyattn.tensor(x), wo).shape == x.shape[:-1]
    with pytest.raises(ShapeError, match="takes no bias"):  # PyTorch refuses it too
        F.linear(tinyattn.ones(3, 5), tinyattn.ones(5), tinyattn.ones(1))
    with pytest.raises(ShapeError, match="2-D"):
        F.linear(tinyattn.ones(3, 5), tinyattn.ones(2, 2, 5))


def test_linear_without_inputs_is_made_like_pytorch(torch):
    tinyattn.manual_seed(0)
    torch.manual_seed(0)
    with pytest.warns(UserWarning, match="zero-element"):
        ours = nn.Linear(0, 3)
    with pytest.warns(UserWarning, match="zero-element"):
        theirs = torch.nn.Linear(0, 3)
    assert ours.weight.shape == (3, 0) and ours.bias.tolist() == theirs.bias.tolist() == [0.0, 0.0, 0.0]
    close(nn.Linear(2, 2).weight, torch.nn.Linear(2, 2).weight.detach().numpy())  # the same draws followed
    forward_backward_parity(torch, ours, theirs, np.ones((4, 0), dtype=np.float32))
    with pytest.warns(UserWarning, match="zero-element"):
        empty = nn.Linear(3, 0)
    assert empty(tinyattn.ones(2, 3)).shape == (2, 0)


# ---------------------------------------------------------------------------------------------
# gradients against finite differences (float64)


def module_gradcheck(module, *inputs, **kwargs):
    """gradcheck of module(*inputs) w.r.t. the inputs that require grad and every parameter.

    The checker perturbs its inputs in place, so the parameters themselves are passed as inputs: the
    module reads the perturbed numbers, and the analytical gradients w.r.t. them are checked."""
    params = list(module.parameters())
    count = len(inputs)
    assert tinyattn.gradcheck(lambda *args: module(*args[:count]), (*inputs, *params), **kwargs)


def f64(seed, *shape, scale=1.0, requires_grad=True):
    return rng_tensor(seed, *shape, scale=scale, dtype=np.float64, requires_grad=requires_grad)


@given(seed=seeds, batch=st.integers(1, 2), tokens=st.integers(1, 3), n_in=st.integers(1, 4),
       n_out=st.integers(1, 4), bias=st.booleans())
def test_linear_gradcheck(xp_backend, seed, batch, tokens, n_in, n_out, bias):
    module_gradcheck(nn.Linear(n_in, n_out, bias=bias).double(), f64(seed, batch, tokens, n_in))


@given(seed=seeds)
def test_embedding_gradcheck(xp_backend, seed):
    ids = tinyattn.tensor(np.random.default_rng(seed).integers(0, 4, (2, 3)))  # repeats likely
    module_gradcheck(nn.Embedding(4, 3).double(), ids)


@given(seed=seeds, dim=st.integers(2, 5))
def test_layer_norm_gradcheck(xp_backend, seed, dim):
    ln = nn.LayerNorm(dim).double()
    ln.load_state_dict({"weight": np.random.default_rng(seed).random(dim) + 0.5,
                        "bias": np.random.default_rng(seed + 1).random(dim)})
    module_gradcheck(ln, f64(seed, 2, dim, scale=2.0))
    module_gradcheck(nn.LayerNorm(dim, elementwise_affine=False).double(), f64(seed, 3, dim))


@given(seed=seeds, approximate=st.sampled_from(["none", "tanh"]))
def test_activation_gradcheck(xp_backend, seed, approximate):
    x = f64(seed, 2, 3, scale=2.0)
    module_gradcheck(nn.GELU(approximate), x)
    # ReLU has a kink at 0: keep the inputs at least 0.01 away from it (eps is 1e-6)
    away = tinyattn.tensor(np.where(np.abs(host(x)) < 0.01, 0.5, host(x)), requires_grad=True)
    module_gradcheck(nn.ReLU(), away)
    assert tinyattn.gradcheck(lambda t: F.softmax(t, dim=-1), x)
    assert tinyattn.gradcheck(lambda t: F.log_softmax(t, dim=0), x)


@given(seed=seeds, p=st.floats(0.1, 0.9))
def test_dropout_gradcheck_with_the_mask_frozen(xp_backend, seed, p):
    # the checker seeds the generator before every evaluation, so every evaluation drops the same entries
    module_gradcheck(nn.Dropout(p), f64(seed, 3, 4), seed=seed)
    assert tinyattn.gradcheck(lambda t: F.dropout(t, p, training=True), f64(seed, 5), seed=seed)


@given(seed=seeds, rows=st.integers(1, 4), classes=st.integers(2, 4))
def test_cross_entropy_gradcheck(xp_backend, seed, rows, classes):
    target = np.random.default_rng(seed).integers(0, classes, rows)
    target[0] = -100 if rows > 1 else target[0]  # an ignored row, when another row stays
    logits = f64(seed, rows, classes, scale=2.0)
    assert tinyattn.gradcheck(lambda x: F.cross_entropy(x, tinyattn.tensor(target)), logits)
    assert tinyattn.gradcheck(lambda x: F.cross_entropy(x, tinyattn.tensor(target), reduction="sum"), logits)
    other = f64(seed + 1, rows, classes)
    assert tinyattn.gradcheck(lambda x, y: F.mse_loss(x, y), (logits, other))
