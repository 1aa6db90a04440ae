"""`tinyattn.replayed` against steps written to catch it out.

Each scenario builds a small world (tensors, modules, Python state), then makes CALLS calls of its
step, changing the world between calls the way a learner's program does. It runs twice from the same
start (the same seeds, for tinyattn's generator and Python's): once as written and once through
`replayed`. What each call returns, what it raises, what it prints, and what it leaves behind (the
tensors, their .grad, Python values, the random state) are compared bit for bit, together with which
returned tensors are the same objects as which. A replay must give the same record, or fall back (then
its warning names the cause and the line); in strict mode it may also stop with a ReplayError, but
never after a difference.
"""

import contextlib
import io
import itertools
import random as pyrandom
import struct
import warnings

import numpy as np
import pytest

import tinyattn
import tinyattn.nn as nn
from tinyattn import dtypes
from tinyattn.nn import functional as F

CALLS = 8
SCENARIOS = {}


def scenario(kind):
    def register(build):
        SCENARIOS[f"{kind}-{build.__name__}"] = build
        return build

    return register


class World:
    """What a scenario hands the harness: `step`, and optionally `call(step, i)` (how the program
    calls it: the default is step()), `between(i)` (what the program changes before call i), and
    `observe()` (what is compared after each call, besides the returned value)."""

    def __init__(self, step, call=None, between=None, observe=None, wrap=None):
        self.step = step
        self.call = call or (lambda step, i: step())
        self.between = between or (lambda i: None)
        self.observe = observe or (lambda: None)
        self.wrap = wrap  # how the step is replayed, where not replayed(step)


# ---------------------------------------------------------------------------------------------
# the record of a run


class Fingerprints:
    """Values as comparable records: tensors by bits, dtype, shape, requires_grad, grad_fn and
    .grad, and by which object they are (numbered in order of first sight; every object seen is
    kept alive so that its number stays its own); floats by their bits."""

    def __init__(self):
        self.numbers, self.kept = {}, []

    def identity(self, value):
        number = self.numbers.get(id(value))
        if number is None:
            number = self.numbers[id(value)] = len(self.numbers)
            self.kept.append(value)
        return number

    def __call__(self, value, depth=0):
        if isinstance(value, tinyattn.Tensor):
            array = np.ascontiguousarray(value.detach().numpy())
            grad = None if depth > 0 or value.grad is None else self(value.grad, depth + 1)
            return ("tensor", self.identity(value), array.dtype.str, array.shape, array.tobytes(),
                    value.requires_grad, value.grad_fn is None, type(value.grad_fn).__name__, grad)
        if isinstance(value, float):
            return ("float", struct.pack("<d", value))
        if isinstance(value, (bool, int, str, bytes, type(None))):
            return (type(value).__name__, value)
        if isinstance(value, (tuple, list)):
            return (type(value).__name__, tuple(self(v, depth) for v in value))
        if isinstance(value, dict):
            return ("dict", tuple((k, self(v, depth)) for k, v in value.items()))
        if isinstance(value, np.ndarray):
            return ("ndarray", value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
        return ("object", type(value).__name__, self.identity(value))


def rng_record():
    state = tinyattn.random.get_rng_state()
    return (np.asarray(state["key"]).tobytes(), state["pos"], state["has_cached_normal"],
            struct.pack("<d", state["cached_normal"] or 0.0), pyrandom.getstate())


def run(build, replay, strict=False):
    """The record of CALLS calls, and the RuntimeWarnings the replay gave."""
    tinyattn.manual_seed(1234)
    pyrandom.seed(1234)
    world = build()
    step = world.step
    if replay:
        step = (world.wrap or (lambda s: tinyattn.replayed(s, strict=strict)))(step)
    fingerprint, record = Fingerprints(), []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(CALLS):
            world.between(i)
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    result = world.call(step, i)
                entry = ("returned", fingerprint(result))
            except tinyattn.ReplayError:
                record.append(("ReplayError", i))
                break
            except Exception as error:  # noqa: BLE001  (what the step raises is part of its record)
                entry = ("raised", type(error).__name__, str(error))
            record.append((i, entry, out.getvalue(), fingerprint(world.observe()), rng_record()))
    runtime_warnings = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    return record, runtime_warnings


def first_difference(got, expected):
    parts = ("what it returned or raised", "what it printed", "what it left behind", "the random state")
    for a, b in zip(got, expected):
        if a != b:
            part = next(name for name, x, y in zip(parts, a[1:], b[1:]) if x != y)
            return f"call {b[0]}: {part} differs: replayed {a[1]!r:.200}, as written {b[1]!r:.200}"
    if len(got) != len(expected):
        return f"{len(got)} calls recorded, {len(expected)} as written"
    return None


# ---------------------------------------------------------------------------------------------
# helpers for the worlds


def mlp(torch, hidden=8, seed_inputs=True):
    """A small MLP on random data, its parameters, and a step that does SGD by hand."""
    X = torch.randn(64, 4)
    Y = torch.randint(0, 3, (64,))
    W1 = torch.randn(4, hidden, requires_grad=True)
    W2 = torch.randn(hidden, 3, requires_grad=True)
    return X, Y, [W1, W2]


def params_of(*tensors):
    return lambda: [(t, t.grad) for t in tensors]


# ---------------------------------------------------------------------------------------------
# 1. Python state that changes between calls


@scenario("python-state")
def global_learning_rate_decay():
    X, Y, (W1, W2) = mlp(tinyattn)
    g = {"i": 0}

    def step():
        lr = 0.1 if g["i"] < 3 else 0.01
        loss = F.cross_entropy(X.tanh() @ W1 @ W2, Y)
        W1.grad = W2.grad = None
        loss.backward()
        with tinyattn.no_grad():
            W1.data += -lr * W1.grad
            W2.data += -lr * W2.grad
        return loss

    return World(step, between=lambda i: g.update(i=i), observe=params_of(W1, W2))


STEP_NUMBER = 0


@scenario("python-state")
def module_global_decay():
    """`lr = 0.1 if i < 100000 else 0.01` with `i` the loop's global."""
    X, Y, (W1, W2) = mlp(tinyattn)

    def step():
        lr = 0.1 if STEP_NUMBER < 3 else 0.01
        loss = F.cross_entropy((X @ W1).tanh() @ W2, Y)
        for p in (W1, W2):
            p.grad = None
        loss.backward()
        for p in (W1, W2):
            p.data += -lr * p.grad
        return loss

    def between(i):
        global STEP_NUMBER
        STEP_NUMBER = i

    return World(step, between=between, observe=params_of(W1, W2))


@scenario("python-state")
def closure_learning_rate():
    X, Y, (W1, W2) = mlp(tinyattn)
    lr = 0.1

    def step():
        loss = F.cross_entropy((X @ W1).relu() @ W2, Y)
        W1.grad = W2.grad = None
        loss.backward()
        W1.data += -lr * W1.grad
        W2.data += -lr * W2.grad
        return loss

    def between(i):
        nonlocal lr
        lr = 0.1 if i < 4 else 0.05

    return World(step, between=between, observe=params_of(W1, W2))


@scenario("python-state")
def module_temperature():
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 3)
            self.temperature = 1.0

        def forward(self, x):
            return self.proj(x) / self.temperature

    model = Head()
    X, Y = tinyattn.randn(16, 4), tinyattn.randint(0, 3, (16,))

    def step():
        loss = F.cross_entropy(model(X), Y)
        model.zero_grad()
        loss.backward()
        return loss

    def between(i):
        if i == 4:
            model.temperature = 2.0

    return World(step, between=between, observe=lambda: [p.grad for p in model.parameters()])


