"""A small progress bar for training loops (no dependency).

On a terminal it keeps one line up to date:

    step  420/2000 [#####...............]  loss 2.1432 | 31.5 steps/s | ETA 0:50

Elsewhere (a log file, CI, a notebook) redrawing would flood the output, so it draws nothing and
only the messages passed to `write` (the periodic loss estimates) are printed.
"""

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
        self.live = enabled and getattr(self.stream, "isatty", lambda: False)()
        self.width = width
        self.min_interval = min_interval
        self.started = time.perf_counter()
        self.last_draw = 0.0
        self.line = ""

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
        self._draw(text)

    def _draw(self, text):
        padding = max(0, len(self.line) - len(text))
        self.stream.write("\r" + text + " " * padding)
        self.stream.flush()
        self.line = text

    def write(self, text):
        """Print a line above the bar (the bar is redrawn at the next update)."""
        if not self.enabled:
            return
        if self.live and self.line:
            self.stream.write("\r" + " " * len(self.line) + "\r")
            self.line = ""
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self):
        if self.live and self.line:
            self.stream.write("\n")
            self.stream.flush()
            self.line = ""
