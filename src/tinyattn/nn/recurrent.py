"""Recurrent layers: RNN, LSTM, GRU and their one-step cells, with PyTorch's parameters and numbers.

Each layer is a loop over time steps of one cell, written with ordinary differentiable ops
(linear, sigmoid, tanh, chunk, cat, stack), so autograd gives the gradients (backpropagation through
time) and every gate is visible. As in PyTorch's CPU code, the input's projection W_ih x + b_ih is
computed for all time steps in one matrix product before the loop; only W_hh h + b_hh is per step.

The parameters have PyTorch's names, shapes and order (weight_ih_l0, weight_hh_l0, bias_ih_l0,
bias_hh_l0, then `_reverse` for the backward direction, then layer 1, ...), the gates PyTorch's order
(LSTM: i, f, g, o; GRU: r, z, n), and they are drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))
in that order, so `manual_seed(s)` gives PyTorch's weights and a `state_dict` loads either way.
"""

import math
import warnings

from .. import autograd, backend, functions
from ..errors import ShapeError
from ..tensor import Tensor
from . import functional as F
from ..ops import Op, stable_sigmoid
from . import init
from .module import Module, Parameter
from .utils.rnn import PackedSequence

# ---------------------------------------------------------------------------------------------
# one time step of each cell. `xw` is the input's projection W_ih x + b_ih (batch, gates * hidden),
# `state` is (h,) or, for the LSTM, (h, c); each step returns the new state.


def rnn_tanh_step(xw, state, w_hh, b_hh):
    (h,) = state
    return ((F.linear(h, w_hh, b_hh) + xw).tanh(),)


def rnn_relu_step(xw, state, w_hh, b_hh):
    (h,) = state
    return ((F.linear(h, w_hh, b_hh) + xw).relu(),)


def lstm_step(xw, state, w_hh, b_hh, w_hr=None):
    h, c = state
    if w_hr is None and not autograd.observers and _one_dtype(xw, h, c, w_hh, b_hh) and h.ndim == 2:
        return LSTMStep.apply(xw, h, c, w_hh, b_hh)  # the same numbers as below, as one op (see LSTMStep)
    i, f, g, o = (F.linear(h, w_hh, b_hh) + xw).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()  # input, forget, cell and output gates
    c = f * c + i * g
    h = o * c.tanh()
    if w_hr is not None:  # an LSTM with proj_size: the hidden state is projected down
        h = F.linear(h, w_hr)
    return h, c


def _one_dtype(*tensors):
    """Whether the tensors given (None aside) share one dtype: then no op of the step would refuse or
    promote, and the fused step may run."""
    dtype = tensors[0].dtype
    return all(t is None or t.dtype is dtype for t in tensors)


