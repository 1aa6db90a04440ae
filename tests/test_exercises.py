"""The gradient-check exercises (the backward track): every solution passes the checker, every
planted mistake is named, the checker never blames a correct backward, and the `tinyattn exercises`
command. The engine and manual-backprop tracks, teachers' courses and grades: test_course.py."""

import dataclasses
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyattn import exercises
from tinyattn.app import cli
from tinyattn.exercises import checker, report
from tinyattn.exercises.exercise import SKELETON_RAISE, SOLUTION_MARKER
from tinyattn.exercises.strategies import Strategies

EXERCISES = exercises.track("backward")
ALL = exercises.EXERCISES  # the three tracks: what `start` and `check` take by default
MISTAKES = [(exercise, mistake) for exercise in EXERCISES for mistake in exercise.mistakes]
PHASE = {"example": "example", "edge case": "edge case", "float32": "float32"}
STRATEGIES = Strategies()
NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "notebooks"


def ids(items):
    return [f"{e.name}-{m.name}" for e, m in items]


def fits(lines):
    too_long = [line for line in lines if len(line) > 80]
    assert not too_long, f"lines over 80 columns: {too_long}"


def run(capsys, *argv):
    code = cli.main(["exercises", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------------------------
# the course


def test_the_course_climbs_from_add_to_multi_head_attention():
    assert len(EXERCISES) >= 12
    assert [e.number for e in ALL] == list(range(1, len(ALL) + 1))  # the tracks one after another
    names = [e.name for e in EXERCISES]
    assert names[0] == "add" and names[-1] == "multi_head_attention"
    for needed in ("add", "mul", "sum", "mean", "matmul", "exp_log", "relu", "gelu", "softmax", "log_softmax",
                   "cross_entropy", "layer_norm", "embedding", "dropout", "masked_fill", "causal_head"):
        assert needed in names
    assert len(set(names)) == len(names) and len({e.class_name for e in EXERCISES}) == len(names)
    for exercise in EXERCISES:
        assert exercise.statement and exercise.shapes and exercise.hint and len(exercise.mistakes) >= 2
        assert set(exercise.grads) <= set(exercise.args)
    assert exercises.get("09") is exercises.get("softmax") is exercises.get(9) is exercises.get("09_softmax.py")
    with pytest.raises(KeyError, match="the exercises are add, mul"):
        exercises.get("convolution")


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_skeleton_and_solution_files(exercise, tmp_path):
    skeleton, solution = exercise.file_source(), exercise.file_source(solution=True)
    for text in (skeleton, solution):
        compile(text, exercise.file_name, "exec")
        assert SOLUTION_MARKER not in text
        assert f"class {exercise.class_name}(Function)" in text
    assert skeleton.count(SKELETON_RAISE) == 1 and SKELETON_RAISE not in solution
    assert f"tinyattn exercises check . {exercise.name}" in skeleton
    # the skeleton is the solution up to the solution's first line (the forward, what backward unpacks)
    given = exercise.class_source(solution=False).split("        # your code:")[0]
    assert exercise.class_source(solution=True).startswith(given) and "def forward" in given

    path = tmp_path / exercise.file_name
    path.write_text(skeleton)
    result = checker.check(exercise, checker.load(exercise, path))
    assert result.status == "not done yet" and result.finding.id == "not-done"


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_solution_passes_the_checker(exercise, tmp_path):
    path = tmp_path / exercise.file_name
    path.write_text(exercise.file_source(solution=True))
    function = checker.load(exercise, path)  # the file a teacher hands out, run as a learner's
    result = checker.check(exercise, function)
    assert result.passed, "\n".join(report.block(result))
    assert result.finding is None and "random cases" in result.checked


@pytest.mark.parametrize("examples", [0, checker.EXAMPLES], ids=["fixed-cases-only", "with-random-cases"])
@pytest.mark.parametrize("exercise, mistake", MISTAKES, ids=ids(MISTAKES))
def test_planted_mistake_is_named(exercise, mistake, examples):
    """The fixed cases alone catch every planted mistake: --examples 0 (and a missing Hypothesis) never
    turn one into a pass."""
    result = checker.check(exercise, exercise.make(mistake.backward), examples=examples)
    text = report.block(result)
    assert result.status == "FAIL", text
    assert result.finding.id == mistake.finding, text
    assert result.phase == PHASE[mistake.found_by], text
    fits(text + [report.table_row(result)])
    assert "Traceback" not in "\n".join(text)
    if mistake.found_by == "edge case":
        assert "The example passes, but this fixed case fails" in text[1]


def test_every_exercise_plants_no_mistake_that_only_random_cases_catch():
    assert {mistake.found_by for _, mistake in MISTAKES} <= set(PHASE)


def mistake_folders(tmp_path):
    """Folders of learners' files, each exercise's file in folder k holding its k-th planted mistake
    (the reference file with its backward replaced); {folder: [(exercise, mistake)]}."""
    folders = {}
    for exercise in EXERCISES:
        for k, mistake in enumerate(exercise.mistakes):
            folder = tmp_path / f"mistakes{k}"
            folder.mkdir(exist_ok=True)
            module = mistake.backward.__module__
            (folder / exercise.file_name).write_text(
                exercise.file_source(solution=True)
                + f"\n\nfrom {module} import {mistake.name}\n\n"
                + f"{exercise.class_name}.backward = staticmethod({mistake.name})\n")
            folders.setdefault(folder, []).append((exercise, mistake))
    return folders


HIDE_HYPOTHESIS = ("import sys; sys.modules['hypothesis'] = None; from tinyattn.app import cli; "
                   "sys.exit(cli.main(sys.argv[1:]))")


@pytest.mark.parametrize("hypothesis", ["hidden", "installed"])
def test_the_command_names_every_planted_mistake_with_examples_0_and_without_hypothesis(tmp_path, hypothesis):
    """`tinyattn exercises check DIR` on learners' files that hold the planted mistakes: every one is
    named, in a child process where `import hypothesis` fails (random cases on, as by default) and in
    one where it works (--examples 0); the header and the summary say what ran."""
    for folder, planted in mistake_folders(tmp_path).items():
        names = [exercise.name for exercise, _ in planted]
        if hypothesis == "hidden":
            argv = [sys.executable, "-c", HIDE_HYPOTHESIS, "exercises", "check", str(folder), *names]
        else:
            argv = [sys.executable, "-m", "tinyattn", "exercises", "check", str(folder), *names, "--examples", "0"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        out = done.stdout
        assert done.returncode == 1 and done.stderr == "" and "Traceback" not in out, out + done.stderr
        for exercise, mistake in planted:
            expected = checker.check(exercise, exercise.make(mistake.backward), examples=0)
            assert expected.finding.id == mistake.finding
            assert report.table_row(expected) in out.splitlines(), (mistake.name, out)
        flat = " ".join(out.split())
        counts = f"0 of {len(planted)} pass, {len(planted)} fail"  # and nothing else: no error, none missing
        assert f"{counts} (" in flat or flat.endswith(counts), flat
        if hypothesis == "hidden":
            assert "random cases each" not in flat and "20 random cases" not in flat
            assert "(float64 finite differences, the fixed cases only: no random cases, Hypothesis is not " \
                   "installed (pip install hypothesis))" in flat
            assert flat.endswith(f"{len(planted)} fail (the fixed cases only, no "
                                 "random cases: Hypothesis is not installed (pip install hypothesis))")
        else:
            assert "(float64 finite differences, no random cases)" in flat and "Hypothesis" not in flat
        fits(out.splitlines())


def test_without_hypothesis_a_pass_says_the_random_cases_did_not_run(tmp_path):
    run_folder = tmp_path / "course"
    cli.main(["exercises", "start", str(run_folder), "--solutions"])
    argv = [sys.executable, "-c", HIDE_HYPOTHESIS, "exercises", "check", str(run_folder), "embedding"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    flat = " ".join(done.stdout.split())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "random cases each" not in flat and "the fixed cases only: no random cases" in flat
    assert flat.endswith("1 of 1 pass (the fixed cases only, no random cases: Hypothesis is not installed "
                         "(pip install hypothesis))")
    script = ("import sys; sys.modules['hypothesis'] = None; from tinyattn import exercises; "
              "exercises.check(exercises.solution('embedding'))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.stdout == ("13 embedding: pass (the example and 1 edge case, no random cases: Hypothesis is not "
                           "installed (pip install hypothesis))\n"), done.stdout + done.stderr


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
@given(data=st.data())
def test_no_false_diagnosis_on_a_correct_backward(exercise, data):
    """Over random cases (300 per exercise under HYPOTHESIS_PROFILE=dev), the solution passes the full
    check (whole Jacobians against finite differences) and agrees with the library's own gradient."""
    case = data.draw(st.composite(lambda draw: exercise.random_case(draw, STRATEGIES))(), label="case")
    result = checker.analyse(exercise, exercise.function, case)
    assert result.passed, "\n".join(report.block(result))
    assert checker.quick_failure(exercise, exercise.function, case) is None


# ---------------------------------------------------------------------------------------------
# what the diagnoses say


def block(name, backward):
    """The report on a planted mistake, its lines joined into one (the wrapping aside)."""
    exercise = exercises.get(name)
    return " ".join(" ".join(report.block(checker.check(exercise, exercise.make(backward)))).split())


def test_a_wrong_backward_that_matches_no_pattern_gets_the_plain_report():
    def arbitrary(ctx, grad_y):
        (y,) = ctx.saved_tensors
        return y * (grad_y - (grad_y * y).sum(dim=-1, keepdim=True)) + 0.1 * grad_y.sum(dim=-1, keepdim=True)

    text = block("softmax", arbitrary)
    assert text.startswith("09 softmax: FAIL - disagrees with finite differences")
    assert "matches none of the usual mistakes" in text
    assert "x: matches no known mistake" in text
    assert "d y[" in text and ": numerical " in text and ", yours " in text and "entries off" in text


def test_diagnoses_name_the_factor_and_what_it_means():
    mean = exercises.get("mean")
    text = block("mean", mean.mistakes[0].backward)
    assert "FAIL - off by a factor of n" in text and "x: is off by a factor of n = 3" in text
    head = exercises.get("causal_head")
    text = block("causal_head", head.mistakes[0].backward)
    assert "FAIL - scale 1/sqrt(d) forgotten" in text
    assert "W_query: is off by a factor of sqrt(d) = 1.732" in text and "W_key: is off" in text
    assert "x: is wrong too, with no pattern of its own" in text
    text = block("dropout", exercises.get("dropout").mistakes[1].backward)
    assert "the 1/(1 - p) scale missing" in text and "1 - p = 0.75" in text


def test_diagnoses_of_shapes_say_which_dims():
    add = exercises.get("add")
    text = block("add", add.mistakes[0].backward)
    assert "y: has the shape [2, 3, 4] it is broadcast to, not [3, 4]" in text
    assert "sum your gradient over it" in text
    text = block("add", add.mistakes[2].backward)
    assert "y: is summed over dim 2, not 0" in text
    matmul = exercises.get("matmul")
    text = block("matmul", matmul.mistakes[0].backward)
    assert "b: is the transpose of the right one (shape [5, 4], not [4, 5])" in text
    # grad_out @ b for grad_out @ b^T: a shape error, unless b is square; then the Jacobian is transposed
    square = {**matmul.example(), "b": np.random.default_rng(0).standard_normal((4, 4))}
    result = checker.analyse(matmul, matmul.make(matmul.mistakes[2].backward), square)
    assert result.finding.id == "transposed" and "a: is the right Jacobian transposed" in result.lines


def test_a_gradient_that_must_be_zero():
    relu = exercises.get("relu")  # every x negative: nothing reaches the output
    result = checker.analyse(relu, relu.make(relu.mistakes[0].backward), {"x": -np.ones((2, 3))})
    assert result.finding.id == "not-zero"
    assert "x: is non-zero, but here the output does not depend on x at all" in result.lines


def test_right_numbers_in_the_wrong_shape():
    def keepdim_left_on(ctx, grad_y):
        grad_x, grad_weight, grad_bias = exercises.get("layer_norm").function.backward(ctx, grad_y)
        return grad_x, grad_weight.unsqueeze(0), grad_bias

    text = block("layer_norm", keepdim_left_on)
    assert "FAIL - right numbers, wrong shape" in text
    assert "weight: has the right numbers in shape [1, 4], not [4]" in text


def test_the_shrunk_counterexample_is_shown_and_reproducible():
    # without its edge case, only a random case shows the embedding's assignment mistake
    embedding = dataclasses.replace(exercises.get("embedding"), edge_cases=None)
    wrong = embedding.make(embedding.mistakes[0].backward)
    first, second = checker.check(embedding, wrong), checker.check(embedding, wrong)
    assert checker.format_case(first.case, embedding.args) == checker.format_case(second.case, embedding.args)
    text = " ".join(" ".join(report.block(first)).split())
    assert "(repeated ids: " in text and "the smallest Hypothesis found: ids (" in text
    assert "keeps only the last token's gradient in a row whose id repeats" in text
    assert first.phase == "random case" and "The example passes, but this case fails" in text
    entropy = exercises.get("cross_entropy")
    text = block("cross_entropy", entropy.mistakes[0].backward)
    assert "this fixed case fails (2 targets equal to ignore_index)" in text and "ignore_index = -100" in text


def test_float32_instability_is_told_apart_from_a_wrong_gradient():
    entropy = exercises.get("cross_entropy")
    text = block("cross_entropy", entropy.mistakes[2].backward)
    assert "FAIL - unstable in float32" in text and "Right in float64, wrong in float32 at logits" in text
    assert "NaN or inf in float32" in text and "subtract each row's max" in text


class BadBackwards:
    """Backward passes that break the rules rather than the math."""

    @staticmethod
    def too_few(ctx, grad_out):
        x, y = ctx.saved_tensors
        return grad_out * y

    @staticmethod
    def a_number(ctx, grad_out):
        return 1.0, None

    @staticmethod
    def changes_saved(ctx, grad_y):
        (y,) = ctx.saved_tensors
        y *= 2
        return grad_y * 0

    @staticmethod
    def nan(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (x > 0) / 0.0


@pytest.mark.parametrize("name, backward, finding, words", [
    ("mul", BadBackwards.too_few, "bad-return", "backward returns 1 value, but forward takes 2 arguments (x, y)"),
    ("dropout", BadBackwards.a_number, "bad-return", "Return a tensor for x (of its shape), not a float"),
    ("softmax", BadBackwards.changes_saved, "changes-saved", "changes a tensor that forward saved"),
    ("relu", BadBackwards.nan, "nan", "has NaN or inf entries"),
])
def test_backward_passes_that_break_the_rules(name, backward, finding, words):
    exercise = exercises.get(name)
    result = checker.check(exercise, exercise.make(backward))
    assert result.status == "FAIL" and result.finding.id == finding
    assert words in " ".join(" ".join(report.block(result)).split())


def test_the_python_api_that_the_notebook_uses(capsys):
    softmax = exercises.get("softmax")
    result = exercises.check(softmax.function, examples=3)
    assert result.passed and capsys.readouterr().out == "09 softmax: pass (the example, 3 random cases)\n"
    exercises.check(softmax.make(softmax.mistakes[3].backward), exercise="softmax", examples=3)
    assert capsys.readouterr().out.startswith("09 softmax: FAIL - sign flipped\n")
    with pytest.raises(KeyError, match="pass exercise='softmax'"):
        exercises.check(type("Mine", (), {}))
    assert exercises.solution("relu") is exercises.get("relu").function


def test_without_hypothesis_the_random_stage_is_skipped(monkeypatch):
    def missing(*args, **kwargs):
        raise ImportError("No module named 'hypothesis'")

    monkeypatch.setattr(checker, "search", missing)
    relu = exercises.get("relu")
    result = checker.check(relu, relu.function)
    assert result.passed and result.checked == ("the example, no random cases: Hypothesis is not installed "
                                                "(pip install hypothesis)")


def test_the_checker_leaves_the_random_state_alone():
    import tinyattn

    tinyattn.manual_seed(5)
    expected = tinyattn.rand(3)
    tinyattn.manual_seed(5)
    dropout = exercises.get("dropout")
    checker.check(dropout, dropout.make(dropout.mistakes[2].backward), examples=2)
    assert tinyattn.equal(tinyattn.rand(3), expected)


# ---------------------------------------------------------------------------------------------
# the command


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A fresh working folder, so that the paths in the output are as short as a learner's."""
    monkeypatch.chdir(tmp_path)
    return pathlib.Path(".")


def test_start_writes_the_skeletons_and_never_overwrites(capsys, here):
    folder = here / "course"
    code, out, _ = run(capsys, "start", folder)
    assert code == 0 and f"wrote {len(ALL)} exercises" in out and "tinyattn exercises check" in out
    files = sorted(p.name for p in folder.iterdir())
    assert files == [e.file_name for e in ALL]
    mine = folder / "09_softmax.py"
    mine.write_text(mine.read_text().replace(SKELETON_RAISE, "return grad_y"))
    code, out, _ = run(capsys, "start", folder)
    assert code == 0 and "kept 1 file you changed" in out and "09_softmax.py" in out
    assert "return grad_y" in mine.read_text()  # the learner's work is still there
    fits(out.splitlines())
    code, out, _ = run(capsys, "start", here / "answers", "--solutions")
    assert code == 0 and f"wrote {len(ALL)} solutions" in out
    assert SKELETON_RAISE not in (here / "answers" / "09_softmax.py").read_text()
    (here / "a_file").write_text("")
    code, _, err = run(capsys, "start", here / "a_file")
    assert code == 2 and "is a file, not a folder" in err


def test_check_on_fresh_skeletons_says_not_done_yet(capsys, here):
    tmp_path = here / "course"
    run(capsys, "start", tmp_path)
    code, out, err = run(capsys, "check", tmp_path)
    assert code == 1 and err == ""
    assert out.count("not done yet") == len(ALL) + 1  # one per row, and the summary
    assert "Traceback" not in out and out.rstrip().endswith(f"0 of {len(ALL)} pass, {len(ALL)} not done yet")
    fits(out.splitlines())


def test_check_reports_broken_files_briefly(capsys, here):
    tmp_path = here / "course"
    run(capsys, "start", tmp_path)
    softmax = tmp_path / "09_softmax.py"
    softmax.write_text(softmax.read_text().replace(SKELETON_RAISE, "return (grad_y"))
    relu = tmp_path / "07_relu.py"
    relu.write_text(relu.read_text().replace(SKELETON_RAISE, "return grad_out * mask"))
    (tmp_path / "02_mul.py").unlink()
    code, out, _ = run(capsys, "check", tmp_path, "mul", "relu", "softmax")
    assert code == 1 and "Traceback" not in out
    line = next(n for n, text in enumerate(softmax.read_text().splitlines(), 1) if "return (grad_y" in text)
    assert f"error         SyntaxError at 09_softmax.py:{line}" in out
    line = next(n for n, text in enumerate(relu.read_text().splitlines(), 1) if "return grad_out * mask" in text)
    assert f"07_relu.py:{line}: NameError: name 'mask' is not defined" in out
    assert "missing       no file" in out
    fits(out.splitlines())


def test_check_a_folder_of_solutions_and_mistakes(capsys, here):
    tmp_path = here / "course"
    run(capsys, "start", tmp_path, "--solutions")
    code, out, _ = run(capsys, "check", tmp_path, "softmax", "15", "--examples", "5")
    assert code == 0 and out.rstrip().endswith("2 of 2 pass")
    mul = tmp_path / "02_mul.py"
    mul.write_text(mul.read_text().replace("Mul.sum_to(grad_out * y, x.shape), Mul.sum_to(grad_out * x, y.shape)",
                                           "Mul.sum_to(grad_out * x, x.shape), Mul.sum_to(grad_out * y, y.shape)"))
    code, out, _ = run(capsys, "check", tmp_path, "mul")
    assert code == 1 and "FAIL          gradient for the wrong input (swapped)" in out
    assert "The gradients of x and y are exchanged" in out
    fits(out.splitlines())


def test_the_notebook_and_the_command_print_the_same_report(capsys, tmp_path):
    exercise = exercises.get("layer_norm")
    run(capsys, "start", tmp_path, "--solutions")
    path = tmp_path / exercise.file_name
    path.write_text(path.read_text().replace("grad_weight, grad_bias\n", "grad_bias, grad_weight\n"))
    _, out, _ = run(capsys, "check", tmp_path, "layer_norm")
    exercises.check(checker.load(exercise, path))  # what a notebook cell does with its class
    from_python = capsys.readouterr().out
    assert from_python.startswith("12 layer_norm: FAIL - gradient for the wrong input (swapped)")
    assert from_python in out


def test_usage_errors_exit_2(capsys, tmp_path):
    code, _, err = run(capsys, "check", tmp_path / "nowhere")
    assert code == 2 and "there is no folder" in err and len(err.strip().splitlines()) == 1
    readme = tmp_path / "README.md"
    readme.write_text("# notes")
    code, _, err = run(capsys, "check", readme)
    assert code == 2 and f"{str(readme)!r} is a file, not a folder of exercises" in err
    assert "there is no folder" not in err and f"start {readme}" not in err
    assert "`tinyattn exercises start DIR` writes them to a new folder DIR" in err
    run(capsys, "start", tmp_path / "course")
    code, _, err = run(capsys, "check", tmp_path / "course" / "13_embedding.py")
    suggested = f"tinyattn exercises check {tmp_path / 'course'} embedding"
    assert code == 2 and f"`{suggested}`" in err
    code, out, _ = run(capsys, *suggested.split()[2:])  # what it suggests works
    assert code == 1 and "13  embedding             not done yet" in out
    code, _, err = run(capsys, "hint", "convolution")
    assert code == 2 and "no exercise 'convolution'" in err
    code, _, err = run(capsys, "check", tmp_path, "--examples", "-1")
    assert code == 2 and "--examples must be 0 or more" in err


def test_list_and_hint(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0 and all(e.name in out for e in EXERCISES)
    fits(out.splitlines())
    code, out, _ = run(capsys, "hint", "softmax")
    assert code == 0 and out.startswith("Hint for 09_softmax") and "keepdim=True" in out
    fits(out.splitlines())


# ---------------------------------------------------------------------------------------------
# the notebooks use the same exercises and the same checker


def test_the_notebooks_hold_the_package_exercises_and_their_reports():
    if not (NOTEBOOKS / "05_gradient_check_exercises.ipynb").exists():
        pytest.skip("the notebooks are not in this checkout")
    for version, expected in (("exercises", "not done yet"), ("solutions", "pass")):
        notebook = json.loads((NOTEBOOKS / f"05_gradient_check_{version}.ipynb").read_text())
        cells = notebook["cells"]
        tag = "exercise" if version == "exercises" else "solution"
        sources = ["".join(c["source"]) for c in cells if tag in c.get("metadata", {}).get("tags", [])]
        assert sources == [e.class_source(solution=version == "solutions").rstrip("\n") for e in ALL]
        statements = {"".join(c["source"]) for c in cells if c["cell_type"] == "markdown"}
        assert all(e.markdown() in statements for e in ALL)
        printed = "".join("".join(o.get("text", "")) for c in cells if c["cell_type"] == "code"
                          for o in c.get("outputs", []))
        for exercise in ALL:
            assert f"{exercise.number:02d} {exercise.name}: {expected}" in printed
