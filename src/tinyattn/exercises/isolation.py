"""Each exercise graded in a process of its own, which the learner's code can end without ending
the grading, and cannot use to raise its own grade.

`check_file(exercise, path, ...)` starts a fresh Python (`python -m tinyattn.exercises.worker`)
with a memory limit (Linux), which loads the learner's file. The check then runs here, in the
grader's process, as it does for a piece given to it directly, and each time it needs the learner's
code on a case it sends the case over a pipe and gets back plain data (wire.py: JSON, nothing
unpickled): for the backward track the forward's outputs and the backward's gradients as arrays;
for a Task with a probe (the engine and layer tracks, 18 to 23: task.py) what the probe noted of
the learner's piece on that case (an order as the graph's node numbers, accumulated and summed
gradients, what a Saved gave back, each recorded node's edges, a layer's gradients). The
comparison with the reference, the diagnosis and every report and file are made here, where the
learner's code never ran, so a patched NumPy, checker or judge in the worker changes nothing but
the worker's own answers. Only a teacher's Task without a probe is checked whole in the worker,
which sends back its Result: that process is isolated too, but its judging happens beside the
learner's code.

An exercise whose process exits, crashes, runs out of memory or of time, or sends back something
that is not an answer gets 0 with a finding that says what happened; the others are graded as usual.
"""

import os
import pathlib
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from . import checker, task, wire
from .diagnosis import Finding
from .task import Task

TIMEOUT = 60.0  # seconds an exercise may take once its process has started (the slowest shipped one: 0.3 s)
STARTUP = 120.0  # seconds a worker may take to start (Python, NumPy, tinyattn, the course: about 1 s)
MEMORY = 2 * 2**30  # bytes of address space a worker may add to what it uses once started (Linux)
_TEXT = 500  # longest title, note or evidence line kept from a worker's answer
_LINES = 40  # most evidence lines kept


class ChildFailed(Exception):
    """The worker stopped answering: it exited, crashed, ran out of time, or sent back garbage."""

    def __init__(self, found):
        super().__init__(found.title)
        self.finding = found


def check_files(items, course=None, examples=checker.EXAMPLES, seed=checker.SEARCH_SEED, timeout=TIMEOUT,
                memory=MEMORY):
    """The Result of each (exercise, learner's file) in `items`, in order, as check_file gives it;
    the next exercise's process starts (Python and tinyattn load) while one is checked."""
    items = [(exercise, pathlib.Path(path)) for exercise, path in items]
    waiting = {}

    def start(k):
        if k < len(items) and items[k][1].exists():
            waiting[k] = Child(items[k][0], items[k][1], course, timeout, memory)

    try:
        start(0)
        for k, (exercise, path) in enumerate(items):
            start(k + 1)
            yield check_file(exercise, path, course, examples, seed, timeout, memory, child=waiting.pop(k, None))
    finally:
        for child in waiting.values():
            child.close()


def check_file(exercise, path, course=None, examples=checker.EXAMPLES, seed=checker.SEARCH_SEED,
               timeout=TIMEOUT, memory=MEMORY, child=None):
    """The Result of the learner's file `path` for `exercise`, checked in a process of its own.

    course: the folder of the teacher's exercises (None: tinyattn's own).
    timeout: seconds the exercise may take from the moment its file is loaded (the start of its
    process is not counted); memory: bytes of address space the worker may add (None: no limit).
    child: its process, already started (check_files starts the next one early).
    """
    path = pathlib.Path(path)
    if not path.exists():  # said without starting a process
        return checker.load(exercise, path)
    child = child or Child(exercise, path, course, timeout, memory)
    try:
        loaded = child.load()
        if loaded is not None:
            return loaded
        if isinstance(exercise, Task) and exercise.probe is None:  # a judge in one piece: run beside the code
            return child.check_task(examples, seed)
        if isinstance(exercise, Task):
            result = task.check(exercise, child, examples, seed=seed)
        else:
            result = checker.check(exercise, child, examples, seed=seed)
    except ChildFailed as failed:
        return _failed(exercise, failed.finding)
    except Exception:
        if child.failure is None:  # not the learner's doing
            raise
        result = None  # a failure Hypothesis passed on as another exception
    finally:
        child.close()
    if child.failure is not None:  # the worker failed while Hypothesis looked for a failing case
        return _failed(exercise, child.failure.finding)
    return result


