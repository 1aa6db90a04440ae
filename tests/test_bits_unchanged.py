"""The engine's results: 20 steps of each learner loop and of the default GPT's training.

Two promises, each checked so that it holds on any CPU (AVX2, AVX-512, ARM):

- The fast paths give the plain path's bits. The blocks, the threads and the split of an optimizer's
  step over the cores (tinyattn.backend.parallel) promise the same numbers, bit for bit, as the whole arrays on
  one thread. Each loop runs both ways in the same process, with blocks small enough that the loops'
  arrays go through them, and every loss and every weight must be equal to the last bit. A fast path
  that moves a single bit fails here, on whatever CPU the suite runs.
- The numbers are those the engine has always given. The losses and per-tensor sums recorded below
  (`python tests/test_bits_unchanged.py` prints them afresh) are compared to what float32 allows across
  CPUs, not to the last bit: NumPy's vectorised exp/log/tanh and OpenBLAS's product kernels are chosen
  by CPU at run time, so the last bits are not the same on every machine. Measured on one AVX-512 machine
  with the other kernels it can run (NumPy's AVX2 and baseline kernels through NPY_DISABLE_CPU_FEATURES,
  OpenBLAS's Haswell and Prescott kernels through OPENBLAS_CORETYPE): losses within 2.1e-7 of the
  recorded ones (relative, under 2 float32 steps), sums within 1e-7 of the sum of the tensor's absolute
  values, or 1.1e-7 for a tensor whose elements are all near zero. The bounds below are 10 to 100
  times that; a change of the math (a missing term, another formula, a wrong gradient) moves them by far
  more.
"""

import numpy as np
import pytest

import tinyattn
from tinyattn.backend import parallel, threads
from tinyattn.app import learner_loops
from tinyattn.app.text_data import default_corpus
from tinyattn.app.training import TrainConfig, train

STEPS = 20
FAST_STEPS = 5
LOSS_RTOL = 4e-6  # relative, about 32 float32 steps
SUM_RTOL = 1e-5  # of the sum of the tensor's absolute values
SUM_ATOL = 1e-6  # (a tensor whose elements are all near 0, where the relative distance means little)


def fingerprint(losses, tensors):
    """{losses: the float hex of each, arrays: each tensor's array, sums: the float64 sum of each,
    scales: the float64 sum of the absolute values of each}."""
    arrays = [np.ascontiguousarray(t.detach().numpy()).copy() for t in tensors]
    return {"losses": " ".join(float(x).hex() for x in losses), "arrays": arrays,
            "sums": [float(a.astype(np.float64).sum()) for a in arrays],
            "scales": [float(np.abs(a.astype(np.float64)).sum()) for a in arrays]}


def run_loop(name, steps=STEPS):
    step, parameters = learner_loops.LOOPS[name](tinyattn)
    losses = [step().item() for _ in range(steps)]
    return fingerprint(losses, parameters)


def run_gpt(steps=STEPS):
    """`tinyattn train`'s defaults (the GPT on the bundled sonnets), stopped after `steps` steps."""
    config = TrainConfig(steps=steps) if steps == STEPS else TrainConfig(steps=steps, eval_iters=2)
    result = train(config, default_corpus(), quiet=True)
    evaluated = [v for row in result.history for v in (row["train_loss"], row["val_loss"])]
    state = result.model.state_dict()
    return fingerprint(result.losses + evaluated, [state[key] for key in sorted(state)])


