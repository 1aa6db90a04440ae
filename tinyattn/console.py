"""What the `tinyattn` commands share on a terminal: one-line errors, plurals, the width, Ctrl-C.

- `ArgumentParser`: argparse's, except that a bad option is one line on stderr
  (`tinyattn bench: error: unrecognized arguments: --frob (see tinyattn bench --help)`), exit status 2.
- `plural(1, "step")` is "1 step", `plural(3, "step")` "3 steps".
- `terminal_width()`: the columns of the terminal stdout writes to, or None when it is not one.
- `EXIT_INTERRUPTED`: 130 (128 + SIGINT), the status a shell reports for a program stopped by Ctrl-C.

The progress bar and the status line that say what a command is doing are in `progress.py`.
"""

import argparse
import os
import shutil
import sys

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def plural(count, word, many=None):
    """ "1 step", "2 steps", "1,200 characters"; `many` for irregular plurals."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors: the message and where to find the usage, exit status 2."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def is_terminal(stream):
    return getattr(stream, "isatty", lambda: False)()


def terminal_width(stream=None):
    """The terminal's columns when `stream` (default stdout) is a terminal, else None.

    COLUMNS, when set, wins (as for shutil.get_terminal_size), so `COLUMNS=80 tinyattn demo | less`
    gets the narrow layout too.
    """
    stream = sys.stdout if stream is None else stream
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    if not is_terminal(stream):
        return None
    return shutil.get_terminal_size().columns
