"""Seed 002 ("Let's build GPT", bigram to self-attention) replayed on tinyattn with the imports swapped.

Every code cell of the dump (tests/seed_cells_gpt/002.json, made by extract.py there) runs in order in
one namespace, with `import torch` -> `import tinyattn as torch` and the like; what it prints (and
the value of its last line, as a notebook shows it) is compared with the dump's output. Tensor reprs
are compared after writing `tinyattn.` as `torch.` and hiding the grad_fn's name (PyTorch's internal
op names, like NllLossBackward0, are not tinyattn's); blank lines are ignored (the dump adds some).

The 10000-step training cell In [38] and the sampling cell In [40]: the notebook ran six cells
between In [31] and In [38] (and one before In [40]) that the dump does not contain, and they drew
random batches, so the loss it printed (2.4950690269470215) and its text come from a random stream
the dump does not let anyone replay. Running the dump's cells as they are, PyTorch prints
2.382369041442871 and a text recorded in 002_pytorch.json; tinyattn must print exactly those (it
does: same batches, same float32 arithmetic step for step), and its loss must be near the dump's.

The same holds for the variances printed by In [81]-[83] (the notebook drew from the generator in
cells In [68]-[79] that the dump lacks): they are compared with PyTorch's, and with the dump's within
0.15 (a variance near 1, from other random numbers).

The corpus is read from ../shared/data/tinyshakespeare.txt (the test is skipped without it).
"""

import ast
import contextlib
import io
import json
import pathlib
import re

import pytest

import tinyattn

HERE = pathlib.Path(__file__).parent
CELLS = json.loads((HERE / "seed_cells_gpt" / "002.json").read_text(encoding="utf-8"))["cells"]
PYTORCH = json.loads((HERE / "seed_cells_gpt" / "002_pytorch.json").read_text(encoding="utf-8"))["outputs"]
CORPUS_CANDIDATES = [
    HERE.parent.parent / "shared" / "data" / "tinyshakespeare.txt",
    pathlib.Path("/work/shared/data/tinyshakespeare.txt"),
]
CORPUS = next((p for p in CORPUS_CANDIDATES if p.is_file()), None)
TRAINING_CELLS = ("In [38]", "In [40]")
DUMP_LOSS = 2.4950690269470215

SWAPS = [
    (r"^(\s*)import torch\.nn as nn\b", r"\1import tinyattn.nn as nn"),
    (r"^(\s*)from torch\.nn import functional as F\b", r"\1from tinyattn.nn import functional as F"),
    (r"^(\s*)import torch\b", r"\1import tinyattn as torch"),
]

pytestmark = pytest.mark.skipif(CORPUS is None, reason="tinyshakespeare.txt not found in ../shared/data/")


def swap_imports(code):
    for pattern, replacement in SWAPS:
        code = re.sub(pattern, replacement, code, flags=re.MULTILINE)
    return code


def run_cell(code, namespace):
    """Run a cell like a notebook: its printed text, plus the repr of a final expression."""
    tree = ast.parse(code)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(tree, "<cell>", "exec"), namespace)
        if last is not None:
            value = eval(compile(last, "<cell>", "eval"), namespace)
            if value is not None:
                print(repr(value))
    return buffer.getvalue()


def normalize(text):
    text = text.replace("tinyattn.", "torch.")
    text = re.sub(r"grad_fn=<\w+>", "grad_fn=<...>", text)
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def assert_output(cell, actual):
    if cell["cell"] in PYTORCH:  # numbers the dump's notebook drew after cells the dump lacks
        assert normalize(actual) == normalize(PYTORCH[cell["cell"]]), cell["cell"]
        dump = float(re.search(r"[-\d.]+", cell["expected_output"]).group())
        assert abs(float(re.search(r"[-\d.]+", actual).group()) - dump) < 0.15, cell["cell"]
        return
    expected = normalize(cell["expected_output"])
    got = normalize(actual)
    if cell["truncated"]:  # the dump cuts the output short: its lines must start ours
        assert len(got) >= len(expected), (cell["cell"], got)
        assert got[:len(expected) - 1] == expected[:-1], cell["cell"]
        assert got[len(expected) - 1].startswith(expected[-1].rstrip()), cell["cell"]
    else:
        assert got == expected, f"{cell['cell']}:\n" + "\n".join(got)


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """A namespace and working directory (with input.txt) shared by the cells, run in order."""
    folder = tmp_path_factory.mktemp("seed002")
    (folder / "input.txt").symlink_to(CORPUS)
    return {"folder": folder, "namespace": {}, "outputs": {}}


def run_cells(notebook, cells, monkeypatch):
    monkeypatch.chdir(notebook["folder"])
    for cell in cells:
        notebook["outputs"][cell["cell"]] = run_cell(swap_imports(cell["code"]), notebook["namespace"])


def test_every_cell_before_training_prints_the_dumps_numbers(notebook, monkeypatch):
    cells = [c for c in CELLS if c["cell"] not in TRAINING_CELLS]
    before = [c for c in cells if c["counter"] < 38]
    after = [c for c in cells if c["counter"] > 40]
    run_cells(notebook, before, monkeypatch)
    for cell in before:
        assert_output(cell, notebook["outputs"][cell["cell"]])
    # the attention cells (In [41] on) do not depend on the training: run them in a namespace of
    # their own, so the slow training test below can continue the first one
    saved, rng = dict(notebook["namespace"]), tinyattn.get_rng_state()
    run_cells(notebook, after, monkeypatch)
    for cell in after:
        assert_output(cell, notebook["outputs"][cell["cell"]])
    notebook["namespace"].clear()
    notebook["namespace"].update(saved)
    tinyattn.set_rng_state(rng)


@pytest.mark.slow
def test_training_cells_print_pytorchs_numbers(notebook, monkeypatch):
    """In [38] (10000 AdamW steps) and In [40] (200 sampled characters), as PyTorch prints them."""
    if "m" not in notebook["namespace"]:
        run_cells(notebook, [c for c in CELLS if c["counter"] < 38], monkeypatch)
    cells = {c["cell"]: c for c in CELLS}
    run_cells(notebook, [cells["In [38]"], cells["In [40]"]], monkeypatch)
    loss = float(notebook["outputs"]["In [38]"])
    assert notebook["outputs"]["In [38]"] == PYTORCH["In [38]"]  # bit for bit: 2.382369041442871
    assert abs(loss - DUMP_LOSS) < 0.15  # the dump's run: the same training, other random batches
    assert notebook["outputs"]["In [40]"] == PYTORCH["In [40]"]
    pred = eval(notebook["outputs"]["In [40]"].splitlines()[1])
    assert len(pred) == 201 and pred[0] == 0