@scenario("python-state")
def dropout_p_changed():
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
    X, Y = tinyattn.randn(16, 4), tinyattn.randint(0, 3, (16,))

    def step():
        loss = F.cross_entropy(model(X), Y)
        model.zero_grad()
        loss.backward()
        return loss

    def between(i):
        if i == 4:
            model[2].p = 0.1

    return World(step, between=between, observe=lambda: [p.grad for p in model.parameters()])


class LectureBatchNorm1d:
    """The lecture's batch norm: a plain class, `training` flipped by hand, running stats rebound."""

    def __init__(self, dim, eps=1e-5, momentum=0.1):
        self.eps, self.momentum, self.training = eps, momentum, True
        self.gamma, self.beta = tinyattn.ones(dim), tinyattn.zeros(dim)
        self.running_mean, self.running_var = tinyattn.zeros(dim), tinyattn.ones(dim)

    def __call__(self, x):
        if self.training:
            xmean = x.mean(0, keepdim=True)
            xvar = x.var(0, keepdim=True)
        else:
            xmean, xvar = self.running_mean, self.running_var
        xhat = (x - xmean) / tinyattn.sqrt(xvar + self.eps)
        self.out = self.gamma * xhat + self.beta
        if self.training:
            with tinyattn.no_grad():
                self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * xmean
                self.running_var = (1 - self.momentum) * self.running_var + self.momentum * xvar
        return self.out

    def parameters(self):
        return [self.gamma, self.beta]


@scenario("python-state")
def lecture_batchnorm_training_flag():
    bn = LectureBatchNorm1d(8)
    W = tinyattn.randn(4, 8, requires_grad=True)
    X = tinyattn.randn(32, 4)

    def step():
        return bn(X @ W).sum()

    def between(i):
        if i == 4:
            bn.training = False

    return World(step, between=between, observe=lambda: [bn.running_mean, bn.running_var, bn.out])


@scenario("python-state")
def lecture_batchnorm_eval_from_start():
    """Evaluation only (training False from the start): the running stats are read, never rebound."""
    bn = LectureBatchNorm1d(8)
    bn.training = False
    W = tinyattn.randn(4, 8)
    X = tinyattn.randn(32, 4)

    def step():
        return bn(X @ W).sum()

    def between(i):
        if i == 5:
            with tinyattn.no_grad():
                bn.running_mean += 1.0

    return World(step, between=between, observe=lambda: [bn.out])


