"""A tensor changed in place after an op used it: backward raises exactly where PyTorch's raises.

For each op below, each of its inputs and each of its outputs in turn is changed in place after the
forward (a float tensor doubled, an index tensor or a mask reversed), then a weighted sum of the
outputs is backpropagated in both libraries. Both must raise ("modified by an inplace operation") or
neither; where neither does, the gradients must agree. An op that saves too little gives a silent
wrong gradient here; one that saves more than PyTorch (its output where PyTorch keeps its input, say)
raises where PyTorch works.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tinyattn

torch = pytest.importorskip("torch")


class F:
    """A float64 input: a leaf that requires grad, given to the op as `leaf * 1` (which may be changed
    in place, as a leaf that requires grad may not)."""

    def __init__(self, *shape, positive=False):
        self.shape, self.positive = shape, positive

    def make(self, rng):
        values = rng.uniform(0.5, 2.0, self.shape) if self.positive else rng.uniform(-2.0, 2.0, self.shape)
        return values.astype(np.float64)


class I:  # noqa: E742  (an index tensor, int64 in [0, high))
    def __init__(self, *shape, high):
        self.shape, self.high = shape, high

    def make(self, rng):
        return rng.integers(0, self.high, self.shape).astype(np.int64)


class B:
    """A bool mask with at least one True."""

    def __init__(self, *shape):
        self.shape = shape

    def make(self, rng):
        mask = rng.uniform(size=self.shape) < 0.5
        mask.flat[0] = True
        return mask


def written(x, key, value):
    x[key] = value
    return x


def exp_function(L):
    """The Exp of PyTorch's docs: a Function that saves its output."""

    class Exp(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = x.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad):
            (result,) = ctx.saved_tensors
            return grad * result

    return Exp


