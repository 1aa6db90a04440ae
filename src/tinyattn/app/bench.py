"""`tinyattn bench`: time tinyattn against a hand-derived NumPy version and PyTorch, side by side.

Everything is measured in one process, interleaved (each round runs every contender once), after a
warm-up, and reported as medians and ratios, so a busy machine slows all contenders alike:

  (a) the causal MultiHeadAttention forward + backward at several (batch, tokens, d, heads) sizes;
  (b) one GPT training step (forward, backward, AdamW) at nanoGPT's CPU configuration;
  (c) the engine's own cost per op on tiny tensors;
  (d) peak memory of (a) at the largest size, each contender in a fresh subprocess;
  (e) the GPT step of (b) on a shared machine: quiet, and beside a busy process (a spin loop in a
      child process), at each thread count;
  (f) four training loops as a lecture writes them (tinyattn.app.learner_loops), on one thread, run as
      written;
  (g) the single calls such a loop makes every step (learner_loops.CALLS), on one thread, each
      beside the same call written directly in NumPy where there is one (the floor).
  (h) the elementwise work of attention and of a training step (exp, softmax, GELU, layer norm, an
      AdamW step) on one attention-sized tensor, against the same math written directly in NumPy.

Both libraries compute with the same number of threads (`--threads`, default: every core this
process may use): tinyattn's matrix products through `tinyattn.set_num_threads`, PyTorch through
`torch.set_num_threads`.

PyTorch is used only when it is installed (it is passed to the twin builders in
`tinyattn.app.torch_twins`; nothing else in tinyattn imports it). On `--device cuda` the CuPy backend is
timed against PyTorch CUDA eager with CUDA events.

One file of about 1,000 lines: every section runs through the same timers, interleaving and report,
which a reader checks once for all of them.
"""

import contextlib
import json
import math
import os
import platform
import signal
import statistics
import subprocess
import sys
import time

import numpy as np

from .. import backend
from ..backend import threads
from . import learner_loops, progress
from ..console import EXIT_BAD_INPUT, EXIT_INTERRUPTED, ArgumentParser, add_threads_option, fit, terminal_width

MHA_SIZES = [(2, 6, 4, 2), (8, 64, 64, 4), (8, 128, 256, 8), (8, 256, 768, 12), (4, 1024, 768, 12)]
GPU_EXTRA_SIZES = [(8, 1024, 768, 12)]  # the book's benchmark size
GPT_CONFIG = dict(block_size=64, batch_size=12, n_layer=4, n_head=4, n_embd=128, dropout=0.0, vocab_size=65)


# ---------------------------------------------------------------------------------------------
# timing


SETTLE_SECONDS = 0.3


def interleaved(contenders, rounds, warmup=2, on_round=None, samples=None, settle=None):
    """Median seconds per contender: every round runs each contender once, in turn.

    Between two contenders the process sleeps `settle` seconds (untimed; default SETTLE_SECONDS):
    OpenBLAS's and PyTorch's thread pools spin for a while after their work (OpenBLAS for about 0.1 s),
    and a pool still spinning steals the cores of the next contender (PyTorch's GPT step measured 3x
    slower without the pause).
    `on_round(text)` is told each round as it starts ("warm-up 1/2", "round 3/15"); `samples`, a dict,
    receives every round's seconds per contender (for `ratio_spread`). `settle` replaces the pause
    (in seconds) where no thread pool is at work (one thread).
    """
    settle = SETTLE_SECONDS if settle is None else settle
    for i in range(warmup):
        if on_round is not None:
            on_round(f"warm-up {i + 1}/{warmup}")
        for run in contenders.values():
            run()
            time.sleep(settle)
    samples = {} if samples is None else samples
    samples.update({name: [] for name in contenders})
    for i in range(rounds):
        if on_round is not None:
            on_round(f"round {i + 1}/{rounds}")
        for name, run in contenders.items():
            samples[name].append(run())
            time.sleep(settle)
    return {name: statistics.median(times) for name, times in samples.items()}


def ratio_spread(samples, a, b):
    """[first quartile, third quartile] of the ratios a / b round by round (each round times a and b
    one after the other, so a slow moment of the machine hits both): how far the ratio moves in a run."""
    if not samples.get(a) or not samples.get(b):
        return None
    ratios = [x / y for x, y in zip(samples[a], samples[b])]
    if len(ratios) == 1:
        return [ratios[0], ratios[0]]
    quartiles = statistics.quantiles(ratios, n=4, method="inclusive")
    return [quartiles[0], quartiles[2]]


def _rounds_for(seconds_per_call, budget=2.0, low=5, high=30):
    return int(min(high, max(low, budget / max(seconds_per_call, 1e-6))))


SAMPLE_SECONDS = 0.05  # each timed sample repeats a fast call until it lasts about this long


def _repeats(fn):
    """How many calls make one sample: estimated from warm calls (a first call can be much slower)."""
    fn()
    start = time.perf_counter()
    for _ in range(3):
        fn()
    per_call = (time.perf_counter() - start) / 3
    return max(1, int(SAMPLE_SECONDS / max(per_call, 1e-7)))


def cpu_timer(fn, clock=time.perf_counter):
    """Seconds per call of fn, on the wall clock (or on `clock`)."""
    repeat = None

    def run():
        nonlocal repeat
        repeat = repeat or _repeats(fn)
        start = clock()
        for _ in range(repeat):
            fn()
        return (clock() - start) / repeat

    return run


def cupy_timer(fn):
    """Seconds per call of fn, between CUDA events (GPU work is asynchronous)."""
    import cupy

    repeat = None

    def run():
        nonlocal repeat
        repeat = repeat or _repeats(lambda: (fn(), cupy.cuda.Device().synchronize()))
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(repeat):
            fn()
        end.record()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) / 1e3 / repeat

    return run


def torch_cuda_timer(torch, fn):
    repeat = None

    def run():
        nonlocal repeat
        repeat = repeat or _repeats(lambda: (fn(), torch.cuda.synchronize()))
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeat):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / repeat

    return run


