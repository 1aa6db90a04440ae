"""The training loop that `tinyattn train`, the benchmark and notebooks share.

    config = TrainConfig(model="gpt", steps=2000)
    result = train(config, text, out="out")     # checkpoints in out/ckpt, loss curve in out/loss.png
    print(sample(result.model, result.tokenizer, tokens=300))

One step: a random batch from the training split (a seeded `tinyattn.Generator`), forward, backward,
gradient clipping, AdamW with a warmup + cosine learning rate. Every `eval_interval` steps the mean
loss over `eval_iters` batches of each split is estimated (no graph, dropout off) and a checkpoint is
written. A resumed run reloads the weights, the optimizer's moments and every random generator, so on
the CPU it continues exactly as if it had never stopped. On a GPU, dropout masks come from CuPy's
generator, whose state a checkpoint cannot hold: a resumed run is the same every time it is resumed
from that checkpoint, but its masks differ from those the first run went on to draw.
"""

import dataclasses
import hashlib
import itertools
import math
import pathlib
import signal
import threading
import time

import numpy as np

from . import checkpoint as ckpt
from .. import dtypes, functions
from .. import random as trandom
from ..autograd import no_grad
from ..console import plural
from .text_data import CharTokenizer, DataError, get_batch, train_val_split
from .models import build_model, parameter_groups
from ..nn.utils import clip_grad_norm_
from ..optim import AdamW
from .progress import ProgressBar, format_duration
from .train_config import TrainConfig  # (also importable from here: tinyattn.app.training.TrainConfig)


class TrainingDiverged(RuntimeError):
    """The training loss became NaN or infinite."""


# What each model trains with where neither the command line nor the caller says: the GPT takes
# TrainConfig's defaults (nanoGPT's CPU model); the bigram those of the lecture's bigram.py (batch 32,
# block 8, a constant learning rate of 1e-2 for 3000 steps, AdamW's own weight decay and betas, no
# clipping), with which it reaches a validation loss of about 2.5 on Tiny Shakespeare. Under the GPT's
# settings it barely learns (4.48 after 300 steps: random characters).
MODEL_DEFAULTS = {
    "gpt": {},
    "bigram": dict(steps=3000, batch_size=32, block_size=8, lr=1e-2, lr_schedule="constant", warmup_steps=0,
                   weight_decay=0.01, beta2=0.999, grad_clip=0.0, eval_interval=300, eval_iters=200),
}
GPT_ONLY = ("n_layer", "n_head", "n_embd", "dropout")  # settings the bigram model has no use for


def defaults_for(model):
    """{field: default} of TrainConfig for `model` ('gpt' or 'bigram')."""
    defaults = {field.name: field.default for field in dataclasses.fields(TrainConfig)}
    return {**defaults, **MODEL_DEFAULTS[model], "model": model}


@dataclasses.dataclass
class TrainResult:
    model: object
    tokenizer: CharTokenizer
    optimizer: object
    config: TrainConfig
    step: int  # optimizer steps done
    history: list  # one dict per evaluation: step, train_loss, val_loss, lr, elapsed
    losses: list  # the training loss of every step
    interrupted: bool = False
    seconds: float = 0.0  # time spent in this call
    output_closed: bool = False  # stopped (with a checkpoint) because the reader of the output went away


def check_text(config, text):
    """A DataError unless both the training and the validation part hold a block plus one character;
    one message states both limits (and the shortest text that meets them)."""
    train_part, val_part = train_val_split(text, config.train_fraction)
    need = config.block_size + 1
    if len(train_part) >= need and len(val_part) >= need:
        return
    parts = (f"the training part ({plural(len(train_part), 'character')}) and the validation part (the last "
             f"{1 - config.train_fraction:.0%}: {plural(len(val_part), 'character')}) each need block_size + 1 = "
             f"{need}")
    if config.train_fraction < 1:
        shortest = next(n for n in itertools.count(2 * need) if all(len(part) >= need for part in
                                                                    train_val_split(range(n), config.train_fraction)))
        parts += f", so the text needs at least {plural(shortest, 'character')}"
    raise DataError(f"the text has {plural(len(text), 'character')}: {parts}. Use a longer text or a smaller "
                    "--block-size")


