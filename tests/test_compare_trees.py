"""benchmarks/compare_trees.py, which times the per-op paths of two source trees: it runs, prints a row
for every op it was asked for, never imports tinyattn itself, and refuses a folder that holds no tree.
No timing is asserted (the figures depend on the machine and its load)."""

import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "compare_trees.py"
SRC = ROOT / "src"


def compare(*arguments):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, arguments)], capture_output=True, text=True,
                          timeout=300)


def the_script():
    spec = importlib.util.spec_from_file_location("compare_trees", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_rows(output):
    """{op name: its cells} of the printed Markdown table."""
    rows = {}
    for line in output.splitlines():
        if line.startswith("| ") and not line.startswith(("| op |", "|---")):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            rows[cells[0]] = cells
    return rows


def test_every_op_of_the_table_runs_on_this_tree():
    """Each statement of OPS runs once on SETUP's fixtures here (the script only times them)."""
    script = the_script()
    namespace = {}
    exec(script.SETUP, namespace)
    for name, statement, _ in script.OPS:
        exec(statement, namespace)
    assert len(script.NAMES) == len(set(script.NAMES)) >= 25


def test_one_round_of_a_few_ops_prints_a_row_for_each(tmp_path):
    only = ["add", "mul_recorded", "no_grad_enter"]
    figures = tmp_path / "figures.json"
    # run as the script, in a process that checks afterwards that it never imported tinyattn
    check = ("import runpy, sys\n"
             f"sys.argv = [{str(SCRIPT)!r}, '--before', {str(SRC)!r}, '--after', {str(SRC)!r}, '--rounds', '1',"
             f" '--json', {str(figures)!r}, '--only', *{only!r}]\n"
             "try:\n"
             "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
             "except SystemExit as exit:\n"
             "    assert exit.code == 0, exit.code\n"
             "assert 'tinyattn' not in sys.modules, 'the comparing process imported tinyattn'\n")
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = table_rows(result.stdout)
    assert list(rows) == only + ["geometric mean"], result.stdout
    for name in only:
        cells = rows[name]
        assert len(cells) == 7 and all(float(cells[i].split()[0]) > 0 for i in (3, 4, 5)), cells
    assert "CPU: " in result.stdout and "NumPy " in result.stdout
    report = json.loads(figures.read_text(encoding="utf-8"))
    assert list(report["ops"]) == only and report["before"] == report["after"] == str(SRC)
    assert all(len(report["ops"][name]["before_rounds_us"]) == 1 for name in only)


@pytest.mark.parametrize("which", ["--before", "--after"])
def test_a_folder_without_a_tree_is_refused_by_name(tmp_path, which):
    missing = tmp_path / "no-such-tree" / "src"
    arguments = {"--before": SRC, "--after": SRC, which: missing}
    result = compare(*[part for pair in arguments.items() for part in pair], "--rounds", "1", "--only", "add")
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{which} {missing}: no tinyattn package there" in result.stderr
    assert result.stdout == ""


def test_an_unknown_op_is_refused_with_the_names():
    result = compare("--before", SRC, "--after", SRC, "--only", "add", "muls")
    assert result.returncode == 2
    assert "--only: no op named muls; the ops are tensor, randn, add, mul" in result.stderr


def test_a_tree_that_fails_to_import_is_named(tmp_path):
    package = tmp_path / "src" / "tinyattn"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('this tree is broken')\n", encoding="utf-8")
    result = compare("--before", SRC, "--after", tmp_path / "src", "--rounds", "1", "--only", "add")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"compare_trees: --after {tmp_path / 'src'}: the setup failed" in result.stderr
    assert "this tree is broken" in result.stderr
