"""`tinyattn.utils.tensorboard`: `SummaryWriter`, PyTorch's logger for TensorBoard, over the `tensorboard` package.

    from tinyattn.utils.tensorboard import SummaryWriter
    with SummaryWriter("runs/mlp") as writer:          # default: runs/<date>_<host><comment>, as PyTorch's
        writer.add_scalar("loss/train", loss.item(), step)
        writer.add_histogram("weights", model.fc.weight, step)
    # then: tensorboard --logdir runs

The event files are written by TensorBoard's own writer (`EventFileWriter`) from TensorBoard's own
protocol buffers (`tensorboard.compat.proto`), so TensorBoard reads them as it reads PyTorch's; this
module only turns the values into summaries. Tensors (and NumPy arrays) are read back to host NumPy
first. It needs the `tensorboard` package (`pip install tensorboard`, the `[tensorboard]` extra; TensorFlow
is not needed).

What is here: add_scalar, add_scalars, add_histogram, add_text, flush, close, get_logdir, and use as a
context manager. PyTorch's other add_* methods (images, graphs, embeddings, ...) are not.
"""

import datetime
import os
import socket
import time

import numpy as np

try:
    from tensorboard.compat.proto.event_pb2 import Event, SessionLog
    from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
except ImportError as error:
    raise ImportError(
        "tinyattn.utils.tensorboard writes through the `tensorboard` package, which is not installed: "
        "pip install tensorboard (TensorFlow is not needed)",
        name="tensorboard",
    ) from error


def _host_array(values):
    """A NumPy array of the values: a tinyattn (or any) tensor is brought to the host first."""
    if hasattr(values, "detach") and hasattr(values, "numpy"):
        values = values.detach().cpu().numpy()
    return np.asarray(values)


def _one_number(tag, value):
    array = _host_array(value).squeeze()
    if array.ndim != 0:
        raise ValueError(f"add_scalar({tag!r}, ...) takes one number, got an array of shape {array.shape}: "
                         "log its mean (x.mean().item()) or use add_histogram")
    return float(array)


def _tensorflow_bins():
    """TensorBoard's default bucket edges (bins='tensorflow'): +-1e-12 growing by 10% up to 1e20, and 0."""
    edges, v = [], 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0.0] + edges


def histogram_proto(tag, values, bins="tensorflow", max_bins=None):
    """The HistogramProto TensorBoard draws: counts per bucket, each bucket named by its right edge."""
    array = _host_array(values).astype(np.float64).reshape(-1)
    if array.size == 0:
        raise ValueError(f"add_histogram({tag!r}, ...) got no values")
    if not np.isfinite(array).all():
        raise ValueError(f"add_histogram({tag!r}, ...) got inf or nan values: a histogram needs finite numbers")
    counts, edges = np.histogram(array, bins=_tensorflow_bins() if bins == "tensorflow" else bins)
    if max_bins is not None and len(counts) > max_bins:  # merge neighbouring buckets, as PyTorch does
        group = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % group)).reshape(-1, group).sum(axis=1)
        edges = np.append(edges[:-1:group], edges[-1])
    # keep the buckets from the first to the last non-empty one, and the empty bucket left of them:
    # TensorBoard stores right edges only, so that empty bucket carries the leftmost edge
    nonzero = np.flatnonzero(counts)
    first, last = int(nonzero[0]), int(nonzero[-1])
    if first > 0:
        kept_counts, kept_edges = counts[first - 1:last + 1], edges[first:last + 2]
    else:
        kept_counts, kept_edges = np.concatenate([[0], counts[:last + 1]]), edges[:last + 2]
    return HistogramProto(min=float(array.min()), max=float(array.max()), num=int(array.size),
                          sum=float(array.sum()), sum_squares=float(array.dot(array)),
                          bucket_limit=kept_edges.tolist(), bucket=kept_counts.tolist())


class SummaryWriter:
    """Writes scalars, histograms and text to event files in log_dir for TensorBoard (PyTorch's API)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        if not log_dir:
            stamp = datetime.datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self._writers = {}  # one event file per folder: log_dir, and one per add_scalars series
        self._writer(self.log_dir)

    def _writer(self, folder):
        if folder not in self._writers:
            writer = EventFileWriter(folder, self.max_queue, self.flush_secs, self.filename_suffix)
            if self.purge_step is not None:  # TensorBoard drops what an earlier run logged from this step on
                writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                writer.add_event(Event(step=self.purge_step, session_log=SessionLog(status=SessionLog.START)))
            self._writers[folder] = writer
        return self._writers[folder]

    def _add_summary(self, summary, global_step, walltime, folder=None):
        event = Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(global_step)
        self._writer(folder or self.log_dir).add_event(event)

    def get_logdir(self):
        """The folder the event files are written to."""
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """One point of the curve `tag`: a Python number, or a one-element tensor or array."""
        value = _one_number(tag, scalar_value)
        if new_style:  # stored as a tensor, read through TensorBoard's scalars plugin
            proto = (TensorProto(double_val=[value], dtype="DT_DOUBLE") if double_precision
                     else TensorProto(float_val=[value], dtype="DT_FLOAT"))
            metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
            summary = Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=metadata)])
        else:
            summary = Summary(value=[Summary.Value(tag=tag, simple_value=value)])
        self._add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Several curves in one chart: each {name: value} goes to its own folder log_dir/<main_tag>_<name>."""
        walltime = time.time() if walltime is None else walltime
        for name, value in tag_scalar_dict.items():
            folder = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{name}")
            summary = Summary(value=[Summary.Value(tag=main_tag, simple_value=_one_number(main_tag, value))])
            self._add_summary(summary, global_step, walltime, folder)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """The distribution of values (any shape): bins='tensorflow' (TensorBoard's buckets), or np.histogram's."""
        summary = Summary(value=[Summary.Value(tag=tag, histo=histogram_proto(tag, values, bins, max_bins))])
        self._add_summary(summary, global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """A piece of text (Markdown), shown in TensorBoard's Text tab under `<tag>/text_summary`."""
        metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
            plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
        proto = TensorProto(dtype="DT_STRING", string_val=[str(text_string).encode("utf-8")],
                            tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
        summary = Summary(value=[Summary.Value(tag=f"{tag}/text_summary", metadata=metadata, tensor=proto)])
        self._add_summary(summary, global_step, walltime)

    def flush(self):
        """Write what is queued to disk now (it is written every flush_secs seconds anyway)."""
        for writer in self._writers.values():
            writer.flush()

    def close(self):
        """Writes what is pending and closes the event file."""
        for writer in self._writers.values():
            writer.flush()
            writer.close()
        self._writers = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


__all__ = ["SummaryWriter"]
