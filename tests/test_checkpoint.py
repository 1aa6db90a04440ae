"""Checkpoints: exact round trips, atomic saving, exact resume, and refusing corrupt or foreign files."""

import dataclasses
import json
import os
import pathlib
import struct
import zipfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tinyattn
from tinyattn.app import checkpoint as ckpt
from tinyattn.app.checkpoint import CheckpointError, load_checkpoint, load_model_state, save_checkpoint
from tinyattn.app.models import GPT, GPTConfig, build_model
from tinyattn.optim import AdamW
from tinyattn.app.training import TrainConfig, train

TEXT = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n" * 12
TINY = dict(model="gpt", batch_size=4, block_size=16, n_layer=1, n_head=2, n_embd=16, eval_iters=2,
            warmup_steps=3, lr=3e-3)


def trained_model(seed=0):
    tinyattn.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=12, block_size=8, n_layer=1, n_head=2, n_embd=8))
    optimizer = AdamW(model.parameters(), lr=1e-2)
    x = tinyattn.randint(12, (2, 8))
    for _ in range(3):
        _, loss = model(x, x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model, optimizer, x


CHARS = "abcdefghijklmnopqrstuvwxyz"


def meta_for(model, step=3):
    config = dataclasses.asdict(model.config)
    return {"model": {"kind": model.kind, "config": config},
            "tokenizer": {"type": "char", "chars": CHARS[:config["vocab_size"]]}, "step": step}


def test_round_trip_reproduces_logits_exactly(tmp_path):
    model, optimizer, x = trained_model()
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model))
    loaded = load_checkpoint(tmp_path / "ck")
    assert loaded.step == 3
    assert sorted(os.listdir(tmp_path / "ck")) == ["manifest.json", "meta.json", "model.npz", "optimizer.npz"]
    again = build_model(loaded.meta["model"]["kind"], **loaded.meta["model"]["config"])
    load_model_state(loaded, again)
    model.eval()
    again.eval()
    assert model(x)[0].equal(again(x)[0])
    assert again.lm_head.weight is again.token_embedding.weight  # tying survives the load

    fresh = AdamW(again.parameters(), lr=5.0)
    fresh.load_state_dict(ckpt.optimizer_state_dict(loaded, fresh))
    assert fresh.param_groups[0]["lr"] == 1e-2
    for p, q in zip(model.parameters(), again.parameters()):
        a, b = optimizer.state[p], fresh.state[q]
        assert a["step"] == b["step"] == 3
        assert np.array_equal(a["exp_avg"], b["exp_avg"]) and np.array_equal(a["exp_avg_sq"], b["exp_avg_sq"])


def test_saving_replaces_the_old_checkpoint_and_leaves_no_temporary_files(tmp_path):
    model, optimizer, _ = trained_model()
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model, step=1))
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model, step=2))
    assert load_checkpoint(tmp_path / "ck").step == 2
    assert sorted(os.listdir(tmp_path)) == ["ck"]
    assert oct(os.stat(tmp_path / "ck").st_mode & 0o777) != oct(0o700)  # not mkdtemp's private mode


def test_a_failed_save_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    model, optimizer, _ = trained_model()
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model, step=1))
    before = {name: (tmp_path / "ck" / name).read_bytes() for name in os.listdir(tmp_path / "ck")}

    def broken_savez(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(ckpt.np, "savez", broken_savez)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model, step=2))
    assert {name: (tmp_path / "ck" / name).read_bytes() for name in os.listdir(tmp_path / "ck")} == before
    assert sorted(os.listdir(tmp_path)) == ["ck"]


def test_a_save_interrupted_between_the_renames_is_recovered(tmp_path):
    model, optimizer, _ = trained_model()
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model, step=4))
    os.replace(tmp_path / "ck", tmp_path / ".ck.old")  # as if the process died between the renames
    assert load_checkpoint(tmp_path / "ck").step == 4


@pytest.fixture
def saved(tmp_path):
    model, optimizer, _ = trained_model()
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model))
    return tmp_path / "ck"


def rewrite_meta(path, change, sign=False):
    """Change meta.json; with sign=True also update the manifest, as a deliberate edit would."""
    meta = json.loads((path / "meta.json").read_text())
    change(meta)
    (path / "meta.json").write_text(json.dumps(meta))
    if sign:
        resign(path)


def rewrite_manifest(path, change):
    manifest = json.loads((path / "manifest.json").read_text())
    change(manifest)
    (path / "manifest.json").write_text(json.dumps(manifest))


