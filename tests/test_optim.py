"""Optimizers, learning-rate schedules and gradient clipping: behaviour, and parity with torch.optim."""

import math

import numpy as np
import pytest

import tinyattn
from tinyattn import nn
from tinyattn.nn.utils import clip_grad_norm_, clip_grad_value_
from tinyattn.optim import SGD, Adam, AdamW
from tinyattn.optim.lr_scheduler import LambdaLR, WarmupCosineLR, warmup_cosine

SHAPES = [(5, 7), (7,), (3, 2, 4), ()]  # () : a 0-d parameter, whose state is 0-d arrays

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=1e-3)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict()),
    ("Adam", dict(lr=1e-2, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.01)),
    ("Adam", dict(lr=1e-2, amsgrad=True)),
    ("Adam", dict(lr=1e-2, maximize=True)),
    ("AdamW", dict()),
    ("AdamW", dict(lr=1e-2, betas=(0.9, 0.99), weight_decay=0.1)),
    ("AdamW", dict(lr=1e-2, amsgrad=True, weight_decay=0.0)),
]


def draw(rng, shapes):
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def ours(arrays):
    return [nn.Parameter(tinyattn.tensor(a.copy())) for a in arrays]


def step_both(torch, torch_opt, theirs, our_opt, mine, rng, steps):
    """`steps` steps of both optimizers with the same random gradients; then the same parameters."""
    for _ in range(steps):
        grads = draw(rng, SHAPES)
        for p, q, g in zip(theirs, mine, grads):
            p.grad, q.grad = torch.from_numpy(g.copy()), tinyattn.tensor(g.copy())
        torch_opt.step()
        our_opt.step()
    for p, q in zip(theirs, mine):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name, options", CASES, ids=[f"{n}-{sorted(o.items())}" for n, o in CASES])
def test_steps_match_torch(torch, name, options):
    """Ten steps with the same gradients give the same parameters (float32 rounding apart)."""
    rng = np.random.default_rng(0)
    start = draw(rng, SHAPES)
    theirs = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in start]
    mine = ours(start)
    torch_opt = getattr(torch.optim, name)(theirs, **options)
    our_opt = getattr(tinyattn.optim, name)(mine, **options)
    step_both(torch, torch_opt, theirs, our_opt, mine, rng, steps=10)


def test_param_groups_with_their_own_options_match_torch(torch):
    rng = np.random.default_rng(1)
    start = draw(rng, SHAPES)
    theirs = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in start]
    mine = ours(start)
    torch_opt = torch.optim.AdamW([{"params": theirs[:2], "weight_decay": 0.1}, {"params": theirs[2:], "lr": 0.1}],
                                  lr=1e-2, weight_decay=0.0)
    our_opt = AdamW([{"params": mine[:2], "weight_decay": 0.1}, {"params": mine[2:], "lr": 0.1}],
                    lr=1e-2, weight_decay=0.0)
    assert our_opt.param_groups[1]["lr"] == 0.1 and our_opt.param_groups[0]["lr"] == 1e-2
    assert our_opt.param_groups[1]["weight_decay"] == 0.0
    step_both(torch, torch_opt, theirs, our_opt, mine, rng, steps=5)


