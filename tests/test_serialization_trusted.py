"""PyTorch's contract for save/load beyond state dicts: whole modules, NumPy arrays, the allow-list
(add_safe_globals), and weights_only=False as the explicit opt-in for a trusted file, which the
library itself never takes.

The bad-files suite in tests/test_serialization.py keeps checking that a weights-only load refuses
what it refused before; here are the new paths, against real PyTorch where it is installed.
"""

import ast
import collections
import io
import pathlib
import pickle

import numpy as np
import pytest

import tinyattn
from tinyattn import nn
from tinyattn.errors import CheckpointError, UnpicklingError
from tinyattn.serialization import (add_safe_globals, clear_safe_globals, get_safe_globals,
                                    get_unsafe_globals_in_checkpoint, pickling, safe_globals)

SRC = pathlib.Path(tinyattn.__file__).parent


def numpy_globals(dtype=np.float64):
    """What PyTorch's allow-list needs for a NumPy array of `dtype` (its error message names them)."""
    return [np._core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(dtype))]


@pytest.fixture(autouse=True)
def no_safe_globals_left():
    yield
    clear_safe_globals()


class TwoLayers(nn.Module):
    """A program's own module class (pickled by name, as PyTorch pickles it)."""

    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(3, 4)
        self.out = nn.Linear(4, 2)
        self.register_buffer("scale", tinyattn.tensor([2.0]))
        self.register_buffer("scratch", tinyattn.zeros(1), persistent=False)
        self.note = "a plain attribute"

    def forward(self, x):
        return self.out(tinyattn.tanh(self.hidden(x))) * self.scale


# --- whole modules ---


def test_a_whole_module_round_trips_with_weights_only_false(tmp_path):
    tinyattn.manual_seed(0)
    model = TwoLayers()
    tinyattn.save(model, tmp_path / "model.pt")
    loaded = tinyattn.load(tmp_path / "model.pt", weights_only=False)
    assert type(loaded) is TwoLayers and loaded.note == "a plain attribute"
    assert list(loaded.state_dict()) == list(model.state_dict()) == ["scale", "hidden.weight", "hidden.bias",
                                                                     "out.weight", "out.bias"]
    assert loaded._non_persistent == {"scratch"}
    x = tinyattn.randn(5, 3)
    assert np.array_equal(loaded(x).detach().numpy(), model(x).detach().numpy())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in loaded.parameters())
    loaded(x).sum().backward()  # it trains
    assert loaded.hidden.weight.grad is not None


def test_tied_weights_stay_tied_in_a_saved_module(tmp_path):
    model = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5, bias=False))
    model[1].weight = model[0].weight
    tinyattn.save(model, tmp_path / "tied.pt")
    loaded = tinyattn.load(tmp_path / "tied.pt", weights_only=False)
    assert loaded[1].weight is loaded[0].weight


def test_a_whole_module_is_refused_by_a_weights_only_load_with_what_to_do(tmp_path):
    tinyattn.save(TwoLayers(), tmp_path / "model.pt")
    with pytest.raises(UnpicklingError, match="GLOBAL test_serialization_trusted.TwoLayers.*weights_only=False"):
        tinyattn.load(tmp_path / "model.pt")
    assert get_unsafe_globals_in_checkpoint(tmp_path / "model.pt")[:1] == ["test_serialization_trusted.TwoLayers"]


def test_a_whole_module_loads_weights_only_when_its_classes_are_declared_safe(tmp_path):
    from tinyattn.nn.layers import Linear

    tinyattn.save(TwoLayers(), tmp_path / "model.pt")
    with safe_globals([TwoLayers, Linear]):
        loaded = tinyattn.load(tmp_path / "model.pt")
    assert type(loaded) is TwoLayers and type(loaded.hidden) is Linear
    assert get_safe_globals() == []  # the context manager took them back


def test_tinyattn_modules_and_arrays_are_readable_by_torch(torch, tmp_path):
    tinyattn.manual_seed(0)
    model = TwoLayers()
    tinyattn.save(model, tmp_path / "model.pt")
    theirs = torch.load(tmp_path / "model.pt", weights_only=False)  # tinyattn's class, torch's tensors
    assert type(theirs) is TwoLayers
    assert isinstance(theirs.hidden._parameters["weight"], torch.nn.Parameter)
    assert np.array_equal(theirs.hidden._parameters["weight"].detach().numpy(), model.hidden.weight.detach().numpy())

    array = np.arange(6.0).reshape(2, 3)
    tinyattn.save({"array": array, "n": 3}, tmp_path / "array.pt")
    assert np.array_equal(torch.load(tmp_path / "array.pt", weights_only=False)["array"], array)
    with torch.serialization.safe_globals(numpy_globals()):
        assert np.array_equal(torch.load(tmp_path / "array.pt")["array"], array)


