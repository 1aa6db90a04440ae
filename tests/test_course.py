"""The engine and manual-backprop tracks, a teacher's own exercises (--course, verify) and the grades
(--format json, --format gradescope): every solution passes, every planted mistake is named with and
without Hypothesis, a correct piece is never blamed, and the grades say no more than was checked."""

import json
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyattn import exercises
from tinyattn.app import cli
from tinyattn.exercises import checker, engine, grades, report
from tinyattn.exercises.exercise import SOLUTION_MARKER
from tinyattn.exercises.strategies import Strategies
from tinyattn.exercises.task import Task

TASKS = exercises.track("engine") + exercises.track("layer")
MISTAKES = [(task, mistake) for task in TASKS for mistake in task.mistakes]
STRATEGIES = Strategies()
HIDE_HYPOTHESIS = ("import sys; sys.modules['hypothesis'] = None; from tinyattn.app import cli; "
                   "sys.exit(cli.main(sys.argv[1:]))")


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
# the tracks


def test_three_tracks_in_order():
    assert list(exercises.TRACKS) == ["backward", "engine", "layer"]
    assert [e.name for e in exercises.track("engine")] == ["topological_order", "accumulate", "unbroadcast",
                                                            "saved", "apply"]
    assert [e.name for e in exercises.track("layer")] == ["mlp_batchnorm"]
    assert [e.number for e in exercises.EXERCISES] == list(range(1, len(exercises.EXERCISES) + 1))
    for task in TASKS:
        assert isinstance(task, Task) and task.statement and task.hint and len(task.mistakes) >= 1
        assert exercises.get(task.number) is task and exercises.solution(task.name) is task.piece
    for task in exercises.track("engine"):  # each hint leads to the right reading in docs/internals.md
        assert "docs/internals.md, step" in task.hint
        assert len(task.mistakes) >= 3
    with pytest.raises(KeyError, match="the tracks are backward, engine, layer"):
        exercises.track("convolutions")


@pytest.mark.parametrize("task", TASKS, ids=lambda e: e.name)
def test_skeleton_and_solution_files(task, tmp_path):
    skeleton, solution = task.file_source(), task.file_source(solution=True)
    for text in (skeleton, solution):
        compile(text, task.file_name, "exec")
        assert SOLUTION_MARKER not in text and task.class_name in text
    assert 'raise NotImplementedError("write this here")' in skeleton
    assert 'raise NotImplementedError("write this here")' not in solution
    assert f"tinyattn exercises check . {task.name}" in skeleton
    # the solution ships apart: the skeleton holds the given lines, and nothing of the solution
    given = set(solution.splitlines())
    added = [line for line in skeleton.splitlines() if line not in given]
    assert added and all(line.strip().startswith(("# your code:", "raise NotImplementedError", "Write your code",
                                                  "A hint", "tinyattn exercises", "    tinyattn exercises"))
                         or not line.strip() for line in added), added
    path = tmp_path / task.file_name
    path.write_text(skeleton)
    result = task.check(checker.load(task, path))
    assert result.status == "not done yet" and result.finding.id == "not-done"


def test_a_skeleton_cuts_every_solution_block_of_a_class():
    saved = exercises.get("saved")
    skeleton = saved.class_source(solution=False)
    assert skeleton.count('raise NotImplementedError("write this here")') == 3  # save, get, free
    assert "self.freed = True" not in skeleton and "def free(self, retain_graph):" in skeleton
    assert "# your code: drop the values, unless retain_graph" in skeleton
    assert "self.values = ()" in skeleton  # __init__ is given


@pytest.mark.parametrize("task", TASKS, ids=lambda e: e.name)
def test_solution_passes_the_checker(task, tmp_path):
    path = tmp_path / task.file_name
    path.write_text(task.file_source(solution=True))
    result = task.check(checker.load(task, path))
    assert result.passed, "\n".join(report.block(result))
    assert result.random_cases == checker.EXAMPLES and "20 random cases" in result.checked