def square_function(L):
    """A Function that saves its input."""

    class Square(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    return Square


def lstm(L):
    return L.nn.LSTM(3, 4)


def gru(L):
    return L.nn.GRU(3, 4, batch_first=True)


def linear_layer(L):
    return L.nn.Linear(3, 2)


# (name, inputs, op, number of outputs, module or None). The op takes the library, (the module,) the inputs.
CASES = [
    # elementwise
    ("add", [F(3, 4), F(4)], lambda L, x, y: x + y, 1, None),
    ("sub", [F(3, 4), F(3, 4)], lambda L, x, y: x - y, 1, None),
    ("mul", [F(3, 4), F(3, 1)], lambda L, x, y: x * y, 1, None),
    ("mul by number", [F(3, 4)], lambda L, x: x * 3, 1, None),
    ("div", [F(3, 4), F(3, 4, positive=True)], lambda L, x, y: x / y, 1, None),
    ("neg", [F(3, 4)], lambda L, x: -x, 1, None),
    ("exp", [F(3, 4)], lambda L, x: x.exp(), 1, None),
    ("log", [F(3, 4, positive=True)], lambda L, x: x.log(), 1, None),
    ("sqrt", [F(3, 4, positive=True)], lambda L, x: x.sqrt(), 1, None),
    ("rsqrt", [F(3, 4, positive=True)], lambda L, x: x.rsqrt(), 1, None),
    ("tanh", [F(3, 4)], lambda L, x: x.tanh(), 1, None),
    ("sigmoid", [F(3, 4)], lambda L, x: x.sigmoid(), 1, None),
    ("relu", [F(3, 4)], lambda L, x: x.relu(), 1, None),
    ("sin", [F(3, 4)], lambda L, x: x.sin(), 1, None),
    ("cos", [F(3, 4)], lambda L, x: x.cos(), 1, None),
    ("abs", [F(3, 4)], lambda L, x: x.abs(), 1, None),
    ("reciprocal", [F(3, 4, positive=True)], lambda L, x: x.reciprocal(), 1, None),
    ("expm1", [F(3, 4)], lambda L, x: x.expm1(), 1, None),
    ("log1p", [F(3, 4, positive=True)], lambda L, x: x.log1p(), 1, None),
    ("pow 2", [F(3, 4)], lambda L, x: x**2, 1, None),
    ("pow 3", [F(3, 4)], lambda L, x: x**3, 1, None),
    ("pow -2", [F(3, 4, positive=True)], lambda L, x: x**-2, 1, None),
    ("pow 0.5", [F(3, 4, positive=True)], lambda L, x: x**0.5, 1, None),
    ("pow 1.5", [F(3, 4, positive=True)], lambda L, x: x**1.5, 1, None),
    ("pow tensor", [F(3, 4, positive=True), F(3, 4)], lambda L, x, y: x**y, 1, None),
    ("number ** tensor", [F(3, 4)], lambda L, x: 2**x, 1, None),
    ("clamp", [F(3, 4)], lambda L, x: x.clamp(-0.5, 0.5), 1, None),
    ("clamp min", [F(3, 4)], lambda L, x: x.clamp(min=0.0), 1, None),
    ("maximum", [F(3, 4), F(3, 4)], lambda L, x, y: L.maximum(x, y), 1, None),
    ("where", [B(3, 4), F(3, 4), F(3, 4)], lambda L, m, x, y: L.where(m, x, y), 1, None),
    ("masked_fill", [F(3, 4), B(3, 4)], lambda L, x, m: x.masked_fill(m, 0.0), 1, None),
    ("gelu", [F(3, 4)], lambda L, x: L.nn.functional.gelu(x), 1, None),
    ("gelu tanh", [F(3, 4)], lambda L, x: L.nn.functional.gelu(x, approximate="tanh"), 1, None),
    ("silu", [F(3, 4)], lambda L, x: L.nn.functional.silu(x), 1, None),
    ("leaky_relu", [F(3, 4)], lambda L, x: L.nn.functional.leaky_relu(x, 0.1), 1, None),
    ("elu", [F(3, 4)], lambda L, x: L.nn.functional.elu(x), 1, None),
    ("softplus", [F(3, 4)], lambda L, x: L.nn.functional.softplus(x), 1, None),
    # reductions
    ("sum", [F(3, 4)], lambda L, x: x.sum(), 1, None),
    ("sum dim", [F(3, 4)], lambda L, x: x.sum(1), 1, None),
    ("mean", [F(3, 4)], lambda L, x: x.mean(), 1, None),
    ("max", [F(3, 4)], lambda L, x: x.max(), 1, None),
    ("max dim", [F(3, 4)], lambda L, x: tuple(x.max(1)), 2, None),
    ("min dim", [F(3, 4)], lambda L, x: tuple(x.min(0)), 2, None),
    ("amax", [F(3, 4)], lambda L, x: x.amax(1), 1, None),
    ("var", [F(3, 4)], lambda L, x: x.var(), 1, None),
    ("std dim", [F(3, 4)], lambda L, x: x.std(1), 1, None),
    ("prod dim", [F(3, 4)], lambda L, x: x.prod(1), 1, None),
    ("norm", [F(3, 4)], lambda L, x: x.norm(), 1, None),
    ("norm dim", [F(3, 4)], lambda L, x: x.norm(dim=1), 1, None),
    ("logsumexp", [F(3, 4)], lambda L, x: x.logsumexp(1), 1, None),
    ("cumsum", [F(3, 4)], lambda L, x: x.cumsum(1), 1, None),
    ("softmax", [F(3, 4)], lambda L, x: x.softmax(1), 1, None),
    ("log_softmax", [F(3, 4)], lambda L, x: x.log_softmax(1), 1, None),
    # shapes and views
    ("reshape", [F(3, 4)], lambda L, x: x.reshape(4, 3), 1, None),
    ("transpose", [F(3, 4)], lambda L, x: x.t(), 1, None),
    ("slice", [F(3, 4)], lambda L, x: x[1:3], 1, None),
    ("select", [F(3, 4)], lambda L, x: x[1], 1, None),
    ("cat", [F(3, 4), F(2, 4)], lambda L, x, y: L.cat([x, y]), 1, None),
    ("stack", [F(3, 4), F(3, 4)], lambda L, x, y: L.stack([x, y]), 1, None),
    # products
    ("matmul", [F(3, 4), F(4, 2)], lambda L, x, y: x @ y, 1, None),
    ("matmul vector", [F(3, 4), F(4)], lambda L, x, y: x @ y, 1, None),
    ("bmm", [F(2, 3, 4), F(2, 4, 5)], lambda L, x, y: L.bmm(x, y), 1, None),
    ("linear", [F(2, 3), F(4, 3), F(4)], lambda L, x, w, b: L.nn.functional.linear(x, w, b), 1, None),
    ("nn.Linear", [F(4, 3)], lambda L, m, x: m(x), 1, linear_layer),
    # indexing
    ("index tensor", [F(5, 4), I(3, high=5)], lambda L, x, i: x[i], 1, None),
    ("index tensor in dim 1", [F(3, 4), I(3, high=4)], lambda L, x, i: x[:, i], 1, None),
    ("index two tensors", [F(3, 4), I(2, high=3), I(2, high=4)], lambda L, x, i, j: x[i, j], 1, None),
    ("bool mask", [F(3, 4), B(3, 4)], lambda L, x, m: x[m], 1, None),
    ("bool mask of rows", [F(3, 4), B(3)], lambda L, x, m: x[m], 1, None),
    ("index_select", [F(5, 3), I(4, high=5)], lambda L, x, i: x.index_select(0, i), 1, None),
    ("gather", [F(3, 4), I(3, 2, high=4)], lambda L, x, i: x.gather(1, i), 1, None),
    ("masked_select", [F(3, 4), B(3, 4)], lambda L, x, m: x.masked_select(m), 1, None),
    ("embedding", [I(5, high=6), F(6, 3)], lambda L, i, w: L.nn.functional.embedding(i, w), 1, None),
    # layers and losses
    ("layer_norm", [F(3, 4), F(4), F(4)], lambda L, x, w, b: L.nn.functional.layer_norm(x, (4,), w, b), 1, None),
    ("layer_norm plain", [F(3, 4)], lambda L, x: L.nn.functional.layer_norm(x, (4,)), 1, None),
    ("cross_entropy", [F(3, 5), I(3, high=5)], lambda L, x, t: L.nn.functional.cross_entropy(x, t), 1, None),
    ("cross_entropy 1-d", [F(5), I(high=5)], lambda L, x, t: L.nn.functional.cross_entropy(x, t), 1, None),
    ("cross_entropy ignore_index", [F(4, 3), I(4, high=3)],
     lambda L, x, t: L.nn.functional.cross_entropy(x, t, ignore_index=1), 1, None),
    ("logsumexp 0-d", [F()], lambda L, x: x.logsumexp(0), 1, None),
    ("amax 0-d", [F()], lambda L, x: x.amax(), 1, None),
    ("norm 0-d", [F()], lambda L, x: x.norm(), 1, None),
    ("prod 0-d", [F()], lambda L, x: x.prod(), 1, None),
    ("cross_entropy sum", [F(3, 5), I(3, high=5)],
     lambda L, x, t: L.nn.functional.cross_entropy(x, t, reduction="sum"), 1, None),
    ("nll_loss", [F(3, 5), I(3, high=5)], lambda L, x, t: L.nn.functional.nll_loss(x, t), 1, None),
    ("mse_loss", [F(3, 4), F(3, 4)], lambda L, x, y: L.nn.functional.mse_loss(x, y), 1, None),
    ("conv2d", [F(1, 2, 5, 5), F(3, 2, 3, 3), F(3)], lambda L, x, w, b: L.nn.functional.conv2d(x, w, b), 1, None),
    ("max_pool2d", [F(1, 2, 4, 4)], lambda L, x: L.nn.functional.max_pool2d(x, 2), 1, None),
    ("avg_pool2d", [F(1, 2, 4, 4)], lambda L, x: L.nn.functional.avg_pool2d(x, 2), 1, None),
    ("adaptive_avg_pool2d", [F(1, 2, 4, 4)], lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, (2, 2)), 1, None),
    ("attention", [F(2, 3, 4), F(2, 3, 4), F(2, 3, 4)],
     lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v), 1, None),
    ("causal attention", [F(2, 3, 4), F(2, 3, 4), F(2, 3, 4)],
     lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True), 1, None),
    ("conv1d", [F(2, 2, 6), F(3, 2, 3)], lambda L, x, w: L.nn.functional.conv1d(x, w), 1, None),
    ("conv_transpose2d", [F(1, 2, 3, 3), F(2, 3, 2, 2)],
     lambda L, x, w: L.nn.functional.conv_transpose2d(x, w), 1, None),
    ("max_pool2d with indices", [F(1, 2, 4, 4)],
     lambda L, x: tuple(L.nn.functional.max_pool2d(x, 2, return_indices=True)), 2, None),
    ("group_norm", [F(2, 4, 3), F(4), F(4)], lambda L, x, w, b: L.nn.functional.group_norm(x, 2, w, b), 1, None),
    ("batch_norm", [F(4, 3), F(3), F(3)],
     lambda L, x, w, b: L.nn.functional.batch_norm(x, None, None, w, b, training=True), 1, None),
    ("normalize", [F(3, 4)], lambda L, x: L.nn.functional.normalize(x, dim=1), 1, None),
    ("binary_cross_entropy", [F(3, 4, positive=True), F(3, 4, positive=True)],
     lambda L, x, t: L.nn.functional.binary_cross_entropy(x / 3, t / 3), 1, None),
    ("sort", [F(3, 4)], lambda L, x: tuple(x.sort(1)), 2, None),
    ("topk", [F(3, 4)], lambda L, x: tuple(x.topk(2, 1)), 2, None),
    ("cumprod", [F(3, 4)], lambda L, x: x.cumprod(1), 1, None),
    ("scatter_add", [F(3, 4), I(3, 2, high=4), F(3, 2)], lambda L, x, i, v: x.scatter_add(1, i, v), 1, None),
    ("scatter", [F(3, 4), I(3, 2, high=4), F(3, 2)], lambda L, x, i, v: x.scatter(1, i, v), 1, None),
    ("setitem", [F(5, 3), I(2, high=5), F(3)], lambda L, x, i, v: written(x.clone(), i, v), 1, None),
    ("index_add", [F(5, 3), I(2, high=5), F(2, 3)], lambda L, x, i, v: x.index_add(0, i, v), 1, None),
    ("exp in place", [F(3, 4)], lambda L, x: x.clone().exp_(), 1, None),
    ("relu in place", [F(3, 4)], lambda L, x: x.clone().relu_(), 1, None),
    ("mul in place", [F(3, 4), F(3, 4)], lambda L, x, y: x.clone().mul_(y), 1, None),
    ("sigmoid in place", [F(3, 4)], lambda L, x: x.clone().sigmoid_(), 1, None),
    ("pow in place", [F(3, 4)], lambda L, x: x.clone().pow_(2), 1, None),
    ("sqrt in place", [F(3, 4, positive=True)], lambda L, x: x.clone().sqrt_(), 1, None),
    ("clamp in place", [F(3, 4)], lambda L, x: x.clone().clamp_(-0.5, 0.5), 1, None),
    ("leaky_relu in place", [F(3, 4)], lambda L, x: L.nn.functional.leaky_relu(x.clone(), 0.1, inplace=True), 1, None),
    ("masked_fill in place", [F(3, 4), B(3, 4)], lambda L, x, m: x.clone().masked_fill_(m, 0.5), 1, None),
    ("custom Exp", [F(3, 4)], lambda L, x: exp_function(L).apply(x), 1, None),
    ("custom Square", [F(3, 4)], lambda L, x: square_function(L).apply(x), 1, None),
    ("nn.LSTM", [F(5, 2, 3)], lambda L, m, x: (lambda y, s: (y, *s))(*m(x)), 3, lstm),
    ("nn.GRU", [F(2, 5, 3)], lambda L, m, x: m(x), 2, gru),
]


