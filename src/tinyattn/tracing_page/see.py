"""`tinyattn see`: run a script under a trace that keeps its values, and write the page of what it ran.

    tinyattn see train_step.py --html step.html
    tinyattn see train_step.py --html step.html -- --steps 1     # the script's own arguments after --

The script runs as `python train_step.py` would run it (as __main__, its folder first on sys.path,
sys.argv = [the script, its arguments]) inside `tinyattn.trace(values=True)`, so every op it runs
is on the page with the line of the script that ran it. Trace one step, not a training run: a
page shows the first 4000 ops. The script names its token positions with
`tinyattn.tracing.label_tokens([...])`.

A script that fails still gives its page, of the ops that ran up to the failure, with the error at
the top; the command says where it failed in one line and exits with status 1. A script that runs
no tensor op gives no page (status 2).
"""

import builtins
import os
import sys
import time
import traceback
import types

import tinyattn

from .. import tracing
from ..console import EXIT_BAD_INPUT, EXIT_INTERRUPTED, ArgumentParser, error_text, plural
from . import MAX_OPS, TABLE_LIMIT, write_page

PROG = "tinyattn see"


def _megabytes(text):
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of MiB, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number of MiB >= 0, got {text}")
    return int(value * 2**20)


def build_parser():
    parser = ArgumentParser(
        prog=PROG,
        description="Run a Python script under tinyattn.trace(values=True) and write one HTML page of what it "
        "ran: the graph of its forward and backward pass, every op's values and gradients with the script's "
        "source lines, the attention heads. The page opens offline in any browser.",
        epilog="The script's own arguments go after --. A script that fails still gives the page of the ops "
        "that ran, with the error at the top (exit status 1).",
    )
    # both needed; checked after the options, so that a misspelt option is what the error names
    parser.add_argument("script", nargs="?", help="the Python script to run (one training step, say)")
    parser.add_argument("--html", metavar="PATH", help="the page to write (needed)")
    parser.add_argument("--name", help="the name of the first module the script calls (default: its class name)")
    parser.add_argument("--values-limit", metavar="MiB", type=_megabytes, default=tracing.VALUES_LIMIT,
                        help=f"copies of values the trace keeps at most, in MiB (default "
                        f"{tracing.VALUES_LIMIT // 2**20}); past it, statistics and a histogram of each tensor")
    parser.add_argument("--no-values", action="store_true", help="keep shapes only, no values")
    parser.add_argument("--tokens", metavar="TEXT", help="label the token positions of the attention heatmaps: "
                        "the words of TEXT split at spaces (a script can call tinyattn.tracing.label_tokens)")
    parser.add_argument("--max-ops", metavar="N", type=int, default=MAX_OPS,
                        help=f"ops on the page at most, the first ones (default {MAX_OPS})")
    parser.add_argument("--table-limit", metavar="N", type=int, default=TABLE_LIMIT,
                        help=f"a tensor of at most N numbers is shown as a table (default {TABLE_LIMIT}), "
                        "a larger one by statistics and a histogram")
    return parser


def _where_it_failed(error, script):
    """'line 12' for the innermost line of the script in the error's traceback ('' if none)."""
    script = os.path.abspath(script)
    found = ""
    if isinstance(error, SyntaxError) and error.filename and os.path.abspath(error.filename) == script:
        return f"line {error.lineno}"
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename) == script:
            found = f"line {frame.lineno}"
    return found


def run_script(script, script_args, trace):
    """Run `script` as __main__ with `script_args` inside `trace`: (its globals, the exception it
    ended with or None). The globals name the page's tensors, also after a failure."""
    saved_argv, saved_path, saved_main = sys.argv[:], sys.path[:], sys.modules["__main__"]
    sys.argv = [script, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    module = types.ModuleType("__main__")
    module.__file__ = os.path.abspath(script)
    module.__builtins__ = builtins
    sys.modules["__main__"] = module  # as `python script.py` runs it (pickle, dataclasses look here)
    try:
        with open(script, "rb") as f:
            code = compile(f.read(), module.__file__, "exec")
        with trace:
            exec(code, module.__dict__)
    except SystemExit as stop:
        if stop.code not in (None, 0):
            return module.__dict__, stop
    except (KeyboardInterrupt, BrokenPipeError):  # Ctrl-C, or the reader of the output gone: the command stops
        raise
    except Exception as error:  # the script's own failure (a SyntaxError too): reported, its page written
        return module.__dict__, error
    finally:
        sys.argv[:], sys.path[:] = saved_argv, saved_path
        sys.modules["__main__"] = saved_main
    return module.__dict__, None


def main(argv=None):
    """Run `tinyattn see`; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args = []
    if "--" in argv:
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1:]
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)} (the script's own arguments go after --)")
    if args.script is None or args.html is None:
        parser.error("give the script and the page to write: tinyattn see SCRIPT.py --html PAGE.html")
    if not os.path.isfile(args.script):
        print(error_text(PROG, f"no script {args.script!r} (give the path of a Python file)"), file=sys.stderr)
        return EXIT_BAD_INPUT
    folder = os.path.dirname(os.path.abspath(args.html))
    if not os.path.isdir(folder):
        print(error_text(PROG, f"cannot write {args.html!r}: the folder {folder!r} does not exist"), file=sys.stderr)
        return EXIT_BAD_INPUT
    for option, value in (("--max-ops", args.max_ops), ("--table-limit", args.table_limit)):
        if value < 1:
            print(error_text(PROG, f"{option} must be >= 1, got {value}"), file=sys.stderr)
            return EXIT_BAD_INPUT

    trace = tinyattn.trace(name=args.name, values=not args.no_values, values_limit=args.values_limit)
    if args.tokens is not None:
        trace.label_tokens(args.tokens.split())
    state = tinyattn.get_rng_state()
    try:
        names, failure = run_script(args.script, script_args, trace)
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted: no page written", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        tinyattn.set_rng_state(state)
    sys.stdout.flush()
    problem = None
    if failure is not None:
        where = _where_it_failed(failure, args.script)
        what = (f"exit status {failure.code}" if isinstance(failure, SystemExit)
                else f"{type(failure).__name__}: {failure}".split("\n")[0])
        problem = f"{args.script} failed{' at ' + where if where else ''}: {what}"
    if not len(trace):
        message = (problem + "; it ran no tensor op before, so there is no page") if problem else \
            f"{args.script} ran no tensor op: nothing to show (no page written)"
        print(error_text(PROG, message), file=sys.stderr)
        return 1 if problem else EXIT_BAD_INPUT
    started = time.perf_counter()
    try:
        write_page(trace, args.html, title=f"tinyattn see {os.path.basename(args.script)}", max_ops=args.max_ops,
                   table_limit=args.table_limit, names=names,
                   problem=problem and problem + " (the page shows the ops that ran before)")
    except OSError as error:
        print(error_text(PROG, f"cannot write {args.html!r}: {error.strerror or error}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    seconds = time.perf_counter() - started
    size = os.path.getsize(args.html)
    print(f"wrote {args.html} ({size / 1024:.0f} KiB in {seconds:.1f} s): {plural(len(trace.forward), 'forward op')}"
          f" and {plural(len(trace.backward), 'backward op')}; open it in a browser")
    if problem:
        print(error_text(PROG, problem), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