@pytest.mark.parametrize("examples", [0, checker.EXAMPLES], ids=["fixed-cases-only", "with-random-cases"])
@pytest.mark.parametrize("task, mistake", MISTAKES, ids=ids(MISTAKES))
def test_planted_mistake_is_named(task, mistake, examples):
    result = task.check(task.make(mistake.backward), examples=examples)
    text = report.block(result)
    assert result.status == "FAIL", text
    assert result.finding.id == mistake.finding, text
    assert result.phase == mistake.found_by, text
    fits(text + [report.table_row(result)])
    assert "Traceback" not in "\n".join(text)


def mistake_folders(tmp_path):
    """Folders of learners' files, each task's file in folder k holding its k-th planted mistake (the
    solution file, its piece then bound to the mistake); {folder: [(task, mistake)]}."""
    folders = {}
    for task in TASKS:
        for k, mistake in enumerate(task.mistakes):
            folder = tmp_path / f"mistakes{k}"
            folder.mkdir(exist_ok=True)
            (folder / task.file_name).write_text(
                task.file_source(solution=True)
                + f"\n\nfrom {mistake.backward.__module__} import {mistake.name} as {task.class_name}  # noqa\n")
            folders.setdefault(folder, []).append((task, mistake))
    return folders


@pytest.mark.parametrize("hypothesis", ["hidden", "installed"])
def test_the_command_names_every_planted_mistake_with_examples_0_and_without_hypothesis(tmp_path, hypothesis):
    for folder, planted in mistake_folders(tmp_path).items():
        names = [task.name for task, _ in planted]
        if hypothesis == "hidden":
            argv = [sys.executable, "-c", HIDE_HYPOTHESIS, "exercises", "check", str(folder), *names]
        else:
            argv = [sys.executable, "-m", "tinyattn", "exercises", "check", str(folder), *names, "--examples", "0"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        out = done.stdout
        assert done.returncode == 1 and done.stderr == "" and "Traceback" not in out, out + done.stderr
        for task, mistake in planted:
            expected = task.check(task.make(mistake.backward), examples=0)
            assert expected.finding.id == mistake.finding
            assert report.table_row(expected) in out.splitlines(), (mistake.name, out)
        flat = " ".join(out.split())
        assert f"0 of {len(planted)} pass, {len(planted)} fail" in flat
        if hypothesis == "hidden":
            assert "the fixed cases only: no random cases, Hypothesis is not installed" in flat
        fits(out.splitlines())


@pytest.mark.parametrize("task", TASKS, ids=lambda e: e.name)
@given(data=st.data())
def test_no_false_diagnosis_on_a_correct_piece(task, data):
    """Over random graphs and layers, the reference piece passes (against tinyattn's own engine, or
    autograd), whatever the shapes and the reuse."""
    from tinyattn.exercises.task import analyse

    case = data.draw(st.composite(lambda draw: task.random_case(draw, STRATEGIES))(), label="case")
    result = analyse(task, task.piece, case)
    assert result.passed, "\n".join(report.block(result))


# ---------------------------------------------------------------------------------------------
# the small engine is tinyattn's, in small


@given(data=st.data())
def test_the_small_engine_agrees_with_tinyattn_on_random_graphs(data):
    recipe = data.draw(st.composite(lambda draw: engine.recipe_strategy(draw, STRATEGIES))())
    leaves, values = engine.build(recipe)
    values[-1].backward()
    expected = engine.tinyattn_grads(recipe)
    for leaf in leaves:
        if expected[leaf.name] is None:
            assert leaf.grad is None
        else:
            np.testing.assert_allclose(leaf.grad, expected[leaf.name], rtol=1e-10, atol=1e-12)


def test_the_small_engine_frees_and_says_so():
    _, values = engine.build(exercises.get("topological_order").example())
    values[-1].backward()
    with pytest.raises(engine.BackwardError, match="a second time"):
        values[-1].backward()
    with engine.no_grad():
        assert (values[0] * values[0]).grad_fn is None


# ---------------------------------------------------------------------------------------------
# what the engine track says


def block(name, piece):
    task = exercises.get(name)
    return " ".join(" ".join(report.block(task.check(piece))).split())


def test_what_the_engine_track_says():
    order = exercises.get("topological_order")
    text = block("topological_order", order.mistakes[2].backward)
    assert "FAIL - a node visited before all its consumers are done" in text
    assert "v1 comes before v2, which uses its output" in text and "your order: v6, v5, v4, v3, v1, v2" in text
    assert "with your order: x.grad: tinyattn gives" in text
    text = block("accumulate", exercises.get("accumulate").mistakes[0].backward)
    assert "FAIL - = where += is needed" in text and "slots[1] = [10., 20.]" in text
    text = block("unbroadcast", exercises.get("unbroadcast").mistakes[1].backward)
    assert "FAIL - summed over the wrong dims" in text and "Broadcasting lines shapes up from the right" in text
    text = block("saved", exercises.get("saved").mistakes[0].backward)
    assert "the saved values are never freed" in text
    text = block("apply", exercises.get("apply").mistakes[2].backward)
    assert "an edge to the tensor, not to the node that made it" in text


def test_what_the_layer_track_says():
    layer = exercises.get("mlp_batchnorm")
    by_name = {m.name: m.backward for m in layer.mistakes}
    text = block("mlp_batchnorm", by_name["bias_not_summed"])
    assert "FAIL - missing the sum over the batch" in text and "b2: has the batch's shape [5, 3], not [3]" in text
    assert "right before it: logprobs, probs, ..., h, W2 (10 of them)" in text
    text = block("mlp_batchnorm", by_name["variance_without_bessel"])
    assert "FAIL - off by a factor of (n - 1)/n" in text and "Bessel-corrected" in text
    text = block("mlp_batchnorm", by_name["mean_path_forgotten"])
    assert "FAIL - the path through mean missing" in text and "h_pre is used by diff and mean" in text
    text = block("mlp_batchnorm", by_name["weight_transposed"])
    assert "W2: is the transpose of the right one (shape [3, 4], not [4, 3])" in text

    def half_done(v):
        grads = layer.piece(v)
        del grads["h"]
        return grads

    text = block("mlp_batchnorm", half_done)
    assert "FAIL - no gradient for h" in text and "grads['h'] is missing" in text


def test_a_learners_exception_is_one_line_with_its_place(tmp_path):
    task = exercises.get("unbroadcast")
    path = tmp_path / task.file_name
    path.write_text(task.file_source().replace('raise NotImplementedError("write this here")',
                                               "return grad.sum(axis=dims)"))
    result = task.check(checker.load(task, path))
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "axis=dims" in text)
    assert result.status == "FAIL" and result.lines == [f"20_unbroadcast.py:{line}: NameError: name 'dims' is "
                                                         "not defined"]


