"""`tinyattn.replayed(step)`: a replayed step gives the eager step's bits, or runs eagerly and says why.

Every test runs the same step twice from identical starting points: once as it is (eagerly) and once
through `tinyattn.replayed`, and compares the two bit for bit (returned tensors, the tensors the step
reads and writes, their `.grad`, the global random generator). The two runs go one after the other,
never interleaved, because they share the global generator. A test of the replay path also asserts
that it was taken: `state == "replay"` at the end, and the step's Python body ran only on the two
recorded calls.
"""

import collections
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tinyattn
from tinyattn import autograd, functions, learner_loops
from tinyattn.nn import functional as F
from tinyattn.recording import Replayed

# ---------------------------------------------------------------------------------------------
# helpers


def bits(value):
    """What is compared of a returned value: a tensor's dtype, shape and bytes (recursively in tuples
    and lists); anything else as it is."""
    if isinstance(value, tinyattn.Tensor):
        array = value.detach().numpy()
        return ("tensor", array.dtype.str, array.shape, np.ascontiguousarray(array).tobytes(), array.copy())
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(bits(v) for v in value))
    return ("value", value)


def assert_same_bits(got, expected, what="value"):
    if isinstance(got, tuple) and got and got[0] == "tensor":
        assert expected[0] == "tensor", f"{what}: a tensor where the eager run gave {expected[0]}"
        assert got[1] == expected[1], f"{what}: dtype {got[1]} where the eager run gave {expected[1]}"
        assert got[2] == expected[2], f"{what}: shape {got[2]} where the eager run gave {expected[2]}"
        same = np.array_equal(got[4], expected[4], equal_nan=got[4].dtype.kind in "fc")
        assert same, f"{what}: {got[4]!r} where the eager run gave {expected[4]!r}"
        assert got[3] == expected[3], f"{what}: other bits (a -0.0 or a NaN payload) than the eager run"
    elif isinstance(got, tuple) and got and got[0] in ("tuple", "list"):
        assert got[0] == expected[0] and len(got[1]) == len(expected[1]), f"{what}: {got[0]} vs {expected[0]}"
        for i, (g, e) in enumerate(zip(got[1], expected[1])):
            assert_same_bits(g, e, f"{what}[{i}]")
    else:
        assert got == expected, f"{what}: {got!r} where the eager run gave {expected!r}"


def tensors_state(tensors):
    """Each tensor's bits and its .grad's bits (None without a .grad)."""
    return [(bits(t), None if t.grad is None else bits(t.grad)) for t in tensors]


def assert_same_tensors(got, expected):
    assert len(got) == len(expected)
    for i, ((value, grad), (value_e, grad_e)) in enumerate(zip(got, expected)):
        assert_same_bits(value, value_e, f"tensor {i}")
        assert (grad is None) == (grad_e is None), (
            f"tensor {i}: .grad is {'None' if grad is None else 'set'} where the eager run's is "
            f"{'None' if grad_e is None else 'set'}")
        if grad is not None:
            assert_same_bits(grad, grad_e, f"tensor {i}.grad")


def rng_state():
    state = tinyattn.random.get_rng_state()
    return (np.asarray(state["key"]).tobytes(), state["pos"], state["seed"], state["has_cached_normal"],
            state["cached_normal"])


class Counted:
    """A step that counts how often its Python body runs (a replay does not run it)."""

    def __init__(self, step):
        self.step, self.runs = step, 0
        self.__name__ = getattr(step, "__name__", "step")

    def __call__(self, *args):
        self.runs += 1
        return self.step(*args)


def drive(step, calls, args=None, between=None):
    """Call `step` `calls` times (with args(i) as arguments), calling between(i) after call i; the
    bits of what each call returned."""
    results = []
    for i in range(calls):
        results.append(bits(step(*(args(i) if args else ()))))
        if between is not None:
            between(i)
    return results


class NoFallback:
    """Records warnings; fails if `replayed` warned that it gave up (other warnings are allowed)."""

    def __enter__(self):
        self._catch = warnings.catch_warnings(record=True)
        self.caught = self._catch.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self._catch.__exit__(*exc)
        if exc[0] is None:
            gave_up = [str(w.message) for w in self.caught if "runs it as usual" in str(w.message)]
            assert not gave_up, f"replayed gave up: {gave_up}"
        return False


def eager_and_replayed(make, calls, args=None, between=None, strict=False):
    """Run make()'s step `calls` times eagerly, then a fresh make()'s step `calls` times replayed.

    make() returns (step, tensors, anything else); between(i, what make() returned) runs after call i.
    Returns the replayed wrapper and the counted step after asserting that results, tensors, grads and
    the random generator are the same bits, and that `replayed` never gave up."""
    made = make()
    step, tensors = made[:2]
    eager = drive(step, calls, args, between and (lambda i: between(i, made)))
    eager_tensors, eager_rng = tensors_state(tensors), rng_state()

    made = make()
    step, tensors = made[:2]
    counted = Counted(step)
    wrapper = tinyattn.replayed(counted, strict=strict)
    with NoFallback():
        got = drive(wrapper, calls, args, between and (lambda i: between(i, made)))
    assert len(got) == len(eager)
    for i, (g, e) in enumerate(zip(got, eager)):
        assert_same_bits(g, e, f"call {i + 1}'s result")
    assert_same_tensors(tensors_state(tensors), eager_tensors)
    assert rng_state() == eager_rng, "the global random generator is elsewhere after the replayed run"
    return wrapper, counted


def assert_replayed(wrapper, counted, recorded_calls=2):
    assert wrapper.state == "replay", f"the step ended in state {wrapper.state!r} ({wrapper.reason})"
    assert wrapper.reason is None
    assert counted.runs == recorded_calls, (
        f"the step's Python ran {counted.runs} times: the replay path was not taken on every later call")


# ---------------------------------------------------------------------------------------------
# 1. the four learner loops, bit for bit


@pytest.mark.parametrize("name", list(learner_loops.LOOPS))
def test_each_learner_loop_replays_bit_for_bit(name):
    calls = 4 if name == "full-batch bigram" else 8
    make = learner_loops.LOOPS[name]
    wrapper, counted = eager_and_replayed(lambda: make(tinyattn), calls)
    assert_replayed(wrapper, counted)