@scenario("python-state")
def parameter_list_grows():
    X, Y, (W1, W2) = mlp(tinyattn)
    b2 = tinyattn.zeros(3, requires_grad=True)
    parameters = [W1, W2]

    def step():
        out = (X @ W1).tanh() @ W2
        if len(parameters) > 2:
            out = out + parameters[2]
        loss = F.cross_entropy(out, Y)
        for p in parameters:
            p.grad = None
        loss.backward()
        for p in parameters:
            p.data += -0.1 * p.grad
        return loss

    def between(i):
        if i == 4:
            parameters.append(b2)

    return World(step, between=between, observe=params_of(W1, W2, b2))


@scenario("python-state")
def augmentation_on_python_random():
    X, Y, (W1, W2) = mlp(tinyattn)

    def step():
        x = X.flip(1) if pyrandom.random() < 0.5 else X
        loss = F.cross_entropy((x @ W1).tanh() @ W2, Y)
        W1.grad = W2.grad = None
        loss.backward()
        return loss

    return World(step, observe=params_of(W1, W2))


@scenario("python-state")
def nested_attribute_scale():
    class Scale:
        def __init__(self):
            self.factor = 1.0

    class Net:
        def __init__(self):
            self.layers = [Scale(), Scale()]

    net = Net()
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step():
        y = W * net.layers[1].factor
        loss = (y * y).sum()
        W.grad = None
        loss.backward()
        return loss

    def between(i):
        if i == 3:
            net.layers[1].factor = 3.0

    return World(step, between=between, observe=params_of(W))


@scenario("python-state")
def batch_size_global_int():
    X, Y, (W1, W2) = mlp(tinyattn)
    config = {"batch": 8}

    def step():
        ix = tinyattn.randint(0, 64, (config["batch"],))
        loss = F.cross_entropy((X[ix] @ W1).tanh() @ W2, Y[ix])
        W1.grad = W2.grad = None
        loss.backward()
        return loss

    def between(i):
        if i == 4:
            config["batch"] = 16

    return World(step, between=between, observe=params_of(W1, W2))


@scenario("python-state")
def numpy_schedule_array():
    X, Y, (W1, W2) = mlp(tinyattn)
    schedule = np.array([0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    count = {"i": 0}

    def step():
        lr = float(schedule[count["i"]])
        loss = F.cross_entropy((X @ W1).tanh() @ W2, Y)
        W1.grad = W2.grad = None
        loss.backward()
        W1.data += -lr * W1.grad
        return loss

    def between(i):
        count["i"] = i
        if i == 4:
            schedule[4:] = 0.01  # changed in place

    return World(step, between=between, observe=params_of(W1, W2))


@scenario("python-state")
def class_attribute_changed():
    class Net:
        scale = 1.0

        def __init__(self):
            self.W = tinyattn.randn(4, 4, requires_grad=True)

        def __call__(self, x):
            return (x @ self.W) * self.scale

    net = Net()
    X = tinyattn.randn(8, 4)

    def step():
        return net(X).sum()

    def between(i):
        if i == 4:
            Net.scale = 0.5

    return World(step, between=between)


@scenario("python-state")
def property_of_state():
    class Schedule:
        def __init__(self):
            self.t = 0

        @property
        def lr(self):
            return 0.1 * 0.5 ** self.t

    sched = Schedule()
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step():
        loss = (W * W).sum()
        W.grad = None
        loss.backward()
        W.data += -sched.lr * W.grad
        return loss

    def between(i):
        sched.t = i

    return World(step, between=between, observe=params_of(W))


@scenario("python-state")
def helper_function_rebound():
    W = tinyattn.randn(4, 4, requires_grad=True)
    X = tinyattn.randn(8, 4)
    acts = {"f": tinyattn.tanh}

    def step():
        return acts["f"](X @ W).sum()

    def between(i):
        if i == 4:
            acts["f"] = tinyattn.sigmoid

    return World(step, between=between)


ACTIVATION = tinyattn.tanh


@scenario("python-state")
def global_function_rebound():
    W = tinyattn.randn(4, 4, requires_grad=True)
    X = tinyattn.randn(8, 4)

    def step():
        return ACTIVATION(X @ W).sum()

    def between(i):
        global ACTIVATION
        ACTIVATION = tinyattn.sigmoid if i >= 4 else tinyattn.tanh

    return World(step, between=between)


@scenario("python-state")
def library_function_patched():
    W = tinyattn.randn(4, 4, requires_grad=True)
    X = tinyattn.randn(8, 4)
    original = F.gelu

    def step():
        return F.gelu(X @ W).sum()

    def between(i):
        if i == 4:
            F.gelu = lambda x: original(x) * 2
        if i == CALLS - 1:
            F.gelu = original

    world = World(step, between=between)
    return world


@scenario("python-state")
def list_element_replaced_in_place():
    W = tinyattn.randn(4, 4, requires_grad=True)
    sizes = [2]

    def step():
        return W[: sizes[0]].sum()

    def between(i):
        if i == 4:
            sizes[0] = 3

    return World(step, between=between)


@scenario("python-state")
def eval_mode_switch():
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.3), nn.Linear(8, 2))
    X = tinyattn.randn(8, 4)

    def step():
        return model(X).sum()

    def between(i):
        model.train(i < 4)

    return World(step, between=between)


