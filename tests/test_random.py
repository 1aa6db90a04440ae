"""tinyattn.random must draw PyTorch's CPU random numbers.

The pinned textbook numbers need no torch; the parity tests compare with real torch (skipped where it
is not installed) and use exact equality, except float64 normals of 16+ numbers, where NumPy's SIMD
`log` may differ from the C library's in the last bit, and float results on PyTorch builds without
AVX2 (see `assert_float_equal`).
"""

import math
import sys
import types
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tinyattn
from tinyattn import random as trandom
from tinyattn.random import Generator

seeds = st.integers(0, 2**32 - 1)
small_shapes = st.lists(st.integers(0, 6), min_size=0, max_size=3).map(tuple)
dtypes = st.sampled_from([np.float32, np.float64])


@pytest.fixture
def torch():
    """Real PyTorch for parity tests; the test is skipped where it is not installed."""
    return pytest.importorskip("torch")


def torch_dtype(torch, dtype):
    return torch.float32 if dtype == np.float32 else torch.float64


def assert_float_equal(torch, got, want):
    """Bit for bit against PyTorch's x86 AVX2/AVX-512 kernels, which tinyattn replays (fused
    multiply-adds, Cephes log/sincos); PyTorch's builds without them (ATEN_CPU_CAPABILITY=default,
    ARM) round differently in the last bits, so there only closeness is checked."""
    if torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- numbers printed in the textbook


def test_textbook_uniform_sequence():
    g = trandom.manual_seed(123)
    assert g is trandom.default_generator
    expected = [
        [[0.2961, 0.5166], [0.2517, 0.6886], [0.0740, 0.8665]],
        [[0.1366, 0.1025], [0.1841, 0.7264], [0.3153, 0.6871]],
        [[0.0756, 0.1966], [0.3164, 0.4017], [0.1186, 0.8274]],
    ]
    for want in expected:
        got = g.uniform((3, 2))
        assert got.dtype == np.float32 and got.shape == (3, 2)
        np.testing.assert_allclose(got, want, atol=5e-5)


def test_textbook_uniform_4x3():
    g = trandom.manual_seed(42)
    np.testing.assert_allclose(g.uniform((4, 3)), [[0.8823, 0.9150, 0.3829], [0.9593, 0.3904, 0.6009],
                                                   [0.2566, 0.7936, 0.9408], [0.1332, 0.9346, 0.5936]],
                               atol=5e-5)


def test_textbook_small_normal():
    g = trandom.manual_seed(123)
    np.testing.assert_allclose(g.normal((5,)), [-0.1115, 0.1204, -0.3696, -0.2404, -1.1969], atol=5e-5)


def test_textbook_large_normal():
    g = trandom.manual_seed(1337)
    x = g.normal((4, 8, 2))
    assert x.shape == (4, 8, 2) and x.dtype == np.float32
    np.testing.assert_allclose(x[0], [[0.1808, -0.0700], [-0.3596, -0.9152], [0.6258, 0.0255],
                                      [0.9545, 0.0643], [0.3612, 1.1679], [-1.3499, -0.5102],
                                      [0.2360, -0.2398], [-0.9211, 1.5433]], atol=5e-5)


def test_pinned_values_from_pytorch():
    # exact float32 values printed by PyTorch 2.13 on x86-64 (AVX-512), for machines without torch
    x = trandom.manual_seed(1337).normal((4, 8, 2)).reshape(-1)
    assert x[[0, 1, 17, 63]].tolist() == [0.1807715892791748, -0.06998809427022934,
                                          -0.139641672372818, -0.40322813391685486]
    g = Generator().manual_seed(5)
    assert g.uniform((3,), low=-0.125, high=0.3).tolist() == [0.2278570532798767, -0.07140286266803741,
                                                             0.2606746256351471]
    x = Generator().manual_seed(5).normal((20,), mean=0.5, std=0.02)
    assert x[[0, 19]].tolist() == [0.5368465781211853, 0.4698611795902252]


def test_textbook_randint():
    g = trandom.manual_seed(42)
    x = g.randint(0, 10, (3, 2))
    assert x.dtype == np.int64
    np.testing.assert_array_equal(x, [[2, 7], [6, 4], [6, 5]])