def _import_torch():
    try:
        import torch  # the benchmark's yardstick; the library never needs it
    except ImportError:
        return None
    return torch


# ---------------------------------------------------------------------------------------------
# (a) multi-head attention forward + backward


def numpy_mha_forward_backward(x, wq, wk, wv, wo, bo, num_heads):
    """The causal MultiHeadAttention forward and the backward of out.sum(), derived by hand in NumPy."""
    b, t, d = x.shape
    hd = d // num_heads
    rows = x.reshape(b * t, d)

    def heads(m):  # (b*t, d) -> (b, h, t, hd)
        return m.reshape(b, t, num_heads, hd).transpose(0, 2, 1, 3)

    q, k, v = heads(rows @ wq.T), heads(rows @ wk.T), heads(rows @ wv.T)
    scores = (q @ k.transpose(0, 1, 3, 2)) * (1 / math.sqrt(hd))
    scores[..., np.triu(np.ones((t, t), dtype=bool), 1)] = -np.inf
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    context = np.ascontiguousarray((weights @ v).transpose(0, 2, 1, 3)).reshape(b * t, d)
    out = context @ wo.T + bo

    grad_out = np.ones_like(out)  # d(out.sum())/d(out)
    grad_wo, grad_bo = grad_out.T @ context, grad_out.sum(axis=0)
    grad_context = heads(grad_out @ wo)
    grad_weights = grad_context @ v.transpose(0, 1, 3, 2)
    grad_v = weights.transpose(0, 1, 3, 2) @ grad_context
    grad_scores = weights * (grad_weights - (grad_weights * weights).sum(axis=-1, keepdims=True))
    grad_scores *= 1 / math.sqrt(hd)
    grad_q, grad_k = grad_scores @ k, grad_scores.transpose(0, 1, 3, 2) @ q

    def merge(g):  # (b, h, t, hd) -> (b*t, d)
        return np.ascontiguousarray(g.transpose(0, 2, 1, 3)).reshape(b * t, d)

    gq, gk, gv = merge(grad_q), merge(grad_k), merge(grad_v)
    grad_x = gq @ wq + gk @ wk + gv @ wv
    return out, grad_x.reshape(b, t, d), gq.T @ rows, gk.T @ rows, gv.T @ rows, grad_wo, grad_bo


def mha_contenders(size, device, torch, only=None):
    """Zero-argument functions, one per contender, that run forward + backward at `size`."""
    import tinyattn
    from .. import nn
    from . import torch_twins

    b, t, d, h = size
    tinyattn.manual_seed(0)
    module = nn.MultiHeadAttention(d, d, t, 0.0, h).to(device)
    x = tinyattn.randn(b, t, d, device=device, requires_grad=True)

    def run_tinyattn():
        module.zero_grad()
        x.grad = None
        module(x).sum().backward()

    contenders = {}
    timer = cpu_timer if device == "cpu" else cupy_timer
    if only in (None, "tinyattn"):
        contenders["tinyattn"] = timer(run_tinyattn)
    if device == "cpu" and only in (None, "numpy"):
        weights = [p.detach().numpy() for p in (module.W_query.weight, module.W_key.weight,
                                                 module.W_value.weight, module.out_proj.weight,
                                                 module.out_proj.bias)]
        x_np = x.detach().numpy()
        contenders["numpy"] = cpu_timer(lambda: numpy_mha_forward_backward(x_np, *weights, h))
    if torch is not None and only in (None, "torch"):
        twin = torch_twins.multihead_attention(torch, module)
        tx = torch.from_numpy(backend.to_host(x.array).copy()).to(device).requires_grad_()

        def run_torch():
            twin.zero_grad()
            tx.grad = None
            twin(tx).sum().backward()

        contenders["torch"] = cpu_timer(run_torch) if device == "cpu" else torch_cuda_timer(torch, run_torch)
    return contenders


# ---------------------------------------------------------------------------------------------
# (b) one GPT training step


def gpt_contenders(device, torch):
    import tinyattn
    from .. import optim
    from . import models, torch_twins
    from ..nn.utils import clip_grad_norm_

    config = dict(GPT_CONFIG)
    batch_size = config.pop("batch_size")
    tinyattn.manual_seed(0)
    model = models.GPT(models.GPTConfig(**config)).to(device)
    opt = optim.AdamW(models.parameter_groups(model, 0.1), lr=1e-3, betas=(0.9, 0.95))
    idx = tinyattn.randint(0, config["vocab_size"], (batch_size, config["block_size"]), device=device)
    targets = tinyattn.randint(0, config["vocab_size"], (batch_size, config["block_size"]), device=device)

    def step_tinyattn():
        _, loss = model(idx, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    timer = cpu_timer if device == "cpu" else cupy_timer
    contenders = {"tinyattn": timer(step_tinyattn)}
    if torch is not None:
        twin = torch_twins.gpt(torch, model)
        decay = [p for n, p in twin.named_parameters() if p.dim() >= 2]
        no_decay = [p for n, p in twin.named_parameters() if p.dim() < 2]
        topt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                 lr=1e-3, betas=(0.9, 0.95))
        tidx = torch.from_numpy(backend.to_host(idx.array)).to(device)
        ttargets = torch.from_numpy(backend.to_host(targets.array)).to(device)

        def step_torch():
            _, loss = twin(tidx, ttargets)
            topt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(twin.parameters(), 1.0)
            topt.step()

        contenders["torch"] = cpu_timer(step_torch) if device == "cpu" else torch_cuda_timer(torch, step_torch)
    return contenders


# ---------------------------------------------------------------------------------------------
# (c) per-op overhead on tiny tensors


OVERHEAD_ROUNDS = 9  # timed rounds of (c) per op (each sample repeats the op for SAMPLE_SECONDS)
OVERHEAD_SETTLE_SECONDS = 0.05  # after each PyTorch sample of (c): its OpenMP threads stop spinning


