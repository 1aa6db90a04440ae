"""trace(values=True), the page of a trace (tinyattn.tracing_page), `tinyattn demo --html` and
`tinyattn see`; the page opened in headless Chromium where Chromium and chromedriver are installed.

The browser test writes its screenshots to a temporary folder; with TINYATTN_WRITE_SCREENSHOTS=1 it
writes them into docs/images/watch-a-step/, the ones docs/how-to/watch-a-step.md shows.
"""

import contextlib
import importlib.util
import io
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tinyattn
import tinyattn.nn as nn
from tinyattn import tracing
from tinyattn.app import demo
from tinyattn.tracing import TensorSummary
from tinyattn.tracing_page import page_data, write_page
from tinyattn.tracing_page import see

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "docs" / "images" / "watch-a-step"

CHAR_MLP = '''\
"""One training step of a character-level MLP: embedding, a tanh layer, cross-entropy."""
import tinyattn as torch
import tinyattn.nn.functional as F

words = ["emma", "olivia", "ava", "isabella", "sophia"]
stoi = {c: i + 1 for i, c in enumerate(sorted(set("".join(words))))}
stoi["."] = 0
X, Y = [], []
for w in words:
    context = [0, 0, 0]
    for ch in w + ".":
        X.append(context)
        Y.append(stoi[ch])
        context = context[1:] + [stoi[ch]]
X, Y = torch.tensor(X), torch.tensor(Y)
g = torch.Generator().manual_seed(2147483647)
C = torch.randn((len(stoi), 4), generator=g, requires_grad=True)
W1 = torch.randn((12, 16), generator=g, requires_grad=True)
b1 = torch.randn(16, generator=g, requires_grad=True)
W2 = torch.randn((16, len(stoi)), generator=g, requires_grad=True)
b2 = torch.randn(len(stoi), generator=g, requires_grad=True)

emb = C[X]
h = torch.tanh(emb.view(-1, 12) @ W1 + b1)
logits = h @ W2 + b2
loss = F.cross_entropy(logits, Y)
loss.backward()
print(f"loss {loss.item():.4f}")
'''


def line_of(start):
    """The line number of CHAR_MLP's line that starts with `start`."""
    return next(n for n, line in enumerate(CHAR_MLP.splitlines(), 1) if line.startswith(start))


def mha_step(values=True, values_limit=tracing.VALUES_LIMIT):
    tinyattn.manual_seed(0)
    mha = nn.MultiHeadAttention(d_in=6, d_out=6, context_length=3, dropout=0.0, num_heads=2)
    x = tinyattn.rand(1, 3, 6)
    with tinyattn.trace(name="mha", values=values, values_limit=values_limit) as tr:
        out = mha(x)
        out.sum().backward()
    return mha, x, out, tr


def demo_trace(namespace=None):
    """The trace that `tinyattn demo --html` shows (its steps run quietly, in `namespace`)."""
    namespace = {"tinyattn": tinyattn} if namespace is None else namespace
    namespace["tinyattn"] = tinyattn
    with contextlib.redirect_stdout(io.StringIO()):
        for _, _, code in demo.STEPS + demo.MODULE_STEPS:
            demo.run_cell(code, namespace)
    return demo.traced_step(namespace)


# ---------------------------------------------------------------------------------------------
# trace(values=True)


def test_a_default_trace_copies_nothing():
    _, _, _, tr = mha_step(values=False)
    assert not tr.keeps_values and tr.values_kept == 0
    assert all(r.input_values == () and r.output_values == () and r.saved == () for r in tr)