def test_a_model_trained_with_both_libraries_stays_in_step(torch):
    """Linear -> loss -> AdamW in both libraries from the same weights: same weights after 20 steps."""
    rng = np.random.default_rng(2)
    w, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    x, t = rng.standard_normal((16, 4)).astype(np.float32), rng.integers(0, 3, 16)
    mine = nn.Linear(4, 3)
    mine.load_state_dict({"weight": w, "bias": b})
    theirs = torch.nn.Linear(4, 3)
    theirs.load_state_dict({"weight": torch.from_numpy(w), "bias": torch.from_numpy(b)})
    our_opt, torch_opt = AdamW(mine.parameters(), lr=0.05), torch.optim.AdamW(theirs.parameters(), lr=0.05)
    for _ in range(20):
        loss = nn.functional.cross_entropy(mine(tinyattn.tensor(x)), tinyattn.tensor(t))
        our_opt.zero_grad()
        loss.backward()
        our_opt.step()
        torch_loss = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(x)), torch.from_numpy(t))
        torch_opt.zero_grad()
        torch_loss.backward()
        torch_opt.step()
    np.testing.assert_allclose(mine.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert abs(loss.item() - torch_loss.item()) < 1e-5


def test_sgd_by_hand():
    p = nn.Parameter(tinyattn.tensor([1.0, 2.0]))
    opt = SGD([p], lr=0.5, momentum=0.9)
    for expected in ([0.5, 1.5], [-0.45, 0.55]):  # buf = g, then 0.9 * buf + g
        p.grad = tinyattn.tensor([1.0, 1.0])
        opt.step()
        np.testing.assert_allclose(p.detach().numpy(), expected, rtol=1e-6)


def test_first_adam_step_is_lr_times_sign():
    """With bias correction, Adam's first step moves every weight by lr (eps aside), whatever |g|."""
    p = nn.Parameter(tinyattn.tensor([1.0, 1.0, 1.0]))
    opt = Adam([p], lr=0.1)
    p.grad = tinyattn.tensor([1e-3, -5.0, 200.0])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 1.1, 0.9], rtol=1e-5)


def test_adamw_decays_weights_without_gradient_signal():
    p = nn.Parameter(tinyattn.tensor([2.0]))
    opt = AdamW([p], lr=0.1, weight_decay=0.5)
    p.grad = tinyattn.tensor([0.0])
    opt.step()
    assert p.item() == pytest.approx(2.0 * (1 - 0.1 * 0.5))  # m = v = 0: only the decay acts


def test_parameters_without_grad_are_skipped_and_versions_bump():
    a, b = nn.Parameter(tinyattn.ones(2)), nn.Parameter(tinyattn.ones(2))
    opt = SGD([a, b], lr=1.0)
    a.grad = tinyattn.ones(2)
    version_a, version_b = a._version[0], b._version[0]
    opt.step()
    assert a.tolist() == [0.0, 0.0] and b.tolist() == [1.0, 1.0]
    assert a._version[0] == version_a + 1 and b._version[0] == version_b
    assert b not in opt.state


def test_step_records_no_graph_and_closure_returns_the_loss():
    p = nn.Parameter(tinyattn.tensor([3.0]))
    opt = SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 9.0
    assert p.grad_fn is None and p.is_leaf and p.item() == pytest.approx(3.0 - 0.1 * 6.0)


def test_zero_grad():
    p = nn.Parameter(tinyattn.ones(3))
    opt = SGD([p], lr=0.1)
    p.grad = tinyattn.ones(3)
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_state_dict_layout_matches_torch(torch):
    rng = np.random.default_rng(3)
    start = draw(rng, SHAPES)
    mine = ours(start)
    theirs = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in start]
    our_opt = AdamW([{"params": mine[:1]}, {"params": mine[1:], "lr": 0.5}], lr=0.01)
    torch_opt = torch.optim.AdamW([{"params": theirs[:1]}, {"params": theirs[1:], "lr": 0.5}], lr=0.01)
    for p, q in zip(mine, theirs):
        p.grad, q.grad = tinyattn.ones(p.shape), torch.ones(q.shape)
    our_opt.step()
    torch_opt.step()
    ours_sd, torch_sd = our_opt.state_dict(), torch_opt.state_dict()
    assert set(ours_sd) == {"state", "param_groups"}
    assert [g["params"] for g in ours_sd["param_groups"]] == [g["params"] for g in torch_sd["param_groups"]]
    assert set(ours_sd["state"]) == set(torch_sd["state"]) == set(range(len(SHAPES)))
    assert set(ours_sd["state"][1]) == set(torch_sd["state"][1])  # step, exp_avg, exp_avg_sq
    assert ours_sd["state"][1]["step"] == int(torch_sd["state"][1]["step"].item()) == 1
    common = set(torch_sd["param_groups"][1]) & set(ours_sd["param_groups"][1])
    assert {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "params"} <= common
    np.testing.assert_allclose(ours_sd["state"][2]["exp_avg"].numpy(), torch_sd["state"][2]["exp_avg"].numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_state_dict_round_trip_continues_exactly(name):
    rng = np.random.default_rng(4)
    start = draw(rng, SHAPES)
    options = {"lr": 0.01, "momentum": 0.9} if name == "SGD" else {"lr": 0.01}
    a, b = ours(start), ours(start)
    opt_a = getattr(tinyattn.optim, name)(a, **options)
    grads = [draw(rng, SHAPES) for _ in range(6)]
    for g in grads[:3]:
        for p, gi in zip(a, g):
            p.grad = tinyattn.tensor(gi)
        opt_a.step()
    for p, q in zip(a, b):  # b starts where a is, with a's optimizer state
        q.detach().copy_(p.detach())
    opt_b = getattr(tinyattn.optim, name)(b, lr=123.0)
    opt_b.load_state_dict(opt_a.state_dict())
    assert opt_b.param_groups[0]["lr"] == 0.01
    for g in grads[3:]:
        for p, q, gi in zip(a, b, g):
            p.grad, q.grad = tinyattn.tensor(gi), tinyattn.tensor(gi)
        opt_a.step()
        opt_b.step()
    for p, q in zip(a, b):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())