@scenario("python-state")
def grad_mode_outside():
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step():
        return (W * 2).sum()

    def call(step, i):
        with tinyattn.set_grad_enabled(i % 2 == 0):
            return step()

    return World(step, call=call)


@scenario("python-state")
def default_dtype_changed():
    W = tinyattn.randn(4, 4, dtype=tinyattn.float64)

    def step():
        return W + tinyattn.ones(4, 4)

    def call(step, i):
        dtypes.default_float = tinyattn.float64 if i >= 4 else tinyattn.float32
        try:
            return step()
        finally:
            dtypes.default_float = tinyattn.float32

    return World(step, call=call)


@scenario("python-state")
def counter_in_a_dict_mutated_by_the_step():
    W = tinyattn.randn(4, 4, requires_grad=True)
    stats = {"steps": 0}

    def step():
        stats["steps"] += 1
        return (W * W).sum()

    return World(step, observe=lambda: dict(stats))


@scenario("python-state")
def next_batch_from_an_iterator():
    X, Y, (W1, W2) = mlp(tinyattn)
    batches = itertools.cycle([(X[:16], Y[:16]), (X[16:32], Y[16:32])])

    def step():
        xb, yb = next(batches)
        loss = F.cross_entropy((xb @ W1).tanh() @ W2, yb)
        W1.grad = W2.grad = None
        loss.backward()
        return loss

    return World(step, observe=params_of(W1, W2))


@scenario("python-state")
def attribute_counter_of_self():
    class Trainer:
        def __init__(self):
            self.W = tinyattn.randn(4, 4, requires_grad=True)
            self.t = 0

        def step(self):
            self.t += 1
            return (self.W * self.t).sum()

    trainer = Trainer()
    return World(lambda: trainer.step(), observe=lambda: trainer.t)


# ---------------------------------------------------------------------------------------------
# 2. objects rebound between calls


XTR = YTR = None


@scenario("rebound")
def training_set_reshuffled_each_epoch():
    global XTR, YTR
    X, Y, (W1, W2) = mlp(tinyattn)
    XTR, YTR = X, Y

    def step():
        loss = F.cross_entropy((XTR[:16] @ W1).tanh() @ W2, YTR[:16])
        W1.grad = W2.grad = None
        loss.backward()
        W1.data += -0.1 * W1.grad
        return loss

    def between(i):
        global XTR, YTR
        if i % 3 == 2:
            perm = tinyattn.randperm(64)
            XTR, YTR = X[perm], Y[perm]

    return World(step, between=between, observe=params_of(W1, W2))


@scenario("rebound")
def parameter_replaced():
    model = nn.Linear(4, 3)
    X = tinyattn.randn(8, 4)

    def step():
        loss = model(X).pow(2).sum()
        model.zero_grad()
        loss.backward()
        return loss

    def between(i):
        if i == 4:
            model.weight = nn.Parameter(tinyattn.ones(3, 4))

    return World(step, between=between, observe=lambda: [model.weight, model.bias])


@scenario("rebound")
def submodule_replaced():
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    X = tinyattn.randn(8, 4)

    def step():
        return model(X).sum()

    def between(i):
        if i == 4:
            setattr(model, "1", nn.ReLU())

    return World(step, between=between)


@scenario("rebound")
def argument_shares_array_with_weight():
    W = tinyattn.randn(4, 4, requires_grad=True)
    view = W.detach()  # the same memory as W

    def step(x):
        loss = (x @ W).sum()
        W.grad = None
        loss.backward()
        W.data += -0.1 * W.grad
        return loss, x.sum()

    return World(step, call=lambda step, i: step(view), observe=params_of(W))


@scenario("rebound")
def global_tensor_rebound_same_shape():
    state = {"W": tinyattn.randn(4, 4)}
    X = tinyattn.randn(8, 4)

    def step():
        return (X @ state["W"]).sum()

    def between(i):
        if i == 4:
            state["W"] = tinyattn.randn(4, 4)

    return World(step, between=between)


@scenario("rebound")
def argument_tensor_objects_change():
    W = tinyattn.randn(4, 4, requires_grad=True)
    inputs = [tinyattn.randn(8, 4) for _ in range(CALLS)]

    def step(x):
        loss = (x @ W).tanh().sum()
        W.grad = None
        loss.backward()
        return loss

    return World(step, call=lambda step, i: step(inputs[i]), observe=params_of(W))


@scenario("rebound")
def parameter_requires_grad_toggled():
    W = tinyattn.randn(4, 4, requires_grad=True)
    V = tinyattn.randn(4, 4, requires_grad=True)

    def step():
        loss = (W @ V).sum()
        W.grad = V.grad = None
        loss.backward()
        return loss

    def between(i):
        if i == 4:
            V.requires_grad_(False)

    return World(step, between=between, observe=params_of(W, V))


# ---------------------------------------------------------------------------------------------
# 3. work the recorder does not see


