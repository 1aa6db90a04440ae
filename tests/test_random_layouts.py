"""Random numbers in PyTorch's places, and the generator's state in PyTorch's form.

PyTorch fills a tensor one element after another in memory order (a transposed tensor gets its
numbers transposed), and `normal_` of a tensor that is not contiguous draws one number at a time
(float64 Box-Muller with a cached spare) instead of in blocks of 16. Each case here is run in both
libraries from the same seed, and compares the numbers and the generator's state afterwards.

What is compared exactly: everything the Mersenne Twister decides (integers, bernoulli masks, which
uniform lands where, float32 uniforms in [0, 1), which are exact multiples of 2**-24) and the state's
bytes. What is compared in ULPs: numbers made by arithmetic a CPU or C library may round differently
(Box-Muller's log1p/sin/cos, the fused multiply-add of a scaled uniform or normal).
"""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tinyattn
from tinyattn import functions, random as trandom
from tinyattn.tensor.creation import _layout_strides
from tinyattn.app import checkpoint

# ---------------------------------------------------------------- helpers


def ulps(got, want):
    """The distance of each element of `got` from `want` in units in the last place of their dtype."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    ints = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}[got.dtype]

    def ordered(a):  # the float's bits as an integer that counts up with its value (negative ones mirrored)
        bits = a.view(ints).astype(np.int64)
        return np.where(bits < 0, np.iinfo(ints).min - bits, bits).astype(object)  # (object: exact differences)

    return np.abs(ordered(got) - ordered(want)).astype(float)


def assert_close_in_ulps(got, want, most=2):
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    distance = ulps(got, want)
    assert distance.size == 0 or distance.max() <= most, f"{distance.max()} ULPs apart:\n{got}\n{want}"


def assert_same_state(torch, tinyattn_state, torch_state):
    """Two generator states as bytes: the Mersenne Twister, its position, the seed and the flags
    exactly; the cached float64 normal (a product of sin) in ULPs."""
    ours, theirs = tinyattn_state.numpy(), torch_state.numpy()
    assert ours.dtype == theirs.dtype == np.uint8 and ours.shape == theirs.shape == (5056,)
    np.testing.assert_array_equal(ours[:5024], theirs[:5024])  # up to the cached normal
    np.testing.assert_array_equal(ours[5032:], theirs[5032:])
    assert_close_in_ulps(ours[5024:5032].view(np.float64), theirs[5024:5032].view(np.float64))


def run_both(torch, make, seed=0):
    """`make(lib)` under tinyattn and under PyTorch from the same seed: both results, then checks that
    the generators are left in the same state (its bytes, and the next draws)."""
    tinyattn.manual_seed(seed)
    torch.manual_seed(seed)
    ours, theirs = make(tinyattn), make(torch)
    assert_same_state(torch, tinyattn.get_rng_state(), torch.get_rng_state())
    np.testing.assert_array_equal(tinyattn.rand(5).numpy(), torch.rand(5).numpy())
    assert_close_in_ulps(tinyattn.randn(3, dtype=tinyattn.float64).numpy(),  # (takes a cached normal first)
                         torch.randn(3, dtype=torch.float64).numpy())
    return ours, theirs


def as_numpy(t):
    return np.asarray(t.detach().numpy())


# ---------------------------------------------------------------- layouts

# each makes an empty tensor of `dtype` with a layout in library `lib` (tinyattn or torch)
LAYOUTS = {
    "contiguous": lambda lib, dt: lib.empty(5, 7, dtype=dt),
    "transposed": lambda lib, dt: lib.empty(8, 4, dtype=dt).t(),
    "transposed, 16 or more": lambda lib, dt: lib.empty(24, 10, dtype=dt).t(),
    "strided": lambda lib, dt: lib.empty(4, 8, dtype=dt)[:, ::2],
    "strided, 16 or more": lambda lib, dt: lib.empty(6, 12, dtype=dt)[:, ::3],
    "a column": lambda lib, dt: lib.empty(20, 3, dtype=dt)[:, 1],
    "sliced": lambda lib, dt: lib.empty(6, 8, dtype=dt)[1:5, 2:7],
    "rows of a tensor": lambda lib, dt: lib.empty(6, 8, dtype=dt)[1:5],  # contiguous: the block path
    "permuted": lambda lib, dt: lib.empty(2, 3, 4, dtype=dt).permute(2, 0, 1),
    "permuted, channels last": lambda lib, dt: lib.empty(2, 3, 4, 5, dtype=dt).permute(0, 2, 3, 1),
    "permuted and strided": lambda lib, dt: lib.empty(4, 6, 5, dtype=dt).permute(1, 2, 0)[::2, :, 1:],
    "transposed with a dim of 1": lambda lib, dt: lib.empty(1, 16, dtype=dt).t(),  # contiguous, as PyTorch counts
    "transposed 3-d": lambda lib, dt: lib.empty(3, 4, 5, dtype=dt).transpose(0, 2),
    "transposed, unsqueezed": lambda lib, dt: lib.empty(8, 4, dtype=dt).t().unsqueeze(1),
    "a diagonal": lambda lib, dt: lib.empty(5, 5, dtype=dt).diagonal(),
    "a slice of a transposed 3-d": lambda lib, dt: lib.empty(6, 4, 3, dtype=dt).transpose(0, 2)[1],
}

# each fills a tensor in place, in library `lib`
FILLS = {
    "uniform_()": lambda lib, x: x.uniform_(),
    "uniform_(-2, 3)": lambda lib, x: x.uniform_(-2.0, 3.0),
    "normal_()": lambda lib, x: x.normal_(),
    "normal_(0.5, 2)": lambda lib, x: x.normal_(0.5, 2.0),
    "normal_(0, inf)": lambda lib, x: x.normal_(0.0, math.inf),  # infinities of the normals' signs
    "bernoulli_(0.3)": lambda lib, x: x.bernoulli_(0.3),
    # a tensor of probabilities: uniforms in its dtype (float32: one draw each), broadcast to x
    "bernoulli_(p tensor)": lambda lib, x: x.bernoulli_(lib.linspace(0, 1, x.numel()).reshape(x.shape)),
    "bernoulli_(p row, float64)": lambda lib, x: x.bernoulli_(lib.linspace(0, 1, x.shape[-1], dtype=lib.float64)),
    "random_(10)": lambda lib, x: x.random_(10),
    "random_(-5, 5)": lambda lib, x: x.random_(-5, 5),
    "random_()": lambda lib, x: x.random_(),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fill", FILLS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_in_place_fills_match_pytorch(torch, layout, fill, dtype):
    def make(lib):
        x = LAYOUTS[layout](lib, getattr(lib, dtype))
        FILLS[fill](lib, x)
        return x

    ours, theirs = run_both(torch, make)
    assert_close_in_ulps(as_numpy(ours), theirs.numpy())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fill", ["random_(10)", "random_(-5, 5)", "random_()", "bernoulli_(0.3)"])
def test_integer_fills_match_pytorch(torch, layout, fill):
    def make(lib):
        x = LAYOUTS[layout](lib, lib.int64)
        FILLS[fill](lib, x)
        return x

    ours, theirs = run_both(torch, make)
    np.testing.assert_array_equal(as_numpy(ours), theirs.numpy())


def test_a_transposed_normal_is_drawn_one_at_a_time(torch):
    # the case as a student meets it: 32 elements would take the block path if they were contiguous
    tinyattn.manual_seed(0)
    x = tinyattn.empty(8, 4).t()
    x.normal_()
    tinyattn.manual_seed(0)
    one_at_a_time = [tinyattn.randn(1, dtype=tinyattn.float64).item() for _ in range(32)]
    expected = np.array(one_at_a_time, np.float64).astype(np.float32).reshape(8, 4).T  # in memory order
    np.testing.assert_array_equal(as_numpy(x), expected)


@given(sizes=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data())
def test_any_permutation_and_steps_fill_as_pytorch(torch, sizes, data):
    order = data.draw(st.permutations(range(len(sizes))))
    steps = data.draw(st.lists(st.integers(1, 3), min_size=len(sizes), max_size=len(sizes)))
    fill = data.draw(st.sampled_from(["uniform_()", "normal_()", "bernoulli_(0.3)", "random_(-5, 5)"]))
    dtype = data.draw(st.sampled_from(["float32", "float64"]))

    def make(lib):
        x = lib.empty(*[3 * n for n in sizes], dtype=getattr(lib, dtype)).permute(*order)
        x = x[tuple(slice(None, None, s) for s in steps)]
        FILLS[fill](lib, x)
        return x

    ours, theirs = run_both(torch, make)
    assert_close_in_ulps(as_numpy(ours), theirs.numpy())


# ---------------------------------------------------------------- what PyTorch refuses


@pytest.mark.parametrize("make", [
    lambda lib: lib.empty(1, 4).expand(3, 4),
    lambda lib: lib.empty(4, 1).expand(4, 6)[:, 1:4],
    lambda lib: lib.empty(2, 1, 3).expand(2, 5, 3).permute(2, 1, 0),
], ids=["expanded", "expanded and sliced", "expanded and permuted"])
@pytest.mark.parametrize("fill", ["uniform_()", "normal_()", "bernoulli_(0.3)", "random_(10)"])
def test_an_expanded_tensor_is_refused_before_any_draw(torch, make, fill):
    for lib in (tinyattn, torch):
        lib.manual_seed(1)
        with pytest.raises(RuntimeError, match="more than one element|several of its elements"):
            FILLS[fill](lib, make(lib))
    np.testing.assert_array_equal(tinyattn.get_rng_state().numpy(), torch.get_rng_state().numpy())
    np.testing.assert_array_equal(tinyattn.rand(4).numpy(), torch.rand(4).numpy())


def test_a_leaf_that_requires_grad_is_refused_before_any_draw():
    tinyattn.manual_seed(2)
    before = tinyattn.get_rng_state()
    w = tinyattn.zeros(3, 4, requires_grad=True)
    with pytest.raises(Exception, match="leaf"):
        w.normal_()
    np.testing.assert_array_equal(tinyattn.get_rng_state().numpy(), before.numpy())


# ---------------------------------------------------------------- new tensors from a layout

LIKE = {
    "rand_like": lambda lib, x: lib.rand_like(x),
    "randn_like": lambda lib, x: lib.randn_like(x),
    "randint_like(x, 10)": lambda lib, x: lib.randint_like(x, 10),
    "randint_like(x, -3, 9)": lambda lib, x: lib.randint_like(x, -3, 9),
}

LIKE_LAYOUTS = dict(LAYOUTS, **{
    "expanded": lambda lib, dt: lib.empty(1, 4, dtype=dt).expand(5, 4),
    "expanded and sliced": lambda lib, dt: lib.empty(4, 1, dtype=dt).expand(4, 6)[:, 1:4],
})


@pytest.mark.parametrize("layout", LIKE_LAYOUTS)
@pytest.mark.parametrize("like", LIKE)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_like_creators_match_pytorch(torch, layout, like, dtype):
    def make(lib):
        return LIKE[like](lib, LIKE_LAYOUTS[layout](lib, getattr(lib, dtype)))

    ours, theirs = run_both(torch, make)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert_close_in_ulps(as_numpy(ours), theirs.numpy())
    # laid out as PyTorch's empty_like lays it out (the stride of an axis of size 1 is never used)
    long_axes = [axis for axis, size in enumerate(theirs.shape) if size > 1]
    assert [_layout_strides(ours)[a] for a in long_axes] == [theirs.stride()[a] for a in long_axes]


@pytest.mark.parametrize("layout", ["transposed", "transposed, 16 or more", "strided", "permuted", "contiguous"])
@pytest.mark.parametrize("creator", ["rand", "randn"])
def test_out_is_filled_in_its_memory_order(torch, layout, creator):
    def make(lib):
        out = LAYOUTS[layout](lib, lib.float32)
        result = getattr(lib, creator)(*out.shape, out=out)
        assert result is out
        return out

    ours, theirs = run_both(torch, make)
    assert_close_in_ulps(as_numpy(ours), theirs.numpy())


# ---------------------------------------------------------------- dropout

DROPOUT_INPUTS = {
    "transposed": lambda lib: lib.arange(1.0, 25.0).reshape(4, 6).t(),
    "permuted": lambda lib: lib.arange(1.0, 61.0).reshape(3, 4, 5).permute(1, 2, 0),
    "strided": lambda lib: lib.arange(1.0, 49.0).reshape(4, 12)[:, ::2],
    "contiguous": lambda lib: lib.arange(1.0, 25.0).reshape(4, 6),
}


@pytest.mark.parametrize("layout", DROPOUT_INPUTS)
@pytest.mark.parametrize("form", ["F.dropout", "nn.Dropout", "inplace"])
def test_dropout_masks_match_pytorch(torch, layout, form):
    def make(lib):
        x = DROPOUT_INPUTS[layout](lib)
        if form == "F.dropout":
            return lib.nn.functional.dropout(x, 0.3)
        if form == "nn.Dropout":
            return lib.nn.Dropout(0.3)(x)
        x = x.clone() if layout == "contiguous" else x
        lib.nn.functional.dropout(x, 0.3, inplace=True)
        return x

    ours, theirs = run_both(torch, make)
    np.testing.assert_array_equal(as_numpy(ours) == 0, theirs.numpy() == 0)  # the mask, exactly
    assert_close_in_ulps(as_numpy(ours), theirs.numpy(), most=1)


def test_dropout_mask_of_a_transposed_input_was_the_issue(torch):
    # before: 14 of 24 elements of this mask differed from PyTorch's
    ours, theirs = run_both(torch, lambda lib: lib.nn.functional.dropout(lib.ones(6, 4).t(), 0.5))
    np.testing.assert_array_equal(as_numpy(ours), theirs.numpy())


# ---------------------------------------------------------------- the order itself, without PyTorch


def test_fill_order_is_memory_order():
    assert trandom.fill_order((4, 8), (1, 4)) == [0, 1]  # a transpose: axis 0 moves fastest
    assert trandom.fill_order((4, 4), (8, 2)) == [1, 0]  # x[:, ::2]: row-major still
    assert trandom.fill_order((4, 2, 3), (1, 12, 4)) == [0, 2, 1]  # permute(2, 0, 1) of (2, 3, 4)
    assert trandom.is_contiguous((16, 1), (1, 16)) and not trandom.is_contiguous((4, 8), (1, 4))
    assert trandom.is_dense((4, 2, 3), (1, 12, 4)) and not trandom.is_dense((4, 4), (8, 2))
    assert trandom.like_strides((4, 4), (8, 2)) == (4, 1) and trandom.like_strides((4, 8), (1, 4)) == (1, 4)
    assert trandom.like_strides((3, 4), (2, 12)) == (1, 3)  # a transpose of x[::2]: dense, axes kept in order
    values = np.arange(6)
    np.testing.assert_array_equal(trandom.in_fill_order(values, (3, 2), (1, 3)), [[0, 3], [1, 4], [2, 5]])


def test_generator_methods_take_a_layout():
    g = trandom.Generator().manual_seed(4)
    placed = g.uniform((3, 5), strides=(1, 3))
    flat = trandom.Generator().manual_seed(4).uniform((15,))
    np.testing.assert_array_equal(placed, flat.reshape(5, 3).T)
    with pytest.raises(ValueError, match="one stride per dimension"):
        g.uniform((3, 5), strides=(1,))


# ---------------------------------------------------------------- the state in PyTorch's layout


@pytest.mark.parametrize("seed", [0, 5, -1, 2**63, 2**64 - 1, 67280421310721])
def test_state_bytes_are_pytorchs(torch, seed):
    tinyattn.manual_seed(seed)
    torch.manual_seed(seed)
    assert_same_state(torch, tinyattn.get_rng_state(), torch.get_rng_state())  # right after seeding
    for draws in [3, 621, 1, 700, 0, 5]:  # across twists, and on the word where one is due
        tinyattn.rand(draws), torch.rand(draws)
        assert_same_state(torch, tinyattn.get_rng_state(), torch.get_rng_state())
    tinyattn.randn(3, dtype=tinyattn.float64), torch.randn(3, dtype=torch.float64)  # a spare normal cached
    assert_same_state(torch, tinyattn.get_rng_state(), torch.get_rng_state())
    assert tinyattn.get_rng_state().numpy()[5040] == 1


def test_a_pytorch_state_resumes_here_and_the_reverse(torch):
    torch.manual_seed(11)
    torch.randn(1, dtype=torch.float64), torch.rand(100)  # mid-stream, with a cached normal
    tinyattn.set_rng_state(tinyattn.tensor(torch.get_rng_state().numpy()))
    assert_close_in_ulps(tinyattn.randn(5, dtype=tinyattn.float64).numpy(), torch.randn(5, dtype=torch.float64).numpy())
    np.testing.assert_array_equal(tinyattn.rand(700).numpy(), torch.rand(700).numpy())

    tinyattn.manual_seed(12)
    tinyattn.randn(3), tinyattn.randint(0, 9, (17,))
    torch.set_rng_state(torch.from_numpy(tinyattn.get_rng_state().numpy().copy()))
    assert_close_in_ulps(torch.randn(1).numpy(), tinyattn.randn(1).numpy())  # the cached spare crossed over
    np.testing.assert_array_equal(torch.randint(0, 2**40, (9,)).numpy(), tinyattn.randint(0, 2**40, (9,)).numpy())


def test_a_saved_state_loads_with_the_default_load_in_both(torch, tmp_path):
    tinyattn.manual_seed(3)
    tinyattn.rand(10)
    tinyattn.save({"rng": tinyattn.get_rng_state()}, tmp_path / "ours.pt")
    expected = tinyattn.rand(4).numpy()

    loaded = tinyattn.load(tmp_path / "ours.pt")["rng"]  # weights_only, the default
    tinyattn.set_rng_state(loaded)
    np.testing.assert_array_equal(tinyattn.rand(4).numpy(), expected)
    torch.set_rng_state(torch.load(tmp_path / "ours.pt")["rng"])  # PyTorch's default load takes it too
    np.testing.assert_array_equal(torch.rand(4).numpy(), expected)

    torch.manual_seed(8)
    torch.save({"rng": torch.get_rng_state()}, tmp_path / "theirs.pt")
    tinyattn.set_rng_state(tinyattn.load(tmp_path / "theirs.pt")["rng"])
    np.testing.assert_array_equal(tinyattn.rand(4).numpy(), torch.rand(4).numpy())


def test_a_state_is_a_tensor_that_clones():
    state = tinyattn.get_rng_state()
    assert isinstance(state, tinyattn.Tensor) and state.dtype is tinyattn.uint8 and tuple(state.shape) == (5056,)
    copy = state.clone()
    first = tinyattn.rand(3)
    tinyattn.set_rng_state(copy)
    np.testing.assert_array_equal(tinyattn.rand(3).numpy(), first.numpy())


def test_generator_and_random_module_speak_the_same_state(torch):
    g = tinyattn.Generator().manual_seed(21)
    tg = torch.Generator().manual_seed(21)
    g.normal((1,)), torch.randn(1, generator=tg)
    assert_same_state(torch, g.get_state(), tg.get_state())
    h = tinyattn.Generator()
    h.set_state(tinyattn.tensor(tg.get_state().numpy()))
    np.testing.assert_array_equal(h.uniform((6,)), torch.rand(6, generator=tg).numpy())
    tinyattn.random.set_rng_state(g.get_state())
    np.testing.assert_array_equal(tinyattn.random.get_rng_state().numpy(), g.get_state().numpy())


BAD_STATES = {
    "a dict": lambda lib: {"a": 1},
    "10 bytes": lambda lib: lib.zeros(10, dtype=lib.uint8),
    "float32": lambda lib: lib.zeros(5056),
    "all zeros (not seeded)": lambda lib: lib.zeros(5056, dtype=lib.uint8),
    "not contiguous": lambda lib: lib.get_rng_state()[::2],
    "a NumPy array": lambda lib: np.zeros(5056, np.uint8),
    "a list": lambda lib: [0] * 5056,
    "the legacy size": lambda lib: lib.zeros(5048, dtype=lib.uint8),
}


@pytest.mark.parametrize("bad", BAD_STATES)
def test_a_malformed_state_raises_as_pytorch_does(torch, bad):
    kinds = []
    for lib in (torch, tinyattn):
        before = lib.get_rng_state()
        with pytest.raises((TypeError, RuntimeError, ValueError)) as caught:
            lib.set_rng_state(BAD_STATES[bad](lib))
        kinds.append(caught.type)
        np.testing.assert_array_equal(lib.get_rng_state().numpy(), before.numpy())  # left as it was
    if bad != "a dict":  # (tinyattn reads a dict: the state it saved before, refused here by its keys)
        assert kinds[0] is kinds[1]
    message = str(caught.value)
    assert any(word in message for word in ("5056", "ByteTensor", "contiguous", "get_state", "mt19937")), message


def test_a_size_error_names_the_size():
    with pytest.raises(RuntimeError, match="size 5056 .* size to be 10"):
        tinyattn.set_rng_state(tinyattn.zeros(10, dtype=tinyattn.uint8))
    with pytest.raises(TypeError, match="uint8"):
        tinyattn.set_rng_state(tinyattn.zeros(5056))


def test_the_earlier_dict_in_a_checkpoint_still_restores():
    g = trandom.Generator().manual_seed(9)
    g.normal((5,))
    mt = g._mt.state["state"]
    earlier = {"key": mt["key"].tolist(), "pos": int(mt["pos"]), "seed": 9, "has_cached_normal": True,
               "cached_normal": g._cached_normal}  # as meta.json held it
    new = checkpoint.generator_state_to_json(g)
    expected = g.normal((3,))
    for saved in (earlier, new):
        checkpoint._check_generator_state(saved, "meta.json", "rng.default")
        h = trandom.Generator()
        checkpoint.restore_generator_state(h, saved)
        np.testing.assert_array_equal(h.normal((3,)), expected)
    with pytest.raises(Exception, match="hex"):
        checkpoint._check_generator_state("00" * 10, "meta.json", "rng.default")
    with pytest.raises(ValueError, match="mt19937"):
        checkpoint.restore_generator_state(trandom.Generator(), "00" * 5056)


# ---------------------------------------------------------------- fork_rng and seeds


def test_fork_rng_restores_the_state_as_pytorch(torch):
    for lib in (tinyattn, torch):
        lib.manual_seed(0)
        with lib.random.fork_rng():
            inside = lib.rand(3)
            lib.randn(1, dtype=lib.float64)
        after = lib.rand(3)
        assert np.array_equal(inside.numpy(), after.numpy())
        before = lib.get_rng_state()
        with pytest.raises(KeyError):  # restored on the way out of an exception too
            with lib.random.fork_rng(devices=[]):
                lib.rand(5)
                raise KeyError("restored all the same")
        assert np.array_equal(lib.get_rng_state().numpy(), before.numpy())
        with lib.random.fork_rng(enabled=False):  # does nothing
            lib.rand(2)
        assert not np.array_equal(lib.get_rng_state().numpy(), before.numpy())
        with lib.random.fork_rng(devices=iter([]), device_type="cuda"):
            lib.rand(2)
    assert_same_state(torch, tinyattn.get_rng_state(), torch.get_rng_state())


def test_fork_rng_devices_empty_leaves_the_gpu_stream_alone(monkeypatch):
    g = trandom.default_generator
    monkeypatch.setattr(g, "_device_rng", "a stream in use")
    with trandom.fork_rng(devices=[]):
        g.uniform((2,))
    assert g._device_rng == "a stream in use"
    with trandom.fork_rng():
        g.uniform((2,))
    assert g._device_rng is None  # restarted from the state, as set_rng_state restarts it


SEEDS_PYTORCH_TAKES = [3.0, True, False, 3.5, -3.7, "3", " 42 ", -1, 2**64 - 1, -2**63, np.int64(3),
                       np.float64(3.0), "tensor(3)", "tensor(3.5)", "tensor([7])"]


def seed_in(lib, seed):
    if isinstance(seed, str) and seed.startswith("tensor"):
        return eval(seed, {"tensor": lib.tensor})
    return seed


@pytest.mark.parametrize("seed", SEEDS_PYTORCH_TAKES, ids=repr)
def test_manual_seed_takes_int_of_the_seed(torch, seed):
    ours, theirs = tinyattn.manual_seed(seed_in(tinyattn, seed)), torch.manual_seed(seed_in(torch, seed))
    assert ours.initial_seed() == theirs.initial_seed() == tinyattn.initial_seed()
    np.testing.assert_array_equal(tinyattn.rand(3).numpy(), torch.rand(3).numpy())


@pytest.mark.parametrize("seed", [2**64, -2**63 - 1, None, "abc", "3.5", [3], "tensor([1, 2])"], ids=repr)
def test_manual_seed_refuses_what_pytorch_refuses(torch, seed):
    with pytest.raises(Exception) as theirs:
        torch.manual_seed(seed_in(torch, seed))
    with pytest.raises(Exception) as ours:
        tinyattn.manual_seed(seed_in(tinyattn, seed))
    if theirs.type in (TypeError, ValueError):
        assert ours.type is theirs.type, (ours.value, theirs.value)
    else:  # PyTorch's RuntimeError for int() of a tensor of two elements; tinyattn's int() says ValueError
        assert ours.type in (RuntimeError, ValueError)
    assert "seed" in str(ours.value)  # and says what a seed is


def test_generator_manual_seed_takes_only_an_int_as_pytorchs():
    with pytest.raises(TypeError, match="seed must be an int"):
        tinyattn.Generator().manual_seed(3.0)


def test_cuda_manual_seed_takes_int_of_the_seed_too():
    g = trandom.default_generator
    before = g.get_state()
    tinyattn.cuda.manual_seed(5.0)
    assert g._device_seed == 5 and g._device_rng is None  # the GPU stream restarts from 5 ...
    np.testing.assert_array_equal(g.get_state().numpy(), before.numpy())  # ... and the CPU stream goes on


@pytest.mark.parametrize("creator", ["rand", "randn"])
def test_out_of_another_dtype_is_refused_as_pytorch_refuses_it(torch, creator):
    for lib in (torch, tinyattn):
        with pytest.raises(RuntimeError, match="dtype Double does not match dtype of out parameter \\(Float\\)"):
            getattr(lib, creator)(3, 4, out=lib.empty(4, 3).t(), dtype=lib.float64)


DRAWS = {
    "rand": lambda lib, n: lib.rand(n),
    "randn": lambda lib, n: lib.randn(n),
    "randn float64": lambda lib, n: lib.randn(n, dtype=lib.float64),
    "randint": lambda lib, n: lib.randint(0, 7, (n,)),
    "transposed normal_": lambda lib, n: lib.empty(n, 2).t().normal_(),
    "dropout": lambda lib, n: lib.nn.functional.dropout(lib.ones(2, n).t(), 0.4),
}


@given(st.integers(0, 2**64 - 1), st.lists(st.tuples(st.sampled_from(sorted(DRAWS)), st.integers(0, 700)),
                                            max_size=8))
def test_the_state_after_any_draws_is_pytorchs(torch, seed, draws):
    tinyattn.manual_seed(seed)
    torch.manual_seed(seed)
    for name, n in draws:
        DRAWS[name](tinyattn, n), DRAWS[name](torch, n)
        assert_same_state(torch, tinyattn.get_rng_state(), torch.get_rng_state())
    tinyattn.set_rng_state(tinyattn.tensor(torch.get_rng_state().numpy()))  # and a state read back is the same
    assert_same_state(torch, tinyattn.get_rng_state(), torch.get_rng_state())
