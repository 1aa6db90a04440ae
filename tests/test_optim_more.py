"""RMSprop, Adagrad and the learning-rate schedulers: trajectories and rates against torch.optim."""

import inspect
import math
import warnings

import numpy as np
import pytest

import tinyattn
from tinyattn import nn
from tinyattn.optim import lr_scheduler

from test_optim import SHAPES, draw, ours, step_both
from test_optim import test_steps_match_torch as steps_match_torch

CASES = [
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=1e-2, alpha=0.9, eps=1e-6, weight_decay=0.01)),
    ("RMSprop", dict(lr=1e-2, momentum=0.9)),
    ("RMSprop", dict(lr=1e-2, centered=True)),
    ("RMSprop", dict(lr=1e-2, centered=True, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1, eps=1e-6)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
]


@pytest.mark.parametrize("name, options", CASES, ids=[f"{n}-{sorted(o.items())}" for n, o in CASES])
def test_steps_match_torch(torch, name, options):
    """Ten steps with the same gradients give the same parameters (float32 rounding apart)."""
    steps_match_torch(torch, name, options)


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad"])
def test_signatures_defaults_and_groups_are_torchs(torch, name):
    ours_sig = inspect.signature(getattr(tinyattn.optim, name)).parameters
    theirs_sig = inspect.signature(getattr(torch.optim, name)).parameters
    assert list(ours_sig) == list(theirs_sig)
    assert all(ours_sig[n].default == theirs_sig[n].default for n in ours_sig if n != "params")
    assert [p.kind for p in ours_sig.values()] == [p.kind for p in theirs_sig.values()]
    group = getattr(tinyattn.optim, name)([nn.Parameter(tinyattn.zeros(2))]).param_groups[0]
    reference = getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))]).param_groups[0]
    assert list(group) == list(reference)
    assert {k: v for k, v in group.items() if k != "params"} == {k: v for k, v in reference.items() if k != "params"}


@pytest.mark.parametrize("name, options", [("RMSprop", dict(momentum=0.9, centered=True)), ("Adagrad", dict())])
def test_state_dict_has_torchs_keys_and_round_trips_through_torch(torch, name, options, tmp_path):
    rng = np.random.default_rng(2)
    start = draw(rng, SHAPES)
    mine, theirs = ours(start), [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in start]
    our_opt = getattr(tinyattn.optim, name)(mine, lr=0.01, **options)
    torch_opt = getattr(torch.optim, name)(theirs, lr=0.01, **options)
    step_both(torch, torch_opt, theirs, our_opt, mine, rng, steps=2)
    ours_sd, torch_sd = our_opt.state_dict(), torch_opt.state_dict()
    assert set(ours_sd["state"]) == set(torch_sd["state"])
    for key in torch_sd["state"]:
        assert list(ours_sd["state"][key]) == list(torch_sd["state"][key])
        for state_name, value in torch_sd["state"][key].items():
            np.testing.assert_allclose(ours_sd["state"][key][state_name].numpy(), value.numpy(), rtol=1e-5, atol=1e-7)
    # our state, saved by tinyattn and loaded by torch, continues torch's trajectory; and back
    path = tmp_path / "opt.pt"
    tinyattn.save(ours_sd, path)
    fresh = [torch.nn.Parameter(p.detach().clone()) for p in theirs]
    torch_again = getattr(torch.optim, name)(fresh, lr=0.01, **options)
    torch_again.load_state_dict(torch.load(path))
    ours_again = getattr(tinyattn.optim, name)(ours([p.detach().numpy() for p in mine]), lr=0.01, **options)
    ours_again.load_state_dict(torch_opt.state_dict())
    step_both(torch, torch_again, fresh, ours_again, ours_again.param_groups[0]["params"], rng, steps=3)


