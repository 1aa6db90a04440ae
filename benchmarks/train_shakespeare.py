"""Train on Tiny Shakespeare: seed 002's bigram, then nanoGPT's CPU GPT with tinyattn and with PyTorch.

    python benchmarks/train_shakespeare.py ../shared/data/tinyshakespeare.txt [--steps 2000] [--threads 2] [--no-torch]

What it runs (CPU, float32):
1. tinyattn GPT with nanoGPT's published CPU configuration: block 64, batch 12, 4 layers, 4 heads,
   embedding 128, dropout 0, 2000 steps, AdamW (betas 0.9/0.99, weight decay 0.1 on matrices), lr 1e-3
   with 100 warmup steps and cosine decay to 1e-4, gradient clipping at 1.0. Peak resident memory is
   read after step 100 and at the end: no graph or saved array may survive a step.
2. The bigram model of seed 002 (Karpathy's bigram.py settings: batch 32, block 8, lr 1e-2, 3000 steps).
3. The same GPT in PyTorch, written op for op like tinyattn's (same layer names, the book's
   MultiHeadAttention with an explicit mask and softmax), started from the same initial weights, fed
   the same batches, with the same optimizer, schedule, clipping and evaluations.

Validation losses at the end are the mean over 200 batches (the same batches for both frameworks).
Wall times include the periodic evaluations (every 250 steps, 20 batches per split) in both runs.
PyTorch runs in a process of its own: two thread pools (OpenBLAS's and PyTorch's OpenMP threads,
which spin while waiting) in one process slow each other down badly on a small machine.
The results go to a table on stdout and to a JSON file (--json).
"""

import argparse
import json
import os
import pathlib
import platform
import resource
import sys
import time


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="path to tinyshakespeare.txt (not shipped: pass its path)")
    parser.add_argument("--steps", type=int, default=2000, help="GPT steps (default 2000)")
    parser.add_argument("--bigram-steps", type=int, default=3000)
    parser.add_argument("--eval-iters", type=int, default=200, help="batches per split for the final losses")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for NumPy's BLAS and for PyTorch (default: all cores)")
    parser.add_argument("--no-torch", action="store_true", help="only the tinyattn runs (as tinyattn bench --no-torch)")
    parser.add_argument("--skip-torch", dest="no_torch", action="store_true", help=argparse.SUPPRESS)  # the old name
    parser.add_argument("--json", default=str(pathlib.Path(__file__).with_name("train_shakespeare.json")))
    parser.add_argument("--torch-only", metavar="JSON", help=argparse.SUPPRESS)  # the PyTorch run's process
    return parser.parse_args()


ARGS = parse_args()
if ARGS.threads:  # before NumPy is imported: OpenBLAS reads these once
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(ARGS.threads)

import numpy as np  # noqa: E402

import tinyattn  # noqa: E402
from tinyattn.app import text_data as tdata  # noqa: E402
from tinyattn.app import training  # noqa: E402
from tinyattn.app.models import build_model  # noqa: E402

from tinyattn.app.torch_twins import torch_gpt_class  # noqa: E402

SEED = 1337


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def gpt_config(steps):
    return training.TrainConfig(
        model="gpt", steps=steps, batch_size=12, block_size=64, n_layer=4, n_head=4, n_embd=128,
        dropout=0.0, lr=1e-3, min_lr=1e-4, warmup_steps=100, lr_schedule="cosine", weight_decay=0.1,
        beta1=0.9, beta2=0.99, grad_clip=1.0, eval_interval=250, eval_iters=20, seed=SEED)