def linear_model():
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    X, Y = tinyattn.randn(16, 4) * 5, tinyattn.randint(0, 3, (16,))
    return model, X, Y


def model_state(model):
    return lambda: [(p, p.grad) for p in model.parameters()]


@scenario("unseen-work")
def clip_grad_norm_inside():
    model, X, Y = linear_model()

    def step():
        loss = F.cross_entropy(model(X), Y)
        model.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        for p in model.parameters():
            p.data += -0.5 * p.grad
        return loss

    return World(step, observe=model_state(model))


@scenario("unseen-work")
def clip_grad_value_inside():
    model, X, Y = linear_model()

    def step():
        loss = F.cross_entropy(model(X), Y)
        model.zero_grad()
        loss.backward()
        nn.utils.clip_grad_value_(model.parameters(), 0.01)
        for p in model.parameters():
            p.data += -0.5 * p.grad
        return loss

    return World(step, observe=model_state(model))


@scenario("unseen-work")
def optimizer_step_inside():
    model, X, Y = linear_model()
    optimizer = tinyattn.optim.AdamW(model.parameters(), lr=0.01)

    def step():
        loss = F.cross_entropy(model(X), Y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    return World(step, observe=model_state(model))


@scenario("unseen-work")
def scheduler_step_inside():
    model, X, Y = linear_model()
    optimizer = tinyattn.optim.SGD(model.parameters(), lr=0.1)
    scheduler = tinyattn.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)

    def step():
        loss = F.cross_entropy(model(X), Y)
        model.zero_grad()
        loss.backward()
        lr = optimizer.param_groups[0]["lr"]
        for p in model.parameters():
            p.data += -lr * p.grad
        scheduler.step()
        return loss

    return World(step, observe=model_state(model))


@scenario("unseen-work")
def forward_hook_before_recording():
    model, X, Y = linear_model()
    seen = []
    model[1].register_forward_hook(lambda module, inputs, output: output * 2)
    model[0].register_forward_hook(lambda module, inputs, output: seen.append(output.shape[0]))

    def step():
        loss = F.cross_entropy(model(X), Y)
        model.zero_grad()
        loss.backward()
        return loss

    return World(step, observe=lambda: (model_state(model)(), list(seen)))


@scenario("unseen-work")
def forward_hook_after_recording():
    model, X, Y = linear_model()

    def step():
        loss = F.cross_entropy(model(X), Y)
        model.zero_grad()
        loss.backward()
        return loss

    def between(i):
        if i == 4:
            model[1].register_forward_hook(lambda module, inputs, output: output * 0.5)

    return World(step, between=between, observe=model_state(model))


@scenario("unseen-work")
def gradient_accumulation_counter():
    model, X, Y = linear_model()
    optimizer = tinyattn.optim.SGD(model.parameters(), lr=0.1)
    counter = {"n": 0}

    def step():
        loss = F.cross_entropy(model(X), Y) / 2
        loss.backward()
        counter["n"] += 1
        if counter["n"] % 2 == 0:
            optimizer.step()
            optimizer.zero_grad()
        return loss

    return World(step, observe=model_state(model))


@scenario("unseen-work")
def python_list_append():
    W = tinyattn.randn(4, 4, requires_grad=True)
    history = []

    def step():
        loss = (W * W).sum()
        history.append(len(history))
        return loss

    return World(step, observe=lambda: list(history))


@scenario("unseen-work")
def returned_tick_frozen():
    W = tinyattn.randn(4, 4)
    tick = itertools.count().__next__

    def step():
        return (W * 2).sum(), tick()

    return World(step)


@scenario("unseen-work")
def returned_time_frozen():
    import time

    W = tinyattn.randn(4, 4)
    last = {"t": None}

    def step():
        return (W * 2).sum(), time.perf_counter()

    def call(step, i):
        loss, t = step()
        increased = last["t"] is None or t > last["t"]
        last["t"] = t
        return loss, increased

    return World(step, call=call)


@scenario("unseen-work")
def returned_python_random_frozen():
    W = tinyattn.randn(4, 4)

    def step():
        return (W * 2).sum(), pyrandom.random()

    return World(step)


@scenario("unseen-work")
def exception_on_call_five():
    W = tinyattn.randn(4, 4, requires_grad=True)
    flags = {"stop": False}

    def step():
        loss = (W * W).sum()
        if flags["stop"]:
            raise RuntimeError("stopping here")
        return loss

    def between(i):
        flags["stop"] = i == 5

    return World(step, between=between)


@scenario("unseen-work")
def nn_init_inside():
    model, X, Y = linear_model()

    def step():
        nn.init.normal_(model[2].bias)
        return F.cross_entropy(model(X), Y)

    return World(step, observe=model_state(model))


@scenario("unseen-work")
def data_setter_inside():
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step():
        loss = (W.tanh() * W).sum()
        W.grad = None
        loss.backward()
        W.data = W.data - 0.1 * W.grad
        return loss

    return World(step, observe=params_of(W))


@scenario("unseen-work")
def print_inside():
    W = tinyattn.randn(4, 4)

    def step():
        loss = (W * 2).sum()
        print("step")
        return loss

    return World(step)


