"""`tinyattn exercises`: list the exercises, copy them to a folder, check a learner's folder, hint,
and prove a teacher's exercises.

    tinyattn exercises list [--course COURSE]
    tinyattn exercises start DIR [--solutions] [--track TRACK] [--course COURSE]
    tinyattn exercises check DIR [NAME ...] [--track TRACK] [--course COURSE] [--examples N] [--seed S]
                             [--format text|json|gradescope] [--output FILE] [--timeout SECONDS]
    tinyattn exercises hint NAME [--course COURSE]
    tinyattn exercises autograder [NAME ...] [--course COURSE] [--track TRACK] [--output ZIP] [--timeout S]
                                  [--examples N] [--wheels DIR]
    tinyattn exercises verify [NAME ...] --course COURSE [--examples N] [--cases N] [--seed S]

`check` exits with 0 when every exercise checked passes, 1 otherwise; `verify` with 0 when every
exercise is proven; bad usage exits with 2.
"""

import json
import os
import pathlib
import sys
import textwrap
import time

from ..console import EXIT_BAD_INPUT, EXIT_INTERRUPTED, ArgumentParser, error_text, plural, stdout_closed, wrap
from . import checker, grades, report
from .exercise import TRACKS

FORMATS = ("text", "json", "gradescope")


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


def build_parser():
    parser = ArgumentParser(
        prog="tinyattn exercises",
        description="Exercises with a checker that says what the mistake is: the backward of each op of "
                    "attention, the parts of an autograd engine, a whole layer's backward by hand; or a "
                    "teacher's own (--course).")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=ArgumentParser)
    listing = actions.add_parser("list", help="the exercises, track by track",
                                 description="List the exercises, track by track, in the order they build on "
                                             "each other.")
    _course_option(listing)
    start = actions.add_parser("start", help="copy the exercise files into DIR",
                               description="Write one file per exercise into DIR (created if need be): the "
                                           "statement and the code to complete. A file that is already there "
                                           "is never overwritten.")
    start.add_argument("dir", metavar="DIR")
    start.add_argument("--solutions", action="store_true",
                       help="write the reference solutions instead of the skeletons (for teachers)")
    _track_option(start)
    _course_option(start)
    check = actions.add_parser("check", help="check the exercises in DIR",
                               description="Check the exercises in DIR: a table of pass/fail, then for each "
                                           "failure what the mistake is, with the evidence; or the grades as "
                                           "JSON (--format).")
    check.add_argument("dir", metavar="DIR")
    check.add_argument("names", nargs="*", metavar="NAME", help="only these exercises (name or number)")
    _track_option(check)
    _course_option(check)
    _random_options(check)
    check.add_argument("--format", choices=FORMATS, default="text",
                       help="text (default): the table and the reports; json: tinyattn's grades; gradescope: "
                            "Gradescope's results.json")
    check.add_argument("--output", metavar="FILE",
                       help="write the json or gradescope grades to FILE (the text report still goes to "
                            "the terminal); default: print them")
    check.add_argument("--timeout", type=float, default=_isolation().TIMEOUT, metavar="SECONDS",
                       help="seconds each exercise may take in its own process before it is stopped and "
                            f"gets 0 (default {_isolation().TIMEOUT:g})")
    autograder = actions.add_parser(
        "autograder", help="write a Gradescope autograder (a zip) that grades the exercises",
        description="Write a zip in Gradescope's autograder layout: setup.sh installs this tinyattn from a wheel "
                    "inside the zip (no index needed for it), run_autograder checks each submission with "
                    "`tinyattn exercises check`, each exercise in a process of its own, and writes "
                    "/autograder/results/results.json.")
    autograder.add_argument("names", nargs="*", metavar="NAME", help="only these exercises (name or number)")
    autograder.add_argument("--output", metavar="ZIP", default="autograder.zip",
                            help="the zip to write (default autograder.zip)")
    _track_option(autograder)
    _course_option(autograder)
    autograder.add_argument("--timeout", type=float, metavar="SECONDS",
                            help="seconds each exercise may take (default: check's)")
    autograder.add_argument("--examples", type=int, help="random cases per exercise (default: check's)")
    autograder.add_argument("--wheels", metavar="DIR",
                            help="a folder of wheels for the platform's Python (NumPy, array-api-compat, "
                                 "threadpoolctl, Hypothesis) put in the zip, so that setup.sh needs no network")
    hint = actions.add_parser("hint", help="a hint for one exercise",
                              description="Print the hint of one exercise.")
    hint.add_argument("name", metavar="NAME")
    _course_option(hint)
    verify = actions.add_parser("verify", help="prove a teacher's exercises in COURSE",
                                description="Prove each exercise in the folder COURSE: its skeleton is not "
                                            "done yet, its solution passes, every planted mistake gets the "
                                            "finding written for it, and the solution is never blamed on "
                                            "random cases.")
    verify.add_argument("names", nargs="*", metavar="NAME", help="only these exercises (name or number)")
    verify.add_argument("--course", metavar="COURSE", help="the teacher's folder of exercises to prove (required)")
    _random_options(verify)
    verify.add_argument("--cases", type=int, default=_course().CASES,
                        help=f"random cases on which the solution must never be blamed (default {_course().CASES})")
    return parser


