"""nn.RNN / nn.LSTM / nn.GRU, their cells and nn.utils.rnn: against PyTorch and finite differences.

Parity: at the same seed both libraries draw the same weights (bit for bit); the outputs, final states
and the gradients of every input and parameter agree to float32 rounding, over every layer kind x
num_layers x bidirectional x batch_first x with or without h0 x batched or not, for packed batches,
and with dropout between layers in train mode. Gradient checks: float64, central differences, sizes
drawn by Hypothesis.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tinyattn
from tinyattn import gradcheck
from tinyattn.nn.utils import rnn as trnn

RTOL, ATOL = 1e-4, 1e-5

KINDS = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {})]
KIND_IDS = ["RNN-tanh", "RNN-relu", "LSTM", "GRU"]


def host(t):
    return t.detach().numpy() if t is not None else None


def assert_close(ours, theirs, what):
    assert ours is not None and theirs is not None, f"{what}: a gradient is missing ({ours is None}, {theirs is None})"
    ours, theirs = host(ours), host(theirs)
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, PyTorch's {theirs.shape}"
    np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL, err_msg=what)


def build(L, kind, seed, *args, **kwargs):
    L.manual_seed(seed)
    return getattr(L.nn, kind)(*args, **kwargs)


def flatten(result):
    """(output, h_n) or (output, (h_n, c_n)) -> [output, h_n(, c_n)]."""
    output, state = result
    return [output, *(state if isinstance(state, tuple) else (state,))]


def weighted_sum(L, tensors, rng):
    """A loss whose gradient is not all ones: sum of each tensor times fixed random weights."""
    total = 0
    for t in tensors:
        total = total + (t * L.tensor(rng.uniform(-1, 1, tuple(t.shape)).astype(np.float32))).sum()
    return total


def run(L, layer, x, states, loss_seed=0):
    """Forward, then backward of a weighted sum of everything it returns; the tensors to compare."""
    x = L.tensor(x, requires_grad=True)
    states = [L.tensor(s, requires_grad=True) for s in states]
    hx = None if not states else states[0] if len(states) == 1 else tuple(states)
    results = flatten(layer(x, hx) if hx is not None else layer(x))
    weighted_sum(L, results, np.random.default_rng(loss_seed)).backward()
    grads = [x.grad, *(s.grad for s in states)] + [p.grad for _, p in layer.named_parameters()]
    return results, grads


def compare_layers(torch, kind, options, x, states, train=False, forward_seed=None):
    theirs = build(torch, kind, 7, **options)
    ours = build(tinyattn, kind, 7, **options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (name, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert np.array_equal(host(a), host(b)), f"{name}: tinyattn drew other weights than PyTorch"
    ours.train(train)
    theirs.train(train)
    if forward_seed is not None:
        torch.manual_seed(forward_seed)
    their_results, their_grads = run(torch, theirs, x, states)
    if forward_seed is not None:
        tinyattn.manual_seed(forward_seed)
    our_results, our_grads = run(tinyattn, ours, x, states)
    for i, (a, b) in enumerate(zip(our_results, their_results, strict=True)):
        assert_close(a, b, f"result {i}")
    names = ["input"] + [f"state {i}" for i in range(len(states))] + [n for n, _ in theirs.named_parameters()]
    for name, a, b in zip(names, our_grads, their_grads, strict=True):
        assert_close(a, b, f"gradient of {name}")


@pytest.mark.parametrize(("kind", "extra"), KINDS, ids=KIND_IDS)
@pytest.mark.parametrize(("num_layers", "bidirectional", "batch_first", "with_h0", "batched"),
                         list(itertools.product([1, 2], [False, True], [False, True], [False, True], [True, False])))
def test_layer_matches_pytorch(torch, kind, extra, num_layers, bidirectional, batch_first, with_h0, batched):
    steps, batch, input_size, hidden = 5, 3, 4, 6
    rng = np.random.default_rng(num_layers * 16 + bidirectional * 8 + batch_first * 4 + with_h0 * 2 + batched)
    shape = ((batch, steps) if batch_first else (steps, batch)) if batched else (steps,)
    x = rng.standard_normal((*shape, input_size)).astype(np.float32)
    stacked = num_layers * (2 if bidirectional else 1)
    state_shape = (stacked, batch, hidden) if batched else (stacked, hidden)
    states = [rng.standard_normal(state_shape).astype(np.float32) for _ in range(2 if kind == "LSTM" else 1)]
    options = dict(input_size=input_size, hidden_size=hidden, num_layers=num_layers, bidirectional=bidirectional,
                   batch_first=batch_first, **extra)
    compare_layers(torch, kind, options, x, states if with_h0 else [])


@pytest.mark.parametrize(("kind", "extra"), KINDS, ids=KIND_IDS)
def test_layer_without_bias_matches_pytorch(torch, kind, extra):
    x = np.random.default_rng(1).standard_normal((4, 2, 3)).astype(np.float32)
    compare_layers(torch, kind, dict(input_size=3, hidden_size=5, num_layers=2, bias=False, **extra), x, [])


@pytest.mark.parametrize(("bidirectional", "with_h0", "bias"), [(False, False, True), (True, True, True),
                                                                 (True, False, False)])
def test_lstm_with_projection_matches_pytorch(torch, bidirectional, with_h0, bias):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 2, 4)).astype(np.float32)
    stacked = 2 * (2 if bidirectional else 1)
    states = [rng.standard_normal((stacked, 2, 3)).astype(np.float32),
              rng.standard_normal((stacked, 2, 6)).astype(np.float32)]
    options = dict(input_size=4, hidden_size=6, num_layers=2, bidirectional=bidirectional, proj_size=3, bias=bias)
    compare_layers(torch, "LSTM", options, x, states if with_h0 else [])


@pytest.mark.parametrize(("kind", "extra"), KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_dropout_between_layers_matches_pytorch(torch, kind, extra, bidirectional):
    """In train mode the masks come from the same stream as PyTorch's, so the same seed drops the same."""
    x = np.random.default_rng(3).standard_normal((4, 3, 5)).astype(np.float32)
    options = dict(input_size=5, hidden_size=6, num_layers=3, dropout=0.4, bidirectional=bidirectional, **extra)
    compare_layers(torch, kind, options, x, [], train=True, forward_seed=11)


