"""The layers, losses, initialisers and module hooks that small PyTorch programs reach for beyond the
attention chapter: Flatten, BatchNorm, the binary, L1, Huber and KL losses, class weights and label
smoothing, padding_idx, nn.init's normal family, forward and backward hooks.

Gradients against finite differences in float64 (Hypothesis, on NumPy and on array_api_strict), and
forward, gradients, running statistics, state_dict keys and seeded initialisation against PyTorch.
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn
from tinyattn import nn
from tinyattn.errors import ShapeError
from tinyattn.nn import functional as F
from tinyattn.nn import init

from test_op_gradients import arrays, check, floats, ids, leaf, property_test, shapes


def host(t):
    return t.detach().numpy()


def pair(torch, values, grad=True):
    """The same values as a tinyattn and a torch tensor (float ones require grad)."""
    values = np.asarray(values)
    grad = grad and values.dtype.kind == "f"
    return tinyattn.tensor(values, requires_grad=grad), torch.tensor(values, requires_grad=grad)


def assert_same(ours, theirs, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(host(ours), theirs.detach().numpy(), rtol=rtol, atol=atol)


def backward_both(ours, theirs, seed=0):
    """Backpropagate the same random upstream gradient through both outputs."""
    g = np.random.default_rng(seed).standard_normal(tuple(theirs.shape)).astype(host(ours).dtype)
    ours.backward(tinyattn.tensor(g))
    theirs.backward(__import__("torch").tensor(g))


REDUCTIONS = st.sampled_from(["mean", "sum", "none"])


# ---------------------------------------------------------------------------------------------
# gradients against finite differences


@property_test
@given(data=st.data())
def test_batch_norm_gradient(xp_backend, data):
    shape = data.draw(st.sampled_from([(3, 2), (4, 1), (2, 3, 2), (2, 2, 2, 2)]), label="shape")
    x = data.draw(arrays(shape), label="x")
    assume(np.all(np.var(np.moveaxis(x, 1, 0).reshape(shape[1], -1), axis=1) > 0.05))  # no flat channel
    weight = data.draw(arrays((shape[1],)), label="weight")
    bias = data.draw(arrays((shape[1],)), label="bias")
    check(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), leaf(x), leaf(weight), leaf(bias))
    running = (tinyattn.tensor(np.zeros(shape[1])), tinyattn.tensor(np.ones(shape[1]) * 2))
    check(lambda x, w: F.batch_norm(x, *running, w, training=False), leaf(x), leaf(weight))


@property_test
@given(data=st.data(), reduction=REDUCTIONS)
def test_binary_cross_entropy_gradients(xp_backend, data, reduction):
    shape = data.draw(shapes(), label="shape")
    probabilities = data.draw(arrays(shape, floats(0.05, 0.95)), label="input")
    target = data.draw(arrays(shape, floats(0.05, 0.95)), label="target")  # (in range while it is perturbed)
    weight = data.draw(arrays(shape[-1:], floats(0.1, 2.0)), label="weight")
    check(lambda x, t: F.binary_cross_entropy(x, t, reduction=reduction), leaf(probabilities), leaf(target))
    check(lambda x: F.binary_cross_entropy(x, tinyattn.tensor(target), tinyattn.tensor(weight), reduction=reduction),
          leaf(probabilities))
    logits = data.draw(arrays(shape), label="logits")
    pos_weight = tinyattn.tensor(data.draw(arrays(shape[-1:], floats(0.1, 3.0)), label="pos_weight"))
    check(lambda x, t: F.binary_cross_entropy_with_logits(x, t, tinyattn.tensor(weight), reduction=reduction,
                                                           pos_weight=pos_weight), leaf(logits), leaf(target))


@property_test
@given(data=st.data(), reduction=REDUCTIONS)
def test_regression_loss_gradients(xp_backend, data, reduction):
    shape = data.draw(shapes(), label="shape")
    x = data.draw(arrays(shape), label="input")
    y = data.draw(arrays(shape), label="target")
    d = np.abs(x - y)
    assume(np.all(d > 1e-3))  # off |d| = 0, where l1 has a kink
    assume(np.all(np.abs(d - 0.5) > 1e-3) and np.all(np.abs(d - 1.0) > 1e-3))  # and the switch points
    check(lambda a, b: F.l1_loss(a, b, reduction=reduction), leaf(x), leaf(y))
    check(lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=0.5), leaf(x), leaf(y))
    check(lambda a, b: F.huber_loss(a, b, reduction=reduction, delta=1.0), leaf(x), leaf(y))
    weight = tinyattn.tensor(data.draw(arrays(shape, floats(0.1, 2.0)), label="weight"))
    for loss in (F.mse_loss, F.l1_loss, F.huber_loss):
        check(lambda a, b: loss(a, b, reduction=reduction, weight=weight), leaf(x), leaf(y))


@property_test
@given(data=st.data(), reduction=st.sampled_from(["batchmean", "sum", "none"]), log_target=st.booleans())
def test_kl_div_gradient(xp_backend, data, reduction, log_target):
    shape = data.draw(shapes(), label="shape")
    log_q = data.draw(arrays(shape, floats(-3.0, 0.0)), label="input")
    target = data.draw(arrays(shape, floats(-3.0, 0.0) if log_target else floats(0.05, 1.0)), label="target")
    check(lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target), leaf(log_q), leaf(target))


@property_test
@given(data=st.data(), reduction=REDUCTIONS, smoothing=st.sampled_from([0.0, 0.1, 0.5]))
def test_weighted_and_smoothed_cross_entropy_gradient(xp_backend, data, reduction, smoothing):
    n, c = data.draw(st.integers(1, 4), label="N"), data.draw(st.integers(1, 4), label="C")
    logits = data.draw(arrays((n, c)), label="logits")
    targets = data.draw(hnp.arrays(np.int64, (n,), elements=st.integers(-1, c - 1)), label="targets")
    weight = tinyattn.tensor(data.draw(arrays((c,), floats(0.1, 2.0)), label="weight"))
    if reduction == "mean":
        assume(np.any(targets != -1))  # the mean over no valid target is 0 / 0
    check(lambda z: F.cross_entropy(z, ids(targets), weight, ignore_index=-1, reduction=reduction,
                                    label_smoothing=smoothing), leaf(logits))
    check(lambda z: F.cross_entropy(z, ids(targets), ignore_index=-1, reduction=reduction,
                                    label_smoothing=smoothing), leaf(logits))
    check(lambda z: F.nll_loss(z.log_softmax(1), ids(targets), weight, ignore_index=-1, reduction=reduction),
          leaf(logits))


@property_test
@given(data=st.data())
def test_embedding_with_padding_gradient(xp_backend, data):
    rows = data.draw(st.integers(1, 4), label="rows")
    weight = data.draw(arrays((rows, 2)), label="weight")
    token_ids = data.draw(hnp.arrays(np.int64, (3,), elements=st.integers(0, rows - 1)), label="ids")
    padding = data.draw(st.integers(-rows, rows - 1), label="padding_idx")
    w = leaf(weight)
    F.embedding(ids(token_ids), w, padding).sum().backward()
    assert np.all(host(w.grad)[padding] == 0)  # by design, not the derivative: the padding row stays put
    # the other rows get the true derivative: where the padding id is not used, it is the whole of it
    unused = token_ids[token_ids != padding % rows]
    if unused.size:
        check(lambda w: F.embedding(ids(unused), w, padding), leaf(weight))


# ---------------------------------------------------------------------------------------------
# losses against PyTorch


def loss_cases():
    """(name, ours, theirs, input values, target values) for the pointwise losses."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3))
    y = rng.standard_normal((4, 3))
    p = rng.uniform(0.01, 0.99, (4, 3))
    t = rng.uniform(0, 1, (4, 3))
    pos_weight = np.array([0.5, 1.0, 3.0])
    cases = []
    for reduction in ["mean", "sum", "none"]:
        cases += [
            ("l1", lambda L, a, b, r=reduction: L.F.l1_loss(a, b, reduction=r), x, y),
            ("smooth_l1", lambda L, a, b, r=reduction: L.F.smooth_l1_loss(a, b, reduction=r, beta=0.7), x, y),
            ("smooth_l1 beta 0", lambda L, a, b, r=reduction: L.F.smooth_l1_loss(a, b, reduction=r, beta=0.0), x, y),
            ("huber", lambda L, a, b, r=reduction: L.F.huber_loss(a, b, reduction=r, delta=0.6), x, y),
            ("bce", lambda L, a, b, r=reduction: L.F.binary_cross_entropy(a, b, reduction=r), p, t),
            ("bce weight", lambda L, a, b, r=reduction: L.F.binary_cross_entropy(
                a, b, L.tensor(pos_weight), reduction=r), p, t),
            ("bce logits", lambda L, a, b, r=reduction: L.F.binary_cross_entropy_with_logits(a, b, reduction=r),
             x * 10, t),
            ("bce logits pos_weight", lambda L, a, b, r=reduction: L.F.binary_cross_entropy_with_logits(
                a, b, L.tensor(pos_weight[::-1].copy()), reduction=r, pos_weight=L.tensor(pos_weight)), x * 10, t),
            ("mse weight", lambda L, a, b, r=reduction: L.F.mse_loss(a, b, reduction=r, weight=L.tensor(t)), x, y),
            ("l1 weight", lambda L, a, b, r=reduction: L.F.l1_loss(a, b, reduction=r, weight=L.tensor(t)), x, y),
            ("huber weight", lambda L, a, b, r=reduction: L.F.huber_loss(a, b, reduction=r, weight=L.tensor(t)), x, y),
        ]
    for reduction in ["mean", "batchmean", "sum", "none"]:
        cases += [
            ("kl_div", lambda L, a, b, r=reduction: L.F.kl_div(a.log_softmax(1), b.softmax(1), reduction=r), x, y),
            ("kl_div log_target", lambda L, a, b, r=reduction: L.F.kl_div(
                a.log_softmax(1), b.log_softmax(1), reduction=r, log_target=True), x, y),
        ]
    return cases


