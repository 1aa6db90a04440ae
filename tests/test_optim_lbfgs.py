"""optim.LBFGS against torch.optim.LBFGS: the same closure gives the same iterates, step by step.

Each problem is written once and run on both libraries (`lib` is tinyattn or torch), from the same
starting numbers; after every `step` the returned loss, the parameters, the closure calls and the
state's counters must agree (float32 or float64 rounding apart: the dot products come from different
BLAS libraries).
"""

import io

import numpy as np
import pytest

import tinyattn
from tinyattn import nn


def rosenbrock(lib, params):
    (x,) = params
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def least_squares(lib, params, _data={}):
    W, b = params
    X, Y = _problem_data(lib, W.dtype)
    return ((X @ W.T + b - Y) ** 2).mean()


def tanh_network(lib, params):
    W1, b1, W2 = params
    X, Y = _problem_data(lib, W1.dtype)
    return ((lib.tanh(X @ W1.T + b1) @ W2.T - Y[:, :1]) ** 2).mean()


def with_unused_parameter(lib, params):
    w, unused = params  # `unused` never gets a gradient: its part of the flat gradient is zeros
    return (w ** 2 - lib.arange(3, dtype=w.dtype)).pow(2).sum() + (w[0] - 0.5) ** 4


def _problem_data(lib, dtype):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(8, 4)), rng.normal(size=(8, 3))
    return lib.tensor(X, dtype=dtype), lib.tensor(Y, dtype=dtype)


PROBLEMS = {
    "rosenbrock": (rosenbrock, [np.array([-1.5, 2.0])]),
    "least_squares": (least_squares, [np.linspace(-1, 1, 12).reshape(3, 4), np.array([0.1, -0.2, 0.3])]),
    "tanh_network": (tanh_network, [np.sin(np.arange(20.0)).reshape(5, 4), np.cos(np.arange(5.0)) * 0.1,
                                    np.linspace(-0.5, 0.5, 5).reshape(1, 5)]),
    "unused_parameter": (with_unused_parameter, [np.array([1.5, 0.3, -1.0]), np.zeros(2)]),
}

CASES = [
    ("rosenbrock", dict(lr=1, line_search_fn="strong_wolfe")),
    ("rosenbrock", dict(lr=0.001, max_iter=10)),
    ("least_squares", dict(lr=1, line_search_fn="strong_wolfe")),
    ("least_squares", dict(lr=0.5)),
    ("least_squares", dict(lr=1, history_size=2, max_iter=6, line_search_fn="strong_wolfe")),
    ("tanh_network", dict(lr=1, line_search_fn="strong_wolfe", history_size=3)),
    ("tanh_network", dict(lr=0.3, max_iter=7, history_size=3)),
    ("unused_parameter", dict(lr=0.8, line_search_fn="strong_wolfe")),
    ("unused_parameter", dict(lr=0.05, max_eval=9)),
]


def run_steps(lib, problem, options, dtype, steps):
    """[(returned loss, parameters, closure calls, func_evals, n_iter) after each step]."""
    loss_fn, start = PROBLEMS[problem]
    dt = getattr(lib, dtype)
    params = [lib.nn.Parameter(lib.tensor(a, dtype=dt)) for a in start]
    optimizer = lib.optim.LBFGS(params, **options)
    calls = [0]

    def closure():
        calls[0] += 1
        optimizer.zero_grad()
        loss = loss_fn(lib, params)
        loss.backward()
        return loss

    history = []
    for _ in range(steps):
        loss = optimizer.step(closure)
        state = optimizer.state[params[0]]
        history.append((loss.item(), [p.detach().numpy().copy() for p in params], calls[0],
                        state["func_evals"], state["n_iter"]))
    return history, optimizer, params, closure


TOLERANCE = {"float64": dict(rtol=1e-8, atol=1e-10), "float32": dict(rtol=1e-4, atol=1e-6)}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("problem, options", CASES, ids=[f"{p}-{sorted(o.items())}" for p, o in CASES])
def test_steps_match_torch(torch, problem, options, dtype):
    """float64: four steps, to convergence. float32: PyTorch's CPU kernels round differently in the last
    bit (a fused multiply-add in p.add_(d, alpha=t), a blocked dot product), and near the minimum
    the stopping tests (a change of the loss below 1e-9...) see that noise and may stop an iteration
    apart, and differences of nearly equal gradients (y = g - g_prev) turn that noise into different
    curvature pairs; so a float32 run is one step of up to six iterations, while the loss is still
    well above float32's resolution."""
    steps = 4
    if dtype == "float32":
        options, steps = {**options, "max_iter": min(options.get("max_iter", 20), 6)}, 1
    ours, _, _, _ = run_steps(tinyattn, problem, options, dtype, steps=steps)
    theirs, _, _, _ = run_steps(torch, problem, options, dtype, steps=steps)
    for step, (mine, reference) in enumerate(zip(ours, theirs)):
        where = f"after step {step + 1}"
        assert mine[2:] == reference[2:], f"{where}: (closure calls, func_evals, n_iter) differ"
        np.testing.assert_allclose(mine[0], reference[0], **TOLERANCE[dtype], err_msg=f"{where}: loss")
        for p, q in zip(mine[1], reference[1]):
            assert p.dtype == q.dtype
            np.testing.assert_allclose(p, q, **TOLERANCE[dtype], err_msg=f"{where}: parameters")


