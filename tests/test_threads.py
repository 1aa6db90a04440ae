"""Threads: tinyattn.set_num_threads / get_num_threads (NumPy's BLAS pool, through threadpoolctl), the
commands' --threads, and the work tinyattn spreads over the cores itself (tinyattn.backend.parallel), which
must give the same numbers, bit for bit, however many parts it makes."""

import os

import numpy as np
import pytest

import tinyattn
from tinyattn import nn
from tinyattn.backend import parallel, threads
from tinyattn.app import cli
from tinyattn.nn import functional as F


@pytest.fixture(autouse=True)
def splitting(monkeypatch):
    """The splits under test are off by default (they do not pay on every machine): on here."""
    monkeypatch.setattr(parallel, "enabled", True)


@pytest.fixture
def restore_threads():
    before = threads.get_num_threads()
    yield
    threads.set_num_threads(before)


def test_set_and_get_num_threads_under_pytorchs_names(restore_threads):
    assert tinyattn.set_num_threads is threads.set_num_threads
    assert tinyattn.get_num_threads is threads.get_num_threads
    tinyattn.set_num_threads(1)
    assert tinyattn.get_num_threads() == 1
    tinyattn.set_num_threads(2)
    assert tinyattn.get_num_threads() == 2


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", None])
def test_set_num_threads_refuses_what_is_not_a_positive_int(bad):
    with pytest.raises(ValueError, match="set_num_threads expects a positive integer, got"):
        tinyattn.set_num_threads(bad)


def test_using_sets_the_count_for_a_block_and_restores_it_even_after_an_error(restore_threads):
    threads.set_num_threads(2)
    with threads.using(1):
        assert threads.get_num_threads() == 1
    assert threads.get_num_threads() == 2
    with pytest.raises(KeyError):
        with threads.using(1):
            raise KeyError("inside")
    assert threads.get_num_threads() == 2
    with threads.using(None):  # None: unchanged
        assert threads.get_num_threads() == 2


def test_a_count_set_from_another_thread_takes_effect(restore_threads):
    # threadpoolctl 3.8 lets only the first Python thread that sets OpenBLAS's count set it again
    import threading

    threads.set_num_threads(2)
    worker = threading.Thread(target=threads.set_num_threads, args=(1,))
    worker.start()
    worker.join()
    assert threads.get_num_threads() == 1


def test_available_cores_are_the_ones_this_process_may_use():
    if hasattr(os, "sched_getaffinity"):
        assert threads.available_cores() == len(os.sched_getaffinity(0))
    assert 1 <= threads.available_cores() <= (os.cpu_count() or 1)


def test_without_threadpoolctl_the_count_comes_from_the_environment_and_cannot_be_set(monkeypatch):
    monkeypatch.setattr(threads, "threadpoolctl", None)
    monkeypatch.setattr(threads, "_controller", None)
    for name in threads.ENVIRONMENT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert threads.get_num_threads() == threads.available_cores()
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert threads.get_num_threads() == 1
    assert not threads.can_set_num_threads()
    with pytest.raises(RuntimeError, match="pip install threadpoolctl"):
        threads.set_num_threads(1)
    assert parallel.parts_for(10**8) == 1  # no parts either: the BLAS could not be kept to one thread each


# ---------------------------------------------------------------------------------------------
# the commands' --threads


def test_train_and_generate_take_threads_and_leave_the_count_as_they_found_it(capsys, tmp_path, restore_threads):
    corpus = tmp_path / "input.txt"
    corpus.write_text("When forty winters shall besiege thy brow,\n" * 20, encoding="utf-8")
    small = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "8", "--batch-size", "2",
             "--eval-iters", "1", "--sample-tokens", "5", "--steps", "2"]
    threads.set_num_threads(2)
    assert cli.main(["train", "--data", str(corpus), "--out", str(tmp_path / "a"), "--threads", "1", *small]) == 0
    assert ", 1 thread\n" in capsys.readouterr().out.splitlines(keepends=True)[2]  # the header's third line
    assert threads.get_num_threads() == 2
    assert cli.main(["train", "--data", str(corpus), "--out", str(tmp_path / "b"), *small]) == 0
    default = threads.COMMAND_DEFAULT
    assert f", {default} thread{'s' if default > 1 else ''}\n" in capsys.readouterr().out.splitlines(keepends=True)[2]
    assert cli.main(["generate", "--ckpt", str(tmp_path / "a"), "--tokens", "5", "--threads", "1"]) == 0
    assert threads.get_num_threads() == 2


