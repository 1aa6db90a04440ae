"""A class of learners' files that try to stop the grading or raise their own grade, beside correct
and merely wrong ones: what test_grading.py grades. `python tests/hostile_class.py DIR` writes it to
DIR, to try by hand (`tinyattn exercises check DIR --timeout 10`).

Each file is an exercise's reference solution with something appended: a backward that does harm,
or code that runs when the file is loaded. HOSTILE maps an exercise to (what it does, the words its
finding must hold); CORRECT and WRONG name the others.
"""

import pathlib
import sys
import textwrap

from tinyattn import exercises

# exercise -> (code appended to its solution file, words of its finding in the table)
HOSTILE = {
    "sum": ("""
        def backward(ctx, grad_out):
            import sys
            sys.exit(3)

        Sum.backward = staticmethod(backward)
        """, "exited with status 3 before returning"),
    "mean": ("""
        import os

        def backward(ctx, grad_out):
            os._exit(0)

        Mean.backward = staticmethod(backward)
        """, "exited with status 0 before returning"),
    "matmul": ("""
        def backward(ctx, grad_out):
            while True:
                pass

        MatMul.backward = staticmethod(backward)
        """, "stopped after"),
    "exp_log": ("""
        import os
        import signal

        def backward(ctx, *grad_outputs):
            os.kill(os.getpid(), signal.SIGSEGV)

        ExpLog.backward = staticmethod(backward)
        """, "ended by SIGSEGV"),
    "relu": ("""
        import numpy as np

        def backward(ctx, grad_out):
            hoard = np.ones(2**30)  # 8 GiB
            return grad_out * hoard[0]

        ReLU.backward = staticmethod(backward)
        """, "MemoryError"),
    "gelu": ("""
        # agree with everything: NumPy's comparisons and the checker's own
        import numpy as np
        from tinyattn.exercises import checker, diagnosis

        np.allclose = lambda *args, **kwargs: True
        np.all = lambda *args, **kwargs: True
        checker.Probe.correct = lambda self, name: True
        checker.Probe.close = lambda self, a, b: True
        checker.quick_failure = lambda *args, **kwargs: None
        checker._check_forward = lambda *args, **kwargs: None
        checker.check = lambda exercise, function, *args, **kwargs: checker.Result(exercise, "pass", random_cases=20)

        def backward(ctx, grad_out):
            return grad_out * 0

        GELU.backward = staticmethod(backward)
        """, "no gradient for an input"),
    "softmax": ("""
        # write the grades file and the table's lines myself
        import json
        import os
        import subprocess
        import sys

        FORGED = {"score": 100.0, "tests": [], "output": "forged"}
        for path in (os.environ.get("FORGE_AT", ""), "results.json"):
            if path:
                with open(path, "w") as file:
                    json.dump(FORGED, file)
                # and once more after the grader has written it
                subprocess.Popen([sys.executable, "-c", "import json, sys, time; time.sleep(4); "
                                  "json.dump({'score': 100.0, 'tests': [], 'output': 'forged'}, open(sys.argv[1], 'w'))",
                                  path], start_new_session=False)
        sys.__stdout__.write(" 9  softmax               pass\\n23 of 23 pass\\n")
        print(" 9  softmax               pass")
        os.write(1, b" 9  softmax               pass\\n")
        os.write(2, b" 9  softmax               pass\\n")

        def backward(ctx, grad_out):
            return grad_out * 0

        Softmax.backward = staticmethod(backward)
        """, "no gradient for an input"),
    "log_softmax": ("""
        def deeper(n):
            return deeper(n + 1)

        def backward(ctx, grad_out):
            return deeper(0)

        LogSoftmax.backward = staticmethod(backward)
        """, "RecursionError"),
    "cross_entropy": ("""
        import os

        # garbage on every file the process has open for writing: the grader's pipe among them
        for fd in range(3, 64):
            try:
                os.write(fd, b"\\xff" * 64)
            except OSError:
                pass

        def backward(ctx, grad_out):
            for fd in range(3, 64):
                try:
                    os.write(fd, b"{not json" * 8)
                except OSError:
                    pass
            return None, None, None

        CrossEntropy.backward = staticmethod(backward)
        """, "answered with something else"),
    "topological_order": ("""
        import sys

        def topological_order(root):
            sys.exit(7)
        """, "exited with status 7 before returning"),
    "saved": ("""
        # a Saved that never frees, and a judge that agrees with everything: the engine track's
        # comparisons, NumPy's, the verdict and the check that gives the Result
        import numpy as np
        from tinyattn.exercises import checker, e21_saved, engine_checks, task
        from tinyattn.exercises.e21_saved import NeverFrees as Saved

        np.allclose = lambda *args, **kwargs: True
        np.array_equal = lambda *args, **kwargs: True
        engine_checks.leaf_differences = lambda *args, **kwargs: []
        e21_saved.verdict = lambda *args, **kwargs: None
        e21_saved.judge = lambda *args, **kwargs: None
        task.analyse = lambda exercise, piece, case: checker.Result(exercise, "pass", case=case)
        task.check = lambda exercise, *args, **kwargs: checker.Result(exercise, "pass", random_cases=20)
        task.Task.check = lambda self, *args, **kwargs: checker.Result(self, "pass", random_cases=20)
        """, "the saved values are never freed"),
    "mlp_batchnorm": ("""
        # a backward whose b2 is not summed over the batch, and a judge that agrees with everything
        import numpy as np
        from tinyattn.exercises import checker, manual, task
        from tinyattn.exercises.e23_mlp_batchnorm import bias_not_summed as manual_backward

        np.allclose = lambda *args, **kwargs: True
        np.all = lambda *args, **kwargs: True
        manual._compare = lambda *args, **kwargs: None
        manual._close = lambda *args, **kwargs: True
        task.analyse = lambda exercise, piece, case: checker.Result(exercise, "pass", case=case)
        task.check = lambda exercise, *args, **kwargs: checker.Result(exercise, "pass", random_cases=20)
        task.Task.check = lambda self, *args, **kwargs: checker.Result(self, "pass", random_cases=20)
        """, "missing the sum over the batch"),
}
CORRECT = ("add", "embedding", "accumulate")
WRONG = ("mul", "unbroadcast")  # each with its first planted mistake


def write_class(folder):
    """Write the class's files into `folder`; the names of the exercises written, in order."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for exercise in exercises.EXERCISES:
        source = exercise.file_source(solution=True)
        if exercise.name in HOSTILE:
            source += "\n\n" + textwrap.dedent(HOSTILE[exercise.name][0])
        elif exercise.name in WRONG:
            mistake = exercise.mistakes[0]
            name, module = mistake.name, mistake.backward.__module__
            if exercise.track == "backward":
                source += (f"\n\nfrom {module} import {name}\n\n"
                           f"{exercise.class_name}.backward = staticmethod({name})\n")
            else:
                source += f"\n\nfrom {module} import {name} as {exercise.class_name}\n"
        elif exercise.name not in CORRECT:
            continue
        (folder / exercise.file_name).write_text(source, encoding="utf-8")
        names.append(exercise.name)
    return names


def wrong_finding(name):
    """The finding a wrong answer must get: its planted mistake's."""
    return exercises.get(name).mistakes[0].finding


if __name__ == "__main__":
    print(" ".join(write_class(sys.argv[1])))