def test_the_problems_are_solved():
    """Not only the same as PyTorch: L-BFGS with the line search finds Rosenbrock's minimum at (1, 1)."""
    history, _, params, _ = run_steps(tinyattn, "rosenbrock", dict(lr=1, line_search_fn="strong_wolfe"),
                                      "float64", steps=5)
    np.testing.assert_allclose(params[0].detach().numpy(), [1.0, 1.0], atol=1e-5)
    assert history[-1][0] < 1e-9


def test_signature_defaults_and_group_are_torchs(torch):
    import inspect

    ours_sig = inspect.signature(tinyattn.optim.LBFGS).parameters
    theirs_sig = inspect.signature(torch.optim.LBFGS).parameters
    assert list(ours_sig) == list(theirs_sig)
    assert all(ours_sig[n].default == theirs_sig[n].default for n in ours_sig if n != "params")
    group = tinyattn.optim.LBFGS([nn.Parameter(tinyattn.zeros(2))]).param_groups[0]
    reference = torch.optim.LBFGS([torch.nn.Parameter(torch.zeros(2))]).param_groups[0]
    assert {k: v for k, v in group.items() if k != "params"} == {k: v for k, v in reference.items() if k != "params"}


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_state_dict_round_trips_through_torch(torch, tmp_path, line_search_fn):
    """Two steps here, the state saved with tinyattn.save and loaded into torch's LBFGS (weights-only),
    one more step there: the same as a third step here. And the other way round."""
    options = dict(lr=0.5, history_size=4, max_iter=5, line_search_fn=line_search_fn)
    _, our_opt, our_params, our_closure = run_steps(tinyattn, "least_squares", options, "float64", steps=2)
    _, torch_opt, torch_params, torch_closure = run_steps(torch, "least_squares", options, "float64", steps=2)
    path = tmp_path / "lbfgs.pt"
    tinyattn.save(our_opt.state_dict(), path)
    loaded = torch.load(path)
    assert set(loaded["state"][0]) == set(torch_opt.state_dict()["state"][0])
    fresh = [torch.nn.Parameter(torch.from_numpy(p.detach().numpy().copy())) for p in our_params]
    continued = torch.optim.LBFGS(fresh, **options)
    continued.load_state_dict(loaded)

    def fresh_closure():
        continued.zero_grad()
        loss = least_squares(torch, fresh)
        loss.backward()
        return loss

    continued.step(fresh_closure)
    our_opt.step(our_closure)
    for p, q in zip(our_params, fresh):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-9)

    # torch's state into a new tinyattn LBFGS
    buffer = io.BytesIO()
    torch.save(torch_opt.state_dict(), buffer)
    buffer.seek(0)
    mine = [nn.Parameter(tinyattn.tensor(p.detach().numpy().copy())) for p in torch_params]
    ours = tinyattn.optim.LBFGS(mine, **options)
    ours.load_state_dict(tinyattn.load(buffer))

    def my_closure():
        ours.zero_grad()
        loss = least_squares(tinyattn, mine)
        loss.backward()
        return loss

    ours.step(my_closure)
    torch_opt.step(torch_closure)
    for p, q in zip(mine, torch_params):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-9)


def test_state_dict_round_trips_in_tinyattn(tmp_path):
    options = dict(lr=1, line_search_fn="strong_wolfe", history_size=3)
    _, optimizer, params, closure = run_steps(tinyattn, "tanh_network", options, "float32", steps=2)
    tinyattn.save(optimizer.state_dict(), tmp_path / "state.pt")
    copies = [nn.Parameter(p.detach().clone()) for p in params]
    restored = tinyattn.optim.LBFGS(copies, **options)
    restored.load_state_dict(tinyattn.load(tmp_path / "state.pt"))

    def copy_closure():
        restored.zero_grad()
        loss = tanh_network(tinyattn, copies)
        loss.backward()
        return loss

    optimizer.step(closure)
    restored.step(copy_closure)
    for p, q in zip(params, copies):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())


def test_bad_input_says_what_to_do():
    p = nn.Parameter(tinyattn.zeros(2))
    with pytest.raises(ValueError, match="one list of parameters"):
        tinyattn.optim.LBFGS([{"params": [p]}, {"params": [nn.Parameter(tinyattn.zeros(1))]}])
    with pytest.raises(ValueError, match="strong_wolfe"):
        tinyattn.optim.LBFGS([p], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="Invalid learning rate"):
        tinyattn.optim.LBFGS([p], lr=-1)
    with pytest.raises(TypeError, match="needs a closure"):
        tinyattn.optim.LBFGS([p]).step(None)


def test_a_step_records_no_graph_and_the_closure_runs_with_grad():
    w = nn.Parameter(tinyattn.tensor([1.0, -2.0]))
    optimizer = tinyattn.optim.LBFGS([w], max_iter=3)
    seen = []

    def closure():
        seen.append(tinyattn.is_grad_enabled())
        optimizer.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    with tinyattn.no_grad():
        loss = optimizer.step(closure)
    assert all(seen) and loss.item() == 5.0
    assert w.grad_fn is None and w.is_leaf


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_no_numpy_only_call(xp_backend, line_search_fn):
    """On array_api_strict (a stand-in for CuPy) the iterates are NumPy's, to the bit."""
    from tinyattn import backend

    options = dict(lr=1 if line_search_fn else 0.001, line_search_fn=line_search_fn)
    ours, _, params, _ = run_steps(tinyattn, "rosenbrock", options, "float64", steps=2)
    backend.use_array_api_strict(False)
    reference, _, _, _ = run_steps(tinyattn, "rosenbrock", options, "float64", steps=2)
    for mine, theirs in zip(ours, reference):
        assert mine[0] == theirs[0] and mine[2:] == theirs[2:]
        assert all(np.array_equal(p, q) for p, q in zip(mine[1], theirs[1]))