@scenario("unseen-work")
def optimizer_zero_grad_set_to_none_false():
    model, X, Y = linear_model()
    optimizer = tinyattn.optim.SGD(model.parameters(), lr=0.1)

    def step():
        optimizer.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(X), Y)
        loss.backward()
        return loss

    return World(step, observe=model_state(model))


@scenario("unseen-work")
def module_zero_grad_inside():
    model, X, Y = linear_model()

    def step():
        model.zero_grad()
        loss = F.cross_entropy(model(X), Y)
        loss.backward()
        for p in model.parameters():
            p.data += -0.1 * p.grad
        return loss

    return World(step, observe=model_state(model))


@scenario("unseen-work")
def manual_seed_inside():
    W = tinyattn.randn(4, 4)
    seeds = {"s": 0}

    def step():
        tinyattn.manual_seed(seeds["s"])
        return W + tinyattn.randn(4, 4)

    def between(i):
        seeds["s"] = i

    return World(step, between=between)


@scenario("unseen-work")
def tensor_hook_after_recording():
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step():
        loss = (W * W).sum()
        W.grad = None
        loss.backward()
        return loss

    def between(i):
        if i == 4:
            W.register_hook(lambda g: g * 0)

    return World(step, between=between, observe=params_of(W))


@scenario("unseen-work")
def module_state_rebound_under_no_grad():
    """A running average kept in a plain attribute, rebound each call (the EMA of weights)."""
    W = tinyattn.randn(4, 4, requires_grad=True)
    holder = type("Holder", (), {})()
    holder.ema = tinyattn.zeros(4, 4)

    def step():
        loss = (W * W).sum()
        with tinyattn.no_grad():
            holder.ema = 0.9 * holder.ema + 0.1 * W
        return loss

    return World(step, observe=lambda: holder.ema)


# ---------------------------------------------------------------------------------------------
# 4. checks skipped; 5. shapes that depend on values


@scenario("checks")
def cross_entropy_target_out_of_range():
    X, Y, (W1, W2) = mlp(tinyattn)

    def step():
        return F.cross_entropy((X @ W1).tanh() @ W2, Y)

    def between(i):
        if i == 5:
            Y[3] = 7

    return World(step, between=between)


@scenario("checks")
def embedding_id_out_of_range():
    emb = nn.Embedding(10, 4)
    ids = tinyattn.randint(0, 10, (8,))

    def step():
        return emb(ids).sum()

    def between(i):
        if i == 5:
            ids[2] = 12

    return World(step, between=between)


@scenario("checks")
def embedding_negative_id():
    emb = nn.Embedding(10, 4)
    ids = tinyattn.randint(0, 10, (8,))

    def step():
        return emb(ids).sum()

    def between(i):
        if i == 5:
            ids[2] = -1

    return World(step, between=between)


@scenario("checks")
def index_out_of_range():
    W = tinyattn.randn(10, 4)
    ix = tinyattn.randint(0, 10, (5,))

    def step():
        return W[ix].sum()

    def between(i):
        if i == 5:
            ix[0] = 11

    return World(step, between=between)


@scenario("checks")
def saved_tensor_changed_before_backward():
    W = tinyattn.randn(4, 4, requires_grad=True)
    X = tinyattn.randn(8, 4)

    def step():
        return (X @ W).tanh().sum()

    def call(step, i):
        loss = step()
        W.grad = None
        if i >= 4:
            with tinyattn.no_grad():
                W.mul_(1.0)  # W is saved by the matmul: backward must refuse
        loss.backward()
        return loss, W.grad

    return World(step, call=call)


@scenario("checks")
def saved_output_changed_before_backward():
    X = tinyattn.randn(8, 4, requires_grad=True)

    def step():
        return X.exp()

    def call(step, i):
        y = step()
        if i >= 3:
            with tinyattn.no_grad():
                y.add_(1.0)  # exp saves its output
        X.grad = None
        y.sum().backward()
        return X.grad

    return World(step, call=call)


@scenario("value-shapes")
def boolean_mask_count_changes():
    X = tinyattn.randn(16)
    W = tinyattn.randn(16, requires_grad=True)

    def step():
        y = (X * W)[X > 0]
        loss = y.sum()
        W.grad = None
        loss.backward()
        return loss, y.shape[0]

    def between(i):
        if i == 4:
            with tinyattn.no_grad():
                X.copy_(tinyattn.randn(16))

    return World(step, between=between, observe=params_of(W))


@scenario("value-shapes")
def boolean_mask_count_as_int():
    X = tinyattn.randn(16)
    W = tinyattn.randn(16, requires_grad=True)

    def step():
        n = X[X > 0].shape[0]
        return (W * X).sum() / n

    def between(i):
        if i == 4:
            with tinyattn.no_grad():
                X.copy_(tinyattn.randn(16))

    return World(step, between=between)


@scenario("value-shapes")
def nonzero_count_changes():
    X = tinyattn.randn(16)

    def step():
        return tinyattn.nonzero(X > 0).float().sum()

    def between(i):
        if i == 4:
            with tinyattn.no_grad():
                X.copy_(tinyattn.randn(16))

    return World(step, between=between)


