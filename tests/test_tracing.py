"""Traces, graph drawings and anomaly detection (tinyattn/tracing.py)."""

import inspect
import io
import math
import re
import sys
import threading
import time

import numpy as np
import pytest

import tinyattn
from tinyattn import autograd, tracing
from tinyattn.nn import attention

HERE = __file__


def make_mha(seed=123, dropout=0.0):
    tinyattn.manual_seed(seed)
    return tinyattn.nn.MultiHeadAttention(6, 6, context_length=3, dropout=dropout, num_heads=2)


def make_batch():
    inputs = tinyattn.tensor([[0.43, 0.15, 0.89, 0.55, 0.87, 0.66],
                              [0.57, 0.85, 0.64, 0.22, 0.58, 0.33],
                              [0.77, 0.25, 0.10, 0.05, 0.80, 0.55]])
    return tinyattn.stack((inputs, inputs), dim=0)  # (b=2, num_tokens=3, d_in=6)


def traced_mha():
    mha, x = make_mha(), make_batch()
    with tinyattn.trace(name="mha") as tr:
        out = mha(x)
        out.sum().backward()
    return mha, out, tr


def line_of(text, function):
    """The line number in this file of the first line of `function` that contains `text`."""
    lines, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(lines) if text in line)


# the forward of the weight-split MultiHeadAttention, op by op: (module, op, input shapes, output shape)
B, T, D, H, HD = 2, 3, 6, 2, 3
EXPECTED_FORWARD = [
    ("mha.W_key", "linear", [(B, T, D), (D, D)], (B, T, D)),
    ("mha.W_query", "linear", [(B, T, D), (D, D)], (B, T, D)),
    ("mha.W_value", "linear", [(B, T, D), (D, D)], (B, T, D)),
    ("mha", "view", [(B, T, D)], (B, T, H, HD)),
    ("mha", "view", [(B, T, D)], (B, T, H, HD)),
    ("mha", "view", [(B, T, D)], (B, T, H, HD)),
    ("mha", "transpose", [(B, T, H, HD)], (B, H, T, HD)),
    ("mha", "transpose", [(B, T, H, HD)], (B, H, T, HD)),
    ("mha", "transpose", [(B, T, H, HD)], (B, H, T, HD)),
    ("mha", "to", [(T, T)], (T, T)),  # self.mask.bool()
    ("mha", "getitem", [(T, T)], (T, T)),  # [:num_tokens, :num_tokens]
    # scores, mask, scaling, softmax and the product with the values: one op, two results
    ("mha", "attention", [(B, H, T, HD), (B, H, T, HD), (B, H, T, HD), (T, T)], (B, H, T, HD)),
    ("mha", "transpose", [(B, H, T, HD)], (B, T, H, HD)),
    ("mha", "contiguous", [(B, T, H, HD)], (B, T, H, HD)),
    ("mha", "view", [(B, T, H, HD)], (B, T, D)),
    ("mha.out_proj", "linear", [(B, T, D), (D, D), (D,)], (B, T, D)),
    ("", "sum", [(B, T, D)], ()),
]

# the single-head CausalAttention runs the book's steps one op each, the mask filled in place
EXPECTED_HEAD_FORWARD = ["linear", "linear", "linear", "transpose", "matmul", "to", "getitem", "masked_fill_",
                         "div", "softmax", "matmul", "sum"]


def traced_head():
    tinyattn.manual_seed(123)
    head, x = tinyattn.nn.CausalAttention(6, 6, context_length=3, dropout=0.0), make_batch()
    with tinyattn.trace(name="head") as tr:
        out = head(x)
        out.sum().backward()
    return head, out, tr


# ---------------------------------------------------------------------------------------------
# the trace of MultiHeadAttention