def test_textbook_dropout_mask():
    g = trandom.manual_seed(123)
    keep = g.bernoulli((6, 6), 1 - 0.5)
    assert keep.dtype == np.bool_
    np.testing.assert_array_equal(keep * 2.0, 2.0 * np.array(
        [[1, 1, 0, 1, 1, 0], [0, 0, 0, 1, 0, 1], [1, 1, 1, 1, 0, 1],
         [0, 1, 1, 0, 0, 1], [0, 1, 0, 1, 0, 1], [0, 1, 1, 1, 1, 0]]))


# ---------------------------------------------------------------- generators and state (no torch)


def test_generators_are_independent_and_seeding_restarts():
    a = Generator().manual_seed(7)
    first = a.uniform((10,))
    trandom.manual_seed(7)
    trandom.default_generator.uniform((3,))  # advancing the default generator ...
    np.testing.assert_array_equal(Generator().manual_seed(7).uniform((10,)), first)  # ... not others
    assert a.manual_seed(7) is a
    np.testing.assert_array_equal(a.uniform((10,)), first)


def test_initial_seed_and_nondeterministic_seed():
    assert Generator().initial_seed() == trandom.DEFAULT_SEED
    trandom.manual_seed(-1)
    assert trandom.initial_seed() == 2**64 - 1  # negative seeds wrap like PyTorch's
    s = trandom.seed()
    assert isinstance(s, int) and 0 <= s < 2**64 and trandom.initial_seed() == s
    after = trandom.default_generator.uniform((4,))
    np.testing.assert_array_equal(Generator().manual_seed(s).uniform((4,)), after)


def test_state_round_trip_through_npy(tmp_path):
    g = Generator().manual_seed(5)
    g.normal((3,))  # odd count: a spare normal is cached and must be saved too
    np.save(tmp_path / "rng.npy", g.get_state().numpy())
    expected = [g.normal((1,)), g.normal((20,)), g.uniform((7,), np.float64), g.randint(-3, 9, (5,))]
    g.set_state(tinyattn.from_numpy(np.load(tmp_path / "rng.npy", allow_pickle=False)))
    got = [g.normal((1,)), g.normal((20,)), g.uniform((7,), np.float64), g.randint(-3, 9, (5,))]
    for want, have in zip(expected, got):
        np.testing.assert_array_equal(have, want)
    trandom.set_rng_state(g.get_state())
    np.testing.assert_array_equal(trandom.get_rng_state().numpy(), g.get_state().numpy())


def test_the_earlier_dict_state_still_restores():
    # what get_state gave before it gave PyTorch's bytes (checkpoints of `tinyattn train` hold it)
    g = Generator().manual_seed(5)
    g.normal((3,))
    mt = g._mt.state["state"]
    legacy = {"key": mt["key"].tolist(), "pos": int(mt["pos"]), "seed": 5, "has_cached_normal": True,
              "cached_normal": g._cached_normal}
    expected = [g.normal((1,)), g.uniform((7,), np.float64)]
    g.manual_seed(8)
    g.set_state(legacy)
    np.testing.assert_array_equal(g.normal((1,)), expected[0])
    np.testing.assert_array_equal(g.uniform((7,), np.float64), expected[1])


def test_manual_seed_clears_the_cached_normal():
    g = Generator().manual_seed(3)
    first = g.normal((1,))
    g.manual_seed(3)
    np.testing.assert_array_equal(g.normal((1,)), first)


def test_device_bernoulli_falls_back_to_the_host_stream():
    mask = Generator().manual_seed(9).device_bernoulli((4, 5), 0.3, np)
    np.testing.assert_array_equal(mask, Generator().manual_seed(9).bernoulli((4, 5), 0.3))


def test_device_bernoulli_uses_a_lazily_seeded_cupy_generator(monkeypatch):
    seeds_used = []

    class FakeRandomState:  # stands in for cupy.random.RandomState: records its seed
        def __init__(self, seed):
            seeds_used.append(int(seed))
            self.rng = np.random.default_rng(int(seed))

        def random_sample(self, size, dtype):
            return self.rng.random(size, dtype=dtype)

    fake_cupy = types.ModuleType("cupy")
    fake_cupy.random = types.SimpleNamespace(RandomState=FakeRandomState)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    g = Generator().manual_seed(2**64 - 5)
    before = g.get_state().numpy().copy()
    mask = g.device_bernoulli((3, 4), 0.5, fake_cupy)
    assert mask.shape == (3, 4) and mask.dtype == np.bool_
    assert seeds_used == [2**64 - 5]
    np.testing.assert_array_equal(g.get_state().numpy(), before)  # the PyTorch-compatible host stream is untouched
    g.device_bernoulli((3, 4), 0.5, fake_cupy)
    assert seeds_used == [2**64 - 5]  # created once, then reused
    g.manual_seed(1)
    g.device_bernoulli((2,), 0.5, fake_cupy)
    assert seeds_used == [2**64 - 5, 1]  # reseeded with the new seed
    # set_state cannot restore the GPU stream: it restarts it from a seed the state determines
    state = g.get_state()
    for _ in range(2):
        g.set_state(state)
        g.device_bernoulli((2,), 0.5, fake_cupy)
    assert seeds_used[2] == seeds_used[3] not in (1, 2**64 - 5)
    g.uniform(1)
    g.set_state(g.get_state())
    g.device_bernoulli((2,), 0.5, fake_cupy)
    assert seeds_used[4] != seeds_used[2]  # another state, another GPU stream