@scenario("value-shapes")
def masked_select_changes():
    X = tinyattn.randn(16)
    W = tinyattn.randn(16, requires_grad=True)

    def step():
        loss = (W * X).masked_select(X > 0).sum()
        W.grad = None
        loss.backward()
        return loss

    def between(i):
        if i == 3:
            with tinyattn.no_grad():
                X.copy_(tinyattn.randn(16))

    return World(step, between=between, observe=params_of(W))


@scenario("value-shapes")
def unique_count_changes():
    ids = tinyattn.randint(0, 5, (10,))

    def step():
        return tinyattn.unique(ids).float().sum()

    def between(i):
        if i == 4:
            ids.fill_(2)

    return World(step, between=between)


# ---------------------------------------------------------------------------------------------
# 6. what comes back


@scenario("returns")
def detached_hidden_state_rnn():
    Wh = tinyattn.randn(4, 4, requires_grad=True) * 0.5
    Wh = Wh.detach().requires_grad_()
    X = tinyattn.randn(CALLS, 4)

    def step(h, x):
        h = (h @ Wh + x).tanh()
        loss = (h * h).sum()
        Wh.grad = None
        loss.backward()
        Wh.data += -0.1 * Wh.grad
        return loss, h.detach()

    state = {"h": tinyattn.zeros(4)}

    def call(step, i):
        loss, h = step(state["h"], X[i])
        state["h"] = h
        return loss, h, h.requires_grad, h.grad_fn is None

    return World(step, call=call, observe=params_of(Wh))


@scenario("returns")
def detach_of_a_weight():
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step():
        return W.detach()

    def call(step, i):
        out = step()
        return out, out is W, np.shares_memory(out.numpy(), W.detach().numpy())

    return World(step, call=call)


@scenario("returns")
def returned_grad_is_the_grad():
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step():
        loss = (W * W).sum()
        W.grad = None
        loss.backward()
        return loss, W.grad

    def call(step, i):
        loss, g = step()
        return loss, g, g is W.grad

    return World(step, call=call)


@scenario("returns")
def returned_kept_tensor():
    class Layer:
        def __init__(self):
            self.W = tinyattn.randn(4, 4, requires_grad=True)

        def __call__(self, x):
            self.out = (x @ self.W).tanh()
            return self.out

    layer = Layer()
    X = tinyattn.randn(8, 4)

    def step():
        out = layer(X)
        return out.sum(), out

    def call(step, i):
        loss, out = step()
        return loss, out, out is layer.out

    return World(step, call=call)


@scenario("returns")
def returned_argument_itself():
    W = tinyattn.randn(4, 4)

    def step(x):
        return x, (x * 2).sum()

    def call(step, i):
        out, s = step(W)
        return out is W, s

    return World(step, call=call)


@scenario("returns")
def returned_twice():
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step():
        loss = (W * W).sum()
        return loss, loss

    def call(step, i):
        a, b = step()
        return a, a is b

    return World(step, call=call)


@scenario("returns")
def returned_view_of_weight():
    W = tinyattn.randn(4, 4)

    def step():
        return W.view(-1), W[0]

    def call(step, i):
        flat, row = step()
        with tinyattn.no_grad():
            W.add_(1.0)  # a view sees its base change
        return flat, row, flat._base is W

    return World(step, call=call)


@scenario("returns")
def returned_shape_int():
    X = tinyattn.randn(8, 4)

    def step(x):
        return x.sum(), x.shape[0], x.dtype

    def call(step, i):
        return step(X if i < 4 else X[:5])

    return World(step, call=call)


@scenario("returns")
def retain_grad_intermediate_returned():
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step():
        h = W.tanh()
        h.retain_grad()
        loss = (h * h).sum()
        W.grad = None
        loss.backward()
        return loss, h

    def call(step, i):
        loss, h = step()
        return loss, h.grad, h.is_leaf

    return World(step, call=call)


@scenario("returns")
def backward_outside_on_returned_loss():
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step():
        return (W.tanh() * W).sum()

    def call(step, i):
        loss = step()
        W.grad = None
        loss.backward()
        return loss, W.grad

    return World(step, call=call)


# ---------------------------------------------------------------------------------------------
# 7. calling forms


@scenario("calling")
def decorated_method():
    class Trainer:
        def __init__(self):
            self.W = tinyattn.randn(4, 4, requires_grad=True)

        @tinyattn.replayed
        def step(self, x):
            return (x @ self.W).sum()

    class Plain:
        def __init__(self):
            self.W = tinyattn.randn(4, 4, requires_grad=True)

        def step(self, x):
            return (x @ self.W).sum()

    X = tinyattn.randn(8, 4)
    holder = {}

    def call(step, i):  # the replayed run's class is the decorated one
        trainer = holder.setdefault("t", Trainer() if step == "replayed" else Plain())
        return trainer.step(X)

    return World("as written", call=call, wrap=lambda step: "replayed")