def test_the_learner_loops_parameters_are_changed_by_the_replays():
    """The replayed calls update the real parameters (not copies): after 6 calls they differ from after 2."""
    step, parameters = learner_loops.elementwise_loop(tinyattn)
    wrapper = tinyattn.replayed(step)
    wrapper(), wrapper()
    after_two = [p.detach().numpy().copy() for p in parameters]
    with NoFallback():
        for _ in range(4):
            wrapper()
    assert wrapper.state == "replay"
    assert all(not np.array_equal(a, p.detach().numpy()) for a, p in zip(after_two, parameters))


# ---------------------------------------------------------------------------------------------
# 2. random small steps: a property


OPS = {
    "add A": lambda x, P: x + P["A"],
    "mul A": lambda x, P: x * P["A"],
    "div": lambda x, P: x / (P["A"].abs() + 1),
    "matmul S": lambda x, P: x @ P["S"].to(x.dtype),
    "add b": lambda x, P: x + P["b"],
    "tanh": lambda x, P: tinyattn.tanh(x),
    "sigmoid": lambda x, P: x.sigmoid(),
    "exp": lambda x, P: (x * 0.1).exp(),
    "log": lambda x, P: (x.abs() + 1).log(),
    "relu": lambda x, P: x.relu(),
    "square": lambda x, P: x ** 2,
    "scale": lambda x, P: x * 0.5 - 1.0,
    "center": lambda x, P: x - x.mean(1, keepdim=True),
    "row sum": lambda x, P: x * x.sum(1, keepdim=True),
    "minus max": lambda x, P: x - x.max(1, keepdim=True).values,
    "softmax": lambda x, P: F.softmax(x, dim=1),
    "transpose": lambda x, P: x @ (x.T @ P["A"].to(x.dtype)) * 0.1,
}
LOSSES = {
    "sum": lambda x: x.sum(),
    "mean": lambda x: x.mean(),
    "square mean": lambda x: (x ** 2).mean(),
    "max": lambda x: x.max(),
}


def make_program(dtypes, ops, loss, update, reset, seed):
    """A step: x from the parameters, the ops, the loss, backward, an SGD step; fresh parameters."""

    def make():
        rng = np.random.default_rng(seed)
        P = {name: tinyattn.tensor(rng.standard_normal(shape).astype(dtypes[i]), requires_grad=True)
             for i, (name, shape) in enumerate([("A", (3, 4)), ("S", (4, 4)), ("b", (4,))])}
        params = list(P.values())

        def step():
            x = P["A"] @ P["S"].to(P["A"].dtype) * 0.5 + P["b"]  # (every parameter gets a .grad)
            for op in ops:
                x = OPS[op](x, P)
            value = LOSSES[loss](x)
            if reset:
                for p in params:
                    p.grad = None
            value.backward()
            if update == "no_grad":
                with tinyattn.no_grad():
                    for p in params:
                        p -= 0.01 * p.grad
            elif update == "data -=":
                for p in params:
                    p.data -= 0.01 * p.grad
            else:
                for p in params:
                    p.data += -0.01 * p.grad
            return value

        return step, params

    return make