class LSTMStep(Op):
    """lstm_step's ops (linear, +, chunk, sigmoid, tanh, *, +) as one op, for the engine to run one
    node per time step instead of a dozen. Forward and backward do the same float operations in the
    same order as those ops and their backwards do, so the numbers are the same to the bit. It runs
    only where nothing watches the ops (a trace or a recording sees every gate, as lstm_step writes
    them).

    The backward, gate by gate (y the output of a sigmoid or tanh, d the gradient arriving at it):
    sigmoid: d * y * (1 - y); tanh: d * (1 - y * y); c' = f * c + i * g gives df = dc' * c,
    dc = dc' * f, di = dc' * g, dg = dc' * i; h' = o * tanh(c') gives do = dh' * tanh(c') and adds
    dh' * o * (1 - tanh(c')^2) to dc'."""

    @staticmethod
    def forward(ctx, xw, h, c, w_hh, b_hh):
        xp = ctx.xp
        ctx.set_materialize_grads(False)  # an output nobody used adds nothing (as its ops would not run)
        gates = h @ backend.matrix_transpose(w_hh)  # F.linear(h, w_hh, b_hh) + xw
        if b_hh is not None:
            gates += b_hh
        gates = gates + xw
        size = -(-gates.shape[1] // 4)  # chunk(4, 1)
        i, f, g, o = (gates[:, k * size:(k + 1) * size] for k in range(4))
        i, f, g, o = stable_sigmoid(xp, i), stable_sigmoid(xp, f), xp.tanh(g), stable_sigmoid(xp, o)
        c_new = f * c + i * g
        tanh_c = xp.tanh(c_new)
        ctx.save_for_backward(h, c, w_hh, i, f, g, o, tanh_c)
        return o * tanh_c, c_new

    @staticmethod
    def backward(ctx, dh, dc):
        h, c, w_hh, i, f, g, o, tanh_c = ctx.saved_tensors
        xp = ctx.xp
        needs = ctx.needs_input_grad
        if dh is None and dc is None:
            return None, None, None, None, None
        if dh is not None:
            d_o = dh * tanh_c
            d_tanh = (dh * o) * (1 - tanh_c * tanh_c)
            dc = d_tanh if dc is None else dc + d_tanh
            d_o = d_o * o * (1 - o)
        else:  # (the output gate's ops would not run: its part of the gates' gradient stays zero)
            d_o = xp.zeros_like(o)
        d_c = dc * f if needs[2] else None
        d_i = (dc * g) * i * (1 - i)
        d_f = (dc * c) * f * (1 - f)
        d_g = (dc * i) * (1 - g * g)
        d_gates = xp.concat([d_i, d_f, d_g, d_o], axis=1)
        d_gates += 0.0  # chunk's backward adds the four parts up over zeros, which turns -0.0 into 0.0
        d_h = d_gates @ w_hh if needs[1] else None
        d_w = backend.matrix_transpose(d_gates) @ h if needs[3] else None
        d_b = backend.sum_along(d_gates, (0,)) if needs[4] else None
        return (d_gates if needs[0] else None), d_h, d_c, d_w, d_b


def gru_step(xw, state, w_hh, b_hh):
    (h,) = state
    x_r, x_z, x_n = xw.chunk(3, 1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, 1)
    r = (x_r + h_r).sigmoid()  # reset gate
    z = (x_z + h_z).sigmoid()  # update gate
    n = (x_n + r * h_n).tanh()  # the new candidate: the reset gate scales only W_hn h + b_hn
    return ((h - n) * z + n,)  # = (1 - z) * n + z * h, as PyTorch writes it (the same float rounding)


STEPS = {"RNN_TANH": rnn_tanh_step, "RNN_RELU": rnn_relu_step, "LSTM": lstm_step, "GRU": gru_step}
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def run_direction(step, inputs, state, weights, reverse):
    """Run one direction of one layer over the time steps: the output at each step and the last state.

    inputs[t] is the projected input of step t. Its batch may be smaller than the state's (a packed
    batch, where only the first batch_sizes[t] sequences still run): the rows beyond it keep their state,
    which is then the state of a finished sequence (forward) or the initial one (reverse).
    """
    outputs = [None] * len(inputs)
    for t in (reversed(range(len(inputs))) if reverse else range(len(inputs))):
        running = inputs[t].shape[0]
        if running == state[0].shape[0]:
            state = step(inputs[t], state, *weights)
        else:
            new = step(inputs[t], tuple(s[:running] for s in state), *weights)
            state = tuple(functions.cat([a, s[running:]], 0) for a, s in zip(new, state))
        outputs[t] = state[0][:running] if running != state[0].shape[0] else state[0]
    return outputs, state


# ---------------------------------------------------------------------------------------------
# the layers


class RNNBase(Module):
    """What RNN, LSTM and GRU share: the parameters, the checks and the loop over layers and directions."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1:
            raise ValueError(f"{name}: dropout should be a number in range [0, 1] representing the probability "
                             f"of an element being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=3)
        for arg, value in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(value, bool):
                raise TypeError(f"{name}: {arg} should be of type bool, got: {type(value).__name__}")
        for arg, value in (("input_size", input_size), ("hidden_size", hidden_size), ("num_layers", num_layers),
                           ("proj_size", proj_size)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name}: {arg} should be of type int, got: {type(value).__name__}")
            if value <= 0 and arg != "proj_size":
                raise ValueError(f"{name}: {arg} must be greater than zero, got {value}")
        if proj_size < 0:
            raise ValueError(f"{name}: proj_size should be a positive integer or zero to disable projections, "
                             f"got {proj_size}")
        if proj_size >= hidden_size:
            raise ValueError(f"{name}: proj_size has to be smaller than hidden_size, got proj_size={proj_size} "
                             f"and hidden_size={hidden_size}")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        out_size = proj_size or hidden_size  # the size of h (the output)
        gate_size = GATES[mode] * hidden_size
        self._all_weights = []  # the parameters' names, per layer and direction, in PyTorch's order
        for layer in range(num_layers):
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                layer_input_size = input_size if layer == 0 else out_size * directions
                shapes = {"weight_ih": (gate_size, layer_input_size), "weight_hh": (gate_size, out_size)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for kind, shape in shapes.items():
                    setattr(self, kind + suffix, Parameter(functions.empty(*shape, device=device, dtype=dtype)))
                self._all_weights.append([kind + suffix for kind in shapes])
        self.reset_parameters()

    def reset_parameters(self):
        """U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) for every parameter, in order (PyTorch's draws)."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def flatten_parameters(self):
        """A no-op, as PyTorch's is off cuDNN: programs call it before forward."""

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += f", bidirectional={self.bidirectional}"
        return s

    def forward(self, input, hx=None):
        """(output, h_n), for the LSTM (output, (h_n, c_n)): see RNN's docstring for the shapes."""
        packed = isinstance(input, PackedSequence)
        if packed:  # the real steps only, batch_sizes[t] of them at step t
            data, batch_sizes, unbatched = input.data, [int(n) for n in input.batch_sizes.tolist()], False
            F.tensor_argument(data, type(self).__name__)
            if data.ndim != 2:
                raise ShapeError(f"{type(self).__name__}: a packed input's data must be 2-D (steps, input_size), "
                                 f"got shape {list(data.shape)}")
            batch = batch_sizes[0]
        else:
            data, unbatched = self._time_major(input)
            batch_sizes, batch = None, data.shape[1]
        self._check_data(data)
        states = self._initial_states(hx, data, batch, unbatched)
        if packed and input.sorted_indices is not None:  # the states' rows follow the sorted sequences
            states = [s.index_select(1, input.sorted_indices) for s in states]

        output, h_n = self._run_layers(data, states, batch_sizes)

        if packed:
            if input.unsorted_indices is not None:  # back to the order of the sequences as given
                h_n = [h.index_select(1, input.unsorted_indices) for h in h_n]
            output = PackedSequence(output, input.batch_sizes, input.sorted_indices, input.unsorted_indices)
        else:
            output = output.transpose(0, 1) if self.batch_first else output
            if unbatched:
                output = output.squeeze(0 if self.batch_first else 1)
                h_n = [h.squeeze(1) for h in h_n]
        return output, (tuple(h_n) if self.mode == "LSTM" else h_n[0])

    def _run_layers(self, data, states, batch_sizes=None):
        """The loop over layers and directions: the last layer's output and each layer's final states.

        data: (T, B, input_size), or a packed batch's (sum of lengths, input_size) with its batch_sizes.
        states: h_0 (and c_0), each (num_layers * num_directions, B, size).
        """
        if batch_sizes is None:  # the time steps of a projected input: (B, gates) each
            steps_of, join = (lambda x: x.unbind(0)), (lambda outputs: functions.stack(outputs, 0))
        else:  # (batch_sizes[t], gates) each
            steps_of, join = (lambda x: x.split(batch_sizes, 0)), (lambda outputs: functions.cat(outputs, 0))
        step = STEPS[self.mode]
        directions = 2 if self.bidirectional else 1
        layer_input, finals = data, []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                w_ih, w_hh, *rest = self.all_weights[index]
                b_ih, b_hh = rest[:2] if self.bias else (None, None)
                w_hr = rest[-1:] if self.proj_size else []
                xw = F.linear(layer_input, w_ih, b_ih)  # all time steps in one matrix product
                initial = tuple(s[index] for s in states)
                outs, final = run_direction(step, steps_of(xw), initial, (w_hh, b_hh, *w_hr), reverse=direction == 1)
                outputs.append(join(outs))
                finals.append(final)
            layer_input = outputs[0] if directions == 1 else functions.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        h_n = [functions.stack([final[i] for final in finals], 0) for i in range(len(states))]
        return layer_input, h_n

    def _time_major(self, input):
        """The input as (T, B, input_size), and whether it came unbatched."""
        F.tensor_argument(input, type(self).__name__)
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D tensor "
                             "instead")
        unbatched = input.ndim == 2
        if unbatched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        return (input.transpose(0, 1) if self.batch_first else input), unbatched

    def _check_data(self, data):
        name, weight = type(self).__name__, self.weight_ih_l0
        if data.dtype != weight.dtype:
            raise ValueError(f"{name}: input dtype ({data.dtype}) does not match weight dtype ({weight.dtype}). "
                             f"Convert input: input.to({weight.dtype}), or convert model: model.to({data.dtype})")
        if data.shape[0] == 0:
            raise ValueError(f"{name}: Expected sequence length to be larger than 0 in RNN, got input shape "
                             f"{list(data.shape)} (batch_first={self.batch_first})")
        if data.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                             f"got {data.shape[-1]} (input shape {list(data.shape)})")

    def _initial_states(self, hx, data, batch, unbatched):
        """[h_0] or [h_0, c_0], each (num_layers * num_directions, batch, size): zeros, or hx checked."""
        name, lstm = type(self).__name__, self.mode == "LSTM"
        stacked = self.num_layers * (2 if self.bidirectional else 1)
        expected = [(stacked, batch, self.proj_size or self.hidden_size)]
        if lstm:
            expected.append((stacked, batch, self.hidden_size))
        if hx is None:
            return [functions.zeros(*shape, dtype=data.dtype, device=data.device) for shape in expected]
        if lstm and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"{name}: hx must be a pair (h_0, c_0) of tensors, got {type(hx).__name__}")
        states = list(hx) if lstm else [hx]
        dims = 2 if unbatched else 3
        for state, state_name in zip(states, ("h_0", "c_0")):
            F.tensor_argument(state, name, state_name)
            if state.ndim != dims:
                raise ShapeError(f"{name}: for {'unbatched 2-D' if unbatched else 'batched 3-D'} input, "
                                 f"{state_name} should be {dims}-D (input shape {list(data.shape)}) but got "
                                 f"{state.ndim}-D tensor of shape {list(state.shape)}")
        if unbatched:
            states = [state.unsqueeze(1) for state in states]
        for i, (state, shape) in enumerate(zip(states, expected)):
            if tuple(state.shape) != shape:
                size = "proj_size" if self.proj_size and i == 0 else "hidden_size"
                raise ShapeError(f"{name}: Expected hidden{f'[{i}]' if lstm else ''} size {shape} = "
                                 f"(num_layers * num_directions, batch, {size}), got {list(state.shape)} "
                                 f"(input shape {list(data.shape)})")
        return states