def test_mha_forward_op_sequence_and_shapes(xp_backend):
    _, _, tr = traced_mha()
    got = [(r.module, r.op, list(r.input_shapes), r.output_shapes[0]) for r in tr.forward]
    assert got == EXPECTED_FORWARD
    assert [r.step for r in tr.forward] == list(range(1, len(EXPECTED_FORWARD) + 1))
    fused = tr.filter(op="attention", phase="forward")[0]
    assert fused.function == "AttentionOp" and fused.output_shapes == ((B, H, T, HD), (B, H, T, T))
    assert fused.nbytes == (B * H * T * HD + B * H * T * T) * 4  # the context and the weights
    assert {r.dtype for r in tr.forward if r.op not in ("to", "getitem")} == {"float32"}
    assert [r.dtype for r in tr.filter(op=["to", "getitem"])] == ["bool", "bool"]
    assert all(r.nbytes == 0 for r in tr.filter(op=["view", "transpose"], phase="forward"))


def test_causal_attention_traces_the_books_steps():
    _, _, tr = traced_head()
    assert [r.op for r in tr.forward] == EXPECTED_HEAD_FORWARD
    masked = tr.filter(op="masked_fill_")[0]
    assert masked.inplace and masked.function == "MaskedFill" and masked.nbytes == 0
    assert tr.filter(op="matmul")[0].nbytes == B * T * T * 4
    assert "masked_fill_" in masked.code and "safe_softmax" in tr.filter(op="softmax")[0].code
    expected = [op for op in reversed(EXPECTED_HEAD_FORWARD) if op not in ("to", "getitem")]
    assert [r.op for r in tr.backward] == expected


def test_mha_backward_runs_the_forward_ops_in_reverse():
    _, _, tr = traced_mha()
    backward = tr.backward
    # every op that needs a gradient appears once in backward, newest first; the mask ops don't
    expected = [r for r in reversed(tr.forward) if r.op not in ("to", "getitem")]
    assert [(r.op, r.module) for r in backward] == [(r.op, r.module) for r in expected]
    assert all(r.phase == "backward" and r.label.endswith(" (backward)") for r in backward)
    for b, f in zip(backward, expected):
        if f.op == "attention":  # nothing used the weights: their gradient is None, not zeros
            assert b.input_shapes == (f.output_shapes[0], None)
        else:
            assert b.input_shapes == f.output_shapes  # the gradient of the output comes in...
        assert (b.file, b.line, b.code) == (f.file, f.line, f.code)  # ... shown at the forward's line
    out_proj = backward.filter(module="mha.out_proj")[0]
    assert out_proj.output_shapes == ((B, T, D), (D, D), (D,))  # gradients of x, weight, bias
    w_key = backward.filter(module="mha.W_key")[0]
    assert w_key.output_shapes == (None, (D, D), None)  # the input x needs no gradient; no bias


def test_source_lines_point_into_the_modules_file():
    _, _, tr = traced_mha()
    inside = [r for r in tr if r.module.startswith("mha")]
    assert inside and all(r.file == attention.__file__ for r in inside)
    source, start = inspect.getsourcelines(attention.MultiHeadAttention.forward)
    lines = range(start, start + len(source))
    assert all(r.line in lines for r in inside)
    # a Linear layer's op is shown at the line that called the layer
    assert "self.W_key(x)" in tr.filter(module="mha.W_key", phase="forward")[0].code
    assert "self.out_proj(" in tr.filter(module="mha.out_proj", phase="forward")[0].code
    assert "F.attention(" in tr.filter(op="attention")[0].code
    total = tr.filter(op="sum")[0]
    assert total.file == HERE and total.line == line_of("out.sum().backward()", traced_mha)
    assert total.location.endswith("test_tracing.py:" + str(total.line))


def user_forward(x, w):
    h = x @ w
    h = h.relu()
    return h.mean()


def test_a_user_functions_lines_appear():
    x = tinyattn.randn(4, 3)
    w = tinyattn.randn(3, 5, requires_grad=True)
    with tinyattn.trace() as tr:
        user_forward(x, w).backward()
    assert [r.op for r in tr.forward] == ["matmul", "relu", "mean"]
    expected = [line_of(text, user_forward) for text in ("x @ w", "h.relu()", "h.mean()")]
    assert [r.line for r in tr.forward] == expected
    assert [r.line for r in tr.backward] == expected[::-1]
    assert all(r.file == HERE and r.module == "" for r in tr)