def overhead_contenders(torch, rounds=OVERHEAD_ROUNDS, on_round=None):
    """Median seconds per call of each tiny op: {op: {contender: seconds}}, filled op by op.

    `on_round(op, text)` is told each round as it starts. Only PyTorch gets a settling pause: on 4x4
    tensors NumPy and tinyattn compute on one thread (NumPy's elementwise ops never use more, and
    OpenBLAS's matmul stays on one below its size threshold), but PyTorch's softmax wakes its OpenMP
    pool even there, and a pool still spinning slows the contender after it (tinyattn's softmax
    measured 49-62 us instead of 33 us without any pause). PyTorch's OpenMP is GNU libgomp, whose
    idle threads spin 300,000 times (GOMP_SPINCOUNT's default: milliseconds) before they sleep, so
    OVERHEAD_SETTLE_SECONDS covers it; the 0.3 s of SETTLE_SECONDS after every contender made the six
    rows take 1.5 minutes.
    """
    import tinyattn

    a = tinyattn.randn(4, 4, requires_grad=True)
    b = tinyattn.randn(4, 4, requires_grad=True)
    an, bn = a.detach().numpy(), b.detach().numpy()
    cases = {
        "add": (lambda: a + b, lambda: an + bn),
        "mul": (lambda: a * b, lambda: an * bn),
        "matmul": (lambda: a @ b, lambda: an @ bn),
        "sum": (lambda: a.sum(), lambda: an.sum()),
        "softmax": (lambda: a.softmax(-1), lambda: np.exp(an) / np.exp(an).sum(-1, keepdims=True)),
        "add+backward": (lambda: (a + b).sum().backward(), None),
    }
    if torch is not None:
        ta, tb = torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)
        torch_cases = {
            "add": lambda: ta + tb, "mul": lambda: ta * tb, "matmul": lambda: ta @ tb,
            "sum": lambda: ta.sum(), "softmax": lambda: ta.softmax(-1),
            "add+backward": lambda: (ta + tb).sum().backward(),
        }
    for name, (ours, numpy_version) in cases.items():
        contenders = {"tinyattn": cpu_timer(ours)}
        if numpy_version is not None:
            contenders["numpy"] = cpu_timer(numpy_version)
        if torch is not None:
            contenders["torch"] = _settling(cpu_timer(torch_cases[name]))
        yield name, interleaved(contenders, rounds=rounds, settle=0.0,
                                on_round=None if on_round is None else lambda text: on_round(name, text))


FAR_OFF = 10  # a per-op figure this many times its column's median is noise, not the op's cost


def far_off(rows):
    """{row name: {contender, ...}} of the figures over FAR_OFF times the median of their contender's
    column ({name: {contender: seconds}} rows): on a busy machine one median can land 100x too high."""
    flagged = {}
    for contender in ("tinyattn", "numpy", "torch"):
        column = {name: row[contender] for name, row in rows.items() if row.get(contender) is not None}
        if len(column) < 3:  # too few figures for a median to say what is typical
            continue
        typical = statistics.median(column.values())
        for name, seconds in column.items():
            if seconds > FAR_OFF * typical:
                flagged.setdefault(name, set()).add(contender)
    return flagged


def _settling(timer):
    """The timer, then a pause of OVERHEAD_SETTLE_SECONDS (untimed) for the thread pool it may have woken."""
    def run():
        seconds = timer()
        time.sleep(OVERHEAD_SETTLE_SECONDS)
        return seconds

    return run


# ---------------------------------------------------------------------------------------------
# (f) learner loops


LEARNER_ROUNDS = 7


def learner_contenders(torch):
    """{loop name: {contender: zero-argument step}}: each loop of `learner_loops`, the same source
    text built once on tinyattn and once on PyTorch (when given).

    Timed in CPU seconds of this process: both compute on one thread, so that is the time of the
    work itself, which a shared machine does not stretch the way it stretches the wall clock (while
    another process holds the core, the wall clock runs on and the CPU clock does not)."""
    import tinyattn

    loops = {}
    for name, make in learner_loops.LOOPS.items():
        contenders = {"tinyattn": cpu_timer(make(tinyattn)[0], clock=time.process_time)}
        if torch is not None:
            contenders["torch"] = cpu_timer(make(torch)[0], clock=time.process_time)
        loops[name] = contenders
    return loops


# ---------------------------------------------------------------------------------------------
# (g) the calls of a learner's step, one at a time


CALL_ROUNDS = 5


def call_contenders(torch):
    """(label, {contender: timer}) for each call of `learner_loops.CALLS`, built as it is reached:
    tinyattn, PyTorch (when given) and the NumPy floor (where there is one), in CPU seconds of this
    process (one thread: see `learner_contenders`)."""
    import tinyattn

    for label, make, numpy_make in learner_loops.CALLS:
        contenders = {"tinyattn": cpu_timer(make(tinyattn), clock=time.process_time)}
        if torch is not None:
            contenders["torch"] = cpu_timer(make(torch), clock=time.process_time)
        if numpy_make is not None:
            contenders["numpy"] = cpu_timer(numpy_make(), clock=time.process_time)
        yield label, contenders


# (h) elementwise work at attention size


ELEMENTWISE_SHAPE = (8, 12, 256, 256)  # the attention weights of (8, 256, 768, 12): batch, heads, tokens, tokens
ELEMENTWISE_ROUNDS = 7


def numpy_adamw_step(p, grad, exp_avg, exp_avg_sq, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                     weight_decay=1e-2):
    """One AdamW update written directly in NumPy, in place, one pass per operation."""
    p *= 1 - lr * weight_decay
    exp_avg += (1 - betas[0]) * (grad - exp_avg)
    exp_avg_sq *= betas[1]
    exp_avg_sq += (1 - betas[1]) * grad * grad
    denom = np.sqrt(exp_avg_sq) / math.sqrt(1 - betas[1] ** step) + eps
    p += (-lr / (1 - betas[0] ** step)) * exp_avg / denom