class RNN(RNNBase):
    """An Elman RNN: h_t = tanh(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh) (or relu), over a sequence.

    Input (T, B, input_size) ((B, T, input_size) with batch_first; or (T, input_size) unbatched; or a
    PackedSequence) and an optional h_0 (num_layers * num_directions, B, hidden_size). Returns
    (output, h_n): the last layer's h_t at every step (both directions side by side), and every
    layer's final h.
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"RNN got unexpected keyword arguments {sorted(kwargs)}")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, device=device, dtype=dtype)


class LSTM(RNNBase):
    """A long short-term memory layer (PyTorch's gates: i, f, g, o), over a sequence.

    Like RNN, with a cell state beside h: hx is a pair (h_0, c_0) and the result (output, (h_n, c_n)).
    With proj_size > 0, h is projected to proj_size features by weight_hr (Sak et al., 2014).
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """A gated recurrent unit layer (PyTorch's gates: r, z, n, with n = tanh(W_in x + b_in + r * (W_hn h + b_hn))),
    over a sequence. Arguments and results as RNN's."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"GRU got unexpected keyword arguments {sorted(kwargs)}")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


# ---------------------------------------------------------------------------------------------
# the cells: one time step, for programs that write the loop themselves


class RNNCellBase(Module):
    """What the cells share: weight_ih, weight_hh, bias_ih, bias_hh, drawn as the layers' are."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        for arg, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name}: {arg} must be an integer >= 0, got {value!r}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(functions.empty(num_chunks * hidden_size, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(functions.empty(num_chunks * hidden_size, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(functions.empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(functions.empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    reset_parameters = RNNBase.reset_parameters

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _step(self, step, input, state, state_names):
        """Check the shapes, add a batch dim to unbatched input, and run one step of the cell."""
        name = type(self).__name__
        F.tensor_argument(input, name)
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.input_size:
            raise ShapeError(f"{name}: input has inconsistent input_size: got {input.shape[1]} expected "
                             f"{self.input_size} (input shape {list(input.shape)})")
        if state is None:
            zeros = functions.zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device)
            state = (zeros,) * len(state_names)
        else:
            for s, state_name in zip(state, state_names):
                F.tensor_argument(s, name, state_name)
                if s.ndim not in (1, 2):
                    raise ValueError(f"{name}: Expected {state_name} to be 1D or 2D, got {s.ndim}D instead")
                expected = (input.shape[0], self.hidden_size) if batched else (self.hidden_size,)
                if tuple(s.shape) != expected:
                    raise ShapeError(f"{name}: {state_name} has shape {list(s.shape)} but the input of shape "
                                     f"{list(input.shape if batched else input.shape[1:])} needs "
                                     f"{list(expected)} (batch, hidden_size)")
            if not batched:
                state = tuple(s.unsqueeze(0) for s in state)
        state = step(F.linear(input, self.weight_ih, self.bias_ih), tuple(state), self.weight_hh, self.bias_hh)
        return state if batched else tuple(s.squeeze(0) for s in state)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu). hx defaults to zeros."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        step = rnn_tanh_step if self.nonlinearity == "tanh" else rnn_relu_step
        return self._step(step, input, None if hx is None else (hx,), ("hx",))[0]


class LSTMCell(RNNCellBase):
    """One step of an LSTM: (h', c') from input and hx = (h, c) (zeros if not given)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError("LSTMCell: hx must be a pair (h, c) of tensors")
        return self._step(lstm_step, input, hx, ("hx[0]", "hx[1]"))


class GRUCell(RNNCellBase):
    """One step of a GRU: h' from input and hx (zeros if not given)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._step(gru_step, input, None if hx is None else (hx,), ("hx",))[0]