def test_values_are_the_tensors_of_the_step():
    mha, x, out, tr = mha_step()
    first = tr.forward[0]  # mha.W_key(x)
    np.testing.assert_array_equal(first.input_values[0], x.numpy())
    np.testing.assert_array_equal(first.input_values[1], mha.W_key.weight.detach().numpy())
    np.testing.assert_array_equal(tr.filter(op="linear", module="mha.out_proj", phase="forward")[0].output_values[0],
                                  out.detach().numpy())
    # an input that a traced op made is that op's output copy, not a second copy
    view = tr.forward[3]
    assert view.parents[0][0] == "op"
    assert view.input_values[0] is tr.records[view.parents[0][1] - 1].output_values[view.parents[0][2]]
    # the backward of sum gets the gradient 1; the weights' gradients as backward stored them
    assert tr.backward[0].input_values[0] == 1.0
    for name in ("W_key", "W_query", "W_value"):
        forward = tr.filter(op="linear", module=f"mha.{name}", phase="forward")[0]
        backward = next(r for r in tr.backward if r.forward_step == forward.step)
        weight = getattr(mha, name).weight
        np.testing.assert_array_equal(backward.output_values[forward.input_args[1]], weight.grad.numpy())
    attention = tr.filter(op="attention")[0]
    # copies of q and k (as PyTorch's CPU attention keeps: changing q or k in place afterwards is fine),
    # v itself and the weights
    q, k = (tr.records[parent[1] - 1].output_values[parent[2]] for parent in attention.parents[:2])
    assert attention.saved == (("array", q.shape, "float32"), ("array", k.shape, "float32"), ("input", 2),
                               ("output", 1))
    assert [r.view for r in tr.forward if r.op in ("view", "transpose")] == [True] * 8
    assert not any(r.view for r in tr.forward if r.op in ("linear", "attention", "contiguous"))


def test_values_are_copies_taken_when_the_op_ran():
    a = tinyattn.ones(2, 2)
    with tinyattn.trace(values=True) as tr:
        b = a * 2
        b.add_(1)  # in place: b's old value stays in the first record
    np.testing.assert_array_equal(tr[0].output_values[0], np.full((2, 2), 2.0, np.float32))
    np.testing.assert_array_equal(tr[1].output_values[0], np.full((2, 2), 3.0, np.float32))
    assert tr[1].inplace


def test_past_values_limit_a_summary():
    _, _, _, tr = mha_step(values_limit=200)  # 200 bytes: the input and two weights' worth
    kinds = [type(v).__name__ for r in tr for v in r.output_values if v is not None]
    assert "ndarray" in kinds and "TensorSummary" in kinds
    assert tr.values_kept <= 200
    summary = next(v for r in tr for v in r.output_values if isinstance(v, TensorSummary))
    assert sum(summary.counts) + summary.nans + summary.infs == int(np.prod(summary.shape))
    array = np.array([[1.0, -2.0], [np.nan, np.inf]], np.float32)
    s = TensorSummary.of(array)
    assert (s.min, s.max, s.mean, s.nans, s.infs, s.zeros) == (-2.0, 1.0, -0.5, 1, 1, 0)


@pytest.mark.parametrize("bad", [-1, 1.5, "64MiB", True])
def test_values_limit_is_checked(bad):
    with pytest.raises(ValueError, match="values_limit"):
        tinyattn.trace(values=True, values_limit=bad)


def test_values_flag_is_checked():
    with pytest.raises(TypeError, match="values must be True or False"):
        tinyattn.trace(values="yes")


def test_label_tokens():
    _, _, _, tr = mha_step()
    assert tr.label_tokens(("a", "b", 3)).tokens == ["a", "b", "3"]
    with pytest.raises(TypeError, match="list"):
        tr.label_tokens("abc")
    with tinyattn.trace() as outer:  # the function form labels the traces of this thread
        tracing.label_tokens(["x", "y"])
    assert outer.tokens == ["x", "y"]
    tracing.label_tokens(["z"])  # no trace: nothing


# ---------------------------------------------------------------------------------------------
# the page's data and file


def test_page_data_of_the_demo():
    tr = demo_trace()
    data = page_data(tr)
    assert data["counts"]["forward"] == len(tr.forward) and data["counts"]["backward"] == len(tr.backward)
    assert len(data["ops"]) == len(tr)
    assert data["tokens"] == demo.WORDS
    (heat,) = data["attention"]
    attention = tr.filter(op="attention")[0]
    assert heat["step"] == attention.step
    assert (heat["items"], heat["heads"], heat["rows"], heat["cols"]) == (1, 2, 3, 3)
    weights = np.array(heat["data"]).reshape(2, 3, 3)
    np.testing.assert_allclose(weights, attention.output_values[1][0], atol=1e-4)
    np.testing.assert_allclose(weights.sum(-1), 1, atol=1e-3)
    assert heat["blocked"] == [0, 1, 1, 0, 0, 1, 0, 0, 0]  # the causal mask
    leaves = {leaf["name"]: leaf for leaf in data["leaves"]}
    assert {"mha.W_query.weight", "mha.W_key.weight", "mha.W_value.weight", "mha.mask"} <= set(leaves)
    grad = data["tensors"][leaves["mha.W_query.weight"]["grad"]]
    namespace_mha = tr  # the demo's mha: its .grad is what the page shows
    w = next(r for r in tr.forward if r.module == "mha.W_query")
    back = next(r for r in tr.backward if r.forward_step == w.step)
    np.testing.assert_allclose(np.array(grad["data"]).reshape(6, 6), back.output_values[1], rtol=1e-5)
    assert namespace_mha is tr
    files = {f["path"] for f in data["files"]}
    assert "tinyattn/nn/attention.py" in files