def numpy_layer_norm(x, grad=None, eps=1e-5):
    """Layer norm over the last dim (no weight or bias), and its input's gradient for `grad`, in NumPy."""
    centred = x - x.mean(axis=-1, keepdims=True)
    inv_std = 1 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps)
    normalized = centred * inv_std
    if grad is None:
        return normalized
    return inv_std * (grad - grad.mean(axis=-1, keepdims=True)
                      - normalized * (grad * normalized).mean(axis=-1, keepdims=True))


def numpy_softmax(x, grad=None):
    """Softmax over the last dim, and its input's gradient for `grad`, in NumPy."""
    y = np.exp(x - x.max(axis=-1, keepdims=True))
    y /= y.sum(axis=-1, keepdims=True)
    if grad is None:
        return y
    return y * (grad - (grad * y).sum(axis=-1, keepdims=True))


def numpy_gelu(x):
    """Exact GELU, x Phi(x), in NumPy passes over the whole array (erf as tinyattn's polynomial)."""
    return x * (0.5 * (1 + backend.erf_in_passes(x * (1 / math.sqrt(2)))))


def numpy_gelu_tanh(x):
    """GELU's tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in NumPy."""
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def elementwise_contenders(torch, shape=None):
    """{row: {contender: zero-argument call}}: the elementwise work of attention and of a training
    step, on one float32 tensor of `shape` (random normal numbers), for tinyattn, NumPy written
    directly (the floor), and PyTorch when given."""
    import tinyattn
    from .. import optim
    from ..nn import functional as F

    shape = ELEMENTWISE_SHAPE if shape is None else shape
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(shape, dtype=np.float32)
    g_np = rng.standard_normal(shape, dtype=np.float32)
    x, g = tinyattn.from_numpy(x_np), tinyattn.from_numpy(g_np)
    xg = tinyattn.from_numpy(x_np.copy()).requires_grad_()
    width = shape[-1]

    def backward_of(forward):
        def run():
            xg.grad = None
            forward(xg).backward(g)
        return run

    param = tinyattn.nn.Parameter(tinyattn.from_numpy(x_np.copy()))
    param.grad = tinyattn.from_numpy(g_np.copy())
    adamw = optim.AdamW([param], lr=1e-3)
    numpy_state = [x_np.copy(), g_np, np.zeros_like(x_np), np.zeros_like(x_np), 0]

    def numpy_adamw():
        numpy_state[-1] += 1
        numpy_adamw_step(*numpy_state)

    rows = {
        "exp": {"tinyattn": lambda: x.exp(), "numpy": lambda: np.exp(x_np)},
        "softmax": {"tinyattn": lambda: x.softmax(-1), "numpy": lambda: numpy_softmax(x_np)},
        "softmax fwd+bwd": {"tinyattn": backward_of(lambda t: t.softmax(-1)),
                            "numpy": lambda: numpy_softmax(x_np, g_np)},
        "gelu": {"tinyattn": lambda: F.gelu(x), "numpy": lambda: numpy_gelu(x_np)},
        "gelu tanh": {"tinyattn": lambda: F.gelu(x, approximate="tanh"),
                      "numpy": lambda: numpy_gelu_tanh(x_np)},
        "layer norm": {"tinyattn": lambda: F.layer_norm(x, (width,)), "numpy": lambda: numpy_layer_norm(x_np)},
        "layer norm fwd+bwd": {"tinyattn": backward_of(lambda t: F.layer_norm(t, (width,))),
                               "numpy": lambda: numpy_layer_norm(x_np, g_np)},
        "AdamW step": {"tinyattn": adamw.step, "numpy": numpy_adamw},
    }
    if torch is not None:
        tx, tg = torch.from_numpy(x_np.copy()), torch.from_numpy(g_np.copy())
        txg = tx.clone().requires_grad_()
        tparam = torch.nn.Parameter(tx.clone())
        tparam.grad = tg.clone()
        tadamw = torch.optim.AdamW([tparam], lr=1e-3)

        def torch_backward_of(forward):
            def run():
                txg.grad = None
                forward(txg).backward(tg)
            return run

        tF = torch.nn.functional
        torch_rows = {
            "exp": lambda: tx.exp(), "softmax": lambda: tx.softmax(-1),
            "softmax fwd+bwd": torch_backward_of(lambda t: t.softmax(-1)),
            "gelu": lambda: tF.gelu(tx), "gelu tanh": lambda: tF.gelu(tx, approximate="tanh"),
            "layer norm": lambda: tF.layer_norm(tx, (width,)),
            "layer norm fwd+bwd": torch_backward_of(lambda t: tF.layer_norm(t, (width,))),
            "AdamW step": tadamw.step,
        }
        for name, run in torch_rows.items():
            rows[name]["torch"] = run
    return rows


# ---------------------------------------------------------------------------------------------
# (d) peak memory, each contender alone in a fresh process

def peak_memory_mb(contender, size):
    """Peak resident memory (MB) of one forward + backward, above the process's size before it (Linux).

    Each contender runs alone in a fresh interpreter (the kernel's high-water mark covers a whole
    process), with the C library's default allocator settings: keeping freed memory for reuse (see
    backend.reuse_freed_memory) raises PyTorch's peak, and this compares the libraries' own needs.
    """
    code = (
        "import tinyattn.app.bench as bench\n"
        f"torch = bench._import_torch() if {contender!r} == 'torch' else None\n"
        f"run = bench.mha_contenders({tuple(size)!r}, 'cpu', torch, only={contender!r})[{contender!r}]\n"
        "resident = bench.reset_peak_memory()\n"
        "run()\n"
        "print((bench.peak_memory() - resident) / 2**20)\n"
    )
    environment = dict(os.environ, TINYATTN_REUSE_MEMORY="0")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment)
    if result.returncode != 0:
        return None
    return float(result.stdout.strip().splitlines()[-1])


