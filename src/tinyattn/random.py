"""Random numbers that match PyTorch's CPU generator, so `torch.manual_seed(123)` code prints the
same numbers as the textbook.

Everything here returns NumPy arrays; the tensor layer wraps them. The formulas below were checked
against PyTorch 2.13 (x86-64, CPU) by tests/test_random.py, which compares with real torch.

The engine is MT19937 (the Mersenne Twister) seeded like C++'s `init_genrand(seed)`: the same raw
32-bit stream as `numpy.random.RandomState(seed)`. PyTorch turns raw draws into numbers like this:

- float32 uniform: one draw, its low 24 bits (a float32 mantissa) times 2**-24, in [0, 1).
- float64 uniform: two draws `hi`, `lo`, the low 53 bits of `hi << 32 | lo` times 2**-53.
- normal, fewer than 16 numbers: Box-Muller in float64 on two float64 uniforms; it makes two
  normals, returns one and keeps the other for the next small normal draw (cleared by manual_seed).
- normal, 16 or more numbers: uniforms for the whole array first, then Box-Muller on blocks of 16
  (pairs j, j + 8); when the size is not a multiple of 16 the last 16 are redrawn and redone.
  Each block depends only on its own 16 draws, so float32 blocks are computed ahead, for the next
  few thousand draws at once (see Generator._normals32): replaying the float32 polynomials costs a
  few hundred NumPy calls whatever the size.
- bernoulli (dropout masks): one float64 uniform per element, kept when `u < p`.
- multinomial: exponential noise `q = -log1p(-u)` and `argmax(p / q)` (the Gumbel-max trick);
  with replacement and several samples, a binary search in the cumulative sum.
- randint: `draw % (high - low) + low`, with a 64-bit draw (two raw draws) when the range is
  2**28 or more.

Where the numbers go: PyTorch fills a tensor in the order of its memory (its TensorIterator sorts the
axes by stride), so a transposed tensor gets its numbers transposed; and `normal_` of a tensor that
is not contiguous takes the one-at-a-time path above whatever its size. The `strides=` argument of
the methods below says which layout to fill (fill_order, in_fill_order); `like_strides` is the layout
of PyTorch's empty_like, which rand_like, randn_like, randint_like and dropout draw into.

The state (get_state / set_state) is PyTorch's: the bytes of its CPU generator's C struct, 5056 of
them (see STATE_SIZE below), so that states move between the two libraries.

Exactness: bit for bit with PyTorch on x86-64 CPUs with AVX2 or AVX-512 (PyTorch's kernels for
them fuse multiply-adds and compute large float32 normals with Cephes polynomials; we replay both),
except (1) float64 `normal` of 16 or more numbers, where NumPy's vectorised `log` can differ from the
C library's in the last bit (about 1 value in 600), and (2) `multinomial`, whose exponential noise
uses NumPy's `log1p` (last-bit differences too): a sample can change only when the two best
categories' p / q are within one rounding step of each other, which practically never happens.
Without AVX2 (ARM, Apple Silicon, ATEN_CPU_CAPABILITY=default) PyTorch's own numbers differ from its
x86 ones in the last bits (by up to about 2e-6), and so from ours.

GPU (CuPy) split: PyTorch's CUDA generator (Philox) cannot be reproduced here, so
- every draw made by `uniform`, `normal`, `randint`, `bernoulli`, `multinomial` and `randperm`
  follows the PyTorch CPU stream above, on the host, even for tensors that will live on the GPU
  (weight initialisation, sampling): the tensor layer copies the result to the device;
- only `Generator.device_bernoulli` with a CuPy namespace (large dropout masks drawn every training
  step) uses CuPy's own generator (cuRAND), owned by the Generator and seeded with the same seed.
  Those masks do not match PyTorch, and `get_state` cannot save that stream: `set_state` restarts it
  from a seed derived from the restored state, so a restored generator draws the same GPU masks
  every time, but not the ones the original went on to draw.
"""

import contextlib
import hashlib
import math
import os
import struct

import numpy as np

DEFAULT_SEED = 67280421310721  # the seed PyTorch's default generator starts with

_U64 = (1 << 64) - 1
_U32_SHIFT = np.uint64(32)
_MASK24 = np.uint64(0xFFFFFF)
_MASK53 = np.uint64(2**53 - 1)
_MASK53_INT = 2**53 - 1
_FLOAT32, _FLOAT64 = np.dtype(np.float32), np.dtype(np.float64)
_CHUNK = 1 << 15  # large normals are made this many at a time, to stay in the CPU cache
_LOOKAHEAD_MIN, _LOOKAHEAD_MAX = 256, 16384  # draws whose float32 normals are computed ahead
_RANDPERM_LARGE = 0xFFFFFFFF // 20  # from this n on, PyTorch's randperm takes 64-bit draws

# PyTorch's CPU generator state (CPUGeneratorImplState in ATen's CPUGeneratorImpl.cpp) as the bytes of
# its C struct on a 64-bit little-endian machine, zeros in the padding:
#   offset    0  int64    the initial seed
#             8  int32    left: draws until the next twist, plus one (1: twist at the next draw)
#            12  int32    seeded (1)
#            16  uint64   next: the index of the next word of the state to draw
#            24  uint64   the 624 words of the Mersenne Twister's state, each in the low 32 bits
#          5016  float64  normal_x, then 5024 normal_y, then 5032 normal_rho: of these only normal_y
#                         is used, the cached spare normal of float64 Box-Muller
#          5040  int32    normal_is_valid: whether normal_y holds a cached normal
#          5048  float32  the cached spare normal of float32 Box-Muller
#          5052  bool     whether that float32 normal is valid
STATE_SIZE = 5056
_STATE_HEAD = struct.Struct("<qiiQ")  # seed, left, seeded, next
_STATE_WORDS = slice(24, 24 + 624 * 8)
_STATE_NORMAL = struct.Struct("<dddi")  # normal_x, normal_y, normal_rho, normal_is_valid (at 5016)
_STATE_FLOAT_NORMAL = struct.Struct("<f?")  # (at 5048)


