"""The names a new user of PyTorch reaches for, from the introductory tutorials: each is there (or
left out on purpose, with its reason in the coverage report); the new ops' gradients against finite
differences (float64, inputs drawn by Hypothesis, on NumPy and on array_api_strict); and parity with
PyTorch, values, gradients and random streams."""

import importlib.util
import math
import pathlib
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn
from tinyattn import gradcheck, nn
from tinyattn.nn import functional as F

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _coverage_report():
    spec = importlib.util.spec_from_file_location("coverage_report", ROOT / "tools" / "coverage_report.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("coverage_report", module)
    spec.loader.exec_module(module)
    return module


coverage_report = _coverage_report()

# What the introductory tutorials (tensors, autograd, nn.Module, optimizers, a CNN, an RNN, a custom
# autograd.Function) and everyday PyTorch code call, written in full.
PROBE = """
torch.tensor torch.zeros torch.ones torch.zeros_like torch.ones_like torch.full torch.full_like torch.empty torch.eye
torch.arange torch.linspace torch.logspace torch.rand torch.randn torch.randint torch.randperm torch.rand_like
torch.randn_like torch.normal torch.bernoulli torch.multinomial torch.manual_seed torch.seed torch.initial_seed
torch.from_numpy torch.as_tensor torch.cat torch.stack torch.split torch.chunk torch.reshape torch.squeeze
torch.unsqueeze torch.transpose torch.permute torch.flatten torch.where torch.clamp torch.abs torch.sqrt torch.exp
torch.log torch.sin torch.cos torch.tanh torch.sigmoid torch.relu torch.sum torch.mean torch.std torch.var torch.max
torch.min torch.argmax torch.argmin torch.median torch.sort torch.topk torch.cumsum torch.prod torch.matmul torch.mm
torch.bmm torch.dot torch.outer torch.einsum torch.diag torch.tril torch.triu torch.meshgrid torch.allclose
torch.equal torch.isclose torch.all torch.any torch.no_grad torch.enable_grad torch.set_grad_enabled torch.is_tensor
torch.numel torch.set_default_dtype torch.get_default_dtype torch.set_printoptions torch.float32 torch.float64
torch.int64 torch.long torch.bool torch.device torch.cuda.is_available torch.save torch.load torch.gather
torch.index_select torch.masked_select torch.nonzero torch.unique torch.flip torch.roll torch.norm torch.dist
torch.cdist torch.logsumexp torch.softmax torch.log_softmax torch.histc torch.bincount torch.floor torch.ceil
torch.round torch.sign torch.pow torch.lerp torch.inverse torch.det torch.svd torch.std_mean torch.var_mean
torch.cross torch.trace torch.diagonal torch.repeat_interleave torch.square torch.rsqrt torch.erf torch.asin
torch.acos torch.atan torch.atan2 torch.sinh torch.cosh torch.logical_and torch.multiply torch.bitwise_xor
torch.use_deterministic_algorithms torch.set_default_tensor_type torch.set_default_device
torch.linalg.norm torch.linalg.inv torch.linalg.solve torch.linalg.det torch.linalg.svd torch.linalg.matrix_norm
torch.linalg.vector_norm torch.linalg.cross
torch.testing.assert_close torch.autograd.grad torch.autograd.Function torch.autograd.gradcheck
torch.autograd.functional.jacobian torch.autograd.functional.vjp
torch.distributions.Normal torch.distributions.Categorical torch.distributions.Bernoulli torch.distributions.Uniform
torch.nn.Linear torch.nn.ReLU torch.nn.Sigmoid torch.nn.Tanh torch.nn.Softmax torch.nn.LogSoftmax torch.nn.Sequential
torch.nn.ModuleList torch.nn.ModuleDict torch.nn.ParameterList torch.nn.ParameterDict torch.nn.Flatten
torch.nn.Unflatten torch.nn.Dropout torch.nn.BatchNorm1d torch.nn.LayerNorm torch.nn.GroupNorm torch.nn.Embedding
torch.nn.RNN torch.nn.LSTM torch.nn.GRU torch.nn.LSTMCell torch.nn.GRUCell torch.nn.MSELoss torch.nn.CrossEntropyLoss
torch.nn.NLLLoss torch.nn.BCELoss torch.nn.BCEWithLogitsLoss torch.nn.L1Loss torch.nn.SmoothL1Loss torch.nn.LeakyReLU
torch.nn.GELU torch.nn.ELU torch.nn.Identity torch.nn.LazyLinear torch.nn.CosineSimilarity torch.nn.PairwiseDistance
torch.nn.init.kaiming_normal_ torch.nn.init.xavier_uniform_ torch.nn.init.zeros_ torch.nn.init.normal_
torch.nn.utils.clip_grad_norm_ torch.nn.utils.parameters_to_vector torch.nn.utils.vector_to_parameters
torch.nn.functional.relu torch.nn.functional.softmax torch.nn.functional.cross_entropy torch.nn.functional.mse_loss
torch.nn.functional.one_hot torch.nn.functional.pad torch.nn.functional.cosine_similarity
torch.nn.functional.normalize torch.nn.functional.dropout torch.nn.functional.binary_cross_entropy
torch.nn.functional.log_softmax torch.nn.functional.nll_loss torch.nn.functional.pairwise_distance
torch.nn.functional.leaky_relu torch.nn.functional.elu torch.nn.functional.group_norm
torch.optim.SGD torch.optim.Adam torch.optim.AdamW torch.optim.RMSprop torch.optim.Adagrad torch.optim.Adadelta
torch.optim.lr_scheduler.StepLR torch.optim.lr_scheduler.ExponentialLR torch.optim.lr_scheduler.CosineAnnealingLR
torch.optim.lr_scheduler.ReduceLROnPlateau
torch.utils.data.Dataset torch.utils.data.DataLoader torch.utils.data.TensorDataset torch.utils.data.random_split
torch.utils.data.Subset
Tensor.item Tensor.tolist Tensor.numpy Tensor.view Tensor.reshape Tensor.size Tensor.dim Tensor.float Tensor.long
Tensor.double Tensor.int Tensor.to Tensor.clone Tensor.detach Tensor.requires_grad_ Tensor.backward Tensor.zero_
Tensor.add_ Tensor.mul_ Tensor.index_add_ Tensor.index_add Tensor.scatter_ Tensor.gather Tensor.masked_fill
Tensor.expand Tensor.repeat Tensor.contiguous Tensor.t Tensor.argmax Tensor.norm Tensor.clamp Tensor.sort
Tensor.topk Tensor.flatten Tensor.squeeze Tensor.squeeze_ Tensor.unsqueeze_ Tensor.permute Tensor.type
Tensor.new_zeros Tensor.new_tensor Tensor.new Tensor.fill_ Tensor.normal_ Tensor.uniform_ Tensor.bernoulli_
Tensor.bernoulli Tensor.random_ Tensor.copy_ Tensor.numel Tensor.eq Tensor.all Tensor.any Tensor.ravel
Tensor.median Tensor.diag Tensor.cumsum Tensor.nonzero Tensor.unique Tensor.swapaxes Tensor.resize_ Tensor.addcmul_
Tensor.addcdiv_ Tensor.clamp_ Tensor.sign Tensor.std Tensor.var Tensor.max Tensor.abs Tensor.sqrt Tensor.exp
Tensor.log Tensor.pow Tensor.inverse Tensor.det Tensor.lerp Tensor.sin_
torch.distributed.init_process_group torch.jit.script
""".split()


def test_the_probe_list_is_long_and_has_no_repeats():
    assert len(PROBE) >= 135 and len(set(PROBE)) == len(PROBE)


@pytest.mark.parametrize("name", PROBE)
def test_each_general_name_is_there_or_left_out_on_purpose(name):
    if coverage_report.left_out_reason(name):
        return  # listed, with its reason, on the coverage page
    assert coverage_report.is_covered(name), f"{name} is missing"


def test_a_name_left_out_says_so():
    with pytest.raises(AttributeError, match=r"tinyattn leaves torch.jit out on purpose \(TorchScript compiler\)"):
        tinyattn.jit
    assert "TorchScript" in coverage_report.left_out_reason("torch.jit.script")


# ---------------------------------------------------------------------------------------------
# gradients against finite differences (float64)

property_test = settings(suppress_health_check=[*settings.default.suppress_health_check,
                                                HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])


def floats(low=-3.0, high=3.0):
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


def arrays(shape, elements=floats(), unique=False):
    return hnp.arrays(np.float64, shape, elements=elements, unique=unique)


def shapes(min_dims=1, max_dims=3, max_side=3):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side)


