"""Checkpoints: a model, its optimizer and the run's metadata, saved without pickle.

A checkpoint is a directory:

    model.npz       the model's state_dict (one array per name), np.savez
    optimizer.npz   the optimizer's per-parameter arrays (moments, momentum buffers), np.savez
    meta.json       everything else: format version, model kind and config, tokenizer vocabulary,
                    step, random generator states, loss history, optimizer options, and the
                    SHA-256 of both .npz files

Saving writes a complete new directory next to the old one and then renames it into place, so a
crash mid-save never leaves a half-written checkpoint. Loading reads with `allow_pickle=False` (a
checkpoint cannot run code) and checks everything (files, hashes, names, shapes) before any model or
optimizer is touched; a problem raises CheckpointError saying which file, what is wrong, what to do.
"""

import hashlib
import json
import os
import pathlib
import shutil
import tempfile
import zipfile

import numpy as np

from . import backend
from .optim.optimizer import is_element_state

FORMAT = "tinyattn-checkpoint"
VERSION = 1
MODEL_FILE, OPTIMIZER_FILE, META_FILE = "model.npz", "optimizer.npz", "meta.json"


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt or does not fit the model (the message says what to do)."""


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _host(value):
    return backend.to_host(value.array if hasattr(value, "array") else value)


# ---------------------------------------------------------------------------------------------
# saving


def optimizer_arrays(optimizer):
    """Split an optimizer's state_dict into arrays (for the .npz) and JSON-able rest (for meta)."""
    state = optimizer.state_dict()
    arrays, scalars = {}, {}
    for index, values in state["state"].items():
        for name, value in values.items():
            if is_element_state(name, value):
                arrays[f"state.{index}.{name}"] = _host(value)
            else:
                scalars.setdefault(str(index), {})[name] = value.item() if hasattr(value, "item") else value
    groups = [{k: list(v) if isinstance(v, tuple) else v for k, v in g.items()} for g in state["param_groups"]]
    return arrays, {"type": type(optimizer).__name__, "param_groups": groups, "scalars": scalars}


