"""The committed notebooks: built from notebooks/src, stored with outputs, exercises still exercises.

Running the notebooks themselves is nbmake's job (`pytest --nbmake notebooks`); these checks read
the files only, so they are fast.
"""

import importlib.util
import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")

NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
NAMES = [
    "01_simplified_self_attention.ipynb",
    "02_trainable_self_attention.ipynb",
    "03_causal_attention.ipynb",
    "04_multi_head_attention.ipynb",
    "05_gradient_check_exercises.ipynb",
    "05_gradient_check_solutions.ipynb",
    "06_bigram_to_gpt.ipynb",
]
SKELETON = 'raise NotImplementedError("write the backward here")'  # the backward track's skeletons
TASK_SKELETON = 'raise NotImplementedError("write this here")'  # the engine and layer tracks'


def _read(name):
    return nbformat.read(NOTEBOOKS / name, as_version=4)


def _build_module():
    spec = importlib.util.spec_from_file_location("notebooks_build", NOTEBOOKS / "_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_notebook_is_there_and_nothing_else():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_valid_and_was_run_without_errors(name):
    nb = _read(name)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, "a notebook without code"
    counts = [cell.execution_count for cell in code]
    assert None not in counts, f"{name}: some cells were not run; rebuild with notebooks/_build.py --execute"
    assert counts == sorted(counts), f"{name}: cells were run out of order"
    assert sum(bool(cell.outputs) for cell in code) >= len(code) // 2, f"{name}: most cells have no output"
    for cell in code:
        for output in cell.outputs:
            assert output.output_type != "error", f"{name}: a stored output is an error: {output.get('ename')}"


def test_notebooks_match_their_sources():
    build = _build_module()
    for source in sorted(build.SOURCES.glob("*.py")):
        for name, fresh in build.notebooks(source).items():
            stored = _read(name)
            expected = [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in fresh.cells]
            actual = [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in stored.cells]
            assert actual == expected, (
                f"{name} differs from notebooks/src/{source.name}: edit the source and rebuild with "
                "python notebooks/_build.py --execute"
            )


def test_exercises_are_skeletons_and_solutions_are_not():
    from tinyattn.exercises import EXERCISES  # notebook 5 holds every exercise of the package

    exercises = _read("05_gradient_check_exercises.ipynb")
    solutions = _read("05_gradient_check_solutions.ipynb")

    skeletons = [c for c in exercises.cells if "exercise" in c.metadata.get("tags", [])]
    assert len(skeletons) == len(EXERCISES)
    assert {exercise.track for exercise in EXERCISES} == {"backward", "engine", "layer"}
    for cell, exercise in zip(skeletons, EXERCISES):
        assert "# --- solution ---" not in cell.source, exercise.name
        if exercise.track == "backward":  # a Function whose backward raises
            assert cell.source.count(SKELETON) == 1, exercise.name
            assert "def backward(ctx" in cell.source, exercise.name
        else:  # the piece the checker runs, with a raise in place of each part to write
            assert (f"def {exercise.class_name}(" in cell.source
                    or f"class {exercise.class_name}:" in cell.source), exercise.name
            assert cell.source.count(TASK_SKELETON) == cell.source.count("# your code:") >= 1, exercise.name
            assert SKELETON not in cell.source, exercise.name
    assert not any("solution" in c.metadata.get("tags", []) for c in exercises.cells)
    # the checks ran and reported "not done yet" instead of failing
    printed = "".join(o.get("text", "") for c in exercises.cells if c.cell_type == "code" for o in c.outputs)
    assert printed.count(": not done yet") == len(EXERCISES)
    for exercise in EXERCISES:
        assert f"{exercise.number:02d} {exercise.name}: not done yet" in printed

    answers = [c for c in solutions.cells if "solution" in c.metadata.get("tags", [])]
    assert len(answers) == len(EXERCISES)
    assert not any(SKELETON in c.source or TASK_SKELETON in c.source for c in solutions.cells)
    printed = "".join(o.get("text", "") for c in solutions.cells if c.cell_type == "code" for o in c.outputs)
    assert printed.count(": pass (") == len(EXERCISES)
    for exercise in EXERCISES:
        assert f"{exercise.number:02d} {exercise.name}: pass (" in printed
    assert "Jacobian mismatch" in printed  # the cell that shows a failing report
    assert ": FAIL - " in printed  # the cells that show the checker's diagnoses


def test_readme_links_every_notebook():
    readme = (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
    for name in NAMES:
        assert f"]({name})" in readme, f"notebooks/README.md does not link {name}"


def test_notebooks_stay_small():
    total = sum(p.stat().st_size for p in NOTEBOOKS.glob("*.ipynb"))
    assert total < 2_000_000, f"the notebooks hold {total / 1e6:.1f} MB of outputs: shrink the figures"