# ---------------------------------------------------------------- fused multiply-add helpers


floats32 = st.floats(-1e6, 1e6, width=32, allow_subnormal=False)


@given(st.lists(st.tuples(floats32, floats32, floats32), min_size=1, max_size=50))
def test_fma32_rounds_once(triples):
    a, b, c = (np.array(v, np.float32) for v in zip(*triples))
    got = trandom.fma32(a, b, c)
    for value, (x, y, z) in zip(got, triples):
        exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        assert value == _round_to_float32(exact), (x, y, z)


def _round_to_float32(q):
    """Correctly round a Fraction to float32 (ties to even), without trusting float64 on the way."""
    if q == 0:
        return np.float32(0)
    near = np.float32(float(q))
    candidates = [near, np.nextafter(near, np.float32(np.inf)), np.nextafter(near, np.float32(-np.inf))]
    return min(candidates, key=lambda v: (abs(Fraction(float(v)) - q), int(v.view(np.int32)) & 1))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_fma32_breaks_ties_that_float64_hides(sign):
    # a * b = 2**-24 - 2**-70, c = 1 + 2**-23: the exact sum is just below the float32 midpoint
    # 1 + 3 * 2**-24, but in float64 it rounds onto it, and ties-to-even would then round up.
    a = np.array([sign * 2.0**-24 * (1 + 2.0**-23)], np.float32)
    b = np.array([1 - 2.0**-23], np.float32)
    c = np.array([sign * (1 + 2.0**-23)], np.float32)
    assert (a.astype(np.float64) * b + c)[0] == sign * (1 + 3 * 2.0**-24)  # float64 lands on the midpoint
    assert trandom.fma32(a, b, c)[0] == np.float32(sign * (1 + 2.0**-23))  # the exact sum is below it
    # an exact tie still rounds to even
    exact_tie = trandom.fma32(np.array([sign * 2.0**-24], np.float32), np.array([1.0], np.float32), c)
    assert exact_tie[0] == np.float32(sign * (1 + 2.0**-22))


@given(st.lists(st.tuples(*[st.floats(-1e6, 1e6, allow_subnormal=False)] * 3), min_size=1, max_size=50))
def test_fma64_rounds_once(triples):
    a, b, c = (np.array(v) for v in zip(*triples))
    want = [float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in triples]
    np.testing.assert_array_equal(trandom.fma64(a, b, c), want)


def test_fma64_breaks_a_tie_with_the_bits_it_lost():
    # -3 * step is exactly halfway between two float64 numbers; the tiny c puts the sum just above
    step = (2.077582520180167e-74 - 1.0) / 11
    a, b, c = np.array([-3.0]), step, 2.077582520180167e-74
    assert trandom.fma64(a, b, c)[0] == float(Fraction(-3) * Fraction(step) + Fraction(c)) == 0.27272727272727276


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize("bad", ["3", 1.5, None, True])
def test_seed_must_be_an_int(bad):
    # Generator.manual_seed takes only an int, as PyTorch's does; the module's manual_seed takes
    # int(seed), as torch.manual_seed does (tests/test_random_layouts.py)
    with pytest.raises(TypeError, match="seed must be an int"):
        Generator().manual_seed(bad)


def test_seed_range():
    trandom.manual_seed(np.int64(3))
    with pytest.raises(ValueError, match="2\\*\\*64"):
        Generator().manual_seed(2**64)


def test_randint_needs_low_below_high():
    g = Generator()
    with pytest.raises(ValueError, match="low=5, high=5"):
        g.randint(5, 5, (2,))
    with pytest.raises(ValueError, match="low=7, high=2"):
        g.randint(7, 2, (2,))
    with pytest.raises(TypeError, match="integer bounds"):
        g.randint(0.5, 2, (2,))