def test_filters():
    _, _, tr = traced_mha()
    assert len(tr.filter(op="view")) == 8  # four in forward, their four backwards
    assert len(tr.filter(op="view", phase="forward")) == 4
    assert tr.filter(op="AttentionOp") == tr.filter(op="attention")  # the Function's class name works too
    assert [r.phase for r in tr.filter(module="mha.W_query")] == ["forward", "backward"]
    whole = tr.filter(module="mha")
    assert {r.module for r in whole} == {"mha", "mha.W_query", "mha.W_key", "mha.W_value", "mha.out_proj"}
    assert len(tr.filter(module="mha", phase="forward")) == len(tr.forward) - 1  # all but the sum
    assert tr.filter(module="mh") == []  # a module prefix is a whole dotted name
    assert tr.forward.filter(op="view") == tr.filter(op="view", phase="forward")
    assert len(tr.filter(file="nn/attention.py")) == len(whole)
    assert len(tr) == len(tr.forward) + len(tr.backward) and tr[0] is tr.records[0]


def test_the_table_reads_like_the_steps(monkeypatch):
    monkeypatch.setattr(tracing, "terminal_width", lambda: None)  # as into a file, even under pytest -s
    _, _, tr = traced_mha()
    text = str(tr)
    assert text == repr(tr) == tr.table()
    for expected in ("module", "mha.W_query", "linear", "attention (backward)",
                     "(2, 3, 6), (6, 6) -> (2, 3, 6)", "(2, 3, 6) -> (2, 3, 2, 3)", "float32",
                     "(2, 2, 3, 3), None -> (2, 2, 3, 3), (2, 2, 3, 3), (2, 2, 3, 3)",
                     "tinyattn/nn/attention.py:", "-- forward: 17 ops", "-- backward: 15 ops"):
        assert expected in text
    assert len(text.splitlines()) == len(tr) + 4  # header, rule, two pass headings
    assert "keys = self.W_key(x)" in tr.table(code=True)
    head_text = str(traced_head()[2])
    assert "masked_fill_ *" in head_text and "softmax (backward)" in head_text
    assert head_text.splitlines()[-1] == "* in place: the op wrote into its input's memory"
    assert "backward" not in str(tr.forward)
    assert str(tracing.OpTable()) == "(no ops recorded)"


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_table_fits_a_narrow_terminal_and_keeps_one_line_per_op_elsewhere(monkeypatch):
    _, _, tr = traced_mha()
    wide = tr.table(code=True, width=1000)
    assert max(len(line) for line in wide.splitlines()) > 200 and len(wide.splitlines()) == len(tr) + 4
    narrow = tr.table(code=True, width=80)
    lines = narrow.splitlines()
    assert max(len(line) for line in lines) <= 80
    for record in tr:  # every op keeps its step, module, op, shapes, dtype and source
        first = next(i for i, line in enumerate(lines) if re.match(rf"\s*{record.step}  ", line))
        assert record.module in lines[first] and record.label in lines[first]
        following = "\n".join(lines[first:first + 4])
        for shape in record.input_shapes:
            assert tracing.format_shape(shape) in following  # wrapped between shapes, never inside one
        assert record.location in following and record.dtype in following
    assert "(2, 2, 3, 3), None -> (2, 2, 3, 3)," in narrow  # the attention backward's shapes, wrapped
    assert "-- forward: 17 ops" in narrow and "keys = self.W_key(x)" in narrow

    # print(tr) fits the terminal stdout writes to, and keeps the wide form elsewhere
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert str(tr) == tr.table(width=80) != tr.table(width=1000)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert str(tr) == tr.table(width=1000)
    assert str(tr.filter(module="mha.W_query")).splitlines()[2] == "-- forward: 1 op, 144 B"


