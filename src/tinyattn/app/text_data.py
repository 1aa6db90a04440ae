"""Text data for character-level language models: read a text file, map characters to ids, cut batches.

    text = load_text("input.txt")              # clear errors for missing, empty or non-UTF-8 files
    tokenizer = CharTokenizer.from_text(text)  # the vocabulary: every character that occurs, sorted
    data = tokenizer.encode_array(text)        # int64 NumPy array of ids
    train, val = train_val_split(data)         # first 90% to train on, the rest to validate
    xb, yb = get_batch(train, batch_size=4, block_size=8, generator=g)   # (4, 8) inputs and targets

`yb[b, t]` is the character that follows `xb[b, :t + 1]`: one block holds block_size examples.
`default_corpus()` is a small public-domain text shipped with the package (Shakespeare's first sixty
sonnets), so that `tinyattn train` works without any download.
"""

import numbers
import pathlib

import numpy as np

from .. import backend, dtypes
from ..functions import generator_or_default
from ..tensor import Tensor

DEFAULT_CORPUS = pathlib.Path(__file__).parent.parent / "data" / "sonnets.txt"  # the package data folder, src/tinyattn/data/


class DataError(ValueError):
    """A data file or a piece of text that cannot be used (the message says why and what to do)."""


def default_corpus():
    """The text shipped with the package (Shakespeare's Sonnets I-LX, public domain)."""
    return DEFAULT_CORPUS.read_text(encoding="utf-8")


def load_text(path):
    """The contents of a UTF-8 text file, or a DataError that names the file and the problem."""
    path = pathlib.Path(path)
    if not path.exists():
        raise DataError(f"data file {str(path)!r} does not exist: check the path (--data FILE)")
    if path.is_dir():
        raise DataError(f"data path {str(path)!r} is a directory: pass a text file (--data FILE)")
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise DataError(f"cannot read data file {str(path)!r}: {error.strerror}") from None
    if not raw.strip():
        raise DataError(f"data file {str(path)!r} is empty: a language model needs some text to learn from")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise DataError(
            f"data file {str(path)!r} is not UTF-8 text (byte {error.start}, line {line}: "
            f"{raw[error.start:error.start + 1]!r}): convert it to UTF-8, e.g. "
            f"iconv -f latin1 -t utf-8 FILE > FILE.utf8"
        ) from None


