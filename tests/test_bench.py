"""The benchmark harness: its hand-derived NumPy reference is right, and a quick run reports sane numbers."""

import argparse
import io
import json
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest

import tinyattn
from tinyattn import nn
from tinyattn.app import bench


@pytest.mark.parametrize("size", [(2, 6, 8, 2), (3, 5, 12, 3)])
def test_the_numpy_reference_computes_what_tinyattn_computes(size):
    b, t, d, h = size
    tinyattn.manual_seed(0)
    module = nn.MultiHeadAttention(d, d, t, 0.0, h).double()
    with tinyattn.no_grad():
        module.out_proj.bias.normal_()  # a bias that is not zero, so that its gradient is checked
    x = tinyattn.randn(b, t, d, dtype=tinyattn.float64, requires_grad=True)
    out = module(x)
    out.sum().backward()

    weights = [p.detach().numpy() for p in (module.W_query.weight, module.W_key.weight, module.W_value.weight,
                                            module.out_proj.weight, module.out_proj.bias)]
    results = bench.numpy_mha_forward_backward(x.detach().numpy(), *weights, h)
    expected = [out, x.grad, module.W_query.weight.grad, module.W_key.weight.grad, module.W_value.weight.grad,
                module.out_proj.weight.grad, module.out_proj.bias.grad]
    for got, want in zip(results, expected):
        np.testing.assert_allclose(np.reshape(got, want.shape), want.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_interleaved_runs_every_contender_every_round_and_returns_medians(monkeypatch):
    monkeypatch.setattr(bench, "SETTLE_SECONDS", 0.0)
    calls = []
    samples = {"a": iter([3.0, 1.0, 2.0, 9.0, 9.0]), "b": iter([5.0, 4.0, 6.0, 9.0, 9.0])}

    def contender(name):
        def run():
            calls.append(name)
            return next(samples[name])
        return run

    medians = bench.interleaved({"a": contender("a"), "b": contender("b")}, rounds=3, warmup=0)
    assert medians == {"a": 2.0, "b": 5.0}
    assert calls == ["a", "b"] * 3  # turn by turn, so that a slow moment of the machine hits both


def test_the_cost_per_op_pauses_only_after_pytorch(monkeypatch, torch):
    """(c) times 4x4 ops: NumPy and tinyattn start no thread pool there, so they get no settling pause
    (a pause after every contender made six rows take 1.5 minutes); PyTorch's softmax wakes its
    OpenMP pool, so each PyTorch sample is followed by a short one. The larger parts keep theirs."""
    monkeypatch.setattr(bench, "SAMPLE_SECONDS", 0.001)
    pauses = []
    monkeypatch.setattr(bench.time, "sleep", pauses.append)
    rows = dict(bench.overhead_contenders(None, rounds=2))
    assert set(rows) >= {"add", "matmul", "softmax", "add+backward"} and all(rows[op]["tinyattn"] > 0 for op in rows)
    assert pauses and set(pauses) == {0.0}
    pauses.clear()
    rows = dict(bench.overhead_contenders(torch, rounds=2))
    samples = len(rows) * (2 + 2)  # a PyTorch sample per warm-up and per round, for each op
    assert pauses.count(bench.OVERHEAD_SETTLE_SECONDS) == samples
    assert set(pauses) == {0.0, bench.OVERHEAD_SETTLE_SECONDS}
    pauses.clear()
    bench.interleaved({"a": lambda: 1.0}, rounds=1, warmup=0)
    assert pauses == [bench.SETTLE_SECONDS] and bench.SETTLE_SECONDS > 0


def test_a_quick_benchmark_run_writes_its_table_and_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bench, "SETTLE_SECONDS", 0.0)  # no pauses and short samples: this checks the report
    monkeypatch.setattr(bench, "SAMPLE_SECONDS", 0.001)
    path = tmp_path / "bench.json"
    code = bench.main(["--what", "mha", "overhead", "--sizes", "2", "6", "4", "2", "--rounds", "1",
                       "--json", str(path)])
    assert code == 0
    text = capsys.readouterr().out
    assert "(a) causal MultiHeadAttention" in text and "(c) cost per op" in text
    report = json.loads(path.read_text())
    (row,) = report["mha"]
    assert row["size"] == [2, 6, 4, 2]
    assert row["tinyattn"] > 0 and row["numpy"] > 0
    assert row["ratio_numpy"] == pytest.approx(row["tinyattn"] / row["numpy"])
    assert set(report["overhead"]) >= {"add", "matmul", "softmax", "add+backward"}