def reset_peak_memory():
    """Start the count of peak memory afresh; returns the resident memory now, in bytes (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # sets the kernel's high-water mark of resident memory to the current size
    except OSError:  # not allowed here: the mark then counts from the start of this (fresh) process
        pass
    return _status_bytes("VmRSS")


def peak_memory():
    """The peak resident memory in bytes since the reset: the process's own high-water mark (VmHWM).

    Not ru_maxrss: on Linux that keeps the parent's resident size at the moment of the fork, so a
    subprocess started by a big benchmark process would report the parent's size as its own peak.
    """
    return _status_bytes("VmHWM")


def _status_bytes(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # the kernel writes kB
    raise OSError(f"no {field} in /proc/self/status")


# ---------------------------------------------------------------------------------------------
# (e) a shared machine: the GPT step beside a busy process

# The busy neighbour: a pure spin loop in a child process. It dies with this process (Linux's
# parent-death signal, and a check of its parent now and then elsewhere), so that a benchmark
# killed mid-run never leaves a core spinning.
SPIN_LOOP = """\
import ctypes, os, signal, sys
try:
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass
parent = int(sys.argv[1])  # passed in: a parent that died before this line is not the one getppid() sees
while os.getppid() == parent:
    for _ in range(100000):
        pass
"""


def can_pause_processes():
    return hasattr(signal, "SIGSTOP") and hasattr(signal, "SIGCONT")


class BusyNeighbour:
    """A child process that keeps one core busy, resumed (SIGCONT) for a busy run and paused
    (SIGSTOP) again after it, so that quiet and busy runs interleave round by round."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-c", SPIN_LOOP, str(os.getpid())], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.pause()

    def pause(self):
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.process.pid, signal.SIGCONT)

    def beside(self, run):
        """`run`, timed while the neighbour spins."""
        def busy():
            self.resume()
            try:
                return run()
            finally:
                self.pause()

        return busy

    def stop(self):
        self.process.kill()
        self.process.wait()


def set_threads(n, torch=None):
    """n threads for tinyattn's matrix products and for PyTorch's ops (None: leave both as they are)."""
    if n is None:
        return
    if threads.can_set_num_threads():
        threads.set_num_threads(n)
    if torch is not None:
        torch.set_num_threads(n)


def contended_gpt(torch, thread_counts, rounds=None, on_round=None):
    """The GPT step of (b) at each thread count, quiet and beside a busy process, interleaved round by
    round: {threads: {"quiet": {contender: seconds}, "busy": {...}, "busy_over_quiet": {contender: ratio},
    "quartiles": the quartiles of the round-by-round ratios ta/torch ("quiet", "busy") and busy/quiet}}.

    `on_round(threads, text)` is told each round as it starts.
    """
    contenders = gpt_contenders("cpu", torch)
    neighbour = BusyNeighbour()
    results = {}
    try:
        for n in thread_counts:
            set_threads(n, torch)
            runs = {}
            for name, run in contenders.items():
                runs[(name, "quiet")] = run
                runs[(name, "busy")] = neighbour.beside(run)
            probe = contenders["tinyattn"]()
            samples = {}
            medians = interleaved(runs, rounds=rounds or _rounds_for(probe, budget=3.0, low=5, high=20),
                                  on_round=None if on_round is None else lambda text: on_round(n, text),
                                  samples=samples)
            row = {mode: {name: medians[(name, mode)] for name in contenders} for mode in ("quiet", "busy")}
            row["busy_over_quiet"] = {name: _ratio(row["busy"][name], row["quiet"][name]) for name in contenders}
            row["quartiles"] = {
                **{mode: ratio_spread(samples, ("tinyattn", mode), ("torch", mode)) for mode in ("quiet", "busy")},
                "busy_over_quiet": {name: ratio_spread(samples, (name, "busy"), (name, "quiet"))
                                    for name in contenders}}
            results[n] = row
    finally:
        neighbour.stop()
    return results


# ---------------------------------------------------------------------------------------------
# report


def _fmt_time(seconds):
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _ratio(a, b):
    return None if a is None or b is None else a / b


def _fmt_ratio(r, spread=None):
    """1.32, or with the quartiles of the round-by-round ratio: 1.32 (1.25-1.40)."""
    if r is None:
        return "-"
    return f"{r:.2f}" if spread is None else f"{r:.2f} ({spread[0]:.2f}-{spread[1]:.2f})"


# The tables with the quartiles need this many columns; a narrower terminal gets them without (the
# --json file always has them).
WIDE_TABLE = 96


def _cell(text, wide):
    """A column of a table with spreads: 17 wide, or 9 on a narrow terminal."""
    return f"{text:>17}" if wide else f"{text:>9}"


def machine_description(device):
    if device == "cuda":
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        return f"{props['name'].decode()} (CuPy {cupy.__version__})"

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, NumPy {np.__version__}"


def new_report(device, torch):
    """The results so far: `run` fills it part by part, so an interrupted run keeps what it measured."""
    return {"machine": machine_description(device), "device": device,
            "torch": None if torch is None else torch.__version__, "mha": [], "gpt": None,
            "overhead": None, "memory": None, "contended": None, "learner": None, "calls": None, "elementwise": None,
            "threads": None, "busy_cores": None,
            "interrupted": None}


