"""tinyattn.save/load in PyTorch's format, safetensors, and what untrusted files cannot do."""

import collections
import io
import math
import os
import pathlib
import pickle
import struct
import warnings
import zipfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tinyattn
import tinyattn.nn as nn
from tinyattn.errors import CheckpointError, DeviceError, UnpicklingError
from tinyattn.app.models import GPT, GPTConfig
from tinyattn.optim import SGD, Adam, AdamW
from tinyattn.serialization import load_file, load_metadata, save_file
from tinyattn.serialization import checks
from tinyattn.serialization.pickling import Pickler


def assert_same(a, b):
    """The same object graph: types, tensors (dtype, shape, values, requires_grad, Parameter or not)."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, tinyattn.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
        assert np.array_equal(a.detach().numpy(), b.detach().numpy(), equal_nan=a.dtype.is_floating_point)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        assert a == b


def everything():
    """An object with every kind of value tinyattn.save writes."""
    base = tinyattn.arange(12.0).reshape(3, 4)
    return {
        "state": collections.OrderedDict(weight=tinyattn.randn(2, 3), bias=tinyattn.zeros(3)),
        "parameter": nn.Parameter(tinyattn.ones(2, dtype=tinyattn.float64)),
        "frozen": nn.Parameter(tinyattn.ones(1), requires_grad=False),
        "needs_grad": tinyattn.ones(2, requires_grad=True),
        "ints": tinyattn.tensor([1, -2, 2**40]), "int32": tinyattn.tensor([7], dtype=tinyattn.int32),
        "mask": tinyattn.tensor([True, False]), "scalar": tinyattn.tensor(2.5), "empty": tinyattn.zeros(0, 3),
        "base": base, "row": base[1], "column": base[:, 2], "transposed": base.t(),
        "numbers": [0, 255, 65536, -1, 2**31, -(2**63), 2**100, 1.5, -0.0, math.inf, 1 + 2j, True, None],
        "strings": ("", "é∑😀", "x" * 300), "bytes": b"\x00\xff", "set": {1, "a"}, "empty_set": set(),
        "nested": {"a": [1, (2, [3, {"b": ()}])]}, "size": tinyattn.Size([2, 3]), "dtype": tinyattn.int64,
        "device": tinyattn.device("cpu"),
    }


def test_round_trip_keeps_every_value(tmp_path):
    obj = everything()
    tinyattn.save(obj, tmp_path / "x.pt")
    back = tinyattn.load(tmp_path / "x.pt")
    assert_same(obj, back)
    assert isinstance(back["parameter"], nn.Parameter) and back["parameter"].requires_grad
    assert not back["frozen"].requires_grad
    back["base"][1, 2] = 100.0  # views still share their storage, as in PyTorch
    assert back["row"][2].item() == 100.0 and back["column"][1].item() == 100.0 and back["transposed"][2, 1].item() == 100.0


def test_paths_file_objects_and_streams(tmp_path):
    obj = {"w": tinyattn.randn(3)}
    tinyattn.save(obj, str(tmp_path / "a.pt"))
    buffer = io.BytesIO()
    tinyattn.save(obj, buffer)
    assert buffer.getvalue()[:4] == b"PK\x03\x04"

    class Stream(io.RawIOBase):  # neither seekable nor tellable, like a pipe
        def __init__(self, data=b""):
            self.data, self.out = io.BytesIO(data), bytearray()

        def readable(self):
            return True

        def writable(self):
            return True

        def readinto(self, b):
            return self.data.readinto(b)

        def write(self, b):
            self.out += b
            return len(b)

    stream = Stream()
    tinyattn.save(obj, stream)
    for source in (pathlib.Path(tmp_path / "a.pt"), str(tmp_path / "a.pt"), io.BytesIO(buffer.getvalue()),
                   Stream(bytes(stream.out)), Stream(buffer.getvalue())):
        assert_same(obj, tinyattn.load(source))
    with open(tmp_path / "a.pt", "rb") as f:
        assert_same(obj, tinyattn.load(f))


def test_the_archive_is_laid_out_as_pytorch_writes_it(tmp_path):
    shared = tinyattn.randn(4, 4)
    tinyattn.save({"a": shared, "b": shared[1:], "c": tinyattn.ones(3)}, tmp_path / "x.pt")
    with zipfile.ZipFile(tmp_path / "x.pt") as archive:
        assert archive.namelist() == ["archive/data.pkl", "archive/.format_version", "archive/.storage_alignment",
                                      "archive/byteorder", "archive/data/0", "archive/data/1", "archive/version",
                                      "archive/.data/serialization_id"]  # two storages: a and b share one
        assert archive.read("archive/version") == b"3\n" and archive.read("archive/byteorder") == b"little"
        data = (tmp_path / "x.pt").read_bytes()
        for info in archive.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            name_length, extra_length = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
            assert (info.header_offset + 30 + name_length + extra_length) % 64 == 0, info.filename


def test_refuses_what_it_cannot_save(tmp_path):
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):  # what Python cannot pickle
        tinyattn.save({1: lambda: 0}, tmp_path / "x.pt")
    with pytest.raises(RuntimeError, match="non-leaf tensor that requires grad"):
        tinyattn.save({"y": tinyattn.ones(2, requires_grad=True) * 2}, tmp_path / "x.pt")
    with pytest.raises(ValueError, match="legacy"):
        tinyattn.save({}, tmp_path / "x.pt", _use_new_zipfile_serialization=False)


# --- PyTorch both ways ---


def test_pytorch_loads_what_tinyattn_saves(torch, tmp_path):
    obj = everything()
    tinyattn.save(obj, tmp_path / "x.pt")
    theirs = torch.load(tmp_path / "x.pt", weights_only=True)
    for key, value in obj.items():
        if isinstance(value, tinyattn.Tensor):
            assert str(theirs[key].dtype) == f"torch.{value.dtype.name}" and tuple(theirs[key].shape) == value.shape
            assert np.array_equal(theirs[key].detach().numpy(), value.detach().numpy())
            assert theirs[key].requires_grad == value.requires_grad
            assert isinstance(theirs[key], torch.nn.Parameter) == isinstance(value, nn.Parameter)
    assert theirs["numbers"] == obj["numbers"] and theirs["set"] == obj["set"] and theirs["bytes"] == obj["bytes"]
    assert theirs["size"] == torch.Size([2, 3]) and theirs["dtype"] is torch.int64
    assert theirs["row"].untyped_storage().data_ptr() == theirs["base"].untyped_storage().data_ptr()
    torch.save(theirs, tmp_path / "back.pt")  # and PyTorch's copy comes back unchanged
    assert_same(obj, tinyattn.load(tmp_path / "back.pt"))


def test_tinyattn_loads_what_pytorch_saves(torch, tmp_path):
    torch.manual_seed(0)
    linear = torch.nn.Linear(3, 2)
    base = torch.arange(12.0).reshape(3, 4)
    torch.save({"state": linear.state_dict(), "view": base.t(), "row": base[1], "base": base, "p": linear.weight,
                "expanded": torch.ones(3).expand(4, 3), "big": torch.randn(100, dtype=torch.float64),
                "config": {"n": 3, "lr": 0.1, "name": "x", "flag": True, "shape": torch.Size([1])}},
               tmp_path / "t.pt")
    ours = tinyattn.load(tmp_path / "t.pt")
    assert list(ours["state"]) == ["weight", "bias"] and type(ours["state"]) is collections.OrderedDict
    assert ours["state"]._metadata == collections.OrderedDict([("", {"version": 1})])
    assert np.array_equal(ours["state"]["weight"].numpy(), linear.weight.detach().numpy())
    assert isinstance(ours["p"], nn.Parameter) and ours["p"].requires_grad
    assert np.array_equal(ours["view"].numpy(), base.t().numpy()) and np.array_equal(ours["row"].numpy(), base[1].numpy())
    assert ours["expanded"].shape == (4, 3) and ours["expanded"].numpy().flags.c_contiguous  # overlapping: a copy
    assert ours["big"].dtype == tinyattn.float64 and ours["config"]["shape"] == tinyattn.Size([1])
    ours["base"][0, 0] = 5.0
    assert ours["view"][0, 0].item() == 5.0
    mine = nn.Linear(3, 2)
    mine.load_state_dict(ours["state"])  # PyTorch's state_dict, _metadata and all, loads into tinyattn


def test_half_precision_is_widened_exactly_with_a_warning_and_small_integers_load_as_they_are(torch, tmp_path):
    values = {"h": torch.tensor([1.5, -2.0, 65504.0], dtype=torch.float16),
              "bf": torch.tensor([1.5, -3.0e38, 2.0**-100], dtype=torch.bfloat16),
              "u8": torch.tensor([0, 255], dtype=torch.uint8), "i8": torch.tensor([-128, 127], dtype=torch.int8),
              "i16": torch.tensor([-32768], dtype=torch.int16)}
    torch.save(values, tmp_path / "h.pt")
    with pytest.warns(UserWarning, match=r"loaded bfloat16 as float32, float16 as float32 \(exactly"):
        ours = tinyattn.load(tmp_path / "h.pt")
    for key, value in values.items():
        expected = value.float() if value.is_floating_point() else value
        assert ours[key].dtype.name == str(expected.dtype)[6:]
        assert np.array_equal(ours[key].numpy(), expected.numpy())
    torch.save({"c": torch.ones(2, dtype=torch.complex64)}, tmp_path / "c.pt")
    with pytest.raises(CheckpointError, match="ComplexFloatStorage.*convert it in PyTorch"):
        tinyattn.load(tmp_path / "c.pt")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit's own
def test_the_legacy_format_and_torchscript_are_refused(torch, tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(CheckpointError, match="legacy format .* save it again with torch.save"):
        tinyattn.load(tmp_path / "old.pt")
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), tmp_path / "script.pt")
    with pytest.raises(CheckpointError, match="TorchScript archive"):
        tinyattn.load(tmp_path / "script.pt")
    (tmp_path / "text.pt").write_text("hello")
    with pytest.raises(CheckpointError, match="not a file written by torch.save"):
        tinyattn.load(tmp_path / "text.pt")


def nanogpt_checkpoint():
    """What nanoGPT's train.py saves, from a tinyattn model and optimizer after two steps."""
    tinyattn.manual_seed(0)
    config = GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8)
    model = GPT(config)
    optimizer = AdamW([{"params": [p for p in model.parameters() if p.ndim >= 2], "weight_decay": 0.1},
                       {"params": [p for p in model.parameters() if p.ndim < 2], "weight_decay": 0.0}],
                      lr=1e-3, betas=(0.9, 0.95))
    x = tinyattn.randint(11, (2, 8))
    for _ in range(2):
        _, loss = model(x, x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model, optimizer, {
        "model": model.state_dict(), "optimizer": optimizer.state_dict(), "model_args": vars(config).copy(),
        "iter_num": 2, "best_val_loss": loss.detach(), "config": {"batch_size": 2, "dataset": "shakespeare_char"},
    }


def test_a_nanogpt_checkpoint_goes_to_pytorch_and_back(torch, tmp_path):
    model, optimizer, checkpoint = nanogpt_checkpoint()
    tinyattn.save(checkpoint, tmp_path / "ckpt.pt")
    theirs = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    assert theirs["iter_num"] == 2 and theirs["model_args"]["n_head"] == 2
    assert float(theirs["best_val_loss"]) == checkpoint["best_val_loss"].item()
    # the optimizer state loads into PyTorch's AdamW and takes the same step as tinyattn's
    params = {name: torch.nn.Parameter(torch.from_numpy(t.detach().numpy().copy())) for name, t in model.named_parameters()}
    groups = [{"params": [params[n] for n, p in model.named_parameters() if p.ndim >= 2]},
              {"params": [params[n] for n, p in model.named_parameters() if p.ndim < 2]}]
    torch_optimizer = torch.optim.AdamW(groups, lr=5.0)
    torch_optimizer.load_state_dict(theirs["optimizer"])
    group = torch_optimizer.param_groups[0]
    assert group["lr"] == 1e-3 and group["betas"] == (0.9, 0.95) and group["decoupled_weight_decay"] is True
    state = torch_optimizer.state[groups[0]["params"][0]]
    assert state["step"].dtype == torch.float32 and state["step"].item() == 2.0
    rng = np.random.default_rng(0)
    for (name, p), q in zip(model.named_parameters(), params.values()):
        g = rng.standard_normal(p.shape).astype(np.float32)
        p.grad, q.grad = tinyattn.tensor(g), torch.from_numpy(g)
    optimizer.step()
    torch_optimizer.step()
    for (name, p), q in zip(model.named_parameters(), params.values()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-7, err_msg=name)
    # and PyTorch's optimizer state comes back into tinyattn's AdamW
    torch.save({"optimizer": torch_optimizer.state_dict()}, tmp_path / "torch.pt")
    mine = AdamW([{"params": [p for p in model.parameters() if p.ndim >= 2]},
                  {"params": [p for p in model.parameters() if p.ndim < 2]}], lr=5.0)
    mine.load_state_dict(tinyattn.load(tmp_path / "torch.pt")["optimizer"])
    assert mine.param_groups[1]["lr"] == 1e-3 and mine.state[next(model.parameters())]["step"] == 3.0


@pytest.mark.parametrize("make", [lambda ps: SGD(ps, lr=0.1, momentum=0.9), lambda ps: Adam(ps, lr=0.1),
                                  lambda ps: AdamW(ps, lr=0.1)])
def test_optimizer_state_dicts_have_pytorchs_keys(torch, make):
    mine = make([nn.Parameter(tinyattn.ones(2))])
    mine.param_groups[0]["params"][0].grad = tinyattn.ones(2)
    mine.step()
    theirs = getattr(torch.optim, type(mine).__name__)([torch.nn.Parameter(torch.ones(2))],
                                                        **{k: v for k, v in mine.defaults.items()
                                                           if k != "decoupled_weight_decay"})
    assert list(mine.state_dict()["param_groups"][0]) == list(theirs.state_dict()["param_groups"][0])


def test_the_books_checkpoint_round_trips_and_training_continues_exactly(tmp_path):
    model, optimizer, _ = nanogpt_checkpoint()
    tinyattn.save({"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict()},
                  tmp_path / "model_and_optimizer.pth")
    checkpoint = tinyattn.load(tmp_path / "model_and_optimizer.pth", map_location="cpu", weights_only=True)
    tinyattn.manual_seed(1)
    again = GPT(model.config)
    again.load_state_dict(checkpoint["model_state_dict"])
    resumed = AdamW([{"params": [p for p in again.parameters() if p.ndim >= 2], "weight_decay": 0.5},
                     {"params": [p for p in again.parameters() if p.ndim < 2]}], lr=0.5)
    resumed.load_state_dict(checkpoint["optimizer_state_dict"])
    x = tinyattn.randint(11, (2, 8))
    for m, opt in ((model, optimizer), (again, resumed)):
        _, loss = m(x, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
    for p, q in zip(model.parameters(), again.parameters()):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())


# --- map_location ---


def file_saved_on(location, tmp_path):
    """A file whose one storage claims to live on `location` (tinyattn saves CPU tensors as 'cpu')."""
    import tinyattn.serialization.torch_format as torch_format

    storages = torch_format._Storages()

    def describe(tensor):
        record = storages.describe(tensor)
        return record[:2] + (location,) + record[3:]

    data = Pickler(describe).dump({"w": tinyattn.arange(3.0)})
    with open(tmp_path / "gpu.pt", "wb") as f:
        torch_format._write_archive(f, data, storages)
    return tmp_path / "gpu.pt"


@pytest.mark.skipif(tinyattn.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_map_location(tmp_path):
    path = file_saved_on("cuda:0", tmp_path)
    with pytest.raises(DeviceError, match="saved on 'cuda:0' .* map_location='cpu'"):
        tinyattn.load(path)
    for where in ("cpu", tinyattn.device("cpu"), {"cuda:0": "cpu"}, lambda storage, location: storage,
                  lambda storage, location: storage.cpu()):
        assert tinyattn.load(path, map_location=where)["w"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(DeviceError, match="saved on 'cuda:0'"):
        tinyattn.load(path, map_location={"cuda:1": "cpu"})
    with pytest.raises(TypeError, match="map_location returned 3"):
        tinyattn.load(path, map_location=lambda storage, location: 3)
    with pytest.raises(TypeError, match="map_location must be"):
        tinyattn.load(path, map_location=3)
    with pytest.raises(DeviceError, match="saved on 'mps'"):
        tinyattn.load(file_saved_on("mps", tmp_path))


def test_mmap_maps_the_file_copy_on_write(tmp_path):
    tinyattn.save({"w": tinyattn.arange(6.0), "v": tinyattn.ones(2, dtype=tinyattn.int64)}, tmp_path / "x.pt")
    before = (tmp_path / "x.pt").read_bytes()
    loaded = tinyattn.load(tmp_path / "x.pt", mmap=True)
    assert loaded["w"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and loaded["v"].tolist() == [1, 1]
    loaded["w"][0] = 9.0  # a private copy of the page: the file does not change
    assert (tmp_path / "x.pt").read_bytes() == before
    with pytest.raises(ValueError, match="needs a file path"):
        tinyattn.load(io.BytesIO(before), mmap=True)


# --- what a file cannot do ---


def craft(pickled, records=None, compress=False):
    """A torch.save-like archive around a hand-made pickle."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", pickled)
        for key, data in (records or {}).items():
            archive.writestr(f"archive/data/{key}", data)
    buffer.seek(0)
    return buffer


def tensor_pickle(key="0", numel=4, offset=0, size=(4,), stride=(1,), storage="FloatStorage"):
    """data.pkl of one tensor, written opcode by opcode."""
    def tup(items):
        return b"(" + b"".join(b"J" + struct.pack("<i", n) for n in items) + b"t"

    def text(s):
        return b"X" + struct.pack("<I", len(s)) + s.encode()

    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((" + text("storage") + b"ctorch\n" + storage.encode()
            + b"\n" + text(key) + text("cpu") + b"J" + struct.pack("<i", numel) + b"tQ"
            + b"J" + struct.pack("<i", offset) + tup(size) + tup(stride)
            + b"\x89ccollections\nOrderedDict\n)RtR.")


class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + str(Evil.marker),))


def test_a_valid_hand_made_pickle_loads():
    assert tinyattn.load(craft(tensor_pickle(), {"0": np.arange(4, dtype="<f4").tobytes()})).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("pickled, message", [
    (lambda: pickle.dumps({"a": Evil()}, protocol=2), "GLOBAL posix.system, which is not on the weights-only"),
    (lambda: pickle.dumps(Evil(), protocol=0), "GLOBAL posix.system"),
    (lambda: pickle.dumps(Evil(), protocol=4), "opcode FRAME"),
    (lambda: b"(X\x07\x00\x00\x00touch xios\nsystem\n.", "opcode INST"),
    (lambda: b"\x80\x02(ccollections\nOrderedDict\no.", "opcode OBJ"),
    (lambda: b"\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R.", "GLOBAL builtins.eval"),
    (lambda: b"\x80\x02ccollections\nCounter\n)R}b.", "BUILD sets the state of a Counter"),
    (lambda: b"\x80\x02ccollections\nOrderedDict\n)R}X\x04\x00\x00\x00keysK\x01sb.", "BUILD sets the state"),
    (lambda: b"\x80\x02ccollections\nOrderedDict\n)R.", None),  # allowed: an empty OrderedDict
    (lambda: b"\x80\x02ccollections\nOrderedDict\nK\x01\x85R.", "collections.OrderedDict of 1"),
    (lambda: b"\x80\x02ctorch\nSize\n.", "result is the global torch.Size"),
    (lambda: b"\x80\x02K\x01K\x02R.", "calls 1, which is not an allowed function"),
    (lambda: b"\x80\x02h\x05.", "malformed"),
    (lambda: b"\x80\x02X\xff\xff\xff\x7fab.", "truncated"),
    (lambda: b"\x80\x02(K\x01K\x02Q.", "persistent id 2 is not a storage record"),
    (lambda: b"\x80\x02ctorch\nbfloat16\n.", "torch.bfloat16 values"),
    (lambda: b"\x80\x02ctorch._utils\n_rebuild_qtensor\n.", "a quantized tensor"),
])
def test_malicious_or_foreign_pickles_are_refused_and_run_nothing(tmp_path, pickled, message):
    Evil.marker = tmp_path / "ran"
    if message is None:
        assert tinyattn.load(craft(pickled())) == collections.OrderedDict()
        return
    with pytest.raises(CheckpointError, match=message):
        tinyattn.load(craft(pickled()))
    assert not Evil.marker.exists()
    assert issubclass(UnpicklingError, pickle.UnpicklingError)  # what PyTorch code catches


def test_a_pickle_module_is_refused_for_a_weights_only_load(tmp_path):
    with pytest.raises(ValueError, match="pickle_module"):
        tinyattn.load(craft(b"\x80\x02N."), pickle_module=pickle)
    with pytest.raises(ValueError, match="pickle_module"):
        tinyattn.load(craft(b"\x80\x02N."), weights_only=False, pickle_module=object())
    assert tinyattn.load(craft(b"\x80\x02N."), weights_only=False, pickle_module=pickle) is None
    with pytest.raises(TypeError, match="weights_only must be"):
        tinyattn.load(craft(b"\x80\x02N."), weights_only="no")


FOUR_FLOATS = np.arange(4, dtype="<f4").tobytes()


@pytest.mark.parametrize("pickled, records, message", [
    (tensor_pickle(key="../../etc/passwd"), {"0": FOUR_FLOATS}, "storage key '../../etc/passwd' is not a plain name"),
    (tensor_pickle(key="7"), {"0": FOUR_FLOATS}, "has no record 'archive/data/7'"),
    (tensor_pickle(numel=1000), {"0": FOUR_FLOATS}, "should hold 4000 bytes but holds 16"),
    (tensor_pickle(numel=2**31 - 1), {"0": FOUR_FLOATS}, "should hold 8589934588 bytes but holds 16"),
    (tensor_pickle(numel=-4), {"0": FOUR_FLOATS}, "declares -4 elements"),
    (tensor_pickle(size=(5,)), {"0": FOUR_FLOATS}, "reads element 4, past the end of its storage of 4"),
    (tensor_pickle(offset=3, size=(2,)), {"0": FOUR_FLOATS}, "reads element 4"),
    (tensor_pickle(size=(2, 2), stride=(3, 1)), {"0": FOUR_FLOATS}, "reads element 4"),
    (tensor_pickle(size=(2,), stride=(-1,)), {"0": FOUR_FLOATS}, "stride \\(-1,\\) holds -1"),
    (tensor_pickle(offset=-1), {"0": FOUR_FLOATS}, "storage offset -1"),
    (tensor_pickle(size=(2**20, 2**20), stride=(0, 0)), {"0": FOUR_FLOATS}, "more than the load limit"),
    (tensor_pickle(storage="BoolStorage"), {"0": b"\x00\x01\x02\x00"}, "bytes other than 0 and 1"),
    (tensor_pickle(storage="Evil"), {"0": FOUR_FLOATS}, "GLOBAL torch.Evil"),
])
def test_declared_sizes_are_checked_before_anything_is_allocated(pickled, records, message):
    with pytest.raises(CheckpointError, match=message):
        tinyattn.load(craft(pickled, records))


def test_zip_bombs_and_damaged_archives_are_refused():
    bomb = craft(tensor_pickle(numel=2**24), {"0": bytes(2**26)}, compress=True)  # 64 MiB of zeros in 64 KiB
    assert len(bomb.getvalue()) < 2**17
    with pytest.raises(CheckpointError, match="is compressed"):
        tinyattn.load(bomb)
    good = craft(tensor_pickle(), {"0": FOUR_FLOATS}).getvalue()
    at = good.index(FOUR_FLOATS)
    with pytest.raises(CheckpointError, match="CRC"):
        tinyattn.load(io.BytesIO(good[:at + 5] + b"\x01" + good[at + 6:]))
    with pytest.raises(CheckpointError, match="no end-of-archive record"):
        tinyattn.load(io.BytesIO(good[:-30]))


def test_the_load_limit_is_user_raisable(tmp_path):
    tinyattn.save({"w": tinyattn.zeros(1000)}, tmp_path / "x.pt")
    with pytest.raises(CheckpointError, match="more than the load limit of 1000 bytes allows.*set_max_load_bytes"):
        tinyattn.load(tmp_path / "x.pt", max_bytes=1000)
    assert tinyattn.load(tmp_path / "x.pt", max_bytes=4000)["w"].shape == (1000,)
    previous = tinyattn.serialization.set_max_load_bytes(1000)
    try:
        with pytest.raises(CheckpointError, match="load limit"):
            tinyattn.load(tmp_path / "x.pt")
        save_file({"w": tinyattn.zeros(1000)}, tmp_path / "x.safetensors")
        with pytest.raises(CheckpointError, match="load limit"):
            load_file(tmp_path / "x.safetensors")
    finally:
        assert tinyattn.serialization.set_max_load_bytes(None) == 1000  # None: back to the default
    assert tinyattn.serialization.get_max_load_bytes() == previous == checks.DEFAULT_MAX_LOAD_BYTES
    with pytest.raises(ValueError, match="positive number of bytes"):
        tinyattn.serialization.set_max_load_bytes(-1)


def test_the_environment_variable_sets_the_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYATTN_MAX_LOAD_BYTES", "100")
    assert tinyattn.serialization.get_max_load_bytes() == 100
    monkeypatch.setenv("TINYATTN_MAX_LOAD_BYTES", "lots")
    with pytest.raises(ValueError, match="TINYATTN_MAX_LOAD_BYTES must be"):
        tinyattn.serialization.get_max_load_bytes()


SAVED = None


def saved_bytes():
    global SAVED
    if SAVED is None:
        buffer = io.BytesIO()
        obj = everything()
        tinyattn.save(obj, buffer)
        SAVED = (obj, buffer.getvalue())
    return SAVED


def mutations(size):
    """A change to a file of `size` bytes: flip bits, overwrite, cut or insert bytes."""
    position = st.integers(0, size - 1)
    return st.one_of(
        st.tuples(st.just("flip"), position, st.integers(1, 255)),
        st.tuples(st.just("write"), position, st.binary(min_size=1, max_size=8)),
        st.tuples(st.just("cut"), position, st.integers(1, 64)),
        st.tuples(st.just("insert"), position, st.binary(min_size=1, max_size=8)),
    )


def mutate(data, change):
    kind, at, arg = change
    at %= len(data)  # an earlier cut may have shortened it
    if kind == "flip":
        return data[:at] + bytes([data[at] ^ arg]) + data[at + 1:]
    if kind == "write":
        return data[:at] + arg + data[at + len(arg):]
    if kind == "cut":
        return data[:at] + data[at + arg:]
    return data[:at] + arg + data[at:]


@given(st.lists(mutations(len(saved_bytes()[1])), min_size=1, max_size=3))
def test_a_damaged_torch_file_is_refused_or_loads_exactly(changes):
    """Whatever bytes change, the loader refuses with CheckpointError or gives back what was saved."""
    obj, data = saved_bytes()
    for change in changes:
        data = mutate(data, change) if data else data
    try:
        loaded = tinyattn.load(io.BytesIO(data))
    except CheckpointError:
        return
    assert_same(obj, loaded)


# --- safetensors ---


def test_safetensors_round_trip_and_metadata(tmp_path):
    tensors = {"w": tinyattn.randn(3, 4), "b": tinyattn.zeros(0), "i": tinyattn.tensor([1, 2]),
               "m": tinyattn.tensor([True]), "d": tinyattn.tensor(1.5, dtype=tinyattn.float64),
               "n": np.arange(3, dtype=np.int32)}
    save_file(tensors, tmp_path / "x.safetensors", metadata={"format": "pt"})
    loaded = load_file(tmp_path / "x.safetensors")
    assert set(loaded) == set(tensors)
    for name, value in tensors.items():
        assert_same(value if isinstance(value, tinyattn.Tensor) else tinyattn.tensor(value), loaded[name])
    assert load_metadata(tmp_path / "x.safetensors") == {"format": "pt"}
    assert (tmp_path / "x.safetensors").read_bytes()[:8] == struct.pack("<Q", (len(
        (tmp_path / "x.safetensors").read_bytes()) - 8 - sum(t.nbytes for t in map(np.asarray, tensors.values()))))
    assert_same(loaded["w"], tinyattn.load(tmp_path / "x.safetensors")["w"])  # load() reads .safetensors too
    with pytest.raises(TypeError, match="metadata must be a dict of strings"):
        save_file(tensors, tmp_path / "y.safetensors", metadata={"a": 1})


def test_safetensors_interoperates_with_the_reference_implementation(tmp_path):
    reference = pytest.importorskip("safetensors.numpy")
    tensors = {"w": tinyattn.randn(3, 4), "i": tinyattn.tensor([1, 2]), "m": tinyattn.tensor([True, False])}
    save_file(tensors, tmp_path / "ours.safetensors", metadata={"k": "v"})
    theirs = reference.load_file(str(tmp_path / "ours.safetensors"))
    for name, value in tensors.items():
        assert np.array_equal(theirs[name], value.numpy()) and theirs[name].dtype == value.numpy().dtype
    reference.save_file({"x": np.arange(6, dtype=np.float16).reshape(2, 3), "y": np.ones(2, np.uint8),
                         "z": np.ones((0, 2), np.float64)}, str(tmp_path / "theirs.safetensors"))
    with pytest.warns(UserWarning, match="float16 as float32"):
        loaded = load_file(tmp_path / "theirs.safetensors")
    assert loaded["x"].tolist() == [[0, 1, 2], [3, 4, 5]] and loaded["y"].dtype == tinyattn.uint8
    assert loaded["z"].shape == (0, 2)


def safetensors_file(header, data=b""):
    text = header if isinstance(header, bytes) else __import__("json").dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


@pytest.mark.parametrize("content, message", [
    (b"\x01\x02", "too few for a safetensors header"),
    (struct.pack("<Q", 2**62) + b"{}", "header claims 4611686018427387904 bytes"),
    (safetensors_file(b"[1, 2]"), "not a JSON object"),
    (safetensors_file(b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "a": 1}', bytes(4)),
     "the key 'a' appears twice"),
    (safetensors_file({"a": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}, bytes(8)), "complex64"),
    (safetensors_file({"a": {"dtype": "X", "shape": [1], "data_offsets": [0, 4]}}, bytes(4)), "unknown dtype"),
    (safetensors_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, bytes(4)), "covers 4 bytes"),
    (safetensors_file({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, bytes(4)), "not a size"),
    (safetensors_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, bytes(4)), "0 <= begin <= end"),
    (safetensors_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                       "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, bytes(4)), "gaps and overlaps"),
    (safetensors_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, bytes(8)), "file holds 8"),
    (safetensors_file({"a": {"dtype": "F32", "shape": [2**40], "data_offsets": [0, 2**42]}}, bytes(4)), "file holds 4"),
    (safetensors_file({"a": {"dtype": "BOOL", "shape": [1], "data_offsets": [0, 1]}}, b"\x07"), "other than 0 and 1"),
    (safetensors_file({"__metadata__": {"a": 1}}), "__metadata__"),
    (safetensors_file({"a": {"dtype": "F32", "shape": [1]}}), "not by dtype, shape and data_offsets"),
])
def test_bad_safetensors_headers_are_refused(tmp_path, content, message):
    (tmp_path / "x.safetensors").write_bytes(content)
    with pytest.raises(CheckpointError, match=message):
        load_file(tmp_path / "x.safetensors")


def reference_safetensors():
    return {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "i": np.array([1, -2], np.int64),
            "m": np.array([True, False]), "e": np.zeros((0, 3), np.float64)}


@given(st.data())
def test_a_damaged_safetensors_file_is_refused_or_loads_what_it_says(tmp_path_factory, data):
    """safetensors has no checksum: a changed byte of data changes a number. The property: refused with
    CheckpointError, or exactly what the reference implementation reads from the same bytes."""
    reference = pytest.importorskip("safetensors.numpy")
    path = tmp_path_factory.mktemp("st") / "x.safetensors"
    save_file(reference_safetensors(), path, metadata={"k": "v"})
    content = path.read_bytes()
    for change in data.draw(st.lists(mutations(len(content)), min_size=1, max_size=2)):
        content = mutate(content, change) if content else content
    path.write_bytes(content)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loaded = load_file(path)
    except CheckpointError:
        return
    expected = reference.load(content)  # it must accept whatever tinyattn accepts
    assert list(loaded) == list(expected) or set(loaded) == set(expected)
    for name, value in expected.items():
        assert np.array_equal(loaded[name].numpy(), value.astype(loaded[name].numpy().dtype), equal_nan=True)