def check_seed(seed):
    """The seed as PyTorch stores it: an int in [0, 2**64), negative seeds wrapping around."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}: pass e.g. manual_seed(123)")
    seed = int(seed)
    if not -(1 << 63) <= seed <= _U64:
        raise ValueError(f"seed must be in [-2**63, 2**64), got {seed}")
    return seed & _U64


def _shape_and_size(shape):
    """A shape (an int or a sequence of ints) as a tuple, and its number of elements."""
    if type(shape) is tuple and len(shape) == 1 and type(shape[0]) is int and shape[0] >= 0:
        return shape, shape[0]  # (the common case, without the loops below)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(int(s) < 0 for s in shape):
        raise ValueError(f"shape must have non-negative sizes, got {shape}")
    return tuple(int(s) for s in shape), math.prod(int(s) for s in shape)


def _float_dtype(dtype, what):
    if dtype is _FLOAT32 or dtype is np.float32:  # (the common cases first)
        return _FLOAT32
    if dtype is _FLOAT64 or dtype is np.float64:
        return _FLOAT64
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"{what} makes float32 or float64 numbers, got dtype {dtype}")
    return dtype


class Generator:
    """A PyTorch-compatible random stream (like `torch.Generator`), returning NumPy arrays."""

    def __init__(self, device="cpu"):
        self.device = str(device)  # kept for the tensor layer; draws are made the same way
        self._scratch = None  # a second MT19937 that _peek32 sets to this stream's state
        self._mt = None
        self.manual_seed(DEFAULT_SEED)

    def __repr__(self):
        # PyTorch prints <torch._C.Generator object at 0x...>, the class where it is defined; this
        # class is reached as tinyattn.Generator (manual_seed returns it, as torch.manual_seed does)
        return f"<tinyattn.Generator object at {id(self):#x}>"

    # ---------------------------------------------------------------- seeding and state

    def manual_seed(self, seed):
        """Restart the stream from `seed` (any int in [-2**63, 2**64)); returns self, like torch."""
        seed = check_seed(seed)
        # MT19937 keeps 32 bits of the seed, which it takes the way PyTorch does (C++'s init_genrand)
        # with the seeding that RandomState(seed) uses; one MT19937 per generator, seeded again.
        if getattr(self, "_mt", None) is None:
            self._mt = np.random.MT19937(0)
        if hasattr(self._mt, "_legacy_seeding"):  # (NumPy's own, a few microseconds)
            self._mt._legacy_seeding(seed & 0xFFFFFFFF)
        else:  # the same state through RandomState, a hundred times slower
            legacy = np.random.RandomState(seed & 0xFFFFFFFF).get_state()
            self._mt.state = {"bit_generator": "MT19937", "state": {"key": legacy[1], "pos": legacy[2]}}
        self._seed = seed
        self._cached_normal = None  # the spare normal of the last small Box-Muller, a float
        self._cached_float_normal = None  # PyTorch's float32 spare (unused on the CPU; kept in the state)
        self._device_rng = None  # CuPy generator, created on first use from _device_seed
        self._device_seed = seed
        self._restart_count()
        return self

    def _restart_count(self):
        """Count raw draws from here (a new seed or state), with no normals computed ahead yet."""
        self._drawn = 0  # raw 32-bit draws taken from the stream since then
        self._normals = None  # float32 normals of the stream's next words, computed ahead (_normals32)
        self._normals_start = 0  # the value of _drawn at the first word of _normals
        self._lookahead = _LOOKAHEAD_MIN  # how many words the next _normals covers

    def seed_device(self, seed):
        """Restart only the GPU stream (CuPy's generator, for dropout masks) from `seed`, as
        torch.cuda.manual_seed seeds only the GPU's generator; the host stream goes on. Takes
        int(seed), as torch.cuda.manual_seed does."""
        self._device_seed = check_seed(_int_seed(seed))
        self._device_rng = None

    def seed(self):
        """Reseed from the operating system's entropy and return the new seed."""
        seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)
        return seed

    def initial_seed(self):
        """The seed given to the last manual_seed (negative seeds read back as seed + 2**64)."""
        return self._seed

    def get_state(self):
        """The generator's state as PyTorch's: a uint8 tensor of 5056 bytes, its CPU generator's C
        struct (the Mersenne Twister's words and position, the seed and the cached normals), so a
        state saved here resumes under PyTorch with the same stream, and the reverse. (The tensor
        layer makes the tensor, see use_tensors; `state_bytes` gives the bytes as a NumPy array.)"""
        return _state_tensor(self.state_bytes())

    def set_state(self, state):
        """Continue exactly where `get_state` was taken: from its uint8 tensor (PyTorch's layout, so
        also a state saved by PyTorch), or from the dict that earlier versions of tinyattn saved."""
        if isinstance(state, dict):
            self._set_legacy_state(state)
        else:
            self.set_state_bytes(_state_host_bytes(state))

    def state_bytes(self):
        """The state as a NumPy uint8 array in PyTorch's layout (what `get_state` wraps in a tensor)."""
        mt = self._mt.state["state"]
        key, pos = np.asarray(mt["key"], dtype=np.uint32), int(mt["pos"])
        if pos < 624:  # the word at `pos` is drawn next, without a twist
            left, next_word = 625 - pos, pos
        else:  # the next draw twists first; PyTorch says so with left = 1, and next = 0 right after seeding
            left, next_word = 1, 0 if np.array_equal(key, _seeded_key(self._seed)) else 624
        out = bytearray(STATE_SIZE)
        _STATE_HEAD.pack_into(out, 0, self._seed - (1 << 64) if self._seed >= 1 << 63 else self._seed,
                              left, 1, next_word)
        out[_STATE_WORDS] = key.astype("<u8").tobytes()
        normal = self._cached_normal
        _STATE_NORMAL.pack_into(out, 5016, 0.0, 0.0 if normal is None else normal, 0.0, normal is not None)
        float_normal = self._cached_float_normal
        _STATE_FLOAT_NORMAL.pack_into(out, 5048, 0.0 if float_normal is None else float_normal,
                                      float_normal is not None)
        return np.frombuffer(bytes(out), dtype=np.uint8).copy()

    def set_state_bytes(self, data):
        """Restore a state from its bytes in PyTorch's layout (a NumPy uint8 array or bytes)."""
        data = bytes(np.ascontiguousarray(data, dtype=np.uint8)) if not isinstance(data, bytes) else data
        if len(data) != STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but found the input RNG state "
                               f"size to be {len(data)}: pass a state from get_rng_state() (a uint8 tensor of "
                               f"{STATE_SIZE} bytes, as PyTorch's torch.get_rng_state() gives too)")
        seed, left, seeded, next_word = _STATE_HEAD.unpack_from(data, 0)
        words = np.frombuffer(data[_STATE_WORDS], dtype="<u8")
        _, normal, _, normal_is_valid = _STATE_NORMAL.unpack_from(data, 5016)
        float_normal, float_normal_is_valid = _STATE_FLOAT_NORMAL.unpack_from(data, 5048)
        # PyTorch checks seeded, 0 < left <= 624 and next <= 624; a stream it can reach also keeps
        # next + left == 625 between twists, which is what a NumPy MT19937 (its `pos`) can hold
        if not (seeded and 0 < left <= 624 and next_word <= 624 and (left == 1 or next_word + left == 625)):
            raise RuntimeError(f"Invalid mt19937 state (seeded={seeded}, left={left}, next={next_word}): "
                               "pass a state from get_rng_state()")
        key = (words & 0xFFFFFFFF).astype(np.uint32)  # PyTorch keeps the low 32 bits of each word too
        self._restore(key, 624 if left == 1 else next_word, seed & _U64,
                      normal if normal_is_valid else None, float_normal if float_normal_is_valid else None)

    def _set_legacy_state(self, state):
        # {"key", "pos", "seed", "has_cached_normal", "cached_normal"}: what get_state gave before
        # it gave PyTorch's layout (still read, for the checkpoints saved then)
        try:
            key = np.asarray(state["key"], dtype=np.uint32)
            pos = int(state["pos"])
            seed = int(state["seed"])
            has_normal = bool(state["has_cached_normal"])
            normal = float(state["cached_normal"])
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a generator state (use Generator.get_state()): {error!r}") from None
        if key.shape != (624,) or not 0 <= pos <= 624:
            raise ValueError("not a generator state: 'key' must hold 624 numbers and 'pos' be in [0, 624]")
        self._restore(key, pos, seed, normal if has_normal else None, None)

    def _restore(self, key, pos, seed, normal, float_normal):
        self._mt.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self._seed = seed
        self._cached_normal = normal
        self._cached_float_normal = float_normal
        self._restart_count()
        # the GPU stream's state cannot be saved: restart it from a seed that this state determines
        state_bytes = key.tobytes() + pos.to_bytes(2, "little") + (seed % 2**64).to_bytes(8, "little")
        self._device_rng = None
        self._device_seed = int.from_bytes(hashlib.blake2b(state_bytes, digest_size=8).digest(), "little")

    # ---------------------------------------------------------------- raw draws

    def _draw32(self, n):
        """n raw 32-bit draws (as uint64)."""
        self._drawn += n
        return self._mt.random_raw(n)

    def _peek32(self, n):
        """The next n raw draws, leaving the stream where it is (they are drawn from a copy of it)."""
        if self._scratch is None:
            self._scratch = np.random.MT19937(0)
        self._scratch.state = self._mt.state
        return self._scratch.random_raw(n)

    def _draw64(self, n):
        """n 64-bit numbers, each made of two draws, the first one high: PyTorch's random64()."""
        raw = self._draw32(2 * n)
        return (raw[0::2] << _U32_SHIFT) | raw[1::2]

    def _uniform01(self, n, dtype):
        """n uniforms in [0, 1): as many random bits as the type's mantissa holds (24 or 53)."""
        if dtype is _FLOAT32 or dtype == np.float32:
            return _uniform32(self._draw32(n))
        return (self._draw64(n) & _MASK53).astype(np.float64) * 2.0**-53

    # ---------------------------------------------------------------- distributions

    def uniform(self, shape, dtype=np.float32, low=0.0, high=1.0, strides=None):
        """torch.rand / Tensor.uniform_(low, high). With `strides` (a tensor's, in elements) the numbers
        are where PyTorch's fill of a tensor of that layout puts them: in memory order (in_fill_order)."""
        shape, n = _shape_and_size(shape)
        dtype = _float_dtype(dtype, "uniform")
        if not low <= high:
            raise ValueError(f"uniform needs low <= high, got low={low}, high={high}")
        x = self._uniform01(n, dtype)
        if (low, high) != (0.0, 1.0):
            # PyTorch computes x * (high - low) + low in the tensor's type, as one fused multiply-add.
            if dtype == np.float32:
                low, high = np.float32(low), np.float32(high)
                x = fma32(x, high - low, low)
            else:
                x = fma64(x, float(high) - float(low), float(low))
        return _placed(x, shape, strides)

    def normal(self, shape, dtype=np.float32, mean=0.0, std=1.0, strides=None):
        """torch.randn / Tensor.normal_(mean, std). With `strides` (a tensor's, in elements): the
        numbers of PyTorch's fill of a tensor of that layout, which for a tensor that is not contiguous
        (a transpose, a slice x[:, ::2]) draws one normal at a time, in memory order."""
        shape, n = _shape_and_size(shape)
        dtype = _float_dtype(dtype, "normal")
        if not std >= 0:
            raise ValueError(f"normal needs std >= 0, got std={std}")
        if n < 16 or (strides is not None and not is_contiguous(shape, strides)):
            return _placed(self._normal_small(n, dtype, float(mean), float(std)), shape, strides)
        # PyTorch draws a uniform per element, then runs Box-Muller on each block of 16; when n is
        # not a multiple of 16 it draws n % 16 more, which the last block, drawn afresh, overwrites.
        full = n - n % 16
        if dtype == np.float32:
            z = self._normals32(full)
            if n % 16:
                self._draw32(n % 16)
                z = np.concatenate([z[:n - 16], self._normals32(16)])
        else:
            z = np.empty(n)
            for start in range(0, full, _CHUNK):  # in cache-sized chunks (same draws, same order)
                stop = min(start + _CHUNK, full)
                z[start:stop] = _box_muller64(self._uniform01(stop - start, dtype))
            if n % 16:
                self._uniform01(n % 16, dtype)
                z[n - 16:] = _box_muller64(self._uniform01(16, dtype))
        if (mean, std) != (0.0, 1.0):  # z * std + mean, as one fused multiply-add
            z = fma32(z, np.float32(std), np.float32(mean)) if dtype == np.float32 else fma64(z, std, mean)
        return z.reshape(shape) if z.base is None else z.reshape(shape).copy()  # never a view of _normals

    def _normals32(self, m):
        """Standard float32 normals of the next m draws (m a multiple of 16), taking m draws.

        Box-Muller in float32 costs a few hundred NumPy calls whatever the size, so for small draws
        it is computed ahead: for the next few thousand words of the stream at once (on a copy of
        the stream, which does not move), and a later draw that starts at a block boundary of those
        words takes its normals from there. The numbers are the same: each block of 16 normals
        depends only on its own 16 words. What is computed ahead doubles while draws keep using it up.
        """
        if m >= _LOOKAHEAD_MAX:
            return np.concatenate([_box_muller32(self._uniform01(min(_CHUNK, m - start), np.float32))
                                   for start in range(0, m, _CHUNK)])
        offset = self._drawn - self._normals_start
        aligned = self._normals is not None and offset >= 0 and offset % 16 == 0
        if aligned and offset + m <= len(self._normals):
            self._draw32(m)  # (the words those normals were made of)
            return self._normals[offset:offset + m]
        # a steady stream of draws that ran past the end: compute twice as far ahead next
        steady = aligned and offset <= len(self._normals)
        self._lookahead = min(2 * self._lookahead, _LOOKAHEAD_MAX) if steady else _LOOKAHEAD_MIN
        self._normals = _box_muller32(_uniform32(self._peek32(max(self._lookahead, m))))
        self._normals_start = self._drawn
        self._draw32(m)
        return self._normals[:m]

    def _normal_small(self, n, dtype, mean, std):
        # PyTorch's scalar Box-Muller, in float64 with the C library's log1p/sin/cos (which the math
        # module calls): each pair of uniforms gives two normals, the second is kept for later.
        normals = []
        if n and self._cached_normal is not None:
            normals.append(self._cached_normal)
            self._cached_normal = None
        pairs = (n - len(normals) + 1) // 2
        raw = self._draw32(4 * pairs).tolist()  # two float64 uniforms per pair, two draws each
        for k in range(0, 4 * pairs, 4):
            u1 = ((raw[k] << 32 | raw[k + 1]) & _MASK53_INT) * 2.0**-53
            u2 = ((raw[k + 2] << 32 | raw[k + 3]) & _MASK53_INT) * 2.0**-53
            radius = math.sqrt(-2.0 * math.log1p(-u2))
            theta = 2.0 * math.pi * u1
            normals += (radius * math.cos(theta), radius * math.sin(theta))
        if len(normals) > n:
            self._cached_normal = normals.pop()
        z = np.array(normals, dtype=np.float64)
        if std == 1.0 or mean == 0.0 or not (math.isfinite(std) and math.isfinite(mean)):
            return (z * std + mean).astype(dtype)  # z * std is exact, or nothing is added to it: no fma needed
        return fma64(z, std, mean).astype(dtype)  # z * std + mean in float64, rounded once

    def randint(self, low, high, shape, strides=None):
        """torch.randint(low, high, shape): int64 in [low, high) (in memory order for a tensor of
        layout `strides`, as for uniform).

        randint(0, 2**63, shape) equals `torch.empty(shape, dtype=torch.int64).random_()`.
        """
        shape, n = _shape_and_size(shape)
        if not (type(low) is int and type(high) is int):  # (plain ints: the common case, checked at once)
            if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (low, high)):
                raise TypeError(f"randint needs integer bounds, got low={low!r}, high={high!r}")
            low, high = int(low), int(high)
        if low >= high:
            raise ValueError(f"randint needs low < high, got low={low}, high={high}: "
                             f"the range [low, high) is empty; raise high above low")
        span = high - low
        if low < -(1 << 63) or high > 1 << 63 or span > _U64:
            raise ValueError(f"randint draws int64 values: need -2**63 <= low < high <= 2**63 and "
                             f"high - low < 2**64, got low={low}, high={high}")
        # PyTorch takes a 64-bit draw for wide ranges, where a 32-bit remainder would be too uneven.
        draws = self._draw64(n) if span >= 1 << 28 else self._draw32(n)
        # draw % span + low, computed with uint64 wrap-around like the C++ code
        values = draws % np.uint64(span)
        if low:
            values += np.uint64(low & _U64)
        return _placed(values.view(np.int64), shape, strides)

    def bernoulli(self, shape, p, strides=None):
        """Tensor.bernoulli_(p): True with probability p, one float64 uniform per element (in memory
        order for a tensor of layout `strides`, as for uniform).

        Dropout(drop_p) keeps an element where bernoulli(shape, 1 - drop_p) is True, with 1 - drop_p
        computed as a Python float. PyTorch draws nothing for drop_p == 0, drop_p == 1 or in eval mode.
        """
        shape, n = _shape_and_size(shape)
        p = _check_probability(p)
        return _placed(self._uniform01(n, np.float64) < p, shape, strides)

    def device_bernoulli(self, shape, p, xp, strides=None):
        """A bernoulli mask made by array namespace `xp`: on the GPU with CuPy's generator (fast,
        not PyTorch's numbers), otherwise `self.bernoulli` on the host."""
        name = getattr(xp, "__name__", "")
        if not (name.startswith("cupy") or name == "array_api_compat.cupy"):
            return self.bernoulli(shape, p, strides)
        p = _check_probability(p)
        if self._device_rng is None:
            import cupy  # only here: the package must import without CuPy

            self._device_rng = cupy.random.RandomState(np.uint64(self._device_seed))
        shape, _ = _shape_and_size(shape)
        return self._device_rng.random_sample(size=shape, dtype=np.float32) < p

    def multinomial(self, probs, num_samples, replacement=False):
        """torch.multinomial: int64 category indices, shape (num_samples,) or (rows, num_samples).

        Weights need not sum to 1. Without replacement (or for one sample) PyTorch draws exponential
        noise q for every weight and takes the largest p / q: the Gumbel-max trick, which picks
        category i with probability p_i / sum(p), and its top k give k samples without replacement.
        """
        p = np.asarray(probs)
        if p.ndim not in (1, 2):
            raise ValueError(f"multinomial needs 1-D or 2-D probabilities, got shape {p.shape}")
        if p.dtype not in (np.float32, np.float64):
            raise TypeError(f"multinomial needs float32 or float64 probabilities, got {p.dtype}")
        if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) \
                or num_samples <= 0:
            raise ValueError(f"num_samples must be a positive int, got {num_samples!r}")
        categories = p.shape[-1]
        if not replacement and num_samples > categories:
            raise ValueError(f"cannot draw {num_samples} samples without replacement from {categories} "
                             f"categories: ask for at most {categories} or pass replacement=True")
        if not np.isfinite(p).all() or (p < 0).any():
            raise ValueError("multinomial probabilities must be finite and >= 0 (no inf, nan or negative)")
        if (p.sum(axis=-1) == 0).any():
            raise ValueError("multinomial probabilities must not sum to 0 in any row: "
                             "give each row a positive weight")
        if p.ndim == 2 and p.shape[0] == 0:  # no rows: no samples (and no draws)
            return np.zeros((0, num_samples), dtype=np.int64)

        if not replacement or num_samples == 1:
            q = -np.log1p(-self._uniform01(p.size, np.float64))  # Exp(1) noise, float64 ...
            ratio = p / q.astype(p.dtype).reshape(p.shape)  # ... rounded to the weights' type
            if num_samples == 1:
                return np.argmax(ratio, axis=-1, keepdims=True).astype(np.int64)
            return np.argsort(-ratio, axis=-1, kind="stable")[..., :num_samples].astype(np.int64)  # topk

        # With replacement: one float64 uniform per sample, row after row, found in the row's
        # cumulative weights (summed in order, divided by the total, last entry set to exactly 1).
        rows = p.reshape(-1, categories)
        u = self._uniform01(rows.shape[0] * num_samples, np.float64).reshape(-1, num_samples)
        cdf = np.cumsum(rows, axis=-1)
        cdf /= cdf[:, -1:]
        cdf[:, -1] = 1
        out = np.stack([np.searchsorted(c, ui, side="left") for c, ui in zip(cdf.astype(np.float64), u)])
        return out.astype(np.int64).reshape(p.shape[:-1] + (num_samples,))

    def randperm(self, n):
        """torch.randperm(n): a random permutation of 0..n-1 (int64).

        PyTorch's Fisher-Yates: position i swaps with i + (draw % (n - i)), one 32-bit draw per
        swap. From n = 2**32 // 20 on, where a 32-bit remainder would be uneven, PyTorch builds the
        permutation "inside-out" with 64-bit draws instead, and so do we (slowly: a Python loop).
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"randperm needs a non-negative int, got {n!r}")
        n = int(n)
        if n >= _RANDPERM_LARGE:
            return self._randperm_inside_out(n)
        offsets = (self._draw32(max(n - 1, 0)) % np.arange(n, 1, -1, dtype=np.uint64)).tolist()
        perm = list(range(n))
        for i, offset in enumerate(offsets):  # each swap depends on the previous ones
            j = i + offset
            perm[i], perm[j] = perm[j], perm[i]
        return np.array(perm, dtype=np.int64)

    def _randperm_inside_out(self, n):
        # i goes to position draw % (i + 1), and what was there moves to position i
        perm = np.empty(n, dtype=np.int64)
        for start in range(0, n, _CHUNK):
            stop = min(start + _CHUNK, n)
            targets = (self._draw64(stop - start) % np.arange(start + 1, stop + 1, dtype=np.uint64)).tolist()
            for i, j in zip(range(start, stop), targets):
                perm[i] = perm[j]
                perm[j] = i
        return perm

    def draw_seed(self):
        """A seed for a new generator, drawn as PyTorch's samplers and DataLoader draw theirs:
        `int(torch.empty((), dtype=torch.int64).random_(generator=g))`, one 64-bit draw modulo 2**63."""
        return int(self.randint(0, 1 << 63, ()))


def _seeded_key(seed):
    """The Mersenne Twister's words right after manual_seed(seed), before its first twist."""
    mt = np.random.MT19937(0)
    if hasattr(mt, "_legacy_seeding"):
        mt._legacy_seeding(seed & 0xFFFFFFFF)
        return mt.state["state"]["key"]
    return np.random.RandomState(seed & 0xFFFFFFFF).get_state()[1]