EXPECTED = {
    'embedding MLP': {
        'losses': (
            '0x1.732ad40000000p+4 0x1.9ddcd00000000p+4 0x1.9396200000000p+4 0x1.b865680000000p+4 '
            '0x1.74cf7c0000000p+4 0x1.8c63dc0000000p+4 0x1.8281e00000000p+4 0x1.c385d40000000p+4 '
            '0x1.4fced60000000p+4 0x1.48984c0000000p+4 0x1.7d8a7e0000000p+4 0x1.4ebf280000000p+4 '
            '0x1.0478200000000p+4 0x1.30ce720000000p+4 0x1.6b814a0000000p+4 0x1.19ede60000000p+4 '
            '0x1.23c0ca0000000p+4 0x1.6a91e20000000p+4 0x1.38092c0000000p+4 0x1.28bdb40000000p+4 '
        ),
        'sums': [2.5431549716740847,
                 -69.4353447703179,
                 -0.6712524183094501,
                 -29.412736926751677,
                 -0.8883455693721771],
    },
    'batch norm op by op': {
        'losses': (
            '0x1.d9dc000000000p+1 0x1.c9a66a0000000p+1 0x1.ca9a7a0000000p+1 0x1.d3720e0000000p+1 '
            '0x1.d0b0000000000p+1 0x1.ca199c0000000p+1 0x1.bb0b8c0000000p+1 0x1.c1dd7c0000000p+1 '
            '0x1.c2b5fe0000000p+1 0x1.de19100000000p+1 0x1.b9bfac0000000p+1 0x1.d214d40000000p+1 '
            '0x1.baea5a0000000p+1 0x1.c4cb9e0000000p+1 0x1.b962c80000000p+1 0x1.d56c8c0000000p+1 '
            '0x1.b38ed80000000p+1 0x1.a1f5340000000p+1 0x1.afed600000000p+1 0x1.db658c0000000p+1 '
        ),
        'sums': [0.45233213528990746,
                 -20.54569027182879,
                 0.0005572783757088473,
                 -2.9412748086760985,
                 -0.08883461728692055,
                 198.03756254911423,
                 0.5068400958552957],
    },
    'full-batch bigram': {
        'losses': (
            '0x1.de84880000000p+1 0x1.d4f5ac0000000p+1 0x1.cdec280000000p+1 0x1.c865480000000p+1 '
            '0x1.c3e45e0000000p+1 0x1.c0228a0000000p+1 0x1.bcf30a0000000p+1 0x1.ba377c0000000p+1 '
            '0x1.b7da1c0000000p+1 0x1.b5caa80000000p+1 0x1.b3fcb40000000p+1 0x1.b266600000000p+1 '
            '0x1.b0ffc80000000p+1 0x1.afc2740000000p+1 0x1.aea9000000000p+1 0x1.adaef60000000p+1 '
            '0x1.acd07a0000000p+1 0x1.ac0a500000000p+1 0x1.ab59a80000000p+1 0x1.aabc0e0000000p+1 '
        ),
        'sums': [8.880419148365036],
    },
    '20 ops on (32, 64)': {
        'losses': (
            '0x1.553c800000000p+4 0x1.1c19000000000p+4 0x1.f449420000000p+3 0x1.db8fd40000000p+3 '
            '0x1.b800ce0000000p+3 0x1.9f0af00000000p+3 0x1.9e479a0000000p+3 0x1.9dd0ae0000000p+3 '
            '0x1.8a10a40000000p+3 0x1.84289e0000000p+3 0x1.7398e40000000p+3 0x1.6b1d2c0000000p+3 '
            '0x1.68afb40000000p+3 0x1.5f89640000000p+3 0x1.411a0c0000000p+3 0x1.39d2de0000000p+3 '
            '0x1.382ca20000000p+3 0x1.34ebd80000000p+3 0x1.2d87220000000p+3 0x1.2ce99e0000000p+3 '
        ),
        'sums': [35.029851166531444, 33.48088827659376],
    },
    'GPT': {
        'losses': (
            '0x1.05ebdc0000000p+2 0x1.05b69e0000000p+2 0x1.031be40000000p+2 0x1.ff06620000000p+1 '
            '0x1.f9eb0e0000000p+1 0x1.efa2ca0000000p+1 0x1.e60eea0000000p+1 0x1.e08e1a0000000p+1 '
            '0x1.d9d2860000000p+1 0x1.d532860000000p+1 0x1.cf57d80000000p+1 0x1.ccf02e0000000p+1 '
            '0x1.c9fc960000000p+1 0x1.c849c00000000p+1 0x1.c6b0560000000p+1 0x1.c2f8120000000p+1 '
            '0x1.c3afa60000000p+1 0x1.c242da0000000p+1 0x1.bd0cf20000000p+1 0x1.b9b6620000000p+1 '
            '0x1.061dd98000000p+2 0x1.05e27e3333333p+2 0x1.b5e54ce666666p+1 0x1.b88f6c6666666p+1 '
        ),
        'sums': [-6.325178030230916e-07,
                 -2.736423372045465,
                 -0.00531325245538028,
                 2.2557509435573593,
                 0.0007105335389496759,
                 0.2769308548192839,
                 2016.0,
                 8.509930921718478e-05,
                 0.5610975495665116,
                 0.019111502508167177,
                 127.97750985622406,
                 0.003459467442553432,
                 128.02173978090286,
                 0.04364204004014027,
                 7.255898727954445,
                 -0.007090793165843934,
                 -1.2394885811058884,
                 1.2605738841653391e-08,
                 4.49002718322663,
                 0.004231878090649843,
                 -1.8574890557946446,
                 0.010343885733163916,
                 -0.7048740961472504,
                 2016.0,
                 -0.007490661439078394,
                 0.5012829586657972,
                 -0.03538954936811933,
                 127.98602342605591,
                 0.0004589614436554257,
                 128.0323345065117,
                 0.005940968993854767,
                 -2.93874498832065,
                 -0.005155178900167812,
                 -3.0928341063146263,
                 2.274073013230904e-08,
                 0.7102802016252099,
                 -0.007765556941194518,
                 -4.168619711233077,
                 0.01158248343563173,
                 -1.183826550957292,
                 2016.0,
                 0.001270141096028965,
                 0.35154309734116396,
                 -0.020113206845053355,
                 127.98100996017456,
                 0.0014642025125795044,
                 128.06514179706573,
                 0.05855739992512099,
                 -3.839413061708001,
                 0.0038027515838621184,
                 0.8609067579216116,
                 -9.619528631987784e-08,
                 -0.5163998150237603,
                 -0.010579881796729751,
                 0.7942821906062818,
                 0.010837086752871983,
                 -0.7736266135470942,
                 2016.0,
                 0.0015443709125975147,
                 -1.4639077843585255,
                 -0.007992682036274346,
                 128.0180879831314,
                 0.0034909420974145178,
                 128.0588973760605,
                 0.005625647312626825,
                 -0.609502498886286,
                 -0.0009759835011209361,
                 -0.873676570986845,
                 -0.6748453047985095,
                 0.0008572061997256242,
                 128.1576675772667,
                 0.34363741093602584,
                 -0.6748453047985095],
    },
}