def test_page_is_one_file_that_loads_nothing(tmp_path):
    tr = demo_trace()
    path = tr.to_html(tmp_path / "step.html")
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"<(script|img|link|iframe)[^>]*\s(src|href)=", text)  # everything inline
    assert "@import" not in text and "url(http" not in text
    assert text.count("<script>") == 3 and "const TRACE = {" in text
    # the data is the page_data, with `</` made harmless inside the script
    data = json.loads(text.split("const TRACE = ", 1)[1].split(";\n</script>", 1)[0].replace("<\\/", "</"))
    assert len(data["ops"]) == len(tr)
    assert "dagre" in text and "Chris Pettitt" not in text  # the library, its licence beside it in the package
    assert (pathlib.Path(see.__file__).parent / "vendor" / "LICENSE-dagre.txt").exists()


def test_page_limits(tmp_path):
    tr = demo_trace()
    data = page_data(tr, table_limit=10, max_ops=5)
    assert len(data["ops"]) == 5 and data["leftOut"] == len(tr) - 5
    assert all("data" in t or "summary" in t for t in data["tensors"])
    assert all(len(t["data"]) <= 10 for t in data["tensors"] if "data" in t)
    with pytest.raises(ValueError, match="max_ops"):
        page_data(tr, max_ops=0)
    with pytest.raises(TypeError, match="tinyattn.trace"):
        write_page("not a trace", tmp_path / "x.html")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_page(tr, tmp_path / "no" / "x.html")


def test_a_trace_without_values_makes_a_page_of_shapes(tmp_path):
    _, _, _, tr = mha_step(values=False)
    data = page_data(tr)
    assert not data["values"] and data["tensors"] == []
    assert tr.to_html(tmp_path / "shapes.html").exists()


def test_names_from_a_namespace():
    W = tinyattn.randn(3, 2, requires_grad=True)
    x = tinyattn.randn(4, 3)
    with tinyattn.trace(values=True) as tr:
        (x @ W).sum().backward()
    names = sorted(leaf["name"] for leaf in page_data(tr, names={"W": W, "x": x})["leaves"])
    assert names == ["W (parameter)", "x (tensor)"]


# ---------------------------------------------------------------------------------------------
# the commands


def run_see(argv, cwd):
    return subprocess.run([sys.executable, "-m", "tinyattn", "see", *argv], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=300)