def leaf(values):
    return tinyattn.tensor(np.asarray(values), dtype=tinyattn.float64, requires_grad=True)


def separated(values, gap=1e-3):
    flat = np.sort(np.ravel(values))
    return flat.size < 2 or bool(np.min(np.diff(flat)) > gap)


def check(fn, *inputs):
    assert gradcheck(fn, inputs)
    outputs = fn(*inputs)
    outputs = (outputs,) if isinstance(outputs, tinyattn.Tensor) else outputs
    sum((o * o).sum() for o in outputs if o.requires_grad).backward()
    for x in inputs:
        if isinstance(x, tinyattn.Tensor) and x.requires_grad:
            assert x.grad.shape == x.shape and x.grad.dtype == x.dtype


UNARY = {
    "asin": (tinyattn.asin, floats(-0.9, 0.9)),
    "acos": (tinyattn.acos, floats(-0.9, 0.9)),
    "atan": (tinyattn.atan, floats()),
    "sinh": (tinyattn.sinh, floats()),
    "cosh": (tinyattn.cosh, floats()),
    "ravel": (tinyattn.ravel, floats()),
    "lerp to a constant": (lambda x: tinyattn.lerp(x, x.detach() * 0 + 1.5, 0.3), floats()),
    "std_mean": (lambda x: tinyattn.std_mean(x.reshape(-1, 1), 0) if x.numel() > 1 else x.sum(), floats()),
    "linalg.norm of a vector": (lambda x: tinyattn.linalg.norm(x.reshape(-1)),
                                floats().filter(lambda v: abs(v) > 1e-2)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@property_test
@given(data=st.data())
def test_elementwise_gradients(xp_backend, name, data):
    fn, elements = UNARY[name]
    values = data.draw(arrays(shapes(), elements, unique=True), label="x")
    assume(separated(values, 1e-2))  # (std has no gradient where all values are equal)
    check(fn, leaf(values))


@property_test
@given(data=st.data())
def test_atan2_gradient_broadcast(xp_backend, data):
    y = data.draw(arrays((2, 3), floats(0.2, 3.0)), label="y")
    x = data.draw(arrays((3,), floats()), label="x")
    check(tinyattn.atan2, leaf(y), leaf(x))


@property_test
@given(data=st.data())
def test_median_gradients(xp_backend, data):
    values = data.draw(arrays(shapes(max_dims=2), floats(), unique=True), label="x")
    assume(separated(values))
    check(lambda x: x.median(), leaf(values))
    check(lambda x: tinyattn.median(x, -1).values, leaf(values))
    check(lambda x: x.median(0, keepdim=True)[0], leaf(values))


def test_median_shares_the_gradient_among_ties():
    x = leaf([1.0, 2.0, 2.0, 5.0])
    x.median().backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.5, 0.0]


@property_test
@given(data=st.data(), offset=st.integers(-2, 2))
def test_diag_and_diagonal_gradients(xp_backend, data, offset):
    check(lambda v: tinyattn.diag(v, offset), leaf(data.draw(arrays((3,)), label="v")))
    matrix = leaf(data.draw(arrays((3, 4)), label="m"))
    check(lambda m: m.diag(offset), matrix)
    batch = leaf(data.draw(arrays((2, 3, 4)), label="b"))
    check(lambda b: tinyattn.diagonal(b, offset, 1, 2), batch)


@property_test
@given(data=st.data())
def test_index_add_gradients(xp_backend, data):
    x = leaf(data.draw(arrays((4, 3)), label="x"))
    source = leaf(data.draw(arrays((3, 3)), label="source"))
    index = tinyattn.tensor([0, 2, 0])
    check(lambda x, s: x.index_add(0, index, s, alpha=2.0), x, source)
    check(lambda x, s: x[:3].clone().index_add_(1, tinyattn.tensor([2, 0, 2]), s.T), x, source)


def well_conditioned(data, shape, label):
    """A matrix (batch) near 3 I: invertible, so inverse, det and solve have smooth gradients."""
    values = data.draw(arrays(shape, floats(-1.0, 1.0)), label=label)
    return values + 3 * np.eye(shape[-1])


@property_test
@given(data=st.data())
def test_linear_algebra_gradients(xp_backend, data):
    a = leaf(well_conditioned(data, (2, 3, 3), "a"))
    check(tinyattn.inverse, a)
    check(tinyattn.linalg.det, a)
    b = leaf(data.draw(arrays((3, 2)), label="b"))
    check(tinyattn.linalg.solve, a, b)  # the batch of A broadcasts against one B
    vector = leaf(data.draw(arrays((3,)), label="v"))
    check(tinyattn.linalg.solve, leaf(well_conditioned(data, (3, 3), "a2")), vector)
    for ord in ("fro", 1, -1, math.inf, -math.inf):
        m = data.draw(arrays((3, 4), floats().filter(lambda v: abs(v) > 1e-2)), label="m")
        assume(separated(np.abs(m).sum(0)) and separated(np.abs(m).sum(1)))
        check(lambda m: tinyattn.linalg.matrix_norm(m, ord), leaf(m))


@property_test
@given(data=st.data())
def test_cross_cdist_and_similarity_gradients(xp_backend, data):
    a, b = (leaf(data.draw(arrays((2, 3)), label=k)) for k in "ab")
    check(lambda a, b: tinyattn.cross(a, b, dim=1), a, b)
    check(lambda a, b: tinyattn.addcmul(a, a, b, value=0.5), a, b)
    check(lambda a, b: tinyattn.addcdiv(a, a, b.detach() * 0 + 2, value=0.5), a, b)
    points = data.draw(arrays((4, 3), floats(), unique=True), label="points")
    assume(min(np.linalg.norm(points[i] - points[j]) for i in range(2) for j in range(2, 4)) > 1e-2)
    check(lambda x1, x2: tinyattn.cdist(x1, x2), leaf(points[:2]), leaf(points[2:]))
    assume(np.all(np.linalg.norm(points, axis=1) > 1e-2))
    check(lambda x1, x2: F.cosine_similarity(x1, x2, dim=1), leaf(points[:2]), leaf(points[2:]))
    check(lambda x1, x2: F.pairwise_distance(x1, x2), leaf(points[:2]), leaf(points[2:]))


@property_test
@given(data=st.data())
def test_shape_helpers_and_reductions_gradients(xp_backend, data):
    a, b = (leaf(data.draw(arrays((3,)), label=k)) for k in "ab")
    check(lambda a, b: tinyattn.meshgrid(a, b, indexing="xy"), a, b)
    check(lambda a, b: tinyattn.meshgrid(a, b, indexing="ij"), a, b)
    m = leaf(data.draw(arrays((2, 3, 2), floats(), unique=True), label="m"))
    check(lambda m: m.swapaxes(0, 2), m)
    check(lambda m: tinyattn.var_mean(m, 1), m)
    check(lambda m: m.clone().addcmul_(m, m, value=0.5), m)
    divisor = tinyattn.tensor(np.abs(m.detach().numpy()) + 1)  # a constant: finite differences move m only
    check(lambda m: m.clone().addcdiv_(m, divisor, value=0.5), m)
    assume(float((a - b).abs().min()) > 1e-2)
    check(lambda a, b: tinyattn.dist(a, b, 3), a, b)


@property_test
@given(data=st.data())
def test_distribution_gradients(xp_backend, data):
    loc = leaf(data.draw(arrays((3,)), label="loc"))
    scale = leaf(data.draw(arrays((3,), floats(0.5, 3.0)), label="scale"))
    value = tinyattn.tensor(data.draw(arrays((3,)), label="value"), dtype=tinyattn.float64)
    D = tinyattn.distributions
    check(lambda loc, scale: D.Normal(loc, scale).log_prob(value), loc, scale)
    check(lambda scale: D.Normal(0.0, scale).entropy(), scale)
    check(lambda loc, scale: D.Normal(loc, scale).cdf(value), loc, scale)
    probs = leaf(data.draw(arrays((3,), floats(0.05, 0.95)), label="probs"))
    check(lambda p: D.Bernoulli(p).log_prob(tinyattn.tensor([0.0, 1.0, 1.0], dtype=tinyattn.float64)), probs)
    check(lambda p: D.Bernoulli(p).entropy(), probs)
    check(lambda logits: D.Bernoulli(logits=logits).log_prob(tinyattn.tensor([1.0, 0.0, 1.0], dtype=tinyattn.float64)),
          loc)
    high = leaf(loc.detach().numpy() + scale.detach().numpy())
    check(lambda low, high: D.Uniform(low, high).entropy(), loc, high)


@property_test
@given(data=st.data())
def test_group_norm_gradient(xp_backend, data):
    x = leaf(data.draw(arrays((2, 4, 3), floats(), unique=True), label="x"))
    weight, bias = leaf(data.draw(arrays((4,)), label="w")), leaf(data.draw(arrays((4,)), label="b"))
    check(lambda x, w, b: F.group_norm(x, 2, w, b), x, weight, bias)


# ---------------------------------------------------------------------------------------------
# parity with PyTorch: values and gradients


def both(torch, values, dtype=np.float64):
    return (tinyattn.tensor(np.asarray(values, dtype), requires_grad=True),
            torch.tensor(np.asarray(values, dtype), requires_grad=True))


def same(ours, theirs, atol=1e-12):
    np.testing.assert_allclose(np.asarray(ours.detach().tolist()), theirs.detach().numpy(), rtol=1e-6, atol=atol)


OPS = {
    "asin": (lambda m, x: m.asin(x.clamp(-0.9, 0.9)),),
    "acos": (lambda m, x: m.acos(x.clamp(-0.9, 0.9)),),
    "atan": (lambda m, x: m.atan(x),),
    "atan2": (lambda m, x: m.atan2(x, x.flip(0) + 0.5),),
    "sinh": (lambda m, x: m.sinh(x),),
    "cosh": (lambda m, x: m.cosh(x),),
    "median": (lambda m, x: m.median(x),),
    "median dim": (lambda m, x: m.median(x.reshape(3, 4), 1).values,),
    "diag": (lambda m, x: m.diag(x.reshape(3, 4), 1) + m.diag(x[:3], -1).sum(),),
    "diagonal": (lambda m, x: m.diagonal(x.reshape(2, 2, 3), 1, 0, 2),),
    "inverse": (lambda m, x: m.inverse(x[:9].reshape(3, 3) + 3 * m.eye(3, dtype=x.dtype)),),
    "det": (lambda m, x: m.det(x[:9].reshape(3, 3) + 3 * m.eye(3, dtype=x.dtype)),),
    "solve": (lambda m, x: m.linalg.solve(x[:9].reshape(3, 3) + 3 * m.eye(3, dtype=x.dtype), x[9:]),),
    "linalg.norm fro": (lambda m, x: m.linalg.norm(x.reshape(3, 4)),),
    "linalg.norm inf": (lambda m, x: m.linalg.norm(x.reshape(3, 4), float("inf")),),
    "linalg.matrix_norm 1": (lambda m, x: m.linalg.matrix_norm(x.reshape(3, 4), 1),),
    "cross": (lambda m, x: m.cross(x[:6].reshape(2, 3), x[6:].reshape(2, 3), dim=1),),
    "index_add": (lambda m, x: x[:8].reshape(4, 2).index_add(0, m.tensor([3, 0, 3]),
                                                             x[8:].reshape(2, 2).repeat(2, 1)[:3], alpha=0.5),),
    "cdist": (lambda m, x: m.cdist(x[:6].reshape(2, 3), x[6:].reshape(2, 3)),),
    "cosine_similarity": (lambda m, x: m.nn.functional.cosine_similarity(x[:6].reshape(2, 3), x[6:].reshape(2, 3)),),
    "pairwise_distance": (lambda m, x: m.nn.functional.pairwise_distance(x[:6].reshape(2, 3), x[6:].reshape(2, 3)),),
    "group_norm": (lambda m, x: m.nn.functional.group_norm(x.reshape(1, 4, 3), 2),),
    "lerp": (lambda m, x: m.lerp(x, x.flip(0), 0.25),),
    "addcdiv": (lambda m, x: m.addcdiv(x, x, x.flip(0).abs() + 1, value=0.5),),
    "dist": (lambda m, x: m.dist(x, x.flip(0), 3),),
    "std_mean": (lambda m, x: m.std_mean(x.reshape(3, 4), 1)[0],),
}


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_and_gradients_match_pytorch(torch, name, dtype):
    (fn,) = OPS[name]
    values = np.random.RandomState(7).uniform(-2, 2, 12)
    ours, theirs = both(torch, values, dtype)
    out_ours, out_theirs = fn(tinyattn, ours), fn(torch, theirs)
    tolerance = 1e-12 if dtype is np.float64 else 1e-5
    same(out_ours, out_theirs, tolerance)
    weights = np.random.RandomState(8).uniform(-1, 1, tuple(out_theirs.shape))
    (out_ours * tinyattn.tensor(weights.astype(dtype))).sum().backward()
    (out_theirs * torch.tensor(weights.astype(dtype))).sum().backward()
    same(ours.grad, theirs.grad, tolerance)


def test_median_along_a_dim_returns_pytorchs_values_and_indices(torch):
    values = np.array([[3.0, 1.0, 2.0, 4.0], [1.0, 5.0, 0.0, 2.0], [np.nan, 1.0, 2.0, 3.0]])
    ours, theirs = tinyattn.tensor(values).median(1), torch.tensor(values).median(1)
    assert ours.indices.tolist() == theirs.indices.tolist()
    np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    assert tinyattn.tensor([1.0, np.nan]).median().isnan().item()


def test_shapes_and_small_helpers_match_pytorch(torch):
    for indexing in ("ij", "xy"):
        ours = tinyattn.meshgrid(tinyattn.arange(3), tinyattn.arange(2), tinyattn.arange(4), indexing=indexing)
        theirs = torch.meshgrid(torch.arange(3), torch.arange(2), torch.arange(4), indexing=indexing)
        assert [o.tolist() for o in ours] == [t.tolist() for t in theirs]
    with pytest.warns(UserWarning, match="indexing"):
        tinyattn.meshgrid(tinyattn.arange(2), tinyattn.arange(2))
    x = tinyattn.ones(1, 3, 1)
    assert x.squeeze_() is x and x.shape == (3,) and x.unsqueeze_(0).shape == (1, 3)
    assert (tinyattn.arange(6.0).reshape(2, 3).swapaxes(0, 1).tolist()
            == torch.arange(6.0).reshape(2, 3).swapaxes(0, 1).tolist())
    assert tinyattn.logspace(0, 2, 5).tolist() == torch.logspace(0, 2, 5).tolist()
    w = tinyattn.ones(2, 3, dtype=tinyattn.float64)
    assert w.new(4, 5).shape == (4, 5) and w.new(4, 5).dtype is tinyattn.float64
    assert w.new([1, 2]).tolist() == [1.0, 2.0]
    r = tinyattn.arange(6.0)
    assert r.resize_(2, 3).shape == (2, 3) and r.resize_(4).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="require grad"):
        tinyattn.ones(3, requires_grad=True).resize_(4)
    a, b = tinyattn.tensor([1, 0, 3]), tinyattn.tensor([1, 1, 0])
    assert tinyattn.logical_and(a, b).tolist() == [True, False, False]
    assert tinyattn.bitwise_xor(a, b).tolist() == [0, 1, 3] and tinyattn.multiply(a, b).tolist() == [1, 0, 0]