def test_module_names_default_to_the_class_name():
    mha, x = make_mha(), make_batch()
    with tinyattn.trace() as tr:
        mha(x)
    assert tr[0].module == "MultiHeadAttention.W_key"
    linear = tinyattn.nn.Linear(6, 2)
    with tinyattn.trace(name="outer") as tr:
        linear(mha(x))  # two roots: the name goes to the first
    assert tr[0].module == "outer.W_key" and tr[-1].module == "Linear"


def test_nothing_is_recorded_outside_the_block_and_observers_are_restored():
    x = tinyattn.randn(3, requires_grad=True)
    assert autograd.observers == []
    tr = tinyattn.trace()
    y = x * 2
    assert len(tr) == 0
    with tr:
        assert autograd.observers == [tr]
        z = y + 1
    w = z * 3
    w.sum().backward()
    assert [r.op for r in tr] == ["add"]
    assert autograd.observers == []


def test_observers_are_restored_after_an_exception():
    with pytest.raises(tinyattn.ShapeError):
        with tinyattn.trace() as tr:
            tinyattn.ones(2, 3) @ tinyattn.ones(2, 3)
    assert autograd.observers == []
    with pytest.raises(ValueError):
        with tinyattn.detect_anomaly():
            with tinyattn.trace():
                raise ValueError("boom")
    assert autograd.observers == []
    assert len(tr) == 0


def test_nested_traces_both_record():
    x = tinyattn.ones(2, requires_grad=True)
    with tinyattn.trace() as outer:
        a = x * 2
        with tinyattn.trace() as inner:
            b = a.exp()
        c = b.sum()
        with outer:  # entering an active trace again changes nothing
            assert len(autograd.observers) == 1
    assert autograd.observers == []
    assert [r.op for r in outer] == ["mul", "exp", "sum"]
    assert [r.op for r in inner] == ["exp"]
    assert c.grad_fn is not None


def test_a_trace_records_only_its_own_threads_ops():
    """Another thread computing while a trace is active (a data loader, a server) stays out of it:
    its ops, its modules and its NaNs (for detect_anomaly) belong to that thread."""
    stop, running = threading.Event(), threading.Event()
    errors = []

    def other_thread():
        try:
            w = tinyattn.ones(3, requires_grad=True)
            layer = tinyattn.nn.Linear(3, 2)
            while not stop.is_set():
                layer(w.exp()).sum().backward()
                tinyattn.tensor([math.nan]) * 2  # NaN: not this thread's detector's business
                running.set()
        except Exception as error:  # noqa: BLE001  (reported below, in the test's thread)
            errors.append(error)
            running.set()

    worker = threading.Thread(target=other_thread)
    worker.start()
    try:
        assert running.wait(10)
        x = tinyattn.ones(2, requires_grad=True)
        with tinyattn.detect_anomaly(), tinyattn.trace() as tr:
            for _ in range(20):  # long enough for the other thread to run many ops meanwhile
                y = (x * 3).sum()
                y.backward()
                time.sleep(0.001)
    finally:
        stop.set()
        worker.join()
    assert not errors, errors
    assert [r.op for r in tr.forward] == ["mul", "sum"] * 20
    assert [r.op for r in tr.backward] == ["sum", "mul"] * 20
    assert {r.module for r in tr} == {""}
    assert autograd.observers == []


def test_in_place_ops_are_named_as_written():
    x = tinyattn.zeros(2, 3)
    with tinyattn.trace() as tr:
        x.add_(1.0)
        x += 1.0
        x[0] = 5.0
        y = x.masked_fill(x > 2, 0.0)
    assert [r.op for r in tr if r.function != "Gt"][:4] == ["add_", "add_", "index_put_", "masked_fill"]
    assert [r.inplace for r in tr][:3] == [True, True, True]
    assert y.shape == (2, 3)


