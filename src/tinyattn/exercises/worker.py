"""The process that runs one learner's file for the grader: `python -m tinyattn.exercises.worker`.

It talks to the grader (isolation.py) over its stdin and stdout, which it keeps for itself before
any learner's code runs (the learner's prints go nowhere). The grader's first message names the
exercise, the learner's file and the memory limit; the worker loads the file and answers
`{"loaded": true}` or the Result that says why it does not load. For an exercise of the backward
track it then answers each `{"op": "evaluate", case, dtype, kind}` with the outputs and gradients of
the learner's Function (the grader compares them with the library's); for a Task with a probe (the
engine and layer tracks), each `{"op": "probe", case}` with what the probe noted of the learner's
piece (the grader's verdict judges it); for a teacher's Task without one, `{"op": "task"}` gets the
whole check's Result.
"""

import os
import sys


def main():
    channel_in = os.fdopen(os.dup(0), "rb")
    channel_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (the process's for its lifetime)
    sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115

    from .. import dtypes
    from . import checker, wire

    start = wire.receive(channel_in)
    if start.get("hypothesis") is False:  # the grader has none: the random cases do not run here either
        sys.modules["hypothesis"] = None
    exercise = _exercise(start["course"], start["exercise"])
    _limit_memory(start.get("memory"))
    wire.send(channel_out, {"ready": True})
    if (wire.receive(channel_in) or {}).get("op") != "load":  # the grader's go, or its end
        return
    os.dup2(devnull, 2)  # from here on only the learner's code writes there: to nowhere
    sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    loaded = checker.load(exercise, start["file"])
    if isinstance(loaded, checker.Result):
        wire.send(channel_out, {"loaded": False, "result": result_data(loaded)})
        return
    wire.send(channel_out, {"loaded": True})
    kinds = {"float64": dtypes.float64, "float32": dtypes.float32}
    while True:
        message = wire.receive(channel_in)
        if message is None or message.get("op") == "exit":
            return
        if message["op"] == "task":
            result = exercise.check(loaded, message["examples"], message["seed"])
            wire.send(channel_out, {"result": result_data(result)})
        elif message["op"] == "probe":
            from . import task

            try:
                steps = task.run_probe(exercise, loaded, case_from(message["case"]))
            except checker._Verdict as verdict:
                wire.send(channel_out, {"verdict": verdict_data(verdict)})
                continue
            wire.send(channel_out, {"steps": steps})
        elif message["op"] == "evaluate":
            try:
                done = checker.evaluate_here(exercise, loaded, message["case"], kinds[message["dtype"]],
                                             message["kind"])
            except checker._Verdict as verdict:
                wire.send(channel_out, {"verdict": verdict_data(verdict)})
                continue
            wire.send(channel_out, {"outputs": done.outputs, "grads": done.grads,
                                    "error": None if done.error is None else verdict_data(done.error),
                                    "saved_changed": done.saved_changed})


def _exercise(folder, name):
    from . import course

    if folder is None:
        from . import EXERCISES

        return course.Course(EXERCISES).get(name)
    return course.load(folder).get(name)


def _limit_memory(extra):
    """At most `extra` bytes more address space than the worker uses now (Linux; elsewhere none)."""
    if not extra:
        return
    try:
        import resource

        with open("/proc/self/statm", encoding="ascii") as file:
            used = int(file.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (ImportError, OSError, ValueError):
        return
    limit = used + int(extra)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def verdict_data(verdict):
    found = verdict.finding
    return {"status": verdict.status, "finding": _finding_data(found), "lines": list(verdict.lines)}


def _finding_data(found):
    if found is None:
        return None
    return {"id": found.id, "title": found.title, "note": found.note, "explanation": found.explanation}


def case_from(data):
    """A case that task.case_data made plain data, as the probe takes it (a Recipe of the engine track)."""
    if isinstance(data, dict) and "__recipe__" in data:
        from .engine import Recipe  # (here, not in task.py: the engine's exercises import task)

        return Recipe(**data["__recipe__"])
    return data


def result_data(result):
    exercise = result.exercise
    case = None
    if result.case is not None:
        try:
            case = exercise.describe_case(result.case)
        except Exception:  # a case the report cannot describe: the report goes without it
            case = None
    return {"status": result.status, "finding": _finding_data(result.finding), "lines": list(result.lines),
            "phase": result.phase, "case_text": case, "checked": result.checked,
            "random_cases": result.random_cases, "seed": result.seed}


if __name__ == "__main__":
    main()