def test_a_leaf_that_requires_grad_cannot_be_squeezed_in_place():
    with pytest.raises(Exception, match="leaf"):
        tinyattn.ones(1, 3, requires_grad=True).squeeze_()


def test_squeeze_in_place_is_recorded():
    x = tinyattn.ones(1, 3, requires_grad=True)
    y = x * 2
    y.squeeze_()
    (y * tinyattn.arange(3.0)).sum().backward()
    assert x.grad.tolist() == [[0.0, 2.0, 4.0]]


def test_svd_matches_pytorch_and_refuses_a_gradient(torch):
    a = np.random.RandomState(0).randn(4, 3)
    ours, theirs = tinyattn.svd(tinyattn.tensor(a)), torch.svd(torch.tensor(a))
    np.testing.assert_allclose(ours.S.numpy(), theirs.S.numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.abs(ours.U.numpy()), np.abs(theirs.U.numpy()), rtol=1e-10)
    rebuilt = ours.U @ tinyattn.diag(ours.S) @ ours.V.T
    np.testing.assert_allclose(rebuilt.numpy(), a, atol=1e-12)
    with pytest.raises(RuntimeError, match="no gradient for svd"):
        tinyattn.svd(tinyattn.tensor(a, requires_grad=True))
    np.testing.assert_allclose(tinyattn.linalg.matrix_norm(tinyattn.tensor(a), "nuc").item(),
                               torch.linalg.matrix_norm(torch.tensor(a), "nuc").item(), rtol=1e-12)