def bigram_config(steps):
    return training.TrainConfig(
        model="bigram", steps=steps, batch_size=32, block_size=8, lr=1e-2, lr_schedule="constant",
        weight_decay=0.01, grad_clip=0.0, eval_interval=max(1, steps // 6), eval_iters=20, seed=SEED)


def final_losses(loss_of_batch, splits, config, eval_iters):
    """Mean loss over `eval_iters` batches per split, from a fixed generator (same batches for all)."""
    generator = tinyattn.Generator().manual_seed(SEED + 2)
    out = {}
    for name, split in splits.items():
        losses = []
        for _ in range(eval_iters):
            starts = generator.randint(0, len(split) - config.block_size, (config.batch_size,))
            rows = starts[:, None] + np.arange(config.block_size)
            losses.append(loss_of_batch(split[rows], split[rows + 1]))
        out[name] = float(np.mean(losses))
    return out


def tinyattn_losses(model, splits, config, eval_iters):
    model.eval()

    @tinyattn.no_grad()
    def loss_of_batch(x, y):
        return model(tinyattn.from_numpy(x), tinyattn.from_numpy(y))[1].item()

    return final_losses(loss_of_batch, splits, config, eval_iters)


def run_tinyattn(config, text, eval_iters, label):
    rss = {}

    def measure(step, loss):
        if step == 100:
            rss[100] = peak_rss_mb()

    print(f"\n== {label} (tinyattn) ==", flush=True)
    started = time.perf_counter()
    result = training.train(config, text, quiet=False, callback=measure,
                            log=lambda line: print("  " + line, flush=True))
    seconds = time.perf_counter() - started
    rss[config.steps] = peak_rss_mb()
    tokenizer = result.tokenizer
    splits = dict(zip(("train", "val"), tdata.train_val_split(tokenizer.encode_array(text))))
    losses = tinyattn_losses(result.model, splits, config, eval_iters)
    print(f"  final: train {losses['train']:.4f}, val {losses['val']:.4f}, {seconds:.1f} s", flush=True)
    return result, losses, seconds, rss


def run_torch(config, text, eval_iters):
    import torch

    if ARGS.threads:
        torch.set_num_threads(ARGS.threads)
    print(f"\n== GPT (PyTorch {torch.__version__}, {torch.get_num_threads()} threads) ==", flush=True)
    tokenizer = tdata.CharTokenizer.from_text(text)
    train_data, val_data = tdata.train_val_split(tokenizer.encode_array(text), config.train_fraction)
    # the initial weights tinyattn's run started from (train() seeds, then builds the model)
    tinyattn.manual_seed(config.seed)
    initial = build_model("gpt", **config.model_config(tokenizer.vocab_size)).state_dict()
    model = torch_gpt_class(torch)(config.model_config(tokenizer.vocab_size))
    model.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in initial.items()})
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": config.weight_decay},
              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=config.lr, betas=(config.beta1, config.beta2))
    batches = tinyattn.Generator().manual_seed(config.seed)
    evals = tinyattn.Generator().manual_seed(config.seed + 1)

    def batch(split, generator):
        starts = generator.randint(0, len(split) - config.block_size, (config.batch_size,))
        rows = starts[:, None] + np.arange(config.block_size)
        return torch.from_numpy(split[rows]), torch.from_numpy(split[rows + 1])

    @torch.no_grad()
    def estimate():
        model.eval()
        out = {name: float(np.mean([model(*batch(split, evals))[1].item() for _ in range(config.eval_iters)]))
               for name, split in (("train", train_data), ("val", val_data))}
        model.train()
        return out

    started = time.perf_counter()
    history = [dict(step=0, **estimate())]
    for step in range(config.steps):
        for group in optimizer.param_groups:
            group["lr"] = config.lr_at(step)
        xb, yb = batch(train_data, batches)
        _, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        if (step + 1) % config.eval_interval == 0 or step + 1 == config.steps:
            history.append(dict(step=step + 1, **estimate()))
            h = history[-1]
            print(f"  step {h['step']}: train loss {h['train']:.4f}, val loss {h['val']:.4f}"
                  f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    seconds = time.perf_counter() - started
    model.eval()

    def loss_of_batch(x, y):
        with torch.no_grad():
            return model(torch.from_numpy(x), torch.from_numpy(y))[1].item()

    losses = final_losses(loss_of_batch, {"train": train_data, "val": val_data}, config, eval_iters)
    print(f"  final: train {losses['train']:.4f}, val {losses['val']:.4f}, {seconds:.1f} s", flush=True)
    return losses, seconds, history


def torch_in_subprocess():
    """Run this script again with --torch-only (a fresh process) and read what it wrote."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        out = pathlib.Path(folder) / "torch.json"
        command = [sys.executable, __file__, ARGS.data, "--steps", str(ARGS.steps), "--eval-iters",
                   str(ARGS.eval_iters), "--torch-only", str(out)]
        if ARGS.threads:
            command += ["--threads", str(ARGS.threads)]
        subprocess.run(command, check=True)
        return json.loads(out.read_text())


def torch_only():
    text = tdata.load_text(ARGS.data)
    t_losses, t_seconds, t_history = run_torch(gpt_config(ARGS.steps), text, ARGS.eval_iters)
    result = {"train_loss": t_losses["train"], "val_loss": t_losses["val"], "seconds": t_seconds,
              "history": t_history, "peak_rss_mb": peak_rss_mb()}
    pathlib.Path(ARGS.torch_only).write_text(json.dumps(result))


def main():
    if ARGS.torch_only:
        return torch_only()
    try:
        text = tdata.load_text(ARGS.data)  # a missing or unreadable file: one line, before any training
    except tdata.DataError as error:
        print(f"train_shakespeare.py: error: {error}", file=sys.stderr)
        return 2
    json_folder = os.path.dirname(os.path.abspath(ARGS.json))
    if os.path.isdir(ARGS.json) or not os.access(json_folder, os.W_OK):
        print(f"train_shakespeare.py: error: --json {ARGS.json!r} cannot be written: give a file in a "
              "writable folder", file=sys.stderr)
        return 2
    results = {
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": sys.version.split()[0], "numpy": np.__version__, "threads": ARGS.threads},
        "data": {"path": ARGS.data, "chars": len(text)},
    }

    gpt = gpt_config(ARGS.steps)
    result, losses, seconds, rss = run_tinyattn(gpt, text, ARGS.eval_iters, f"GPT, {ARGS.steps} steps")
    results["gpt_tinyattn"] = {"config": vars(gpt), "train_loss": losses["train"], "val_loss": losses["val"],
                               "seconds": seconds, "history": result.history,
                               "peak_rss_mb": {str(k): v for k, v in rss.items()}}
    sample = training.sample(result.model, result.tokenizer, tokens=400, seed=SEED)
    results["gpt_tinyattn"]["sample"] = sample

    bigram = bigram_config(ARGS.bigram_steps)
    _, b_losses, b_seconds, _ = run_tinyattn(bigram, text, ARGS.eval_iters, f"bigram, {ARGS.bigram_steps} steps")
    results["bigram_tinyattn"] = {"config": vars(bigram), "train_loss": b_losses["train"],
                                  "val_loss": b_losses["val"], "seconds": b_seconds}

    if not ARGS.no_torch:
        results["gpt_torch"] = torch_in_subprocess()

    rows = [("bigram val loss (tinyattn)", f"{b_losses['val']:.4f}", f"{b_seconds:.1f} s"),
            ("GPT val loss (tinyattn)", f"{losses['val']:.4f}", f"{seconds:.1f} s")]
    if "gpt_torch" in results:
        ratio = seconds / results["gpt_torch"]["seconds"]
        results["time_ratio_tinyattn_over_torch"] = ratio
        rows += [("GPT val loss (PyTorch)", f"{results['gpt_torch']['val_loss']:.4f}",
                  f"{results['gpt_torch']['seconds']:.1f} s"),
                 ("wall-time ratio tinyattn / PyTorch", f"{ratio:.2f}x", "")]
    first, last = rss.get(100), rss[gpt.steps]
    if first:
        growth = (last - first) / first
        results["peak_rss_growth_100_to_end"] = growth
        rows.append((f"peak RSS at step 100 / {gpt.steps}", f"{first:.0f} / {last:.0f} MB", f"{growth:+.1%}"))
    width = max(len(r[0]) for r in rows)
    print("\n" + "\n".join(f"{a:<{width}}  {b:>16}  {c}" for a, b, c in rows))
    print("\nsample (tinyattn GPT, seed 1337):\n" + sample)
    pathlib.Path(ARGS.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"\nresults written to {ARGS.json}")


if __name__ == "__main__":
    sys.exit(main())