@pytest.mark.parametrize(("kind", "extra"), KINDS, ids=KIND_IDS)
def test_dropout_is_off_in_eval_mode(kind, extra):
    layer = build(tinyattn, kind, 0, 3, 4, num_layers=2, dropout=0.5)
    x = tinyattn.randn(5, 2, 3)
    layer.eval()
    first = flatten(layer(x))[0]
    again = flatten(layer(x))[0]
    assert np.array_equal(host(first), host(again))
    layer.train()
    tinyattn.manual_seed(0)
    trained = flatten(layer(x))[0]
    assert not np.array_equal(host(first), host(trained)), "dropout in train mode changed nothing"


# ---------------------------------------------------------------------------------------------
# the cells


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {})]


@pytest.mark.parametrize(("kind", "extra"), CELLS, ids=["RNNCell-tanh", "RNNCell-relu", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize(("with_hx", "batched", "bias"), list(itertools.product([False, True], [True, False],
                                                                                 [True, False])))
def test_cell_matches_pytorch(torch, kind, extra, with_hx, batched, bias):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4) if batched else (4,)).astype(np.float32)
    states = [rng.standard_normal((3, 5) if batched else (5,)).astype(np.float32)
              for _ in range(2 if kind == "LSTMCell" else 1)]
    results = []
    for L in (tinyattn, torch):
        cell = build(L, kind, 9, 4, 5, bias=bias, **extra)
        xt = L.tensor(x, requires_grad=True)
        st_ = [L.tensor(s, requires_grad=True) for s in states] if with_hx else []
        hx = None if not st_ else st_[0] if len(st_) == 1 else tuple(st_)
        out = cell(xt, hx)
        outs = list(out) if isinstance(out, tuple) else [out]
        weighted_sum(L, outs, np.random.default_rng(0)).backward()
        grads = [xt.grad, *(s.grad for s in st_)] + [p.grad for _, p in cell.named_parameters()]
        results.append((cell.state_dict(), outs, grads))
    (ours, *our_results), (theirs, *their_results) = results
    assert list(ours) == list(theirs)
    assert all(np.array_equal(host(ours[k]), host(theirs[k])) for k in theirs)
    assert_same_results(our_results, their_results)