def test_a_singular_matrix_is_refused_clearly():
    with pytest.raises(RuntimeError, match="singular"):
        tinyattn.inverse(tinyattn.ones(2, 2))
    with pytest.raises(RuntimeError, match="singular"):
        tinyattn.linalg.solve(tinyattn.ones(2, 2), tinyattn.ones(2))


# ---------------------------------------------------------------------------------------------
# random numbers: PyTorch's streams for the same seed


RANDOM = {
    "normal(numbers, size)": lambda m: m.normal(1.0, 2.0, size=(5,)),
    "normal(numbers, 20)": lambda m: m.normal(0.0, 1.0, (20,), dtype=m.float64),
    "normal(tensors)": lambda m: m.normal(m.zeros(20), m.arange(20.0) / 10),
    "normal(tensor, number)": lambda m: m.normal(m.arange(5.0), 2.0),
    "normal(number, tensor)": lambda m: m.normal(1.0, m.ones(17) * 3),
    "bernoulli float32": lambda m: m.bernoulli(m.linspace(0, 1, 40)),
    "bernoulli float64": lambda m: m.bernoulli(m.linspace(0, 1, 40, dtype=m.float64)),
    "bernoulli(p)": lambda m: m.bernoulli(m.zeros(30), 0.3),
    "Tensor.bernoulli": lambda m: m.full((3, 7), 0.6).bernoulli(),
    "random_(to)": lambda m: m.zeros(9).random_(10),
    "random_(from, to)": lambda m: m.zeros(9, dtype=m.int64).random_(-5, 5),
    "random_() float32": lambda m: m.zeros(6).random_(),
    "random_() float64": lambda m: m.zeros(6, dtype=m.float64).random_(),
    "random_() int64": lambda m: m.zeros(6, dtype=m.int64).random_(),
    "Normal.sample": lambda m: m.distributions.Normal(m.zeros(3), m.ones(3) * 2).sample((4,)),
    "Normal.rsample": lambda m: m.distributions.Normal(0.5, 2.0).rsample((18,)),
    "Bernoulli.sample": lambda m: m.distributions.Bernoulli(m.tensor([0.1, 0.5, 0.9])).sample((5,)),
    "Uniform.sample": lambda m: m.distributions.Uniform(m.tensor([0.0, 1.0]), m.tensor([2.0, 3.0])).sample((3,)),
}


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_random_draws_are_pytorchs(torch, name):
    tinyattn.manual_seed(123)
    torch.manual_seed(123)
    ours, theirs = RANDOM[name](tinyattn), RANDOM[name](torch)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_distributions_match_pytorch(torch):
    from torch import distributions as D

    value = [0.0, 1.0, 1.0]
    T = tinyattn.distributions
    cases = [
        (T.Normal(tinyattn.tensor([0.0, 1.0, -1.0]), 2.0), D.Normal(torch.tensor([0.0, 1.0, -1.0]), 2.0)),
        (T.Bernoulli(tinyattn.tensor([0.1, 0.5, 0.9])), D.Bernoulli(torch.tensor([0.1, 0.5, 0.9]))),
        (T.Bernoulli(logits=tinyattn.tensor([-1.0, 0.0, 2.0])), D.Bernoulli(logits=torch.tensor([-1.0, 0.0, 2.0]))),
        (T.Uniform(-1.0, tinyattn.tensor([2.0, 3.0, 4.0])), D.Uniform(-1.0, torch.tensor([2.0, 3.0, 4.0]))),
    ]
    for ours, theirs in cases:
        for method in ("log_prob", "entropy", "mean", "variance"):
            mine = getattr(ours, method)
            theirs_value = getattr(theirs, method)
            if callable(mine):
                mine = mine(tinyattn.tensor(value)) if method == "log_prob" else mine()
                theirs_value = theirs_value(torch.tensor(value)) if method == "log_prob" else theirs_value()
            np.testing.assert_allclose(mine.numpy(), theirs_value.numpy(), rtol=1e-6, atol=1e-7)
        assert repr(ours).replace("tinyattn", "torch") == repr(theirs)
    with pytest.raises(ValueError, match="support"):
        tinyattn.distributions.Uniform(0.0, 1.0).log_prob(tinyattn.tensor(2.0))
    with pytest.raises(ValueError, match="scale"):
        tinyattn.distributions.Normal(0.0, -1.0)


