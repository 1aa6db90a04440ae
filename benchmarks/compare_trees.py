"""Time the per-op paths of two source trees of tinyattn in one run, and print a before/after table.

    python benchmarks/compare_trees.py --before OTHER/src --after src [--rounds N] [--json out.json]
                                       [--only NAME ...]

Shows whether a change to the engine made any small op slower: the ops of OPS below, on the small
tensors that lectures use, each timed in both trees. Each tree runs in a process of its own, with
PYTHONPATH set to that tree (this process never imports tinyattn), on this Python and its NumPy, on
one thread. The two processes take turns op by op (before, after, before, after, ...), so that a busy
moment of the machine hits both alike; each round starts two fresh ones, so that where a process's
code and data happen to land in memory (a few percent either way) varies from round to round too. In each round an op runs REPEAT times `number` calls in each
tree, and the best run gives that round's time per call (the least noisy figure on a shared machine);
a tree's figure is the median of its rounds, and the ratio after/before the median of the rounds'
ratios (round r of after over round r of before), with their range. The clock is the process's CPU
time (--clock cpu), which leaves out the moments when another process had the core; --clock wall
counts those too, and time spent waiting (a sleep).
"""

import argparse
import json
import math
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

# The fixtures the ops work on, built once in each tree's process. Sizes are those of a lecture:
# a 4x8 list, 32x64 activations, attention with batch 4, 8 tokens, 32 channels (4 heads): the book's
# nn.MultiHeadAttention for the attention block.
SETUP = """
import tinyattn as torch
import tinyattn.nn as nn
import tinyattn.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)
rows = [[0.25 * i - 0.5 * j for j in range(8)] for i in range(4)]
x, y, w = torch.randn(32, 64), torch.randn(32, 64), torch.randn(64, 64)
xg = torch.randn(32, 64, requires_grad=True)
idx = torch.tensor([0, 5, 7, 31])
scores = torch.randn(4, 8, 8)
causal = torch.triu(torch.ones(8, 8, dtype=torch.bool), diagonal=1)
tokens = torch.randn(4, 8, 32)
w32, b32 = torch.randn(32, 32), torch.randn(32)
logits, targets = torch.randn(32, 10), torch.randint(0, 10, (32,))
q, k, v = torch.randn(4, 4, 8, 8), torch.randn(4, 4, 8, 8), torch.randn(4, 4, 8, 8)


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return 2 * a * grad


# graphs kept (retain_graph) so that backward alone can be timed again and again
inputs = torch.randn(32, 32)
mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
mlp_loss = F.cross_entropy(mlp(inputs), targets)
mlp_loss.backward(retain_graph=True)
block = nn.MultiHeadAttention(d_in=32, d_out=32, context_length=8, dropout=0.0, num_heads=4)
block_loss = block(tokens).pow(2).mean()
block_loss.backward(retain_graph=True)

# the optimizers step a model of their own: a step changes its weights in place, which the retained
# graphs above must not see
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
F.cross_entropy(model(inputs), targets).backward()
sgd = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
adamw = torch.optim.AdamW(model.parameters(), lr=1e-3)
"""