def test_a_user_function_is_traced_with_a_snake_case_name():
    class SquarePlusOne(tinyattn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x + 1

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = tinyattn.tensor([1.0, 2.0], requires_grad=True)
    with tinyattn.trace() as tr:
        SquarePlusOne.apply(x).sum().backward()
    # the ops inside a Function's forward and backward run too, and are recorded
    assert "square_plus_one" in [r.op for r in tr.forward]
    assert "square_plus_one" in [r.op for r in tr.backward]
    assert x.grad.tolist() == [2.0, 4.0]


# ---------------------------------------------------------------------------------------------
# DOT graphs


def parse_dot(text):
    """Nodes {id: label} and edges [(a, b)] of the DOT text, checking its overall form."""
    lines = text.strip().splitlines()
    assert re.fullmatch(r'digraph "[^"]*" \{', lines[0]) and lines[-1] == "}"
    nodes, edges = {}, []
    for line in lines[1:-1]:
        line = line.strip()
        if m := re.fullmatch(r'(\w+) \[label="((?:[^"\\]|\\.)*)"(, [^\]]*)?\];', line):
            assert m.group(1) not in nodes, "a node is declared twice"
            nodes[m.group(1)] = m.group(2).replace("\\n", "\n")
        elif m := re.fullmatch(r"(\w+) -> (\w+);", line):
            edges.append((m.group(1), m.group(2)))
        else:
            assert re.fullmatch(r"(rankdir=\w+|node \[.*\]);", line), line
    for a, b in edges:
        assert a in nodes and b in nodes, f"edge {a} -> {b} to an undeclared node"
    return nodes, edges


def graph_of(tensor):
    """The grad_fn nodes and leaf tensors behind `tensor`, and the edges between them (ids)."""
    nodes, leaves, edges, stack = {}, {}, set(), [tensor.grad_fn]
    nodes[id(tensor.grad_fn)] = tensor.grad_fn
    while stack:
        node = stack.pop()
        for parent, _ in (e for e in node.next_functions if e[0] is not None):
            if isinstance(parent, autograd.Node):
                if id(parent) not in nodes:
                    nodes[id(parent)] = parent
                    stack.append(parent)
            else:
                leaves[id(parent)] = parent
            edges.add((id(parent), id(node)))
    return nodes, leaves, edges


def test_draw_graph_has_every_node_and_edge():
    mha, out, _ = traced_mha()
    nodes, edges = parse_dot(tinyattn.draw_graph(out, params=mha))
    ops, leaves, graph_edges = graph_of(out)
    op_labels = [label for key, label in nodes.items() if key.startswith("op")]
    leaf_labels = sorted(label.split("\n")[0] for key, label in nodes.items() if key.startswith("leaf"))
    assert len(op_labels) == len(ops) and len(leaf_labels) == len(leaves)
    assert leaf_labels == sorted(name for name, _ in mha.named_parameters())
    assert len(edges) == len(graph_edges) + 1  # and the edge into the output
    assert nodes["output"] == "output\n(2, 3, 6)" and ("op0", "output") in edges
    # the ops are named as in the trace, with the output shape, module and source line
    assert nodes["op0"].split("\n")[:3] == ["linear", "(2, 3, 6)", "mha.out_proj"]
    assert sum(label.startswith("attention\n(2, 2, 3, 3)") for label in op_labels) == 1


def test_draw_graph_without_a_trace_and_of_a_leaf():
    w = tinyattn.ones(3, requires_grad=True)
    y = (w * 2).exp().sum()
    nodes, edges = parse_dot(tinyattn.draw_graph(y, params={"w": w}))
    assert sorted(label.split("\n")[0] for label in nodes.values()) == ["exp", "mul", "output", "sum", "w"]
    assert len(edges) == 4
    nodes, edges = parse_dot(tinyattn.draw_graph(w))
    assert set(nodes.values()) == {"output\n(3,)", "leaf\n(3,)"} and len(edges) == 1


def test_trace_to_dot_has_every_op_and_input():
    _, _, tr = traced_mha()
    nodes, edges = parse_dot(tr.to_dot())
    forward = tr.forward
    assert sorted(k for k in nodes if k.startswith("op")) == sorted(f"op{r.step}" for r in forward)
    leaves = sorted(label.split("\n")[0] for k, label in nodes.items() if k.startswith("leaf"))
    assert leaves == sorted(["tensor", "mha.W_key.weight", "mha.W_query.weight", "mha.W_value.weight",
                             "mha.out_proj.weight", "mha.out_proj.bias", "mha.mask"])
    assert len(edges) == sum(len(r.parents) for r in forward)
    # the three projections read the same input; the scores come from the queries and the keys
    x_key = next(k for k, label in nodes.items() if label.startswith("tensor"))
    assert sorted(b for a, b in edges if a == x_key) == ["op1", "op2", "op3"]
    # attention reads the queries, keys and values (transposed into heads) and the mask
    assert sorted(a for a, b in edges if b == "op12") == ["op11", "op7", "op8", "op9"]
    assert [len(r.parents) for r in forward] == [len(r.input_shapes) for r in forward]


def test_trace_to_dot_follows_an_in_place_op_and_a_raw_array_mask():
    _, _, tr = traced_head()
    _, edges = parse_dot(tr.to_dot())
    assert sorted(a for a, b in edges if b == "op5") == ["op2", "op4"]  # queries @ keys^T
    assert ("op5", "op8") in edges and ("op8", "op9") in edges  # the in-place fill feeds the scaling
    assert ("op7", "op8") in edges  # the mask, although masked_fill_ receives it as a raw array


def test_writing_the_graph_without_graphviz(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tracing.shutil, "which", lambda name: None)
    y = (tinyattn.ones(2, requires_grad=True) * 3).sum()
    graph = tinyattn.draw_graph(y, tmp_path / "graph")
    dot_file = tmp_path / "graph.dot"
    assert graph.path == str(dot_file) and dot_file.read_text() == graph
    said = capsys.readouterr().out
    assert f"dot -Tsvg {dot_file} -o {tmp_path / 'graph.svg'}" in said
    tinyattn.draw_graph(y, tmp_path / "other.png")
    assert (tmp_path / "other.dot").exists() and "-Tpng" in capsys.readouterr().out


def test_draw_graph_refuses_what_it_cannot_draw_or_write(tmp_path):
    y = (tinyattn.ones(2, requires_grad=True) * 3).sum()
    with pytest.raises(TypeError, match="draws the graph behind a tensor, got float"):
        tinyattn.draw_graph(3.0)
    with pytest.raises(ValueError, match="format must be one of svg, png, pdf, got 'bogus'"):
        tinyattn.draw_graph(y, tmp_path / "graph", format="bogus")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        tinyattn.draw_graph(y, tmp_path / "missing" / "graph")
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_rendering_with_graphviz(tmp_path):
    if tracing.shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not installed")
    y = (tinyattn.ones(2, requires_grad=True) * 3).sum()
    graph = tinyattn.draw_graph(y, tmp_path / "graph", format="svg")
    assert graph.path.endswith("graph.svg") and "<svg" in open(graph.path).read()


# ---------------------------------------------------------------------------------------------
# anomaly detection


def test_mha_runs_clean_under_detect_anomaly(xp_backend):
    mha, x = make_mha(dropout=0.5), make_batch()  # the causal mask's -inf is not an anomaly
    with tinyattn.detect_anomaly():
        mha(x).sum().backward()
    assert autograd.observers == []
    assert np.isfinite(mha.W_query.weight.grad.numpy()).all()


def test_a_nan_injected_in_forward_is_caught_at_the_op_that_made_it(xp_backend):
    mha, x = make_mha(), make_batch()
    with tinyattn.no_grad():
        mha.W_value.weight[0, 0] = math.nan
    with pytest.raises(tinyattn.AnomalyError) as info:
        with tinyattn.detect_anomaly():
            mha(x)
    error = info.value
    assert (error.op, error.phase) == ("linear", "forward")
    assert error.file == attention.__file__ and "self.W_value(x)" in str(error)
    assert "mha" not in str(error) and "module: MultiHeadAttention.W_value" in str(error)
    assert "(2, 3, 6), (6, 6) -> (2, 3, 6)" in str(error) and "NaN" in str(error)
    assert isinstance(error, RuntimeError) and isinstance(error, FloatingPointError)
    assert autograd.observers == []


def test_an_overflow_to_inf_is_caught_but_a_mask_of_minus_inf_is_not():
    scores = tinyattn.tensor([[1.0, 2.0], [3.0, 100.0]], requires_grad=True)
    mask = tinyattn.tensor([[False, True], [False, False]])
    with tinyattn.detect_anomaly():
        masked = scores.masked_fill(mask, -math.inf)
        weights = (masked / 2).softmax(dim=-1)
    with pytest.raises(tinyattn.AnomalyError) as info:
        with tinyattn.detect_anomaly():
            scores.exp()  # e^100 does not fit in float32
    assert info.value.op == "exp" and "inf" in str(info.value)
    assert info.value.line == line_of("scores.exp()", test_an_overflow_to_inf_is_caught_but_a_mask_of_minus_inf_is_not)
    assert weights[0, 1].item() == 0.0


def test_a_nan_that_arises_only_in_backward_names_the_forward_line():
    x = tinyattn.tensor([0.0, 4.0], requires_grad=True)
    with tinyattn.detect_anomaly():
        root = x.sqrt()  # fine in forward: sqrt(0) = 0
        y = (root * 0.0).sum()
        with pytest.raises(tinyattn.AnomalyError) as info:
            y.backward()  # d sqrt(x)/dx at 0 is 1/0: 0 * inf = NaN
    error = info.value
    assert (error.op, error.phase) == ("sqrt", "backward")
    assert error.file == HERE
    assert error.line == line_of("root = x.sqrt()", test_a_nan_that_arises_only_in_backward_names_the_forward_line)
    assert "sqrt (backward) (Sqrt) returned 1 NaN" in str(error) and "(2,) -> (2,)" in str(error)
    assert "root = x.sqrt()" in str(error)
    assert autograd.observers == []


def test_backward_outside_detect_anomaly_is_not_checked_and_forward_outside_is_reported_as_unknown():
    x = tinyattn.tensor([0.0], requires_grad=True)
    x.sqrt().sum().backward()  # no detection: an inf gradient, silently
    assert math.isinf(x.grad.item())
    y = x.sqrt().sum()
    with pytest.raises(tinyattn.AnomalyError, match="unknown line"):
        with tinyattn.detect_anomaly():
            y.backward()


def test_detect_anomaly_restores_state():
    detector = tinyattn.detect_anomaly()
    with detector as entered:
        assert entered is detector and autograd.observers == [detector]
        with tinyattn.trace() as tr:
            assert autograd.observers == [detector, tr]
        assert autograd.observers == [detector]
    assert autograd.observers == []
    x = tinyattn.tensor([1.0])
    assert math.isnan((x * math.nan).item())  # no detection after the block


def test_trace_of_a_matrix_is_pytorchs_torch_trace(torch):
    values = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    m = tinyattn.tensor(values, requires_grad=True)
    total = tinyattn.trace(m)
    total.backward()
    expected = torch.tensor(values, requires_grad=True)
    torch.trace(expected).backward()
    assert total.item() == torch.trace(expected).item() == 6.0
    assert m.grad.tolist() == expected.grad.tolist()
    assert tinyattn.trace(tinyattn.arange(9).view(3, 3)).item() == 12
    with pytest.raises(ValueError, match="matrix"):
        tinyattn.trace(tinyattn.ones(3))


def test_a_trace_entered_twice_keeps_counting():
    x = tinyattn.ones(2, requires_grad=True)
    tr = tinyattn.trace()
    with tr:
        y = x * 2
    with tr:
        z = tinyattn.ones(2) + y
    assert [(r.step, r.op) for r in tr] == [(1, "mul"), (2, "add")]
    nodes, edges = parse_dot(tr.to_dot())
    assert len(nodes) == 4 and ("op1", "op2") in edges  # x, ones, mul, add: y links the two blocks
    assert z.grad_fn is not None