def _action_parser(parser, action):
    """The parser of one action (`tinyattn exercises check`), for its errors."""
    for choice in parser._subparsers._group_actions:
        if action in getattr(choice, "choices", {}):
            return choice.choices[action]
    return parser


def _course_option(parser):
    parser.add_argument("--course", metavar="COURSE",
                        help="a teacher's folder of exercises to use instead of tinyattn's own")


def _track_option(parser):
    parser.add_argument("--track", metavar="TRACK",
                        help="only the exercises of this track: " + ", ".join(TRACKS))


def _random_options(parser):
    parser.add_argument("--examples", type=int, default=checker.EXAMPLES,
                        help=f"random cases Hypothesis tries per exercise (default {checker.EXAMPLES}, 0 = none)")
    parser.add_argument("--seed", type=int, default=checker.SEARCH_SEED,
                        help=f"the seed the random cases are drawn from (default {checker.SEARCH_SEED})")


def _course():
    from . import course

    return course


def _isolation():
    from . import isolation

    return isolation


def main(argv=None):
    """`tinyattn exercises ...`: list, start, check or hint; returns the exit status."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if unknown:  # said by the action's own parser, which points to its own --help
        own = parser if args.action is None else _action_parser(parser, args.action)
        own.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.action is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        if args.action == "verify":
            course, names = args.course, args.names
            if course is None and names and pathlib.Path(names[0]).is_dir():  # the older `verify COURSE [NAME ...]`
                course, names = names[0], names[1:]
            if course is None:
                _action_parser(parser, "verify").error("give the folder of exercises to prove: "
                                                       "tinyattn exercises verify --course COURSE")
            return verify(course, names, args.examples, args.cases, args.seed)
        course = _load_course(args.course)
        if args.action == "list":
            return list_exercises(course)
        if args.action == "start":
            return start(args.dir, args.solutions, course, args.track)
        if args.action == "autograder":
            return autograder(args.output, course, args.names, args.track, args.timeout, args.examples,
                              args.wheels)
        if args.action == "check":
            return check(args.dir, args.names, args.examples, course=course, track=args.track,
                         output_format=args.format, output=args.output, seed=args.seed, timeout=args.timeout)
        return hint(args.name, course)
    except UsageError as error:
        print(error_text(f"tinyattn exercises {args.action}", error), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:  # check has printed what it had checked
        print("tinyattn exercises: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _load_course(folder):
    """A teacher's Course (--course), or tinyattn's own."""
    course = _course()
    if folder is None:
        from .catalog import EXERCISES

        return course.Course(EXERCISES)
    try:
        return course.load(folder)
    except course.CourseError as error:
        raise UsageError(str(error)) from None


def _get(course, name):
    try:
        return course.get(name)
    except KeyError as error:
        raise UsageError(error.args[0]) from None


def _selected(course, names=(), track=None):
    """The exercises named, or those of a track, or all of them."""
    if track is not None:
        tracks = course.tracks()
        if track not in tracks:
            raise UsageError(f"no track {track!r}: the tracks are {', '.join(tracks)}")
        named = [_get(course, name) for name in names]
        outside = [e.name for e in named if e.track != track]
        if outside:  # never check fewer exercises than asked for
            raise UsageError(f"{', '.join(outside)} {'is' if len(outside) == 1 else 'are'} not in the {track} track: "
                             "give the names alone, or the track alone")
        return named or list(tracks[track])
    return [_get(course, name) for name in names] if names else list(course.exercises)


def list_exercises(course):
    for k, (track, exercises) in enumerate(course.tracks().items()):
        if k:
            print()
        print(f"{track}: {TRACKS[track]}" if course.folder is None and track in TRACKS else f"{track}:")
        print(f"{'#':>2}  {'exercise':<20}  what you write")
        for exercise in exercises:
            print(f"{exercise.number:>2}  {exercise.name:<20}  {exercise.title}")
    where = f" --course {course.folder}" if course.folder is not None else ""
    print(f"\nStart with: tinyattn exercises start DIR [--track TRACK]{where}\n"
          f"A hint:     tinyattn exercises hint NAME{where}")
    return 0


def start(directory, solutions=False, course=None, track=None):
    course = course or _load_course(None)
    chosen = _selected(course, track=track)
    path = pathlib.Path(directory)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{directory!r} is a file, not a folder: give a folder for the exercises")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create the folder {directory!r}: {error.strerror}") from None
    written, same, kept = [], [], []
    for exercise in chosen:
        target = path / exercise.file_name
        text = exercise.file_source(solution=solutions, course=course.folder)
        if target.exists():
            (same if target.read_text(encoding="utf-8") == text else kept).append(exercise.file_name)
            continue
        target.write_text(text, encoding="utf-8")
        written.append(exercise.file_name)
    what = "solution" if solutions else "exercise"
    if written:
        _say(f"wrote {plural(len(written), what)} to {directory}: {_range(written)}")
    if same:
        print(f"{plural(len(same), 'file')} {'is' if len(same) == 1 else 'are'} there already, unchanged")
    if kept:
        _say(f"kept {plural(len(kept), 'file')} you changed (your work is never "
             f"overwritten; delete a file for a fresh copy): {', '.join(kept)}")
    if not solutions:
        first = written[0] if written else chosen[0].file_name
        what = "the backward" if chosen[0].track == "backward" else "your code"
        _say(f"next: write {what} in {path / first}, then run")
        options = (f" --track {track}" if track else "") + (f" --course {course.folder}" if course.folder else "")
        print(f"    tinyattn exercises check {directory}{options}")
    return 0


def _say(text):
    _show("\n".join(wrap(text, 78)))


def _show(*args, flush=False):
    """print, except that while grades are being written to a file a reader of the terminal's text
    that goes away (`| head -1`) does not stop the grading: the text goes nowhere from then on."""
    try:
        print(*args, flush=flush)
    except BrokenPipeError:
        if not _show.keep_going:
            raise
        stdout_closed()


_show.keep_going = False


def _range(names):
    return ", ".join(names) if len(names) <= 3 else f"{names[0]} ... {names[-1]}"


def check(directory, names=(), examples=checker.EXAMPLES, course=None, track=None, output_format="text",
          output=None, seed=checker.SEARCH_SEED, timeout=None):
    """Check the learner's files in `directory`, each exercise in a process of its own (isolation.py)."""
    course = course or _load_course(None)
    timeout = _isolation().TIMEOUT if timeout is None else timeout
    path = pathlib.Path(directory)
    if path.exists() and not path.is_dir():
        raise UsageError(_a_file_not_a_folder(path, course))
    if not path.is_dir():
        raise UsageError(f"there is no folder {directory!r}: `tinyattn exercises start {directory}` makes one")
    if examples < 0:
        raise UsageError(f"--examples must be 0 or more, got {examples}")
    if not timeout > 0:
        raise UsageError(f"--timeout must be more than 0 seconds, got {timeout:g}")
    if output is not None and output_format == "text":
        raise UsageError("--output writes the grades: give --format json or --format gradescope with it")
    if output is not None and not pathlib.Path(output).resolve().parent.is_dir():
        raise UsageError(f"cannot write the grades to {output!r}: its folder does not exist")
    selected = _selected(course, names, track)
    text = output_format == "text" or output is not None  # the grades alone on stdout, for a program
    _show.keep_going = output is not None
    if output is not None:  # a file there from before (or written by a learner's code) never stands as the grades
        pathlib.Path(output).unlink(missing_ok=True)
    # never claim random cases that do not run: without Hypothesis only the fixed cases are checked
    missing = bool(examples) and not checker.hypothesis_installed()
    if missing:
        random_cases = f"the fixed cases only: no random cases, {checker.HYPOTHESIS_MISSING}"
    else:
        random_cases = f"fixed cases and {plural(examples, 'random case')} each" if examples else "no random cases"
    began = time.perf_counter()
    if text:
        _say(f"checking {directory}: {plural(len(selected), 'exercise')} (float64 finite differences, "
             f"{random_cases})" if all(e.track == "backward" for e in selected) else
             f"checking {directory}: {plural(len(selected), 'exercise')} ({random_cases})")
        for line in report.table_header():
            _show(line)
    results = []
    try:
        for result in _isolation().check_files([(e, path / e.file_name) for e in selected], course.folder,
                                                 examples, seed, timeout):
            results.append(result)
            if text:
                _show(report.table_row(result), flush=True)
    except KeyboardInterrupt:  # Ctrl-C: the reports of the exercises checked so far, then stop
        if text:
            _print_reports(results, missing, interrupted=len(selected), grades=output_format != "text")
        else:
            print(f"interrupted after {len(results)} of {plural(len(selected), 'exercise')}: no grades written",
                  file=sys.stderr)
        raise
    if text:
        _print_reports(results, missing)
        if not names and track is None:
            _say_which_track(results, directory)
    if output_format != "text":
        if output_format == "json":
            graded = grades.to_json(results, directory, course.folder, examples, seed)
        else:
            graded = grades.to_gradescope(results, time.perf_counter() - began)
        _write_grades(graded, output)
    return 0 if all(result.passed for result in results) else 1