# ---------------------------------------------------------------------------------------------
# the command: tracks


def test_list_shows_the_three_tracks(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0
    assert "backward: the backward of each op of attention, as a Function" in out
    assert "engine: the parts of an autograd engine, on a small engine" in out
    assert "layer: manual backprop: a whole layer's backward, every intermediate by hand" in out
    assert out.index("17  multi_head_attention") < out.index("18  topological_order") < out.index("23  mlp")
    fits(out.splitlines())


def test_start_and_check_a_track(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "start", "engine", "--track", "engine")
    assert code == 0 and "wrote 5 exercises to engine: 18_topological_order.py ... 22_apply.py" in out
    assert "tinyattn exercises check engine --track engine" in out
    assert sorted(p.name for p in pathlib.Path("engine").iterdir()) == [t.file_name for t in exercises.track("engine")]
    code, out, _ = run(capsys, "check", "engine", "--track", "engine")
    assert code == 1 and out.rstrip().endswith("0 of 5 pass, 5 not done yet")
    # without --track: the other tracks' files are missing, and the summary says which track is there
    (pathlib.Path("engine") / "19_accumulate.py").write_text("def accumulate(:\n")
    code, out, err = run(capsys, "check", "engine")
    assert code == 1 and err == "" and "Traceback" not in out
    assert "19 accumulate: error - SyntaxError at 19_accumulate.py:1" in out
    assert " ".join(out.split()).endswith("0 of 23 pass, 18 missing, 4 not done yet, 1 error (engine holds the files "
                                          "of the engine track only: `tinyattn exercises check engine --track engine` "
                                          "checks that track alone)")
    code, _, err = run(capsys, "check", "engine", "softmax", "--track", "engine")
    assert code == 2 and "softmax is not in the engine track" in err
    code, _, err = run(capsys, "check", "engine", "--track", "convolutions")
    assert code == 2 and "no track 'convolutions': the tracks are backward, engine, layer" in err


# ---------------------------------------------------------------------------------------------
# a teacher's own exercises

PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "tutorials" / "teaching-with-exercises.md"


def page_blocks(kind):
    """The ```kind blocks of the teaching tutorial, in order."""
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)