# get_state and set_state speak in tensors, which this module knows nothing of: the tensor layer
# (tensor/creation.py) installs its two converters with use_tensors() when it is imported.
def _state_tensor(array):
    return array


def _state_host_bytes(state):
    if not isinstance(state, np.ndarray) or state.dtype != np.uint8:
        raise TypeError(f"expected a uint8 array of {STATE_SIZE} bytes from get_state(), got {type(state).__name__}")
    return state


def use_tensors(to_tensor, to_host_bytes):
    """Make get_state return `to_tensor(uint8 array)`, and set_state read a state through
    `to_host_bytes(state)` (which checks it is a uint8 tensor and returns its bytes as a NumPy array)."""
    global _state_tensor, _state_host_bytes
    _state_tensor, _state_host_bytes = to_tensor, to_host_bytes


# ---------------------------------------------------------------- the order of a fill
# PyTorch fills a tensor one element after another in the order its TensorIterator walks the tensor's
# memory: for a transposed or permuted tensor that is not the order of its indices. A tensor's layout
# is given here as its shape and strides (in elements, as Tensor.stride() counts them).


def fill_order(shape, strides):
    """The axes in the order PyTorch's CPU kernels step through them when they fill a tensor of this
    layout, the fastest first: sorted by stride, as TensorIterator's reorder_dimensions sorts them
    (an insertion sort from the last axis; a stride of 0, or equal strides of an axis not longer than
    the other, leave two axes where they are)."""
    perm = list(range(len(shape)))[::-1]  # row-major: the last axis fastest

    def should_swap(a, b):  # 1: axis a moves slower than axis b; -1: faster; 0: cannot tell
        if strides[a] == 0 or strides[b] == 0:
            return 0
        if strides[a] != strides[b]:
            return 1 if strides[a] > strides[b] else -1
        return 1 if shape[a] > shape[b] else 0

    for i in range(1, len(perm)):
        moving = i
        for before in range(i - 1, -1, -1):
            order = should_swap(perm[before], perm[moving])
            if order > 0:
                perm[before], perm[moving] = perm[moving], perm[before]
                moving = before
            elif order < 0:
                break
    return perm