@pytest.mark.parametrize("argv", [["train", "--threads", "0"], ["generate", "--threads", "two"],
                                  ["bench", "--threads", "-1"], ["train", "--threads", "1.5"],
                                  ["bench", "--threads", ""]])
def test_a_bad_thread_count_is_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exit:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exit.value.code == 2 and "--threads: expected a positive integer" in err
    assert len(err.strip().splitlines()) == 1


def test_threads_without_threadpoolctl_is_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(threads, "threadpoolctl", None)
    monkeypatch.setattr(threads, "_controller", None)
    assert cli.main(["generate", "--ckpt", str(tmp_path), "--threads", "1"]) == 2
    err = capsys.readouterr().err
    assert "--threads needs threadpoolctl" in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------------
# tinyattn.backend.parallel: the same numbers, whatever the number of parts


@pytest.fixture
def parts(monkeypatch, restore_threads):
    """parts(n): from then on the work is split into up to n parts (outside a parallel region) down to
    pieces of backend.BLAS_SUM_MIN_SIZE elements (in use they are larger: MIN_ELEMENTS_PER_PART), while
    the BLAS keeps one thread: only the split changes, not the BLAS's products."""
    from tinyattn import backend

    threads.set_num_threads(1)
    count = [1]

    def parts_for(elements):
        if getattr(parallel._inside, "active", False):
            return 1
        return max(1, min(count[0], elements // backend.BLAS_SUM_MIN_SIZE))

    monkeypatch.setattr(parallel, "parts_for", parts_for)

    def use(n):
        count[0] = n

    return use


def results_of(run, parts, counts=(1, 2, 3)):
    """run() under each count of parts: a list of lists of arrays."""
    out = []
    for count in counts:
        parts(count)
        out.append([np.array(r, copy=True) for r in run()])
    return out


def assert_all_equal(results):
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def grads_of(module, x, forward):
    module.zero_grad()
    x.grad = None
    out = forward()
    (out * out).sum().backward()
    return [out.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in module.parameters()]


@pytest.mark.parametrize("dtype", [tinyattn.float32, tinyattn.float64])
def test_gelu_layer_norm_and_attention_give_the_same_bits_in_any_number_of_parts(parts, dtype):
    tinyattn.manual_seed(0)
    x = tinyattn.randn(8, 33, 12, dtype=dtype, requires_grad=True)  # 264 rows: 16-row blocks and a rest
    for approximate in ("tanh", "none"):
        gelu = nn.GELU(approximate=approximate)
        assert_all_equal(results_of(lambda: grads_of(gelu, x, lambda: gelu(x * 3)), parts))
    norm = nn.LayerNorm(12).to(dtype)
    with tinyattn.no_grad():
        norm.weight.normal_()
        norm.bias.normal_()
    assert_all_equal(results_of(lambda: grads_of(norm, x, lambda: norm(x)), parts))
    mha = nn.MultiHeadAttention(12, 12, 33, 0.0, 3).to(dtype)
    assert_all_equal(results_of(lambda: grads_of(mha, x, lambda: mha(x)), parts))


def test_attention_with_dropout_and_shared_or_broadcast_masks_gives_the_same_bits_in_parts(parts):
    tinyattn.manual_seed(1)
    q, k, v = (tinyattn.randn(4, 2, 24, 3, requires_grad=True) for _ in range(3))
    keep = F.dropout_mask((4, 2, 24, 24), 0.3, q)
    bias = tinyattn.randn(1, 2, 24, 24)
    blocked = tinyattn.rand(4, 1, 24, 24) > 0.7

    def run():
        for t in (q, k, v):
            t.grad = None
        context, weights = F.attention(q, k, v, blocked=blocked, bias=bias, dropout_keep=keep)
        (context.sum() + (weights * weights).sum()).backward()
        return [context.detach().numpy(), weights.detach().numpy(), q.grad.numpy(), k.grad.numpy(), v.grad.numpy()]

    assert_all_equal(results_of(run, parts))


def test_an_error_in_a_part_reaches_the_caller_and_the_workers_keep_working(parts):
    parts(2)

    def part(index):
        if index == 1:
            raise ZeroDivisionError("in part 1")

    with pytest.raises(ZeroDivisionError, match="in part 1"):
        parallel.run(part, 2)
    seen = []
    parallel.run(seen.append, 3)
    assert sorted(seen) == [0, 1, 2]


def test_bounds_cover_the_range_once_in_aligned_pieces():
    for length in (0, 1, 7, 64, 1000):
        for count in (1, 2, 3, 5):
            pieces = [parallel.bounds(length, count, i, align=8) for i in range(count)]
            assert pieces[0][0] == 0 and pieces[-1][1] == length
            assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))
            assert all(start % 8 == 0 or start == length for start, _ in pieces)
            assert length == 1 or all(stop - start != 1 for start, stop in pieces)  # never one row alone