def targets():
    """(case, what is changed in place): each input, then each output."""
    for case in CASES:
        name, inputs, _, outputs, _ = case
        for i in range(len(inputs)):
            yield pytest.param(case, ("input", i), id=f"{name}-input{i}")
        for i in range(outputs):
            yield pytest.param(case, ("output", i), id=f"{name}-output{i}")


def change_in_place(L, t):
    """Doubled (a float tensor) or reversed (an index tensor, a mask): new numbers, the next version."""
    if t.dtype.is_floating_point:
        t.mul_(2)
    else:
        t.copy_(t.flip(tuple(range(t.ndim))))


def run(L, case, target, data, weights, state):
    """Forward, the change in place, backward: "raises" (an inplace error) or the leaves' gradients."""
    name, specs, op, _, make_module = case
    leaves, inputs = [], []
    for spec, values in zip(specs, data):
        t = L.tensor(values)
        if isinstance(spec, F):
            t.requires_grad_(True)
            leaves.append(t)
            t = t * 1
        inputs.append(t)
    args = inputs
    if make_module is not None:
        module = make_module(L).double()
        if state is not None:
            module.load_state_dict({k: L.tensor(v) for k, v in state.items()})
        leaves += list(module.parameters())
        args = [module] + inputs
    result = op(L, *args)
    outputs = list(result) if isinstance(result, tuple) else [result]
    kind, index = target
    try:
        change_in_place(L, inputs[index] if kind == "input" else outputs[index])
        loss = sum((o * L.tensor(w)).sum() for o, w in zip(outputs, weights) if o.dtype.is_floating_point)
        loss.backward()
    except RuntimeError as error:
        if "modified by an inplace operation" in str(error):
            return "raises", str(error)
        raise
    return [None if t.grad is None else t.grad.detach().numpy().copy() for t in leaves], None


