"""`tinyattn exercises autograder`: a zip in Gradescope's autograder layout that grades the
exercises with this tinyattn, installed from a wheel inside the zip.

The zip holds:

    setup.sh          Gradescope runs it once when it builds the image: a venv, then tinyattn from
                      its wheel (and NumPy, array-api-compat, threadpoolctl and Hypothesis from
                      wheels/ when the zip holds them, else from PyPI)
    run_autograder    runs for each submission: `tinyattn exercises check` on /autograder/submission,
                      Gradescope's results in /autograder/results/results.json
    tinyattn-*.whl    this tinyattn, as a wheel made from the installed package
    course/           the teacher's exercise files (--course), if any
    wheels/           the dependencies' wheels (--wheels), if any

Environment variables move the paths, for a test or another platform: AUTOGRADER_ROOT (default
/autograder), TINYATTN_PYTHON (an interpreter to install into and grade with, instead of a new
venv), TINYATTN_PIP_OPTIONS (more options for pip, such as `--no-index --no-deps`).
"""

import base64
import hashlib
import importlib.metadata
import io
import pathlib
import shlex
import zipfile

# the requirements of the wheel when the installed package's metadata cannot be read
REQUIREMENTS = ("numpy>=2.1", "array-api-compat>=1.10", "threadpoolctl>=3.1", "hypothesis>=6.0")

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image (as root, in /autograder/source).
set -euo pipefail
cd "$(dirname "$0")"
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${TINYATTN_PYTHON:-}"
if [ -z "$PYTHON" ]; then
    # tinyattn needs Python 3.11 or later (Gradescope's Ubuntu 24.04 image has 3.12)
    if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1 && command -v apt-get >/dev/null; then
        apt-get update && apt-get install -y python3 python3-venv python3-pip
    fi
    python3 -m venv "$ROOT/venv"
    PYTHON="$ROOT/venv/bin/python"
fi
OPTIONS="${TINYATTN_PIP_OPTIONS:-}"
if ls wheels/*.whl >/dev/null 2>&1; then
    OPTIONS="$OPTIONS --no-index --find-links wheels"  # everything from the zip: no network needed
fi
"$PYTHON" -m pip install $OPTIONS ./WHEEL
"$PYTHON" -m tinyattn exercises list COURSE >/dev/null  # the exercises load
"""

RUN = """\
#!/usr/bin/env bash
# Gradescope runs this for each submission: the learner's files are in /autograder/submission, the
# grades go to /autograder/results/results.json. Each exercise is checked in a process of its own.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${TINYATTN_PYTHON:-$ROOT/venv/bin/python}"
mkdir -p "$ROOT/results"
RESULTS="$ROOT/results/results.json"
cd "$ROOT/source"
"$PYTHON" -m tinyattn exercises check "$ROOT/submission" SELECTION --format gradescope --output "$RESULTS"
status=$?
if [ "$status" -gt 1 ]; then  # 0: all pass, 1: some fail; anything else: the grading did not finish
    printf '{"score": 0, "output": "The autograder stopped (status %s) before grading this submission: '\\
'ask your teacher."}\\n' "$status" > "$RESULTS"
fi
exit 0
"""


def write(output, course=None, names=(), track=None, timeout=None, examples=None, wheels=None):
    """Write the autograder zip to `output`; the names of the files in it.

    course: the teacher's folder of exercises (None: tinyattn's own); names, track: only these
    exercises (as `check` takes them); timeout, examples: `check`'s options; wheels: a folder of
    wheels (NumPy and the others, for the platform's Python) to install from instead of PyPI.
    """
    wheel_name, wheel_bytes = package_wheel()
    selection = [*names]
    if course is not None:
        selection += ["--course", "course"]
    if track is not None:
        selection += ["--track", track]
    if timeout is not None:
        selection += ["--timeout", f"{timeout:g}"]
    if examples is not None:
        selection += ["--examples", str(examples)]
    listed = "--course course" if course is not None else ""
    written = []
    with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as bundle:
        def add(name, data, executable=False):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if executable else 0o644) << 16
            bundle.writestr(info, data)
            written.append(name)

        add("setup.sh", SETUP.replace("WHEEL", wheel_name).replace("COURSE", listed), executable=True)
        add("run_autograder", RUN.replace("SELECTION", shlex.join(selection)), executable=True)
        add(wheel_name, wheel_bytes)
        if course is not None:
            for path in sorted(pathlib.Path(course).glob("*.py")):
                add(f"course/{path.name}", path.read_bytes())
        if wheels is not None:
            for path in sorted(pathlib.Path(wheels).glob("*.whl")):
                add(f"wheels/{path.name}", path.read_bytes())
    return written


def package_wheel():
    """(file name, bytes) of a wheel of the tinyattn package this runs from: its files as they are
    (sources, the bundled data, the exercises), with the metadata pip needs to install it."""
    import tinyattn

    package = pathlib.Path(tinyattn.__file__).resolve().parent
    version = tinyattn.__version__
    info = f"tinyattn-{version}.dist-info"
    files = {}
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
            files[f"tinyattn/{path.relative_to(package).as_posix()}"] = path.read_bytes()
    try:
        requires = [r for r in importlib.metadata.requires("tinyattn") or () if "extra ==" not in r]
    except importlib.metadata.PackageNotFoundError:
        requires = []
    metadata = ["Metadata-Version: 2.1", "Name: tinyattn", f"Version: {version}", "Requires-Python: >=3.11"]
    metadata += [f"Requires-Dist: {r}" for r in requires or REQUIREMENTS]
    files[f"{info}/METADATA"] = ("\n".join(metadata) + "\n").encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: tinyattn\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/entry_points.txt"] = b"[console_scripts]\ntinyattn = tinyattn.app.cli:main\n"
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in files.items()]
    files[f"{info}/RECORD"] = ("\n".join(record + [f"{info}/RECORD,,"]) + "\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            info_ = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info_.compress_type = zipfile.ZIP_DEFLATED
            info_.external_attr = 0o644 << 16
            wheel.writestr(info_, data)
    return f"tinyattn-{version}-py3-none-any.whl", buffer.getvalue()


def _digest(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