@pytest.mark.parametrize("make, message", [
    (lambda p: tinyattn.optim.RMSprop(p, lr=-1), "Invalid learning rate"),
    (lambda p: tinyattn.optim.RMSprop(p, alpha=-0.1), "Invalid alpha value"),
    (lambda p: tinyattn.optim.RMSprop(p, momentum=-0.1), "Invalid momentum value"),
    (lambda p: tinyattn.optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value"),
    (lambda p: tinyattn.optim.Adagrad(p, initial_accumulator_value=-1), "Invalid initial_accumulator_value"),
])
def test_bad_arguments_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make([nn.Parameter(tinyattn.zeros(2))])


def test_rmsprop_by_hand():
    p = nn.Parameter(tinyattn.tensor([1.0]))
    opt = tinyattn.optim.RMSprop([p], lr=0.1, alpha=0.5, eps=0.0)
    p.grad = tinyattn.tensor([2.0])
    opt.step()  # v = 0.5 * 4 = 2; p = 1 - 0.1 * 2 / sqrt(2)
    assert p.item() == pytest.approx(1 - 0.1 * 2 / math.sqrt(2), rel=1e-6)


# --- schedulers: each group's lr at every step, against torch's ---

SCHEDULES = [
    ("StepLR", dict(step_size=3)),
    ("StepLR", dict(step_size=2, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=5)),
    ("CosineAnnealingLR", dict(T_max=4, eta_min=0.01)),  # 25 steps: down, up, down, ...
    ("LinearLR", dict()),
    ("LinearLR", dict(start_factor=0.1, end_factor=0.5, total_iters=7)),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=26)),
    ("OneCycleLR", dict(max_lr=[0.5, 0.2], epochs=2, steps_per_epoch=13, anneal_strategy="linear",
                        three_phase=True, pct_start=0.25)),
    ("LambdaLR", dict(lr_lambda=lambda step: 0.95 ** step)),
]


def two_groups(lib, optimizer="SGD"):
    params = [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(3))]
    options = dict(momentum=0.9) if optimizer == "SGD" else {}
    return getattr(lib.optim, optimizer)([{"params": params[:1]}, {"params": params[1:], "lr": 0.03}], lr=0.1,
                                         **options)


def rates(lib, name, options, steps=25, optimizer="SGD"):
    opt = two_groups(lib, optimizer)
    scheduler = getattr(lib.optim.lr_scheduler, name)(opt, **options)
    seen = []
    for _ in range(steps):
        seen.append((scheduler.get_last_lr(), [g["lr"] for g in opt.param_groups],
                     [g.get("momentum", g.get("betas")) for g in opt.param_groups]))
        opt.step()
        scheduler.step()
    return seen


@pytest.mark.parametrize("name, options", SCHEDULES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SCHEDULES)])
def test_rates_are_torchs_to_the_last_bit(torch, name, options):
    assert rates(tinyattn, name, options) == rates(torch, name, options)


def test_one_cycle_moves_adams_beta1(torch):
    options = dict(max_lr=0.01, total_steps=10)
    assert rates(tinyattn, "OneCycleLR", options, 10, "AdamW") == rates(torch, "OneCycleLR", options, 10, "AdamW")


def test_one_cycle_refuses_more_steps_than_it_has(torch):
    opt = two_groups(tinyattn)
    scheduler = lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=2)
    scheduler.step()
    scheduler.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        scheduler.step()


def test_sequential_warmup_then_cosine_is_torchs(torch):
    def run(lib):
        opt = two_groups(lib)
        S = lib.optim.lr_scheduler
        warmup = S.LinearLR(opt, start_factor=0.1, total_iters=4)
        decay = S.CosineAnnealingLR(opt, T_max=10, eta_min=1e-3)
        scheduler = S.SequentialLR(opt, [warmup, decay], milestones=[4])
        seen = []
        for _ in range(16):
            seen.append(scheduler.get_last_lr())
            opt.step()
            scheduler.step()
        return seen

    assert run(tinyattn) == run(torch)


def test_step_with_an_epoch_uses_the_closed_form_and_warns_as_torch(torch):
    def run(lib):
        opt = two_groups(lib)
        scheduler = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scheduler.step(7)
        return scheduler.get_last_lr(), [str(w.message)[:60] for w in caught if "epoch" in str(w.message)]

    (ours_lr, ours_warn), (their_lr, their_warn) = run(tinyattn), run(torch)
    assert ours_lr == their_lr
    assert ours_warn == their_warn and ours_warn