class Both:
    def __init__(self, lib, F):
        self.lib, self.F = lib, F

    def __getattr__(self, name):
        return getattr(self.lib, name)


@pytest.mark.parametrize("index", range(len(loss_cases())))
def test_pointwise_losses_match_pytorch(torch, index):
    name, call, x, y = loss_cases()[index]
    ours_lib, theirs_lib = Both(tinyattn, F), Both(torch, torch.nn.functional)
    (xo, xt), (yo, yt) = pair(torch, x), pair(torch, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kl_div's reduction='mean' warns, in both
        ours, theirs = call(ours_lib, xo, yo), call(theirs_lib, xt, yt)
    assert_same(ours, theirs, rtol=1e-10, atol=1e-12)
    backward_both(ours, theirs)
    np.testing.assert_allclose(host(xo.grad), xt.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(host(yo.grad), yt.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def test_binary_cross_entropy_at_saturated_probabilities(torch):
    """A sigmoid that rounds to exactly 0 or 1 gives a loss of 100 and a finite input gradient, as in PyTorch."""
    for values in ([0.0, 1.0, 0.5], [1.0, 0.0, 0.25]):
        (xo, xt), (yo, yt) = pair(torch, values), pair(torch, [1.0, 0.0, 0.3])
        ours, theirs = F.binary_cross_entropy(xo, yo), torch.nn.functional.binary_cross_entropy(xt, yt)
        assert_same(ours, theirs)
        ours.backward()
        theirs.backward()
        assert_same(xo.grad, xt.grad)
        assert_same(yo.grad, yt.grad)  # inf where the input is 0 or 1, as PyTorch's


def test_bce_with_logits_does_not_overflow(torch):
    (xo, xt), (yo, yt) = pair(torch, np.array([-1e4, 1e4, 0.0], dtype=np.float32)), pair(torch, [1.0, 0.0, 1.0])
    yo, yt = yo.float(), yt.float()
    ours = F.binary_cross_entropy_with_logits(xo, yo, reduction="none")
    theirs = torch.nn.functional.binary_cross_entropy_with_logits(xt, yt, reduction="none")
    assert_same(ours, theirs)
    assert np.isfinite(host(ours)).all()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("extra", [(), (3,)])
def test_cross_entropy_options_match_pytorch(torch, reduction, smoothing, weighted, extra):
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((4, 5) + extra).astype(np.float32)
    target = rng.integers(0, 5, (4,) + extra)
    target.flat[1] = -100  # one ignored
    weight = rng.uniform(0.2, 2.0, 5).astype(np.float32) if weighted else None
    (lo, lt), (to, tt) = pair(torch, logits), pair(torch, target)
    wo, wt = (None, None) if weight is None else (tinyattn.tensor(weight), torch.tensor(weight))
    ours = F.cross_entropy(lo, to, wo, reduction=reduction, label_smoothing=smoothing)
    theirs = torch.nn.functional.cross_entropy(lt, tt, wt, reduction=reduction, label_smoothing=smoothing)
    assert_same(ours, theirs, rtol=1e-5, atol=1e-6)
    backward_both(ours, theirs)
    assert_same(lo.grad, lt.grad, rtol=1e-5, atol=1e-6)
    # the modules, with the weight as a buffer in state_dict
    module_o = nn.CrossEntropyLoss(wo, reduction=reduction, label_smoothing=smoothing)
    module_t = torch.nn.CrossEntropyLoss(wt, reduction=reduction, label_smoothing=smoothing)
    assert_same(module_o(lo, to), module_t(lt, tt), rtol=1e-5, atol=1e-6)
    assert list(module_o.state_dict()) == list(module_t.state_dict())
    if not smoothing:
        log_probs_o, log_probs_t = lo.log_softmax(1), lt.log_softmax(1)
        assert_same(nn.NLLLoss(wo, reduction=reduction)(log_probs_o, to),
                    torch.nn.NLLLoss(wt, reduction=reduction)(log_probs_t, tt), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, options", [
    ("L1Loss", {}), ("L1Loss", {"reduction": "sum"}), ("SmoothL1Loss", {"beta": 0.3}), ("HuberLoss", {"delta": 2.0}),
    ("MSELoss", {"reduction": "none"}), ("KLDivLoss", {"reduction": "batchmean"}),
    ("KLDivLoss", {"reduction": "sum", "log_target": True}), ("BCELoss", {}), ("BCEWithLogitsLoss", {}),
])
def test_loss_modules_match_pytorch(torch, name, options):
    rng = np.random.default_rng(5)
    x = rng.uniform(0.05, 0.95, (3, 4)).astype(np.float32)
    y = rng.uniform(0.05, 0.95, (3, 4)).astype(np.float32)
    if name.startswith("KLDiv"):
        x = np.log(x)
        y = np.log(y) if options.get("log_target") else y
    (xo, xt), (yo, yt) = pair(torch, x), pair(torch, y)
    ours, theirs = getattr(nn, name)(**options), getattr(torch.nn, name)(**options)
    assert repr(ours) == repr(theirs)
    assert_same(ours(xo, yo), theirs(xt, yt), rtol=1e-5, atol=1e-6)


def test_bce_with_logits_module_keeps_its_weights_as_buffers(torch):
    weight, pos_weight = np.array([1.0, 2.0], np.float32), np.array([3.0, 0.5], np.float32)
    ours = nn.BCEWithLogitsLoss(tinyattn.tensor(weight), pos_weight=tinyattn.tensor(pos_weight))
    theirs = torch.nn.BCEWithLogitsLoss(torch.tensor(weight), pos_weight=torch.tensor(pos_weight))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight", "pos_weight"]
    assert list(nn.BCEWithLogitsLoss().state_dict()) == list(torch.nn.BCEWithLogitsLoss().state_dict()) == []
    x = np.array([[0.3, -2.0], [4.0, 0.1]], np.float32)
    t = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    assert_same(ours(tinyattn.tensor(x), tinyattn.tensor(t)), theirs(torch.tensor(x), torch.tensor(t)))


def test_loss_errors_name_the_problem():
    x = tinyattn.ones(3, 2)
    with pytest.raises(ValueError, match=r"target's shape \[3\] must be the same as the input's shape \[3, 2\]"):
        F.binary_cross_entropy_with_logits(x, tinyattn.ones(3))
    with pytest.raises(ValueError, match="input should be between 0 and 1"):
        F.binary_cross_entropy(x * 2, x)
    with pytest.raises(ValueError, match="target should be between 0 and 1"):
        F.binary_cross_entropy(x / 2, x * 2)
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
        F.l1_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="'batchmean'"):
        F.kl_div(x, x, reduction="avg")
    with pytest.raises(ShapeError, match=r"\[3, 2\] and the target's shape \[4\]"):
        F.smooth_l1_loss(x, tinyattn.ones(4))
    with pytest.raises(ValueError, match="negative values for beta"):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(ValueError, match="non-positive values for delta"):
        nn.HuberLoss(delta=0.0)(x, x)
    with pytest.raises(ShapeError, match=r"one number for each of the 2 classes.*got shape \[3\]"):
        F.cross_entropy(x, tinyattn.tensor([0, 1, 1]), weight=tinyattn.ones(3))
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, tinyattn.tensor([0, 1, 1]), label_smoothing=1.5)