def test_load_state_dict_refuses_a_mismatch_and_changes_nothing():
    opt = Adam(ours(draw(np.random.default_rng(5), SHAPES)), lr=0.1)
    other = Adam(ours(draw(np.random.default_rng(5), SHAPES[:2])), lr=0.1)
    with pytest.raises(ValueError, match="parameters"):
        opt.load_state_dict(other.state_dict())
    assert opt.param_groups[0]["lr"] == 0.1 and opt.state == {}
    wrong = ours([np.zeros(s, np.float32) for s in [(2, 2)] + SHAPES[1:]])
    donor = Adam(wrong, lr=0.5)
    for p in wrong:
        p.grad = tinyattn.ones(p.shape)
    donor.step()
    with pytest.raises(ValueError, match="shape"):
        opt.load_state_dict(donor.state_dict())
    assert opt.param_groups[0]["lr"] == 0.1 and opt.state == {}


@pytest.mark.parametrize("make", [
    lambda ps: SGD(ps, lr=-1.0),
    lambda ps: Adam(ps, betas=(1.0, 0.9)),
    lambda ps: AdamW(ps, eps=-1.0),
    lambda ps: SGD(ps, lr=0.1, nesterov=True),
    lambda ps: SGD([], lr=0.1),
    lambda ps: SGD(ps[0], lr=0.1),
])
def test_bad_arguments_are_refused(make):
    with pytest.raises((ValueError, TypeError)):
        make([nn.Parameter(tinyattn.ones(2))])


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_a_tensor_learning_rate_is_accepted_like_torch(torch, name):
    """lr=tensor(0.01) (a 0-d tensor, as torch accepts it) takes the same steps as torch's."""
    rng = np.random.default_rng(3)
    start = draw(rng, SHAPES)
    theirs = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in start]
    mine = ours(start)
    torch_opt = getattr(torch.optim, name)(theirs, lr=torch.tensor(0.01))
    our_opt = getattr(tinyattn.optim, name)(mine, lr=tinyattn.tensor(0.01))
    assert isinstance(our_opt.param_groups[0]["lr"], float)
    step_both(torch, torch_opt, theirs, our_opt, mine, rng, steps=3)
    group = getattr(tinyattn.optim, name)([{"params": mine, "lr": tinyattn.tensor([0.5])}]).param_groups[0]
    assert group["lr"] == 0.5
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        getattr(tinyattn.optim, name)(mine, lr=tinyattn.tensor([0.1, 0.2]))
    with pytest.raises(ValueError, match="Invalid learning rate"):
        getattr(tinyattn.optim, name)(mine, lr=tinyattn.tensor(-0.1))


def test_defaults_are_torchs(torch):
    import inspect

    for name in ("SGD", "Adam", "AdamW"):
        ours_sig = inspect.signature(getattr(tinyattn.optim, name))
        torch_sig = inspect.signature(getattr(torch.optim, name))
        for parameter in ours_sig.parameters.values():
            if parameter.name == "params":
                continue
            assert torch_sig.parameters[parameter.name].default == parameter.default, (name, parameter.name)


