"""Every command `tinyattn --help` lists, as a newcomer meets it: a bad argument is one line on stderr,
and Ctrl-C in the middle of the work keeps what was done, says so in one line and exits with 130.

The commands run in subprocesses, as typed in a shell, with tiny settings; SIGINT is sent once the
command has printed a sign of its work (a training step, generated text, a benchmark row, ...).
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from tinyattn.app import cli

TEXT = "When forty winters shall besiege thy brow,\nAnd dig deep trenches in thy beauty's field,\n" * 10
SMALL = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "4",
         "--eval-iters", "1"]


def listed_commands(help_text):
    """The COMMAND names in the help text of `tinyattn --help` (four spaces in, under COMMAND)."""
    section = help_text.split("COMMAND\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^    (\S+)", section, flags=re.M)


COMMANDS = listed_commands(cli.build_parser().format_help())


class Running:
    """A `tinyattn ...` subprocess whose stdout is read as it comes."""

    def __init__(self, argv, cwd):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tinyattn", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # even if the shell ignores it
        self.chunks = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while chunk := self.process.stdout.read1(4096):
            self.chunks.append(chunk)

    @property
    def out(self):
        return b"".join(self.chunks).decode("utf-8", "replace")

    def wait_for(self, sign, timeout=120):
        """Wait until stdout matches `sign` (a regex); False if the process ended or the time ran out first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(sign, self.out):
                return True
            if self.process.poll() is not None:
                return bool(re.search(sign, self.out))
            time.sleep(0.02)
        return False

    def interrupt(self):
        self.process.send_signal(signal.SIGINT)
        err = self.process.stderr.read().decode("utf-8", "replace")
        code = self.process.wait(timeout=120)
        self.reader.join(timeout=10)
        return code, self.out, err


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A corpus and a small trained checkpoint for `generate`."""
    folder = tmp_path_factory.mktemp("commands")
    (folder / "input.txt").write_text(TEXT, encoding="utf-8")
    assert cli.main(["train", "--data", str(folder / "input.txt"), "--out", str(folder / "trained"), "--steps", "2",
                     "--quiet", "--sample-tokens", "0", *SMALL]) == 0
    assert cli.main(["exercises", "start", str(folder / "course"), "--solutions"]) == 0
    return folder


def train_kept_its_checkpoint(folder, out, err):
    meta = json.loads((folder / "run" / "ckpt" / "meta.json").read_text())
    assert meta["step"] >= 5  # trained steps are kept: the run can be resumed from them
    assert f"stopped at step {meta['step']} of 100000; the checkpoint is in" in err
    assert re.search(r"step +5: train loss", out)


def generate_kept_its_text(folder, out, err):
    assert re.search(r"\S{10}", out) and out.endswith("\n")  # the text streamed so far stays, then a newline
    assert err.strip() == "tinyattn generate: interrupted"


def bench_kept_its_figures(folder, out, err):
    report = json.loads((folder / "bench.json").read_text())
    assert "add" in report["overhead"] and re.search(r"\nadd +\d", out)  # the row measured, printed and saved
    assert err.startswith("tinyattn bench: interrupted during (c) cost per op")


def gradcheck_kept_its_rows(folder, out, err):
    assert "PASS" in out and re.search(r"\d+ of \d+ checks passed", out)
    assert err.startswith("tinyattn gradcheck: interrupted during the check")


def exercises_kept_its_results(folder, out, err):
    assert re.search(r"\n 1  add +pass", out)  # the rows checked stay, with their summary
    # the summary says how far the check got, never "N of N pass" as if the whole course were checked
    assert re.search(r"\ninterrupted after (\d+) of 23 exercises: of those checked, \1 of \1 pass\n", out)
    assert err.strip() == "tinyattn exercises: interrupted"


def demo_kept_its_output(folder, out, err):
    assert "STEP 11" in out and err.strip() == "tinyattn demo: interrupted"


# for each command: the arguments of a run long enough to interrupt, the sign that it is at work,
# and what must be left once it is interrupted
RUNS = {
    "train": (["--data", "input.txt", "--out", "run", "--steps", "100000", "--eval-interval", "5", *SMALL],
              r"step +5: train loss", train_kept_its_checkpoint),
    "generate": (["--ckpt", "trained", "--tokens", "1000000", "--seed", "1"], r"\S{10}", generate_kept_its_text),
    "bench": (["--what", "overhead", "--rounds", "2", "--no-torch", "--json", "bench.json"], r"\nadd +\d",
              bench_kept_its_figures),
    "gradcheck": ([], r"PASS\n", gradcheck_kept_its_rows),
    "demo": ([], r"GRADIENT CHECK", demo_kept_its_output),
    "exercises": (["check", "course", "--examples", "1000"], r"\n 1  add +pass", exercises_kept_its_results),  # the gradient check takes about a second
    # answers at once: nothing to stop, so it must end by itself (status 0, no traceback) before the Ctrl-C
    "coverage": (["torch.median"], r"(?!)", None),
}


# `tinyattn see` runs a script that prints a line per step of tensor ops, for ever
SEE_LOOP = ["tinyattn-see-loop.py", "--html", "loop.html"]


def see_wrote_no_page(folder, out, err):
    assert "step 0" in out and err.strip() == "tinyattn see: interrupted: no page written"
    assert not (folder / "loop.html").exists()


RUNS["see"] = (SEE_LOOP, r"step 0\n", see_wrote_no_page)


@pytest.fixture(scope="module")
def see_loop(workspace):
    (workspace / SEE_LOOP[0]).write_text("import tinyattn\nx = tinyattn.ones(4, requires_grad=True)\n"
                                         "for step in range(10**9):\n    (x * 2).sum().backward()\n"
                                         "    print(f'step {step}', flush=True)\n")
    return workspace


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_a_bad_argument_and_ctrl_c_in_one_line(command, workspace, see_loop):
    result = subprocess.run([sys.executable, "-m", "tinyattn", command, "--no-such-option"], capture_output=True,
                            text=True, cwd=workspace, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "--no-such-option" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr

    argv, sign, kept = RUNS.get(command, ([], r"\S", None))  # a command added later: at least no traceback
    running = Running([command, *argv], cwd=workspace)
    started = running.wait_for(sign)
    code, out, err = running.interrupt()
    assert "Traceback" not in err, err
    if kept is None and not started:
        assert code == 0, err
        return
    assert started, (out, err)
    assert code == 130, (code, out, err)
    assert len(err.strip().splitlines()) == 1, err
    if kept is not None:
        kept(workspace, out, err)


def test_the_help_lists_the_commands_tested():
    help_text = subprocess.run([sys.executable, "-m", "tinyattn", "--help"], capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}).stdout
    assert listed_commands(help_text) == COMMANDS
    assert set(RUNS) <= set(COMMANDS)


# ---------------------------------------------------------------------------------------------
# into a pipe whose reader goes away (`tinyattn ... | head -1`)


def train_saved_before_it_stopped(folder, err):
    from tinyattn.app import checkpoint
    from tinyattn.app.models import build_model

    saved = checkpoint.load_checkpoint(folder / "piped")  # complete, and it loads
    model = build_model(saved.meta["model"]["kind"], **saved.meta["model"]["config"])
    checkpoint.load_model_state(saved, model)
    assert saved.step >= 1  # the step it was at when a line could not be written
    assert f"the output was closed: stopped at step {saved.step} of 100000; the checkpoint is in" in err
    assert len(err.strip().splitlines()) == 1, err


PIPED = {"train": ["--data", "input.txt", "--out", "piped", "--steps", "100000", "--eval-interval", "5", *SMALL],
         "coverage": ["torch.median"] * 5000}  # more lines than a pipe holds, so one is still to write


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_into_a_closed_pipe_stops_quietly(command, workspace, see_loop):
    """As `tinyattn COMMAND | head -1`: the reader takes one line and goes away. The command ends
    with 141 (128 + SIGPIPE, as a C tool stopped by SIGPIPE), or 0 if it had nothing more to write,
    with no traceback; a training run saves its checkpoint first."""
    argv = PIPED.get(command, RUNS.get(command, ([],))[0])
    process = subprocess.Popen([sys.executable, "-m", "tinyattn", command, *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=workspace,
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    first = process.stdout.readline()
    process.stdout.close()
    err = process.stderr.read().decode("utf-8", "replace")
    code = process.wait(timeout=300)
    assert first.endswith(b"\n"), err  # a line came through before the reader went away
    assert "Traceback" not in err and "Error" not in err, err
    assert code == 141, (code, err)
    if command == "train":
        train_saved_before_it_stopped(workspace, err)
    else:
        assert err == ""


def test_a_ctrl_c_in_a_garbage_collector_callback_still_stops_the_command():
    """Python cannot raise an exception from a gc callback (Hypothesis keeps one, so `exercises check`
    meets it): it hands the KeyboardInterrupt to sys.unraisablehook, which prints "Exception ignored
    ... Traceback", and goes on. Inside a command the hook sends the Ctrl-C again to the main thread."""
    import types

    ignored = []
    before = sys.unraisablehook
    sys.unraisablehook = ignored.append  # what Python would print, kept here
    try:
        with pytest.raises(KeyboardInterrupt):
            with cli.ctrl_c_never_lost():
                sys.unraisablehook(types.SimpleNamespace(  # as Python calls it for a callback's exception
                    exc_type=KeyboardInterrupt, exc_value=KeyboardInterrupt(), exc_traceback=None,
                    err_msg="Exception ignored in", object=None))
                for _ in range(1000):  # the interrupt arrives within a few milliseconds
                    time.sleep(0.001)
        assert ignored == []  # nothing was printed as ignored
        with cli.ctrl_c_never_lost():  # any other exception goes to the hook as before
            sys.unraisablehook(types.SimpleNamespace(exc_type=ValueError))
        assert len(ignored) == 1
    finally:
        sys.unraisablehook = before
