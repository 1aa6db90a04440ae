"""Details of the commands a teacher meets when grading a class: `verify --course`, an action's errors
pointing to its own help, a built-in exercise copied into a course as a template, the command in a
skeleton's comment, `coverage` on names inside modules tinyattn lacks (and its wrapping), what
`--threads` beyond the machine does, and torch.load's message for map_location='cuda' without CUDA."""

import pathlib
import shutil

import pytest

import tinyattn
from tinyattn import console
from tinyattn.app import coverage
from tinyattn.app import cli
from tinyattn.exercises import command

EXERCISES_DIR = pathlib.Path(tinyattn.__file__).parent / "exercises"


def run(capsys, *argv):
    code = cli.main(["exercises", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def template_course(folder):
    """A course made of two of tinyattn's own exercise files, copied as they are."""
    folder.mkdir()
    for name in ("e09_softmax.py", "e18_topological_order.py"):
        shutil.copy(EXERCISES_DIR / name, folder / name)
    return folder


def test_verify_takes_course_as_the_other_actions_do(capsys, tmp_path):
    course = template_course(tmp_path / "course")
    code, out, err = run(capsys, "verify", "softmax", "--course", course, "--examples", "2", "--cases", "2")
    assert code == 0 and "09 softmax: proven" in out and "1 of 1 exercise proven" in out, out + err
    # the older spelling, the folder first, still works
    code, out, _ = run(capsys, "verify", course, "softmax", "--examples", "2", "--cases", "2")
    assert code == 0 and "09 softmax: proven" in out


@pytest.mark.parametrize("argv, prog", [
    (["verify"], "tinyattn exercises verify"),
    (["verify", "--course", "x", "--bogus"], "tinyattn exercises verify"),
    (["check", "x", "--bogus"], "tinyattn exercises check"),
    (["list", "--bogus"], "tinyattn exercises list"),
])
def test_an_actions_errors_point_to_its_own_help(capsys, argv, prog):
    with pytest.raises(SystemExit) as exited:
        command.main(argv)
    _, err = capsys.readouterr()
    assert exited.value.code == 2 and err.startswith(f"{prog}: error: ") and f"(see {prog} --help)" in err, err


def test_a_builtin_exercise_copied_into_a_course_works_as_a_template(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    template_course(tmp_path / "course")
    code, out, err = run(capsys, "list", "--course", "course")
    assert code == 0 and "softmax" in out and "topological_order" in out, out + err
    code, out, _ = run(capsys, "start", "answers", "--course", "course", "--solutions")
    assert code == 0
    code, out, err = run(capsys, "check", "answers", "--course", "course", "--examples", "3")
    assert code == 0 and "2 of 2 pass" in out, out + err


def test_the_command_in_a_skeleton_works_from_the_files_folder(capsys, tmp_path, monkeypatch):
    """The learner opens the file, goes to its folder and runs the command its comment gives."""
    monkeypatch.chdir(tmp_path)
    template_course(tmp_path / "course")
    run(capsys, "start", "class/work", "--course", "course")
    monkeypatch.chdir(tmp_path / "class" / "work")
    text = pathlib.Path("09_softmax.py").read_text()
    line = next(line.strip() for line in text.splitlines() if line.strip().startswith("tinyattn exercises check"))
    assert line.startswith("tinyattn exercises check . softmax --course ")
    code, out, err = run(capsys, *line.split()[2:])
    assert code == 1 and err == "" and "not done yet" in out, out + err


@pytest.mark.parametrize("name, namespace", [
    ("torch.func.grad", "torch.func"), ("torch.func.vmap", "torch.func"), ("torch.special.erf", "torch.special"),
    ("torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint"),
])
def test_coverage_of_a_name_inside_a_module_tinyattn_lacks_says_not_implemented(name, namespace):
    there, line = coverage.describe(name)
    assert not there and "does not implement (yet)" in line and f"it has no {namespace}" in line, line
    there, line = coverage.describe(namespace)
    assert not there and "does not implement (yet)" in line, line
    # a misspelling inside a module tinyattn has is still a misspelling
    assert "check the spelling" in coverage.describe("torch.nn.Lineer")[1]


def test_torch_utils_checkpoint_raises_the_not_implemented_error():
    torch = tinyattn
    with pytest.raises(AttributeError, match=r"tinyattn does not implement torch\.utils\.checkpoint \(yet\)"):
        torch.utils.checkpoint.checkpoint(lambda x: x, torch.ones(2))


def test_coverage_wraps_at_words_in_an_80_column_terminal(capsys, monkeypatch):
    monkeypatch.setattr(console, "terminal_width", lambda stream=None: 80)
    names = ["torch.func.grad", "torch.nn.Lineer", "torch.nn.Linear"]
    coverage.main(names)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(line) < 80 for line in lines), lines
    words = set(" ".join(coverage.describe(n)[1] for n in names).split())
    assert set(out.split()) <= words, set(out.split()) - words  # no word cut in two
    monkeypatch.setattr(console, "terminal_width", lambda stream=None: None)  # a pipe: a line per name
    coverage.main(names)
    assert len(capsys.readouterr().out.splitlines()) == 3


def test_threads_beyond_the_machine_are_said(capsys):
    cli._say_what_threads_do(99, 64, 2)
    err = capsys.readouterr().err
    flat = " ".join(err.split())
    assert flat.startswith("--threads 99: NumPy's BLAS runs at most 64 threads, so 64 threads compute, on 2 cores")
    assert "--threads 2 or fewer" in flat
    cli._say_what_threads_do(8, 8, 2)
    assert "8 threads compute, on 2 cores" in " ".join(capsys.readouterr().err.split())
    cli._say_what_threads_do(2, 2, 4)
    assert capsys.readouterr().err == ""


def test_map_location_cuda_without_cuda_says_what_was_asked(tmp_path):
    from tinyattn import backend

    if backend.cuda_is_available():
        pytest.skip("CUDA is available here")
    path = tmp_path / "w.pt"
    tinyattn.save({"w": tinyattn.ones(2)}, path)
    for location in ("cuda", tinyattn.device("cuda"), {"cpu": "cuda:0"}):
        with pytest.raises(Exception, match=r"map_location='cuda(:0)?' puts the file's tensors \(saved on 'cpu'\) "
                                            r"on a CUDA device, but CUDA is not available") as raised:
            tinyattn.load(path, map_location=location)
        assert "(a CUDA device)" not in str(raised.value)


def command_times(path):
    """{command: its time} from a Markdown table whose rows start with | `tinyattn COMMAND ...` |."""
    found = {}
    for line in pathlib.Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("| `tinyattn "):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            found[cells[0].split()[1].strip("`")] = cells[-1]
    return found


def test_the_readme_quotes_the_command_times_of_the_reference():
    """The times of the commands are measured once, in the table of docs/reference/cli.md, which has a
    row for every command the README names; the training time the README quotes is the table's."""
    import re

    root = pathlib.Path(__file__).resolve().parent.parent
    readme, reference = (root / "README.md").read_text(encoding="utf-8"), command_times(root / "docs/reference/cli.md")
    named = set(re.findall(r"`tinyattn ([a-z]+)\b", readme))
    assert named >= {"train", "generate", "demo", "gradcheck", "exercises", "bench"}, named
    assert set(reference) >= named, named - set(reference)
    assert all(re.search(r"\d", time) for time in reference.values()), reference
    quoted = re.findall(r"The training took (\d+ s) ", " ".join(readme.split()))
    assert quoted and quoted == [reference["train"].split(" (")[0]], (quoted, reference["train"])


def test_no_install_hint_asks_an_index_for_tinyattn():
    """tinyattn is installed from a clone (`pip install -e .`) or a wheel, not from an index: no
    message or page says `pip install tinyattn` or `pip install 'tinyattn[extra]'`."""
    import re

    root = pathlib.Path(__file__).resolve().parent.parent
    files = [root / "README.md", *(root / "docs").rglob("*.md"), *(root / "src").rglob("*.py")]
    pattern = re.compile(r"pip install (--\S+ )*[\"']?tinyattn\b")
    found = [f"{path.relative_to(root)}:{number}" for path in files
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not found, found