def is_contiguous(shape, strides):
    """PyTorch's is_contiguous: row-major strides, axes of size 1 ignored (and always for 0 elements)."""
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def is_dense(shape, strides):
    """PyTorch's is_non_overlapping_and_dense: the elements fill a block of memory without gaps or
    overlap, in some order of the axes (a transpose or permutation of a contiguous tensor)."""
    expected = 1
    for stride, size in sorted((stride, size) for size, stride in zip(shape, strides) if size > 1):
        if stride != expected:
            return False
        expected *= size
    return True


def like_strides(shape, strides):
    """The strides of `empty_like` of a tensor with this layout (PyTorch's preserve_format): the same
    when it is dense (a transpose gives a transpose), else dense strides with its axes in the same
    order of memory (PyTorch's infer_dense_strides, which sorts them as fill_order does)."""
    if is_dense(shape, strides):
        return tuple(strides)
    dense, step = [0] * len(shape), 1
    for axis in fill_order(shape, strides):
        dense[axis] = step
        step *= max(shape[axis], 1)
    return tuple(dense)


def in_fill_order(values, shape, strides):
    """`values` (flat, in the order they were drawn) put where PyTorch's fill of a tensor of this
    layout writes them: an array of `shape` (a view with those strides' order, so a new tensor made
    of it is laid out as PyTorch's would be)."""
    outer_first = fill_order(shape, strides)[::-1]
    drawn = np.asarray(values).reshape([shape[axis] for axis in outer_first])
    return drawn.transpose(np.argsort(outer_first))


