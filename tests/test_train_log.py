"""`tinyattn train --log csv|tensorboard`: the losses and learning rates of a run, as it prints them and
as its checkpoint keeps them."""

import csv
import importlib
import json
import sys

import pytest

from tinyattn.app import cli
from tinyattn.app.training import TrainConfig

TEXT = "When forty winters shall besiege thy brow,\nAnd dig deep trenches in thy beauty's field,\n" * 10
BIGRAM = ["--model", "bigram", "--eval-iters", "2", "--eval-interval", "5", "--sample-tokens", "0"]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "input.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def read_csv(path):
    """{name: {step: value}} of a log.csv, and its header."""
    with open(path, newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    logged = {}
    for step, name, value in rows[1:]:
        assert int(step) not in logged.setdefault(name, {}), f"{name} at step {step} twice"
        logged[name][int(step)] = float(value)
    return rows[0], logged


def test_csv_holds_what_the_run_printed_and_saved(capsys, tmp_path, corpus):
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, "train", "--data", corpus, "--steps", 12, "--out", out_dir, "--log", "csv", *BIGRAM)
    assert code == 0, err
    assert f"; log in {out_dir / 'log.csv'}" in out
    header, logged = read_csv(out_dir / "log.csv")
    meta = json.loads((out_dir / "ckpt" / "meta.json").read_text())
    assert header == ["step", "name", "value"]
    assert logged["loss/step"] == {step: loss for step, loss in enumerate(meta["losses"], 1)}  # exactly
    assert logged["loss/train"] == {h["step"]: h["train_loss"] for h in meta["history"]}
    assert logged["loss/val"] == {h["step"]: h["val_loss"] for h in meta["history"]}
    assert sorted(logged["loss/val"]) == [0, 5, 10, 12]
    for step in (5, 10, 12):  # what the run printed at each estimate
        assert f"step {step:>2}: train loss {logged['loss/train'][step]:.4f}, val loss {logged['loss/val'][step]:.4f}" in out
    config = TrainConfig(**meta["train"])
    assert logged["lr"] == {step: config.lr_at(step - 1) for step in range(1, 13)}


def test_a_resumed_run_appends_to_its_log(capsys, tmp_path, corpus):
    out_dir = tmp_path / "out"
    assert run(capsys, "train", "--data", corpus, "--steps", 5, "--out", out_dir, "--log", "csv", *BIGRAM)[0] == 0
    code, out, err = run(capsys, "train", "--resume", "--data", corpus, "--steps", 10, "--out", out_dir,
                         "--log", "csv")
    assert code == 0, err
    header, logged = read_csv(out_dir / "log.csv")  # one header; no step twice
    assert sorted(logged["loss/step"]) == list(range(1, 11)) and sorted(logged["loss/val"]) == [0, 5, 10]


def test_tensorboard_reads_the_same_scalars(capsys, tmp_path, corpus):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing import event_accumulator

    out_dir = tmp_path / "out"
    code, out, err = run(capsys, "train", "--data", corpus, "--steps", 7, "--out", out_dir,
                         "--log", "tensorboard", "--log", "csv", *BIGRAM)
    assert code == 0, err
    assert f"; log in {out_dir / 'tensorboard'} and {out_dir / 'log.csv'}" in out
    events = event_accumulator.EventAccumulator(str(out_dir / "tensorboard"))
    events.Reload()
    _, logged = read_csv(out_dir / "log.csv")
    assert set(events.Tags()["scalars"]) == {"loss/step", "lr", "loss/train", "loss/val"}
    for name, values in logged.items():
        read = {e.step: e.value for e in events.Scalars(name)}
        assert read == pytest.approx(values, rel=1e-6)  # TensorBoard keeps float32


def test_tensorboard_without_the_package_is_refused_before_training(capsys, tmp_path, corpus, monkeypatch):
    for name in [n for n in sys.modules if n == "tensorboard" or n.startswith("tensorboard.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, "tinyattn.utils.tensorboard", raising=False)
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # `import tensorboard` now fails
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, "train", "--data", corpus, "--steps", 5, "--out", out_dir,
                         "--log", "tensorboard", *BIGRAM)
    assert code == 2 and out == "" and "pip install tensorboard (TensorFlow is not needed; --log csv needs nothing)" in err
    assert len(err.strip().splitlines()) == 1 and not (out_dir / "ckpt").exists()
    importlib.invalidate_caches()


def test_an_unknown_log_kind_is_refused(capsys):
    with pytest.raises(SystemExit) as exit:
        cli.main(["train", "--log", "json"])
    err = capsys.readouterr().err
    assert exit.value.code == 2 and "argument --log: invalid choice: 'json'" in err
    assert len(err.strip().splitlines()) == 1