def _say_which_track(results, directory):
    """When the folder holds the files of one track only (it was started with --track), say so."""
    present = {r.exercise.track for r in results if r.status != "missing"}
    absent = {r.exercise.track for r in results if r.status == "missing"} - present
    if len(present) == 1 and absent:
        (track,) = present
        _say(f"({directory} holds the files of the {track} track only: `tinyattn exercises check {directory} "
             f"--track {track}` checks that track alone)")


def _write_grades(graded, output):
    text = json.dumps(graded, indent=2) + "\n"
    if output is None:
        sys.stdout.write(text)
        return
    target = pathlib.Path(output)
    partial = target.with_name(target.name + ".partial")
    try:  # all or nothing: a reader never sees half a file
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)
    except OSError as error:
        raise UsageError(f"cannot write the grades to {output!r}: {error.strerror}") from None
    _show(f"grades written to {output}")


def _a_file_not_a_folder(path, course):
    """What to say when `check` is given a file: the command that checks it, if it is an exercise's."""
    exercise = next((e for e in course.exercises if e.file_name == path.name), None)
    if exercise is not None:
        return (f"{str(path)!r} is a file: check takes the folder and the exercise's name: "
                f"`tinyattn exercises check {path.parent} {exercise.name}`")
    return (f"{str(path)!r} is a file, not a folder of exercises: `tinyattn exercises start DIR` writes them to "
            "a new folder DIR, then `tinyattn exercises check DIR` checks them")