def resign(path):
    """Record the files' present sizes and hashes in the manifest."""
    rewrite_manifest(path, lambda m: m["files"].update({
        name: {"size": (path / name).stat().st_size, "sha256": ckpt._sha256(path / name)} for name in m["files"]
        if (path / name).exists()}))


@pytest.mark.parametrize("damage, message", [
    (lambda p: (p / "meta.json").write_text("{not json"), "meta.json': it holds 9 bytes, not the"),
    (lambda p: (p / "manifest.json").unlink(), "has meta.json but no manifest.json"),
    (lambda p: [(p / name).unlink() for name in ("manifest.json", "meta.json")], "is not a checkpoint: it has no"),
    (lambda p: (p / "model.npz").unlink(), "model.npz': it is missing"),
    (lambda p: (p / "model.npz").write_bytes((p / "model.npz").read_bytes()[:-20] + b"x" * 20),
     "does not match the hash"),
    (lambda p: rewrite_manifest(p, lambda m: m.update(version=99)), "format version 99"),
    (lambda p: rewrite_manifest(p, lambda m: m.update(format="other")), "is not a tinyattn checkpoint"),
    (lambda p: rewrite_meta(p, lambda m: m.pop("tokenizer")), "not the [0-9]+ recorded in manifest.json"),
    (lambda p: rewrite_meta(p, lambda m: m.pop("tokenizer"), sign=True), "lacks the 'tokenizer' field"),
])
def test_corrupt_checkpoints_are_refused_with_a_clear_message(saved, damage, message):
    damage(saved)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(saved)


def test_pickled_arrays_are_refused(saved):
    np.savez(saved / "model.npz", weight=np.array([{"evil": 1}], dtype=object))
    resign(saved)
    with pytest.raises(CheckpointError, match="holds object data"):
        load_checkpoint(saved)


def test_a_checkpoint_of_another_model_is_refused_and_the_model_is_untouched(saved):
    tinyattn.manual_seed(1)
    other = GPT(GPTConfig(vocab_size=12, block_size=8, n_layer=1, n_head=2, n_embd=16))
    before = {k: v.numpy().copy() for k, v in other.state_dict().items()}
    with pytest.raises(CheckpointError, match="has shape .* but the model expects"):
        load_model_state(load_checkpoint(saved), other)
    assert all(np.array_equal(before[k], v.numpy()) for k, v in other.state_dict().items())
    deeper = GPT(GPTConfig(vocab_size=12, block_size=8, n_layer=2, n_head=2, n_embd=8))
    with pytest.raises(CheckpointError, match="missing"):
        load_model_state(load_checkpoint(saved), deeper)


def test_missing_checkpoint(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "nowhere")


# --- resuming a training run ---


def run(tmp_path, name, steps, **changes):
    config = TrainConfig(**{**TINY, "steps": steps, "eval_interval": 4, **changes})
    return train(config, TEXT, out=tmp_path / name, quiet=True)


@pytest.mark.parametrize("stop_at", [5, 8])  # between evaluations, and on one
def test_resume_equals_an_uninterrupted_run(tmp_path, stop_at):
    config = TrainConfig(**{**TINY, "steps": 12, "eval_interval": 4, "dropout": 0.1})
    whole = train(config, TEXT, out=tmp_path / "whole", quiet=True)
    part = train(config, TEXT, out=tmp_path / "part", quiet=True, stop_at=stop_at)
    assert part.interrupted and part.step == stop_at
    resumed = train(config, TEXT, out=tmp_path / "part", quiet=True, resume=load_checkpoint(tmp_path / "part"))
    assert resumed.step == 12 and not resumed.interrupted
    assert resumed.losses == whole.losses  # every step's loss, bit for bit
    assert [h["val_loss"] for h in resumed.history] == [h["val_loss"] for h in whole.history]
    for (name, p), q in zip(whole.model.state_dict().items(), resumed.model.state_dict().values()):
        assert np.array_equal(p.numpy(), q.numpy()), name
    a, b = load_checkpoint(tmp_path / "whole"), load_checkpoint(tmp_path / "part")
    assert a.meta["rng"] == b.meta["rng"] and a.step == b.step == 12