def test_the_deprecated_size_average_and_reduce_mean_what_they_mean_in_pytorch(torch):
    x, t = tinyattn.tensor([[0.1, 0.9], [0.4, 0.6]]).log(), tinyattn.tensor([1, 0])
    for options, reduction in [({"size_average": False}, "sum"), ({"reduce": False}, "none"),
                               ({"size_average": True, "reduce": True}, "mean")]:
        with pytest.warns(UserWarning, match=f"please use reduction='{reduction}'"):
            loss = nn.NLLLoss(**options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert loss.reduction == torch.nn.NLLLoss(**options).reduction == reduction
        with pytest.warns(UserWarning, match=f"please use reduction='{reduction}'"):
            assert_same(F.nll_loss(x, t, **options), F.nll_loss(x, t, reduction=reduction))


def test_a_target_that_broadcasts_to_another_shape_warns_as_pytorch():
    with pytest.warns(UserWarning, match="different to the input size"):
        loss = F.l1_loss(tinyattn.ones(3, 1), tinyattn.zeros(3))
    assert loss.item() == 1.0
    with pytest.raises(ValueError, match=r"the weight's shape \[3\] must be the input's shape \[2, 3\]"):
        F.mse_loss(tinyattn.ones(2, 3), tinyattn.ones(2, 3), weight=tinyattn.ones(3))


def test_kl_div_mean_warns_as_pytorch():
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(tinyattn.zeros(2, 2), tinyattn.ones(2, 2) / 2)


# ---------------------------------------------------------------------------------------------
# BatchNorm against PyTorch


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5)])
@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_1d_trains_and_evaluates_as_pytorch(torch, shape, momentum, affine):
    ours, theirs = nn.BatchNorm1d(3, momentum=momentum, affine=affine), torch.nn.BatchNorm1d(3, momentum=momentum,
                                                                                             affine=affine)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(7)
    for step in range(3):
        (xo, xt) = pair(torch, (rng.standard_normal(shape) * 3 + 1).astype(np.float32))
        yo, yt = ours(xo), theirs(xt)
        assert_same(yo, yt, rtol=1e-5, atol=1e-5)
        backward_both(yo, yt, seed=step)
        assert_same(xo.grad, xt.grad, rtol=1e-4, atol=1e-5)
        for name, buffer in theirs.state_dict().items():
            np.testing.assert_allclose(host(ours.state_dict()[name]), buffer.numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=name)
    if affine:
        assert_same(ours.weight.grad, theirs.weight.grad, rtol=1e-4, atol=1e-5)
        assert_same(ours.bias.grad, theirs.bias.grad, rtol=1e-5, atol=1e-5)
    ours.eval()
    theirs.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    assert_same(ours(tinyattn.tensor(x)), theirs(torch.tensor(x)), rtol=1e-5, atol=1e-6)
    assert ours.num_batches_tracked.item() == 3