def test_state_dicts_written_now_are_still_read_by_torchs_default_load(torch, tmp_path):
    model = TwoLayers()
    optimizer = tinyattn.optim.Adam(model.parameters())
    model(tinyattn.randn(2, 3)).sum().backward()
    optimizer.step()
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": np.int64(3),
                  "loss": np.float32(0.5), "tag": b"", "dtype": tinyattn.float64, "size": tinyattn.Size([2]),
                  "ok": np.bool_(True), "names": {"a", "b"}, "device": tinyattn.device("cpu")}
    tinyattn.save(checkpoint, tmp_path / "ckpt.pt")
    theirs = torch.load(tmp_path / "ckpt.pt")  # weights_only=True, PyTorch's default
    assert theirs["step"] == 3 and theirs["loss"] == 0.5 and theirs["tag"] == b"" and theirs["ok"] is True
    assert theirs["dtype"] is torch.float64 and theirs["size"] == torch.Size([2])
    assert theirs["device"] == torch.device("cpu") and theirs["names"] == {"a", "b"}
    assert np.array_equal(theirs["model"]["hidden.weight"].numpy(), model.hidden.weight.detach().numpy())
    assert get_unsafe_globals_in_checkpoint(tmp_path / "ckpt.pt") == []


# --- files PyTorch writes ---


def test_a_whole_torch_module_loads_into_tinyattn(torch, tmp_path):
    """torch.save(model) of PyTorch's own classes: each becomes tinyattn's class of the same name."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(7, 4), torch.nn.LSTM(4, 5, batch_first=True))
    head = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Dropout(0.1), torch.nn.LSTMCell(3, 2),)
    torch.save({"body": model, "head": head, "epoch": 2}, tmp_path / "torch_model.pt")
    loaded = tinyattn.load(tmp_path / "torch_model.pt", weights_only=False)
    assert type(loaded["body"][1]) is nn.LSTM and type(loaded["head"][2]) is nn.LSTMCell
    assert loaded["epoch"] == 2
    ids = np.array([[1, 2, 3], [4, 5, 6]])
    theirs, _ = model(torch.from_numpy(ids))
    ours, _ = loaded["body"](tinyattn.tensor(ids))
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert set(loaded["body"].state_dict()) == set(model.state_dict())
    x = np.linspace(-1, 1, 10).reshape(2, 5).astype(np.float32)
    head.eval()
    loaded["head"].eval()
    theirs = head[2](head[1](head[0](torch.from_numpy(x))))[0]
    ours = loaded["head"][2](loaded["head"][1](loaded["head"][0](tinyattn.tensor(x))))[0]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_torch_module_with_hooks_says_what_to_do(torch, tmp_path):
    model = torch.nn.Linear(2, 2)
    model.register_forward_hook(print)
    torch.save(model, tmp_path / "hooked.pt")
    with pytest.raises(ValueError, match="hooks .*_forward_hooks.*state_dict"):
        tinyattn.load(tmp_path / "hooked.pt", weights_only=False)


def test_a_numpy_array_torch_saved_loads_as_pytorch_allows_it(torch, tmp_path):
    """As in PyTorch: refused by a weights-only load, read with weights_only=False, or weights-only once
    NumPy's reconstructors are declared safe."""
    data = np.sin(np.arange(12.0)).reshape(3, 4)
    torch.save(data, tmp_path / "traindata.pt")
    with pytest.raises(UnpicklingError, match=r"GLOBAL numpy\._core\.multiarray\._reconstruct.*add_safe_globals"):
        tinyattn.load(tmp_path / "traindata.pt")
    assert get_unsafe_globals_in_checkpoint(tmp_path / "traindata.pt") == \
        sorted(torch.serialization.get_unsafe_globals_in_checkpoint(str(tmp_path / "traindata.pt")))
    loaded = tinyattn.load(tmp_path / "traindata.pt", weights_only=False)
    assert type(loaded) is np.ndarray and np.array_equal(loaded, data)
    with safe_globals(numpy_globals()[:3]):  # the dtype's class too, as in PyTorch
        with pytest.raises(UnpicklingError, match="BUILD sets the state of a Float64DType"):
            tinyattn.load(tmp_path / "traindata.pt")
    with safe_globals(numpy_globals()):
        assert np.array_equal(tinyattn.load(tmp_path / "traindata.pt"), data)


def test_add_safe_globals_accepts_named_pairs_and_is_cleared():
    add_safe_globals([(collections.deque, "my.deque")])
    assert pickling.user_allowed_globals() == {"my.deque": collections.deque}
    with pytest.raises(ValueError, match="pair"):
        add_safe_globals([(collections.deque,)])
    clear_safe_globals()
    assert get_safe_globals() == []


def test_tinyattn_arrays_and_numbers_round_trip_in_tinyattn(tmp_path):
    array = np.arange(5, dtype=np.int32)
    tinyattn.save({"array": array, "shape": (2, 3), "fs": frozenset({1})}, tmp_path / "x.pt")
    loaded = tinyattn.load(tmp_path / "x.pt", weights_only=False)
    assert loaded["array"].dtype == np.int32 and np.array_equal(loaded["array"], array)
    assert loaded["fs"] == frozenset({1}) and loaded["shape"] == (2, 3)
    with safe_globals(numpy_globals(np.int32) + [frozenset]):
        assert np.array_equal(tinyattn.load(tmp_path / "x.pt")["array"], array)