# the teacher's exercise the tutorial walks through: its first python block, used here as the file
SWISH = page_blocks("python")[0]


# a task in a course: the learner writes a function, the teacher's judge runs it
CLIP = '''\
import numpy as np

from tinyattn.exercises import Mistake, Task, wrong


def clip_grad(grad, limit):
    """grad scaled down so that its norm is at most limit."""
    # --- solution ---
    norm = float(np.sqrt(np.sum(grad * grad)))
    return grad * (limit / norm) if norm > limit else grad


def always_scaled(grad, limit):
    return grad * (limit / float(np.sqrt(np.sum(grad * grad))))


def judge(piece, case):
    grad, limit = case
    right, mine = clip_grad(grad, limit), piece(grad.copy(), limit)
    if not np.allclose(mine, right):
        norm = float(np.sqrt(np.sum(grad * grad)))
        if norm <= limit:
            raise wrong("scaled-up", "a small gradient scaled up",
                        "Only a gradient whose norm exceeds the limit is scaled.", [f"norm {norm:.3g}"])
        raise wrong("no-pattern", "wrong", "Compare with the definition.")


EXERCISE = Task(
    number=2,
    name="clip_grad",
    title="gradient clipping by norm",
    piece=clip_grad,
    statement="Scale grad down to norm limit when its norm is larger; leave it alone otherwise.",
    signature="clip_grad(grad: array, limit: float) -> array",
    hint="Compare the norm with the limit first.",
    todo="return the clipped gradient",
    judge=judge,
    example=lambda: (np.array([3.0, 4.0]), 10.0),
    random_case=lambda draw, s: (draw(s.nonzero((3,))), draw(s.one_of([0.5, 1.0, 100.0]))),
    describe=lambda case: f"grad {case[0].tolist()}, limit {case[1]}",
    imports="import numpy as np\\n",
    track="optimizers",
    mistakes=(Mistake(always_scaled, "scaled-up"),),
)
'''


@pytest.fixture
def course(tmp_path):
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "01_swish.py").write_text(SWISH)
    (folder / "02_clip_grad.py").write_text(CLIP)
    (folder / "_shared.py").write_text("raise RuntimeError('a file of shared code is never loaded as an exercise')\n")
    return folder


def test_a_teachers_course_is_verified(capsys, course):
    code, out, _ = run(capsys, "verify", course)
    flat = " ".join(out.split())
    assert code == 0, out
    assert "01 swish: proven" in out and "02 clip_grad: proven" in out
    assert 'mistake one_term_only: named "half of the product rule" (example)' in flat
    assert 'mistake always_scaled: named "a small gradient scaled up" (example)' in flat
    assert "random cases: the solution is never blamed on 100 random cases" in flat
    assert flat.endswith("2 of 2 exercises proven")
    fits(out.splitlines())