# The ops: a name (for --only), the statement timed (in SETUP's namespace), and what it works on.
OPS = [
    # name                 statement                                                  on
    ("tensor",             "torch.tensor(rows)",                                      "a 4x8 list of floats"),
    ("randn",              "torch.randn(4, 8)",                                       "4x8"),
    ("add",                "x + y",                                                   "32x64"),
    ("mul",                "x * y",                                                   "32x64"),
    ("mul_recorded",       "xg * y",                                                  "32x64, xg requires grad"),
    ("exp",                "x.exp()",                                                 "32x64"),
    ("sum",                "x.sum()",                                                 "32x64"),
    ("matmul",             "x @ w",                                                   "32x64 @ 64x64"),
    ("reshape",            "x.reshape(64, 32)",                                       "32x64"),
    ("transpose",          "x.transpose(0, 1)",                                       "32x64"),
    ("index_tensor",       "x[idx]",                                                  "32x64, 4 int64 indices"),
    ("slice",              "x[:, 1:3]",                                               "32x64"),
    ("masked_fill",        "scores.masked_fill(causal, float('-inf'))",               "4x8x8, 8x8 bool"),
    ("softmax",            "F.softmax(scores, dim=-1)",                               "4x8x8"),
    ("layer_norm",         "F.layer_norm(tokens, (32,))",                             "B=4 T=8 C=32"),
    ("linear",             "F.linear(tokens, w32, b32)",                              "B=4 T=8 C=32"),
    ("cross_entropy",      "F.cross_entropy(logits, targets)",                        "32x10, 32 targets"),
    ("sdpa",               "F.scaled_dot_product_attention(q, k, v, is_causal=True)", "B=4, 4 heads, T=8, head 8"),
    ("attention_forward",  "block(tokens)",                                           "nn.MultiHeadAttention"),
    ("mlp_backward",       "mlp_loss.backward(retain_graph=True)",                    "Linear-ReLU-Linear, 32x32"),
    ("attention_backward", "block_loss.backward(retain_graph=True)",                  "nn.MultiHeadAttention"),
    ("sgd_step",           "sgd.step()",                                              "Linear-ReLU-Linear, momentum"),
    ("adamw_step",         "adamw.step()",                                            "Linear-ReLU-Linear"),
    ("train_step",         "sgd.zero_grad(); F.cross_entropy(model(inputs), targets).backward(); sgd.step()",
                                                                                     "Linear-ReLU-Linear, 32x32"),
    ("function_apply",     "Square.apply(xg)",                                        "custom Function, 32x64"),
    ("no_grad_mul",        "with torch.no_grad(): xg * y",                            "32x64, xg requires grad"),
    ("no_grad_enter",      "with torch.no_grad(): pass",                              "grad mode in and out"),
]
NAMES = [name for name, _, _ in OPS]

ROUNDS = 5  # the default; a round takes about 2 trees x 27 ops x 7 runs x 10 ms
REPEAT = 7  # runs of `number` calls per op and round; the best is kept
RUN_SECONDS = 0.01  # `number` is chosen so that one run takes about this long
# a row is marked slower when its median ratio is above this and its lower quartile over the rounds
# above 1 (three rounds of four or more slower): two processes of one same tree differ by up to a few
# percent (where their code and data land in memory), and a busy machine puts one round out of line
SLOWER = 1.05


# ----------------------------------------------------------------------------------------------------
# the worker: one per tree, run as `compare_trees.py --worker` with PYTHONPATH set to the tree


def worker():
    """Answers the parent's requests, one JSON line in, one JSON line out, until its stdin closes."""
    import gc
    import signal
    import timeit
    import traceback

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it closes this process

    # printing ops, warnings and the like go to stderr; stdout carries the answers only
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr

    def answer(message):
        answers.write(json.dumps(message) + "\n")

    namespace = {}
    try:
        exec(compile(SETUP, "<compare_trees setup>", "exec"), namespace)
        import numpy
        import tinyattn
    except BaseException:
        answer({"error": "the setup failed", "traceback": traceback.format_exc()})
        return 1
    answer({"tinyattn": tinyattn.__file__, "numpy": numpy.__version__, "python": platform.python_version()})
    statements = {name: statement for name, statement, _ in OPS}

    clocks = {"cpu": time.process_time, "wall": time.perf_counter}

    def timer(name, clock):
        return timeit.Timer(statements[name], timer=clocks[clock], globals=namespace)

    for line in sys.stdin:
        request = json.loads(line)
        name = None
        try:
            if request["do"] == "calibrate":  # the calls per run, and a first warm-up
                number = {}
                for name in request["ops"]:
                    n, seconds = 1, timer(name, request["clock"]).timeit(1)
                    while seconds < request["seconds"] / 4:  # doubles the calls until they are measurable
                        n *= 2
                        seconds = timer(name, request["clock"]).timeit(n)
                    number[name] = max(1, round(n * request["seconds"] / seconds))
                answer({"number": number})
            elif request["do"] == "warm up":
                for name in request["ops"]:
                    timer(name, request["clock"]).timeit(request["number"][name])
                answer({"done": True})
            elif request["do"] == "time":  # one op: the best of `repeat` runs, per call
                name, n = request["op"], request["number"]
                gc.collect()  # the garbage of the op before is not this op's to collect
                answer({"best": min(timer(name, request["clock"]).repeat(request["repeat"], n)) / n})
        except BaseException:
            answer({"error": f"{name or 'a request'} failed", "traceback": traceback.format_exc()})
            return 1
    return 0