def run(args, torch=None, report=None, emit=print, status=None):
    """Run the benchmarks `args` asks for; return the report (a dict, as written to --json).

    Each line of the table goes to `emit` as soon as its numbers are measured, and `status` (a
    progress.StatusLine) is told what is being measured. On Ctrl-C the KeyboardInterrupt goes up with
    `report` holding every part that finished and `report["interrupted"]` naming the part that did not.
    """
    device = args.device
    report = new_report(device, torch) if report is None else report
    started = time.perf_counter()
    wide = (terminal_width() or WIDE_TABLE) >= WIDE_TABLE  # a narrow terminal: ratios without quartiles

    def spread(quartiles):
        return quartiles if wide else None

    if status is not None:
        show = emit

        def emit(line):  # a result line replaces the status line; the next status is drawn below it
            status.clear()
            show(line)

    def doing(text):
        report["interrupted"] = text  # what Ctrl-C would interrupt
        if status is not None:
            status.show(f"bench: {text} | {progress.format_duration(time.perf_counter() - started)}")

    emit(f"tinyattn benchmark on {report['machine']}" + (f", PyTorch {torch.__version__}" if torch else ", no PyTorch"))
    if device == "cpu":  # both libraries compute with the same number of threads
        set_threads(getattr(args, "threads", None) or threads.available_cores())
        report["threads"] = threads.get_num_threads()
        if torch is not None:
            torch.set_num_threads(report["threads"])
        report["busy_cores"] = threads.busy_cores()  # how quiet the machine is: say it beside the figures
        busy = "" if report["busy_cores"] is None else (f"; other processes kept {report['busy_cores']:.1f} of "
                                                         f"{os.cpu_count()} cores busy at the start")
        emit(f"threads: {report['threads']} (tinyattn's matrix products" + (" and PyTorch" if torch else "")
             + ")" + busy)

    if "mha" in args.what:
        sizes = [tuple(s) for s in args.sizes] if args.sizes else MHA_SIZES + (GPU_EXTRA_SIZES if device == "cuda" else [])
        emit("")
        emit("(a) causal MultiHeadAttention forward + backward (median per call"
             + ("; ratios with the quartiles of their round-by-round values)" if wide else ")"))
        emit(f"{'(batch, tokens, d, heads)':<26} {'tinyattn':>10} {'numpy':>10} {'torch':>10} "
             f"{_cell('ta/numpy', wide)} {_cell('ta/torch', wide)}")
        for i, size in enumerate(sizes):
            what = f"(a) MultiHeadAttention at {size} ({i + 1} of {len(sizes)})"
            doing(f"{what}: setting up")
            contenders = mha_contenders(size, device, torch)
            probe = contenders["tinyattn"]()
            samples = {}
            medians = interleaved(contenders, rounds=args.rounds or _rounds_for(probe),
                                  on_round=lambda text: doing(f"{what}: {text}"), samples=samples)
            row = {"size": list(size), **{k: medians.get(k) for k in ("tinyattn", "numpy", "torch")}}
            for other in ("numpy", "torch"):
                row[f"ratio_{other}"] = _ratio(row["tinyattn"], row[other])
                row[f"ratio_{other}_quartiles"] = ratio_spread(samples, "tinyattn", other)
            report["mha"].append(row)
            emit(f"{str(size):<26} {_fmt_time(row['tinyattn']):>10} {_fmt_time(row['numpy']):>10} "
                 f"{_fmt_time(row['torch']):>10} "
                 f"{_cell(_fmt_ratio(row['ratio_numpy'], spread(row['ratio_numpy_quartiles'])), wide)} "
                 f"{_cell(_fmt_ratio(row['ratio_torch'], spread(row['ratio_torch_quartiles'])), wide)}")

    if "gpt" in args.what:
        emit("")
        emit("(b) one GPT training step (forward, backward, clip, AdamW), nanoGPT's CPU model")
        doing("(b) GPT training step: setting up")
        contenders = gpt_contenders(device, torch)
        probe = contenders["tinyattn"]()
        samples = {}
        medians = interleaved(contenders, rounds=args.rounds or _rounds_for(probe, budget=5.0, high=50),
                              on_round=lambda text: doing(f"(b) GPT training step: {text}"), samples=samples)
        report["gpt"] = {**medians, "ratio_torch": _ratio(medians["tinyattn"], medians.get("torch")),
                         "ratio_torch_quartiles": ratio_spread(samples, "tinyattn", "torch"), "config": GPT_CONFIG}
        emit(f"    tinyattn {_fmt_time(medians['tinyattn'])}   torch {_fmt_time(medians.get('torch'))}"
             f"   ta/torch {_fmt_ratio(report['gpt']['ratio_torch'], spread(report['gpt']['ratio_torch_quartiles']))}")

    if "overhead" in args.what and device == "cpu":
        emit("")
        emit("(c) cost per op on 4x4 tensors (median)")
        emit(f"{'op':<14}" + "".join(f" {h:>10} " for h in ("tinyattn", "numpy", "torch")) + f"{'ta/torch':>9}")
        report["overhead"] = {}
        doing("(c) cost per op: setting up")
        flagged = {}  # row name -> the contenders whose figure got a "!"
        for name, row in overhead_contenders(torch, rounds=args.rounds or OVERHEAD_ROUNDS,
                                             on_round=lambda op, text: doing(f"(c) cost per op, {op}: {text}")):
            report["overhead"][name] = row
            # a figure far off the others of its column (from the third row on) is flagged on its row
            flagged[name] = far_off(report["overhead"]).get(name, set())
            cells = "".join(f" {_fmt_time(row.get(k)):>10}" + ("!" if k in flagged[name] else " ")
                            for k in ("tinyattn", "numpy", "torch"))
            emit(f"{name:<14}{cells}{_fmt_ratio(_ratio(row.get('tinyattn'), row.get('torch'))):>9}")
        # the rows printed before there were enough to compare with are named below the table
        final = far_off(report["overhead"])
        late = [f"{name}'s {k} ({_fmt_time(report['overhead'][name][k])})"
                for name, columns in final.items() for k in sorted(columns - flagged[name])]
        report["overhead_far_off"] = {name: sorted(final.get(name, set()) | flagged[name])
                                      for name in report["overhead"] if final.get(name) or flagged[name]}
        if report["overhead_far_off"]:
            emit(fit(f"! over {FAR_OFF}x its column's median" + (f" (also {', '.join(late)})" if late else "")
                     + ": the machine was busy then; run it again"))

    if "memory" in args.what and device == "cpu":
        size = tuple(args.memory_size)
        emit("")
        emit(f"(d) peak memory of a forward + backward at {size}, MB above set-up")
        memory = {}
        for name in ("tinyattn", "numpy") + (("torch",) if torch else ()):
            doing(f"(d) peak memory at {size}: {name}, in a fresh process")
            memory[name] = peak_memory_mb(name, size)
        report["memory"] = {"size": list(size), **memory}
        emit("    " + "   ".join(f"{k} {v:.0f} MB" if v is not None else f"{k} -" for k, v in memory.items())
             + f"   ta/torch {_fmt_ratio(_ratio(memory.get('tinyattn'), memory.get('torch')))}")

    if "contended" in args.what and device == "cpu":
        emit("")
        emit("(e) the step of (b) beside a busy process (a spin loop in a child process), median per step")
        if not can_pause_processes():
            emit("    not measured: this system cannot pause a process (SIGSTOP)")
        else:
            emit(f"{'':<26} {_cell('tinyattn', wide)} {_cell('torch', wide)} {_cell('ta/torch', wide)}")
            most = report["threads"]
            counts = [most, 1] if most > 1 and threads.can_set_num_threads() else [most]
            report["contended"] = {}
            doing("(e) GPT step beside a busy process: setting up")
            results = contended_gpt(torch, counts, rounds=args.rounds,
                                    on_round=lambda n, text: doing(f"(e) GPT step beside a busy process, "
                                                                   f"{threads_label(n)}: {text}"))
            for n, row in results.items():
                report["contended"][str(n)] = row
                for mode in ("quiet", "busy"):
                    times = row[mode]
                    ratio = _fmt_ratio(_ratio(times.get('tinyattn'), times.get('torch')), spread(row['quartiles'][mode]))
                    emit(f"{threads_label(n) + ', ' + mode:<26} {_cell(_fmt_time(times.get('tinyattn')), wide)} "
                         f"{_cell(_fmt_time(times.get('torch')), wide)} {_cell(ratio, wide)}")
                slowdown, ranges = row["busy_over_quiet"], row["quartiles"]["busy_over_quiet"]
                emit(f"{'  busy / quiet':<26} {_cell(_fmt_ratio(slowdown.get('tinyattn'), spread(ranges.get('tinyattn'))), wide)} "
                     f"{_cell(_fmt_ratio(slowdown.get('torch'), spread(ranges.get('torch'))), wide)}")
            set_threads(most, torch)

    if "learner" in args.what and device == "cpu":
        emit("")
        emit("(f) learner loops, one training step as a lecture writes it, one thread (median CPU time per step"
             + ("; ratios with quartiles)" if wide else ")"))
        emit(f"{'loop':<21} {'tinyattn':>9} {'torch':>9} {_cell('ta/torch', wide)}")
        report["learner"] = {}
        set_threads(1, torch)  # one thread: no pool spins between contenders, so no pause is needed
        try:
            doing("(f) learner loops: setting up")
            for name, contenders in learner_contenders(torch).items():
                samples = {}
                medians = interleaved(contenders, rounds=args.rounds or LEARNER_ROUNDS, warmup=1, settle=0.0,
                                      samples=samples, on_round=lambda text: doing(f"(f) {name}: {text}"))
                row = {**medians, "ratio_torch": _ratio(medians["tinyattn"], medians.get("torch")),
                       "ratio_torch_quartiles": ratio_spread(samples, "tinyattn", "torch")}
                report["learner"][name] = row
                as_written = _fmt_ratio(row["ratio_torch"], spread(row["ratio_torch_quartiles"]))
                emit(f"{name:<21} {_fmt_time(row['tinyattn']):>9} {_fmt_time(row.get('torch')):>9} "
                     f"{_cell(as_written, wide)}")
            ratios = [row["ratio_torch"] for row in report["learner"].values() if row["ratio_torch"] is not None]
            report["learner_geometric_mean"] = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
            if report["learner_geometric_mean"] is not None:
                emit(f"{'geometric mean':<21} {'':>9} {'':>9} "
                     f"{_cell(_fmt_ratio(report['learner_geometric_mean']), wide)}")
        finally:
            set_threads(report["threads"], torch)

    if "calls" in args.what and device == "cpu":
        emit("")
        emit("(g) one call of a learner's step, one thread (median CPU time per call"
             + ("; ratios with quartiles)" if wide else ")"))
        emit(f"{'call':<27} {'tinyattn':>9} {'torch':>9} {'numpy':>9} {_cell('ta/torch', wide)} {'ta/numpy':>8}")
        report["calls"] = {}
        set_threads(1, torch)
        try:
            doing("(g) calls: setting up")
            for label, contenders in call_contenders(torch):
                samples = {}
                medians = interleaved(contenders, rounds=args.rounds or CALL_ROUNDS, warmup=1, settle=0.0,
                                      samples=samples, on_round=lambda text: doing(f"(g) {label}: {text}"))
                row = {"tinyattn": medians["tinyattn"], "torch": medians.get("torch"), "numpy": medians.get("numpy"),
                       "ratio_torch": _ratio(medians["tinyattn"], medians.get("torch")),
                       "ratio_torch_quartiles": ratio_spread(samples, "tinyattn", "torch"),
                       "ratio_numpy": _ratio(medians["tinyattn"], medians.get("numpy"))}
                report["calls"][label] = row
                emit(f"{label:<27} {_fmt_time(row['tinyattn']):>9} {_fmt_time(row.get('torch')):>9} "
                     f"{_fmt_time(row.get('numpy')):>9} "
                     f"{_cell(_fmt_ratio(row['ratio_torch'], spread(row['ratio_torch_quartiles'])), wide)} "
                     f"{_fmt_ratio(row['ratio_numpy']):>8}")
        finally:
            set_threads(report["threads"], torch)

    if "elementwise" in args.what and device == "cpu":
        shape = ELEMENTWISE_SHAPE
        emit("")
        emit(f"(h) elementwise work on a {shape} float32 tensor (median per call"
             + ("; ratios with quartiles)" if wide else ")"))
        emit(f"{'op':<20} {'tinyattn':>10} {'numpy':>10} {'torch':>10} {_cell('ta/numpy', wide)} "
             f"{_cell('ta/torch', wide)}")
        report["elementwise"] = {"shape": list(shape), "rows": {}}
        doing("(h) elementwise work: setting up")
        for name, calls in elementwise_contenders(torch, shape).items():
            samples = {}
            medians = interleaved({k: cpu_timer(call) for k, call in calls.items()},
                                  rounds=args.rounds or ELEMENTWISE_ROUNDS, warmup=1, samples=samples,
                                  on_round=lambda text: doing(f"(h) {name}: {text}"))
            row = {k: medians.get(k) for k in ("tinyattn", "numpy", "torch")}
            for other in ("numpy", "torch"):
                row[f"ratio_{other}"] = _ratio(medians["tinyattn"], medians.get(other))
                row[f"ratio_{other}_quartiles"] = ratio_spread(samples, "tinyattn", other)
            report["elementwise"]["rows"][name] = row
            emit(f"{name:<20} {_fmt_time(row['tinyattn']):>10} {_fmt_time(row.get('numpy')):>10} "
                 f"{_fmt_time(row.get('torch')):>10} "
                 f"{_cell(_fmt_ratio(row['ratio_numpy'], spread(row['ratio_numpy_quartiles'])), wide)} "
                 f"{_cell(_fmt_ratio(row['ratio_torch'], spread(row['ratio_torch_quartiles'])), wide)}")

    report["interrupted"] = None
    return report


