"""A small progress bar for training loops, and a status line for other long commands (no dependency).

On a terminal it keeps one line up to date:

    step  420/2000 [#####...............]  loss 2.1432 | 31.5 steps/s | ETA 0:50

Elsewhere (a log file, CI, a notebook) redrawing would flood the output, so it draws nothing and
only the messages passed to `write` (the periodic loss estimates) are printed.
"""

import shutil
import sys
import time


def format_duration(seconds):
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


class ProgressBar:
    """`update(step, loss)` after each step; `write(text)` for a line that stays; `close()` at the end."""

    def __init__(self, total, start=0, stream=None, enabled=True, width=20, min_interval=0.1):
        self.total = total
        self.start = start
        self.stream = sys.stdout if stream is None else stream
        self.enabled = enabled
        self.status = StatusLine(self.stream, min_interval=0.0)
        self.live = enabled and self.status.live
        self.width = width
        self.min_interval = min_interval
        self.started = time.perf_counter()
        self.last_draw = 0.0

    def update(self, step, loss=None):
        if not self.live:
            return
        now = time.perf_counter()
        if now - self.last_draw < self.min_interval and step < self.total:
            return
        self.last_draw = now
        done = step - self.start
        rate = done / (now - self.started) if now > self.started else 0.0
        eta = (self.total - step) / rate if rate > 0 else 0.0
        filled = int(self.width * step / max(self.total, 1))
        bar = "#" * filled + "." * (self.width - filled)
        digits = len(str(self.total))
        text = f"step {step:>{digits}}/{self.total} [{bar}]"
        if loss is not None:
            text += f"  loss {loss:.4f}"
        text += f" | {rate:.1f} steps/s | ETA {format_duration(eta)}"
        self.status.show(text)

    def write(self, text):
        """Print a line above the bar (the bar is redrawn at the next update)."""
        if not self.enabled:
            return
        self.status.clear()
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self):
        """Leave the bar's last state on the screen, and the cursor on the next line."""
        if self.live and self.status.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.status.shown = ""


class StatusLine:
    """`show(text)` keeps one line on a terminal up to date; `clear()` removes it. Elsewhere: nothing.

    For a command to say what it is doing while it works (`tinyattn bench` writes it to stderr, so
    that the results on stdout stay clean). Text wider than the terminal is cut, as a wrapped line
    could not be redrawn in place.
    """

    def __init__(self, stream=None, min_interval=0.1):
        self.stream = sys.stderr if stream is None else stream
        self.live = getattr(self.stream, "isatty", lambda: False)()
        self.min_interval = min_interval
        self.shown = ""
        self.last_draw = 0.0

    def show(self, text, force=False):
        """Draw `text` in place of the line shown (at most every min_interval seconds unless forced)."""
        if not self.live:
            return
        now = time.perf_counter()
        if not force and now - self.last_draw < self.min_interval:
            return
        self.last_draw = now
        width = shutil.get_terminal_size().columns - 1  # writing the last column wraps on some terminals
        if len(text) > width:
            text = text[:max(width - 3, 0)] + "..."
        self.stream.write("\r" + text + " " * max(0, len(self.shown) - len(text)))
        self.stream.flush()
        self.shown = text

    def clear(self):
        if self.live and self.shown:
            self.stream.write("\r" + " " * len(self.shown) + "\r")
            self.stream.flush()
            self.shown = ""