def test_parts_compute_with_the_callers_silent_float_errors(parts, recwarn):
    parts(2)
    x = tinyattn.full((64, 40), 1e30, requires_grad=True)  # x * x overflows inside GELU, silently as in PyTorch
    nn.GELU(approximate="tanh")(x).sum().backward()
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("make", [lambda ps: tinyattn.optim.AdamW(ps, lr=0.1, weight_decay=0.1),
                                  lambda ps: tinyattn.optim.SGD(ps, lr=0.1, momentum=0.9)])
def test_an_optimizer_step_over_the_parameters_in_parts_gives_the_same_weights(parts, make):
    def run():
        tinyattn.manual_seed(2)
        params = [tinyattn.randn(*shape, requires_grad=True) for shape in ((3, 5), (7,), (4, 4), (1,), (9, 2))]
        optimizer = make(params)
        for _ in range(3):
            for p in params:
                p.grad = tinyattn.randn(*p.shape)
            optimizer.step()
        return [p.detach().numpy() for p in params]

    assert_all_equal(results_of(run, parts))


def test_for_each_runs_every_item_once_in_order_within_its_piece(parts):
    parts(3)
    seen = []
    parallel.for_each(seen.append, list(range(10)), [1, 1, 1, 50, 1, 1, 1, 1, 30, 1])
    assert sorted(seen) == list(range(10))


def test_stacked_products_are_one_blas_thread_each_so_their_bits_do_not_depend_on_the_count(restore_threads):
    from tinyattn import backend

    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 256, 64)).astype(np.float32)
    b = rng.standard_normal((2, 3, 64, 256)).astype(np.float32)
    with threads.using(1):
        one_by_one = np.stack([np.stack([a[i, j] @ b[i, j] for j in range(3)]) for i in range(2)])
    for count in (1, 2, 3):
        threads.set_num_threads(count)
        np.testing.assert_array_equal(backend.matmul(a, b), one_by_one)


# random shapes, odd sizes, empty tensors and single rows: the split never changes a bit

from hypothesis import given, strategies as st  # noqa: E402


@given(lead=st.lists(st.integers(0, 40), min_size=1, max_size=2), features=st.integers(1, 17),
       affine=st.booleans(), seed=st.integers(0, 2**16))
def test_gelu_and_layer_norm_of_any_shape_give_the_same_bits_in_parts(parts, lead, features, affine, seed):
    shape = tuple(lead) + (features,)
    tinyattn.manual_seed(seed)
    x = (tinyattn.randn(*shape, dtype=tinyattn.float64) * 3).requires_grad_()
    for approximate in ("tanh", "none"):
        gelu = nn.GELU(approximate=approximate)
        assert_all_equal(results_of(lambda: grads_of(gelu, x, lambda: gelu(x)), parts, counts=(1, 2, 3, 4)))
    norm = nn.LayerNorm(features, elementwise_affine=affine).double()
    if affine:
        with tinyattn.no_grad():
            norm.weight.normal_()
            norm.bias.normal_()
    assert_all_equal(results_of(lambda: grads_of(norm, x, lambda: norm(x)), parts, counts=(1, 2, 3, 4)))


@given(batch=st.integers(0, 5), heads=st.integers(1, 3), queries=st.integers(1, 40), keys=st.integers(1, 40),
       embed=st.integers(1, 5), masked=st.booleans(), dropped=st.booleans(), seed=st.integers(0, 2**16))