def test_normal_rsample_is_differentiable():
    loc = tinyattn.tensor([0.5], requires_grad=True)
    scale = tinyattn.tensor([2.0], requires_grad=True)
    tinyattn.manual_seed(0)
    sample = tinyattn.distributions.Normal(loc, scale).rsample()
    sample.sum().backward()
    tinyattn.manual_seed(0)
    eps = tinyattn.randn(1)
    assert loc.grad.tolist() == [1.0] and scale.grad.tolist() == eps.tolist()


# ---------------------------------------------------------------------------------------------
# testing, defaults, autograd.functional


@pytest.mark.parametrize("actual, expected", [
    ([1.0, 2.0, 3.0], [1.0, 2.5, 3.0]),
    ([[1, 2], [3, 4]], [[1, 2], [3, 5]]),
    (2.0, 1.0),
    ([1.0, float("nan")], [1.0, float("nan")]),
])
def test_assert_close_reports_as_pytorch(torch, actual, expected):
    with pytest.raises(AssertionError) as ours:
        tinyattn.testing.assert_close(tinyattn.tensor(actual), tinyattn.tensor(expected))
    with pytest.raises(AssertionError) as theirs:
        torch.testing.assert_close(torch.tensor(actual), torch.tensor(expected))
    assert str(ours.value) == str(theirs.value)


