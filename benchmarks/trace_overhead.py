"""What tracing costs, and that it costs nothing measurable when no trace is active.

    python benchmarks/trace_overhead.py [--quick]

1. The price of the hook when no trace is active: the `if observers:` test that Function.apply, the
   backward loop and Module.__call__ run, timed alone, as a fraction of the cheapest op. Entering and
   leaving a trace leaves `autograd.observers` empty again, so this is all that tracing adds then.
2. Tiny ops (adds of 1-element tensors: the engine's own cost dominates) and a MultiHeadAttention
   forward + backward with no trace, with an observer that does nothing (the cost of calling the
   hooks), with a trace and with detect_anomaly, as ratios to no trace.

Times are the best of several runs, the conditions interleaved round by round so that a busy
machine slows them alike (the minimum is the least noisy estimate on a shared machine).
"""

import argparse
import contextlib
import sys
import timeit

import tinyattn
from tinyattn import autograd


class NullObserver:
    def on_forward(self, node, args, outputs):
        pass

    def on_backward(self, node, grads_out, grads_in):
        pass

    def on_module_enter(self, module):
        pass

    def on_module_exit(self, module):
        pass


class observing:
    def __init__(self, observer):
        self.observer = observer

    def __enter__(self):
        autograd.observers.append(self.observer)

    def __exit__(self, *exc):
        autograd.observers.remove(self.observer)


def best(fn, number, repeat):
    """Seconds per call: the best of `repeat` runs of `number` calls."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def workloads(quick):
    a = tinyattn.ones(1, requires_grad=True)
    b = tinyattn.ones(1)

    def tiny_ops():  # 100 recorded adds
        x = a
        for _ in range(100):
            x = x + b
        return x

    tinyattn.manual_seed(0)
    batch, tokens, width, heads = (4, 32, 64, 4) if quick else (8, 64, 128, 8)
    mha = tinyattn.nn.MultiHeadAttention(width, width, tokens, 0.1, heads)
    x = tinyattn.rand(batch, tokens, width)

    def attention():
        mha.zero_grad()
        mha(x).sum().backward()

    return [
        ("100 tiny adds (forward only)", tiny_ops, 100),
        (f"MHA fwd+bwd ({batch}x{tokens}x{width}, {heads} heads)", attention, 1),
    ]


def hook_check_cost(number):
    """Seconds per `if observers:` test, the empty loop's time subtracted."""
    observers = autograd.observers
    setup = {"observers": observers}
    checked = min(timeit.repeat("if observers:\n    pass", globals=setup, number=number, repeat=5))
    empty = min(timeit.repeat("pass", number=number, repeat=5))
    return max(checked - empty, 0.0) / number


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    args = parser.parse_args(argv)
    repeat = 5 if args.quick else 15
    loads = workloads(args.quick)
    number = {name: max(1, int(0.02 / best(fn, 1, 3))) for name, fn, _ in loads}  # about 20 ms per run

    modes = {
        "no trace": contextlib.nullcontext,
        "null observer": lambda: observing(NullObserver()),
        "trace": tinyattn.trace,
        "detect_anomaly": tinyattn.detect_anomaly,
    }
    times = {mode: {name: float("inf") for name, _, _ in loads} for mode in modes}
    for _ in range(repeat):
        for mode, context in modes.items():
            for name, fn, _ in loads:
                def run(fn=fn, context=context):
                    with context():
                        fn()
                times[mode][name] = min(times[mode][name], best(run, number[name], 1))
    assert autograd.observers == []

    print(f"tinyattn trace overhead (Python {sys.version.split()[0]}, best of {repeat})")
    print()
    check = hook_check_cost(2_000_000)
    cheapest = times["no trace"][loads[0][0]] / loads[0][2]
    print(f"no trace active: the `if observers:` test costs {check * 1e9:.1f} ns per op, "
          f"{100 * check / cheapest:.2f}% of the cheapest op ({cheapest * 1e6:.2f} us)")
    print()
    header = f"{'workload':<38} {'no trace':>11} {'null observer':>14} {'trace':>7} {'detect_anomaly':>15}"
    print(header)
    print("-" * len(header))
    for name, _, ops in loads:
        base = times["no trace"][name]
        per = f"{base * 1e6 / ops:.2f} us/op" if ops > 1 else f"{base * 1e3:.2f} ms"
        ratios = [times[mode][name] / base for mode in ("null observer", "trace", "detect_anomaly")]
        print(f"{name:<38} {per:>11} {ratios[0]:>13.2f}x {ratios[1]:>6.2f}x {ratios[2]:>14.2f}x")
    print()
    print("null observer: an observer whose four hooks do nothing (the cost of calling them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