def test_batch_norm_without_running_stats_and_2d(torch):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 2, 4, 5)).astype(np.float32)
    for options in ({}, {"track_running_stats": False}, {"bias": False}):
        ours, theirs = nn.BatchNorm2d(2, **options), torch.nn.BatchNorm2d(2, **options)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        for mode in (True, False):
            ours.train(mode)
            theirs.train(mode)
            (xo, xt) = pair(torch, x)
            yo, yt = ours(xo), theirs(xt)
            assert_same(yo, yt, rtol=1e-5, atol=1e-5)
            backward_both(yo, yt)
            assert_same(xo.grad, xt.grad, rtol=1e-4, atol=1e-5)
    values, running_mean, running_var = pair(torch, x)[0], tinyattn.zeros(2), tinyattn.ones(2)
    F.batch_norm(values, running_mean, running_var, training=True, momentum=1.0)
    np.testing.assert_allclose(host(running_mean), x.mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(running_var), x.transpose(1, 0, 2, 3).reshape(2, -1).var(1, ddof=1), rtol=1e-5)


def test_batch_norm_errors():
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input"):
        nn.BatchNorm1d(3)(tinyattn.ones(2, 3, 4, 5))
    with pytest.raises(ShapeError, match=r"BatchNorm1d\(3\): the input has 4 channels"):
        nn.BatchNorm1d(3)(tinyattn.ones(2, 4))
    with pytest.raises(ValueError, match=r"more than 1 value per channel when training, got input size \[1, 3\]"):
        nn.BatchNorm1d(3)(tinyattn.ones(1, 3))
    assert nn.BatchNorm1d(3).eval()(tinyattn.ones(1, 3)).shape == (1, 3)  # in eval, one sample is fine
    with pytest.raises(ShapeError, match="running_mean should contain 3 elements"):
        F.batch_norm(tinyattn.ones(2, 3), tinyattn.zeros(4), tinyattn.ones(3))
    with pytest.raises(ValueError, match="running_mean and running_var are needed"):
        F.batch_norm(tinyattn.ones(2, 3), None, None)