@pytest.mark.parametrize("args, kwargs", [
    ((3,), {"size": (6,)}),            # minGPT's sort demo: randint(num_digits, size=(length,))
    ((3, (6,)), {}),
    ((-2, 9, (2, 3)), {}),
    ((0, 5), {"size": [4]}),
    ((), {"high": 4, "size": (2,)}),
    ((), {"low": 2, "high": 4, "size": (5,)}),
])
def test_randint_argument_forms_match_torch(torch, args, kwargs):
    import tinyattn
    torch.manual_seed(7)
    tinyattn.manual_seed(7)
    np.testing.assert_array_equal(tinyattn.randint(*args, **kwargs).numpy(), torch.randint(*args, **kwargs).numpy())


@pytest.mark.parametrize("args", [(3,), (3, 10)])
def test_randint_needs_a_tuple_size(args):
    import tinyattn
    with pytest.raises(TypeError, match="randint needs its size as a tuple"):
        tinyattn.randint(*args)


@pytest.mark.parametrize("probs, match", [
    ([0.5, -0.1, 0.6], "finite and >= 0"),
    ([0.5, np.nan], "finite and >= 0"),
    ([0.5, np.inf], "finite and >= 0"),
    ([[0.5, 0.5], [0.0, 0.0]], "sum to 0"),
])
def test_multinomial_rejects_bad_probabilities(probs, match):
    with pytest.raises(ValueError, match=match):
        Generator().multinomial(np.array(probs, np.float32), 1)


def test_multinomial_rejects_too_many_samples_without_replacement():
    with pytest.raises(ValueError, match="replacement=True"):
        Generator().multinomial(np.ones(3, np.float32), 4)
    assert Generator().multinomial(np.ones(3, np.float32), 4, replacement=True).shape == (4,)
    with pytest.raises(ValueError, match="positive int"):
        Generator().multinomial(np.ones(3, np.float32), 0)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        Generator().multinomial(np.ones((2, 2, 2), np.float32), 1)


@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan")])
def test_bernoulli_probability_range(p):
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        Generator().bernoulli((3,), p)


def test_other_validation():
    g = Generator()
    with pytest.raises(ValueError, match="std >= 0"):
        g.normal((3,), std=-1.0)
    with pytest.raises(TypeError, match="float32 or float64"):
        g.uniform((3,), np.int64)
    with pytest.raises(ValueError, match="low <= high"):
        g.uniform((3,), low=1.0, high=0.0)
    with pytest.raises(ValueError, match="non-negative"):
        g.uniform((-1, 2))
    with pytest.raises(ValueError, match="get_state"):
        g.set_state({"key": np.zeros(3)})


# ---------------------------------------------------------------- parity with PyTorch


float_bounds = st.tuples(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3)).map(sorted)


@given(seed=seeds, shape=small_shapes, dtype=dtypes, bounds=st.one_of(st.just((0.0, 1.0)), float_bounds))
def test_uniform_matches_torch(torch, seed, shape, dtype, bounds):
    low, high = bounds
    torch.manual_seed(seed)
    want = torch.empty(shape, dtype=torch_dtype(torch, dtype)).uniform_(low, high).numpy()
    got = Generator().manual_seed(seed).uniform(shape, dtype, low, high)
    assert got.dtype == want.dtype
    assert_float_equal(torch, got, want)


def test_nn_linear_init_matches_torch(torch):
    for fan_in, fan_out in [(3, 2), (768, 50), (17, 1)]:
        torch.manual_seed(fan_in)
        layer = torch.nn.Linear(fan_in, fan_out)
        g = Generator().manual_seed(fan_in)
        # kaiming_uniform_(a=sqrt(5)) computes its bound this way; 1/sqrt(fan_in) can differ in the last bit
        bound = math.sqrt(3.0) * (math.sqrt(2.0 / (1 + math.sqrt(5) ** 2)) / math.sqrt(fan_in))
        weight = g.uniform((fan_out, fan_in), low=-bound, high=bound)
        assert_float_equal(torch, weight, layer.weight.detach().numpy())
        bound = 1 / math.sqrt(fan_in)
        assert_float_equal(torch, g.uniform((fan_out,), low=-bound, high=bound), layer.bias.detach().numpy())


normal_sizes = st.sampled_from([1, 2, 5, 15, 16, 17, 31, 32, 33, 100, 1000])
mean_std = st.one_of(st.just((0.0, 1.0)), st.tuples(st.floats(-10, 10), st.floats(0, 10)))


