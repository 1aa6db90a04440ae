"""Grading a class: each exercise in a process of its own (isolation.py), so that a learner's code
can neither stop the grading nor raise its own grade. The hostile class (hostile_class.py) is graded
to the end, in the table, in tinyattn's JSON and in Gradescope's results.json; a teacher's task whose
judge is a probe and a verdict is judged where the learner's code never ran; the messages between
the grader and the worker (wire.py) carry data only; Ctrl-C says how far the check got."""

import io
import json
import os
import pathlib
import pickle
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import tinyattn
from tinyattn import exercises
from tinyattn.exercises import course, isolation, wire

from hostile_class import CORRECT, HOSTILE, WRONG, wrong_finding, write_class

TIMEOUT = 15  # seconds per exercise: the hanging answer takes this long; a correct one takes about 2
# the commands run from other folders import this tinyattn
SOURCE = str(pathlib.Path(tinyattn.__file__).resolve().parents[1])
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([SOURCE, *filter(None, [os.environ.get("PYTHONPATH")])])}


def grade(folder, output_format, output, env):
    return subprocess.Popen(
        [sys.executable, "-m", "tinyattn", "exercises", "check", str(folder), "--timeout", str(TIMEOUT),
         "--format", output_format, "--output", str(output)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=folder.parent)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The hostile class graded twice at once (JSON, Gradescope); the forging answer writes its own
    grades to the JSON file, before and after the grader does."""
    root = tmp_path_factory.mktemp("class")
    folder = root / "submissions"
    names = write_class(folder)
    grades_json, gradescope_json = root / "grades.json", root / "results.json"
    env = {**ENV, "FORGE_AT": str(grades_json)}
    began = time.monotonic()
    runs = [grade(folder, "json", grades_json, env), grade(folder, "gradescope", gradescope_json, env)]
    outs = [run.communicate(timeout=600) for run in runs]
    took = time.monotonic() - began
    time.sleep(5)  # the forger's own process would write again after 4 s
    return {"names": names, "runs": runs, "outs": outs, "took": took,
            "json": json.loads(grades_json.read_text()), "gradescope": json.loads(gradescope_json.read_text())}


@pytest.mark.slow
def test_the_hostile_class_is_graded_to_the_end_within_the_time_limits(graded):
    for run, (out, err) in zip(graded["runs"], graded["outs"]):
        assert run.returncode == 1, out + err
        assert "Traceback" not in out + err, out + err
        assert "grades written to" in out
    # one exercise hangs until its limit; the others take a second or two each
    assert graded["took"] < 2 * TIMEOUT + 4 * len(graded["names"]), graded["took"]


@pytest.mark.slow
def test_the_table_gives_each_answer_its_due(graded):
    out = graded["outs"][0][0]
    rows = {line.split()[1]: line for line in out.splitlines()
            if len(line.split()) > 2 and line.split()[0].isdigit()}
    for name, (_, words) in HOSTILE.items():
        assert rows[name].split()[2] == "FAIL" and words in rows[name], rows[name]
    for name in CORRECT:
        assert rows[name].split()[2] == "pass", rows[name]
    for name in WRONG:
        assert rows[name].split()[2] == "FAIL", rows[name]
    # what the learners' code printed never reaches the grader's output
    softmax = [line for line in out.splitlines() if "softmax" in line and "pass" in line]
    assert softmax == [], softmax
    assert "23 of 23 pass" not in out and f"{len(CORRECT)} of 23 pass" in out


@pytest.mark.slow
def test_the_json_grades_give_each_answer_its_due(graded):
    by_name = {entry["name"]: entry for entry in graded["json"]["exercises"]}
    assert graded["json"]["schema"] == "tinyattn-exercises-results"  # not the forger's file
    for name, (_, words) in HOSTILE.items():
        entry = by_name[name]
        assert entry["score"] == 0 and entry["status"] == "FAIL", entry
        assert words in entry["finding"]["title"], entry
    for name in CORRECT:
        assert by_name[name]["score"] == by_name[name]["max_score"] == 1, by_name[name]
    for name in WRONG:
        entry = by_name[name]
        assert entry["score"] == 0 and entry["finding"]["id"] == wrong_finding(name), entry
    assert graded["json"]["score"] == len(CORRECT)


@pytest.mark.slow
def test_gradescope_results_give_each_answer_its_due(graded):
    results = graded["gradescope"]
    assert results.get("output") != "forged" and results["score"] == len(CORRECT)
    tests = {test["name"].split()[1].rstrip(":"): test for test in results["tests"]}
    for name, (_, words) in HOSTILE.items():
        assert tests[name]["score"] == 0 and tests[name]["status"] == "failed", tests[name]
        assert words in tests[name]["output"], tests[name]
    for name in CORRECT:
        assert tests[name]["score"] == tests[name]["max_score"] and tests[name]["status"] == "passed"
    for name in WRONG:
        title = exercises.get(name).check(exercises.get(name).make(exercises.get(name).mistakes[0].backward),
                                          examples=0).finding.title
        assert tests[name]["score"] == 0 and title in tests[name]["output"], (title, tests[name])


def test_ctrl_c_says_how_far_the_check_got(tmp_path):
    """Ctrl-C while an answer hangs: the exercises checked so far are reported as such, never as the
    whole folder, and no grades file is written."""
    folder = tmp_path / "class"
    write_class(folder)
    grades = tmp_path / "grades.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "tinyattn", "exercises", "check", str(folder), "add", "mul", "matmul", "embedding",
         "--timeout", "120", "--format", "json", "--output", str(grades)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    lines = []
    for line in process.stdout:  # up to the row before the hanging answer
        lines.append(line)
        if line.split()[:2] == ["2", "mul"]:
            break
    time.sleep(1)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    out = "".join(lines) + out
    assert process.returncode == 130, out + err
    flat = " ".join(out.split())
    assert "interrupted after 2 of 4 exercises (no grades written): of those checked, 1 of 2 pass, 1 fail" in flat, out
    assert "Traceback" not in out + err and not grades.exists()


# ---------------------------------------------------------------------------------------------
# a teacher's task judged in two halves: the probe beside the learner's code, the verdict here

CLIP = '''\
import numpy as np

from tinyattn.exercises import Mistake, Task, wrong
from tinyattn.exercises.task import split_judge


def clip_grad(grad, limit):
    """grad scaled down so that its norm is at most limit."""
    # --- solution ---
    norm = float(np.sqrt(np.sum(grad * grad)))
    return grad * (limit / norm) if norm > limit else grad


def always_scaled(grad, limit):
    return grad * (limit / float(np.sqrt(np.sum(grad * grad))))


def probe(piece, case, steps):
    grad, limit = case
    steps.run("clipped", lambda: np.asarray(piece(grad.copy(), limit), dtype=np.float64))


def verdict(case, steps):
    grad, limit = case
    if not np.allclose(steps["clipped"], clip_grad(grad, limit)):
        norm = float(np.sqrt(np.sum(grad * grad)))
        if norm <= limit:
            raise wrong("scaled-up", "a small gradient scaled up",
                        "Only a gradient whose norm exceeds the limit is scaled.", [f"norm {norm:.3g}"])
        raise wrong("no-pattern", "wrong", "Compare with the definition.")


EXERCISE = Task(
    number=1,
    name="clip_grad",
    title="gradient clipping by norm",
    piece=clip_grad,
    statement="Scale grad down to norm limit when its norm is larger; leave it alone otherwise.",
    signature="clip_grad(grad: array, limit: float) -> array",
    hint="Compare the norm with the limit first.",
    todo="return the clipped gradient",
    judge=split_judge(probe, verdict),
    probe=probe,
    verdict=verdict,
    example=lambda: (np.array([3.0, 4.0]), 10.0),
    random_case=lambda draw, s: (draw(s.nonzero((3,))), draw(s.one_of([0.5, 1.0, 100.0]))),
    describe=lambda case: f"grad {case[0].tolist()}, limit {case[1]}",
    imports="import numpy as np\\n",
    track="optimizers",
    mistakes=(Mistake(always_scaled, "scaled-up"),),
)
'''

# a wrong answer that makes its own process's judge agree with everything: this task's verdict,
# NumPy's comparisons and the check that gives the Result
PATCHED = """
import sys

import numpy as np
from tinyattn.exercises import checker, task

np.allclose = lambda *args, **kwargs: True
for module in list(sys.modules.values()):
    if getattr(getattr(module, "EXERCISE", None), "name", None) == "clip_grad":
        object.__setattr__(module.EXERCISE, "verdict", lambda *args: None)
        object.__setattr__(module.EXERCISE, "judge", lambda *args: None)
task.check = lambda exercise, *args, **kwargs: checker.Result(exercise, "pass", random_cases=20)
task.Task.check = lambda self, *args, **kwargs: checker.Result(self, "pass", random_cases=20)


def clip_grad(grad, limit):
    return grad * (limit / float(np.sqrt(np.sum(grad * grad))))
"""


def test_a_teachers_task_with_a_probe_is_judged_where_the_learners_code_never_ran(tmp_path):
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "01_clip_grad.py").write_text(CLIP)
    task = course.load(folder).get("clip_grad")
    assert task.check(task.piece, examples=5).passed  # in one process, as verify runs it
    answers = tmp_path / "answers"
    answers.mkdir()
    solution = task.file_source(solution=True)
    right, wrong, patched = (answers / name for name in ("right.py", "wrong.py", "patched.py"))
    right.write_text(solution)
    line = "return grad * (limit / norm) if norm > limit else grad"
    assert line in solution
    wrong.write_text(solution.replace(line, "return grad * (limit / norm)"))  # always scaled
    patched.write_text(solution + PATCHED)
    graded = {path.stem: isolation.check_file(task, path, course=folder, examples=5, timeout=TIMEOUT)
              for path in (right, wrong, patched)}
    assert graded["right"].status == "pass" and graded["right"].random_cases == 5
    for name in ("wrong", "patched"):
        assert graded[name].status == "FAIL", graded[name]
        assert graded[name].finding.title == "a small gradient scaled up", graded[name].finding


# ---------------------------------------------------------------------------------------------
# the messages


def test_messages_carry_arrays_and_numbers_exactly():
    message = {"x": np.arange(6.0).reshape(2, 3), "s": np.array(2.5), "f32": np.ones(3, np.float32),
               "ids": np.array([1, 2], np.int64), "mask": np.array([True, False]), "p": 0.25, "n": None,
               "shape": (2, 3), "nan": float("nan")}
    back = wire.receive(io.BytesIO(wire.pack(message)))
    for key in ("x", "s", "f32", "ids", "mask"):
        assert back[key].dtype == message[key].dtype and back[key].shape == message[key].shape
        assert np.array_equal(back[key], message[key])
    assert back["p"] == 0.25 and back["n"] is None and back["shape"] == (2, 3) and np.isnan(back["nan"])


def test_messages_refuse_what_is_not_data():
    with pytest.raises(wire.WireError, match="cannot be sent"):
        wire.pack({"object": np.array([object()], dtype=object)})
    with pytest.raises(wire.WireError, match="cannot be sent"):
        wire.pack({"f": len})
    # a pickle where a message should be is refused, never loaded
    forged = pickle.dumps({"loaded": True})
    with pytest.raises(wire.WireError):
        wire.receive(io.BytesIO(len(forged).to_bytes(8, "big") + forged))
    with pytest.raises(wire.WireError, match="at most"):
        wire.receive(io.BytesIO((wire.MAX_BYTES + 1).to_bytes(8, "big")))
    body = json.dumps({"a": {"__array__": "<f8", "shape": [4], "data": "AAAA"}}).encode()
    with pytest.raises(wire.WireError, match="does not fit"):
        wire.receive(io.BytesIO(len(body).to_bytes(8, "big") + body))
    body = json.dumps({"a": {"__array__": "|O", "shape": [1], "data": ""}}).encode()
    with pytest.raises(wire.WireError, match="malformed"):
        wire.receive(io.BytesIO(len(body).to_bytes(8, "big") + body))


def test_a_message_nested_too_deep_is_refused_not_a_crash():
    body = b"{" + b'"a":[' * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(wire.WireError):
        wire.receive(io.BytesIO(len(body).to_bytes(8, "big") + body))