@scenario("calling")
def keyword_arguments():
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step(x, scale=1.0):
        return (x @ W * scale).sum()

    X = tinyattn.randn(8, 4)
    return World(step, call=lambda step, i: step(X, scale=0.5 if i >= 4 else 1.0))


@scenario("calling")
def generator_function():
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step():
        loss = (W * W).sum()
        W.grad = None
        loss.backward()
        W.data += -0.1 * W.grad
        yield loss

    return World(step, call=lambda step, i: list(step()), observe=params_of(W))


@scenario("calling")
def negative_zero_after_zero():
    W = tinyattn.rand(4, 4) + 0.5

    def step(scale):
        return W * scale

    return World(step, call=lambda step, i: step(0.0 if i < 4 else -0.0))


@scenario("calling")
def nan_argument():
    W = tinyattn.rand(4, 4)

    def step(scale):
        return W * scale

    return World(step, call=lambda step, i: step(float("nan") if i % 2 else 1.0))


@scenario("calling")
def true_after_one():
    W = tinyattn.rand(4, 4)

    def step(k):
        return W * k

    return World(step, call=lambda step, i: step(1 if i < 4 else True))


@scenario("calling")
def non_leaf_tensor_argument():
    W = tinyattn.randn(4, 4, requires_grad=True)

    def step(x):
        loss = (x * x).sum()
        loss.backward()
        return loss

    def call(step, i):
        W.grad = None
        out = step(W * 2)
        return out, W.grad

    return World(step, call=call)


@scenario("calling")
def list_of_tensors_argument():
    A, B = tinyattn.randn(4, 4), tinyattn.randn(4, 4)

    def step(tensors):
        return tensors[0] @ tensors[1]

    return World(step, call=lambda step, i: step([A, B] if i < 4 else [B, A]))


@scenario("calling")
def module_argument():
    m1, m2 = nn.Linear(4, 2), nn.Linear(4, 2)
    X = tinyattn.randn(3, 4)

    def step(model):
        return model(X).sum()

    return World(step, call=lambda step, i: step(m1 if i < 4 else m2))


@scenario("calling")
def same_tensor_twice_then_two():
    A, B = tinyattn.randn(4, 4), tinyattn.randn(4, 4)

    def step(x, y):
        with tinyattn.no_grad():
            x.add_(1.0)
        return x + y

    return World(step, call=lambda step, i: step(A, A) if i < 4 else step(A, B))


# ---------------------------------------------------------------------------------------------
# controls: steps a replay should handle (replay or fall back, never differ)


@scenario("control")
def lecture_mlp_step():
    X, Y, (W1, W2) = mlp(tinyattn)

    def step():
        ix = tinyattn.randint(0, 64, (16,))
        loss = F.cross_entropy((X[ix] @ W1).tanh() @ W2, Y[ix])
        W1.grad = W2.grad = None
        loss.backward()
        W1.data += -0.1 * W1.grad
        W2.data += -0.1 * W2.grad
        return loss

    return World(step, observe=params_of(W1, W2))


@scenario("control")
def item_inside():
    W = tinyattn.randn(4, 4)

    def step():
        loss = (W * 2).sum()
        return loss, loss.item()

    return World(step)


@scenario("control")
def dropout_in_model():
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
    X, Y = tinyattn.randn(16, 4), tinyattn.randint(0, 3, (16,))

    def step():
        loss = F.cross_entropy(model(X), Y)
        model.zero_grad()
        loss.backward()
        return loss

    return World(step, observe=model_state(model))


# ---------------------------------------------------------------------------------------------
# the tests


@pytest.fixture(autouse=True)
def restore_library():
    gelu = F.gelu
    yield
    F.gelu = gelu
    dtypes.default_float = tinyattn.float32


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_replayed_gives_the_record_of_the_step_as_written(name):
    build = SCENARIOS[name]
    written, _ = run(build, replay=False)
    assert len(written) == CALLS
    replayed, caught = run(build, replay=True)
    difference = first_difference(replayed, written)
    assert difference is None, difference
    for message in caught:  # a fallback names its cause and the step's line
        assert "runs it as usual from now on:" in message and ".py:" in message, message


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_strict_replay_stops_before_any_difference(name):
    build = SCENARIOS[name]
    written, _ = run(build, replay=False)
    replayed, _ = run(build, replay=True, strict=True)
    if replayed and replayed[-1][0] == "ReplayError":
        stopped = replayed[-1][1]
        replayed, written = replayed[:-1], written[:stopped]
    difference = first_difference(replayed, written)
    assert difference is None, difference


def outcome(name):
    """How the replay did on a scenario, in words (python tests/test_replay_adversarial.py)."""
    written, _ = run(SCENARIOS[name], replay=False)
    replayed, caught = run(SCENARIOS[name], replay=True)
    difference = first_difference(replayed, written)
    if difference:
        return ("DIFFERS " + ("after a warning: " if caught else "silently: ") + difference)[:300]
    return f"same; fell back: {caught[0][:200]}" if caught else "same, replayed"


if __name__ == "__main__":
    for name in sorted(SCENARIOS):
        print(f"{name}: {outcome(name)}")
