"""Checkpoints of `tinyattn train`: a model, its optimizer and the run's metadata, saved without pickle.

A checkpoint is a directory:

    model.npz       the model's state_dict (one array per name), np.savez (stored, uncompressed)
    optimizer.npz   the optimizer's per-parameter arrays (moments, momentum buffers), np.savez
    meta.json       everything else: model kind and config, tokenizer vocabulary, step, random
                    generator states, loss history, optimizer options
    manifest.json   written last: format, version, and the size and SHA-256 of each file above

Saving writes a complete new directory beside the old one, flushes every file and the directory to
disk (fsync), then renames it into place. The previous checkpoint is removed only once its successor
is in place and durable; what interrupted saves left behind is cleaned up then. So a crash at any
moment leaves a complete checkpoint: the directory, or `.NAME.old`, or a complete `.NAME.tmp-*`
(loading takes the newest complete one).

Loading reads nothing that is not checked first, through the checks every format shares
(serialization/checks.py): the manifest, each file's size and hash, every field of meta.json against
its schema (types, ranges, agreement between fields), and the shapes in the .npy headers against the
model configuration and the size limit, all before any array is read or any model is built. A
problem raises CheckpointError saying which file, what is wrong and what to do.
"""

import dataclasses
import glob
import hashlib
import itertools
import json
import math
import os
import pathlib
import shutil
import tempfile

import numpy as np

from .. import backend, random
from ..errors import CheckpointError
from ..optim.optimizer import is_element_state
from ..serialization import checks
from ..serialization.checks import expect

FORMAT = "tinyattn-checkpoint"
VERSION = 2
MODEL_FILE, OPTIMIZER_FILE, META_FILE, MANIFEST_FILE = "model.npz", "optimizer.npz", "meta.json", "manifest.json"
MANIFEST_LIMIT = 1 << 16  # bytes: the manifest lists four files
ELEMENT_STATES = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer")


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


def _write_durably(path, write):
    """Create `path` with `write(file)`, then flush it to disk."""
    with open(path, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())