def test_ctrl_c_stops_between_steps_with_a_checkpoint(tmp_path):
    import signal

    def press_ctrl_c(step, loss):
        if step == 3:
            signal.raise_signal(signal.SIGINT)

    config = TrainConfig(**{**TINY, "steps": 12, "eval_interval": 4})
    result = train(config, TEXT, out=tmp_path / "run", quiet=True, callback=press_ctrl_c)
    assert result.interrupted and result.step == 3
    assert load_checkpoint(tmp_path / "run").step == 3
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is restored


def test_training_writes_checkpoints_and_a_loss_curve(tmp_path):
    result = run(tmp_path, "run", 8)
    loaded = load_checkpoint(tmp_path / "run")  # the run directory is enough: ckpt/ is found
    assert loaded.path == tmp_path / "run" / "ckpt" and loaded.step == 8
    assert [h["step"] for h in loaded.meta["history"]] == [0, 4, 8]
    assert len(loaded.meta["losses"]) == 8 == len(result.losses)
    assert loaded.meta["tokenizer"]["chars"] == "".join(sorted(set(TEXT)))
    pytest.importorskip("matplotlib")
    assert (tmp_path / "run" / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_optimizer_state_of_a_0d_parameter_is_kept(tmp_path):
    tinyattn.manual_seed(0)
    model = build_model("bigram", vocab_size=3)
    temperature = tinyattn.nn.Parameter(tinyattn.tensor(2.0))  # moments of shape (), not numbers
    optimizer = AdamW([*model.parameters(), temperature], lr=0.1)
    x = tinyattn.tensor([[0, 1, 2]])

    def step(m, t, opt):
        opt.zero_grad()
        (m(x)[0] * t).pow(2).mean().backward()
        opt.step()

    step(model, temperature, optimizer)
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model, step=1))
    loaded = load_checkpoint(tmp_path / "ck")
    again = build_model("bigram", vocab_size=3)
    again_temperature = tinyattn.nn.Parameter(tinyattn.tensor(2.0))
    load_model_state(loaded, again)
    resumed = AdamW([*again.parameters(), again_temperature], lr=0.1)
    with tinyattn.no_grad():
        again_temperature.copy_(temperature)
    resumed.load_state_dict(ckpt.optimizer_state_dict(loaded, resumed))
    for _ in range(3):
        step(model, temperature, optimizer)
        step(again, again_temperature, resumed)
    assert again_temperature.item() == temperature.item()
    assert np.array_equal(again.token_embedding_table.weight.detach().numpy(),
                          model.token_embedding_table.weight.detach().numpy())


# --- the schema, the size limit and the manifest ---


@pytest.mark.parametrize("config", [dict(vocab_size=5, block_size=3, n_layer=2, n_head=2, n_embd=4),
                                    dict(vocab_size=7, block_size=1, n_layer=1, n_head=1, n_embd=2, bias=False)])
def test_state_shapes_agree_with_the_models(config):
    from tinyattn.app.models import state_shapes

    model = build_model("gpt", **config)
    assert list(state_shapes("gpt", **config)) == [(k, tuple(v.shape)) for k, v in model.state_dict().items()]
    assert list(state_shapes("bigram", vocab_size=3)) == [("token_embedding_table.weight", (3, 3))]


def set_config(name, value):
    return lambda m: m["model"]["config"].update({name: value})


@pytest.mark.parametrize("change, message", [
    (set_config("n_head", 3), "n_embd \\(8\\) is not divisible by n_head \\(3\\)"),
    (set_config("n_embd", 2**20), "missing \\[\\], unexpected|has shape \\[12, 8\\] but the model .* needs \\[12, 1048576\\]"),
    (set_config("n_layer", 10**6), "missing \\['blocks.1"),
    (set_config("n_layer", "2"), "model.config.n_layer must be an integer >= 1"),
    (set_config("dropout", 1.5), "model.config.dropout must be a finite number >= 0 < 1"),
    (set_config("vocab_size", 13), "the vocabulary has 12 characters .* vocab_size is 13"),
    (lambda m: m.update(step=-50), "step must be an integer >= 0"),
    (lambda m: m.update(step="3"), "step must be an integer"),
    (lambda m: m.update(step=True), "step must be an integer"),
    (lambda m: m.update(losses=None), "losses must be a list"),
    (lambda m: m.update(losses=[1.0, "x", 2.0]), "losses\\[1\\] must be a finite number"),
    (lambda m: m.update(losses=[1.0, 2.0]), "records 2 losses for 3 steps"),
    (lambda m: m.update(elapsed=-1), "elapsed must be a finite number >= 0"),
    (lambda m: m.update(extra=1), "unknown fields \\['extra'\\]"),
    (lambda m: m["tokenizer"].update(chars="aab" + CHARS[3:12]), "12 characters \\(11 different\\)"),
    (lambda m: m["model"].update(kind="rnn"), "not {'kind': 'gpt' or 'bigram'"),
    (lambda m: m["optimizer"]["param_groups"][0].update(lr=-1.0), "param_groups\\[0\\].lr must be a finite number >= 0"),
    (lambda m: m["optimizer"]["param_groups"][0].update(betas=[0.9]), "betas must be a finite number"),
    (lambda m: m["optimizer"]["param_groups"][0].update(params=[0, 0]), "once each"),
    (lambda m: m["optimizer"]["param_groups"][0].update(evil="x"), "unknown option 'evil'"),
    (lambda m: m["optimizer"]["scalars"]["0"].update(step=float("nan")), "step must be a finite number"),
])
def test_a_deliberately_edited_meta_json_is_checked_field_by_field(saved, change, message):
    """Even with the manifest updated to match (a deliberate edit), meta.json must make sense."""
    rewrite_meta(saved, change, sign=True)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(saved)