def text_fingerprint(text):
    """The SHA-256 of the text, which a resumed run checks its data against."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@no_grad()
def estimate_loss(model, splits, batch_size, block_size, eval_iters, generator, device="cpu"):
    """The mean loss over `eval_iters` random batches of each split, with dropout off."""
    was_training = model.training
    model.eval()
    out = {}
    for name, data in splits.items():
        losses = np.empty(eval_iters)
        for i in range(eval_iters):
            xb, yb = get_batch(data, batch_size, block_size, generator, device)
            _, loss = model(xb, yb)
            losses[i] = loss.item()
        out[name] = float(losses.mean())
    model.train(was_training)
    return out


class _DeferredInterrupt:
    """Ctrl-C sets a flag that the loop checks between steps (so a checkpoint is never half a step);
    a second Ctrl-C interrupts at once."""

    def __init__(self):
        self.requested = False
        self.previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        self.requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False


def train(config, text, *, out=None, resume=None, data_source=None, quiet=False, stream=None,
          stop_at=None, log=None, callback=None, on_evaluation=None):
    """Train a model on `text` as `config` says; return a TrainResult.

    out: directory for checkpoints (out/ckpt) and the loss curve (out/loss.png), or None.
    resume: a loaded `checkpoint.Checkpoint` to continue from (its tokenizer and weights are used).
    data_source: how to find the text again on resume (a path, or 'bundled'); stored in checkpoints.
    stop_at: stop after this many steps (with a checkpoint), as if interrupted.
    quiet: no progress bar and no messages. log: a function for messages (default: the bar's write).
    callback: called as callback(step, loss) after every step (for measurements).
    on_evaluation: called with each loss estimate as it is made: {"step", "train_loss", "val_loss",
    "lr", "elapsed"} (the entries of TrainResult.history).
    """
    started = time.perf_counter()
    if resume is not None:
        lacking = [key for key in ("rng", "history", "losses") if key not in resume.meta]
        if lacking:
            raise ckpt.CheckpointError(f"{str(resume.path / ckpt.META_FILE)!r} lacks {', '.join(lacking)}, which a "
                                       "resumed run needs to continue exactly: start a new run with another --out")
        tokenizer = CharTokenizer.from_dict(resume.meta["tokenizer"])
        missing = tokenizer.unknown(text)
        if missing:
            raise DataError(
                f"the data has {len(missing)} character(s) that the checkpoint's vocabulary lacks "
                f"({' '.join(repr(c) for c in missing[:10])}): resume with the text the run started with"
            )
    else:
        tokenizer = CharTokenizer.from_text(text)
    check_text(config, text)
    data = tokenizer.encode_array(text)
    train_data, val_data = train_val_split(data, config.train_fraction)

    functions.manual_seed(config.seed)  # the model's initial weights (and dropout masks) come from here
    model = build_model(config.model, **config.model_config(tokenizer.vocab_size)).to(config.device)
    optimizer = AdamW(parameter_groups(model, config.weight_decay), lr=config.lr,
                      betas=(config.beta1, config.beta2))
    batches = trandom.Generator().manual_seed(config.seed)  # training batches
    evals = trandom.Generator().manual_seed(config.seed + 1)  # evaluation batches
    step, history, losses = 0, [], []
    saved_step = None  # the step of the checkpoint in out/ckpt, if there is one
    if resume is not None:
        ckpt.load_model_state(resume, model)
        optimizer.load_state_dict(ckpt.optimizer_state_dict(resume, optimizer))
        rng = resume.meta.get("rng", {})
        try:
            ckpt.restore_generator_state(batches, rng["batches"])
            ckpt.restore_generator_state(evals, rng["evals"])
            ckpt.restore_generator_state(trandom.default_generator, rng["default"])
        except (KeyError, TypeError, ValueError) as error:
            raise ckpt.CheckpointError(
                f"{str(resume.path / ckpt.META_FILE)!r}: the random generator states are missing or "
                f"invalid ({error}), so the run cannot continue exactly"
            ) from None
        step = saved_step = resume.step
        history = list(resume.meta.get("history", []))
        losses = list(resume.meta.get("losses", []))
        elapsed_before = float(resume.meta.get("elapsed", 0.0))
    else:
        elapsed_before = 0.0

    bar = ProgressBar(config.steps, start=step, stream=stream, enabled=not quiet)
    write = log or bar.write
    output_closed = False

    def say(text):
        nonlocal output_closed
        if output_closed:
            return
        try:
            write(text)
        except BrokenPipeError:  # `tinyattn train | head`: the reader is gone; save, then stop
            output_closed = True
    splits = {"train": train_data, "val": val_data}
    data_info = {"source": data_source, "sha256": text_fingerprint(text), "chars": len(text)}

    def evaluate():
        estimate = estimate_loss(model, splits, config.batch_size, config.block_size, config.eval_iters,
                                 evals, config.device)
        elapsed = elapsed_before + time.perf_counter() - started
        history.append({"step": step, "train_loss": estimate["train"], "val_loss": estimate["val"],
                        "lr": config.lr_at(min(step, config.steps - 1)), "elapsed": elapsed})
        if on_evaluation is not None:
            on_evaluation(history[-1])
        if not quiet:
            say(f"step {step:>{len(str(config.steps))}}: train loss {estimate['train']:.4f}, "
                f"val loss {estimate['val']:.4f}  ({format_duration(elapsed)})")

    def save():
        nonlocal saved_step
        if out is None:
            return
        meta = {
            "model": {"kind": model.kind, "config": dataclasses.asdict(model.config)},
            "tokenizer": tokenizer.to_dict(),
            "train": dataclasses.asdict(config),
            "step": step,
            "data": data_info,
            "rng": {name: ckpt.generator_state_to_json(generator) for name, generator in
                    (("batches", batches), ("evals", evals), ("default", trandom.default_generator))},
            "history": history,
            "losses": losses,
            "elapsed": elapsed_before + time.perf_counter() - started,
        }
        ckpt.save_checkpoint(pathlib.Path(out) / "ckpt", model, optimizer, meta)
        saved_step = step

    if step == 0:
        evaluate()
    interrupted = False
    model.train()
    with _DeferredInterrupt() as interrupt:
        while step < config.steps:
            lr = config.lr_at(step)
            for group in optimizer.param_groups:
                group["lr"] = lr
            xb, yb = get_batch(train_data, config.batch_size, config.block_size, batches, config.device)
            _, loss = model(xb, yb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if config.grad_clip > 0:
                clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            step += 1
            losses.append(loss.item())
            if not math.isfinite(losses[-1]):  # stop before a checkpoint of NaN weights replaces a good one
                bar.close()
                if out is None:
                    kept = ""
                elif saved_step is None:
                    kept = f"; no checkpoint was written (the first was due at step {config.eval_interval})"
                else:
                    kept = f"; the checkpoint of step {saved_step} in {pathlib.Path(out) / 'ckpt'} is kept"
                raise TrainingDiverged(
                    f"training diverged at step {step}: the loss is {losses[-1]}. Lower the learning rate "
                    f"(lr is {lr:g}) or clip gradients (grad_clip is {config.grad_clip:g}){kept}"
                )
            del loss, xb, yb  # no graph or batch outlives its step
            bar.update(step, losses[-1])
            if callback is not None:
                callback(step, losses[-1])
            if step % config.eval_interval == 0 or step == config.steps:
                evaluate()
                save()
            elif interrupt.requested or output_closed or step == stop_at:
                save()
            if interrupt.requested or output_closed or step == stop_at:
                interrupted = step < config.steps
                break
    if not output_closed:
        bar.close()
    if out is not None:
        plot_losses(history, losses, pathlib.Path(out) / "loss.png")
    return TrainResult(model, tokenizer, optimizer, config, step, history, losses, interrupted,
                       time.perf_counter() - started, output_closed)



def plot_losses(history, losses, path):
    """Save the loss curves as a PNG (when matplotlib is installed); return the path or None."""
    try:
        from matplotlib.figure import Figure  # the object API: no pyplot state, no GUI backend
    except ImportError:
        return None
    figure = Figure(figsize=(7, 4), dpi=100)
    axes = figure.add_subplot()
    if losses:
        axes.plot(range(1, len(losses) + 1), losses, color="0.75", linewidth=0.8, label="train (each step)")
    if history:
        steps = [h["step"] for h in history]
        axes.plot(steps, [h["train_loss"] for h in history], "o-", label="train (estimate)")
        axes.plot(steps, [h["val_loss"] for h in history], "o-", label="validation (estimate)")
    axes.set_xlabel("step")
    axes.set_ylabel("cross-entropy loss")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    return path


def sample(model, tokenizer, prompt=None, tokens=300, temperature=1.0, top_k=None, seed=None, device=None):
    """Text generated by `model` after `prompt` (the prompt included), with dropout off.

    Without a prompt it starts from a newline (the first character of the vocabulary where the text has
    no newline). With a seed, the draws come from a generator of their own, so the same seed gives the
    same text.
    """
    return "".join(sample_stream(model, tokenizer, prompt, tokens, temperature, top_k, seed, device))


def sample_stream(model, tokenizer, prompt=None, tokens=300, temperature=1.0, top_k=None, seed=None, device=None):
    """`sample`'s text piece by piece, as it is generated: first the prompt, then each new character."""
    if prompt == "" or prompt is None:
        prompt = "\n" if "\n" in tokenizer.stoi else tokenizer.chars[0]
    ids = tokenizer.encode(prompt)  # a DataError names the characters outside the vocabulary
    generator = None if seed is None else trandom.Generator().manual_seed(seed)
    device = device or next(model.parameters()).device
    idx = functions.tensor([ids], dtype=dtypes.int64, device=device)
    was_training = model.training
    model.eval()
    try:
        yield prompt
        for idx in model.generate_stream(idx, tokens, temperature=temperature, top_k=top_k, generator=generator):
            yield tokenizer.decode([int(idx[0, -1].item())])
    finally:  # also when the caller stops early (Ctrl-C)
        model.train(was_training)
