"""Work that tinyattn spreads over the cores itself: what NumPy would do on one core.

NumPy's BLAS spreads a matrix product over its threads, but NumPy's elementwise functions (the
exp, tanh and arithmetic of softmax, GELU, layer norm, AdamW) run on one core, where PyTorch uses
every core. `run(part, count)` calls part(0), ..., part(count - 1) at once, the first on the calling
thread and the others on worker threads that wait for work (they block; they never spin): NumPy lets
go of Python's lock (the GIL) while it computes, so the parts do run side by side.

Each part computes its own rows with the same operations in the same order as the whole would, so
the numbers are the same, bit for bit, however many parts there are. Inside a parallel region the
BLAS computes on one thread per part (its own pool would fight the parts for the cores).

How many parts: `parts_for(elements)`, one per thread of `tinyattn.get_num_threads()`, and only
for arrays big enough that the hand-over (some microseconds) pays.

Arrays larger than the caches (LARGE elements and more) go through `map_blocks` / `each_block`:
in blocks of BLOCK_ELEMENTS that each pass through a whole fused op while they are in the cache,
the blocks shared out to every thread, always on (not only where `enabled`).

What the ops call, one line each beside their math: `map_rows` (rows split over the threads),
`map_blocks` (a large array in cache-sized blocks, on every thread), `map_last_axis` (math along the
last axis, softmax's, in blocks of whole matrices or aligned rows), `map_batch` (stacks of matrices
split by their batch, attention's) and `each_block` (work in place, an optimizer's update).
"""

import contextlib
import contextvars
import itertools
import math
import threading

import numpy as np

from . import threads

# below this many elements per part, handing work to another thread costs more than it saves. It must
# stay above backend.BLAS_SUM_MIN_SIZE: sum_along picks its method by size, and a piece must sum its rows
# the way the whole array would.
MIN_ELEMENTS_PER_PART = 32768

# Pieces of rows start on multiples of this. OpenBLAS's matrix-vector product sums a row in another
# order when it is one of the last few rows of a call (not a whole block of 4): pieces of whole blocks
# keep such a row's sum what it is in one call over all the rows. (Softmax's and layer norm's row sums
# do not depend on it: backend.row_sums sums each row on its own.)
ROW_ALIGN = 16

# Off unless asked for: on a quiet 2-core machine the split made the GPT step of `tinyattn bench` slower
# (1.42-1.55x PyTorch's, against 1.25-1.27x without it; docs/how-to/threads-and-devices.md). True turns it on.
enabled = False


class _Worker:
    """A thread that runs one part at a time: `start(function, index)`, then `wait()` for it."""

    def __init__(self):
        self._go = threading.Lock()
        self._go.acquire()
        self._done = threading.Event()  # an Event, not a lock: waiting again after it is set is harmless
        self._job = None
        self.error = None
        thread = threading.Thread(target=self._loop, name="tinyattn-worker", daemon=True)
        thread.start()

    def _loop(self):
        while True:
            self._go.acquire()
            function, index, context = self._job
            try:
                context.run(function, index)
            except BaseException as error:  # handed to the caller of run()
                self.error = error
            self._job = None
            self._done.set()

    def start(self, function, index):
        """Run function(index) in a copy of the caller's context (NumPy's floating-point error state)."""
        self.error = None
        self._done.clear()
        self._job = (function, index, contextvars.copy_context())
        self._go.release()

    def wait(self):
        """The part's exception or None, once it has finished. Ctrl-C does not cut the wait short (the
        part is still writing into the caller's arrays): it is raised after the part is done."""
        interrupted = None
        while True:
            try:
                self._done.wait()
                break
            except KeyboardInterrupt as caught:  # also when it lands just after wait() returned
                interrupted = caught
        error, self.error = self.error, None
        return interrupted or error


_workers = []
_lock = threading.Lock()  # one parallel region at a time (a part never starts another region)
_inside = threading.local()


def parts_for(elements):
    """How many parts an array of `elements` elements is worth splitting into (1: not at all)."""
    most = elements // MIN_ELEMENTS_PER_PART  # checked first: small arrays cost no look-up of the count
    if most < 2 or not enabled or getattr(_inside, "active", False) or not threads.can_set_num_threads():
        return 1
    return min(threads.get_num_threads(), most)


