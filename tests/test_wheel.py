"""The package as it is distributed: `python -m build` gives a wheel and an sdist that install into a
fresh venv and run there without the source tree (the bundled sonnets, the list of PyTorch's names,
the exercise files, the grader's worker); and the Gradescope autograder zip (`tinyattn exercises
autograder`) installs from its own wheel and grades a class with good, wrong and hostile answers.

Offline: the venvs get no packages of their own; they see this environment's (NumPy, Hypothesis,
pip, setuptools) through a .pth file, and every pip call has --no-index.
"""

import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile

import pytest

from hostile_class import HOSTILE, write_class

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src"


def clean_env(**more):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONNOUSERSITE"] = "1"
    env.update(more)
    return env


def fresh_venv(path):
    """A venv with no packages of its own that sees this environment's after its own; its python."""
    venv.EnvBuilder(with_pip=False).create(path)
    python = path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (pathlib.Path(site) / "zz_this_environment.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


def run(argv, cwd, timeout=300, **env):
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, cwd=cwd, env=clean_env(**env),
                          timeout=timeout)
    assert done.returncode in (0, 1), " ".join(map(str, argv)) + "\n" + done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The wheel and the sdist, built from a copy of the source tree (the tree itself stays clean)."""
    for module in ("build", "setuptools"):  # looked for, not imported: setuptools would replace distutils here
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (the test extra has it): the wheel cannot be built")
    tmp = tmp_path_factory.mktemp("build")
    tree = tmp / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "setup.cfg", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, tree / name)
    shutil.copytree(SOURCE, tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dist = tmp / "dist"
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(tree)],
                          capture_output=True, text=True, env=clean_env(), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = dist.glob("tinyattn-*.whl")
    (sdist,) = dist.glob("tinyattn-*.tar.gz")
    return wheel, sdist


def installed(tmp, artifact):
    """A fresh venv with `artifact` (a wheel or an sdist) installed; its python and its tinyattn command."""
    python = fresh_venv(tmp / "env")
    run([python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-build-isolation", artifact],
        cwd=tmp)
    where = run([python, "-c", "import tinyattn; print(tinyattn.__file__)"], cwd=tmp).stdout.strip()
    assert pathlib.Path(where).is_relative_to(tmp / "env"), where  # not the source tree's
    return python, python.parent / ("tinyattn.exe" if os.name == "nt" else "tinyattn")


def exercises_work(python, command, tmp):
    listed = run([command, "exercises", "list"], cwd=tmp)
    assert listed.returncode == 0 and "softmax" in listed.stdout and "mlp_batchnorm" in listed.stdout
    run([command, "exercises", "start", "answers", "--solutions"], cwd=tmp)
    checked = run([command, "exercises", "check", "answers", "softmax", "topological_order", "--examples", "2"],
                  cwd=tmp)
    assert checked.returncode == 0 and "2 of 2 pass" in checked.stdout, checked.stdout + checked.stderr
    corpus = run([python, "-c", "import tinyattn.app.text_data as d; print(len(d.default_corpus()))"], cwd=tmp)
    assert corpus.stdout.strip() == "37546"
    coverage = run([command, "coverage", "torch.nn.Linear"], cwd=tmp)
    assert coverage.returncode == 0, coverage.stdout + coverage.stderr


@pytest.mark.slow
def test_the_wheel_installs_and_runs_without_the_source_tree(built, tmp_path):
    wheel, _ = built
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("tinyattn/data/sonnets.txt", "tinyattn/data/pytorch_names.txt",
                   "tinyattn/exercises/e09_softmax.py", "tinyattn/exercises/worker.py"):
        assert needed in names, needed
    python, command = installed(tmp_path, wheel)
    trained = run([command, "train", "--steps", "5", "--out", tmp_path / "run"], cwd=tmp_path)
    assert trained.returncode == 0 and "the bundled sonnets (37,546 characters)" in trained.stdout, trained.stdout
    exercises_work(python, command, tmp_path)


@pytest.mark.slow
def test_the_sdist_installs_and_runs_without_the_source_tree(built, tmp_path):
    _, sdist = built
    python, command = installed(tmp_path, sdist)
    exercises_work(python, command, tmp_path)


@pytest.mark.slow
def test_the_autograder_zip_grades_a_class_offline_in_a_fresh_venv(tmp_path):
    """The zip unpacked as Gradescope does (/autograder/source, run_autograder beside it), installed
    by its setup.sh into a fresh venv with no index, then run on a submission of good, wrong and
    hostile answers; one of them writes its own results.json."""
    bundle = tmp_path / "autograder.zip"
    names = ["add", "mul", "sum", "matmul", "gelu", "softmax", "topological_order", "accumulate"]
    made = subprocess.run([sys.executable, "-m", "tinyattn", "exercises", "autograder", *names, "--output",
                           str(bundle), "--timeout", "10"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(SOURCE)})
    assert made.returncode == 0, made.stdout + made.stderr
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    with zipfile.ZipFile(bundle) as opened:
        assert {"setup.sh", "run_autograder"} <= set(opened.namelist())
        opened.extractall(root / "source")
    for script in ("setup.sh", "run_autograder"):
        (root / "source" / script).chmod(0o755)
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    python = fresh_venv(tmp_path / "env")
    env = {"AUTOGRADER_ROOT": str(root), "TINYATTN_PYTHON": str(python),
           "TINYATTN_PIP_OPTIONS": "--no-index --no-deps"}
    setup = run(["bash", root / "source" / "setup.sh"], cwd=root / "source", **env)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    where = run([python, "-c", "import tinyattn; print(tinyattn.__file__)"], cwd=tmp_path).stdout.strip()
    assert pathlib.Path(where).is_relative_to(tmp_path / "env"), where

    write_class(root / "submission")
    results = root / "results" / "results.json"
    graded = run(["bash", root / "run_autograder"], cwd=root, FORGE_AT=str(results), **env)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    scores = json.loads(results.read_text())
    tests = {test["name"].split()[1].rstrip(":"): test for test in scores["tests"]}
    assert sorted(tests) == sorted(names), tests.keys()
    for name in ("add", "accumulate"):
        assert tests[name]["score"] == tests[name]["max_score"] == 1, tests[name]
    assert tests["mul"]["score"] == 0 and "swapped" in tests["mul"]["output"]
    for name in ("sum", "matmul", "gelu", "softmax", "topological_order"):
        assert tests[name]["score"] == 0 and HOSTILE[name][1] in tests[name]["output"], tests[name]
    assert scores["score"] == 2