def run(name, count=1, steps=STEPS):
    """The loop on `count` threads (one by default, as `tinyattn train` computes)."""
    with threads.using(count) if threads.can_set_num_threads() else _nothing():
        return run_gpt(steps) if name == "GPT" else run_loop(name, steps)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


NAMES = list(learner_loops.LOOPS) + ["GPT"]


@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("name", NAMES)
def test_the_fast_paths_give_the_plain_paths_bits(name, count, monkeypatch):
    """The plain path (every array whole, nothing split) against the fast ones: blocks of 2048 elements
    from 4096 on (the loops' activations and the bigram's logits go through them; 8192 from 16384 for
    the GPT: its attention, activations and MLP),
    parts of 4096 elements, the optimizer's step split over the parameters; at the same thread count,
    since the BLAS itself may round a product's last bit otherwise at another count (tinyattn.backend.threads).
    Five steps (the GPT two): every op of a step runs in each, so a moved bit shows at the first."""
    if count > 1 and not threads.can_set_num_threads():
        pytest.skip("the thread count cannot be set here (threadpoolctl is missing)")
    steps = 2 if name == "GPT" else FAST_STEPS
    plain = run(name, count, steps)
    block = 8192 if name == "GPT" else 2048  # (the GPT's arrays are larger: fewer, larger blocks)
    monkeypatch.setattr(parallel, "BLOCK_ELEMENTS", block)
    monkeypatch.setattr(parallel, "LARGE", 2 * block)
    monkeypatch.setattr(parallel, "MIN_ELEMENTS_PER_PART", 4096)  # (above backend.BLAS_SUM_MIN_SIZE)
    monkeypatch.setattr(parallel, "enabled", True)
    fast = run(name, count, steps)
    assert fast["losses"].split() == plain["losses"].split()
    for index, (f, p) in enumerate(zip(fast["arrays"], plain["arrays"], strict=True)):
        assert f.dtype == p.dtype and f.shape == p.shape
        assert f.tobytes() == p.tobytes(), f"tensor {index} differs in {np.sum(f != p)} of {f.size} elements"


@pytest.mark.parametrize("name", NAMES)
def test_the_same_losses_and_weights_as_recorded(name):
    check(run(name), name)


def check(got, name):
    expected = EXPECTED[name]
    losses = [float.fromhex(x) for x in got["losses"].split()]
    recorded = [float.fromhex(x) for x in expected["losses"].split()]
    assert losses == pytest.approx(recorded, rel=LOSS_RTOL, abs=0)
    for index, (total, scale, was) in enumerate(zip(got["sums"], got["scales"], expected["sums"], strict=True)):
        assert abs(total - was) <= SUM_RTOL * scale + SUM_ATOL, f"tensor {index}: sum {total!r}, recorded {was!r}"


if __name__ == "__main__":  # print the expected values afresh (from the engine as it is now)
    import pprint
    import textwrap

    print("EXPECTED = {")
    for name in NAMES:
        values = run(name)
        print(f"    {name!r}: {{")
        print("        'losses': (")
        for line in textwrap.wrap(values["losses"], 100, break_on_hyphens=False):
            print(f"            {line + ' '!r}")
        print("        ),")
        sums = pprint.pformat(values["sums"], width=100).replace("\n", "\n" + " " * 16)
        print(f"        'sums': {sums},")
        print("    },")
    print("}")