def test_an_edited_meta_json_is_refused_by_its_hash(saved):
    original = (saved / "meta.json").read_text()
    assert '"n_head": 2' in original
    (saved / "meta.json").write_text(original.replace('"n_head": 2', '"n_head": 8'))  # 8 heads on 2-head weights
    with pytest.raises(CheckpointError, match="meta.json': it does not match the hash recorded in manifest.json"):
        load_checkpoint(saved)
    rewrite_meta(saved, set_config("n_head", 1))
    with pytest.raises(CheckpointError, match="meta.json': it holds .* not the .* recorded in manifest.json"):
        load_checkpoint(saved)


def replace_npz(path, arrays=None, raw=None, compress=False):
    """Rewrite an .npz with other arrays (or raw members), then update the manifest."""
    if arrays is not None:
        (np.savez_compressed if compress else np.savez)(path, **arrays)
    if raw is not None:
        with zipfile.ZipFile(path, "w") as archive:
            for name, data in raw.items():
                archive.writestr(name, data)
    resign(path.parent)


def npy_bytes(header, data=b""):
    text = repr(header).encode() + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + data


def model_arrays(path):
    with np.load(path / "model.npz") as archive:
        return {k: archive[k] for k in archive.files}


@pytest.mark.parametrize("damage, message", [
    (lambda p: replace_npz(p / "model.npz", raw={"w.txt": b"hello"}), "holds 'w.txt', which is not a .npy array"),
    (lambda p: replace_npz(p / "optimizer.npz", {"state0exp_avg": np.zeros(3, np.float32)}),
     "holds 'state0exp_avg', not an array named state.<parameter>"),
    (lambda p: replace_npz(p / "optimizer.npz", {"state.99.exp_avg": np.zeros(3, np.float32)}),
     "belongs to parameter 99"),
    (lambda p: replace_npz(p / "model.npz", {k: v.astype(np.complex64) for k, v in model_arrays(p).items()}),
     "holds complex64 data"),
    (lambda p: replace_npz(p / "model.npz", {k: v.astype(np.int64) for k, v in model_arrays(p).items()}),
     "holds int64 numbers, not floating point weights"),
    (lambda p: replace_npz(p / "model.npz", model_arrays(p), compress=True), "is compressed"),
    (lambda p: replace_npz(p / "model.npz", raw={"w.npy": npy_bytes(
        {"descr": "<f4", "fortran_order": False, "shape": (2**40,)}, bytes(16))}),
     "declares shape \\[1099511627776\\]"),
    (lambda p: replace_npz(p / "model.npz", {"token_embedding.weight": np.zeros((12, 8), np.float32)}),
     "missing \\[.position_embedding.weight.\\]"),
])
def test_damaged_arrays_are_refused_before_they_are_read(saved, damage, message):
    damage(saved)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(saved)


def test_big_endian_and_fortran_order_arrays_load_as_written(saved):
    arrays = model_arrays(saved)
    replace_npz(saved / "model.npz", {k: np.asfortranarray(v).astype(v.dtype.newbyteorder(">"))
                                      for k, v in arrays.items()})
    loaded = load_checkpoint(saved)
    for key, value in arrays.items():
        assert np.array_equal(loaded.model_state[key], value) and loaded.model_state[key].dtype == np.float32