# ---------------------------------------------------------------------------------------------
# Flatten, Unflatten, LogSoftmax, Embedding


def test_flatten_unflatten_and_log_softmax_match_pytorch(torch):
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4) / 7
    for ours, theirs in [(nn.Flatten(), torch.nn.Flatten()), (nn.Flatten(0, 1), torch.nn.Flatten(0, 1)),
                         (nn.Unflatten(2, (2, 2)), torch.nn.Unflatten(2, (2, 2))),
                         (nn.Unflatten(-2, (1, -1)), torch.nn.Unflatten(-2, (1, -1))),
                         (nn.LogSoftmax(dim=1), torch.nn.LogSoftmax(dim=1))]:
        assert repr(ours) == repr(theirs)
        xo, xt = pair(torch, x)
        yo, yt = ours(xo), theirs(xt)
        assert yo.shape == tuple(yt.shape)
        assert_same(yo, yt)
        backward_both(yo, yt)
        assert_same(xo.grad, xt.grad)
    with pytest.raises(ShapeError, match=r"sizes \[2, 2\] do not multiply to the size 3 of dim 1"):
        nn.Unflatten(1, (2, 2))(tinyattn.ones(2, 3))
    with pytest.raises(TypeError, match="tuple of ints"):
        nn.Unflatten(1, 6)


