"""Checkpoints: exact round trips, atomic saving, exact resume, and refusing corrupt or foreign files."""

import dataclasses
import json
import os

import numpy as np
import pytest

import tinyattn
from tinyattn import checkpoint as ckpt
from tinyattn.checkpoint import CheckpointError, load_checkpoint, load_model_state, save_checkpoint
from tinyattn.models import GPT, GPTConfig, build_model
from tinyattn.optim import AdamW
from tinyattn.training import TrainConfig, train

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
