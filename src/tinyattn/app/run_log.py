"""The logs of a training run that `tinyattn train --log csv|tensorboard` writes beside its checkpoint.

Both hold the same scalars, by step: `loss/step` (the loss of each training step), `lr` (the learning
rate of each step), and at each evaluation `loss/train` and `loss/val` (the estimates that `train`
prints). `csv` writes OUT/log.csv, rows of `step,name,value`, with nothing to install;
`tensorboard` writes TensorBoard event files into OUT/tensorboard through
`tinyattn.utils.tensorboard.SummaryWriter` (the `tensorboard` extra): `tensorboard --logdir OUT`.
A resumed run appends to them.
"""

import csv
import pathlib

KINDS = ("csv", "tensorboard")


class CSVLog:
    """Scalars as rows of `step,name,value` in a CSV file (the header written once, rows appended)."""

    def __init__(self, path):
        path = pathlib.Path(path)
        new = not path.exists() or path.stat().st_size == 0
        self.path = path
        self._file = open(path, "a", newline="", encoding="utf-8")
        self._rows = csv.writer(self._file)
        if new:
            self._rows.writerow(["step", "name", "value"])

    def scalar(self, name, value, step):
        """One row: the value at the step, written exactly (repr of the float)."""
        self._rows.writerow([step, name, repr(float(value))])

    def flush(self):
        """Writes the rows so far to the file."""
        self._file.flush()

    def close(self):
        """Writes the rows so far and closes the file."""
        self._file.close()


class TensorBoardLog:
    """Scalars as TensorBoard event files in a folder, through tinyattn's SummaryWriter."""

    def __init__(self, folder):
        from ..utils.tensorboard import SummaryWriter  # an ImportError that names the extra without it

        self.path = pathlib.Path(folder)
        self._writer = SummaryWriter(str(folder))

    def scalar(self, name, value, step):
        """One scalar at the step (add_scalar)."""
        self._writer.add_scalar(name, float(value), step)

    def flush(self):
        """Writes the events so far to disk."""
        self._writer.flush()

    def close(self):
        """Writes the events so far and closes the event file."""
        self._writer.close()


class RunLog:
    """The logs a run asked for, fed by `train`'s callbacks: `step` after every step, `evaluation`
    after every loss estimate."""

    def __init__(self, kinds, out, lr_at):
        """`kinds`: some of "csv" and "tensorboard"; `out`: the run's folder; `lr_at(step)`: the
        learning rate of a step (TrainConfig.lr_at)."""
        out = pathlib.Path(out)
        self._lr_at = lr_at
        self.logs = []
        try:
            for kind in dict.fromkeys(kinds):  # each once, in the order given
                self.logs.append(CSVLog(out / "log.csv") if kind == "csv" else TensorBoardLog(out / "tensorboard"))
        except BaseException:
            self.close()
            raise

    def step(self, step, loss):
        """The loss of training step `step` (counted from 1) and its learning rate."""
        for log in self.logs:
            log.scalar("loss/step", loss, step)
            log.scalar("lr", self._lr_at(step - 1), step)

    def evaluation(self, entry):
        """A loss estimate: one entry of the run's history."""
        for log in self.logs:
            log.scalar("loss/train", entry["train_loss"], entry["step"])
            log.scalar("loss/val", entry["val_loss"], entry["step"])
            log.flush()

    def close(self):
        """Writes and closes every log."""
        for log in self.logs:
            log.close()

    def where(self):
        """'out/log.csv and out/tensorboard': where the logs are, for the last line of the run."""
        return " and ".join(str(log.path) for log in self.logs)