def _fsync_directory(path):
    """Flush a directory's entries (new files, renames) to disk; Windows cannot open a directory for it."""
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(directory, model, optimizer=None, meta=None):
    """Write model, optimizer and `meta` (a JSON-able dict) to `directory`, replacing it atomically."""
    directory = pathlib.Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    meta = {k: v for k, v in (meta or {}).items() if k not in ("format", "version", "files")}
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=directory.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; a checkpoint is an ordinary directory
    try:
        state = {name: _host(t) for name, t in model.state_dict().items()}
        _write_durably(tmp / MODEL_FILE, lambda f: np.savez(f, **state))
        files = [MODEL_FILE]
        if optimizer is not None:
            arrays, meta["optimizer"] = optimizer_arrays(optimizer)
            _write_durably(tmp / OPTIMIZER_FILE, lambda f: np.savez(f, **arrays))
            files.append(OPTIMIZER_FILE)
        text = (json.dumps(meta, indent=1, allow_nan=False) + "\n").encode("utf-8")
        _write_durably(tmp / META_FILE, lambda f: f.write(text))
        files.append(META_FILE)
        manifest = {"format": FORMAT, "version": VERSION,
                    "files": {name: {"size": (tmp / name).stat().st_size, "sha256": _sha256(tmp / name)}
                              for name in files}}
        _write_durably(tmp / MANIFEST_FILE, lambda f: f.write((json.dumps(manifest, indent=1) + "\n").encode()))
        _fsync_directory(tmp)
        _replace_directory(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def _leftovers(directory):
    """What interrupted saves of `directory` may have left: `.NAME.old` and `.NAME.tmp-*` directories."""
    old = directory.parent / f".{directory.name}.old"
    temps = list(directory.parent.glob(f".{glob.escape(directory.name)}.tmp-*"))
    return old, temps


def _replace_directory(new, target):
    """Put the complete, flushed directory `new` at `target`. Every directory named `target` is
    complete (it only ever gets there by a rename), so the previous one may become `.NAME.old`; that
    and any leftovers are removed only after `new` is in place and the rename is on disk."""
    old, _ = _leftovers(target)
    if target.exists():
        if old.exists():
            shutil.rmtree(old)  # safe: `target` is the newer complete checkpoint
        os.replace(target, old)
        _fsync_directory(target.parent)
    os.replace(new, target)
    _fsync_directory(target.parent)
    old, temps = _leftovers(target)
    for leftover in [old, *temps]:
        shutil.rmtree(leftover, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# loading and checking


class Checkpoint:
    """A loaded checkpoint: `meta` (dict), `model_state` and `optimizer_state` (name -> NumPy array;
    `optimizer_state` is None when it was not asked for or not saved)."""

    def __init__(self, path, meta, model_state, optimizer_state):
        self.path = path
        self.meta = meta
        self.model_state = model_state
        self.optimizer_state = optimizer_state

    @property
    def step(self):
        """The training step the checkpoint was saved at (0 if none is recorded)."""
        return self.meta.get("step", 0)

    def __repr__(self):
        return f"Checkpoint({str(self.path)!r}, kind={self.meta['model']['kind']!r}, step={self.step})"


def _candidates(directory):
    """The directories that may hold `directory`'s checkpoint, newest first: complete temporaries of an
    interrupted save (their manifest is written last), the directory itself, its previous version."""
    old, temps = _leftovers(directory)
    temps = [t for t in temps if (t / MANIFEST_FILE).is_file()]
    temps.sort(key=lambda t: (t / MANIFEST_FILE).stat().st_mtime_ns, reverse=True)
    return [c for c in [*temps, directory, old] if (c / MANIFEST_FILE).is_file() or (c / META_FILE).is_file()]


def has_checkpoint(directory):
    """Whether `directory` (or what an interrupted save of it left) holds a checkpoint."""
    return bool(_candidates(pathlib.Path(directory)))


def find_checkpoint(path):
    """The checkpoint directory for `path`: the directory itself, or its `ckpt` subdirectory (a run's
    output directory); with the candidate directories that may hold it, newest first."""
    path = pathlib.Path(path)
    for directory in (path, path / "ckpt"):
        candidates = _candidates(directory)
        if candidates:
            return directory, candidates
    if not path.exists():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist: train a model first (tinyattn train --out DIR)")
    if not path.is_dir():
        if _candidates(path.parent):  # one of a checkpoint's files
            raise CheckpointError(f"{str(path)!r} is a file of a checkpoint: pass the checkpoint, its directory "
                                  f"{str(path.parent)!r}")
        raise CheckpointError(f"{str(path)!r} is a file, not a checkpoint: a checkpoint is the directory that "
                              "`tinyattn train --out DIR` writes (pass DIR, or DIR/ckpt)")
    raise CheckpointError(
        f"{str(path)!r} is not a checkpoint: it has no {MANIFEST_FILE} (nor has {str(path / 'ckpt')!r}); "
        "pass the --out directory of a training run"
    )


def load_checkpoint(path, *, optimizer=True, max_bytes=None):
    """Read and check a checkpoint directory (or a run directory holding `ckpt/`).

    optimizer=False skips optimizer.npz (sampling does not need it: it may be missing).
    max_bytes: the size limit of this load (default tinyattn.serialization.get_max_load_bytes()).
    After an interrupted save, the newest complete checkpoint is the one loaded.
    """
    directory, candidates = find_checkpoint(path)
    errors = {}
    for candidate in candidates:
        try:
            return _load_directory(candidate, optimizer, max_bytes)
        except CheckpointError as error:
            errors[candidate] = error
    raise errors.get(directory, next(iter(errors.values())))


_RESTORE = "the checkpoint was changed or damaged after saving: restore it from a copy, or train again"


def _load_directory(directory, with_optimizer, max_bytes):
    budget = checks.Budget(repr(str(directory)), max_bytes)
    files = _read_manifest(directory)["files"]
    where_meta = repr(str(directory / META_FILE))
    for name in (META_FILE, MODEL_FILE, OPTIMIZER_FILE):
        if name in files and (name != OPTIMIZER_FILE or with_optimizer):
            _check_file(directory, name, files[name], budget)
    meta = checks.read_json_file(directory / META_FILE, where_meta, budget, files[META_FILE]["size"])
    check_meta(meta, where_meta)
    model_state = _read_npz(directory / MODEL_FILE, budget, lambda headers, where: _check_model_arrays(
        headers, where, meta["model"]))
    optimizer_state = None
    if with_optimizer and OPTIMIZER_FILE in files:
        if "optimizer" not in meta:
            checks.refuse(where_meta, f"it has no 'optimizer' entry although {OPTIMIZER_FILE} exists", _RESTORE)
        optimizer_state = _read_npz(directory / OPTIMIZER_FILE, budget, lambda headers, where: _check_optimizer_arrays(
            headers, where, meta["optimizer"]))
    return Checkpoint(directory, meta, model_state, optimizer_state)


def _read_manifest(directory):
    where = repr(str(directory / MANIFEST_FILE))
    if not (directory / MANIFEST_FILE).is_file():
        checks.refuse(repr(str(directory)), f"it has {META_FILE} but no {MANIFEST_FILE}: it was written by an "
                      "older tinyattn (checkpoint format 1), or its save did not finish", "train again")
    small = checks.Budget(where, MANIFEST_LIMIT * 16)  # the manifest lists four files: 64 KiB of text at most
    manifest = checks.read_json_file(directory / MANIFEST_FILE, where, small)
    expect(manifest, "dict", where, "the manifest")
    if manifest.get("format") != FORMAT:
        checks.refuse(where, f"it is not a tinyattn checkpoint manifest (no \"format\": \"{FORMAT}\")", _RESTORE)
    if manifest.get("version") != VERSION:
        checks.refuse(where, f"it has checkpoint format version {checks.short(manifest.get('version'))}; this "
                             f"tinyattn reads version {VERSION}", "use the tinyattn version that wrote it")
    files = expect(manifest.get("files"), "dict", where, "files")
    if set(manifest) != {"format", "version", "files"} or not {META_FILE, MODEL_FILE} <= set(files) or \
            not set(files) <= {META_FILE, MODEL_FILE, OPTIMIZER_FILE}:
        checks.refuse(where, f"it lists {sorted(files)}, not {META_FILE}, {MODEL_FILE} and maybe {OPTIMIZER_FILE}",
                      _RESTORE)
    for name, entry in files.items():
        expect(entry, "dict", where, name)
        if set(entry) != {"size", "sha256"}:
            checks.refuse(where, f"{name} is described by {sorted(entry)}, not by size and sha256", _RESTORE)
        expect(entry["size"], "int", where, f"{name}'s size", low=0)
        digest = expect(entry["sha256"], "str", where, f"{name}'s sha256")
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            checks.refuse(where, f"{name}'s sha256 is not 64 hexadecimal digits", _RESTORE)
    return manifest


def _check_file(directory, name, entry, budget):
    """A listed file: within the limits by its listed size, then present with that size and hash."""
    path = directory / name
    where = repr(str(path))
    if name == META_FILE:
        budget.check_text(entry["size"], META_FILE)
    else:
        budget.check(entry["size"], name)
    if not path.is_file():
        checks.refuse(where, "it is missing", "the checkpoint is incomplete: restore it from a copy, or train again")
    if path.stat().st_size != entry["size"]:
        checks.refuse(where, f"it holds {path.stat().st_size} bytes, not the {entry['size']} recorded in "
                             f"{MANIFEST_FILE}", _RESTORE)
    if _sha256(path) != entry["sha256"]:
        checks.refuse(where, f"it does not match the hash recorded in {MANIFEST_FILE}", _RESTORE)


def _read_npz(path, budget, check_arrays):
    """The arrays of an .npz file. Every member's name and .npy header are read first and checked (by
    `check_arrays(headers, where)`, and their total against the size limit), then the arrays."""
    where = repr(str(path))
    with open(path, "rb") as f:
        archive = checks.open_zip(f, where, budget)
        headers = {}
        for name in archive.namelist():
            if not name.endswith(".npy"):
                checks.refuse(where, f"it holds {name!r}, which is not a .npy array", _RESTORE)
            headers[name[:-4]] = checks.npy_header(archive, name, where)
        check_arrays(headers, where)
        budget.take(sum(math.prod(shape) * dtype.itemsize for shape, dtype, _, _ in headers.values()),
                    f"the arrays of {path.name}")
        return {key: checks.read_npy(archive, f"{key}.npy", where, None, header) for key, header in headers.items()}


def _check_model_arrays(headers, where, model):
    """The arrays are exactly the model's in meta.json: names, shapes, floating point. (The model's names
    are listed only as far as the file's: a config claiming a million layers is refused at once.)"""
    from .models import state_shapes

    expected = dict(itertools.islice(state_shapes(model["kind"], **model["config"]), len(headers) + 1))
    if set(expected) != set(headers):
        missing, extra = sorted(set(expected) - set(headers)), sorted(set(headers) - set(expected))
        checks.refuse(where, f"its arrays do not fit the model described in {META_FILE}: missing {missing[:5]}, "
                             f"unexpected {extra[:5]}", _RESTORE)
    for key, (shape, dtype, _, _) in headers.items():
        if shape != expected[key]:
            checks.refuse(where, f"{key} has shape {list(shape)} but the model in {META_FILE} needs "
                                 f"{list(expected[key])}", _RESTORE)
        if dtype.kind != "f":
            checks.refuse(where, f"{key} holds {dtype} numbers, not floating point weights", _RESTORE)


def _check_optimizer_arrays(headers, where, info):
    params = {i for group in info["param_groups"] for i in group["params"]}
    for key, (shape, dtype, _, _) in headers.items():
        parts = key.split(".")
        if len(parts) != 3 or parts[0] != "state" or not parts[1].isdigit() or parts[2] not in ELEMENT_STATES:
            checks.refuse(where, f"it holds {key!r}, not an array named state.<parameter>.<"
                                 f"{'|'.join(ELEMENT_STATES)}>", _RESTORE)
        if int(parts[1]) not in params:
            checks.refuse(where, f"{key} belongs to parameter {parts[1]}, which no parameter group in {META_FILE} "
                                 "holds", _RESTORE)
        if dtype.kind != "f":
            checks.refuse(where, f"{key} holds {dtype} numbers, not floating point ones", _RESTORE)


# ---------------------------------------------------------------------------------------------
# the schema of meta.json


_GENERATOR_STATE = {"key", "pos", "seed", "has_cached_normal", "cached_normal"}
_OPTIMIZER_OPTIONS = {  # option -> check of its value
    "lr": lambda v, w, f: expect(v, "number", w, f, low=0),
    "initial_lr": lambda v, w, f: expect(v, "number", w, f, low=0),
    "weight_decay": lambda v, w, f: expect(v, "number", w, f, low=0),
    "eps": lambda v, w, f: expect(v, "number", w, f, low=0),
    "momentum": lambda v, w, f: expect(v, "number", w, f, low=0),
    "dampening": lambda v, w, f: expect(v, "number", w, f),
    "betas": lambda v, w, f: [expect(b, "number", w, f, low=0, below=1)
                              for b in (v if isinstance(v, list) and len(v) == 2 else [None])],
    **{flag: lambda v, w, f: expect(v, "bool", w, f)
       for flag in ("amsgrad", "maximize", "nesterov", "capturable", "differentiable", "decoupled_weight_decay")},
    **{flag: lambda v, w, f: v is None or expect(v, "bool", w, f) for flag in ("foreach", "fused")},
}


def check_meta(meta, where):
    """Refuse a meta.json whose fields are of the wrong type, out of range or disagree with each other.

    Required: model (kind and config), tokenizer, step. The rest (train, data, rng, history, losses,
    elapsed, optimizer) is checked when present; `tinyattn train --resume` needs all of it.
    """
    expect(meta, "dict", where, "meta.json")
    known = {"model", "tokenizer", "step", "train", "data", "rng", "history", "losses", "elapsed", "optimizer"}
    unknown = sorted(set(meta) - known)
    if unknown:
        checks.refuse(where, f"it has unknown fields {unknown[:5]}", _RESTORE)
    for key in ("model", "tokenizer", "step"):
        if key not in meta:
            checks.refuse(where, f"it lacks the {key!r} field", _RESTORE)
    config = _check_model(meta["model"], where)
    tokenizer = expect(meta["tokenizer"], "dict", where, "tokenizer")
    if set(tokenizer) != {"type", "chars"} or tokenizer["type"] != "char":
        checks.refuse(where, f"tokenizer is {checks.short(tokenizer)}, not {{'type': 'char', 'chars': ...}}", _RESTORE)
    chars = expect(tokenizer["chars"], "str", where, "tokenizer.chars")
    if len(set(chars)) != len(chars) or len(chars) != config["vocab_size"]:
        checks.refuse(where, f"the vocabulary has {len(chars)} characters ({len(set(chars))} different) but the "
                             f"model's vocab_size is {config['vocab_size']}", _RESTORE)
    step = expect(meta["step"], "int", where, "step", low=0, below=2**53)
    if "train" in meta:
        _check_train(meta["train"], meta["model"], where)
    if "data" in meta:
        data = expect(meta["data"], "dict", where, "data")
        if set(data) != {"source", "sha256", "chars"}:
            checks.refuse(where, f"data has fields {sorted(data)}, not source, sha256 and chars", _RESTORE)
        if data["source"] is not None:
            expect(data["source"], "str", where, "data.source")
        expect(data["sha256"], "str", where, "data.sha256")
        expect(data["chars"], "int", where, "data.chars", low=0)
    if "rng" in meta:
        rng = expect(meta["rng"], "dict", where, "rng")
        if set(rng) != {"batches", "evals", "default"}:
            checks.refuse(where, f"rng holds {sorted(rng)}, not batches, evals and default", _RESTORE)
        for name, state in rng.items():
            _check_generator_state(state, where, f"rng.{name}")
    if "history" in meta:
        for i, entry in enumerate(expect(meta["history"], "list", where, "history")):
            field = f"history[{i}]"
            expect(entry, "dict", where, field)
            if set(entry) != {"step", "train_loss", "val_loss", "lr", "elapsed"}:
                checks.refuse(where, f"{field} has fields {sorted(entry)}", _RESTORE)
            expect(entry["step"], "int", where, f"{field}.step", low=0, high=step)
            for name in ("train_loss", "val_loss"):
                expect(entry[name], "number", where, f"{field}.{name}")
            for name in ("lr", "elapsed"):
                expect(entry[name], "number", where, f"{field}.{name}", low=0)
    if "losses" in meta:
        losses = expect(meta["losses"], "list", where, "losses")
        for i, loss in enumerate(losses):
            expect(loss, "number", where, f"losses[{i}]")
        if len(losses) != step:
            checks.refuse(where, f"it records {len(losses)} losses for {step} steps", _RESTORE)
    if "elapsed" in meta:
        expect(meta["elapsed"], "number", where, "elapsed", low=0)
    if "optimizer" in meta:
        _check_optimizer(meta["optimizer"], where)


def _check_model(model, where):
    from .models import BigramConfig, GPTConfig

    expect(model, "dict", where, "model")
    if set(model) != {"kind", "config"} or model["kind"] not in ("gpt", "bigram"):
        checks.refuse(where, f"model is {checks.short(model)}, not {{'kind': 'gpt' or 'bigram', 'config': ...}}",
                      _RESTORE)
    config = expect(model["config"], "dict", where, "model.config")
    fields = dataclasses.fields(GPTConfig if model["kind"] == "gpt" else BigramConfig)
    if set(config) != {f.name for f in fields}:
        checks.refuse(where, f"model.config has fields {sorted(config)}, not {sorted(f.name for f in fields)}",
                      _RESTORE)
    for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
        if name in config:
            expect(config[name], "int", where, f"model.config.{name}", low=1, below=2**31)
    if "dropout" in config:
        expect(config["dropout"], "number", where, "model.config.dropout", low=0, below=1)
    if "bias" in config:
        expect(config["bias"], "bool", where, "model.config.bias")
    if model["kind"] == "gpt" and config["n_embd"] % config["n_head"]:
        checks.refuse(where, f"model.config.n_embd ({config['n_embd']}) is not divisible by n_head "
                             f"({config['n_head']})", _RESTORE)
    return config


def _check_train(train, model, where):
    from .train_config import TrainConfig

    expect(train, "dict", where, "train")
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    if set(train) != set(fields):
        checks.refuse(where, f"train has fields {sorted(train)[:8]}..., not TrainConfig's", _RESTORE)
    for name, value in train.items():
        expect(value, {int: "int", float: "number", str: "str"}[type(fields[name].default)], where, f"train.{name}")
    try:
        TrainConfig(**train)
    except (TypeError, ValueError) as error:
        checks.refuse(where, f"the training configuration is invalid: {error}", _RESTORE)
    if train["model"] != model["kind"] or (model["kind"] == "gpt" and any(
            train[name] != model["config"][name] for name in ("block_size", "n_layer", "n_head", "n_embd", "dropout"))):
        checks.refuse(where, "the training configuration (train) and the model's (model.config) disagree", _RESTORE)


def generator_state_to_json(generator):
    """A generator's state for meta.json: its state in PyTorch's layout (the 5056 bytes of
    get_state) as a hex string."""
    return generator.state_bytes().tobytes().hex()


def restore_generator_state(generator, saved):
    """Restore a generator from meta.json: the hex string of its state bytes, or the dict that
    checkpoints held before (tinyattn's earlier get_state). Raises ValueError for a bad state."""
    try:
        if isinstance(saved, str):
            generator.set_state_bytes(bytes.fromhex(saved))
        else:
            generator.set_state(saved)
    except RuntimeError as error:  # (set_state_bytes's errors are PyTorch's RuntimeErrors)
        raise ValueError(str(error)) from None


def _check_generator_state(state, where, field):
    if isinstance(state, str):  # PyTorch's state bytes, in hex
        if len(state) != 2 * random.STATE_SIZE or not all(c in "0123456789abcdef" for c in state):
            checks.refuse(where, f"{field} is not the {random.STATE_SIZE} bytes of a generator state in hex",
                          _RESTORE)
        return
    expect(state, "dict", where, field)  # the form checkpoints held before: tinyattn's earlier get_state
    if set(state) != _GENERATOR_STATE:
        checks.refuse(where, f"{field} has fields {sorted(state)}, not {sorted(_GENERATOR_STATE)}", _RESTORE)
    key = expect(state["key"], "list", where, f"{field}.key")
    if len(key) != 624 or not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k < 2**32 for k in key):
        checks.refuse(where, f"{field}.key is not 624 integers in [0, 2**32)", _RESTORE)
    expect(state["pos"], "int", where, f"{field}.pos", low=0, high=624)
    expect(state["seed"], "int", where, f"{field}.seed", low=0, below=2**64)
    expect(state["has_cached_normal"], "bool", where, f"{field}.has_cached_normal")
    expect(state["cached_normal"], "number", where, f"{field}.cached_normal")


def _check_optimizer(info, where):
    expect(info, "dict", where, "optimizer")
    if set(info) != {"type", "param_groups", "scalars"} or info["type"] not in ("SGD", "Adam", "AdamW"):
        checks.refuse(where, f"optimizer is {checks.short(info)}, not an SGD, Adam or AdamW description", _RESTORE)
    seen = []
    for g, group in enumerate(expect(info["param_groups"], "list", where, "optimizer.param_groups")):
        field = f"optimizer.param_groups[{g}]"
        expect(group, "dict", where, field)
        for name, value in group.items():
            if name == "params":
                for p in expect(value, "list", where, f"{field}.params"):
                    seen.append(expect(p, "int", where, f"{field}.params", low=0))
            elif name in _OPTIMIZER_OPTIONS:
                _OPTIMIZER_OPTIONS[name](value, where, f"{field}.{name}")
            else:
                checks.refuse(where, f"{field} has an unknown option {name!r}", _RESTORE)
        if "params" not in group:
            checks.refuse(where, f"{field} lists no params", _RESTORE)
    if sorted(seen) != list(range(len(seen))):
        checks.refuse(where, "the parameter groups do not number the parameters 0, 1, 2, ... once each", _RESTORE)
    for index, values in expect(info["scalars"], "dict", where, "optimizer.scalars").items():
        if not index.isdigit() or int(index) >= len(seen):
            checks.refuse(where, f"optimizer.scalars names parameter {index!r}, which no group holds", _RESTORE)
        expect(values, "dict", where, f"optimizer.scalars.{index}")
        if set(values) != {"step"}:
            checks.refuse(where, f"optimizer.scalars.{index} holds {sorted(values)}, not step", _RESTORE)
        expect(values["step"], "number", where, f"optimizer.scalars.{index}.step", low=0)


# ---------------------------------------------------------------------------------------------
# into a model and an optimizer


def check_model_state(checkpoint, model):
    """A CheckpointError unless the checkpoint's arrays have exactly the model's names, shapes and dtypes."""
    own = {name: t for name, t in model.state_dict().items()}
    saved = checkpoint.model_state
    where = str(checkpoint.path / MODEL_FILE)
    missing, unexpected = sorted(own.keys() - saved.keys()), sorted(saved.keys() - own.keys())
    if missing or unexpected:
        raise CheckpointError(
            f"{where!r} does not fit this {type(model).__name__}: missing {missing[:5]}, unexpected "
            f"{unexpected[:5]}; the checkpoint was made for another model"
        )
    for name, tensor in own.items():
        if tuple(saved[name].shape) != tuple(tensor.shape):
            raise CheckpointError(
                f"{where!r}: {name} has shape {list(saved[name].shape)} but the model expects {list(tensor.shape)}; "
                "the checkpoint was made with another configuration"
            )
        if saved[name].dtype.name != tensor.dtype.name:
            raise CheckpointError(f"{where!r}: {name} holds {saved[name].dtype} numbers but the model's are "
                                  f"{tensor.dtype.name}; convert the model (model.to(dtype)) before loading")


def load_model_state(checkpoint, model):
    """Check, then copy the checkpoint's weights into `model`."""
    check_model_state(checkpoint, model)
    model.load_state_dict(checkpoint.model_state)


def optimizer_state_dict(checkpoint, optimizer):
    """The optimizer state_dict stored in `checkpoint`, checked against `optimizer` (not yet loaded)."""
    info = checkpoint.meta.get("optimizer")
    where = str(checkpoint.path / OPTIMIZER_FILE)
    if checkpoint.optimizer_state is None or not isinstance(info, dict):
        raise CheckpointError(f"{str(checkpoint.path)!r} holds no optimizer state ({OPTIMIZER_FILE}), so training "
                              "cannot resume exactly: start a new run with another --out")
    if info["type"] != type(optimizer).__name__:
        raise CheckpointError(
            f"{where!r} holds the state of a {info['type']} optimizer, not of {type(optimizer).__name__}"
        )
    groups = info["param_groups"]
    if len(groups) != len(optimizer.param_groups):
        raise CheckpointError(f"{where!r}: the parameter groups do not match this model's")
    params = {}
    for saved, own in zip(groups, optimizer.param_groups):
        if len(saved["params"]) != len(own["params"]):
            raise CheckpointError(f"{where!r}: a parameter group has a different number of parameters")
        params.update(zip(saved["params"], own["params"]))
    state = {}
    for key, array in checkpoint.optimizer_state.items():
        _, index, name = key.split(".", 2)
        index = int(index)
        p = params.get(index)
        if p is None or tuple(array.shape) != tuple(p.shape) or array.dtype.name != p.dtype.name:
            raise CheckpointError(f"{where!r}: {key} ({array.dtype}, shape {list(array.shape)}) does not fit the "
                                  f"model's parameter {index}")
        state.setdefault(index, {})[name] = array
    for index, values in info["scalars"].items():
        state.setdefault(int(index), {}).update(values)
    return {"state": state, "param_groups": groups}