def _print_reports(results, hypothesis_missing=False, interrupted=None, grades=False):
    """The report of each failure, then the summary; interrupted: how many exercises were to be
    checked, when Ctrl-C stopped the check."""
    for result in results:
        if result.passed or result.status == "not done yet":
            continue
        _show()
        _show("\n".join(report.block(result)))
    _show()
    summary = report.summary(results)
    if interrupted is not None:
        unwritten = " (no grades written)" if grades else ""
        summary = (f"interrupted after {len(results)} of {plural(interrupted, 'exercise')}{unwritten}: "
                   f"of those checked, {summary}")
    if hypothesis_missing:
        summary += f" (the fixed cases only, no random cases: {checker.HYPOTHESIS_MISSING})"
    _say(summary)


def autograder(output, course=None, names=(), track=None, timeout=None, examples=None, wheels=None):
    """Write the Gradescope autograder zip (see bundle.py)."""
    from . import bundle

    course = course or _load_course(None)
    _selected(course, names, track)  # the names and the track are known
    if timeout is not None and not timeout > 0:
        raise UsageError(f"--timeout must be more than 0 seconds, got {timeout:g}")
    if examples is not None and examples < 0:
        raise UsageError(f"--examples must be 0 or more, got {examples}")
    if wheels is not None and not pathlib.Path(wheels).is_dir():
        raise UsageError(f"there is no folder {wheels!r} of wheels")
    target = pathlib.Path(output)
    if not target.resolve().parent.is_dir():
        raise UsageError(f"cannot write {output!r}: its folder does not exist")
    written = bundle.write(target, course.folder, names, track, timeout, examples, wheels)
    wheel = next(name for name in written if name.endswith(".whl") and "/" not in name)
    exercises = len(_selected(course, names, track))
    _say(f"wrote {output}: setup.sh, run_autograder, {wheel}"
         + (f", the course's {plural(sum(n.startswith('course/') for n in written), 'file')}" if course.folder else "")
         + (f", {plural(sum(n.startswith('wheels/') for n in written), 'wheel')} of dependencies" if wheels else "")
         + f". It grades {plural(exercises, 'exercise')}: upload it as the autograder of a Gradescope "
           "assignment (a base image with Python 3.11 or later, such as Ubuntu 24.04); learners upload their "
           "exercise files.")
    return 0


