"""Extract the code cells and their printed outputs from the attention chapter's notebook dumps.

The project started from text dumps of three notebooks (seeds 000, 001 and 004). This script turns
each dump into `<seed>.json`: a list of cells in notebook order,

    {"cell": "In [12]", "counter": 12, "missing_before": [10, 11], "code": "...",
     "expected_output": "...", "truncated": false, "shell": false}

which `tests/test_seeds_attention.py` replays on tinyattn. The JSON files are committed, so the
replay needs neither the dumps nor this script; run it again only if the dumps change:

    python tests/seed_cells/extract.py /path/to/seeds        # writes tests/seed_cells/*.json

How a dump is read. A dump is plain text: a markdown paragraph, then `In [N]:`, the cell's code, its
output, more markdown, the next `In [N]:`. Nothing marks where code ends and output or markdown begins,
so the body of a cell is cut into blocks at blank lines and each block is classified:
- code: the cell's code so far plus this block still parses as Python, and the block does not start like
  printed output (the display of a bare `torch.Size` would otherwise parse as code);
- output: the block starts like something printed: a tensor, `Parameter containing:`, `torch.Size`, a
  number, a bracket, or the start of a string literal that the cell's code prints;
- anything else is markdown, and ends the cell.
`truncated` marks an output that the dump cuts short (more `[` than `]`): only its beginning can be
compared. `missing_before` lists the execution counters absent between this cell and the previous one:
cells that ran in the notebook but are not in the dump (they matter when they drew random numbers).
"""

import ast
import json
import pathlib
import re
import sys

SEEDS = ("000", "001", "004")
HEADER = re.compile(r"^In \[(\d+|None| )\]:\s*$")
OUTPUT_START = re.compile(
    r"^\s*(tensor\(|Parameter containing:|torch\.Size|[-+]?\d|\[|\(|True\b|False\b|None\b)"
)


def blocks_of(lines):
    """Split lines into blocks separated by blank (or whitespace-only) lines."""
    blocks, current = [], []
    for line in lines:
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def parses(source):
    try:
        ast.parse(source)
        return True
    except SyntaxError:
        return False


def printed_prefixes(code):
    """The literal text at the start of every string constant in the code (f-strings up to `{`)."""
    prefixes = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            prefixes.append(node.value)
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            prefixes.append(node.values[0].value)
    return [p.strip() for p in prefixes if len(p.strip()) >= 2]


def looks_printed(line, prefixes):
    return bool(OUTPUT_START.match(line)) or any(line.strip().startswith(p) for p in prefixes)


def split_cell(body):
    """(code, output) of one cell's body; markdown after the output is dropped."""
    blocks = blocks_of(body)
    if blocks and blocks[0][0].startswith(("pip ", "!", "%")):  # a shell cell
        return "\n".join(blocks[0]), "", True
    code_blocks = []
    while blocks:
        candidate = "\n\n".join("\n".join(b) for b in code_blocks + [blocks[0]])
        if OUTPUT_START.match(blocks[0][0]) and code_blocks or not parses(candidate):
            break
        code_blocks.append(blocks.pop(0))
    code = "\n\n".join("\n".join(b) for b in code_blocks)
    prefixes = printed_prefixes(code) if code else []
    output_blocks = []
    for block in blocks:
        if not looks_printed(block[0], prefixes):
            break  # markdown: the rest of the cell's text is prose
        output_blocks.append(block)
    output = "\n\n".join("\n".join(line.rstrip() for line in b) for b in output_blocks)
    return code, output, False


def extract(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if HEADER.match(line)]
    cells, previous = [], None
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        label = HEADER.match(lines[start]).group(1)
        counter = int(label) if label.isdigit() else None
        code, output, shell = split_cell(lines[start + 1:end])
        missing = []
        if counter is not None and previous is not None and counter > previous + 1:
            missing = list(range(previous + 1, counter))
        if counter is not None:
            previous = counter
        cells.append({
            "cell": f"In [{label}]",
            "counter": counter,
            "missing_before": missing,
            "code": code,
            "expected_output": output,
            "truncated": output.count("[") > output.count("]"),
            "shell": shell,
        })
    return cells


def main(seeds_dir):
    here = pathlib.Path(__file__).parent
    for seed in SEEDS:
        (path,) = pathlib.Path(seeds_dir).glob(f"{seed}_*.txt")
        cells = extract(path)
        out = here / f"{seed}.json"
        out.write_text(json.dumps({"source": path.name, "cells": cells}, indent=1) + "\n", encoding="utf-8")
        print(f"{out.name}: {len(cells)} cells from {path.name}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/seed_cells/extract.py SEEDS_DIR  (the folder of the NNN_*.txt dumps)")
    main(sys.argv[1])