def test_assert_close_passes_and_checks_attributes(torch):
    tinyattn.testing.assert_close(tinyattn.tensor([1.0, 2.0]), tinyattn.tensor([1.0, 2.0 + 1e-7]))
    tinyattn.testing.assert_close([tinyattn.tensor(1.0)], [tinyattn.tensor(1.0)])
    tinyattn.testing.assert_close(tinyattn.tensor([float("nan")]), tinyattn.tensor([float("nan")]), equal_nan=True)
    for a, b in [((tinyattn.ones(2), tinyattn.ones(3)), (torch.ones(2), torch.ones(3))),
                 ((tinyattn.ones(2), tinyattn.ones(2, dtype=tinyattn.float64)),
                  (torch.ones(2), torch.ones(2, dtype=torch.float64))),
                 (([tinyattn.tensor(1.0)], [tinyattn.tensor(2.0)]), ([torch.tensor(1.0)], [torch.tensor(2.0)])),
                 ((1.0, 1.1), (1.0, 1.1))]:
        with pytest.raises(AssertionError) as ours:
            tinyattn.testing.assert_close(*a)
        with pytest.raises(AssertionError) as theirs:
            torch.testing.assert_close(*b)
        assert str(ours.value).replace("tinyattn", "torch") == str(theirs.value)
    tinyattn.testing.assert_close(tinyattn.ones(2), tinyattn.ones(2, dtype=tinyattn.float64), check_dtype=False)
    with pytest.raises(AssertionError, match="custom"):
        tinyattn.testing.assert_close(tinyattn.ones(1), tinyattn.zeros(1), msg="custom")