def threads_label(n):
    return "1 thread" if n == 1 else f"{n} threads"


def _check_json_path(parser, path):
    """Refuse, before the run, a --json path that cannot be written (not after minutes of measuring)."""
    if os.path.isdir(path):
        parser.error(f"--json {path!r} is a directory: give a file name, e.g. {os.path.join(path, 'bench.json')!r}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        parser.error(f"--json {path!r}: its directory does not exist or cannot be written")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        parser.error(f"--json {path!r}: the file cannot be written")


# the parts of the benchmark: --what name -> (its letter in the output, what it measures)
SECTIONS = {"mha": ("a", "the causal MultiHeadAttention forward + backward"),
            "gpt": ("b", "one GPT training step"),
            "overhead": ("c", "the cost per op on 4x4 tensors"),
            "memory": ("d", "peak memory of (a) at one size"),
            "contended": ("e", "the step of (b) beside a busy process"),
            "learner": ("f", "four training loops as a lecture writes them"),
            "calls": ("g", "the single calls a learner's step makes"),
            "elementwise": ("h", "softmax, GELU, layer norm, AdamW and exp on an attention-sized tensor")}


def _print_line(text):
    print(fit(text), flush=True)  # each row as soon as it is measured, also into a pipe or a file


def main(argv=None):
    parser = ArgumentParser(prog="tinyattn bench", description=__doc__.split("\n\n")[0],
                            epilog="Progress (what is being measured) is shown on stderr when it is a "
                                   "terminal. Ctrl-C stops the run and keeps the figures measured so far.")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--what", nargs="+", default=list(SECTIONS), choices=list(SECTIONS), metavar="PART",
                        help="which parts to run (default: all): "
                             + "; ".join(f"{name} ({letter}) {text}" for name, (letter, text) in SECTIONS.items()))
    parser.add_argument("--sizes", nargs=4, type=int, action="append", metavar=("B", "T", "D", "H"),
                        help="an MHA size for (a) mha to time (repeatable); default: the standard list")
    parser.add_argument("--memory-size", nargs=4, type=int, default=list(MHA_SIZES[-1]), metavar=("B", "T", "D", "H"),
                        help=f"the MHA size of (d) memory (default: {' '.join(map(str, MHA_SIZES[-1]))})")
    parser.add_argument("--rounds", type=int, default=None,
                        help="timed rounds for every measurement (default: by duration for (a) mha and (b) gpt, "
                             f"{OVERHEAD_ROUNDS} for (c) overhead, {LEARNER_ROUNDS} for (f) learner, "
                             f"{CALL_ROUNDS} for (g) calls, {ELEMENTWISE_ROUNDS} for (h) elementwise)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON (a file name)")
    parser.add_argument("--no-torch", action="store_true", help="do not compare with PyTorch")
    add_threads_option(parser, "threads for both libraries (default: every core this process may use, "
                               f"here {threads.available_cores()})")
    args = parser.parse_args(argv)
    for size in (args.sizes or []) + [args.memory_size]:
        if min(size) < 1 or size[2] % size[3]:
            parser.error(f"a size (B, T, D, H) needs positive numbers and D divisible by H, got {tuple(size)}")
    if args.rounds is not None and args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.json:
        _check_json_path(parser, args.json)
    if args.device == "cuda" and not backend.cuda_is_available():
        print("tinyattn bench: error: --device cuda needs CuPy and a CUDA GPU", file=sys.stderr)
        return EXIT_BAD_INPUT

    status = progress.StatusLine()
    report = None
    try:
        status.show("bench: importing PyTorch" if not args.no_torch else "bench: starting", force=True)
        torch = None if args.no_torch else _import_torch()
        report = new_report(args.device, torch)
        with threads.using(threads.get_num_threads() if threads.can_set_num_threads() else None):
            run(args, torch, report, emit=_print_line, status=status)  # (the count from before is restored)
    except KeyboardInterrupt:
        status.clear()
        saved = report is not None and args.json and _write_json(report, args.json)
        part = report["interrupted"] if report is not None else "the start"
        print(fit(f"tinyattn bench: interrupted during {part}; the figures above are those that were measured"
                  + (f" (also in {args.json})" if saved else ""), sys.stderr), file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        status.clear()
    if args.json:
        if not _write_json(report, args.json):
            return 1
        print(f"\nwrote {args.json}")
    return 0


def _write_json(report, path):
    """Write the report; on failure say so in one line (the table is on the screen) and return False."""
    try:
        with open(path, "w") as f:
            json.dump(report, f, indent=2)
    except OSError as error:
        print(f"tinyattn bench: error: could not write {path!r}: {error.strerror or error}", file=sys.stderr)
        return False
    return True