def test_an_mlp_with_flatten_and_batch_norm_trains_as_pytorch(torch):
    """An ordinary small PyTorch program: Sequential, Flatten, BatchNorm1d, BCEWithLogitsLoss, SGD."""

    def build(L):
        L.manual_seed(0)
        model = L.nn.Sequential(L.nn.Flatten(), L.nn.Linear(6, 8), L.nn.BatchNorm1d(8), L.nn.ReLU(),
                                L.nn.Linear(8, 1))
        return model, L.optim.SGD(model.parameters(), lr=0.1), L.nn.BCEWithLogitsLoss()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    y = (rng.uniform(size=(5, 1)) > 0.5).astype(np.float32)
    losses = []
    for L in (tinyattn, torch):
        model, optimizer, loss_fn = build(L)
        trace = []
        for _ in range(5):
            optimizer.zero_grad()
            loss = loss_fn(model(L.tensor(x)), L.tensor(y))
            loss.backward()
            optimizer.step()
            trace.append(loss.item())
        model.eval()
        trace.append(model(L.tensor(x)).sum().item())
        losses.append(trace)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)


def test_embedding_padding_idx_matches_pytorch(torch):
    for padding in (0, 2, -1):
        tinyattn.manual_seed(4)
        torch.manual_seed(4)
        ours, theirs = nn.Embedding(5, 3, padding_idx=padding), torch.nn.Embedding(5, 3, padding_idx=padding)
        assert repr(ours) == repr(theirs)
        assert ours.padding_idx == theirs.padding_idx
        assert_same(ours.weight, theirs.weight)  # the same draws, with the padding row zeroed
        token_ids = [[1, 4, 4], [0, 2, 1]]
        yo, yt = ours(tinyattn.tensor(token_ids)), theirs(torch.tensor(token_ids))
        backward_both(yo, yt)
        assert_same(ours.weight.grad, theirs.weight.grad)
    with pytest.raises(ValueError, match="padding_idx must be within num_embeddings"):
        nn.Embedding(5, 3, padding_idx=5)
    with pytest.raises(NotImplementedError, match="max_norm"):
        nn.Embedding(5, 3, max_norm=1.0)


def test_embedding_from_pretrained(torch):
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    for freeze in (True, False):
        ours = nn.Embedding.from_pretrained(tinyattn.tensor(table), freeze=freeze, padding_idx=1)
        theirs = torch.nn.Embedding.from_pretrained(torch.tensor(table), freeze=freeze, padding_idx=1)
        assert ours.weight.requires_grad == theirs.weight.requires_grad == (not freeze)
        assert_same(ours.weight, theirs.weight)  # the padding row is left as given
        assert_same(ours(tinyattn.tensor([2, 1])), theirs(torch.tensor([2, 1])))
    with pytest.raises(ValueError, match="2-dimensional"):
        nn.Embedding.from_pretrained(tinyattn.ones(3))


# ---------------------------------------------------------------------------------------------
# nn.init


@pytest.mark.parametrize("shape", [(5, 7), (40, 30), (4, 3, 2)])
@pytest.mark.parametrize("name, options", [
    ("kaiming_normal_", {}), ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"}),
    ("kaiming_normal_", {"a": 0.2}), ("trunc_normal_", {"std": 0.02}), ("trunc_normal_", {}),
    ("trunc_normal_", {"mean": 1.0, "std": 0.5, "a": -1.0, "b": 0.0}), ("trunc_normal_", {"a": 0.5, "b": 3.0}),
    ("orthogonal_", {}), ("orthogonal_", {"gain": 2.0}), ("xavier_normal_", {}), ("kaiming_uniform_", {}),
])
def test_init_matches_pytorch_at_the_same_seed(torch, shape, name, options):
    tinyattn.manual_seed(11)
    torch.manual_seed(11)
    ours = getattr(init, name)(tinyattn.empty(*shape), **options)
    theirs = getattr(torch.nn.init, name)(torch.empty(*shape), **options)
    # the same draws (orthogonal_: LAPACK's QR in float32, to rounding)
    assert_same(ours, theirs, rtol=0, atol=1e-6 if name == "orthogonal_" else 0)
    assert tinyattn.rand(1).item() == torch.rand(1).item()  # and the stream is left at the same place