def test_set_default_dtype_changes_new_tensors_and_layers(torch):
    try:
        tinyattn.set_default_dtype(tinyattn.float64)
        assert tinyattn.tensor([1.5]).dtype is tinyattn.float64 and tinyattn.zeros(2).dtype is tinyattn.float64
        assert nn.Linear(2, 3).weight.dtype is tinyattn.float64
        assert tinyattn.get_default_dtype() is tinyattn.float64
        with pytest.warns(UserWarning, match="deprecated"):
            tinyattn.set_default_tensor_type(tinyattn.FloatTensor)
        assert tinyattn.get_default_dtype() is tinyattn.float32
        with pytest.raises(TypeError, match="float32 or tinyattn.float64"):
            tinyattn.set_default_dtype(tinyattn.int64)
    finally:
        tinyattn.set_default_dtype(tinyattn.float32)


def test_the_default_device_is_the_cpu():
    tinyattn.set_default_device("cpu")
    tinyattn.set_default_device(None)
    assert tinyattn.get_default_device() == tinyattn.device("cpu") and tinyattn.zeros(1).device.type == "cpu"
    with pytest.raises(RuntimeError, match="give the device to each factory"):
        tinyattn.set_default_device("cuda")


def test_deterministic_algorithms_setting_reads_back():
    try:
        tinyattn.use_deterministic_algorithms(True)
        assert tinyattn.are_deterministic_algorithms_enabled()
    finally:
        tinyattn.use_deterministic_algorithms(False)
    assert not tinyattn.are_deterministic_algorithms_enabled()


def test_jacobian_and_vjp_match_pytorch(torch):
    def f(m):
        return lambda x, y: (x * y.sum(), (x ** 2).sum() * y)

    x, y = np.array([1.0, 2.0]), np.array([0.5, -1.0, 3.0])
    ours = tinyattn.autograd.functional.jacobian(f(tinyattn), (tinyattn.tensor(x), tinyattn.tensor(y)))
    theirs = torch.autograd.functional.jacobian(f(torch), (torch.tensor(x), torch.tensor(y)))
    for row_ours, row_theirs in zip(ours, theirs):
        for a, b in zip(row_ours, row_theirs):
            np.testing.assert_allclose(a.numpy(), b.numpy())
    from tinyattn.autograd.functional import vjp

    out, grads = vjp(lambda x: x.exp().sum(), tinyattn.tensor(x))
    np.testing.assert_allclose(grads.numpy(), np.exp(x))
    with pytest.raises(NotImplementedError, match="second derivatives"):
        tinyattn.autograd.functional.jacobian(lambda x: x, tinyattn.tensor(x), create_graph=True)