def _placed(values, shape, strides):
    """Numbers drawn one after another, as an array of `shape`: in index order, or where PyTorch's
    fill of a tensor of layout `strides` puts them."""
    if strides is not None and len(strides) != len(shape):
        raise ValueError(f"strides {tuple(strides)} do not match shape {shape}: give one stride per dimension")
    if fills_in_index_order(shape, strides):
        return values.reshape(shape)
    return in_fill_order(values, shape, strides)


def fills_in_index_order(shape, strides):
    """Whether PyTorch fills a tensor of this layout in the order of its indices (row-major), as
    it fills a contiguous one (axes of size 1 do not change the order). True for strides None."""
    if strides is None:
        return True
    order = [axis for axis in fill_order(shape, strides) if shape[axis] != 1]
    return order == sorted(order, reverse=True)


def _check_probability(p):
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"bernoulli probability must be in [0, 1], got {p}")
    return p


# ---------------------------------------------------------------- fused multiply-add
# PyTorch's kernels are compiled with FMA: a * b + c rounded once, not twice. NumPy has no fma.


def fma32(a, b, c):
    """float32 fma on arrays: the product is exact in float64 (24 + 24 bits fit in 53), so only the
    sum rounds; rounding that float64 sum again to float32 is right unless it fell exactly halfway
    between two float32 numbers, where we look at the sum's lost bits to break the tie."""
    p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    c = np.asarray(c, np.float64)
    s = p + c
    halfway = (s.view(np.int64) & 0x1FFFFFFF) == 0x10000000  # the 29 bits float32 drops: 100...0
    if halfway.any():  # (on whole arrays: in a polynomial's last steps ties can be many)
        error = _sum_error(p, c, s)
        s = np.where(halfway & (error != 0), np.nextafter(s, np.copysign(np.inf, error)), s)
    return s.astype(np.float32)