def _failed(exercise, found):
    return checker.Result(exercise, "FAIL", found)


class Child(checker.Remote):
    """The worker process of one exercise, and the conversation with it."""

    def __init__(self, exercise, path, course, timeout, memory):
        self.exercise, self.timeout, self.failure = exercise, float(timeout), None
        self.stderr = tempfile.TemporaryFile()
        package_root = str(pathlib.Path(__file__).resolve().parents[2])  # the folder that holds tinyattn
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([package_root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        self.process = subprocess.Popen(
            # -P: the current folder is not on the path (a learner's numpy.py would shadow NumPy)
            [sys.executable, "-P", "-m", "tinyattn.exercises.worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.stderr, env=env, start_new_session=os.name == "posix")
        self.deadline = time.monotonic() + STARTUP
        self.replies = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        start = {"course": None if course is None else str(pathlib.Path(course).resolve()),
                 "exercise": exercise.name, "file": str(path.resolve()), "memory": memory,
                 "hypothesis": checker.hypothesis_installed()}
        try:
            wire.send(self.process.stdin, start)
        except OSError:  # a worker that died at once: load() says why, from what it left on stderr
            pass

    # --- the conversation ------------------------------------------------------------------

    def load(self):
        """None when the learner's file loaded; else the Result that says why not."""
        ready = self._reply(starting=True)
        if not ready.get("ready"):
            self._fail(_garbled("did not start as expected"))
        self.deadline = time.monotonic() + self.timeout  # the learner's time starts with their file
        self._send({"op": "load"})
        answer = self._reply()
        if answer.get("loaded") is True:
            return None
        result = self._result(answer.get("result"))
        if result.status == "pass":  # a file that did not load cannot pass
            self._fail(_garbled("said its file both failed to load and passed"))
        return result

    def check_task(self, examples, seed):
        self._send({"op": "task", "examples": examples, "seed": seed})
        return self._result(self._reply().get("result"))

    def probe(self, case):
        """What the learner's piece did on `case`, as its Task's probe notes it (plain data)."""
        self._send({"op": "probe", "case": task.case_data(case)})
        answer = self._reply()
        if "verdict" in answer:
            raise self._verdict(answer["verdict"])
        if not isinstance(answer.get("steps"), dict):
            self._fail(_garbled("sent back something other than what the code did"))
        return answer["steps"]

    def evaluate(self, case, dtype, kind):
        self._send({"op": "evaluate", "case": case, "dtype": "float32" if str(dtype).endswith("float32")
                    else "float64", "kind": kind})
        answer = self._reply()
        if "verdict" in answer:
            raise self._verdict(answer["verdict"])
        names = [name for name in self.exercise.args if name in self.exercise.grads]
        outputs = answer.get("outputs")
        if not isinstance(outputs, list) or not outputs or not all(_floats(o) for o in outputs):
            self._fail(_garbled("sent back outputs that are not arrays"))
        grads = answer.get("grads")
        if not isinstance(grads, list) or not all(isinstance(g, dict) and sorted(g) == sorted(names)
                                                  and all(v is None or _floats(v) for v in g.values())
                                                  for g in grads):
            self._fail(_garbled("sent back gradients that are not arrays"))
        error = answer.get("error")
        # one set for "normal"; zeros and a one-hot per output element for "jacobian" (counted, not made:
        # outputs of a forged size must not make this process allocate)
        expected = 1 if kind == "normal" else 1 + sum(o.size for o in outputs)
        if len(grads) > expected or (error is None and len(grads) != expected):
            self._fail(_garbled("sent back another number of gradients than asked for"))
        return checker.Evaluation(
            [np.asarray(o, dtype=np.float64) for o in outputs],
            [{name: None if v is None else np.asarray(v, dtype=np.float64) for name, v in g.items()} for g in grads],
            None if error is None else self._verdict(error), bool(answer.get("saved_changed")))

    def close(self):
        """End the worker (and anything it started) if it still runs."""
        try:
            if self.process.poll() is None:
                try:
                    self.process.stdin.close()
                except OSError:
                    pass
            _kill(self.process)
        finally:
            self.stderr.close()

    # --- the channel -----------------------------------------------------------------------

    def _read(self):
        try:
            while True:
                message = wire.receive(self.process.stdout)
                self.replies.put(message)
                if message is None:
                    return
        except Exception as error:  # whatever the bytes were, they are not an answer
            self.replies.put(error if isinstance(error, wire.WireError) else wire.WireError(str(error)))

    def _send(self, message):
        if self.failure is not None:
            raise self.failure
        try:
            wire.send(self.process.stdin, message)
        except OSError:  # it has gone: what it left says why
            self._reply()
            self._fail(_garbled("stopped reading"))

    def _reply(self, starting=False):
        if self.failure is not None:
            raise self.failure
        try:
            message = self.replies.get(timeout=max(0.0, self.deadline - time.monotonic()))
        except queue.Empty:
            if starting:
                _kill(self.process)
                raise RuntimeError(f"the exercise checker's worker process did not start in {STARTUP:g} s") from None
            self._fail(Finding("timeout", f"stopped after {self.timeout:g} s", "",
                               f"Your code was still running after {self.timeout:g} s, the time each exercise "
                               "may take (an endless loop? a very slow computation?), so it was stopped."))
        if isinstance(message, dict):
            return message
        if message is None:
            try:
                status = self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _kill(self.process)
                status = self.process.wait()
            if starting:
                raise RuntimeError("the exercise checker's worker process did not start "
                                   f"(status {status}): {self._stderr_tail()}")
            self._fail(_ended(status))
        self._fail(_garbled("sent back bytes that are not a message"))

    def _fail(self, found):
        _kill(self.process)
        self.failure = ChildFailed(found)
        raise self.failure

    def _stderr_tail(self):
        try:
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - 2000))
            return self.stderr.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    # --- reading answers -------------------------------------------------------------------

    def _verdict(self, data):
        if not isinstance(data, dict):
            self._fail(_garbled("sent back a verdict that is not one"))
        status = data.get("status") if data.get("status") in ("FAIL", "not done yet") else "FAIL"
        return checker._Verdict(status, self._finding(data.get("finding")), _lines(data.get("lines")))

    def _finding(self, data):
        if not isinstance(data, dict):
            return Finding("error", "failed")
        return Finding(*(_text(data.get(key)) for key in ("id", "title", "note", "explanation")))

    def _result(self, data):
        if not isinstance(data, dict) or data.get("status") not in ("pass", "FAIL", "not done yet", "error",
                                                                      "missing"):
            self._fail(_garbled("sent back a result that is not one"))
        passed = data["status"] == "pass"
        random_cases = data.get("random_cases")
        return checker.Result(
            self.exercise, data["status"], None if passed else self._finding(data.get("finding")),
            _lines(data.get("lines")), phase=_text(data.get("phase")) or "example",
            checked=_text(data.get("checked")), random_cases=random_cases if isinstance(random_cases, int) else 0,
            seed=data.get("seed") if isinstance(data.get("seed"), int) else None,
            case_text=_text(data.get("case_text")) or None)


def _floats(value):
    return isinstance(value, np.ndarray) and value.dtype.kind in "fib"


def _text(value):
    text = value if isinstance(value, str) else ""
    return text if len(text) <= _TEXT else text[: _TEXT - 3] + "..."


def _lines(value):
    return [_text(line) for line in value[:_LINES]] if isinstance(value, list) else []


def _garbled(what):
    return Finding("garbled", "answered with something else", f"the process that ran your code {what}",
                   "The process that ran your code sent back something other than the answers the checker "
                   "asks for: does your code write to the process's standard output at the file level?")


def _ended(status):
    if status is not None and status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        what = {"SIGSEGV": "a crash", "SIGKILL": "killed, perhaps for using too much memory",
                "SIGABRT": "an abort", "SIGBUS": "a crash", "SIGFPE": "a crash"}.get(name, "a signal")
        return Finding("crashed", f"ended by {name} before returning", f"{name}: {what}",
                       f"The process that ran your code ended by {name} ({what}) before the check was done.")
    return Finding("exited", f"exited with status {status} before returning", "",
                   f"The process that ran your code exited (status {status}) before the check was done: does "
                   "your code call sys.exit, exit() or os._exit? Remove that call.")


def _kill(process):
    """Kill the worker and, on POSIX, every process it started in its session."""
    if process.poll() is None or os.name == "posix":
        if os.name == "posix":
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if process.poll() is None:
            try:
                process.kill()
            except OSError:
                pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