def save_checkpoint(directory, model, optimizer=None, meta=None):
    """Write model, optimizer and `meta` (a JSON-able dict) to `directory`, replacing it atomically."""
    directory = pathlib.Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    meta = dict(meta or {})
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=directory.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; a checkpoint is an ordinary directory
    try:
        np.savez(tmp / MODEL_FILE, **{name: _host(t) for name, t in model.state_dict().items()})
        files = {MODEL_FILE: _sha256(tmp / MODEL_FILE)}
        if optimizer is not None:
            arrays, meta["optimizer"] = optimizer_arrays(optimizer)
            np.savez(tmp / OPTIMIZER_FILE, **arrays)
            files[OPTIMIZER_FILE] = _sha256(tmp / OPTIMIZER_FILE)
        meta.update(format=FORMAT, version=VERSION, files=files)
        (tmp / META_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        _replace_directory(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def _replace_directory(new, target):
    """Put directory `new` at `target`: two renames, so `target` is always old-complete or new-complete
    (a crash between them leaves the old one at `.NAME.old`, which load_checkpoint then uses)."""
    old = target.parent / f".{target.name}.old"
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        os.replace(target, old)
    os.replace(new, target)
    shutil.rmtree(old, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# loading and checking


class Checkpoint:
    """A loaded checkpoint: `meta` (dict), `model_state` and `optimizer_state` (name -> NumPy array)."""

    def __init__(self, path, meta, model_state, optimizer_state):
        self.path = path
        self.meta = meta
        self.model_state = model_state
        self.optimizer_state = optimizer_state

    @property
    def step(self):
        return self.meta.get("step", 0)

    def __repr__(self):
        return f"Checkpoint({str(self.path)!r}, kind={self.meta['model']['kind']!r}, step={self.step})"


def find_checkpoint(path):
    """The checkpoint directory for `path`: the directory itself, or its `ckpt` subdirectory (a run's
    output directory), or the previous version left by an interrupted save."""
    path = pathlib.Path(path)
    for candidate in (path, path / "ckpt"):
        if (candidate / META_FILE).is_file():
            return candidate
        old = candidate.parent / f".{candidate.name}.old"
        if not candidate.exists() and (old / META_FILE).is_file():
            return old
    if not path.exists():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist: train a model first (tinyattn train --out DIR)")
    raise CheckpointError(
        f"{str(path)!r} is not a checkpoint: it has no {META_FILE} (nor has {str(path / 'ckpt')!r}); "
        "pass the --out directory of a training run"
    )


def _load_npz(path, what):
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise CheckpointError(
            f"{str(path)!r} cannot be read ({what}): {error}. The checkpoint is corrupt: "
            "train again, or resume from another copy"
        ) from None


def load_checkpoint(path):
    """Read and check a checkpoint directory (or a run directory holding `ckpt/`)."""
    directory = find_checkpoint(path)
    meta_path = directory / META_FILE
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(
            f"{str(meta_path)!r} is not valid JSON ({error}): the checkpoint is corrupt; train again"
        ) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{str(meta_path)!r} is not a tinyattn checkpoint (no \"format\": \"{FORMAT}\")")
    if meta.get("version") != VERSION:
        raise CheckpointError(
            f"{str(meta_path)!r} has checkpoint format version {meta.get('version')!r}; this tinyattn "
            f"reads version {VERSION}: use the tinyattn version that wrote it"
        )
    for key, kind in (("model", dict), ("tokenizer", dict), ("files", dict), ("step", int)):
        if not isinstance(meta.get(key), kind):
            raise CheckpointError(f"{str(meta_path)!r} lacks a valid {key!r} entry: the checkpoint is corrupt")
    if not isinstance(meta["model"].get("kind"), str) or not isinstance(meta["model"].get("config"), dict):
        raise CheckpointError(f"{str(meta_path)!r}: 'model' must hold a 'kind' and a 'config'")

    states = {}
    for name, what in ((MODEL_FILE, "the model's weights"), (OPTIMIZER_FILE, "the optimizer's state")):
        expected = meta["files"].get(name)
        file = directory / name
        if expected is None:
            states[name] = None
            continue
        if not file.is_file():
            raise CheckpointError(f"{str(file)!r} ({what}) is missing: the checkpoint is incomplete")
        if _sha256(file) != expected:
            raise CheckpointError(
                f"{str(file)!r} ({what}) does not match the hash recorded in {META_FILE}: the file was "
                "changed or damaged after saving; train again or restore it"
            )
        states[name] = _load_npz(file, what)
    if states[MODEL_FILE] is None:
        raise CheckpointError(f"{str(meta_path)!r} lists no {MODEL_FILE}: the checkpoint is corrupt")
    return Checkpoint(directory, meta, states[MODEL_FILE], states[OPTIMIZER_FILE])


def check_model_state(checkpoint, model):
    """A CheckpointError unless the checkpoint's arrays have exactly the model's names and shapes."""
    own = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    saved = {name: tuple(a.shape) for name, a in checkpoint.model_state.items()}
    where = str(checkpoint.path / MODEL_FILE)
    missing, unexpected = sorted(own.keys() - saved.keys()), sorted(saved.keys() - own.keys())
    if missing or unexpected:
        raise CheckpointError(
            f"{where!r} does not fit this {type(model).__name__}: missing {missing[:5]}, unexpected "
            f"{unexpected[:5]}; the checkpoint was made for another model"
        )
    for name, shape in own.items():
        if saved[name] != shape:
            raise CheckpointError(
                f"{where!r}: {name} has shape {list(saved[name])} but the model expects {list(shape)}; "
                "the checkpoint was made with another configuration"
            )
        if not np.issubdtype(checkpoint.model_state[name].dtype, np.number) and checkpoint.model_state[name].dtype != bool:
            raise CheckpointError(f"{where!r}: {name} holds non-numeric data ({checkpoint.model_state[name].dtype})")


def load_model_state(checkpoint, model):
    """Check, then copy the checkpoint's weights into `model`."""
    check_model_state(checkpoint, model)
    model.load_state_dict(checkpoint.model_state)


def optimizer_state_dict(checkpoint, optimizer):
    """The optimizer state_dict stored in `checkpoint`, checked against `optimizer` (not yet loaded)."""
    info = checkpoint.meta.get("optimizer")
    where = str(checkpoint.path / OPTIMIZER_FILE)
    if checkpoint.optimizer_state is None or not isinstance(info, dict):
        raise CheckpointError(f"{str(checkpoint.path)!r} holds no optimizer state, so training cannot resume exactly")
    if info.get("type") != type(optimizer).__name__:
        raise CheckpointError(
            f"{where!r} holds the state of a {info.get('type')} optimizer, not of {type(optimizer).__name__}"
        )
    groups = info.get("param_groups")
    if not isinstance(groups, list) or len(groups) != len(optimizer.param_groups):
        raise CheckpointError(f"{where!r}: the parameter groups do not match this model's")
    params = {}
    for saved, own in zip(groups, optimizer.param_groups):
        if len(saved.get("params", [])) != len(own["params"]):
            raise CheckpointError(f"{where!r}: a parameter group has a different number of parameters")
        params.update(zip(saved["params"], own["params"]))
    state = {}
    for key, array in checkpoint.optimizer_state.items():
        _, index, name = key.split(".", 2)
        index = int(index)
        if index not in params or tuple(array.shape) != tuple(params[index].shape):
            raise CheckpointError(f"{where!r}: {key} does not fit the model's parameter {index}")
        state.setdefault(index, {})[name] = array
    for index, values in info.get("scalars", {}).items():
        if int(index) not in params:
            raise CheckpointError(f"{where!r}: state for parameter {index}, which the model lacks")
        state.setdefault(int(index), {}).update(values)
    return {"state": state, "param_groups": groups}