def test_peak_memory_counts_the_subprocess_alone():
    # The parent holds 300 MB; the subprocess's forward + backward at a small size needs a few MB.
    # (ru_maxrss would report the parent's size: Linux keeps it across the fork.)
    if not sys.platform.startswith("linux"):
        pytest.skip("the memory benchmark reads /proc (Linux)")
    parent = np.ones(300 * 2**20, dtype=np.uint8)
    peak = bench.peak_memory_mb("numpy", (2, 16, 32, 4))
    assert parent.sum() > 0
    assert peak is not None and 0 <= peak < 50


def test_peak_memory_sees_a_big_array():
    if not sys.platform.startswith("linux"):
        pytest.skip("the memory benchmark reads /proc (Linux)")
    code = ("import numpy as np, tinyattn.app.bench as b\n"
            "start = b.reset_peak_memory()\n"
            "a = np.ones(100 * 2**20, dtype=np.uint8)\n"
            "del a\n"
            "print((b.peak_memory() - start) / 2**20)\n")
    grown = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert 95 <= grown <= 110  # the array is freed before the reading: only the peak remembers it


@pytest.mark.parametrize("argv, message", [
    (["--sizes", "1", "2", "5", "2"], "D divisible by H"),
    (["--sizes", "0", "2", "2", "1"], "positive numbers"),
    (["--rounds", "-3"], "--rounds must be at least 1"),
    (["--json", "/nonexistent-dir/x.json"], "cannot be written"),
    (["--json", "."], "is a directory: give a file name, e.g. "),
    (["--frobnicate"], "unrecognized arguments: --frobnicate (see tinyattn bench --help)"),
])
def test_bad_arguments_are_refused_before_the_run_in_one_line(capsys, monkeypatch, argv, message):
    monkeypatch.setattr(bench, "run", lambda *args, **kwargs: pytest.fail("the run started"))
    with pytest.raises(SystemExit) as exit:
        bench.main(argv + ["--what", "overhead", "--no-torch"])
    err = capsys.readouterr().err
    assert exit.value.code == 2 and message in err and len(err.strip().splitlines()) == 1, err


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def quick(monkeypatch):
    monkeypatch.setattr(bench, "SETTLE_SECONDS", 0.0)
    monkeypatch.setattr(bench, "SAMPLE_SECONDS", 0.001)


def test_rounds_reach_every_section_and_the_status_line_says_what_is_measured(monkeypatch):
    quick(monkeypatch)
    rounds_seen = []
    real = bench.interleaved

    def interleaved(contenders, rounds, **kwargs):
        rounds_seen.append(rounds)
        return real(contenders, rounds, **kwargs)

    monkeypatch.setattr(bench, "interleaved", interleaved)
    terminal = FakeTerminal()
    status = bench.progress.StatusLine(terminal, min_interval=0.0)
    lines = []
    args = argparse.Namespace(what=["mha", "overhead"], sizes=[[2, 6, 4, 2]], rounds=2, device="cpu")
    report = bench.run(args, None, emit=lines.append, status=status)
    assert rounds_seen == [2] * 7  # one MHA size and the six ops of (c): --rounds applies to (c) too
    drawn = terminal.getvalue()
    assert "bench: (a) MultiHeadAttention at (2, 6, 4, 2) (1 of 1): round 2/2" in drawn
    assert "bench: (c) cost per op, add+backward: round 2/2" in drawn
    assert report["interrupted"] is None and lines[-1].startswith("add+backward")


def test_ctrl_c_keeps_the_parts_measured_and_writes_them(tmp_path, capsys, monkeypatch):
    quick(monkeypatch)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "gpt_contenders", interrupted)  # Ctrl-C during (b), after (a)
    path = tmp_path / "bench.json"
    code = bench.main(["--what", "mha", "gpt", "--sizes", "2", "6", "4", "2", "--rounds", "1", "--no-torch",
                       "--json", str(path)])
    out, err = capsys.readouterr()
    assert code == 130
    assert "(2, 6, 4, 2)" in out and "(b) one GPT training step" in out  # the table so far
    assert err.splitlines() == [f"tinyattn bench: interrupted during (b) GPT training step: setting up; the "
                                f"figures above are those that were measured (also in {path})"]
    report = json.loads(path.read_text())
    assert report["mha"][0]["size"] == [2, 6, 4, 2] and report["gpt"] is None
    assert report["interrupted"] == "(b) GPT training step: setting up"


