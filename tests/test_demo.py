"""`tinyattn demo`: the seed's multi-head attention walk prints the seed's numbers (tinyattn/app/demo.py)."""

import contextlib
import io
import json
import pathlib
import re

import pytest

import tinyattn
from tinyattn import autograd
from tinyattn.app import demo

SEED_CELLS = pathlib.Path(__file__).parent / "seed_cells" / "000.json"


def run_demo(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = demo.main(list(argv))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def full_run():
    return run_demo()


def normalized(text):
    """The seed's PyTorch names read as tinyattn's; grad_fn names are not compared."""
    text = text.replace("torch.Size", "tinyattn.Size")
    return re.sub(r"grad_fn=<\w+>", "grad_fn=<>", text)


# what the notebook printed (seed 000), for the explicit-weights example and the module at seed 123
SCORES = """\
tensor([[[[ 13.4968, -17.5172,  -0.5743],
          [ 19.3111,  -4.1464,   2.1664],
          [  4.6869,  -3.0948,   0.2274]],

         [[ 79.2289,  80.8105,  22.8628],
          [ 26.4688,  50.7943,  11.0376],
          [ 15.0997,  18.8007,   4.8429]]]])"""
KEYS = """\
tensor([[[-6.6988, -7.7515,  2.1643,  4.8921, 15.1472, -2.8751],
         [ 7.4296, -2.3733, -4.4848,  0.9557, 13.9021, -8.3648],
         [ 0.1044, -1.4464, -0.3315,  0.8354,  4.1499, -1.6057]]])"""
KEYS_BY_HEAD = """\
tensor([[[[-6.6988, -7.7515,  2.1643],
          [ 7.4296, -2.3733, -4.4848],
          [ 0.1044, -1.4464, -0.3315]],

         [[ 4.8921, 15.1472, -2.8751],
          [ 0.9557, 13.9021, -8.3648],
          [ 0.8354,  4.1499, -1.6057]]]])"""
MASKED_SCORES = """\
tensor([[[[13.4968,    -inf,    -inf],
          [19.3111, -4.1464,    -inf],
          [ 4.6869, -3.0948,  0.2274]],

         [[79.2289,    -inf,    -inf],
          [26.4688, 50.7943,    -inf],
          [15.0997, 18.8007,  4.8429]]]])"""
MODULE_OUTPUT = """\
tensor([[[ 0.1569, -0.0873,  0.0210,  0.0215, -0.3243, -0.2518],
         [ 0.1117, -0.0547,  0.0406, -0.0213, -0.3251, -0.2993],
         [ 0.1196, -0.0491,  0.0318, -0.0635, -0.2788, -0.2578]],

        [[ 0.1569, -0.0873,  0.0210,  0.0215, -0.3243, -0.2518],
         [ 0.1117, -0.0547,  0.0406, -0.0213, -0.3251, -0.2993],
         [ 0.1196, -0.0491,  0.0318, -0.0635, -0.2788, -0.2578]]],
       grad_fn=<>)"""


def test_the_demo_prints_the_seeds_numbers(full_run):
    code, text = full_run
    assert code == 0
    for expected in (SCORES, KEYS, KEYS_BY_HEAD, MASKED_SCORES, MODULE_OUTPUT):
        assert expected in normalized(text)
    for step in range(1, 12):
        assert f"STEP {step}:" in text
    assert "tinyattn.Size([1, 2, 3, 3])" in text and "tinyattn.Size([2, 3, 6])" in text
    assert "no dropout" in text


def test_the_module_with_the_explicit_weights_computes_the_steps(full_run):
    _, text = full_run
    assert ">>> print((out - context_vec).abs().max())\ntensor(0., grad_fn=<" in text


def test_each_printed_block_of_the_seeds_cells_appears(full_run):
    """Every tensor, shape and number the notebook printed in cells In [34] to In [43], the mask part
    of In [50] (before its unknown dropout) and the module at seed 123 (In [62]) is in the demo's output."""
    if not SEED_CELLS.exists():
        pytest.skip("tests/seed_cells/000.json is not there")
    cells = {c["cell"]: c for c in json.loads(SEED_CELLS.read_text())["cells"]}
    _, text = full_run
    text = normalized(text)
    checked = 0
    for name, keep_lines in [("In [34]", None), ("In [35]", None), ("In [36]", None), ("In [37]", None),
                             ("In [38]", None), ("In [42]", None), ("In [43]", None), ("In [50]", 14),
                             ("In [62]", None)]:
        cell = cells[name]
        lines = normalized(cell["expected_output"]).splitlines()[:keep_lines]
        if cell["truncated"]:
            lines = lines[:-1]  # the dump cut the last line short
        # split the output into printed values: each starts at a line that does not begin with a space
        blocks, current = [], []
        for line in lines:
            if current and line and not line[0].isspace():
                blocks.append("\n".join(current))
                current = []
            current.append(line)
        blocks.append("\n".join(current))
        for block in blocks:
            if block.strip():
                assert block.strip() in text, f"{name}: {block!r} is not in the demo's output"
                checked += 1
    assert checked >= 20


def test_the_trace_table_and_the_gradient_check(full_run):
    _, text = full_run
    trace_part = text[text.index("THE TRACE"):text.index("GRADIENT CHECK")]
    for expected in ("mha.W_query", "mha.out_proj", "attention (backward)", "(1, 3, 6) -> (1, 3, 2, 3)",
                     "(1, 2, 3, 3), (1, 2, 3, 3), (1, 2, 3, 3), (3, 3) -> (1, 2, 3, 3), (1, 2, 3, 3)",
                     "tinyattn/nn/attention.py:", "keys = self.W_key(x)"):
        assert expected in trace_part
    assert "PASSED" in text[text.index("GRADIENT CHECK"):]


def test_options_leave_parts_out():
    code, text = run_demo("--no-trace", "--no-gradcheck")
    assert code == 0
    assert "THE TRACE" not in text and "GRADIENT CHECK" not in text
    assert SCORES in text


def test_the_demo_leaves_the_random_state_and_the_observers_as_they_were():
    tinyattn.manual_seed(7)
    expected = tinyattn.rand(3).tolist()
    tinyattn.manual_seed(7)
    run_demo("--no-gradcheck")
    assert tinyattn.rand(3).tolist() == expected
    assert autograd.observers == []


def test_help_names_the_command(capsys):
    with pytest.raises(SystemExit) as info:
        demo.main(["--help"])
    assert info.value.code == 0
    assert "tinyattn demo" in capsys.readouterr().out


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_in_an_80_column_terminal_no_line_is_wider(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = Terminal()
    with contextlib.redirect_stdout(out):
        assert demo.main([]) == 0
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "attention (backward)" in text and "keys = self.W_key(x)" in text and "PASSED" in text
    assert normalized(SCORES) in normalized(text)  # the tensors print as they do elsewhere


def test_into_a_file_the_trace_keeps_one_line_per_op(full_run):
    _, text = full_run  # stdout was not a terminal
    assert re.search(r"\n\s+12  mha\s+attention\s+\(1, 2, 3, 3\).*float32\s+144 B\s+tinyattn/nn/attention.py:\d+\s+"
                     r"context_vec, attn_weights = F\.attention", text)