def test_memory_bombs_are_refused_before_memory_is_taken(saved):
    import tracemalloc

    rewrite_meta(saved, set_config("n_embd", 2**20), sign=True)  # would build an 800 MB model first
    replace_npz(saved / "model.npz", raw={"token_embedding.weight.npy": npy_bytes(
        {"descr": "<f4", "fortran_order": False, "shape": (2**40,)})})
    tracemalloc.start()
    with pytest.raises(CheckpointError):
        load_checkpoint(saved)
    assert tracemalloc.get_traced_memory()[1] < 20 * 2**20
    tracemalloc.stop()


def test_a_huge_meta_json_is_not_read(saved):
    with open(saved / "meta.json", "r+b") as f:  # 1.5 GB, sparse: no disk is used
        f.truncate(1_500_000_000)
    with pytest.raises(CheckpointError, match="holds 1500000000 bytes, not the"):
        load_checkpoint(saved)
    rewrite_manifest(saved, lambda m: m["files"]["meta.json"].update(size=1_500_000_000))
    with pytest.raises(CheckpointError, match="more than the load limit of 256.0 MiB allows"):
        load_checkpoint(saved)


def test_the_size_limit_applies_and_can_be_raised(saved):
    with pytest.raises(CheckpointError, match="model.npz would take .* more than the load limit of 1000 bytes"):
        load_checkpoint(saved, max_bytes=1000)
    assert load_checkpoint(saved, max_bytes=10**6).step == 3


def test_sampling_needs_no_optimizer_state(saved):
    (saved / "optimizer.npz").unlink()
    loaded = load_checkpoint(saved, optimizer=False)
    assert loaded.optimizer_state is None and loaded.step == 3
    with pytest.raises(CheckpointError, match="optimizer.npz': it is missing"):
        load_checkpoint(saved)


# --- crashes ---


def test_files_and_directories_are_flushed_before_the_renames(tmp_path, monkeypatch):
    model, optimizer, _ = trained_model()
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model, step=1))
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(ckpt.os, "fsync", lambda fd: (events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"))),
                                                      real_fsync(fd)))
    monkeypatch.setattr(ckpt.os, "replace", lambda a, b: (events.append(("replace", str(a), str(b))),
                                                          real_replace(a, b)))
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model, step=2))
    first_rename = next(i for i, e in enumerate(events) if e[0] == "replace")
    flushed = {pathlib.PurePath(e[1]).name for e in events[:first_rename] if e[0] == "fsync"}
    assert {"model.npz", "optimizer.npz", "meta.json", "manifest.json"} < flushed  # and the directory
    assert any(name.startswith(".ck.tmp-") for name in flushed)
    assert [e[0] for e in events[first_rename:]] == ["replace", "fsync", "replace", "fsync"]
    assert sorted(os.listdir(tmp_path)) == ["ck"]


def test_a_second_kill_after_a_recovered_one_still_leaves_a_checkpoint(tmp_path, monkeypatch):
    """Kill 1 between the renames leaves only `.ck.old` (and the new, complete temporary); the resumed
    run's next save, killed before its rename, must not have removed `.ck.old`."""
    model, optimizer, _ = trained_model()
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model, step=4))
    os.replace(tmp_path / "ck", tmp_path / ".ck.old")  # kill 1, between the renames
    (tmp_path / ".ck.tmp-stale").mkdir()  # a temporary that a kill left half-written
    (tmp_path / ".ck.tmp-stale" / "model.npz").write_bytes(b"half")
    assert load_checkpoint(tmp_path / "ck").step == 4

    def killed(a, b):
        raise KeyboardInterrupt("killed")  # kill 2, at the rename of the next save

    monkeypatch.setattr(ckpt.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model, step=5))
    monkeypatch.undo()
    assert (tmp_path / ".ck.old" / "manifest.json").exists()
    assert load_checkpoint(tmp_path / "ck").step == 4
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model, step=6))
    assert load_checkpoint(tmp_path / "ck").step == 6
    assert sorted(os.listdir(tmp_path)) == ["ck"]  # leftovers cleaned once the new one is in place


