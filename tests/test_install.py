"""The install as a newcomer makes it: a clone in a folder named `tinyattn`, installed editable into a
fresh venv, used from the folder that holds the clone. There `tinyattn/` (the clone, no
`__init__.py`) is on sys.path first; the installed package must still be the one imported (with the
package at the top of the clone it was an empty namespace package: no `ones`, no `__version__`).

Offline: the venv gets no packages of its own; it sees this environment's (NumPy, pip, setuptools)
through a .pth file, and the install is `--no-deps --no-build-isolation`.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import venv

import pytest

ROOT = pathlib.Path(__file__).parent.parent


def _without_pythonpath():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


@pytest.mark.slow
def test_the_package_imports_from_the_folder_that_holds_the_clone(tmp_path):
    if importlib_util_missing("pip") or importlib_util_missing("setuptools"):
        pytest.skip("pip and setuptools are needed to install the clone")
    clone = tmp_path / "tinyattn"  # the folder name `git clone .../tinyattn` gives
    clone.mkdir()
    for name in ("pyproject.toml", "setup.cfg", "README.md"):
        shutil.copy(ROOT / name, clone / name)
    shutil.copytree(ROOT / "src", clone / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))

    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # this environment's packages (NumPy, pip, setuptools), after the venv's own: a .pth sorted last
    (pathlib.Path(site) / "zz_this_environment.pth").write_text(sysconfig.get_path("purelib") + "\n")

    env = _without_pythonpath()
    install = subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                              "--no-index", "-e", str(clone)], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=600)
    assert install.returncode == 0, install.stdout + install.stderr

    # from the folder that holds the clone: `tinyattn/` in the current folder comes first on sys.path
    used = subprocess.run([python, "-c", "import tinyattn; tinyattn.ones(2); print(tinyattn.__file__)"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert used.returncode == 0, used.stderr
    assert pathlib.Path(used.stdout.strip()) == clone / "src" / "tinyattn" / "__init__.py"
    demo = subprocess.run([python, "-m", "tinyattn", "demo", "--help"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert demo.returncode == 0 and demo.stdout.startswith("usage: tinyattn demo"), demo.stdout + demo.stderr


def importlib_util_missing(name):
    import importlib.util

    return importlib.util.find_spec(name) is None