def test_a_json_file_that_cannot_be_written_after_the_run_is_one_line_and_the_table_stays(tmp_path, capsys,
                                                                                            monkeypatch):
    quick(monkeypatch)
    folder = tmp_path / "results"
    folder.mkdir()
    real = bench.run

    def run_then_lose_the_folder(*args, **kwargs):
        report = real(*args, **kwargs)
        folder.rmdir()
        return report

    monkeypatch.setattr(bench, "run", run_then_lose_the_folder)
    code = bench.main(["--what", "mha", "--sizes", "2", "6", "4", "2", "--rounds", "1", "--no-torch",
                       "--json", str(folder / "b.json")])
    out, err = capsys.readouterr()
    assert code == 1 and "(2, 6, 4, 2)" in out
    assert err.startswith("tinyattn bench: error: could not write") and len(err.splitlines()) == 1


SHAKESPEARE = pathlib.Path(__file__).parent.parent / "benchmarks" / "train_shakespeare.py"


def test_the_shakespeare_benchmark_refuses_a_missing_file_in_one_line_and_spells_no_torch_as_bench_does(tmp_path):
    result = subprocess.run([sys.executable, str(SHAKESPEARE), str(tmp_path / "nonexistent"), "--skip-torch"],
                            capture_output=True, text=True)  # the old spelling still works
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("train_shakespeare.py: error: data file") and "does not exist" in line
    usage = subprocess.run([sys.executable, str(SHAKESPEARE), "--help"], capture_output=True, text=True).stdout
    assert "--no-torch" in usage and "--skip-torch" not in usage


def test_ratio_spread_is_the_quartiles_of_the_round_by_round_ratios():
    samples = {"a": [2.0, 4.0, 6.0, 8.0, 10.0], "b": [1.0, 1.0, 1.0, 1.0, 1.0]}
    assert bench.ratio_spread(samples, "a", "b") == [4.0, 8.0]
    assert bench.ratio_spread({"a": [3.0], "b": [2.0]}, "a", "b") == [1.5, 1.5]
    assert bench.ratio_spread(samples, "a", "torch") is None  # no PyTorch: no spread
    seen = {}
    bench.interleaved({"a": lambda: 1.0, "b": lambda: 2.0}, rounds=2, warmup=0, samples=seen)
    assert seen == {"a": [1.0, 1.0], "b": [2.0, 2.0]}


def small_gpt(monkeypatch):
    monkeypatch.setattr(bench, "GPT_CONFIG", dict(block_size=8, batch_size=2, n_layer=1, n_head=2, n_embd=16,
                                                  dropout=0.0, vocab_size=11))


def test_the_contended_case_times_both_thread_counts_quiet_and_busy_and_stops_its_neighbour(tmp_path, capsys,
                                                                                           monkeypatch):
    quick(monkeypatch)
    small_gpt(monkeypatch)
    neighbours = []
    real = bench.BusyNeighbour

    class Watched(real):
        def __init__(self):
            super().__init__()
            neighbours.append(self.process)

    monkeypatch.setattr(bench, "BusyNeighbour", Watched)
    path = tmp_path / "bench.json"
    before = tinyattn.get_num_threads()
    argv = ["--what", "contended", "--rounds", "2", "--threads", "2", "--no-torch", "--json", str(path)]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    assert "threads: 2 (tinyattn's matrix products)" in out and "(e) the step of (b) beside a busy process" in out
    for label in ("2 threads, quiet", "2 threads, busy", "1 thread, quiet", "1 thread, busy", "busy / quiet"):
        assert label in out
    report = json.loads(path.read_text())
    assert report["threads"] == 2 and set(report["contended"]) == {"1", "2"}
    row = report["contended"]["2"]
    assert row["busy"]["tinyattn"] > 0 and row["quiet"]["tinyattn"] > 0
    assert row["busy_over_quiet"]["tinyattn"] == pytest.approx(row["busy"]["tinyattn"] / row["quiet"]["tinyattn"])
    assert len(row["quartiles"]["busy_over_quiet"]["tinyattn"]) == 2
    (neighbour,) = neighbours
    assert neighbour.poll() is not None  # no spinning process is left behind
    assert tinyattn.get_num_threads() == before  # the caller's count is back


