"""What the `tinyattn` commands share on a terminal: one-line errors, plurals, the width, Ctrl-C.

- `ArgumentParser`: argparse's, except that a bad option is one line on stderr
  (`tinyattn bench: error: unrecognized arguments: --frob (see tinyattn bench --help)`), exit status 2;
  `error_text(prog, message)`: every command's error line, wrapped at words on a narrow terminal.
- `plural(1, "step")` is "1 step", `plural(3, "step")` "3 steps".
- `terminal_width()`: the columns of the terminal stdout writes to, or None when it is not one;
  `fill(pieces, width)`: wrap a table cell between its pieces; `wrap(text, width)`: wrap at spaces
  only (paths, option names, URLs and `commands` whole); `fit(text)`: a long message wrapped to the
  terminal.
- `EXIT_INTERRUPTED`: 130 (128 + SIGINT), the status a shell reports for a program stopped by Ctrl-C.
- `stdout_closed()`: what every command does when the reader of its output goes away
  (`tinyattn demo | head -5`): no traceback, stdout pointed at /dev/null, exit status 141.
- `add_threads_option(parser, help_text)`: the `--threads N` of the commands that compute.
- `short_path(path)`: a source file as a table shows it (`tinyattn/nn/attention.py`, `train.py`);
  `format_bytes(n)`: "512 B", "1.5 KiB", ... (what a trace's table and its page print).

It sits at the package root, below the library, because the library's own commands use it too
(`tinyattn exercises`, `gradcheck`, `see`, `coverage`), not only the app's (tinyattn.app). The progress bar
and the status line that say what a command is doing are the app's: `app/progress.py`.
"""

import argparse
import os
import re
import shutil
import sys
import textwrap

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for `yes | head -1`'s yes


def stdout_closed():
    """After a BrokenPipeError on stdout: the reader (`head`, `less` quit early) is gone, so stop quietly.

    Python ignores SIGPIPE and raises BrokenPipeError instead; its documentation ("Note on SIGPIPE",
    in the signal module) recommends pointing stdout at /dev/null, so that the flush at exit cannot
    fail a second time, and exiting. The status is the one a shell reports for a C tool that SIGPIPE
    stopped (141), so `set -o pipefail` scripts see the same as with `yes | head -1`.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):  # stdout is not a file (a test's capture): nothing to flush
        pass
    return EXIT_BROKEN_PIPE


def plural(count, word, many=None):
    """ "1 step", "2 steps", "1,200 characters"; `many` for irregular plurals."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, wrapped by `wrap`: an option name (--eval-interval), a URL or a `command` stays whole."""

    def _split_lines(self, text, width):
        return wrap(" ".join(text.split()), width)

    def _fill_text(self, text, width, indent):
        return "\n".join(wrap(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent))


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors: the message and where to find the usage, exit status 2; help
    wrapped by HelpFormatter."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs):
        # a positional that takes zero or more values is optional, but without a default argparse
        # names it among "the following arguments are required" when another one is missing
        if kwargs.get("nargs") == "*" and args and not args[0].startswith(tuple(self.prefix_chars)):
            kwargs.setdefault("default", [])
        return super().add_argument(*args, **kwargs)

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, error_text(self.prog, f"{message} (see {self.prog} --help)") + "\n")


def error_text(prog, message):
    """'tinyattn train: error: ...': one line into a file or a pipe, wrapped at words (option names and
    paths kept whole) to the width of the terminal that stderr writes to."""
    return fit(f"{prog}: error: {message}", sys.stderr)


def is_terminal(stream):
    return getattr(stream, "isatty", lambda: False)()


def terminal_width(stream=None):
    """The columns of the terminal `stream` (default stdout) writes to, or None when it is not one.

    Tables fit a terminal's width; written to a file, a pipe or a notebook they keep one line per row
    (nothing there wraps them, and a line per row is what grep and diff want). COLUMNS, when set,
    overrides the terminal's own width, as for shutil.get_terminal_size.
    """
    stream = sys.stdout if stream is None else stream
    if not is_terminal(stream):
        return None
    return shutil.get_terminal_size().columns


def fill(pieces, width):
    """Lines of at most `width` characters made of `pieces` joined by spaces, breaking only between
    pieces (so a shape such as "(1, 2, 3)" is never cut); a piece longer than `width` gets a line."""
    lines = [""]
    for piece in pieces:
        joined = f"{lines[-1]} {piece}" if lines[-1] else piece
        if len(joined) > width and lines[-1]:
            lines.append(piece)
        else:
            lines[-1] = joined
    return lines


_WHOLE = re.compile(r"`[^`]*`|\(see [^()]*\)")  # a command to type, "(see tinyattn train --help)"
_KEPT_SPACE = "\x00"


def wrap(text, width, **options):
    """textwrap.wrap breaking at spaces only: never inside a word, a path, an option name, a URL, a
    `command in backticks` or a "(see ... --help)" (a piece longer than `width` gets a line of its own)."""
    kept = _WHOLE.sub(lambda match: match.group().replace(" ", _KEPT_SPACE), text)
    lines = textwrap.wrap(kept, width, break_on_hyphens=False, break_long_words=False, **options)
    return [line.replace(_KEPT_SPACE, " ") for line in lines]


def fit(text, stream=None):
    """`text` wrapped (by `wrap`) to the terminal's width, later lines indented by two, when `stream`
    (default stdout) is a terminal too narrow for it; unchanged otherwise."""
    width = terminal_width(stream)
    if width is None or len(text) < width:
        return text
    return "\n".join(wrap(text, width - 1, subsequent_indent="  "))


def positive_int(text):
    """An argparse type: an int >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_threads_option(parser, help_text):
    """`--threads N`: how many threads compute (tinyattn.set_num_threads); `help_text` says the default."""
    parser.add_argument("--threads", type=positive_int, metavar="N", help=help_text)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))  # tinyattn/
_short_paths = {}


def short_path(path):
    """A path to show: relative to the package's parent, or to the working directory, or the name."""
    short = _short_paths.get(path)
    if short is None:
        if not path:
            short = "?"
        elif os.path.abspath(path).startswith(_PACKAGE_DIR + os.sep):
            short = os.path.relpath(path, os.path.dirname(_PACKAGE_DIR))
        else:
            try:
                short = os.path.relpath(path)
            except ValueError:  # another drive on Windows
                short = os.path.basename(path)
            if short.startswith(".."):
                short = os.path.basename(path)
        _short_paths[path] = short = short.replace(os.sep, "/")
    return short


def format_bytes(n):
    """A number of bytes as a table shows it: "512 B", "1.5 KiB", "3.0 MiB", "1.2 GiB"."""
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"