def assert_same_results(ours, theirs):
    """(results, gradients) of one library against the other's."""
    for what, a_list, b_list in zip(("result", "gradient"), ours, theirs):
        for i, (a, b) in enumerate(zip(a_list, b_list, strict=True)):
            assert_close(a, b, f"{what} {i}")


def test_cells_unrolled_equal_the_layer():
    """An LSTMCell run step by step with an LSTM's weights gives the LSTM's output: the same recurrence."""
    layer = build(tinyattn, "LSTM", 0, 3, 4)
    cell = tinyattn.nn.LSTMCell(3, 4)
    cell.load_state_dict({k.removesuffix("_l0"): v for k, v in layer.state_dict().items()})
    x = tinyattn.randn(6, 2, 3)
    output, (h_n, c_n) = layer(x)
    h = c = tinyattn.zeros(2, 4)
    for t in range(6):
        h, c = cell(x[t], (h, c))
        np.testing.assert_allclose(host(h), host(output[t]), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(host(c), host(c_n[0]), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# state_dict both ways, and the module's surface


@pytest.mark.parametrize(("kind", "extra"), KINDS + [("LSTM", {"proj_size": 2})],
                         ids=[*KIND_IDS, "LSTM-proj"])
def test_state_dict_loads_both_ways(torch, kind, extra):
    theirs = build(torch, kind, 1, 3, 4, num_layers=2, bidirectional=True, **extra)
    ours = build(tinyattn, kind, 2, 3, 4, num_layers=2, bidirectional=True, **extra)  # other weights
    ours.load_state_dict({k: tinyattn.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)
    for a, b in zip(flatten(ours(tinyattn.tensor(x))), flatten(theirs(torch.tensor(x))), strict=True):
        assert_close(a, b, "output after loading PyTorch's state_dict")
    back = build(torch, kind, 3, 3, 4, num_layers=2, bidirectional=True, **extra)
    back.load_state_dict({k: torch.tensor(host(v)) for k, v in ours.state_dict().items()})
    for k, v in theirs.state_dict().items():
        assert torch.equal(back.state_dict()[k], v)


def test_names_shapes_and_repr_are_pytorchs(torch):
    for kind, args, kwargs in [("LSTM", (3, 4, 2), dict(bidirectional=True, proj_size=2, batch_first=True,
                                                         dropout=0.1)),
                               ("GRU", (3, 4), dict(bias=False)), ("RNN", (3, 4, 1, "relu"), {}),
                               ("RNNCell", (3, 4), dict(nonlinearity="relu")), ("LSTMCell", (3, 4), {}),
                               ("GRUCell", (3, 4, False), {})]:
        ours, theirs = build(tinyattn, kind, 0, *args, **kwargs), build(torch, kind, 0, *args, **kwargs)
        assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == \
            [(n, tuple(p.shape)) for n, p in theirs.named_parameters()]
        assert repr(ours) == repr(theirs)
    lstm = tinyattn.nn.LSTM(3, 4, 2)
    assert lstm.flatten_parameters() is None
    assert [[tuple(p.shape) for p in ws] for ws in lstm.all_weights] == [[(16, 3), (16, 4), (16,), (16,)],
                                                                          [(16, 4), (16, 4), (16,), (16,)]]


def test_double_precision_layers(torch):
    x = np.random.default_rng(0).standard_normal((3, 2, 2))
    ours = build(tinyattn, "GRU", 0, 2, 3, dtype=tinyattn.float64)
    theirs = build(torch, "GRU", 0, 2, 3, dtype=torch.float64)
    out_a, h_a = ours(tinyattn.tensor(x))
    out_b, h_b = theirs(torch.tensor(x))
    assert out_a.dtype == tinyattn.float64
    np.testing.assert_allclose(host(out_a), host(out_b), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# padded and packed sequences


def sequences(L, lengths, features=3, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [L.tensor(rng.standard_normal((n, features)).astype(dtype), requires_grad=True) for n in lengths]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_pytorch(torch, batch_first, padding_side):
    outs = []
    for L in (tinyattn, torch):
        seqs = sequences(L, [2, 5, 1, 5])
        padded = L.nn.utils.rnn.pad_sequence(seqs, batch_first=batch_first, padding_value=-1.5,
                                             padding_side=padding_side)
        weighted_sum(L, [padded], np.random.default_rng(0)).backward()
        outs.append([padded, *(s.grad for s in seqs)])
    for i, (a, b) in enumerate(zip(*outs, strict=True)):
        assert_close(a, b, f"pad_sequence result {i}")
    ids = [torch.tensor([3, 1, 2]), torch.tensor([7])]
    ours = tinyattn.nn.utils.rnn.pad_sequence([tinyattn.tensor(i.numpy()) for i in ids], batch_first=True)
    theirs = torch.nn.utils.rnn.pad_sequence(ids, batch_first=True)
    assert ours.dtype == tinyattn.int64 and np.array_equal(host(ours), theirs.numpy())


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize(("lengths", "enforce_sorted"), [([5, 3, 3, 1], True), ([2, 5, 2, 4], False),
                                                         ([1, 1, 1], False), ([4], True)])
def test_packing_matches_pytorch(torch, batch_first, lengths, enforce_sorted):
    results = []
    for L in (tinyattn, torch):
        seqs = sequences(L, lengths, seed=len(lengths))
        padded = L.nn.utils.rnn.pad_sequence(seqs, batch_first=batch_first)
        given_lengths = L.tensor(lengths) if batch_first else lengths  # a list or a tensor, as PyTorch takes
        packed = L.nn.utils.rnn.pack_padded_sequence(padded, given_lengths, batch_first=batch_first,
                                                     enforce_sorted=enforce_sorted)
        unpacked, out_lengths = L.nn.utils.rnn.pad_packed_sequence(packed, batch_first=batch_first,
                                                                    padding_value=9.0, total_length=6)
        weighted_sum(L, [unpacked], np.random.default_rng(0)).backward()
        indices = [packed.sorted_indices, packed.unsorted_indices]
        results.append((packed.data, packed.batch_sizes, indices, unpacked, out_lengths, [s.grad for s in seqs]))
    ours, theirs = results
    assert_close(ours[0], theirs[0], "packed data")
    for i, what in ((1, "batch_sizes"), (4, "lengths")):
        assert ours[i].dtype == tinyattn.int64 and np.array_equal(host(ours[i]), theirs[i].numpy()), what
    for a, b in zip(ours[2], theirs[2]):
        assert (a is None) == (b is None) and (a is None or np.array_equal(host(a), b.numpy()))
    assert_close(ours[3], theirs[3], "padded again")
    for i, (a, b) in enumerate(zip(ours[5], theirs[5])):
        assert_close(a, b, f"gradient of sequence {i}")


def test_pack_sequence_and_unpack_sequence_round_trip(torch):
    seqs = sequences(tinyattn, [2, 4, 1])
    packed = tinyattn.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)
    theirs = torch.nn.utils.rnn.pack_sequence([torch.tensor(host(s)) for s in seqs], enforce_sorted=False)
    assert np.array_equal(host(packed.data), theirs.data.numpy())
    back = tinyattn.nn.utils.rnn.unpack_sequence(packed)
    assert [np.array_equal(host(a), host(b)) for a, b in zip(back, seqs)] == [True] * 3
    assert isinstance(packed, tuple) and packed._fields == theirs._fields


@pytest.mark.parametrize(("kind", "extra"), KINDS + [("LSTM", {"proj_size": 2})], ids=[*KIND_IDS, "LSTM-proj"])
@pytest.mark.parametrize(("bidirectional", "with_h0", "enforce_sorted"),
                         [(False, False, True), (True, True, False), (True, False, False), (False, True, False)])
def test_layer_on_a_packed_batch_matches_pytorch(torch, kind, extra, bidirectional, with_h0, enforce_sorted):
    lengths = [5, 4, 2, 2, 1] if enforce_sorted else [2, 5, 1, 4, 2]
    stacked = 2 * (2 if bidirectional else 1)
    rng = np.random.default_rng(4)
    sizes = [extra.get("proj_size", 6), 6][:2 if kind == "LSTM" else 1]
    states = [rng.standard_normal((stacked, len(lengths), n)).astype(np.float32) for n in sizes]
    results = []
    for L in (tinyattn, torch):
        layer = build(L, kind, 5, 3, 6, num_layers=2, bidirectional=bidirectional, **extra)
        seqs = sequences(L, lengths, seed=8)
        packed = L.nn.utils.rnn.pack_padded_sequence(L.nn.utils.rnn.pad_sequence(seqs), lengths,
                                                     enforce_sorted=enforce_sorted)
        st_ = [L.tensor(s, requires_grad=True) for s in states] if with_h0 else []
        hx = None if not st_ else st_[0] if len(st_) == 1 else tuple(st_)
        output, state = layer(packed, hx)
        assert isinstance(output, L.nn.utils.rnn.PackedSequence)
        padded, _ = L.nn.utils.rnn.pad_packed_sequence(output)
        outs = [output.data, padded, *(state if isinstance(state, tuple) else (state,))]
        weighted_sum(L, outs, np.random.default_rng(1)).backward()
        grads = [*(s.grad for s in seqs), *(s.grad for s in st_)] + [p.grad for _, p in layer.named_parameters()]
        results.append((outs, grads))
    assert_same_results(*results)


def test_packed_final_state_is_each_sequences_last_real_step():
    """h_n of a packed batch equals h_n of each sequence run alone (padding never reaches it)."""
    layer = build(tinyattn, "GRU", 0, 3, 4)
    seqs = sequences(tinyattn, [3, 1, 4])
    packed = tinyattn.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)
    output, h_n = layer(packed)
    padded, lengths = tinyattn.nn.utils.rnn.pad_packed_sequence(output, batch_first=True)
    for b, seq in enumerate(seqs):
        alone, h_alone = layer(seq)
        np.testing.assert_allclose(host(h_n[:, b]), host(h_alone), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(host(padded[b, :len(seq)]), host(alone), rtol=1e-6, atol=1e-6)
        assert not np.any(host(padded[b, len(seq):])), "padding positions of the output are not zero"
    assert lengths.tolist() == [3, 1, 4]


# ---------------------------------------------------------------------------------------------
# gradient checks: float64, central differences


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(["RNN", "LSTM", "GRU", "RNN-relu", "LSTM-proj"]), num_layers=st.integers(1, 2),
       bidirectional=st.booleans(), steps=st.integers(1, 3), batch=st.integers(1, 2), seed=st.integers(0, 1000),
       packed=st.booleans())
def test_layer_gradients_against_finite_differences(kind, num_layers, bidirectional, steps, batch, seed, packed):
    extra = {"RNN-relu": {"nonlinearity": "relu"}, "LSTM-proj": {"proj_size": 1}}.get(kind, {})
    kind = kind.split("-")[0]
    layer = build(tinyattn, kind, seed, 2, 2, num_layers=num_layers, bidirectional=bidirectional,
                  dtype=tinyattn.float64, **extra)
    rng = np.random.default_rng(seed)
    x = tinyattn.tensor(rng.uniform(-1, 1, (steps, batch, 2)), requires_grad=True)
    stacked = num_layers * (2 if bidirectional else 1)
    sizes = [extra.get("proj_size", 2), 2][:2 if kind == "LSTM" else 1]
    states = [tinyattn.tensor(rng.uniform(-1, 1, (stacked, batch, n)), requires_grad=True) for n in sizes]
    lengths = sorted(rng.integers(1, steps + 1, batch).tolist(), reverse=True)

    def forward(x, *states_and_parameters):
        hx = states_and_parameters[:len(states)]
        hx = hx[0] if len(hx) == 1 else tuple(hx)
        if packed:
            output, state = layer(tinyattn.nn.utils.rnn.pack_padded_sequence(x, lengths), hx)
            output = output.data
        else:
            output, state = layer(x, hx)
        return (output, *(state if isinstance(state, tuple) else (state,)))

    # the parameters are checked in place: gradcheck perturbs the layer's own tensors
    assert gradcheck(forward, (x, *states, *layer.parameters()), eps=1e-6, atol=1e-6, rtol=1e-4)


@settings(max_examples=10, deadline=None)
@given(kind=st.sampled_from(["RNNCell", "LSTMCell", "GRUCell"]), batch=st.integers(1, 3), seed=st.integers(0, 1000),
       bias=st.booleans())
def test_cell_gradients_against_finite_differences(kind, batch, seed, bias):
    cell = build(tinyattn, kind, seed, 3, 2, bias=bias, dtype=tinyattn.float64)
    rng = np.random.default_rng(seed)
    x = tinyattn.tensor(rng.uniform(-1, 1, (batch, 3)), requires_grad=True)
    states = [tinyattn.tensor(rng.uniform(-1, 1, (batch, 2)), requires_grad=True)
              for _ in range(2 if kind == "LSTMCell" else 1)]

    def forward(x, *rest):
        out = cell(x, rest[0] if len(states) == 1 else tuple(rest[:2]))
        return out if isinstance(out, tuple) else (out,)

    assert gradcheck(forward, (x, *states, *cell.parameters()), eps=1e-6, atol=1e-6, rtol=1e-4)


@settings(max_examples=10, deadline=None)
@given(lengths=st.lists(st.integers(1, 3), min_size=1, max_size=3), batch_first=st.booleans(),
       enforce_sorted=st.booleans())
def test_packing_gradients_against_finite_differences(lengths, batch_first, enforce_sorted):
    if enforce_sorted:
        lengths = sorted(lengths, reverse=True)
    seqs = sequences(tinyattn, lengths, features=2, dtype=np.float64)

    def forward(*seqs):
        padded = trnn.pad_sequence(seqs, batch_first=batch_first, padding_value=0.5)
        packed = trnn.pack_padded_sequence(padded, lengths, batch_first, enforce_sorted)
        again, _ = trnn.pad_packed_sequence(packed, batch_first, padding_value=-2.0, total_length=4)
        return packed.data * packed.data, again

    assert gradcheck(forward, tuple(seqs))


# ---------------------------------------------------------------------------------------------
# clear errors


def raises(error, match, call, *args, **kwargs):
    with pytest.raises(error, match=match):
        call(*args, **kwargs)


def test_clear_errors_of_the_layers():
    nn = tinyattn.nn
    raises(ValueError, "Unknown nonlinearity 'sigmoid'", nn.RNN, 3, 4, nonlinearity="sigmoid")
    raises(ValueError, "Unknown nonlinearity", nn.RNNCell, 3, 4, nonlinearity="gelu")
    raises(ValueError, r"dropout should be a number in range \[0, 1\]", nn.LSTM, 3, 4, 2, dropout=1.5)
    raises(ValueError, "dropout should be", nn.GRU, 3, 4, 2, dropout=-0.1)
    raises(ValueError, "proj_size argument is only supported for LSTM", nn.GRU, 3, 4, proj_size=2)
    raises(ValueError, "proj_size has to be smaller than hidden_size", nn.LSTM, 3, 4, proj_size=4)
    raises(ValueError, "hidden_size must be greater than zero", nn.LSTM, 3, 0)
    raises(TypeError, "input_size should be of type int", nn.GRU, 3.0, 4)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.2)

    lstm = nn.LSTM(3, 4, num_layers=2)
    raises(tinyattn.ShapeError, r"Expected 3, got 5 \(input shape \[2, 1, 5\]\)", lstm, tinyattn.zeros(2, 1, 5))
    raises(ValueError, "Expected input to be 2D or 3D, got 4D", lstm, tinyattn.zeros(2, 1, 1, 3))
    h0, c0 = tinyattn.zeros(1, 1, 4), tinyattn.zeros(2, 1, 4)
    raises(tinyattn.ShapeError, r"Expected hidden\[0\] size \(2, 1, 4\).*got \[1, 1, 4\]", lstm,
           tinyattn.zeros(2, 1, 3), (h0, c0))
    raises(tinyattn.ShapeError, r"Expected hidden\[1\] size \(2, 3, 4\).*got \[2, 1, 4\]", lstm,
           tinyattn.zeros(2, 3, 3), (tinyattn.zeros(2, 3, 4), c0))
    raises(tinyattn.ShapeError, "for batched 3-D input, h_0 should be 3-D", lstm, tinyattn.zeros(2, 1, 3),
           (tinyattn.zeros(2, 4), c0))
    raises(TypeError, "hx must be a pair", lstm, tinyattn.zeros(2, 1, 3), tinyattn.zeros(2, 1, 4))
    raises(ValueError, "input dtype .* does not match weight dtype", lstm,
           tinyattn.zeros(2, 1, 3, dtype=tinyattn.float64))
    gru = nn.GRU(3, 4)
    raises(tinyattn.ShapeError, r"Expected hidden size \(1, 2, 4\).*got \[1, 3, 4\]", gru, tinyattn.zeros(5, 2, 3),
           tinyattn.zeros(1, 3, 4))
    raises(tinyattn.ShapeError, "unbatched 2-D input, h_0 should be 2-D", gru, tinyattn.zeros(5, 3),
           tinyattn.zeros(1, 1, 4))
    raises(TypeError, "must be a tinyattn tensor", gru, np.zeros((5, 2, 3), dtype=np.float32))
    raises(ValueError, r"Expected sequence length to be larger than 0 .*input shape \[0, 2, 3\]", gru,
           tinyattn.zeros(0, 2, 3))


def test_clear_errors_of_the_cells():
    cell = tinyattn.nn.GRUCell(3, 4)
    raises(tinyattn.ShapeError, "inconsistent input_size: got 2 expected 3", cell, tinyattn.zeros(2, 2))
    raises(tinyattn.ShapeError, r"hx has shape \[3, 4\] but the input of shape \[2, 3\] needs \[2, 4\]", cell,
           tinyattn.zeros(2, 3), tinyattn.zeros(3, 4))
    raises(ValueError, "Expected input to be 1D or 2D, got 3D", cell, tinyattn.zeros(1, 2, 3))
    lstm_cell = tinyattn.nn.LSTMCell(3, 4)
    raises(tinyattn.ShapeError, r"hx\[1\] has shape \[4\]", lstm_cell, tinyattn.zeros(2, 3),
           (tinyattn.zeros(2, 4), tinyattn.zeros(4)))
    raises(TypeError, "hx must be a pair", lstm_cell, tinyattn.zeros(2, 3), tinyattn.zeros(2, 4))


def test_clear_errors_of_packing():
    x = tinyattn.zeros(4, 3, 2)
    raises(ValueError, "must be sorted in decreasing order", trnn.pack_padded_sequence, x, [2, 4, 1])
    raises(ValueError, "Length of all samples has to be greater than 0", trnn.pack_padded_sequence, x, [3, 2, 0])
    raises(ValueError, r"Expected `len\(lengths\)` to be equal to batch_size, but got 2 \(batch_size=3\)",
           trnn.pack_padded_sequence, x, [3, 2])
    raises(ValueError, "a sequence of length 5 does not fit the input's 4 time steps", trnn.pack_padded_sequence,
           x, [5, 2, 1])
    packed = trnn.pack_padded_sequence(x, [4, 2, 1])
    raises(ValueError, "Expected total_length to be at least", trnn.pad_packed_sequence, packed, total_length=3)
    raises(ValueError, r"sequence 1 has shape \[2, 3\] but sequence 0 has \[2, 2\]", trnn.pad_sequence,
           [tinyattn.zeros(2, 2), tinyattn.zeros(2, 3)])
    raises(ValueError, "empty list of sequences", trnn.pad_sequence, [])
    raises(ValueError, "padding_side", trnn.pad_sequence, [tinyattn.zeros(2)], padding_side="middle")


def test_layers_and_packing_keep_to_the_array_api(xp_backend):
    """The same numbers on array_api_strict (the stand-in for CuPy) as on NumPy: no host-only call inside."""
    from tinyattn import backend

    def run():
        results = []
        for kind in ("RNN", "LSTM", "GRU"):
            layer = build(tinyattn, kind, 0, 3, 4, num_layers=2, bidirectional=True, dropout=0.3)
            x = tinyattn.tensor(np.random.default_rng(0).standard_normal((5, 3, 3)).astype(np.float32),
                                requires_grad=True)
            output, _ = layer(trnn.pack_padded_sequence(x, [2, 5, 3], enforce_sorted=False))
            padded, _ = trnn.pad_packed_sequence(output, total_length=6)
            (padded.sum() + flatten(layer(x))[0].sum()).backward()
            cell_state = tinyattn.nn.LSTMCell(3, 4)(x[0])[1]
            seqs = trnn.unpad_sequence(trnn.pad_sequence([x[:2, 0], x[:4, 1]]), tinyattn.tensor([2, 4]))
            results += [padded, x.grad, layer.weight_hh_l1_reverse.grad, cell_state, *seqs]
        return [backend.to_host(t.detach().array) for t in results]

    ours = run()
    backend.use_array_api_strict(False)
    reference = run()
    backend.use_array_api_strict(xp_backend == "array_api_strict")
    for a, b in zip(ours, reference, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- the LSTM step as one op
# lstm_step runs as one op (recurrent.LSTMStep) where nothing watches the ops; it must give the bits
# of the dozen ops it stands for, forward and backward, whatever the layer's options.


def _run_lstm(seed, options, steps, batch, dtype, with_h0, uses, packed_lengths):
    tinyattn.manual_seed(seed)
    lstm = tinyattn.nn.LSTM(3, 4, **options).to(dtype)
    x = tinyattn.randn(steps, batch, 3, dtype=dtype, requires_grad=True)
    states = options["num_layers"] * (2 if options["bidirectional"] else 1)
    hx = None
    if with_h0:
        hx = (tinyattn.randn(states, batch, 4, dtype=dtype, requires_grad=True),
              tinyattn.randn(states, batch, 4, dtype=dtype, requires_grad=True))
    data = x
    if packed_lengths:
        data = trnn.pack_padded_sequence(x, packed_lengths, enforce_sorted=False)
    out, (h_n, c_n) = lstm(data, hx)
    if packed_lengths:
        out = out.data
    loss = 0
    if "out" in uses:
        loss = loss + (out * out).sum()
    if "h" in uses:
        loss = loss + h_n.sum() * 3
    if "c" in uses:
        loss = loss + (c_n * c_n).sum()
    loss.backward()
    tensors = [out, h_n, c_n, x.grad] + [p.grad for p in lstm.parameters()]
    if with_h0:
        tensors += [hx[0].grad, hx[1].grad]
    return [None if t is None else t.detach().numpy().copy() for t in tensors]


@settings(max_examples=30)
@given(seed=st.integers(0, 2**16), num_layers=st.integers(1, 2), bidirectional=st.booleans(), bias=st.booleans(),
       steps=st.integers(1, 4), batch=st.integers(1, 3), dtype=st.sampled_from(["float32", "float64"]),
       with_h0=st.booleans(), uses=st.sets(st.sampled_from(["out", "h", "c"]), min_size=1),
       packed=st.booleans())
def test_the_lstm_step_as_one_op_gives_the_bits_of_its_ops(monkeypatch, seed, num_layers, bidirectional, bias,
                                                          steps, batch, dtype, with_h0, uses, packed):
    from tinyattn.nn import recurrent

    dtype = getattr(tinyattn, dtype)
    options = dict(num_layers=num_layers, bidirectional=bidirectional, bias=bias)
    lengths = [steps] + [max(1, steps - k) for k in range(1, batch)] if packed else None
    calls = []
    with monkeypatch.context() as patch:  # (a context per example: Hypothesis runs many in one test)
        patch.setattr(recurrent.LSTMStep, "apply", lambda *a: calls.append(1) or recurrent.Op.apply.__func__(
            recurrent.LSTMStep, *a))
        fused = _run_lstm(seed, options, steps, batch, dtype, with_h0, uses, lengths)
    assert calls, "the fused step did not run"
    with monkeypatch.context() as patch:
        patch.setattr(recurrent, "_one_dtype", lambda *tensors: False)  # every step as its dozen ops
        plain = _run_lstm(seed, options, steps, batch, dtype, with_h0, uses, lengths)
    for ours, theirs in zip(fused, plain):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            assert ours.tobytes() == theirs.tobytes()


def test_a_trace_sees_every_gate_of_the_lstm_step():
    from tinyattn import tracing

    lstm = tinyattn.nn.LSTM(3, 4)
    with tracing.trace() as trace:
        lstm(tinyattn.randn(2, 1, 3))
    table = str(trace)
    assert table.count(" sigmoid ") == 3 * 2 and table.count(" tanh ") == 2 * 2  # three gates and two tanh a step