def test_the_busy_neighbour_dies_with_the_benchmark_even_when_it_is_killed():
    program = ("import sys, time; from tinyattn.app import bench; n = bench.BusyNeighbour(); n.resume(); "
               "print(n.process.pid, flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    pid = int(parent.stdout.readline())
    parent.kill()  # SIGKILL: no finally, no atexit
    parent.wait()
    status = pathlib.Path(f"/proc/{pid}/status")
    for _ in range(100):
        if not status.exists() or "State:\tZ" in status.read_text():
            break
        time.sleep(0.05)
    assert not status.exists() or "State:\tZ" in status.read_text()


def test_one_thread_is_timed_with_one_thread_and_the_default_is_every_core_this_process_may_use(monkeypatch):
    quick(monkeypatch)
    args = argparse.Namespace(what=[], rounds=1, device="cpu", threads=None)
    assert bench.run(args, None, emit=lambda line: None)["threads"] == tinyattn.backend.threads.available_cores()
    args.threads = 1
    assert bench.run(args, None, emit=lambda line: None)["threads"] == 1


@pytest.mark.parametrize("columns, wide", [(80, False), (None, True)])
def test_tables_fit_an_80_column_terminal_and_keep_the_quartiles_elsewhere(monkeypatch, columns, wide):
    quick(monkeypatch)
    monkeypatch.setattr(bench, "terminal_width", lambda stream=None: columns)  # None: a pipe or a file
    lines = []
    args = argparse.Namespace(what=["mha"], sizes=[[2, 6, 4, 2]], rounds=3, device="cpu", threads=None)
    report = bench.run(args, None, emit=lines.append)
    table = [line for line in lines if line.startswith(("(a)", "(batch", "(2, 6"))]
    assert len(table) == 3
    assert all(len(line) < 80 for line in table) != wide
    assert ("(" in table[-1].split()[-2]) == wide  # the ta/numpy column: "7.16 (6.93-7.90)" or "7.16"
    assert report["mha"][0]["ratio_numpy_quartiles"] is not None  # the --json report has them either way


def test_the_learner_section_times_the_four_loops_on_one_thread_and_fits_80_columns(monkeypatch):
    quick(monkeypatch)
    monkeypatch.setattr(bench, "terminal_width", lambda stream=None: 80)
    threads_seen = []
    real = bench.interleaved

    def interleaved(contenders, rounds, **kwargs):
        threads_seen.append(tinyattn.backend.threads.get_num_threads())
        return real(contenders, rounds, **kwargs)

    monkeypatch.setattr(bench, "interleaved", interleaved)
    lines = []
    args = argparse.Namespace(what=["learner"], rounds=1, device="cpu", threads=None)
    started = time.perf_counter()
    report = bench.run(args, None, emit=lines.append)
    assert time.perf_counter() - started < 30
    assert list(report["learner"]) == list(bench.learner_loops.LOOPS)
    assert all(row["tinyattn"] > 0 and row["ratio_torch"] is None for row in report["learner"].values())
    if tinyattn.backend.threads.can_set_num_threads():
        assert threads_seen == [1] * 4
        assert tinyattn.backend.threads.get_num_threads() == report["threads"]  # restored after the section
    table = lines[lines.index(next(line for line in lines if line.startswith("(f)"))) + 1:]
    assert table[0].split()[:3] == ["loop", "tinyattn", "torch"]
    assert [line.split()[0] for line in table[1:]] == ["embedding", "batch", "full-batch", "20"]
    assert all(len(line) <= 80 for line in table)


@pytest.mark.parametrize("name", list(bench.learner_loops.LOOPS))
def test_each_learner_loop_is_the_same_program_on_both_libraries(torch, name):
    """The same source text, the same seed: the same data and weights, so the same losses step by step."""
    make = bench.learner_loops.LOOPS[name]
    ours, theirs = make(tinyattn), make(torch)
    for _ in range(3):
        mine, yours = ours[0]().item(), theirs[0]().item()
        assert mine == pytest.approx(yours, rel=1e-5, abs=1e-6)
    for p, q in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_the_calls_section_times_every_call_on_one_thread_and_fits_80_columns(monkeypatch):
    quick(monkeypatch)
    monkeypatch.setattr(bench, "terminal_width", lambda stream=None: 80)
    threads_seen = []
    real = bench.interleaved

    def interleaved(contenders, rounds, **kwargs):
        threads_seen.append(tinyattn.backend.threads.get_num_threads())
        return real(contenders, rounds, **kwargs)

    monkeypatch.setattr(bench, "interleaved", interleaved)
    lines = []
    args = argparse.Namespace(what=["calls"], rounds=1, device="cpu", threads=None)
    report = bench.run(args, None, emit=lines.append)
    labels = [label for label, _, _ in bench.learner_loops.CALLS]
    assert list(report["calls"]) == labels
    for (label, _, numpy_make), row in zip(bench.learner_loops.CALLS, report["calls"].values()):
        assert row["tinyattn"] > 0 and row["torch"] is None and row["ratio_torch"] is None
        assert (row["numpy"] is not None) == (numpy_make is not None), label  # the floor where there is one
    if tinyattn.backend.threads.can_set_num_threads():
        assert threads_seen == [1] * len(labels)
        assert tinyattn.backend.threads.get_num_threads() == report["threads"]  # restored after the section
    table = lines[lines.index(next(line for line in lines if line.startswith("(g)"))) + 1:]
    assert table[0].split()[:4] == ["call", "tinyattn", "torch", "numpy"]
    assert [line[:27].rstrip() for line in table[1:]] == labels
    assert all(len(line) <= 80 for line in table)


def test_the_calls_table_has_the_rows_a_learners_step_makes():
    labels = " | ".join(label for label, _, _ in bench.learner_loops.CALLS)
    for needed in ["a + b", "a.sum()", "x @ W + b", "C[ix]", "C[ix].view", "F.cross_entropy", "F.softmax",
                   "nn.LayerNorm", "nn.Linear", "nn.Embedding", "Module.__call__", "nn.LSTM", "bi-LSTM",
                   "F.dropout", "tanh", "exp", "log", "x[3]", "x[2:10]", "x[0-d tensor]", "x[index", "x[bool mask]",
                   "zero_grad", "SGD step", "AdamW step", "clip_grad_norm_", "rand(", "randn(32)", "randn(32, 30)",
                   "randint(", "multinomial", "DataLoader", "backward", "W.data += -0.1 * W"]:
        assert needed in labels, needed
    assert len(set(labels.split(" | "))) == len(bench.learner_loops.CALLS)  # one row each


def _host(result):
    if isinstance(result, (list, tuple)):
        return [_host(r) for r in result]
    if hasattr(result, "detach"):
        return result.detach().numpy()
    return result


@pytest.mark.parametrize("label, make", [(label, make) for label, make, _ in bench.learner_loops.CALLS],
                         ids=[label for label, _, _ in bench.learner_loops.CALLS])
def test_each_call_is_the_same_call_on_both_libraries(torch, label, make):
    """The same source text, the same seed: the same numbers from both libraries, call after call."""
    tinyattn.manual_seed(0)
    ours = make(tinyattn)
    torch.manual_seed(0)
    theirs = make(torch)
    for _ in range(2):
        mine, yours = _host(ours()), _host(theirs())
        for a, b in zip(mine if isinstance(mine, list) else [mine], yours if isinstance(yours, list) else [yours]):
            if isinstance(a, np.ndarray):
                assert a.shape == b.shape and a.dtype == b.dtype
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=label)
            else:
                assert (a is None) == (b is None), label