def fma64(a, b, c):
    """float64 fma on arrays: the product's rounding error is recovered exactly (Dekker's split)
    and added back with the sum's. When that last addition lands exactly halfway between two
    float64 numbers, the bits it lost (tiny, but exact) decide the rounding, as one rounding would."""
    with np.errstate(invalid="ignore", over="ignore"):
        plain = a * b + c
    if np.isfinite(plain).all():
        return _fma64_of_finite(a, b, c)
    # an infinity or NaN (normal_(0, inf)) is the same fused or not; the exact steps would make NaN of it
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(np.isfinite(plain), _fma64_of_finite(a, b, c), plain)


def _fma64_of_finite(a, b, c):
    p = a * b
    split = 134217729.0  # 2**27 + 1: a * split - (a * split - a) keeps the top 26 bits of a
    a_hi = a * split - (a * split - a)
    b_hi = b * split - (b * split - b)
    a_lo, b_lo = a - a_hi, b - b_hi
    product_error = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo  # exact a*b - p
    s = p + c
    sum_error = _sum_error(p, c, s)
    small = sum_error + product_error  # a*b + c == s + small + lost, all exact
    lost = _sum_error(sum_error, product_error, small)
    result = s + small
    remainder = _sum_error(s, small, result)  # s + small == result + remainder
    # a tie (remainder exactly half the gap to the next number) broken to even, where `lost` says otherwise
    toward = np.nextafter(result, np.copysign(np.inf, remainder))
    tie = (remainder != 0) & (toward - result == 2 * remainder)
    return np.where(tie & (lost != 0) & ((lost > 0) == (remainder > 0)), toward, result)