def test_demo_html(tmp_path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert demo.main(["--html", str(tmp_path / "step.html")]) == 0
    assert re.fullmatch(r"wrote .*step\.html \(\d+ KiB\): 17 forward and 15 backward ops; open it in a browser\n",
                        out.getvalue())
    text = (tmp_path / "step.html").read_text()
    assert '"tokens":["Your","journey","starts"]' in text and '"name":"x (tensor)"' in text
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert demo.main(["--html", str(tmp_path / "missing" / "step.html")]) == 2
    assert "does not exist" in err.getvalue() and err.getvalue().count("\n") == 1


def test_see_a_learners_script(tmp_path):
    (tmp_path / "char_mlp.py").write_text(CHAR_MLP)
    result = run_see(["char_mlp.py", "--html", "mlp.html"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("loss ")
    assert re.search(r"wrote mlp\.html \(\d+ KiB in [\d.]+ s\): 8 forward ops and 8 backward ops", result.stdout)
    text = (tmp_path / "mlp.html").read_text()
    data = json.loads(text.split("const TRACE = ", 1)[1].split(";\n</script>", 1)[0].replace("<\\/", "</"))
    # the script's own lines on the nodes: every forward op was called in char_mlp.py
    files = data["files"]
    assert [f["path"] for f in files] == ["char_mlp.py"]
    emb, h, logits, loss = (line_of(start) for start in ("emb =", "h =", "logits =", "loss ="))
    assert [(o["op"], o["line"]) for o in data["ops"] if o["phase"] == "forward"] == [
        ("getitem", emb), ("view", h), ("matmul", h), ("add", h), ("tanh", h), ("matmul", logits), ("add", logits),
        ("cross_entropy", loss)]
    assert files[0]["lines"][str(h)] == "h = torch.tanh(emb.view(-1, 12) @ W1 + b1)"
    names = {leaf["name"] for leaf in data["leaves"]}
    assert {"C (parameter)", "W1 (parameter)", "b1 (parameter)", "X (tensor)", "Y (tensor)"} <= names


def test_see_passes_arguments_and_labels(tmp_path):
    (tmp_path / "args.py").write_text(textwrap.dedent("""\
        import sys
        import tinyattn
        from tinyattn.tracing import label_tokens
        n = int(sys.argv[1])
        label_tokens(list("abc"))
        x = tinyattn.ones(n, requires_grad=True)
        (x * 2).sum().backward()
        print(sys.argv)
        """))
    result = run_see(["args.py", "--html", "p.html", "--", "4", "--flag"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "['args.py', '4', '--flag']" in result.stdout
    assert '"tokens":["a","b","c"]' in (tmp_path / "p.html").read_text()


def test_see_shapes_only_and_tokens(tmp_path):
    (tmp_path / "ok.py").write_text("import tinyattn\nx = tinyattn.ones(2, 3, requires_grad=True)\n"
                                    "tinyattn.softmax(x @ x.T, dim=-1).sum().backward()\n")
    result = run_see(["ok.py", "--html", "p.html", "--no-values", "--tokens", "to be"], tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "p.html").read_text()
    assert '"values":false' in text and '"tensors":[]' in text and '"tokens":["to","be"]' in text
    result = run_see(["ok.py", "--html", "p.html", "--values-limit", "0"], tmp_path)
    data = json.loads((tmp_path / "p.html").read_text().split("const TRACE = ", 1)[1].split(";\n</script>", 1)[0])
    assert data["valuesKept"] == "0 B" and all("summary" in t for t in data["tensors"])  # summaries only
    result = run_see(["ok.py", "--html", "p.html", "--values-limit", "lots"], tmp_path)
    assert result.returncode == 2 and "expected a number of MiB" in result.stderr


def test_see_a_failing_script_gives_the_page_of_what_ran(tmp_path):
    (tmp_path / "bad.py").write_text("import tinyattn\nx = tinyattn.ones(3, 4)\ny = x * 2\n"
                                     "z = x @ tinyattn.ones(5, 2)\n")
    result = run_see(["bad.py", "--html", "bad.html"], tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("tinyattn see: error: bad.py failed at line 4: ShapeError: matmul: shapes [3, 4]")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    text = (tmp_path / "bad.html").read_text()
    assert "bad.py failed at line 4" in text and '"op":"mul"' in text


@pytest.mark.parametrize("script, message", [
    ("print('no tensors')\n", "bad.py ran no tensor op: nothing to show (no page written)"),
    ("raise ValueError('early')\n", "bad.py failed at line 1: ValueError: early; it ran no tensor op before"),
    ("def broken(:\n", "bad.py failed at line 1: SyntaxError"),
])
def test_see_without_a_page(tmp_path, script, message):
    (tmp_path / "bad.py").write_text(script)
    result = run_see(["bad.py", "--html", "bad.html"], tmp_path)
    assert result.returncode in (1, 2)
    assert message in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "bad.html").exists()


def test_see_bad_input(tmp_path):
    result = run_see(["missing.py", "--html", "x.html"], tmp_path)
    assert result.returncode == 2 and "no script 'missing.py'" in result.stderr
    (tmp_path / "ok.py").write_text("pass\n")
    result = run_see(["ok.py", "--html", "no/x.html"], tmp_path)
    assert result.returncode == 2 and "does not exist" in result.stderr
    result = run_see(["ok.py"], tmp_path)
    assert result.returncode == 2 and "--html" in result.stderr


# ---------------------------------------------------------------------------------------------
# in a browser


def _site_browser():
    spec = importlib.util.spec_from_file_location("site_browser", ROOT / "tests" / "site_browser.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not module.available():
        pytest.skip("no Chromium with chromedriver here (Debian: apt-get install chromium chromium-driver)")
    return module


def _smaller(folder):
    """The screenshots in 256 colours (a third of the bytes, the same to the eye) where Pillow is here."""
    try:
        from PIL import Image
    except ImportError:
        return
    for path in folder.glob("*.png"):
        with Image.open(path) as image:
            small = image.convert("RGB").quantize(colors=256)
        small.save(path, optimize=True)


def _click(browser, selector):
    found = browser.run("const e = document.querySelector(arguments[0]); if (!e) return false;"
                        "e.dispatchEvent(new MouseEvent('click', {bubbles: true})); return true;", selector)
    assert found, selector


def test_the_demo_page_in_a_browser(tmp_path):
    site_browser = _site_browser()
    namespace = {}
    tr = demo_trace(namespace)
    page = tr.to_html(tmp_path / "step.html", title="tinyattn demo: multi-head attention, forward and backward",
                      names=namespace)
    shots = SCREENSHOTS if os.environ.get("TINYATTN_WRITE_SCREENSHOTS") == "1" else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    with site_browser.browser() as browser:
        browser.set_window_size(1360, 820)
        browser.open(page.resolve().as_uri())
        # the graph: a box per forward op with a strip per backward op, a box per leaf tensor
        counts = browser.run("""return {ops: document.querySelectorAll('#graph .op-node').length,
            chips: document.querySelectorAll('#graph .chip').length,
            leaves: document.querySelectorAll('#graph .node.leaf').length,
            steps: [...document.querySelectorAll('#graph [data-step]')].map(e => +e.dataset.step),
            resources: performance.getEntriesByType('resource').length};""")
        assert counts["ops"] == len(tr.forward) and counts["chips"] == len(tr.backward)
        assert sorted(counts["steps"]) == [r.step for r in tr]
        leaves = {p[1] for r in tr.forward for p in r.parents if p[0] == "leaf"}
        assert counts["leaves"] == len(leaves)
        assert counts["resources"] == 0  # nothing fetched: scripts, styles and data are in the page
        browser.screenshot(shots / "graph.png")

        # a node's values: the first projection, mha.W_key(x)
        first = tr.forward[0]
        _click(browser, f'#graph .op-node[data-step="{first.step}"]')
        shown = browser.run("""const t = document.querySelectorAll('#details .tensor');
            return [...t].map(e => ({head: e.querySelector('.tensor-head').textContent,
                shape: (e.querySelector('.shape') || {}).textContent,
                cells: [...e.querySelectorAll('table.values td')].map(td => td.textContent)}));""")
        heads = [s["head"] for s in shown]
        assert heads[0].startswith("input 0 from x (tensor)") and "mha.W_key.weight" in heads[1]
        output = next(s for s in shown if s["head"].startswith("output 0"))
        assert output["shape"] == "(1, 3, 6)"
        np.testing.assert_allclose([float(c) for c in output["cells"]], first.output_values[0].ravel(), atol=5e-5)
        back = next(r for r in tr.backward if r.forward_step == first.step)
        gradient = next(s for s in shown if s["head"].startswith("gradient of output 0"))
        np.testing.assert_allclose([float(c) for c in gradient["cells"]], back.input_values[0].ravel(), atol=5e-5)
        sent = next(s for s in shown if "mha.W_key.weight" in s["head"] and s["head"].startswith("to input 1"))
        np.testing.assert_allclose([float(c) for c in sent["cells"]], back.output_values[1].ravel(), rtol=1e-3,
                                   atol=5e-5)

        # the attention op: its details with the heads' heatmaps, then the step control in the backward pass
        attention = tr.filter(op="attention")[0]
        _click(browser, f'#graph .op-node[data-step="{attention.step}"]')
        browser.screenshot(shots / "attention-op.png")
        backward = next(r for r in tr.backward if r.forward_step == attention.step)
        browser.run("const s = document.getElementById('slider'); s.value = arguments[0];"
                    "s.dispatchEvent(new Event('input'));", backward.step)
        state = browser.run("""return {caption: document.getElementById('caption').textContent,
            current: [...document.querySelectorAll('#graph .current')].map(e => e.dataset.step || e.dataset.id),
            graded: document.querySelectorAll('#graph .node.graded').length,
            flowing: [...document.querySelectorAll('#graph .edge.grad')].map(e => e.dataset.from)};""")
        assert state["caption"].startswith(f"{backward.step} / {len(tr)}") and "backward" in state["caption"]
        assert str(backward.step) in state["current"]
        assert state["graded"] > 0
        # the gradients flow back to the queries, keys and values, not to the mask
        assert sorted(state["flowing"]) == sorted(f"f{p[1]}" for p in attention.parents[:3])
        browser.screenshot(shots / "backward-step.png")

        # the attention tab: a heatmap per batch item and head, rows and columns labelled with the words
        _click(browser, '.tab[data-tab="attention"]')
        heat = browser.run("""const h = document.querySelector('#attention .heatmaps');
            return {cells: h.querySelectorAll('td.hm-cell').length,
                    masked: h.querySelectorAll('td.hm-cell.masked').length,
                    maps: h.querySelectorAll('.hm').length, heads: +h.dataset.heads, rows: +h.dataset.rows,
                    cols: +h.dataset.cols, labels: [...h.querySelectorAll('.hm')[0].querySelectorAll('th')]
                    .map(th => th.textContent).filter(t => t)};""")
        batch, heads, rows, cols = attention.output_shapes[1]
        assert (heat["heads"], heat["rows"], heat["cols"]) == (heads, rows, cols)
        assert heat["maps"] == batch * heads and heat["cells"] == batch * heads * rows * cols
        assert heat["masked"] == batch * heads * 3  # the causal mask: 3 cells above the diagonal
        assert heat["labels"] == demo.WORDS * 2
        browser.screenshot(shots / "attention-heads.png")

        errors = [m for m in browser.console() if m["level"] in ("SEVERE", "ERROR")]
        assert errors == []
    if shots == SCREENSHOTS:
        _smaller(shots)


def test_a_learners_script_page_in_a_browser(tmp_path):
    site_browser = _site_browser()
    (tmp_path / "char_mlp.py").write_text(CHAR_MLP)
    assert run_see(["char_mlp.py", "--html", "mlp.html"], tmp_path).returncode == 0
    shots = SCREENSHOTS if os.environ.get("TINYATTN_WRITE_SCREENSHOTS") == "1" else tmp_path
    with site_browser.browser() as browser:
        browser.set_window_size(1360, 820)
        browser.open((tmp_path / "mlp.html").as_uri())
        sources = browser.run("return [...document.querySelectorAll('#graph .op-node text.src')]"
                              ".map(t => t.textContent);")
        emb, h, logits, loss = (f"char_mlp.py:{line_of(start)}" for start in ("emb =", "h =", "logits =", "loss ="))
        assert sources == [emb] + [h] * 4 + [logits] * 2 + [loss]
        _click(browser, '#graph .op-node[data-step="5"]')  # tanh
        code = browser.run("return document.querySelector('#details pre.code span.here').textContent;")
        assert code == f"{line_of('h =')}h = torch.tanh(emb.view(-1, 12) @ W1 + b1)"
        summary = browser.run("return [...document.querySelectorAll('#details .stats')].length;")
        assert summary == 0  # (32, 16): 512 numbers, shown as a table
        time.sleep(0.2)
        browser.screenshot(shots / "char-mlp.png")
        errors = [m for m in browser.console() if m["level"] in ("SEVERE", "ERROR")]
        assert errors == []

        # past the page's table limit: statistics and a histogram instead of the numbers
        assert run_see(["char_mlp.py", "--html", "summary.html", "--table-limit", "256"], tmp_path).returncode == 0
        browser.open((tmp_path / "summary.html").as_uri())
        _click(browser, '#graph .op-node[data-step="5"]')
        shown = browser.run("""const t = [...document.querySelectorAll('#details .tensor')]
            .find(e => e.querySelector('.tensor-head').textContent.startsWith('output 0'));
            return {stats: t.querySelector('.stats').textContent, bars: t.querySelectorAll('svg.hist rect').length,
                    cells: t.querySelectorAll('td').length};""")
        assert shown["bars"] == 24 and shown["cells"] == 0
        assert re.match(r"min -?[\d.]+ +max [\d.]+ +mean -?[\d.]+ +std [\d.]+", shown["stats"].replace("\xa0", " "))
        assert "512 numbers: more than the page's table limit of 256" in shown["stats"]
        assert [m for m in browser.console() if m["level"] in ("SEVERE", "ERROR")] == []
    if shots == SCREENSHOTS:
        _smaller(shots)