def test_the_newest_complete_checkpoint_is_loaded_after_a_crash(tmp_path):
    model, optimizer, _ = trained_model()
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model, step=4))
    save_checkpoint(tmp_path / "new", model, optimizer, meta_for(model, step=8))
    os.replace(tmp_path / "new", tmp_path / ".ck.tmp-x1")  # complete, but killed before its rename
    assert load_checkpoint(tmp_path / "ck").step == 8
    (tmp_path / ".ck.tmp-x1" / "meta.json").write_text("{}")  # a damaged candidate is passed over
    assert load_checkpoint(tmp_path / "ck").step == 4


# --- any damage: refused, or exactly what was saved ---


def saved_checkpoint(tmp_path):
    model, optimizer, _ = trained_model()
    save_checkpoint(tmp_path / "ck", model, optimizer, meta_for(model))
    return tmp_path / "ck", {k: v.numpy().copy() for k, v in model.state_dict().items()}


JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=5),
                        st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(),
                                                                             max_size=2))


def json_paths(value, prefix=()):
    """Every path to a value inside a JSON document."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from json_paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            yield from json_paths(v, prefix + (i,))


def file_damage():
    names = st.sampled_from(["meta.json", "manifest.json", "model.npz", "optimizer.npz"])
    return st.one_of(
        st.tuples(st.just("bytes"), names, st.integers(0, 10**6), st.integers(1, 255)),
        st.tuples(st.just("truncate"), names, st.integers(0, 10**6), st.just(0)),
        st.tuples(st.just("json"), st.sampled_from(["meta.json", "manifest.json"]), st.integers(0, 10**6), JSON_VALUES,
                  st.booleans()),
        st.tuples(st.just("member"), st.sampled_from(["model.npz", "optimizer.npz"]), st.integers(0, 10**6),
                  st.sampled_from(["remove", "rename", "replace"])),
    )


def damage_checkpoint(path, change):
    kind, name, where = change[:3]
    file = path / name
    data = file.read_bytes()
    if not data:
        return
    if kind == "bytes":
        at = where % len(data)
        file.write_bytes(data[:at] + bytes([data[at] ^ change[3]]) + data[at + 1:])
    elif kind == "truncate":
        file.write_bytes(data[:where % len(data)])
    elif kind == "json":
        try:
            document = json.loads(data)
        except ValueError:  # an earlier change broke it: nothing to edit
            return
        paths = [p for p in json_paths(document) if p]
        target = paths[where % len(paths)]
        parent = document
        for key in target[:-1]:
            parent = parent[key]
        parent[target[-1]] = change[3]
        file.write_text(json.dumps(document))
        if change[4] and name == "meta.json":
            try:
                resign(path)
            except (ValueError, TypeError, KeyError, AttributeError):  # an earlier change broke the manifest
                pass
    else:
        try:
            with zipfile.ZipFile(file) as archive:
                members = {info.filename: archive.read(info) for info in archive.infolist()}
        except (zipfile.BadZipFile, ValueError, OSError):  # an earlier change broke it
            return
        if not members:
            return
        victim = sorted(members)[where % len(members)]
        if change[3] == "remove":
            del members[victim]
        elif change[3] == "rename":
            members["renamed.npy"] = members.pop(victim)
        else:
            members[victim] = members[sorted(members)[(where + 1) % len(members)]]
        try:
            replace_npz(file, raw=members)
        except (ValueError, TypeError, KeyError, AttributeError):  # the npz is rewritten; the manifest is broken
            pass


@given(st.lists(file_damage(), min_size=1, max_size=2))
def test_a_damaged_checkpoint_is_refused_or_loads_exactly(tmp_path_factory, changes):
    """Flipped or cut bytes, JSON fields changed (with or without updating the manifest), npz members
    removed, renamed or replaced: refused with CheckpointError, or loaded to exactly what the files say,
    a model that builds and takes its weights — never another exception."""
    path, weights = saved_checkpoint(tmp_path_factory.mktemp("ck"))
    for change in changes:
        damage_checkpoint(path, change)
    try:
        loaded = load_checkpoint(path)
        model = build_model(loaded.meta["model"]["kind"], **loaded.meta["model"]["config"])
        load_model_state(loaded, model)
        optimizer = AdamW(model.parameters(), lr=0.1)
        optimizer.load_state_dict(ckpt.optimizer_state_dict(loaded, optimizer))
    except CheckpointError:
        return
    assert loaded.meta == json.loads((path / "meta.json").read_text())
    arrays = model_arrays(path)
    assert set(loaded.model_state) == set(arrays)
    for key, value in loaded.model_state.items():
        assert np.array_equal(value, arrays[key])