PLATEAUS = [
    dict(),
    dict(mode="max", factor=0.5, patience=1, threshold=0.1, threshold_mode="abs", cooldown=2),
    dict(factor=0.5, patience=0, min_lr=[0.05, 0.001], eps=1e-3),
    dict(mode="min", factor=0.2, patience=2, threshold_mode="rel", threshold=0.01, cooldown=1, min_lr=1e-4),
]


@pytest.mark.parametrize("options", PLATEAUS)
def test_reduce_on_plateau_is_torchs(torch, options):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.899, 0.9, 0.9, 0.9, 1.2, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.49, 0.6, 0.7, 0.8]

    def run(lib):
        opt = two_groups(lib)
        scheduler = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **options)
        seen = []
        for m in metrics:
            opt.step()
            scheduler.step(lib.tensor(m) if m > 1 else m)  # a 0-d tensor metric too, as training loops pass
            seen.append((scheduler.get_last_lr(), scheduler.num_bad_epochs, scheduler.cooldown_counter,
                         scheduler.best, scheduler.in_cooldown))
        return seen

    assert run(tinyattn) == run(torch)


@pytest.mark.parametrize("make, message", [
    (lambda opt: lr_scheduler.ReduceLROnPlateau(opt, factor=1.0), "Factor should be < 1.0"),
    (lambda opt: lr_scheduler.ReduceLROnPlateau(opt, mode="lowest"), "mode lowest is unknown"),
    (lambda opt: lr_scheduler.ReduceLROnPlateau(opt, threshold_mode="x"), "threshold mode x is unknown"),
    (lambda opt: lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1]), "expected 2 min_lrs, got 1"),
    (lambda opt: lr_scheduler.LinearLR(opt, start_factor=0), "Starting multiplicative factor"),
    (lambda opt: lr_scheduler.OneCycleLR(opt, max_lr=0.1), "You must define either total_steps"),
    (lambda opt: lr_scheduler.OneCycleLR(opt, max_lr=[0.1], total_steps=3), "max_lr must have the same length"),
    (lambda opt: lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3, pct_start=1), "pct_start"),
    (lambda opt: lr_scheduler.SequentialLR(opt, [lr_scheduler.StepLR(opt, 2)], milestones=[3]), "one milestone fewer"),
])
def test_bad_scheduler_arguments_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make(two_groups(tinyattn))


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
                                  "SequentialLR", "ReduceLROnPlateau", "OneCycleLR"])
def test_scheduler_signatures_are_torchs(torch, name):
    ours_sig = inspect.signature(getattr(lr_scheduler, name)).parameters
    theirs_sig = inspect.signature(getattr(torch.optim.lr_scheduler, name)).parameters
    assert list(ours_sig) == list(theirs_sig)
    assert all(ours_sig[n].default == theirs_sig[n].default for n in ours_sig)


def test_scheduler_state_dict_resumes_the_schedule():
    opt = two_groups(tinyattn)
    scheduler = lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    for _ in range(4):
        scheduler.step()
    saved = scheduler.state_dict()
    expected = []
    for _ in range(3):
        scheduler.step()
        expected.append(scheduler.get_last_lr())
    opt2 = two_groups(tinyattn)
    resumed = lr_scheduler.CosineAnnealingLR(opt2, T_max=10)
    resumed.load_state_dict(saved)
    for group, lr in zip(opt2.param_groups, saved["_last_lr"]):
        group["lr"] = lr
    got = []
    for _ in range(3):
        resumed.step()
        got.append(resumed.get_last_lr())
    assert got == expected


@pytest.mark.parametrize("name, options", [("RMSprop", dict(momentum=0.5, centered=True, weight_decay=0.1)),
                                           ("Adagrad", dict(initial_accumulator_value=0.1, lr_decay=0.01))])
def test_new_optimizers_on_the_strict_array_backend(torch, xp_backend, name, options):
    p = nn.Parameter(tinyattn.tensor([1.0, -2.0, 3.0]))
    q = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
    ours_opt, torch_opt = getattr(tinyattn.optim, name)([p], lr=0.1, **options), getattr(torch.optim, name)(
        [q], lr=0.1, **options)
    for _ in range(3):
        p.grad, q.grad = tinyattn.tensor([0.5, 0.5, -0.5]), torch.tensor([0.5, 0.5, -0.5])
        ours_opt.step()
        torch_opt.step()
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6)