def test_orthogonal_and_eye(torch):
    w = init.orthogonal_(tinyattn.empty(3, 6, dtype=tinyattn.float64))
    np.testing.assert_allclose(host(w) @ host(w).T, np.eye(3), atol=1e-12)
    assert_same(init.eye_(tinyattn.empty(2, 3)), torch.nn.init.eye_(torch.empty(2, 3)))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(tinyattn.empty(2, 3, 4))
    with pytest.raises(ValueError, match="'fan_avg' is not supported"):
        init.kaiming_normal_(tinyattn.empty(2, 3), mode="fan_avg")
    assert init.calculate_gain("selu") == torch.nn.init.calculate_gain("selu")
    assert init._calculate_fan_in_and_fan_out(tinyattn.empty(4, 3, 2)) == (6, 8)


def test_init_does_not_record_a_graph():
    layer = nn.Linear(3, 4)
    for fill in (init.kaiming_normal_, init.trunc_normal_, init.orthogonal_, init.eye_):
        fill(layer.weight)
        assert layer.weight.is_leaf and layer.weight.requires_grad


# ---------------------------------------------------------------------------------------------
# module hooks


def hooked_run(L):
    """What the hooks of a small model see and do, in a form both libraries can be compared on."""
    L.manual_seed(0)
    model = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.Tanh(), L.nn.Linear(4, 2))
    seen = []

    def values(t):
        return None if t is None else np.round(t.detach().numpy(), 5).tolist()

    handles = [
        model[0].register_forward_pre_hook(lambda m, args: seen.append(("pre", values(args[0])))),
        model[0].register_forward_pre_hook(lambda m, args, kwargs: ((args[0] * 2,), kwargs), with_kwargs=True,
                                           prepend=True),
        model[1].register_forward_hook(lambda m, args, output: seen.append(("tanh", values(output)))),
        model[2].register_forward_hook(lambda m, args, output: output + 1),
        model[2].register_forward_hook(lambda m, args, kwargs, output: seen.append(("kw", kwargs)), with_kwargs=True),
        model[0].register_full_backward_hook(
            lambda m, gi, go: seen.append(("backward 0", [values(g) for g in gi], [values(g) for g in go]))),
        model[2].register_full_backward_hook(
            lambda m, gi, go: seen.append(("backward 2", [values(g) for g in gi], [values(g) for g in go]))),
    ]
    x = L.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    out = model(x)
    (out * L.tensor([[1.0, -1.0], [0.5, 2.0]])).sum().backward()
    seen.append(("out", values(out), values(x.grad)))
    for handle in handles:
        handle.remove()
    seen.append(("after remove", values(model(x))))
    # a backward hook that replaces the input's gradient, on a module whose input needs none
    model[2].register_full_backward_hook(lambda m, gi, go: (gi[0] * 0,))
    y = L.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    model(y).sum().backward()
    seen.append(("replaced", values(y.grad), values(model[0].weight.grad)))
    return seen


