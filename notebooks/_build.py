"""Write the notebooks from their sources in notebooks/src/, and run them to store their outputs.

Each notebook is written as a Python file in the "percent" format that Jupytext, VS Code and
Spyder read: a line `# %%` starts a code cell, `# %% [markdown]` a markdown cell (its lines start
with `# `), and `# %% tags=["exercise"]` gives a cell tags. A source with exercise cells makes two
notebooks, the exercises and the solutions (see VERSIONS). Edit the sources, then:

    python notebooks/_build.py                 # write every .ipynb (no outputs)
    python notebooks/_build.py --execute       # write and run them, storing the outputs
    python notebooks/_build.py --execute 03    # only the notebooks whose name starts with 03

Outputs are stored from a full run (TINYATTN_NOTEBOOK_QUICK unset) of what a fresh clone runs:
notebook 6 without TINYSHAKESPEARE and without notebooks/input.txt, so on the packaged sonnets (the
notebook says so in its first cell, and says when its GPT overfits them).
"""

import argparse
import json
import os
import pathlib
import re
import sys
import time

import nbformat

HERE = pathlib.Path(__file__).resolve().parent
SOURCES = HERE / "src"
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
_HEADER = re.compile(r"^# %%(?P<markdown> \[markdown\])?(?: tags=(?P<tags>\[.*\]))?\s*$")


def parse(text):
    """The cells of a percent-format source: a list of (kind, source, tags)."""
    cells, kind, tags, lines = [], None, [], []

    def flush():
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in body.splitlines())
        cells.append((kind, body, tags))

    for line in text.splitlines():
        match = _HEADER.match(line)
        if match:
            flush()
            kind = "markdown" if match["markdown"] else "code"
            tags = json.loads(match["tags"]) if match["tags"] else []
            lines = []
        elif kind is not None:
            lines.append(line)
    flush()
    return cells


# An exercise source makes two notebooks, NAME_exercises and NAME_solutions. Cells tagged
# "exercise" (the skeletons) or "exercises-only" go only into the first; cells tagged "solution"
# or "solutions-only" only into the second; untagged cells into both.
VERSIONS = {
    "exercises": {"keep": {"exercise", "exercises-only"}, "drop": {"solution", "solutions-only"}},
    "solutions": {"keep": {"solution", "solutions-only"}, "drop": {"exercise", "exercises-only"}},
}


# A cell whose whole body is "#: exercise NAME" (code) or "#: statement NAME" (markdown, written
# "# #: statement NAME" in the source) is filled in from tinyattn.exercises: the skeleton (a cell
# tagged "exercise"), the solution (tagged "solution"), or the statement, so that the notebook and
# `tinyattn exercises start` hand out the same code.
_FROM_PACKAGE = re.compile(r"^#: (?P<what>exercise|statement) (?P<name>\w+)$")


def _filled_in(kind, body, tags):
    match = _FROM_PACKAGE.match(body.strip())
    if not match:
        return body
    from tinyattn import exercises

    exercise = exercises.get(match["name"])
    if match["what"] == "statement":
        return exercise.markdown()
    return exercise.class_source(solution="solution" in tags).rstrip("\n")


def notebooks(source_path):
    """{notebook file name: fresh notebook (no outputs)} for one source file."""
    cells = [(kind, _filled_in(kind, body, tags), tags)
             for kind, body, tags in parse(source_path.read_text(encoding="utf-8"))]
    tags_used = {tag for _, _, tags in cells for tag in tags}
    if not tags_used & {"exercise", "solution"}:
        return {source_path.stem + ".ipynb": _notebook(cells)}
    out = {}
    for version, rule in VERSIONS.items():
        kept = [(kind, body, [t for t in tags if t in ("exercise", "solution")])
                for kind, body, tags in cells if not set(tags) & rule["drop"]]
        out[f"{source_path.stem}_{version}.ipynb"] = _notebook(kept)
    return out


def _notebook(cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNEL)
    nb.metadata["language_info"] = {"name": "python"}
    for i, (kind, body, tags) in enumerate(cells):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        cell = make(body)
        cell["id"] = f"cell-{i:02d}"  # stable ids: rebuilding changes nothing that did not change
        if tags:
            cell.metadata["tags"] = list(tags)
        nb.cells.append(cell)
    return nb


def execute(nb, timeout=1200):
    from nbclient import NotebookClient

    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(HERE)}})
    client.execute()
    return nb


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execute", action="store_true", help="run each notebook and store its outputs")
    parser.add_argument("only", nargs="*", help="name prefixes of the notebooks to build (default: all)")
    args = parser.parse_args(argv)
    sources = sorted(SOURCES.glob("*.py"))
    if args.only:
        sources = [s for s in sources if any(s.stem.startswith(p) for p in args.only)]
    built = [(name, nb) for source in sources for name, nb in notebooks(source).items()]
    for name, nb in built:
        target = HERE / name
        started = time.perf_counter()
        failed = None
        if args.execute:
            try:
                execute(nb)
            except Exception as error:  # write what ran, so that the failing cell can be read
                failed = error
        nbformat.validate(nb)
        nbformat.write(nb, target)
        if failed is not None:
            print(f"{target.name}: a cell failed (outputs so far written):\n{failed}", file=sys.stderr)
            return 1
        took = f" (ran in {time.perf_counter() - started:.0f} s)" if args.execute else ""
        print(f"wrote {target.relative_to(HERE.parent)}{took}", file=sys.stderr)


if __name__ == "__main__":
    if os.environ.get("TINYATTN_NOTEBOOK_QUICK") and "--execute" in sys.argv:
        print("note: TINYATTN_NOTEBOOK_QUICK is set, so the stored outputs come from the short run",
              file=sys.stderr)
    sys.exit(main())