# ---------------------------------------------------------------------------------------------
# layers and the optimizer


def test_lazy_linear_draws_linears_numbers_at_the_first_call(torch):
    tinyattn.manual_seed(3)
    torch.manual_seed(3)
    ours, theirs = nn.LazyLinear(4), torch.nn.LazyLinear(4)
    weight = ours.weight
    optimizer = tinyattn.optim.SGD(ours.parameters(), lr=0.1)
    x = np.random.RandomState(0).randn(2, 5).astype(np.float32)
    out_ours, out_theirs = ours(tinyattn.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    np.testing.assert_allclose(out_ours.detach().numpy(), out_theirs.detach().numpy(), rtol=1e-6)
    assert type(ours) is nn.Linear and ours.in_features == 5 and ours.weight is weight
    out_ours.sum().backward()
    optimizer.step()  # the optimizer made before the first call updates the same parameters
    assert not np.array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())


def test_parameter_list_and_dict_register_their_parameters():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ParameterList([nn.Parameter(tinyattn.ones(2)), tinyattn.zeros(3)])
            self.named = nn.ParameterDict({"scale": nn.Parameter(tinyattn.ones(1))})

    model = Model()
    assert [name for name, _ in model.named_parameters()] == ["layers.0", "layers.1", "named.scale"]
    assert isinstance(model.layers[1], nn.Parameter) and model.layers[1].requires_grad
    assert len(model.layers) == 2 and "scale" in model.named and list(model.state_dict()) == [
        "layers.0", "layers.1", "named.scale"]
    vector = nn.utils.parameters_to_vector(model.parameters())
    assert vector.shape == (6,)
    nn.utils.vector_to_parameters(tinyattn.arange(6.0), model.parameters())
    assert model.layers[1].tolist() == [2.0, 3.0, 4.0]


def test_group_norm_layer_matches_pytorch(torch):
    x = np.random.RandomState(1).randn(2, 6, 5).astype(np.float32)
    ours, theirs = nn.GroupNorm(3, 6), torch.nn.GroupNorm(3, 6)
    np.testing.assert_allclose(ours(tinyattn.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    assert repr(ours) == repr(theirs)


def test_adadelta_matches_pytorch_step_for_step(torch):
    w = np.random.RandomState(2).randn(3, 4)
    ours, theirs = tinyattn.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    options = dict(lr=0.5, rho=0.8, weight_decay=0.01)
    opt_ours, opt_theirs = tinyattn.optim.Adadelta([ours], **options), torch.optim.Adadelta([theirs], **options)
    for _ in range(5):
        for p, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            ((p ** 2).sum() + p.sum()).backward()
            opt.step()
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-13)


def test_clip_grad_norm_old_name_warns():
    p = nn.Parameter(tinyattn.ones(3))
    (p * 10).sum().backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        total = nn.utils.clip_grad_norm(p, 1.0)
    assert any("deprecated" in str(w.message) for w in caught) and total.item() > 17


# ---------------------------------------------------------------------------------------------
# out=: the result written into a given tensor


def test_out_writes_into_the_given_tensor_as_pytorch_does(torch):
    for m in (tinyattn, torch):
        m.manual_seed(5)
    pairs = []
    for m in (tinyattn, torch):
        a, b, c = m.rand(2, 2), m.rand(2, 2), m.zeros(2, 2)
        d = m.matmul(a, b, out=c)
        assert d is c
        e = m.rand(2, 2, out=c)
        assert e is c
        pairs.append([c.tolist(), m.add(a, 1, alpha=2, out=m.zeros(2, 2)).tolist(),
                      m.mul(a, b, out=m.empty(0)).tolist(), m.div(a, b, out=m.zeros(2, 2)).tolist(),
                      m.sub(a, b, out=m.zeros(2, 2)).tolist(), m.mm(a, b, out=m.zeros(2, 2)).tolist(),
                      m.randn(3, out=m.zeros(3, dtype=m.float64)).tolist()])
    assert pairs[0] == pairs[1]


def test_out_refuses_what_pytorch_refuses(torch):
    for m in (tinyattn, torch):
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            m.mul(m.ones(2, requires_grad=True), 2, out=m.zeros(2))
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            m.add(m.ones(2), m.ones(2), out=m.zeros(2, dtype=m.int64))
        with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
            out = m.add(m.ones(2), 1, out=m.zeros(3))
        assert out.tolist() == [2.0, 2.0]


def test_a_number_on_the_left_is_the_ops_second_input_as_in_pytorch(torch):
    """2 * b and 1 + b are b.mul(2) and b.add(1) in PyTorch: the graph lists b's node first (the
    autograd tutorial walks grad_fn.next_functions and prints them)."""
    for m in (tinyattn, torch):
        a = m.linspace(0.0, 3.0, steps=4, requires_grad=True)
        b = m.sin(a)
        c, d = 2 * b, 1 + b
        assert [n.name() if n is not None else None for n, _ in c.grad_fn.next_functions] == [
            "SinBackward0", None], m.__name__
        assert [n is None for n, _ in d.grad_fn.next_functions] == [False, True]