class CharTokenizer:
    """Characters <-> integer ids. The vocabulary is a list of distinct characters; id i is chars[i]."""

    def __init__(self, chars):
        chars = list(chars)
        if not chars:
            raise DataError("a tokenizer needs at least one character")
        if any(not isinstance(c, str) or len(c) != 1 for c in chars):
            raise DataError("a character tokenizer's vocabulary must be single characters")
        if len(set(chars)) != len(chars):
            raise DataError("the vocabulary lists a character twice")
        self.chars = chars
        self.stoi = {ch: i for i, ch in enumerate(chars)}  # string to id
        self.itos = dict(enumerate(chars))  # id to string
        # for encode_array: code points sorted, with the id of each
        codes = np.array([ord(c) for c in chars], dtype=np.uint32)
        self._order = np.argsort(codes)
        self._sorted_codes = codes[self._order]

    @classmethod
    def from_text(cls, text):
        """The vocabulary of `text`: every character that occurs in it, in sorted order (as in seed 002)."""
        if not text:
            raise DataError("cannot build a vocabulary from empty text")
        return cls(sorted(set(text)))

    @property
    def vocab_size(self):
        """How many distinct characters the tokenizer knows."""
        return len(self.chars)

    def __len__(self):
        return len(self.chars)

    def __repr__(self):
        return f"CharTokenizer(vocab_size={self.vocab_size})"

    def unknown(self, text):
        """The characters of `text` that are not in the vocabulary (sorted, each once)."""
        return sorted(set(text) - self.stoi.keys())

    def _check(self, text):
        missing = self.unknown(text)
        if missing:
            shown = " ".join(repr(c) for c in missing[:10]) + (" ..." if len(missing) > 10 else "")
            raise DataError(
                f"{len(missing)} character(s) are not in the vocabulary of {self.vocab_size} characters: "
                f"{shown}. Use only characters that occur in the training text"
            )

    def encode(self, text):
        """A list of ids, one per character."""
        self._check(text)
        return [self.stoi[c] for c in text]

    def decode(self, ids):
        """The text of a list (or 1-D tensor or array) of ids."""
        if isinstance(ids, Tensor):
            ids = ids.tolist()
        elif isinstance(ids, np.ndarray):
            ids = ids.tolist()
        ids = list(ids)
        for i in ids:  # int(1.7) would quietly decode id 1
            if not isinstance(i, numbers.Integral) or isinstance(i, bool):
                raise TypeError(f"decode expects integer ids, got {i!r} ({type(i).__name__}): pass integer "
                                "ids (a list of ints, or an int64 tensor or array)")
        try:
            return "".join(self.itos[int(i)] for i in ids)
        except KeyError as error:
            raise DataError(f"id {error.args[0]} is not in the vocabulary (ids are 0 to {self.vocab_size - 1})") from None

    def encode_array(self, text):
        """`encode` for long texts: an int64 NumPy array, computed without a Python loop."""
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        slots = np.clip(np.searchsorted(self._sorted_codes, codes), 0, len(self.chars) - 1)
        if not np.array_equal(self._sorted_codes[slots], codes):
            self._check(text)  # raises with the list of unknown characters
        return self._order[slots].astype(np.int64)

    def to_dict(self):
        """A JSON-able description (what a checkpoint stores)."""
        return {"type": "char", "chars": "".join(self.chars)}

    @classmethod
    def from_dict(cls, d):
        """The tokenizer a `to_dict()` description gives back (as stored in a checkpoint)."""
        if not isinstance(d, dict) or d.get("type") != "char" or not isinstance(d.get("chars"), str):
            raise DataError("not a character tokenizer description: expected {'type': 'char', 'chars': '...'}")
        return cls(list(d["chars"]))


def train_val_split(data, train_fraction=0.9):
    """The first `train_fraction` of the ids to train on and the rest to validate on (views, no copy)."""
    if not 0.0 < train_fraction <= 1.0:
        raise ValueError(f"train_fraction must be in (0, 1], got {train_fraction}")
    n = int(train_fraction * len(data))
    return data[:n], data[n:]


def check_length(data, block_size, what="the text"):
    """A DataError unless `data` holds at least one block plus its next character."""
    if len(data) <= block_size:
        raise DataError(
            f"{what} has {len(data)} characters but each training example needs block_size + 1 = "
            f"{block_size + 1}: use a longer text or a smaller --block-size"
        )


def get_batch(data, batch_size, block_size, generator=None, device=None):
    """`batch_size` random blocks of `data` and the same blocks shifted by one character.

    `data` is a NumPy array of ids (or a CPU tensor); the batch is cut on the host and copied to
    `device`. Returns int64 tensors x, y of shape (batch_size, block_size). The start offsets come from
    `randint(len(data) - block_size, (batch_size,))` on `generator` (the default one if None): the
    same draws as seed 002's get_batch, so the same seed gives the same batches.
    """
    host = backend.to_host(data.array) if isinstance(data, Tensor) else np.asarray(data)
    if host.dtype.kind not in "iu":  # float ids would be truncated to int64 without a word
        raise TypeError(f"get_batch expects integer token ids, got an array of {host.dtype}: pass integer ids "
                        "(tokenizer.encode_array(text) gives int64)")
    check_length(host, block_size)
    starts = generator_or_default(generator).randint(0, len(host) - block_size, (batch_size,))
    rows = starts[:, None] + np.arange(block_size)  # (batch_size, block_size) positions
    x = backend.from_host(host[rows], backend.device(device), dtypes.int64)
    y = backend.from_host(host[rows + 1], backend.device(device), dtypes.int64)
    return Tensor._wrap(x), Tensor._wrap(y)