def _sum_error(a, b, s):
    """The exact rounding error (a + b) - s of s = a + b (Knuth's TwoSum)."""
    b_virtual = s - a
    return (a - (s - b_virtual)) + (b - b_virtual)


# ---------------------------------------------------------------- Box-Muller on blocks of 16


def _uniform32(words):
    """float32 uniforms in [0, 1) from raw draws: the low 24 bits (a float32 mantissa) times 2**-24."""
    return (words & _MASK24).astype(np.float32) * np.float32(2.0**-24)


def _box_muller64(u):
    """PyTorch's float64 normal_fill: u1 = 1 - u[j] (in (0, 1], safe for log), u2 = u[j + 8]
    (standard normals: PyTorch then computes z * std + mean as one fused multiply-add)."""
    u = u.reshape(-1, 2, 8)
    radius = np.sqrt(-2.0 * np.log(1.0 - u[:, 0]))
    theta = 2.0 * math.pi * u[:, 1]
    return np.stack([radius * np.cos(theta), radius * np.sin(theta)], axis=1).reshape(-1)


def _box_muller32(u):
    """PyTorch's float32 normal_fill on x86: 8 lanes at a time in AVX2 float32, with the Cephes
    polynomials of avx_mathfun.h for log and sin/cos. We replay the same float32 operations,
    including the fused multiply-adds the compiler made, so the results match to the bit."""
    u = u.reshape(-1, 2, 8)
    radius = np.sqrt(np.float32(-2.0) * _cephes_log(np.float32(1.0) - u[:, 0]))
    sin, cos = _cephes_sincos(np.float32(2.0 * math.pi) * u[:, 1])
    return np.stack([radius * cos, radius * sin], axis=1).reshape(-1)


_LOG_POLY = [7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
             -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1]