# ----------------------------------------------------------------------------------------------------
# the parent: starts the two workers, has them take turns op by op, prints the table


class TreeFailed(Exception):
    pass


class Tree:
    """One tree's worker process."""

    def __init__(self, label, src):
        self.label, self.src = label, src
        environment = dict(os.environ, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0",
                           OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.process = subprocess.Popen([sys.executable, __file__, "--worker"], env=environment, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            self.info = self.receive()
            package = pathlib.Path(self.info["tinyattn"]).resolve().parent
            if package != src / "tinyattn":
                raise TreeFailed(f"--{label} {src}: its process imported tinyattn from {package}, not from this tree")
        except BaseException:
            self.close()
            raise

    def receive(self):
        line = self.process.stdout.readline()
        if not line:
            raise TreeFailed(f"the process of --{self.label} {self.src} ended unexpectedly "
                             f"(exit status {self.process.wait()}); its error is above")
        message = json.loads(line)
        if "error" in message:
            raise TreeFailed(f"--{self.label} {self.src}: {message['error']}:\n{message['traceback']}")
        return message

    def ask(self, **request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self.receive()

    def close(self):
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


def machine():
    """'AMD EPYC, 2 cores (2 usable), AVX2' from /proc/cpuinfo and the process's affinity."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())  # the first core's
    except OSError:  # not Linux
        pass
    # x86 names its model in "model name"; ARM boards in "Model" or "Hardware"
    model = (fields.get("model name") or fields.get("Model") or fields.get("Hardware")
             or platform.processor() or platform.machine())
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    cores = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "NEON" if "asimd" in flags else None
    return f"{model}, {cores} cores ({usable} usable)" + (f", {vector}" if vector else "")


def lower_quartile(values):
    return statistics.quantiles(values, n=4, method="inclusive")[0] if len(values) > 1 else values[0]


def table(results, names, spans):
    """The Markdown table: a row per op, then the geometric mean of the ratios."""
    lines = ["| op | code | on | before (µs) | after (µs) | after/before | range over the rounds |",
             "|---|---|---|---:|---:|---:|---|"]
    marked = []
    for name in names:
        result = results[name]
        ratio, low, high = result["ratio"], result["ratio_min"], result["ratio_max"]
        mark = ""
        if ratio > SLOWER and result["ratio_lower_quartile"] > 1.0:
            mark = " **slower**"
            marked.append(name)
        lines.append(f"| {name} | `{spans[name][0]}` | {spans[name][1]} | {result['before_us']:.3g} | "
                     f"{result['after_us']:.3g} | {ratio:.2f}{mark} | {low:.2f}-{high:.2f} |")
    mean = math.exp(statistics.fmean(math.log(results[name]["ratio"]) for name in names))
    lines.append(f"| geometric mean | | | | | {mean:.2f} | |")
    return "\n".join(lines), marked, mean


def arguments(argv):
    parser = argparse.ArgumentParser(
        description="Time tinyattn's per-op paths in two source trees, taking turns op by op, and print a "
                    "before/after table (Markdown).")
    parser.add_argument("--before", type=pathlib.Path, metavar="SRC",
                        help="the src folder of the tree before the change")
    parser.add_argument("--after", type=pathlib.Path, metavar="SRC", help="the src folder of the tree after the change")
    parser.add_argument("--rounds", type=int, default=ROUNDS, metavar="N", help=f"rounds per tree (default {ROUNDS})")
    parser.add_argument("--json", type=pathlib.Path, metavar="FILE", help="also write the figures to this file")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="time these ops only (their names: the table's first column)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="cpu (the default): the process's CPU time, which the moments another process "
                             "has the core do not count in; wall: elapsed time, which also counts waiting "
                             "(sleeps, I/O) and other processes' load")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return args
    for label in ("before", "after"):
        src = getattr(args, label)
        if src is None:
            parser.error(f"--{label} is required: the src folder of a tinyattn tree")
        if not (src / "tinyattn" / "__init__.py").is_file():
            hint = (f"; did you mean {src / 'src'}?" if (src / "src" / "tinyattn" / "__init__.py").is_file()
                    else "; give the src folder of a tinyattn tree")
            parser.error(f"--{label} {src}: no tinyattn package there (no {src / 'tinyattn' / '__init__.py'}){hint}")
        setattr(args, label, src.resolve())
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: give 1 or more rounds")
    unknown = [name for name in args.only or () if name not in NAMES]
    if unknown:
        parser.error(f"--only: no op named {', '.join(unknown)}; the ops are {', '.join(NAMES)}")
    if args.json is not None and (args.json.is_dir() or not args.json.parent.is_dir()):
        parser.error(f"--json {args.json}: cannot write a file there")
    return args


def compare(args):
    names = [name for name in NAMES if not args.only or name in args.only]
    spans = {name: (statement, on) for name, statement, on in OPS}
    status = sys.stderr.isatty()
    started = time.perf_counter()
    times, number, info = {"before": [], "after": []}, None, None
    for round_ in range(args.rounds):
        # fresh processes each round: where a process's code and data land in memory makes it a few
        # percent faster or slower than another of the same tree, so that this varies between rounds too
        trees = []
        try:
            for label in ("before", "after"):
                trees.append(Tree(label, getattr(args, label)))
            if number is None:  # the calls per run, the same for both trees and every round
                number = trees[0].ask(do="calibrate", ops=names, seconds=RUN_SECONDS, clock=args.clock)["number"]
                info = trees[0].info
            for tree in trees:
                tree.ask(do="warm up", ops=names, number=number, clock=args.clock)
                times[tree.label].append({})
            for count, name in enumerate(names):
                if status:
                    print(f"\rcompare_trees: round {round_ + 1}/{args.rounds}, op {count + 1}/{len(names)}   ",
                          end="", file=sys.stderr, flush=True)
                for tree in trees:  # before, after, before, after, ...
                    times[tree.label][-1][name] = tree.ask(do="time", op=name, number=number[name],
                                                           repeat=REPEAT, clock=args.clock)["best"]
        finally:
            for tree in trees:
                tree.close()
    if status:
        print("\r" + " " * 50 + "\r", end="", file=sys.stderr, flush=True)

    results = {}
    for name in names:
        b = [r[name] for r in times["before"]]
        a = [r[name] for r in times["after"]]
        ratios = [y / x for x, y in zip(b, a)]
        results[name] = {"before_us": statistics.median(b) * 1e6, "after_us": statistics.median(a) * 1e6,
                         "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                         "ratio_lower_quartile": lower_quartile(ratios), "calls_per_run": number[name],
                         "before_rounds_us": [t * 1e6 for t in b], "after_rounds_us": [t * 1e6 for t in a]}
    rows, marked, mean = table(results, names, spans)
    cpu = machine()
    clock = {"cpu": "CPU time", "wall": "wall-clock time"}[args.clock]
    rounds = f"{args.rounds} round" + ("s" if args.rounds > 1 else "")
    print(f"tinyattn per-op times, before: {args.before}")
    print(f"                       after:  {args.after}")
    print(f"CPU: {cpu}; Python {info['python']}, NumPy {info['numpy']}")
    print(f"{clock} per call on one thread, the trees taking turns op by op:")
    print(f"the best of {REPEAT} runs in each round, the median of {rounds} ({time.perf_counter() - started:.0f} s)")
    print()
    print(rows)
    print()
    if marked:
        print(f"slower (median ratio above {SLOWER:.2f}, and above 1 in three rounds of four or more): "
              f"{', '.join(marked)}")
    else:
        print(f"no op slower (median ratio above {SLOWER:.2f}, and above 1 in three rounds of four or more)")
    if args.json is not None:
        report = {"before": str(args.before), "after": str(args.after), "cpu": cpu, "numpy": info["numpy"],
                  "python": info["python"], "rounds": args.rounds, "repeat": REPEAT, "geometric_mean": mean,
                  "slower": marked, "ops": results}
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


def main(argv=None):
    args = arguments(argv)
    if args.worker:
        return worker()
    try:
        return compare(args)
    except TreeFailed as failure:
        print(f"compare_trees: {failure}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ncompare_trees: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