@pytest.mark.parametrize("label, numpy_make", [(label, numpy_make) for label, _, numpy_make
                                               in bench.learner_loops.CALLS if numpy_make is not None],
                         ids=[label for label, _, numpy_make in bench.learner_loops.CALLS if numpy_make is not None])
def test_each_numpy_floor_is_the_call_in_numpy(label, numpy_make):
    """Each floor runs on NumPy arrays alone and gives an array of the call's shape."""
    make = next(make for name, make, _ in bench.learner_loops.CALLS if name == label)
    tinyattn.manual_seed(0)
    ours = make(tinyattn)()
    floor = numpy_make()()
    if label.startswith("W.data"):  # (an update in place: nothing returned)
        return
    assert isinstance(floor, (np.ndarray, np.generic)), label
    if label == "x[bool mask]":  # (its own random numbers: another count of True)
        assert np.ndim(floor) == ours.ndim
    else:
        assert np.shape(floor) == tuple(ours.shape), label


def test_the_elementwise_table_has_every_row_for_every_contender(tmp_path, capsys, monkeypatch, torch):
    """(g): one row per op, tinyattn against NumPy written directly and PyTorch, with ratios (the
    shape made small: this checks the table, not the timings)."""
    quick(monkeypatch)
    monkeypatch.setattr(bench, "ELEMENTWISE_SHAPE", (2, 3, 8, 16))
    path = tmp_path / "bench.json"
    assert bench.main(["--what", "elementwise", "--rounds", "1", "--json", str(path)]) == 0
    text = capsys.readouterr().out
    assert "(h) elementwise work on a (2, 3, 8, 16) float32 tensor" in text
    report = json.loads(path.read_text())["elementwise"]
    names = ["exp", "softmax", "softmax fwd+bwd", "gelu", "gelu tanh", "layer norm", "layer norm fwd+bwd", "AdamW step"]
    assert report["shape"] == [2, 3, 8, 16] and list(report["rows"]) == names
    for name, row in report["rows"].items():
        assert row["tinyattn"] > 0 and row["numpy"] > 0 and row["torch"] > 0
        assert row["ratio_torch"] == pytest.approx(row["tinyattn"] / row["torch"])
        assert row["ratio_numpy"] == pytest.approx(row["tinyattn"] / row["numpy"])
        line = next(line for line in text.splitlines() if line.startswith(name + " "))
        assert f"{row['ratio_torch']:.2f}" in line