def assert_normal_equal(torch, got, want, dtype, size):
    if dtype == np.float64 and size >= 16:
        # NumPy's vectorised float64 log can differ from glibc's (PyTorch's) in the last bit
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    else:
        assert_float_equal(torch, got, want)


@given(seed=seeds, size=normal_sizes, dtype=dtypes, params=mean_std)
def test_normal_matches_torch(torch, seed, size, dtype, params):
    mean, std = params
    torch.manual_seed(seed)
    want = torch.empty(size, dtype=torch_dtype(torch, dtype)).normal_(mean, std).numpy()
    got = Generator().manual_seed(seed).normal((size,), dtype, mean, std)
    assert got.dtype == want.dtype
    assert_normal_equal(torch, got, want, dtype, size)


@given(seed=seeds, calls=st.lists(st.tuples(normal_sizes, dtypes), min_size=2, max_size=6))
def test_normal_sequences_share_the_cached_normal_like_torch(torch, seed, calls):
    # small draws leave a spare normal; large draws neither use nor clear it
    torch.manual_seed(seed)
    g = Generator().manual_seed(seed)
    for size, dtype in calls:
        want = torch.randn(size, dtype=torch_dtype(torch, dtype)).numpy()
        assert_normal_equal(torch, g.normal((size,), dtype), want, dtype, size)
    np.testing.assert_array_equal(g.uniform((3,)), torch.rand(3).numpy())


def test_large_float32_normal_is_bit_exact(torch):
    # the Cephes log/sincos replay must match PyTorch's AVX2 kernel on every value
    torch.manual_seed(2024)
    want = torch.randn(200_003).numpy()
    assert_normal_equal(torch, Generator().manual_seed(2024).normal((200_003,)), want, np.float32, 200_003)


def test_nn_embedding_init_matches_torch(torch):
    torch.manual_seed(0)
    emb = torch.nn.Embedding(50, 16)
    got = Generator().manual_seed(0).normal((50, 16))
    assert_normal_equal(torch, got, emb.weight.detach().numpy(), np.float32, got.size)


@given(seed=seeds, shape=small_shapes,
       bounds=st.sampled_from([(0, 10), (-5, 7), (0, 2), (3, 4), (0, 2**28 - 1), (0, 2**28), (0, 2**31),
                               (0, 2**32), (-(2**40), 2**40), (-(2**62), 2**62), (0, 2**63 - 1)]))
def test_randint_matches_torch(torch, seed, shape, bounds):
    torch.manual_seed(seed)
    want = torch.randint(*bounds, shape).numpy()
    g = Generator().manual_seed(seed)
    got = g.randint(*bounds, shape)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(g.uniform((2,)), torch.rand(2).numpy())  # same number of draws