def test_verify_finds_what_does_not_hold(capsys, course):
    # a mistake given the wrong finding, a mistake the fixed cases miss, and a solution that is wrong
    text = SWISH.replace('Mistake(sigmoid_only, "product-rule")', 'Mistake(sigmoid_only, "sign-flipped")')
    text = text.replace("return grad_y * (s + x * s * (1 - s))", "return grad_y * (s + x * s * (1 - s)) * 1.5")
    (course / "01_swish.py").write_text(text)
    (course / "02_clip_grad.py").write_text(CLIP.replace("(np.array([3.0, 4.0]), 10.0)", "(np.array([30.0, 40.0]), 1.0)"))
    code, out, _ = run(capsys, "verify", course)
    flat = " ".join(out.split())
    assert code == 1 and "01 swish: NOT PROVEN" in out and "02 clip_grad: NOT PROVEN" in out
    assert "! solution: FAIL - off by a factor of 1.5 (example)" in flat
    assert '! mistake sigmoid_only: gets "half of the product rule" (product-rule), not sign-flipped' in flat
    assert "! mistake always_scaled: passes the fixed cases: add a fixed case (edge_cases) that shows it" in flat
    assert flat.endswith("0 of 2 exercises proven")


def test_verify_never_claims_a_proof_without_random_cases(course):
    argv = [sys.executable, "-c", HIDE_HYPOTHESIS, "exercises", "verify", str(course), "swish"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    flat = " ".join(done.stdout.split())
    assert done.returncode == 1 and "01 swish: NOT PROVEN" in flat, done.stdout + done.stderr
    assert "Hypothesis is not installed (pip install hypothesis): not proven" in flat


def test_learners_check_a_teachers_course(capsys, course, tmp_path):
    work = tmp_path / "work"
    code, out, _ = run(capsys, "start", work, "--course", course)
    assert code == 0 and "wrote 2 exercises" in out and f"check {work} --course {course}" in out
    skeleton = (work / "01_swish.py").read_text()
    assert f"tinyattn exercises check . swish --course {pathlib.Path(course).resolve()}" in skeleton
    assert "# --- solution" not in skeleton
    assert "s + x * s * (1 - s)" not in skeleton  # the solution is not handed out
    swish = work / "01_swish.py"
    swish.write_text(skeleton.replace('raise NotImplementedError("write the backward here")', "return grad_y * s"))
    clip = work / "02_clip_grad.py"
    clip.write_text(clip.read_text().replace('raise NotImplementedError("write this here")',
                                             "return grad if np.sqrt(np.sum(grad * grad)) <= limit else "
                                             "grad * limit / np.sqrt(np.sum(grad * grad))"))
    code, out, _ = run(capsys, "check", work, "--course", course)
    assert code == 1
    assert " 1  swish                 FAIL          half of the product rule" in out
    assert " 2  clip_grad             pass" in out
    assert "Swish has two factors that depend on x" in out  # the teacher's words
    code, out, _ = run(capsys, "list", "--course", course)
    assert "optimizers:" in out and "backward:" in out and f"--course {course}" in out
    code, out, _ = run(capsys, "hint", "clip_grad", "--course", course)
    assert code == 0 and "Compare the norm with the limit first." in out


@pytest.mark.parametrize("files, words", [
    ({"01_x.py": "x = 1\n"}, "01_x.py defines no EXERCISE"),
    ({"01_x.py": "def f(:\n"}, "01_x.py does not load: 01_x.py:1: SyntaxError"),
    ({"01_swish.py": SWISH, "03_swish.py": SWISH}, "both define exercise 1 or 'swish'"),
    ({}, "holds no exercise files"),
])
def test_a_course_that_does_not_load_is_one_line(capsys, tmp_path, files, words):
    folder = tmp_path / "broken"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    code, _, err = run(capsys, "list", "--course", folder)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    code, _, err = run(capsys, "list", "--course", tmp_path / "nowhere")
    assert code == 2 and "there is no folder" in err


# ---------------------------------------------------------------------------------------------
# grades

GRADESCOPE_TOP = {"score": (int, float), "execution_time": (int, float), "output": str, "output_format": str,
                  "test_output_format": str, "test_name_format": str, "visibility": str,
                  "stdout_visibility": str, "extra_data": dict, "tests": list, "leaderboard": list}
GRADESCOPE_TEST = {"score": (int, float), "max_score": (int, float), "status": str, "name": str,
                   "name_format": str, "number": str, "output": str, "output_format": str, "tags": list,
                   "visibility": str, "extra_data": dict}


def validate_gradescope(results):
    """Gradescope's documented fields of results.json (gradescope-autograders.readthedocs.io, "Autograder
    Specifications"): only known keys, each of its type; a score on the top level or on every test; a
    status "passed" or "failed"; a test's score within 0 and its max_score."""
    assert set(results) <= set(GRADESCOPE_TOP), set(results) - set(GRADESCOPE_TOP)
    for key, value in results.items():
        assert isinstance(value, GRADESCOPE_TOP[key]), key
    assert "score" in results or all("score" in test for test in results["tests"])
    for test in results["tests"]:
        assert set(test) <= set(GRADESCOPE_TEST), set(test) - set(GRADESCOPE_TEST)
        for key, value in test.items():
            assert isinstance(value, GRADESCOPE_TEST[key]), key
        assert test.get("status", "passed") in ("passed", "failed")
        assert 0 <= test["score"] <= test["max_score"]
        assert (test["status"] == "passed") == (test["score"] == test["max_score"])
    assert results["score"] == sum(test["score"] for test in results["tests"])


@pytest.fixture
def graded_folder(tmp_path, capsys):
    """The engine track: accumulate solved, unbroadcast with a mistake, the rest not done."""
    folder = tmp_path / "work"
    cli.main(["exercises", "start", str(folder), "--track", "engine"])
    capsys.readouterr()
    for name in ("accumulate", "unbroadcast"):
        task = exercises.get(name)
        (folder / task.file_name).write_text(task.file_source(solution=True))
    path = folder / exercises.get("unbroadcast").file_name
    path.write_text(path.read_text().replace("keepdims=True).reshape(shape)", "keepdims=True).reshape(shape) / 2"))
    return folder


def test_gradescope_results_validate(capsys, graded_folder, tmp_path):
    out_file = tmp_path / "results.json"
    code, out, _ = run(capsys, "check", graded_folder, "--track", "engine", "--format", "gradescope",
                       "--output", out_file)
    assert code == 1 and f"grades written to {out_file}" in out and "19  accumulate" in out  # the table too
    results = json.loads(out_file.read_text())
    validate_gradescope(results)
    tests = {test["name"].split(":")[0]: test for test in results["tests"]}
    assert list(tests) == ["18 topological_order", "19 accumulate", "20 unbroadcast", "21 saved", "22 apply"]
    assert tests["19 accumulate"]["score"] == 1.0 and tests["19 accumulate"]["status"] == "passed"
    assert tests["20 unbroadcast"]["score"] == 0.0 and "a mean, not a sum" not in tests["20 unbroadcast"]["output"]
    assert tests["20 unbroadcast"]["output"].startswith("20 unbroadcast: FAIL - off by a factor")
    assert tests["18 topological_order"]["output"] == "18 topological_order: not done yet"
    assert results["score"] == 1.0 and results["output"] == "1 of 5 pass, 3 not done yet, 1 fail"
    code, out, _ = run(capsys, "check", graded_folder, "accumulate", "--format", "gradescope")
    assert code == 0 and json.loads(out)["tests"][0]["status"] == "passed"  # only the JSON on stdout


def test_json_grades_follow_the_schema(capsys, graded_folder):
    code, out, _ = run(capsys, "check", graded_folder, "--track", "engine", "--format", "json", "--seed", "7")
    graded = json.loads(out)
    assert code == 1
    assert graded["schema"] == "tinyattn-exercises-results" and graded["version"] == 1
    assert {k: graded[k] for k in ("examples", "seed", "hypothesis", "passed", "total", "score", "max_score")} == \
        {"examples": 20, "seed": 7, "hypothesis": True, "passed": 1, "total": 5, "score": 1.0, "max_score": 5.0}
    keys = {"number", "name", "track", "file", "status", "passed", "score", "max_score", "phase", "finding",
            "evidence", "case", "checked", "random_cases", "seed"}
    for entry in graded["exercises"]:
        assert set(entry) == keys
    by_name = {entry["name"]: entry for entry in graded["exercises"]}
    passed, failed, todo = by_name["accumulate"], by_name["unbroadcast"], by_name["apply"]
    assert passed["passed"] and passed["random_cases"] == 20 and passed["seed"] == 7 and passed["finding"] is None
    assert not failed["passed"] and failed["status"] == "FAIL" and failed["phase"] == "example"
    assert failed["finding"]["id"] == "constant-factor" and failed["finding"]["title"] == "off by a factor of 0.5"
    assert failed["evidence"] and failed["case"].startswith("leaves x [3, 3]")
    assert todo["status"] == "not done yet" and todo["finding"] is None and todo["score"] == 0.0


def test_a_pass_without_random_cases_is_not_full_marks(capsys, graded_folder):
    code, out, _ = run(capsys, "check", graded_folder, "accumulate", "--format", "gradescope", "--examples", "0")
    test = json.loads(out)["tests"][0]
    assert code == 0 and test["score"] == 0.5 and test["max_score"] == 1.0 and test["status"] == "failed"
    assert "The random cases did not run: half marks" in test["output"]
    argv = [sys.executable, "-c", HIDE_HYPOTHESIS, "exercises", "check", str(graded_folder), "accumulate",
            "--format", "json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    graded = json.loads(done.stdout)
    assert graded["hypothesis"] is False and graded["score"] == 0.5 and graded["exercises"][0]["random_cases"] == 0


def test_the_same_seed_gives_the_same_case(capsys, tmp_path):
    # a piece that only random graphs catch: right on the fixed cases, wrong for a leaf of shape (1,)
    task = exercises.get("unbroadcast")
    folder = tmp_path / "work"
    folder.mkdir()
    text = task.file_source(solution=True).replace(
        "    return grad.sum(axis=dims, keepdims=True).reshape(shape)",
        "    if shape == (1,) and grad.ndim == 2:\n        return grad.sum(axis=dims, keepdims=True).reshape(shape) * 2\n"
        "    return grad.sum(axis=dims, keepdims=True).reshape(shape)")
    (folder / task.file_name).write_text(text)
    first = [json.loads(run(capsys, "check", folder, "unbroadcast", "--format", "json", "--seed", seed)[1])
             for seed in (1, 1)]
    assert first[0] == first[1] and first[0]["exercises"][0]["phase"] == "random case"
    assert first[0]["exercises"][0]["seed"] == 1 and first[0]["exercises"][0]["case"].startswith("leaves x [1, 1]")


def test_output_needs_a_grades_format(capsys, tmp_path):
    code, _, err = run(capsys, "check", tmp_path, "--output", tmp_path / "r.json")
    assert code == 2 and "give --format json or --format gradescope" in err
    code, out, err = run(capsys, "check", tmp_path, "--format", "json", "--output", tmp_path / "no" / "r.json")
    assert code == 2 and out == "" and "its folder does not exist" in err  # before any check runs


def test_score_rules():
    task = exercises.get("accumulate")
    full = checker.Result(task, "pass", random_cases=20)
    half = checker.Result(task, "pass", random_cases=0)
    failed = checker.Result(task, "FAIL")
    assert grades.score(full) == (1.0, 1.0) and grades.score(half) == (0.5, 1.0) and grades.score(failed) == (0, 1)


def test_the_tutorials_sessions_are_what_the_commands_print(capsys, tmp_path, monkeypatch):
    """The teaching tutorial's `verify` session and the learner's report, run on its own file."""
    monkeypatch.chdir(tmp_path)
    pathlib.Path("course").mkdir()
    pathlib.Path("course/01_swish.py").write_text(SWISH)
    shown = next(b for b in page_blocks("text") if b.startswith("$ tinyattn exercises verify --course course\n"))
    code, out, _ = run(capsys, "verify", "--course", "course")
    assert code == 0 and out.splitlines() == shown.splitlines()[1:]
    run(capsys, "start", "work", "--course", "course")
    path = pathlib.Path("work/01_swish.py")
    path.write_text(path.read_text().replace('raise NotImplementedError("write the backward here")',
                                             "return grad_y * s"))
    code, out, _ = run(capsys, "check", "work", "--course", "course")
    report_shown = next(b for b in page_blocks("text") if b.startswith("01 swish: FAIL"))
    assert code == 1 and report_shown in out


@pytest.mark.parametrize("name", ["softmax", "unbroadcast", "mlp_batchnorm"])
def test_verify_proves_tinyattns_own(name):
    proof = exercises.verify(exercises.get(name), cases=10)
    assert proof.proven, proof.lines
    assert [what for what, _, _ in proof.lines][:2] == ["skeleton", "solution"]
    assert sum(what.startswith("mistake ") for what, _, _ in proof.lines) == len(exercises.get(name).mistakes)


def test_the_python_api_checks_a_function_by_its_name(capsys):
    def topological_order(root):  # the learner's, in a notebook cell
        return exercises.solution("topological_order")(root)[::-1]

    result = exercises.check(topological_order, examples=2)
    assert result.finding.id == "reversed"
    assert capsys.readouterr().out.startswith("18 topological_order: FAIL - the order is reversed\n")
    assert exercises.check(exercises.solution("saved"), examples=2, verbose=False).passed


LEARNERS_PAGE = PAGE.parent / "exercises.md"


def learner_sessions():
    """The engine track's sessions on the learner's page: [(command, shown lines)] of its text blocks."""
    blocks = re.findall(r"```text\n(.*?)```", LEARNERS_PAGE.read_text(), flags=re.DOTALL)
    sessions = []
    for block in blocks:
        if "tinyattn exercises check engine" not in block:
            continue
        for part in block.split("$ ")[1:]:
            command, *lines = part.rstrip("\n").split("\n")
            sessions.append((command, lines))
    return sessions


def test_the_learners_engine_sessions_are_what_the_checker_prints(capsys, tmp_path, monkeypatch):
    """The page shows a learner's files (`tail`) and what `check` says of them: both hold."""
    monkeypatch.chdir(tmp_path)
    run(capsys, "start", "engine", "--track", "engine")
    # the second session's files: accumulate adding in place, unbroadcast without keepdims
    solved = {name: exercises.get(name).file_source(solution=True) for name in ("topological_order", "accumulate",
                                                                              "unbroadcast")}
    files = {
        "19_accumulate.py": solved["accumulate"].replace("slots[index] = slots[index] + grad",
                                                         "np.add(slots[index], grad, out=slots[index])"),
        "20_unbroadcast.py": solved["unbroadcast"].replace("grad.sum(axis=dims, keepdims=True).reshape(shape)",
                                                           "grad.sum(axis=dims)"),
    }
    checked = 0
    for command, shown in learner_sessions():
        if command.startswith("tail -"):
            path = pathlib.Path(command.split()[-1])
            skeleton = exercises.get(path.stem[3:]).file_source().rstrip("\n").split("\n")
            path.write_text("\n".join(skeleton[:-2] + shown) + "\n")  # the body replaces the raise
            continue
        if command == "tinyattn exercises check engine --track engine":
            pathlib.Path("engine/18_topological_order.py").write_text(solved["topological_order"])
            for name, text in files.items():
                pathlib.Path("engine", name).write_text(text)
        code, out, _ = run(capsys, *command.split()[2:])
        assert code == 1 and out.rstrip("\n").split("\n") == shown, command
        checked += 1
    assert checked == 3