def test_attention_of_any_shape_gives_the_same_bits_in_parts(parts, batch, heads, queries, keys, embed, masked,
                                                            dropped, seed):
    tinyattn.manual_seed(seed)
    q = tinyattn.randn(batch, heads, queries, embed, requires_grad=True)
    k, v = (tinyattn.randn(batch, heads, keys, embed, requires_grad=True) for _ in range(2))
    blocked = tinyattn.rand(batch, 1, queries, keys) > 0.6 if masked else None  # some rows fully masked
    keep = F.dropout_mask((batch, heads, queries, keys), 0.3, q) if dropped else None

    def run():
        for t in (q, k, v):
            t.grad = None
        context, weights = F.attention(q, k, v, blocked=blocked, dropout_keep=keep)
        (context * context).sum().backward()
        return [context.detach().numpy(), weights.detach().numpy(), q.grad.numpy(), k.grad.numpy(), v.grad.numpy()]

    assert_all_equal(results_of(run, parts, counts=(1, 2, 3)))


@given(batch=st.lists(st.integers(0, 4), min_size=1, max_size=2), m=st.integers(0, 90), k=st.integers(0, 90),
       n=st.integers(0, 90), seed=st.integers(0, 2**16))  # split from 64 x 64 x 64 multiply-adds on
def test_stacked_products_of_any_shape_give_one_products_bits_in_parts(parts, batch, m, k, n, seed):
    from tinyattn import backend

    rng = np.random.default_rng(seed)
    a = rng.standard_normal((*batch, m, k)).astype(np.float32)
    b = rng.standard_normal((*batch, k, n)).astype(np.float32)
    expected = np.matmul(a, b)  # NumPy, one matrix at a time, on the fixture's one BLAS thread
    for count in (1, 2, 3):
        parts(count)
        np.testing.assert_array_equal(backend.matmul(a, b), expected)


def test_a_training_run_gives_the_same_losses_and_weights_in_any_number_of_parts(parts):
    from tinyattn.app.training import TrainConfig, train

    text = "When forty winters shall besiege thy brow,\nAnd dig deep trenches in thy beauty's field,\n" * 20
    config = TrainConfig(steps=3, batch_size=4, block_size=32, n_layer=2, n_head=2, n_embd=32, dropout=0.1,
                         eval_interval=3, eval_iters=1)  # 128 rows of 32 channels: up to 3 parts

    def run():
        result = train(config, text, quiet=True)
        return [np.array(result.losses)] + [p.detach().numpy() for p in result.model.parameters()]

    assert_all_equal(results_of(run, parts, counts=(1, 2, 3)))


def test_ctrl_c_during_a_parallel_region_waits_for_the_parts_and_leaves_the_workers_ready(parts):
    import signal
    import time

    finished = []

    def part(index):
        if index == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the caller waits for this part
            time.sleep(0.2)
            finished.append(index)

    with pytest.raises(KeyboardInterrupt):
        parallel.run(part, 2)
    assert finished == [1]  # run() returned only after the part had finished writing
    parts(2)
    rows = np.arange(4096.0).reshape(2048, 2)
    np.testing.assert_array_equal(parallel.map_rows(lambda piece: piece * 2, rows, align=1), rows * 2)


def test_a_region_gives_the_blas_its_thread_count_back(restore_threads):
    threads.set_num_threads(2)
    seen = []
    parallel.run(lambda index: seen.append(threads.get_num_threads()), 2)
    assert seen == [1, 1] and threads.get_num_threads() == 2  # one BLAS thread per part inside, 2 after
    with parallel.single_blas_thread():
        assert threads.get_num_threads() == 1
    assert threads.get_num_threads() == 2


def test_parts_are_one_per_thread_and_only_for_arrays_that_pay(restore_threads):
    threads.set_num_threads(2)
    assert parallel.parts_for(parallel.MIN_ELEMENTS_PER_PART - 1) == 1
    assert parallel.parts_for(10 * parallel.MIN_ELEMENTS_PER_PART) == 2
    threads.set_num_threads(1)
    assert parallel.parts_for(10 * parallel.MIN_ELEMENTS_PER_PART) == 1


def test_busy_cores_sees_a_spinning_process():
    import subprocess
    import sys

    if threads.busy_cores(0.05) is None:
        pytest.skip("no /proc/stat here")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = threads.busy_cores(0.5)
    finally:
        spinner.kill()
        spinner.wait()
    assert 0.5 <= busy <= os.cpu_count()
