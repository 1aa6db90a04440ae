"""`tinyattn exercises`: list the exercises, copy them to a folder, check a learner's folder, hint.

    tinyattn exercises list
    tinyattn exercises start DIR [--solutions]
    tinyattn exercises check DIR [NAME ...] [--examples N]
    tinyattn exercises hint NAME

`check` exits with 0 when every exercise checked passes, 1 otherwise; bad usage exits with 2.
"""

import pathlib
import sys
import textwrap

from ..console import EXIT_BAD_INPUT, EXIT_INTERRUPTED, ArgumentParser, error_text, plural, wrap
from . import checker, report


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


def build_parser():
    parser = ArgumentParser(
        prog="tinyattn exercises",
        description="Gradient-check exercises: write the backward of each op of attention, from x + y to "
                    "multi-head attention, and let the checker say what is wrong with it.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=ArgumentParser)
    actions.add_parser("list", help="the exercises, in order",
                       description="List the exercises, in the order they build on each other.")
    start = actions.add_parser("start", help="copy the exercise files into DIR",
                               description="Write one file per exercise into DIR (created if need be): the "
                                           "statement, the shapes and the Function with the forward given and "
                                           "the backward to write. A file that is already there is never "
                                           "overwritten.")
    start.add_argument("dir", metavar="DIR")
    start.add_argument("--solutions", action="store_true",
                       help="write the reference solutions instead of the skeletons (for teachers)")
    check = actions.add_parser("check", help="check the backward passes in DIR",
                               description="Check the exercises in DIR: a table of pass/fail, then for each "
                                           "failure what the mistake is, with the evidence.")
    check.add_argument("dir", metavar="DIR")
    check.add_argument("names", nargs="*", metavar="NAME", help="only these exercises (name or number)")
    check.add_argument("--examples", type=int, default=checker.EXAMPLES,
                       help=f"random cases Hypothesis tries per exercise (default {checker.EXAMPLES}, 0 = none)")
    hint = actions.add_parser("hint", help="a hint for one exercise",
                              description="Print the hint of one exercise.")
    hint.add_argument("name", metavar="NAME")
    return parser


def main(argv=None):
    """`tinyattn exercises ...`: list, start, check or hint; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.action is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        if args.action == "list":
            return list_exercises()
        if args.action == "start":
            return start(args.dir, args.solutions)
        if args.action == "check":
            return check(args.dir, args.names, args.examples)
        return hint(args.name)
    except UsageError as error:
        print(error_text(f"tinyattn exercises {args.action}", error), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:  # check has printed what it had checked
        print("tinyattn exercises: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _exercises():
    from . import EXERCISES

    return EXERCISES


def _get(name):
    from . import get

    try:
        return get(name)
    except KeyError as error:
        raise UsageError(error.args[0]) from None


def list_exercises():
    print(f"{'#':>2}  {'exercise':<20}  write the backward of")
    for exercise in _exercises():
        print(f"{exercise.number:>2}  {exercise.name:<20}  {exercise.title}")
    print("\nStart with: tinyattn exercises start DIR\nA hint:     tinyattn exercises hint NAME")
    return 0


def start(directory, solutions=False):
    path = pathlib.Path(directory)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{directory!r} is a file, not a folder: give a folder for the exercises")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create the folder {directory!r}: {error.strerror}") from None
    written, same, kept = [], [], []
    for exercise in _exercises():
        target = path / exercise.file_name
        text = exercise.file_source(solution=solutions)
        if target.exists():
            (same if target.read_text(encoding="utf-8") == text else kept).append(exercise.file_name)
            continue
        target.write_text(text, encoding="utf-8")
        written.append(exercise.file_name)
    what = "solutions" if solutions else "exercises"
    if written:
        _say(f"wrote {len(written)} {what} to {directory}: {_range(written)}")
    if same:
        print(f"{plural(len(same), 'file')} {'is' if len(same) == 1 else 'are'} there already, unchanged")
    if kept:
        _say(f"kept {plural(len(kept), 'file')} you changed (your work is never "
             f"overwritten; delete a file for a fresh copy): {', '.join(kept)}")
    if not solutions:
        first = written[0] if written else _exercises()[0].file_name
        _say(f"next: write the backward in {path / first}, then run")
        print(f"    tinyattn exercises check {directory}")
    return 0


def _say(text):
    print("\n".join(wrap(text, 78)))


def _range(names):
    return ", ".join(names) if len(names) <= 3 else f"{names[0]} ... {names[-1]}"


def check(directory, names=(), examples=checker.EXAMPLES):
    path = pathlib.Path(directory)
    if path.exists() and not path.is_dir():
        raise UsageError(_a_file_not_a_folder(path))
    if not path.is_dir():
        raise UsageError(f"there is no folder {directory!r}: `tinyattn exercises start {directory}` makes one")
    if examples < 0:
        raise UsageError(f"--examples must be 0 or more, got {examples}")
    selected = [_get(name) for name in names] if names else list(_exercises())
    # never claim random cases that do not run: without Hypothesis only the fixed cases are checked
    missing = bool(examples) and not checker.hypothesis_installed()
    if missing:
        random_cases = f"the fixed cases only: no random cases, {checker.HYPOTHESIS_MISSING}"
    else:
        random_cases = f"fixed cases and {plural(examples, 'random case')} each" if examples else "no random cases"
    _say(f"checking {directory}: {plural(len(selected), 'exercise')} (float64 finite differences, {random_cases})")
    for line in report.table_header():
        print(line)
    results = []
    try:
        for exercise in selected:
            loaded = checker.load(exercise, path / exercise.file_name)
            result = loaded if isinstance(loaded, checker.Result) else checker.check(exercise, loaded, examples)
            results.append(result)
            print(report.table_row(result), flush=True)
    except KeyboardInterrupt:  # Ctrl-C: the reports of the exercises checked so far, then stop
        _print_reports(results, missing)
        raise
    _print_reports(results, missing)
    return 0 if all(result.passed for result in results) else 1


def _a_file_not_a_folder(path):
    """What to say when `check` is given a file: the command that checks it, if it is an exercise's."""
    exercise = next((e for e in _exercises() if e.file_name == path.name), None)
    if exercise is not None:
        return (f"{str(path)!r} is a file: check takes the folder and the exercise's name: "
                f"`tinyattn exercises check {path.parent} {exercise.name}`")
    return (f"{str(path)!r} is a file, not a folder of exercises: `tinyattn exercises start DIR` writes them to "
            "a new folder DIR, then `tinyattn exercises check DIR` checks them")


def _print_reports(results, hypothesis_missing=False):
    for result in results:
        if result.passed or result.status == "not done yet":
            continue
        print()
        print("\n".join(report.block(result)))
    print()
    summary = report.summary(results)
    if hypothesis_missing:
        summary += f" (the fixed cases only, no random cases: {checker.HYPOTHESIS_MISSING})"
    _say(summary)


def hint(name):
    exercise = _get(name)
    print(f"Hint for {exercise.label} ({exercise.title}):")
    print("\n".join(textwrap.wrap(exercise.hint, 78, initial_indent="  ", subsequent_indent="  ")))
    return 0
