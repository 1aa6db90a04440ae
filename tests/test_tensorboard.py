"""tinyattn.utils.tensorboard.SummaryWriter writes event files that TensorBoard's own reader reads."""

import importlib
import os
import socket
import sys

import numpy as np
import pytest

import tinyattn

pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from tinyattn.utils.tensorboard import SummaryWriter, histogram_proto  # noqa: E402


def read(folder):
    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0, "histograms": 0, "tensors": 0})
    accumulator.Reload()
    return accumulator


def test_scalars_read_back_with_their_steps(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(5):
            writer.add_scalar("loss/train", 1.0 / (step + 1), step)
        writer.add_scalar("lr", tinyattn.tensor(0.25), global_step=3)       # a 0-d tensor
        writer.add_scalar("acc", tinyattn.tensor([0.5]), 7, walltime=123.0)  # a one-element tensor
        writer.add_scalar("np", np.float32(2.5), 1)
    events = read(tmp_path)
    loss = events.Scalars("loss/train")
    assert [e.step for e in loss] == [0, 1, 2, 3, 4]
    assert [e.value for e in loss] == pytest.approx([1.0, 0.5, 1 / 3, 0.25, 0.2])
    assert [(e.step, e.value) for e in events.Scalars("lr")] == [(3, 0.25)]
    (acc,) = events.Scalars("acc")
    assert (acc.step, acc.value, acc.wall_time) == (7, 0.5, 123.0)
    assert events.Scalars("np")[0].value == 2.5


def test_new_style_scalars_are_tensors_of_the_scalars_plugin(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalar("x", 1.5, 2, new_style=True)
        writer.add_scalar("y", 0.1, 3, new_style=True, double_precision=True)
    events = read(tmp_path)
    (x,) = events.Tensors("x")
    assert x.step == 2 and x.tensor_proto.float_val == [1.5]
    assert events.Tensors("y")[0].tensor_proto.double_val == [0.1]
    assert events.PluginTagToContent("scalars").keys() == {"x", "y"}


def test_add_scalars_writes_one_folder_per_curve(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(3):
            writer.add_scalars("run/loss", {"train": 1.0 + step, "val": 2.0 + step}, step)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["run_loss_train", "run_loss_val"]
    train = read(tmp_path / "run_loss_train").Scalars("run/loss")
    val = read(tmp_path / "run_loss_val").Scalars("run/loss")
    assert [(e.step, e.value) for e in train] == [(0, 1.0), (1, 2.0), (2, 3.0)]
    assert [(e.step, e.value) for e in val] == [(0, 2.0), (1, 3.0), (2, 4.0)]


def test_histogram_counts_read_back(tmp_path):
    values = tinyattn.tensor([[0.5, 1.5, 1.5], [2.5, 2.5, 2.5]])
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("w", values, 4, bins=[0, 1, 2, 3])
        writer.add_histogram("default_bins", tinyattn.randn(1000), 5)
    events = read(tmp_path)
    (h,) = events.Histograms("w")
    assert h.step == 4
    assert h.histogram_value.bucket == [0.0, 1.0, 2.0, 3.0]   # an empty bucket first: it carries the left edge
    assert h.histogram_value.bucket_limit == [0.0, 1.0, 2.0, 3.0]
    assert (h.histogram_value.min, h.histogram_value.max, h.histogram_value.num) == (0.5, 2.5, 6)
    assert h.histogram_value.sum == pytest.approx(11.0)
    assert h.histogram_value.sum_squares == pytest.approx(0.25 + 2 * 2.25 + 3 * 6.25)
    (d,) = events.Histograms("default_bins")
    assert sum(d.histogram_value.bucket) == 1000 and d.histogram_value.num == 1000


def test_text_reads_back(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_text("sample", "To be, or not to be", 10)
        writer.add_text("sample", "ünïcode ✓", 11)
    events = read(tmp_path)
    texts = events.Tensors("sample/text_summary")
    assert [t.step for t in texts] == [10, 11]
    assert [t.tensor_proto.string_val[0].decode() for t in texts] == ["To be, or not to be", "ünïcode ✓"]
    assert "sample/text_summary" in events.PluginTagToContent("text")


@pytest.mark.parametrize("bins, max_bins", [("tensorflow", None), (10, None), ("auto", None), (30, 7), (12, 4)])
def test_histograms_equal_pytorchs(torch, tmp_path, bins, max_bins):
    pytest.importorskip("torch.utils.tensorboard")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    from torch.utils.tensorboard.summary import histogram as torch_histogram

    values = np.random.default_rng(0).normal(size=(40, 5)).astype(np.float32)
    ours = histogram_proto("h", tinyattn.tensor(values), bins, max_bins)
    with TorchWriter(tmp_path) as torch_writer:  # its add_histogram turns "tensorflow" into these buckets
        torch_bins = torch_writer.default_bins if bins == "tensorflow" else bins
    theirs = torch_histogram("h", torch.tensor(values), torch_bins, max_bins).value[0].histo
    assert list(ours.bucket) == list(theirs.bucket)
    assert list(ours.bucket_limit) == pytest.approx(list(theirs.bucket_limit))
    assert (ours.min, ours.max, ours.num) == (theirs.min, theirs.max, theirs.num)
    assert ours.sum == pytest.approx(theirs.sum) and ours.sum_squares == pytest.approx(theirs.sum_squares)


def test_the_default_log_dir_is_runs_date_host_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_lr0.1")
    writer.close()
    folder = writer.get_logdir()
    assert os.path.dirname(folder) == "runs"
    assert folder.endswith(f"_{socket.gethostname()}_lr0.1")
    assert os.listdir(folder)[0].startswith("events.out.tfevents.")


def test_flush_writes_before_close(tmp_path):
    writer = SummaryWriter(tmp_path, flush_secs=1000)
    writer.add_scalar("a", 1.0, 0)
    writer.flush()
    assert [e.value for e in read(tmp_path).Scalars("a")] == [1.0]
    writer.close()


def test_bad_values_say_what_is_wrong(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(ValueError, match=r"add_scalar\('loss', ...\) takes one number, got an array of shape \(3,\)"):
            writer.add_scalar("loss", tinyattn.ones(3), 0)
        with pytest.raises(ValueError, match="add_histogram\\('h', ...\\) got no values"):
            writer.add_histogram("h", tinyattn.ones(0), 0)
        with pytest.raises(ValueError, match="inf or nan"):
            writer.add_histogram("h", tinyattn.tensor([1.0, float("nan")]), 0)


def test_without_the_package_the_error_names_the_extra(monkeypatch):
    monkeypatch.delitem(sys.modules, "tinyattn.utils.tensorboard")
    for name in [n for n in sys.modules if n == "tensorboard" or n.startswith("tensorboard.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # `import tensorboard...` now fails
    with pytest.raises(ImportError, match=r"pip install tensorboard"):
        importlib.import_module("tinyattn.utils.tensorboard")