@given(
    dtypes=st.lists(st.sampled_from([np.float32, np.float64]), min_size=3, max_size=3),
    ops=st.lists(st.sampled_from(sorted(OPS)), min_size=1, max_size=6),
    loss=st.sampled_from(sorted(LOSSES)),
    update=st.sampled_from(["no_grad", "data -=", "data +="]),
    reset=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_small_steps_replay_bit_for_bit(dtypes, ops, loss, update, reset, seed):
    wrapper, counted = eager_and_replayed(make_program(dtypes, ops, loss, update, reset, seed), 5, strict=True)
    assert_replayed(wrapper, counted)


# ---------------------------------------------------------------------------------------------
# 3. what it refuses: a warning that says why, the eager results, state "eager"; strict=True raises


def _params():
    tinyattn.manual_seed(7)
    return tinyattn.randn(3, 4, requires_grad=True), tinyattn.randn(4, requires_grad=True)


def _sgd(W, b, loss):
    W.grad = b.grad = None
    loss.backward()
    with tinyattn.no_grad():
        W -= 0.1 * W.grad
        b -= 0.1 * b.grad


KEPT = []
KEPT_BY_NAME = {}


class Square(tinyattn.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_output


def refusing(kind):
    """make() for a step that does `kind` once per call, and the words its refusal must contain."""

    def make():
        W, b = _params()
        KEPT.clear()
        KEPT_BY_NAME.clear()
        counter = [0]
        optimizer = tinyattn.optim.SGD([W, b], lr=0.1, momentum=0.5)

        def step():
            h = tinyattn.tanh(W @ b)
            loss = (h * h).sum()
            if kind == "item":
                scale = loss.item()
                loss = loss * (1.0 if scale > 0 else 2.0)
            elif kind == "print":
                print(loss)
            elif kind == "repr":
                repr(h)
            elif kind == "f-string":
                f"{loss:.3f}"
            elif kind == "bool":
                if loss > 2:
                    loss = loss * 0.5
            elif kind == "list":
                KEPT.append(h)
            elif kind == "dict":
                KEPT_BY_NAME["h"] = h
            elif kind == "hook":
                h.register_hook(lambda g: g * 2)
            elif kind == "function":
                loss = Square.apply(h).sum()
            elif kind == "generator":
                g = tinyattn.Generator().manual_seed(3)
                loss = loss + tinyattn.randn(3, generator=g).sum()
            elif kind == "counter":  # the second call does more work than the first
                counter[0] += 1
                for _ in range(counter[0]):
                    loss = loss * 1.5
            elif kind == "counter constant":  # the same ops, a constant that changes
                counter[0] += 1
                loss = loss * counter[0]
            elif kind == "equal":
                if tinyattn.equal(h, h):
                    loss = loss * 1.0
            elif kind == "slice by a tensor":
                loss = loss + h[:tinyattn.tensor(2)].sum()
            if kind == "optimizer":
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            else:
                _sgd(W, b, loss)
            return loss

        return step, [W, b]

    return make


REFUSALS = {
    "item": r"reads a tensor's value into Python \(\.item\(\)",
    "print": r"reads a tensor's value into Python \((str|repr)\(\)",
    "repr": r"reads a tensor's value into Python \(repr\(\)",
    "f-string": r"reads a tensor's value into Python \(format\(\)",
    "bool": r"reads a tensor's value into Python \(bool\(\)",
    "list": r"keeps a tensor it made \(shape \[3\]\)",
    "dict": r"keeps a tensor it made \(shape \[3\]\) after it returns \(in a list, a dict, a global\)",
    "hook": r"has a hook \(register_hook\)",
    "function": r"custom autograd\.Function Square",
    "generator": r"explicit generator=",
    "counter": r"second call did other work than its first",
    "counter constant": r"replay of its second call did not give the same bits",
    "equal": r"reads a tensor's value into Python \(\.equal\(\)",
    "slice by a tensor": r"reads a tensor's value into Python \((int|index)\(\)",
    "optimizer": r"replay of its second call did not give the same bits",
}


def assert_eager_like(make, calls, match):
    """The replayed step warns once (matching `match`), ends in state "eager", and gives the eager bits."""
    step, tensors = make()
    eager = drive(step, calls)
    eager_tensors, eager_rng = tensors_state(tensors), rng_state()

    step, tensors = make()
    wrapper = tinyattn.replayed(step)
    with pytest.warns(RuntimeWarning, match=match) as caught:
        got = drive(wrapper, calls)
    gave_up = [w for w in caught if "runs it as usual" in str(w.message)]
    assert len(gave_up) == 1, [str(w.message) for w in gave_up]
    assert str(gave_up[0].message).startswith("replayed(step) runs it as usual from now on: ")
    for i, (g, e) in enumerate(zip(got, eager)):
        assert_same_bits(g, e, f"call {i + 1}'s result")
    assert_same_tensors(tensors_state(tensors), eager_tensors)
    assert rng_state() == eager_rng
    assert wrapper.state == "eager"
    assert wrapper.reason and f": {wrapper.reason}" in str(gave_up[0].message)
    assert "eager" in repr(wrapper) and wrapper.reason in repr(wrapper)
    return wrapper


# the refusals made while the step runs name the step's line that caused them
AT_A_LINE = {"item", "print", "repr", "f-string", "bool", "hook", "function", "generator", "equal",
             "slice by a tensor"}


@pytest.mark.parametrize("kind", list(REFUSALS))
def test_a_step_it_cannot_replay_runs_eagerly_with_one_warning(kind, capsys):
    wrapper = assert_eager_like(refusing(kind), 5, REFUSALS[kind])
    if kind in AT_A_LINE:
        assert "test_recording.py:" in wrapper.reason, wrapper.reason


@pytest.mark.parametrize("kind", list(REFUSALS))
def test_strict_raises_replay_error_for_a_step_it_cannot_replay(kind, capsys):
    step, _ = refusing(kind)()
    wrapper = tinyattn.replayed(step, strict=True)
    with pytest.raises(tinyattn.ReplayError, match=REFUSALS[kind]):
        for _ in range(3):
            wrapper()
    assert wrapper.state == "eager"
    assert issubclass(tinyattn.ReplayError, RuntimeError)


def test_print_inside_the_step_still_prints_on_every_call(capsys):
    step, _ = refusing("print")()
    wrapper = tinyattn.replayed(step)
    with pytest.warns(RuntimeWarning, match="into Python"):
        for _ in range(4):
            wrapper()
    assert capsys.readouterr().out.count("tensor(") == 4


def test_an_argument_that_is_neither_a_tensor_nor_a_python_value_runs_eagerly():
    def make():
        W, b = _params()

        def step(lr):
            loss = (W @ b).sum()
            _sgd(W, b, loss * float(lr))
            return loss

        return step, [W, b]

    step, _ = make()
    strict = tinyattn.replayed(step, strict=True)
    with pytest.raises(tinyattn.ReplayError, match="must be tensors or Python numbers"):
        strict(np.float32(0.5))
    assert strict.state == "eager"

    step, tensors = make()
    eager = drive(step, 4, args=lambda i: (np.float32(0.5),))
    eager_tensors = tensors_state(tensors)
    step, tensors = make()
    wrapper = tinyattn.replayed(step)
    with pytest.warns(RuntimeWarning, match="must be tensors or Python numbers"):
        got = drive(wrapper, 4, args=lambda i: (np.float32(0.5),))
    assert wrapper.state == "eager"
    for g, e in zip(got, eager):
        assert_same_bits(g, e)
    assert_same_tensors(tensors_state(tensors), eager_tensors)


def test_the_ninth_recording_gives_up():
    """Each new Python value records again; after 8 recordings the step runs eagerly."""

    def make():
        W, b = _params()

        def step(scale):
            loss = (W @ b).sum() * scale
            _sgd(W, b, loss)
            return loss

        return step, [W, b]

    step, tensors = make()
    eager = drive(step, 10, args=lambda i: (float(i + 1),))
    eager_tensors = tensors_state(tensors)
    step, tensors = make()
    wrapper = tinyattn.replayed(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = drive(wrapper, 10, args=lambda i: (float(i + 1),))
    gave_up = [str(w.message) for w in caught if "runs it as usual" in str(w.message)]
    assert len(gave_up) == 1 and "recorded 8 times" in gave_up[0]
    assert wrapper.state == "eager"
    for g, e in zip(got, eager):
        assert_same_bits(g, e)
    assert_same_tensors(tensors_state(tensors), eager_tensors)


# ---------------------------------------------------------------------------------------------
# 4. a replay reads fresh values


def test_parameters_changed_outside_the_step_are_read_by_the_replay():
    def make():
        W, b = _params()

        def step():
            loss = tinyattn.tanh(W @ b).sum()
            _sgd(W, b, loss)
            return loss

        return step, [W, b]

    def between(i, made):
        W, b = made[1]
        with tinyattn.no_grad():
            W.mul_(0.5)
            b.add_(float(i))
        if i == 3:
            b.data = b.data * -2.0  # a new array of the same shape

    wrapper, counted = eager_and_replayed(make, 7, between=between)
    assert_replayed(wrapper, counted)


def data_step():
    """make() for step(xb, yb) on a small MLP."""
    tinyattn.manual_seed(11)
    W1 = tinyattn.randn(5, 8, requires_grad=True)
    W2 = tinyattn.randn(8, 4, requires_grad=True)

    def step(xb, yb):
        logits = tinyattn.tanh(xb.to(W1.dtype) @ W1) @ W2
        loss = F.cross_entropy(logits, yb)
        W1.grad = W2.grad = None
        loss.backward()
        for p in (W1, W2):
            p.data += -0.1 * p.grad
        return loss, logits

    return step, [W1, W2]


def batch(i, rows=6, dtype=np.float32):
    rng = np.random.default_rng(100 + i)
    return (tinyattn.tensor(rng.standard_normal((rows, 5)).astype(dtype)),
            tinyattn.tensor(rng.integers(0, 4, rows)))


def test_tensor_arguments_with_new_values_each_call_are_used():
    wrapper, counted = eager_and_replayed(data_step, 7, args=batch)
    assert_replayed(wrapper, counted)


def test_a_tensor_argument_of_a_new_shape_records_again():
    rows = [6, 6, 6, 9, 9, 9, 6, 6, 6]
    step, tensors = data_step()
    eager = drive(step, len(rows), args=lambda i: batch(i, rows[i]))
    eager_tensors = tensors_state(tensors)

    step, tensors = data_step()
    counted = Counted(step)
    wrapper = tinyattn.replayed(counted)
    got, after = [], []
    with NoFallback():
        for i in range(len(rows)):
            got.append(bits(wrapper(*batch(i, rows[i]))))
            after.append(wrapper.state)
    for g, e in zip(got, eager):
        assert_same_bits(g, e)
    assert_same_tensors(tensors_state(tensors), eager_tensors)
    assert after == ["check", "replay", "replay"] * 3
    assert counted.runs == 6  # two recorded calls per shape


def test_a_tensor_argument_of_a_new_dtype_records_again():
    dtypes = [np.float32, np.float32, np.float32, np.float64, np.float64, np.float64]
    step, tensors = data_step()
    eager = drive(step, 6, args=lambda i: batch(i, dtype=dtypes[i]))
    eager_tensors = tensors_state(tensors)
    step, tensors = data_step()
    counted = Counted(step)
    wrapper = tinyattn.replayed(counted)
    with NoFallback():
        got = drive(wrapper, 6, args=lambda i: batch(i, dtype=dtypes[i]))
    for g, e in zip(got, eager):
        assert_same_bits(g, e)
    assert_same_tensors(tensors_state(tensors), eager_tensors)
    assert wrapper.state == "replay" and counted.runs == 4


def test_a_python_argument_with_another_value_records_again():
    lrs = [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 1, 1, 1]  # 1 (an int) is not 1.0 either

    def make():
        W, b = _params()

        def step(lr):
            loss = (tinyattn.tanh(W @ b) ** 2).sum()
            W.grad = b.grad = None
            loss.backward()
            for p in (W, b):
                p.data -= lr * p.grad
            return loss

        return step, [W, b]

    step, tensors = make()
    eager = drive(step, len(lrs), args=lambda i: (lrs[i],))
    eager_tensors = tensors_state(tensors)
    step, tensors = make()
    counted = Counted(step)
    wrapper = tinyattn.replayed(counted)
    after = []
    with NoFallback():
        got = []
        for lr in lrs:
            got.append(bits(wrapper(lr)))
            after.append(wrapper.state)
    for g, e in zip(got, eager):
        assert_same_bits(g, e)
    assert_same_tensors(tensors_state(tensors), eager_tensors)
    assert after == ["check", "replay", "replay", "check", "replay", "replay", "replay", "check", "replay", "replay"]
    assert counted.runs == 6


def test_a_parameter_given_a_new_shape_outside_the_step_records_again():
    def make():
        tinyattn.manual_seed(3)
        W = tinyattn.randn(3, 4, requires_grad=True)

        def step():
            loss = (W * W).sum()
            W.grad = None
            loss.backward()
            W.data -= 0.1 * W.grad
            return loss

        return step, [W]

    def between(i, made):
        if i == 3:
            made[1][0].data = tinyattn.ones(2, 5)

    wrapper, counted = eager_and_replayed(make, 8, between=between)
    assert_replayed(wrapper, counted, recorded_calls=4)


# ---------------------------------------------------------------------------------------------
# 5. the returned loss


def forward_only():
    tinyattn.manual_seed(5)
    W = tinyattn.randn(4, 3, requires_grad=True)
    b = tinyattn.randn(3, requires_grad=True)

    def step(x):
        return F.softmax(x @ W + b, dim=1).log().mean() * -1.0

    return step, [W, b]


def test_the_returned_loss_has_a_grad_fn_and_prints_like_the_eager_one_and_backward_works_outside():
    xs = [tinyattn.tensor(np.random.default_rng(i).standard_normal((2, 4)).astype(np.float32)) for i in range(6)]

    def run(step, params):
        seen = []
        for x in xs:
            loss = step(x)
            seen.append((repr(loss), str(loss), type(loss.grad_fn).__name__, loss.requires_grad, loss.is_leaf))
            for p in params:
                p.grad = None
            loss.backward()
            seen.append(tensors_state(params))
            with tinyattn.no_grad():
                for p in params:
                    p -= 0.5 * p.grad
        return seen

    step, params = forward_only()
    eager = run(step, params)
    step, params = forward_only()
    counted = Counted(step)
    wrapper = tinyattn.replayed(counted)
    with NoFallback():
        got = run(wrapper, params)
    assert_replayed(wrapper, counted)
    for g, e in zip(got[0::2], eager[0::2]):
        assert g == e
        assert g[2] != "NoneType" and g[3] is True
        assert "grad_fn=<" in g[0]
    for g, e in zip(got[1::2], eager[1::2]):
        assert_same_tensors(g, e)


def test_backward_twice_outside_on_a_replayed_loss_is_refused_as_eagerly():
    step, params = forward_only()
    wrapper = tinyattn.replayed(step)
    x = tinyattn.ones(2, 4)
    for _ in range(3):
        loss = wrapper(x)
    assert wrapper.state == "replay"
    loss.backward()
    with pytest.raises(Exception) as replayed_error:
        loss.backward()
    eager_loss = step(x)
    eager_loss.backward()
    with pytest.raises(Exception) as eager_error:
        eager_loss.backward()
    assert type(replayed_error.value) is type(eager_error.value)


def test_a_step_that_returns_several_tensors_and_python_values():
    def make():
        W, b = _params()

        def step():
            h = W @ b
            loss = (h ** 2).sum()
            _sgd(W, b, loss)
            return loss, [h.detach(), W], "done", 3

        return step, [W, b]

    wrapper, counted = eager_and_replayed(make, 5)
    assert_replayed(wrapper, counted)


# ---------------------------------------------------------------------------------------------
# 6. random draws inside the step


def random_step(kind):
    def make():
        tinyattn.manual_seed(2024)
        X = tinyattn.randn(50, 6)
        W = tinyattn.randn(6, 4, requires_grad=True)

        def step():
            if kind == "randint":
                ix = tinyattn.randint(0, X.shape[0], (8,))
                h = X[ix] @ W
            elif kind == "randn":
                h = (X[:8] + 0.1 * tinyattn.randn(8, 6)) @ W
            elif kind == "rand_like":
                h = (X[:8] * tinyattn.rand_like(X[:8])) @ W
            else:
                h = F.dropout(X[:8] @ W, p=0.3, training=True)
            loss = (h ** 2).mean()
            W.grad = None
            loss.backward()
            W.data -= 0.05 * W.grad
            return loss, h

        return step, [W]

    return make


@pytest.mark.parametrize("kind", ["randint", "randn", "rand_like", "dropout"])
def test_random_draws_inside_the_step_give_the_eager_numbers(kind):
    """Whatever path it takes (replay or fallback), the numbers and the generator are the eager ones."""
    step, tensors = random_step(kind)()
    eager = drive(step, 6)
    eager_tensors, eager_rng = tensors_state(tensors), rng_state()
    step, tensors = random_step(kind)()
    wrapper = tinyattn.replayed(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = drive(wrapper, 6)
    for g, e in zip(got, eager):
        assert_same_bits(g, e)
    assert_same_tensors(tensors_state(tensors), eager_tensors)
    assert rng_state() == eager_rng
    # the draws differ from call to call (a replay that froze them would repeat the same numbers)
    assert got[2][1][1][3] != got[3][1][1][3]


@pytest.mark.parametrize("kind", ["randint", "randn", "rand_like", "dropout"])
def test_random_draws_inside_the_step_are_replayed(kind):
    wrapper, counted = eager_and_replayed(random_step(kind), 6)
    assert_replayed(wrapper, counted)


def test_dropout_module_in_training_mode_is_replayed():
    def make():
        tinyattn.manual_seed(9)
        model = tinyattn.nn.Sequential(tinyattn.nn.Linear(6, 8), tinyattn.nn.Dropout(0.25), tinyattn.nn.Linear(8, 2))
        model.train()
        params = list(model.parameters())

        def step(x):
            loss = model(x).pow(2).mean()
            for p in params:
                p.grad = None
            loss.backward()
            for p in params:
                p.data -= 0.1 * p.grad
            return loss

        return step, params

    def inputs(i):
        return (tinyattn.tensor(np.random.default_rng(i).standard_normal((5, 6)).astype(np.float32)),)

    wrapper, counted = eager_and_replayed(make, 6, args=inputs)
    assert_replayed(wrapper, counted)


# ---------------------------------------------------------------------------------------------
# 7. resetting .grad or accumulating it


def grad_step(reset):
    def make():
        W, b = _params()
        if reset == "zero_":  # grads that exist before the step and are zeroed in place in it
            ((W @ b).sum() * 0).backward()

        def step():
            loss = (tinyattn.tanh(W @ b) * 3).sum()
            if reset == "None":
                W.grad = None
                b.grad = None
            elif reset == "zero_":
                W.grad.zero_()
                b.grad.zero_()
            loss.backward()
            with tinyattn.no_grad():
                W.sub_(0.01 * W.grad)
                b.sub_(0.01 * b.grad)
            return loss

        return step, [W, b]

    return make


@pytest.mark.parametrize("reset", ["None", "accumulate", "zero_"])
def test_grad_reset_to_none_zeroed_in_place_or_accumulated_replays_bit_for_bit(reset):
    """`p.grad = None`, `p.grad.zero_()` on a .grad from before the step, or no reset at all."""
    wrapper, counted = eager_and_replayed(grad_step(reset), 6)
    assert_replayed(wrapper, counted)


def test_grads_are_none_after_a_replayed_step_that_sets_them_to_none_last():
    def make():
        W, b = _params()

        def step():
            loss = (W @ b).sum()
            loss.backward()
            with tinyattn.no_grad():
                W.sub_(0.01 * W.grad)
                b.sub_(0.01 * b.grad)
            W.grad = None
            b.grad = None
            return loss

        return step, [W, b]

    wrapper, counted = eager_and_replayed(make, 5)
    assert_replayed(wrapper, counted)


# ---------------------------------------------------------------------------------------------
# 8. a 0-d tensor index


def test_a_0d_tensor_index_is_read_again_on_each_replay():
    """`dC[ix] += v` with ix = Xb[k, j], as the batch-norm loop scatters its embedding gradient, on
    batches whose ids change each call."""

    def make():
        tinyattn.manual_seed(1)
        C = tinyattn.randn(7, 3, requires_grad=True)

        def step(Xb):
            emb = C[Xb]
            loss = (emb.tanh() ** 2).sum()
            C.grad = None
            loss.backward()
            with tinyattn.no_grad():
                dC = tinyattn.zeros_like(C)
                picked = tinyattn.zeros(Xb.shape[0], 3)
                for k in range(Xb.shape[0]):
                    for j in range(Xb.shape[1]):
                        ix = Xb[k, j]
                        dC[ix] += C.grad[ix] * 0.5
                        picked[k] += C[ix]
                C.data += -0.1 * dC
            return loss, dC, picked

        return step, [C]

    def ids(i):
        return (tinyattn.tensor(np.random.default_rng(i).integers(0, 7, (4, 2))),)

    wrapper, counted = eager_and_replayed(make, 6, args=ids)
    assert_replayed(wrapper, counted)


# ---------------------------------------------------------------------------------------------
# 9. the wrapper


def test_replayed_as_a_decorator_and_its_repr():
    W, b = _params()

    @tinyattn.replayed
    def step():
        loss = (W @ b).sum()
        _sgd(W, b, loss)
        return loss

    @tinyattn.replayed(strict=True)
    def strict_step():
        return (W @ b).sum()

    assert isinstance(step, Replayed) and isinstance(strict_step, Replayed)
    assert step.strict is False and strict_step.strict is True
    assert repr(step) == "<replayed step (record)>"
    step()
    assert repr(step) == "<replayed step (check)>"
    step()
    assert repr(step) == "<replayed step (replay)>"
    step()
    assert step.state == "replay"
    for _ in range(3):
        strict_step()
    assert strict_step.state == "replay" and "strict_step (replay)" in repr(strict_step)

    @tinyattn.replayed
    def noisy():
        return (W @ b).sum().item()

    with pytest.warns(RuntimeWarning):
        noisy()
    assert repr(noisy).startswith("<replayed noisy (eager: it reads a tensor's value into Python")


def test_replayed_refuses_what_is_not_a_function():
    with pytest.raises(TypeError, match="int"):
        tinyattn.replayed(3)
    with pytest.raises(TypeError):
        tinyattn.replayed(strict=True)("not a function")


def test_a_step_with_no_tensors():
    constant = Counted(lambda: 42)
    wrapper = tinyattn.replayed(constant)
    assert [wrapper() for _ in range(4)] == [42, 42, 42, 42]
    assert_replayed(wrapper, constant)


def test_a_step_that_returns_a_tensor_it_reads_returns_that_tensor():
    """Eagerly the step returns the very tensor (its argument, or a parameter): so must a replay, which
    otherwise hands back a new tensor without its requires_grad and .grad."""
    W = tinyattn.ones(3, requires_grad=True)
    by_name = tinyattn.replayed(lambda: W)
    for _ in range(3):
        assert by_name() is W
    assert by_name.state == "replay"
    x = tinyattn.ones(3, requires_grad=True)
    given = tinyattn.replayed(lambda t: t)
    got = [given(x) for _ in range(3)]
    assert given.state == "replay"
    assert got[2].requires_grad == x.requires_grad
    assert got[2] is x


# ---------------------------------------------------------------------------------------------
# 10. the library is put back after each recording


PATCHED = [
    (tinyattn.Tensor, ["item", "tolist", "numpy", "__array__", "__bool__", "__int__", "__float__", "__index__",
                       "__repr__", "__str__", "__format__", "equal", "allclose", "_wrap", "_from_data", "__init__",
                       "_store", "grad"]),
    (autograd, ["backward"]),
    (tinyattn, ["randint", "randn", "rand", "randperm", "zeros", "zeros_like", "ones", "arange", "tensor", "full"]),
    (functions, ["randint", "randn", "rand", "randn_like", "zeros_like", "eye", "tensor"]),
    (F, ["one_hot", "dropout", "dropout_mask"]),
]


def library_surface():
    surface = {}
    for owner, names in PATCHED:
        space = owner.__dict__ if isinstance(owner, type) else vars(owner)
        for name in names:
            surface[(getattr(owner, "__name__", owner), name)] = (name in space, space.get(name))
    surface[("Tensor", "__dict__ keys")] = (True, tuple(sorted(tinyattn.Tensor.__dict__)))
    surface[("autograd", "observers")] = (True, tuple(autograd.observers))
    return surface


def assert_surface(before):
    after = library_surface()
    assert after.keys() == before.keys()
    for key in before:
        assert after[key][0] == before[key][0], f"{key} was {'removed' if before[key][0] else 'added'}"
        assert after[key][1] is before[key][1] or after[key][1] == before[key][1], f"{key} was not put back"


def test_the_library_is_put_back_after_recording_checking_and_replaying():
    before = library_surface()
    item, wrap = tinyattn.Tensor.item, tinyattn.Tensor.__dict__["_wrap"]
    backward, randint = autograd.backward, tinyattn.randint
    step, _ = learner_loops.mlp_loop(tinyattn)
    wrapper = tinyattn.replayed(step)
    for _ in range(3):
        wrapper()
        assert_surface(before)
    assert tinyattn.Tensor.item is item and tinyattn.Tensor.__dict__["_wrap"] is wrap
    assert autograd.backward is backward and tinyattn.randint is randint
    # and what the step refused
    refused = tinyattn.replayed(refusing("item")()[0])
    with pytest.warns(RuntimeWarning):
        refused()
    assert_surface(before)


class Boom(Exception):
    pass


@pytest.mark.parametrize("failing_call", [1, 2])
def test_an_exception_in_the_step_propagates_unchanged_and_the_library_is_put_back(failing_call):
    before = library_surface()
    W, b = _params()
    calls = [0]
    error = Boom("the step's own error")

    def step():
        calls[0] += 1
        loss = tinyattn.tanh(W @ b).sum()
        if calls[0] == failing_call:
            raise error
        _sgd(W, b, loss)
        return loss

    wrapper = tinyattn.replayed(step)
    for _ in range(failing_call - 1):
        wrapper()
    with pytest.raises(Boom) as raised:
        wrapper()
    assert raised.value is error
    assert_surface(before)
    assert tinyattn.Tensor.item(tinyattn.ones(())) == 1.0
    # the wrapper goes on: it records (or checks) again and reaches the replay
    with NoFallback():
        for _ in range(4):
            wrapper()
    assert wrapper.state == "replay"
    assert_surface(before)


def test_a_step_that_fails_in_the_replay_raises_its_error():
    """A replay makes the recorded array calls: when one of them fails (an index argument out of range),
    the caller gets an IndexError, as from the eager step, not a result."""
    W = tinyattn.ones(3, 4)
    wrapper = tinyattn.replayed(lambda ix: W[ix].sum())
    for i in range(3):
        wrapper(tinyattn.tensor([0, 1, 2]))
    assert wrapper.state == "replay"
    with pytest.raises(IndexError):
        W[tinyattn.tensor([0, 1, 3])]
    with pytest.raises(IndexError):
        wrapper(tinyattn.tensor([0, 1, 3]))


# ---------------------------------------------------------------------------------------------
# what the argument guard and the recording must not confuse (each found wrong in review)


def test_the_same_tensor_for_two_arguments_then_two_different_tensors():
    """Recorded with step(x, x), replayed with step(a, b): the second argument must be b."""

    def step(a, b):
        return (a * 2 + b).sum()

    wrapper = tinyattn.replayed(step)
    x = tinyattn.ones(3)
    wrapper(x, x), wrapper(x, x)
    a, b = tinyattn.ones(3), tinyattn.zeros(3)
    assert_same_bits(bits(wrapper(a, b)), bits(step(a, b)))


def test_an_argument_that_is_also_a_tensor_the_step_reads_by_name():
    """Recorded with step(W) where the step also reads W itself, replayed with step(V)."""
    W = tinyattn.ones(3)

    def step(x):
        return (x * W).sum()

    wrapper = tinyattn.replayed(step)
    wrapper(W), wrapper(W)
    V = tinyattn.full((3,), 2.0)
    assert_same_bits(bits(wrapper(V)), bits(step(V)))


def test_a_parameter_given_as_an_argument_gets_its_own_grad():
    def step(p):
        loss = (p * p).sum()
        loss.backward()
        return loss

    wrapper = tinyattn.replayed(step)
    p1 = tinyattn.ones(3, requires_grad=True)
    wrapper(p1), wrapper(p1)
    p1.grad = None
    p2 = tinyattn.full((3,), 5.0, requires_grad=True)
    wrapper(p2)
    assert p1.grad is None, "the replay wrote p2's gradient into p1.grad"
    assert p2.grad is not None and p2.grad.tolist() == [10.0, 10.0, 10.0]


MASKED = {
    "masked_fill": lambda x: x.masked_fill(x < 0, 0.0),
    "where": lambda x: tinyattn.where(x < 0, x, x * 2),
    "boolean index": lambda x: x[x > 0].sum(),
    "argmax index": lambda x: x[tinyattn.arange(2), x.argmax(1)],
}


@pytest.mark.parametrize("kind", list(MASKED))
def test_a_mask_or_index_computed_in_the_step_is_computed_again(kind):
    """A comparison (or argmax) made inside the step from its input: a replay on new values must not
    reuse the first call's mask."""
    f = MASKED[kind]
    wrapper = tinyattn.replayed(f)
    x = tinyattn.tensor([[1.0, -1.0], [2.0, -2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (falling back to eager is a right answer too)
        wrapper(x), wrapper(x)
        y = tinyattn.tensor([[-1.0, 1.0], [-2.0, 2.0]])
        assert_same_bits(bits(wrapper(y)), bits(f(y)))


def test_a_mask_from_a_parameter_changed_outside_the_step():
    W = tinyattn.tensor([1.0, -1.0, 2.0, -2.0], requires_grad=True)
    V = tinyattn.tensor([1.0, 2.0, 3.0, 4.0])

    def step():
        return (V[W > 0] ** 2).sum()

    wrapper = tinyattn.replayed(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapper(), wrapper()
        with tinyattn.no_grad():
            W.copy_(tinyattn.tensor([1.0, 1.0, 1.0, -2.0]))
        assert_same_bits(bits(wrapper()), bits(step()))


def test_a_parameter_frozen_outside_the_step_gets_no_grad():
    """`requires_grad_(False)` between calls: the eager step leaves its .grad None, so must a replay."""
    A = tinyattn.ones(3, requires_grad=True)
    B = tinyattn.full((3,), 2.0, requires_grad=True)

    def step():
        loss = (A * B).sum()
        A.grad = B.grad = None
        loss.backward()
        return loss

    wrapper = tinyattn.replayed(step)
    for _ in range(3):
        wrapper()
    assert wrapper.state == "replay"
    B.requires_grad_(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapper()
    assert B.grad is None, "the replay computed a gradient for a tensor that no longer requires one"
    assert A.grad.tolist() == [2.0, 2.0, 2.0]


def test_a_replayed_call_under_no_grad_records_no_graph():
    """Called under no_grad() after it was recorded with grad on, the step must return what the
    eager step returns there: a loss without a graph."""
    step, _ = forward_only()
    wrapper = tinyattn.replayed(step)
    x = tinyattn.ones(2, 4)
    for _ in range(3):
        wrapper(x)
    assert wrapper.state == "replay"
    with tinyattn.no_grad():
        eager = step(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = wrapper(x)
    assert_same_bits(bits(got), bits(eager))
    assert (got.requires_grad, got.grad_fn) == (eager.requires_grad, eager.grad_fn) == (False, None)
    assert wrapper.state == "check"  # recorded again, under no_grad
    with NoFallback():
        for _ in range(3):
            got = wrapper(x)
    assert wrapper.state == "replay" and got.grad_fn is not None
    assert_same_bits(bits(got), bits(step(x)))


# ---------------------------------------------------------------------------------------------
# what the docs promise besides: an optimizer after the replayed function, train()/eval(), observers


def model_step(momentum):
    def make():
        tinyattn.manual_seed(4)
        model = tinyattn.nn.Sequential(tinyattn.nn.Linear(5, 8), tinyattn.nn.Dropout(0.2), tinyattn.nn.Linear(8, 4))
        optimizer = tinyattn.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)

        def forward_backward(xb, yb):
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            return loss

        return forward_backward, list(model.parameters()), model, optimizer

    return make


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_an_optimizer_stepped_after_the_replayed_forward_backward(momentum):
    def between(i, made):
        made[3].step()

    wrapper, counted = eager_and_replayed(model_step(momentum), 6, args=batch, between=between)
    assert_replayed(wrapper, counted)


def test_switching_a_module_between_train_and_eval_records_again():
    modes = ["train"] * 3 + ["eval"] * 3 + ["train"] * 3

    def run(make, wrap):
        forward_backward, params, model, optimizer = make()
        step = wrap(forward_backward)
        results, states = [], []
        for i, mode in enumerate(modes):
            model.train(mode == "train")
            results.append(bits(step(*batch(i))))
            optimizer.step()
            states.append(getattr(step, "state", None))
        return results, tensors_state(params), rng_state(), states

    eager, eager_params, eager_rng, _ = run(model_step(0.0), lambda f: f)
    with NoFallback():
        got, params, rng, states = run(model_step(0.0), tinyattn.replayed)
    for g, e in zip(got, eager):
        assert_same_bits(g, e)
    assert_same_tensors(params, eager_params)
    assert rng == eager_rng
    assert states == ["check", "replay", "replay"] * 3


def test_a_trace_or_anomaly_detection_around_a_replayed_step_sees_the_step_run():
    step, tensors = data_step()
    eager = drive(step, 6, args=batch)
    eager_tensors = tensors_state(tensors)
    step, tensors = data_step()
    counted = Counted(step)
    wrapper = tinyattn.replayed(counted)
    got = []
    with NoFallback():
        for i in range(6):
            if i == 3:
                with tinyattn.detect_anomaly():
                    got.append(bits(wrapper(*batch(i))))
                assert counted.runs == 3, "under detect_anomaly the step itself must run"
            else:
                got.append(bits(wrapper(*batch(i))))
    for g, e in zip(got, eager):
        assert_same_bits(g, e)
    assert_same_tensors(tensors_state(tensors), eager_tensors)
    assert_replayed(wrapper, counted, recorded_calls=3)


Pair = collections.namedtuple("Pair", "loss out")


def test_a_step_that_returns_a_dict_and_a_named_tuple_gets_fresh_tensors_in_them():
    """What a step returns is built again on each replay, in the same containers."""

    def make():
        W, b = _params()

        def step(x):
            out = x @ W + b
            loss = (out ** 2).mean()
            _sgd(W, b, loss)
            return {"loss": loss, "pair": Pair(loss, out), "outputs": [out, 2], "n": 3}

        return step, [W, b]

    xs = [tinyattn.full((2, 3), float(i)) for i in range(6)]

    def flat(result):
        assert type(result) is dict and type(result["pair"]) is Pair and type(result["outputs"]) is list
        return [bits(result["loss"]), bits(result["pair"].loss), bits(result["pair"].out),
                bits(result["outputs"][0]), result["outputs"][1], result["n"]]

    step, tensors = make()
    eager = [flat(step(x)) for x in xs]
    step, tensors = make()
    wrapper = tinyattn.replayed(step, strict=True)
    got = [flat(wrapper(x)) for x in xs]
    assert wrapper.state == "replay"
    for g, e in zip(got, eager):
        for a, b in zip(g, e):
            assert_same_bits(a, b)
    assert len({r[0][3] for r in got}) == len(xs)  # a new loss each call, not the recorded one


def test_a_step_that_returns_another_kind_of_tuple_runs_as_usual():
    class Odd(tuple):
        pass

    W, b = _params()

    def step():
        return Odd(((W * 2).sum(),))

    wrapper = tinyattn.replayed(step)
    with pytest.warns(RuntimeWarning, match="it returns a Odd: return tensors in a tuple, list or dict"):
        wrapper()
    assert wrapper.state == "eager"
    assert type(wrapper()) is Odd


class Layer:
    """A lecture's layer class: it keeps its output (`self.out`) for plots after each call."""

    def __init__(self, W):
        self.W = W

    def __call__(self, x):
        self.out = tinyattn.tanh(x @ self.W)
        return self.out


class Norm:
    """Batch norm as a lecture writes it, its running mean updated in place, or replaced by a new
    tensor on each call (which a replay cannot follow)."""

    def __init__(self, n, in_place):
        self.running_mean, self.in_place = tinyattn.zeros(n), in_place

    def __call__(self, x):
        mean = x.mean(0)
        self.out = (x - mean) * 2.0
        with tinyattn.no_grad():
            if self.in_place:
                self.running_mean.mul_(0.9).add_(0.1 * mean)
            else:
                self.running_mean = 0.9 * self.running_mean + 0.1 * mean
        return self.out


def layered(in_place=True):
    def make():
        tinyattn.manual_seed(11)
        W1 = tinyattn.randn(4, 6, requires_grad=True)
        W2 = tinyattn.randn(6, 3, requires_grad=True)
        layers = [Layer(W1), Norm(6, in_place), Layer(W2)]

        def step(x):
            h = x
            for layer in layers:
                h = layer(h)
            loss = (h ** 2).mean()
            for layer in layers:
                layer.out.retain_grad()
            W1.grad = W2.grad = None
            loss.backward()
            with tinyattn.no_grad():
                W1.sub_(0.1 * W1.grad)
                W2.sub_(0.1 * W2.grad)
            return loss

        return step, [W1, W2, layers[1].running_mean], layers

    return make


def test_tensors_kept_in_attributes_are_set_again_with_their_grads():
    """`self.out = ...` with `layer.out.retain_grad()` (a lecture's activation and gradient plots): after
    each replayed call the attributes hold that call's tensors, their grad_fn and their .grad."""
    xs = [tinyattn.randn(5, 4) for _ in range(6)]

    def run(step, layers):
        seen = []
        for x in xs:
            seen.append(bits(step(x)))
            for layer in layers:
                seen.append((bits(layer.out), bits(layer.out.grad), layer.out.grad_fn.name()))
        return seen

    step, tensors, layers = layered()()
    eager, eager_tensors = run(step, layers), tensors_state(tensors)
    step, tensors, layers = layered()()
    counted = Counted(step)
    wrapper = tinyattn.replayed(counted)
    with NoFallback():
        got = run(wrapper, layers)
    assert_replayed(wrapper, counted)
    for g, e in zip(got, eager):
        if isinstance(g, tuple) and len(g) == 3 and isinstance(g[2], str):
            assert_same_bits(g[0], e[0])
            assert_same_bits(g[1], e[1])
            assert g[2] == e[2]
        else:
            assert_same_bits(g, e)
    assert_same_tensors(tensors_state(tensors), eager_tensors)


class Chain:
    """A lecture's Sequential: it keeps its output too, the same tensor as its last layer's `out`."""

    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        self.out = x
        return self.out


def test_a_tensor_kept_in_two_attributes_is_the_same_tensor_in_both_after_a_replay():
    def run(replay):
        tinyattn.manual_seed(3)
        W = tinyattn.randn(4, 3, requires_grad=True)
        chain = Chain([Layer(W)])

        def step(x):
            loss = chain(x).sum()
            W.grad = None
            loss.backward()
            with tinyattn.no_grad():
                W.sub_(0.1 * W.grad)
            return loss

        step = tinyattn.replayed(step, strict=True) if replay else step
        seen = []
        for i in range(5):
            step(tinyattn.full((2, 4), float(i)))
            assert chain.out is chain.layers[0].out
            seen.append(bits(chain.out))
        assert not replay or step.state == "replay"
        return seen

    for got, expected in zip(run(True), run(False)):
        assert_same_bits(got, expected)


def test_a_running_mean_replaced_by_a_new_tensor_in_the_step_runs_as_usual():
    step, tensors, layers = layered(in_place=False)()
    x = tinyattn.randn(5, 4)
    wrapper = tinyattn.replayed(step)
    with pytest.warns(RuntimeWarning, match="replaced by a new tensor .*self.running_mean = "):
        for _ in range(3):
            wrapper(x)
    assert wrapper.state == "eager"