@pytest.mark.parametrize("case, target", list(targets()))
@settings(max_examples=5)  # whether backward raises does not depend on the numbers; 5 draws check the gradients
@given(seed=st.integers(0, 2**16))
def test_backward_raises_where_pytorch_raises(case, target, seed):
    name, specs, op, _, make_module = case
    rng = np.random.default_rng(seed)
    data = [spec.make(rng) for spec in specs]
    state = None
    if make_module is not None:
        torch.manual_seed(seed)
        state = {k: v.detach().double().numpy() for k, v in make_module(torch).state_dict().items()}
    # the weights of the loss: one array per output, of its shape (taken from a plain forward)
    with torch.no_grad():
        probe = op(torch, *([make_module(torch).double()] if make_module else []),
                   *[torch.tensor(d) for d in data])
    outputs = list(probe) if isinstance(probe, tuple) else [probe]
    weights = [rng.uniform(-1, 1, tuple(o.shape)) for o in outputs]

    theirs, their_message = run(torch, case, target, data, weights, state)
    ours, our_message = run(tinyattn, case, target, data, weights, state)
    assert (ours == "raises") == (theirs == "raises"), (
        f"{name}, {target[0]} {target[1]} changed in place: PyTorch "
        f"{'raises' if theirs == 'raises' else 'works'} ({their_message}), tinyattn "
        f"{'raises' if ours == 'raises' else 'works'} ({our_message})"
    )
    if ours == "raises":
        return
    for mine, reference in zip(ours, theirs):
        assert (mine is None) == (reference is None)
        if mine is not None:
            np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=1e-12, err_msg=name)


