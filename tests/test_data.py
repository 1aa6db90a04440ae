"""Character tokenizer, text loading with clear errors, train/val split and random batches."""

import pathlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tinyattn
from tinyattn.app.text_data import (CharTokenizer, DataError, check_length, default_corpus, get_batch, load_text,
                           train_val_split)

TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\n"


def test_vocabulary_is_the_sorted_characters_and_round_trips():
    tokenizer = CharTokenizer.from_text(TEXT)
    assert tokenizer.chars == sorted(set(TEXT))
    assert tokenizer.vocab_size == len(set(TEXT)) == len(tokenizer)
    ids = tokenizer.encode("hear me")
    assert ids == [tokenizer.stoi[c] for c in "hear me"]
    assert tokenizer.decode(ids) == "hear me"
    assert tokenizer.decode(tinyattn.tensor(ids)) == "hear me"
    assert tokenizer.decode(np.array(ids)) == "hear me"


def test_seed_002_encoding():
    """Seed 002's vocabulary of Tiny Shakespeare maps 'Hi there!' to these ids."""
    chars = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    tokenizer = CharTokenizer(chars)
    assert tokenizer.encode("Hi there!") == [20, 47, 1, 58, 46, 43, 56, 43, 2]


@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), min_size=1, max_size=200))
def test_encode_array_equals_encode(text):
    tokenizer = CharTokenizer.from_text(text)
    ids = tokenizer.encode_array(text)
    assert ids.dtype == np.int64
    assert ids.tolist() == tokenizer.encode(text)
    assert tokenizer.decode(ids) == text


def test_unknown_characters_are_named():
    tokenizer = CharTokenizer.from_text("abc")
    for encode in (tokenizer.encode, tokenizer.encode_array):
        with pytest.raises(DataError, match=r"2 character\(s\) are not in the vocabulary.*'x' 'é'"):
            encode("abxé")
    assert tokenizer.unknown("abxxé") == ["x", "é"]
    with pytest.raises(DataError, match="not in the vocabulary"):
        tokenizer.decode([0, 7])


def test_tokenizer_description_round_trips():
    tokenizer = CharTokenizer.from_text(TEXT)
    again = CharTokenizer.from_dict(tokenizer.to_dict())
    assert again.chars == tokenizer.chars
    for bad in ({"type": "bpe"}, {"type": "char", "chars": 5}, "abc", {"type": "char", "chars": "aa"}):
        with pytest.raises(DataError):
            CharTokenizer.from_dict(bad)
    with pytest.raises(DataError):
        CharTokenizer.from_text("")


def test_load_text_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        load_text(tmp_path / "missing.txt")
    with pytest.raises(DataError, match="is a directory"):
        load_text(tmp_path)
    (tmp_path / "empty.txt").write_text("  \n")
    with pytest.raises(DataError, match="is empty"):
        load_text(tmp_path / "empty.txt")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\nna\xefve".encode("latin-1"))
    with pytest.raises(DataError, match=r"not UTF-8 text \(byte 3, line 1"):
        load_text(tmp_path / "latin1.txt")
    (tmp_path / "ok.txt").write_text("héllo\n", encoding="utf-8")
    assert load_text(tmp_path / "ok.txt") == "héllo\n"


def test_train_val_split_is_seed_002s():
    data = np.arange(1000)
    train, val = train_val_split(data)
    assert len(train) == 900 and train[-1] == 899 and val[0] == 900
    with pytest.raises(ValueError):
        train_val_split(data, 0.0)


def test_get_batch_targets_are_the_next_characters():
    data = np.arange(100, dtype=np.int64)
    g = tinyattn.Generator().manual_seed(0)
    x, y = get_batch(data, 4, 8, generator=g)
    assert x.shape == (4, 8) and y.shape == (4, 8) and x.dtype == tinyattn.int64
    assert (y.numpy() == x.numpy() + 1).all()
    assert ((x.numpy()[:, 1:] - x.numpy()[:, :-1]) == 1).all()  # contiguous blocks
    assert x.numpy().max() <= 98 and y.numpy().max() <= 99


def test_get_batch_is_seed_002s_get_batch():
    """With the default generator, the same batches as the seed's torch.randint + stack code."""
    data = tinyattn.tensor(np.random.default_rng(0).integers(0, 65, 500))
    tinyattn.manual_seed(1337)
    ix = tinyattn.randint(len(data) - 8, (4,))
    expected_x = tinyattn.stack([data[i:i + 8] for i in ix])
    expected_y = tinyattn.stack([data[i + 1:i + 9] for i in ix])
    tinyattn.manual_seed(1337)
    x, y = get_batch(data, 4, 8)
    assert x.equal(expected_x) and y.equal(expected_y)


def test_get_batch_matches_torch_randint(torch):
    data = np.random.default_rng(1).integers(0, 65, 1000)
    torch.manual_seed(42)
    ix = torch.randint(len(data) - 16, (12,))
    g = tinyattn.Generator().manual_seed(42)
    x, _ = get_batch(data, 12, 16, generator=g)
    assert x.numpy()[:, 0].tolist() == data[ix.numpy()].tolist()


def test_get_batch_is_deterministic_for_a_seed():
    data = np.arange(1000)
    a = get_batch(data, 3, 5, generator=tinyattn.Generator().manual_seed(7))
    b = get_batch(data, 3, 5, generator=tinyattn.Generator().manual_seed(7))
    c = get_batch(data, 3, 5, generator=tinyattn.Generator().manual_seed(8))
    assert a[0].equal(b[0]) and not a[0].equal(c[0])


def test_text_shorter_than_a_block_gets_a_clear_message():
    with pytest.raises(DataError, match=r"has 8 characters but each training example needs block_size \+ 1 = 9"):
        get_batch(np.arange(8), 2, 8)
    check_length(np.arange(9), 8)


def test_float_ids_are_refused_not_truncated():
    tokenizer = CharTokenizer("abc")
    for ids in ([1.7], [0, 2.0], np.array([1.0, 2.0]), tinyattn.tensor([1.0])):
        with pytest.raises(TypeError, match="decode expects integer ids, got .* pass integer ids"):
            tokenizer.decode(ids)
    assert tokenizer.decode([np.int64(2), 0]) == "ca"
    for data in (np.arange(20.0), tinyattn.tensor(np.arange(20, dtype=np.float32))):
        with pytest.raises(TypeError, match="get_batch expects integer token ids, got an array of float"):
            get_batch(data, 2, 4)
    x, y = get_batch(np.arange(20, dtype=np.int32), 2, 4)
    assert x.dtype == tinyattn.int64 and (y - x).tolist() == [[1] * 4] * 2


def test_batches_on_the_strict_backend(xp_backend):
    x, y = get_batch(np.arange(50), 2, 4, generator=tinyattn.Generator().manual_seed(0))
    assert (y - x).sum().item() == 8


def test_default_corpus_ships_with_the_package():
    text = default_corpus()
    assert 20_000 < len(text) < 100_000
    assert text.startswith("THE SONNETS")
    assert "Shall I compare thee to a summer's day?" in text
    shakespeare = pathlib.Path("/work/shared/data/tinyshakespeare.txt")
    if shakespeare.exists():  # it is not a piece of the Tiny Shakespeare corpus
        corpus = shakespeare.read_text(encoding="utf-8")
        lines = [line.strip() for line in text.splitlines() if len(line.strip()) > 30]
        assert not any(line in corpus for line in lines)