@pytest.mark.parametrize("name", ["softmax", "softmax fwd+bwd", "gelu", "gelu tanh", "layer norm",
                                  "layer norm fwd+bwd"])
def test_the_elementwise_numpy_floor_computes_what_tinyattn_computes(name):
    """The NumPy column of (g) is the same math: its results equal tinyattn's to float32 rounding."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8, 16)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    t = tinyattn.from_numpy(x.copy()).requires_grad_()
    F = nn.functional
    forward = {"softmax": lambda: t.softmax(-1), "gelu": lambda: F.gelu(t),
               "gelu tanh": lambda: F.gelu(t, approximate="tanh"), "layer norm": lambda: F.layer_norm(t, (16,))}
    base = name.replace(" fwd+bwd", "")
    out = forward[base]()
    if name.endswith("fwd+bwd"):
        out.backward(tinyattn.from_numpy(g))
        ours = t.grad.numpy()
        theirs = {"softmax": bench.numpy_softmax, "layer norm": bench.numpy_layer_norm}[base](x, g)
    else:
        ours = out.detach().numpy()
        theirs = {"softmax": bench.numpy_softmax, "layer norm": bench.numpy_layer_norm, "gelu": bench.numpy_gelu,
                  "gelu tanh": bench.numpy_gelu_tanh}[base](x)
    np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=2e-6)


def test_the_elementwise_numpy_adamw_step_is_the_optimizers_step():
    rng = np.random.default_rng(1)
    p0, g = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    param = tinyattn.nn.Parameter(tinyattn.from_numpy(p0.copy()))
    optimizer = tinyattn.optim.AdamW([param], lr=1e-3)
    state = [p0.copy(), g, np.zeros_like(p0), np.zeros_like(p0), 0]
    for _ in range(3):
        param.grad = tinyattn.from_numpy(g.copy())
        optimizer.step()
        state[-1] += 1
        bench.numpy_adamw_step(*state)
    np.testing.assert_allclose(state[0], param.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_the_elementwise_table_without_pytorch_compares_with_numpy_only(tmp_path, capsys, monkeypatch):
    quick(monkeypatch)
    monkeypatch.setattr(bench, "ELEMENTWISE_SHAPE", (2, 3, 8, 16))
    path = tmp_path / "bench.json"
    assert bench.main(["--what", "elementwise", "--rounds", "1", "--no-torch", "--json", str(path)]) == 0
    rows = json.loads(path.read_text())["elementwise"]["rows"]
    assert len(rows) == 8 and all(row["torch"] is None and row["ratio_torch"] is None for row in rows.values())
    assert all(row["ratio_numpy"] > 0 for row in rows.values())
