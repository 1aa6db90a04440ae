"""`tinyattn.nn.utils.rnn`: batches of sequences of different lengths, as `torch.nn.utils.rnn` has them.

Two ways to batch sequences of different lengths for a recurrent layer:

- padded: one tensor of shape (T, B, *) (or (B, T, *) with batch_first), each sequence followed by
  padding up to the longest length T (`pad_sequence`);
- packed: a `PackedSequence` holding only the real steps, time step by time step: first the first
  step of every sequence, then the second step of every sequence that has one, ... Its `batch_sizes[t]`
  says how many sequences have a step t. The sequences are sorted longest first, so the ones still
  running at step t are always the first `batch_sizes[t]`. A recurrent layer given a packed batch
  never runs on padding, and its final hidden state is each sequence's state at its own last step.

Everything here is built from differentiable ops (slicing, cat, stack), so gradients flow back
through packing and unpacking to the padded input.
"""

from collections import namedtuple

from ... import dtypes, functions
from ...tensor import Tensor


def invert_permutation(permutation):
    """The permutation that undoes `permutation` (None stays None)."""
    if permutation is None:
        return None
    return permutation.argsort(stable=True)


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """The real steps of a batch of sequences, time step by time step (see the module's docstring).

    data: (sum of the lengths, *); batch_sizes: int64 on the CPU, how many sequences run at each step;
    sorted_indices: which original sequence each sorted position holds (None if the batch came sorted);
    unsorted_indices: its inverse, computed when not given. Made by `pack_padded_sequence` or
    `pack_sequence`, not by hand.
    """

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PyTorch also takes (data, batch_sizes) as one pair
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise TypeError("PackedSequence takes data and batch_sizes, or one pair (data, batch_sizes)")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """The same sequences with `data` moved or cast (batch_sizes stays on the CPU, as in PyTorch)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self):
        """The packed sequence with its data on the CPU."""
        return self.to("cpu")

    def cuda(self):
        """The packed sequence with its data on a CUDA device."""
        return self.to("cuda")

    def float(self):
        """The packed sequence with float32 data."""
        return self.to(dtypes.float32)

    def double(self):
        """The packed sequence with float64 data."""
        return self.to(dtypes.float64)

    @property
    def is_cuda(self):
        """Whether the data is on a CUDA device."""
        return self.data.is_cuda


def _lengths_list(lengths):
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise ValueError(f"lengths must be a 1-D tensor of sequence lengths, got shape {list(lengths.shape)}")
        return [int(n) for n in lengths.tolist()]
    return [int(n) for n in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (or (B, T, *) with batch_first) whose sequence b has lengths[b] real steps.

    With enforce_sorted=True the lengths must be in decreasing order; with False they are sorted here
    (longest first, ties in their order) and the packed sequence remembers how to undo it.
    """
    lengths = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if input.ndim < 2:
        raise ValueError(f"pack_padded_sequence: the input must have a time dim and a batch dim, got shape "
                         f"{list(input.shape)}")
    if len(lengths) != input.shape[batch_dim]:
        raise ValueError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                         f"(batch_size={input.shape[batch_dim]})")
    sorted_indices = None
    if not enforce_sorted:
        order = sorted(range(len(lengths)), key=lambda b: -lengths[b])  # a stable sort, longest first
        sorted_indices = functions.tensor(order, dtype=dtypes.int64, device=input.device)
        input = input.index_select(batch_dim, sorted_indices)
        lengths = [lengths[b] for b in order]
    elif any(a < b for a, b in zip(lengths, lengths[1:])):
        raise ValueError(f"`lengths` array must be sorted in decreasing order when `enforce_sorted` is True, "
                         f"got {lengths}: pass enforce_sorted=False to have them sorted here")
    if lengths and lengths[-1] <= 0:
        raise ValueError(f"Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                         f"is <= 0: {lengths}")
    steps = input.shape[1 if batch_first else 0]
    if lengths and lengths[0] > steps:
        raise ValueError(f"a sequence of length {lengths[0]} does not fit the input's {steps} time steps "
                         f"(input shape {list(input.shape)}, batch_first={batch_first})")
    if batch_first:
        input = input.transpose(0, 1)
    longest = lengths[0] if lengths else 0
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(longest)]
    data = functions.cat([input[t, :size] for t, size in enumerate(batch_sizes)], 0)
    return PackedSequence(data, functions.tensor(batch_sizes, dtype=dtypes.int64), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo `pack_padded_sequence`: (padded batch, lengths), in the original order of the sequences.

    The padded batch has shape (T, B, *) (or (B, T, *) with batch_first), T the longest length or
    `total_length`; lengths is an int64 tensor.
    """
    batch_sizes = [int(n) for n in sequence.batch_sizes.tolist()]
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    data = sequence.data
    batch = batch_sizes[0] if batch_sizes else 0
    feature_shape = tuple(data.shape[1:])

    def padding(rows):
        return functions.full((rows, *feature_shape), padding_value, dtype=data.dtype, device=data.device)

    rows, start = [], 0
    for t in range(steps):
        size = batch_sizes[t] if t < len(batch_sizes) else 0
        step = data[start:start + size]
        rows.append(step if size == batch else functions.cat([step, padding(batch - size)], 0))
        start += size
    padded = functions.stack(rows, 0)
    lengths = functions.tensor([sum(1 for size in batch_sizes if size > b) for b in range(batch)],
                               dtype=dtypes.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu()]
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shapes (L_i, *) into one (T, B, *) tensor ((B, T, *) with batch_first),
    T the longest L_i, filling the rest with `padding_value` on the right (or the left)."""
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    try:
        sequences = tuple(sequences)
    except TypeError:
        raise TypeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                        f"{type(sequences)}") from None
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side!r}")
    if not sequences:
        raise ValueError("pad_sequence: received an empty list of sequences: give at least one tensor")
    for i, seq in enumerate(sequences):
        if not isinstance(seq, Tensor):
            raise TypeError(f"pad_sequence: sequence {i} is a {type(seq).__name__}, not a tensor")
        if seq.ndim == 0:
            raise ValueError(f"pad_sequence: sequence {i} is a 0-d tensor: each sequence needs a time dim")
        if tuple(seq.shape[1:]) != tuple(sequences[0].shape[1:]):
            raise ValueError(f"pad_sequence: sequence {i} has shape {list(seq.shape)} but sequence 0 has "
                             f"{list(sequences[0].shape)}: all must agree after the first (time) dim")
    longest = max(seq.shape[0] for seq in sequences)
    padded = []
    for seq in sequences:
        missing = longest - seq.shape[0]
        if missing:
            fill = functions.full((missing, *seq.shape[1:]), padding_value, dtype=seq.dtype, device=seq.device)
            seq = functions.cat([seq, fill] if padding_side == "right" else [fill, seq], 0)
        padded.append(seq)
    return functions.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Undo `pad_sequence`: the list of sequences, sequence b cut to its first lengths[b] steps."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:length] for seq, length in zip(padded_sequences.unbind(0), _lengths_list(lengths), strict=True)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences of shapes (L_i, *) (longest first unless enforce_sorted=False)."""
    lengths = [seq.shape[0] for seq in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """Undo `pack_sequence`: the list of sequences in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


# a PyTorch name this module lacks says so (tinyattn/missing.py)
from ... import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)  # its public names only