def bounds(length, parts, index, align=1):
    """[start, stop) of part `index` of `parts` nearly equal pieces of range(length), starts on
    multiples of `align` (whole rows, or whole SIMD blocks).

    A last block of fewer than `align` rows goes with the piece before it, never alone: NumPy
    computes a one-row matrix-vector product as a dot product, which sums in another order.
    """
    units = max(1, length // align)
    start = min(units * index // parts * align, length)
    stop = length if index == parts - 1 else min(units * (index + 1) // parts * align, length)
    return start, stop


def run(part, count):
    """Call part(i) for every i in range(count), at once on `count` threads; return when all are done.

    An exception in any part is raised here (the first one, after every part has finished).
    """
    if count <= 1:
        if count == 1:
            part(0)
        return
    with _lock:
        while len(_workers) < count - 1:
            _workers.append(_Worker())
        blas_threads = threads.get_num_threads()
        threads.set_blas_threads(1)  # each part is one thread; BLAS's own pool would compete with them
        _inside.active = True
        started, error = [], None
        try:
            try:
                for index, worker in enumerate(_workers[: count - 1], start=1):
                    worker.start(part, index)
                    started.append(worker)
                part(0)
            except BaseException as caught:  # Ctrl-C included: the started parts are still running
                error = caught
            for worker in started:
                worker_error = worker.wait()  # every started part is waited for, even after an error
                error = error or worker_error
        finally:
            _inside.active = False
            threads.set_blas_threads(blas_threads)
    if error is not None:
        raise error


@contextlib.contextmanager
def single_blas_thread():
    """A block in which the BLAS computes on the calling thread only (a no-op inside a parallel region,
    where it already does)."""
    count = 1 if getattr(_inside, "active", False) or not threads.can_set_num_threads() else threads.get_num_threads()
    if count == 1:
        yield
        return
    threads.set_blas_threads(1)
    try:
        yield
    finally:
        threads.set_blas_threads(count)


def map_rows(function, *arrays, align=ROW_ALIGN, one_blas_thread=False):
    """function(*arrays), computed on pieces of their rows (axis 0) at once and stitched together.

    `function` must treat each row on its own (elementwise math, or math along the last axis such
    as softmax) and return an array, or a tuple of arrays, with one row per input row. Each part
    writes its rows straight into the result. Pieces start on multiples of `align` rows. Other arrays
    than NumPy's (CuPy's) go to `function` whole. one_blas_thread=True: the BLAS computes on one thread
    also when the rows are not split.
    """
    first = arrays[0]
    rows = first.shape[0] if type(first) is np.ndarray and first.ndim else 0
    parts = min(parts_for(first.size), max(1, rows // align))
    if parts <= 1:
        if one_blas_thread and rows:
            with single_blas_thread():
                return function(*arrays)
        return function(*arrays)
    results = {}
    made = threading.Lock()

    def part(index):
        start, stop = bounds(rows, parts, index, align)
        piece = function(*(a[start:stop] for a in arrays))
        with made:  # the first part to finish makes the results, shaped after its pieces
            if not results:
                results["tuple"] = isinstance(piece, tuple)
                results["arrays"] = [np.empty((rows,) + p.shape[1:], p.dtype) for p in _as_tuple(piece)]
        for result, p in zip(results["arrays"], _as_tuple(piece)):
            result[start:stop] = p

    run(part, parts)
    return tuple(results["arrays"]) if results["tuple"] else results["arrays"][0]


def map_batch(function, *arrays, matched=3):
    """function(*arrays) for stacks of matrices, computed on pieces of the first dim of their batch
    (the dims before the last two) at once (map_rows): attention's pieces of the batch.

    The first `matched` arrays must share their batch dims for a split; the others are split with
    them when they have that first dim, and handed whole to every piece when they are shared by the
    batch (fewer dims, or a first dim of 1) or None. Anything else goes to `function` whole.
    """
    first = arrays[0]
    batch = first.shape[:-2]
    splits = ([a is not None and a.ndim == first.ndim and a.shape[0] == batch[0] != 1 for a in arrays]
              if batch else [])
    shared = [a is None or a.ndim < first.ndim or (a.ndim == first.ndim and a.shape[0] == 1) for a in arrays]
    if not batch or not splits[0] or not all(a.shape[:-2] == batch for a in arrays[:matched]) or not all(
            split or whole for split, whole in zip(splits, shared)):
        return function(*arrays)
    split_arrays = [a for a, split in zip(arrays, splits) if split]

    def piece(*parts):
        parts = iter(parts)
        return function(*(next(parts) if split else a for a, split in zip(arrays, splits)))

    return map_rows(piece, *split_arrays)


# A fused op (GELU, softmax, an optimizer's update) makes a dozen passes or more over its temporaries.
# Over an array larger than the caches (an attention-sized one is 25 MB) every pass goes out to main
# memory; over a block of BLOCK_ELEMENTS elements (512 KB of float32 per array) the passes stay in the
# processor's caches. Smaller blocks hold the threads up: each NumPy call of a block then does so little
# that the threads keep waiting for Python's lock between calls (measured on a quiet 2-core AMD EPYC,
# on two threads: GELU of an attention-sized array 66-97 ms in blocks of 32,768 elements, 25-36 ms in
# blocks of 131,072; on one thread 46-76 and 42-53 ms; softmax and layer norm move the same way).
# Below LARGE elements (4 MB of float32: a few such arrays fill a processor's last
# cache) an array is computed whole, as the cache holds it anyway and blocks would only add their
# calls and copies (measured: 1.2-1.6x slower on the GPT's arrays of 100,000-400,000 elements; on
# attention-sized ones 0.5x for GELU and AdamW, 0.8x for softmax, and 1.3x for layer norm, whose few
# passes do not pay for the calls on one thread; see map_blocks' whole_on_one_thread).
BLOCK_ELEMENTS = 131072
LARGE = 2**20


def in_blocks(array, row_length=1, align=ROW_ALIGN):
    """Whether map_blocks computes `array` (rows of `row_length` elements, blocks of `align` rows at
    least) in blocks: a C-contiguous NumPy array of LARGE elements or more whose smallest block is not
    larger than two blocks, outside another block. Anything else is computed whole.

    (C-contiguous: the results of blocks are; NumPy lays out the result of a whole-array pass like
    its input, and a later sum over a strided result can round otherwise.)"""
    return (type(array) is np.ndarray and array.size >= LARGE and row_length * align <= 2 * BLOCK_ELEMENTS
            and array.flags.c_contiguous and not getattr(_inside, "block", False))


def map_blocks(function, *arrays, align=ROW_ALIGN, whole_on_one_thread=False):
    """function(*arrays) as map_rows computes it, but in blocks of rows of about BLOCK_ELEMENTS
    elements, each block through all of `function` before the next one starts. Arrays that
    in_blocks() refuses go to map_rows.

    The same contract as map_rows: `function` treats each row on its own, so the result is the same,
    bit for bit, in any number of blocks and on any number of cores. Blocks start on multiples of
    `align` rows; a last block of fewer than `align` rows, or of less than half a block, goes with the
    one before it. Inside a block, in_blocks() is False: what `function` calls computes its block
    whole. The blocks after the first run on every thread of get_num_threads(); whole_on_one_thread=True
    leaves the arrays whole (map_rows) where that is one thread (for an op of few passes, which gains
    from the threads but not from the blocks alone: layer norm).
    """
    first = arrays[0]
    rows = first.shape[0] if type(first) is np.ndarray and first.ndim else 0
    if (not rows or not in_blocks(first, first.size // rows, align)
            or (whole_on_one_thread and threads_for_blocks() == 1)):
        return map_rows(function, *arrays, align=align)
    blocks = _blocks(first, align)
    with _a_block():  # the first block says what the results look like
        first_piece = function(*(a[blocks[0][0]:blocks[0][1]] for a in arrays))
    results = [np.empty((rows,) + p.shape[1:], p.dtype) for p in _as_tuple(first_piece)]

    def compute(start, stop, pieces=None):
        pieces = function(*(a[start:stop] for a in arrays)) if pieces is None else pieces
        for result, piece in zip(results, _as_tuple(pieces)):
            result[start:stop] = piece

    compute(*blocks[0], first_piece)
    _run_blocks(compute, blocks[1:])
    return tuple(results) if isinstance(first_piece, tuple) else results[0]


def each_block(function, *arrays, align=ROW_ALIGN):
    """function(*blocks) for every block of rows of `arrays` (views into them), as map_blocks splits
    them, for work done in place (an optimizer's update); function(*arrays) once where in_blocks()
    refuses them."""
    first = arrays[0]
    rows = first.shape[0] if type(first) is np.ndarray and first.ndim else 0
    if not rows or not in_blocks(first, first.size // rows, align):
        function(*arrays)
        return
    _run_blocks(lambda start, stop: function(*(a[start:stop] for a in arrays)), _blocks(first, align))


def map_last_axis(function, *arrays, out=None):
    """function(*arrays) for math along the last axis of arrays of one shape (softmax's rows: each row
    on its own), computed by map_blocks in blocks of whole matrices (arrays of 3 dims or more, seen
    as a stack of matrices) or of rows from multiples of ROW_ALIGN (a matrix), so that every block
    does its other work in whole SIMD-sized pieces and sums each row as the whole array would
    (backend.row_sums). `function` gets arrays of the same number of dims as the stack (3 or 2).

    out: one of `arrays` that `function` overwrites with its result (each block in its own memory,
    as the whole array would be, through each_block); it is returned.

    Arrays that are not all large (in_blocks), or of fewer than 2 dims, or whose matrices or rows
    are too large for a block, go to `function` whole, as one block: in_blocks() is False for what it
    calls, so a function that calls map_last_axis on its own arguments computes them there.
    """
    first = arrays[0]
    if first.ndim > 1 and all(a.shape == first.shape and in_blocks(a) for a in arrays):
        align = ROW_ALIGN if first.ndim == 2 else 1
        stacks = [a if first.ndim == 2 else np.reshape(a, (-1,) + a.shape[-2:]) for a in arrays]
        if in_blocks(stacks[0], math.prod(stacks[0].shape[1:]), align):
            if out is not None:
                each_block(function, *stacks, align=align)
                return out
            return np.reshape(map_blocks(function, *stacks, align=align), first.shape)
    with _a_block():
        return function(*arrays)


def _blocks(array, align):
    """[(start, stop), ...]: the blocks of rows of `array`, as map_blocks' docstring says. A last block
    of less than half a block also goes with the one before it: backend.sum_along sums arrays of fewer
    than BLAS_SUM_MIN_SIZE elements another way, and half a block is far more than that."""
    rows = array.shape[0]
    row_length = max(array.size // rows, 1)
    block_rows = max(align, BLOCK_ELEMENTS // row_length // align * align)
    starts = list(range(0, rows, block_rows))
    last = rows - starts[-1]
    if len(starts) > 1 and (last < align or last * row_length < BLOCK_ELEMENTS // 2):
        starts.pop()
    return list(zip(starts, starts[1:] + [rows]))


def _run_blocks(compute, blocks):
    """compute(start, stop) for every block, on as many threads as threads_for_blocks() says. Each part takes
    the next block no part has taken yet, so a part whose core a busy process shares takes fewer, and
    the others do not wait for it."""
    parts = min(threads_for_blocks(), len(blocks))
    taken = itertools.count()  # (next() on it is one step under the GIL: each block is taken once)

    def part(index):
        with _a_block():
            for i in taken:
                if i >= len(blocks):
                    return
                compute(*blocks[i])

    run(part, parts)


@contextlib.contextmanager
def _a_block():
    """Code inside that asks in_blocks() gets False: it computes its block whole."""
    before = getattr(_inside, "block", False)
    _inside.block = True
    try:
        yield
    finally:
        _inside.block = before


def threads_for_blocks():
    """How many threads compute the blocks of map_blocks and each_block: get_num_threads(), also where
    `enabled` is False (the split of smaller arrays): at LARGE elements a hand-over costs well under
    1% of the work. 1 while a parallel region runs (in this thread or in another: a part of
    for_each that updates a large parameter computes its blocks itself) or without threadpoolctl."""
    if getattr(_inside, "active", False) or _lock.locked() or not threads.can_set_num_threads():
        return 1
    return threads.get_num_threads()


def _as_tuple(piece):
    return piece if isinstance(piece, tuple) else (piece,)


def for_each(function, items, sizes):
    """function(item) for every item, in order within pieces of the list that run at once; `sizes`
    (elements of work per item) balances the pieces. For work on many arrays of their own (an
    optimizer's step over the parameters)."""
    total = sum(sizes)
    parts = min(parts_for(total), len(items))
    if parts <= 1:
        for item in items:
            function(item)
        return
    starts, done = [0], 0
    for index, size in enumerate(sizes):  # cut the list where the running total passes 1/parts, 2/parts, ...
        done += size
        if len(starts) < parts and done * parts >= total * len(starts) and index + 1 < len(items):
            starts.append(index + 1)
    starts.append(len(items))

    def part(index):
        for item in items[starts[index]:starts[index + 1]]:
            function(item)

    run(part, len(starts) - 1)
