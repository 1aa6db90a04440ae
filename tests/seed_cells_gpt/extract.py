"""Extract the code cells of seed 002 ("Let's build GPT") and their printed outputs into 002.json.

Seed 002 is a text dump of a notebook: `In [N]:`, the cell's code, its output, markdown, the next
`In [N]:`. The cells are cut by the same reader as the attention chapter's seeds
(`tests/seed_cells/extract.py`); where that reader stops an output too early (printed text with blank
lines in it, outputs followed by markdown) the output is taken as the raw text between the code and
the next cell, cut at the markdown heading named below. The JSON is committed: the replay
(`tests/test_seed_gpt.py`) needs neither the dump nor this script. Run it again only if the dump
changes:

    python tests/seed_cells_gpt/extract.py /path/to/seeds      # writes tests/seed_cells_gpt/002.json

Some cells cannot print the dump's numbers on any library: the notebook ran cells that the dump does
not contain (In [32]-[37], [39], [68]-[79]) and they drew random numbers. For those, the replay
compares with what real PyTorch prints when the dump's cells run as they are; `--pytorch` records that
(it needs torch, and the corpus as input.txt in the current directory):

    python tests/seed_cells_gpt/extract.py --pytorch           # writes tests/seed_cells_gpt/002_pytorch.json
"""

import importlib.util
import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).parent
HEADER = re.compile(r"^In \[(\d+|None| )\]:\s*$")

# cell -> the first line after its output (a markdown line), or None: the output runs to the next cell
RAW_OUTPUTS = {
    "In [8]": None,
    "In [9]": None,
    "In [11]": None,
    "In [19]": "### Bigram Language Modeling",
    "In [30]": None,
    "In [40]": "# Exploring Self-Attention (Single-Head)",
    "In [60]": "## Implementing Self-Attention",
    "In [61]": "### Key and Query Vectors",
    "In [66]": None,
    "In [67]": None,
}
# outputs that the dump cuts short (only their beginning can be compared)
TRUNCATED = {"In [11]", "In [19]"}
# cells whose random numbers depend on cells missing from the dump (see the module docstring)
AFTER_MISSING_CELLS = ("In [38]", "In [40]", "In [81]", "In [82]", "In [83]")


def _reader():
    spec = importlib.util.spec_from_file_location("seed_reader", HERE.parent / "seed_cells" / "extract.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def raw_output(lines, code, end_marker):
    """The dump's text after the last line of `code`, up to `end_marker` (or the end of the cell)."""
    last = code.rstrip().splitlines()[-1].rstrip()
    position = max(i for i, line in enumerate(lines) if line.rstrip() == last)
    out = []
    for line in lines[position + 1:]:
        if end_marker is not None and line.startswith(end_marker):
            break
        out.append(line.rstrip())
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


def extract(path):
    cells = _reader().extract(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if HEADER.match(line)] + [len(lines)]
    for k, cell in enumerate(cells):
        if cell["cell"] in RAW_OUTPUTS:
            body = lines[starts[k] + 1:starts[k + 1]]
            cell["expected_output"] = raw_output(body, cell["code"], RAW_OUTPUTS[cell["cell"]])
        cell["truncated"] = cell["cell"] in TRUNCATED
    return cells


def record_pytorch():
    """Run the cells with real PyTorch; keep the outputs of AFTER_MISSING_CELLS."""
    import ast
    import contextlib
    import io

    import torch

    cells = json.loads((HERE / "002.json").read_text(encoding="utf-8"))["cells"]
    namespace, outputs = {}, {}
    for cell in cells:
        tree = ast.parse(cell["code"])
        last = ast.Expression(tree.body.pop().value) if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(tree, cell["cell"], "exec"), namespace)
            if last is not None and (value := eval(compile(last, cell["cell"], "eval"), namespace)) is not None:
                print(repr(value))
        if cell["cell"] in AFTER_MISSING_CELLS:
            outputs[cell["cell"]] = buffer.getvalue()
    note = (f"What PyTorch {torch.__version__} (CPU) prints for these cells when the dump's cells run in "
            "order, as they are. The notebook behind the dump also ran cells that the dump does not "
            "contain (In [32]-[37], [39], [68]-[79]), which drew random numbers, so its printed numbers "
            "for these cells come from another random stream; these are the numbers to reproduce.")
    out = HERE / "002_pytorch.json"
    out.write_text(json.dumps({"note": note, "outputs": outputs}, indent=1) + "\n", encoding="utf-8")
    print(f"{out.name}: {len(outputs)} outputs")


def main(seeds_dir):
    (path,) = pathlib.Path(seeds_dir).glob("002_*.txt")
    cells = extract(path)
    out = HERE / "002.json"
    out.write_text(json.dumps({"source": path.name, "cells": cells}, indent=1) + "\n", encoding="utf-8")
    print(f"{out.name}: {len(cells)} cells from {path.name}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--pytorch"]:
        sys.exit(record_pytorch())
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/seed_cells_gpt/extract.py SEEDS_DIR  (the folder of the NNN_*.txt dumps)")
    main(sys.argv[1])