def layer_case(make, x):
    """A layer, its output's weighted sum, a step of SGD between two backwards of it: the step changes
    the parameters in place, so the second backward raises where the layer saved a parameter."""

    def run(L):
        L.manual_seed(0)
        layer = make(L)
        optimizer = L.optim.SGD(layer.parameters(), lr=0.1)
        out = layer(x(L))
        out = out[0] if isinstance(out, tuple) else out  # (a recurrent layer's output, not its state)
        loss = (out * L.linspace(-1, 1, out.numel()).reshape(out.shape)).sum()
        loss.backward(retain_graph=True)
        optimizer.step()
        try:
            loss.backward()
        except RuntimeError as error:
            assert "modified by an inplace operation" in str(error)
            return "raises"
        return "works"

    return run


@pytest.mark.parametrize("name, run", [
    ("Linear", layer_case(lambda L: L.nn.Linear(3, 2), lambda L: L.randn(4, 3))),
    ("Conv2d", layer_case(lambda L: L.nn.Conv2d(1, 2, 3), lambda L: L.randn(1, 1, 4, 4))),
    ("LayerNorm", layer_case(lambda L: L.nn.LayerNorm(3), lambda L: L.randn(4, 3))),
    ("Embedding", layer_case(lambda L: L.nn.Embedding(5, 3), lambda L: L.tensor([1, 2, 1]))),
    ("LSTM", layer_case(lambda L: L.nn.LSTM(3, 2), lambda L: L.randn(4, 1, 3))),
])
def test_a_parameter_update_between_forward_and_backward(name, run):
    assert run(tinyattn) == run(torch), name


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss", "mse_loss"])
def test_a_loss_divided_in_place_before_backward(loss):
    """`loss /= accumulation_steps` (gradient accumulation): works, as in PyTorch, and scales the gradient."""
    grads = []
    for L in (tinyattn, torch):
        x = L.tensor(np.linspace(-1, 1, 12).reshape(4, 3), requires_grad=True)
        if loss == "mse_loss":
            value = L.nn.functional.mse_loss(x, L.zeros(4, 3, dtype=x.dtype))
        else:
            value = getattr(L.nn.functional, loss)(x, L.tensor([0, 2, 1, 2]))
        value /= 4
        value.backward()
        grads.append(x.grad.detach().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