# --- a trusted load still checks the file's storages, and names what tinyattn lacks ---


def test_a_trusted_load_keeps_the_size_checks(tmp_path):
    tinyattn.save({"w": tinyattn.zeros(1000)}, tmp_path / "big.pt")
    with pytest.raises(CheckpointError, match="load limit"):
        tinyattn.load(tmp_path / "big.pt", weights_only=False, max_bytes=100)


def test_a_trusted_load_of_a_torch_name_tinyattn_lacks_says_so(tmp_path):
    data = b"\x80\x02ctorch.nn.modules.fancy\nFancyLayer\n)\x81."
    buffer = io.BytesIO()
    import zipfile

    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", data)
    buffer.seek(0)
    with pytest.raises(UnpicklingError, match="torch.nn.modules.fancy.FancyLayer, which tinyattn does not have"):
        tinyattn.load(buffer, weights_only=False)


def _renamed_in_pickle(path, old, new):
    """The archive at `path` with the GLOBAL `old` (module, name) of its data.pkl written as `new`: a file
    saved when the class lived at another path."""
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(buffer, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename.endswith("data.pkl"):
                assert "\n".join(old).encode() in data
                data = data.replace("\n".join(old).encode(), "\n".join(new).encode())
            target.writestr(item, data)
    buffer.seek(0)
    return buffer


def test_a_trusted_load_finds_a_tinyattn_class_saved_before_it_moved(tmp_path):
    # tinyattn.nn.GroupNorm lived in tinyattn/nn/more_layers.py: a model saved then names that path
    tinyattn.manual_seed(0)
    model = nn.Sequential(nn.GroupNorm(2, 4), nn.Linear(3, 2))
    tinyattn.save(model, tmp_path / "model.pt")
    old_file = _renamed_in_pickle(tmp_path / "model.pt", (nn.GroupNorm.__module__, "GroupNorm"),
                                  ("tinyattn.nn.more_layers", "GroupNorm"))
    loaded = tinyattn.load(old_file, weights_only=False)
    assert type(loaded[0]) is nn.GroupNorm and type(loaded[1]) is nn.Linear
    x = tinyattn.randn(2, 4, 3)
    assert tinyattn.equal(loaded(x), model(x))


def test_a_trusted_load_of_a_tinyattn_name_this_version_lacks_says_so(tmp_path):
    tinyattn.save(nn.Sequential(nn.GroupNorm(2, 4)), tmp_path / "model.pt")
    old_file = _renamed_in_pickle(tmp_path / "model.pt", (nn.GroupNorm.__module__, "GroupNorm"),
                                  ("tinyattn.nn.old_layers", "FancyNorm"))
    with pytest.raises(UnpicklingError, match="tinyattn.nn.old_layers.FancyNorm, which this version of tinyattn "
                                              "does not have"):
        tinyattn.load(old_file, weights_only=False)


# --- the library never opts in ---


# Python's unpickler elsewhere in the library, each not a loader of files
OTHER_UNPICKLING = {
    "utils/data/dataloader.py": "a batch from a worker process of this program, through a queue",
}


def test_no_loader_of_the_library_opts_in_to_weights_only_false():
    """Every call in tinyattn's own code that passes weights_only passes True, and Python's unpickler is
    reached only through tinyattn.load's explicit weights_only=False."""
    offenders = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg == "weights_only" and not (isinstance(keyword.value, ast.Constant)
                                                              and keyword.value.value is True):
                        offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
            if isinstance(node, ast.Name) and node.id == "TrustedUnpickler":
                if path.name != "torch_format.py" and path.name != "pickling.py":
                    offenders.append(f"{path.relative_to(SRC)}:{node.lineno} uses TrustedUnpickler")
            if isinstance(node, ast.Attribute) and node.attr in ("loads", "Unpickler") and \
                    isinstance(node.value, ast.Name) and node.value.id == "pickle" and path.name != "pickling.py" \
                    and str(path.relative_to(SRC)) not in OTHER_UNPICKLING:
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno} uses pickle.{node.attr}")
    assert not offenders, offenders


def test_generate_never_runs_the_trusted_unpickler(tmp_path, monkeypatch, capsys):
    from tinyattn.app import cli

    def refuse(*args, **kwargs):
        raise AssertionError("the library opted in to weights_only=False")

    monkeypatch.setattr(pickling.TrustedUnpickler, "__init__", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    corpus = tmp_path / "input.txt"
    corpus.write_text("When forty winters shall besiege thy brow,\n" * 20, encoding="utf-8")
    small = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "4",
             "--eval-iters", "1", "--eval-interval", "2", "--sample-tokens", "0", "--quiet"]
    assert cli.main(["train", "--data", str(corpus), "--steps", "2", "--out", str(tmp_path / "out"), *small]) == 0
    capsys.readouterr()
    assert cli.main(["generate", "--ckpt", str(tmp_path / "out"), "--prompt", "When", "--tokens", "5",
                     "--seed", "1"]) == 0
    assert capsys.readouterr().out.startswith("When")