@given(seed=seeds, size=st.sampled_from([1, 36, 799, 800, 801, 5000, 100_000]),
       p=st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
def test_bernoulli_matches_torch_dropout(torch, seed, size, p):
    torch.manual_seed(seed)
    want = torch.empty(size).bernoulli_(p).numpy().astype(bool)
    g = Generator().manual_seed(seed)
    np.testing.assert_array_equal(g.bernoulli((size,), p), want)
    if 0 < p < 1:  # dropout(drop_p) draws bernoulli_(1 - drop_p); at 0 and 1 it draws nothing
        torch.manual_seed(seed)
        kept = torch.nn.functional.dropout(torch.ones(size), 1 - p, training=True).numpy() != 0
        np.testing.assert_array_equal(Generator().manual_seed(seed).bernoulli((size,), 1 - (1 - p)), kept)


@given(seed=seeds, rows=st.sampled_from([None, 1, 3]), categories=st.sampled_from([1, 2, 7, 300]),
       num_samples=st.integers(1, 5), replacement=st.booleans(), dtype=dtypes, data=st.data())
def test_multinomial_matches_torch(torch, seed, rows, categories, num_samples, replacement, dtype, data):
    if not replacement:
        num_samples = min(num_samples, categories)
    shape = (categories,) if rows is None else (rows, categories)
    weights = np.random.default_rng(data.draw(seeds)).random(shape).astype(dtype) ** 3 * 5  # unnormalised
    weights[..., 0] += 0.01  # no all-zero rows
    torch.manual_seed(seed)
    want = torch.multinomial(torch.from_numpy(weights), num_samples, replacement=replacement).numpy()
    g = Generator().manual_seed(seed)
    got = g.multinomial(weights, num_samples, replacement=replacement)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(g.uniform((2,)), torch.rand(2).numpy())


def test_multinomial_over_a_vocabulary_matches_torch(torch):
    logits = np.random.default_rng(1).normal(size=(2, 50257)).astype(np.float32) * 3
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    torch.manual_seed(123)
    g = Generator().manual_seed(123)
    for _ in range(5):
        want = torch.multinomial(torch.from_numpy(probs), 1).numpy()
        np.testing.assert_array_equal(g.multinomial(probs, 1), want)


@given(seed=seeds, n=st.sampled_from([0, 1, 2, 5, 10, 100, 1000]))
def test_randperm_matches_torch(torch, seed, n):
    torch.manual_seed(seed)
    want = torch.randperm(n).numpy()
    g = Generator().manual_seed(seed)
    np.testing.assert_array_equal(g.randperm(n), want)
    np.testing.assert_array_equal(g.uniform((2,)), torch.rand(2).numpy())


def test_random_int64_equals_randint_up_to_2_63(torch):
    # torch.empty((), dtype=torch.int64).random_() (how DataLoader's sampler seeds itself)
    torch.manual_seed(8)
    want = torch.empty(4, dtype=torch.int64).random_().numpy()
    np.testing.assert_array_equal(Generator().manual_seed(8).randint(0, 2**63, (4,)), want)
    assert Generator().manual_seed(8).draw_seed() == int(want[0])


@given(seed=seeds, n=st.integers(0, 40))
def test_randperm_of_large_n_is_pytorchs_inside_out_shuffle(monkeypatch, seed, n):
    """From n = 2**32 // 20 on, PyTorch's randperm puts i at position z = random64() % (i + 1) and
    moves what was there to position i. At that size (214748364) tinyattn was checked against
    torch.randperm once by hand (equal, and the stream after it too; 2 minutes); here the same
    path, taken from a small n on, against that loop written out."""
    monkeypatch.setattr(trandom, "_RANDPERM_LARGE", 0)
    reference, g = [0] * n, Generator().manual_seed(seed)
    for i in range(n):
        z = int(g._draw64(1)[0]) % (i + 1)
        reference[i] = reference[z]
        reference[z] = i
    g = Generator().manual_seed(seed)
    np.testing.assert_array_equal(g.randperm(n), reference)


@given(seed=st.one_of(seeds, st.integers(2**32, 2**64 - 1), st.integers(-(2**63), -1)))
def test_seeds_match_torch(torch, seed):
    torch.manual_seed(seed)
    want = torch.rand(5).numpy()
    g = trandom.manual_seed(seed)
    assert g.initial_seed() == torch.initial_seed()
    np.testing.assert_array_equal(g.uniform((5,)), want)


@given(seed=seeds, other=seeds)
def test_generator_objects_match_torch_generators(torch, seed, other):
    tg = torch.Generator().manual_seed(seed)
    torch.manual_seed(other)
    g = Generator().manual_seed(seed)
    trandom.manual_seed(other)
    np.testing.assert_array_equal(g.normal((7,)), torch.randn(7, generator=tg).numpy())
    np.testing.assert_array_equal(trandom.default_generator.uniform((3,)), torch.rand(3).numpy())
    np.testing.assert_array_equal(g.randint(0, 5, (4,)), torch.randint(0, 5, (4,), generator=tg).numpy())
    np.testing.assert_array_equal(g.normal((1,)), torch.randn(1, generator=tg).numpy())  # cached spare


def test_state_restore_matches_torch(torch):
    torch.manual_seed(77)
    g = Generator().manual_seed(77)
    np.testing.assert_array_equal(g.normal((3,)), torch.randn(3).numpy())
    torch_state, state = torch.get_rng_state(), g.get_state()
    torch.rand(100)
    g.uniform((100,))
    torch.set_rng_state(torch_state)
    g.set_state(state)
    for size in [1, 1, 20]:  # the spare normal survives the round trip on both sides
        assert_float_equal(torch, g.normal((size,)), torch.randn(size).numpy())


@settings(max_examples=10)
@given(seed=seeds, ops=st.lists(st.sampled_from(
    ["rand", "rand64", "randn", "randn_big", "randint", "drop", "perm"]), min_size=1, max_size=8))
def test_mixed_streams_stay_in_step_with_torch(torch, seed, ops):
    torch.manual_seed(seed)
    g = trandom.manual_seed(seed)
    for op in ops:
        if op == "rand":
            got, want = g.uniform((5,)), torch.rand(5)
        elif op == "rand64":
            got = g.uniform((3,), np.float64, -2.0, 3.0)
            want = torch.empty(3, dtype=torch.float64).uniform_(-2.0, 3.0)
        elif op == "randn":
            got, want = g.normal((3,)), torch.randn(3)
        elif op == "randn_big":
            got, want = g.normal((2, 20), mean=0.5, std=0.02), torch.empty(2, 20).normal_(0.5, 0.02)
        elif op == "randint":
            got, want = g.randint(0, 50257, (4,)), torch.randint(0, 50257, (4,))
        elif op == "drop":
            got = g.bernoulli((3, 7), 1 - 0.1)
            want = torch.nn.functional.dropout(torch.ones(3, 7), 0.1, training=True) != 0
        else:
            got, want = g.randperm(9), torch.randperm(9)
        if got.dtype.kind == "f":
            assert_float_equal(torch, got, want.numpy())
        else:
            np.testing.assert_array_equal(got, want.numpy())


# ---------------------------------------------------------------- normals computed ahead
# Float32 normals of small draws come from normals computed ahead for the next words of the stream
# (Generator._normals32); these tests hold that path to the same numbers as drawing directly.

stream_ops = st.lists(st.one_of(
    st.tuples(st.just("randn"), st.sampled_from([16, 32, 48, 64, 960, 17, 20, 31, 33, 100, 3, 8])),
    st.tuples(st.just("rand"), st.sampled_from([1, 5, 16, 32])),
    st.tuples(st.just("randint"), st.sampled_from([1, 7, 32])),
    st.tuples(st.just("normal_"), st.sampled_from([16, 40])),
    st.tuples(st.just("state"), st.just(0)),
), min_size=1, max_size=40)


@settings(max_examples=25)
@given(seed=seeds, ops=stream_ops)
def test_float32_normals_from_the_lookahead_match_torch_in_any_mix_of_draws(torch, seed, ops):
    torch.manual_seed(seed)
    g = Generator().manual_seed(seed)
    for op, n in ops:
        if op == "randn":
            got, want = g.normal((n,)), torch.randn(n).numpy()
        elif op == "rand":
            got, want = g.uniform((n,)), torch.rand(n).numpy()
        elif op == "randint":
            got, want = g.randint(0, 27, (n,)), torch.randint(0, 27, (n,)).numpy()
        elif op == "normal_":
            got, want = g.normal((n,), mean=0.5, std=0.02), torch.empty(n).normal_(0.5, 0.02).numpy()
        else:  # a saved state restored: the numbers computed ahead must not outlive it
            state, torch_state = g.get_state(), torch.get_rng_state()
            g.normal((32,)), torch.randn(32)
            g.set_state(state), torch.set_rng_state(torch_state)
            continue
        assert got.dtype == want.dtype
        assert_float_equal(torch, got, want)


def test_a_long_stream_of_small_normals_matches_torch(torch):
    # enough draws for the lookahead to grow to its largest and be used up several times
    torch.manual_seed(5)
    g = Generator().manual_seed(5)
    for step in range(2500):
        assert_float_equal(torch, g.normal((32,)), torch.randn(32).numpy())
        if step % 97 == 0:  # now and then a draw that shifts the blocks by a few words
            np.testing.assert_array_equal(g.randint(0, 10, (3,)), torch.randint(0, 10, (3,)).numpy())


def reference_normal32(words, n):
    """PyTorch's float32 normal of n >= 16 numbers made from the raw words of the stream directly,
    block by block (no lookahead): returns the normals and how many words they took."""
    def block(w):
        return trandom._box_muller32(trandom._uniform32(w))

    full = n - n % 16
    out = [block(words[i:i + 16]) for i in range(0, full, 16)]
    used = full
    if n % 16:
        used += n % 16
        z = np.concatenate(out)[:n - 16] if out else np.zeros(0, np.float32)
        out = [z, block(words[used:used + 16])]
        used += 16
    return np.concatenate(out), used


@settings(max_examples=30)
@given(seed=seeds, sizes=st.lists(st.integers(16, 300), min_size=1, max_size=12), skips=st.data())
def test_float32_normals_equal_the_block_by_block_reference(seed, sizes, skips):
    g = Generator().manual_seed(seed)
    words = np.random.RandomState(seed).randint(0, 2**32, 40000, dtype=np.uint64)  # the same stream
    position = 0
    for n in sizes:
        skip = skips.draw(st.integers(0, 20))  # other draws in between: the blocks move
        g._draw32(skip)
        position += skip
        want, used = reference_normal32(words[position:], n)
        np.testing.assert_array_equal(g.normal((n,)), want)
        position += used
    np.testing.assert_array_equal(g._draw32(5), words[position:position + 5])  # the stream is where it should be


def test_a_normal_draw_is_a_fresh_array_not_a_view_of_the_numbers_computed_ahead():
    g = Generator().manual_seed(1)
    first = g.normal((32,))
    first[:] = 0  # a caller writing into its numbers
    again = Generator().manual_seed(1)
    again.normal((32,))
    np.testing.assert_array_equal(g.normal((32,)), again.normal((32,)))
    assert g.normal((16,)).base is None or not np.shares_memory(g.normal((16,)), g._normals)


@given(seed=seeds, sizes=st.lists(st.integers(0, 15), min_size=1, max_size=8), params=mean_std)
def test_small_normals_keep_their_spare_across_calls_like_torch(torch, seed, sizes, params):
    mean, std = params
    torch.manual_seed(seed)
    g = Generator().manual_seed(seed)
    for n in sizes:
        want = torch.empty(n, dtype=torch.float64).normal_(mean, std).numpy()
        np.testing.assert_array_equal(g.normal((n,), np.float64, mean, std), want)


def test_the_multiply_adds_left_unfused_have_exact_products():
    # _cephes_log and _cephes_sincos compute some of the kernel's fused multiply-adds in plain float32:
    # right only where the product is exact in float32 (then one rounding of the sum is the fma's).
    f32 = np.float32
    exponents = np.arange(-127, 3).astype(f32)  # e of a float32 in (0, 1], less one where m < sqrt(1/2)
    for constant, factors in [(0.693359375, exponents), (-0.78515625, f32([0, 2, 4, 6, 8])),
                              (-2.4187564849853515625e-4, f32([0, 2, 4, 6, 8]))]:
        exact = factors.astype(np.float64) * float(f32(constant))
        assert np.array_equal((factors * f32(constant)).astype(np.float64), exact), constant
    j = (f32(2.0 * math.pi) * trandom._uniform32(np.arange(0, 2**24, 997, dtype=np.uint64))
         * f32(1.27323954473516)).astype(np.int32)
    assert set(((j + 1) & ~1).tolist()) <= {0, 2, 4, 6, 8}  # the multiples of pi/4 that occur


def _fused_log_and_angle_reference(u):
    """The Cephes steps with every multiply-add fused (fma32), as in PyTorch's kernel."""
    f32, fma = np.float32, trandom.fma32
    x = f32(1.0) - u
    bits = x.view(np.int32)
    e = ((bits >> 23) - 126).astype(f32)
    m = ((bits & 0x007FFFFF) | 0x3F000000).view(f32)
    small = m < f32(0.707106781186547524)
    e = e - small.astype(f32)
    x = (m - f32(1.0)) + np.where(small, m, f32(0.0))
    z = x * x
    y = np.full_like(x, f32(trandom._LOG_POLY[0]))
    for coefficient in trandom._LOG_POLY[1:]:
        y = fma(y, x, f32(coefficient))
    y = fma(y * x, z, e * f32(-2.12194440e-4))
    y = fma(z, f32(-0.5), y)
    log = fma(e, f32(0.693359375), x + y)
    theta = f32(2.0 * math.pi) * u
    j = ((theta * f32(1.27323954473516)).astype(np.int32) + 1) & ~1
    yj = j.astype(f32)
    t = fma(yj, f32(-0.78515625), theta)
    t = fma(yj, f32(-2.4187564849853515625e-4), t)
    t = fma(yj, f32(-3.77489497744594108e-8), t)
    return log, t


@settings(max_examples=20)
@given(start=st.integers(0, 2**24 - 4096))
def test_log_and_the_angle_reduction_equal_the_fully_fused_steps(start):
    u = trandom._uniform32(np.arange(start, start + 4096, dtype=np.uint64))  # consecutive float32 inputs
    log, reduced = _fused_log_and_angle_reference(u)
    assert trandom._cephes_log(np.float32(1.0) - u).tobytes() == log.tobytes()
    _, ours = trandom._reduce_angle(np.float32(2.0 * math.pi) * u)
    assert ours.tobytes() == reduced.tobytes()