def hint(name, course=None):
    exercise = _get(course or _load_course(None), name)
    print(f"Hint for {exercise.label} ({exercise.title}):")
    print("\n".join(textwrap.wrap(exercise.hint, 78, initial_indent="  ", subsequent_indent="  ")))
    return 0


def verify(folder, names=(), examples=checker.EXAMPLES, cases=None, seed=checker.SEARCH_SEED):
    """Prove the exercises of a teacher's folder; 0 when every one is proven."""
    course_module = _course()
    cases = course_module.CASES if cases is None else cases
    if examples < 1 or cases < 1:
        raise UsageError("verify needs random cases: --examples and --cases must be 1 or more (a proof "
                         "without them proves less than it says)")
    course = _load_course(folder)
    selected = _selected(course, names)
    _say(f"verifying {folder}: {plural(len(selected), 'exercise')} (each: the skeleton, the solution with "
         f"{plural(examples, 'random case')}, every planted mistake with and without them, the solution on "
         f"{plural(cases, 'more random case')})")
    proven = 0
    for exercise in selected:
        proof = course_module.verify(exercise, examples, cases, seed, course=folder)
        proven += proof.proven
        print(f"\n{exercise.number:02d} {exercise.name}: {'proven' if proof.proven else 'NOT PROVEN'}")
        for what, text, ok in proof.lines:
            mark = "  " if ok else "! "
            lines = wrap(f"{what}: {text}", 76)
            print("\n".join([mark + lines[0]] + ["    " + line for line in lines[1:]]))
    print()
    _say(f"{proven} of {plural(len(selected), 'exercise')} proven")
    return 0 if proven == len(selected) else 1