def _cephes_log(x):
    """log256_ps for float32 x in (0, 1]: x = m * 2**e with m in [sqrt(1/2), sqrt(2)), then
    log(x) = log(m) + e * log(2), log(m) by a polynomial in m - 1 and log(2) split in two parts.
    Which multiply-adds are fused follows the compiled PyTorch kernel, checked bit for bit."""
    f32 = np.float32
    bits = x.view(np.int32)
    e = ((bits >> 23) - 126).astype(f32)  # exponent for a mantissa in [0.5, 1)
    m = ((bits & 0x007FFFFF) | 0x3F000000).view(f32)  # that mantissa
    small = m < f32(0.707106781186547524)  # below sqrt(1/2): use 2m and e - 1 instead
    e = e - small.astype(f32)
    x = (m - f32(1.0)) + np.where(small, m, f32(0.0))
    z = x * x
    y = np.full_like(x, f32(_LOG_POLY[0]))
    for coefficient in _LOG_POLY[1:]:
        y = fma32(y, x, f32(coefficient))
    y = y * x
    y = fma32(y, z, e * f32(-2.12194440e-4))
    # the kernel's last two multiply-adds are fused too, but their products are exact in float32
    # (z * -0.5; e, an integer of a few bits, times 355/512), so float32's own rounding of the sum is
    # the fused result: the same bits (checked for every float32 input in tests/test_random.py)
    y = z * f32(-0.5) + y
    return e * f32(0.693359375) + (x + y)


def _cephes_sincos(x):
    """sincos256_ps for float32 x >= 0: subtract the nearest even multiple j of pi/4 (pi/4 in three
    parts so the subtraction stays exact), then one polynomial for sin and one for cos on
    [-pi/4, pi/4]; j says which polynomial gives which result and with which sign."""
    f32 = np.float32
    j, x = _reduce_angle(x)
    z = x * x
    cos_poly = fma32(f32(2.443315711809948e-5), z, f32(-1.388731625493765e-3))
    cos_poly = fma32(cos_poly, z, f32(4.166664568298827e-2))
    cos_poly = fma32(cos_poly * z, z, -(z * f32(0.5))) + f32(1.0)
    sin_poly = fma32(f32(-1.9515295891e-4), z, f32(8.3321608736e-3))
    sin_poly = fma32(sin_poly, z, f32(-1.6666654611e-1))
    sin_poly = fma32(sin_poly * z, x, x)
    swap = (j & 2) != 0  # in the octants around pi/2 and 3pi/2, sin and cos trade polynomials
    sin = np.where(swap, cos_poly, sin_poly)
    cos = np.where(swap, sin_poly, cos_poly)
    sin = np.where((j & 4) != 0, -sin, sin)
    cos = np.where(((j - 2) & 4) == 0, -cos, cos)
    return sin, cos


def _reduce_angle(x):
    """(j, x - j * pi/4) for float32 x >= 0, j the nearest even multiple (as _cephes_sincos needs)."""
    f32 = np.float32
    j = (x * f32(1.27323954473516)).astype(np.int32)  # x * 4/pi, truncated
    j = (j + 1) & ~1
    y = j.astype(f32)
    # y is 0, 2, 4, 6 or 8, so y times the first two parts (8 and 11 bits) is exact in float32 and
    # their multiply-adds need no fusing (see _cephes_log); y times the third part is not
    x = y * f32(-0.78515625) + x
    x = y * f32(-2.4187564849853515625e-4) + x
    return j, fma32(y, f32(-3.77489497744594108e-8), x)


# ---------------------------------------------------------------- the default generator

default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator (and, through it, its CuPy stream); returns it, like torch.

    The seed is `int(seed)`, as PyTorch takes it: 3.0, 3.7, True, "3" and a one-element tensor
    are seeds too (3, 3, 1, 3, its number); it must lie in [-2**63, 2**64), negative seeds wrapping
    around to seed + 2**64. (Generator.manual_seed, like PyTorch's, takes only an int.)
    """
    return default_generator.manual_seed(_int_seed(seed))


def _int_seed(seed):
    try:
        return int(seed)
    except (TypeError, ValueError) as error:  # int()'s own message, and what a seed may be
        raise type(error)(f"{error}: manual_seed takes int(seed), e.g. manual_seed(123)") from None


def seed():
    """Seeds the default generator with a fresh random seed and returns that seed."""
    return default_generator.seed()


def initial_seed():
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state: PyTorch's uint8 tensor of 5056 bytes (Generator.get_state),
    to restore with `set_rng_state`, here or in PyTorch."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restores the default generator to a state from `get_rng_state` (or PyTorch's)."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """A block whose random draws leave the default generator as they found it: on leaving (also
    by an exception) its state is restored. `enabled=False` makes it do nothing.

    The CPU stream is always forked. The GPU stream (CuPy's, for dropout masks on CUDA) cannot be
    saved: with `devices=[]` it is left alone, otherwise it restarts from a seed that the restored
    state determines (as set_rng_state restarts it), so a forked block leaves it repeatable, but
    not where it was. `device_type="meta"` forks nothing, as in PyTorch.
    """
    if device_type == "meta" or not enabled:
        yield
        return
    gpu_forked = devices is None or len(list(devices)) > 0
    saved = default_generator.state_bytes()
    try:
        yield
    finally:
        gpu_stream = default_generator._device_rng, default_generator._device_seed
        default_generator.set_state_bytes(saved)
        if not gpu_forked:
            default_generator._device_rng, default_generator._device_seed = gpu_stream


# dir() lists this module's public names only, not the modules it imports (tinyattn/missing.py)
from . import missing as _missing  # noqa: E402

__dir__ = _missing.module_dir(__name__)