def test_module_hooks_match_pytorch(torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = hooked_run(torch)
    ours = hooked_run(tinyattn)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a == b


def test_backward_hook_of_a_module_whose_inputs_need_no_gradient(torch):
    results = []
    for L in (tinyattn, torch):
        L.manual_seed(0)
        layer = L.nn.Linear(2, 2)
        found = []
        layer.register_full_backward_hook(lambda m, gi, go: found.append((gi, tuple(go[0].shape))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch warns that it fires at the outputs
            layer(L.ones(3, 2)).sum().backward()
        results.append(found)
    assert results[0] == results[1] == [((None,), (3, 2))]


def test_forward_hook_always_call_and_handle():
    layer = nn.Linear(2, 2)
    calls = []
    layer.register_forward_hook(lambda m, args, output: calls.append(output), always_call=True)
    with pytest.raises(ShapeError):
        layer(tinyattn.ones(3))
    assert calls == [None]
    handle = layer.register_forward_hook(lambda m, args, output: calls.append("second"))
    layer(tinyattn.ones(2))
    handle.remove()
    handle.remove()  # a second remove does nothing, as in PyTorch
    layer(tinyattn.ones(2))
    assert calls[1:].count("second") == 1
    with pytest.raises(TypeError, match="a hook must be callable"):
        layer.register_forward_hook(None)


def test_hooks_survive_deepcopy_and_state_dict_ignores_them():
    import copy

    layer = nn.Linear(2, 2)
    layer.register_forward_hook(lambda m, args, output: output * 0)
    twin = copy.deepcopy(layer)
    assert float(twin(tinyattn.ones(2)).abs().sum()) == 0
    assert list(layer.state_dict()) == ["weight", "bias"]
    assert math.isfinite(float(nn.Linear(2, 2)(tinyattn.ones(2)).sum()))


# ---------------------------------------------------------------------------------------------
# Conv1d


@property_test
@given(data=st.data())
def test_conv1d_gradient(xp_backend, data):
    groups = data.draw(st.integers(1, 2), label="groups")
    in_channels, out_channels = groups * data.draw(st.integers(1, 2)), groups * data.draw(st.integers(1, 2))
    kernel, stride, dilation = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    padding = data.draw(st.sampled_from([0, 1, "same"] if stride == 1 else [0, 1]), label="padding")
    length = data.draw(st.integers(dilation * (kernel - 1) + 1, 6), label="length")
    x = data.draw(arrays((2, in_channels, length)), label="x")
    w = data.draw(arrays((out_channels, in_channels // groups, kernel)), label="weight")
    b = data.draw(arrays((out_channels,)), label="bias")
    check(lambda x, w, b: F.conv1d(x, w, b, stride, padding, dilation, groups), leaf(x), leaf(w), leaf(b))


@pytest.mark.parametrize("args, options, shape", [
    ((3, 4, 3), {}, (2, 3, 9)),
    ((4, 6, 2), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}, (2, 4, 11)),
    ((3, 2, 4), {"padding": "same"}, (3, 7)),  # one sample without a batch dim, an even kernel
    ((3, 2, 3), {"padding": 2, "padding_mode": "reflect", "bias": False}, (1, 3, 5)),
    ((2, 2, 3), {"padding": "same", "padding_mode": "circular", "dilation": 2}, (1, 2, 6)),
    ((2, 5, 1), {"padding": "valid"}, (1, 2, 6)),
])
def test_conv1d_matches_pytorch(torch, args, options, shape):
    tinyattn.manual_seed(0)
    torch.manual_seed(0)
    ours, theirs = nn.Conv1d(*args, **options), torch.nn.Conv1d(*args, **options)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert_same(ours.weight, theirs.weight, rtol=0, atol=0)  # the same initial draws
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    (xo, xt) = pair(torch, x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's note on 'same' with an even kernel
        yo, yt = ours(xo), theirs(xt)
    assert yo.shape == tuple(yt.shape)
    assert_same(yo, yt, rtol=1e-5, atol=1e-6)
    backward_both(yo, yt)
    assert_same(xo.grad, xt.grad, rtol=1e-5, atol=1e-6)
    assert_same(ours.weight.grad, theirs.weight.grad, rtol=1e-5, atol=1e-5)


def test_conv1d_errors():
    layer = nn.Conv1d(3, 4, 3)
    with pytest.raises(ShapeError, match=r"expects 3 input channels, got 2 \(input shape \[1, 2, 5\]\)"):
        layer(tinyattn.ones(1, 2, 5))
    with pytest.raises(ShapeError, match="shorter than the kernel's reach 3"):
        layer(tinyattn.ones(1, 3, 2))
    with pytest.raises(ShapeError, match=r"2-D \(C_in, L\) or 3-D \(N, C_in, L\) input"):
        layer(tinyattn.ones(3))
    with pytest.raises(ValueError, match="not supported for strided convolutions"):
        nn.Conv1d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv1d(3, 4, 3, groups=2)
    with pytest.raises(TypeError, match="padding must be an int"):
        nn.Conv1d(3, 4, 3, padding="full")


# ---------------------------------------------------------------------------------------------
# GLU and the deprecated spellings of nn.init


@property_test
@given(data=st.data())
def test_glu_gradient(xp_backend, data):
    shape = data.draw(st.sampled_from([(4,), (2, 6), (3, 2, 2)]), label="shape")
    x = data.draw(arrays(shape), label="x")
    dim = data.draw(st.sampled_from([d for d in range(-len(shape), len(shape)) if shape[d] % 2 == 0]), label="dim")
    check(lambda x: F.glu(x, dim), leaf(x))


def test_glu_matches_pytorch(torch):
    x = np.random.default_rng(2).standard_normal((3, 4, 2)).astype(np.float32)
    for dim in (-1, 1):
        (xo, xt) = pair(torch, x)
        yo, yt = nn.GLU(dim)(xo), torch.nn.GLU(dim)(xt)
        assert_same(yo, yt)
        backward_both(yo, yt)
        assert_same(xo.grad, xt.grad)
    assert repr(nn.GLU()) == repr(torch.nn.GLU())
    with pytest.raises(ShapeError, match="halving dimension must be even, but dimension 0 is size 3"):
        F.glu(tinyattn.ones(3), 0)


def test_init_names_without_underscore_warn_as_pytorch(torch):
    for name in ("uniform", "normal", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
                 "orthogonal"):
        tinyattn.manual_seed(1)
        torch.manual_seed(1)
        with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
            ours = getattr(init, name)(tinyattn.empty(3, 4))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = getattr(torch.nn.init, name)(torch.empty(3, 4))
        assert_same(ours, theirs, rtol=0, atol=1e-6)