def test_optimizer_works_on_the_strict_array_backend(xp_backend):
    p = nn.Parameter(tinyattn.tensor([1.0, -2.0, 3.0]))
    opt = AdamW([p], lr=0.1, amsgrad=True)
    for _ in range(3):
        p.grad = tinyattn.tensor([0.5, 0.5, -0.5])
        opt.step()
    sgd = SGD([p], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)
    p.grad = tinyattn.tensor([0.5, 0.5, -0.5])
    sgd.step()
    total = clip_grad_norm_([p], 0.1)
    assert total.item() == pytest.approx(math.sqrt(0.75), rel=1e-6)
    assert p.grad.detach().numpy().tolist() == pytest.approx([0.0577350, 0.0577350, -0.0577350], rel=1e-4)


# --- learning-rate schedules ---


def test_warmup_cosine_shape():
    lr = [warmup_cosine(s, 1e-3, 1e-4, 100, 2000) for s in range(2001)]
    assert lr[0] == pytest.approx(1e-3 / 101)
    assert lr[99] == pytest.approx(1e-3 * 100 / 101)
    assert lr[100] == pytest.approx(1e-3)  # the peak, then decay
    assert lr[1050] == pytest.approx((1e-3 + 1e-4) / 2)
    assert lr[2000] == pytest.approx(1e-4)
    assert all(a >= b for a, b in zip(lr[100:], lr[101:]))


def test_lambda_lr_matches_torch(torch):
    p, q = nn.Parameter(tinyattn.ones(1)), torch.nn.Parameter(torch.ones(1))
    ours_opt, torch_opt = SGD([p], lr=0.5), torch.optim.SGD([q], lr=0.5)
    ours_s = LambdaLR(ours_opt, lambda step: 0.9**step)
    torch_s = torch.optim.lr_scheduler.LambdaLR(torch_opt, lambda step: 0.9**step)
    for _ in range(5):
        assert ours_s.get_last_lr() == pytest.approx(torch_s.get_last_lr())
        ours_opt.step()
        torch_opt.step()
        ours_s.step()
        torch_s.step()
    assert ours_opt.param_groups[0]["lr"] == pytest.approx(torch_opt.param_groups[0]["lr"])


def test_warmup_cosine_scheduler_sets_each_groups_lr():
    a, b = nn.Parameter(tinyattn.ones(1)), nn.Parameter(tinyattn.ones(1))
    opt = AdamW([{"params": [a]}, {"params": [b], "lr": 2e-3}], lr=1e-3)
    scheduler = WarmupCosineLR(opt, warmup_steps=10, total_steps=100, min_lr=1e-5)
    assert scheduler.get_last_lr() == pytest.approx([1e-3 / 11, 2e-3 / 11])
    for _ in range(100):
        scheduler.step()
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([1e-5, 1e-5])
    state = scheduler.state_dict()
    assert state["last_epoch"] == 100 and "optimizer" not in state


# --- gradient clipping ---


@pytest.mark.parametrize("max_norm, norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, math.inf), (0.3, 1.0)])
def test_clip_grad_norm_matches_torch(torch, max_norm, norm_type):
    rng = np.random.default_rng(6)
    grads = draw(rng, SHAPES)
    mine = ours(draw(rng, SHAPES))
    theirs = [torch.nn.Parameter(torch.zeros(s)) for s in SHAPES]
    for p, q, g in zip(mine, theirs, grads):
        p.grad, q.grad = tinyattn.tensor(g.copy()), torch.from_numpy(g.copy())
    total = clip_grad_norm_(mine, max_norm, norm_type)
    torch_total = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert total.item() == pytest.approx(torch_total.item(), rel=1e-6)
    for p, q in zip(mine, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_clip_grad_norm_edge_cases():
    assert clip_grad_norm_([nn.Parameter(tinyattn.ones(2))], 1.0).item() == 0.0  # no gradients
    p = nn.Parameter(tinyattn.ones(2))
    p.grad = tinyattn.tensor([math.inf, 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    p.grad = tinyattn.tensor([3.0, -4.0])
    clip_grad_value_([p], 2.0)
    assert p.grad.tolist() == [2.0, -2.0]
    assert nn.utils.clip_grad_norm_ is clip_grad_norm_
